"""The structure sweep kind (``sroa_dist.sweep.kinds.structure``, issue 36 item 3): spec errors
name their key, the sample size follows the pilot's calibration and its caps (or a fixed
size), an instance is a pure function of (seed, coordinates, replicate) and equals
:func:`sroa_dist.moments.noise_structure` called by hand, a run on real worker processes equals
its instances run here bit for bit (and a resumed store holds the same bits), the shipped
specs validate, and the report tabulates the diagnostics and draws its figure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sroa_dist.analysis import write_report
from sroa_dist.analysis.structure import structure_rows, structure_table
from sroa_dist.moments import make_model, noise_structure
from sroa_dist.sweep import load_spec, open_results, run_sweep
from sroa_dist.sweep.kinds import KINDS, kind_for_raw, make_layout, spec_from_dict
from sroa_dist.sweep.kinds.registry import estimate
from sroa_dist.sweep.layout import block_task, stable_hash32
from sroa_dist.sweep.run.worker import compute_block
from sroa_dist.sweep.spec.fields import SpecError
from sroa_dist.sweep.store.block_write import write_block
from sroa_dist.sweep.store.prepare import prepare_store, read_done
from tests.support.helpers import ROOT, assert_same_bits, cube_values, with_dotted

KIND = KINDS["structure"]
STUDIES = ROOT / "sweeps" / "studies"
SHIPPED = sorted(STUDIES.glob("noise-structure-*.toml")) + sorted(
    STUDIES.glob("smoke/noise-structure-*.toml")
)


def _small(**over):
    """Four cheap instances: a mixture of k = 3 in d = 6, both calibrated targets, 40 starts,
    two replicates."""
    raw = {
        "name": "structure-small",
        "seed": 5,
        "replicates": 2,
        "structure": {
            "model": "gmm",
            "k": 3,
            "target": ["global", "power"],
            "pilot_per_k": 100,
            "starts": 40,
        },
    }
    return with_dotted(raw, over)


def test_the_kind_is_registered_and_marked_by_its_table():
    assert KIND.name == "structure" and kind_for_raw(_small()) is KIND
    spec = spec_from_dict(_small())
    assert spec.sweep_dims() == ["target"]
    layout = make_layout(spec)
    assert layout.dims == ("target", "replicate")


@pytest.mark.parametrize(
    ("key", "value", "blamed"),
    [
        ("structure.model", "lda", "structure.model"),
        ("structure.k", 1, "structure.k"),
        ("structure.target", "somewhere", "structure.target"),
        ("structure.target", "N=1", "structure.target"),
        ("structure.target", "N=11", "structure.target"),
        ("structure.whitening", "sample", "structure.whitening"),
        ("structure.starts", 0, "structure.starts"),
        ("structure.cost_cap", 0.0, "structure.cost_cap"),
        ("structure.L", 10, "structure.L"),
        ("structure.weights", "geometric", "structure.weights"),
        ("solver.method", "power", "solver.method"),
        ("solver.options", {"n_starts": 3}, "solver.options"),
        ("output.vectors", True, "output.vectors"),
    ],
)
def test_spec_errors_name_their_key(key, value, blamed):
    with pytest.raises(SpecError) as exc:
        spec_from_dict(_small(**{key: value}))
    assert exc.value.key == blamed


def test_ica_has_no_zipf_weights():
    with pytest.raises(SpecError) as exc:
        spec_from_dict(_small(**{"structure.model": "ica", "structure.weights": "zipf"}))
    assert exc.value.key == "structure.weights"


def test_the_sample_size_follows_the_pilot_and_its_caps():
    """global/power: N = N0·(‖E_pilot‖/scale)², the pilot's own scale; the cap on N·k^p
    binds and says so; N=<size> takes the size with no pilot."""
    spec = spec_from_dict(_small(**{"structure.target": ["global", "power", "N=700"]}))
    model = spec.settings_at({"target": "global"}).draw(spec.seed)
    seen = {}
    for target in ("global", "power"):
        inst = KIND.instance(spec, spec.settings_at({"target": target}), 0)
        cal = inst.calibrate(model)
        pilot = noise_structure(
            model, 300, rng=inst.settings.seed(5, 0, 1), n_starts=1, attractor_reference=False
        )
        scale = pilot.global_scale if target == "global" else pilot.power_scale
        assert cal.pilot_n == 300 and cal.pilot_eps == pilot.eps
        assert cal.n_wanted == round(300 * (pilot.eps / scale) ** 2)
        assert cal.n_samples == max(12, int(cal.n_wanted)) and not cal.capped
        seen[target] = cal.n_samples
    assert seen["power"] > seen["global"]  # λ_min/k < λ_min·k^(−1/2)
    fixed = KIND.instance(spec, spec.settings_at({"target": "N=700"}), 0).calibrate(model)
    assert fixed.n_samples == 700 and math.isnan(fixed.pilot_n) and not fixed.capped
    tight = spec_from_dict(_small(**{"structure.cost_cap": 27.0 * 50, "structure.target": "power"}))
    s = tight.settings_at({})
    cal = KIND.instance(tight, s, 0).calibrate(s.draw(tight.seed))
    assert s.cap == 50 and cal.n_samples == 50 and cal.capped


def test_an_instance_is_noise_structure_at_its_seeds():
    """The model from (seed, coordinates) alone, the same for every replicate and target; the
    measurement from (..., replicate, 2, h(target)): equal, bit for bit, to the core call."""
    spec = spec_from_dict(_small())
    s = spec.settings_at({"target": "global"})
    inst = KIND.instance(spec, s, 1)
    cal, res = inst.run()
    model = make_model(
        "gmm",
        3,
        6,
        rng=np.random.default_rng(np.random.SeedSequence(5, spawn_key=(*s.seed_key(), 0, 0))),
        sigma2=1.0,
        weights=np.full(3, 1 / 3),
    )
    want = noise_structure(
        model,
        cal.n_samples,
        rng=np.random.SeedSequence(
            5, spawn_key=(*s.seed_key(), 1, 2, stable_hash32("target", "global"))
        ),
        n_starts=40,
    )
    assert res.eps == want.eps and res.q.hits == want.q.hits
    assert np.array_equal(res.overlaps, want.overlaps)
    again = KIND.instance(spec, s, 1).run()[1]
    assert again.eps == res.eps and again.q_attractor.hits == res.q_attractor.hits
    other = KIND.instance(spec, s, 0).run()[1]
    assert other.eps != res.eps  # replicates resample
    assert s.seed_key() == spec.settings_at({"target": "power"}).seed_key()


@pytest.mark.slow
def test_a_sweep_on_workers_equals_its_instances_and_a_resume(tmp_path, client):
    """run_sweep into a real zarr store on the shared cluster's worker processes: every
    instance equals the one run here, bit for bit; a store with one block written by hand and
    the rest by a resumed run_sweep holds the same bits."""
    raw = _small()
    full = tmp_path / "full.zarr"
    res = run_sweep(raw, full, client=client, block_size=1)
    assert res.complete and res.n_instances == 4
    ds = open_results(full).load()
    assert ds.attrs["sroa_kind"] == "structure" and bool(ds["done"].all())
    spec = spec_from_dict(raw)
    for target in ("global", "power"):
        for r in range(2):
            cal, want = KIND.instance(spec, spec.settings_at({"target": target}), r).run()
            got = ds.sel(target=target, replicate=r)
            assert float(got.n_samples) == cal.n_samples
            assert np.float64(got.eps).tobytes() == np.float64(want.eps).tobytes()
            assert float(got.q_hits) == want.q.hits
            assert float(got.q_clean_hits) == want.q_clean.hits
            assert float(got.q_attractor_hits) == want.q_attractor.hits
            assert got.overlaps.values[:3].tolist() == want.overlaps.tolist()
            assert bool(got.eps_certified) == want.certified
            assert float(got.scale_power) == want.lambda_min / 3
    part = tmp_path / "part.zarr"
    layout = make_layout(spec, block_size=1)
    prepare_store(str(part), spec, layout)
    write_block(str(part), 0, compute_block(block_task(spec, layout, 0)))
    assert read_done(part).sum() == 1
    again = run_sweep(raw, part, client=client, block_size=1)
    assert again.complete and again.blocks_done_before == 1
    assert_same_bits(cube_values(part), cube_values(full))


def test_the_report_tabulates_the_diagnostics_and_draws_the_figure(tmp_path):
    raw = _small(**{"structure.k": [2, 3], "replicates": 1, "structure.target": "power"})
    spec = spec_from_dict(raw)
    layout = make_layout(spec)
    url = str(tmp_path / "r.zarr")
    prepare_store(url, spec, layout)
    for b in range(layout.n_blocks):
        write_block(url, b, compute_block(block_task(spec, layout, b)))
    ds = open_results(url)
    rows = structure_rows(ds)
    assert [(r["k"], r["target"], r["weights"]) for r in rows] == [
        (2, "power", "uniform"),
        (3, "power", "uniform"),
    ]
    head, body = structure_table(rows)
    assert len(head) == len(body[0]) and body[0][0] == "gmm"
    for r in rows:  # pooled q and its interval
        lo, hi = r["q"]["interval"]
        assert lo <= r["q"]["q"] <= hi and r["q"]["values"] == [r["q"]["q"]]
    paths = write_report(ds, tmp_path / "r.md", formats=("md",), n_boot=0)
    md = paths[0].read_text()
    assert "## Structure of the sampling noise" in md and "| gmm | 3 | uniform | power |" in md
    assert "## Instances" not in md
    png = tmp_path / "r_figures" / "noise_structure.png"
    assert png.exists() and png.stat().st_size > 10_000


@pytest.mark.parametrize("path", SHIPPED, ids=[f"{p.parent.name}/{p.stem}" for p in SHIPPED])
def test_shipped_specs_validate_with_an_estimate(path):
    spec = load_spec(path)
    est = estimate(spec, make_layout(spec), workers=2)
    assert est.instances > 0 and math.isfinite(est.cpu_seconds) and est.cpu_seconds > 0
