"""Reading a result cube: :func:`open_results`, whose every block was checked before it is data.

A read never returns a damaged block as data. Opening a store reads its bookkeeping and every
chunk of every finished block once (:func:`~.integrity.read_verified`) and compares each block's
variables, and its certificate file, with the digests recorded when the block was written:

* by default a damaged block is refused: :class:`~.integrity.DamagedStoreError`, one line naming
  the store, the variables and the blocks (never zarr's checksum error inside a Dask
  traceback);
* with ``damaged="mask"`` the damaged blocks read as their fill values (NaN, False), their
  ``done`` reads False, the ``damaged`` variable (dim ``block``) marks them and the attribute
  ``damaged_blocks`` says what was wrong with each.

A finished block without a recorded digest is damage too, unless it was written before
digests existed (a store of format 1, or one migrated from it): those are read unchecked, and
the read says so in one warning.

Blocks that are not done read as fill values too, whatever their chunks hold (a write killed
before its ``done`` flag leaves data nobody vouched for).

The check costs no second read where the cube fits in memory: what was read and checked is
what the Dataset holds (as Dask arrays over in-memory data, :data:`VERIFIED_IN_MEMORY_BYTES`
in all, in chunks of many blocks: analyses then schedule few tasks). A variable beyond that
budget is checked block by block at open and stays lazy: each Dask task reads its block from
the store again and checks it against the same digest, so a block that changed after the
open is refused there, naming it.
"""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
import zarr
from dask.array.core import normalize_chunks
from dask.highlevelgraph import HighLevelGraph

from sroa_dist._registry import names_only
from sroa_dist.errors import InputError, SroaWarning

from ..cube import (
    ATTR_KIND,
    BLOCK,
    BOOKKEEPING,
    DAMAGED,
    DAMAGED_BLOCKS,
    DAMAGED_MODES,
    DONE,
    DONE_TIME,
    FAILED,
)
from ..kinds import kind_of, variable_order
from ..layout import Layout
from .integrity import DamagedStoreError, digest_of, read_verified
from .prepare import open_cube_metadata, spec_and_layout
from .target import require_store, storage_options_for

__all__ = ["VERIFIED_IN_MEMORY_BYTES", "open_results"]

#: The checked data a read keeps in memory (bytes, all variables together); a variable beyond
#: it stays lazy and is read, and checked, again when computed.
VERIFIED_IN_MEMORY_BYTES = 2**30


def open_results(
    store: str | Path,
    storage_options: Mapping[str, Any] | None = None,
    *,
    damaged: str = "raise",
) -> xr.Dataset:
    """Open a result cube for analysis, every finished block checked against its digests.

    Parameters
    ----------
    store
        The store: a local path or an fsspec URL.
    storage_options
        fsspec options for remote stores.
    damaged
        ``"raise"`` (default): a damaged block raises
        :class:`~sroa_dist.sweep.store.integrity.DamagedStoreError`, naming the store, the
        variables and the blocks. ``"mask"``: damaged blocks read as fill values (NaN,
        False) and as not done, marked by the ``damaged`` variable (dim ``block``) and
        described in ``attrs["damaged_blocks"]``.

    Returns
    -------
    xarray.Dataset
        Dask-backed. Instances of blocks that are not done read as NaN (False for booleans);
        ``done`` tells which blocks are finished and passed their check.
    """
    if damaged not in DAMAGED_MODES:
        raise InputError(
            f"damaged: expected one of {DAMAGED_MODES}; received {damaged!r}",
            'damaged="raise" refuses a damaged store, damaged="mask" reads the rest',
        )
    url = str(store)
    require_store(url, storage_options)
    ds = open_cube_metadata(url, storage_options)
    with names_only():  # reading needs none of the spec's user code
        spec, layout = spec_and_layout(ds, url)
    # The cube names its kind for analysis (a store older than the attr: its spec's kind).
    kind = kind_of(spec).name
    read = read_verified(
        url,
        layout,
        storage_options,
        certificates=spec.output.certificates,
        keep_bytes=VERIFIED_IN_MEMORY_BYTES,
    )
    report = read.report
    if report.damaged and damaged == "raise":
        raise DamagedStoreError.of(url, report)
    if report.unvouched:  # only blocks written before digests existed (integrity module)
        warnings.warn(
            f"store {url}: {len(report.unvouched)} finished block(s) were written before "
            "digests existed and are read unchecked (no digest to compare)",
            SroaWarning,
            stacklevel=2,
        )
    passed = read.done.copy()
    passed[list(report.damaged)] = False
    order = dict.fromkeys([*variable_order(), *BOOKKEEPING])  # documented, not listed, order
    ds = ds[[v for v in order if v in ds.data_vars]]
    g = zarr.open_group(url, mode="r", storage_options=storage_options_for(url, storage_options))
    instances = _instance_mask(layout, passed)
    columns = {name: i for i, name in enumerate(read.names)}
    for name in list(ds.data_vars):
        if name in BOOKKEEPING:
            continue
        var = ds[name]
        fill = g[name].fill_value
        if name in read.data:
            data = read.data[name]
            np.copyto(
                data,
                fill,
                where=~instances.reshape(instances.shape + (1,) * (data.ndim - instances.ndim)),
            )
            new = da.from_array(data, chunks=_memory_chunks(data, g[name].chunks), name=False)
        else:
            recorded = read.recorded[:, columns[name]] if name in columns else None
            new = _lazy_verified(url, storage_options, name, g[name], layout, passed, recorded)
        ds[name] = var.copy(data=new)
    n = layout.n_blocks
    flags = {
        DONE: passed,
        DONE_TIME: read.flags[DONE_TIME].astype(float),
        FAILED: read.flags[FAILED].astype(bool),
    }
    flags[DONE_TIME][list(report.damaged)] = np.nan  # damaged: as if never written
    for name, values in flags.items():
        if name in ds:
            ds[name] = ds[name].copy(data=da.from_array(values, chunks=-1, name=False))
    bad = np.zeros(n, dtype=bool)
    bad[list(report.damaged)] = True
    ds[DAMAGED] = xr.Variable(
        (BLOCK,),
        da.from_array(bad, chunks=-1, name=False),
        {"long_name": "block failed its integrity check on read and reads as fill values"},
    )
    ds.attrs[ATTR_KIND] = kind
    if report.damaged:
        ds.attrs[DAMAGED_BLOCKS] = json.dumps(
            {str(b): p for b, p in sorted(report.damaged.items())}
        )
    return ds


def _memory_chunks(data: np.ndarray, block: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Dask chunks of data held in memory: as few as Dask's chunk-size setting allows (one for
    a small cube; a report over per-block chunks spends its time scheduling tiny tasks), each
    a whole number of the store's blocks."""
    return normalize_chunks("auto", data.shape, dtype=data.dtype, previous_chunks=block)


def _instance_mask(layout: Layout, blocks: np.ndarray) -> np.ndarray:
    """Boolean over the instance grid: True inside the ``blocks`` marked True."""
    out = np.zeros(layout.shape, dtype=bool)
    for b in np.flatnonzero(blocks):
        out[layout.block_region(int(b))] = True
    return out


class _BlockReader:
    """Reads one variable's blocks from the store, each checked against its recorded digest
    (``recorded``; 0: none recorded), fill values for blocks that did not pass at open."""

    def __init__(self, url, so, name, dtype, fill, shape, layout, passed, recorded):
        self.url, self.so, self.name = url, so, name
        self.dtype, self.fill, self.shape = dtype, fill, shape
        self.layout, self.passed, self.recorded = layout, passed, recorded
        self._array = None

    def __getstate__(self):
        return {**self.__dict__, "_array": None}  # reopened where the task runs

    def read(self, b: int) -> np.ndarray:
        region = tuple(self.layout.block_region(b))
        shape = tuple(s.stop - s.start for s in region) + self.shape[len(region) :]
        if not self.passed[b]:
            return np.full(shape, self.fill, dtype=self.dtype)
        if self._array is None:
            g = zarr.open_group(
                self.url, mode="r", storage_options=storage_options_for(self.url, self.so)
            )
            self._array = g[self.name]
        try:
            data = np.asarray(self._array[region])
        except Exception as exc:  # a chunk damaged after the open: a codec error of any type
            raise self._damaged(b, f"unreadable chunk ({type(exc).__name__})") from None
        digest = 0 if self.recorded is None else int(self.recorded[b])
        if digest and digest != digest_of(data, self.dtype):
            raise self._damaged(b, "content differs from its digest")
        return data

    def _damaged(self, b: int, why: str) -> DamagedStoreError:
        return DamagedStoreError(
            self.url, f"{self.name} (block {b}: {why}, changed since the store was opened)", 1, [b]
        )


def _read_block(reader: _BlockReader, b: int) -> np.ndarray:
    return reader.read(b)


def _lazy_verified(url, so, name, arr, layout: Layout, passed, recorded) -> da.Array:
    """A Dask array of ``name`` with one task per block (:class:`_BlockReader`)."""
    nd = len(layout.dims)
    chunks = tuple(
        tuple(min(c, s - i) for i in range(0, s, c))
        for c, s in zip(layout.chunks, layout.shape, strict=True)
    ) + tuple((s,) for s in arr.shape[nd:])
    token = uuid.uuid4().hex
    dname, rname = f"verified-{name}-{token}", f"reader-{name}-{token}"
    reader = _BlockReader(
        url, so, name, arr.dtype, arr.fill_value, arr.shape, layout, passed, recorded
    )
    graph: dict[Any, Any] = {rname: reader}
    grid = layout.block_grid
    for b in range(layout.n_blocks):
        idx = np.unravel_index(b, grid)
        key = (dname, *map(int, idx), *([0] * (arr.ndim - nd)))
        graph[key] = (_read_block, rname, b)
    hlg = HighLevelGraph.from_collections(dname, graph, dependencies=())
    return da.Array(hlg, dname, chunks, dtype=arr.dtype)
