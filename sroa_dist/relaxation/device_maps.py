"""The fixed maps of a relaxation's conic problem on an array backend (host or GPU), for the
drivers and certificates that run there: the scatter of moments into the moment matrix, the
gather of its adjoint, the solve with the Gram map ``M^* M`` and the pieces of the face
certificate.

Everything is derived from the :class:`~.driver.SdpProblem` alone. Its moment matrix is
given entry by entry; an entry is *direct* when it is one variable, and otherwise (the
homogeneous odd-``p`` relaxation's degree-``2d-2`` entries) a sum of variables. So
``M^* M = diag(D) + K^T W K`` with ``D`` counting the ordered direct entries of each variable
and ``K`` the few non-direct rows (``W``: 1 on the diagonal, 2 off it), and Woodbury's identity
solves with it through a small dense ``k x k`` inverse (``k`` = number of non-direct entries).

Arrays carry a leading batch axis: ``Y`` is ``(B, n_vars)`` and a stack of matrices
``(B, m, m)``. Each batch element goes through the same operations with the same shapes,
so (on the host) a tensor's result does not depend on what it is batched with.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..errors import InputError
from .backend import ArrayBackend
from .driver import SdpProblem

__all__ = ["DeviceMaps", "device_maps"]


@dataclass(frozen=True, eq=False)
class _HostParts:
    """The backend-independent (host) pieces of one problem, computed once."""

    mult: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    D: np.ndarray
    direct: np.ndarray
    direct_var: np.ndarray
    nondirect: np.ndarray
    K: sp.csr_matrix | None
    Cinv: np.ndarray | None


def _host_parts(problem: SdpProblem) -> _HostParts:
    m, N = problem.m, problem.n_vars
    I, J = np.asarray(problem.rows), np.asarray(problem.cols)  # noqa: E741
    A = sp.csr_matrix(problem.entries)
    A.sum_duplicates()
    mult = np.where(I == J, 1.0, 2.0)
    nnz_row = np.diff(A.indptr)
    # A direct entry holds one variable with coefficient 1 (the relaxation's builder makes
    # every entry a 0/1 combination); the rest go through Woodbury.
    direct = (nnz_row == 1) & (A.data[np.minimum(A.indptr[:-1], len(A.data) - 1)] == 1.0)
    direct_var = np.full(len(I), -1, dtype=np.int64)
    direct_var[direct] = A.indices[A.indptr[:-1][direct]]
    D = np.bincount(direct_var[direct], weights=mult[direct], minlength=N)
    if np.any(D == 0):
        raise InputError(
            "the ADMM driver needs every moment variable to be one entry of the moment "
            "matrix somewhere (a diagonal-plus-low-rank Gram map); this problem has variables "
            "that are not",
            "use driver 'scs' for this relaxation",
        )
    nd = np.nonzero(~direct)[0]
    K = Cinv = None
    if len(nd):
        K = A[nd].tocsr()
        sw = np.sqrt(mult[nd])
        KD = K.multiply(1.0 / D[None, :]).tocsr()
        C = np.eye(len(nd)) + sw[:, None] * (KD @ K.T).toarray() * sw[None, :]
        # C = I + (PSD): eigenvalues >= 1, so its explicit inverse is as accurate as a solve.
        Cinv = sla.cho_solve(sla.cho_factor(C), np.eye(len(nd)))
        Cinv = 0.5 * (Cinv + Cinv.T)
    return _HostParts(
        mult=mult,
        lower=I * m + J,
        upper=J * m + I,
        D=D,
        direct=direct,
        direct_var=direct_var,
        nondirect=nd,
        K=K,
        Cinv=Cinv,
    )


def _face_pattern(problem: SdpProblem):
    """CSR patterns of ``F`` (``n_vars x m``, ``F v = M^*(v q^T + q v^T)``) and ``F^T``, and
    the fixed 0/1 matrices that sum the ordered entries into their data for a given ``q``
    (row sums of a sparse product: no atomic adds, so the sums are reproducible)."""
    A = sp.csr_matrix(problem.entries).tocoo()
    I, J = np.asarray(problem.rows), np.asarray(problem.cols)  # noqa: E741
    ei, ej = I[A.row], J[A.row]
    off = ei != ej
    o_row = np.concatenate([ei, ej[off]])  # F's column (moment-matrix row)
    o_col = np.concatenate([ej, ei[off]])  # the q entry it multiplies
    o_var = np.concatenate([A.col, A.col[off]])
    o_val = np.concatenate([A.data, A.data[off]])
    N, m, n_ord = problem.n_vars, problem.m, len(o_row)
    key = o_var.astype(np.int64) * m + o_row
    uniq, slot = np.unique(key, return_inverse=True)
    P = sp.csr_matrix((np.ones(n_ord), (slot, np.arange(n_ord))), shape=(len(uniq), n_ord))
    f_indptr = np.concatenate([[0], np.cumsum(np.bincount(uniq // m, minlength=N))])
    f_indices = uniq % m
    # F^T has the same entries sorted by (row, var): a fixed permutation of F's data.
    t_order = np.lexsort((uniq // m, uniq % m))
    t_indptr = np.concatenate([[0], np.cumsum(np.bincount(uniq % m, minlength=m))])
    t_indices = (uniq // m)[t_order]
    return P, o_col, 2.0 * o_val, (f_indices, f_indptr), (t_indices, t_indptr, t_order)


class DeviceMaps:
    """The maps of one :class:`~.driver.SdpProblem` on one :class:`~.backend.ArrayBackend`.

    Built once per (problem, backend) by :func:`device_maps`; read-only afterwards, so it may
    be shared between threads.
    """

    def __init__(self, problem: SdpProblem, backend: ArrayBackend):
        self.problem, self.backend = problem, backend
        xp = backend.xp
        parts = _host_parts(problem)
        self._parts = parts
        self.m, self.n_vars = problem.m, problem.n_vars
        self.entries = backend.csr(problem.entries)
        self.entries_T = backend.csr(sp.csr_matrix(problem.entries).T.tocsr())
        self.mult = backend.asarray(parts.mult)
        self.lower = backend.asindex(parts.lower)
        self.upper = backend.asindex(parts.upper)
        self.D = backend.asarray(parts.D)
        self.inv_D = backend.asarray(1.0 / parts.D)
        self.K = self.K_T = self.Cinv = self.sw = None
        if parts.K is not None:
            self.K = backend.csr(parts.K)
            self.K_T = backend.csr(parts.K.T.tocsr())
            self.Cinv = backend.asarray(parts.Cinv)
            self.sw = backend.asarray(np.sqrt(parts.mult[parts.nondirect]))
        A0 = sp.csr_matrix(problem.A0)
        self.A0 = backend.csr(A0)
        self.A0_T = backend.csr(A0.T.tocsr())
        self.A0_T_abs = backend.csr(abs(A0).T.tocsr())
        self.b0 = backend.asarray(problem.b0)
        self.direct = xp.asarray(parts.direct)
        self.direct_var = backend.asindex(np.maximum(parts.direct_var, 0))
        self._face: Any = None
        self._lock = threading.Lock()
        self._constants: dict[str, Any] = {}

    # ---- the maps ------------------------------------------------------------------------

    def moment_matrix(self, Y: Any) -> Any:
        """``M(y)`` of each row of ``Y`` ``(B, n_vars)``: a stack ``(B, m, m)``."""
        xp, m = self.backend.xp, self.m
        e = (self.entries @ Y.T).T  # (B, entries)
        out = xp.empty((Y.shape[0], m * m))
        out[:, self.lower] = e
        out[:, self.upper] = e
        return out.reshape(Y.shape[0], m, m)

    def entries_of(self, Z: Any) -> Any:
        """The lower-triangle entries of each matrix of the stack ``Z``, ``(B, entries)``."""
        return Z.reshape(Z.shape[0], -1)[:, self.lower]

    def adjoint(self, Z: Any) -> Any:
        """``M^*(Z)_a = <E_a, Z>`` of each matrix of the stack ``Z``: ``(B, n_vars)``."""
        w = self.entries_of(Z) * self.mult
        return (self.entries_T @ w.T).T

    def solve_gram(self, R: Any) -> Any:
        """``(M^* M)^{-1} r`` for each row ``r`` of ``R`` ``(B, n_vars)`` (Woodbury)."""
        RD = R * self.inv_D
        if self.K is None:
            return RD
        xp = self.backend.xp
        t = (self.K @ RD.T).T * self.sw  # (B, k)
        u = xp.matmul(self.Cinv, t[:, :, None])[:, :, 0] * self.sw
        return RD - (self.K_T @ u.T).T * self.inv_D

    def constant(self, name: str, host: np.ndarray) -> Any:
        """``host`` (a per-problem constant of the caller, e.g. the bound's sphere maxima) on
        this backend, uploaded once and kept under ``name``."""
        with self._lock:
            if name not in self._constants:
                self._constants[name] = self.backend.asarray(host)
            return self._constants[name]

    # ---- the face certificate's pieces ---------------------------------------------------

    def _face_parts(self) -> Any:
        with self._lock:
            if self._face is None:
                P, o_col, o_val, (fi, fp), (ti, tp, tord) = _face_pattern(self.problem)
                be = self.backend
                idx32 = np.int32 if not be.on_host else np.int64
                self._face = {
                    "P": be.csr(P),
                    "o_col": be.asindex(o_col),
                    "o_val": be.asarray(o_val),
                    "f": (be.xp.asarray(fi.astype(idx32)), be.xp.asarray(fp.astype(idx32))),
                    "f_rows": be.asindex(np.repeat(np.arange(len(fp) - 1), np.diff(fp))),
                    "t": (
                        be.xp.asarray(ti.astype(idx32)),
                        be.xp.asarray(tp.astype(idx32)),
                        be.asindex(tord),
                    ),
                }
            return self._face

    def face_system(self, q: Any) -> tuple[Any, Any]:
        """For a unit ``q`` (the candidate's monomial vector): ``F^T (M^*M)^{-1} F`` as a dense
        ``(m, m)`` matrix, and the operators ``v -> F^T v`` (``Ft``) and
        ``v -> (M^*M)^{-1} F v`` (``gram_F``), where ``F v = M^*(v q^T + q v^T)``."""
        be = self.backend
        fp = self._face_parts()
        data = fp["P"] @ (fp["o_val"] * q[fp["o_col"]])
        N, m = self.n_vars, self.m
        FD = be.csr_from(data * self.inv_D[fp["f_rows"]], *fp["f"], (N, m))  # diag(1/D) F
        t_idx, t_ptr, t_ord = fp["t"]
        Ft = be.csr_from(data[t_ord], t_idx, t_ptr, (m, N))
        FtAF = (Ft @ FD).toarray()
        if self.K is None:
            return FtAF, Ft, lambda v: FD @ v
        G = (self.K @ FD).toarray()  # (k, m)
        H = self.sw[:, None] * (self.Cinv @ (self.sw[:, None] * G))
        FtAF = FtAF - G.T @ H
        KtD = self.K_T  # (N, k); the 1/D is applied after the product

        def gram_F(v: Any) -> Any:
            return FD @ v - (KtD @ (H @ v)) * self.inv_D

        return FtAF, Ft, gram_F


_MAPS: weakref.WeakKeyDictionary[SdpProblem, dict[ArrayBackend, DeviceMaps]] = (
    weakref.WeakKeyDictionary()
)
_MAPS_LOCK = threading.Lock()


def device_maps(problem: SdpProblem, backend: ArrayBackend) -> DeviceMaps:
    """The :class:`DeviceMaps` of ``problem`` on ``backend`` (built on first use, cached with
    the problem)."""
    with _MAPS_LOCK:
        per = _MAPS.setdefault(problem, {})
        maps = per.get(backend)
        if maps is None:
            maps = per[backend] = DeviceMaps(problem, backend)
        return maps
