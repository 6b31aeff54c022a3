"""Monte Carlo sweeps of SROA: TOML specs, a block grid with per-instance seeding, Dask
execution and xarray/zarr result cubes (see docs/sweeps.md).

``load_spec`` and the grid are pure; ``run_sweep`` imports Dask and ``open_results``,
``ResultStore`` and ``instance_of`` zarr only when called. Sweep kinds: :mod:`.kinds`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .spec import SpecError, SweepSpec, load_spec

if TYPE_CHECKING:
    import xarray

    from .execute import SweepResult
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
]


def run_sweep(spec_or_path: Any, store: str | Path | None = None, client: Any = None, **kw: Any):
    """Run, resume or extend a sweep; see :func:`sroa_dist.sweep.execute.run_sweep`."""
    from .execute import run_sweep as _run

    return _run(spec_or_path, store, client, **kw)


def open_results(
    store: str | Path, storage_options: dict | None = None, *, damaged: str = "raise"
) -> xarray.Dataset:
    """Open a result cube, every block checked against its digests; see
    :func:`sroa_dist.sweep.verified_read.open_results`."""
    from .verified_read import open_results as _open

    return _open(store, storage_options, damaged=damaged)


def __getattr__(name: str) -> Any:
    if name == "SweepResult":
        from .execute import SweepResult

        return SweepResult
    if name in ("ResultStore", "instance_of"):  # zarr on first use
        from . import store

        return getattr(store, name)
    raise AttributeError(f"module 'sroa_dist.sweep' has no attribute {name!r}")
