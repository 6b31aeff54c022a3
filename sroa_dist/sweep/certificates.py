"""Per-step SOS certificates of a sweep (``[output] certificates = true``): write and re-check.

Each task writes one ``.npz`` per block into ``<store>.certificates/`` (beside the zarr store,
so extending an axis, which swaps the store directory, keeps them), *before* the block's data
and ``done`` flag: a block that is done has its certificates, and a block killed half-way is
recomputed and rewrites the same file (same bits). The file name is a hash of the block's
instance coordinates, so a block copied into an extended store keeps its file. Each file holds
the block's coordinates, a hash of the spec's instance settings (files of an older, different
spec at the same path are recognised as stale), and per instance the SROA steps ``(lam_j,
x_j)``, the recorded ``upper_bound``/``certified`` and each step's certificate arrays.

:func:`verify_store` rebuilds every instance's tensor from the stored spec and its seed (the
same construction as :mod:`sroa_dist.sweep.tensor_block`), deflates it with the stored steps exactly
as :func:`sroa_dist.sroa` does, and checks each certificate with
:meth:`sroa_dist.certificate.Certificate.verify`.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fsspec.core
import numpy as np

from sroa_dist.certificate import Certificate
from sroa_dist.finishing import certifies
from sroa_dist.solvers import GAP_TOL
from sroa_dist.tensors import rank_one_tensor

from .common import SweepSpec
from .kinds import parse_spec
from .layout import BlockTask, block_task
from .storage import read_done, store_layout
from .tensor_block import collect, draw_group
from .tensor_spec import InstanceSettings

__all__ = ["CertificateCheck", "VerifyReport", "collect", "verify_store", "write_certificates"]

SUFFIX = ".certificates"


def _fs(url: str, storage_options: Mapping[str, Any] | None):
    fs, path = fsspec.core.url_to_fs(str(url), **dict(storage_options or {}))
    return fs, path.rstrip("/") + SUFFIX


def _py(value: Any) -> Any:
    """JSON fallback: numpy scalars as Python scalars (ints stay ints: they seed instances)."""
    return value.item() if hasattr(value, "item") else str(value)


def _labels_text(dims: Sequence[str], coords: Sequence[Sequence[Any]], idx) -> str:
    labels = {d: coords[i][j] for i, (d, j) in enumerate(zip(dims, idx, strict=True))}
    return json.dumps(labels, sort_keys=True, default=_py)


def _settings_hash(spec: SweepSpec) -> str:
    text = json.dumps(spec.instance_settings(), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _block_name(task: BlockTask) -> str:
    text = json.dumps([list(task.dims), [list(map(str, c)) for c in task.coords]])
    return "block-" + hashlib.sha256(text.encode()).hexdigest()[:20] + ".npz"


def write_certificates(
    url: str,
    task: BlockTask,
    records: Mapping[str, np.ndarray],
    storage_options: Mapping[str, Any] | None = None,
) -> str:
    """Write one block's certificate file (write to a temporary name, then rename)."""
    spec = parse_spec(json.loads(task.spec_json), source="<block task>")
    meta = {"dims": list(task.dims), "coords": [list(c) for c in task.coords]}
    buf = io.BytesIO()
    np.savez_compressed(
        buf,
        meta=np.array(json.dumps(meta, default=_py)),
        settings_hash=np.array(_settings_hash(spec)),
        **records,
    )
    fs, base = _fs(url, storage_options)
    fs.makedirs(base, exist_ok=True)
    path = f"{base}/{_block_name(task)}"
    fs.pipe_file(path + ".tmp", buf.getvalue())
    fs.mv(path + ".tmp", path)
    return path


@dataclass(frozen=True)
class CertificateCheck:
    """Outcome of one step's certificate check."""

    file: str
    coords: dict[str, Any]
    step: int
    verified: float  # Certificate.verify of the rebuilt step tensor
    claimed: float  # the certificate's U
    lam: float
    certified: bool
    ok: bool
    reason: str


@dataclass
class VerifyReport:
    """Result of :func:`verify_store`."""

    checks: list[CertificateCheck] = field(default_factory=list)
    stale_files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # done instances without certificates
    # steps stored without a certificate (local methods, or certified above its size cap)
    steps_without: int = 0

    @property
    def failed(self) -> list[CertificateCheck]:
        return [c for c in self.checks if not c.ok]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.missing


def _instance_tensors(
    spec: SweepSpec, members: Sequence[tuple[InstanceSettings, int]]
) -> list[np.ndarray]:
    """``T_hat`` of instances sharing a group key, drawn by the worker's own
    :func:`~sroa_dist.sweep.tensor_block.draw_group` (so they cannot drift apart)."""
    return list(draw_group(spec, members).T_hat)


def verify_store(
    url: str,
    storage_options: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> VerifyReport:
    """Re-check every stored certificate of a sweep store against its rebuilt tensors.

    A step fails when ``verify(T_step)`` exceeds the certificate's claimed ``U`` by more than
    ``gap_tol * ||T_step||_F`` (the engine's certification tolerance), or when the step was
    recorded as certified and the verified bound minus ``|lam_j|`` exceeds that tolerance.
    Instances of finished blocks with no certificate file are listed in ``missing`` when the
    spec asked for certificates.
    """
    spec, layout = store_layout(url, storage_options)
    fs, base = _fs(url, storage_options)
    want = _settings_hash(spec)
    report = VerifyReport()
    covered: set[str] = set()
    files = sorted(f for f in (fs.ls(base, detail=False) if fs.exists(base) else []))
    for path in files:
        if not path.endswith(".npz"):
            continue
        with fs.open(path, "rb") as fh, np.load(io.BytesIO(fh.read())) as z:
            if str(z["settings_hash"]) != want:
                report.stale_files.append(path)
                continue
            meta = json.loads(str(z["meta"]))
            coords = tuple(tuple(c) for c in meta["coords"])
            task = BlockTask(
                -1,
                tuple((0, len(c)) for c in coords),
                tuple(meta["dims"]),
                coords,
                spec.to_json(),
                layout.n_steps,
                layout.n_component,
            )
            members = list(task.instances(spec))
            groups: dict[tuple[Any, ...], list[int]] = {}
            for k, (_, st, _) in enumerate(members):
                groups.setdefault(st.group_key(), []).append(k)
            for ks in groups.values():
                st0 = members[ks[0]][1]
                gap_tol = float(spec.options_for(st0.method).get("gap_tol", GAP_TOL))
                tensors = _instance_tensors(spec, [(members[k][1], members[k][2]) for k in ks])
                for k, T in zip(ks, tensors, strict=True):
                    idx, st, rep = members[k]
                    text = _labels_text(task.dims, task.coords, idx)
                    covered.add(text)
                    labels = json.loads(text)
                    key = f"i{int(np.ravel_multi_index(idx, task.shape))}_"
                    if key + "lam" not in z.files:
                        continue
                    lams, X = z[key + "lam"], z[key + "x"]
                    certified = z[key + "certified"]
                    residual = np.array(T, dtype=float)
                    for j in range(len(lams)):
                        prefix = f"{key}s{j}_"
                        if prefix + "gram" in z.files:
                            cert = Certificate.from_arrays(z, prefix)
                            report.checks.append(
                                _check(
                                    path,
                                    labels,
                                    j,
                                    cert,
                                    residual,
                                    lams[j],
                                    certified[j],
                                    gap_tol,
                                    st.p,
                                )
                            )
                        else:
                            report.steps_without += 1
                        residual -= rank_one_tensor(lams[j], X[j], st.p)
        if progress is not None:
            progress(path)
    if spec.output.certificates:
        done = read_done(url, storage_options)
        for b in np.flatnonzero(done):
            t = block_task(spec, layout, int(b))
            for idx, _, _ in t.instances(spec):
                text = _labels_text(t.dims, t.coords, idx)
                if text not in covered:
                    report.missing.append(text)
    return report


def _check(path, labels, j, cert, T, lam, certified, gap_tol, p) -> CertificateCheck:
    fro = float(np.linalg.norm(T))
    tol = gap_tol * fro
    try:
        v = cert.verify(T)
    except ValueError as exc:
        return CertificateCheck(
            path,
            labels,
            j,
            np.nan,
            cert.bound,
            float(lam),
            bool(certified),
            False,
            f"malformed certificate: {exc}",
        )
    reason = ""
    if not v <= cert.bound + tol:
        reason = (
            f"verified bound {v:.12g} exceeds the claimed {cert.bound:.12g} by more than {tol:.3g}"
        )
    elif certified and not certifies(v, float(lam), fro, gap_tol, p, slack=1e-12):
        # The engine's own certification test, on the re-derived bound (1e-12 of ||T||_F
        # allows for the rounding of re-deriving it).
        reason = (
            f"step recorded as certified, but the verified bound {v:.12g} and lam = "
            f"{float(lam):.12g} fail the certification test (gap <= {tol:.3g}"
            + (", lam >= 0 for odd p)" if p % 2 else ")")
        )
    return CertificateCheck(
        path, labels, j, v, cert.bound, float(lam), bool(certified), not reason, reason
    )
