"""fit_topics / fit_gmm recover planted parameters; run_study's ground truth (E = T̂ − T)."""

from __future__ import annotations

import numpy as np
import pytest

from sroa_dist import operator_norm, sod_tensor
from sroa_dist.moments import (
    MomentFit,
    SingleTopicModel,
    Tolerances,
    fit_gmm,
    fit_topics,
    make_model,
    perturbations,
    recovery_errors,
    run_study,
    whitened_moments,
)

METHODS = ["certified", "sshopm", "power"]


@pytest.fixture(scope="module")
def corpus():
    model = make_model("topics", 4, 120, doc_length=8, weights=[0.1, 0.2, 0.3, 0.4], rng=0)
    return model, model.sample(40_000, rng=1).data


@pytest.mark.parametrize("method", METHODS)
def test_fit_topics_recovers_planted_topics(corpus, method):
    model, C = corpus
    fit = fit_topics(C, 4, method, rng=2)
    assert isinstance(fit, MomentFit) and fit.kind == "topics" and fit.method == method
    assert fit.components.shape == (120, 4) and fit.n_samples == 40_000
    np.testing.assert_allclose(fit.components.sum(axis=0), 1.0, atol=1e-12)
    assert np.all(fit.components >= 0)
    err = recovery_errors(fit, model, Tolerances(component=0.1, weight=0.03))
    assert err.success, err
    assert abs(fit.weights.sum() - 1) < 0.05
    # Per-step certificates are reported for every method; gap = upper bound − |λ|.
    assert fit.certified.shape == fit.upper_bounds.shape == fit.gaps.shape == (4,)
    np.testing.assert_allclose(fit.gaps, fit.upper_bounds - np.abs(fit.lambdas))
    if method == "certified":
        assert fit.all_certified


def test_fit_topics_accepts_dense_counts_and_is_deterministic(corpus):
    _, C = corpus
    sub = C[:5000]
    a = fit_topics(sub, 4, "sshopm", rng=5)
    b = fit_topics(sub.toarray(), 4, "sshopm", rng=5)
    np.testing.assert_allclose(a.components, b.components, atol=1e-9)
    c = fit_topics(sub, 4, "sshopm", rng=5)
    np.testing.assert_array_equal(a.components, c.components)
    np.testing.assert_array_equal(a.weights, c.weights)


def test_fit_topics_errors_shrink_with_more_documents():
    model = make_model("topics", 3, 60, doc_length=5, rng=3)
    errs = []
    for N in (2_000, 50_000):
        fit = fit_topics(model.sample(N, rng=4).data, 3, "certified", rng=0)
        errs.append(recovery_errors(fit, model).max_component_error)
    assert errs[1] < 0.5 * errs[0]


@pytest.mark.parametrize("sigma2", ["hsu-kakade", "tail-mean", 1.0])
def test_fit_gmm_recovers_planted_means(sigma2):
    model = make_model("gmm", 3, 10, sigma2=1.0, weights=[0.25, 0.35, 0.4], rng=6)
    X = model.sample(60_000, rng=7).data
    fit = fit_gmm(X, 3, "certified", sigma2=sigma2, rng=8)
    assert fit.kind == "gmm" and fit.all_certified
    err = recovery_errors(fit, model, Tolerances(component=0.5, weight=0.05))
    assert err.success, err
    assert abs(fit.sigma2 - 1.0) < 0.05


def test_recovery_errors_match_components_and_flag_failure():
    model = make_model("topics", 3, 20, rng=9)
    W = model.whitening()
    lam, V = model.sod(W)
    perm = [2, 0, 1]
    wm_fit = MomentFit(
        kind="topics",
        weights=model.weights[perm] + np.array([0.0, 0.01, 0.0]),
        components=model.components[:, perm],
        sigma2=np.nan,
        lambdas=lam[perm],
        vectors=V[:, perm],
        certified=np.ones(3, bool),
        upper_bounds=lam[perm],
        gaps=np.zeros(3),
        whitening=W,
        tensor=sod_tensor(lam, V, 3),
        m2_eigenvalues=np.ones(3),
        method="certified",
        n_samples=0,
        sroa=None,
    )
    err = recovery_errors(wm_fit, model, Tolerances(component=1e-12, weight=0.02))
    np.testing.assert_array_equal(err.perm, perm)
    assert err.success and err.max_weight_error == pytest.approx(0.01)
    assert not recovery_errors(wm_fit, model, Tolerances(1e-12, 0.005)).success


def test_study_perturbation_is_certified_and_shrinks_like_root_n():
    model = make_model("topics", 3, 40, doc_length=4, rng=10)
    eps = {}
    for N in (2_000, 32_000):
        values = []
        for seed in range(4):
            st = run_study(model, N, "certified", rng=seed)
            assert st.eps_population.certified and st.eps_full.certified
            assert st.lambda_min == pytest.approx(np.sqrt(3))
            values.append(st.eps_population.value)
        eps[N] = np.mean(values)
    # 16× the documents: ‖E‖ should fall by 4 (N^{-1/2}). Single draws of √N‖E‖ spread by
    # about ±25 % here, so the mean of 4 is within 2.5–6.5 with a wide margin.
    assert 2.5 < eps[2_000] / eps[32_000] < 6.5


def test_study_perturbations_equal_their_definitions():
    model = make_model("gmm", 3, 8, rng=12)
    X = model.sample(3000, rng=13).data
    wm = whitened_moments("gmm", X, 3, sigma2=1.0)
    E_pop, E_full = perturbations(model, wm)
    W = model.whitening()
    lam, V = model.sod()
    np.testing.assert_allclose(
        E_pop, wm.estimator.whitened_m3(W) - sod_tensor(lam, V, 3), atol=1e-12
    )
    # With the estimated whitening the reference is the truth seen through Ŵ corrected to
    # whiten M2; its components are orthonormal, so T̂ − E_full is exactly SOD.
    lam_hat, U = model.sod(wm.whitening)
    np.testing.assert_allclose(U.T @ U, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(wm.tensor - E_full, sod_tensor(lam_hat, U, 3), atol=1e-10)
    assert operator_norm(E_pop, "certified", rng=0).value < 0.5


def test_study_is_reproducible_from_one_seed():
    model = make_model("topics", 3, 30, doc_length=4, rng=14)
    a = run_study(model, 2000, "sshopm", rng=15, norms=False)
    b = run_study(model, 2000, "sshopm", rng=15, norms=False)
    np.testing.assert_array_equal(a.fit.components, b.fit.components)
    assert a.eps_population is None
    c = run_study(model, 2000, "sshopm", rng=16, norms=False)
    assert not np.array_equal(a.fit.components, c.fit.components)


def test_unknown_method_lists_valid_ones():
    model = SingleTopicModel.given(np.eye(3) * 0.7 + 0.1, doc_length=3)
    C = model.sample(500, rng=0).data
    with pytest.raises(ValueError, match=r"unknown rank-one method 'als'.*certified"):
        fit_topics(C, 3, "als")


def test_methods_are_compared_on_the_same_samples():
    # The method is not part of a study's random streams: one seed gives every method the same
    # documents (the same T̂), so a method comparison is paired.
    model = make_model("topics", 3, 30, doc_length=5, rng=17)
    a = run_study(model, 3000, "certified", rng=18, norms=False)
    b = run_study(model, 3000, "power", rng=18, norms=False)
    np.testing.assert_array_equal(a.fit.tensor, b.fit.tensor)
    assert a.fit.method == "certified" and b.fit.method == "power"


def test_component_distances_keep_their_bits_in_blocks(monkeypatch):
    # The pairwise distances were one (d, k, k) array (320 MB at k = 200 topics over d = 1000
    # words); formed in blocks of columns they keep that array's bits whatever the block size.
    import sroa_dist.moments.evaluate as evaluate

    rng = np.random.default_rng(3)
    A, B = rng.random((40, 9)), rng.random((40, 11))
    whole_tv = 0.5 * np.abs(A[:, :, None] - B[:, None, :]).sum(axis=0)
    whole_l2 = np.linalg.norm(A[:, :, None] - B[:, None, :], axis=0)
    for block in (1, 40 * 11 * 2, 1 << 21):
        monkeypatch.setattr(evaluate, "_DIFFERENCE_BLOCK", block)
        np.testing.assert_array_equal(evaluate._tv(A, B), whole_tv)
        np.testing.assert_array_equal(evaluate._l2(A, B), whole_l2)
        np.testing.assert_array_equal(
            evaluate._l2_up_to_sign(A, B),
            np.minimum(whole_l2, np.linalg.norm(A[:, :, None] + B[:, None, :], axis=0))
            / np.linalg.norm(B, axis=0)[None, :],
        )
