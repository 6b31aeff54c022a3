"""The threshold kind's cost estimate against the committed study stores (issue 34, 35): the
evaluation count comes from the search's own parameters, the large-n law is the one fitted to
the studies' evaluations, and the estimate of a measured store lands within a stated factor of
what that run cost (docs/data/cost/study-estimates.json, docs/results/benchmarks.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sroa_dist.studies import expected_evals, max_evals
from sroa_dist.studies.first_crossing import first_crossing
from sroa_dist.sweep import open_results
from sroa_dist.sweep.kinds import estimate, load_spec, make_layout, spec_from_dict

ROOT = Path(__file__).resolve().parents[2]
COST = ROOT / "docs" / "data" / "cost"
STUDIES = ROOT / "docs" / "data" / "studies"
ASYMPTOTE = ROOT / "sweeps" / "studies" / "asymptote-p3-c0.5.toml"


def _stored_spec(store: str):
    attrs = json.loads((STUDIES / store / "zarr.json").read_text())["attributes"]
    return spec_from_dict(json.loads(attrs["spec"]), store), json.loads(attrs["block_shape"])


def test_the_expected_count_is_the_searchs_own_mean_over_crossings_in_its_range():
    """expected_evals is first_crossing's n_evals averaged over crossings spread in log eps:
    it follows the range, rtol and k_section, and lies below the most a search can make."""
    rng, rtol = (0.02, 1.5), 0.02
    lo, hi = rng
    stars = [lo * (hi / lo) ** ((j + 0.5) / 64) for j in range(64)]
    counts = [
        first_crossing(lambda e, s=s: (e, e < s), eps_range=rng, rtol=rtol).n_evals for s in stars
    ]
    assert expected_evals(rng, rtol) == pytest.approx(sum(counts) / len(counts))
    assert expected_evals(rng, rtol) < max_evals(rng, rtol)
    assert expected_evals((0.3, 1.2), rtol) < expected_evals(rng, rtol)  # a narrower range
    assert expected_evals(rng, 0.005) > expected_evals(rng, rtol)  # a finer bracket
    assert expected_evals(rng, rtol, 1) < expected_evals(rng, rtol, 2)  # one scan phase


def test_the_estimate_charges_the_expected_count_and_the_fitted_law_in_n():
    """One search of the p = 3 asymptote spec is expected_evals of its own parameters times the
    large-n law: doubling n multiplies the estimate by 2^LARGE_N_EXPONENT, and the law passes
    within 20 % of the study evaluations it was fitted to (15, 64, 420 CPU-s at n = 256, 512,
    1024, sshopm revisions 6-8). A spec pinned to revision 8 is priced by the law; the current
    revision (9: single-precision spectral starts) at FAST_STARTS_SCALE of it."""
    from sroa_dist.sweep.kinds.threshold import (
        FAST_STARTS_SCALE,
        LARGE_N_EXPONENT,
        large_n_sroa_seconds,
        search_evals,
    )

    cpu = {}
    for n in (512, 1024, 2048):
        spec = load_spec(ASYMPTOTE, [f"tensor.n=[{n}]", "solver.revisions.sshopm=8"])
        cpu[n] = estimate(spec, make_layout(spec), 1).cpu_seconds
    current = load_spec(ASYMPTOTE, ["tensor.n=[1024]"])
    now = estimate(current, make_layout(current), 1).cpu_seconds
    assert now == pytest.approx(FAST_STARTS_SCALE * cpu[1024])
    evals = search_evals(spec)
    assert evals == pytest.approx(expected_evals((0.015, 0.08), 0.02, 2, 4))
    assert cpu[1024] / cpu[512] == pytest.approx(2**LARGE_N_EXPONENT)
    assert cpu[2048] / cpu[1024] == pytest.approx(2**LARGE_N_EXPONENT)
    for n, measured in ((256, 15.0), (512, 64.0), (1024, 420.0)):
        assert large_n_sroa_seconds(n, 3, True) == pytest.approx(measured, rel=0.2)
    # the n = 1024 search: about 20 evaluations of 6-8 CPU-min each, about 3 CPU-h
    assert 1.5 * 3600 < cpu[1024] < 4.5 * 3600


def test_a_measured_stores_search_count_and_cpu_are_within_the_stated_factors():
    """The committed n = 256 asymptote store: its search made 20 evaluations (expected: within
    1.25x) and cost about 5 CPU-min (docs/data/cost/study-runs.json); validate's estimate of
    that store's own spec is within 1.5x of it, as are the other runs that recorded their CPU
    on searches the model prices (lambda-min, theorem p = 3)."""
    from sroa_dist.sweep.kinds.threshold import search_evals

    runs = {r["store"]: r for r in json.loads((COST / "study-runs.json").read_text())["runs"]}
    ds = open_results(STUDIES / "asymptote-p3-c0.5-n256.zarr")
    spec, _ = _stored_spec("asymptote-p3-c0.5-n256.zarr")
    made = int(ds["n_evals"].values.reshape(-1)[0])
    assert 1 / 1.25 < search_evals(spec) / made < 1.25
    for store in (
        "asymptote-p3-c0.5-n256.zarr",
        "lambda-min-linear.zarr",
        "lambda-min-target.zarr",
    ):
        spec, shape = _stored_spec(store)
        layout = make_layout(spec, chunks=[int(shape[d]) for d in make_layout(spec).dims])
        got = estimate(spec, layout, runs[store]["workers"]).cpu_seconds
        assert 1 / 1.5 < got / runs[store]["cpu_s"] < 1.5, store


def test_the_published_table_is_what_the_model_prices_now():
    """docs/data/cost/study-estimates.json (the table in docs/results/benchmarks.md) holds the
    estimate the current model gives every study store: rerun its script when the model moves."""
    doc = json.loads((COST / "study-estimates.json").read_text())
    runs = {r["store"]: r for r in json.loads((COST / "study-runs.json").read_text())["runs"]}
    for row in doc["rows"]:
        run = runs[row["store"]]
        if run.get("blocks") is not None:  # a partial run: the script reads the done blocks
            continue
        spec, shape = _stored_spec(row["store"])
        layout = make_layout(spec, chunks=[int(shape[d]) for d in make_layout(spec).dims])
        got = estimate(spec, layout, run["workers"]).cpu_seconds
        assert math.isclose(got, row["estimate_cpu_s"], rel_tol=1e-3, abs_tol=0.1), row["store"]


def test_each_measured_evaluation_is_priced_within_2x_by_its_regime():
    """The single searches of eval-cost-2026-11-29.json (dense p = 3 and 4, matrix-free p = 4-6,
    n = 8-128): the model times its regime's scale is within 2x of each measured CPU per
    evaluation, and the regimes differ as measured (dense p = 4 dearer than the core's records
    say, the operator cheaper)."""
    from sroa_dist.methods import METHODS
    from sroa_dist.sweep.kinds.threshold import FAST_STARTS_SCALE, evaluation_scale, search_cost

    doc = json.loads((COST / "eval-cost-2026-11-29.json").read_text())
    for r in doc["rows"]:
        n, p, mf = r["n"], r["p"], r["matrix_free"]
        model = search_cost("sshopm", n, p, 1, "coherent-tilt", True, mf)
        assert model == pytest.approx(r["model_s"], rel=0.01)
        priced = evaluation_scale("sshopm", n, p, "coherent-tilt", mf) * model
        assert 0.5 < priced / r["cpu_per_eval_s"] < 2.0, r
    dense3 = evaluation_scale("sshopm", 32, 3, "coherent-tilt", False)
    dense4 = evaluation_scale("sshopm", 32, 4, "coherent-tilt", False)
    operator = evaluation_scale("sshopm", 32, 4, "coherent-tilt", True)
    assert operator < dense3 < dense4
    rev8 = METHODS["sshopm"].options_at(8)
    assert evaluation_scale("sshopm", 512, 3, "coherent-tilt", True, rev8) == 1.0  # the law
    assert evaluation_scale("sshopm", 512, 3, "coherent-tilt", True) == FAST_STARTS_SCALE
    # Revision 10 (whole powers as products) prices p >= 4 below revision 9; p = 3 unchanged.
    from sroa_dist.sweep.kinds.threshold import INTEGER_PRODUCTS_SCALE

    rev9 = METHODS["sshopm"].options_at(9)
    assert evaluation_scale("sshopm", 512, 4, "coherent-tilt", True, rev9) == FAST_STARTS_SCALE
    assert evaluation_scale("sshopm", 512, 4, "coherent-tilt", True) == pytest.approx(
        FAST_STARTS_SCALE * INTEGER_PRODUCTS_SCALE
    )
    assert evaluation_scale("sshopm", 512, 3, "coherent-tilt", True, rev9) == FAST_STARTS_SCALE
