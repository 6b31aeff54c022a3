"""The accumulation sweep kind (``sroa_dist.sweep.kinds.accumulation``): spec errors name their
file and key, the published ε grid is kept unrounded, seeds are a pure function of (master seed,
family, n, p, replicate), a block computes what ``sroa_dist.analysis.accumulation`` computes (bit
for bit at the same starts, and near the closed form g_p(0)), a sweep on real worker processes
into a real store equals the instances run one by one and resumes to the same bits, and its
report section states g_p against the closed form."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from sroa_dist.analysis import (
    accumulation,
    accumulation_curves,
    accumulation_limit,
    predict_threshold,
    write_report,
)
from sroa_dist.studies.accumulation import coefficients
from sroa_dist.sweep import load_spec, open_results, run_sweep
from sroa_dist.sweep.kinds import KINDS, kind_for_raw, make_layout, spec_from_dict
from sroa_dist.sweep.kinds.registry import estimate
from sroa_dist.sweep.layout import block_task, stable_hash32
from sroa_dist.sweep.run.worker import compute_block
from sroa_dist.sweep.spec.fields import SpecError
from sroa_dist.sweep.store.block_write import write_block
from sroa_dist.sweep.store.prepare import prepare_store, read_done
from tests.support.helpers import ROOT, assert_same_bits, cube_values, with_dotted

STUDIES = ROOT / "sweeps" / "studies"
SHIPPED = sorted([*STUDIES.glob("accumulation*.toml"), *STUDIES.glob("smoke/accumulation*.toml")])
KIND = KINDS["accumulation"]


def _small(**over):
    """An accumulation spec of a few cheap runs (p = 3 and 4, n = 4 and 5, 3 values of ε)."""
    raw = {
        "name": "acc-small",
        "seed": 7,
        "replicates": 1,
        "tensor": {"n": [4, 5], "p": [3, 4]},
        "noise": {"model": "coherent-tilt", "eps": {"start": 0.02, "stop": 0.3, "points": 3}},
        "solver": {"method": "sshopm"},
        "accumulation": {},
    }
    return with_dotted(raw, over)


def test_the_kind_is_registered_and_marked_by_its_table():
    assert kind_for_raw(_small()) is KIND
    spec = spec_from_dict(_small())
    assert spec.kind == "accumulation" and spec.sweep_dims() == ["n", "p", "eps"]
    assert set(spec.sweep_dims()) <= set(KIND.dims)
    assert spec.accumulation.global_check and spec.accumulation.redo


@pytest.mark.parametrize(
    ("key", "value", "blamed"),
    [
        ("tensor.n", [2, 4], "tensor.n"),
        ("tensor.p", 2, "tensor.p"),
        ("tensor.weight", 1.2, "tensor.weight"),
        ("noise.model", "gaussian", "noise.model"),  # no factored form: cannot run matrix-free
        ("noise.model", "no-such-family", "noise.model"),
        ("solver.method", "certified", "solver.method"),  # needs every entry
        ("solver.steps", 2, "solver.steps"),
        ("noise.eps", {"start": 0.3, "stop": 0.1, "points": 4}, "noise.eps"),
        ("noise.eps", {"start": 0.1, "stop": 0.3, "points": 1}, "noise.eps.points"),
        ("noise.eps", {"start": 0.1, "stop": 0.3, "points": 4, "factor": 2}, "noise.eps.factor"),
        ("noise.eps", {"start": -0.1, "stop": 0.3, "points": 4}, "noise.eps.start"),
        ("noise.eps", [0.1, -0.2], "noise.eps"),
        ("accumulation.bogus", 1, "accumulation.bogus"),
    ],
)
def test_spec_errors_name_their_key(key, value, blamed):
    with pytest.raises(SpecError) as err:
        spec_from_dict(_small(**{key: value}), source="acc.toml")
    assert err.value.key == blamed
    assert "acc.toml" in str(err.value) and blamed in str(err.value)


def test_a_missing_eps_and_a_file_error_name_the_file(tmp_path):
    raw = _small()
    del raw["noise"]["eps"]
    with pytest.raises(SpecError, match="noise.eps"):
        spec_from_dict(raw)
    path = tmp_path / "bad.toml"
    path.write_text(
        'name = "bad"\n[tensor]\nn = 4\n[noise]\neps = 0.1\n[solver]\nmethod = "sos"\n'
        "[accumulation]\n"
    )
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert str(path) in str(err.value) and err.value.key == "solver.method"
    with pytest.raises(SpecError) as err:
        load_spec(path, ["solver.method='sshopm'", "tensor.weight=0"])
    assert "--set tensor.weight=0" in str(err.value)


def test_the_points_grid_is_numpys_geomspace_unrounded_and_survives_a_round_trip():
    spec = spec_from_dict(_small(**{"noise.eps": {"start": 0.02, "stop": 0.6, "points": 16}}))
    want = np.geomspace(0.02, 0.6, 16)
    got = np.array(spec.axes["noise.eps"].values)
    assert got.tobytes() == want.tobytes()  # the published grid, not its 12-digit rounding
    again = spec_from_dict(json.loads(spec.to_json()))
    assert np.array(again.axes["noise.eps"].values).tobytes() == want.tobytes()
    # A plain list is rounded as on every kind's float axes.
    listed = spec_from_dict(_small(**{"noise.eps": [float(want[1])]}))
    assert listed.axes["noise.eps"].values[0] == float(f"{want[1]:.11e}")


def test_seeds_are_a_pure_function_of_seed_family_n_p_and_replicate():
    spec = spec_from_dict(_small(**{"solver.method": ["sshopm", "power"]}))
    eps = spec.axes["noise.eps"].values
    a = KIND.instance(spec, spec.settings_at({"n": 4, "p": 3, "eps": eps[0], "method": "power"}), 1)
    b = KIND.instance(
        spec, spec.settings_at({"n": 4, "p": 3, "eps": eps[2], "method": "sshopm"}), 1
    )
    want = (
        stable_hash32("noise", "coherent-tilt"),
        stable_hash32("n", 4),
        stable_hash32("p", 3),
        1,
    )
    # Neither eps nor the method enters: one stream of starts per curve, methods paired.
    assert a.spawn_key == b.spawn_key == want and a.seed == b.seed == 7
    other = KIND.instance(spec, spec.settings_at({"n": 5, "p": 3, "eps": eps[0]}), 1)
    assert other.spawn_key != want
    first, second = b.run(), b.run()
    assert first.lam_err.tobytes() == second.lam_err.tobytes()
    assert first.value_last == second.value_last


def test_a_block_computes_what_the_analysis_measures_and_meets_the_closed_form():
    """Each stored value is sroa_dist.analysis.accumulation's at the instance's own starts,
    bit for bit; and at ε = 0.01 g_p is within 1.5 % of g_p(0) = (p c_p)^-p."""
    raw = _small(**{"tensor.n": 5, "noise.eps": [0.01, 0.2]})
    spec = spec_from_dict(raw)
    layout = make_layout(spec, chunks=(2, 2, 1))
    res = compute_block(block_task(spec, layout, 0))
    got = res.data
    assert got["g_p"].shape == (2, 2, 1) and got["lam_err"].shape == (2, 2, 1, 5)
    for i, p in enumerate(layout.coord("p")):
        problem = KIND.instance(spec, spec.settings_at({"p": p, "eps": 0.01}), 0)
        want = accumulation(int(p), [0.01, 0.2], n=5, rng=problem.rng)
        assert got["g_p"][i, :, 0].tobytes() == want.g.tobytes()
        assert got["h_p"][i, :, 0].tobytes() == want.h.tobytes()
        assert got["value_other"][i, :, 0].tobytes() == want.value_other.tobytes()
        assert got["vector_other"][i, :, 0].tobytes() == want.vector_other.tobytes()
        assert got["global_gap"][i, :, 0].tobytes() == want.global_gap.tobytes()
        assert (got["last"][i, :, 0] == want.last).all() and want.last.all()
        # g_p is the target's value error over (n - 1) eps^p, and the target is among the steps.
        np.testing.assert_allclose(
            got["value_last"][i, :, 0], want.g * 4 * np.array([0.01, 0.2]) ** int(p), rtol=1e-15
        )
        assert np.isin(got["value_last"][i, :, 0], got["lam_err"][i, :, 0]).all()
        assert abs(got["g_p"][i, 0, 0] / accumulation_limit(int(p)) - 1) < 0.015


def test_shipped_specs_validate_with_an_estimate_and_reproduce_the_published_grid():
    assert {p.stem for p in SHIPPED} >= {"accumulation", "accumulation-model"}
    assert (STUDIES / "smoke" / "accumulation.toml") in SHIPPED
    for path in SHIPPED:
        spec = load_spec(path)
        est = estimate(spec, make_layout(spec), 2)
        assert est.instances > 0 and est.cpu_seconds > 0
    main = load_spec(STUDIES / "accumulation.toml")
    assert main.axes["tensor.p"].values == (3, 4, 5, 6)
    assert main.axes["tensor.n"].values == (8, 16)
    assert (
        np.array(main.axes["noise.eps"].values).tobytes() == np.geomspace(0.02, 0.6, 16).tobytes()
    )
    model = load_spec(STUDIES / "accumulation-model.toml")
    assert (
        np.array(model.axes["noise.eps"].values).tobytes() == np.geomspace(0.01, 1.5, 48).tobytes()
    )
    assert model.axes["tensor.n"].values == (16,)


def test_cost_grows_with_n_and_drops_without_the_check():
    spec = spec_from_dict(_small())
    small = KIND.instance_cost(spec, spec.settings_at({"n": 4, "p": 3, "eps": 0.02}))
    large = KIND.instance_cost(spec, spec.settings_at({"n": 5, "p": 3, "eps": 0.02}))
    assert 0 < small < large
    unchecked = spec_from_dict(
        _small(**{"accumulation.global_check": False, "accumulation.redo": False})
    )
    assert (
        KIND.instance_cost(unchecked, unchecked.settings_at({"n": 5, "p": 3, "eps": 0.02})) < large
    )


@pytest.mark.slow
def test_a_sweep_on_workers_equals_its_instances_and_resumes_to_the_same_bits(tmp_path, client):
    """run_sweep into a real zarr store on two worker processes; then a store whose first
    block was written by hand and the rest by a resumed run_sweep holds the same bits."""
    raw = _small()
    full = tmp_path / "full.zarr"
    res = run_sweep(raw, full, client=client, block_size=3)
    assert res.complete and res.n_instances == 12
    ds = open_results(full).load()
    assert ds.attrs["sroa_kind"] == "accumulation" and bool(ds["done"].all())
    spec = spec_from_dict(raw)
    for n in ds.n.values:
        for p in ds.p.values:
            for e in ds.eps.values:
                s = spec.settings_at({"n": int(n), "p": int(p), "eps": float(e)})
                want = KIND.instance(spec, s, 0).run()
                got = ds.sel(n=n, p=p, eps=e, replicate=0)
                assert np.float64(got.value_last).tobytes() == np.float64(want.value_last).tobytes()
                assert got.lam_err.values[: int(n)].tobytes() == want.lam_err.tobytes()
                assert np.isnan(got.lam_err.values[int(n) :]).all()
                g, _ = coefficients([want.value_last], [want.vector_last], int(n), [e], int(p))
                assert np.float64(got.g_p).tobytes() == g[0].tobytes()
    # Resume: one block in the store already, the rest computed by run_sweep.
    part = tmp_path / "part.zarr"
    spec = spec_from_dict(raw)
    layout = make_layout(spec, block_size=3)
    prepare_store(str(part), spec, layout)
    write_block(str(part), 0, compute_block(block_task(spec, layout, 0)))
    assert read_done(part).sum() == 1
    again = run_sweep(raw, part, client=client)
    assert again.complete and again.blocks_done_before == 1
    assert_same_bits(cube_values(part), cube_values(full))


def test_the_report_states_g_p_against_the_closed_form_and_draws_it(tmp_path):
    raw = _small(**{"tensor.n": [4, 5], "tensor.p": 3})
    spec = spec_from_dict(raw)
    layout = make_layout(spec, block_size=3)
    url = str(tmp_path / "r.zarr")
    prepare_store(url, spec, layout)
    for b in range(layout.n_blocks):
        write_block(url, b, compute_block(block_task(spec, layout, b)))
    ds = open_results(url)
    curves = accumulation_curves(ds, n=5)
    assert curves.p == 3 and curves.n == 5 and curves.eps.size == 3
    assert curves.g.tobytes() == ds["g_p"].sel(n=5, replicate=0).values.tobytes()
    with pytest.raises(ValueError, match="select every swept dim but eps"):
        accumulation_curves(ds)
    with pytest.raises(ValueError, match="p = 3, received p = 4"):
        predict_threshold(4, [8], model=curves)
    paths = write_report(ds, tmp_path / "r.md", formats=("md",), n_boot=0)
    md = paths[0].read_text()
    assert "## Accumulation: g_p(ε) against the closed form" in md
    g0 = accumulation_limit(3)
    g_min = float(ds["g_p"].sel(n=5, replicate=0).values[0])
    row = next(ln for ln in md.splitlines() if ln.startswith("| n = 5 |"))
    assert f"{g0:.4f}" in row and f"{g_min:.4f}" in row
    assert f"{100 * (g_min / g0 - 1):+.1f} %" in row and "3/3" in row
    assert "## Instances" not in md  # the kind has no per-step SROA report
    png = next(p for p in paths if p.suffix == ".png")
    assert png.name == "accumulation.png" and png.stat().st_size > 10_000
    assert math.isfinite(g0)
