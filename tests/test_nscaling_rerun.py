"""The n-scaling rerun (benchmarks/nscaling_study.py rerun, nscaling_compare.py) on tiny sizes:
it writes new files next to copies of the published ones, never touches them, resumes, and
the comparison reports per study the evaluations with a non-global step and moved brackets."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.support.helpers import ROOT

BENCH = ROOT / "benchmarks"
PUBLISHED = ROOT / "docs" / "data" / "nscaling"


def _run(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.slow
def test_the_rerun_writes_beside_the_published_files_and_is_compared(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    for name in ("gauss-p3", "tilt-p3"):
        shutil.copy(PUBLISHED / f"{name}.json", old / f"{name}.json")
    before = {p.name: p.read_bytes() for p in old.iterdir()}
    args = [str(BENCH / "nscaling_study.py"), "rerun", "--out", str(new), "--old", str(old)]
    args += ["--max-n", "8", "--studies", "gauss-p3", "tilt-p3-theorem"]
    log = _run(*args)
    # Cheapest first, then the theorem companion (on the instances of the study beside it).
    assert log.index("gauss-p3: done") < log.index("tilt-p3-theorem: done")
    assert {p.name for p in new.iterdir()} == {"gauss-p3.json", "tilt-p3-theorem.json"}
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before  # untouched
    doc = json.loads((new / "gauss-p3.json").read_text())
    assert doc["code"]["search_revision"] == 2
    published = json.loads((old / "gauss-p3.json").read_text())["results"]
    assert sorted((r["n"], r["replicate"]) for r in doc["results"]) == sorted(
        (r["n"], r["replicate"]) for r in published
    )
    for r in doc["results"]:
        assert r["scan_resolution"] < 1.25 and r["certified_ends"] is not None
        assert r["trace_fields"][:3] == ["eps", "metric", "passed"]
        assert len(r["theorem_trace"]) == len(r["trace"]) == r["n_evals"]
    theorem = json.loads((new / "tilt-p3-theorem.json").read_text())
    assert theorem["study"]["criterion"] == "theorem" and theorem["study"]["radius"] == 0.3
    assert len(theorem["results"]) == 3  # tilt-p3 published three replicates at n = 8
    # A second run computes nothing (every entry is stored).
    assert "n=" not in _run(*args).replace("thresholds", "")
    report = _run(str(BENCH / "nscaling_compare.py"), str(new), str(old))
    lines = {
        line.split(" ")[0].rstrip(":"): line for line in report.splitlines() if line[:1] != " "
    }
    assert "evaluations had a non-global step" in lines["gauss-p3"]
    assert "brackets moved: 0" in lines["gauss-p3"]  # n = 8 fails at the range's start
    assert "not rerun" in lines["tilt-p3"] and "new study" in lines["tilt-p3-theorem"]
