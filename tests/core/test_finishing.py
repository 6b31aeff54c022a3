"""The one finishing rule of a rank-one step (:mod:`sroa_dist.methods.finishing`), on every path:
the front door, explicit and implicit SROA. Answers scale with the tensor from 1e-300 to 1e300 and
no step is ever certified with an upper bound below its value."""

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sroa_dist import METHODS, MethodOutput, make_instance, register_method, sroa
from sroa_dist.decomposition.algorithm import DEFLATION_MODES
from sroa_dist.methods import unregister_method
from sroa_dist.methods.builtin import GAP_TOL
from sroa_dist.methods.finishing import certifies, normalize

ALL_METHODS = sorted(METHODS)
#: Relaxation-based methods are solved on tiny tensors only (n = 3), local ones on n = 4.
GLOBAL = ("certified", "sos")
#: Relative tolerance of "scaled-identical": ``T * s`` rounds every entry by at most 2^-53
#: relative, which moves values by about 1e-16 relative and (through the gaps between local
#: maxima) vectors by about 1e-15; 1e-9 leaves room for two deflation steps, and is far below
#: the errors of a broken path (the reported implicit defect was off by 20 %).
RTOL = 1e-9
RANK = 2


@functools.cache
def _tensor(p: int, n: int) -> np.ndarray:
    return make_instance(n, p, sigma=0.02, rng=100 + 10 * p + n).T_hat


def _case(method: str, p: int) -> np.ndarray:
    return _tensor(p, 3 if method in GLOBAL else 4)


def _run(method: str, deflation: str, p: int, scale: float):
    return sroa(_case(method, p) * scale, RANK, method, rng=7, deflation=deflation)


@functools.cache
def _reference(method: str, deflation: str, p: int):
    return _run(method, deflation, p, 1.0)


def _never_certified_below_the_value(res) -> None:
    bad = res.certified & (res.upper_bounds < np.abs(res.lambdas))
    assert not bad.any(), (res.lambdas, res.upper_bounds, res.certified)
    for step in res.steps:
        assert not (step.certified and step.upper_bound < abs(step.lam))


def _implicit_is_refused(method: str, deflation: str) -> bool:
    """Relaxation methods read every entry of the deflated tensor: implicit is refused."""
    return deflation == "implicit" and method in GLOBAL


@pytest.mark.parametrize("p", [3, 4])
@pytest.mark.parametrize("deflation", DEFLATION_MODES)
@pytest.mark.parametrize("method", ALL_METHODS)
@settings(max_examples=4, deadline=None, derandomize=True)
@given(exponent=st.floats(min_value=-300, max_value=300))
def test_every_path_scales_with_the_tensor(method, deflation, p, exponent):
    if _implicit_is_refused(method, deflation):
        with pytest.raises(ValueError, match="needs the deflated tensor itself"):
            _run(method, deflation, p, 1.0)
        return
    s = 10.0**exponent
    ref = _reference(method, deflation, p)
    res = _run(method, deflation, p, s)
    fro = np.linalg.norm(_case(method, p))
    assert np.all(np.isfinite(res.lambdas)) and np.all(np.isfinite(res.upper_bounds))
    np.testing.assert_allclose(res.lambdas / s, ref.lambdas, rtol=RTOL, atol=0)
    signs = np.sign(np.sum(res.vectors * ref.vectors, axis=0))
    np.testing.assert_allclose(res.vectors * signs, ref.vectors, rtol=0, atol=1e-7)
    # Bounds: the unfolding bound scales to rounding; a relaxation's validated bound lands
    # anywhere within its stopping gap (0.9 gap_tol ||T||_F) of the maximum.
    np.testing.assert_allclose(res.upper_bounds / s, ref.upper_bounds, atol=2 * GAP_TOL * fro)
    assert np.all(res.upper_bounds / s >= np.abs(ref.lambdas) * (1 - RTOL))
    # Certification agrees wherever the gap is not on the threshold itself.
    clear = np.abs(ref.gaps - GAP_TOL * fro) > 1e-3 * GAP_TOL * fro
    assert np.array_equal(res.certified[clear], ref.certified[clear])
    _never_certified_below_the_value(res)
    _never_certified_below_the_value(ref)


@pytest.mark.parametrize("method", ["sshopm", "power"])
@pytest.mark.parametrize("p", [3, 4])
@settings(max_examples=6, deadline=None, derandomize=True)
@given(j=st.integers(min_value=-990, max_value=990))
def test_implicit_sroa_at_power_of_two_scales_gives_the_same_bits(method, p, j):
    """Implicit SROA runs on ``T / 2^k`` like the front door: scaling by 2^j is exact, so the
    vectors are the same to the bit and values and bounds exactly 2^j times."""
    ref = _reference(method, "implicit", p)
    res = _run(method, "implicit", p, 2.0**j)
    assert np.array_equal(res.vectors, ref.vectors)
    assert np.array_equal(res.lambdas, np.ldexp(ref.lambdas, j))
    assert np.array_equal(res.upper_bounds, np.ldexp(ref.upper_bounds, j))
    assert np.array_equal(res.certified, ref.certified)


@pytest.mark.parametrize("method", ["sshopm", "power"])
@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_issue_reproducer_implicit_deflation_at_extreme_scales(method, scale):
    """The reported defect: at 1e-200 implicit SROA returned wrong values with upper bounds 0
    and every step certified; at 1e200 a LinAlgError."""
    T = make_instance(6, 3, sigma=0.01, rng=3).T_hat
    ref = sroa(T, 3, method, rng=0, deflation="explicit")
    res = sroa(T * scale, 3, method, rng=0, deflation="implicit")
    np.testing.assert_allclose(res.lambdas / scale, ref.lambdas, rtol=1e-9)
    assert np.all(res.upper_bounds / scale >= np.abs(ref.lambdas))
    assert not res.certified.any()  # a local method's unfolding bound is not tight here
    _never_certified_below_the_value(res)


def test_a_bound_below_the_value_is_never_certified_on_the_implicit_path(request):
    """The invariant is enforced where implicit SROA finishes its steps too: a (broken) local
    method that claims a zero bound gets no certificate, and the message says why."""

    def bogus(Ts, rngs, deflation=None):
        B, n = Ts.shape[0], Ts.shape[1]
        x = np.zeros((B, n))
        x[:, 0] = 1.0
        return MethodOutput(x=x, upper_bound=np.zeros(B), n_starts=np.ones(B), n_iter=np.ones(B))

    register_method("bogus-local", bogus)
    request.addfinalizer(lambda: unregister_method("bogus-local"))
    T = make_instance(4, 3, sigma=0.01, rng=0, basis="identity").T_hat
    for deflation in ("explicit", "implicit"):
        res = sroa(T, 2, "bogus-local", rng=0, deflation=deflation)
        assert res.lambdas[0] > 0.5 and not res.certified[0]
        assert "bound below value" in res.steps[0].message


def test_certification_test_closed_forms():
    # Within the tolerance, and the odd-p sign rule (a bound on |T x^p| says nothing of a
    # negative value when the objective is T x^p itself).
    assert certifies(1.0 + 0.5e-6, 1.0, 1.0, 1e-6, 3)
    assert not certifies(1.0 + 2e-6, 1.0, 1.0, 1e-6, 3)
    assert not certifies(1.0, -1.0, 1.0, 1e-6, 3)
    assert certifies(1.0, -1.0, 1.0, 1e-6, 4)
    assert certifies(1.0 + 2e-6, 1.0, 1.0, 1e-6, 4, slack=2e-6)
    np.testing.assert_array_equal(
        certifies(np.array([1.0, 3.0]), np.array([1.0, 1.0]), np.ones(2), 0.0, 4), [True, False]
    )


def test_normalize_scales_by_powers_of_two_only_far_from_one():
    T = _tensor(3, 4)
    Ts = np.stack([T, T * 2.0**100, T * 0.0, T * 2.0**-300])
    norm = normalize(Ts)
    assert norm.zero.tolist() == [False, False, True, False]
    fro = np.linalg.norm(norm.T.reshape(4, -1), axis=1)
    assert np.all((fro[[0, 1, 3]] >= 0.5) & (fro[[0, 1, 3]] < 1))
    assert np.array_equal(norm.T[1], norm.T[0]) and np.array_equal(norm.T[3], norm.T[0])
    assert norm.k[1] == norm.k[0] + 100 and norm.k[3] == norm.k[0] - 300 and norm.k[2] == 0
    assert np.array_equal(norm.inexact, norm.k > 0)
    unit = Ts[:1] * 2.0**40  # within 2^64 of unit norm: solved as given (no bit can change)
    near = normalize(unit)
    assert near.k.tolist() == [0] and near.T is unit
