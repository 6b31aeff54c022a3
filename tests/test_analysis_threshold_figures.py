"""Threshold-cube figures: brackets, fitted rate with its band, reference slope, normalisation."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg

from sroa_dist.analysis.threshold_figures import (
    figure_rate_normalised,
    figure_threshold_rate,
    is_threshold_cube,
    rate_fits,
    threshold_summary,
)

NS = (8, 16, 32, 64, 128)


def threshold_cube(exponents=(-0.5, 0.0), n_rep=4, rtol=0.01, seed=0) -> xr.Dataset:
    """Planted first-crossing brackets: ε* = 0.4 (n − 1)^k per family, log-normal spread 2 %."""
    rng = np.random.default_rng(seed)
    fams = ["coherent-tilt", "gaussian"][: len(exponents)]
    ns = np.array(NS)
    star = np.stack(
        [
            0.4 * (ns[:, None] - 1.0) ** k * np.exp(0.02 * rng.standard_normal((ns.size, n_rep)))
            for k in exponents
        ]
    )
    # A bracket of relative width rtol placed at random around the planted value.
    u = rng.random(star.shape)
    lo = star / (1 + rtol) ** u
    hi = lo * (1 + rtol)
    dims = ("noise", "n", "replicate")
    coords = {"noise": np.array(fams, dtype=object), "n": ns, "replicate": np.arange(n_rep)}
    return xr.Dataset(
        {
            "eps_lo": (dims, lo),
            "eps_hi": (dims, hi),
            "eps_star": (dims, hi),
            "solve_time": (dims, np.ones_like(lo)),
        },
        coords=coords,
        attrs={"setting_p": 3, "setting_criterion": "value", "setting_level": 0.5},
    )


def test_rate_fits_recover_planted_exponents_per_family():
    ds = threshold_cube()
    assert is_threshold_cube(ds)
    fits = rate_fits(ds)
    tilt = fits[(("noise", "coherent-tilt"),)]
    flat = fits[(("noise", "gaussian"),)]
    assert tilt.exponent_lo <= -0.5 <= tilt.exponent_hi
    assert flat.exponent_lo <= 0.0 <= flat.exponent_hi
    assert tilt.reference == pytest.approx(-0.5)
    rows = threshold_summary(ds)
    assert {r["noise"] for r in rows} == {"coherent-tilt", "gaussian"}


def test_rate_figure_draws_brackets_fit_band_and_reference(tmp_path):
    ds = threshold_cube()
    fig = figure_threshold_rate(ds)
    FigureCanvasAgg(fig)
    fig.savefig(tmp_path / "rate.png")
    ax = fig.axes[0]
    labels = [ln.get_label() for ln in ax.lines]
    assert any(lbl.startswith("noise=coherent-tilt: k = ") for lbl in labels)
    assert any("Theorem 3.1" in lbl for lbl in labels)
    # Every closed bracket is one vertical bar: 2 families × 5 sizes × 4 replicates.
    bars = sum(len(c.get_segments()) for c in ax.collections if hasattr(c, "get_segments"))
    assert bars >= 2 * len(NS) * 4
    lo, hi = ds["eps_lo"].min().item(), ds["eps_hi"].max().item()
    ymin, ymax = ax.get_ylim()
    assert ymin <= lo and ymax >= hi and ymin > 0  # log axis holds every bracket


def test_rate_normalised_is_flat_at_the_theorem_rate(tmp_path):
    ds = threshold_cube(exponents=(-0.5,))
    fig = figure_rate_normalised(ds)
    fig.savefig(tmp_path / "norm.png")
    x, y = fig.axes[0].lines[0].get_data()
    assert np.ptp(np.log(y)) < 0.1  # flat within the 2 % spread and the brackets


def test_not_a_threshold_cube_is_refused():
    ds = threshold_cube().drop_vars("eps_lo")
    with pytest.raises(ValueError, match="threshold cube needs variables"):
        rate_fits(ds)
