"""Threshold estimation (logistic fit + bootstrap) and the log–log exponent fit, on planted data."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from analysis_cubes import figure2_cube, planted_threshold, scaling_cube

from sroa_dist.analysis import estimate_thresholds, fit_exponent

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
