"""What the global check of every local step costs (``sroa(global_check=True, redo=True)``),
against the same SROA without it, one core, interleaved rounds with the fastest of each kept.

Cases: the coherent tilt (λ = 1 except 0.95, a random basis) at p = 3 on formed tensors
(n = 16, 32, 64; ε near each threshold) and matrix-free at p = 3, n = 128, p = 4, n = 64 and
p = 5, n = 64 (the threshold studies' sizes), with ``sshopm`` at its current revision.

Run:  python benchmarks/bench_global_check.py [--repeats 2] [--quick]
Writes benchmarks/out/global_check.json.
"""

from __future__ import annotations

import time

import _common
import numpy as np

import sroa_dist as sd
from sroa_dist.studies.threshold import default_lambdas

#: (label, n, p, ε, matrix-free)
CASES = (
    ("dense p=3 n=16", 16, 3, 0.25, False),
    ("dense p=3 n=32", 32, 3, 0.15, False),
    ("dense p=3 n=64", 64, 3, 0.1, False),
    ("matrix-free p=3 n=128", 128, 3, 0.075, True),
    ("matrix-free p=4 n=64", 64, 4, 0.35, True),
    ("matrix-free p=5 n=64", 64, 5, 0.5, True),
)


def tensor(n: int, p: int, eps: float, matrix_free: bool):
    lam = default_lambdas(n)
    V = sd.random_orthonormal_basis(n, rng=0)
    if matrix_free:
        return sd.structured_tensor(p, lam, V=V, family="coherent-tilt", eps=eps)
    inst = sd.make_instance(n, p, V=V, lambdas=lam, noise="coherent-tilt", eps=eps, rng=0)
    return inst.T_hat


def cpu(fn, *args, **kwargs):
    c0 = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - c0


def main() -> None:
    ap = _common.parser(__doc__, "global_check")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="the three dense cases only")
    args = ap.parse_args()
    rows = []
    for label, n, p, eps, mf in CASES[:3] if args.quick else CASES:
        T = tensor(n, p, eps, mf)
        best = {}
        for _ in range(args.repeats):
            for name, kw in (("plain", {}), ("checked", {"global_check": True, "redo": True})):
                res, sec = cpu(sd.sroa, T, method="sshopm", rng=1, **kw)
                if name not in best or sec < best[name][1]:
                    best[name] = (res, sec)
        res = best["checked"][0]
        row = {
            "case": label,
            "plain_cpu_s": best["plain"][1],
            "checked_cpu_s": best["checked"][1],
            "ratio": best["checked"][1] / best["plain"][1],
            "redone_steps": int(res.redone.sum()),
            "non_global_left": int(res.non_global.sum()),
            "largest_gap": float(np.nanmax(res.global_gap)),
        }
        rows.append(row)
        print(
            f"{label:24s} plain {row['plain_cpu_s']:8.2f} s  checked {row['checked_cpu_s']:8.2f} s"
            f"  ×{row['ratio']:.2f}  redone {row['redone_steps']}",
            flush=True,
        )
    print(_common.write(args.out, {"rows": rows, "repeats": args.repeats}))


if __name__ == "__main__":
    main()
