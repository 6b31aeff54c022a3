"""Moment relaxation: formulation, validated bounds, certificates, polish, reproducibility."""

import itertools
import math
import threading

import numpy as np
import pytest

from sroa_dist import relaxation as R
from sroa_dist.monomials import MonomialKeys
from sroa_dist.relaxation import (
    MomentRelaxation,
    get_relaxation,
    monomial_exponents,
    polish,
    polynomial_coefficients,
    solve,
    solve_abs,
)
from sroa_dist.relaxation.clarabel_driver import CLARABEL
from sroa_dist.relaxation.polish import values
from sroa_dist.relaxation.scs_driver import SCS, scs_data
from sroa_dist.tensors import kron_power

#: Both drivers, for the tests that are cheap at Clarabel's sizes (an interior-point solve of a
#: small relaxation): the same checks must pass whichever solver produced the duals.
DRIVERS = [pytest.param(SCS, id="scs"), pytest.param(CLARABEL, id="clarabel")]


def sym(A):
    """Average over all axis permutations."""
    p = A.ndim
    return sum(np.transpose(A, pm) for pm in itertools.permutations(range(p))) / math.factorial(p)


def diag_tensor(n, p, sign=1.0):
    T = np.zeros((n,) * p)
    for i in range(n):
        T[(i,) * p] = sign
    return T


def f(T, x):
    out = T
    for _ in range(T.ndim):
        out = out @ x
    return float(out)


def nearly_sod(n, sigma, rng):
    return diag_tensor(n, 3) + sym(sigma * rng.standard_normal((n,) * 3))


def circle_max(T, sign=1, m=200_001):
    """Exhaustive maximum of sign * T x^p over a fine grid of the unit circle (n = 2)."""
    th = np.linspace(0.0, 2.0 * np.pi, m)
    X = np.stack([np.cos(th), np.sin(th)], axis=1)
    vals = kron_power(X, T.ndim) @ T.reshape(-1)
    return float((sign * vals).max())


# ---- building blocks --------------------------------------------------------------------------


@pytest.mark.parametrize("n,p", [(3, 3), (4, 4), (2, 5)])
def test_polynomial_coefficients_reproduce_the_form(n, p):
    rng = np.random.default_rng(0)
    T = sym(rng.standard_normal((n,) * p))
    E = monomial_exponents(n, p)
    coef = polynomial_coefficients(T)
    assert coef.shape == (math.comb(n + p - 1, p),)
    for x in rng.standard_normal((5, n)):
        assert np.prod(x[None, :] ** E, axis=1) @ coef == pytest.approx(f(T, x), rel=1e-12)
    # Batched: leading axes are a batch.
    Ts = np.stack([T, 2 * T])
    np.testing.assert_allclose(polynomial_coefficients(Ts, p), np.stack([coef, 2 * coef]))


@pytest.mark.parametrize("formulation", R.FORMULATIONS)
@pytest.mark.parametrize("n,p", [(3, 3), (3, 4), (2, 5)])
def test_moment_map_matches_scs_svec_convention(formulation, n, p):
    """A y(x) + s = b, s = (0, svec(m m^T)): lower triangle, column-major, sqrt 2 off-diagonal."""
    rel = MomentRelaxation(n, p, formulation=formulation)
    x = np.random.default_rng(1).standard_normal(n)
    x /= np.linalg.norm(x)
    y = rel.moments_of(x)
    mvec = rel.basis_vector(x)
    M = np.outer(mvec, mvec)
    np.testing.assert_allclose(rel.moment_matrix(y), M, atol=1e-14)
    rows, cols = np.triu_indices(rel.m)  # (col, row) pairs with row >= col, by column
    svec = np.where(rows == cols, 1.0, np.sqrt(2.0)) * M[cols, rows]
    A, b, cone = scs_data(rel.problem)
    s = b - A @ y
    np.testing.assert_allclose(s[: rel.n_zero], 0.0, atol=1e-14)
    np.testing.assert_allclose(s[rel.n_zero :], svec, atol=1e-14)
    assert cone == {"z": rel.n_zero, "s": [rel.m]}
    # trace M(y(x)) <= trace_bound on the sphere
    assert np.trace(M) <= rel.trace_bound + 1e-14


def test_build_is_cached():
    # How fast the build is belongs in benchmarks/, not in a timed test.
    R.clear_cache()
    rel = get_relaxation(10, 3)
    assert (rel.m, rel.n_vars) == (65, 935)
    assert get_relaxation(10, 3) is rel
    assert get_relaxation(10, 3, order=2) is rel
    full = get_relaxation(10, 3, formulation="full")
    assert full is not rel and (full.m, full.n_vars) == (66, 1001)


@pytest.mark.parametrize("n,p", [(3, 3), (2, 4), (3, 4)])
def test_validated_bound_holds_for_arbitrary_duals(n, p):
    """The certificate's sign conventions: the bound is valid for ANY dual guess."""
    rng = np.random.default_rng(2)
    rel = MomentRelaxation(n, p)
    T = sym(rng.standard_normal((n,) * p))
    X = rng.standard_normal((2000, n))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    for sign in (1, -1):
        c = rel.objective(T, sign)
        fmax = float((sign * (kron_power(X, p) @ T.reshape(-1))).max())
        for scale in (1e-3, 1.0, 10.0):
            z0 = rng.standard_normal(rel.n_zero) * scale
            G = rng.standard_normal((rel.m, rel.m)) * scale
            ub = rel.validated_bound(c, z0, G + G.T)
            assert ub >= fmax


# ---- global optimality on the circle ---------------------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("p", [3, 4])
@pytest.mark.slow
def test_circle_against_exhaustive_search(p, driver):
    rng = np.random.default_rng(10 + p)
    for _ in range(4):
        T = sym(rng.standard_normal((2,) * p))
        for sign in (1, -1):
            ex = circle_max(T, sign)
            r = solve(T, sign, driver=driver)
            assert r.upper_bound >= ex - 1e-9
            assert abs(r.value - ex) < 1e-6
            assert abs(r.fx - ex) < 1e-6
            assert r.fx == pytest.approx(sign * f(T, r.x), abs=1e-15)
            assert np.linalg.norm(r.x) == pytest.approx(1.0, abs=1e-14)
            assert r.gap < 1e-9


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("p", [3, 4])
def test_full_and_homogeneous_formulations_agree(p, driver):
    rng = np.random.default_rng(20 + p)
    T = sym(rng.standard_normal((3,) * p))
    a = solve(T, formulation="homogeneous", driver=driver)
    b = solve(T, formulation="full", driver=driver)
    assert a.fx == pytest.approx(b.fx, abs=1e-9)
    assert a.upper_bound == pytest.approx(b.upper_bound, abs=1e-6)
    assert min(a.upper_bound, b.upper_bound) >= max(a.fx, b.fx) - 1e-12


# ---- closed forms and nearly SOD ---------------------------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_diagonal_cubic_has_maximum_one(n, driver):
    r = solve(diag_tensor(n, 3), driver=driver)
    assert r.upper_bound - 1.0 < 1e-6
    assert r.upper_bound >= 1.0
    assert r.fx == pytest.approx(1.0, abs=1e-9)
    assert np.max(np.abs(r.x)) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("support", [(0,), (1, 3), (0, 2, 4), (0, 1, 2, 3, 4)])
def test_polish_converges_to_support_kkt_points(support):
    """For T = sum e_i^(x)3 the KKT points include x_S = sum_{i in S} e_i / sqrt|S| with
    Z-eigenvalue 1/sqrt|S| (saddles for |S| > 1); Newton converges to them from nearby starts
    that do not increase the objective (perturbations off the support)."""
    n = 5
    T = diag_tensor(n, 3)
    xs = np.zeros(n)
    xs[list(support)] = 1.0 / math.sqrt(len(support))
    lam = 1.0 / math.sqrt(len(support))
    rng = np.random.default_rng(3)
    off = [i for i in range(n) if i not in support]
    starts = [xs]  # a KKT point is a fixed point
    for _ in range(5 if off else 0):
        d = np.zeros(n)
        d[off] = 1e-2 * rng.standard_normal(len(off))
        starts.append(xs + d)
    for x0 in starts:
        x = polish(T, x0, power_steps=0)
        np.testing.assert_allclose(x, xs, atol=1e-12)
        g = np.einsum("ijk,j,k->i", T, x, x)
        np.testing.assert_allclose(g, lam * x, atol=1e-13)  # KKT: T x^2 = lam x
    if len(support) == 1:  # a local maximiser: random nearby starts, default power steps
        for _ in range(5):
            x = polish(T, xs + 0.05 * rng.standard_normal(n))
            np.testing.assert_allclose(x, xs, atol=1e-12)


def test_nearly_sod_relaxation_is_tight():
    """n = 10, p = 3, sigma = 0.01: certified to 1e-9 (typically ~1e-12), moments rank one."""
    rng = np.random.default_rng(4)
    for _ in range(3):
        T = nearly_sod(10, 0.01, rng)
        r = solve(T)
        assert r.upper_bound - r.fx < 1e-9
        assert r.certificate == "face" and r.dual_margin > 0 and r.flat
        assert r.fx > 0.98
        # The candidate beats every local maximiser found from the coordinate starts.
        best_local = max(f(T, polish(T, np.eye(10)[i], power_steps=20)) for i in range(10))
        assert r.fx >= best_local - 1e-12


@pytest.mark.slow
def test_full_scs_solve_moment_matrix_is_rank_one():
    rng = np.random.default_rng(5)
    T = nearly_sod(6, 0.01, rng)
    r = solve(T, warmup_iters=0, gap_tol=0.0, eps_abs=1e-8, eps_rel=1e-8, max_iters=20000)
    assert r.status == "solved"
    assert r.rank_ratio < 1e-4 and r.flat
    assert r.gap < 1e-9
    assert abs(r.sdp_value - r.fx) < 1e-6 and r.scs_value == r.sdp_value


def test_bound_stays_valid_when_scs_stops_early():
    rng = np.random.default_rng(6)
    T2 = sym(rng.standard_normal((2, 2, 2)))
    ex = circle_max(T2)
    T10 = nearly_sod(10, 0.01, rng)
    ref = solve(T10).fx  # certified to ~1e-12
    for T, fmax in ((T2, ex), (T10, ref)):
        runs = [
            solve(T, warmup_iters=5, warmup_chunks=1, fallback=False),
            solve(T, warmup_iters=2, warmup_chunks=1, fallback=False),
            solve(T, warmup_iters=0, max_iters=5),
            solve(T, warmup_iters=0, eps_abs=1e-1, eps_rel=1e-1),
        ]
        for r in runs:
            assert r.upper_bound >= fmax - 1e-12
            assert r.fx <= fmax + 1e-9  # the grid maximum is within ~1e-9 of the true one
        assert runs[2].iterations <= 5


def test_scale_invariance_and_zero_tensor():
    rng = np.random.default_rng(14)
    T = nearly_sod(6, 0.02, rng)
    a, b = solve(T), solve(1e3 * T)
    np.testing.assert_allclose(b.x, a.x, atol=1e-10)
    assert b.fx == pytest.approx(1e3 * a.fx, rel=1e-12)
    assert b.upper_bound == pytest.approx(1e3 * a.upper_bound, rel=1e-9)
    assert b.gap < 1e-9 * np.linalg.norm(1e3 * T)
    z = solve(np.zeros((4, 4, 4)))
    assert z.fx == z.upper_bound == 0.0 and np.linalg.norm(z.x) == 1.0


# ---- signs and |f| ---------------------------------------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
def test_even_order_sign_handling(driver):
    T = diag_tensor(5, 4, sign=-1.0)
    r = solve_abs(T, driver=driver)
    assert r.value == pytest.approx(1.0, abs=1e-9)
    assert r.fx == pytest.approx(1.0, abs=1e-9)
    assert r.sign == -1
    assert f(T, r.x) == pytest.approx(-1.0, abs=1e-9)
    assert r.upper_bound >= 1.0 and r.upper_bound - 1.0 < 1e-6
    rp = solve(T, 1, driver=driver)  # max of -sum x_i^4 is -1/n, at the all-equal vector
    assert rp.fx == pytest.approx(-1 / 5, abs=1e-9)
    assert rp.upper_bound == pytest.approx(-1 / 5, abs=1e-6)


@pytest.mark.parametrize("driver", DRIVERS)
def test_even_order_abs_bounds_both_signs(driver):
    """solve_abs stops the losing sign as soon as its bound is below the winner's value."""
    rng = np.random.default_rng(12)
    T = diag_tensor(6, 4) + sym(0.01 * rng.standard_normal((6,) * 4))
    r = solve_abs(T, driver=driver)
    rp, rm = solve(T, 1, driver=driver), solve(T, -1, driver=driver)
    assert r.sign == 1 and r.fx == pytest.approx(rp.fx, abs=1e-12)
    assert r.upper_bound >= max(rp.fx, rm.fx) and r.gap < 1e-9
    X = rng.standard_normal((20000, 6))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    assert np.abs(kron_power(X, 4) @ T.reshape(-1)).max() <= r.upper_bound


@pytest.mark.parametrize("p", [5, 6])
@pytest.mark.slow
def test_higher_orders_are_certified(p):
    rng = np.random.default_rng(13)
    n = 4
    T = diag_tensor(n, p) + sym(0.02 * rng.standard_normal((n,) * p))
    r = solve_abs(T)
    assert r.gap < 1e-9
    X = rng.standard_normal((20000, n))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    assert np.abs(kron_power(X, p) @ T.reshape(-1)).max() <= r.upper_bound


def test_odd_order_abs_is_plain_max():
    rng = np.random.default_rng(7)
    T = nearly_sod(4, 0.05, rng)
    a, b = solve_abs(T), solve(T)
    assert a.sign == 1 and a.fx == b.fx and a.upper_bound == b.upper_bound
    # odd p: max of -f equals max of f (f(-x) = -f(x))
    m = solve(T, -1)
    assert m.fx == pytest.approx(b.fx, abs=1e-10)


# ---- reproducibility -------------------------------------------------------------------------


def _bits(r):
    return (r.value, r.upper_bound, r.fx, r.iterations, r.certificate, r.x.tobytes())


def test_results_are_a_pure_function_of_the_tensor():
    rng = np.random.default_rng(8)
    T1, T2 = nearly_sod(10, 0.01, rng), nearly_sod(10, 0.01, rng)
    rel = get_relaxation(10, 3)
    a = rel.solve(T1)
    rel.solve(T2)
    b = rel.solve(T1)
    c = MomentRelaxation(10, 3).solve(T1)  # a fresh build and SCS workspace
    out = {}
    th = threading.Thread(target=lambda: out.setdefault("r", rel.solve(T1)))
    th.start()
    th.join()
    assert _bits(a) == _bits(b) == _bits(c) == _bits(out["r"])


def test_fallback_path_is_reproducible():
    rng = np.random.default_rng(9)
    T = nearly_sod(5, 0.02, rng)
    opts = dict(warmup_iters=3, warmup_chunks=1, gap_tol=1e-13, max_iters=300, fallback_chunk=100)
    a = solve(T, **opts)
    solve(nearly_sod(5, 0.02, rng), **opts)
    b = solve(T, **opts)
    assert a.iterations > 3
    assert _bits(a) == _bits(b)


# ---- input checking --------------------------------------------------------------------------


def test_bad_inputs_raise_helpful_errors():
    rng = np.random.default_rng(11)
    rel = get_relaxation(3, 3)
    with pytest.raises(ValueError, match="symmetric"):
        rel.solve(rng.standard_normal((3, 3, 3)))
    with pytest.raises(ValueError, match="shape"):
        rel.solve(sym(rng.standard_normal((4, 4, 4))))
    with pytest.raises(ValueError, match="valid SCS settings"):
        rel.solve(diag_tensor(3, 3), eps=1e-3)
    with pytest.raises(ValueError, match="valid Clarabel settings.*solve options"):
        rel.solve(diag_tensor(3, 3), driver=CLARABEL, max_iters=10)
    with pytest.raises(ValueError, match="sign"):
        rel.solve(diag_tensor(3, 3), sign=2)
    with pytest.raises(ValueError, match="formulation"):
        MomentRelaxation(3, 3, formulation="nope")
    with pytest.raises(ValueError, match="order"):
        MomentRelaxation(3, 4, order=1)
    with pytest.raises(ValueError, match="nonzero"):
        polish(diag_tensor(3, 3), np.zeros(3))


# ---- moment index past the former int64 limit ----------------------------------------------


@pytest.mark.parametrize("formulation", ["homogeneous", "full"])
def test_moment_index_works_past_n_26(formulation):
    """n = 30 at order 2: 30 log2(5) > 62 was refused by the old positional keys."""
    n, p = 30, 3
    rel = MomentRelaxation(n, p, formulation=formulation)
    keys = MonomialKeys(n, 4).of(rel.exponents)
    assert len(np.unique(keys)) == rel.n_vars  # one key per moment variable
    x = np.random.default_rng(3).standard_normal(n)
    x /= np.linalg.norm(x)
    mvec = rel.basis_vector(x)
    np.testing.assert_allclose(
        rel.moment_matrix(rel.moments_of(x)), np.outer(mvec, mvec), atol=1e-14
    )
    A, b, _ = scs_data(rel.problem)
    s = b - A @ rel.moments_of(x)
    np.testing.assert_allclose(s[: rel.n_zero], 0.0, atol=1e-13)


def test_monomial_keys_are_a_bijection():
    """Colex ranks of all monomials of degree <= D are exactly 0 .. C(n + D, D) - 1."""
    n, D = 5, 3
    kx = MonomialKeys(n, D)
    E = np.vstack([monomial_exponents(n, k) for k in range(D + 1)])
    assert sorted(kx.of(E).tolist()) == list(range(math.comb(n + D, D)))
    # products: key of merged tuples equals key of the summed exponents
    rng = np.random.default_rng(0)
    a, b = E[rng.integers(0, 20, 50)], E[rng.integers(0, 20, 50)]
    a, b = a[(a + b).sum(1) <= D], b[(a + b).sum(1) <= D]
    np.testing.assert_array_equal(kx.product(kx.tuples(a), kx.tuples(b)), kx.of(a + b))


@pytest.mark.slow
def test_certified_solve_past_n_26():
    """A nearly SOD cubic at n = 27 is certified (gap <= 1e-8), with x near a component."""
    n = 27
    T = nearly_sod(n, 0.01, np.random.default_rng(5))
    r = solve(T)
    assert r.upper_bound >= r.fx
    assert r.upper_bound - r.fx <= 1e-8 * np.linalg.norm(T)
    assert np.abs(r.x).max() > 0.99


# ---- size cap from a time budget -------------------------------------------------------------


def test_time_budget_sets_the_size_cap():
    from sroa_dist.methods.builtin import relaxation_cost, relaxation_tractable

    for p in (3, 4, 5):
        costs = [relaxation_cost(n, p) for n in range(2, 40)]
        assert all(a < b for a, b in itertools.pairwise(costs))  # grows with n

        def largest(budget, p=p):
            return max(
                (n for n in range(2, 200) if relaxation_tractable(n, p, None, budget)), default=0
            )

        assert largest(0.0) == 0 and largest(np.inf) == 199
        assert largest(0.1) <= largest(1.0) <= largest(10.0) <= largest(100.0)
        assert largest(1.0) < largest(100.0)
    # an explicit max_gram_size keeps its former meaning: C(n + d, d) <= cap
    assert relaxation_tractable(14, 3, 120) and not relaxation_tractable(15, 3, 120)


def test_certified_respects_the_time_budget():
    from sroa_dist import rank_one

    T = nearly_sod(5, 0.05, np.random.default_rng(0))
    skipped = rank_one(T, "certified", rng=0, time_budget=0.0)
    assert "time_budget" in skipped.message and "relaxation skipped" in skipped.message
    run = rank_one(T, "certified", rng=0, time_budget=5.0)
    assert run.certified and "skipped" not in run.message
    capped = rank_one(T, "certified", rng=0, time_budget=0.0, max_gram_size=10**6)
    assert capped.certified  # the explicit cap overrides the budget
    with pytest.raises(ValueError, match="time_budget"):
        rank_one(T, "certified", rng=0, time_budget=-1.0)


def test_large_relaxations_warm_up_longer_before_the_fallback(monkeypatch):
    """Above LARGE_GRAM the warm-up gets more chunks by default (the fallback's second SCS
    workspace is what raises peak memory at n = 64); an explicit warmup_chunks still rules."""
    from sroa_dist.relaxation import core

    rel = MomentRelaxation(4, 3)
    T = diag_tensor(4, 3)
    # gap_tol = 0 cannot be met: every allowed warm-up chunk runs
    small = rel.solve(T, fallback=False, gap_tol=0.0).iterations
    monkeypatch.setattr(core, "LARGE_GRAM", 0)
    large = rel.solve(T, fallback=False, gap_tol=0.0).iterations
    asked = rel.solve(T, fallback=False, gap_tol=0.0, warmup_chunks=2).iterations
    assert small == asked == 2 * 14 and large > small


def test_large_relaxations_run_the_full_solve_in_shorter_chunks(monkeypatch):
    """Above SHORT_CHUNK_GRAM the full solve's chunks are LARGE_FALLBACK_CHUNK long by default
    (the certificate is tried more often where eigendecompositions dominate); an explicit
    fallback_chunk still rules. Observed through the chunk rounding of a 20-iteration budget."""
    from sroa_dist.relaxation import core

    rel = MomentRelaxation(4, 3)
    T = diag_tensor(4, 3)
    opts = dict(warmup_iters=0, gap_tol=0.0, max_iters=20)
    assert core.FALLBACK_CHUNK >= 20 > core.LARGE_FALLBACK_CHUNK
    small = rel.solve(T, **opts).iterations  # one chunk of 20
    monkeypatch.setattr(core, "SHORT_CHUNK_GRAM", 0)
    large = rel.solve(T, **opts).iterations  # ceil(20 / 15) chunks of 15
    asked = rel.solve(T, fallback_chunk=20, **opts).iterations
    assert small == asked == 20
    assert large == 2 * core.LARGE_FALLBACK_CHUNK


@pytest.mark.parametrize("p", [2, 3, 4, 5])
def test_row_values_match_the_kronecker_form(p):
    """T x^p of many rows, contracted one axis at a time, equals the Kronecker-power form
    (the one the polish and the start orientation used to build, n^p wide per row)."""
    n = 4
    rng = np.random.default_rng(p)
    G = rng.standard_normal((n,) * p)
    T = sum(np.transpose(G, q) for q in itertools.permutations(range(p))) / math.factorial(p)
    X = rng.standard_normal((7, n))
    want = kron_power(X, p) @ T.reshape(-1)
    np.testing.assert_allclose(values(T, X), want, rtol=1e-12, atol=1e-12)
