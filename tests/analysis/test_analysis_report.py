"""Reports: the numbers (checked against direct computation), embedded figures, provenance."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sroa_dist.analysis import summarize, write_report
from tests.support.analysis_cubes import (
    PROVENANCE,
    family_cube,
    figure1_cube,
    figure2_cube,
    scaling_cube,
)


def test_summary_numbers_match_direct_computation():
    ds = figure2_cube(n_rep=20)
    ds["vec_err"].loc[{"noise": "binary", "replicate": 4, "step": 2}] = 5.0
    s = summarize(ds, n_boot=0)
    cert, ran = ds["certified"].values, np.isfinite(ds["vec_err"].values)
    assert s["certified_fraction"] == (cert & ran).sum() / ran.sum()
    assert s["all_certified_fraction"] == cert.all(-1).mean()
    assert s["eps_certified_fraction"] == ds["eps_certified"].values.mean()
    assert s["n_instances"] == s["n_planned"] == 60
    assert s["violations"]["3.1"]["vec"] == 1 and s["violations"]["2.2"]["any"] == 0
    assert s["success_fraction"]["recovery"] == 59 / 60
    assert s["thresholds"] == {} and s["growth"] is not None
    assert s["provenance"] == PROVENANCE | {"sigma": 0.01}


@pytest.mark.slow
def test_uncertified_steps_report_how_often_a_second_start_set_agreed(tmp_path):
    ds = figure2_cube(n_rep=20)
    assert summarize(ds, n_boot=0)["confirmed_fraction"] is None  # a cube from before
    rng = np.random.default_rng(5)
    ds["confirmed"] = ds["certified"].dims, rng.random(ds["certified"].shape) < 0.7
    s = summarize(ds, n_boot=0)
    cert, ran = ds["certified"].values, np.isfinite(ds["vec_err"].values)
    uncertified = ran & ~cert
    want = (ds["confirmed"].values & uncertified).sum() / uncertified.sum()
    assert 0 < want < 1 and s["confirmed_fraction"] == want
    md = write_report(ds, tmp_path / "r.md", formats=("md",), n_boot=0)[0].read_text("utf-8")
    assert f"(`confirmed`; evidence, not a certificate): {100 * want:.1f} %" in md


@pytest.mark.slow
def test_markdown_and_html_report_with_figures(tmp_path):
    ds = figure1_cube(n_sigma=10)
    ds["lam_err"].loc[{"noise": "gaussian", "sigma": ds.sigma.values[2]}] = 1.0
    paths = write_report(ds, tmp_path / "out" / "report.md", n_boot=0)
    md_path, html_path, fig = paths
    assert (md_path.name, html_path.name) == ("report.md", "report.html")
    assert fig == tmp_path / "out" / "report_figures" / "figure1.png" and fig.exists()
    md = md_path.read_text(encoding="utf-8")
    cert = ds["certified"].values.mean()
    assert f"Certified steps (variable `certified`): {100 * cert:.1f} %" in md
    assert "Instances with results: 30 of 30" in md
    row = re.search(r"\| Theorem 2\.2 .*? \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|", md)
    assert row and row.groups() == ("1", "0", "1", "30")
    assert "| gaussian |" in md  # the offending instance's coordinates are listed
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert links == ["report_figures/figure1.png"]
    assert all((md_path.parent / link).exists() for link in links)
    for key in ("sroa_dist_version", "git_commit", "created", "history"):
        assert key in md
    assert '```toml\nname = "synthetic"' in md
    html = html_path.read_text(encoding="utf-8")
    assert html.count('src="data:image/png;base64,') == 1 and "<table>" in html
    assert "Error growth" not in md  # one step: nothing to grow


@pytest.mark.slow
def test_scaling_report_has_thresholds_and_exponents(tmp_path):
    ds = scaling_cube(ns=(4, 8, 16), n_eps=8, n_rep=12)
    paths = write_report(ds, tmp_path / "scaling", formats=("md",), n_boot=30)
    assert [p.name for p in paths] == [
        "scaling.md",
        "figure1.png",
        "figure2.png",
        "step_accumulation.png",
        "success_heatmap.png",
        "threshold_scaling.png",
    ]
    md = paths[0].read_text(encoding="utf-8")
    assert "## Tolerable perturbation vs n" in md and "## Error growth over deflation" in md
    ex = summarize(ds, n_boot=30)["exponents"]["recovery"]
    assert f"| recovery | {float(ex['exponent']):.4g} | {float(ex['exponent_lo']):.4g} |" in md
    assert "| -0.5 | -1 |" in md  # references −1/(p−1) with p = 3 from attrs, and −1


@pytest.mark.slow
def test_report_without_attrs_and_html_only(tmp_path):
    ds = figure2_cube(n_rep=4)
    ds.attrs = {}
    paths = write_report(ds, tmp_path / "r.html", formats=("html",), n_boot=0)
    assert paths[0].name == "r.html"
    html = paths[0].read_text(encoding="utf-8")
    assert "no provenance attributes" in html and "Error growth" in html


def test_report_rejects_unknown_format(tmp_path):
    with pytest.raises(ValueError, match=r"unknown report format.*'pdf'"):
        write_report(figure2_cube(n_rep=3), tmp_path / "r", formats=("pdf",))


@pytest.mark.slow
def test_report_shows_every_criterion_per_family(tmp_path):
    ds = family_cube(n_rep=16)
    paths = write_report(ds, tmp_path / "fam", formats=("md",), criterion="value", n_boot=30)
    md = paths[0].read_text(encoding="utf-8")
    s = summarize(ds, n_boot=30)
    assert list(s["thresholds"]) == list(s["exponents"]) == ["recovery", "value", "theorem"]
    assert "- value: success = every step's |λ̂ − λ| ≤ 1·ε" in md
    for criterion, ex in s["exponents"].items():
        for family in ("gaussian", "coherent-tilt"):
            e = ex.sel(noise=family)
            row = f"| {criterion} | {family} | {_cell(e['exponent'])} | {_cell(e['exponent_lo'])} |"
            assert row in md, row
        for family in ("gaussian", "coherent-tilt"):
            t = s["thresholds"][criterion].sel(noise=family, n=8)
            assert f"| {criterion} | {family} | 8 | {_cell(t['threshold'])} |" in md
    tilt = s["exponents"]["value"].sel(noise="coherent-tilt")
    assert abs(float(tilt["exponent"]) + 0.5) < 0.15  # planted n^-1/2
    assert f"value, noise=coherent-tilt: the CI [{float(tilt['exponent_lo']):.3g}" in md
    # the figures use the criterion asked for
    assert (tmp_path / "fam_figures" / "success_heatmap.png").exists()


def _cell(v) -> str:
    v = float(v)
    return f"{v:.4g}" if np.isfinite(v) else "–"
