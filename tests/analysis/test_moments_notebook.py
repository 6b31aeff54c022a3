"""examples/topic_model_moments.ipynb runs on its synthetic corpus and prints the API's numbers.

It reads no store (it samples its corpus itself), so it has no store to make or refuse; what it
says of the power method's certified steps is checked against the API's count.
"""

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
    counts = model.sample(30_000, rng=1).data
    fit = fit_topics(counts, k=5, method="certified", rng=2)
    expected = recovery_errors(fit, model).max_component_error
    assert float(printed.group(1)) == pytest.approx(expected, rel=1e-9)
    assert "success: True" in text
    assert "certified True" in text
    # The power method's steps certified by the unfolding bound, as the API counts them.
    power = fit_topics(counts, k=5, method="power", rng=2)
    counted = f"certified by the unfolding bound: {int(power.certified.sum())} of 5"
    assert counted in text


def test_the_committed_notebook_has_no_outputs():
    """Outputs are not committed (they would go stale): a reader runs the notebook."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
