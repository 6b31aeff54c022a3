"""Shared fixtures: repository paths and a real two-worker Dask cluster (the helpers are in
tests/support/helpers.py). Pins SCS's OpenBLAS kernels before any BLAS loads."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing; tests.support too
    sys.path.insert(0, str(ROOT))

from tests.support.helpers import RECORDED_BLAS_KERNEL, SMOKE  # noqa: E402

#: SCS bundles its own OpenBLAS, which picks its kernels from the CPU: an AMD EPYC gets "Zen"
#: and different last bits in every SCS iterate than the goldens were recorded with
#: (RECORDED_BLAS_KERNEL). Where the machine sets no kernel and the CPU can run the recorded
#: one, the suite (and every process it starts) pins it, before any BLAS is loaded; elsewhere
#: the golden tests skip, naming the kernel (``require_recorded_blas_kernel``).
_SKYLAKEX_FLAGS = {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.partition(":")[2].split())


if "OPENBLAS_CORETYPE" not in os.environ and _SKYLAKEX_FLAGS <= _cpu_flags():
    os.environ["OPENBLAS_CORETYPE"] = RECORDED_BLAS_KERNEL


@pytest.fixture(scope="session")
def root() -> Path:
    """Repository root."""
    return ROOT


@pytest.fixture(scope="session")
def smoke() -> Path:
    """Directory of the smoke specs (seconds to run)."""
    return SMOKE


@pytest.fixture(scope="session")
def cluster():
    """A real LocalCluster: two worker processes, one thread each (as the embedded default)."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as c:
        yield c


@pytest.fixture
def client(cluster):
    """A client of the shared cluster (fresh per test)."""
    from distributed import Client

    with Client(cluster) as c:
        yield c
