"""The escape sweep kind (``sroa_dist.sweep.kinds.start_escape``): spec errors name their key,
the budget is the package's one ``aghkt_budget``, an instance is a pure function of (seed,
coordinates, replicate) on real workers and on resume, q meets its closed form where every
start escapes or none does, and the report gets the kind's section and figure."""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pytest
import zarr

from sroa_dist.analysis import write_report
from sroa_dist.analysis.escape import escape_rows
from sroa_dist.methods.builtin import aghkt_budget
from sroa_dist.studies.start_escape import escape_probability, step_successes
from sroa_dist.sweep import load_spec, open_results, run_sweep
from sroa_dist.sweep.kinds import (
    KINDS,
    estimate,
    kind_for_raw,
    kind_of,
    make_layout,
    spec_from_dict,
)
from sroa_dist.sweep.kinds.start_escape import ESCAPE_VARIABLES, parse_solver, parse_stages
from sroa_dist.sweep.spec.fields import SpecError
from tests.support.helpers import ROOT, assert_same_bits, cube_values, run_cli, with_dotted


def _escape_specs(folder):
    return sorted(p for p in folder.glob("*.toml") if "escape" in tomllib.loads(p.read_text()))


STUDIES = _escape_specs(ROOT / "sweeps" / "studies")
SMOKES = _escape_specs(ROOT / "sweeps" / "studies" / "smoke")


def _tiny(**over):
    """Two solvers at n = 8: ε tiny (every start reaches a component) and ε = 5 (none does)."""
    raw = {
        "name": "esc-tiny",
        "seed": 11,
        "replicates": 2,
        "tensor": {"n": 8},
        "noise": {"model": "attractor", "eps": [1e-9, 5.0]},
        "solver": {"method": ["power@2", "sshopm@global"]},
        "escape": {"starts": 40, "stages": "n, n/2, 1"},
    }
    return with_dotted(raw, over)


def test_the_kind_is_registered_and_marked_by_its_table():
    assert kind_for_raw(_tiny()) is KINDS["escape"]
    spec = spec_from_dict(_tiny())
    assert spec.kind == "escape" and spec.sweep_dims() == ["method", "eps"]
    assert kind_of(spec).variables(spec) is ESCAPE_VARIABLES


@pytest.mark.parametrize(
    ("key", "value", "blamed"),
    [
        ("solver.method", "power@0", "solver.method"),
        ("solver.method", ["power@20", "certified"], "solver.method"),
        ("solver.options", {"n_starts": 3}, "solver.options"),
        ("noise.model", "gaussian", "noise.model"),
        ("noise.eps", [-0.1, 0.5], "noise.eps"),
        ("tensor.p", 5, "tensor.p"),
        ("tensor.n", 1, "tensor.n"),
        ("escape.stages", "n/x, 1", "escape.stages"),
        ("escape.radius", 2.0, "escape.radius"),
        ("escape.starts", -1, "escape.starts"),
        ("escape.n_iter", 0, "escape.n_iter"),
        ("escape.bogus", 1, "escape.bogus"),
    ],
)
def test_spec_errors_name_their_key(key, value, blamed):
    with pytest.raises(SpecError) as err:
        spec_from_dict(_tiny(**{key: value}), "esc.toml")
    assert f"esc.toml: key '{blamed}'" in str(err.value)


def test_an_instance_that_measures_nothing_is_refused():
    with pytest.raises(SpecError, match="key 'escape.sroa'"):
        spec_from_dict(_tiny(**{"escape.starts": 0, "escape.sroa": False}))


def test_the_cli_names_the_file_and_key_in_the_error_grammar(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'name = "x"\n[tensor]\nn = 8\n[noise]\neps = 0.5\n[solver]\nmethod = "power@many"\n'
        "[escape]\nstarts = 10\n"
    )
    res = run_cli("validate", str(bad), check=False)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2
    assert f"error: {bad}: key 'solver.method'" in lines[0] and "power@many" in lines[0]
    assert "hint: solver labels: power@20, power@aghkt" in lines[1]


def test_budgets_are_the_labels_and_the_packages_aghkt_budget():
    assert parse_solver("power@20").budget(64, 0.3, 30) == (20, 30)
    assert parse_solver("power@aghkt").budget(64, 0.3, 30) == aghkt_budget(64, 0.3)
    L, N = aghkt_budget(100, 0.2)
    assert parse_solver("power@aghkt*0.5").budget(100, 0.2, 30) == (math.ceil(0.5 * L), N)
    assert parse_solver("sshopm@global").global_steps and not parse_solver("sshopm").power
    with pytest.raises(ValueError):
        parse_solver("power@aghkt*x")
    assert parse_stages("n, n/8, 4, 1", 16) == (16, 4, 2, 1)
    assert parse_stages("n, n/8, 4, 1", 2) == (2, 1)  # clipped and deduplicated


def test_q_is_one_or_zero_where_every_start_escapes_or_none_does():
    """Closed forms: at ε → 0 the stage tensor is orthogonal, and p = 3 power iterations square
    every coordinate, so each start converges to its largest still-present component (q = 1
    at every stage); at ε = 5 the attractor holds every start near u, at distance
    ``sqrt(2 − 2/sqrt(n))`` from every component (q = 0)."""
    for r in (8, 3, 1):
        assert escape_probability(8, 1e-9, remaining=r, n_starts=100, n_iter=30, rng=3).q == 1
        assert escape_probability(8, 5.0, remaining=r, n_starts=100, n_iter=30, rng=3).q == 0


def test_a_component_found_twice_is_a_lost_step():
    V = np.eye(3)[:, [0, 0, 2]]
    assert step_successes(V).tolist() == [True, False, True]


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory, cluster):
    """A real run_sweep of the tiny spec on the test cluster's worker processes."""
    from distributed import Client

    store = tmp_path_factory.mktemp("esc") / "tiny.zarr"
    with Client(cluster) as client:
        res = run_sweep(_tiny(), store, client=client, block_size=2)
    assert res.complete
    return store


def test_a_sweep_on_workers_equals_each_instance_run_serially(tiny_store):
    ds = open_results(tiny_store).load()
    spec = spec_from_dict(_tiny())
    kind = KINDS["escape"]
    for m in ds.method.values:
        for e in ds.eps.values:
            for rep in ds.replicate.values:
                settings = spec.settings_at({"method": str(m), "eps": float(e)})
                want = kind.instance(spec, settings, int(rep)).run()
                got = ds.sel({"method": m, "eps": e, "replicate": rep})
                for j, hits in want["hits"].items():
                    assert float(got.escape_hits[j]) == hits
                assert int(np.isfinite(got.escape_hits).sum()) == len(want["hits"])
                sroa = want["sroa"]
                assert got.step_found.values.tobytes() == sroa.found.astype("f8").tobytes()
                assert float(got.first_lost) == sroa.first_lost
    # the closed forms, through the kind: every start and every step at ε = 1e-9, none at 5
    power = ds.sel({"method": "power@2"})
    assert (power.escape_hits.sel(eps=1e-9).isel(step=[0, 4, 7]) == 40).all()
    assert (power.escape_hits.sel(eps=5.0).isel(step=[0, 4, 7]) == 0).all()
    assert (ds.sroa_success.sel(eps=1e-9) == 1).all() and (ds.sroa_success.sel(eps=5.0) == 0).all()
    assert np.isnan(ds.escape_hits.sel({"method": "sshopm@global"})).all()  # no budget, no q
    assert (ds.lost_u_overlap.sel({"eps": 5.0, "method": "power@2"}) > 0.99).all()  # captured by u


def test_resume_and_another_blocking_give_the_same_bits(tiny_store, tmp_path, client):
    other = tmp_path / "other.zarr"
    first = run_sweep(_tiny(), other, client=client, block_size=4)
    assert first.complete and first.n_blocks == 2
    assert_same_bits(cube_values(tiny_store), cube_values(other))
    g = zarr.open_group(str(other), mode="r+")
    g["done"][1] = False  # block 1 to redo, as after an interruption
    res = run_sweep(_tiny(), other, client=client)
    assert res.complete and res.blocks_computed == 1
    assert_same_bits(cube_values(tiny_store), cube_values(other))


def test_the_report_has_the_kinds_section_and_figure(tiny_store, tmp_path):
    ds = open_results(tiny_store)
    md = write_report(ds, tmp_path / "r.md", formats=("md",), n_boot=0)[0].read_text()
    assert "## Start escape: q against whole SROAs" in md and "## Instances" not in md
    for name in ("escape_q", "escape_whole_vs_predicted"):
        assert (tmp_path / "r_figures" / f"{name}.png").stat().st_size > 10_000
    rows = {(r["method"], r["eps"]): r for r in escape_rows(ds)}
    tiny = rows[("power@2", 1e-9)]
    assert [s["r"] for s in tiny["stages"]] == [8, 4, 1]
    assert tiny["stages"][0]["hits"] == 80 and tiny["predicted_first"] == 1.0  # 2 replicates
    assert tiny["whole_found"] == (2, 2)
    assert rows[("power@2", 5.0)]["predicted_first"] == 0.0
    assert "predicted_first" not in rows[("sshopm@global", 5.0)]
    assert "| 8 | 1e-09 | power@2 | 2, 30 | 80/80 = 1.000" in md
    caught = rows[("power@2", 5.0)]["lost"]
    assert caught["runs"] == 2 and caught["captured"] == 2  # every run lost step 1 to u
    assert rows[("power@2", 1e-9)]["lost"]["runs"] == 0


@pytest.mark.parametrize("path", STUDIES + SMOKES, ids=lambda p: p.stem)
def test_shipped_escape_specs_validate_with_an_estimate(path):
    assert len(STUDIES) == len(SMOKES) == 5  # every study has its smoke variant
    raw = tomllib.loads(path.read_text())
    assert kind_for_raw(raw).name == "escape"
    spec = load_spec(path)
    est = estimate(spec, make_layout(spec), workers=2)
    assert est.cpu_seconds > 0
    if path in SMOKES:  # about a minute on 2 cores
        assert est.cpu_seconds < 120
