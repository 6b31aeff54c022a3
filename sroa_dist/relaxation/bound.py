"""The paper-critical part: upper bounds of ``max_{||x||=1} sign * T x^p`` that hold for ANY
dual guess, the repair of a dual's equality residual, and the dual on the optimal face at a
candidate maximiser (projection, then alternating projections with the PSD cone).

Nothing here trusts the solver: :func:`validated_bound` is a bound whatever ``(z_zero, Z)`` it
is given, with every rounding error covered by an explicit margin; the other functions only
try to make that bound small.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..monomials import exponent_tuples, multinomial
from .result import Best
from .structure import MomentStructure

__all__ = ["face_projector", "flattening_dual", "refine_face", "repair", "validated_bound"]

_U = float(np.finfo(float).eps)


def validated_bound(
    rel: MomentStructure,
    c: np.ndarray,
    z_zero: np.ndarray,
    Z: np.ndarray,
    lam_min: float | None = None,
) -> float:
    """Upper bound of ``max_{||x||=1} -c^T y(x)`` from ANY dual guess ``(z_zero, Z)``.

    For unit ``x`` the moment vector ``y(x)`` is feasible (``A_0 y(x) = b_0`` and
    ``M(y(x)) = m(x) m(x)^T``), so with ``r = c + A_0^T z_zero - M^*(Z)`` (the dual
    residual ``c + A^T z``)::

        c^T y(x) = r^T y(x) - b^T z + <Z, M(y(x))>
                 >= -z_zero[0] - sum_a |r_a| max_sphere |x^a| - K max(0, -lambda_min(Z)),

    since ``trace M(y(x)) <= K`` (:attr:`trace_bound`). Rounding in ``r`` and in
    ``lambda_min`` is covered by explicit margins. ``lam_min`` may be passed if known.
    """
    z_zero = np.asarray(z_zero, dtype=float)
    r = c + rel._A0_T @ z_zero - rel._adjoint(Z)
    r_err = (
        2
        * _U
        * rel._n_terms
        * (np.abs(c) + rel._A0_T_abs @ np.abs(z_zero) + rel._adjoint(np.abs(Z)))
    )
    if lam_min is None:
        lam_min = float(np.linalg.eigvalsh(Z)[0])
    fro = float(np.sqrt(np.einsum("ij,ij->", Z, Z)))
    mu = max(0.0, -lam_min) + 4 * rel.m * _U * fro
    res = float(np.sum((np.abs(r) + r_err) * rel._ymax))
    ub = float(z_zero[0]) + rel.trace_bound * mu + res
    return ub + 8 * _U * (abs(float(z_zero[0])) + rel.trace_bound * mu + res)


def repair(rel: MomentStructure, c: np.ndarray, z_zero: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """``Z`` plus the least change on direct entries that makes ``r = 0`` (same ``z_zero``)."""
    lam = (c + rel._A0_T @ z_zero - rel._adjoint(Z)) / rel._D
    e = np.where(rel._direct, lam[np.maximum(rel._direct_var, 0)], 0.0)
    return Z + rel._sym(e)


def face_projector(rel: MomentStructure, c: np.ndarray, z_zero: np.ndarray, x: np.ndarray):
    """Orthogonal projector onto the optimal face at a candidate ``x``.

    If the relaxation is tight with maximiser ``x``, some optimal dual has
    ``z_zero[0] = -c^T y(x)`` and ``Z q = 0`` (``q = m(x)/||m(x)||``, complementary
    slackness). Returns ``(z_face, project)`` where ``z_face`` is ``z_zero`` with that first
    entry and ``project(Z0)`` is the Frobenius-nearest symmetric ``Z`` with
    ``M^*(Z) = c + A_0^T z_face`` and ``Z q = 0`` (other zero-cone duals kept fixed).
    """
    zf = np.array(z_zero, dtype=float)
    zf[0] = -float(c @ rel.moments_of(x))
    g = c + rel._A0_T @ zf
    q = rel.basis_vector(x)
    q = q / np.linalg.norm(q)
    m, N = rel.m, rel.n_vars
    D = rel._D
    # F v = M^*(v q^T + q v^T): a sparse (N, m) matrix; the adjoint of lam -> M(lam) q is F^T/2.
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
        # Woodbury without densifying F (a dense (N, m) product costs ~N m^2 flops and 8 N m
        # bytes, 14 GB at n = 64): (M^*M)^{-1} F = D^-1 F - D^-1 K^T W C^-1 W K D^-1 F, where
        # K D^-1 F has only as many rows as K.
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

    S = np.eye(m) + np.outer(q, q) - 0.5 * FtAF
    S = 0.5 * (S + S.T)
    # S is singular along the one consistency condition <M^*(Z), y(x)> ~ q^T Z q.
    ev, EV = np.linalg.eigh(S)
    keep = np.abs(ev) > 1e-12 * max(1.0, float(np.abs(ev).max()))
    S_pinv = (EV[:, keep] / ev[keep]) @ EV[:, keep].T
    Ft = F.T.tocsr()

    def project(Z0: np.ndarray) -> np.ndarray:
        e1 = g - rel._adjoint(Z0)
        a1 = rel._solve_gram(e1)
        v = S_pinv @ (-(Z0 @ q) - 0.5 * (Ft @ a1))
        lam = a1 - gram_F(v)
        return Z0 + rel.moment_matrix(lam) + np.outer(v, q) + np.outer(q, v)

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
) -> None:
    """Face certificate at ``x``: project ``Z0``, then alternate PSD / face projections."""
    zf, project = face_projector(rel, c, z_zero, x)
    Z = project(Z0)
    prev_gap = np.inf
    for it in range(max_iters + 1):
        ev, V = np.linalg.eigh(Z)
        bound = validated_bound(rel, c, zf, Z, lam_min=float(ev[0]))
        margin = float(ev[1]) if len(ev) > 1 else float("nan")
        best.offer_bound(bound, "face", margin, (zf, Z))
        gap = bound - fx
        # Linear convergence is fast (about 50x per step) when x is the global maximiser
        # and Z0 is near the face; stop early when it is not.
        if gap <= target or bound <= stop_below or it == max_iters or gap > 0.5 * prev_gap:
            break
        prev_gap = gap
        Z = project((V * np.maximum(ev, 0.0)) @ V.T)


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
