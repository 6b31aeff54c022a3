"""Noise registry and symmetric perturbations."""

import itertools
import math
import tracemalloc

import numpy as np
import pytest

from sroa_dist import NOISE_MODELS, noise_tensor, register_noise
from sroa_dist.monomials import multiset_index, multiset_rank
from sroa_dist.problems import noise as noise_module


@pytest.mark.parametrize("model", ["binary", "uniform", "gaussian"])
@pytest.mark.parametrize("p", [3, 4])
def test_noise_is_symmetric_seeded_and_has_the_papers_law(model, p):
    n, sigma = 6, 0.3
    E = noise_tensor(model, n, p, sigma, rng=11)
    np.testing.assert_array_equal(E, noise_tensor(model, n, p, sigma, rng=11))
    for k in range(p - 1):
        axes = list(range(p))
        axes[k], axes[k + 1] = axes[k + 1], axes[k]
        np.testing.assert_array_equal(E, E.transpose(axes))
    ids, count = multiset_index(n, p)
    assert count == math.comb(n + p - 1, p)
    values = np.zeros(count)
    values[ids.ravel()] = E.ravel()
    if model == "binary":
        assert set(np.unique(values)) == {-sigma, sigma}
    elif model == "uniform":
        assert values.min() >= -2 * sigma and values.max() <= 2 * sigma
        assert abs(values.std() - 4 * sigma / math.sqrt(12)) < 0.15 * sigma
    else:
        assert abs(values.std() - sigma) < 0.15 * sigma


@pytest.fixture
def scratch_registry(monkeypatch):
    """The noise registry restored after the test (no model leaks into other tests)."""
    saved = dict(noise_module._REGISTRY)
    yield
    noise_module._REGISTRY.clear()
    noise_module._REGISTRY.update(saved)


def test_registry_is_extensible_by_name(scratch_registry):
    register_noise("laplace-test", lambda rng, size, s: rng.laplace(0, s, size))
    assert "laplace-test" in NOISE_MODELS
    E = noise_tensor("laplace-test", 3, 3, 1.0, rng=0)
    assert E.shape == (3, 3, 3)
    with pytest.raises(ValueError, match="already registered"):
        register_noise("gaussian", lambda rng, size, s: np.zeros(size))


def test_registry_is_left_clean():
    # Runs after the test above (file order): the scratch model is gone again.
    assert "laplace-test" not in NOISE_MODELS
    assert set(NOISE_MODELS) >= {"binary", "uniform", "gaussian"}


def _reference_noise(model, n, p, sigma, seed):
    """The former implementation: one draw per multiset, copied through an n^p index array."""
    ids, count = multiset_index(n, p)
    values = NOISE_MODELS[model](np.random.default_rng(seed), count, sigma)
    return values[ids]


@pytest.mark.parametrize("model", ["binary", "uniform", "gaussian"])
@pytest.mark.parametrize(("n", "p"), [(2, 3), (7, 3), (5, 4), (4, 5), (13, 3), (6, 4)])
def test_streamed_noise_equals_the_former_noise_bit_for_bit(model, n, p, monkeypatch):
    for block in (1, 37, 2**20):  # one leading index per block, ragged blocks, one block
        monkeypatch.setattr(noise_module, "_BLOCK_ELEMENTS", block)
        got = noise_tensor(model, n, p, 0.7, rng=5)
        want = _reference_noise(model, n, p, 0.7, 5)
        assert np.array_equal(got.view(np.int64), want.view(np.int64))


@pytest.mark.parametrize(("n", "p"), [(1, 3), (4, 3), (5, 4), (3, 6)])
def test_multiset_rank_is_the_lexicographic_rank(n, p):
    combos = np.array(list(itertools.combinations_with_replacement(range(n), p))).T
    np.testing.assert_array_equal(multiset_rank(combos, n), np.arange(combos.shape[1]))


def test_streamed_noise_allocates_no_n_to_the_p_index_array(monkeypatch):
    # The former path held an n^p intp lookup plus p·n^p sorted indices (>= 4x the output);
    # streamed blocks keep the peak near the output itself. n = 96 (7 MB of output): tracemalloc
    # also counts what other threads of the process allocate meanwhile (a Dask client's event
    # loop in a full test run, about 0.5 MB), which must stay small beside the margin.
    monkeypatch.setattr(noise_module, "_BLOCK_ELEMENTS", 4096)
    n, p = 96, 3
    noise_tensor("gaussian", n, p, 1.0, rng=0)  # warm caches (rank table)
    tracemalloc.start()
    try:
        E = noise_tensor("gaussian", n, p, 1.0, rng=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1.6 * E.nbytes, (peak, E.nbytes)


def test_bad_noise_arguments():
    with pytest.raises(ValueError, match="unknown model 'cauchy'.*binary"):
        noise_tensor("cauchy", 3, 3, 0.1, rng=0)
    with pytest.raises(ValueError, match="sigma: expected a finite value >= 0"):
        noise_tensor("gaussian", 3, 3, -0.1, rng=0)
    with pytest.raises(ValueError, match="p: expected"):
        noise_tensor("gaussian", 3, 2, 0.1, rng=0)


def test_rng_is_keyword_only():
    """``rng`` is keyword-only and required, like everywhere in the core."""
    with pytest.raises(TypeError, match="rng"):
        noise_tensor("gaussian", 3, 3, 1.0)
    with pytest.raises(TypeError):
        noise_tensor("gaussian", 3, 3, 1.0, 7)
