"""The worst-case sweep kind (``sroa_dist.sweep.kinds.worst_case``): spec errors name their
key (a fixed-seed norm for the search is refused), seeds are a pure function of the master
seed, the coordinates and the replicate, E round-trips through a real store and re-checks to
the same certified norm, a real ``run_sweep`` equals the serial search bit for bit, and the
report has the kind's section and figure."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from sroa_dist import worst_case
from sroa_dist.analysis import write_report
from sroa_dist.analysis.worst_case import recheck_worst_cases, worst_case_rows
from sroa_dist.norms import operator_norm
from sroa_dist.sweep import load_spec, open_results, run_sweep
from sroa_dist.sweep.kinds import KINDS, estimate, kind_for_raw, make_layout, spec_from_dict
from sroa_dist.sweep.kinds.worst_case import (
    WORST_CASE,
    pack_tensor,
    packed_size,
    unpack_tensor,
)
from sroa_dist.sweep.layout import block_task
from sroa_dist.sweep.run.worker import compute_block
from sroa_dist.sweep.spec.fields import SpecError
from sroa_dist.sweep.store.block_write import write_block
from sroa_dist.sweep.store.prepare import prepare_store
from tests.support.helpers import ROOT, with_dotted

STUDIES = ROOT / "sweeps" / "studies"
#: The shipped worst_case specs (a worst-case study on another kind, e.g. the tilt-shrink
#: family's first crossing on the threshold kind, is not one).
SHIPPED = [
    path
    for path in sorted(STUDIES.glob("worst-case*.toml"))
    + sorted((STUDIES / "smoke").glob("worst-case*.toml"))
    if "[worst_case]" in path.read_text()
]

#: A tiny worst-case sweep: n = 3, p = 3, two eps, both steps' methods, 3 SROA evaluations.
TINY: dict[str, Any] = {
    "name": "wc-tiny",
    "seed": 11,
    "replicates": 1,
    "tensor": {"n": 3, "p": 3},
    "solver": {"method": ["sshopm", "certified"]},
    "worst_case": {"eps": [0.3, 0.6], "budget": 3, "n_random_starts": 1},
}


def _raw(**over: Any) -> dict[str, Any]:
    raw = copy.deepcopy(TINY)
    return with_dotted(raw, over)


def test_the_kind_is_registered_and_dispatched_by_its_table():
    assert KINDS["worst_case"] is WORST_CASE
    assert kind_for_raw(TINY) is WORST_CASE
    spec = spec_from_dict(TINY)
    assert spec.kind == "worst_case" and spec.worst_case.c == 2.0
    layout = make_layout(spec)
    assert layout.dims == ("method", "eps", "replicate")  # n, p scalars: not swept
    assert layout.n_steps == 3 and layout.n_component == max(packed_size(3, 3), 9)


@pytest.mark.parametrize(
    ("over", "key", "reason"),
    [
        ({"worst_case.norm_seeds": "fixed"}, "worst_case.norm_seeds", "fresh"),
        (
            {"solver.norm_method": "sshopm", "solver.norm_options": {"seed": 3}},
            "solver.norm_options.seed",
            "no fixed seed",
        ),
        ({"solver.norm_options": {"n_starts": 3}}, "solver.norm_options", "empty table"),
        ({"worst_case.eps": [0.0, 0.3]}, "worst_case.eps", "eps > 0"),
        ({"worst_case.search": "anneal"}, "worst_case.search", "one of"),
        (
            {"worst_case.metric": "first_failure"},
            "worst_case.metric",
            "a metric with a gradient",
        ),
        ({"worst_case.budget": 0}, "worst_case.budget", ">= 1"),
        ({"worst_case.c": -1.0}, "worst_case.c", "> 0"),
        ({"tensor.lambda_min": 1.5}, "tensor.lambda_min", "(0, 1]"),
        ({"tensor.basis": "hadamard"}, "tensor.basis", "one of"),
        ({"tensor.p": 2}, "tensor.p", "p >= 3"),
        ({"solver.steps": 2}, "solver.steps", "no value"),
        ({"solver.method": "nope"}, "solver.method", "one of"),
        ({"worst_case.typo": 1}, "worst_case.typo", ""),
        ({"output.certificates": True}, "output.certificates", "false in a worst-case"),
        ({"output.vectors": True}, "output.vectors", "false in a worst-case"),
    ],
)
def test_spec_errors_name_the_file_and_key(over, key, reason):
    with pytest.raises(SpecError) as exc:
        spec_from_dict(_raw(**over), source="wc.toml")
    msg = str(exc.value)
    assert exc.value.key == key, msg
    assert "wc.toml" in msg and reason in msg


def test_a_fixed_seed_norm_is_refused_with_the_reason(tmp_path):
    """Issue 33: a search rescaled by a fixed-seed local norm hides E's maximum from it; the
    spec says so, in the project's error grammar (error line naming the key, hint line)."""
    path = tmp_path / "wc.toml"
    path.write_text(
        "name = 'x'\n[tensor]\nn = 4\n[solver]\nmethod = 'sshopm'\nnorm_method = 'sshopm'\n"
        "[worst_case]\neps = 0.3\nnorm_seeds = 'fixed'\n"
    )
    with pytest.raises(SpecError) as exc:
        load_spec(path)
    assert exc.value.key == "worst_case.norm_seeds"
    assert "learns to hide E's maximum" in exc.value.hint


def test_seeds_are_a_pure_function_of_seed_coordinates_and_replicate():
    spec = spec_from_dict(_raw(replicates=2))
    a = spec.settings_at({"method": "sshopm", "eps": 0.3})
    b = spec.settings_at({"method": "certified", "eps": 0.3})
    c = spec.settings_at({"method": "sshopm", "eps": 0.6})
    key = WORST_CASE.instance(spec, a, 0).spawn_key
    assert key == WORST_CASE.instance(spec, a, 0).spawn_key  # no hidden state
    assert key == WORST_CASE.instance(spec, b, 0).spawn_key  # the steps' method is paired
    assert key != WORST_CASE.instance(spec, c, 0).spawn_key != a.spawn_key(1, 0)
    # Extending the eps axis leaves the existing instance's problem unchanged.
    wider = spec_from_dict(_raw(**{"worst_case.eps": [0.1, 0.3, 0.6], "replicates": 2}))
    assert WORST_CASE.instance(spec, a, 1) == WORST_CASE.instance(wider, a, 1)


def test_packing_round_trips_a_symmetric_tensor_bit_for_bit():
    res = worst_case(4, 3, 0.3, budget=2, method="gradient", rng=1, n_random_starts=0)
    packed = pack_tensor(res.E)
    assert packed.size == packed_size(4, 3) == 20
    E = unpack_tensor(np.r_[packed, np.nan, np.nan], 4, 3)  # the cube's NaN padding
    assert np.array_equal(E, res.E)
    with pytest.raises(ValueError, match="expected 20 finite entries"):
        unpack_tensor(packed[:5], 4, 3)


def _write_store(url: str, raw: dict[str, Any]) -> Any:
    spec = spec_from_dict(raw)
    layout = make_layout(spec)
    prepare_store(url, spec, layout)
    for b in range(layout.n_blocks):
        write_block(url, b, compute_block(block_task(spec, layout, b)))
    return spec


def test_e_round_trips_through_the_store_and_rechecks_to_the_same_norm(tmp_path):
    """The E a block stored, read back from a real zarr store, is the E the search returned,
    and its re-check from the store alone gives the certified norm the search stated."""
    url = str(tmp_path / "wc.zarr")
    raw = _raw(**{"solver.method": "sshopm", "worst_case.eps": 0.6})
    spec = _write_store(url, raw)
    ds = open_results(url).load()
    settings = spec.settings_at({})
    want = WORST_CASE.instance(spec, settings, 0).run()
    got = ds.isel(replicate=0)
    stored = unpack_tensor(got["E_packed"].values, 3, 3)
    assert np.array_equal(stored, want.E)
    assert float(got["ratio"]) == want.ratio and bool(got["ratio_certified"])
    assert (float(got["norm_lower"]), float(got["norm_upper"])) == want.norm_bracket
    rows = recheck_worst_cases(ds, claims_only=False)
    assert len(rows) == 1
    row = rows[0]
    nr = operator_norm(want.E, "certified", rng=0)
    assert row["norm_upper"] == pytest.approx(want.norm_bracket[1], rel=1e-9)
    assert row["norm_upper"] == float(nr.upper)
    assert row["stands"] is (row["error"] > 2.0 * row["norm_upper"])


def test_a_recheck_refutes_a_claim_whose_ratio_the_store_overstates(tmp_path):
    """A stored instance whose ratio was tampered above c (a claim nothing backs) is refuted
    by the re-check, which trusts only E, lambda and V."""
    url = str(tmp_path / "wc.zarr")
    _write_store(url, _raw(**{"solver.method": "sshopm", "worst_case.eps": 0.3}))
    ds = open_results(url).load()
    ds["exceeds_c"][...] = True
    ds["ratio"][...] = 5.0
    (row,) = recheck_worst_cases(ds)
    assert row["stored_ratio"] == 5.0 and row["stands"] is False
    assert row["ratio"] < 2.0 and "<=" in row["reason"]


@pytest.mark.slow
def test_run_sweep_equals_the_serial_search_bit_for_bit_and_reports(tmp_path, client):
    """A real sweep on the test cluster, resuming a store with one block written in this
    process, writes per instance what worst_case returns serially, bit for bit; the report has
    the kind's table and figure (ratio against n, its kind marked)."""
    raw = _raw(**{"tensor.n": [3, 4], "solver.method": "sshopm"})
    url = tmp_path / "wc.zarr"
    spec = spec_from_dict(raw)
    layout = make_layout(spec)
    prepare_store(str(url), spec, layout)  # one block written here: the run resumes the rest
    write_block(str(url), 0, compute_block(block_task(spec, layout, 0)))
    res = run_sweep(raw, url, client=client)
    assert res.complete and res.n_instances == 4
    assert res.blocks_done_before == 1 and res.blocks_computed == 3
    ds = open_results(url).load()
    for n in (3, 4):
        for eps in (0.3, 0.6):
            st = spec.settings_at({"n": n, "eps": eps})
            want = WORST_CASE.instance(spec, st, 0).run()
            got = ds.sel(n=n, eps=eps, replicate=0)
            assert np.float64(got["ratio"]).tobytes() == np.float64(want.ratio).tobytes()
            assert np.array_equal(unpack_tensor(got["E_packed"].values, n, 3), want.E)
    rows = worst_case_rows(ds)
    assert [(r["n"], r["instances"]) for r in rows] == [(3, 2), (4, 2)]
    written = write_report(ds, tmp_path / "r.md", formats=("md",), n_boot=0)
    md = written[0].read_text()
    assert "## Worst case: the adversary's ratio against n" in md
    assert "worst_case_ratio.png" in md
    assert any(p.name == "worst_case_ratio.png" and p.stat().st_size > 0 for p in written)
    assert "certified" in md


@pytest.mark.parametrize("path", SHIPPED, ids=[str(p.relative_to(STUDIES)) for p in SHIPPED])
def test_every_shipped_worst_case_spec_loads_and_has_a_cost(path):
    spec = load_spec(path)
    assert spec.kind == "worst_case"
    layout = make_layout(spec)
    est = estimate(spec, layout, workers=2)
    assert est.cpu_seconds > 0 and np.isfinite(est.cpu_seconds)
