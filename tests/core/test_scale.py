"""Scale safety of the rank-one front door: answers scale with the tensor from 1e-300 to 1e300,
zero tensors are exact, and a certificate never comes with an upper bound below the value."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sroa_dist import (
    METHODS,
    MethodOutput,
    make_instance,
    operator_norm,
    rank_one,
    rank_one_batch,
    register_method,
)
from sroa_dist.methods import unregister_method
from sroa_dist.methods.builtin import GAP_TOL
from sroa_dist.relaxation import solve as relaxation_solve
from sroa_dist.tensors import unfolding_norm

ALL_METHODS = sorted(METHODS)
T0 = make_instance(4, 3, sigma=0.01, rng=0).T_hat
#: max T0 x^3 on the sphere, certified at unit scale (gap below 1e-6 ‖T0‖_F).
REF = rank_one(T0, "certified", rng=0)
TRUE_MAX = 1.010774


def test_reference_value_is_certified_at_unit_scale():
    assert REF.certified
    assert REF.lam == pytest.approx(TRUE_MAX, abs=1e-6)
    assert REF.upper_bound - REF.lam <= GAP_TOL * np.linalg.norm(T0)


@pytest.mark.parametrize("s", [1e-200, 1e-300, 1e160, 1e300])
def test_issue_reproducer_certified_scales_back(s):
    """The reported defect: at 1e-200 ``certified=True`` with ``upper_bound = 0 < lam`` and a
    wrong value; at 1e160 a ``LinAlgError``."""
    r = rank_one(T0 * s, "certified", rng=0)
    assert r.certified
    assert r.lam / s == pytest.approx(REF.lam, rel=1e-12)
    assert r.upper_bound >= r.lam
    assert r.upper_bound / s <= REF.lam * (1 + 1e-5)


@pytest.mark.parametrize("s", [1e-200, 1e160])
def test_operator_norm_bracket_contains_the_true_norm_at_extreme_scales(s):
    o = operator_norm(T0 * s, rng=0)
    assert o.lower <= REF.lam * s * (1 + 1e-12)
    assert o.upper >= REF.lam * s * (1 - 1e-12)
    assert o.certified


@settings(max_examples=40, deadline=None)
@given(
    exponent=st.floats(min_value=-300, max_value=300),
    method=st.sampled_from(ALL_METHODS),
)
@pytest.mark.slow
def test_values_and_bounds_scale_with_the_tensor(exponent, method):
    s = 10.0**exponent
    r = rank_one(T0 * s, method, rng=0)
    ref = rank_one(T0, method, rng=0)
    assert np.isfinite(r.lam) and np.isfinite(r.upper_bound)
    assert r.lam / s == pytest.approx(ref.lam, rel=1e-9)
    # A valid bound at every scale: never below the certified maximum (up to the rounding of
    # T0 * s, relative 1e-16 per entry).
    assert r.upper_bound / s >= TRUE_MAX * (1 - 1e-6)
    assert r.upper_bound >= abs(r.lam)
    if r.certified:
        assert r.upper_bound - abs(r.lam) <= GAP_TOL * np.linalg.norm(T0) * s * (1 + 1e-9)


@settings(max_examples=25, deadline=None)
@given(j=st.integers(min_value=-990, max_value=990), method=st.sampled_from(ALL_METHODS))
def test_power_of_two_scales_give_the_same_bits(j, method):
    """Multiplying by 2^j is exact, and the front door works on T / 2^k: the maximiser is the
    same to the bit and the value is exactly 2^j times the unit-scale value."""
    r = rank_one(np.ldexp(T0, j), method, rng=3)
    ref = rank_one(T0, method, rng=3)
    assert np.array_equal(r.x, ref.x)
    assert r.lam == np.ldexp(ref.lam, j)
    assert r.upper_bound == np.ldexp(ref.upper_bound, j)
    assert r.certified == ref.certified


def test_subnormal_entries_still_give_a_valid_bound():
    s = 1e-310  # T0's entries near 1e-2 · s are subnormal: the tensor itself is rounded
    r = rank_one(T0 * s, "certified", rng=0)
    assert r.lam / s == pytest.approx(REF.lam, rel=1e-9)
    assert r.upper_bound >= r.lam


@pytest.mark.parametrize("method", ALL_METHODS)
@pytest.mark.parametrize("p", [3, 4])
def test_zero_tensor_is_answered_exactly(method, p):
    r = rank_one(np.zeros((3,) * p), method, rng=0)
    assert (r.lam, r.upper_bound, r.certified) == (0.0, 0.0, True)
    assert np.linalg.norm(r.x) == 1.0


@pytest.mark.parametrize("method", ALL_METHODS)
def test_zero_tensor_in_a_batch_does_not_change_the_others(method):
    Ts = np.stack([T0, np.zeros_like(T0), 2 * T0])
    batch = rank_one_batch(Ts, method, rng=[5, 6, 7])
    for i, seed in ((0, 5), (2, 7)):
        one = rank_one(Ts[i], method, rng=seed)
        assert np.array_equal(batch[i].x, one.x)
        assert batch[i].lam == one.lam
    assert batch[1].lam == 0.0 and batch[1].certified


def test_a_value_beyond_float64_is_a_clear_error():
    T = np.full((4, 4, 4), 1.5e308)  # max T x^3 = 1.5e308 · 8 at x = (1, 1, 1, 1) / 2
    with pytest.raises(ValueError, match="beyond the float64 range"):
        rank_one(T, "sshopm", rng=0)


def test_unfolding_norm_is_scale_safe_and_a_bound():
    ref = unfolding_norm(T0[None])[0]
    assert ref >= REF.lam
    for s in (1e-300, 1e-200, 1e200, 1e300):
        assert unfolding_norm((T0 * s)[None])[0] / s == pytest.approx(ref, rel=1e-12)
    # Closed form: e_1^{⊗3} has operator norm 1 and unfolding norm 1; the rounded bound must
    # still be >= 1 so a correct certificate is not refused by the invariant.
    e = np.zeros((3, 3, 3))
    e[0, 0, 0] = 1.0
    assert unfolding_norm(e[None])[0] >= 1.0
    r = rank_one(e, "power", rng=0)
    assert r.lam == 1.0 and r.upper_bound >= 1.0 and r.certified


def test_relaxation_called_directly_is_scale_safe():
    r = relaxation_solve(T0 * 1e-200)
    assert r.fx / 1e-200 == pytest.approx(REF.lam, rel=1e-9)
    assert r.upper_bound >= r.fx


def test_certificate_is_refused_when_the_bound_is_below_the_value(request):
    """The invariant in the certifying code path: a method that returns a bound below its own
    value (here, a broken one) never yields ``certified=True``."""

    def bogus(Ts, rngs):
        B, n = Ts.shape[0], Ts.shape[1]
        x = np.zeros((B, n))
        x[:, 0] = 1.0
        return MethodOutput(x=x, upper_bound=np.zeros(B), n_starts=np.ones(B), n_iter=np.ones(B))

    register_method("bogus", bogus)
    request.addfinalizer(lambda: unregister_method("bogus"))
    r = rank_one(T0, "bogus", rng=0)
    assert r.lam > 0
    assert not r.certified
    assert "bound below value" in r.message


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: rank_one_batch(np.zeros((0, 3, 3, 3)), rng=0), "empty batch"),
        (lambda: rank_one(T0, rng="abc"), "rng: expected None, a non-negative int seed"),
        (lambda: rank_one_batch(np.stack([T0, T0]), rng=[0, "x"]), "rng: expected"),
        (lambda: rank_one(T0 + 0j, rng=0), "expected a real array, received a complex"),
        (lambda: operator_norm(T0 * (1 + 1e-3j), rng=0), "complex"),
    ],
)
def test_bad_inputs_get_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
