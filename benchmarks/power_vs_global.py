"""Power method against global steps on the attractor family (p = 3): does an O(1/n) show?

Anandkumar et al.'s analysis of the robust tensor power method asks ``ε = O(λ_min/n)`` with
``L = ⌈n ln(n/η)⌉`` starts; SROA with global steps (Theorem 3.1) tolerates
``ε = O(λ_min n^{-1/(p-1)})``. The coherent tilt cannot separate them (it fails through
deflation residuals, which every method shares). The attractor ``E x³ = ε‖x‖²(u·x)``,
``u = Σ v_i/√n``, can: its global maximum is always at a component, but it pulls uniform
starts toward ``u``.

Two parts, each written to ``--out`` as it finishes (JSON):

- ``attractor-escape.json``: the per-start escape probability ``q(n, ε, r)``
  (:func:`sroa_dist.studies.start_escape.escape_probability`, 1000 starts) at n = 16 … 1024, on the
  step with ``r`` components still to be found (r = n: the first step; r = 1: the last), with
  N = 30 iterations (the fixed budget's) and with the AGHKT N(n, ε). Any budget's success of
  one step follows as ``1 − (1 − q)^L``.
- ``attractor-thresholds.json``: first-crossing thresholds of whole SROAs
  (:func:`sroa_dist.find_threshold`, theorem criterion c = 0.5, radius 0.3, rtol 0.02) for
  the power method with L = 20 (N = 30) and with the AGHKT budget (noise level ε = 0.05, the
  scan's lower end: the largest N any evaluation gets), SS-HOPM with random starts only,
  SS-HOPM with its spectral starts, and the global reference (SS-HOPM checked and redone on
  the global branch, certified steps at n = 16); the sizes each can afford on 2 cores.

Usage: ``python benchmarks/power_vs_global.py --out docs/data/rate [--part escape|thresholds]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import sroa_dist as sd
from sroa_dist.methods.builtin import aghkt_budget
from sroa_dist.studies.start_escape import escape_probability

MASTER_SEED = 20261127
ESCAPE_SIZES = [16, 32, 64, 128, 256, 512, 1024]
ESCAPE_EPS = [float(e) for e in np.geomspace(0.1, 1.2, 28)]
FIXED = {"n_starts": 20, "n_iter": 30}
#: (label, method, options, global check, largest n), cheapest first within each size.
SOLVERS = [
    ("power L=20", "power", {}, False, 256),
    ("power AGHKT", "power", {"budget": "aghkt", "noise_level": 0.05}, False, 64),
    ("sshopm random starts", "sshopm", {"n_spectral": 0}, False, 256),
    ("sshopm spectral starts", "sshopm", {}, False, 256),
    ("global (sshopm checked)", "sshopm", {}, True, 256),
    ("global (certified)", "certified", {}, False, 16),
]
THRESHOLD_SIZES = [16, 32, 64, 128, 256]
SEARCH = {"criterion": "theorem", "c": 0.5, "radius": 0.3, "eps_range": (0.05, 1.5), "rtol": 0.02}


def _stages(n: int) -> list[int]:
    return sorted({n, max(1, n // 8), min(4, n), 1}, reverse=True)


def escape(out: Path, sizes: list[int] | None = None, min_eps: float = 0.0) -> None:
    path = out / "attractor-escape.json"
    data = json.loads(path.read_text()) if path.exists() else {"rows": []}
    seen = {(r["n"], r["r"], r["eps"], r["n_iter"]) for r in data["rows"]}
    data["setup"] = {
        "p": 3,
        "family": "attractor",
        "n_starts": 1000,
        "radius": 0.3,
        "fixed_n_iter": FIXED["n_iter"],
        "aghkt": "L = ceil(n ln(n/0.05)), N = ceil(3 (ln n + ln max(1, ln 1/eps)))",
        "seed": f"SeedSequence([{MASTER_SEED}, n, r, k]) for the k-th eps of the grid",
    }
    for n in sizes or ESCAPE_SIZES:
        t0 = time.perf_counter()
        for r in _stages(n):
            for k, eps in enumerate(ESCAPE_EPS):
                if eps < min_eps:  # seeds follow k, so a partial grid gives the same rows
                    continue
                for iters in sorted({FIXED["n_iter"], aghkt_budget(n, eps)[1]}):
                    if (n, r, eps, iters) in seen:
                        continue
                    res = escape_probability(
                        n,
                        eps,
                        remaining=r,
                        n_iter=iters,
                        rng=np.random.SeedSequence([MASTER_SEED, n, r, k]),
                    )
                    data["rows"].append(
                        {
                            "n": n,
                            "r": r,
                            "eps": eps,
                            "n_iter": iters,
                            "q": res.q,
                            "interval": list(res.interval),
                            "n_starts": res.n_starts,
                        }
                    )
        path.write_text(json.dumps(data, indent=1))
        print(f"escape n={n}: {time.perf_counter() - t0:.0f} s", flush=True)


def thresholds(out: Path, max_n: int | None = None) -> None:
    path = out / "attractor-thresholds.json"
    data = json.loads(path.read_text()) if path.exists() else {"rows": []}
    seen = {(r["solver"], r["n"]) for r in data["rows"]}
    data["setup"] = {"p": 3, "family": "attractor", **SEARCH, "seed": f"[{MASTER_SEED}, n]"}
    for n in THRESHOLD_SIZES:
        if max_n is not None and n > max_n:
            break
        for label, method, options, check, largest in SOLVERS:
            if n > largest or (label, n) in seen:
                continue
            t0 = time.perf_counter()
            res = sd.find_threshold(
                n,
                3,
                family="attractor",
                method=method,
                options=options,
                rng=np.random.SeedSequence([MASTER_SEED, n]),
                global_check=check,
                redo=check,
                matrix_free=False if method == "certified" else n >= 64,
                **SEARCH,
            )
            row = {
                "solver": label,
                "method": method,
                "options": options,
                "global_check": check,
                "n": n,
                "eps_star": res.eps_star,
                "lo": res.bracket[0],
                "hi": res.bracket[1],
                "reached": res.reached,
                "n_evals": res.n_evals,
                "non_monotone": res.non_monotone,
                "artefacts": res.artefacts,
                "seconds": time.perf_counter() - t0,
                "trace": [
                    [e.eps, e.metric, e.passed, e.global_gap, e.lam_err, e.vec_err]
                    for e in res.trace
                ],
            }
            if method == "power" and options.get("budget") == "aghkt":
                row["aghkt_budget"] = list(aghkt_budget(n, 0.05))
            data["rows"].append(row)
            path.write_text(json.dumps(data, indent=1, default=float))
            print(
                f"{label:26s} n={n:4d} eps*={res.eps_star:.4f} ({res.bracket[0]:.4f}, "
                f"{res.bracket[1]:.4f}] {row['seconds']:.0f} s",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/data/rate"))
    ap.add_argument("--part", choices=["escape", "thresholds", "all"], default="all")
    ap.add_argument("--max-n", type=int, help="thresholds only up to this n")
    ap.add_argument("--ns", type=int, nargs="*", help="escape: only these sizes")
    ap.add_argument("--min-eps", type=float, default=0.0, help="escape: only eps >= this")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.part in ("escape", "all"):
        escape(args.out, args.ns, args.min_eps)
    if args.part in ("thresholds", "all"):
        thresholds(args.out, args.max_n)


if __name__ == "__main__":
    main()
