"""Aggregation of result cubes: statistics, bound violations, success — against direct numpy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from sroa_dist.analysis import (
    count_violations,
    error_growth,
    list_violations,
    step_stats,
    success,
    success_probability,
    violation_mask,
)
from sroa_dist.analysis._cube import sweep_axes
from tests.support.analysis_cubes import figure1_cube, figure2_cube, scaling_cube


def _is_dask(obj) -> bool:
    arrays = [obj] if isinstance(obj, xr.DataArray) else list(obj.data_vars.values())
    return all(a.chunks is not None for a in arrays)


def test_step_stats_matches_numpy():
    ds = figure2_cube()
    st = step_stats(ds, quantiles=(0.1, 0.5, 0.9))
    v = ds["vec_err"].transpose("noise", "replicate", "step").values
    np.testing.assert_allclose(st["vec_err_mean"].transpose("noise", "step"), v.mean(1))
    np.testing.assert_allclose(st["vec_err_std"].transpose("noise", "step"), v.std(1, ddof=1))
    q = np.quantile(v, [0.1, 0.5, 0.9], axis=1)
    np.testing.assert_allclose(st["vec_err_quantile"].transpose("quantile", "noise", "step"), q)
    assert (st["lam_err_count"] == ds.sizes["replicate"]).all()


def test_step_stats_skips_nan_steps_past_rank():
    ds = scaling_cube(ns=(4, 8), n_eps=3, n_rep=6)
    st = step_stats(ds, dim=("replicate", "eps"))
    v = ds["vec_err"].transpose("n", "eps", "replicate", "step").values.reshape(2, 18, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # empty slices past n = 4
        expected = np.nanmean(v, 1)
    np.testing.assert_allclose(st["vec_err_mean"].transpose("n", "step"), expected)
    assert st["vec_err_count"].sel(n=4, step=5) == 0
    assert np.isnan(st["vec_err_mean"].sel(n=4, step=5))
    assert st["vec_err_count"].sel(n=8, step=8) == 18


def test_violations_count_planted_and_list_their_coordinates():
    ds = figure1_cube()  # errors planted strictly inside the Theorem 2.2 bounds
    lam_hits = [("binary", 3), ("gaussian", 10), ("gaussian", 30)]
    vec_hits = [("uniform", 5), ("gaussian", 10)]
    for noise, i in lam_hits:
        idx = {"noise": noise, "sigma": ds.sigma.values[i], "replicate": 0}
        ds["lam_err"].loc[{**idx, "step": 1}] = 1.5 * float(ds["thm22_lam_bound"].loc[idx])
    for noise, i in vec_hits:
        idx = {"noise": noise, "sigma": ds.sigma.values[i], "replicate": 0}
        ds["vec_err"].loc[{**idx, "step": 1}] = 1.01 * float(ds["thm22_vec_bound"].loc[idx])
    total = count_violations(ds, "2.2", dim=None)
    assert (int(total["lam"]), int(total["vec"]), int(total["any"])) == (3, 2, 4)
    assert int(total["n_checked"]) == ds.sizes["noise"] * ds.sizes["sigma"]
    per_noise = count_violations(ds, "2.2", dim=("sigma", "replicate"))
    assert per_noise["any"].sel(noise="gaussian") == 2
    rows = list_violations(ds, "2.2")
    found = {(r.noise, r.sigma) for r in rows.itertuples()}
    expected = {(n, ds.sigma.values[i]) for n, i in lam_hits + vec_hits}
    assert found == expected
    row = rows[(rows.noise == "gaussian") & np.isclose(rows.sigma, ds.sigma.values[10])].iloc[0]
    assert row.lam_violated and row.vec_violated
    assert {"lam_err", "lam_bound", "vec_err", "vec_bound", "eps", "certified"} <= set(rows.columns)


def test_theorem_3_1_counts_match_direct_count_and_ignore_nan():
    ds = scaling_cube(ns=(4, 8), n_eps=5, n_rep=8)
    # Plant two violations on real steps and one "violation" on a NaN step past n = 4.
    ds["lam_err"].loc[{"n": 8, "replicate": 2, "step": 7}] = 99.0
    ds["vec_err"].loc[{"n": 4, "replicate": 1, "step": 2}] = 99.0
    ds["thm31_vec_bound"].loc[{"n": 4, "step": 6}] = -1.0  # vec_err there is NaN
    mask = violation_mask(ds, "3.1")
    lam = ds["lam_err"].values > ds["thm31_lam_bound"].values * (1 + 1e-9)
    vec = ds["vec_err"].values > ds["thm31_vec_bound"].values * (1 + 1e-9)
    assert int(mask["any"].sum()) == int((lam | vec).sum())
    total = count_violations(ds, "3.1", dim=None)
    assert int(total["lam"]) == lam.sum() and int(total["vec"]) == vec.sum()
    assert int(total["n_checked"]) == int(np.isfinite(ds["vec_err"].values).sum())
    assert len(list_violations(ds, "3.1")) == int((lam | vec).sum())


def test_bounds_fall_back_to_core_formulas_when_not_stored():
    ds = figure1_cube()
    ds["vec_err"].loc[{"noise": "binary", "replicate": 0, "step": 1}] = 50.0  # above every bound
    stored = violation_mask(ds, "2.2")
    recomputed = violation_mask(ds.drop_vars(["thm22_lam_bound", "thm22_vec_bound"]), "2.2")
    xr.testing.assert_equal(stored, recomputed)
    assert int(recomputed["vec"].sum()) == ds.sizes["sigma"]


def test_success_radius_recovers_planted_outcomes():
    ds = scaling_cube(ns=(4, 8, 16), n_eps=6, n_rep=10)
    s = success(ds)
    np.testing.assert_array_equal(s.values, ds["planted_success"].values.astype(float))
    prob = success_probability(ds)
    np.testing.assert_allclose(prob["p_success"], ds["planted_success"].mean("replicate"))
    assert (prob["n_instances"] == 10).all()


def test_success_missing_instance_is_nan_and_not_counted():
    ds = scaling_cube(ns=(4, 8), n_eps=3, n_rep=5)
    ds["vec_err"].loc[{"n": 4, "replicate": 0}] = np.nan  # an unfinished instance
    s = success(ds)
    assert s.sel(n=4, replicate=0).isnull().all()
    prob = success_probability(ds)
    assert (prob["n_instances"].sel(n=4) == 4).all() and (prob["n_instances"].sel(n=8) == 5).all()


def test_success_theorem_criterion_and_radius_steps():
    ds = figure2_cube(n_rep=8)
    ds["lam_err"].loc[{"noise": "binary", "replicate": 3, "step": 4}] = 10.0
    th = success(ds, "theorem")
    bad = (ds["lam_err"] > ds["thm31_lam_bound"]) | (ds["vec_err"] > ds["thm31_vec_bound"])
    np.testing.assert_array_equal(th.values, (~bad.any("step")).values.astype(float))
    assert th.sel(noise="binary", replicate=3) == 0.0
    ds["vec_err"].loc[{"noise": "uniform", "replicate": 0, "step": 10}] = 0.9
    assert success(ds).sel(noise="uniform", replicate=0) == 0.0
    assert success(ds, steps=[1, 2, 3]).sel(noise="uniform", replicate=0) == 1.0
    assert success(ds, radius=1.0).sel(noise="uniform", replicate=0) == 1.0


def test_error_growth_matches_numpy():
    ds = figure2_cube()
    g = error_growth(ds)
    v = ds["vec_err"].transpose("noise", "replicate", "step").values.mean(1)
    np.testing.assert_allclose(g["vec_err_growth"].transpose("noise", "step"), v / v[:, :1])
    np.testing.assert_allclose(g["vec_err_mean"].transpose("noise", "step"), v)
    pooled = error_growth(ds, ["lam_err"], by=())
    lam = ds["lam_err"].mean(("noise", "replicate")).values
    np.testing.assert_allclose(pooled["lam_err_growth"], lam / lam[0])


@pytest.mark.slow
def test_aggregation_stays_lazy_on_dask_and_zarr(tmp_path):
    eager = scaling_cube(ns=(4, 8), n_eps=4, n_rep=8)
    eager.to_zarr(tmp_path / "cube.zarr", consolidated=False)
    for ds in (
        eager.chunk({"replicate": 4, "eps": 2}),
        xr.open_zarr(tmp_path / "cube.zarr", consolidated=False),
    ):
        results = {
            "stats": step_stats(ds),
            "mask": violation_mask(ds, "3.1"),
            "counts": count_violations(ds, "2.2"),
            "success": success(ds),
            "prob": success_probability(ds),
            "theorem": success(ds, "theorem"),
            "growth": error_growth(ds),
            "fallback": violation_mask(ds.drop_vars(["thm22_lam_bound", "thm22_vec_bound"])),
        }
        for name, res in results.items():
            assert _is_dask(res), f"{name} was computed eagerly"
        xr.testing.assert_allclose(results["stats"].compute(), step_stats(eager))
        xr.testing.assert_equal(results["prob"].compute(), success_probability(eager))
        xr.testing.assert_equal(results["counts"].compute(), count_violations(eager, "2.2"))


def test_errors_name_the_variable_and_reason():
    ds = figure2_cube(n_rep=3)
    with pytest.raises(ValueError, match=r"no `vec_err` variable: success"):
        success(ds.drop_vars("vec_err"))
    with pytest.raises(
        ValueError,
        match=r"criterion: expected one of \('recovery', 'value', 'theorem'\); received 'bogus'",
    ):
        success(ds, "bogus")
    with pytest.raises(ValueError, match=r"unknown theorem '4.1'"):
        violation_mask(ds, "4.1")
    with pytest.raises(ValueError, match=r"no `sigma` dimension"):
        step_stats(ds, dim="sigma")


def test_sweep_axes_ignore_storage_dims_and_work_without_axes():
    ds = figure2_cube(n_rep=3)
    ds["done"] = ("block", np.ones(4, dtype=bool))
    assert sweep_axes(ds) == ["noise"]
    bare = ds.isel(noise=0, drop=True).drop_vars("done")
    bare.attrs = {}
    assert sweep_axes(bare) == []
    assert float(success_probability(bare)["p_success"]) == 1.0
    assert int(count_violations(bare, "3.1", dim=None)["any"]) == 0
