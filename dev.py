#!/usr/bin/env python3
"""Developer entry point that needs nothing but Python >= 3.11.

    python dev.py demo      # create .venv if needed, install, run the default sweep
    python dev.py test      # create .venv if needed, install with test extras, run pytest
    python dev.py bench     # run the benchmarks (writes benchmarks/out/*.json)

Extra arguments after the command go to the underlying tool (sroa-dist run / pytest).
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("SROA_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
DEMO = ["run", "sweeps/figure2-sshopm.toml"]


def ensure_env(extras: str) -> None:
    """Create the virtual environment once and (re)install the project when pyproject changes."""
    if not (BIN / "python").exists():
        print(f"creating virtual environment in {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    stamp = VENV / f".installed-{extras or 'base'}"
    pyproject = ROOT / "pyproject.toml"
    if stamp.exists() and stamp.stat().st_mtime >= pyproject.stat().st_mtime:
        return
    target = f".[{extras}]" if extras else "."
    print(f"installing sroa-dist{f'[{extras}]' if extras else ''} into {VENV}", flush=True)
    pip = [str(BIN / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + ["-e", target], cwd=ROOT, check=True)
    stamp.touch()


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"demo", "test", "bench"}:
        print(__doc__)
        return 2
    command, rest = argv[0], argv[1:]
    if command == "demo":
        ensure_env("")
        return subprocess.call([str(BIN / "sroa-dist"), *DEMO, *rest], cwd=ROOT)
    if command == "test":
        ensure_env("test")
        return subprocess.call([str(BIN / "python"), "-m", "pytest", *rest], cwd=ROOT)
    ensure_env("test,bench")
    scripts = sorted((ROOT / "benchmarks").glob("bench_*.py"))
    return max(subprocess.call([str(BIN / "python"), str(s), *rest], cwd=ROOT) for s in scripts)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
