"""Matrix-free structured tensors (sroa_dist.problems.structured, .operators, .matrix_free): the
operator equals the dense tensor the sweep builds, SROA and rank_one give the same components
on both, methods that need entries are refused, and no step on an operator is certified."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import sroa_dist as core
from sroa_dist.operators import StructuredTensor, SymmetricProducts
from sroa_dist.problems import perturbations as pt
from sroa_dist.tensors import contract, symmetrize

#: Small n per order: the dense reference has n^p entries.
SMALL_N = {3: 7, 4: 6, 5: 5, 6: 4}
#: Contractions of tensors with entries O(1) against unit vectors: rounding is ~1e-15.
ATOL = 1e-12
EPS = 0.3
WEIGHTS = {"dist": "uniform", "low": 0.8, "high": 1.2}  # distinct: SROA's order is defined


def _pair(p, basis, seed=1, params=None):
    """The dense instance exactly as the sweep builds it, and the operator from its V, λ."""
    n = SMALL_N[p]
    inst = core.make_instance(
        n,
        p,
        basis=basis,
        lambdas=WEIGHTS,
        noise="coherent-tilt",
        eps=EPS,
        rng=seed,
        noise_params=params,
    )
    op = core.structured_tensor(p, inst.lambdas, V=inst.V, eps=EPS, params=params)
    return inst, op


def _unit_rows(shape, seed=0):
    X = np.random.default_rng(seed).standard_normal(shape)
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


@pytest.mark.parametrize("basis", ["random", "identity"])
@pytest.mark.parametrize("p", [3, 4, 5, 6])
def test_operator_contractions_equal_the_dense_tensor(p, basis):
    inst, op = _pair(p, basis)
    assert op.shape == inst.T_hat.shape
    X = _unit_rows((1, 9, SMALL_N[p]))
    for times in (p - 2, p - 1, p):
        dense = contract(inst.T_hat[None], X, times)
        np.testing.assert_allclose(op.as_batch().contract(X, times), dense, rtol=0, atol=ATOL)
    fro2 = float(np.sum(inst.T_hat**2))
    assert op.as_batch().fro2()[0] == pytest.approx(fro2, rel=1e-12)


def test_tilt_parameters_reach_the_factored_form():
    # An explicit tilted component (not the smallest weight) must tilt the same way densely.
    inst, op = _pair(4, "random", params={"component": 1})
    X = _unit_rows((1, 5, SMALL_N[4]), seed=2)
    np.testing.assert_allclose(
        op.as_batch().contract(X, 3), contract(inst.T_hat[None], X, 3), rtol=0, atol=ATOL
    )


def _dense_products(form):
    """Σ_t w_t sym(a_{1,t}^{⊗k_1} ⊗ …) formed entry by entry (the oracle)."""
    n, R = form.n, form.weights.shape[0]
    out = np.zeros((n,) * form.p)
    for t in range(R):
        vecs = [
            A[:, min(t, A.shape[1] - 1)]
            for A, k in zip(form.factors, form.powers, strict=True)
            for _ in range(k)
        ]
        term = vecs[0]
        for v in vecs[1:]:
            term = np.multiply.outer(term, v)
        out += form.weights[t] * term
    return symmetrize(out)


def test_symmetric_products_against_their_dense_form():
    # Three factors (one broadcast column), non-orthogonal: the general contraction, Hessian
    # and the contingency-table inner product, not just the tilt's special case.
    rng = np.random.default_rng(4)
    n, R = 4, 3
    a = SymmetricProducts(
        (rng.standard_normal((n, R)), rng.standard_normal((n, 1)), rng.standard_normal((n, R))),
        (2, 1, 2),
        rng.standard_normal(R),
    )
    b = SymmetricProducts((rng.standard_normal((n, 2)),), (5,), rng.standard_normal(2))
    c = SymmetricProducts(
        (rng.standard_normal((n, 2)), rng.standard_normal((n, 2))), (3, 2), rng.standard_normal(2)
    )
    X = _unit_rows((1, 6, n), seed=5)
    for form in (a, b, c):
        D = _dense_products(form)
        op = StructuredTensor(((form,),))
        for times in (3, 4, 5):
            np.testing.assert_allclose(
                op.contract(X, times), contract(D[None], X, times), rtol=1e-12, atol=ATOL
            )
    for f, g in itertools.product((a, b, c), repeat=2):
        expected = float(np.sum(_dense_products(f) * _dense_products(g)))
        assert f.inner(g) == pytest.approx(expected, rel=1e-12, abs=ATOL)


@pytest.mark.parametrize("basis", ["random", "identity"])
@pytest.mark.parametrize("method", ["sshopm", "power"])
@pytest.mark.parametrize("p", [3, 4, 5, 6])
def test_sroa_on_the_operator_gives_the_dense_components(p, method, basis):
    # Same starts (same rng) on the same tensor: the iterates differ only by the rounding of
    # the two contraction orders, so the components agree to 1e-10 (values) and 1e-8
    # (vectors, up to sign for even p). The dense run uses implicit deflation, as the operator
    # must; distinct weights make the order of the steps well defined.
    inst, op = _pair(p, basis, seed=2)
    # Both paths run the same start policy (sshopm: spectral starts on every path).
    dense = core.sroa(inst.T_hat, method=method, rng=5, deflation="implicit")
    free = core.sroa(op, method=method, rng=5)
    np.testing.assert_allclose(free.lambdas, dense.lambdas, rtol=0, atol=1e-10)
    sign = np.sign(np.sum(free.vectors * dense.vectors, axis=0))
    np.testing.assert_allclose(free.vectors, dense.vectors * sign, rtol=0, atol=1e-8)
    # And they are the planted components within Theorem 3.1's 2ε (ε well inside its range).
    m = core.match(free, inst.lambdas, inst.V)
    assert np.all(m.lam_err <= 2 * EPS)
    assert not free.certified.any()
    assert np.all(np.isinf(free.upper_bounds))


def test_rank_one_on_the_operator_is_local_and_never_certified():
    inst, op = _pair(5, "random")
    free = core.rank_one(op, "sshopm", rng=3)
    dense = core.rank_one(inst.T_hat, "sshopm", rng=3, max_starts=0)
    assert free.lam == pytest.approx(dense.lam, abs=1e-10)
    assert not free.certified and math.isinf(free.upper_bound)
    assert "not certified" in free.message and "matrix-free" in free.message
    # Batched rank_one over two operators: each row is its own tensor.
    _, op2 = _pair(5, "identity", seed=3)
    both = core.rank_one_batch(StructuredTensor.stack([op, op2]), "power", rng=[1, 2])
    assert both.lam[0] == pytest.approx(core.rank_one(op, "power", rng=1).lam, abs=1e-12)
    assert both.lam[1] == pytest.approx(core.rank_one(op2, "power", rng=2).lam, abs=1e-12)
    assert not both.certified.any()


def test_large_order_runs_without_its_entries():
    # p = 6, n = 60: the dense tensor would take 373 GB; operator steps take milliseconds.
    n, p, eps = 60, 6, 0.1
    lam = np.linspace(1.0, 0.5, n)
    V = core.random_orthonormal_basis(n, rng=0)
    res = core.sroa(core.structured_tensor(p, lam, V=V, eps=eps), rank=3, method="sshopm", rng=0)
    # Theorem 3.1 (ε = 0.1 is far inside its range at these weights): each step is a planted
    # component within 2ε in value and 20ε/λ in vector, and the heaviest ones come first.
    m = core.match(res, lam, V)
    assert np.all(m.lam_err <= 2 * eps) and np.all(m.vec_err <= 20 * eps / lam[m.perm])
    assert np.all(lam[m.perm] >= 1.0 - 2 * eps)
    assert not res.certified.any()


def _one_line(exc_info):
    assert "\n" not in str(exc_info.value)


@pytest.mark.parametrize(
    ("family", "reason"),
    [
        ("gaussian", "i.i.d. noise has no factored form"),
        ("binary", "i.i.d. noise has no factored form"),
        ("coherent-tilt+gaussian", "background 'gaussian' has no factored form"),
        ("tests.support.perturb_user_family:rank_one", "declares no factored form"),
    ],
)
def test_families_without_a_factored_form_are_refused(family, reason):
    with pytest.raises(ValueError, match=reason) as exc:
        core.structured_tensor(3, [1.0, 1.0, 0.9], eps=0.1, family=family)
    _one_line(exc)


@pytest.mark.parametrize("method", ["certified", "sos"])
def test_methods_that_read_entries_are_refused(method):
    _, op = _pair(3, "identity")
    for call in (lambda: core.sroa(op, method=method), lambda: core.rank_one(op, method)):
        with pytest.raises(ValueError, match="needs every entry of the tensor") as exc:
            call()
        _one_line(exc)


def test_other_refusals_name_their_argument():
    _, op = _pair(3, "identity")
    with pytest.raises(ValueError, match="deflation: 'explicit'") as exc:
        core.sroa(op, method="sshopm", deflation="explicit")
    _one_line(exc)
    with pytest.raises(ValueError, match="certificate: a matrix-free operator"):
        core.rank_one(op, "sshopm", certificate=True)
    with pytest.raises(ValueError, match="V: expected orthonormal columns"):
        core.structured_tensor(3, [1.0, 1.0], V=np.array([[1.0, 1.0], [0.0, 1.0]]), eps=0.1)
    with pytest.raises(ValueError, match="eps"):
        core.structured_tensor(3, [1.0, 1.0], eps=-1.0)
    with pytest.raises(ValueError, match="lambdas"):
        core.structured_tensor(3, [1.0, 0.0], eps=0.1)
    with pytest.raises(ValueError, match="noise.params"):
        core.structured_tensor(3, [1.0, 1.0], eps=0.1, params={"nope": 1})


def test_factored_form_is_declared_by_the_tilt_and_matches_its_draw():
    assert pt.PERTURBATIONS["coherent-tilt"].factored is not None
    n, p = 5, 4
    V = core.random_orthonormal_basis(n, rng=7)
    lam = np.linspace(1.0, 0.9, n)
    E, norm = pt.coherent_tilt(n, p, V, lam)
    form, fnorm = pt.factored_perturbation("coherent-tilt", n, p, V, lam)
    assert fnorm == norm == 1.0
    X = _unit_rows((1, 4, n), seed=8)
    got = StructuredTensor(((form,),)).contract(X, p - 1)
    np.testing.assert_allclose(got, contract(E[None], X, p - 1), rtol=0, atol=ATOL)


@pytest.mark.parametrize("seed", [0, 1])
def test_start_policy_finds_the_global_first_step_at_large_n(seed):
    # p = 5, n = 400, coherent tilt: uniform starts mostly drift to the tilted component
    # (λ = 0.95, a local maximum) and with seed 0 all 16 of them did, so SROA deflated it
    # first. The operator's policy adds spectral starts; every first step must then reach a
    # weight-1 component, whose value is at least 1 (T v_j^p = 1 at the planted v_j, ε·E
    # vanishes there).
    n, p = 400, 5
    rng = np.random.default_rng(seed)
    V = core.random_orthonormal_basis(n, n, rng=rng)
    lam = np.ones(n)
    lam[-1] = 0.95
    res = core.sroa(core.structured_tensor(p, lam, V=V, eps=0.2), rank=1, method="sshopm", rng=rng)
    assert res.lambdas[0] >= 1.0
