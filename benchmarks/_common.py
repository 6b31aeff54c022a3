"""Shared benchmark plumbing for the bench_*.py scripts: single-threaded BLAS, timing, the
argument parser and JSON output (every script writes through :func:`write`; none keeps a
copy of either)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

# One core per measurement: set before numpy is imported by the caller.
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

OUT = Path(__file__).resolve().parent / "out"


def timed(fn, *args, **kwargs):
    """Run ``fn`` once and return ``(result, seconds)``."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def parser(doc: str | None, out: str | None) -> argparse.ArgumentParser:
    """A benchmark's argument parser: the first line of its docstring as the description, and
    the shared ``--out`` (a NAME: ``benchmarks/out/NAME.json``; a path ending in ``.json``:
    that file) defaulting to ``out`` (``None``: the script chooses, or writes nothing)."""
    first = (doc or "").strip().splitlines()
    ap = argparse.ArgumentParser(description=first[0] if first else None)
    ap.add_argument(
        "--out",
        default=out,
        metavar="NAME|PATH.json",
        help=f"output benchmarks/out/NAME.json, or the file PATH.json (default: {out})",
    )
    return ap


def output_path(out: str | Path) -> Path:
    """Where :func:`write` puts ``out``: a path ending in ``.json`` as given, else
    ``benchmarks/out/<out>.json``."""
    text = str(out)
    return Path(text) if text.endswith(".json") else OUT / f"{text}.json"


def write(out: str | Path, payload: dict) -> Path:
    """Write a benchmark's numbers (``out``: see :func:`output_path`) with the machine's facts
    and load average; called after each measured row, a run cut short keeps what it measured."""
    path = output_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": path.stem,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_avg": os.getloadavg(),
        },
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        **payload,
    }
    path.write_text(json.dumps(payload, indent=2, default=float))
    return path
