"""Per-step SOS certificates of a sweep (``[output] certificates = true``): re-check them.

Each task writes one ``.npz`` per block into ``<store>/certificates/`` (see
:mod:`.certificate_files`; a store of format 1 keeps them beside it, in
``<store>.certificates/``), *before* the block's data and ``done`` flag: a block that is done
has its certificates, and a block killed half-way is recomputed and rewrites a file of the
same content. Each file holds
the block's coordinates, a hash of the spec's instance settings (files of an older, different
spec at the same path are recognised as stale), and per instance the SROA steps ``(lam_j,
x_j)``, the recorded ``upper_bound``/``certified`` and each step's certificate arrays.

:func:`verify_store` rebuilds every instance's tensor from the stored spec and its seed (the
store's kind's ``certificate_tensors``: the block's own construction; a kind without it writes
no certificates), deflates it with the stored steps
exactly as :func:`sroa_dist.sroa` does, and checks each certificate with
:meth:`sroa_dist.certificate.Certificate.verify`.
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sroa_dist.certificate import Certificate
from sroa_dist.errors import InputError
from sroa_dist.methods import GAP_TOL, certifies
from sroa_dist.tensors import rank_one_tensor

from ..cube import DAMAGED, DAMAGED_BLOCKS
from ..kinds import kind_of
from ..layout import BlockTask, block_task
from ..spec import SweepSpec
from .certificate_files import json_default, settings_hash, stored_certificates_folder
from .prepare import read_done, store_layout
from .read import open_results

__all__ = ["CertificateCheck", "VerifyReport", "verify_store"]


def _labels_text(dims: Sequence[str], coords: Sequence[Sequence[Any]], idx) -> str:
    labels = {d: coords[i][j] for i, (d, j) in enumerate(zip(dims, idx, strict=True))}
    return json.dumps(labels, sort_keys=True, default=json_default)


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
    """Result of :func:`verify_store`: one :class:`CertificateCheck` per certified step (and one
    per certificate file that could not be read, with ``step = -1``)."""

    checks: list[CertificateCheck] = field(default_factory=list)
    stale_files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # done instances without certificates
    # blocks whose stored data failed its integrity check (refused on read): problems of each;
    # their certificates are still re-verified, their stored values are not compared
    damaged: dict[int, list[str]] = field(default_factory=dict)
    # steps stored without a certificate (local methods, or certified above its size cap)
    steps_without: int = 0
    files: int = 0  # certificate files of this spec read (readable or not)
    instances: int = 0  # instances whose steps were checked

    @property
    def failed(self) -> list[CertificateCheck]:
        return [c for c in self.checks if not c.ok]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.missing and not self.damaged

    @property
    def nothing_checked(self) -> bool:
        """No certificate was found to check (and no certificate file failed to read)."""
        return not self.checks


def _instance_tensors(spec: SweepSpec, members: Sequence[tuple[Any, int]]) -> list[np.ndarray]:
    """``T_hat`` of instances sharing a group key, rebuilt by the spec's kind exactly as its
    block drew them (the kind's ``certificate_tensors`` hook)."""
    kind = kind_of(spec)
    rebuild = getattr(kind, "certificate_tensors", None)
    if rebuild is None:
        raise InputError(
            f"sweep kind {kind.name!r}: expected a certificate_tensors hook to rebuild the "
            "tensors its certificates speak of; received a kind without one",
            "a kind that writes certificates implements certificate_tensors(spec, members)",
        )
    return list(rebuild(spec, members))


def verify_store(
    url: str,
    storage_options: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> VerifyReport:
    """Re-check every stored certificate, and the stored values, against the rebuilt tensors.

    For each step with a certificate (``tol = gap_tol * ||T_step||_F``, the engine's
    certification tolerance):

    - the certificate itself: ``verify(T_step)`` (:meth:`~sroa_dist.certificate.Certificate.
      verify`, a rigorous bound) exceeds the claimed ``U`` by at most ``tol``;
    - the cube's ``lam_hat`` is the step's recorded value (bit for bit) and lies within the
      verified bound (``|lam_hat| <= verify(T_step) + tol``);
    - the cube's ``upper_bound`` equals the certificate's ``U``: it is the bound recorded with
      the certificate, bit for bit, and within ``tol`` of the claimed ``U`` (the engine
      stores ``U`` plus explicit rounding margins);
    - the cube's ``certified`` agrees with the gap: recorded certified only if
      ``U - |lam_hat| <= tol`` (and ``lam_hat >= 0`` for odd p) and the verified bound is
      within ``tol`` of ``|lam_hat|``; recorded not certified only where the gap is not
      clearly below ``tol`` (a relative margin of 1e-6 leaves rounding at the edge alone).

    A certificate file that cannot be read or does not fit the store is one failed check
    naming the file (``step = -1``); the other files are still checked. Instances of
    finished blocks with no certificate file are listed in ``missing`` when the spec asked
    for certificates.
    """
    spec, layout = store_layout(url, storage_options)
    # The cube's attrs are the store's root attributes: they say where its files are.
    cube = open_results(url, storage_options, damaged="mask")
    fs, base = stored_certificates_folder(url, storage_options, cube.attrs)
    want = settings_hash(spec)
    report = VerifyReport()
    covered: set[str] = set()
    # Damaged blocks read as masked: named in the report, their values never compared.
    masked = np.flatnonzero(np.asarray(cube[DAMAGED].values, dtype=bool))
    problems = json.loads(cube.attrs.get(DAMAGED_BLOCKS, "{}"))
    report.damaged = {int(b): list(problems.get(str(int(b)), [])) for b in masked}
    files = sorted(f for f in (fs.ls(base, detail=False) if fs.exists(base) else []))
    for path in files:
        if not path.endswith(".npz"):
            continue
        checks: list[CertificateCheck] = []
        try:
            with fs.open(path, "rb") as fh, np.load(io.BytesIO(fh.read())) as z:
                if str(z["settings_hash"]) != want:
                    report.stale_files.append(path)
                    continue
                report.files += 1
                report.instances += _verify_file(
                    path, z, spec, layout, cube, checks, covered, report
                )
        except Exception as exc:  # garbage, truncated, or another layout: this file fails
            report.files += 1
            checks.append(_unreadable(path, exc))
        report.checks.extend(checks)
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


# ---- verify: one file, and the stored values against the certificates --------------------------

#: Relative margin under which ``certified`` is not second-guessed at the edge of the tolerance.
_EDGE = 1e-6
#: Stored values read per certificate file: the cube's record of each step.
_STORED = ("lam_hat", "upper_bound", "certified")


def _verify_file(
    path: str,
    z: Any,
    spec: SweepSpec,
    layout: Any,
    cube: Any,
    checks: list[CertificateCheck],
    covered: set[str],
    report: VerifyReport,
) -> int:
    """Check every certified step of one certificate file (appended to ``checks``); returns
    the number of instances checked. Raises when the file does not fit the store."""
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
    stored, block = _stored_block(cube, task, layout)
    compare = block not in report.damaged  # a masked block's values are not its own
    members = list(task.instances(spec))
    groups: dict[tuple[Any, ...], list[int]] = {}
    for k, (_, st, _) in enumerate(members):
        groups.setdefault(st.group_key(), []).append(k)
    n = 0
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
            n += 1
            lams, X = z[key + "lam"], z[key + "x"]
            certified, uppers = z[key + "certified"], z[key + "upper"]
            residual = np.array(T, dtype=float)
            for j in range(len(lams)):
                prefix = f"{key}s{j}_"
                if prefix + "gram" in z.files:
                    cert = Certificate.from_arrays(z, prefix)
                    c = _check(
                        path, labels, j, cert, residual, lams[j], certified[j], gap_tol, st.p
                    )
                    row = tuple(stored[v][idx][j] for v in _STORED)
                    rec = (lams[j], uppers[j])
                    why = compare and _stored_reason(c, cert, row, rec, gap_tol, residual, st.p)
                    if c.ok and why:
                        c = dataclasses.replace(c, ok=False, reason=why)
                    checks.append(c)
                else:
                    report.steps_without += 1
                residual -= rank_one_tensor(lams[j], X[j], st.p)
    return n


def _stored_block(cube: Any, task: BlockTask, layout: Any) -> tuple[dict[str, np.ndarray], int]:
    """The cube's ``lam_hat``, ``upper_bound`` and ``certified`` of the block's instances,
    shape ``block shape + (step,)``, and the store's block holding its first instance; raises
    ``ValueError`` for coordinates not in the cube."""
    where = {}
    for d, values in zip(task.dims, task.coords, strict=True):
        pos = cube.indexes[d].get_indexer(list(values))
        if (pos < 0).any():
            missing = [v for v, q in zip(values, pos, strict=True) if q < 0]
            raise InputError(
                f"coordinates {d}={missing[:3]} are not in the store",
                "give coordinates on the store's grid (sroa-dist info STORE lists them)",
            )
        where[d] = pos
    block = layout.block_of([int(where[d][0]) for d in layout.dims])[0]
    values = {v: np.asarray(cube[v].isel(where).transpose(*task.dims, ...).values) for v in _STORED}
    return values, int(block)


def _stored_reason(c, cert, row, recorded, gap_tol, T, p) -> str:
    """Why the stored ``(lam_hat, upper_bound, certified)`` of a step disagree with its
    certificate (``c``: the step's certificate check; ``recorded``: the ``(lam, upper)`` the
    task wrote beside it), or ``""``.

    The stored ``upper_bound`` is the engine's validated bound of the dual: the certificate's
    claimed ``U`` plus explicit rounding margins (about 1e-14 relative). It must be the value
    recorded with the certificate bit for bit, and within ``tol`` of ``U``.
    """
    lam, upper, certified = float(row[0]), float(row[1]), bool(row[2])
    lam_rec, upper_rec = recorded
    tol = gap_tol * float(np.linalg.norm(T))
    if not np.array_equal(np.float64(lam), np.float64(lam_rec), equal_nan=True):
        return (
            f"stored lam_hat {lam:.17g} differs from the certified step's value "
            f"{float(lam_rec):.17g}"
        )
    if np.isfinite(c.verified) and not abs(lam) <= c.verified + tol:
        return (
            f"stored lam_hat {lam:.12g} lies outside the verified bound {c.verified:.12g} "
            f"(tolerance {tol:.3g})"
        )
    if not (upper == float(upper_rec) and abs(upper - cert.bound) <= tol):
        return (
            f"stored upper_bound {upper:.17g} differs from the certificate's U "
            f"{cert.bound:.17g} (recorded with it: {float(upper_rec):.17g}; tolerance {tol:.3g})"
        )
    gap = upper - abs(lam)
    sign_ok = p % 2 == 0 or lam >= 0
    if certified and not (gap <= tol * (1 + _EDGE) + 1e-300 and sign_ok):
        return f"stored certified = True, but the gap U - |lam_hat| = {gap:.3g} exceeds {tol:.3g}"
    if not certified and sign_ok and 0 <= gap <= tol * (1 - _EDGE):
        return (
            f"stored certified = False, but the gap U - |lam_hat| = {gap:.3g} is within the "
            f"tolerance {tol:.3g}"
        )
    return ""


def _unreadable(path: str, exc: BaseException) -> CertificateCheck:
    """The failed check of a certificate file that cannot be read or does not fit the store."""
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return CertificateCheck(
        path,
        {},
        -1,
        float("nan"),
        float("nan"),
        float("nan"),
        False,
        False,
        f"unreadable certificate file ({type(exc).__name__}{': ' + text if text else ''})",
    )
