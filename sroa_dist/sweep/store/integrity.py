"""Integrity of a result store: checksummed chunks, per-block digests, verified reads, a check.

Two layers of protection, because they catch different damage:

* every array is written with a CRC32C codec after its compressor (:func:`compressors`), so a
  chunk whose bytes were altered fails to decode instead of decoding into wrong numbers;
* every finished block records, next to its ``done`` flag, a digest of the bytes of each of its
  variables (array :data:`DIGEST`, one row per block, one column per variable) and of its
  certificate file (array :data:`~.certificate_files.CERTIFICATE_DIGEST`, stores with
  ``[output] certificates``). A chunk that was deleted (it reads as the fill value), replaced
  by another block's valid chunk or rewritten through zarr decodes fine, and only the digest
  tells.

:func:`read_verified` reads the bookkeeping and every chunk of every finished block once and
compares; it is both the deep check (:func:`scan_store`, ``sroa-dist check``) and the read
behind :func:`~.read.open_results`, which keeps what it read. :func:`forget_blocks`
marks damaged blocks not done (and rewrites their bookkeeping chunks), so that a run recomputes
exactly them, with the same bits.

A finished block of a store of format 2 (:data:`~..cube.STORE_FORMAT`) without a recorded
digest (its row reads 0: the chunk was lost) is damage like any other: nothing else could tell
an edited value. Only blocks written before digests existed are "cannot vouch" (readable, no
digest to compare): every finished block of a format-1 store without a digest, and in a store
migrated from format 1 the blocks the migration listed (:data:`UNVOUCHED`). Stores made before
digests existed gain the array on resume (:func:`ensure_digest_array`).

The digest array's attributes also keep a copy of the store's top-level attributes (spec and
provenance, :data:`STORE_ATTRS`, kept in step by :func:`mirror_store_attrs`), from which
``sroa-dist check --repair-metadata`` rebuilds them when the top-level metadata is lost.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import zarr
import zarr.api.asynchronous as za
from zarr.codecs import Crc32cCodec, ZstdCodec
from zarr.core.sync import sync  # zarr's own event loop, which its stores are bound to

from sroa_dist.errors import InputError

from ..cube import BLOCK, DONE, DONE_TIME, FAILED, store_format
from ..layout import Layout
from .certificate_files import (
    CERTIFICATE_DIGEST,
    NO_CERTIFICATE_FILE,
    block_file_name,
    check_readable,
    file_digest,
    stored_certificates_folder,
)
from .target import storage_options_for

__all__ = [
    "CERTIFICATES",
    "DIGEST",
    "STORE_ATTRS",
    "UNVOUCHED",
    "DamagedStoreError",
    "IntegrityReport",
    "VerifiedRead",
    "block_digests",
    "compressors",
    "digest_of",
    "digest_variables",
    "ensure_digest_array",
    "forget_blocks",
    "mirror_store_attrs",
    "read_flags",
    "read_verified",
    "scan_store",
]

#: Array of per-block, per-variable content digests (uint64; 0 = none recorded).
DIGEST = "block_digest"
#: Attribute of :data:`DIGEST`: the variable of each column.
DIGEST_VARIABLES = "variables"
#: Attribute of :data:`DIGEST` in a store migrated from format 1: the finished blocks that were
#: written before digests existed (the only ones of a format-2 store that may lack a digest).
UNVOUCHED = "unvouched_blocks"
#: Attribute of :data:`DIGEST`: a copy of the store's top-level attributes (spec, provenance).
STORE_ATTRS = "store_attrs"
#: How damage of a block's certificate file is named (it is no array of the store).
CERTIFICATES = "certificates"
_VARIABLE_DIM = "digest_variable"
#: A variable up to this size is read in one call (zarr fetches its chunks concurrently) even
#: when it is not kept; a larger one is read block by block.
WHOLE_READ_BYTES = 64 * 2**20
#: Threads reading blocks and certificate files (I/O bound: zarr and fsspec release the GIL).
READ_THREADS = 8


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
        nan = np.isnan(arr)
        if nan.any():
            arr = np.where(nan, np.array(np.nan, dtype=arr.dtype), arr)
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


def ensure_digest_array(
    url: str,
    so: Mapping[str, Any] | None,
    layout: Layout,
    *,
    certificates: bool = False,
) -> bool:
    """Create the (empty) digest array when the store has none, the certificate-digest array
    when ``certificates`` and it has none, and the copy of the top-level attributes when the
    digest array has none; True if the digest array was created.

    Called by the client holding the lease (template writing, resume of an older store).
    """
    g = zarr.open_group(url, mode="r+", storage_options=storage_options_for(url, so))
    created = DIGEST not in g
    if created:
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
    if certificates and CERTIFICATE_DIGEST not in g:
        g.create_array(
            CERTIFICATE_DIGEST,
            shape=(layout.n_blocks,),
            chunks=(1,),  # one chunk per block: each task writes only its own element
            dtype="uint64",
            fill_value=0,
            compressors=compressors(),
            dimension_names=(BLOCK,),
        )
    if STORE_ATTRS not in g[DIGEST].attrs:
        g[DIGEST].attrs[STORE_ATTRS] = dict(g.attrs)
    return created


def mirror_store_attrs(group: Any, update: Mapping[str, Any]) -> None:
    """Set ``update`` in the store's top-level attributes and in their copy (:data:`STORE_ATTRS`
    of the digest array), so that the copy can rebuild them. ``group``: the store's root group,
    opened for writing."""
    group.attrs.update(update)
    if DIGEST in group:
        arr = group[DIGEST]
        copy = dict(arr.attrs.get(STORE_ATTRS, {}) or {})
        arr.attrs[STORE_ATTRS] = {**copy, **update}


@dataclass
class IntegrityReport:
    """Outcome of :func:`read_verified` (:func:`scan_store`).

    ``damaged`` maps a block to the problems found (each naming the variable, or
    ``certificates`` for its certificate file) and ``variables`` to the names alone;
    ``unvouched`` lists finished blocks written before digests existed (see the module
    docstring), whose data was readable but cannot be compared; a missing digest of any
    other finished block is damage.
    """

    n_blocks: int
    n_done: int = 0
    damaged: dict[int, list[str]] = field(default_factory=dict)
    variables: dict[int, list[str]] = field(default_factory=dict)
    unvouched: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No damage found (unvouched blocks are not damage)."""
        return not self.damaged

    def add(self, block: int, name: str, why: str) -> None:
        """Record that ``name`` (a variable, or :data:`CERTIFICATES`) of ``block`` is damaged."""
        self.damaged.setdefault(int(block), []).append(f"{name}: {why}")
        names = self.variables.setdefault(int(block), [])
        if name not in names:
            names.append(name)

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

    def by_variable(self) -> dict[str, list[int]]:
        """The damaged blocks of each damaged variable (or :data:`CERTIFICATES`), sorted."""
        out: dict[str, list[int]] = {}
        for b in sorted(self.variables):
            for name in self.variables[b]:
                out.setdefault(name, []).append(b)
        return out

    def summary(self, limit: int = 8) -> str:
        """The damage in a few words: ``lam_hat (blocks 1, 3); vec_err (block 2)``."""
        parts = []
        for name, blocks in self.by_variable().items():
            shown = ", ".join(map(str, blocks[:limit])) + (", ..." if len(blocks) > limit else "")
            parts.append(f"{name} (block{'s' if len(blocks) > 1 else ''} {shown})")
        return "; ".join(parts)


class DamagedStoreError(InputError):
    """A read met blocks whose data or certificates do not match their recorded digests (or
    cannot be read): names the store, the variables and the blocks; ``hint`` says what to do.
    Pickled by Dask between processes (it is raised inside the tasks of a lazy read)."""

    def __init__(
        self, url: str, summary: str, n_blocks: int, blocks: Sequence[int] = (), hint: str = ""
    ):
        self.url, self.summary, self.n_blocks = url, summary, n_blocks
        self.blocks = tuple(int(b) for b in blocks)
        super().__init__(
            f"store {url}: {n_blocks} damaged block(s), never read as data: {summary}",
            hint
            or (
                f"`sroa-dist check {url}` names each problem, and rerunning the same `sroa-dist "
                "run` recomputes these blocks bit for bit; to read the rest with them masked, "
                'open_results(store, damaged="mask") (plot/report: --damaged mask)'
            ),
        )

    @classmethod
    def of(cls, url: str, report: IntegrityReport) -> DamagedStoreError:
        """The error for the damage in ``report``."""
        hint = ""
        if any(p.endswith(": array missing") for ps in report.damaged.values() for p in ps):
            hint = (
                f"an array's metadata is lost: `sroa-dist check --repair-metadata {url}` "
                "rebuilds it from the stored spec (a rerun then recomputes what is still "
                "damaged)"
            )
        return cls(url, report.summary(), len(report.damaged), sorted(report.damaged), hint)


def _read(arr: Any, sel: Any) -> tuple[np.ndarray | None, str | None]:
    try:
        return np.asarray(arr[sel]), None
    except Exception as exc:  # a damaged chunk raises a codec error of any type
        return None, _why(exc)


def _why(exc: BaseException) -> str:
    """A read error in a few words (zarr's checksum message names neither store nor block)."""
    text = str(exc).splitlines()[0][:120] if str(exc) else ""
    if "checksum" in text.lower():
        return "its bytes fail their CRC32C checksum: garbled or truncated"
    return f"{type(exc).__name__}: {text}"


def read_flags(
    arr: Any, n: int, fill: Any, whole: tuple[Any, str | None] | None = None
) -> tuple[np.ndarray, dict[int, str]]:
    """A per-block bookkeeping array (``done``, ``failed``, ...) and its unreadable elements;
    read element by element when a whole read fails (those read as ``fill``). ``whole``: the
    outcome of a whole read already made (:func:`_fetch`)."""
    data, err = _read(arr, slice(None)) if whole is None else whole
    if err is None:
        return np.asarray(data), {}
    values, bad = np.full(arr.shape, fill, dtype=arr.dtype), {}
    for b in range(n):
        v, e = _read(arr, b)
        if e is None:
            values[b] = v
        else:
            bad[b] = e
    return values, bad


def _fetch(url: str, so: Mapping[str, Any] | None, names: Sequence[str]) -> dict[str, Any]:
    """Whole reads of several arrays at once: ``{name: (data, None) or (None, why)}``. zarr
    fetches the chunks of all of them concurrently (one array after the other would wait on
    each array's chunks in turn: seconds for a store of a few hundred blocks)."""

    async def run() -> dict[str, Any]:
        g = await za.open_group(store=url, mode="r", storage_options=storage_options_for(url, so))

        async def one(name: str) -> tuple[str, Any]:
            try:
                arr = await g.getitem(name)
                return name, (np.asarray(await arr.getitem(Ellipsis)), None)
            except Exception as exc:  # a damaged chunk raises a codec error of any type
                return name, (None, _why(exc))

        return dict(await asyncio.gather(*(one(k) for k in names)))

    return sync(run()) if names else {}


@dataclass
class VerifiedRead:
    """What :func:`read_verified` read: the damage it found and the data it kept.

    ``done``: the blocks whose ``done`` flag was read as set; ``names``: the digest's
    variables; ``data``: the variables read whole and kept, as stored (blocks not done and
    damaged blocks included: the reader masks them); ``recorded``: the digest rows (0 where
    none is recorded or the row is unreadable); ``flags``: the per-block bookkeeping arrays
    as read (``done``, ``done_time``, ``failed``, ``certificate_digest``; unreadable
    elements as 0).
    """

    report: IntegrityReport
    done: np.ndarray
    names: list[str]
    recorded: np.ndarray
    data: dict[str, np.ndarray]
    flags: dict[str, np.ndarray] = field(default_factory=dict)


def read_verified(
    url: str,
    layout: Layout,
    so: Mapping[str, Any] | None = None,
    *,
    certificates: bool = False,
    keep_bytes: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> VerifiedRead:
    """Read the store's bookkeeping and every chunk of every finished block once, and compare
    each finished block's variables (and certificate file) with their recorded digests.

    Variables are read whole, several at once (zarr fetches all their chunks concurrently),
    while they fit ``keep_bytes`` -- they are then kept in :attr:`VerifiedRead.data` -- or, in
    batches, :data:`WHOLE_READ_BYTES`; a larger variable, or one whose whole read meets an
    unreadable chunk, is read block by block (only finished blocks). ``certificates``: the
    store's spec asks for certificate files, so a finished block without a recorded
    certificate digest (a store made before those digests) must still have a readable file.
    ``progress(i, n)`` is called per variable.
    """
    g = zarr.open_group(url, mode="r", storage_options=storage_options_for(url, so))
    n = layout.n_blocks
    report = IntegrityReport(n)
    flag_names = [k for k in (DONE, DONE_TIME, FAILED, CERTIFICATE_DIGEST, DIGEST) if k in g]
    fetched = _fetch(url, so, flag_names)
    flags, bad_flags = {}, {}
    for name in flag_names:
        if name != DIGEST:
            flags[name], bad_flags[name] = read_flags(g[name], n, 0, fetched[name])
    done = flags[DONE].astype(bool)
    for name in (DONE, DONE_TIME, FAILED):
        for b, e in bad_flags.get(name, {}).items():
            report.add(b, name, f"unreadable ({e})")
    if DIGEST in g:
        dig_arr = g[DIGEST]
        names = list(dig_arr.attrs.get(DIGEST_VARIABLES, []))
        recorded, bad_rows = _read_rows(dig_arr, n, len(names), fetched[DIGEST])
    else:
        names = digest_variables(g, layout.dims)
        recorded, bad_rows = np.zeros((n, len(names)), dtype=np.uint64), {}
    finished = [int(b) for b in np.flatnonzero(done)]
    regions = {b: tuple(layout.block_region(b)) for b in finished}
    report.n_done = len(finished)
    legacy = _written_before_digests(g)
    for b in finished:
        if b in bad_rows:
            report.add(b, DIGEST, f"unreadable ({bad_rows[b]})")
        elif names and not recorded[b].any() and b not in legacy:
            why = "array missing" if DIGEST not in g else "digest missing (its chunk is lost)"
            report.add(b, DIGEST, f"{why}: the block's content cannot be compared")
    kept: dict[str, np.ndarray] = {}
    budget = keep_bytes
    present = [k for k in names if k in g]
    for k in names:
        if k not in present:
            for b in finished:
                report.add(b, k, "array missing")
    arrays = {k: g[k] for k in present}
    sizes = {k: int(np.prod(a.shape)) * a.dtype.itemsize for k, a in arrays.items()}
    batch: list[str] = []
    done_count = 0

    def flush() -> None:
        nonlocal done_count
        whole = _fetch(url, so, batch)
        for k in batch:
            data = _check_variable(
                arrays[k], k, names.index(k), regions, recorded, whole[k][0], report
            )
            if k in keep:
                kept[k] = data
            done_count += 1
            if progress is not None:
                progress(done_count, len(present))
        batch.clear()

    keep = set()
    for k in present:
        if sizes[k] <= budget:
            keep.add(k)
            budget -= sizes[k]
    cap = max(keep_bytes, WHOLE_READ_BYTES)
    for k in sorted(present, key=lambda k: k not in keep):  # the kept ones first, together
        if sizes[k] > cap and k not in keep:  # too large to read whole: block by block
            _check_variable(arrays[k], k, names.index(k), regions, recorded, None, report)
            done_count += 1
            continue
        if batch and sum(sizes[j] for j in batch) + sizes[k] > cap and k not in keep:
            flush()
        batch.append(k)
    if batch:
        flush()
    _check_certificate_files(
        url,
        so,
        g,
        layout,
        finished,
        certificates,
        report,
        flags,
        bad_flags.get(CERTIFICATE_DIGEST),
        legacy,
    )
    report.unvouched = [
        b for b in finished if names and not recorded[b].any() and b not in report.damaged
    ]
    return VerifiedRead(report, done, names, recorded, kept, flags)


class _Everything:
    """The blocks of a format-1 store that may lack digests: all of them."""

    def __contains__(self, block: object) -> bool:
        return True


def _written_before_digests(g: Any) -> Any:
    """The blocks of the store (root group ``g``) that may lack a digest without being damaged:
    every block of a format-1 store, else those its migration listed (:data:`UNVOUCHED`)."""
    if store_format(g.attrs) < 2:
        return _Everything()
    if DIGEST not in g:
        return frozenset()
    return frozenset(int(b) for b in g[DIGEST].attrs.get(UNVOUCHED, []) or [])


def _check_variable(
    arr: Any,
    name: str,
    column: int,
    regions: Mapping[int, tuple[slice, ...]],
    recorded: np.ndarray,
    whole: np.ndarray | None,
    report: IntegrityReport,
) -> np.ndarray:
    """Compare every finished block (``regions``: block -> its region of the instance grid)
    of one variable with its recorded digest, from ``whole`` (the variable read whole) or read
    block by block; the variable as read (unreadable or unread blocks as fill values)."""
    extra = (slice(None),) * (arr.ndim - len(next(iter(regions.values()), ())))
    blocks = _blocks_of(arr, {b: r + extra for b, r in regions.items()}, whole, report, name)
    for b, data in blocks:
        if recorded[b, column] and int(recorded[b, column]) != digest_of(data, arr.dtype):
            report.add(b, name, "content differs from its digest")
    if whole is not None:
        return whole
    out = np.full(arr.shape, arr.fill_value, dtype=arr.dtype)
    for b, data in blocks:
        out[regions[b] + extra] = data
    return out


def _read_rows(arr: Any, n: int, width: int, whole=None) -> tuple[np.ndarray, dict[int, str]]:
    """The digest rows (zeros where unreadable) and the unreadable ones."""
    data, err = _read(arr, Ellipsis) if whole is None else whole
    if err is None:
        return data.astype(np.uint64), {}
    rows, bad = np.zeros((n, width), dtype=np.uint64), {}
    for b in range(n):
        row, e = _read(arr, (b, slice(None)))
        if e is None:
            rows[b] = row
        else:
            bad[b] = e
    return rows, bad


def _blocks_of(
    arr: Any,
    regions: Mapping[int, tuple[slice, ...]],
    whole: np.ndarray | None,
    report: IntegrityReport,
    name: str,
) -> Iterable[tuple[int, np.ndarray]]:
    """``(block, data)`` of each readable block (``regions``: block -> its selection of
    ``arr``), from ``whole`` when it was read, else read block by block (unreadable chunks
    recorded as damage)."""
    blocks = list(regions)
    if whole is not None:
        return [(b, whole[regions[b]]) for b in blocks]

    def one(b: int) -> tuple[int, np.ndarray | None, str | None]:
        return (b, *_read(arr, regions[b]))

    out = []
    with ThreadPoolExecutor(READ_THREADS) as pool:
        for b, data, e in pool.map(one, blocks):
            if e is not None:
                report.add(b, name, f"unreadable chunk ({e})")
            else:
                out.append((b, data))
    return out


def _check_certificate_files(
    url: str,
    so: Mapping[str, Any] | None,
    g: Any,
    layout: Layout,
    finished: Sequence[int],
    expected: bool,
    report: IntegrityReport,
    flags: Mapping[str, np.ndarray],
    bad: Mapping[int, str] | None = None,
    legacy: Any = (),
) -> None:
    """Every finished block's certificate file: present, and equal to its recorded digest (or,
    with none recorded and ``expected``, readable -- only for blocks written before these
    digests, ``legacy``; for any other block a missing digest is damage)."""
    recorded = flags.get(CERTIFICATE_DIGEST, np.zeros(layout.n_blocks, dtype=np.uint64))
    bad = bad or {}
    for b, e in bad.items():
        if b in finished:
            report.add(b, CERTIFICATE_DIGEST, f"unreadable ({e})")
    if expected and CERTIFICATE_DIGEST in flags:
        for b in finished:
            if not recorded[b] and b not in legacy and b not in bad:
                report.add(b, CERTIFICATE_DIGEST, "digest missing (its chunk is lost)")
    todo = [b for b in finished if recorded[b] != NO_CERTIFICATE_FILE and (recorded[b] or expected)]
    if not todo:
        return
    fs, base = stored_certificates_folder(url, so, g.attrs)

    def one(b: int) -> tuple[int, str, str | None]:
        region = layout.block_region(b)
        coords = [c[s] for c, s in zip(layout.coords, region, strict=True)]
        file = block_file_name(layout.dims, coords)
        try:
            data = fs.cat_file(f"{base}/{file}")
        except FileNotFoundError:
            return b, file, "file missing"
        except OSError as exc:
            return b, file, f"unreadable file ({_why(exc)})"
        if recorded[b]:
            ok = file_digest(data) == int(recorded[b])
            return b, file, None if ok else "file differs from its digest"
        try:
            check_readable(data)
        except Exception as exc:  # zip and npy errors of any type
            return b, file, f"unreadable file ({_why(exc)})"
        return b, file, None

    with ThreadPoolExecutor(READ_THREADS) as pool:
        for b, file, why in pool.map(one, todo):
            if why is not None:
                report.add(b, CERTIFICATES, f"{why} ({file})")


def scan_store(
    url: str,
    layout: Layout,
    so: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    *,
    certificates: bool = False,
) -> IntegrityReport:
    """Read every chunk of the store's bookkeeping and of every finished block, and compare
    each finished block's variables and certificate file with their recorded digests
    (:func:`read_verified`, keeping nothing)."""
    return read_verified(url, layout, so, certificates=certificates, progress=progress).report


def forget_blocks(url: str, blocks: Sequence[int], so: Mapping[str, Any] | None = None) -> None:
    """Mark ``blocks`` not done, clearing their digest, time and failure chunks (rewriting any
    damaged bookkeeping chunk) and dropping them from :data:`UNVOUCHED`, so a run recomputes
    them. Client only, under the lease."""
    if not blocks:
        return
    g = zarr.open_group(url, mode="r+", storage_options=storage_options_for(url, so))
    dig = g[DIGEST] if DIGEST in g else None
    cert = g[CERTIFICATE_DIGEST] if CERTIFICATE_DIGEST in g else None
    listed = list(dig.attrs.get(UNVOUCHED, []) or []) if dig is not None else []
    if listed:  # a recomputed block records its digests: it is no longer "cannot vouch"
        forgotten = {int(b) for b in blocks}
        dig.attrs[UNVOUCHED] = [b for b in listed if int(b) not in forgotten]
    for b in sorted(int(b) for b in blocks):
        if dig is not None:
            dig[b, :] = 0
        if cert is not None:
            cert[b] = 0
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
