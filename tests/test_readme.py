"""The README's Python examples run as written, in a fresh folder beside the shipped specs."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support.helpers import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def test_readme_has_python_examples():
    assert len(BLOCKS) >= 2, "the README lost its Python examples"


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_block_runs_as_written(index, tmp_path):
    (tmp_path / "sweeps").symlink_to(ROOT / "sweeps")
    script = tmp_path / "example.py"
    script.write_text(BLOCKS[index], encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, f"README Python block {index} failed:\n{proc.stderr[-3000:]}"
