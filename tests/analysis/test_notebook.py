"""examples/explore_results.ipynb, executed headless (nbclient) on a store that a real
``sroa-dist run`` made: by its default path and through ``SROA_CUBE`` it prints the API's numbers
and shows a figure; a store with one value edited through zarr, and a missing store, stop it at
its first cell with the package's two-line refusal, never with numbers.

The store is made once per module by the very command the notebook's first cell names, run in a
subprocess from a scratch folder laid out like the repository (the smoke spec at its path), so the
notebook's default relative path resolves to it exactly as in a checkout.
"""

from __future__ import annotations

import base64
import os
import re
import shlex
import shutil
from pathlib import Path

import nbformat
import pytest
import xarray as xr
import zarr
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

import sroa_dist.analysis as sa
from sroa_dist import open_results
from tests.support.helpers import ROOT, run_cli

NOTEBOOK = ROOT / "examples" / "explore_results.ipynb"


def _constant(name: str) -> str:
    """A string constant of the notebook's first code cell (``DEFAULT``, ``MAKE``)."""
    code = next(c for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code")
    found = re.search(rf'^{name} = "([^"]+)"', code.source, re.MULTILINE)
    assert found, f"the notebook's first code cell lost its {name} constant"
    return found.group(1)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A folder laid out like the repository, where the notebook's command has made its store."""
    root = tmp_path_factory.mktemp("checkout")
    make = shlex.split(_constant("MAKE"))
    assert make[:2] == ["sroa-dist", "run"], make
    spec = make[2]
    (root / spec).parent.mkdir(parents=True)
    shutil.copy(ROOT / spec, root / spec)
    (root / "examples").mkdir()
    # The command as the notebook names it; one worker to spare a shared machine (the store's
    # bits do not depend on the worker count).
    proc = run_cli(*make[1:], "--workers", "1", check=False, timeout=600, cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (root / _constant("DEFAULT")).is_dir(), proc.stdout
    return root


def _execute(cwd: Path, cube: str | None, monkeypatch) -> nbformat.NotebookNode:
    """The notebook run headless in ``cwd`` with ``SROA_CUBE`` set to ``cube`` (None: unset)."""
    if cube is None:
        monkeypatch.delenv("SROA_CUBE", raising=False)
    else:
        monkeypatch.setenv("SROA_CUBE", cube)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    )
    try:
        client.execute()
    except CellExecutionError as exc:
        exc.notebook = nb  # the outputs up to the failing cell, for the checks
        raise
    return nb


def _outputs(nb, kind: str) -> list:
    return [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == kind
    ]


def _assert_shows_the_api_numbers(nb, store: Path) -> None:
    """What the notebook printed and displayed is what the API computes from the store."""
    text = "".join(out.get("text", "") for out in _outputs(nb, "stream"))
    ds = open_results(store)
    status = sa.completeness(ds)
    summary = sa.summarize(ds, n_boot=0, status=status)
    assert status.describe() in text
    printed = re.search(r"certified_fraction = (\S+)", text)
    assert printed, text
    assert float(printed.group(1)) == summary["certified_fraction"]
    assert f"instances with results: {summary['n_instances']} of {summary['n_planned']}" in text
    # The per-step table, as displayed: every mean and spread of the errors.
    stats = sa.step_stats(ds)[["lam_err_mean", "lam_err_std", "vec_err_mean", "vec_err_std"]]
    shown = [out["data"]["text/plain"] for out in _outputs(nb, "execute_result")]
    assert repr(stats.compute().to_dataframe()) in shown
    assert "lazy: True" in text and "figure2" in text
    pngs = [
        base64.b64decode(out["data"]["image/png"])
        for out in _outputs(nb, "display_data")
        if "image/png" in out.get("data", {})
    ]
    assert len(pngs) == 1 and pngs[0].startswith(b"\x89PNG") and len(pngs[0]) > 10_000


def _refusal(exc: CellExecutionError) -> list[str]:
    """The error output of the failing cell: it must be the first code cell, nothing after ran."""
    cells = [c for c in exc.notebook.cells if c.cell_type == "code"]
    errors = [o for o in cells[0].get("outputs", []) if o.get("output_type") == "error"]
    assert errors, "the first code cell did not fail"
    assert not any(c.get("outputs") for c in cells[1:]), "cells after the refusal ran"
    return errors[0]["traceback"]


def test_the_first_cell_names_the_command_that_makes_the_store():
    intro = nbformat.read(NOTEBOOK, as_version=4).cells[0]
    assert intro.cell_type == "markdown"
    assert _constant("MAKE") in intro.source and _constant("DEFAULT") in intro.source


def test_the_committed_notebook_has_no_outputs():
    """Outputs are not committed (they would go stale and carry a machine's paths): a reader
    runs the notebook on the store the first cell names."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


@pytest.mark.slow
def test_by_its_default_path_it_prints_the_api_numbers(checkout, monkeypatch):
    # Jupyter started as `jupyter lab examples/` runs the kernel in examples/.
    nb = _execute(checkout / "examples", None, monkeypatch)
    _assert_shows_the_api_numbers(nb, checkout / _constant("DEFAULT"))


@pytest.mark.slow
def test_through_sroa_cube_it_reads_a_copy_of_the_store(checkout, tmp_path, monkeypatch):
    copy = tmp_path / "elsewhere" / "copied.zarr"
    shutil.copytree(checkout / _constant("DEFAULT"), copy)
    run_in = tmp_path / "anywhere"
    run_in.mkdir()
    nb = _execute(run_in, str(copy), monkeypatch)
    _assert_shows_the_api_numbers(nb, copy)


@pytest.mark.slow
def test_a_store_with_one_value_edited_is_refused_not_shown(checkout, tmp_path, monkeypatch):
    damaged = tmp_path / "damaged.zarr"
    shutil.copytree(checkout / _constant("DEFAULT"), damaged)
    arr = zarr.open_group(str(damaged), mode="r+")["vec_err"]
    arr[0, 0, 0] = arr[0, 0, 0] + 0.03  # a valid chunk that zarr itself reads without complaint
    assert float(xr.open_zarr(damaged, consolidated=False).vec_err[0, 0, 0]) == arr[0, 0, 0]
    with pytest.raises(CellExecutionError) as info:
        _execute(tmp_path, str(damaged), monkeypatch)
    assert info.value.ename == "DamagedStoreError"
    assert f"store {damaged}: 1 damaged block(s), never read as data: vec_err (block 0)" in str(
        info.value
    )
    lines = _refusal(info.value)
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("hint: ")
    assert "sroa-dist check" in lines[1]


@pytest.mark.slow
def test_a_missing_store_stops_with_the_command_that_makes_it(tmp_path, monkeypatch):
    (tmp_path / "examples").mkdir()
    with pytest.raises(CellExecutionError) as info:
        _execute(tmp_path / "examples", None, monkeypatch)
    assert info.value.ename == "InputError"
    lines = _refusal(info.value)
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"error: store {_constant('DEFAULT')}: not found")
    assert f"`{_constant('MAKE')}`" in lines[0]
    assert lines[1].startswith("hint: ") and "SROA_CUBE" in lines[1]
