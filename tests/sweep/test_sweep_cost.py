"""The sweep cost model (:mod:`sroa_dist.sweep.cost`) and the registry's estimate of a sweep:
calibrated points are used as measured, the estimate scales with the work and the workers,
every registered kind prices its own instances. No timings: the model is arithmetic."""

from __future__ import annotations

import math

import pytest

from sroa_dist.methods.cost import solve_cost
from sroa_dist.sweep import cost as cost_model
from sroa_dist.sweep.cost import (
    CALIBRATED,
    STARTUP_SECONDS,
    SWEEP_OVERHEAD,
    estimate_line,
    load_note,
    makespan,
    sroa_seconds,
    sweep_estimate,
)
from sroa_dist.sweep.kinds import KINDS, estimate, kind_of, load_spec, make_layout
from tests.support.helpers import ROOT

#: One shipped spec per built-in kind, small enough to price in milliseconds.
SPECS = {
    "tensor": ROOT / "sweeps/figure2.toml",
    "threshold": ROOT / "sweeps/smoke/threshold.toml",
    "model": ROOT / "sweeps/smoke/gmm.toml",
    "accumulation": ROOT / "sweeps/studies/smoke/accumulation.toml",
    "escape": ROOT / "sweeps/studies/smoke/attractor-escape.toml",
    "worst_case": ROOT / "sweeps/studies/smoke/worst-case.toml",
    "samples": ROOT / "sweeps/studies/smoke/samples-topics.toml",
    "structure": ROOT / "sweeps/studies/smoke/noise-structure-gmm.toml",
}


def _estimate(path, workers=2, **overrides):
    spec = load_spec(path, [f"{k}={v}" for k, v in overrides.items()])
    return spec, estimate(spec, make_layout(spec), workers)


def test_every_builtin_kind_prices_its_own_instances():
    """A kind supplies its per-instance cost as a member; the shipped ones all do."""
    assert set(SPECS) == set(KINDS)
    for name, path in SPECS.items():
        spec = load_spec(path)
        assert kind_of(spec).name == name
        assert callable(kind_of(spec).instance_cost)
        est = estimate(spec, make_layout(spec), 2)
        assert est.instances == make_layout(spec).n_instances
        assert est.cpu_seconds > 0 and est.wall_seconds > STARTUP_SECONDS
        assert est.peak_bytes > 0


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_twice_the_replicates_twice_the_cpu(kind):
    spec, one = _estimate(SPECS[kind], replicates=2)
    _, two = _estimate(SPECS[kind], replicates=4)
    assert two.instances == 2 * one.instances
    assert two.cpu_seconds == pytest.approx(2 * one.cpu_seconds, rel=1e-9)


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_more_workers_less_wall_same_cpu(kind):
    spec = load_spec(SPECS[kind], ["replicates=8"])
    layout = make_layout(spec, block_size=1)  # enough blocks for every worker
    one, four = estimate(spec, layout, 1), estimate(spec, layout, 4)
    assert four.cpu_seconds == pytest.approx(one.cpu_seconds)
    assert four.wall_seconds < one.wall_seconds
    assert four.workers == 4 and one.workers == 1
    # One worker runs every task in turn; four share them (never better than perfectly).
    assert one.wall_seconds == pytest.approx(STARTUP_SECONDS + one.cpu_seconds)
    assert four.wall_seconds >= STARTUP_SECONDS + four.cpu_seconds / 4 - 1e-9


def test_workers_beyond_the_blocks_do_not_count():
    est = sweep_estimate([1.0, 2.0], instances=4, workers=16, peak_bytes=1.0)
    assert est.workers == 2
    assert est.wall_seconds == pytest.approx(STARTUP_SECONDS + SWEEP_OVERHEAD * 2.0)


def test_makespan_hands_each_block_to_the_first_free_worker():
    assert makespan([3.0, 1.0, 1.0, 1.0], 2) == pytest.approx(3.0)
    assert makespan([1.0] * 5, 2) == pytest.approx(3.0)
    assert makespan([], 3) == 0.0


def test_a_calibrated_point_is_used_as_measured():
    (m, norm, n, p), (fixed, step) = next(iter(CALIBRATED.items()))
    assert sroa_seconds(m, norm, n, p, 7) == pytest.approx(fixed + 7 * step)


def test_between_points_the_core_records_scale_the_nearest_measurement(monkeypatch):
    monkeypatch.setattr(cost_model, "CALIBRATED", {("sshopm", "sshopm", 10, 3): (0.5, 0.25)})
    scale = solve_cost("sshopm", 20, 3) / solve_cost("sshopm", 10, 3)
    assert sroa_seconds("sshopm", "sshopm", 20, 3, 4) == pytest.approx((0.5 + 4 * 0.25) * scale)
    # No measured point of these methods at this p: the core's records alone.
    want = 3 * solve_cost("power", 10, 4) + solve_cost("sshopm", 10, 4)
    assert sroa_seconds("power", "sshopm", 10, 4, 3) == pytest.approx(want)


def test_the_certified_figure2_sweep_costs_more_than_the_sshopm_one():
    _, cert = _estimate(SPECS["tensor"])
    _, local = _estimate(ROOT / "sweeps/figure2-sshopm.toml")
    assert cert.instances == local.instances
    assert cert.cpu_seconds > 5 * local.cpu_seconds


def test_the_line_names_every_figure_and_warns_under_load():
    est = sweep_estimate([60.0, 60.0], instances=300, workers=2, peak_bytes=2**30)
    line = estimate_line(est)
    assert line.startswith("estimate: 300 instances in 2 blocks; 2.2 min CPU")
    assert "peak 1.00 GiB per worker" in line and "on 2 workers (idle machine)" in line
    assert line.endswith("(idle machine)") and math.isfinite(est.wall_seconds)
    assert load_note(1.5, 2) == "" and load_note(2.0, 2) == ""
    assert load_note(8.0, 2) == "; load average now 8.0 on 2 CPUs: expect at least 4.0x longer"
    assert estimate_line(est, loaded=True).startswith(line)


def test_a_resumed_run_prices_its_pending_blocks_only():
    spec = load_spec(SPECS["tensor"], ["replicates=12"])
    layout = make_layout(spec)
    whole = estimate(spec, layout, 2)
    part = estimate(spec, layout, 2, blocks=[0, 1])
    assert part.blocks == 2 and part.instances == layout.block_size(0) + layout.block_size(1)
    assert part.cpu_seconds == pytest.approx(whole.cpu_seconds * part.instances / whole.instances)


def test_the_escape_kind_prices_its_committed_whole_sroa_stores_within_a_factor_of_two():
    """The whole-SROA studies of the escape kind (power at n = 128 and 256, SS-HOPM with the
    global check at n = 256 on the large-n engine) against the CPU their runs recorded: within
    2x each (the model before priced the n = 256 stores 8-14x over)."""
    import json

    runs = json.loads((ROOT / "docs/data/cost/study-runs.json").read_text())["runs"]
    recorded = {r["store"]: r["cpu_s"] for r in runs}
    for study in ("attractor-confirm", "attractor-confirm-256", "attractor-capture"):
        spec = load_spec(ROOT / f"sweeps/studies/{study}.toml")
        priced = estimate(spec, make_layout(spec), 2).cpu_seconds
        assert 0.5 <= priced / recorded[f"{study}.zarr"] <= 2.0, (study, priced)
