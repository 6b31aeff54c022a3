"""Noise registry and symmetric perturbations."""

import math

import numpy as np
import pytest

from sroa_dist import NOISE_MODELS, noise_tensor, register_noise
from sroa_dist.noise import multiset_index


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


def test_registry_is_extensible_by_name():
    register_noise("laplace-test", lambda rng, size, s: rng.laplace(0, s, size), overwrite=True)
    assert "laplace-test" in NOISE_MODELS
    E = noise_tensor("laplace-test", 3, 3, 1.0, rng=0)
    assert E.shape == (3, 3, 3)
    with pytest.raises(ValueError, match="already registered"):
        register_noise("gaussian", lambda rng, size, s: np.zeros(size))


def test_bad_noise_arguments():
    with pytest.raises(ValueError, match="unknown model 'cauchy'.*binary"):
        noise_tensor("cauchy", 3, 3, 0.1, rng=0)
    with pytest.raises(ValueError, match="sigma: expected a finite value >= 0"):
        noise_tensor("gaussian", 3, 3, -0.1, rng=0)
    with pytest.raises(ValueError, match="p: expected"):
        noise_tensor("gaussian", 3, 2, 0.1, rng=0)
