"""The dual of a relaxation solve as an auditable SOS identity (:class:`Certificate`)."""

from __future__ import annotations

import numpy as np

from ..certificate import Certificate
from ..monomials import monomial_exponents, multinomial, polynomial_coefficients
from .polish import check_sign
from .structure import MomentStructure

_U = float(np.finfo(float).eps)


__all__ = ["export_certificate"]


def export_certificate(
    rel: MomentStructure,
    T: np.ndarray,
    sign: int,
    z_zero: np.ndarray,
    Z: np.ndarray,
    scale: float = 1.0,
) -> Certificate:
    """The SOS identity behind a dual ``(z_zero, Z)`` of the relaxation of ``T / scale``.

    With ``r`` the dual residual (as in :meth:`validated_bound`) and ``U = scale *
    z_zero[0]``, ``Q = scale * Z``, the dual equalities read, as polynomials in ``x``,
    ``U - sign T x^p = m^T Q m + h (||x||^2 - 1) + scale r^T y(x)``, where ``m`` is the
    moment-matrix basis and

    * homogeneous formulation: ``h = sum over the (degree 2d-2) entries of M that stand
      for sum_k y_{a + 2e_k}`` of ``Q_ij m_i m_j``, ``- U sum_{t<d} ||x||^{2t}``, plus
      ``sign T x^p sum_{t<j} ||x||^{2t}`` when the objective was multiplied by
      ``||x||^{2j}`` (orders above ``ceil(p/2)``);
    * full formulation: ``h = -scale sum_l z_zero[l] x^{a_l}`` over the localising rows.

    The residual is not exported: :meth:`Certificate.verify` recomputes it from ``T``.

    Homogeneous formulation: a dual with ``lambda_min(Z) = -mu < 0`` (an early-stopped or
    repaired driver dual) is exported as the equivalent dual ``(z_0 + K mu', Z + mu' D)``, with
    ``D = diag(multinomial coefficients of the basis)`` (``m^T D m = sum_k ||x||^{2k}``, which
    is ``K``, the number of degree blocks, on the sphere) and ``mu'`` = ``mu`` plus a rounding
    margin. It satisfies the same dual equalities, its ``Q`` is positive semidefinite and its
    ``U`` is the bound itself, so :meth:`Certificate.verify` returns ``U`` up to rounding and a
    checker that compares the two sees an honest claim.
    """
    s = check_sign(sign)
    n, p, d = rel.n, rel.p, rel.order
    T = np.asarray(T, dtype=float)
    z_zero, Z = _fold_negative_part(rel, z_zero, Z)
    z = scale * np.asarray(z_zero, dtype=float)
    Q = scale * np.asarray(Z, dtype=float)
    Q = 0.5 * (Q + Q.T)
    B = rel.basis
    rows: list[np.ndarray] = []
    coefs: list[np.ndarray] = []
    if rel.formulation == "full":
        loc = np.nonzero(rel.degrees <= 2 * d - 2)[0]
        rows.append(rel.exponents[loc])
        coefs.append(-z[1:])
    else:
        nd = ~rel._direct
        I, J = rel._I[nd], rel._J[nd]
        rows.append(B[I] + B[J])
        coefs.append(rel._mult[nd] * Q[I, J])
        for t in range(d):
            H = monomial_exponents(n, t)
            rows.append(2 * H)
            coefs.append(-z[0] * multinomial(H))
        var_degrees = [2 * d - 1, 2 * d] if p % 2 else [2 * d]
        target = min(k for k in var_degrees if k >= p and (k - p) % 2 == 0)
        if target > p:
            Ef, cf = monomial_exponents(n, p), polynomial_coefficients(T, p)
            for t in range((target - p) // 2):
                H = monomial_exponents(n, t)
                rows.append((Ef[:, None, :] + 2 * H[None, :, :]).reshape(-1, n))
                coefs.append(s * np.outer(cf, multinomial(H)).ravel())
    hx, inv = np.unique(np.vstack(rows), axis=0, return_inverse=True)
    hc = np.bincount(inv.ravel(), weights=np.concatenate(coefs), minlength=len(hx))
    return Certificate(
        n=n,
        p=p,
        signs=np.array([s]),
        bounds=np.array([float(z[0])]),
        exponents=np.array(B, dtype=np.int64),
        gram=Q[None],
        h_exponents=hx.astype(np.int64),
        h_coefs=hc[None],
    )


def _fold_negative_part(
    rel: MomentStructure, z_zero: np.ndarray, Z: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(z_zero, Z)`` with ``Z``'s negative part moved into the bound (homogeneous
    formulation; see :func:`export_certificate`); unchanged when ``Z`` is PSD or the
    formulation is ``"full"``."""
    z_zero = np.array(z_zero, dtype=float)
    Z = 0.5 * (np.asarray(Z, dtype=float) + np.asarray(Z, dtype=float).T)
    if rel.formulation != "homogeneous" or not np.all(np.isfinite(Z)):
        return z_zero, Z
    lam_min = float(np.linalg.eigvalsh(Z)[0])
    fro = float(np.linalg.norm(Z))
    mu = max(0.0, -lam_min) + 4 * rel.m * _U * fro  # covers the rounding of lambda_min
    if lam_min - 4 * rel.m * _U * fro >= 0.0:
        return z_zero, Z
    z_zero[0] += mu * rel.trace_bound
    return z_zero, Z + mu * np.diag(multinomial(rel.basis))
