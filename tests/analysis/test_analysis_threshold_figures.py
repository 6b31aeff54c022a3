"""Threshold-cube figures: brackets, fitted rate with its band, reference slope, normalisation."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg

from sroa_dist.analysis.threshold_figures import (
    figure_rate_normalised,
    figure_threshold_rate,
    rate_fits,
    threshold_summary,
    threshold_table,
)

NS = (8, 16, 32, 64, 128)


def threshold_cube(exponents=(-0.5, 0.0), n_rep=4, rtol=0.01, seed=0, ns=NS) -> xr.Dataset:
    """Planted first-crossing brackets: ε* = 0.4 (n − 1)^k per family, log-normal spread 2 %."""
    rng = np.random.default_rng(seed)
    fams = ["coherent-tilt", "gaussian"][: len(exponents)]
    ns = np.array(ns)
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
        attrs={
            "sroa_kind": "threshold",
            "setting_p": 3,
            "setting_criterion": "value",
            "setting_level": 0.5,
        },
    )


def test_rate_fits_recover_planted_exponents_per_family():
    ds = threshold_cube()
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


def _rendered(fig):
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _labelled_ticks(ax, axis="y") -> list[str]:
    """Tick labels a reader sees on one axis: non-empty and inside the view."""
    ax_ = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
    ticks = ax_.get_majorticklocs().tolist() + ax_.get_minorticklocs().tolist()
    labels = [t.get_text() for t in ax_.get_majorticklabels() + ax_.get_minorticklabels()]
    return [lbl for v, lbl in zip(ticks, labels, strict=True) if lbl and lo <= v <= hi]


@pytest.mark.parametrize("ns", [(8, 16), (8, 12, 16), (4, 6, 8, 10, 12, 16)])
def test_the_legend_never_covers_the_data(ns):
    """With any number of sizes the legend sits outside the axes (it covered the n = 16
    brackets of a 2-size cube)."""
    for make in (figure_threshold_rate, figure_rate_normalised):
        fig = make(threshold_cube(ns=ns))
        renderer = _rendered(fig)
        ax = fig.axes[0]
        legend = ax.get_legend().get_window_extent(renderer)
        assert not legend.overlaps(ax.get_window_extent(renderer)), make.__name__


def test_two_sizes_still_show_every_bracket_and_say_why_no_rate():
    ds = threshold_cube(ns=(8, 16))
    fig = figure_threshold_rate(ds)
    _rendered(fig)
    ax = fig.axes[0]
    labels = [ln.get_label() for ln in ax.lines]
    assert any("no rate fit" in lbl and "at least 3 sizes" in lbl for lbl in labels)
    ymin, ymax = ax.get_ylim()
    assert ymin <= ds["eps_lo"].min() and ds["eps_hi"].max() <= ymax
    assert len(_labelled_ticks(ax)) >= 3


def test_rate_normalised_shows_the_medians_with_two_sizes():
    """It was empty (a y-axis of ±0.04) when no rate could be fitted."""
    ds = threshold_cube(exponents=(-0.5,), ns=(8, 16))
    fig = figure_rate_normalised(ds)
    _rendered(fig)
    ax = fig.axes[0]
    x, y = ax.lines[0].get_data()
    assert list(x.round()) == [8, 16] and np.all(y > 0)
    expect = (
        np.sqrt(np.array([7.0, 15.0]))
        * np.sqrt(ds["eps_lo"] * ds["eps_hi"]).median("replicate").values.ravel()
    )
    assert np.allclose(y, expect)
    ymin, ymax = ax.get_ylim()
    assert ymin < y.min() and y.max() < ymax and ymin > 0


def test_a_short_log_axis_labels_at_least_three_ticks():
    """Three sizes over less than a decade in ε* had one labelled tick."""
    fig = figure_threshold_rate(threshold_cube(exponents=(-0.2,), ns=(8, 12, 16)))
    _rendered(fig)
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    assert hi / lo < 10  # the case at hand: under a decade
    assert len(_labelled_ticks(ax)) >= 3


def test_y_limits_follow_the_brackets_not_the_band():
    """With 3 sizes the interval of k spans decades; the brackets must stay readable."""
    ds = threshold_cube(ns=(8, 12, 16))
    bump = xr.where(ds["n"] == 12, 1.6, 1.0)  # sizes off a line: a wide interval on 1 dof
    ds = ds.assign(eps_lo=ds["eps_lo"] * bump, eps_hi=ds["eps_hi"] * bump)
    fig = figure_threshold_rate(ds)
    _rendered(fig)
    ymin, ymax = fig.axes[0].get_ylim()
    closed = ds["eps_lo"].where(ds["eps_lo"] > 0)
    assert ymin >= float(closed.min()) / 1.3 and ymax <= float(ds["eps_hi"].max()) * 1.3


def test_the_table_puts_the_reason_for_no_fit_in_its_own_column():
    """The "need at least 3 sizes" message sat in the `censored` column."""
    header, rows = threshold_table(threshold_cube(ns=(8, 16)))
    assert header[-2:] == ["censored", "note"]
    for row in rows:
        cells = dict(zip(header, row, strict=True))
        assert cells["censored"] == "–" and cells[header[1]] == "no fit"
        assert "at least 3 sizes" in cells["note"]
    header, rows = threshold_table(threshold_cube())
    assert all(dict(zip(header, r, strict=True))["censored"] == "0" for r in rows)
    assert all(r[-1] == "" for r in rows)
