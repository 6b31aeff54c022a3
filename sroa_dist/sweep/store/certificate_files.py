"""Where a block's certificate file lives, how it is written, and the digest of its content.

With ``[output] certificates = true`` each task writes one ``.npz`` per block into
``<store>.certificates/`` (beside the zarr store, so extending an axis, which swaps the store's
entries, keeps them), *before* the block's data and ``done`` flag. The file name is a hash of
the block's instance coordinates, so a block copied into an extended store keeps its file.

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
import zipfile
from collections.abc import Mapping, Sequence
from typing import Any

import fsspec.core
import numpy as np

from ..kinds import spec_of_task
from ..layout import BlockTask
from ..spec.base import SweepSpec

__all__ = [
    "CERTIFICATE_DIGEST",
    "NO_CERTIFICATE_FILE",
    "SUFFIX",
    "block_file_name",
    "certificates_folder",
    "check_readable",
    "file_digest",
    "json_default",
    "settings_hash",
    "write_certificates",
]

#: The folder beside a store that holds its certificate files: ``<store>.certificates``.
SUFFIX = ".certificates"
#: Array of the store (dim ``block``, uint64) recording each block's certificate-file digest:
#: 0 = nothing recorded (a store made before these digests), :data:`NO_CERTIFICATE_FILE` = the
#: block wrote no file, anything else = the :func:`content_digest` of the file it wrote.
CERTIFICATE_DIGEST = "certificate_digest"
#: Recorded for a block that wrote no certificate file (its steps had none to store).
NO_CERTIFICATE_FILE = 1


def certificates_folder(url: str, storage_options: Mapping[str, Any] | None) -> tuple[Any, str]:
    """The filesystem and path of the store's certificate folder (``<store>.certificates``)."""
    fs, path = fsspec.core.url_to_fs(str(url), **dict(storage_options or {}))
    return fs, path.rstrip("/") + SUFFIX


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
    """Write one block's certificate file (to a temporary name, then renamed); returns its
    :func:`file_digest`, which the block's write records beside its other digests."""
    spec = spec_of_task(task.spec_json)  # the block's own parse, not a second validation
    meta = {"dims": list(task.dims), "coords": [list(c) for c in task.coords]}
    members = {
        "meta": np.array(json.dumps(meta, default=json_default)),
        "settings_hash": np.array(settings_hash(spec)),
        **records,
    }
    data = _npz_bytes(members)
    fs, base = certificates_folder(url, storage_options)
    fs.makedirs(base, exist_ok=True)
    path = f"{base}/{block_file_name(task.dims, task.coords)}"
    fs.pipe_file(path + ".tmp", data)
    fs.mv(path + ".tmp", path)
    return file_digest(data)
