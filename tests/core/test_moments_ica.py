"""ICA as a fourth-order moment model (issue 36): exact population cumulants, an estimator that is
unbiased (checked exactly, by enumerating every sample of a discrete law), and recovery of the
mixing columns with the sign of every kurtosis kept."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sroa_dist.errors import InputError
from sroa_dist.moments import (
    ICA_SOURCES,
    IcaMoments,
    IndependentComponents,
    fit_ica,
    make_model,
    run_study,
    whitened_moments,
)
from sroa_dist.moments.estimators import k_statistic4
from sroa_dist.tensors import sod_tensor


def _central_cumulant4(points: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Exact fourth cumulant of a discrete law on ``points`` (rows) with ``probs``."""
    y = points - probs @ points
    m2 = np.einsum("n,na,nb->ab", probs, y, y)
    m4 = np.einsum("n,na,nb,nc,nd->abcd", probs, y, y, y, y)
    pair = (
        np.einsum("ab,cd->abcd", m2, m2)
        + np.einsum("ac,bd->abcd", m2, m2)
        + np.einsum("ad,bc->abcd", m2, m2)
    )
    return m4 - pair


def test_k_statistic_is_exactly_unbiased_over_every_sample():
    """Every one of the 3^5 samples of size N = 5 from a 3-point law in R², weighted by its
    probability: the mean of the estimator is the population cumulant to rounding."""
    points = np.array([[0.0, 1.0], [2.0, -1.0], [-1.0, 0.5]])
    probs = np.array([0.5, 0.3, 0.2])
    truth = _central_cumulant4(points, probs)
    N = 5
    mean = np.zeros((2, 2, 2, 2))
    for idx in itertools.product(range(3), repeat=N):
        X = points[list(idx)]
        weight = np.prod(probs[list(idx)])
        mean += weight * IcaMoments.from_data(X, 2).cumulant4_dense()
    assert np.abs(truth).max() > 0.5  # a non-Gaussian law, so the check has teeth
    np.testing.assert_allclose(mean, truth, atol=1e-12)
    # The plug-in estimator (central moments without the k-statistic's factors) is biased.
    plug = np.zeros_like(mean)
    for idx in itertools.product(range(3), repeat=N):
        X = points[list(idx)]
        y = X - X.mean(axis=0)
        m2 = y.T @ y / N
        m4 = np.einsum("na,nb,nc,nd->abcd", y, y, y, y) / N
        plug += np.prod(probs[list(idx)]) * (
            m4
            - (
                np.einsum("ab,cd->abcd", m2, m2)
                + np.einsum("ac,bd->abcd", m2, m2)
                + np.einsum("ad,bc->abcd", m2, m2)
            )
        )
    assert np.abs(plug - truth).max() > 0.05


def test_k_statistic_matches_the_univariate_formula():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(9) ** 3
    N = len(x)
    y = x - x.mean()
    m2, m4 = np.mean(y**2), np.mean(y**4)
    k4 = N * N * ((N + 1) * m4 - 3 * (N - 1) * m2**2) / ((N - 1) * (N - 2) * (N - 3))
    got = k_statistic4(np.array([[m2]]), np.array(m4).reshape(1, 1, 1, 1), N)
    assert got.shape == (1, 1, 1, 1) and got[0, 0, 0, 0] == pytest.approx(k4, rel=1e-14)


def test_rademacher_sources_have_their_exact_cumulant():
    """Two Rademacher sources mixed by A: the law has 4 equally likely points, so its exact
    cumulant is computable; it equals Σ κ_i a_i^{⊗4} with κ = −2."""
    A = np.array([[1.0, 0.5], [0.2, -1.5], [0.3, 0.4]])
    model = IndependentComponents.given(A, ("rademacher", "rademacher"))
    S = np.array(list(itertools.product([-1.0, 1.0], repeat=2)))
    exact = _central_cumulant4(S @ A.T, np.full(4, 0.25))
    np.testing.assert_allclose(model.cumulant4(), exact, atol=1e-13)
    np.testing.assert_array_equal(model.weights, [-2.0, -2.0])


@pytest.mark.parametrize("law", sorted(ICA_SOURCES))
def test_each_source_law_has_unit_variance_and_its_stated_kurtosis(law):
    """Monte Carlo with 400 000 draws: variance within 1 %, excess kurtosis within 0.1 (the
    standard error of the kurtosis is below 0.02 for these laws at this N)."""
    kappa, draw = ICA_SOURCES[law]
    s = draw(np.random.default_rng(1), 400_000)
    assert abs(s.mean()) < 0.01
    assert s.var() == pytest.approx(1.0, rel=0.01)
    assert np.mean(s**4) / s.var() ** 2 - 3.0 == pytest.approx(kappa, abs=0.1)


def test_population_whitening_gives_the_signed_sod_tensor():
    model = IndependentComponents.from_prior(5, 8, rng=3)
    W = model.whitening()
    np.testing.assert_allclose(W.T @ model.m2() @ W, np.eye(5), atol=1e-12)
    lam, V = model.sod()
    np.testing.assert_allclose(V.T @ V, np.eye(5), atol=1e-12)
    np.testing.assert_array_equal(lam, [3.0, -1.2, -2.0, 3.0, -1.2])
    np.testing.assert_allclose(sod_tensor(lam, V, 4), model.whitened_tensor(W), atol=1e-12)
    dense = model.cumulant4()
    np.testing.assert_allclose(
        np.einsum("abce,ai,bj,ck,el->ijkl", dense, W, W, W, W),
        model.whitened_tensor(W),
        atol=1e-12,
    )


def test_streamed_whitened_cumulant_equals_the_dense_baseline():
    model = IndependentComponents.from_prior(3, 5, rng=4)
    X = model.sample(2001, rng=5).data
    est = IcaMoments.from_data(X, 3)
    W = model.whitening()
    dense = np.einsum("abce,ai,bj,ck,el->ijkl", est.cumulant4_dense(), W, W, W, W)
    np.testing.assert_allclose(est.whitened_tensor(W, chunk_size=137), dense, atol=1e-11)


def test_estimate_converges_to_the_population_cumulant():
    """‖K̂4 − K4‖ (max entry) falls with N: 16× the samples, at least 2× smaller (1/√N: 4×)."""
    model = IndependentComponents.from_prior(3, 4, rng=6)
    W = model.whitening()
    truth = model.whitened_tensor(W)
    errs = []
    for N in (5_000, 80_000):
        X = model.sample(N, rng=7).data
        errs.append(np.abs(IcaMoments.from_data(X, 3).whitened_tensor(W) - truth).max())
    assert errs[1] < errs[0] / 2


def test_fit_recovers_mixing_columns_and_kurtosis_signs():
    model = IndependentComponents.from_prior(4, 6, rng=8)
    X = model.sample(100_000, rng=9).data
    fit = fit_ica(X, 4, "sshopm", rng=0)
    assert fit.kind == "ica" and fit.tensor.shape == (4, 4, 4, 4)
    assert sorted(np.sign(fit.weights)) == sorted(np.sign(model.weights))
    study = run_study(model, 100_000, "certified", rng=10)
    assert study.success and study.fit.all_certified
    assert study.errors.max_component_error < 0.1
    assert study.lambda_min == pytest.approx(1.2)
    assert study.eps_population.certified and study.eps_population.value < 0.5


def test_too_few_samples_fail_and_more_succeed():
    model = IndependentComponents.from_prior(3, 5, rng=11)
    small = run_study(model, 100, "certified", rng=12, norms=False)
    large = run_study(model, 50_000, "certified", rng=12, norms=False)
    assert not small.success and large.success


def test_study_is_a_pure_function_of_its_seed():
    model = make_model("ica", 3, 5, rng=13, sources="laplace")
    a = run_study(model, 3000, "sshopm", rng=14)
    b = run_study(model, 3000, "sshopm", rng=14)
    np.testing.assert_array_equal(a.fit.components, b.fit.components)
    assert a.eps_full.value == b.eps_full.value


def test_bad_input_is_named():
    with pytest.raises(InputError, match="N >= 4"):
        IcaMoments.from_data(np.ones((3, 2)), 2)
    with pytest.raises(InputError, match="sources"):
        IndependentComponents.from_prior(3, 4, sources="cauchy")
    with pytest.raises(InputError, match="no class weights"):
        IndependentComponents.from_prior(3, 4, weights=[0.2, 0.3, 0.5])
    with pytest.raises(InputError, match="source laws"):
        IndependentComponents.given(np.eye(3)[:, :2], ("laplace",))
    with pytest.raises(InputError, match="fourth-order"):
        IndependentComponents.from_prior(2, 3, rng=0).m3()
    with pytest.raises(InputError, match="X:"):
        whitened_moments("ica", np.ones((10, 3, 1)), 2)
