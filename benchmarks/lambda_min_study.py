"""λ_min dependence of the coherent tilt's threshold with global steps (p = 3).

Theorem 3.1's sufficient condition scales with the smallest weight: ε ≲ λ_min·n^{-1/(p-1)}.
Three weight sets at each n, on the same draws (seed ``[MASTER_SEED, n]``): the default (every
weight 1, the tilt's target 0.95), the target at λ_min = 0.5 (every other weight 1), and the
weights spread linearly over [0.5, 1] (the target, the smallest, at 0.5). Thresholds are
first crossings (:func:`sroa_dist.find_threshold`, theorem criterion c = 0.5, radius 0.3, rtol
0.02, every local step checked and redone on the global branch).

Usage: ``python benchmarks/lambda_min_study.py --out docs/data/rate``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import sroa_dist as sd

MASTER_SEED = 20261127
SIZES = [8, 16, 32, 64]
SEARCH = {"criterion": "theorem", "c": 0.5, "radius": 0.3, "eps_range": (0.02, 1.5), "rtol": 0.02}


def weight_sets(n: int) -> dict[str, list[float]]:
    """The three weight sets at size ``n`` (the tilt's target is the last, smallest weight)."""
    return {
        "default (target 0.95)": [1.0] * (n - 1) + [0.95],
        "target 0.5": [1.0] * (n - 1) + [0.5],
        "linear [0.5, 1]": [float(x) for x in np.linspace(1.0, 0.5, n)],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/data/rate"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "lambda-min.json"
    data = json.loads(path.read_text()) if path.exists() else {"rows": []}
    seen = {(r["weights"], r["n"]) for r in data["rows"]}
    data["setup"] = {"p": 3, "family": "coherent-tilt", **SEARCH, "seed": f"[{MASTER_SEED}, n]"}
    for n in SIZES:
        for label, lambdas in weight_sets(n).items():
            if (label, n) in seen:
                continue
            t0 = time.perf_counter()
            res = sd.find_threshold(
                n, 3, lambdas=lambdas, rng=np.random.SeedSequence([MASTER_SEED, n]), **SEARCH
            )
            data["rows"].append(
                {
                    "weights": label,
                    "lambda_min": min(lambdas),
                    "n": n,
                    "eps_star": res.eps_star,
                    "lo": res.bracket[0],
                    "hi": res.bracket[1],
                    "reached": res.reached,
                    "n_evals": res.n_evals,
                    "non_monotone": res.non_monotone,
                    "artefacts": res.artefacts,
                    "seconds": time.perf_counter() - t0,
                }
            )
            path.write_text(json.dumps(data, indent=1, default=float))
            print(f"{label:22s} n={n:3d} eps*={res.eps_star:.4f} {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
