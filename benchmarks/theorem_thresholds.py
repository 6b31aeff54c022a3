"""The coherent tilt's first crossings under the theorem criterion, with global steps.

Theorem 3.1 bounds, for every step j, |λ̂_j − λ_j| ≤ c·ε and ‖v̂_j − v_j‖ ≤ 20ε/λ_j once
ε ≤ λ_min·n^{-1/(p-1)} times a constant. This study measures the first ε at which the tilt
breaks such a bound, at c = 0.5 (radius 0.3) and c = 2 (the theorem's radius 20ε/λ_j), for
p = 3 and 4, every local step checked and redone on the global branch. One JSON per (p, c),
resumed per size. The asymptote these approach is (c/g_p(0))^{1/(p-1)}·(n−1)^{-1/(p-1)}
(:func:`sroa_dist.analysis.accumulation_limit`).

Usage: ``python benchmarks/theorem_thresholds.py --out docs/data/rate/theorem``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import sroa_dist as sd

MASTER_SEED = 20261127
#: (p, c, radius, sizes, eps_range); radius None: the theorem's 20 ε/λ_j.
PLAN = [
    (3, 0.5, 0.3, [8, 16, 32, 64, 128], (0.02, 1.5)),
    (3, 2.0, None, [8, 16, 32, 64, 128], (0.05, 1.5)),
    (4, 0.5, 0.3, [8, 16, 32, 48, 64], (0.05, 1.5)),
    (4, 2.0, None, [64, 128, 256], (0.05, 1.5)),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/data/rate/theorem"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for p, c, radius, sizes, eps_range in PLAN:
        name = f"theorem-p{p}-c{c:g}"
        path = args.out / f"{name}.json"
        done = json.loads(path.read_text()) if path.exists() else {"results": []}
        have = {r["n"] for r in done["results"]}
        for n in sizes:
            if n in have:
                continue
            t0 = time.perf_counter()
            seed = np.random.SeedSequence([MASTER_SEED, p, n, int(round(c * 100))])
            r = sd.find_threshold(
                n,
                p,
                criterion="theorem",
                c=c,
                radius=radius,
                eps_range=eps_range,
                rtol=0.02,
                rng=seed,
            )
            done["results"].append(
                {
                    "n": n,
                    "eps_star": r.eps_star,
                    "lo": r.bracket[0],
                    "hi": r.bracket[1],
                    "reached": r.reached,
                    "n_evals": r.n_evals,
                    "non_monotone": r.non_monotone,
                    "artefacts": r.artefacts,
                    "scan_resolution": r.scan_resolution,
                    "seconds": time.perf_counter() - t0,
                    "trace": [
                        [
                            e.eps,
                            e.metric,
                            e.passed,
                            e.global_gap,
                            e.non_global,
                            e.redone,
                            e.lam_err,
                            e.vec_err,
                        ]
                        for e in r.trace
                    ],
                }
            )
            done["study"] = {
                "name": name,
                "p": p,
                "c": c,
                "radius": radius,
                "sizes": sizes,
                "eps_range": list(eps_range),
                "rtol": 0.02,
                "family": "coherent-tilt",
                "method": "sshopm",
                "global_check": True,
                "redo": True,
            }
            path.write_text(json.dumps(done, indent=1, default=float))
            print(
                f"{name} n={n} eps*={r.eps_star:.4f} ({r.bracket[0]:.4f}, {r.bracket[1]:.4f}]"
                f" evals={r.n_evals} {time.perf_counter() - t0:.0f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
