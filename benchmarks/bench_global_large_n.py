"""Global-checked SROA of the matrix-free coherent tilt at large n: the large-n engine
(``sshopm`` revision 5, ``engine="auto"``: Lanczos spectral starts, MINRES Newton polish,
deflation terms as matrix products) against the dense-eigensolve engine of revision 4
(``engine="dense"``), with a DGEMM as the yardstick measured in the same run.

Case (issue 35): ``sroa(structured_tensor(p, (1,)*(n-1) + (0.95,), family="coherent-tilt",
eps=0.9/sqrt(n-1)), method="sshopm", global_check=True, redo=True)``. CPU seconds
(``process_time``) with BLAS on one thread; on a shared machine the ratio to the DGEMM (an
``n × n`` by ``n × n`` product, ``2n³`` flops, best of 3, timed right before each SROA) is the
comparable number, and the load average is recorded. ``--old`` also runs the dense engine
(``engine="dense"``) and reports the largest differences of λ̂, v̂ and the global gaps
and whether the deflation order agrees.

A case is ``p:n[:family[:method[:revision]]]``: family ``tilt`` (the case above, the default)
or ``attractor`` (weights 1, ``eps = 0.3``, the family of benchmarks/power_vs_global.py) or
``tilt-basis`` (the tilt on a random orthonormal basis, as the threshold studies draw it: what
a study's evaluation costs, where the identity basis of ``tilt`` is the engine's floor);
method ``sshopm`` (default) or ``power`` (with its AGHKT budget, ``budget="aghkt"``); a
revision number runs that earlier revision of the method (its legacy options), e.g.
``4:512:tilt:sshopm:5`` for p = 4 before the bounded lower end of revision 6, or
``3:512:tilt:sshopm:6`` for the check's own eigensolve before revision 7, or
``3:1024:tilt:sshopm:7`` for whole deflated products and the lockstep Lanczos run before
revision 8, or ``3:1024:tilt:sshopm:8`` for spectral starts converged to 1e-10 in double
precision before revision 9 (the row records the revision it ran, the current one where none is
given). Each
row is written as soon as it is measured, with the load average before and after it.

Run:  python benchmarks/bench_global_large_n.py [--cases 3:256 3:512] [--old 256]
Writes benchmarks/out/global_large_n.json.
"""

from __future__ import annotations

import math
import os
import time

import _common
import numpy as np


def _cpu(fn):
    c0 = time.process_time()
    out = fn()
    return out, time.process_time() - c0


def _dgemm(n: int) -> float:
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    return min(_cpu(lambda: A @ B)[1] for _ in range(3))


def _sroa(
    p: int,
    n: int,
    engine: str = "auto",
    family: str = "tilt",
    method: str = "sshopm",
    revision: int | None = None,
):
    import sroa_dist as sd
    from sroa_dist.methods import METHODS

    if family == "attractor":
        T = sd.structured_tensor(p, np.ones(n), family="attractor", eps=0.3)
    elif family == "tilt-basis":
        # The studies' instance: the same tilt on a random orthonormal basis, whose factor
        # is a dense n x n matrix (the identity's skips its gather and scatter).
        V = np.linalg.qr(np.random.default_rng(0).standard_normal((n, n)))[0]
        T = sd.structured_tensor(
            p, (1.0,) * (n - 1) + (0.95,), V=V, family="coherent-tilt", eps=0.9 / math.sqrt(n - 1)
        )
    else:
        T = sd.structured_tensor(
            p, (1.0,) * (n - 1) + (0.95,), family="coherent-tilt", eps=0.9 / math.sqrt(n - 1)
        )
    opts = dict(METHODS[method].options_at(revision))
    if engine != "auto":
        opts["engine"] = engine
    if method == "power":
        opts["budget"] = "aghkt"
    return _cpu(lambda: sd.sroa(T, method=method, global_check=True, redo=True, **opts))


def _current(method: str) -> int:
    from sroa_dist.methods import METHODS

    return int(METHODS[method].revision)


def main() -> None:
    ap = _common.parser(__doc__, "global_large_n")
    ap.add_argument("--cases", nargs="+", default=["3:256", "3:512", "3:1024"])
    ap.add_argument("--old", nargs="*", type=int, default=[], help="n also run on the old engine")
    args = ap.parse_args()

    rows = []
    for case in args.cases:
        parts = case.split(":")
        p, n = int(parts[0]), int(parts[1])
        family = parts[2] if len(parts) > 2 else "tilt"
        method = parts[3] if len(parts) > 3 else "sshopm"
        revision = int(parts[4]) if len(parts) > 4 else None
        load_before = os.getloadavg()[0]
        gemm = _dgemm(n)
        res, cpu = _sroa(p, n, family=family, method=method, revision=revision)
        row = {
            "p": p,
            "n": n,
            "family": family,
            "method": method,
            "revision": revision if revision is not None else _current(method),
            "cpu_s": cpu,
            "dgemm_cpu_s": gemm,
            "over_dgemm": cpu / gemm,
            "load_before": load_before,
            "load": os.getloadavg()[0],
            "redone": int(res.redone.sum()),
            "max_gap": float(np.nanmax(res.global_gap)),
        }
        if n in args.old:
            old, cpu_old = _sroa(p, n, "dense", family, method, revision)
            # Vectors are columns, one per step; even p: v and −v are the same term.
            sign = 1.0 if p % 2 else np.sign(np.sum(old.vectors * res.vectors, axis=0))
            row.update(
                old_cpu_s=cpu_old,
                speedup=cpu_old / cpu,
                max_lambda_diff=float(np.abs(old.lambdas - res.lambdas).max()),
                max_vector_diff=float(np.abs(old.vectors * sign - res.vectors).max()),
                max_gap_diff=float(np.nanmax(np.abs(old.global_gap - res.global_gap))),
                old_max_gap=float(np.nanmax(old.global_gap)),
                same_order=bool(
                    np.array_equal(
                        np.argmax(np.abs(old.vectors), axis=0), np.argmax(np.abs(res.vectors), 0)
                    )
                ),
            )
        print(row, flush=True)
        rows.append(row)
        _common.write(args.out, {"rows": rows})  # each row kept as soon as it is measured
    print(_common.output_path(args.out))


if __name__ == "__main__":
    main()
