"""The study specs under ``sweeps/studies/`` (issue 34, "every study a sweep"): every spec and
every smoke variant parses and has a cost estimate, every study has a smoke variant of the same
kind (and every smoke variant a study), and one threshold study's smoke variant runs for real
through ``sroa-dist run`` and passes ``sroa-dist check``.

Running every smoke variant would cost minutes of CI per study; each was run by hand when it was
written (their wall times are in the engineers' reports), and the specs' settings are checked
here against the published studies they reproduce.
"""

from __future__ import annotations

import math

import pytest

from sroa_dist.sweep import load_spec, open_results
from sroa_dist.sweep.kinds import estimate, kind_of, make_layout
from tests.support.helpers import ROOT, run_cli

STUDIES = ROOT / "sweeps" / "studies"
SMOKE = STUDIES / "smoke"
FULL = sorted(STUDIES.glob("*.toml"))
SMOKES = sorted(SMOKE.glob("*.toml"))
ALL = FULL + SMOKES


def _id(path):
    return f"{path.parent.name}/{path.stem}"


def test_there_are_studies_and_smoke_variants():
    assert FULL and SMOKES


@pytest.mark.parametrize("path", ALL, ids=[_id(p) for p in ALL])
def test_every_study_spec_parses_with_a_cost_estimate(path):
    spec = load_spec(path)
    est = estimate(spec, make_layout(spec), workers=2)
    assert est.instances > 0 and est.blocks > 0
    assert math.isfinite(est.cpu_seconds) and est.cpu_seconds > 0
    assert math.isfinite(est.peak_bytes) and est.peak_bytes > 0


def test_every_study_has_a_smoke_variant_of_its_kind_and_back():
    full = {p.stem for p in FULL}
    smoke = {p.stem for p in SMOKES}
    assert full - smoke == set(), "studies without a smoke variant"
    assert smoke - full == set(), "smoke variants without a study"
    for stem in full:
        a, b = load_spec(STUDIES / f"{stem}.toml"), load_spec(SMOKE / f"{stem}.toml")
        assert kind_of(a).name == kind_of(b).name, stem
        assert b.name == f"smoke-{a.name}", stem


def _threshold(stem):
    spec = load_spec(STUDIES / f"{stem}.toml")
    return spec, spec.threshold


def test_the_theorem_and_lambda_min_studies_keep_the_published_settings():
    """The grids and levels of docs/results/thresholds.md's theorem and λ_min tables."""
    plan = {  # (p, c, radius, sizes, eps_range), as the table was measured
        "theorem-p3-c0.5": (3, 0.5, 0.3, [8, 16, 32, 64, 128], (0.02, 1.5)),
        "theorem-p3-c2": (3, 2.0, None, [8, 16, 32, 64, 128], (0.05, 1.5)),
        "theorem-p4-c0.5": (4, 0.5, 0.3, [8, 16, 32, 48, 64], (0.05, 1.5)),
        "theorem-p4-c2": (4, 2.0, None, [64, 128, 256], (0.05, 1.5)),
    }
    for stem, (p, c, radius, sizes, eps_range) in plan.items():
        spec, t = _threshold(stem)
        assert (t.criterion, t.c, t.radius, t.eps_range, t.rtol) == (
            "theorem",
            c,
            radius,
            eps_range,
            0.02,
        ), stem
        assert list(spec.axes["tensor.n"].values) == sizes and spec.ranks[0] == sizes[0]
        assert list(spec.axes["tensor.p"].values) == [p], stem
        assert t.search["global_check"] and t.search["redo"], stem
    base, _ = _threshold("theorem-p3-c0.5")
    for stem, profile in (("lambda-min-target", "last"), ("lambda-min-linear", "linear")):
        spec, t = _threshold(stem)
        assert spec.weight_profile == (profile, 0.5)
        # the same draws as the default-weight column: seed and search settings of theorem-p3
        assert spec.seed == base.seed and t == base.threshold
        assert list(spec.axes["tensor.n"].values) == [8, 16, 32, 64]
    spec, t = _threshold("tilt-p6")
    assert list(spec.axes["tensor.p"].values) == [6] and t.matrix_free is True


@pytest.mark.slow
def test_a_threshold_smoke_study_runs_through_the_cli_and_checks(tmp_path):
    """The p = 6 matrix-free smoke study (the cheapest), shrunk to one size: `sroa-dist run`
    in a subprocess on its own embedded cluster, then `sroa-dist check` on the store."""
    store = tmp_path / "study.zarr"
    run_cli(
        "run",
        str(SMOKE / "tilt-p6.toml"),
        "--store",
        str(store),
        "--workers",
        "1",
        "--dashboard-address",
        "127.0.0.1:0",
        "--set",
        "tensor.n=[4]",
        "--set",
        "threshold.rtol=0.1",
    )
    assert "integrity ok" in run_cli("check", str(store)).stdout
    ds = open_results(store).load()
    assert bool(ds.done.all())
    assert int(ds.n_evals.sum()) > 0 and bool((ds.eps_lo < ds.eps_hi).all())
    assert ds.attrs["setting_search"] and '"matrix_free": true' in ds.attrs["setting_search"]


def test_the_asymptote_studies_scan_ranges_hold_the_predictions_committed_before_them():
    """Issue 35: each asymptote spec states its own scan range (the search reads nothing
    else), global steps, matrix-free, k_section 4; the range holds the prediction (and its
    g_p-corrected value) at every size, starting below it so the scan reaches it from below."""
    import json

    doc = json.loads((ROOT / "docs/data/rate/asymptote-predictions.json").read_text())
    preds = {(e["p"], e["c"]): {r["n"]: r for r in e["rows"]} for e in doc["predictions"]}
    for p, sizes in ((3, [512, 1024, 2048]), (4, [512, 1024]), (5, [512, 1024])):
        for tag, criterion, c in (("c0.5", "value", 0.5), ("c2", "theorem", 2.0)):
            spec, t = _threshold(f"asymptote-p{p}-{tag}")
            assert (t.criterion, t.c, t.radius, t.rtol) == (criterion, c, None, 0.02)
            assert list(spec.axes["tensor.n"].values) == sizes
            assert t.search["global_check"] and t.search["redo"]
            assert t.matrix_free is True and t.search["k_section"] == 4
            lo, hi = t.eps_range
            for n in sizes:
                row = preds[(p, c)][n]
                for e in (row["eps_star"], row.get("eps_star_corrected", row["eps_star"])):
                    assert 1.2 * lo < e < hi / 1.4, (p, tag, n, e, (lo, hi))
