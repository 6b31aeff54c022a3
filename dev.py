#!/usr/bin/env python3
"""Developer entry point that needs nothing but Python >= 3.11.

    python dev.py demo         # create .venv if needed, install, run the default sweep
    python dev.py test         # create .venv if needed, install with test extras, run pytest
                               # in parallel worker processes (pytest-xdist, one per core, <= 4)
    python dev.py test --fast  # the everyday subset, the tests not marked slow (about 4 in
                               # 5): 10.6 min measured on 2 busy cores (whole suite: 15-22
                               # min); one file: python dev.py test tests/x/test_y.py
    python dev.py bench        # run the benchmarks (writes benchmarks/out/*.json)
    python dev.py imports [REV]  # rooms, import levels and edges of the package (or of a
                                 # git revision): tests/support/import_graph.py, no install
    python dev.py docs [--check]  # write docs/reference/ from the code (--check: exit 1
                                  # naming the stale pages; the test suite checks it too)
    python dev.py results [--check] [--figures]  # the generated tables and figures of
                                  # docs/results from docs/data (study stores, else JSON);
                                  # --check: exit 1 naming the pages that drifted

Extra arguments after the command go to the underlying tool (sroa-dist run / pytest).

The virtual environment is made with the newest Python on PATH that has the fix for CPython
gh-106883 (3.11.9 or later): on 3.11.0-3.11.8 a garbage collection during Dask's profiler can
deadlock a worker. sroa-dist turns that profiler off, so older 3.11 releases work; dev.py
warns once when it has no better choice. SROA_PYTHON=/path/to/python picks the interpreter;
SROA_VENV the environment's folder; SROA_INSTALLER=pip installs with pip instead of uv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("SROA_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
DEMO = ["run", "sweeps/figure2-sshopm.toml"]
#: The generated reference pages (relative, so that messages name no path of this machine).
REFERENCE = "docs/reference"
#: First release of each minor version with the fix for CPython gh-106883.
FIXED = (3, 11, 9)
CANDIDATES = ("python3.14", "python3.13", "python3.12", "python3.11", "python3", "python")
_PROBE = "import sys, venv, ensurepip; print('%d.%d.%d' % sys.version_info[:3])"


def _version(python: str) -> tuple[int, ...] | None:
    """The version of a Python that can make virtual environments, or None."""
    try:
        out = subprocess.run(
            [python, "-c", _PROBE], capture_output=True, text=True, timeout=30, check=True
        )
        return tuple(int(x) for x in out.stdout.strip().split("."))
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def choose_python() -> tuple[str, tuple[int, ...]]:
    """The interpreter for a new environment: SROA_PYTHON if set; else the newest >= 3.11 on
    PATH, preferring one with the gh-106883 fix (>= 3.11.9); else this one."""
    forced = os.environ.get("SROA_PYTHON")
    if forced:
        version = _version(forced)
        if version is None:
            sys.exit(f"dev.py: SROA_PYTHON={forced}: expected a Python that can run venv")
        return forced, version
    found = {sys.executable: tuple(sys.version_info[:3])}
    for name in CANDIDATES:
        path = shutil.which(name)
        if path and os.path.realpath(path) not in map(os.path.realpath, found):
            version = _version(path)
            if version is not None and version >= (3, 11):
                found[path] = version
    return pick(found, sys.executable)


def pick(found: dict[str, tuple[int, ...]], current: str) -> tuple[str, tuple[int, ...]]:
    """The newest of ``found`` (path -> version) with the gh-106883 fix, else ``current``."""
    fixed = {p: v for p, v in found.items() if v >= FIXED}
    pool = fixed or {current: found[current]}
    return max(pool.items(), key=lambda item: item[1])


def warn_once() -> None:
    """Warn (once per environment) when its Python lacks the gh-106883 fix."""
    stamp = VENV / ".python-checked"
    if stamp.exists():
        return
    version = _version(str(BIN / "python"))
    stamp.touch()
    if version is None or version >= FIXED:
        return
    print(
        f"dev.py: warning: Python {'.'.join(map(str, version))} lacks the fix for CPython "
        "gh-106883 (a rare worker deadlock in Dask's profiler, fixed in 3.11.9); sroa-dist "
        "turns the profiler off, and task deadlines end any other hang. Install Python "
        ">= 3.11.9 and set SROA_PYTHON to use it.",
        file=sys.stderr,
        flush=True,
    )


def ensure_env(extras: str) -> None:
    """Create the virtual environment once and (re)install the project when pyproject changes."""
    if not (BIN / "python").exists():
        python, _ = choose_python()
        print(f"creating virtual environment in {VENV} (Python {python})", flush=True)
        subprocess.run([python, "-m", "venv", str(VENV)], check=True)
    warn_once()
    stamp = VENV / f".installed-{extras or 'base'}"
    pyproject = ROOT / "pyproject.toml"
    if not (stamp.exists() and stamp.stat().st_mtime >= pyproject.stat().st_mtime):
        target = f".[{extras}]" if extras else "."
        print(f"installing sroa-dist{f'[{extras}]' if extras else ''} into {VENV}", flush=True)
        install(target, BIN, ROOT)
        stamp.touch()
    compile_sources()


def compile_sources() -> None:
    """Compile the project's own modules (editable, so the installer compiled none of them).
    Where PYTHONDONTWRITEBYTECODE is set, as on CI machines, every Dask worker would otherwise
    compile the package from source at start-up: a share of a short sweep's worker CPU.
    Incremental: only modules changed since their last compile are compiled again."""
    subprocess.run(
        [str(BIN / "python"), "-m", "compileall", "-q", "sroa_dist"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        check=False,
    )


def install(target: str, bin_dir: Path, cwd: Path) -> str:
    """Install ``target`` (editable) into the environment of ``bin_dir``; returns the installer
    used. uv when it can be had, pip otherwise or when SROA_INSTALLER=pip: the test extras took
    pip 198 s here and uv 62 s. Both compile the bytecode at install: where
    PYTHONDONTWRITEBYTECODE is set (as on CI machines), nothing compiles it later and every
    process would compile dask, scipy and the rest from source again. uv does not read pip's
    configuration, so a machine that reaches packages only through a pip.conf mirror falls
    back to pip after uv fails (or sets SROA_INSTALLER=pip)."""
    python = str(bin_dir / "python")
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    if os.environ.get("SROA_INSTALLER", "uv") != "pip":
        uv = bin_dir / ("uv.exe" if os.name == "nt" else "uv")
        if not uv.exists():
            subprocess.run(pip + ["uv"], cwd=cwd, capture_output=True)
        if uv.exists():
            command = [str(uv), "pip", "install", "-q", "--compile-bytecode", "--python", python]
            if subprocess.run([*command, "-e", target], cwd=cwd).returncode == 0:
                return "uv"
            print("dev.py: uv could not install; trying pip", file=sys.stderr, flush=True)
    subprocess.run(pip + ["-e", target], cwd=cwd, check=True)
    return "pip"


def pytest_args(rest: list[str], cores: int | None) -> list[str]:
    """pytest's arguments for ``dev.py test REST``: ``--fast`` becomes ``-m "not slow"``, and
    the suite runs in ``min(cores, 4)`` pytest-xdist workers unless REST chooses (``-n``, ``-p
    no:xdist``) or there is one core. Many tests wait on Dask workers, subprocesses and
    leases, and parallel workers overlap those waits."""
    if "--fast" in rest:  # the slow marker is documented in pyproject.toml
        rest = ["-m", "not slow", *(a for a in rest if a != "--fast")]
    chosen = any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in rest)
    chosen = chosen or "no:xdist" in rest
    workers = min(cores or 1, 4)
    return rest if chosen or workers < 2 else ["-n", str(workers), *rest]


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"demo", "test", "bench", "imports", "docs", "results"}:
        print(__doc__)
        return 2
    command, rest = argv[0], argv[1:]
    if command == "imports":  # the standard library only: no environment needed
        graph = ROOT / "tests" / "support" / "import_graph.py"
        return subprocess.call([sys.executable, str(graph), *rest], cwd=ROOT)
    if command == "docs":  # generated from the installed package's parser, schemas and names
        ensure_env("")
        module = "sroa_dist.cli.reference"
        return subprocess.call([str(BIN / "python"), "-m", module, REFERENCE, *rest], cwd=ROOT)
    if command == "results":  # generated from the data under docs/data, by the analysis layer
        ensure_env("")
        module = "sroa_dist.analysis.published"
        return subprocess.call([str(BIN / "python"), "-m", module, ".", *rest], cwd=ROOT)
    if command == "demo":
        ensure_env("")
        return subprocess.call([str(BIN / "sroa-dist"), *DEMO, *rest], cwd=ROOT)
    if command == "test":
        ensure_env("test")
        args = pytest_args(rest, os.cpu_count())
        return subprocess.call([str(BIN / "python"), "-m", "pytest", *args], cwd=ROOT)
    ensure_env("test,bench")
    scripts = sorted((ROOT / "benchmarks").glob("bench_*.py"))
    return max(subprocess.call([str(BIN / "python"), str(s), *rest], cwd=ROOT) for s in scripts)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
