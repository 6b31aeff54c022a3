"""Shared benchmark plumbing: single-threaded BLAS, timing, JSON output."""

from __future__ import annotations

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


def write(name: str, payload: dict) -> Path:
    """Write a benchmark's numbers to ``benchmarks/out/<name>.json`` with machine facts."""
    OUT.mkdir(exist_ok=True)
    payload = {
        "benchmark": name,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        **payload,
    }
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=float))
    return path
