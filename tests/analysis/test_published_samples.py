"""The blocks of docs/results/samples.md: the N* table says "not yet measured" until a samples
store exists and fits the exponent of N*(k) once one does; the noise table reads the structure
kind's stores, the real-data table its published JSON."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from sroa_dist.analysis.published import samples
from sroa_dist.analysis.published.sources import Data
from tests.support.helpers import ROOT


def test_slope_interval_recovers_a_power_law():
    k = np.array([5, 10, 20, 50, 5, 10, 20, 50], float)
    noise = np.array([1.05, 0.95, 1.02, 0.98, 0.97, 1.04, 0.99, 1.01])
    slope, lo, hi = samples.slope_interval(k, 30 * k**2.5 * noise)
    assert lo < 2.5 < hi and slope == pytest.approx(2.5, abs=0.05)
    assert math.isnan(samples.slope_interval([5, 5], [1, 2])[0])  # one k: no slope


def test_nstar_block_without_a_store_says_not_yet_measured(tmp_path):
    data = Data(tmp_path)
    text = samples.nstar_table(data)
    assert text.startswith("N\\* not yet measured")
    assert [s.path for s in data.used] == ["docs/data/studies/samples-*.zarr"]


def test_nstar_block_fits_the_exponent_per_method(tmp_path, monkeypatch):
    (tmp_path / "docs/data/studies/samples-topics.zarr").mkdir(parents=True)
    rows = [
        {"model": "topics", "method": m, "k": k, "replicate": r, "n_star": c * k**e * f}
        | {"n_lo": 0.8 * c * k**e * f, "n_star_low": 0.5 * c * k**e, "n_star_high": 2 * c * k**e}
        for m, c, e in (("power", 40.0, 3.0), ("certified", 40.0, 2.0))
        for k in (5, 10, 20)
        for r, f in enumerate((0.9, 1.1))
    ]
    monkeypatch.setattr(samples, "nstar_rows", lambda path: rows)
    text = samples.nstar_table(Data(tmp_path))
    lines = text.splitlines()
    assert lines[0] == (
        "| model | method | k = 5: N* [interval] | k = 10: N* [interval] | k = 20: N* [interval] "
        "| exponent [95 % t] | exponent over the N* intervals |"
    )
    power = next(line for line in lines if line.startswith("| topics | power |"))
    assert "| 3.00 [" in power  # exact power law up to a per-replicate factor
    assert f"| {40 * 5**3 * math.sqrt(0.99):.3g} [2.5e+03, 1e+04] |" in power  # k = 5
    # each N* anywhere in [N/2, 2N]: the slope moves by 2 log 2 / log 4 = 1 either way
    assert power.endswith("| 2.00 to 4.00 |")
    assert "differ at 6 of the 6" in text  # every k, both replicates
    assert "- topics, —, k = 20: certified (11,520, 14,400], power (2" in text


def test_a_models_sizes_join_across_stores(tmp_path, monkeypatch):
    """Two stores of one model (k = 5, 10 and k = 20) give one row with three sizes and a
    fitted exponent; methods that share every bracket are said to coincide."""
    studies = tmp_path / "docs/data/studies"
    for name in ("samples-gmm-k5-10.zarr", "samples-gmm-k20.zarr", "samples-ica-k20.zarr"):
        (studies / name).mkdir(parents=True)
    ks = {"samples-gmm-k5-10.zarr": (5, 10), "samples-gmm-k20.zarr": (20,)}

    def rows(path):
        model = path.name.split("-")[1]
        return [
            {"model": model, "weights": "uniform", "method": m, "k": k, "replicate": 0}
            | {"n_star": 30.0 * k**2, "n_lo": 24.0 * k**2}
            | {"n_star_low": 24.0 * k**2, "n_star_high": math.inf}
            | {"trace": [(100, 0), (200, 3 if (k, m) == (20, "sshopm@global") else 2)]}
            for k in ks.get(path.name, (20,))
            for m in ("power@aghkt", "sshopm@global")
        ]

    monkeypatch.setattr(samples, "nstar_rows", rows)
    data = Data(tmp_path)
    text = samples.nstar_table(data)
    lines = text.splitlines()
    assert lines[0].startswith("| model | weights | method | k = 5: N* [interval] | k = 10")
    gmm = [line for line in lines if line.startswith("| gmm |")]
    # N* = 30 k^2 exactly: a zero-residual fit is said to be one, not given a zero-width interval
    assert len(gmm) == 2 and all("| 2.00 (exact fit on the size lattice" in line for line in gmm)
    # N* in (24 k^2, 30 k^2]: the slope moves by log 1.25 / log 4 either way
    half = math.log(1.25) / math.log(4)
    brackets = f"the brackets alone: {2 - half:.2f} to {2 + half:.2f}) |"
    assert all(line.endswith(f"| open (an N* unresolved; {brackets}") for line in gmm)
    ica = next(line for line in lines if line.startswith("| ica |"))
    assert "| — | — | 1.2e+04 [9.6e+03, inf] | — (1 sizes: not fitted) | — |" in ica
    assert lines.index(gmm[0]) < lines.index(ica)  # topics, gmm, ica order
    assert "coincide at every one of the 4" in text and "k = 5, 10, 20" in text
    assert "At 2 of them the methods also count the same successes" in text  # not k = 20
    assert len(data.used) == 3  # every store named in the sources line


def test_nstar_rows_reads_a_real_store_with_its_model(tmp_path):
    """The committed k = 5, 10 ICA store: its model from the store, every N* inside its
    bracket, N* the first size of its trace with 5 of 10 successes or more."""
    rows = samples.nstar_rows(ROOT / "docs/data/studies/samples-ica-k5-10.zarr")
    assert rows and {r["model"] for r in rows} == {"ica"}
    assert {r["k"] for r in rows} == {5, 10}
    assert all(0 < r["n_lo"] < r["n_star"] for r in rows)
    for r in rows:
        assert len(r["trace"]) == r["n_evals"]
        assert min(n for n, wins in r["trace"] if 2 * wins >= r["draws"]) == r["n_star"]


def test_noise_and_real_data_tables_cover_every_model():
    """The noise table from the committed structure stores (one per model), the real-data
    table from its JSON."""
    data = Data(ROOT)
    noise = samples.noise_table(data)
    real = samples.real_data_table(data)
    for kind in ("topics", "gmm", "ica"):
        assert f"| {kind} |" in noise and f"| {kind} |" in real
    stores = {f"docs/data/studies/{s}.zarr" for s in samples.NOISE_STUDIES}
    assert {s.path for s in data.used} == stores | {samples.REAL_DATA}
    assert "| topics | 100 | uniform | global |" in noise


def test_noise_block_without_a_store_says_not_yet_measured(tmp_path):
    data = Data(tmp_path)
    assert samples.noise_table(data).startswith("Noise structure not yet measured")
    assert data.used == []


def test_slope_range_spans_every_choice_inside_the_intervals():
    k = np.array([5.0, 10.0, 20.0])
    lo, hi = samples.slope_range(k, 10 * k**1.5 / 1.25, 10 * k**1.5 * 1.25)
    assert lo < 1.5 < hi and hi - 1.5 == pytest.approx(2 * math.log(1.25) / math.log(4))
    rng = np.random.default_rng(0)
    for _ in range(20):  # any choice inside stays inside the range
        y = 10 * k**1.5 * 1.25 ** rng.uniform(-1, 1, 3)
        assert lo - 1e-12 <= samples.slope_interval(k, y)[0] <= hi + 1e-12
    assert math.isnan(samples.slope_range(k, [0, 1, 1], [1, 2, 3])[0])  # unresolved below


def test_search_sizes_follow_the_kinds_scan():
    assert samples.search_sizes(300.0) == [100, 200, 400, 800, 300.0, 300.0]
    assert samples.search_sizes(100.0, refine=0) == [100, 200]


def test_cost_block_extrapolates_a_search_to_k_200(tmp_path, monkeypatch):
    """Three sizes with N* = 10 k^2, a per-draw cost k^2 from k = 20 to 50: N*(200) =
    400,000, 100 CPU-s a draw at k = 200, and the draws at N >= 16000 priced at that."""
    studies = tmp_path / "docs/data/studies"
    (studies / "samples-gmm-k5-20.zarr").mkdir(parents=True)
    rows = [
        {"model": "gmm", "weights": "uniform", "method": "power@aghkt", "k": k, "replicate": 0}
        | {"n_star": 10.0 * k**2, "n_lo": 8.0 * k**2, "n_evals": 9, "draws": 10}
        | {"n_star_low": 8.0 * k**2, "n_star_high": 20.0 * k**2}
        | {"store": "samples-gmm-k5-20.zarr"}
        for k in (5, 10, 20)
    ]
    monkeypatch.setattr(samples, "nstar_rows", lambda path: rows)
    cost = {
        "rows": [
            {"model": "gmm", "k": k, "method": "power@aghkt", "N": 16000, "cpu_s": k**2 / 400}
            for k in (5, 20, 50)  # the two largest k set the exponent
        ],
        "searches": [
            {"store": "samples-gmm-k5-20.zarr", "wall_s": 100.0, "cpu_s": 54.0}
            | {"load": [2.0, 3.0], "estimate_cpu_s": 270.0}
        ],
    }
    (studies / "samples-cost.json").write_text(json.dumps(cost))
    text = samples.cost_table(Data(tmp_path))
    run = "| samples-gmm-k5-20.zarr | gmm | 5, 10, 20 | power@aghkt | 270 | 100 | 54 | 0.20 |"
    assert run + " 2.0–3.0 | 270 | 270 |" in text  # no refitted estimate: the printed one
    line = next(x for x in text.splitlines() if x.startswith("| gmm | power@aghkt | 2.00 |"))
    # 25600 ... 409600, the continued 819200, two refinements: 8 sizes, 80 draws
    big = len([n for n in samples.search_sizes(4e5) if n >= 16000])
    assert big == 8
    assert "| 4e+05 |" in line and "k^2.0 | 100 | 80 |" in line
    assert line.endswith(f"≥ {80 * 100 / 3600:.3g} |")


def test_norm_block_sets_e_against_both_scales(tmp_path, monkeypatch):
    """‖E‖ at N* over λ_min/k and λ_min k^(-1/2) per (model, weights, k): two methods on the
    same draws give one value, unmeasured norms (NaN) leave their point out."""
    (tmp_path / "docs/data/studies/samples-topics-k20.zarr").mkdir(parents=True)
    base = {"model": "topics", "weights": "uniform", "k": 20, "replicate": 0, "n_star": 15222.0}
    scales = {"scale_global": 1.0, "scale_power": 0.25}
    rows = [
        base | scales | {"method": m, "eps_at_star": 0.5} for m in ("power@aghkt", "certified")
    ] + [base | scales | {"k": 30, "method": "power@aghkt", "eps_at_star": math.nan}]
    monkeypatch.setattr(samples, "nstar_rows", lambda path: rows)
    lines = samples.norm_table(Data(tmp_path)).splitlines()
    assert lines[2:] == ["| topics | uniform | 20 | 15,222 | 0.5 | 2.00 | 0.50 |"]
