"""Estimators of sroa_dist.moments: unbiased against population moments, streaming equals
one-shot and the dense d³ baseline, matrix-free eigenpairs equal dense ones."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sroa_dist.moments import (
    MixtureMoments,
    SingleTopicModel,
    TopicMoments,
    make_model,
    whitened_moments,
)
from sroa_dist.moments import estimators as est_mod

# Unbiasedness: R replicates of a small sample of size n; every entry of the replicate mean must
# lie within Z standard errors (replicate spread / √R) of the population value. With ≤ 125
# entries per check, a 5-SE two-sided miss has probability < 125 · 6e-7 ≈ 1e-4 per check if
# the estimator is unbiased. The same check rejects the uncorrected estimators below.
R, Z = 400, 5.0


def _within_se(reps: np.ndarray, truth: np.ndarray) -> bool:
    mean = reps.mean(axis=0)
    se = reps.std(axis=0, ddof=1) / np.sqrt(len(reps))
    return bool(np.all(np.abs(mean - truth) <= Z * se + 1e-13))


def _mixed_length_docs(model: SingleTopicModel, n: int, rng: np.random.Generator):
    """Documents of lengths 3..6 from the single-topic model (the estimator allows any L >= 3)."""
    rows = []
    for _ in range(n):
        h = rng.choice(model.k, p=model.weights)
        L = rng.integers(3, 7)
        rows.append(
            np.bincount(rng.choice(model.d, size=L, p=model.components[:, h]), minlength=model.d)
        )
    return np.array(rows)


def test_topic_m2_m3_are_unbiased_with_falling_factorial_corrections():
    model = make_model("topics", 3, 5, doc_length=3, concentration=1.0, rng=0)
    gen = np.random.default_rng(1)
    m2s, m3s, naive3 = [], [], []
    for r in range(R):
        C = model.sample(25, rng=gen).data if r % 2 else _mixed_length_docs(model, 25, gen)
        est = TopicMoments.from_data(C, 3)
        m2s.append(est.m2_dense())
        m3s.append(est.m3_dense())
        Cd = np.asarray(C.toarray() if sp.issparse(C) else C, dtype=float)
        L = Cd.sum(axis=1)
        naive3.append(np.einsum("n,ni,nj,nk->ijk", 1 / L**3, Cd, Cd, Cd) / len(Cd))
    assert _within_se(np.array(m2s), model.m2())
    assert _within_se(np.array(m3s), model.m3())
    # Negative control: without the corrections the same test fails.
    assert not _within_se(np.array(naive3), model.m3())


def test_topic_whitened_third_moment_is_unbiased_at_the_population_whitening():
    model = make_model("topics", 3, 30, doc_length=4, rng=2)
    W = model.whitening()
    gen = np.random.default_rng(3)
    reps = [
        TopicMoments.from_data(model.sample(40, rng=gen).data, 3).whitened_m3(W) for _ in range(R)
    ]
    assert _within_se(np.array(reps), model.whitened_m3(W))


def test_mixture_moments_are_unbiased_for_a_known_variance():
    model = make_model("gmm", 3, 4, sigma2=0.7, rng=4)
    gen = np.random.default_rng(5)
    m2s, m3s, raw3 = [], [], []
    for _ in range(R):
        X = model.sample(30, rng=gen).data
        est = MixtureMoments.from_data(X, 3, sigma2=0.7)
        m2s.append(est.m2_dense())
        m3s.append(est.m3_dense())
        raw3.append(MixtureMoments.from_data(X, 3, sigma2=0.0).m3_dense())
    assert _within_se(np.array(m2s), model.m2())
    assert _within_se(np.array(m3s), model.m3())
    assert not _within_se(np.array(raw3), model.m3())  # the σ² correction matters


def test_tail_mean_variance_is_less_biased_than_the_smallest_eigenvalue():
    # Hsu & Kakade's σ̂² (smallest sample-covariance eigenvalue) is biased low by the spread of
    # the d − k + 1 noise eigenvalues (about σ²(1 − √(d/N))²); their mean is nearly unbiased.
    model = make_model("gmm", 3, 40, sigma2=1.0, rng=6)
    gen = np.random.default_rng(7)
    hk, tail = [], []
    for _ in range(40):
        X = model.sample(400, rng=gen).data
        hk.append(MixtureMoments.from_data(X, 3, sigma2="hsu-kakade").sigma2)
        tail.append(MixtureMoments.from_data(X, 3, sigma2="tail-mean").sigma2)
    assert np.mean(hk) < 0.85  # (1 − √0.1)² ≈ 0.47 in the large-d limit; clearly biased here
    assert abs(np.mean(tail) - 1.0) < 0.02


def _topic_data(sparse: bool):
    model = make_model("topics", 4, 25, doc_length=5, rng=8)
    C = model.sample(301, rng=9).data
    return model, (C if sparse else C.toarray())


@pytest.mark.parametrize("sparse", [True, False])
def test_topic_streaming_equals_one_shot_and_the_dense_baseline(sparse):
    model, C = _topic_data(sparse)
    est = TopicMoments.from_data(C, 4)
    W = model.whitening()
    one_shot = est.whitened_m3(W, chunk_size=10**6)
    for chunk in (1, 7, 100):
        np.testing.assert_allclose(
            est.whitened_m3(W, chunk_size=chunk), one_shot, rtol=1e-12, atol=1e-12
        )
    dense = np.einsum("abc,ai,bj,ck->ijk", est.m3_dense(), W, W, W)
    np.testing.assert_allclose(one_shot, dense, rtol=1e-10, atol=1e-10)


def test_sparse_and_dense_counts_give_the_same_estimate():
    model, C = _topic_data(True)
    a = whitened_moments("topics", C, 4)
    b = whitened_moments("topics", C.toarray(), 4)
    np.testing.assert_allclose(a.whitening, b.whitening, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.tensor, b.tensor, rtol=1e-9, atol=1e-10)


def test_mixture_streaming_equals_one_shot_and_the_dense_baseline():
    model = make_model("gmm", 3, 9, rng=10)
    X = model.sample(257, rng=11).data
    est = MixtureMoments.from_data(X, 3, sigma2="tail-mean")
    W = model.whitening()
    one_shot = est.whitened_m3(W, chunk_size=10**6)
    np.testing.assert_allclose(est.whitened_m3(W, chunk_size=13), one_shot, rtol=1e-12, atol=1e-12)
    dense = np.einsum("abc,ai,bj,ck->ijk", est.m3_dense(), W, W, W)
    np.testing.assert_allclose(one_shot, dense, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind", ["topics", "gmm"])
def test_matrix_free_top_eigenpairs_equal_dense_ones(kind, monkeypatch):
    model = make_model(kind, 3, 60, rng=12)
    data = model.sample(500, rng=13).data
    est = est_mod.ESTIMATORS[kind](data, 3)
    s_dense, U_dense = est.m2_top(3)
    monkeypatch.setattr(est_mod, "DENSE_EIG_MAX", 10)  # force ARPACK on the matrix-free operator
    s_free, U_free = est.m2_top(3)
    np.testing.assert_allclose(s_free, s_dense, rtol=1e-9)
    np.testing.assert_allclose(np.abs(U_free.T @ U_dense), np.eye(3), atol=1e-8)


def test_whitening_whitens_the_estimated_m2():
    model = make_model("topics", 5, 50, doc_length=6, rng=14)
    C = model.sample(2000, rng=15).data
    wm = whitened_moments("topics", C, 5)
    np.testing.assert_allclose(
        wm.whitening.T @ wm.estimator.m2_dense() @ wm.whitening, np.eye(5), atol=1e-10
    )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: TopicMoments.from_data(np.array([[1, 2], [3, -1]]), 2),
            r"counts: .*non-negative integer",
        ),
        (
            lambda: TopicMoments.from_data(np.array([[1.5, 2], [3, 1]]), 2),
            r"counts: .*non-negative integer",
        ),
        (
            lambda: TopicMoments.from_data(np.array([[1, 1, 0], [3, 1, 0]]), 2),
            r"(?s)at least 3 words.*1 shorter.*hint: drop them",
        ),
        (lambda: TopicMoments.from_data(np.ones(4), 2), r"counts: expected a document-term matrix"),
        (lambda: MixtureMoments.from_data(sp.eye(4, format="csr"), 2), r"X: expected a dense"),
        (
            lambda: MixtureMoments.from_data(np.ones((5, 3)), 2, sigma2="mle"),
            r"unknown estimator 'mle'",
        ),
        (
            lambda: whitened_moments("topics", np.full((4, 5), 1), 2, sigma2=1.0),
            r"does not accept \['sigma2'\]",
        ),
        (lambda: whitened_moments("hmm", np.ones((4, 5)), 2), r"unknown model 'hmm'"),
        (lambda: whitened_moments("topics", np.full((4, 3), 1), 4), r"k: expected k <= d = 3"),
        (
            lambda: TopicMoments.from_data(np.full((4, 3), 1), 2).whitened_m3(np.ones((2, 2))),
            r"W: expected a \(3, m\)",
        ),
        (
            lambda: TopicMoments.from_data(np.full((4, 3), 1), 2).whitened_m3(
                np.ones((3, 2)), chunk_size=0
            ),
            r"chunk_size",
        ),
    ],
)
def test_bad_input_raises_one_clear_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_too_few_samples_to_whiten_is_a_clear_error():
    # Two identical documents: M̂2 has rank one, so k = 3 cannot be whitened.
    C = np.array([[3, 0, 0, 0], [3, 0, 0, 0]])
    with pytest.raises(
        ValueError, match=r"(?s)M2: expected 3 positive top eigenvalues.*hint: use more samples"
    ):
        whitened_moments("topics", C, 3)


def test_one_document_estimate_counts_ordered_triples_of_distinct_positions():
    # Oracle by enumeration: for one document, the unbiased M̂3_ijk is the fraction of ordered
    # triples of distinct word positions that read (i, j, k); M̂2 likewise for pairs.
    import itertools

    words = [0, 0, 1, 2, 0, 1]
    d, L = 4, len(words)
    C = np.bincount(words, minlength=d)[None, :]
    m3 = np.zeros((d, d, d))
    for a, b, c in itertools.permutations(range(L), 3):
        m3[words[a], words[b], words[c]] += 1
    m2 = np.zeros((d, d))
    for a, b in itertools.permutations(range(L), 2):
        m2[words[a], words[b]] += 1
    est = TopicMoments.from_data(C, 2)
    np.testing.assert_allclose(est.m3_dense(), m3 / (L * (L - 1) * (L - 2)), atol=1e-15)
    np.testing.assert_allclose(est.whitened_m3(np.eye(d)), m3 / (L * (L - 1) * (L - 2)), atol=1e-15)
    np.testing.assert_allclose(est.m2_dense(), m2 / (L * (L - 1)), atol=1e-15)
