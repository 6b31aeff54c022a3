"""Input checks and the polish of maximiser candidates on the sphere (single tensor)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from ..tensors import check_symmetry, contract, normalizing_exponents
from ..tensors import sphere_newton_step as _newton_step

__all__ = ["polish"]

_U = float(np.finfo(float).eps)


def value(T: np.ndarray, x: np.ndarray) -> float:
    """``T x^p`` of one tensor at one vector."""
    return float(contract(T[None], x[None, None, :], T.ndim)[0, 0])


def fro(T: np.ndarray) -> float:
    """``‖T‖_F`` without underflow or overflow of the squares (same bits at ordinary scales)."""
    k = int(normalizing_exponents(T[None])[0][0])
    return float(np.ldexp(np.linalg.norm(np.ldexp(T, -k)), k))


def check_sign(sign: int) -> int:
    if sign not in (1, -1):
        raise InputError(f"expected sign +1 or -1, received {sign!r}", "give sign=+1 or -1")
    return int(sign)


def check_tensor(T: Any, n: int | None = None, p: int | None = None) -> np.ndarray:
    """``T`` as a float array of shape ``(n,)*p`` (``p >= 2``), finite and symmetric.

    Symmetry is judged by :func:`sroa_dist.tensors.check_symmetry`, the package's one test, so
    a tensor that ``rank_one(method="sshopm")`` accepts is never refused here.
    """
    T = np.asarray(T, dtype=float)
    if T.ndim < 2 or len(set(T.shape)) != 1:
        raise InputError(
            f"expected a symmetric tensor of shape (n,)*p with p >= 2, received shape {T.shape}",
            "pass a symmetric (n,)*p tensor",
        )
    if (n is not None and T.shape[0] != n) or (p is not None and T.ndim != p):
        raise InputError(
            f"expected a tensor of shape {(n,) * p} for this relaxation, received {T.shape}",
            "use get_relaxation(n, p) with the tensor's own n and p",
        )
    if not np.all(np.isfinite(T)):
        raise InputError(
            "expected finite tensor entries, received NaN or inf", "replace the non-finite entries"
        )
    check_symmetry(T, "T")
    return T


def _contract_rows(T_last: np.ndarray, X: np.ndarray, k: int) -> np.ndarray:
    """``T x^k`` for every row ``x`` of ``X`` as an ``(n^{p-k}, rows)`` array, from ``T``
    unfolded as ``(n^{p-1}, n)``: one GEMM, then contractions that shrink by ``n`` each (no
    ``n^k``-wide Kronecker powers of the rows)."""
    n = T_last.shape[1]
    Xt = np.asarray(X, dtype=float).T
    if k == 0:
        return np.repeat(T_last.reshape(-1, 1), Xt.shape[1], axis=1)
    Y = T_last @ Xt
    for _ in range(k - 1):
        Y = np.einsum("aib,ib->ab", Y.reshape(-1, n, Xt.shape[1]), Xt)
    return Y


def values(T: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``T x^p`` for every row ``x`` of ``X``."""
    n, p = T.shape[0], T.ndim
    return _contract_rows(T.reshape(n ** (p - 1), n), X, p)[0]


def polish_many(
    T: np.ndarray, X: np.ndarray, s: int, power_steps: int, newton_steps: int, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """Batched :func:`polish` of the unit rows of ``X``; returns ``(X, sign * T x^p per row)``."""
    n, p = T.shape[0], T.ndim
    B = X.shape[0]
    Tlast = s * T.reshape(n ** (p - 1), n)  # contracts the last axis in one GEMM
    tol = 8 * _U * float(np.linalg.norm(T))

    def partial(X: np.ndarray, k: int) -> np.ndarray:
        return _contract_rows(Tlast, X, k)

    def grad_and_value(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        G = np.ascontiguousarray(partial(X, p - 1).T)  # (B, n): sign * T x^{p-1}
        return G, np.einsum("bi,bi->b", G, X)

    def power(X: np.ndarray) -> np.ndarray:
        G = grad_and_value(X)[0] + alpha * X
        nrm = np.linalg.norm(G, axis=1, keepdims=True)
        return np.where(nrm > 0, G / np.where(nrm > 0, nrm, 1.0), X)

    for _ in range(power_steps):
        X = power(X)
    G, f = grad_and_value(X)
    active = np.ones(B, dtype=bool)
    for _ in range(newton_steps):
        grad = G - f[:, None] * X
        active &= np.linalg.norm(grad, axis=1) > tol
        if not active.any():
            break
        a = np.nonzero(active)[0]
        x, fa = X[a], f[a]
        H = partial(x, p - 2).T.reshape(len(a), n, n)  # sign * T x^{p-2}
        xn = x + _newton_step(H, G[a], fa, x, p)[:, :n]
        xn /= np.linalg.norm(xn, axis=1, keepdims=True)
        Gn, fn = grad_and_value(xn)
        bad = np.nonzero(~(fn >= fa))[0]  # objective would decrease (or NaN)
        if len(bad):  # take a (monotone) shifted power step instead; stop rows where it stalls
            xp = power(x[bad])
            Gp, fp = grad_and_value(xp)
            ok = fp > fa[bad]
            xn[bad] = np.where(ok[:, None], xp, x[bad])
            Gn[bad] = np.where(ok[:, None], Gp, G[a[bad]])
            fn[bad] = np.where(ok, fp, fa[bad])
            active[a[bad[~ok]]] = False
        X[a], G[a], f[a] = xn, Gn, fn
    return X, f


def polish(
    T: np.ndarray,
    x: np.ndarray,
    sign: int = 1,
    *,
    power_steps: int = 5,
    newton_steps: int = 10,
    shift: float | None = None,
) -> np.ndarray:
    """Refine ``x`` to a nearby KKT point of ``sign * T x^p`` on the unit sphere.

    ``power_steps`` shifted power iterations ``x <- normalize(sign T x^{p-1} + shift x)``
    (monotone for ``shift >= (p - 1) ||T||_F``: SS-HOPM, Kolda & Mayo 2011) are followed by
    Newton steps on the sphere (:func:`sroa_dist.tensors.sphere_newton_step`, the same steps
    as :func:`sroa_dist.methods.ascent.newton_polish`). A Newton step is accepted only if the
    objective does not decrease (otherwise a shifted power step is taken instead), so a
    candidate near a maximiser is never moved to a saddle. Converges quadratically to
    non-degenerate KKT points (Z-eigenvectors).

    Parameters
    ----------
    T : ndarray, shape ``(n,)*p``
        Symmetric tensor.
    x : ndarray, shape ``(n,)``
        Starting point (normalised here; must be nonzero).
    sign : {+1, -1}
        Maximise ``sign * T x^p``.
    power_steps : int
        Shifted power iterations before the Newton steps.
    newton_steps : int
        Maximum number of Newton steps.
    shift : float, optional
        Power-iteration shift; default ``(p - 1) * ||T||_F``.

    Returns
    -------
    ndarray, shape ``(n,)``
        A unit vector.
    """
    T = np.asarray(T, dtype=float)
    p = T.ndim
    s = check_sign(sign)
    x = np.array(x, dtype=float).reshape(-1)
    nx = float(np.linalg.norm(x))
    if x.shape[0] != T.shape[0] or not np.isfinite(nx) or nx == 0:
        raise InputError(
            f"expected a nonzero finite starting vector of length {T.shape[0]}, received "
            f"shape {x.shape} with norm {nx}",
            "start from a nonzero finite vector of length n",
        )
    f = fro(T)
    if f == 0:
        return x / nx
    alpha = (p - 1) * f if shift is None else float(shift)
    return polish_many(T, (x / nx)[None, :], s, power_steps, newton_steps, alpha)[0][0]
