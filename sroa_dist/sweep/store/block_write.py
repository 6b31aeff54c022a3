"""Task-side writes: one block's arrays, its digest row and its ``done`` flag.

A task carries the ``layout_token`` of the layout it was planned for. The token is checked
before anything is written and again before the block is marked done, so a stale writer (a run
whose lease was taken over, and the store overwritten or extended since) never writes a block
of a layout it did not plan, and never marks one done there. An overwrite or extension sets
the new token before it deletes or replaces anything (see :func:`.prepare.prepare_store`), so
only a write already past its first check can overlap that step, and it is never marked done.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

import zarr.api.asynchronous as za
from zarr.core.sync import sync  # zarr's own event loop, which its stores are bound to

from ..cube import ATTR_LAYOUT_TOKEN, COMPONENT, DONE, DONE_TIME, REPLICATE, STEP
from ..layout import BlockResult, block_region, check_region_aligned
from .certificate_files import CERTIFICATE_DIGEST, NO_CERTIFICATE_FILE
from .integrity import DIGEST, DIGEST_VARIABLES, block_digests
from .target import storage_options_for as _so

__all__ = ["StaleLayoutError", "check_chunk_aligned", "write_block"]


class StaleLayoutError(RuntimeError):
    """A task planned for one layout of a store tried to write into another (newer) one."""

    hint = (
        "another run overwrote or extended the store meanwhile; run the same command again "
        "to compute what is missing"
    )


def check_chunk_aligned(name: str, arr: Any, region: Sequence[slice]) -> None:
    """Refuse (``ValueError`` naming variable ``name`` and the dim) a region of zarr array
    ``arr`` that does not cover whole chunks: two writers sharing a chunk lose data."""
    dims = tuple(arr.metadata.dimension_names)
    check_region_aligned(region, arr.chunks, arr.shape, [f"'{name}' dim '{d}'" for d in dims])


def write_block(
    url: str,
    index: int,
    result: BlockResult,
    *,
    region: Sequence[slice] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    layout_token: str | None = None,
    certificate_digest: int | None = None,
) -> None:
    """Write one block's arrays into its region, then mark the block done.

    ``region`` defaults to block ``index`` of the store's own chunk grid. The region is checked
    against the real zarr chunks of every variable written: a region that does not cover whole
    chunks raises ``ValueError`` and nothing is written. With ``layout_token`` (the token of
    the layout the task was planned for), a store whose layout has another token raises
    :class:`StaleLayoutError` and nothing is written: a stale writer never writes block ``index``
    of a layout it did not plan. ``certificate_digest``: the digest of the certificate file the
    block wrote (:func:`~.certificate_files.write_certificates`), recorded beside its other
    digests in a store that records them (:data:`NO_CERTIFICATE_FILE` when it wrote none).
    """
    so = _so(url, storage_options)
    sync(_write_block(url, index, result, region, so, layout_token, certificate_digest))


def _check_layout_token(attrs, url, index, layout_token: str | None, outcome: str) -> None:
    if layout_token is not None and attrs.get(ATTR_LAYOUT_TOKEN, "") != layout_token:
        raise StaleLayoutError(
            f"store {url}: block {index} was planned for layout {layout_token!r}, but the store "
            f"now has layout {attrs.get(ATTR_LAYOUT_TOKEN, '')!r} (overwritten or extended by "
            f"another run); {outcome}"
        )


async def _write_block(url, index, result, region, so, layout_token=None, cert=None) -> None:
    # Region writes straight through zarr's async API: the same bytes as xarray's
    # to_zarr(region=...) for these plain float64/bool variables (no CF encoding), with all
    # arrays written concurrently (less per-task overhead than xarray; see docs/sweeps.md).
    g = await za.open_group(store=url, mode="r+", storage_options=so)
    _check_layout_token(g.attrs, url, index, layout_token, "nothing written")
    # The block grid's dims (ending in 'replicate') lead every result variable; 'step' and
    # 'component' follow. Any stored result variable says what they are.
    ref = None
    for name in result.data:
        try:
            arr = await g.getitem(name)
        except KeyError:  # a variable added since the store was made
            continue
        if REPLICATE in arr.metadata.dimension_names:
            ref = arr
            break
    if ref is None:
        raise RuntimeError(f"store {url}: no variable of block {index} is stored over the grid")
    dims = tuple(d for d in ref.metadata.dimension_names if d not in (STEP, COMPONENT))
    if region is None:
        region = block_region(index, ref.chunks[: len(dims)], ref.shape[: len(dims)])
    region = tuple(region)
    # 'eps' is the coordinate when an axis; a store made by an earlier version lacks the
    # variables added since (n_best, confirmed): it keeps its own format when resumed.
    wanted = [n for n in result.data if n not in dims]
    found = await asyncio.gather(*(g.getitem(n) for n in wanted), return_exceptions=True)
    for got in found:
        if isinstance(got, BaseException) and not isinstance(got, KeyError):
            raise got
    names = [n for n, got in zip(wanted, found, strict=True) if not isinstance(got, KeyError)]
    arrays = [got for got in found if not isinstance(got, KeyError)]
    # Check every target first so that a refused write leaves the store untouched.
    for name, arr in zip(names, arrays, strict=True):
        check_chunk_aligned(name, arr, region)
    await asyncio.gather(
        *(
            arr.setitem(
                region + (slice(None),) * (result.data[n].ndim - len(region)), result.data[n]
            )
            for n, arr in zip(names, arrays, strict=True)
        )
    )
    # Checked again before the block is marked: a write that straddled an overwrite's fence
    # never marks a block done in the new layout (its chunks are cleared or rewritten there).
    if layout_token is not None:
        fresh = await za.open_group(store=url, mode="r", storage_options=so)
        _check_layout_token(fresh.attrs, url, index, layout_token, "the block is not marked done")
    # The block's digest row, then the done flag last: a kill before it leaves a block that
    # is simply recomputed. A store without a digest array keeps its format (see prepare).
    try:
        dig = await g.getitem(DIGEST)
    except KeyError:
        dig = None
    try:
        cert_arr = await g.getitem(CERTIFICATE_DIGEST)
    except KeyError:
        cert_arr = None
    if cert_arr is not None:
        await cert_arr.setitem(index, NO_CERTIFICATE_FILE if cert is None else int(cert))
    if dig is not None:
        dig_names = list(dig.attrs.get(DIGEST_VARIABLES, []))
        data = dict(zip(names, (result.data[n] for n in names), strict=True))
        dtypes = {n: arr.dtype for n, arr in zip(names, arrays, strict=True)}
        await dig.setitem((index, slice(None)), block_digests(dig_names, data, dtypes))
    done_time, done = await asyncio.gather(g.getitem(DONE_TIME), g.getitem(DONE))
    await done_time.setitem(index, _dt.datetime.now(_dt.UTC).timestamp())
    await done.setitem(index, True)
