"""Result-cube storage: the only module that imports zarr.

One zarr (v3) store per sweep, local path or fsspec URL. Write pattern (xarray's documented
one for distributed writers): the client writes a template with ``compute=False`` (metadata and
coordinates only), then every task writes its own block with a chunk-aligned region write and
finally flips its element of the ``done`` mask. Blocks *are* chunks, so no two writers ever
share a chunk (concurrent writes into a shared chunk silently lose data); :func:`write_block`
checks the alignment against the store's real chunks and refuses anything else.

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

import datetime as _dt
import json
import os
import subprocess
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr
import zarr

from . import schema
from .grid import Layout, check_region_aligned
from .lease import LEASE_GROUP
from .schema import (
    ATTR_LAYOUT_TOKEN,
    ATTR_SPEC,
    ATTR_SWEEP_NAME,
    BLOCK,
    BOOKKEEPING,
    COMPONENT,
    DIMS,
    DONE,
    DONE_TIME,
    FAILED,
    FAILED_MESSAGES,
    STEP,
)
from .spec import SweepSpec, spec_from_dict

if TYPE_CHECKING:
    from .worker import BlockResult

__all__ = [
    "NotAStoreError",
    "PreparedStore",
    "StaleLayoutError",
    "StoreIncompatibleError",
    "StoreRefusedError",
    "StoreStatus",
    "check_store_target",
    "mark_failed",
    "open_results",
    "prepare_store",
    "read_done",
    "store_status",
    "write_block",
]


class StoreIncompatibleError(ValueError):
    """The store holds results of a spec that computes different instances."""


class NotAStoreError(StoreIncompatibleError):
    """The path exists but is not a sroa-dist result store (a file, a folder, another zarr)."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.hint = hint


class StoreRefusedError(StoreIncompatibleError):
    """``run`` would write where it could destroy something that is not a sroa-dist store."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.hint = hint


class StaleLayoutError(RuntimeError):
    """A task planned for one layout of a store tried to write into another (newer) one."""


@dataclass(frozen=True)
class PreparedStore:
    """Outcome of :func:`prepare_store`: the layout in force and how the store was obtained."""

    url: str
    layout: Layout
    action: str  # "created", "resumed" or "extended"
    reused_blocks: int = 0
    layout_token: str = ""


@dataclass(frozen=True)
class StoreStatus:
    """Progress of a store: blocks done / failed (failed = last attempt raised, not done)."""

    n_blocks: int
    n_done: int
    n_instances: int
    n_instances_done: int
    failed: dict[int, str]

    @property
    def done_fraction(self) -> float:
        """Fraction of instances finished."""
        return self.n_instances_done / self.n_instances if self.n_instances else 1.0


# --------------------------------------------------------------------------------------------
# Helpers


def _so(url: str, storage_options: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """storage_options only for URLs (zarr refuses them for local paths).

    Object-store listings are not cached: the writer lease is created and deleted by other
    processes (and filesystem instances), and a cached listing would show a deleted lease.
    """
    if "://" not in str(url):
        return None
    so = dict(storage_options or {})
    if str(url).startswith(("s3://", "s3a://")):
        so.setdefault("use_listings_cache", False)
    return so


def _fs(url: str, storage_options: Mapping[str, Any] | None):
    import fsspec.core

    fs, path = fsspec.core.url_to_fs(str(url), **(_so(url, storage_options) or {}))
    return fs, path


#: What a store path holds (see :func:`store_kind`).
STORE_KINDS = ("absent", "empty", "creating", "sroa", "file", "zarr", "other")


def store_kind(url: str, storage_options: Mapping[str, Any] | None = None) -> str:
    """What ``url`` holds: ``absent``, ``empty`` (a folder / prefix with nothing in it),
    ``creating`` (only a writer lease: a store being created), ``sroa`` (a sroa-dist result
    store), ``file``, ``zarr`` (another zarr hierarchy) or ``other`` (anything else)."""
    fs, path = _fs(url, storage_options)
    path = path.rstrip("/") or path
    if not fs.exists(path):
        return "absent"
    if fs.isfile(path):
        return "file"
    names = {p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(path, detail=False)}
    names.discard(path.rsplit("/", 1)[-1])  # some filesystems list the prefix itself
    if not names:
        return "empty"
    if names == {LEASE_GROUP}:
        return "creating"
    if "zarr.json" not in names and ".zgroup" not in names and ".zarray" not in names:
        return "other"
    try:
        attrs = zarr.open_group(url, mode="r", storage_options=_so(url, storage_options)).attrs
    except Exception:  # an array, a v2 store, unreadable metadata: not ours
        return "zarr"
    return "sroa" if ATTR_SPEC in attrs and ATTR_SWEEP_NAME in attrs else "zarr"


def _is_cwd_or_ancestor(url: str) -> bool:
    if "://" in url and not url.startswith("file://"):
        return False
    p = Path(url.removeprefix("file://")).expanduser().resolve()
    cwd = Path.cwd().resolve()
    return p == cwd or p in cwd.parents


def check_store_target(
    url: str, *, overwrite: bool = False, storage_options: Mapping[str, Any] | None = None
) -> str:
    """Refuse a ``--store`` that a run could damage; return its :func:`store_kind`.

    Accepted: a path that does not exist, an empty folder, a store being created, a sroa-dist
    store (resumed, extended, or with ``overwrite`` replaced). Refused with
    :class:`StoreRefusedError`: the current folder or an ancestor of it, a file, another zarr
    store and any folder holding other things — with or without ``overwrite``, which only ever
    replaces sroa-dist stores.
    """
    url = str(url)
    if _is_cwd_or_ancestor(url):
        raise StoreRefusedError(
            f"--store {url}: expected a folder of its own for the result store; received the "
            "current folder or one of its ancestors, whose files a store would mix with",
            "name a new folder, e.g. --store results/NAME.zarr",
        )
    kind = store_kind(url, storage_options)
    if kind == "file":
        raise StoreRefusedError(
            f"--store {url}: expected a folder for the result store; received a file",
            "name a folder that does not exist yet, e.g. --store results/NAME.zarr",
        )
    if kind == "zarr":
        raise StoreRefusedError(
            f"--store {url}: expected a sroa-dist result store, an empty folder or a new path; "
            "received a zarr store that sroa-dist did not write (never replaced, not even with "
            "--overwrite)",
            "choose another --store, or delete that store yourself if it is not needed",
        )
    if kind == "other":
        raise StoreRefusedError(
            f"--store {url}: expected a sroa-dist result store, an empty folder or a new path; "
            "received a folder holding other files (never deleted, not even with --overwrite)",
            "choose a new path such as --store results/NAME.zarr",
        )
    return kind


def software_versions() -> dict[str, str]:
    """Versions of the packages that determine results."""
    import dask
    import distributed
    import scipy

    import sroa_dist

    return {
        "sroa_dist_version": getattr(sroa_dist, "__version__", "unknown"),
        "numpy_version": np.__version__,
        "scipy_version": scipy.__version__,
        "dask_version": dask.__version__,
        "distributed_version": distributed.__version__,
        "zarr_version": zarr.__version__,
        "xarray_version": xr.__version__,
    }


def git_commit() -> str:
    """``git describe --always --dirty`` of the package source, or ``"unknown"``.

    ``SROA_GIT_COMMIT`` wins when set: installed images carry no ``.git``.
    """
    if os.environ.get("SROA_GIT_COMMIT"):
        return os.environ["SROA_GIT_COMMIT"]
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=40"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _coord_array(dim: str, values: Sequence[Any]) -> np.ndarray:
    dtype = DIMS[dim].dtype
    if dtype == "str":
        return np.array(list(values), dtype=object)  # stored as zarr v3 vlen string
    return np.asarray(values, dtype=dtype)


# --------------------------------------------------------------------------------------------
# Template


def _template(
    spec: SweepSpec, layout: Layout, history: str, layout_token: str = ""
) -> tuple[xr.Dataset, dict]:
    import dask.array as da

    vectors = spec.output.vectors
    dims = layout.dims
    coords: dict[str, Any] = {
        d: (d, _coord_array(d, c)) for d, c in zip(dims, layout.coords, strict=True)
    }
    coords[STEP] = (STEP, np.arange(1, layout.n_steps + 1, dtype=np.int64))
    coords[BLOCK] = (BLOCK, np.arange(layout.n_blocks, dtype=np.int64))
    if vectors:
        coords[COMPONENT] = (COMPONENT, np.arange(layout.n_component, dtype=np.int64))
    extent = {STEP: layout.n_steps, COMPONENT: layout.n_component}
    data_vars: dict[str, Any] = {}
    encoding: dict[str, dict[str, Any]] = {}
    for name, var in schema.variables(spec.kind, vectors).items():
        if name in dims:
            continue  # 'eps' as an axis: the coordinate is ||E|| (E scaled to it)
        # One dask chunk per variable: the template is never computed, and a graph of one task
        # per block would take seconds to build for 10^4 blocks. The zarr chunks (= blocks)
        # come from the encoding.
        shape = layout.shape + tuple(extent[d] for d in var.dims)
        arr = da.full(shape, var.fill, dtype=var.dtype, chunks=-1)
        data_vars[name] = (dims + var.dims, arr, var.attrs)
        chunks = layout.chunks + tuple(extent[d] for d in var.dims)
        encoding[name] = {"chunks": chunks, "fill_value": var.fill}
    # Bookkeeping: one chunk per block, so each task writes only its own element.
    for name, var in BOOKKEEPING.items():
        arr = da.full(layout.n_blocks, var.fill, dtype=var.dtype, chunks=-1)
        data_vars[name] = (var.dims, arr, var.attrs)
        encoding[name] = {"chunks": (1,), "fill_value": var.fill}
    ds = xr.Dataset(data_vars, coords=coords)
    for d in ds.dims:
        if d in ds.coords:
            ds[d].attrs.update(DIMS[d].attrs if d in DIMS else {})
    scalars = {
        f"{schema.SETTING_PREFIX}{spec.axis_keys[k].replace('noise', 'noise_model')}": ax.scalar
        for k, ax in spec.axes.items()
        if not ax.swept
    }
    ds.attrs.update(
        {
            "title": f"sroa-dist sweep '{spec.name}'",
            "description": spec.description,
            "source": "sroa-dist (certified SROA of nearly SOD tensors), Monte Carlo sweep",
            ATTR_SWEEP_NAME: spec.name,
            ATTR_SPEC: spec.to_json(),
            "spec_source": spec.source,
            "block_shape": json.dumps(dict(zip(layout.dims, layout.chunks, strict=True))),
            **{k: (v if not isinstance(v, bool) else int(v)) for k, v in scalars.items()},
            **_kind_settings(spec),
            "git_commit": git_commit(),
            **software_versions(),
            "created": _now(),
            "history": history,
            # Identifies this layout: tasks planned for another one are refused by write_block.
            ATTR_LAYOUT_TOKEN: layout_token,
        }
    )
    return ds, encoding


def _kind_settings(spec: SweepSpec) -> dict[str, Any]:
    """Provenance attrs of the settings that are not axes: the tensor family or the model."""
    if spec.kind == "model":
        model = spec.model
        return {
            "setting_model": model.name,
            "setting_model_prior": json.dumps(model.prior, sort_keys=True),
            "setting_model_tolerances": json.dumps(model.tolerances, sort_keys=True),
            "setting_model_norms": int(model.norms),
            **({"setting_sigma2": model.sigma2} if model.sigma2 is not None else {}),
        }
    return {
        "setting_basis": spec.tensor.basis,
        "setting_lambdas": json.dumps(spec.tensor.lambdas),
        "setting_noise_scale": spec.scale,
    }


# --------------------------------------------------------------------------------------------
# Create / resume / extend


def _stored_spec_and_layout(url: str, so: Mapping[str, Any] | None) -> tuple[SweepSpec, Layout]:
    ds = xr.open_zarr(url, consolidated=False, storage_options=_so(url, so))
    if ATTR_SPEC not in ds.attrs or "lam_hat" not in ds or DONE not in ds:
        raise StoreIncompatibleError(
            f"store {url}: expected a sroa-dist result store (attrs 'spec', variables 'lam_hat', "
            "'done'); received a zarr store without them. Hint: choose another --store, or "
            "--overwrite to replace it"
        )
    spec = spec_from_dict(json.loads(ds.attrs[ATTR_SPEC]), source=f"{url} (stored spec)")
    dims = tuple(d for d in ds["lam_hat"].dims if d != STEP)
    coords = tuple(tuple(ds[d].values.tolist()) for d in dims)
    chunks = tuple(int(c) for c in ds["lam_hat"].encoding["chunks"][: len(dims)])
    n_component = int(ds.sizes.get("component", 0)) or (
        int(ds.sizes[STEP]) if spec.kind == "model" else max(spec.axes["tensor.n"].values)
    )
    layout = Layout(dims, coords, chunks, int(ds.sizes[STEP]), n_component)
    return spec, layout


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
            stacklevel=3,
        )


def _incompatibility(old: SweepSpec, new: SweepSpec) -> str | None:
    a, b = old.instance_settings(), new.instance_settings()
    if a == b:
        return None
    diffs = []
    for sect in sorted(set(a) | set(b)):
        va, vb = a.get(sect), b.get(sect)
        if isinstance(va, dict) and isinstance(vb, dict):
            diffs += [
                f"{sect}.{k}: {va.get(k)!r} -> {vb.get(k)!r}"
                for k in sorted(set(va) | set(vb))
                if va.get(k) != vb.get(k)
            ]
        elif va != vb:
            diffs.append(f"{sect}: {va!r} -> {vb!r}")
    return "; ".join(diffs)


def prepare_store(
    url: str,
    spec: SweepSpec,
    layout: Layout,
    *,
    overwrite: bool = False,
    history: str = "",
    storage_options: Mapping[str, Any] | None = None,
) -> PreparedStore:
    """Create the store, or check that an existing one can be resumed or extended.

    * absent (or ``overwrite``): write the template for ``layout``;
    * same instance settings and the same axes: resume, keeping the stored block shape
      (``layout``'s block shape is ignored, with a warning if it differs);
    * same instance settings and every axis a superset of the stored one (same dims): extend —
      a template for the new grid (with the stored block shape) is written beside the store,
      every new block whose instances were all finished is copied over by coordinate label and
      marked done, and the new store replaces the old one;
    * anything else: :class:`StoreIncompatibleError` naming the differences.

    A history line is appended to the dataset attrs in every case. A new layout (created,
    overwritten, extended) gets a new ``layout_token``; a resumed store keeps its own. The
    caller is expected to hold the store's writer lease (:class:`.lease.StoreLease`) and to
    have checked the target with :func:`check_store_target`, which is repeated here.
    """
    url = str(url)
    kind = check_store_target(url, overwrite=overwrite, storage_options=storage_options)
    _recover_interrupted_swap(url, storage_options)
    if overwrite or kind != "sroa":
        token = uuid.uuid4().hex
        if kind == "sroa":
            _clear_store(url, storage_options)
        _write_template(url, spec, layout, history, storage_options, token, mode="a")
        return PreparedStore(url, layout, "created", 0, token)
    old_spec, old_layout = _stored_spec_and_layout(url, storage_options)
    _warn_if_other_code(url, storage_options)
    why = _incompatibility(old_spec, spec)
    if why is None and old_layout.dims != layout.dims:
        why = f"dims {old_layout.dims} -> {layout.dims}"
    if why is not None:
        raise StoreIncompatibleError(
            f"store {url}: expected results of a compatible spec (same instance settings and "
            f"dims; axes may only grow); received a spec that differs in: {why}. Hint: use "
            "--overwrite to discard the stored results, or another --store"
        )
    same_axes = old_layout.coords == layout.coords
    if same_axes:
        if layout.chunks != old_layout.chunks:
            warnings.warn(
                f"store {url}: keeping its block shape {old_layout.chunks} (requested "
                f"{layout.chunks}); blocks are fixed when a store is created",
                stacklevel=2,
            )
        _append_history(url, history, storage_options, spec)
        token = str(_root_attrs(url, storage_options).get(ATTR_LAYOUT_TOKEN, ""))
        return PreparedStore(url, old_layout, "resumed", 0, token)
    for dim, old_c, new_c in zip(layout.dims, old_layout.coords, layout.coords, strict=True):
        missing = set(old_c) - set(new_c)
        if missing:
            raise StoreIncompatibleError(
                f"store {url}: axis '{dim}' expected to contain the stored values (axes may only "
                f"grow); received a spec without {sorted(missing)[:5]}. Hint: use --overwrite or "
                "another --store"
            )
    chunks = tuple(min(c, s) for c, s in zip(old_layout.chunks, layout.shape, strict=True))
    new_layout = Layout(layout.dims, layout.coords, chunks, layout.n_steps, layout.n_component)
    token = uuid.uuid4().hex
    reused = _extend(url, spec, old_layout, new_layout, history, storage_options, token)
    return PreparedStore(url, new_layout, "extended", reused, token)


def _root_attrs(url: str, so) -> dict[str, Any]:
    return dict(zarr.open_group(url, mode="r", storage_options=_so(url, so)).attrs)


def _clear_store(url: str, so) -> None:
    """Delete a sroa-dist store's entries, keeping its writer lease (overwrite)."""
    fs, path = _fs(url, so)
    for entry in fs.ls(path, detail=False):
        name = entry.rstrip("/").rsplit("/", 1)[-1]
        if name != LEASE_GROUP and entry.rstrip("/") != path.rstrip("/"):
            fs.rm(entry, recursive=True)


def _write_template(url, spec, layout, history, so, layout_token="", mode="w") -> None:
    # mode "a" into the store itself: "w" would delete the folder, writer lease included.
    ds, encoding = _template(spec, layout, history, layout_token)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Cc]onsolidated metadata.*")
        ds.to_zarr(
            url,
            mode=mode,
            compute=False,
            encoding=encoding,
            consolidated=False,
            storage_options=_so(url, so),
            zarr_format=3,
        )


def _append_history(url: str, line: str, so, spec: SweepSpec | None = None) -> None:
    g = zarr.open_group(url, mode="r+", storage_options=_so(url, so))
    hist = str(g.attrs.get("history", ""))
    update = {"history": (hist + "\n" + line).strip() if line else hist}
    if spec is not None:
        update["spec_source"] = spec.source
    g.attrs.update(update)


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
    slip in), and every step can be repeated after a kill: entries not in the new layout are
    deleted, each new entry replaces the old one of the same name (moved while ``nxt`` still
    has it), and ``nxt`` goes last.
    """
    manifest = json.loads(fs.cat_file(f"{nxt}/{_SWAP_MANIFEST}"))
    keep = set(manifest) | {LEASE_GROUP}
    for entry in fs.ls(path, detail=False):
        name = entry.rstrip("/").rsplit("/", 1)[-1]
        if name not in keep and entry.rstrip("/") != path.rstrip("/"):
            fs.rm(entry, recursive=True)
    local = "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,))
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
    fs.rm(nxt, recursive=True)


def _extend(url, spec, old_layout: Layout, new_layout: Layout, history, so, token="") -> int:
    """Copy finished blocks into a new template at ``url + '.next'`` and swap it in."""
    fs, path = _fs(url, so)
    nxt_url = str(url) + ".next"
    _write_template(nxt_url, spec, new_layout, "", so, token)
    g_old = zarr.open_group(url, mode="r", storage_options=_so(url, so))
    g_new = zarr.open_group(nxt_url, mode="r+", storage_options=_so(nxt_url, so))
    g_new.attrs.update(
        {
            "history": (str(g_old.attrs.get("history", "")) + "\n" + history).strip(),
            "created": g_old.attrs.get("created", _now()),
        }
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

    def copy(b: int) -> float | None:
        region = new_layout.block_region(b)
        idx = []
        for m, c, sl in zip(index_maps, new_layout.coords, region, strict=True):
            idx.append(np.asarray([m.get(v, -1) for v in c[sl]]))
        if any((i < 0).any() for i in idx) or not finished[np.ix_(*idx)].all():
            return None
        for k in names:  # orthogonal selection by label position, then an aligned write
            old_arr = old_arrays[k]
            extra = (slice(None),) * (len(old_arr.shape) - len(idx))
            data = old_arr.oindex[tuple(idx) + extra]
            _check_aligned(k, new_arrays[k], region)
            new_arrays[k][region + extra] = data
        # Keep when the data was computed (evidence that it was reused, not recomputed): the
        # time of the old block holding the new block's first instance.
        first = tuple(int(i[0]) // c for i, c in zip(idx, old_layout.chunks, strict=True))
        return float(done_time_old[np.ravel_multi_index(first, old_layout.block_grid)])

    from concurrent.futures import ThreadPoolExecutor

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


# --------------------------------------------------------------------------------------------
# Task-side writes


def _check_aligned(name: str, arr: Any, region: Sequence[slice]) -> None:
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
) -> None:
    """Write one block's arrays into its region, then mark the block done.

    ``region`` defaults to block ``index`` of the store's own chunk grid. The region is checked
    against the real zarr chunks of every variable written: a region that does not cover whole
    chunks raises ``ValueError`` and nothing is written. With ``layout_token`` (the token of
    the layout the task was planned for), a store whose layout has another token raises
    :class:`StaleLayoutError` and nothing is written: a stale writer never writes block ``index``
    of a layout it did not plan.
    """
    from zarr.core.sync import sync  # zarr's own event loop, which its stores are bound to

    sync(_write_block(url, index, result, region, _so(url, storage_options), layout_token))


async def _write_block(url, index, result, region, so, layout_token=None) -> None:
    # Region writes straight through zarr's async API: the same bytes as xarray's
    # to_zarr(region=...) for these plain float64/bool variables (no CF encoding), with all
    # arrays written concurrently (less per-task overhead than xarray; see docs/sweeps.md).
    import asyncio

    import zarr.api.asynchronous as za

    g = await za.open_group(store=url, mode="r+", storage_options=so)
    if layout_token is not None and g.attrs.get(ATTR_LAYOUT_TOKEN, "") != layout_token:
        raise StaleLayoutError(
            f"store {url}: block {index} was planned for layout {layout_token!r}, but the store "
            f"now has layout {g.attrs.get('layout_token', '')!r} (overwritten or extended by "
            "another run); nothing written"
        )
    ref = await g.getitem("lam_hat")
    dims = tuple(ref.metadata.dimension_names)[:-1]
    if region is None:
        grid = tuple(-(-s // c) for s, c in zip(ref.shape[:-1], ref.chunks[:-1], strict=True))
        multi = np.unravel_index(index, grid)
        region = tuple(
            slice(int(m) * c, min((int(m) + 1) * c, s))
            for m, c, s in zip(multi, ref.chunks[:-1], ref.shape[:-1], strict=True)
        )
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
        _check_aligned(name, arr, region)
    await asyncio.gather(
        *(
            arr.setitem(
                region + (slice(None),) * (result.data[n].ndim - len(region)), result.data[n]
            )
            for n, arr in zip(names, arrays, strict=True)
        )
    )
    # The done flag goes last: a kill before it leaves a block that is simply recomputed.
    done_time, done = await asyncio.gather(g.getitem(DONE_TIME), g.getitem(DONE))
    await done_time.setitem(index, _dt.datetime.now(_dt.UTC).timestamp())
    await done.setitem(index, True)


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
    return np.asarray(g[DONE][:], dtype=bool)


def require_store(url: str, storage_options: Mapping[str, Any] | None = None) -> None:
    """Raise ``FileNotFoundError`` or :class:`NotAStoreError` unless ``url`` is a sroa-dist cube."""
    url = str(url)
    kind = store_kind(url, storage_options)
    if kind == "sroa":
        return
    if kind == "absent":
        raise FileNotFoundError(
            f"store: expected a sroa-dist result store; received {url!r}, which does not exist. "
            "Hint: run `sroa-dist run SPEC --store ...` first"
        )
    what = {
        "empty": "an empty folder (no zarr metadata)",
        "creating": "a store that a run is just creating (only its writer lease so far)",
        "file": "a file",
        "zarr": "a zarr store that sroa-dist did not write (no sweep spec in its attributes)",
        "other": "a folder without zarr metadata",
    }[kind]
    hint = (
        "wait for the run to write its template, or run `sroa-dist run SPEC --store ...`"
        if kind == "creating"
        else "give the --store of a `sroa-dist run`, e.g. results/NAME.zarr"
    )
    raise NotAStoreError(f"store {url}: expected a sroa-dist result store; received {what}", hint)


def store_status(url: str, storage_options=None) -> StoreStatus:
    """Blocks and instances done, failed blocks with their messages."""
    require_store(str(url), storage_options)
    _, layout = _stored_spec_and_layout(str(url), storage_options)
    g = zarr.open_group(url, mode="r", storage_options=_so(url, storage_options))
    done = np.asarray(g[DONE][:], dtype=bool)
    failed_mask = np.asarray(g[FAILED][:], dtype=bool) & ~done
    msgs = g[FAILED].attrs.get(FAILED_MESSAGES, {})
    failed = {int(i): msgs.get(str(int(i)), "") for i in np.flatnonzero(failed_mask)}
    n_inst_done = sum(layout.block_size(int(b)) for b in np.flatnonzero(done))
    return StoreStatus(layout.n_blocks, int(done.sum()), layout.n_instances, n_inst_done, failed)


def store_layout(url: str, storage_options=None) -> tuple[SweepSpec, Layout]:
    """The spec and layout a store was written with."""
    return _stored_spec_and_layout(str(url), storage_options)


def open_results(store: str | Path, storage_options: Mapping[str, Any] | None = None) -> xr.Dataset:
    """Open a result cube lazily (dask-backed) for analysis.

    Instances of unfinished blocks read as NaN (False for booleans); ``done`` tells which
    blocks are finished.
    """
    url = str(store)
    require_store(url, storage_options)
    ds = xr.open_zarr(url, consolidated=False, storage_options=_so(url, storage_options))
    # Documented order, not the store listing's.
    order = dict.fromkeys(
        [*schema.TENSOR_VARIABLES, *schema.MODEL_VARIABLES, schema.V_HAT.name, *BOOKKEEPING]
    )
    return ds[[v for v in order if v in ds.data_vars]]
