"""Where a result store may live: what a path holds, which paths a run may write, and the
provenance of the code that writes (versions, commit).

Safety: :func:`check_store_target` lets a run write only into a path that does not exist, an
empty folder or a sroa-dist store (never the current folder or one of its ancestors), and
nothing but a sroa-dist store's own entries is ever deleted. Part of the storage layer
(imports zarr); :mod:`.prepare` and :mod:`.result_store` build on it.
"""

from __future__ import annotations

import datetime as _dt
import os
import subprocess
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import fsspec.core
import numpy as np
import xarray as xr
import zarr

from sroa_dist.errors import InputError

from ..cube import ATTR_SPEC, ATTR_SWEEP_NAME, DONE, DONE_TIME, FAILED
from .lease import LEASE_GROUP

__all__ = [
    "STORE_KINDS",
    "NotAStoreError",
    "StoreIncompatibleError",
    "StoreMetadataError",
    "StoreNotFoundError",
    "StoreRefusedError",
    "check_store_target",
    "filesystem",
    "git_commit",
    "require_store",
    "software_versions",
    "storage_options_for",
    "store_kind",
]


class StoreIncompatibleError(InputError):
    """The store holds results of a spec that computes different instances."""


class NotAStoreError(StoreIncompatibleError):
    """The path exists but is not a sroa-dist result store (a file, a folder, another zarr)."""


class StoreNotFoundError(NotAStoreError, FileNotFoundError):
    """Nothing is at the path: no store was made there yet (a ``FileNotFoundError`` too)."""


class StoreMetadataError(StoreIncompatibleError):
    """A sroa-dist store whose top-level metadata (attributes, coordinates) is lost or cannot
    be read, while its chunks and digests may be intact; ``hint`` names the repair."""


class StoreRefusedError(StoreIncompatibleError):
    """``run`` would write where it could destroy something that is not a sroa-dist store."""


def storage_options_for(
    url: str, storage_options: Mapping[str, Any] | None
) -> dict[str, Any] | None:
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


def filesystem(url: str, storage_options: Mapping[str, Any] | None):
    fs, path = fsspec.core.url_to_fs(str(url), **(storage_options_for(url, storage_options) or {}))
    return fs, path


#: What a store path holds (see :func:`store_kind`).
STORE_KINDS = ("absent", "empty", "creating", "sroa", "stranded", "file", "zarr", "other")

#: How to rebuild a stranded store's top-level metadata (``{url}``: the store).
REPAIR_COMMAND = "sroa-dist check --repair-metadata {url}"


def store_kind(url: str, storage_options: Mapping[str, Any] | None = None) -> str:
    """What ``url`` holds: ``absent``, ``empty`` (a folder / prefix with nothing in it),
    ``creating`` (only a writer lease: a store being created), ``sroa`` (a sroa-dist result
    store), ``stranded`` (a sroa-dist store's arrays whose top-level metadata or spec
    attributes are lost or unreadable), ``file``, ``zarr`` (another zarr hierarchy) or
    ``other`` (anything else)."""
    fs, path = filesystem(url, storage_options)
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
    ours = _BOOKKEEPING <= names and fs.exists(f"{path.rstrip('/')}/{DONE}/zarr.json")
    if "zarr.json" not in names and ".zgroup" not in names and ".zarray" not in names:
        return "stranded" if ours else "other"
    try:
        attrs = zarr.open_group(
            url, mode="r", storage_options=storage_options_for(url, storage_options)
        ).attrs
    except Exception:  # an array, a v2 store, unreadable metadata: not ours
        return "stranded" if ours else "zarr"
    if ATTR_SPEC in attrs and ATTR_SWEEP_NAME in attrs:
        return "sroa"
    return "stranded" if ours else "zarr"


#: Entries every sroa-dist store holds (its bookkeeping arrays), by which a store that lost its
#: top-level metadata is still recognised.
_BOOKKEEPING = {DONE, DONE_TIME, FAILED}


def _stranded(url: str) -> StoreMetadataError:
    return StoreMetadataError(
        f"store {url}: expected a sroa-dist result store; received one whose top-level "
        "metadata (zarr.json, or its spec and provenance attributes) is lost or unreadable, "
        "while its arrays remain",
        f"its chunks and digests may be intact: `{REPAIR_COMMAND.format(url=url)}` rebuilds "
        "the metadata from the copy the store keeps (or says what it cannot rebuild)",
    )


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
    if kind == "stranded":  # never replaced: rebuilding its metadata keeps its results
        raise _stranded(url)
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


def _installed_version(distribution: str) -> str:
    """The installed version of ``distribution`` (what ``sroa_dist.__version__`` reads), or
    ``"0+unknown"`` for a source tree that was never installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "0+unknown"


def software_versions() -> dict[str, str]:
    """Versions of the packages that determine results."""
    import dask
    import distributed
    import scipy

    return {
        "sroa_dist_version": _installed_version("sroa-dist"),
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


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def require_store(url: str, storage_options: Mapping[str, Any] | None = None) -> None:
    """Raise ``FileNotFoundError`` or :class:`NotAStoreError` unless ``url`` is a sroa-dist cube."""
    url = str(url)
    kind = store_kind(url, storage_options)
    if kind == "sroa":
        return
    if kind == "stranded":
        raise _stranded(url)
    if kind == "absent":
        raise StoreNotFoundError(
            f"store: expected a sroa-dist result store; received {url!r}, which does not exist",
            "run `sroa-dist run SPEC --store PATH` first, or check the path",
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
