"""Success criteria (recovery, value, theorem): hand-computed cases, registry errors, and
thresholds / exponents per criterion and per perturbation family on planted cubes."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from sroa_dist.analysis import (
    CRITERIA,
    estimate_thresholds,
    fit_exponent,
    get_criterion,
    success,
    success_probability,
)
from tests.support.analysis_cubes import (
    CRITERIA_CASES,
    criteria_cube,
    family_cube,
    planted_threshold,
    scaling_cube,
)


@pytest.mark.parametrize(("criterion", "options", "expected"), CRITERIA_CASES)
def test_each_criterion_matches_hand_computed_cases(criterion, options, expected):
    s = success(criteria_cube(), criterion, **options)
    assert s.dims == ("sigma", "replicate")
    np.testing.assert_array_equal(s.sel(sigma=0.01).values, np.array(expected, dtype=float))
    assert s.attrs["criterion"] == criterion


def test_theorem_criterion_recomputes_missing_bounds_from_the_core():
    ds = criteria_cube()
    bare = ds.drop_vars(["thm31_lam_bound", "thm31_vec_bound"])
    xr.testing.assert_identical(success(bare, "theorem"), success(ds, "theorem"))


def test_steps_restrict_every_criterion():
    ds = criteria_cube()
    # step 2 only: C has no step 2 (NaN); B's bad step-1 vector no longer counts.
    np.testing.assert_array_equal(
        success(ds, "recovery", steps=[2]).values.ravel(), [1, 1, np.nan, np.nan, 1, 1]
    )
    np.testing.assert_array_equal(
        success(ds, "value", steps=[1]).values.ravel(), [1, 1, 0, np.nan, 1, 1]
    )


def test_value_criterion_uses_the_eps_coordinate_when_eps_is_swept():
    # eps swept (no `eps` variable): |λ̂ − λ| = 0.15 fails c = 1 at ε = 0.1, passes at ε = 0.2.
    lam_err = np.full((2, 3, 1), 0.15)
    ds = xr.Dataset(
        {
            "lam_err": (("eps", "replicate", "step"), lam_err),
            "vec_err": (("eps", "replicate", "step"), lam_err),
        },
        coords={"eps": [0.1, 0.2], "replicate": [0, 1, 2], "step": [1]},
    )
    np.testing.assert_array_equal(success(ds, "value").values, [[0, 0, 0], [1, 1, 1]])
    p = success_probability(ds, "value", c=2.0)["p_success"]
    np.testing.assert_array_equal(p.values, [1.0, 1.0])
    with pytest.raises(ValueError, match=r"no `eps` variable or axis"):
        success(ds.rename(eps="sigma"), "value")


def test_recovery_on_a_derived_variable_is_the_value_criterion_on_another_norm():
    """The value criterion against another measure of ‖E‖ (the n-scaling fit of
    docs/explanation/perturbations.md divided by each instance's certified lower bound
    ``eps_lower``): ``recovery`` with ``variable=`` on ``lam_err / eps_lower`` and ``radius=c``
    decides each step as ``|λ̂ − λ| ≤ c·eps_lower``; it equals ``value`` where ``eps_lower`` is
    the swept ε and differs where the lower bound is below it."""
    lam_err = np.array([[[0.04], [0.06], [0.11]], [[0.095], [0.11], [0.19]]])
    dims = ("eps", "replicate", "step")
    ds = xr.Dataset(
        {"lam_err": (dims, lam_err), "vec_err": (dims, lam_err)},
        coords={"eps": [0.1, 0.2], "replicate": [0, 1, 2], "step": [1]},
    )
    ds["eps_lower"] = xr.DataArray([[0.1, 0.1, 0.1], [0.2, 0.2, 0.2]], dims=("eps", "replicate"))
    derived = ds.assign(lam_err_rel=ds["lam_err"] / ds["eps_lower"])
    got = success(derived, "recovery", variable="lam_err_rel", radius=0.5)
    np.testing.assert_array_equal(got.values, success(ds, "value", c=0.5).values)
    np.testing.assert_array_equal(got.values, [[1, 0, 0], [1, 0, 0]])
    lower = ds.assign(eps_lower=ds["eps_lower"] * 0.9)  # a bound below the swept ε
    derived = lower.assign(lam_err_rel=lower["lam_err"] / lower["eps_lower"])
    strict = success(derived, "recovery", variable="lam_err_rel", radius=0.5)
    np.testing.assert_array_equal(strict.values, [[1, 0, 0], [0, 0, 0]])


def test_registry_errors_list_valid_names_and_options():
    assert tuple(CRITERIA) == ("recovery", "value", "theorem")
    with pytest.raises(
        ValueError,
        match=r"criterion: expected one of \('recovery', 'value', 'theorem'\); received 'bogus'",
    ):
        success(criteria_cube(), "bogus")
    with pytest.raises(
        ValueError, match=r"'theorem' takes no option.*'variable'.*accepted: c, radius, rtol"
    ):
        success(criteria_cube(), "theorem", variable="vec_err")
    with pytest.raises(ValueError, match=r"c: expected a finite number > 0"):
        success(criteria_cube(), "value", c=0.0)
    with pytest.raises(ValueError, match=r"criterion: expected one of"):
        estimate_thresholds(scaling_cube(ns=(4, 8), n_eps=4, n_rep=3), "bogus", n_boot=0)
    assert get_criterion("value").label(c=2.0) == "every step's |λ̂ − λ| ≤ 2·ε"


def test_value_thresholds_recover_the_planted_rate_while_recovery_is_flat():
    """The issue-11 situation: recovery sees no n, value errors shrink the threshold as n^-1/2."""
    ds = scaling_cube(n_rep=30, exponent=0.0, c=0.5, value_c=0.6, value_exponent=-0.5, seed=4)
    truth = planted_threshold(ds["n"].values, 0.6, -0.5)
    planted = ds["planted_value_success"].astype(float)
    xr.testing.assert_equal(success(ds, "value").drop_attrs(), planted.rename("success"))
    thr = estimate_thresholds(ds, "value", n_boot=60, rng=1)
    assert thr.attrs["criterion"] == "value" and thr.attrs["c"] == 1.0
    np.testing.assert_allclose(thr["threshold"], truth, rtol=0.15)
    assert thr["in_range"].all()
    ex_value = fit_exponent(thr, criterion="value", p=3)
    assert float(ex_value["exponent_lo"]) <= -0.5 <= float(ex_value["exponent_hi"])
    assert ex_value.attrs["criterion"] == "value"
    ex_rec = fit_exponent(ds, criterion="recovery", p=3, n_boot=60, rng=1)  # from the cube
    assert abs(float(ex_rec["exponent"])) < 0.15  # planted flat
    assert not float(ex_rec["exponent_lo"]) <= -0.5 <= float(ex_rec["exponent_hi"])
    # The thresholds' own criterion is checked, and cube-only options are refused.
    with pytest.raises(ValueError, match=r"expected the thresholds' own criterion 'value'"):
        fit_exponent(thr, criterion="recovery")
    with pytest.raises(ValueError, match=r"apply to a cube"):
        fit_exponent(thr, n_boot=10)


def test_thresholds_per_family_and_criterion():
    ds = family_cube()
    thr = estimate_thresholds(ds, "value", n_boot=40, rng=0)
    assert thr["threshold"].dims == ("noise", "n")
    # gaussian never fails the value criterion: no threshold, nothing to fit.
    assert thr["threshold"].sel(noise="gaussian").isnull().all()
    ex = fit_exponent(thr, p=3)
    assert int(ex["n_points"].sel(noise="gaussian")) == 0
    tilt = ex.sel(noise="coherent-tilt")
    assert float(tilt["exponent_lo"]) <= -0.5 <= float(tilt["exponent_hi"])
    rec = fit_exponent(estimate_thresholds(ds, "recovery", n_boot=40, rng=0), p=3)
    for family in ("gaussian", "coherent-tilt"):
        e = rec.sel(noise=family)
        assert abs(float(e["exponent"])) < 0.15  # planted flat
        assert not float(e["exponent_lo"]) <= -0.5 <= float(e["exponent_hi"])
