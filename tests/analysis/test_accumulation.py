"""The coherent tilt's accumulation coefficients against their closed form, and the thresholds
they predict against first-crossing searches."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sroa_dist as sd
from sroa_dist.analysis import accumulation, accumulation_limit, predict_threshold
from sroa_dist.errors import InputError


def test_the_closed_form_limit_is_the_tilts_first_order_residual():
    # g_p(0) = (p c_p)^-p with c_p = ((p-1)/p)^((p-1)/2) / sqrt(p)
    want = {3: 0.6495, 4: 0.3512, 5: 0.1666, 6: 0.0713}
    for p, g0 in want.items():
        c_p = ((p - 1) / p) ** ((p - 1) / 2) / math.sqrt(p)
        assert accumulation_limit(p) == pytest.approx((p * c_p) ** (-p))
        assert accumulation_limit(p) == pytest.approx(g0, abs=5e-5)


@pytest.mark.parametrize("p", [3, 4, 5, 6])
def test_the_coefficient_tends_to_its_closed_form(p):
    """At ε = 0.01 the measured g_p is within 1.5 % of g_p(0) (p = 3 approaches it linearly
    in ε, the even-odd others quadratically), and it moves toward it as ε falls."""
    acc = accumulation(p, [0.04, 0.01], n=6)
    assert acc.last.all()
    assert np.all(acc.global_gap <= 1e-9)
    assert abs(acc.g[1] / acc.g0 - 1) < 0.015
    assert abs(acc.g[1] - acc.g0) < abs(acc.g[0] - acc.g0)


@pytest.mark.parametrize("p", [4, 5])
def test_the_coefficient_does_not_depend_on_n(p):
    a, b = accumulation(p, [0.1, 0.3], n=6), accumulation(p, [0.1, 0.3], n=12)
    np.testing.assert_allclose(a.g, b.g, rtol=2e-3)
    np.testing.assert_allclose(a.value_other, b.value_other, rtol=1e-6)
    np.testing.assert_allclose(a.h, b.h, rtol=0.02)  # the vector error grows as sqrt(n - 1)


def test_the_tilt_value_error_is_the_accumulated_residual():
    """The closed form itself: (n - 1) g ε^p is the last component's value error of one run."""
    n, p, eps = 9, 4, 0.05
    acc = accumulation(p, [eps], n=n)
    lam = np.ones(n)
    lam[-1] = 0.95
    res = sd.sroa(sd.structured_tensor(p, lam, eps=eps), method="sshopm", rng=0)
    assert lam[-1] - res.lambdas[-1] == pytest.approx((n - 1) * acc.g[0] * eps**p, rel=1e-9)
    assert (n - 1) * acc.g0 * eps**p == pytest.approx(lam[-1] - res.lambdas[-1], rel=0.03)


def test_a_prediction_has_a_plateau_an_onset_and_the_theorems_exponent():
    pr = predict_threshold(4, [8, 16, 64, 256, 4096], n_model=8, points=24)
    assert pr.eps_star[0] == pr.eps_star[1] == pytest.approx(pr.plateau)
    assert 16 < pr.onset_n <= 64
    assert pr.eps_star[2] < pr.plateau and np.all(np.diff(pr.eps_star[1:]) < 0)
    # the local slope tends to -1/(p-1) from below, and the threshold to its asymptote
    assert pr.local_slope[-1] == pytest.approx(-1 / 3, abs=0.02) and pr.local_slope[-1] < -1 / 3
    assert pr.eps_star[-1] / pr.asymptote[-1] == pytest.approx(1, abs=0.03)


def test_bad_input_is_refused():
    with pytest.raises(InputError, match="family"):
        accumulation(3, [0.1], n=6, family="gaussian")
    with pytest.raises(InputError, match="radius"):
        predict_threshold(3, 16, radius=0.3)
    with pytest.raises(InputError, match="p:"):
        accumulation_limit(2)


@pytest.mark.slow
@pytest.mark.parametrize(("p", "n", "matrix_free"), [(3, 32, False), (4, 48, True)])
def test_the_prediction_from_a_small_n_meets_the_first_crossing(p, n, matrix_free):
    """Past the onset, curves measured at n = 16 predict find_threshold's bracket within 2 %
    (p = 4 on the tilt's factored form: the dense n = 48 search cost CI about 400 s).

    The search's range ends at 1.5 times the prediction: when the prediction holds, above the
    scan's first failure (at most 1.25 times the crossing), so the bracket is the one of the
    default range (0.02, 1.5) point for point, without the continued scan's points above it;
    when it does not, the bracket misses it as before (or no crossing is found)."""
    pr = predict_threshold(p, n)
    stop = 1.5 * float(pr.eps_star[0])
    found = sd.find_threshold(
        n, p, c=0.5, rtol=0.01, eps_range=(0.02, stop), rng=1, matrix_free=matrix_free
    )
    mid = math.sqrt(found.bracket[0] * found.bracket[1])
    assert pr.eps_star[0] == pytest.approx(mid, rel=0.02)
