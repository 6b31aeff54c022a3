"""Bringing a store of format 1 to the format this code writes (:data:`~..cube.STORE_FORMAT`).

Format 1 kept the certificate files beside the store (``<store>.certificates/``), so a copy of
the store folder lost them, and could not tell a lost digest from a block written before
digests existed. :func:`migrate_store` (``sroa-dist check --migrate``, and every ``run`` that
resumes or extends such a store) makes it a format-2 store:

1. every file of ``<store>.certificates/`` is copied into ``<store>/certificates/`` (to a
   temporary name, then renamed) and read back: its bytes must be the original's;
2. the finished blocks that lack a digest now -- written before digests existed -- are listed
   (:data:`~.integrity.UNVOUCHED`): they stay "cannot vouch", while a digest lost from any
   other block from here on is damage;
3. the format is recorded (the commit point: readers look inside the store from here on);
4. each file beside the store whose copy inside has the same bytes is deleted, and the folder
   beside goes when it is empty. A file without an identical copy inside (one that differs,
   or a stale file left beside a store that was overwritten) is kept and named.

Nothing is deleted before its copy inside is verified, and a kill at any point leaves a store
that reads correctly (format 1 reads beside, format 2 inside) and a migration that the next
call resumes: a format-2 store with a folder still beside it repeats step 4. The caller holds
the store's writer lease.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import zarr

from ..cube import ATTR_FORMAT, DONE, STORE_FORMAT, store_format
from ..layout import Layout
from .certificate_files import CERTIFICATE_DIGEST, certificates_folder, make_folder
from .integrity import DIGEST, UNVOUCHED, ensure_digest_array, mirror_store_attrs, read_flags
from .target import storage_options_for

__all__ = ["Migration", "migrate_store"]


@dataclass
class Migration:
    """Outcome of :func:`migrate_store`.

    ``migrated``: this call recorded the new format; ``moved``: files now only inside the
    store; ``unvouched``: finished blocks listed as written before digests; ``kept``: files
    left beside the store because no identical copy is inside (never deleted).
    """

    store: str
    migrated: bool = False
    moved: int = 0
    unvouched: int = 0
    kept: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """What was done, for people: one line, and one per file kept."""
        if not self.migrated and not self.moved and not self.kept:
            return [f"{self.store}: store format {STORE_FORMAT} already: nothing to migrate"]
        out = [
            f"{self.store}: migrated to store format {STORE_FORMAT}: {self.moved} certificate "
            f"file(s) moved inside ({self.store}/certificates); {self.unvouched} finished "
            "block(s) written before digests stay 'cannot vouch'"
        ]
        out += [f"kept beside the store (no identical copy inside): {p}" for p in self.kept]
        return out


def _files(fs: Any, base: str) -> dict[str, str]:
    """Every file under ``base``: its path relative to ``base`` -> its full path."""
    if not fs.exists(base):
        return {}
    return {p[len(base) :].lstrip("/"): p for p in sorted(fs.find(base))}


def migrate_store(
    url: str,
    layout: Layout,
    storage_options: Mapping[str, Any] | None = None,
    *,
    certificates: bool = False,
) -> Migration:
    """Bring the store at ``url`` (with ``layout``) to format :data:`~..cube.STORE_FORMAT`,
    or finish a migration a kill interrupted (see the module docstring); a store already there
    is left as it is. ``certificates``: the stored spec asks for certificate files. The
    caller holds the store's writer lease."""
    so = storage_options
    out = Migration(url)
    fs, inside = certificates_folder(url, so)
    _, beside = certificates_folder(url, so, beside=True)
    g = zarr.open_group(url, mode="r+", storage_options=storage_options_for(url, so))
    if store_format(g.attrs) < STORE_FORMAT:
        ensure_digest_array(url, so, layout, certificates=certificates)
        for rel, src in _files(fs, beside).items():
            data = fs.cat_file(src)
            dst = f"{inside}/{rel}"
            if fs.exists(dst) and fs.cat_file(dst) == data:
                continue  # copied before a kill
            make_folder(fs, inside)
            fs.makedirs(dst.rsplit("/", 1)[0], exist_ok=True)
            fs.pipe_file(dst + ".tmp", data)
            fs.mv(dst + ".tmp", dst)
            if fs.cat_file(dst) != data:
                raise OSError(f"store {url}: the copy of {src} inside the store differs")
        listed = _before_digests(g, layout, certificates)
        g[DIGEST].attrs[UNVOUCHED] = listed
        mirror_store_attrs(g, {ATTR_FORMAT: STORE_FORMAT})  # the commit point
        out.migrated, out.unvouched = True, len(listed)
    else:
        out.unvouched = len(g[DIGEST].attrs.get(UNVOUCHED, []) or []) if DIGEST in g else 0
    for rel, src in _files(fs, beside).items():
        dst = f"{inside}/{rel}"
        if fs.exists(dst) and fs.cat_file(dst) == fs.cat_file(src):
            fs.rm(src)
            out.moved += 1
        else:
            out.kept.append(src)
    if not out.kept and fs.exists(beside):
        _remove_empty(fs, beside)
    return out


def _before_digests(g: Any, layout: Layout, certificates: bool) -> list[int]:
    """The finished blocks of a format-1 store that lack a digest (a data digest row of zeros,
    or, with ``certificates``, a certificate digest of 0): written before digests existed.
    Blocks whose digest chunk cannot be read are not listed (they are damage)."""
    n = layout.n_blocks
    done = read_flags(g[DONE], n, False)[0].astype(bool)
    dig = g[DIGEST]
    listed = []
    cert = g[CERTIFICATE_DIGEST] if certificates and CERTIFICATE_DIGEST in g else None
    cert_values = read_flags(cert, n, 1)[0] if cert is not None else None
    for b in np.flatnonzero(done):
        try:
            row = np.asarray(dig[int(b), :])
        except Exception:  # an unreadable digest chunk: damage, not "written before"
            continue
        missing = not row.any() if row.size else False
        if cert_values is not None and not cert_values[b]:
            missing = True
        if missing:
            listed.append(int(b))
    return listed


def _remove_empty(fs: Any, folder: str) -> None:
    """Remove ``folder`` if nothing is left in it (an object store has no empty folders)."""
    if fs.find(folder):
        return
    try:
        fs.rm(folder, recursive=True)
    except FileNotFoundError:
        pass
