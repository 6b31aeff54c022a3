"""Helpers shared by the test files: repository paths, CLI subprocesses, store reads and
bit-for-bit comparisons (the fixtures are in tests/conftest.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The tests' data files (goldens, the cube format).
DATA = ROOT / "tests" / "data"
SMOKE = ROOT / "sweeps" / "smoke"
#: Overrides that make each block of a smoke sweep last about 0.5 s by waiting, not computing
#: (tests/support/paced.py), for tests that must kill or race a run in mid-flight.
PACED = {"solver.method": "tests.support.paced:sshopm", "solver.options": {}}

#: The OpenBLAS kernel set the bit-for-bit goldens of SCS were recorded with
#: (tests/data/relaxation_scs_golden.npz, certified_revision1.npz, the golden certified
#: store); tests/conftest.py pins it where the CPU can run it.
RECORDED_BLAS_KERNEL = "SkylakeX"


def require_recorded_blas_kernel() -> None:
    """Skip a bit-for-bit golden test where SCS's OpenBLAS runs other kernels than the ones
    the golden was recorded with (its last bits then differ on every iterate)."""
    import scs  # noqa: F401  (loads SCS's bundled OpenBLAS so threadpoolctl sees it)
    from threadpoolctl import threadpool_info

    kernels = {d.get("architecture") for d in threadpool_info() if "scs" in d["filepath"]}
    if kernels and kernels != {RECORDED_BLAS_KERNEL}:
        pytest.skip(
            f"SCS's OpenBLAS runs {sorted(kernels)} kernels here; the golden was recorded "
            f"with {RECORDED_BLAS_KERNEL} (set OPENBLAS_CORETYPE={RECORDED_BLAS_KERNEL} on a "
            "CPU that has AVX-512)"
        )


def cli_env() -> dict[str, str]:
    """Environment for ``python -m sroa_dist.cli`` subprocesses (package importable)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    return env


def run_cli(
    *args: str, check: bool = True, timeout: float = 300, cwd: Path = ROOT
) -> subprocess.CompletedProcess:
    """Run ``python -m sroa_dist.cli ARGS`` in a real subprocess from ``cwd`` (default: the
    repository root)."""
    proc = subprocess.run(
        [sys.executable, "-m", "sroa_dist.cli", *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"sroa-dist {' '.join(args)} exited {proc.returncode}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


def wait_blocks(store: Path, proc: subprocess.Popen, n: int = 1, timeout: float = 180) -> None:
    """Return once ``n`` blocks of ``store`` are done; fail if ``proc`` ends or ``timeout``
    passes first."""
    from sroa_dist.sweep.store.prepare import read_done

    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if (store / "done" / "zarr.json").exists() and read_done(store).sum() >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"no {n} blocks done while the run ran: {proc.communicate()}")


def start_cli(args: list[str], output: int = subprocess.PIPE) -> subprocess.Popen:
    """``sroa-dist ARGS`` started in a process group of its own (so a test can signal the
    CLI with its scheduler and workers), text output to ``output``."""
    return subprocess.Popen(
        [sys.executable, "-m", "sroa_dist.cli", *args],
        cwd=ROOT,
        env=cli_env(),
        stdout=output,
        stderr=output,
        text=True,
        start_new_session=True,
    )


def wait_signal_handlers(proc: subprocess.Popen, timeout: float = 60) -> None:
    """Return once ``proc`` catches SIGINT and SIGTERM itself (``SigCgt`` in
    ``/proc/PID/status``), i.e. once ``sroa_dist``'s first line has run.

    Before that the interpreter itself is still starting (site, ``.pth`` files), and a signal
    there meets Python's defaults, which no program can change. On a busy machine that start
    can outlast a test's chosen delay."""
    wanted = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    status = Path(f"/proc/{proc.pid}/status")
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        caught = next(
            (
                int(x.split()[1], 16)
                for x in status.read_text().splitlines()
                if x.startswith("SigCgt:")
            ),
            0,
        )
        if caught & wanted == wanted:
            return
        time.sleep(0.005)
    raise AssertionError(f"sroa-dist never installed its signal handlers: {proc.communicate()}")


def sigkill_run_when(args: list[str], ready: Callable[[], bool], timeout: float = 180) -> None:
    """Start ``sroa-dist ARGS`` in a process group of its own, wait until ``ready()`` holds, and
    SIGKILL the whole group (CLI, scheduler, workers) while the run is still going: a kill with
    no chance to clean up, landing mid-run."""
    proc = start_cli(args, output=subprocess.DEVNULL)
    try:
        deadline = time.time() + timeout
        while time.time() < deadline and proc.poll() is None and not ready():
            time.sleep(0.01)
        assert proc.poll() is None, "the run finished before it could be killed"
        assert ready(), f"not ready to be killed after {timeout} s"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def sigkill_run_mid_sweep(args: list[str], store: Path, n: int = 2, timeout: float = 180) -> None:
    """:func:`sigkill_run_when` ``n`` blocks of ``store`` are done: a kill landing mid-sweep."""
    from sroa_dist.sweep.store.prepare import read_done

    def ready() -> bool:
        return (store / "done" / "zarr.json").exists() and read_done(store).sum() >= n

    sigkill_run_when(args, ready, timeout)


def chunk_file(store: Path, var: str, block: int) -> Path:
    """The chunk file holding ``var``'s data of ``block`` of a local store (blocks are chunks;
    the bookkeeping arrays have one chunk per block)."""
    import zarr

    from sroa_dist.sweep.store.prepare import store_layout

    _, layout = store_layout(store)
    arr = zarr.open_array(Path(store) / var, mode="r")
    if arr.metadata.dimension_names[0] == "block":  # block_digest: one row per block
        idx = [block]
    else:
        region = layout.block_region(block)
        idx = [sl.start // c for sl, c in zip(region, arr.chunks, strict=False)]
    idx += [0] * (arr.ndim - len(idx))
    path = Path(store) / var / "c" / Path(*map(str, idx))
    assert path.is_file(), path
    return path


def cube_values(store) -> dict:
    """All result variables of a store as numpy arrays (bookkeeping and timings excluded)."""
    from sroa_dist.sweep import open_results

    ds = open_results(store).load()
    skip = {"done", "done_time", "failed", "damaged", "solve_time"}
    out = {name: ds[name].values for name in ds.data_vars if name not in skip}
    out.update({f"coord:{name}": ds[name].values for name in ds.coords if name != "block"})
    return out


def assert_same_bits(a: dict, b: dict) -> None:
    """Every array bitwise equal (NaN where NaN)."""
    import numpy as np

    assert sorted(a) == sorted(b)
    for name in a:
        x, y = np.asarray(a[name]), np.asarray(b[name])
        assert x.shape == y.shape, name
        if x.dtype.kind == "f":
            assert np.array_equal(x.view(np.int64), y.view(np.int64)), name
        else:
            assert np.array_equal(x, y), name


def with_dotted(raw: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``raw`` (a spec as a dict) with each dotted key of ``over`` set, making the tables on
    its way (``{"noise.eps": 0.1}`` sets ``raw["noise"]["eps"]``); ``raw`` is changed and
    returned."""
    for key, value in over.items():
        node = raw
        *parts, leaf = key.split(".")
        for part in parts:
            node = node.setdefault(part, {})
        node[leaf] = value
    return raw
