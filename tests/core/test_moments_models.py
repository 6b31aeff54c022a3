"""Models of sroa_dist.moments: priors, samplers, and the exact SOD structure of their whitened
population third moment; exact recovery from population moments."""

from __future__ import annotations

import numpy as np
import pytest

from sroa_dist import sod_tensor, sroa
from sroa_dist.moments import (
    MODELS,
    SingleTopicModel,
    SphericalGaussianMixture,
    make_model,
    project_simplex,
    recover,
)

# Orthonormality / SOD identities hold to rounding: 1e-10 relative to the largest λ.
EXACT = 1e-10


def _models():
    yield make_model("topics", 3, 8, doc_length=4, rng=0)
    yield make_model("topics", 5, 40, doc_length=3, weights=[0.1, 0.15, 0.2, 0.25, 0.3], rng=1)
    yield make_model("gmm", 4, 6, sigma2=0.5, rng=2)
    yield make_model("gmm", 6, 30, weights=np.arange(1, 7) / 21, rng=3)


@pytest.mark.parametrize("model", list(_models()), ids=lambda m: f"{m.kind}-k{m.k}-d{m.d}")
def test_whitened_population_third_moment_is_exactly_sod(model):
    W = model.whitening()
    np.testing.assert_allclose(W.T @ model.m2() @ W, np.eye(model.k), atol=EXACT)
    lam, V = model.sod(W)
    np.testing.assert_allclose(V.T @ V, np.eye(model.k), atol=EXACT)
    np.testing.assert_allclose(lam, 1 / np.sqrt(model.weights), rtol=EXACT)
    T = model.whitened_m3(W)
    np.testing.assert_allclose(T, sod_tensor(lam, V, 3), atol=EXACT * lam.max())
    # The d³ population moment contracted with W is the same tensor.
    dense = np.einsum("abc,ai,bj,ck->ijk", model.m3(), W, W, W)
    np.testing.assert_allclose(dense, T, atol=EXACT * lam.max())


def test_sod_reference_for_a_non_whitening_matrix_is_orthonormal():
    # For an estimated Ŵ (here: the true W perturbed), the reference corrects Ŵ to whiten M2
    # exactly, so its components are orthonormal and its tensor is M3(W', W', W').
    model = make_model("topics", 4, 20, rng=5)
    W = model.whitening()
    W_hat = W + 0.05 * np.random.default_rng(0).standard_normal(W.shape) * np.abs(W).mean()
    lam, U = model.sod(W_hat)
    np.testing.assert_allclose(U.T @ U, np.eye(4), atol=EXACT)
    G = W_hat.T @ model.m2() @ W_hat
    s, Q = np.linalg.eigh(G)
    W_corr = W_hat @ (Q / np.sqrt(s)) @ Q.T
    np.testing.assert_allclose(
        model.whitened_m3(W_corr), sod_tensor(lam, U, 3), atol=EXACT * lam.max()
    )


@pytest.mark.parametrize("method", ["certified", "sshopm"])
@pytest.mark.parametrize("model", list(_models()), ids=lambda m: f"{m.kind}-k{m.k}-d{m.d}")
def test_recovery_is_exact_on_population_moments(model, method):
    W = model.whitening()
    res = sroa(model.whitened_m3(W), rank=model.k, method=method, rng=0)
    weights, comps, lam, _ = recover(res.lambdas, res.vectors, W, model.kind)
    order = np.argsort(weights)
    truth = np.argsort(model.weights)
    if len(set(model.weights)) < model.k:
        # Equal weights: match by component instead.
        order = np.array(
            [np.argmin(np.linalg.norm(comps - c[:, None], axis=0)) for c in model.components.T]
        )
        truth = np.arange(model.k)
    np.testing.assert_allclose(weights[order], model.weights[truth], atol=1e-8)
    np.testing.assert_allclose(comps[:, order], model.components[:, truth], atol=1e-7)
    assert np.all(lam > 0)


def test_power_method_also_recovers_population_parameters():
    # The robust tensor power method (AGHKT Algorithm 1) is exact up to its iteration tolerance.
    model = make_model("topics", 4, 15, weights=[0.1, 0.2, 0.3, 0.4], rng=7)
    W = model.whitening()
    res = sroa(model.whitened_m3(W), rank=4, method="power", rng=0)
    weights, comps, _, _ = recover(res.lambdas, res.vectors, W, "topics")
    order = np.argsort(weights)
    np.testing.assert_allclose(weights[order], model.weights, atol=1e-5)
    np.testing.assert_allclose(comps[:, order], model.components, atol=1e-4)


def test_topic_sampler_counts_rows_and_labels():
    model = make_model("topics", 3, 12, doc_length=6, weights=[0.2, 0.3, 0.5], rng=0)
    s = model.sample(5000, rng=1)
    C = s.data
    assert C.shape == (5000, 12)
    np.testing.assert_array_equal(np.asarray(C.sum(axis=1)).ravel(), 6)
    # Label frequencies: binomial standard error ≤ 0.0071, so 5 SE = 0.036.
    np.testing.assert_allclose(np.bincount(s.labels, minlength=3) / 5000, model.weights, atol=0.036)
    again = model.sample(5000, rng=1)
    assert (again.data != C).nnz == 0 and np.array_equal(again.labels, s.labels)
    assert (model.sample(5000, rng=2).data != C).nnz > 0


def test_gmm_sampler_points_and_determinism():
    model = make_model("gmm", 3, 5, sigma2=0.25, rng=0)
    s = model.sample(4000, rng=3)
    assert s.data.shape == (4000, 5)
    resid = s.data - model.components.T[s.labels]
    # Sample variance of 20000 N(0, 0.25) values: SE ≈ 0.25·√(2/20000) = 0.0025; 5 SE.
    assert abs(resid.var() - 0.25) < 0.0125
    np.testing.assert_array_equal(model.sample(4000, rng=3).data, s.data)


def test_priors_are_seeded_and_registered():
    assert set(MODELS) == {"topics", "gmm", "ica"}
    a = make_model("topics", 3, 10, rng=4)
    b = make_model("topics", 3, 10, rng=4)
    np.testing.assert_array_equal(a.components, b.components)
    np.testing.assert_allclose(a.components.sum(axis=0), 1.0)
    assert isinstance(a, SingleTopicModel)
    assert isinstance(make_model("gmm", 3, 10, rng=4), SphericalGaussianMixture)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: make_model("lda", 3, 10), r"unknown model 'lda'.*\['gmm', 'ica', 'topics'\]"),
        (lambda: make_model("topics", 3, 10, sigma2=1.0), r"model 'topics': bad parameters"),
        (lambda: make_model("topics", 5, 3), r"2 <= k <= d"),
        (lambda: make_model("topics", 3, 10, doc_length=2), r"doc_length: expected L >= 3"),
        (lambda: make_model("gmm", 2, 4, weights=[0.5, 0.6]), r"weights: .*summing to 1"),
        (lambda: SingleTopicModel.given(np.eye(4, 2) * 2), r"topics: .*word distribution"),
        (
            lambda: SphericalGaussianMixture.given(np.ones((4, 2))),
            r"means: .*linearly independent",
        ),
        (lambda: SphericalGaussianMixture.given(np.eye(3), sigma2=-1.0), r"sigma2: expected"),
        (lambda: make_model("gmm", 2, 3).sample(0), r"n_samples: expected a positive"),
    ],
)
def test_bad_parameters_raise_one_clear_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_simplex_projection_is_the_euclidean_projection():
    rng = np.random.default_rng(0)
    V = rng.standard_normal((7, 50)) * 0.5 + 0.1
    P = project_simplex(V)
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
    assert np.all(P >= 0)
    # Variational inequality of the projection: (v − p)·(q − p) <= 0 for every q on the simplex.
    Q = rng.dirichlet(np.ones(7), size=200).T
    for j in range(V.shape[1]):
        assert np.max((V[:, j] - P[:, j]) @ (Q - P[:, [j]])) <= 1e-12
    onsimplex = rng.dirichlet(np.ones(7), size=5).T
    np.testing.assert_allclose(project_simplex(onsimplex), onsimplex, atol=1e-14)


@pytest.mark.slow
def test_moments_subpackage_stays_in_the_numerical_core():
    import subprocess
    import sys

    code = (
        "import sys, sroa_dist.moments;"
        "top = {m.split('.')[0] for m in sys.modules};"
        "print(','.join(sorted(top & {'dask', 'distributed', 'zarr', 'xarray'})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
