"""Is the sampling noise of topics, GMM and ICA attractor-like or isotropic? (issue 36, item 3)

For each model and whitened dimension k: one pilot sample at ``N0`` measures ``‖E‖``; with
``‖E‖ ∝ N^{-1/2}`` it calibrates the two sample sizes where ``‖E‖`` should equal the global
steps' scale ``λ_min·k^{−1/(p−1)}`` and the power method's ``λ_min/k``; at each (capped by a
cost limit on ``N·k^p``) ``REPLICATES`` independent samples are measured by
:func:`sroa_dist.moments.noise_structure` (estimated whitening: the perturbation SROA sees).
Writes docs/data/samples/noise-structure.json with the parameters, seeds, git commit and load.

Usage: ``nice -n 5 python docs/data/samples/noise-structure.py [--quick]``; one more k added
to the published rows: ``... noise-structure.py --extend 100 topics,gmm global`` (recorded under
``study.extensions``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from sroa_dist.moments import make_model, noise_structure

OUT = Path(__file__).with_name("noise-structure.json")
MASTER_SEED = 20261128
REPLICATES = 3
N_STARTS = 400
#: Largest N·k^p streamed per sample (the estimator's cost) and largest N.
COST_CAP = 4e10
N_CAP = 2_000_000
#: model -> (k values, d(k), model parameters, pilot N0(k)).
MODELS = {
    "topics": ((5, 10, 20, 50), lambda k: 10 * k, {"doc_length": 10}, lambda k: 200 * k),
    "gmm": ((5, 10, 20, 50), lambda k: 2 * k, {"sigma2": 1.0}, lambda k: 200 * k),
    "ica": ((5, 10, 20), lambda k: k, {}, lambda k: 500 * k),
}


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip()


def _measure(kind: str, k: int, targets: tuple[str, ...] = ("global", "power")) -> list[dict]:
    """The pilot and every replicate at each calibrated target of one (model, k); the seeds
    depend on (model, k, target, replicate) only, so an extension reproduces a full run's rows."""
    ks, dk, params, n0 = MODELS[kind]
    seed = np.random.SeedSequence([MASTER_SEED, list(MODELS).index(kind), k])
    s_model, s_pilot, s_reps = seed.spawn(3)
    model = make_model(kind, k, dk(k), rng=np.random.default_rng(s_model), **params)
    p = model.order
    N0 = n0(k)
    t = time.time()
    pilot = noise_structure(model, N0, rng=s_pilot, n_starts=N_STARTS)
    rows = [{"target": "pilot", "replicate": 0, "seconds": time.time() - t,
             "d": dk(k), **pilot.to_dict()}]  # fmt: skip
    cap = int(min(N_CAP, COST_CAP / k**p))
    reps = s_reps.spawn(2 * REPLICATES)
    for j, (target, scale) in enumerate(
        (("global", pilot.global_scale), ("power", pilot.power_scale))
    ):
        if target not in targets:
            continue
        want = int(round(N0 * (pilot.eps / scale) ** 2))
        N = max(4 * k, min(want, cap))
        for r in range(REPLICATES):
            t = time.time()
            rng = reps[j * REPLICATES + r]
            res = noise_structure(model, N, rng=rng, n_starts=N_STARTS)
            row = {"target": target, "replicate": r, "seconds": time.time() - t,
                   "d": dk(k), "n_wanted": want, "capped": want > cap,
                   **res.to_dict()}  # fmt: skip
            rows.append(row)
            print(
                f"{kind} k={k} {target} N={N} (want {want}) eps={res.eps:.4g} "
                f"g={res.global_ratio:.3f} pw={res.power_ratio:.3f} "
                f"att={res.attractor_overlap:.3f}/{res.attractor_overlap_random:.3f} "
                f"comp={res.component_overlap:.3f}/{res.component_overlap_random:.3f} "
                f"q={res.q.q:.3f} clean={res.q_clean.q:.3f} "
                f"attr={res.q_attractor.q if res.q_attractor else float('nan'):.3f} "
                f"{row['seconds']:.1f}s",
                flush=True,
            )
    return rows


def extend(k: int, kinds: tuple[str, ...], targets: tuple[str, ...]) -> None:
    """Add one k's rows (for ``kinds`` and ``targets``) to the published JSON, recording the
    extension (its commit, load and time) beside the original run."""
    doc = json.loads(OUT.read_text())
    t0, load0, cpu0 = time.time(), os.getloadavg(), time.process_time()
    for kind in kinds:
        doc["rows"] += _measure(kind, k, targets)
    doc["study"].setdefault("extensions", []).append(
        {
            "k": k,
            "models": list(kinds),
            "targets": list(targets),
            "git_commit": _commit(),
            "cpu_seconds": time.process_time() - cpu0,
            "wall_seconds": time.time() - t0,
            "load_average": [load0, os.getloadavg()],
        }  # fmt: skip
    )
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"extended {OUT} with k = {k} ({time.time() - t0:.0f} s)")


def main(quick: bool = False) -> None:
    rows, t0 = [], time.time()
    load0 = os.getloadavg()
    for kind, (ks, _, _, _) in MODELS.items():
        for k in ks[:2] if quick else ks:
            rows += _measure(kind, k)
    doc = {
        "study": {
            "what": "noise structure of E = T^ - T (estimated whitening) at calibrated N",
            "script": "docs/data/samples/noise-structure.py",
            "master_seed": MASTER_SEED,
            "replicates": REPLICATES,
            "n_starts": N_STARTS,
            "cost_cap": COST_CAP,
            "n_cap": N_CAP,
            "models": {
                kind: {
                    "k": list(ks),
                    "d": [dk(k) for k in ks],
                    "params": params,
                    "pilot_n": [n0(k) for k in ks],
                }
                for kind, (ks, dk, params, n0) in MODELS.items()
            },  # fmt: skip
            "git_commit": _commit(),
            "quick": quick,
            "cpu_seconds": time.process_time(),
            "wall_seconds": time.time() - t0,
            "load_average": [load0, os.getloadavg()],
        },
        "rows": rows,
    }
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({len(rows)} rows, {time.time() - t0:.0f} s)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--extend"]:  # --extend K MODEL,MODEL TARGET,TARGET
        extend(int(sys.argv[2]), tuple(sys.argv[3].split(",")), tuple(sys.argv[4].split(",")))
    else:
        main(quick="--quick" in sys.argv[1:])
