"""Rebuild a result store's lost top-level metadata from what the store still holds.

A store whose top-level ``zarr.json`` (or its spec and provenance attributes, or an array's
metadata, or a coordinate) was deleted or garbled keeps every chunk and digest, but no command
can read it. The digest array keeps a copy of the top-level attributes
(:data:`~.integrity.STORE_ATTRS`, kept in step by every writer), and the stored spec describes
everything else: :func:`repair_metadata` writes the store's template for that spec beside it
(a temporary folder), checks that it describes the arrays the store holds (shapes, chunks,
dtypes, dims), and copies in only what is missing or unreadable -- array metadata, coordinates,
and last the top-level ``zarr.json`` with the attributes. No chunk of a result variable is
written and nothing is deleted. It holds the store's writer lease meanwhile.

What cannot be rebuilt is said exactly (:attr:`MetadataRepair.lost`), and then nothing is
written: a store made before the copy was kept, whose top-level attributes are gone, has its
spec nowhere else.
"""

from __future__ import annotations

import json
import math
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from sroa_dist._registry import names_only

from ..cube import ATTR_LAYOUT_TOKEN, ATTR_SPEC, BLOCK, COMPONENT, STEP
from ..kinds import parse_as, recorded_kind
from .integrity import DIGEST, DIGEST_VARIABLES, STORE_ATTRS
from .lease import LEASE_GROUP, StoreLease
from .target import (
    NotAStoreError,
    filesystem,
    now_iso,
    storage_options_for,
    store_kind,
)
from .template import write_template

__all__ = ["MetadataRepair", "repair_metadata"]


@dataclass
class MetadataRepair:
    """Outcome of :func:`repair_metadata`: what was rebuilt, or what cannot be (then nothing
    was written), with a ``hint`` for that case."""

    store: str
    rebuilt: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    hint: str = ""

    @property
    def ok(self) -> bool:
        """Everything missing was rebuilt (or nothing was missing)."""
        return not self.lost


def repair_metadata(
    url: str | Path,
    storage_options: Mapping[str, Any] | None = None,
    *,
    history: str = "check --repair-metadata",
) -> MetadataRepair:
    """Rebuild the store's lost top-level metadata from its copy and the stored spec.

    Parameters
    ----------
    url
        The store (a local path or an fsspec URL).
    storage_options
        fsspec options for remote stores.
    history
        The command, recorded in the rebuilt ``history`` attribute.

    Returns
    -------
    MetadataRepair
        ``rebuilt``: one phrase per entry written; ``lost``: what cannot be rebuilt (nothing
        was written then).

    Raises
    ------
    NotAStoreError
        The path holds no sroa-dist store's arrays (nothing to rebuild from).
    """
    url = str(url)
    if "://" not in url:
        url = str(Path(url).absolute())
    kind = store_kind(url, storage_options)
    if kind not in ("sroa", "stranded"):
        raise NotAStoreError(
            f"store {url}: expected a sroa-dist result store (whole, or with lost metadata); "
            f"received {kind} (no sroa-dist arrays to rebuild from)",
            "give the --store of a `sroa-dist run`, e.g. results/NAME.zarr",
        )
    with StoreLease(url, storage_options, command=history) as _lease:
        return _repair(url, storage_options, history)


def _repair(url: str, so: Mapping[str, Any] | None, history: str) -> MetadataRepair:
    fs, path = filesystem(url, so)
    path = path.rstrip("/")
    out = MetadataRepair(url)
    root = _json(fs, f"{path}/zarr.json")
    root_attrs = dict((root or {}).get("attributes", {}) or {})
    digest_meta = _json(fs, f"{path}/{DIGEST}/zarr.json")
    copy = dict(((digest_meta or {}).get("attributes", {}) or {}).get(STORE_ATTRS, {}) or {})
    attrs = {**copy, **root_attrs}  # the top level's own values are the newer ones
    if ATTR_SPEC not in attrs:
        out.lost.append(
            "the spec and provenance: the top-level attributes hold no 'spec' and the store "
            f"keeps no copy of them ({DIGEST}/zarr.json, attribute '{STORE_ATTRS}': stores "
            "made before that copy was kept hold their spec nowhere else)"
        )
        out.hint = (
            "the chunks are intact but cannot be labelled without their spec: run the spec "
            "again into a new --store (this one is left as it is)"
        )
        return out
    with names_only():  # rebuilding needs none of the spec's user code
        raw, source = json.loads(attrs[ATTR_SPEC]), f"{url} (copy of its spec)"
        kind = recorded_kind(attrs, raw, source)
        spec = parse_as(kind, raw, source)
        dims = spec.instance_grid()[0]
        chunks = _block_shape(fs, path, kind.variables(spec), dims, attrs)
        layout = kind.layout(spec, chunks=chunks, memory_limit=math.inf)
    token = str(attrs.get(ATTR_LAYOUT_TOKEN, "")) or uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="sroa-repair-") as tmp:
        template = Path(tmp) / "template.zarr"
        write_template(str(template), spec, layout, "", None, token, mode="w")
        plan = _plan(url, so, fs, path, template, digest_meta, out)
        if out.lost:
            out.hint = (
                "the store does not match its own spec; nothing was written (check that it is "
                "the store you meant)"
            )
            return out
        for name, files in plan:
            for rel in files:
                target = f"{path}/{rel}"
                fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
                fs.pipe_file(target, (template / rel).read_bytes())
            out.rebuilt.append(name)
        whole_root = root is not None and ATTR_SPEC in root_attrs and _root_ok(url, so)
        if not whole_root or out.rebuilt:
            line = f"{now_iso()}: {history} (rebuilt: metadata from the stored copy)"
            attrs["history"] = (str(attrs.get("history", "")) + "\n" + line).strip()
            if not whole_root:
                doc = json.loads((template / "zarr.json").read_text())
                doc["attributes"] = attrs
                fs.pipe_file(f"{path}/zarr.json", json.dumps(doc, indent=2).encode())
                out.rebuilt.insert(0, "top-level zarr.json with the spec and provenance")
            g = zarr.open_group(url, mode="r+", storage_options=storage_options_for(url, so))
            g.attrs.update({"history": attrs["history"]})
            g[DIGEST].attrs[STORE_ATTRS] = attrs  # the copy follows the rebuilt attributes
    return out


def _json(fs: Any, file: str) -> dict | None:
    """A metadata document, or None when it is missing or unreadable."""
    try:
        doc = json.loads(fs.cat_file(file))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _root_ok(url: str, so: Mapping[str, Any] | None) -> bool:
    try:
        zarr.open_group(url, mode="r", storage_options=storage_options_for(url, so))
    except Exception:  # unreadable root metadata of any kind
        return False
    return True


def _block_shape(fs, path, variables, dims, attrs) -> tuple[int, ...]:
    """The block shape: the chunks of a stored result variable, else the ``block_shape``
    attribute."""
    for name in variables:
        meta = _json(fs, f"{path}/{name}/zarr.json")
        if meta and tuple(meta.get("dimension_names") or ())[: len(dims)] == tuple(dims):
            shape = meta["chunk_grid"]["configuration"]["chunk_shape"]
            return tuple(int(c) for c in shape[: len(dims)])
    stored = json.loads(attrs.get("block_shape", "{}"))
    return tuple(int(stored[d]) for d in dims)


_COORDINATES_ALWAYS = (STEP, BLOCK, COMPONENT)


def _plan(url, so, fs, path, template: Path, digest_meta, out: MetadataRepair) -> list:
    """The entries to copy from ``template``: (what, [relative file paths]); mismatches
    between the template and the stored arrays are added to ``out.lost``."""
    stored_names = set(((digest_meta or {}).get("attributes", {}) or {}).get(DIGEST_VARIABLES, []))
    plan = []
    for meta_file in sorted(template.glob("*/zarr.json")):
        name = meta_file.parent.name
        if name == LEASE_GROUP:
            continue
        want = json.loads(meta_file.read_text())
        have = _json(fs, f"{path}/{name}/zarr.json")
        is_coord = name in want.get("dimension_names", ()) and len(want["shape"]) == 1
        if have is not None:
            why = _mismatch(have, want)
            if why:
                out.lost.append(f"array '{name}' {why}")
                continue
            if is_coord and not _coordinate_ok(url, so, name, template):
                plan.append((f"coordinate '{name}' (from the spec)", _files(template, name)))
            continue
        existed = fs.exists(f"{path}/{name}") or name in stored_names or name in _BOOKKEEPING
        if is_coord:
            plan.append((f"coordinate '{name}' (from the spec)", _files(template, name)))
        elif existed:
            chunks = fs.exists(f"{path}/{name}/c")
            what = "metadata of array" if chunks else "metadata of array (its chunks are lost)"
            plan.append((f"{what} '{name}'", [f"{name}/zarr.json"]))
    return plan


_BOOKKEEPING = ("done", "done_time", "failed", DIGEST)


def _files(template: Path, name: str) -> list[str]:
    """Every file of a template array, relative to the template."""
    return [
        str(p.relative_to(template)) for p in sorted((template / name).rglob("*")) if p.is_file()
    ]


def _mismatch(have: dict, want: dict) -> str:
    """How a stored array's metadata differs from the template's, or ``""``."""
    for key in ("shape", "data_type", "dimension_names"):
        if have.get(key) != want.get(key):
            return f"has {key} {have.get(key)}; the stored spec gives {want.get(key)}"
    grid = lambda m: m.get("chunk_grid", {}).get("configuration", {}).get("chunk_shape")  # noqa: E731
    if grid(have) != grid(want):
        return f"has chunks {grid(have)}; the stored spec gives {grid(want)}"
    return ""


def _coordinate_ok(url: str, so, name: str, template: Path) -> bool:
    """The stored coordinate reads and equals the spec's."""
    where = f"{url.rstrip('/')}/{name}"
    try:
        stored = zarr.open_array(where, mode="r", storage_options=storage_options_for(where, so))[
            ...
        ]
    except Exception:  # unreadable chunk or metadata of any kind
        return False
    want = zarr.open_array(str(template / name), mode="r")[...]
    return stored.shape == want.shape and bool(np.all(stored == want))
