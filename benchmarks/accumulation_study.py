"""The coherent tilt's accumulation coefficient g_p(ε) for p = 3–6, and what it predicts.

Part ``g``: :func:`sroa_dist.analysis.accumulation` at n = 8 and 16 on 16 values of ε from
0.02 to 0.6 (global steps), beside the closed form g_p(0) = (p·c_p)^{-p}
(:func:`sroa_dist.analysis.accumulation_limit`). Part ``predict``:
:func:`sroa_dist.analysis.predict_threshold` fed by the curves at n = 16 only, for the value
criterion (c = 0.5) at the sizes of the published n-scaling study, and for the theorem
criterion at c = 0.5 (radius 0.3) and c = 2; with the plateau, onset, asymptote and local
slopes. Part ``p6``: the p = 6 tilt's first crossings at n = 16–128 (matrix-free), all below
its predicted onset. Writes ``accumulation.json``, ``predictions.json`` and ``tilt-p6.json``
to ``--out``.

Usage: ``python benchmarks/accumulation_study.py --out docs/data/rate``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from sroa_dist import find_threshold
from sroa_dist.analysis import accumulation, accumulation_limit, predict_threshold

ORDERS = (3, 4, 5, 6)
SIZES = (8, 16)
EPS = np.geomspace(0.02, 0.6, 16)
#: Sizes predicted per order (those of the published n-scaling study, and beyond).
PREDICT_SIZES = {
    3: [8, 12, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024],
    4: [8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024, 2048],
    5: [16, 32, 64, 128, 192, 256, 384, 512, 1024, 2048, 4096],
    6: [16, 64, 256, 512, 1024, 2048, 4096, 8192],
}
#: (label, criterion, c, radius).
CRITERIA = [
    ("value c=0.5", "value", 0.5, None),
    ("theorem c=0.5 r=0.3", "theorem", 0.5, 0.3),
    ("value c=2", "value", 2.0, None),
]


def part_g(out: Path) -> None:
    path = out / "accumulation.json"
    data = json.loads(path.read_text()) if path.exists() else {"rows": []}
    seen = {(r["p"], r["n"]) for r in data["rows"]}
    data["setup"] = {
        "eps": EPS.tolist(),
        "family": "coherent-tilt",
        "method": "sshopm",
        "global_check": True,
        "rng": 0,
    }
    for p in ORDERS:
        for n in SIZES:
            if (p, n) in seen:
                continue
            t0 = time.perf_counter()
            a = accumulation(p, EPS, n=n)
            data["rows"].append(
                {
                    "p": p,
                    "n": n,
                    "g0": accumulation_limit(p),
                    "g": a.g.tolist(),
                    "h": a.h.tolist(),
                    "value_other": a.value_other.tolist(),
                    "vector_other": a.vector_other.tolist(),
                    "last": a.last.tolist(),
                    "global_gap": a.global_gap.tolist(),
                    "seconds": time.perf_counter() - t0,
                }
            )
            path.write_text(json.dumps(data, indent=1))
            print(
                f"g p={p} n={n}: g(0.02)={a.g[0]:.4f} g0={a.g0:.4f} "
                f"{time.perf_counter() - t0:.0f} s",
                flush=True,
            )


def part_predict(out: Path) -> None:
    path = out / "predictions.json"
    data = json.loads(path.read_text()) if path.exists() else {"rows": []}
    seen = {(r["p"], r["criterion"]) for r in data["rows"]}
    data["setup"] = {
        "n_model": 16,
        "family": "coherent-tilt",
        "method": "sshopm",
        "eps_range": [0.01, 1.5],
        "points": 48,
    }
    for p in ORDERS:
        for label, criterion, c, radius in CRITERIA:
            if (p, label) in seen or (p == 6 and label != "value c=0.5"):
                continue
            t0 = time.perf_counter()
            pr = predict_threshold(p, PREDICT_SIZES[p], c=c, criterion=criterion, radius=radius)
            data["rows"].append(
                {
                    "p": p,
                    "criterion": label,
                    "c": c,
                    "radius": radius,
                    "n": pr.n.tolist(),
                    "eps_star": [float(x) for x in pr.eps_star],
                    "asymptote": pr.asymptote.tolist(),
                    "local_slope": pr.local_slope.tolist(),
                    "plateau": pr.plateau,
                    "onset_n": pr.onset_n,
                    "seconds": time.perf_counter() - t0,
                }
            )
            path.write_text(json.dumps(data, indent=1, default=float))
            print(
                f"predict p={p} {label}: onset {pr.onset_n}, plateau {pr.plateau:.4f} "
                f"{time.perf_counter() - t0:.0f} s",
                flush=True,
            )


def part_p6(out: Path) -> None:
    """First crossings of the p = 6 tilt (value criterion c = 0.5, matrix-free) at the sizes
    reached in minutes here, all below its predicted onset: the plateau checks the model."""
    path = out / "tilt-p6.json"
    data = json.loads(path.read_text()) if path.exists() else {"rows": []}
    data["setup"] = {
        "p": 6,
        "family": "coherent-tilt",
        "criterion": "value",
        "c": 0.5,
        "rtol": 0.02,
        "eps_range": [0.1, 1.5],
        "matrix_free": True,
        "seed": "[20261127, 6, n]",
    }
    for n in (16, 32, 64, 128):
        if any(r["n"] == n for r in data["rows"]):
            continue
        t0 = time.perf_counter()
        r = find_threshold(
            n,
            6,
            criterion="value",
            c=0.5,
            eps_range=(0.1, 1.5),
            rtol=0.02,
            matrix_free=True,
            rng=np.random.SeedSequence([20261127, 6, n]),
        )
        row = {
            "n": n,
            "eps_star": r.eps_star,
            "lo": r.bracket[0],
            "hi": r.bracket[1],
            "n_evals": r.n_evals,
            "non_monotone": r.non_monotone,
            "seconds": time.perf_counter() - t0,
        }
        data["rows"].append(row)
        path.write_text(json.dumps(data, indent=1, default=float))
        print(f"p=6 n={n}: eps*={r.eps_star:.4f} {row['seconds']:.0f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/data/rate"))
    ap.add_argument("--part", choices=["g", "predict", "p6", "all"], default="all")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.part in ("predict", "all"):
        part_predict(args.out)
    if args.part in ("g", "all"):
        part_g(args.out)
    if args.part in ("p6", "all"):
        part_p6(args.out)


if __name__ == "__main__":
    main()
