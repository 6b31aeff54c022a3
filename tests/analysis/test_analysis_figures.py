"""Figures: panels, labels, titles and files checked programmatically (never pixels)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from sroa_dist.analysis import (
    FIGURES,
    build_figures,
    estimate_thresholds,
    figure1,
    figure2,
    figure_step_accumulation,
    figure_success_heatmap,
    figure_threshold_scaling,
    fit_exponent,
    plot_cube,
    supported_figures,
)
from tests.support.analysis_cubes import figure1_cube, figure2_cube, scaling_cube


def _titles(fig: Figure) -> list[str]:
    return [ax.get_title() for ax in fig.axes]


def test_supported_figures_follow_the_axes():
    assert supported_figures(figure1_cube(n_sigma=5)) == ["figure1"]
    assert supported_figures(figure2_cube(n_rep=3)) == ["figure2"]
    assert supported_figures(scaling_cube(ns=(4, 8), n_eps=3, n_rep=3)) == [
        "figure1",
        "figure2",
        "step_accumulation",
        "success_heatmap",
        "threshold_scaling",
    ]
    one_n = scaling_cube(ns=(4,), n_eps=3, n_rep=3)
    assert "success_heatmap" not in supported_figures(one_n)


def test_figure1_panels_bounds_and_violations_in_titles():
    ds = figure1_cube()
    hit = {"noise": "uniform", "sigma": ds.sigma.values[7], "replicate": 0, "step": 1}
    ds["vec_err"].loc[hit] = 1.5
    fig = figure1(ds)
    assert len(fig.axes) == 6  # 3 noise models × (λ error, vector error)
    titles = _titles(fig)
    for noise, row in zip(("binary", "uniform", "gaussian"), (0, 2, 4), strict=True):
        assert titles[row].startswith(f"{noise}: λ error")
        assert titles[row + 1].startswith(f"{noise}: vector error")
    assert "1/40 above bound" in titles[3] and "0/40 above bound" in titles[2]
    for ax in fig.axes:
        assert "E" in ax.get_xlabel() and "operator norm" in ax.get_xlabel()
        assert ax.get_xscale() == "log"  # σ spans three decades
        labels = ax.get_legend_handles_labels()[1]
        assert "instance" in labels and any("Theorem 2.2 bound" in s for s in labels)
        line = ax.get_lines()[0]  # the bound is a line over ‖E‖
        assert len(line.get_xdata()) > 10
    assert "violation" in fig.axes[3].get_legend_handles_labels()[1]
    lam_line = fig.axes[0].get_lines()[0]
    np.testing.assert_allclose(lam_line.get_ydata(), lam_line.get_xdata())  # lam bound = ε
    x, y = fig.axes[1].get_lines()[0].get_data()
    np.testing.assert_allclose(y, 10 * (x + x**2))  # λ = 1


def test_figure1_without_noise_axis_has_one_row():
    ds = figure1_cube(n_sigma=6).sel(noise="binary", drop=True)
    ds.attrs = {}
    fig = figure1(ds)
    assert len(fig.axes) == 2 and _titles(fig)[0].startswith("λ error")


def test_figure2_median_and_quantile_band_per_step():
    ds = figure2_cube()
    fig = figure2(ds)
    assert len(fig.axes) == 6
    ax = fig.axes[3]  # uniform, vector error
    assert ax.get_title().startswith("uniform: vector error (50 replicates)")
    assert "median, 5%–95% band" in ax.get_title()
    assert ax.get_xlabel() == "SROA iteration i" and "v" in ax.get_ylabel()
    container = ax.containers[0]
    x, y = container.lines[0].get_data()
    v = ds["vec_err"].sel(noise="uniform").transpose("replicate", "step").values
    np.testing.assert_allclose(x, np.arange(1, 11))
    np.testing.assert_allclose(y, np.median(v, axis=0))
    segs = container.lines[2][0].get_segments()
    lo, hi = np.quantile(v, [0.05, 0.95], axis=0)
    np.testing.assert_allclose([s[0, 1] for s in segs], lo)
    np.testing.assert_allclose([s[1, 1] for s in segs], hi)
    # Errors are non-negative, so no bar may reach below zero (a mean ± 2 std bar did).
    for a in fig.axes:
        for c in a.containers:
            assert min(s[0, 1] for s in c.lines[2][0].get_segments()) >= 0
    mean_x, mean_y = ax.lines[-1].get_data()
    np.testing.assert_allclose(mean_y, v.mean(0))


def test_figure2_titles_do_not_overlap(tmp_path):
    ds = scaling_cube(ns=(4, 8), n_eps=2, n_rep=4)
    fig = figure2(ds, max_series=1)  # pooled: the longest titles
    canvas = FigureCanvasAgg(fig)
    fig.savefig(tmp_path / "f.png")
    renderer = canvas.get_renderer()
    boxes = [ax.title.get_window_extent(renderer) for ax in fig.axes]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), "panel titles overlap"


def test_step_accumulation_lines_per_n_at_fixed_eps():
    ds = scaling_cube(ns=(4, 8, 16), n_eps=5, n_rep=6)
    eps_axis = ds["eps"].values
    fig = figure_step_accumulation(ds, eps=[float(eps_axis[2])])
    n_rows = ds.sizes["noise"] if "noise" in ds.dims else 1
    assert len(fig.axes) == n_rows
    ax = fig.axes[0]
    assert [ln.get_label() for ln in ax.lines] == ["n = 4", "n = 8", "n = 16"]
    sel = {"noise": ds["noise"].values[0]} if "noise" in ds.dims else {}
    for line, n in zip(ax.lines, (4, 8, 16), strict=True):
        v = ds["lam_err"].sel(sel).sel(n=n, eps=eps_axis[2]).transpose("replicate", "step")
        # Steps past n have no values: their median is NaN and they are not drawn.
        cols = [c[np.isfinite(c)] for c in v.values.T]
        want = np.array([np.median(c) if c.size else np.nan for c in cols])
        x, y = line.get_data()
        np.testing.assert_allclose(y, want[np.isfinite(want)])
        assert x.max() <= n
    with pytest.raises(ValueError, match="not on the cube's eps axis"):
        figure_step_accumulation(ds, eps=[123.0])
    with pytest.raises(ValueError, match="needs an `n` axis"):
        figure_step_accumulation(figure2_cube(n_rep=3))


def test_figure2_series_for_extra_axes_and_pooling():
    ds = scaling_cube(ns=(4, 8), n_eps=3, n_rep=4)
    fig = figure2(ds, max_series=6)  # 2 n × 3 ε = 6 series
    assert len(fig.axes) == 2 and len(fig.axes[0].containers) == 6
    pooled = figure2(ds, max_series=4)
    assert len(pooled.axes[0].containers) == 1
    assert "pooled over n, eps" in pooled.axes[0].get_title()


def test_scaling_figures():
    ds = scaling_cube(n_rep=16)
    thr = estimate_thresholds(ds, n_boot=30)
    heat = figure_success_heatmap(ds, thresholds=thr)
    assert len(heat.axes) == 2  # one heat map + its colorbar
    ax, cbar = heat.axes
    assert ax.get_xlabel().startswith("n") and ax.get_ylabel().startswith("ε = ‖E‖")
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert cbar.get_ylabel() == "P(success)"
    assert "vec_err ≤ 0.3" in ax.get_title()
    scale = figure_threshold_scaling(thr, fit_exponent(thr, p=3))
    (ax,) = scale.axes
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    labels = ax.get_legend_handles_labels()[1]
    assert any("fitted k = -0.5" in s or "fitted k = -0.4" in s for s in labels), labels
    assert any("Theorem 3.1" in s and "0.5" in s for s in labels)
    assert any("power method" in s for s in labels)


def test_heatmap_panels_per_noise_model():
    cubes = [scaling_cube(ns=(4, 8), n_eps=4, n_rep=4, seed=s) for s in (1, 2)]
    ds = xr.concat(
        [c.expand_dims(noise=[m]) for c, m in zip(cubes, ("a", "b"), strict=True)], "noise"
    )
    fig = figure_success_heatmap(ds)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert len(titles) == 2 and titles[0].startswith("noise=a")


@pytest.mark.parametrize(
    ("cube", "names", "formats"),
    [
        (lambda: figure2_cube(n_rep=5), ["figure2"], ("png", "svg")),
        (
            lambda: scaling_cube(ns=(4, 8, 16), n_eps=6, n_rep=8),
            ["figure1", "figure2", "step_accumulation", "success_heatmap", "threshold_scaling"],
            ("png",),
        ),
    ],
)
@pytest.mark.slow
def test_plot_cube_writes_the_supported_figures(tmp_path, cube, names, formats):
    paths = plot_cube(cube(), tmp_path / "figs", formats=formats, n_boot=20)
    assert [p.name for p in paths] == [f"{n}.{f}" for n in names for f in formats]
    for p in paths:
        assert p.stat().st_size > 1000
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        else:
            assert b"<svg" in p.read_bytes()[:2000]


def test_figures_from_a_lazy_zarr_cube(tmp_path):
    scaling_cube(ns=(4, 8), n_eps=4, n_rep=6).to_zarr(tmp_path / "c.zarr", consolidated=False)
    ds = xr.open_zarr(tmp_path / "c.zarr", consolidated=False)
    assert ds["vec_err"].chunks is not None
    figures = build_figures(ds, n_boot=10)
    assert list(figures) == [
        "figure1",
        "figure2",
        "step_accumulation",
        "success_heatmap",
        "threshold_scaling",
    ]
    assert all(isinstance(f, Figure) and f.axes for f in figures.values())


def test_plot_cube_rejects_unknown_format(tmp_path):
    with pytest.raises(ValueError, match=r"unknown figure format.*'bmpx'"):
        plot_cube(figure2_cube(n_rep=3), tmp_path, formats=("bmpx",))


def test_every_figure_states_completeness_and_the_criterion():
    ds = scaling_cube(ns=(4, 8), n_eps=5, n_rep=6)
    figs = build_figures(ds, criterion="value", c=2.0, n_boot=10)
    # Every figure of a tensor cube (the threshold-cube figures need a [threshold] cube).
    assert list(figs) == [f for f in FIGURES if f not in ("threshold_rate", "rate_normalised")]
    for fig in figs.values():
        assert fig.get_suptitle() == "complete: 60 instances"
    assert "success: every step's |λ̂ − λ| ≤ 2·ε" in figs["threshold_scaling"].axes[0].get_title()
    assert figs["success_heatmap"].axes[0].get_title().endswith("P(every step's |λ̂ − λ| ≤ 2·ε)")
    with pytest.raises(ValueError, match=r"'recovery' takes no option.*'c'"):
        figure_success_heatmap(ds, "recovery", c=2.0)


# ---- what a reader sees: plain tick labels, and "no data" where a panel has none ----------


def _tick_texts(fig) -> list[str]:
    """Every tick label drawn, major and minor, on every axis of ``fig``."""
    FigureCanvasAgg(fig).draw()
    out = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            out += [t.get_text() for t in axis.get_majorticklabels() + axis.get_minorticklabels()]
    return [t for t in out if t]


def test_log_axes_label_plain_numbers():
    """`2×10¹`-style labels (Matplotlib's default on short log axes) are gone: 20, 0.2, 100."""
    from sroa_dist.analysis import compare_prediction, figure_prediction, predict_threshold
    from sroa_dist.analysis.threshold import estimate_thresholds

    ds = scaling_cube(ns=(4, 8, 16, 32, 64, 128), n_eps=6, n_rep=6)
    thr = estimate_thresholds(ds, n_boot=0)
    pred = predict_threshold(3, [8, 16, 32, 64, 128, 1024], c=0.5)
    cmp = compare_prediction([32, 64], [0.15, 0.105], [0.152, 0.107], p=3, prediction=pred)
    for fig in (figure1(ds), figure_threshold_scaling(thr, p=3), figure_prediction([cmp])):
        texts = _tick_texts(fig)
        assert texts
        assert not [t for t in texts if "times" in t or "^" in t or "×" in t], texts


def test_a_masked_panel_says_no_data_and_why(tmp_path):
    """A store read with damaged="mask" whose damage covers a whole noise family: its panels
    showed bare axes from −0.04 to 0.04; now "no data" and the masked block, no ticks."""
    from sroa_dist.sweep import open_results
    from tests.support.analysis_cubes import partial_store
    from tests.support.helpers import SMOKE, chunk_file

    store = tmp_path / "s.zarr"
    partial_store(store, SMOKE / "figure1.toml", chunks=(1, 10, 2), done=(0, 1))
    chunk_file(store, "vec_err", 1).write_bytes(b"garbage")
    ds = open_results(store, damaged="mask")
    fig = figure1(ds)
    empty = [ax for ax in fig.axes if any(t.get_text().startswith("no data") for t in ax.texts)]
    assert len(empty) == 2  # the masked family's two panels, not the other's
    for ax in empty:
        (text,) = [t.get_text() for t in ax.texts]
        assert text == "no data\n(1 damaged block masked)"
        assert not ax.get_yticks().size and ax.get_legend() is None


def test_no_threshold_leaves_no_zero_ticks():
    """Success that never crosses 1/2: the panel says so without a y scale of ±0.04."""
    from sroa_dist.analysis.threshold import estimate_thresholds

    ds = scaling_cube(ns=(4, 8), n_eps=4, n_rep=4, c=50.0)  # every ε passes
    fig = figure_threshold_scaling(estimate_thresholds(ds, n_boot=0), p=3)
    ax = fig.axes[0]
    assert any("NO THRESHOLD" in t.get_text() for t in ax.texts)
    assert not ax.get_yticks().size and ax.get_legend() is None


def test_a_size_without_results_says_no_data_on_the_heat_map():
    ds = scaling_cube(ns=(4, 8), n_eps=4, n_rep=3)
    for v in ("vec_err", "lam_err"):
        ds[v] = ds[v].where(ds["n"] != 8)  # as a masked or failed block leaves it
    ax = figure_success_heatmap(ds).axes[0]
    (text,) = [t for t in ax.texts if t.get_text().startswith("no data")]
    assert text.get_position()[0] == 8  # in the column of the size without results
