"""dev.py: the interpreter it chooses for a new environment, and the once-only warning."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT))
import dev  # noqa: E402


def test_a_python_with_the_gh106883_fix_is_preferred():
    old = "/usr/bin/python3.11"
    assert dev.pick({old: (3, 11, 7)}, old) == (old, (3, 11, 7))  # no choice: this one
    found = {old: (3, 11, 7), "/opt/py3119": (3, 11, 9), "/opt/py312": (3, 12, 1)}
    assert dev.pick(found, old) == ("/opt/py312", (3, 12, 1))
    assert dev.pick({old: (3, 11, 7), "/opt/py3119": (3, 11, 9)}, old)[0] == "/opt/py3119"
    # an affected 3.11 newer than the current one is no improvement over it
    assert dev.pick({old: (3, 11, 7), "/opt/py3118": (3, 11, 8)}, old)[0] == old


def test_sroa_python_is_honoured():
    import os

    env = {**os.environ, "SROA_PYTHON": sys.executable}
    out = subprocess.run(
        [sys.executable, "-c", "import dev; print(dev.choose_python()[0])"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == sys.executable


def test_the_warning_is_given_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(dev, "VENV", tmp_path)
    monkeypatch.setattr(dev, "BIN", tmp_path / "bin")
    monkeypatch.setattr(dev, "_version", lambda python: (3, 11, 7))
    dev.warn_once()
    dev.warn_once()
    err = capsys.readouterr().err
    assert err.count("gh-106883") == 1 and "3.11.7" in err


def test_the_suite_runs_in_one_worker_per_core_unless_told():
    assert dev.pytest_args([], 2) == ["-n", "2"]
    assert dev.pytest_args(["-q"], 16) == ["-n", "4", "-q"]
    assert dev.pytest_args(["--fast"], 2) == ["-n", "2", "-m", "not slow"]
    assert dev.pytest_args(["-n", "1"], 8) == ["-n", "1"]
    assert dev.pytest_args(["-n3"], 8) == ["-n3"]
    assert dev.pytest_args(["-p", "no:xdist"], 8) == ["-p", "no:xdist"]
    assert dev.pytest_args(["tests/test_dev.py"], 1) == ["tests/test_dev.py"]
    assert dev.pytest_args([], None) == []
