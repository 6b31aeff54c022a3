"""Threshold estimation (logistic fit + bootstrap) and the log–log exponent fit, on planted data."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from sroa_dist.analysis import RateFit, estimate_thresholds, fit_exponent, fit_rate
from tests.support.analysis_cubes import figure2_cube, planted_threshold, scaling_cube

N_BOOT = 100


@pytest.fixture(scope="module")
def planted():
    ds = scaling_cube()  # thr(n) = 0.8 n^-1/2, logistic width 0.15 in log ε
    thr = estimate_thresholds(ds, n_boot=N_BOOT, rng=1)
    return ds, thr


def test_thresholds_recover_planted_within_ci(planted):
    ds, thr = planted
    truth = planted_threshold(ds["n"].values)
    lo, hi = thr["threshold_lo"].values, thr["threshold_hi"].values
    assert np.all((lo <= truth) & (truth <= hi)), (lo, truth, hi)
    assert np.all((hi - lo) / truth < 0.25), "CI absurdly wide"
    np.testing.assert_allclose(thr["threshold"], truth, rtol=0.08)
    np.testing.assert_allclose(thr["width"], 0.15, rtol=0.35)
    assert thr["in_range"].all() and (thr["n_instances"] == 12 * 40).all()
    assert thr.sizes["boot"] == N_BOOT and thr.attrs["criterion"] == "recovery"


def test_exponent_recovers_planted_slope_within_ci(planted):
    _, thr = planted
    ex = fit_exponent(thr, p=3)
    k, lo, hi = float(ex["exponent"]), float(ex["exponent_lo"]), float(ex["exponent_hi"])
    assert lo <= -0.5 <= hi and abs(k + 0.5) < 0.05
    assert hi - lo < 0.2, "CI absurdly wide"
    assert not lo <= -1.0 <= hi  # the power-method slope is rejected
    assert float(ex["reference_sroa"]) == -0.5 and float(ex["reference_power"]) == -1.0
    np.testing.assert_allclose(float(ex["prefactor"]), 0.8, rtol=0.15)
    assert int(ex["n_points"]) == 4


def test_groups_over_p_with_reference_exponents():
    cubes = [
        scaling_cube(n_rep=24, exponent=-0.5, seed=5).expand_dims(p=[3]),
        scaling_cube(n_rep=24, exponent=-1 / 3, seed=6).expand_dims(p=[4]),
    ]
    ds = xr.concat(cubes, "p").transpose("n", "p", "eps", "replicate", "step")
    thr = estimate_thresholds(ds, n_boot=60, rng=0)
    assert thr["threshold"].dims == ("n", "p")
    ex = fit_exponent(thr)
    np.testing.assert_allclose(ex["reference_sroa"].values, [-0.5, -1 / 3])
    for p, slope in ((3, -0.5), (4, -1 / 3)):
        e = ex.sel(p=p)
        assert float(e["exponent_lo"]) <= slope <= float(e["exponent_hi"])


def test_bootstrap_is_seeded():
    ds = scaling_cube(ns=(4, 16), n_eps=8, n_rep=10)
    a = estimate_thresholds(ds, n_boot=30, rng=7)
    b = estimate_thresholds(ds, n_boot=30, rng=7)
    xr.testing.assert_identical(a, b)


def test_no_crossing_gives_nan_and_separation_stays_finite():
    ds = scaling_cube(ns=(4, 8), n_eps=6, n_rep=10)
    ok = ds["vec_err"].where(ds["vec_err"].isnull(), 0.01)  # everything recovered
    thr = estimate_thresholds(ds.assign(vec_err=ok), n_boot=20)
    assert thr["threshold"].isnull().all() and not thr["in_range"].any()
    # Deterministic step between ε levels 2 and 3: complete separation, finite threshold.
    eps = ds["eps"].values
    cut = np.sqrt(eps[2] * eps[3])
    step = xr.where(ds["eps"] < cut, 0.01, 0.9).where(ds["vec_err"].notnull())
    thr = estimate_thresholds(ds.assign(vec_err=step), n_boot=20)
    assert np.all((eps[2] < thr["threshold"]) & (thr["threshold"] < eps[3]))


def test_fit_exponent_ignores_out_of_range_thresholds():
    thr = estimate_thresholds(scaling_cube(n_rep=16), n_boot=20)
    thr["in_range"].loc[{"n": 32}] = False
    ex = fit_exponent(thr)
    assert int(ex["n_points"]) == 3 and np.isnan(float(ex["reference_sroa"]))


def test_threshold_errors_name_the_missing_axis():
    with pytest.raises(ValueError, match=r"no `eps`, `eps_scaled` or `sigma` axis"):
        estimate_thresholds(figure2_cube(n_rep=4), n_boot=0)
    thr = estimate_thresholds(scaling_cube(ns=(4,), n_eps=5, n_rep=5), n_boot=0)
    with pytest.raises(ValueError, match=r"`n` has 1 value"):
        fit_exponent(thr)


def test_flat_success_gives_nan_without_overflow_warnings():
    """Success that does not depend on ε (one failure at each end): the fit extrapolates far
    off the range. Before: 'overflow encountered in exp' reached the user."""
    ds = scaling_cube(ns=(4, 8), n_eps=4, n_rep=3)
    ok = ds["vec_err"].where(ds["vec_err"].isnull(), 0.01)
    for e in (ds["eps"].values[0], ds["eps"].values[-1]):
        ok.loc[{"n": 4, "eps": e, "replicate": 0, "step": 1}] = 0.9
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        thr = estimate_thresholds(ds.assign(vec_err=ok), n_boot=50)
        ex = fit_exponent(thr)
    assert not thr["in_range"].any() and int(ex["n_points"]) == 0


# ------------------------------------------------------------------------------------------
# fit_rate: bracketed thresholds from a first-crossing search


def _planted_study(
    rng,
    *,
    k=-0.5,
    C=0.9,
    sizes=(8, 12, 16, 24, 32, 48, 64),
    reps=4,
    sigma=0.03,
    tau=0.02,
    rtol=0.01,
):
    """Thresholds log ε* = log C + k log(n−1) + u_n + e, each reported as a bracket of
    relative width rtol placed uniformly around it (as a bisection leaves it)."""
    n = np.repeat(sizes, reps).astype(float)
    u = np.repeat(rng.normal(0.0, tau, len(sizes)), reps)
    y = np.log(C) + k * np.log(n - 1) + u + rng.normal(0.0, sigma, n.size)
    w = np.log1p(rtol)
    hi = y + rng.uniform(0.0, w, n.size)
    return n, np.exp(hi - w), np.exp(hi)


def test_fit_rate_intervals_cover_planted_exponents():
    """≥ 90 % of nominal 95 % intervals cover over 40 planted studies with replicate spread,
    scatter of the sizes about the line and 1 % brackets; and over 20 studies whose
    replicates are identical (only the brackets are uncertain), where a replicate bootstrap
    has zero width."""
    rng = np.random.default_rng(17)
    cover = 0
    for i in range(40):
        k = (-0.5, -1 / 3)[i % 2]
        fit = fit_rate(*_planted_study(rng, k=k), p=3)
        cover += fit.exponent_lo <= k <= fit.exponent_hi
        assert fit.exponent_hi - fit.exponent_lo < 0.3, "interval absurdly wide"
    assert cover >= 36, f"{cover}/40 covered"
    cover = 0
    for _ in range(20):
        fit = fit_rate(*_planted_study(rng, sigma=0.0, tau=0.0, reps=3), p=3)
        cover += fit.exponent_lo <= -0.5 <= fit.exponent_hi
        assert fit.exponent_hi > fit.exponent_lo  # the brackets alone give a width
    assert cover >= 18, f"{cover}/20 covered"


def test_fit_rate_reports_the_pieces():
    rng = np.random.default_rng(3)
    n, lo, hi = _planted_study(rng, k=-0.5, sigma=0.0, tau=0.0)
    fit = fit_rate(n, lo, hi, p=3, level=0.9)
    assert isinstance(fit, RateFit) and fit.level == 0.9
    assert fit.reference == -0.5 and fit.n_range == (8, 64) and fit.n_sizes == 7
    assert fit.n_points == n.size and fit.n_censored == 0
    assert fit.exponent == pytest.approx(-0.5, abs=0.01)
    assert fit.prefactor == pytest.approx(0.9, rel=0.02)
    # (n−1)^{1/2} ε* is flat at C when the rate is attained.
    np.testing.assert_allclose(fit.normalised, 0.9, rtol=0.01)
    assert np.all(fit.normalised_lo < fit.normalised) and np.all(fit.normalised < fit.normalised_hi)
    np.testing.assert_array_equal(fit.sizes, [8, 12, 16, 24, 32, 48, 64])


def test_fit_rate_onset_and_range():
    # A plateau at 0.5 up to n = 24, then 0.5 ((n−1)/23)^{-1/3}; 1 % brackets.
    sizes = np.array([8, 12, 16, 24, 32, 48, 64, 96, 128], dtype=float)
    eps = np.where(sizes <= 24, 0.5, 0.5 * ((sizes - 1) / 23) ** (-1 / 3))
    n, hi = np.repeat(sizes, 2), np.repeat(eps * 1.005, 2)
    lo = hi / 1.01
    fit = fit_rate(n, lo, hi, p=4)
    assert fit.onset_n == 32  # first size below the plateau's bracket, and staying below
    tail = fit_rate(n, lo, hi, p=4, n_range=(fit.onset_n, None))
    assert tail.n_range == (32, 128)
    assert tail.exponent_lo <= -1 / 3 <= tail.exponent_hi
    assert tail.exponent == pytest.approx(-1 / 3, abs=0.02)
    # Open brackets (not reached, below range) are counted and left out, never fitted.
    lo2, hi2 = lo.copy(), hi.copy()
    hi2[0], lo2[-1] = np.inf, 0.0
    fit2 = fit_rate(n, lo2, hi2, p=4)
    assert fit2.n_censored == 2 and fit2.n_points == n.size - 2
    flat = fit_rate(n[:8], lo[:8], hi[:8], p=4)  # sizes 8-24: never leaves the plateau
    assert np.isnan(flat.onset_n)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([8, 16], [0.1, 0.1], [0.2, 0.2]), {"p": 3}, "n_range"),
        (([8, 16, 32], [0.2, 0.1, 0.1], [0.1, 0.2, 0.2]), {"p": 3}, "brackets"),
        (([8, 16], [0.1], [0.2, 0.2]), {"p": 3}, "one length"),
        (([8, 16, 32], [0.1] * 3, [0.2] * 3), {"p": 2}, "p:"),
        (([8, 16, 32], [0.1] * 3, [0.2] * 3), {"p": 3, "level": 1.5}, "level"),
        (([8, 16, 32], [0.1] * 3, [np.inf] * 3), {"p": 3}, "closed"),
    ],
)
def test_fit_rate_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fit_rate(*args, **kwargs)
