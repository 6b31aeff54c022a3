"""examples/topic_model_moments.ipynb runs on its synthetic corpus and prints the API's number."""

from __future__ import annotations

import os
import re

import nbformat
import pytest
from nbclient import NotebookClient

from sroa_dist.moments import fit_topics, make_model, recovery_errors
from tests.support.helpers import ROOT

NOTEBOOK = ROOT / "examples" / "topic_model_moments.ipynb"


@pytest.mark.slow
def test_topic_notebook_runs_and_recovers_the_planted_topics(tmp_path, monkeypatch):
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    text = "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream"
    )
    printed = re.search(r"max_tv = (\S+)", text)
    assert printed, text
    # The notebook's number is the API's on the same seeds, and the fit succeeded. The kernel and
    # this process may run BLAS with different thread counts (earlier tests limit threads
    # in-process), which reorders floating-point sums: agreement to 1e-9 relative, not bits.
    model = make_model(
        "topics", k=5, d=300, doc_length=12, weights=[0.1, 0.15, 0.2, 0.25, 0.3], rng=0
    )
    fit = fit_topics(model.sample(30_000, rng=1).data, k=5, method="certified", rng=2)
    expected = recovery_errors(fit, model).max_component_error
    assert float(printed.group(1)) == pytest.approx(expected, rel=1e-9)
    assert "success: True" in text
    assert "certified True" in text
