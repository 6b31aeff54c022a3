"""The attractor family (dense and matrix-free), the power method's AGHKT budget, and the
per-start escape probability against a direct count."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import sroa_dist as sd
from sroa_dist.errors import InputError
from sroa_dist.methods.builtin import aghkt_budget
from sroa_dist.operators import StructuredTensor
from sroa_dist.problems.perturbations import attractor, attractor_factored
from sroa_dist.studies.start_escape import escape_probability, step_success


def _basis(n, seed):
    return np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))[0]


def _full(T, X):
    p = T.ndim
    return np.einsum(T, list(range(p)), *itertools.chain(*[[X, [p, k]] for k in range(p)]), [p])


@pytest.mark.parametrize("p", [3, 4])
def test_the_polynomial_is_norm_squared_times_a_power_of_u(p):
    n = 6
    V = _basis(n, p)
    E, norm = attractor(n, p, V, np.ones(n))
    assert norm == 1.0
    assert all(np.array_equal(E, np.transpose(E, s)) for s in itertools.permutations(range(p)))
    u = V.sum(axis=1) / math.sqrt(n)
    X = np.random.default_rng(0).standard_normal((9, n))
    np.testing.assert_allclose(_full(E, X), (X * X).sum(1) * (X @ u) ** (p - 2), atol=1e-13)


@pytest.mark.parametrize("p", [3, 4])
def test_the_operator_equals_the_dense_tensor(p):
    n = 5
    V = _basis(n, 10 + p)
    E, _ = attractor(n, p, V, np.ones(n))
    F, norm = attractor_factored(n, p, V, np.ones(n))
    op = StructuredTensor(((F,),))
    X = np.random.default_rng(1).standard_normal((1, 7, n))
    np.testing.assert_allclose(op.contract(X, p)[0], _full(E, X[0]), atol=1e-13)
    grad = np.einsum(E, list(range(p)), *itertools.chain(*[[X[0], [p, k]] for k in range(1, p)]),
                     [p, 0])  # fmt: skip
    np.testing.assert_allclose(op.contract(X, p - 1)[0], grad, atol=1e-13)
    assert op.fro2()[0] == pytest.approx(np.sum(E * E), rel=1e-12)
    # structured_tensor builds the same tensor as make_instance's dense draw
    lam = np.linspace(1, 0.6, n)
    dense = sd.make_instance(n, p, rank=n, lambdas=lam, noise="attractor", eps=0.3, rng=3)
    mf = sd.structured_tensor(p, lam, V=dense.V, family="attractor", eps=0.3)
    np.testing.assert_allclose(mf.as_batch().contract(X, p)[0], _full(dense.T_hat, X[0]),
                               atol=1e-12)  # fmt: skip


@pytest.mark.parametrize("p", [3, 4])
def test_the_stated_norm_is_the_certified_one(p):
    n = 5
    E, norm = attractor(n, p, _basis(n, 20 + p), np.ones(n))
    res = sd.operator_norm(E, method="certified")
    assert res.certified and res.lower <= norm * (1 + 1e-12) and norm <= res.upper  # rounding
    assert res.value == pytest.approx(1.0, abs=1e-9)


def test_the_attractor_is_refused_beyond_its_orders():
    with pytest.raises(InputError, match="p = 3 or 4"):
        attractor(4, 5, np.eye(4), np.ones(4))


def test_the_aghkt_budget_follows_its_formulas():
    for n, eps, eta in [(16, 0.1, 0.05), (256, 0.5, 0.05), (1024, 0.02, 0.1)]:
        L, N = aghkt_budget(n, eps, eta)
        assert L == math.ceil(n * math.log(n / eta))
        assert N == math.ceil(3 * (math.log(n) + math.log(max(1, math.log(1 / eps)))))
    assert aghkt_budget(64)[1] == math.ceil(3 * math.log(64))  # no noise level: ln n alone
    assert aghkt_budget(64, 0.5) == aghkt_budget(64)  # ε > 1/e: the double log floors at 0
    with pytest.raises(InputError):
        aghkt_budget(64, eta=1.5)


def test_the_power_method_takes_the_aghkt_budget_as_an_option():
    T = sd.make_instance(8, 3, noise="attractor", eps=0.2, rng=1).T_hat
    step = sd.rank_one(T, "power", rng=0, budget="aghkt", noise_level=0.2)
    assert step.n_starts == aghkt_budget(8, 0.2)[0]
    with pytest.raises(ValueError, match="budget"):
        sd.rank_one(T, "power", budget="many")


def test_the_escape_probability_is_a_direct_count():
    """The same starts, iterated by hand on the dense stage tensor, give the same count."""
    n, eps, r, S, N = 7, 0.8, 3, 400, 12
    got = escape_probability(n, eps, remaining=r, n_starts=S, n_iter=N, rng=5)
    E, _ = attractor(n, 3, np.eye(n), np.ones(n))
    T = eps * E
    for i in range(r):
        T[i, i, i] += 1.0
    X = np.random.default_rng(5).standard_normal((S, n))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    for _ in range(N):
        G = np.einsum("ijk,sj,sk->si", T, X, X)
        X = G / np.linalg.norm(G, axis=1, keepdims=True)
    hits = np.sum(X[:, :r].max(axis=1) >= 1 - 0.3**2 / 2)
    assert got.q == hits / S and 0 < got.q < 1
    lo, hi = got.interval
    assert lo < got.q < hi
    assert step_success(got.q, 20) == pytest.approx(1 - (1 - got.q) ** 20)


def test_find_threshold_passes_method_options_and_checks_them():
    a = sd.find_threshold(8, 3, family="attractor", method="power", options={"n_starts": 3},
                          eps_range=(0.2, 1.2), rtol=0.05, rng=1)  # fmt: skip
    assert a.reached
    with pytest.raises(ValueError, match="n_starts"):
        sd.find_threshold(8, 3, method="power", options={"n_starts": 0})
