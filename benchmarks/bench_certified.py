"""Certified rank-one solve, n = 10, p = 3, nearly SOD: ours (SCS direct) vs cvxpy + Clarabel.

Instances: T = sum_i e_i^(x)3 + E, E Gaussian with sigma = 0.01 symmetrised by averaging over the
6 axis permutations. For each instance we time ``sroa_dist.relaxation.solve`` (warm cache: the
relaxation is built once, before timing) and record the certified gap ``upper_bound - fx``.
Side by side, in the same run, a handful of instances go through the generic route: the same
(textbook, "full") relaxation written in cvxpy and solved by Clarabel, and through SCS alone
(our relaxation, one full SCS solve, no warm-up/face certificate).

Run:  python benchmarks/bench_certified.py [--instances 30] [--cvxpy 5] [--scs-only 5]
Writes benchmarks/out/certified.json and prints a table. Times are wall clock on one core
(BLAS threads pinned to 1 below); CPU time is reported too since the machine may be shared.
"""

from __future__ import annotations

import _common  # first: pins BLAS threads before numpy loads  # isort: skip

import itertools  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from sroa_dist import relaxation as R  # noqa: E402


def nearly_sod(n: int, sigma: float, rng: np.random.Generator) -> np.ndarray:
    T = np.zeros((n,) * 3)
    T[np.arange(n), np.arange(n), np.arange(n)] = 1.0
    E = sigma * rng.standard_normal((n,) * 3)
    E = sum(np.transpose(E, pm) for pm in itertools.permutations(range(3))) / 6.0
    return T + E


def stats(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms, dtype=float)
    return {
        "median_ms": float(np.median(a)),
        "p90_ms": float(np.percentile(a, 90)),
        "min_ms": float(a.min()),
        "max_ms": float(a.max()),
        "n": len(a),
    }


def time_ours(Ts: list[np.ndarray], **options) -> dict:
    rel = R.get_relaxation(
        Ts[0].shape[0], Ts[0].ndim, formulation=options.pop("formulation", "homogeneous")
    )
    wall, cpu, gaps, iters, certs, fx = [], [], [], [], [], []
    for T in Ts:
        w0, c0 = time.perf_counter(), time.process_time()
        r = rel.solve(T, **options)
        wall.append(1e3 * (time.perf_counter() - w0))
        cpu.append(1e3 * (time.process_time() - c0))
        gaps.append(r.upper_bound - r.fx)
        iters.append(r.iterations)
        certs.append(r.certificate)
        fx.append(r.fx)
    return {
        "wall": stats(wall),
        "cpu": stats(cpu),
        "gap_max": float(np.max(gaps)),
        "gap_median": float(np.median(gaps)),
        "certified_1e-6": int(np.sum(np.asarray(gaps) < 1e-6)),
        "iterations_median": float(np.median(iters)),
        "iterations_max": int(np.max(iters)),
        "certificates": {k: certs.count(k) for k in sorted(set(certs))},
        "fx": fx,
        "gaps": gaps,
        "wall_ms": wall,
    }


def cvxpy_clarabel(Ts: list[np.ndarray]) -> dict:
    import cvxpy as cp

    rel = R.MomentRelaxation(Ts[0].shape[0], 3, formulation="full")  # the textbook relaxation
    m, N = rel.m, rel.n_vars
    mm = rel._mmap.tocoo()
    I, J = rel._I[mm.row], rel._J[mm.row]
    off = I != J
    rows = np.concatenate([I + m * J, (J + m * I)[off]])  # vec(M), column-major, both triangles
    cols = np.concatenate([mm.col, mm.col[off]])
    Mfull = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(m * m, N))
    A0 = rel._A0_T.T.tocsr()
    b0 = np.zeros(rel.n_zero)
    b0[0] = 1.0
    y = cp.Variable(N)
    c = cp.Parameter(N)
    M = cp.reshape(Mfull @ y, (m, m), order="F")
    prob = cp.Problem(cp.Minimize(c @ y), [A0 @ y == b0, M >> 0])
    c.value = rel.objective(Ts[0], 1)
    prob.solve(solver=cp.CLARABEL)  # compile once (DPP), not timed
    wall, cpu, solver_ms, values, status = [], [], [], [], []
    for T in Ts:
        c.value = rel.objective(T, 1)
        w0, c0 = time.perf_counter(), time.process_time()
        prob.solve(solver=cp.CLARABEL)
        wall.append(1e3 * (time.perf_counter() - w0))
        cpu.append(1e3 * (time.process_time() - c0))
        solver_ms.append(1e3 * prob.solver_stats.solve_time)
        values.append(-float(prob.value))
        status.append(prob.status)
    return {
        "wall": stats(wall),
        "cpu": stats(cpu),
        "clarabel_solve": stats(solver_ms),
        "values": values,
        "status": status,
    }


def main() -> None:
    ap = _common.parser(__doc__, "certified")
    ap.add_argument("--instances", type=int, default=30)
    ap.add_argument("--cvxpy", type=int, default=5, help="instances through cvxpy + Clarabel")
    ap.add_argument("--scs-only", type=int, default=5, help="instances through one full SCS solve")
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--sigma", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    Ts = [nearly_sod(args.n, args.sigma, rng) for _ in range(args.instances)]

    R.clear_cache()
    t0 = time.perf_counter()
    rel = R.get_relaxation(args.n, 3)
    build_ms = 1e3 * (time.perf_counter() - t0)
    t0 = time.perf_counter()
    rel.solve(nearly_sod(args.n, args.sigma, np.random.default_rng(0)))  # SCS workspace setup
    first_ms = 1e3 * (time.perf_counter() - t0)

    ours = time_ours(Ts)
    k = min(args.cvxpy, len(Ts))
    ref = cvxpy_clarabel(Ts[:k]) if k else None
    j = min(args.scs_only, len(Ts))
    scs_only = time_ours(Ts[:j], warmup_iters=0, gap_tol=0.0) if j else None

    rows = [("ours (warm-up + face certificate)", ours)]
    if scs_only:
        rows.append(("SCS alone (full solve, eps 1e-7)", scs_only))
    if ref:
        rows.append(("cvxpy + Clarabel (full relaxation)", ref))
    print(
        f"n = {args.n}, p = 3, sigma = {args.sigma}, {len(Ts)} instances; "
        f"build {build_ms:.1f} ms, first solve (SCS setup) {first_ms:.1f} ms"
    )
    print(f"{'route':38s} {'#':>3s} {'median ms':>10s} {'p90 ms':>9s} {'cpu med':>8s}")
    for name, res in rows:
        w = res["wall"]
        print(
            f"{name:38s} {w['n']:3d} {w['median_ms']:10.1f} {w['p90_ms']:9.1f} "
            f"{res['cpu']['median_ms']:8.1f}"
        )
    if ref:
        same = ours["wall_ms"][:k]
        ratio = float(np.median(ref["wall"]["median_ms"]) / np.median(same))
        diff = np.max(np.abs(np.asarray(ref["values"]) - np.asarray(ours["fx"][:k])))
        print(
            f"speed-up vs cvxpy + Clarabel (median over the same {k}): {ratio:.0f}x; "
            f"max |Clarabel value - our certified fx| = {diff:.1e}"
        )
    print(
        f"certified gap upper_bound - fx: median {ours['gap_median']:.1e}, max "
        f"{ours['gap_max']:.1e}; < 1e-6 in {ours['certified_1e-6']}/{len(Ts)}; "
        f"certificates {ours['certificates']}; SCS iterations median "
        f"{ours['iterations_median']:.0f}, max {ours['iterations_max']}"
    )

    payload = {
        "setup": {
            "n": args.n,
            "p": 3,
            "sigma": args.sigma,
            "instances": len(Ts),
            "seed": args.seed,
            "build_ms": build_ms,
            "first_solve_ms": first_ms,
            "warmup_settings": R.WARMUP_SCS_SETTINGS,
            "fallback_settings": R.DEFAULT_SCS_SETTINGS,
        },
        "ours": ours,
        "scs_only": scs_only,
        "cvxpy_clarabel": ref,
    }
    print(f"wrote {_common.write(args.out, payload)}")


if __name__ == "__main__":
    main()
