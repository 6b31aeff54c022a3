"""Honest reports: completeness of a cube stated in reports, figure titles and the CLI; partial
and all-failed real stores; no numpy warnings reach the user on degenerate cubes."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import xarray as xr

from sroa_dist.analysis import (
    IncompleteCubeWarning,
    build_figures,
    completeness,
    figure2,
    figure_success_heatmap,
    plot_cube,
    write_report,
)
from sroa_dist.sweep.store.prepare import store_status
from sroa_dist.sweep.store.read import open_results
from tests.support.analysis_cubes import (
    family_cube,
    figure1_cube,
    figure2_cube,
    partial_store,
    scaling_cube,
)
from tests.support.helpers import SMOKE, run_cli

RESULTS = ("vec_err", "lam_err", "lam_hat")


def _blank(ds: xr.Dataset, where: xr.DataArray) -> xr.Dataset:
    """Instances selected by ``where`` without results, as an unfinished block leaves them."""
    return ds.assign({v: ds[v].where(~where) for v in RESULTS})


def _suptitle(fig) -> str:
    """The figure title with line wrapping undone."""
    return " ".join(fig.get_suptitle().split())


@pytest.fixture(scope="module")
def killed_store(tmp_path_factory):
    """figure-1 smoke sweep (noise 2 × sigma 10 × 2 replicates), one block per σ value, killed
    part-way: blocks 0–5 done, block 6 failed, blocks 7–9 never run."""
    path = tmp_path_factory.mktemp("killed") / "cube.zarr"
    partial_store(
        path, SMOKE / "figure1.toml", ["replicates=2"], chunks=(2, 1, 2), done=range(6), failed=[6]
    )
    return path


def test_completeness_of_a_synthetic_cube_by_hand():
    ds = scaling_cube(ns=(4, 8), n_eps=5, n_rep=4)
    eps = ds["eps"].values
    gone = ds["eps"].isin(eps[3:]) | (
        (ds["n"] == 4) & (ds["eps"] == eps[0]) & (ds["replicate"] == 3)
    )
    st = completeness(_blank(ds, gone))
    assert (st.n_instances, st.instances_done) == (40, 40 - 16 - 1)
    assert st.blocks_total is None and st.blocks_missing is None and not st.complete
    assert st.missing_values == {"eps": tuple(eps[3:].tolist())}
    assert st.partial_values == {"n": (4, 8), "eps": (eps[0],)}
    assert st.replicates == (3, 4) and st.replicates_text() == "3–4 of 4 replicates"
    assert st.describe() == (
        "incomplete: 23/40 instances; 2 of 2 n values partial, "
        "2 of 5 eps values missing, 1 of 5 eps values partial"
    )
    full = completeness(ds)
    assert full.complete and full.describe() == "complete: 40 instances"
    assert full.replicates_text() == "4 replicates"


@pytest.mark.slow
def test_completeness_of_a_killed_store_matches_the_store_status(killed_store):
    ds = open_results(killed_store)
    st, status = completeness(ds), store_status(killed_store)
    assert (st.blocks_total, st.blocks_done, st.blocks_failed) == (10, 6, 1)
    assert st.blocks_missing == 3 and dict(st.failures) == status.failed
    assert st.failures == {6: "ValueError: planted failure of block 6"}
    sigma = ds["sigma"].values.tolist()
    assert st.missing_values == {"sigma": tuple(sigma[6:])}
    assert st.partial_values == {"noise": ("binary", "gaussian")}  # each lacks 4 σ values
    assert st.instances_done == status.n_instances_done == 24
    assert st.describe() == (
        "incomplete: 6/10 blocks done, 1 failed, 3 not run, 24/40 instances; "
        "2 of 2 noise values partial, 4 of 10 sigma values missing"
    )


@pytest.mark.slow
def test_report_of_a_killed_store_says_so_first_and_in_every_figure(killed_store, tmp_path):
    ds = open_results(killed_store)
    with pytest.warns(IncompleteCubeWarning, match=r"6/10 blocks done, 1 failed, 3 not run"):
        paths = write_report(ds, tmp_path / "r.md", formats=("md",), n_boot=0)
    md = paths[0].read_text(encoding="utf-8")
    head = md.split("## Instances")[0]
    assert "WARNING: INCOMPLETE CUBE (6/10 blocks done, 1 failed, 3 not run" in head
    assert "`sigma`: 4 of 10 values without results: 0.07, 0.08, 0.09, 0.1" in head
    assert "| 6 | ValueError: planted failure of block 6 |" in head
    assert "Instances with results: 24 of 40" in md
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IncompleteCubeWarning)
        figs = build_figures(ds)
    assert list(figs) == ["figure1"]
    title = _suptitle(figs["figure1"])
    assert title.startswith("Incomplete: 6/10 blocks done, 1 failed, 3 not run")
    assert "4 of 10 sigma values missing" in title


@pytest.mark.slow
def test_all_failed_store_gets_a_report_listing_the_failures(tmp_path):
    path = tmp_path / "failed.zarr"
    layout = partial_store(
        path, SMOKE / "figure2.toml", ["replicates=2"], chunks=(1, 1), failed=range(6)
    )
    assert layout.n_blocks == 6
    ds = open_results(path)
    st = completeness(ds)
    assert st.empty and st.blocks_failed == 6 and st.replicates_text() == "no replicates"
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        paths = write_report(ds, tmp_path / "rep", n_boot=20)
        assert plot_cube(ds, tmp_path / "figs") == []
    assert {w.category for w in rec} == {IncompleteCubeWarning}
    assert [p.suffix for p in paths] == [".md", ".html"]  # no figures of nothing
    md = paths[0].read_text(encoding="utf-8")
    assert "WARNING: NO RESULTS (0/6 blocks done, 6 failed, 0 not run" in md
    assert "every block failed" in md
    for b in range(6):
        assert f"| {b} | ValueError: planted failure of block {b} |" in md
    assert "## Instances" not in md and "## Provenance" in md


def test_figure2_titles_count_replicates_and_pooled_values_present():
    ds = figure2_cube(n_rep=4, n_steps=3)
    ds = _blank(ds, (ds["noise"] == "binary") & (ds["replicate"] == 3))
    # Titles wrap to the panel's width: compare them as one line.
    titles = [" ".join(ax.get_title().split()) for ax in figure2(ds).axes]
    assert any(t.startswith("binary: λ error (3 of 4 replicates)") for t in titles), titles
    assert any(t.startswith("uniform: λ error (4 replicates)") for t in titles), titles
    # More than max_series σ values: pooled, and the title says how many have results.
    many = figure2_cube(n_rep=3, n_steps=2).expand_dims(sigma=np.linspace(0.01, 0.1, 10))
    many = _blank(many, many["sigma"] > 0.075)
    fig = figure2(many)
    title = " ".join(fig.axes[0].get_title().split())
    assert "pooled over sigma (7 of 10 values have results)" in title
    assert _suptitle(fig) == (
        "Incomplete: 63/90 instances; 3 of 3 noise values partial, 3 of 10 sigma values missing"
    )


def test_heatmap_panel_without_results_says_so():
    ds = family_cube(n_rep=4)
    ds = _blank(ds, ds["noise"] == "coherent-tilt")
    fig = figure_success_heatmap(ds, "value", c=2.0)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert "noise=gaussian\nP(every step's |λ̂ − λ| ≤ 2·ε)" in titles
    assert "noise=coherent-tilt, NO RESULTS\nP(every step's |λ̂ − λ| ≤ 2·ε)" in titles
    assert "2 of 2 noise values" not in _suptitle(fig)
    assert "1 of 2 noise values missing" in _suptitle(fig)


def _degenerate_cubes():
    ds = scaling_cube(ns=(4, 8), n_eps=6, n_rep=5)
    eps = ds["eps"].values
    zeros = ds.assign(lam_err=ds["lam_err"] * 0, vec_err=ds["vec_err"] * 0)
    f1 = figure1_cube(n_sigma=5)
    f1["eps"][:] = 0.0
    return {
        "no results": _blank(ds, xr.ones_like(ds["eps"], dtype=bool)),
        "one eps level": _blank(ds, ds["eps"] != eps[2]),
        "zero errors": zeros,
        "one replicate": scaling_cube(ns=(4, 8), n_eps=6, n_rep=1),
        "zero norms": f1,
        "figure2, one replicate": figure2_cube(n_rep=1, n_steps=3),
        "eps axis from 0": ds.assign_coords(eps=[0.0, *eps[1:]]),
    }


@pytest.mark.parametrize("name", list(_degenerate_cubes()))
@pytest.mark.slow
def test_no_numeric_warning_reaches_the_user(name, tmp_path):
    """Degenerate cubes, dask-backed from real zarr stores as ``open_results`` gives them.

    Before: RuntimeWarnings 'invalid value encountered in divide' from dask tasks, 'divide by
    zero in log' from the heat map at ε = 0, and a matplotlib ValueError ('Data cannot be
    log-scaled') from a threshold plot without thresholds.
    """
    store = tmp_path / "cube.zarr"
    ds = _degenerate_cubes()[name]
    # Several chunks per axis, so dask tasks see empty and all-NaN chunks.
    ds.chunk({d: 2 for d in ds.dims if d not in ("step", "replicate")}).to_zarr(
        store, consolidated=False
    )
    lazy = xr.open_zarr(store, consolidated=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", IncompleteCubeWarning)  # the one warning we do raise
        write_report(lazy, tmp_path / "r", n_boot=20)


@pytest.mark.slow
def test_cli_report_and_plot_state_completeness_and_strict_exits_1(killed_store, tmp_path):
    out = str(tmp_path / "rep" / "r")
    proc = run_cli("report", str(killed_store), "--out", out, "--format", "md", check=False)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"WARNING: .*cube\.zarr: incomplete: 6/10 blocks done, 1 failed", proc.stderr)
    assert "block 6: ValueError: planted failure of block 6" in proc.stderr
    assert "Traceback" not in proc.stderr and "IncompleteCubeWarning" not in proc.stderr
    strict = run_cli(
        "plot", str(killed_store), "--out", str(tmp_path / "f"), "--strict", check=False
    )
    assert strict.returncode == 1 and "(--strict: exit 1)" in strict.stderr
    assert (tmp_path / "f" / "figure1.png").exists()  # written all the same
    strict = run_cli("report", str(killed_store), "--out", out, "--strict", check=False)
    assert strict.returncode == 1


@pytest.mark.slow
def test_cli_strict_passes_a_complete_store(tmp_path):
    path = tmp_path / "done.zarr"
    partial_store(
        path,
        SMOKE / "figure1.toml",
        ["replicates=2", "noise.model=['gaussian']"],
        chunks=(1, 5, 2),
        done=range(2),
    )
    proc = run_cli("plot", str(path), "--out", str(tmp_path / "f"), "--strict", check=False)
    assert proc.returncode == 0, proc.stderr
    assert "complete: 2/2 blocks, 20 instances" in proc.stderr and "WARNING" not in proc.stderr
