"""Certified step cost vs n: median seconds and peak memory per step, fresh and deflated tensors.

For each ``(p, n)`` a fresh subprocess (so its peak RSS is that configuration's own) runs
SROA with the ``certified`` method (SS-HOPM candidate + moment relaxation, no size cap) on two
instance families, and times every step it runs:

* ``gaussian``: ``T = sum_i e_i^{(x)p} + E``, ``E`` symmetric Gaussian rescaled to entry scale
  ``0.05 / sqrt(n)`` (a fresh, easy nearly-SOD tensor; later steps are deflated tensors);
* ``tilt`` (p = 3): the coherent-tilt instance, ``lambda = 1`` except ``lambda_n = 0.95`` and
  ``E x^3 = c (sum_{j<n} x_j^2) x_n`` scaled to operator norm ``eps = 0.2``: every component
  leans toward ``e_n``, so deflated residuals pile up there (the hard case of the n-scaling
  study).

Only the first ``--steps`` steps are run (the deflated tensors of a real sweep's first steps).
Also reports whether each step was certified and the gap, the relaxation's build time, and the
moment-matrix side ``m``. Used to calibrate the cost model behind ``time_budget`` (see
``sroa_dist.methods.builtin.relaxation_cost``).

Run:  python benchmarks/bench_certified_scaling.py [--p 3] [--ns 8 12 16 20 24 28 32]
      [--steps 4] [--family gaussian tilt]
Writes benchmarks/out/certified_scaling.json and prints a table.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402


def _instance(family: str, n: int, p: int, seed: int):
    import itertools
    import math

    import numpy as np

    T = np.zeros((n,) * p)
    lam = np.ones(n)
    if family == "tilt":
        lam[-1] = 0.95
    T[(np.arange(n),) * p] = lam
    if family == "tilt":
        if p != 3:
            raise SystemExit("the tilt family is defined for p = 3")
        E = np.zeros((n,) * 3)
        for j in range(n - 1):
            for a in set(itertools.permutations((j, j, n - 1))):
                E[a] = 1.0 / 3.0
        E *= 0.2 / (2.0 / (3.0 * math.sqrt(3.0)))  # ||E|| = 0.2
        return T + E
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n,) * p)
    G = sum(np.transpose(G, q) for q in itertools.permutations(range(p))) / math.factorial(p)
    return T + 0.05 / math.sqrt(n) * G


def _child(family: str, n: int, p: int, steps: int) -> dict:
    import resource
    import time

    import numpy as np

    from sroa_dist import rank_one
    from sroa_dist.relaxation import get_relaxation
    from sroa_dist.tensors import rank_one_tensor

    t0 = time.perf_counter()
    rel = get_relaxation(n, p)
    build = time.perf_counter() - t0
    T = _instance(family, n, p, seed=n)
    rows = []
    for j in range(min(steps, n)):
        t0 = time.perf_counter()
        r = rank_one(T, "certified", rng=j, max_gram_size=10**9)
        dt = time.perf_counter() - t0
        rows.append(
            {
                "step": j + 1,
                "seconds": dt,
                "certified": bool(r.certified),
                "gap": float(r.gap),
                "lam": float(r.lam),
            }
        )
        T = T - rank_one_tensor(r.lam, r.x, p)
    return {
        "family": family,
        "n": n,
        "p": p,
        "m": rel.m,
        "n_vars": rel.n_vars,
        "build_seconds": build,
        "steps": rows,
        "median_seconds": float(np.median([s["seconds"] for s in rows])),
        "max_seconds": float(max(s["seconds"] for s in rows)),
        "certified_fraction": float(np.mean([s["certified"] for s in rows])),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }


def main() -> None:
    ap = _common.parser(__doc__, None)
    ap.add_argument("--p", type=int, default=3)
    ap.add_argument("--ns", type=int, nargs="+", default=[8, 12, 16, 20, 24, 28, 32])
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--family", nargs="+", default=["gaussian", "tilt"])
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--child", nargs=4, metavar=("FAMILY", "N", "P", "STEPS"))
    args = ap.parse_args()
    if args.child:
        fam, n, p, steps = args.child
        print(json.dumps(_child(fam, int(n), int(p), int(steps))))
        return
    results = []
    print(
        f"{'family':>8} {'p':>2} {'n':>3} {'m':>5} {'median s':>9} {'max s':>8} "
        f"{'cert':>5} {'RSS MB':>7}"
    )
    for fam in args.family:
        if fam == "tilt" and args.p != 3:
            continue
        for n in args.ns:
            cmd = [sys.executable, __file__, "--child", fam, str(n), str(args.p), str(args.steps)]
            try:
                out = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=args.timeout, check=True
                )
            except subprocess.TimeoutExpired:
                print(f"{fam:>8} {args.p:>2} {n:>3}   timed out after {args.timeout:.0f} s")
                results.append({"family": fam, "n": n, "p": args.p, "timeout": args.timeout})
                break
            row = json.loads(out.stdout.strip().splitlines()[-1])
            results.append(row)
            print(
                f"{fam:>8} {args.p:>2} {n:>3} {row['m']:>5} {row['median_seconds']:>9.3f} "
                f"{row['max_seconds']:>8.3f} {row['certified_fraction']:>5.2f} "
                f"{row['peak_rss_mb']:>7.0f}",
                flush=True,
            )
    path = _common.write(
        args.out or f"certified_scaling_p{args.p}", {"steps": args.steps, "results": results}
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
