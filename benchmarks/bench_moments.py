"""Method-of-moments throughput: T̂ = M̂3(Ŵ, Ŵ, Ŵ) streamed in the whitened space against the
naive dense estimator (form the d³ moment, then contract), in the same run; and end-to-end
topic recovery (sample → T̂ → SROA → topics) per method.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_moments.py [--quick]
"""

from __future__ import annotations

import _common  # noqa: F401  (pins BLAS threads before numpy loads)
import numpy as np

from sroa_dist.moments import (
    TopicMoments,
    fit_topics,
    make_model,
    recovery_errors,
    whitened_moments,
    whitening_from_m2,
)


def naive(C, k: int) -> np.ndarray:
    """The dense baseline: M̂2 and M̂3 as d×d and d×d×d arrays, whiten, contract."""
    est = TopicMoments.from_data(C, k)
    W = whitening_from_m2(est.m2_dense(), k)
    return np.einsum("abc,ai,bj,ck->ijk", est.m3_dense(), W, W, W, optimize=True)


def streamed(C, k: int) -> np.ndarray:
    return whitened_moments("topics", C, k).tensor


def construction(rows: list, grid, k: int, L: int, with_baseline: bool) -> None:
    for d, N in grid:
        model = make_model("topics", k, d, doc_length=L, rng=0)
        C = model.sample(N, rng=1).data
        T, t_stream = _common.timed(streamed, C, k)
        row = {"d": d, "N": N, "k": k, "L": L, "nnz": int(C.nnz), "stream_s": t_stream}
        if with_baseline:
            T0, t_naive = _common.timed(naive, C, k)
            # Same estimator: both whitenings fix eigenvector signs, so the tensors agree.
            row |= {
                "naive_s": t_naive,
                "ratio": t_naive / t_stream,
                "max_abs_diff": float(np.max(np.abs(T - T0))),
            }
        rows.append(row)
        extra = (
            f"  naive {row['naive_s']:7.3f} s  ratio {row['ratio']:7.1f}x" if with_baseline else ""
        )
        print(f"T̂  d={d:5d} N={N:8d} nnz={row['nnz']:9d}: streamed {t_stream:7.3f} s{extra}")


def end_to_end(rows: list, N: int, d: int, k: int, L: int, methods) -> None:
    model = make_model("topics", k, d, doc_length=L, rng=2)
    C = model.sample(N, rng=3).data
    for method in methods:
        fit, t = _common.timed(fit_topics, C, k, method, rng=4)
        err = recovery_errors(fit, model)
        sroa_s = float(np.sum(fit.sroa.solve_time))
        rows.append(
            {
                "method": method,
                "N": N,
                "d": d,
                "k": k,
                "L": L,
                "total_s": t,
                "sroa_s": sroa_s,
                "docs_per_s": N / t,
                "max_tv": err.max_component_error,
                "max_weight_err": err.max_weight_error,
                "success": err.success,
                "all_certified": fit.all_certified,
            }
        )
        print(
            f"fit_topics {method:9s} N={N} d={d} k={k}: {t:6.2f} s ({N / t:9.0f} docs/s; "
            f"SROA {sroa_s:5.2f} s)  max TV {err.max_component_error:.3f}  "
            f"certified {fit.all_certified}"
        )


def main() -> None:
    ap = _common.parser(__doc__, "moments")
    ap.add_argument("--quick", action="store_true", help="small grid (smoke run)")
    args = ap.parse_args()
    k, L = 10, 20
    if args.quick:
        base = [(50, 2_000), (100, 2_000)]
        large = [(1_000, 20_000)]
        e2e = (20_000, 500)
    else:
        base = [(50, 10_000), (100, 10_000), (200, 10_000), (100, 40_000)]
        large = [(1_000, 100_000), (2_000, 100_000), (5_000, 100_000), (2_000, 1_000_000)]
        e2e = (200_000, 2_000)
    cons: list = []
    construction(cons, base, k, L, with_baseline=True)
    construction(cons, large, k, L, with_baseline=False)
    e2e_rows: list = []
    end_to_end(e2e_rows, e2e[0], e2e[1], k, L, ["certified", "sshopm", "power"])
    print(_common.write(args.out, {"construction": cons, "end_to_end": e2e_rows}))


if __name__ == "__main__":
    main()
