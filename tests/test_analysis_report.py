"""Reports: the numbers (checked against direct computation), embedded figures, provenance."""

from __future__ import annotations

import re

import numpy as np
import pytest
from analysis_cubes import PROVENANCE, figure1_cube, figure2_cube, scaling_cube

from sroa_dist.analysis import summarize, write_report


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


def test_scaling_report_has_thresholds_and_exponents(tmp_path):
    ds = scaling_cube(ns=(4, 8, 16), n_eps=8, n_rep=12)
    paths = write_report(ds, tmp_path / "scaling", formats=("md",), n_boot=30)
    assert [p.name for p in paths] == [
        "scaling.md",
        "figure1.png",
        "figure2.png",
        "success_heatmap.png",
        "threshold_scaling.png",
    ]
    md = paths[0].read_text(encoding="utf-8")
    assert "## Tolerable perturbation vs n" in md and "## Error growth over deflation" in md
    ex = summarize(ds, n_boot=30)["exponents"]["recovery"]
    assert f"| recovery | {float(ex['exponent']):.4g} | {float(ex['exponent_lo']):.4g} |" in md
    assert "| -0.5 | -1 |" in md  # references −1/(p−1) with p = 3 from attrs, and −1


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
