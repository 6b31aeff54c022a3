"""Nearly-SOD instance generation and the operator norm."""

import numpy as np
import pytest

from sroa_dist import make_instance, operator_norm, operator_norm_batch, scale_to_opnorm
from sroa_dist.tensors import contract


def test_instance_is_a_pure_function_of_the_seed():
    a = make_instance(5, 3, basis="random", noise="uniform", sigma=0.1, rng=42)
    b = make_instance(5, 3, basis="random", noise="uniform", sigma=0.1, rng=42)
    np.testing.assert_array_equal(a.T_hat, b.T_hat)
    np.testing.assert_allclose(a.T_hat, a.T + a.E)


@pytest.mark.parametrize("p", [3, 4])
def test_operator_norm_is_bracketed_and_certified(p):
    E = make_instance(4, p, noise="gaussian", sigma=1.0, rng=1).E
    res = operator_norm(E, rng=0)
    assert res.lower <= res.value <= res.upper
    assert res.certified and res.upper - res.lower <= 1e-6 * np.linalg.norm(E)
    theta = np.random.default_rng(0).standard_normal((20000, 4))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)
    assert np.max(np.abs(contract(E[None], theta[None], p))) <= res.upper + 1e-12
    loc = operator_norm(E, "sshopm", rng=0)
    assert loc.upper >= res.lower - 1e-9  # the unfolding bound is valid too


def test_scaled_perturbation_has_target_norm():
    inst = make_instance(4, 3, noise="gaussian", eps=0.3, rng=3)
    assert operator_norm(inst.E, rng=1).value == pytest.approx(0.3, rel=1e-6)
    E2 = scale_to_opnorm(inst.E, 0.1)
    assert operator_norm_batch(E2[None]).value[0] == pytest.approx(0.1, rel=1e-6)


def test_bad_instance_arguments():
    with pytest.raises(ValueError, match="exactly one of sigma"):
        make_instance(4, 3, sigma=0.1, eps=0.1, rng=0)
    with pytest.raises(ValueError, match="basis"):
        make_instance(4, 3, basis="hadamard", sigma=0.1, rng=0)
    with pytest.raises(ValueError, match="r: expected"):
        make_instance(4, 3, rank=5, sigma=0.1, rng=0)
