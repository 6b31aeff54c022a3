"""examples/explore_results.ipynb runs against a small cube and prints the API's number."""

from __future__ import annotations

import os
import re

import nbformat
import pytest
import xarray as xr
from nbclient import NotebookClient

from sroa_dist.analysis import summarize
from tests.support.analysis_cubes import figure2_cube
from tests.support.helpers import ROOT

NOTEBOOK = ROOT / "examples" / "explore_results.ipynb"


def _stdout(nb) -> str:
    return "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream"
    )


@pytest.mark.slow
def test_notebook_runs_and_prints_the_api_number(tmp_path, monkeypatch):
    store = tmp_path / "cube.zarr"
    figure2_cube(n_rep=6, n_steps=4).to_zarr(store, consolidated=False)
    monkeypatch.setenv("SROA_CUBE", str(store))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    nb = nbformat.read(NOTEBOOK, as_version=4)
    work = tmp_path / "run"
    work.mkdir()
    NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(work)}}
    ).execute()
    text = _stdout(nb)
    printed = re.search(r"certified_fraction = (\S+)", text)
    assert printed, text
    expected = summarize(xr.open_zarr(store, consolidated=False), n_boot=0)["certified_fraction"]
    assert float(printed.group(1)) == expected
    assert "lazy: True" in text and "figure2" in text
    assert (work / "figure2.png").stat().st_size > 1000
