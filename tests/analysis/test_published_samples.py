"""The blocks of docs/results/samples.md: the N* table says "not yet measured" until a samples
store exists and fits the exponent of N*(k) once one does; the noise and real-data tables read
their published JSON."""

from __future__ import annotations

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
        for m, c, e in (("power", 40.0, 3.0), ("certified", 40.0, 2.0))
        for k in (5, 10, 20)
        for r, f in enumerate((0.9, 1.1))
    ]
    monkeypatch.setattr(samples, "nstar_rows", lambda path: rows)
    text = samples.nstar_table(Data(tmp_path))
    lines = text.splitlines()
    assert lines[0] == "| method | model | k = 5 | k = 10 | k = 20 | exponent [95 %] |"
    power = next(line for line in lines if line.startswith("| power |"))
    assert "| 3.00 [" in power  # exact power law up to a per-replicate factor
    assert f"| {40 * 5**3 * math.sqrt(0.99):.3g} |" in power  # geometric mean at k = 5


def test_noise_and_real_data_tables_cover_every_model():
    data = Data(ROOT)
    noise = samples.noise_table(data)
    real = samples.real_data_table(data)
    for kind in ("topics", "gmm", "ica"):
        assert f"| {kind} |" in noise and f"| {kind} |" in real
    assert {s.path for s in data.used} == {samples.NOISE, samples.REAL_DATA}
