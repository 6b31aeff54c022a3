"""Monte Carlo sweeps of SROA: TOML specs, a block grid with per-instance seeding, Dask
execution and xarray/zarr result cubes (see docs/sweeps.md).

``load_spec`` and the grid are pure; ``run_sweep`` imports Dask and ``open_results``,
``ResultStore`` and ``instance_of`` zarr only when called. Sweep kinds: :mod:`.kinds`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cost import estimate_line
from .cube import (
    ATTR_FORMAT,
    ATTR_KIND,
    ATTR_LAYOUT_TOKEN,
    ATTR_SPEC,
    ATTR_SWEEP_NAME,
    BLOCK,
    BOOKKEEPING,
    COMPONENT,
    DAMAGED,
    DAMAGED_BLOCKS,
    DAMAGED_MODES,
    DIMS,
    DONE,
    FAILED,
    FAILED_MESSAGES,
    REPLICATE,
    SETTING_PREFIX,
    SHARED_AXES,
    STEP,
    STORE_FORMAT,
    store_format,
)
from .kinds import load_spec
from .spec import SpecError, SweepSpec

if TYPE_CHECKING:
    import xarray

    from .run import SweepResult
    from .store import ResultStore, instance_of

__all__ = [
    "ResultStore",
    "SpecError",
    "SweepResult",
    "SweepSpec",
    "instance_of",
    "load_spec",
    "open_results",
    "run_sweep",
    "ATTR_FORMAT",
    "ATTR_LAYOUT_TOKEN",
    "ATTR_SPEC",
    "ATTR_SWEEP_NAME",
    "BOOKKEEPING",
    "SETTING_PREFIX",
    "ATTR_KIND",
    "BLOCK",
    "COMPONENT",
    "DAMAGED",
    "DAMAGED_BLOCKS",
    "DAMAGED_MODES",
    "DIMS",
    "DONE",
    "FAILED",
    "FAILED_MESSAGES",
    "REPLICATE",
    "STEP",
    "STORE_FORMAT",
    "SHARED_AXES",
    "estimate_line",
    "store_format",
]


def run_sweep(spec_or_path: Any, store: str | Path | None = None, client: Any = None, **kw: Any):
    """Run, resume or extend a sweep; see :func:`sroa_dist.sweep.run.execute.run_sweep`."""
    from .run import run_sweep as _run

    return _run(spec_or_path, store, client, **kw)


def open_results(
    store: str | Path, storage_options: dict | None = None, *, damaged: str = "raise"
) -> xarray.Dataset:
    """Open a result cube, every block checked against its digests; see
    :func:`sroa_dist.sweep.store.read.open_results`."""
    from .store import open_results as _open

    return _open(store, storage_options, damaged=damaged)


def __getattr__(name: str) -> Any:
    if name == "SweepResult":
        from .run import SweepResult

        return SweepResult
    if name in ("ResultStore", "instance_of"):  # zarr on first use
        from . import store

        return getattr(store, name)
    raise AttributeError(f"module 'sroa_dist.sweep' has no attribute {name!r}")
