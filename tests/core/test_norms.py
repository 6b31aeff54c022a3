"""Operator norm ``‖E‖ = max |E x^p|``: closed forms, exhaustive search, brackets at any scale,
and rescaling to a target norm."""

import itertools

import numpy as np
import pytest

from sroa_dist import (
    METHODS,
    make_instance,
    operator_norm,
    operator_norm_batch,
    scale_to_opnorm,
    sod_tensor,
)
from sroa_dist.tensors import contract, identity_basis

ALL_METHODS = sorted(METHODS)


@pytest.mark.parametrize("p", [3, 4, 5])
def test_diagonal_tensor_has_norm_one(p):
    """T = Σ e_i^{⊗p}: its Z-eigenvalues are |S|^{-(p-2)/2} at x = 1_S/sqrt|S| for every
    support S (1/sqrt|S| for p = 3), so the norm is 1, attained at the e_i."""
    n = 4
    T = sod_tensor(np.ones(n), identity_basis(n), p)
    res = operator_norm(T, rng=0)
    assert res.certified
    assert res.lower == pytest.approx(1.0, abs=1e-12)
    assert res.lower <= 1.0 + 1e-12 <= res.upper + 2e-12
    assert res.upper - 1.0 <= 1e-6 * np.sqrt(n)
    for S in itertools.combinations(range(n), 2):
        x = np.zeros(n)
        x[list(S)] = 1 / np.sqrt(2)  # the Z-eigenvector on a support of size 2
        assert contract(T[None], x[None, None], p)[0, 0] <= res.upper
        assert contract(T[None], x[None, None], p)[0, 0] == pytest.approx(2.0 ** (-(p - 2) / 2))


def test_even_order_norm_of_a_negative_tensor_is_positive():
    T = -2.0 * sod_tensor(np.ones(3), identity_basis(3), 4)
    res = operator_norm(T, rng=0)
    assert res.value == pytest.approx(2.0, abs=1e-12) and res.certified


@pytest.mark.parametrize("method", ALL_METHODS)
def test_bracket_contains_the_exhaustive_maximum_on_the_circle(method):
    E = make_instance(2, 3, noise="gaussian", sigma=1.0, rng=7).E
    theta = np.linspace(0, 2 * np.pi, 400_001)
    X = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    best = np.max(np.abs(contract(E[None], X[None], 3)))
    res = operator_norm(E, method, rng=0)
    assert res.lower <= best * (1 + 1e-9)
    assert res.upper >= best * (1 - 1e-12)


@pytest.mark.parametrize("s", [1e-300, 1e-200, 1.0, 1e200, 1e300])
def test_bracket_scales_with_the_tensor(s):
    E = make_instance(4, 3, noise="gaussian", sigma=1.0, rng=1).E
    ref = operator_norm(E, rng=0)
    res = operator_norm(E * s, rng=0)
    assert res.value / s == pytest.approx(ref.value, rel=1e-12)
    assert res.upper / s == pytest.approx(ref.upper, rel=1e-12)
    assert res.lower <= res.upper and res.certified


def test_zero_perturbation_has_norm_zero():
    res = operator_norm(np.zeros((3, 3, 3)), rng=0)
    assert (res.value, res.lower, res.upper, res.certified) == (0.0, 0.0, 0.0, True)
    assert np.array_equal(scale_to_opnorm(np.zeros((3, 3, 3)), 0.0), np.zeros((3, 3, 3)))
    with pytest.raises(ValueError, match="zero perturbation"):
        scale_to_opnorm(np.zeros((3, 3, 3)), 0.1)


def test_batched_norms_equal_one_at_a_time_bit_for_bit():
    Es = np.stack([make_instance(4, 3, sigma=1.0, rng=i).E for i in range(3)])
    batch = operator_norm_batch(Es, rng=[0, 1, 2])
    for i in range(3):
        one = operator_norm(Es[i], rng=i)
        assert batch[i].value == one.value and batch[i].upper == one.upper


@pytest.mark.parametrize("s", [1e-310, 1.0, 1e300])
def test_scale_to_opnorm_reaches_the_target_from_any_scale(s):
    E = make_instance(4, 3, noise="gaussian", sigma=1.0, rng=2).E * s
    E2 = scale_to_opnorm(E, 0.25, rng=0)
    assert np.all(np.isfinite(E2))
    assert operator_norm(E2, rng=0).value == pytest.approx(0.25, rel=1e-9)


@pytest.mark.parametrize("eps", [-1.0, float("nan"), float("inf")])
def test_scale_to_opnorm_refuses_bad_targets(eps):
    with pytest.raises(ValueError, match="eps: expected a finite target norm"):
        scale_to_opnorm(np.ones((2, 2, 2)), eps)


def test_scale_factors_are_the_one_rescaling_rule():
    """scale_factors is what scale_to_opnorm and make_instance multiply by (same bits)."""
    from sroa_dist.norms import scale_factors

    np.testing.assert_array_equal(scale_factors([2.0, 0.0, 4.0], [1.0, 0.0, 3.0]), [0.5, 0, 0.75])
    with pytest.raises(ValueError, match="zero perturbation"):
        scale_factors([0.0], [1.0])
    with pytest.raises(ValueError, match="finite target"):
        scale_factors([1.0], [-1.0])
    E = make_instance(4, 3, noise="gaussian", sigma=1.0, rng=2).E
    norm = operator_norm(E, rng=0).value
    want = E * float(scale_factors(norm, 0.3))
    np.testing.assert_array_equal(scale_to_opnorm(E, 0.3, norm=norm), want)
    np.testing.assert_array_equal(scale_to_opnorm(E, 0.3, rng=0), want)
    # make_instance rescales with the same rule and the same norm draws.
    inst = make_instance(4, 3, noise="gaussian", eps=0.3, rng=5)
    raw = make_instance(4, 3, noise="gaussian", sigma=1.0, rng=5)
    np.testing.assert_array_equal(inst.T, raw.T)
    assert operator_norm(inst.E, rng=0).value == pytest.approx(0.3, rel=1e-9)
    np.testing.assert_array_equal(scale_to_opnorm(np.zeros((2, 2, 2)), 0.0), np.zeros((2, 2, 2)))
