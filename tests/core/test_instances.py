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


@pytest.mark.parametrize(
    ("lambdas", "reason"),
    [
        ({"dist": "uniform", "low": 1, "high": 1}, "low < high"),
        ({"dist": "uniform", "low": 1}, "exactly the parameters"),
        ({"dist": "cauchy", "low": 1, "high": 2}, "one of \\['uniform'\\]"),
        (0, "non-zero"),
        ([1.0, 0.0, 2.0], "non-zero"),
        ([1.0, 2.0], "3 values"),
        (True, "expected a number"),
        ("one", "expected a number"),
        (float("nan"), "expected a number"),
        (1e300, "at most"),
    ],
)
def test_lambda_check_is_the_one_make_instance_uses(lambdas, reason):
    from sroa_dist.problems.instances import check_lambdas

    with pytest.raises(ValueError, match=reason):
        check_lambdas(lambdas, 3)
    with pytest.raises(ValueError, match=reason):
        make_instance(3, 3, lambdas=lambdas, sigma=0.1, rng=0)


def test_valid_lambdas_are_normalised_and_drawn_reproducibly():
    from sroa_dist.problems.instances import check_lambdas, draw_lambdas

    assert check_lambdas(2) == 2.0 and check_lambdas([1, -2]) == [1.0, -2.0]
    assert check_lambdas({"dist": "uniform", "low": 1, "high": 2}) == {
        "dist": "uniform",
        "low": 1.0,
        "high": 2.0,
    }
    a = draw_lambdas({"dist": "uniform", "low": 1, "high": 2}, 4, rng=np.random.default_rng(0))
    assert np.array_equal(a, np.random.default_rng(0).uniform(1, 2, size=4))


@pytest.mark.parametrize("kw", [{"sigma": -1.0}, {"sigma": 1e300}, {"eps": float("nan")}])
def test_noise_levels_are_checked(kw):
    with pytest.raises(ValueError, match="expected a finite number between 0 and"):
        make_instance(3, 3, rng=0, **kw)
