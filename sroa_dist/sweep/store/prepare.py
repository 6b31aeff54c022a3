"""Result-cube storage: create, resume, extend, overwrite and read a store.

One zarr (v3) store per sweep, local path or fsspec URL. Write pattern (xarray's documented
one for distributed writers): the client writes a template with ``compute=False`` (metadata and
coordinates only), then every task writes its own block with a chunk-aligned region write and
finally flips its element of the ``done`` mask. Blocks *are* chunks, so no two writers ever
share a chunk (concurrent writes into a shared chunk silently lose data); :func:`write_block`
checks the alignment against the store's real chunks and refuses anything else (task-side
writes live in :mod:`.block_write`).

Completion is never inferred from chunk files (zarr 3 skips chunks equal to the fill value):
only ``done`` says a block is finished, and it is written after the block's data, so a kill at
any moment leaves either a finished block or one that will be recomputed (writes are
idempotent: a recomputed block has the same bits).

Extending an axis (more σ values, more replicates) re-templates the store into a new layout
and copies every new block whose instances were all finished in the old store, matching them
by coordinate *label*; see :func:`prepare_store`.

Safety: :func:`check_store_target` lets a run write only into a path that does not exist, an
empty folder or a sroa-dist store (never the current folder or one of its ancestors), and
nothing but a sroa-dist store's own entries is ever deleted. Each layout gets a fresh
``layout_token`` (root attribute); tasks carry the token they were planned for and
:func:`write_block` refuses to write into any other layout. The writer lease (one writer per
store) lives in :mod:`.lease`; this module keeps its ``sroa_lease`` group through overwrites
and extensions.
"""

from __future__ import annotations

import io
import json
import math
import os
import time
import uuid
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr
import zarr

from sroa_dist._registry import names_only
from sroa_dist.errors import SroaWarning

from ..cube import (
    ATTR_LAYOUT_TOKEN,
    ATTR_SPEC,
    COMPONENT,
    DONE,
    DONE_TIME,
    FAILED,
    FAILED_MESSAGES,
    STEP,
)
from ..kinds import parse_as, recorded_kind
from ..layout import Layout
from ..spec import SweepSpec, resumable_as
from .block_write import StaleLayoutError, check_chunk_aligned, write_block
from .certificate_files import (
    CERTIFICATE_DIGEST,
    FOLDER,
    block_file_name,
    certificates_folder,
    file_digest,
    settings_hash,
)
from .integrity import (
    DIGEST,
    DIGEST_VARIABLES,
    block_digests,
    ensure_digest_array,
    forget_blocks,
    mirror_store_attrs,
    read_flags,
    scan_store,
)
from .journal import FOLDER as JOURNAL_FOLDER
from .journal import JournalCount, journal_counts
from .lease import LEASE_GROUP
from .migrate import migrate_store
from .target import (
    REPAIR_COMMAND,
    STORE_KINDS,
    NotAStoreError,
    StoreIncompatibleError,
    StoreMetadataError,
    StoreRefusedError,
    check_store_target,
    filesystem,
    git_commit,
    now_iso,
    require_store,
    software_versions,
    storage_options_for,
    store_kind,
)
from .template import write_template

__all__ = [
    "STORE_KINDS",
    "TAKEOVER_SETTLE_S",
    "NotAStoreError",
    "PreparedStore",
    "StaleLayoutError",
    "StoreIncompatibleError",
    "StoreMetadataError",
    "StoreRefusedError",
    "StoreStatus",
    "check_store_target",
    "mark_failed",
    "open_cube_metadata",
    "prepare_store",
    "read_done",
    "require_store",
    "software_versions",
    "spec_and_layout",
    "store_kind",
    "store_layout",
    "store_status",
    "write_block",
]

# Short names of the two helpers every function here needs.
_so, _fs, _now = storage_options_for, filesystem, now_iso


@dataclass(frozen=True)
class PreparedStore:
    """Outcome of :func:`prepare_store`: the layout in force and how the store was obtained."""

    url: str
    layout: Layout
    action: str  # "created", "resumed" or "extended"
    reused_blocks: int = 0
    layout_token: str = ""
    #: The spec to compute with: the given one, its method revisions pinned to the store's.
    spec: SweepSpec | None = None


@dataclass(frozen=True)
class StoreStatus:
    """Progress of a store: blocks done / failed (failed = last attempt raised, not done)."""

    n_blocks: int
    n_done: int
    n_instances: int
    n_instances_done: int
    failed: dict[int, str]
    #: Blocks not done whose search journalled evaluations (:mod:`.journal`): a resumed run
    #: replays them.
    journal: dict[int, JournalCount] = field(default_factory=dict)

    @property
    def done_fraction(self) -> float:
        """Fraction of instances finished."""
        return self.n_instances_done / self.n_instances if self.n_instances else 1.0


# --------------------------------------------------------------------------------------------
# Create / resume / extend


def open_cube_metadata(url: str, so: Mapping[str, Any] | None) -> xr.Dataset:
    """The store as a lazy Dataset (metadata and coordinates only, nothing checked yet); a
    store whose metadata or coordinates cannot be read is refused naming what failed."""
    try:
        with warnings.catch_warnings():  # an entry without metadata: the check names it
            warnings.filterwarnings("ignore", message=".*not recognized as a component.*")
            return xr.open_zarr(url, consolidated=False, storage_options=_so(url, so))
    except Exception as exc:  # a codec or JSON error of any type, from zarr or xarray
        raise StoreMetadataError(
            f"store {url}: expected readable metadata and coordinates; {_unreadable(url, so, exc)}",
            _repair_hint(url),
        ) from None


def _unreadable(url: str, so: Mapping[str, Any] | None, exc: BaseException) -> str:
    """Which coordinate (or which metadata) could not be read, in a few words."""
    try:
        g = zarr.open_group(url, mode="r", storage_options=_so(url, so))
        with warnings.catch_warnings():  # an entry without metadata is no coordinate
            warnings.filterwarnings("ignore", message=".*not recognized as a component.*")
            arrays = list(g.arrays())
        for name, arr in arrays:
            if tuple(arr.metadata.dimension_names or ()) == (name,):  # a coordinate
                try:
                    arr[...]
                except Exception as err:  # a codec error of any type
                    return f"coordinate '{name}' cannot be read ({type(err).__name__})"
    except Exception as err:  # the group's own metadata
        return f"its top-level metadata cannot be read ({type(err).__name__})"
    return f"reading them failed ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})"


def _repair_hint(url: str) -> str:
    return f"`{REPAIR_COMMAND.format(url=url)}` rebuilds a store's lost metadata"


def spec_and_layout(ds: xr.Dataset, url: str) -> tuple[SweepSpec, Layout]:
    """The spec and layout a store (opened as ``ds``) was written with."""
    if ATTR_SPEC not in ds.attrs or DONE not in ds:
        raise StoreMetadataError(
            f"store {url}: expected a sroa-dist result store (attrs 'spec', variable 'done'); "
            "received a zarr store without them",
            _repair_hint(url) + "; or choose another --store",
        )
    # A store made before method revisions were recorded parses with no [solver.revisions]:
    # SweepSpec.pinned reads each missing method as revision 1.
    raw, source = json.loads(ds.attrs[ATTR_SPEC]), f"{url} (stored spec)"
    kind = recorded_kind(ds.attrs, raw, source)
    spec = parse_as(kind, raw, source)
    dims = spec.instance_grid()[0]  # the kind's dims; coordinates and blocks are the store's
    ref = next(
        (
            ds[n]
            for n in kind.variables(spec)
            if n in ds.data_vars and ds[n].dims[: len(dims)] == dims
        ),
        None,
    )
    if ref is None:
        raise StoreMetadataError(
            f"store {url}: expected the {kind.name} sweep's variables over dims {dims}; "
            "received a store without them",
            _repair_hint(url) + "; or choose another --store, or --overwrite",
        )
    coords = tuple(tuple(ds[d].values.tolist()) for d in dims)
    chunks = tuple(int(c) for c in ref.encoding["chunks"][: len(dims)])
    # The kind's own layout of the stored spec says how long 'step' and 'component' are when
    # the cube has no variable along them.
    own = kind.layout(spec, chunks=chunks, memory_limit=math.inf)
    n_steps = int(ds.sizes.get(STEP, 0)) or own.n_steps
    n_component = int(ds.sizes.get(COMPONENT, 0)) or own.n_component
    return spec, Layout(dims, coords, chunks, n_steps, n_component)


def _stored_spec_and_layout(url: str, so: Mapping[str, Any] | None) -> tuple[SweepSpec, Layout]:
    return spec_and_layout(open_cube_metadata(url, so), url)


def _warn_if_other_code(url: str, so: Mapping[str, Any] | None) -> None:
    """Bitwise reproducibility holds for one code version: say so when a store made by another
    commit is resumed or extended (its finished blocks are kept as they are)."""
    attrs = xr.open_zarr(url, consolidated=False, storage_options=_so(url, so)).attrs
    stored, current = attrs.get("git_commit", "unknown"), git_commit()
    if "unknown" not in (stored, current) and stored.removesuffix("-dirty") != current.removesuffix(
        "-dirty"
    ):
        warnings.warn(
            f"store {url}: created by commit {stored}, continued by {current}; blocks computed "
            "by different code versions may differ in their last bits (use --overwrite for a "
            "single-version cube)",
            SroaWarning,
            stacklevel=3,
        )


def prepare_store(
    url: str,
    spec: SweepSpec,
    layout: Layout,
    *,
    overwrite: bool = False,
    history: str = "",
    storage_options: Mapping[str, Any] | None = None,
    settle: float = 0.0,
    block_shape_requested: bool = True,
) -> PreparedStore:
    """Create the store, or check that an existing one can be resumed or extended.

    * absent (or ``overwrite``): write the template for ``layout``;
    * same instance settings and the same axes: resume, keeping the stored block shape
      (``layout``'s block shape is ignored, with a warning if it differs and
      ``block_shape_requested``: the caller asked for that shape, e.g. ``--block-size``);
    * same instance settings and every axis a superset of the stored one (same dims): extend —
      a template for the new grid (with the stored block shape) is written beside the store,
      every new block whose instances were all finished is copied over by coordinate label and
      marked done, and the new store replaces the old one;
    * anything else: :class:`StoreIncompatibleError` naming the differences.

    A store of an older format is migrated first (:func:`~.migrate.migrate_store`: its
    certificate files move inside it). A history line is appended to the dataset attrs in
    every case. A new layout (created,
    overwritten, extended) gets a new ``layout_token``; a resumed store keeps its own. The
    caller is expected to hold the store's writer lease (:class:`.lease.StoreLease`) and to
    have checked the target with :func:`check_store_target`, which is repeated here.

    An overwrite or extension first writes its new token into the old store (a fence: stale
    writers are refused from then on), waits ``settle`` seconds (give :data:`TAKEOVER_SETTLE_S`
    when the lease was just taken over: the old holder's block writes already past their check
    finish meanwhile), and only then deletes or replaces entries.
    """
    url = str(url)
    kind = check_store_target(url, overwrite=overwrite, storage_options=storage_options)
    _recover_interrupted_swap(url, storage_options)
    if overwrite or kind != "sroa":
        token = uuid.uuid4().hex
        if kind == "sroa":
            _fence(url, token, storage_options, settle)
            _clear_store(url, storage_options)
        spec = spec.pinned()
        write_template(url, spec, layout, history, storage_options, token, mode="a")
        return PreparedStore(url, layout, "created", 0, token, spec)
    old_spec, old_layout = _stored_spec_and_layout(url, storage_options)
    _warn_if_other_code(url, storage_options)
    spec, why = resumable_as(old_spec, spec)
    if why is None and old_layout.dims != layout.dims:
        why = f"dims {old_layout.dims} -> {layout.dims}"
    if why is not None:
        raise StoreIncompatibleError(
            f"store {url}: expected results of a compatible spec (same instance settings and "
            f"dims; axes may only grow); received a spec that differs in: {why}",
            "use --overwrite to discard the stored results, or another --store",
        )
    migrated = migrate_store(
        url, old_layout, storage_options, certificates=old_spec.output.certificates
    )
    if migrated.kept:
        warnings.warn(
            f"store {url}: kept {len(migrated.kept)} file(s) beside the store that are not "
            f"copies of its certificate files ({migrated.kept[0]}, ...); delete them yourself "
            "once they are not needed",
            SroaWarning,
            stacklevel=2,
        )
    _repair_marks(url, old_spec, old_layout, storage_options)
    same_axes = old_layout.coords == layout.coords
    if same_axes:
        if block_shape_requested and layout.chunks != old_layout.chunks:
            warnings.warn(
                f"store {url}: keeping its block shape {old_layout.chunks} (requested "
                f"{layout.chunks}); blocks are fixed when a store is created",
                SroaWarning,
                stacklevel=2,
            )
        _append_history(url, history, storage_options, spec)
        token = str(_root_attrs(url, storage_options).get(ATTR_LAYOUT_TOKEN, ""))
        return PreparedStore(url, old_layout, "resumed", 0, token, spec)
    for dim, old_c, new_c in zip(layout.dims, old_layout.coords, layout.coords, strict=True):
        missing = set(old_c) - set(new_c)
        if missing:
            raise StoreIncompatibleError(
                f"store {url}: axis '{dim}' expected to contain the stored values (axes may only "
                f"grow); received a spec without {sorted(missing)[:5]}",
                "use --overwrite or another --store",
            )
    chunks = tuple(min(c, s) for c, s in zip(old_layout.chunks, layout.shape, strict=True))
    new_layout = Layout(layout.dims, layout.coords, chunks, layout.n_steps, layout.n_component)
    token = uuid.uuid4().hex
    reused = _extend(url, spec, old_layout, new_layout, history, storage_options, token, settle)
    return PreparedStore(url, new_layout, "extended", reused, token, spec)


def _repair_marks(url: str, spec: SweepSpec, layout: Layout, so) -> None:
    """Before resuming or extending: add the digest arrays (and the copy of the top-level
    attributes) to an older store, check every finished block and its certificate file, and
    mark each damaged block not done (warning), so the run recomputes it."""
    certificates = spec.output.certificates
    ensure_digest_array(url, so, layout, certificates=certificates)
    report = scan_store(url, layout, so, certificates=certificates)
    if report.damaged:
        forget_blocks(url, sorted(report.damaged), so)
        warnings.warn(
            f"store {url}: {len(report.damaged)} damaged block(s) marked not done and "
            "recomputed by this run: " + " | ".join(report.lines()[: len(report.damaged)][:10]),
            SroaWarning,
            stacklevel=3,
        )


def _root_attrs(url: str, so) -> dict[str, Any]:
    return dict(zarr.open_group(url, mode="r", storage_options=_so(url, so)).attrs)


def _fence(url: str, token: str, so, settle: float) -> None:
    """Give the existing store its new layout token before anything is deleted or replaced:
    from here on a stale writer (a run whose lease was taken over) is refused and writes
    nothing. Then wait ``settle`` s for its writes already past their check."""
    group = zarr.open_group(url, mode="r+", storage_options=_so(url, so))
    mirror_store_attrs(group, {ATTR_LAYOUT_TOKEN: token})
    time.sleep(settle)


#: How long an overwrite or extension waits, after its fence, for block writes of a run whose
#: lease it took over (writes already past their layout check: one block per worker, well
#: under a second each) before it deletes or replaces the store's entries.
TAKEOVER_SETTLE_S = 2.0

#: How long an overwrite or an extension keeps replacing a store's entries while a stale
#: writer is still writing into them.
CLEAR_PATIENCE_S = 30.0


def _patiently(step: Callable[[], None], url: str, what: str, patience: float) -> None:
    """Run a repeatable ``step`` again while it fails with ``OSError``, for ``patience`` s.

    A write that passed its layout check just before the fence (see :func:`prepare_store`) can
    still drop a chunk into a folder being removed ("directory not empty", or an entry already
    gone); the step then starts again.
    """
    give_up = time.monotonic() + patience
    while True:
        try:
            return step()
        except OSError as exc:  # FileNotFoundError included
            if time.monotonic() > give_up:
                raise OSError(
                    f"store {url}: could not {what} within {patience:.0f} s: {exc} (is another "
                    "process still writing into it?)"
                ) from exc
            time.sleep(0.05)


def _clear_store(url: str, so, patience: float = CLEAR_PATIENCE_S) -> None:
    """Delete a sroa-dist store's entries (its certificate files inside it included), keeping
    its writer lease (overwrite)."""
    fs, path = _fs(url, so)

    def clear() -> None:
        for entry in fs.ls(path, detail=False, refresh=True):
            name = entry.rstrip("/").rsplit("/", 1)[-1]
            if name != LEASE_GROUP and entry.rstrip("/") != path.rstrip("/"):
                fs.rm(entry, recursive=True)

    _patiently(clear, url, "clear it for --overwrite", patience)


def _append_history(url: str, line: str, so, spec: SweepSpec | None = None) -> None:
    g = zarr.open_group(url, mode="r+", storage_options=_so(url, so))
    hist = str(g.attrs.get("history", ""))
    update = {"history": (hist + "\n" + line).strip() if line else hist}
    if spec is not None:
        update["spec_source"] = spec.source
    mirror_store_attrs(g, update)


_SWAP_MANIFEST = "sroa_swap.json"  # in <store>.next: written when the new layout is complete


def _recover_interrupted_swap(url: str, so) -> None:
    """Finish or undo an extension interrupted by a kill (see :func:`_extend`)."""
    fs, path = _fs(url, so)
    nxt, old = path + ".next", path + ".old"
    if fs.exists(old):  # stores extended by earlier versions: whole-folder swap
        if not fs.exists(path):
            fs.mv(nxt, path, recursive=True)  # .next was complete: the swap had started
        fs.rm(old, recursive=True)
    if fs.exists(f"{nxt}/{_SWAP_MANIFEST}"):
        _swap_in(fs, path, nxt)  # .next was complete: finish the swap
    elif fs.exists(nxt):
        fs.rm(nxt, recursive=True)  # an unfinished copy: redo it


def _swap_in(fs: Any, path: str, nxt: str) -> None:
    """Replace the store's entries by those of the complete ``nxt``, keeping the writer lease.

    The store folder itself never disappears (its lease stays in place, so no other run can
    slip in), and every step can be repeated after a kill (or when a stale writer's late chunk
    gets in the way, see :func:`_patiently`): entries not in the new layout are deleted, each
    new entry replaces the old one of the same name (moved while ``nxt`` still has it), and
    ``nxt`` goes last.
    """
    manifest = json.loads(fs.cat_file(f"{nxt}/{_SWAP_MANIFEST}"))
    # The certificate files and the journal stay in place (both named by block coordinates).
    keep = set(manifest) | {LEASE_GROUP, FOLDER, JOURNAL_FOLDER}
    local = "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,))

    def swap() -> None:
        for entry in fs.ls(path, detail=False, refresh=True):
            name = entry.rstrip("/").rsplit("/", 1)[-1]
            if name not in keep and entry.rstrip("/") != path.rstrip("/"):
                fs.rm(entry, recursive=True)
        for name in manifest:
            src, dst = f"{nxt}/{name}", f"{path}/{name}"
            if not fs.exists(src):
                continue  # moved before a kill
            if fs.exists(dst):
                fs.rm(dst, recursive=True)
            if local:
                os.rename(src, dst)  # atomic: src exists until dst is complete
            else:  # object stores: copy, and delete the source only with all of .next below
                fs.copy(src, dst, recursive=fs.isdir(src))

    _patiently(swap, path, "swap the extended layout in", CLEAR_PATIENCE_S)
    fs.rm(nxt, recursive=True)


def _extend(
    url, spec, old_layout: Layout, new_layout: Layout, history, so, token="", settle=0.0
) -> int:
    """Copy finished blocks into a new template at ``url + '.next'`` and swap it in."""
    fs, path = _fs(url, so)
    nxt_url = str(url) + ".next"
    _fence(url, token, so, settle)
    write_template(nxt_url, spec, new_layout, "", so, token)
    g_old = zarr.open_group(url, mode="r", storage_options=_so(url, so))
    g_new = zarr.open_group(nxt_url, mode="r+", storage_options=_so(nxt_url, so))
    mirror_store_attrs(
        g_new,
        {
            "history": (str(g_old.attrs.get("history", "")) + "\n" + history).strip(),
            "created": g_old.attrs.get("created", _now()),
        },
    )
    # Instance-level "finished" mask of the old store.
    done_old = np.asarray(g_old[DONE][:], dtype=bool)
    finished = np.zeros(old_layout.shape, dtype=bool)
    for b in np.flatnonzero(done_old):
        finished[old_layout.block_region(int(b))] = True
    index_maps = [{v: i for i, v in enumerate(c)} for c in old_layout.coords]
    nd = len(new_layout.dims)
    names = [  # the result variables: arrays over the instance grid (coordinates excluded)
        k
        for k in g_new.array_keys()
        if k in g_old
        and k not in new_layout.dims
        and tuple(g_new[k].metadata.dimension_names)[:nd] == new_layout.dims
    ]
    old_arrays = {k: g_old[k] for k in names}
    new_arrays = {k: g_new[k] for k in names}
    done_time_old = np.asarray(g_old[DONE_TIME][:], dtype=float)
    digest_arr = g_new[DIGEST]
    digest_names = list(digest_arr.attrs.get(DIGEST_VARIABLES, []))
    cert_arr = g_new[CERTIFICATE_DIGEST] if CERTIFICATE_DIGEST in g_new else None

    def copy(b: int) -> float | None:
        region = new_layout.block_region(b)
        idx = []
        for m, c, sl in zip(index_maps, new_layout.coords, region, strict=True):
            idx.append(np.asarray([m.get(v, -1) for v in c[sl]]))
        if any((i < 0).any() for i in idx) or not finished[np.ix_(*idx)].all():
            return None
        if cert_arr is not None:  # a block is reused with its certificate file, or not at all
            cert = _reusable_certificate(url, so, spec, new_layout, b)
            if cert is None:
                return None
            cert_arr[b] = cert
        copied = {}
        for k in names:  # orthogonal selection by label position, then an aligned write
            old_arr = old_arrays[k]
            extra = (slice(None),) * (len(old_arr.shape) - len(idx))
            data = old_arr.oindex[tuple(idx) + extra]
            check_chunk_aligned(k, new_arrays[k], region)
            new_arrays[k][region + extra] = data
            copied[k] = data
        dtypes = {k: new_arrays[k].dtype for k in names}  # the digests a task would record:
        digest_arr[b, :] = block_digests(digest_names, copied, dtypes)
        # Keep when the data was computed (evidence that it was reused, not recomputed): the
        # time of the old block holding the new block's first instance.
        first, _ = old_layout.block_of([int(i[0]) for i in idx])
        return float(done_time_old[first])

    with ThreadPoolExecutor(8) as pool:  # I/O bound: zarr releases the GIL
        times = list(pool.map(copy, range(new_layout.n_blocks)))
    reused_idx = [b for b, t in enumerate(times) if t is not None]
    if reused_idx:
        dt = np.full(new_layout.n_blocks, np.nan)
        dt[reused_idx] = [times[b] for b in reused_idx]
        mask = np.zeros(new_layout.n_blocks, dtype=bool)
        mask[reused_idx] = True
        # Whole-array writes of the bookkeeping by the single client (no concurrent writers).
        g_new[DONE_TIME][:] = dt
        g_new[DONE][:] = mask
    reused = len(reused_idx)
    # Swap the new layout in (each step recoverable on restart, the lease kept in place).
    nxt = path + ".next"
    names = sorted(
        e.rstrip("/").rsplit("/", 1)[-1]
        for e in fs.ls(nxt, detail=False)
        if e.rstrip("/") != nxt.rstrip("/")
    )
    fs.pipe_file(f"{nxt}/{_SWAP_MANIFEST}", json.dumps(names).encode())
    _swap_in(fs, path, nxt)
    return reused


def _reusable_certificate(url, so, spec: SweepSpec, layout: Layout, b: int) -> int | None:
    """The digest of block ``b``'s certificate file when one of this spec is stored under its
    name (blocks keep their file through an extension when their coordinates are the same),
    else None: the block is recomputed."""
    fs, base = certificates_folder(url, so)
    region = layout.block_region(b)
    name = block_file_name(layout.dims, [c[s] for c, s in zip(layout.coords, region, strict=True)])
    try:
        data = fs.cat_file(f"{base}/{name}")
        with np.load(io.BytesIO(data)) as z:
            if str(z["settings_hash"]) != settings_hash(spec):
                return None  # a file of another spec left at this path
    except Exception:  # missing, unreadable: recompute the block
        return None
    return file_digest(data)


def mark_failed(url: str, failures: Mapping[int, str], storage_options=None) -> None:
    """Record failed blocks (client only: one writer for the attrs)."""
    g = zarr.open_group(url, mode="r+", storage_options=_so(url, storage_options))
    arr = g[FAILED]
    msgs = dict(arr.attrs.get(FAILED_MESSAGES, {}))
    for i, msg in failures.items():
        arr[int(i)] = True
        msgs[str(int(i))] = str(msg)[:2000]
    arr.attrs[FAILED_MESSAGES] = msgs


def clear_failed(url: str, storage_options=None) -> None:
    """Forget recorded failures before a new attempt."""
    g = zarr.open_group(url, mode="r+", storage_options=_so(url, storage_options))
    if g[FAILED].attrs.get(FAILED_MESSAGES):
        g[FAILED][:] = False
        g[FAILED].attrs[FAILED_MESSAGES] = {}


def read_done(url: str, storage_options=None) -> np.ndarray:
    """The ``done`` mask (one bool per block)."""
    g = zarr.open_group(url, mode="r", storage_options=_so(url, storage_options))
    # A damaged chunk reads as not done (`check` names it; the next run rewrites it).
    return read_flags(g[DONE], g[DONE].shape[0], False)[0].astype(bool)


def store_status(url: str, storage_options=None) -> StoreStatus:
    """Blocks and instances done, failed blocks with their messages."""
    require_store(str(url), storage_options)
    with names_only():  # counting blocks needs no user code: do not import the spec's modules
        _, layout = _stored_spec_and_layout(str(url), storage_options)
    g = zarr.open_group(url, mode="r", storage_options=_so(url, storage_options))
    done = read_done(url, storage_options)
    failed_mask = read_flags(g[FAILED], done.size, False)[0].astype(bool) & ~done
    msgs = g[FAILED].attrs.get(FAILED_MESSAGES, {})
    failed = {int(i): msgs.get(str(int(i)), "") for i in np.flatnonzero(failed_mask)}
    n_inst_done = sum(layout.block_size(int(b)) for b in np.flatnonzero(done))
    journal = journal_counts(str(url), layout, np.flatnonzero(~done), storage_options)
    return StoreStatus(
        layout.n_blocks, int(done.sum()), layout.n_instances, n_inst_done, failed, journal
    )


def store_layout(url: str, storage_options=None) -> tuple[SweepSpec, Layout]:
    """The spec and layout a store was written with."""
    return _stored_spec_and_layout(str(url), storage_options)
