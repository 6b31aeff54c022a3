"""The paper-critical part of the relaxation: validated bounds from any dual guess, the
repair of a dual's residual, and the face certificate (sroa_dist/relaxation/bound.py)."""

import itertools
import math

import numpy as np
import pytest

import sroa_dist as sd
from sroa_dist.relaxation import MomentRelaxation, bound, get_relaxation, solve
from sroa_dist.tensors import SYMMETRY_RTOL, kron_power


def sym(A):
    p = A.ndim
    return sum(np.transpose(A, pm) for pm in itertools.permutations(range(p))) / math.factorial(p)


def circle_max(T, sign=1, m=200_001):
    """Exhaustive maximum of sign * T x^p over a fine grid of the unit circle (n = 2): a lower
    bound of the true maximum, so every valid upper bound must lie above it."""
    th = np.linspace(0.0, 2.0 * np.pi, m)
    X = np.stack([np.cos(th), np.sin(th)], axis=1)
    return float((sign * (kron_power(X, T.ndim) @ T.reshape(-1))).max())


def random_dual(rel, rng, scale=1.0):
    z_zero = scale * rng.standard_normal(rel.n_zero)
    A = scale * rng.standard_normal((rel.m, rel.m))
    return z_zero, 0.5 * (A + A.T)


@pytest.mark.parametrize("formulation", ["homogeneous", "full"])
@pytest.mark.parametrize("p,sign", [(3, 1), (4, 1), (4, -1)])
def test_validated_bound_holds_for_any_dual_guess(formulation, p, sign):
    """Random (infeasible, indefinite) duals still give upper bounds of max sign * T x^p."""
    rng = np.random.default_rng(p)
    T = sym(rng.standard_normal((2,) * p))
    rel = MomentRelaxation(2, p, formulation=formulation)
    c = rel.objective(T, sign)
    truth = circle_max(T, sign)
    for scale in (1e-3, 1.0, 10.0):
        z_zero, Z = random_dual(rel, rng, scale)
        assert bound.validated_bound(rel, c, z_zero, Z) >= truth
        Zr = bound.repair(rel, c, z_zero, Z)
        assert bound.validated_bound(rel, c, z_zero, Zr) >= truth


@pytest.mark.parametrize("formulation", ["homogeneous", "full"])
def test_repair_zeroes_the_dual_residual(formulation):
    """After repair, r = c + A_0^T z_zero - M^*(Z) vanishes (to rounding) on every variable."""
    rng = np.random.default_rng(1)
    rel = MomentRelaxation(3, 3, formulation=formulation)
    c = rel.objective(sym(rng.standard_normal((3, 3, 3))))
    z_zero, Z = random_dual(rel, rng)
    Zr = bound.repair(rel, c, z_zero, Z)
    r = c + rel._A0_T @ z_zero - rel._adjoint(Zr)
    assert np.abs(r).max() <= 1e-12 * (1 + np.abs(Z).max())
    np.testing.assert_array_equal(Zr, Zr.T)


def test_face_projection_meets_the_face_equations():
    """project(Z0) satisfies the dual equalities with z_face and Z m(x) = 0 at the candidate."""
    rng = np.random.default_rng(2)
    n, p = 3, 3
    T = np.zeros((n,) * p)
    for i in range(n):
        T[(i,) * p] = 1.0
    rel = get_relaxation(n, p)
    c = rel.objective(T)
    x = np.eye(n)[0]  # a global maximiser (f = 1)
    z_zero, Z0 = random_dual(rel, rng)
    zf, project = bound.face_projector(rel, c, z_zero, x)
    Z = project(Z0)
    q = rel.basis_vector(x)
    assert zf[0] == pytest.approx(1.0)  # -c^T y(x) = f(x)
    assert np.abs(Z @ q).max() <= 1e-10 * np.abs(Z).max()
    r = c + rel._A0_T @ zf - rel._adjoint(Z)
    assert np.abs(r).max() <= 1e-10 * (1 + np.abs(Z).max())


@pytest.mark.parametrize("n", [2, 3, 4])
def test_face_certificate_closes_the_gap_on_the_closed_form(n):
    """T = sum_i e_i^(x)3: max T x^3 = 1 (at e_i); the face certificate proves it to 1e-9."""
    T = np.zeros((n,) * 3)
    for i in range(n):
        T[(i,) * 3] = 1.0
    r = solve(T)
    assert r.certificate == "face"
    assert r.fx == pytest.approx(1.0, abs=1e-12)
    assert 1.0 <= r.upper_bound <= 1.0 + 1e-9


def test_refine_face_only_lowers_the_best_bound():
    """refine_face offers bounds to Best, which keeps the smallest; none is below the maximum."""
    from sroa_dist.relaxation.result import Best

    rng = np.random.default_rng(4)
    T = sym(rng.standard_normal((2, 2, 2)))
    rel = get_relaxation(2, 3)
    c = rel.objective(T)
    truth = circle_max(T)
    best = Best()
    z_zero, Z0 = random_dual(rel, rng)
    x = np.array([1.0, 0.0])
    fx = float(-c @ rel.moments_of(x))
    bound.refine_face(rel, c, z_zero, Z0, x, fx, 1e-12, -np.inf, 5, best)
    assert best.bound >= truth
    assert best.which == "face"


def test_a_tensor_sshopm_accepts_is_not_refused_by_certified():
    """One symmetry test with one tolerance: an asymmetry between the former relaxation
    tolerance (1e-12) and SYMMETRY_RTOL (1e-10) passes both the front door and the relaxation."""
    n, p = 4, 3
    T = np.zeros((n,) * p)
    for i in range(n):
        T[(i,) * p] = 1.0
    T = T + sym(0.05 * np.random.default_rng(0).standard_normal((n,) * p))
    T[0, 1, 2] += 0.1 * SYMMETRY_RTOL * np.abs(T).max()  # 1e-11 relative: not exactly symmetric
    assert sd.rank_one(T, "sshopm", rng=0).lam > 0
    r = sd.rank_one(T, "certified", rng=0)
    assert r.certified
    assert solve(T).upper_bound >= r.lam  # the relaxation accepts it directly too
    T[0, 1, 2] += 10 * SYMMETRY_RTOL * np.abs(T).max()  # beyond the tolerance: refused by both
    for call in (lambda: sd.rank_one(T, "sshopm", rng=0), lambda: solve(T)):
        with pytest.raises(ValueError, match="symmetric"):
            call()


@pytest.mark.parametrize("n", [5, 7])
def test_sparse_woodbury_face_projector_matches_the_dense_one(n, monkeypatch):
    """At large n the face projector keeps the Woodbury factors of M^*M sparse and never forms
    an (N, m) dense array; it must give the same projection as the dense path, onto the face."""
    from sroa_dist.relaxation import builders

    rng = np.random.default_rng(n)
    T = np.zeros((n,) * 3)
    T[(np.arange(n),) * 3] = 1.0
    T += sym(0.1 * rng.standard_normal((n,) * 3))
    dense = MomentRelaxation(n, 3)
    assert dense._gram_U is not None
    monkeypatch.setattr(builders, "DENSE_WOODBURY_MAX", 0)
    sparse = MomentRelaxation(n, 3)
    assert sparse._gram_U is None and sparse._K is not None
    c = dense.objective(T / np.linalg.norm(T))
    x = dense.solve(T).x  # a KKT point: there the face is not empty
    z_zero = np.zeros(dense.n_zero)
    Z0 = rng.standard_normal((dense.m, dense.m))
    Z0 = Z0 + Z0.T
    zf_d, proj_d = bound.face_projector(dense, c, z_zero, x)
    zf_s, proj_s = bound.face_projector(sparse, c, z_zero, x)
    Zd, Zs = proj_d(Z0), proj_s(Z0)
    np.testing.assert_array_equal(zf_d, zf_s)
    np.testing.assert_allclose(Zs, Zd, rtol=0, atol=1e-10 * np.abs(Zd).max())
    g = c + sparse._A0_T @ zf_s  # on the face: the dual equalities hold, Z annihilates m(x)
    np.testing.assert_allclose(sparse._adjoint(Zs), g, rtol=0, atol=1e-10)
    np.testing.assert_allclose(Zs @ sparse.basis_vector(x), 0.0, atol=1e-8 * np.abs(Zs).max())


@pytest.mark.parametrize("sign", [1, -1])
def test_flattening_dual_is_the_unfolding_norm_and_a_valid_bound(sign):
    """For even p the symmetric-unfolding dual satisfies the dual equalities exactly, its bound
    is lambda_max of the square unfolding (which bounds max sign * T x^4 by Cauchy-Schwarz)
    and it lies above the exhaustive maximum on the circle; its exported certificate verifies."""
    rng = np.random.default_rng(5)
    T = sym(rng.standard_normal((2,) * 4))
    rel = get_relaxation(2, 4)
    z_zero, Z = bound.flattening_dual(rel, T, sign)
    c = rel.objective(T, sign)
    residual = c + rel._A0_T @ z_zero - rel._adjoint(Z)
    assert np.abs(residual).max() <= 1e-13
    unfolding = float(np.linalg.eigvalsh(sign * T.reshape(4, 4))[-1])
    assert z_zero[0] == pytest.approx(unfolding, rel=1e-12)
    ub = bound.validated_bound(rel, c, z_zero, Z)
    assert circle_max(T, sign) <= ub <= unfolding + 1e-12
    cert = rel.export_certificate(T, sign, z_zero, Z)
    assert circle_max(T, sign) <= cert.verify(T) <= unfolding + 1e-10


def test_flattening_dual_applies_to_even_orders_only():
    assert bound.flattening_dual(get_relaxation(3, 3), np.zeros((3,) * 3), 1) is None
    assert bound.flattening_dual(get_relaxation(3, 4, order=3), np.zeros((3,) * 4), 1) is None


def test_losing_sign_of_an_even_form_is_settled_without_scs():
    """Nearly SOD with positive weights, p = 4: max (-T x^4) is far below max T x^4, and the
    unfolding dual shows it with no SCS iteration; the combined certificate still covers both
    signs, and a tensor whose two signs are close still gets the SCS solve of both."""
    n = 5
    rng = np.random.default_rng(2)
    T = np.zeros((n,) * 4)
    T[(np.arange(n),) * 4] = 1.0
    T = T + 0.01 * sym(rng.standard_normal((n,) * 4))
    rel = get_relaxation(n, 4)
    first = rel.solve(T, 1)
    res = rel.solve_abs(T, with_certificate=True)
    assert res.sign == 1 and res.iterations == first.iterations  # no SCS for sign -1
    assert sorted(res.sos_certificate.signs.tolist()) == [-1, 1]
    assert res.fx <= res.sos_certificate.verify(T) <= res.upper_bound + 1e-12
    assert res.upper_bound - res.fx <= 1e-6 * np.linalg.norm(T)
    # T = 0.5 (e_1^4 - e_2^4): both signs reach 0.5, so the unfolding bound cannot settle one
    B = np.zeros((n,) * 4)
    B[(0,) * 4], B[(1,) * 4] = 0.5, -0.5
    both = rel.solve_abs(B)
    assert both.iterations > rel.solve(B, 1).iterations
    assert both.fx == pytest.approx(0.5, abs=1e-8)


@pytest.mark.parametrize("p", [3, 4])
def test_an_indefinite_dual_is_exported_with_its_negative_part_in_the_bound(p):
    """An early-stopped or repaired dual has lambda_min(Z) < 0 and its bound is z_0 plus a
    penalty; the export moves that penalty into U, so Q is PSD, U is the validated bound (up
    to rounding) and verify(T) does not exceed U: a checker comparing them sees an honest
    claim."""
    rng = np.random.default_rng(p)
    n = 3
    T = sym(rng.standard_normal((n,) * p))
    rel = get_relaxation(n, p)
    c = rel.objective(T, 1)
    z_zero, Z = random_dual(rel, rng, scale=0.1)
    Zr = rel.repair(c, z_zero, Z)  # exact dual equalities, indefinite Z
    assert np.linalg.eigvalsh(Zr)[0] < -1e-3
    ub = rel.validated_bound(c, z_zero, Zr)
    cert = rel.export_certificate(T, 1, z_zero, Zr)
    U = float(cert.bounds[0])
    assert np.linalg.eigvalsh(cert.gram[0])[0] >= 0.0
    assert U == pytest.approx(ub, rel=1e-9)
    assert U <= cert.verify(T) <= U + 1e-9 * max(1.0, abs(U))
    assert cert.verify(T) >= sphere_max_sampled(T)


def sphere_max_sampled(T, k=20_000):
    X = np.random.default_rng(0).standard_normal((k, T.shape[0]))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return float((kron_power(X, T.ndim) @ T.reshape(-1)).max())
