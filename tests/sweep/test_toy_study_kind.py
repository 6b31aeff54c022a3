"""A new study is one kind module plus one spec, with no edit elsewhere (issue 34).

The toy study kind of tests/sweep/toy_study_kind.py, named by its spec tests/sweep/toy_spike.toml
through ``kind = "package.module:NAME"``, runs through ``run_sweep`` on real Dask worker processes
into a real zarr store, equals its instances run one by one, resumes bit for bit, is opened,
reported and plotted from the store (in a fresh process too, through the CLI), and documents its
own keys -- while no file under sroa_dist/ names it. A ``kind`` that cannot be imported or does
not implement the protocol is refused naming the key and the reason.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr

from sroa_dist.analysis import plot_cube, supported_figures, write_report
from sroa_dist.cli import reference
from sroa_dist.sweep import load_spec, open_results, run_sweep
from sroa_dist.sweep.kinds import BUILTIN, KINDS, kind_of, make_layout, spec_from_dict
from sroa_dist.sweep.layout import block_task
from sroa_dist.sweep.run.worker import compute_block
from sroa_dist.sweep.spec.fields import SpecError
from sroa_dist.sweep.store.block_write import write_block
from sroa_dist.sweep.store.prepare import prepare_store, read_done
from tests.support.helpers import ROOT, assert_same_bits, cube_values, run_cli
from tests.sweep import toy_study_kind as toy

SPEC = ROOT / "tests" / "sweep" / "toy_spike.toml"


def test_no_file_under_sroa_dist_names_the_toy_study():
    """The proof of "no edit elsewhere": the package has no line about the toy kind, its
    module, its marker or its spec."""
    needles = ("toy_spike", "toy_study_kind", "toy-spike", "spike_overlap")
    named = []
    for path in sorted((ROOT / "sroa_dist").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            text = path.read_bytes().decode("utf-8", errors="replace")
            named += [f"{path.relative_to(ROOT)}: {n}" for n in needles if n in text]
    assert not named, named
    assert "toy_spike" not in BUILTIN


def test_the_spec_names_its_kind_by_path_and_the_kind_describes_itself():
    spec = load_spec(SPEC)
    assert isinstance(spec, toy.SpikeSpec) and kind_of(spec) is toy.TOY_SPIKE
    assert spec.data["kind"] == toy.PATH  # kept in the resolved spec (its JSON, the store's)
    assert json.loads(spec.to_json())["kind"] == toy.PATH
    # The reference generator reads the toy's keys and meanings from the toy.
    section = reference.spec_section(toy.TOY_SPIKE)
    assert "## `toy_spike` sweeps (marker table `[toy_spike]`)" in section
    assert "| `toy_spike.level` | `float_axis` | required | `level` | noise level" in section
    assert "| `seed` |" in section and "master seed" in section  # the common keys' meanings
    # ... but the package's own pages document the package only.
    assert "toy_spike" not in reference.spec_page() + reference.cube_page()


def test_the_toy_study_runs_on_workers_reports_and_resumes_bit_for_bit(tmp_path, client):
    """run_sweep of the spec file on two worker processes; the values are the instances run
    here one by one; a store whose first block was written by hand and the rest by a resumed
    run_sweep holds the same bits; the report and the plot reach the toy's own hooks."""
    full = tmp_path / "full.zarr"
    res = run_sweep(SPEC, full, client=client, block_size=6)
    assert res.complete and res.n_instances == 24 and not res.failed
    ds = open_results(full).load()
    assert zarr.open_group(str(full), mode="r").attrs["sroa_kind"] == "toy_spike"
    assert json.loads(ds.attrs["spec"])["kind"] == toy.PATH  # provenance: the kind's path
    assert ds.attrs["setting_strength"] == 1.0
    assert ds["level"].attrs["long_name"] == toy.LEVEL.long_name  # the toy's own dim
    spec = load_spec(SPEC)
    for n in ds["n"].values:
        for level in ds["level"].values:
            settings = spec.settings_at({"n": int(n), "level": float(level)})
            for r in range(3):
                overlap, top = toy.TOY_SPIKE.instance(spec, settings, r).run()
                got = ds.sel(n=n, level=level, replicate=r)
                assert np.float64(got["overlap"]).tobytes() == np.float64(overlap).tobytes()
                assert np.float64(got["top_eig"]).tobytes() == np.float64(top).tobytes()
    # The study sees its transition: below level = strength the overlap stays, above it fades.
    mean = ds["overlap"].sel(n=16).mean("replicate")
    assert float(mean.sel(level=0.25)) > 0.9 > float(mean.sel(level=2.0))

    part = tmp_path / "part.zarr"
    layout = make_layout(spec, block_size=6)
    prepare_store(str(part), spec, layout)
    write_block(str(part), 0, compute_block(block_task(spec, layout, 0)))
    assert read_done(part).sum() == 1
    again = run_sweep(SPEC, part, client=client)
    assert again.complete and again.blocks_done_before == 1
    assert_same_bits(cube_values(part), cube_values(full))
    # A changed instance setting is refused on resume, as for any kind.
    with pytest.raises(ValueError, match=r"toy_spike\.strength: 1\.0 -> 2\.0"):
        run_sweep(SPEC, part, client=client, toy_spike__strength=2.0)

    md = write_report(ds, tmp_path / "r.md", formats=("md",), n_boot=0)[0].read_text()
    assert "## Spike overlap" in md and "| 16 | 0.25 |" in md
    assert "## Instances" not in md
    assert supported_figures(ds) == ["spike_overlap"]
    drawn = plot_cube(ds, tmp_path / "figs", formats=("png",))
    assert [p.name for p in drawn] == ["spike_overlap.png"] and drawn[0].stat().st_size > 0


@pytest.mark.slow  # two CLI subprocesses (about 15 s each on a loaded 2-core machine)
def test_a_fresh_process_finds_the_kind_from_the_store(tmp_path):
    """Processes that never imported the toy report the store and validate the spec through
    the CLI: the store's spec names the kind's path, and the kind is imported from it."""
    store = tmp_path / "toy.zarr"
    spec = load_spec(SPEC, ["toy_spike.n=[4]", "replicates=1"])
    layout = make_layout(spec, block_size=4)
    prepare_store(str(store), spec, layout)
    for b in range(layout.n_blocks):
        write_block(str(store), b, compute_block(block_task(spec, layout, b)))
    # `report` runs in a process that never imported the toy: it opens the store, whose spec
    # names the kind's path, and reaches the toy's report section.
    run_cli("report", str(store), "--out", str(tmp_path / "rep"), "--format", "md", cwd=tmp_path)
    assert "## Spike overlap" in (tmp_path / "rep.md").read_text()
    validate = run_cli("validate", str(SPEC), cwd=tmp_path)
    assert "one eigendecomposition per instance" in validate.stdout


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("no_such_module_xyz:KIND", "cannot import module 'no_such_module_xyz'"),
        ("tests.sweep.toy_study_kind:NOPE", "has no attribute 'NOPE'"),
        ("tests.sweep.toy_study_kind:SpikeSpec", "lacks"),
        ("tests.sweep.toy_study_kind:ToySpikeKind", "a class, not its kind object"),
        ("no-such-kind", "import path"),
        (3, "import path"),
    ],
)
def test_a_kind_that_cannot_be_used_is_refused_naming_the_key(kind, reason):
    raw = {"kind": kind, "name": "t", "toy_spike": {"n": 4, "level": 0.5}}
    with pytest.raises(SpecError, match=r"\bkind\b") as info:
        spec_from_dict(raw, "toy.toml")
    assert info.value.key == "kind" and reason in str(info.value), str(info.value)
    assert "toy.toml" in str(info.value)


def test_a_kind_path_with_another_kinds_tables_is_refused():
    """The ``kind`` key decides: another kind's marker table is an unknown key of this one."""
    raw = {"kind": toy.PATH, "name": "t", "toy_spike": {"n": 4, "level": 0.5}, "threshold": {}}
    with pytest.raises(SpecError) as info:
        spec_from_dict(raw)
    assert info.value.key == "threshold" and "'toy_spike'" in str(info.value)
    assert KINDS["threshold"].name == "threshold"


def test_a_kind_figure_named_like_a_shared_one_is_refused(monkeypatch):
    """A kind's own figures (``KindAnalysis.drawings``) may not shadow a name of FIGURES:
    ``plot`` would not know which one to draw."""
    import xarray as xr

    from sroa_dist.analysis import KindAnalysis

    load_spec(SPEC)  # the toy kind, imported by its path and registered in this process
    cube = xr.Dataset(attrs={"sroa_kind": "toy_spike"})
    assert supported_figures(cube) == ["spike_overlap"]
    clash = KindAnalysis(instances=False, figures=lambda ds: [], drawings={"figure1": print})
    monkeypatch.setattr(toy.TOY_SPIKE, "analysis", clash)
    with pytest.raises(ValueError, match=r"drawings: .*\['figure1'\], which are names of FIGURES"):
        supported_figures(cube)
