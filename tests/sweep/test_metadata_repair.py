"""Lost top-level metadata is rebuilt from what the store still holds (issue 24).

A real smoke Figure 2 store, written once per module and copied per test, loses its top-level
``zarr.json``, its spec and provenance attributes, an array's metadata or a coordinate. Every
command refuses it naming ``sroa-dist check --repair-metadata``; that command rebuilds what
was lost from the copy the store keeps and the stored spec, after which the store reads bit
for bit as before. Where nothing holds the spec, or the copy does not describe the arrays, it
says what cannot be rebuilt and writes nothing.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import zarr

from sroa_dist.cli import main
from sroa_dist.sweep import load_spec
from sroa_dist.sweep.kinds import make_layout
from sroa_dist.sweep.layout import block_task
from sroa_dist.sweep.run.worker import compute_block
from sroa_dist.sweep.store import ResultStore
from sroa_dist.sweep.store.integrity import DIGEST, STORE_ATTRS
from sroa_dist.sweep.store.prepare import prepare_store
from sroa_dist.sweep.store.read import open_results
from sroa_dist.sweep.store.repair import repair_metadata
from sroa_dist.sweep.store.target import StoreMetadataError, store_kind
from tests.support.helpers import SMOKE, assert_same_bits, cube_values

FIGURE2 = SMOKE / "figure2.toml"


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    """Smoke Figure 2 in 9 blocks, every block written as a sweep's tasks write it."""
    store = tmp_path_factory.mktemp("meta") / "f2.zarr"
    spec = load_spec(FIGURE2)
    layout = make_layout(spec, block_size=4)
    rs = ResultStore(store)
    prepared = rs.prepare(spec, layout, history="first run")
    for b in range(layout.n_blocks):
        task = dataclasses.replace(
            block_task(prepared.spec, layout, b), layout_token=prepared.layout_token
        )
        rs.write(task, compute_block(task))
    return store


@pytest.fixture
def store(clean, tmp_path) -> Path:
    dst = tmp_path / "f2.zarr"
    shutil.copytree(clean, dst)
    return dst


def _root_attrs(store: Path) -> dict:
    return json.loads((store / "zarr.json").read_text())["attributes"]


def _files(store: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(store)): p.read_bytes()
        for p in sorted(store.rglob("*"))
        if p.is_file() and "sroa_lease" not in p.parts
    }


def _refusals_name_the_repair(store: Path, tmp_path: Path, capsys) -> None:
    """status, info, report, check and run each refuse in one line whose hint names the
    repair command; nothing is written."""
    before = _files(store)
    for argv in (
        ["status", str(store)],
        ["info", str(store)],
        ["report", str(store), "--out", str(tmp_path / "r")],
        ["check", str(store)],
        ["run", str(FIGURE2), "--store", str(store), "--workers", "1"],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert len(lines) == 2, err
        assert f"sroa-dist check --repair-metadata {store}" in lines[1], err
    assert _files(store) == before


def _repaired(store: Path, clean: Path, capsys) -> list[str]:
    assert main(["check", "--repair-metadata", str(store)]) == 0
    out = capsys.readouterr().out
    assert "integrity ok" in out, out
    assert_same_bits(cube_values(store), cube_values(clean))
    return [ln.removeprefix("rebuilt: ") for ln in out.splitlines() if ln.startswith("rebuilt:")]


def test_a_lost_top_level_zarr_json_is_rebuilt(store, clean, tmp_path, capsys):
    (store / "zarr.json").unlink()
    assert store_kind(str(store)) == "stranded"
    _refusals_name_the_repair(store, tmp_path, capsys)
    assert _repaired(store, clean, capsys) == ["top-level zarr.json with the spec and provenance"]
    got, want = _root_attrs(store), _root_attrs(clean)
    history = got.pop("history").splitlines()
    assert history[:-1] == want.pop("history").splitlines()
    assert "check --repair-metadata" in history[-1] and got == want
    assert zarr.open_group(str(store))[DIGEST].attrs[STORE_ATTRS] == _root_attrs(store)


def test_lost_spec_and_provenance_attributes_are_rebuilt(store, clean, tmp_path, capsys):
    doc = json.loads((store / "zarr.json").read_text())
    doc["attributes"] = {"history": doc["attributes"]["history"]}  # only the history survives
    (store / "zarr.json").write_text(json.dumps(doc))
    _refusals_name_the_repair(store, tmp_path, capsys)
    _repaired(store, clean, capsys)
    got, want = _root_attrs(store), _root_attrs(clean)
    assert got.pop("history").startswith(want.pop("history")) and got == want


def test_lost_array_metadata_and_coordinates_are_rebuilt(store, clean, tmp_path, capsys):
    (store / "lam_hat" / "zarr.json").unlink()
    shutil.rmtree(store / "noise")
    (store / "step" / "c" / "0").write_bytes(b"garbage")
    with pytest.raises(StoreMetadataError, match="coordinate 'step' cannot be read") as info:
        open_results(store)  # the garbled coordinate
    assert "repair-metadata" in info.value.hint
    rebuilt = _repaired(store, clean, capsys)
    assert rebuilt == [
        "metadata of array 'lam_hat'",
        "coordinate 'noise' (from the spec)",
        "coordinate 'step' (from the spec)",
    ]
    assert main(["check", "--repair-metadata", str(store)]) == 0  # now whole: nothing to do
    assert "rebuilt: nothing" in capsys.readouterr().out


def test_without_a_copy_it_says_what_cannot_be_rebuilt_and_writes_nothing(store, capsys):
    """A store made before the copy was kept: its spec was only in the top-level metadata."""
    meta = store / DIGEST / "zarr.json"
    doc = json.loads(meta.read_text())
    del doc["attributes"][STORE_ATTRS]
    meta.write_text(json.dumps(doc))
    (store / "zarr.json").unlink()
    before = _files(store)
    assert main(["check", "--repair-metadata", str(store)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "cannot rebuild its metadata: the spec and provenance" in err[0]
    assert "nothing written" in err[0] and err[1].startswith("hint: ")
    assert _files(store) == before


def test_a_copy_that_does_not_describe_the_arrays_writes_nothing(store, capsys):
    g = zarr.open_group(str(store), mode="r+")
    attrs = dict(g[DIGEST].attrs[STORE_ATTRS])
    spec = json.loads(attrs["spec"])
    spec["replicates"] = 8  # another grid than the arrays have
    g[DIGEST].attrs[STORE_ATTRS] = {**attrs, "spec": json.dumps(spec)}
    (store / "zarr.json").unlink()
    before = _files(store)
    assert repair_metadata(store).lost  # says why (names the array and both shapes)
    assert main(["check", "--repair-metadata", str(store)]) == 2
    err = capsys.readouterr().err
    assert "has shape [3, 12" in err and "the stored spec gives [3, 8" in err, err
    assert _files(store) == before


def test_the_copy_follows_the_top_level_attributes_and_an_older_store_gains_it(store):
    """Resuming appends history and a fence changes the layout token: both reach the copy.
    A store without a copy (made before it was kept) gains one when it is resumed."""
    spec = load_spec(FIGURE2)
    layout = make_layout(spec, block_size=4)
    prepare_store(str(store), spec, layout, history="second run")
    copy = zarr.open_group(str(store))[DIGEST].attrs[STORE_ATTRS]
    assert copy == _root_attrs(store) and copy["history"].endswith("second run")
    g = zarr.open_group(str(store), mode="r+")
    attrs = dict(g[DIGEST].attrs)
    del attrs[STORE_ATTRS]
    g[DIGEST].attrs.clear()
    g[DIGEST].attrs.update(attrs)
    prepare_store(str(store), spec, layout, history="third run")
    assert zarr.open_group(str(store))[DIGEST].attrs[STORE_ATTRS] == _root_attrs(store)
    assert np.asarray(zarr.open_group(str(store))["done"][:]).all()  # nothing recomputed
