"""dev.py: the interpreter it chooses for a new environment, the once-only warning, and the
install into the environment (uv, or pip)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.support.helpers import ROOT

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


def _tiny_project(root):
    """A one-module project with no dependencies: what dev.install does, minus the downloads."""
    (root / "tiny_pkg").mkdir(parents=True)
    (root / "tiny_pkg" / "__init__.py").write_text("ANSWER = 42\n")
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "tiny-pkg"\nversion = "0.1"\n'
    )
    return root


@pytest.mark.slow
@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_install_puts_the_project_in_the_environment(tmp_path, monkeypatch, installer):
    """A real environment, the tiny project installed editable by uv, or by pip when
    SROA_INSTALLER=pip; either way it imports, the edit of its source shows (editable), and
    what went into site-packages has its bytecode (nothing writes it later where
    PYTHONDONTWRITEBYTECODE is set, as on CI machines)."""
    project = _tiny_project(tmp_path / "proj")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    monkeypatch.setenv("SROA_INSTALLER", installer)
    assert dev.install(".", venv / "bin", project) == installer
    (project / "tiny_pkg" / "__init__.py").write_text("ANSWER = 43\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import tiny_pkg; print(tiny_pkg.ANSWER)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == "43"
    (site,) = venv.glob("lib/python3*/site-packages")
    assert list((site / "__pycache__").glob("__editable__*tiny_pkg*.pyc")), installer


@pytest.mark.slow
def test_a_failing_uv_falls_back_to_pip(tmp_path, monkeypatch, capsys):
    """uv present but failing (as where packages come only through a pip.conf mirror, which uv
    does not read): dev.install says so in one line and installs with pip."""
    project = _tiny_project(tmp_path / "proj")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    tried = tmp_path / "uv-was-called"
    fake_uv = venv / "bin" / "uv"
    fake_uv.write_text(f'#!/bin/sh\necho "$@" > {tried}\nexit 2\n')
    fake_uv.chmod(0o755)
    monkeypatch.delenv("SROA_INSTALLER", raising=False)
    assert dev.install(".", venv / "bin", project) == "pip"
    assert "-e ." in tried.read_text()  # uv was asked first, for the same target
    assert "uv could not install; trying pip" in capsys.readouterr().err
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import tiny_pkg; print(tiny_pkg.ANSWER)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == "42"


def test_dev_imports_measures_the_floor_plan_of_a_revision():
    """``dev.py imports [REV]`` needs no environment: it reads the files (or git) with ast."""
    command = [sys.executable, str(ROOT / "dev.py"), "imports", "--json"]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    numbers = json.loads(out.stdout)
    assert numbers["package"]["rooms"] >= 10 and numbers["package"]["levels"] >= 3
    assert numbers["package"]["edges"] >= numbers["package"]["rooms"] - 1


def test_the_fast_subset_is_stated_with_its_measured_cost_in_one_home():
    """README's Development paragraph and dev.py's docstring name the fast subset with the
    cost docs/results/ci.md records (dev.py said "a few minutes"; 10.6 min was measured)."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    development = readme[readme.index("Development:") :].split("\n\n")[0]
    ci = (ROOT / "docs" / "results" / "ci.md").read_text(encoding="utf-8")
    for text in (development, dev.__doc__):
        assert "test --fast" in text
        assert "a few minutes" not in text
        stated = re.findall(r"(\d+(?:\.\d+)?) min measured", text)
        assert stated, text
        assert all(f"{m} min" in ci for m in stated), stated


def test_the_project_is_compiled_where_no_process_writes_bytecode(tmp_path, monkeypatch):
    """compile_sources writes the package's bytecode (a copy of it here, so the checkout is not
    touched), which workers then load instead of compiling every module at start-up."""
    shutil.copytree(ROOT / "sroa_dist" / "cli", tmp_path / "sroa_dist" / "cli")
    monkeypatch.setattr(dev, "ROOT", tmp_path)
    monkeypatch.setattr(dev, "BIN", type(dev.BIN)(os.path.dirname(sys.executable)))
    dev.compile_sources()
    compiled = list((tmp_path / "sroa_dist" / "cli" / "__pycache__").glob("*.pyc"))
    assert len(compiled) == len(list((tmp_path / "sroa_dist" / "cli").glob("*.py")))
