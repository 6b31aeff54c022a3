"""The worst case against n: the first ε, on a grid, at which the gradient adversary breaks
Theorem 3.1's value bound |λ̂ − λ| ≤ 2ε (p = 3), beside the coherent tilt at the same ε.

For each n and each ε of the grid (ascending), :func:`sroa_dist.worst_case` (``method=
"gradient"``, metric ``"lam"`` = max_j |λ̂_j − λ_j|/ε, weights 1 except 0.95, SS-HOPM steps and
norm estimates, ``budget`` SROA evaluations) searches the sphere ‖E‖ = ε from the coherent tilt,
the uniform shrink and Gaussian starts; the first grid ε whose worst case exceeds 2 closes the
bracket. The steps are local (SS-HOPM), so a found value is a lower bound on the worst case of
global SROA only up to the steps' own globality (re-checked by the search with more starts).

Usage: ``python benchmarks/worst_case_thresholds.py --out docs/data/rate``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import sroa_dist as sd

MASTER_SEED = 20261127
SIZES = (8, 12, 16, 24, 32, 48, 64)
#: ×1.1 from 0.1: the first grid point past the bound closes a bracket of that width.
GRID = tuple(round(0.1 * 1.1**k, 4) for k in range(20))
BOUND = 2.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/data/rate"))
    ap.add_argument("--budget", type=int, default=40)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "worst-case.json"
    data = json.loads(path.read_text()) if path.exists() else {"rows": []}
    data["setup"] = {
        "p": 3,
        "metric": "lam (max |lam_hat - lam| / eps)",
        "bound": BOUND,
        "grid": list(GRID),
        "budget": args.budget,
        "method": "gradient",
        "steps": "sshopm",
        "lambdas": "1, ..., 1, 0.95",
        "seed": f"[{MASTER_SEED}, n, k]",
    }
    for n in SIZES:
        rows = [r for r in data["rows"] if r["n"] == n]
        if any(r["worst"] > BOUND for r in rows):
            continue
        for k, eps in enumerate(GRID):
            if any(r["eps"] == eps for r in rows):
                continue
            t0 = time.perf_counter()
            res = sd.worst_case(
                n,
                3,
                eps,
                metric="lam",
                budget=args.budget,
                method="gradient",
                lambdas=np.r_[np.ones(n - 1), 0.95],
                step_method="sshopm",
                norm_method="sshopm",
                rng=np.random.SeedSequence([MASTER_SEED, n, k]),
            )
            T = sd.sod_tensor(res.lambdas, res.V, 3)
            again = sd.sroa(T + res.E, method="sshopm", global_check=True, redo=True, rng=7)
            m = sd.match(again, res.lambdas, res.V)
            row = {
                "n": n,
                "eps": eps,
                "worst_search": float(res.value),
                "worst": float(np.max(m.lam_err) / eps),
                "tilt": float(res.start_values.get("coherent-tilt", float("nan"))),
                "shrink": float(res.start_values.get("sod-shrink", float("nan"))),
                "tilt_cosine": float(res.tilt_cosine),
                "n_evals": int(res.n_evals),
                "seconds": time.perf_counter() - t0,
            }
            data["rows"].append(row)
            path.write_text(json.dumps(data, indent=1, default=float))
            print(
                f"n={n} eps={eps}: worst {row['worst']:.3f} tilt {row['tilt']:.3f} "
                f"{row['seconds']:.0f} s",
                flush=True,
            )
            if row["worst"] > BOUND:
                break


if __name__ == "__main__":
    main()
