"""Sample-size analysis of model-sweep cubes on planted cubes: the fitted N-exponent and the N
needed for success recover the planted values, with intervals that cover them."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from sroa_dist.analysis import fit_sample_exponent, sample_size_needed
from sroa_dist.analysis.moments import sample_error

NS = np.array([500, 1000, 2000, 4000, 8000, 16000, 32000, 64000])


def planted_cube(exponent=-0.5, n_half=5000.0, reps=40, seed=0) -> xr.Dataset:
    """eps = c N^exponent (lognormal scatter, one multiplicative offset per replicate curve);
    success when log N + logistic noise (scale 0.4) > log n_half: P(success) = 1/2 at n_half."""
    gen = np.random.default_rng(seed)
    shape = (2, NS.size, reps)
    offset = gen.normal(0, 0.2, (2, 1, reps))
    eps = 3.0 * NS[None, :, None] ** exponent * np.exp(offset + gen.normal(0, 0.1, shape))
    comp = np.repeat((0.5 * eps)[..., None], 3, axis=-1)
    comp[..., 1] *= 0.9
    latent = np.log(NS)[None, :, None] + gen.logistic(0, 0.4, shape)
    dims = ("method", "N", "replicate")
    ds = xr.Dataset(
        {
            "eps": (dims, eps),
            "eps_full": (dims, 0.5 * eps),
            "component_error": (dims + ("step",), comp),
            "weight_error": (dims + ("step",), 0.1 * comp),
            "success": (dims, latent > np.log(n_half)),
        },
        coords={
            "method": ["certified", "power"],
            "N": NS,
            "replicate": np.arange(reps),
            "step": [1, 2, 3],
        },
        attrs={"sroa_kind": "model"},
    )
    return ds


def test_exponent_recovered_with_covering_interval():
    ds = planted_cube(exponent=-0.5)
    fit = fit_sample_exponent(ds, "eps", n_boot=300, rng=1)
    assert fit["exponent"].dims == ("method",)
    for m in ("certified", "power"):
        f = fit.sel({"method": m})
        assert abs(float(f["exponent"]) + 0.5) < 0.03
        assert float(f["exponent_lo"]) < -0.5 < float(f["exponent_hi"])
        assert float(f["exponent_hi"]) - float(f["exponent_lo"]) < 0.15
        assert int(f["n_points"]) == NS.size * 40
    steeper = fit_sample_exponent(planted_cube(exponent=-1.0), "component_error", n_boot=100)
    assert np.allclose(steeper["exponent"], -1.0, atol=0.03)  # max over steps keeps the rate
    # N >= n_min only
    part = fit_sample_exponent(ds, "eps", n_boot=0, n_min=4000)
    assert int(part["n_points"].sel({"method": "power"})) == 5 * 40


def test_sample_size_needed_recovered_and_flagged():
    ds = planted_cube(n_half=5000.0)
    need = sample_size_needed(ds, n_boot=300, rng=2)
    for m in ("certified", "power"):
        f = need.sel({"method": m})
        assert 3500 < float(f["n_needed"]) < 7000
        assert float(f["n_needed_lo"]) < 5000 < float(f["n_needed_hi"])
        assert bool(f["in_range"]) and float(f["success_min"]) < 0.1 < 0.9 < float(f["success_max"])
        assert float(f["bracket_lo"]) < float(f["n_needed"]) < float(f["bracket_hi"])
    # complete separation between 2000 and 4000: the bracket is the grid step around it
    sharp = planted_cube(n_half=3000.0)
    sharp["success"] = sharp["N"] >= 4000
    f = sample_size_needed(sharp.transpose("method", "N", "replicate", "step"), n_boot=50)
    assert np.allclose(f["bracket_lo"], 2000) and np.allclose(f["bracket_hi"], 4000)
    assert np.all((2000 < f["n_needed"]) & (f["n_needed"] < 4000))
    # needed beyond the swept N: extrapolated and flagged, or NaN when success never varies
    far = sample_size_needed(planted_cube(n_half=1e6), n_boot=0)
    assert not bool(far["in_range"].any())


def test_unfinished_instances_are_ignored_and_bad_names_refused():
    ds = planted_cube()
    ds["component_error"][:, :, :10] = np.nan  # 10 replicates not computed yet
    err = sample_error(ds, "eps")
    assert int(err.notnull().sum()) == 2 * NS.size * 30
    assert int(fit_sample_exponent(ds, n_boot=0)["n_points"][0]) == NS.size * 30
    with pytest.raises(ValueError, match="expected one of"):
        sample_error(ds, "vec_err")
    with pytest.raises(ValueError, match="`N` dimension"):
        fit_sample_exponent(ds.isel(N=0, drop=True))
