"""The paper-critical part: upper bounds of ``max_{||x||=1} sign * T x^p`` that hold for ANY
dual guess, the repair of a dual's equality residual, and the dual on the optimal face at a
candidate maximiser (projection, then alternating projections with the PSD cone).

Nothing here trusts the solver: :func:`validated_bound` is a bound whatever ``(z_zero, Z)`` it
is given, with every rounding error covered by an explicit margin; the other functions only
try to make that bound small.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..monomials import exponent_tuples, multinomial
from .device_maps import DeviceMaps
from .result import Best
from .structure import MomentStructure

__all__ = [
    "DeviceFace",
    "face_projector",
    "flattening_dual",
    "offer_duals",
    "proven_lam_min",
    "refine_face",
    "repair",
    "validated_bound",
]

_U = float(np.finfo(float).eps)


class _HostFace:
    """The relaxation's own maps on the host: what SCS's and Clarabel's duals go through
    (the operations, and so the bits, of the results recorded before device drivers)."""

    host = True
    xp = np

    def __init__(self, rel: MomentStructure):
        self.rel = rel
        self.A0_T, self.A0_T_abs = rel._A0_T, rel._A0_T_abs
        self.n_terms, self.ymax, self.D = rel._n_terms, rel._ymax, rel._D
        self.adjoint, self.solve_gram = rel._adjoint, rel._solve_gram
        self.moment_matrix, self.sym = rel.moment_matrix, rel._sym

    @staticmethod
    def put(a: np.ndarray) -> np.ndarray:
        return a

    @staticmethod
    def eigh(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.linalg.eigh(A)

    @staticmethod
    def eigvalsh(A: np.ndarray) -> np.ndarray:
        return np.linalg.eigvalsh(A)

    def direct(self, lam: np.ndarray) -> np.ndarray:
        rel = self.rel
        return np.where(rel._direct, lam[np.maximum(rel._direct_var, 0)], 0.0)

    def face_system(self, q: np.ndarray) -> tuple[np.ndarray, Any, Callable]:
        rel = self.rel
        m, N, D = rel.m, rel.n_vars, rel._D
        # F v = M^*(v q^T + q v^T): a sparse (N, m) matrix; the adjoint of lam -> M(lam) q is
        # F^T/2.
        F = sp.csr_matrix(
            (2.0 * rel._ord_val * q[rel._ord_col], (rel._ord_var, rel._ord_row)), shape=(N, m)
        )
        FD = sp.diags(1.0 / D) @ F
        FtAF = (F.T @ FD).toarray()  # F^T (M^*M)^{-1} F, with the Woodbury term below
        if rel._gram_U is not None:
            UtF = (F.T @ rel._gram_U).T  # (k, m)
            VtF = (F.T @ rel._gram_V).T
            FtAF -= VtF.T @ UtF

            def gram_F(v: np.ndarray) -> np.ndarray:  # (M^*M)^{-1} F v
                return FD @ v - rel._gram_V @ (UtF @ v)
        elif rel._K is not None:
            # Woodbury without densifying F (a dense (N, m) product costs ~N m^2 flops and 8 N
            # m bytes, 14 GB at n = 64): (M^*M)^{-1} F = D^-1 F - D^-1 K^T W C^-1 W K D^-1 F,
            # where K D^-1 F has only as many rows as K.
            sw = rel._Kw[:, None]
            G = (rel._K @ FD).toarray()
            H = sw * sla.cho_solve(rel._inner, sw * G)
            FtAF -= G.T @ H
            KtD = (sp.diags(1.0 / D) @ rel._K.T).tocsr()

            def gram_F(v: np.ndarray) -> np.ndarray:
                return FD @ v - KtD @ (H @ v)
        else:

            def gram_F(v: np.ndarray) -> np.ndarray:
                return FD @ v

        return FtAF, F.T.tocsr(), gram_F


class DeviceFace:
    """The maps of a relaxation on a device driver's backend (:class:`DeviceMaps`), for its
    face certificates: the projections and eigendecompositions run where the driver's arrays
    live, and each bound they lead to is then validated on the host in float64
    (:func:`proven_lam_min`), so nothing computed on the device is trusted."""

    host = False

    def __init__(self, rel: MomentStructure, maps: DeviceMaps):
        self.rel, self.maps, self.backend = rel, maps, maps.backend
        self.xp = maps.backend.xp
        self.A0_T, self.A0_T_abs = maps.A0_T, maps.A0_T_abs
        self.n_terms = maps.constant("n_terms", rel._n_terms)
        self.ymax = maps.constant("ymax", rel._ymax)
        self.D = maps.D

    def put(self, a: np.ndarray) -> Any:
        return self.backend.asarray(a)

    def eigh(self, A: Any) -> tuple[Any, Any]:
        return self.backend.eigh(A)

    def eigvalsh(self, A: Any) -> Any:
        return self.backend.eigvalsh(A)

    def adjoint(self, Z: Any) -> Any:
        return self.maps.adjoint(Z[None])[0]

    def solve_gram(self, r: Any) -> Any:
        return self.maps.solve_gram(r[None])[0]

    def moment_matrix(self, y: Any) -> Any:
        return self.maps.moment_matrix(y[None])[0]

    def sym(self, e: Any) -> Any:
        m = self.maps.m
        out = self.xp.empty(m * m)
        out[self.maps.lower] = e
        out[self.maps.upper] = e
        return out.reshape(m, m)

    def direct(self, lam: Any) -> Any:
        return self.xp.where(self.maps.direct, lam[self.maps.direct_var], 0.0)

    def face_system(self, q: Any) -> tuple[Any, Any, Callable]:
        return self.maps.face_system(q)


def validated_bound(
    rel: MomentStructure,
    c: np.ndarray,
    z_zero: np.ndarray,
    Z: np.ndarray,
    lam_min: float | None = None,
    ops: Any = None,
) -> float:
    """Upper bound of ``max_{||x||=1} -c^T y(x)`` from ANY dual guess ``(z_zero, Z)``.

    For unit ``x`` the moment vector ``y(x)`` is feasible (``A_0 y(x) = b_0`` and
    ``M(y(x)) = m(x) m(x)^T``), so with ``r = c + A_0^T z_zero - M^*(Z)`` (the dual
    residual ``c + A^T z``)::

        c^T y(x) = r^T y(x) - b^T z + <Z, M(y(x))>
                 >= -z_zero[0] - sum_a |r_a| max_sphere |x^a| - K max(0, -lambda_min(Z)),

    since ``trace M(y(x)) <= K`` (:attr:`trace_bound`). Rounding in ``r`` and in
    ``lambda_min`` is covered by explicit margins. ``lam_min`` may be passed if known.
    ``ops`` (a :class:`DeviceFace`, with ``c`` and ``Z`` on its device): the same formula
    evaluated there, an estimate that steers the search and is never reported as it is.
    """
    f = _HostFace(rel) if ops is None else ops
    xp = f.xp
    z_zero = np.asarray(z_zero, dtype=float)
    z = f.put(z_zero)
    r = c + f.A0_T @ z - f.adjoint(Z)
    r_err = 2 * _U * f.n_terms * (xp.abs(c) + f.A0_T_abs @ xp.abs(z) + f.adjoint(xp.abs(Z)))
    if lam_min is None:
        lam_min = float(f.eigvalsh(Z)[0])
    fro = float(xp.sqrt(xp.einsum("ij,ij->", Z, Z)))
    mu = max(0.0, -lam_min) + 4 * rel.m * _U * fro
    res = float(xp.sum((xp.abs(r) + r_err) * f.ymax))
    ub = float(z_zero[0]) + rel.trace_bound * mu + res
    return ub + 8 * _U * (abs(float(z_zero[0])) + rel.trace_bound * mu + res)


def _gamma(k: int) -> float:
    return k * _U / (1 - k * _U)


def proven_lam_min(Z: np.ndarray, estimate: float) -> float:
    """A proven lower bound of ``lambda_min`` of the symmetric matrix whose lower triangle is
    that of ``Z`` (host, float64), from a floating-point Cholesky factorisation of
    ``Z - s I`` with ``s`` just below ``estimate`` (an eigenvalue computed elsewhere, e.g. on a
    GPU, and not trusted): if it runs to completion, ``X + dX = G G^T`` with
    ``|dX| <= gamma_{k+1} |G| |G^T|`` (Demmel 1989), so
    ``lambda_min(X) >= -gamma_{k+1} sum |X_ii| / (1 - gamma_{k+1})``. The shift is lowered
    until the factorisation succeeds. Costs one Cholesky (a third of an eigendecomposition's
    flops). :meth:`sroa_dist.certificate.Certificate.verify` uses the same theorem in its own
    code: the checker shares nothing with the solver.
    """
    k = Z.shape[0]
    L = np.tril(Z)
    X0 = L + np.tril(L, -1).T
    fro = float(np.linalg.norm(X0))
    g = 2 * _gamma(k + 1)
    step = (k + 2) * _U * fro + 1e-300
    s = float(estimate) - step if np.isfinite(estimate) else -fro
    for _ in range(60):
        X = X0 - s * np.eye(k)
        try:
            np.linalg.cholesky(X)
        except np.linalg.LinAlgError:
            step *= 2
            s = min(s, float(estimate)) - step
            continue
        diag = np.abs(np.diag(X))
        # rounding of the shifted diagonal: at most u |X_ii|
        return s - g * float(diag.sum()) / (1 - g) - _U * float(diag.max())
    return -fro * (1 + 4 * _U)  # ||Z||_2 <= ||Z||_F always holds


def _validated_on_host(
    rel: MomentStructure, c: np.ndarray, z_zero: np.ndarray, Z: Any, lam: float, ops: Any
) -> tuple[float, np.ndarray]:
    """A device dual brought to the host (its lower triangle, symmetrised) and its validated
    bound there, with ``lambda_min`` proven by :func:`proven_lam_min`."""
    Zh = ops.backend.to_host(Z)
    L = np.tril(Zh)
    Zh = L + np.tril(L, -1).T
    return validated_bound(rel, c, z_zero, Zh, proven_lam_min(Zh, lam)), Zh


def repair(
    rel: MomentStructure, c: np.ndarray, z_zero: np.ndarray, Z: np.ndarray, ops: Any = None
) -> np.ndarray:
    """``Z`` plus the least change on direct entries that makes ``r = 0`` (same ``z_zero``)."""
    f = _HostFace(rel) if ops is None else ops
    lam = (c + f.A0_T @ f.put(np.asarray(z_zero, dtype=float)) - f.adjoint(Z)) / f.D
    return Z + f.sym(f.direct(lam))


def face_projector(
    rel: MomentStructure, c: np.ndarray, z_zero: np.ndarray, x: np.ndarray, ops: Any = None
):
    """Orthogonal projector onto the optimal face at a candidate ``x``.

    If the relaxation is tight with maximiser ``x``, some optimal dual has
    ``z_zero[0] = -c^T y(x)`` and ``Z q = 0`` (``q = m(x)/||m(x)||``, complementary
    slackness). Returns ``(z_face, project)`` where ``z_face`` is ``z_zero`` with that first
    entry and ``project(Z0)`` is the Frobenius-nearest symmetric ``Z`` with
    ``M^*(Z) = c + A_0^T z_face`` and ``Z q = 0`` (other zero-cone duals kept fixed).
    ``c`` is on the host; with ``ops`` (a :class:`DeviceFace`) ``project`` takes and returns
    matrices on its device.
    """
    f = _HostFace(rel) if ops is None else ops
    xp = f.xp
    zf = np.array(z_zero, dtype=float)
    zf[0] = -float(c @ rel.moments_of(x))
    g = c + rel._A0_T @ zf
    q = rel.basis_vector(x)
    q = q / np.linalg.norm(q)
    g, q = f.put(g), f.put(q)
    m = rel.m
    FtAF, Ft, gram_F = f.face_system(q)
    S = xp.eye(m) + xp.outer(q, q) - 0.5 * FtAF
    S = 0.5 * (S + S.T)
    # S is singular along the one consistency condition <M^*(Z), y(x)> ~ q^T Z q.
    ev, EV = f.eigh(S)
    keep = xp.nonzero(xp.abs(ev) > 1e-12 * max(1.0, float(xp.abs(ev).max())))[0]
    S_pinv = (EV[:, keep] / ev[keep]) @ EV[:, keep].T

    def project(Z0: Any) -> Any:
        e1 = g - f.adjoint(Z0)
        a1 = f.solve_gram(e1)
        v = S_pinv @ (-(Z0 @ q) - 0.5 * (Ft @ a1))
        lam = a1 - gram_F(v)
        return Z0 + f.moment_matrix(lam) + xp.outer(v, q) + xp.outer(q, v)

    return zf, project


def refine_face(
    rel: MomentStructure,
    c: np.ndarray,
    z_zero: np.ndarray,
    Z0: np.ndarray,
    x: np.ndarray,
    fx: float,
    target: float,
    stop_below: float,
    max_iters: int,
    best: Best,
    ops: Any = None,
) -> None:
    """Face certificate at ``x``: project ``Z0``, then alternate PSD / face projections.

    With ``ops`` (a :class:`DeviceFace`) the projections run on its device and the best
    certificate they reach is validated on the host before it is offered to ``best``.
    """
    f = _HostFace(rel) if ops is None else ops
    xp = f.xp
    cf = f.put(c)
    zf, project = face_projector(rel, c, z_zero, x, ops)
    Z = project(f.put(Z0))
    prev_gap = np.inf
    top = (np.inf, "face", float("nan"), None, np.nan)
    for it in range(max_iters + 1):
        ev, V = f.eigh(Z)
        lam = float(ev[0])
        bound = validated_bound(rel, cf, zf, Z, lam_min=lam, ops=ops)
        margin = float(ev[1]) if len(ev) > 1 else float("nan")
        if bound < top[0]:
            top = (bound, "face", margin, Z, lam)
        gap = bound - fx
        # Linear convergence is fast (about 50x per step) when x is the global maximiser
        # and Z0 is near the face; stop early when it is not.
        if gap <= target or bound <= stop_below or it == max_iters or gap > 0.5 * prev_gap:
            break
        prev_gap = gap
        Z = project((V * xp.maximum(ev, 0.0)) @ V.T)
    _offer(rel, c, zf, top, best, ops)


def _offer(
    rel: MomentStructure, c: np.ndarray, z_zero: np.ndarray, top: tuple, best: Best, ops: Any
) -> None:
    """Offer ``best`` the bound ``top = (bound, which, margin, Z, lambda_min)``: as it is from
    the host maps; from a device, validated on the host first (only where it could win)."""
    bound, which, margin, Z, lam = top
    if Z is None:
        return
    if ops is not None and bound < best.bound:
        bound, Z = _validated_on_host(rel, c, z_zero, Z, lam, ops)
    if ops is None or bound < best.bound:
        best.offer_bound(bound, which, margin, (z_zero, Z))


def offer_duals(
    rel: MomentStructure,
    c: np.ndarray,
    z_zero: np.ndarray,
    Z: np.ndarray,
    best: Best,
    target: float,
    stop_below: float,
    refine_iters: int,
    ops: Any = None,
) -> None:
    """Offer ``best`` the validated bounds of a driver's dual ``(z_zero, Z)``: the face
    certificate at the best candidate first, then (if that does not close the gap) the
    dual as is and repaired. ``ops`` (a :class:`DeviceFace`): computed on its device, each
    bound that would improve ``best`` validated on the host."""
    if best.x is not None:
        refine_face(rel, c, z_zero, Z, best.x, best.fx, target, stop_below, refine_iters, best, ops)
    if best.done(target, stop_below):
        return
    if ops is None:
        best.offer_bound(validated_bound(rel, c, z_zero, Z), "driver", dual=(z_zero, Z))
        Zr = repair(rel, c, z_zero, Z)
        best.offer_bound(validated_bound(rel, c, z_zero, Zr), "repaired", dual=(z_zero, Zr))
        return
    cf, Zd = ops.put(c), ops.put(Z)
    for which, Zc in (("driver", Zd), ("repaired", repair(rel, cf, z_zero, Zd, ops))):
        lam = float(ops.eigvalsh(Zc)[0])
        est = validated_bound(rel, cf, z_zero, Zc, lam_min=lam, ops=ops)
        _offer(
            rel, c, np.asarray(z_zero, dtype=float), (est, which, float("nan"), Zc, lam), best, ops
        )


def flattening_dual(
    rel: MomentStructure, T: np.ndarray, sign: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """A dual ``(z_zero, Z)`` of ``max sign * T x^p`` from the symmetric square unfolding, for
    even ``p`` in the homogeneous formulation at order ``p/2`` (``None`` otherwise).

    With the degree-``p/2`` monomials ``m_a``, ``c_a`` their multinomial coefficients and
    ``G_ab = c_a c_b T_{a+b}``, ``T x^p = m^T G m`` and ``||x||^p = m^T diag(c) m``; so
    ``Z = U diag(c) - sign G`` satisfies the dual equalities for every ``U`` and is PSD for
    ``U = lambda_max(sign diag(c)^-1/2 G diag(c)^-1/2)``, the spectral norm of the unfolding
    restricted to symmetric matrices. One eigenvalue problem of the moment matrix's size,
    no SDP solver: cheap evidence that one sign of an even-order form cannot beat the other.
    :func:`validated_bound` of the result is a bound like any other dual's.
    """
    n, p, d = rel.n, rel.p, rel.order
    if p % 2 or rel.formulation != "homogeneous" or 2 * d != p:
        return None
    B = rel.basis
    idx = exponent_tuples(B, d, n).astype(np.int64)  # each row's sorted index tuple
    rows = np.ravel_multi_index(tuple(idx.T), (n,) * d)
    c = multinomial(B)
    G = float(sign) * np.asarray(T, dtype=float).reshape(n**d, n**d)[np.ix_(rows, rows)]
    G = c[:, None] * G * c[None, :]
    G = 0.5 * (G + G.T)
    r = 1.0 / np.sqrt(c)
    top = sla.eigh(
        r[:, None] * G * r[None, :], eigvals_only=True, subset_by_index=[B.shape[0] - 1] * 2
    )
    U = float(top[0])
    return np.array([U]), U * np.diag(c) - G
