"""Integrity of a result store: checksummed chunks, per-block content digests, a deep check.

Two layers of protection, because they catch different damage:

* every array is written with a CRC32C codec after its compressor (:func:`compressors`), so a
  chunk whose bytes were altered fails to decode instead of decoding into wrong numbers;
* every finished block records, next to its ``done`` flag, a digest of the bytes of each of its
  variables (array :data:`DIGEST`, one row per block, one column per variable). A chunk that was
  deleted (it reads as the fill value) or replaced by another block's valid chunk decodes fine,
  and only the digest tells.

:func:`scan_store` reads every chunk of every finished block and compares; :func:`forget_blocks`
marks damaged blocks not done (and rewrites their bookkeeping chunks), so that a run recomputes
exactly them, with the same bits. Stores made before digests existed gain the array on resume
(:func:`ensure_digest_array`); their finished blocks have digest 0, which the check reports as
"cannot vouch" rather than as damage.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import zarr
from zarr.codecs import Crc32cCodec, ZstdCodec

from .layout import Layout
from .schema import BLOCK, DONE, DONE_TIME, FAILED
from .store_target import storage_options_for

__all__ = [
    "DIGEST",
    "IntegrityReport",
    "compressors",
    "digest_of",
    "digest_variables",
    "ensure_digest_array",
    "block_digests",
    "forget_blocks",
    "read_flags",
    "scan_store",
]

#: Array of per-block, per-variable content digests (uint64; 0 = none recorded).
DIGEST = "block_digest"
#: Attribute of :data:`DIGEST`: the variable of each column.
DIGEST_VARIABLES = "variables"
_VARIABLE_DIM = "digest_variable"


def compressors() -> tuple[Any, ...]:
    """The codec chain after the array-to-bytes step: zarr's default zstd, then a CRC32C
    checksum of the compressed bytes (any altered byte makes the chunk unreadable)."""
    return (ZstdCodec(level=0, checksum=False), Crc32cCodec())


def digest_of(data: np.ndarray, dtype: Any) -> int:
    """64-bit digest (leading bytes of SHA-256) of ``data`` as stored with ``dtype``.

    NaNs are canonicalised first: zarr does not write a chunk equal to the fill value, so a
    NaN with another payload reads back as the fill's NaN. Never 0 (0 means "no digest").
    """
    arr = np.ascontiguousarray(np.asarray(data, dtype=dtype))
    if arr.dtype.kind == "f":
        arr = np.where(np.isnan(arr), np.array(np.nan, dtype=arr.dtype), arr)
    h = hashlib.sha256(f"{arr.dtype.str}{arr.shape}".encode())
    h.update(arr.tobytes())
    return int.from_bytes(h.digest()[:8], "little") or 1


def digest_variables(group: Any, dims: Sequence[str]) -> list[str]:
    """The store's result variables over the instance grid (coordinates excluded), sorted."""
    nd = len(dims)
    out = []
    for name in group.array_keys():
        if name in dims or name == DIGEST:
            continue
        names = tuple(group[name].metadata.dimension_names or ())
        if names[:nd] == tuple(dims):
            out.append(name)
    return sorted(out)


def ensure_digest_array(url: str, so: Mapping[str, Any] | None, layout: Layout) -> bool:
    """Create the (empty) digest array when the store has none; True if it was created.

    Called by the client holding the lease (template writing, resume of an older store).
    """
    g = zarr.open_group(url, mode="r+", storage_options=storage_options_for(url, so))
    if DIGEST in g:
        return False
    names = digest_variables(g, layout.dims)
    arr = g.create_array(
        DIGEST,
        shape=(layout.n_blocks, len(names)),
        chunks=(1, max(len(names), 1)),
        dtype="uint64",
        fill_value=0,
        compressors=compressors(),
        dimension_names=(BLOCK, _VARIABLE_DIM),
    )
    arr.attrs[DIGEST_VARIABLES] = names
    return True


@dataclass
class IntegrityReport:
    """Outcome of :func:`scan_store`.

    ``damaged`` maps a block to the problems found (each naming the variable); ``unvouched``
    lists finished blocks without a recorded digest (stores made before digests), whose data
    was readable but cannot be compared.
    """

    n_blocks: int
    n_done: int = 0
    damaged: dict[int, list[str]] = field(default_factory=dict)
    unvouched: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No damage found (unvouched blocks are not damage)."""
        return not self.damaged

    def lines(self) -> list[str]:
        """One line per damaged block, then a line for unvouched blocks."""
        out = [f"block {b}: {'; '.join(why)}" for b, why in sorted(self.damaged.items())]
        if self.unvouched:
            shown = ", ".join(map(str, self.unvouched[:20]))
            more = ", ..." if len(self.unvouched) > 20 else ""
            out.append(
                f"cannot vouch for {len(self.unvouched)} finished block(s) written before "
                f"digests were recorded (readable, no digest to compare): {shown}{more}"
            )
        return out


def _read(arr: Any, sel: Any) -> tuple[np.ndarray | None, str | None]:
    try:
        return np.asarray(arr[sel]), None
    except Exception as exc:  # a damaged chunk raises a codec error of any type
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"


def read_flags(arr: Any, n: int, fill: Any) -> tuple[np.ndarray, dict[int, str]]:
    """A per-block bookkeeping array (``done``, ``failed``, ...) and its unreadable elements;
    read element by element when a whole read fails (those read as ``fill``)."""
    data, err = _read(arr, slice(None))
    if err is None:
        return data, {}
    values, bad = np.full(n, fill, dtype=arr.dtype), {}
    for b in range(n):
        v, e = _read(arr, b)
        if e is None:
            values[b] = v
        else:
            bad[b] = e
    return values, bad


def scan_store(
    url: str,
    layout: Layout,
    so: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> IntegrityReport:
    """Read every chunk of the store's bookkeeping and of every finished block, and compare
    each finished block's variables with their recorded digests."""
    g = zarr.open_group(url, mode="r", storage_options=storage_options_for(url, so))
    n = layout.n_blocks
    report = IntegrityReport(n)
    done, bad_done = read_flags(g[DONE], n, False)
    done = done.astype(bool)
    for name in (DONE_TIME, FAILED):
        if name in g:
            for b, e in read_flags(g[name], n, 0)[1].items():
                report.damaged.setdefault(b, []).append(f"{name}: unreadable ({e})")
    for b, e in bad_done.items():
        report.damaged.setdefault(b, []).append(f"{DONE}: unreadable ({e})")
    if DIGEST in g:
        dig_arr = g[DIGEST]
        names = list(dig_arr.attrs.get(DIGEST_VARIABLES, []))
    else:
        dig_arr, names = None, digest_variables(g, layout.dims)
    arrays = {k: g[k] for k in names if k in g}
    finished = [int(b) for b in np.flatnonzero(done)]
    report.n_done = len(finished)
    for i, b in enumerate(finished):
        region = layout.block_region(b)
        recorded = np.zeros(len(names), dtype=np.uint64)
        if dig_arr is not None:
            row, e = _read(dig_arr, (b, slice(None)))
            if e is not None:
                report.damaged.setdefault(b, []).append(f"{DIGEST}: unreadable ({e})")
            else:
                recorded = row
        problems = []
        for j, k in enumerate(names):
            if k not in arrays:
                problems.append(f"{k}: array missing")
                continue
            arr = arrays[k]
            data, e = _read(arr, tuple(region) + (slice(None),) * (arr.ndim - len(region)))
            if e is not None:
                problems.append(f"{k}: unreadable chunk ({e})")
            elif recorded[j] and int(recorded[j]) != digest_of(data, arr.dtype):
                problems.append(f"{k}: content differs from its digest")
        if problems:
            report.damaged.setdefault(b, []).extend(problems)
        elif not recorded.any() and names and b not in report.damaged:
            report.unvouched.append(b)
        if progress is not None:
            progress(i + 1, len(finished))
    return report


def forget_blocks(url: str, blocks: Sequence[int], so: Mapping[str, Any] | None = None) -> None:
    """Mark ``blocks`` not done, clearing their digest, time and failure chunks (rewriting any
    damaged bookkeeping chunk), so a run recomputes them. Client only, under the lease."""
    if not blocks:
        return
    g = zarr.open_group(url, mode="r+", storage_options=storage_options_for(url, so))
    dig = g[DIGEST] if DIGEST in g else None
    for b in sorted(int(b) for b in blocks):
        if dig is not None:
            dig[b, :] = 0
        g[DONE_TIME][b] = np.nan
        g[FAILED][b] = False
        g[DONE][b] = False


def block_digests(
    names: Sequence[str], data: Mapping[str, np.ndarray], dtypes: Mapping[str, Any]
) -> np.ndarray:
    """The digest row of one block: one digest per variable in ``names`` (0 when absent)."""
    return np.asarray(
        [digest_of(data[k], dtypes[k]) if k in data else 0 for k in names], dtype=np.uint64
    )
