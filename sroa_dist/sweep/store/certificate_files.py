"""Where a block's certificate file lives, how it is written, and the digest of its content.

With ``[output] certificates = true`` each task writes one ``.npz`` per block into the store's
own folder ``<store>/certificates/`` (:data:`FOLDER`: an empty zarr group, so that zarr and
xarray list a valid member they ignore rather than a stray folder, holding the files),
*before* the block's data and ``done`` flag: a copy of the store folder is the whole store.
Stores of format 1 (:data:`~..cube.STORE_FORMAT`) kept them beside the store, in
``<store>.certificates/`` (:data:`SUFFIX`); they are read there until :mod:`.migrate` moves
them inside. The file name is a hash of the block's instance coordinates, so a block copied
into an extended store keeps its file (an extension keeps the folder in place).

The file is written byte for byte the same for the same certificates (its zip members carry a
fixed timestamp), and the digest of its bytes (:func:`file_digest`) is recorded in the store's
:data:`CERTIFICATE_DIGEST` array beside the block's other digests: a lost, truncated, garbled
or rewritten certificate file is damage of its block (found by ``check``, refused on read,
recomputed by the next run, whose file is identical to the original).
"""

from __future__ import annotations

import hashlib
import io
import json
import uuid
import zipfile
from collections.abc import Mapping, Sequence
from typing import Any

import fsspec.core
import numpy as np

from ..cube import store_format
from ..kinds import spec_of_task
from ..layout import BlockTask
from ..spec import SweepSpec
from .target import storage_options_for

__all__ = [
    "CERTIFICATE_DIGEST",
    "FOLDER",
    "NO_CERTIFICATE_FILE",
    "SUFFIX",
    "block_file_name",
    "certificates_folder",
    "check_readable",
    "file_digest",
    "json_default",
    "make_folder",
    "settings_hash",
    "stored_certificates_folder",
    "write_certificates",
]

#: The folder inside a store (format 2) that holds its certificate files.
FOLDER = "certificates"
#: Where a store of format 1 kept them: the folder beside it, ``<store>.certificates``.
SUFFIX = ".certificates"
#: Array of the store (dim ``block``, uint64) recording each block's certificate-file digest:
#: 0 = nothing recorded (a store made before these digests), :data:`NO_CERTIFICATE_FILE` = the
#: block wrote no file, anything else = the :func:`content_digest` of the file it wrote.
CERTIFICATE_DIGEST = "certificate_digest"
#: Recorded for a block that wrote no certificate file (its steps had none to store).
NO_CERTIFICATE_FILE = 1


def certificates_folder(
    url: str, storage_options: Mapping[str, Any] | None, *, beside: bool = False
) -> tuple[Any, str]:
    """The filesystem and path of the store's certificate folder: ``<store>/certificates``, or
    with ``beside`` the folder of a format-1 store, ``<store>.certificates`` (the same
    derivation for local paths and fsspec URLs such as ``s3://bucket/name.zarr``)."""
    # The store's own options (object-store listings not cached: other processes write here).
    fs, path = fsspec.core.url_to_fs(str(url), **(storage_options_for(url, storage_options) or {}))
    path = path.rstrip("/")
    return fs, path + SUFFIX if beside else f"{path}/{FOLDER}"


def stored_certificates_folder(
    url: str, storage_options: Mapping[str, Any] | None, attrs: Mapping[str, Any]
) -> tuple[Any, str]:
    """The certificate folder a store with root attributes ``attrs`` reads its files from:
    inside it from format 2 on, beside it before."""
    return certificates_folder(url, storage_options, beside=store_format(attrs) < 2)


#: The folder's zarr metadata: an empty group (what ``zarr.open_group`` would write).
_GROUP_JSON = json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}).encode()


def make_folder(fs: Any, base: str) -> None:
    """Create the certificate folder ``base`` inside a store, with the metadata of an empty
    zarr group (written to a temporary name, then renamed: a reader listing the store never
    meets half a file; tasks racing to create it write the same bytes)."""
    fs.makedirs(base, exist_ok=True)
    meta = f"{base}/zarr.json"
    if not fs.exists(meta):
        tmp = f"{meta}.{uuid.uuid4().hex}.tmp"
        fs.pipe_file(tmp, _GROUP_JSON)
        fs.mv(tmp, meta)


def block_file_name(dims: Sequence[str], coords: Sequence[Sequence[Any]]) -> str:
    """The certificate file of the block with these instance coordinates (one tuple per dim)."""
    text = json.dumps([list(dims), [list(map(str, c)) for c in coords]])
    return "block-" + hashlib.sha256(text.encode()).hexdigest()[:20] + ".npz"


def settings_hash(spec: SweepSpec) -> str:
    """Hash of the spec's instance settings: files of another spec at the same path are stale."""
    text = json.dumps(spec.instance_settings(), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def json_default(value: Any) -> Any:
    """JSON fallback: numpy scalars as Python scalars (ints stay ints: they seed instances)."""
    return value.item() if hasattr(value, "item") else str(value)


def file_digest(data: bytes) -> int:
    """64-bit digest (leading bytes of SHA-256) of a certificate file's bytes; never 0 or
    :data:`NO_CERTIFICATE_FILE`."""
    return max(int.from_bytes(hashlib.sha256(data).digest()[:8], "little"), NO_CERTIFICATE_FILE + 1)


def check_readable(data: bytes) -> None:
    """Read every member of a certificate file (a file written before digests were recorded
    has none to compare): raises when it is truncated or garbled (the zip's own CRCs fail, or
    a member does not decode)."""
    with np.load(io.BytesIO(data)) as z:
        for name in z.files:
            z[name]


def _npz_bytes(members: Mapping[str, np.ndarray]) -> bytes:
    """``members`` as an ``.npz`` (what ``np.load`` reads), deflated, with a fixed timestamp on
    every zip member so that the same arrays always give the same bytes (``np.savez`` stamps
    the time of writing)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, arr in members.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asanyarray(arr), allow_pickle=False)
    return buf.getvalue()


_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip member can carry


def write_certificates(
    url: str,
    task: BlockTask,
    records: Mapping[str, np.ndarray],
    storage_options: Mapping[str, Any] | None = None,
) -> int:
    """Write one block's certificate file (to a temporary name, then renamed) into the store's
    folder; returns its :func:`file_digest`, which the block's write records beside its other
    digests. Every store a run writes has format 2 (:func:`~.prepare.prepare_store` migrates
    an older one first)."""
    spec = spec_of_task(task.spec_json)  # the block's own parse, not a second validation
    meta = {"dims": list(task.dims), "coords": [list(c) for c in task.coords]}
    members = {
        "meta": np.array(json.dumps(meta, default=json_default)),
        "settings_hash": np.array(settings_hash(spec)),
        **records,
    }
    data = _npz_bytes(members)
    fs, base = certificates_folder(url, storage_options)
    make_folder(fs, base)
    path = f"{base}/{block_file_name(task.dims, task.coords)}"
    fs.pipe_file(path + ".tmp", data)
    fs.mv(path + ".tmp", path)
    return file_digest(data)
