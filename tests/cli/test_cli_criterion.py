"""`sroa-dist plot/report --criterion ... --c/--radius`: the criterion reaches the outputs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import ROOT


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sroa_dist.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def nscaling_store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("crit")
    store = tmp / "s.zarr"
    proc = _cli(
        "run",
        str(ROOT / "sweeps/smoke/nscaling.toml"),
        "--store",
        str(store),
        "--workers",
        "1",
        cwd=tmp,
    )
    assert proc.returncode == 0, proc.stderr
    return store


@pytest.mark.slow
def test_report_states_the_chosen_value_criterion(nscaling_store, tmp_path):
    out = tmp_path / "rep"
    proc = _cli(
        "report",
        str(nscaling_store),
        "--out",
        str(out),
        "--format",
        "md",
        "--criterion",
        "value",
        "--c",
        "0.5",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "rep.md").read_text(encoding="utf-8")
    assert "0.5·ε" in md
    assert "1·ε" not in md.replace("0.1·ε", "")  # the old default c = 1 is gone


def test_bad_criterion_is_one_line(nscaling_store, tmp_path):
    proc = _cli("report", str(nscaling_store), "--criterion", "nope", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 2 and lines[1].startswith("hint: "), proc.stderr
    assert "--criterion: expected one of recovery, value, theorem; received 'nope'" in lines[0]
    assert "Traceback" not in proc.stderr
