"""Derivative of SROA's output with respect to its input tensor, by the implicit function theorem.

Each step ``j`` of Algorithm 1 returns a Z-eigenpair of the deflated tensor ``T̂_{j-1}``: the
first-order conditions ``T̂_{j-1} v̂_j^{p-1} = λ̂_j v̂_j``, ``‖v̂_j‖ = 1``, ``λ̂_j = T̂_{j-1} v̂_j^p``,
and the next tensor is ``T̂_j = T̂_{j-1} − λ̂_j v̂_j^{⊗p}``. Differentiating the conditions at a
nondegenerate eigenpair (``A_j = λ̂_j I − (p−1) P T̂_{j-1} v̂_j^{p-2} P`` invertible on ``v̂_j^⊥``,
``P = I − v̂_j v̂_jᵀ``; at a strict local maximiser of ``T x^p`` on the sphere ``A_j`` is positive
definite) gives, for a symmetric ``dT`` of ``T̂_{j-1}``,

    dλ̂_j = ⟨dT, v̂_j^{⊗p}⟩,     dv̂_j = A_j^{-1} P (dT v̂_j^{p-1}),
    dT̂_j = dT − dλ̂_j v̂_j^{⊗p} − p λ̂_j sym(dv̂_j ⊗ v̂_j^{⊗(p-1)}).

:func:`sroa_vjp` runs these backwards through the steps (reverse mode), so the gradient of any
scalar function of ``(λ̂, V̂)`` costs one pass of ``O(r (n^p + n³))``, independent of how many
entries ``T̂`` has. The adjoint of ``T̂_j`` is kept in factored form (a sum of ``v̂_k^{⊗p}`` and
``sym(w_k ⊗ v̂_k^{⊗(p-1)})`` over later steps ``k``) and only the final gradient is formed.

The derivative is that of the *branch* of eigenpairs the forward pass selected; where a step's
choice of maximiser jumps (two local maxima trade places) SROA's output is discontinuous and no
derivative exists. Pure numpy.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InputError
from ..tensors import FloatArray, check_symmetric_tensor, contract

__all__ = ["eigen_residuals", "sroa_vjp"]


def _hessians(That: FloatArray, lam: FloatArray, V: FloatArray) -> FloatArray:
    """``H_j = T̂_{j-1} v̂_j^{p-2}`` for every step, shape ``(r, n, n)``: one contraction of
    ``T̂`` plus the deflation terms ``−Σ_{k<j} λ̂_k (v̂_k·v̂_j)^{p-2} v̂_k v̂_kᵀ``."""
    p = That.ndim
    H = contract(That[None], V.T[None], p - 2)[0]  # (r, n, n)
    C = V.T @ V  # (r, r): C[k, j] = v̂_k · v̂_j
    r = V.shape[1]
    for j in range(1, r):
        coef = lam[:j] * C[:j, j] ** (p - 2)
        H[j] -= (V[:, :j] * coef) @ V[:, :j].T
    return H


def eigen_residuals(T_hat: ArrayLike, lambdas: ArrayLike, vectors: ArrayLike) -> FloatArray:
    """``‖T̂_{j-1} v̂_j^{p-1} − λ̂_j v̂_j‖`` for every step: how well SROA's output satisfies the
    first-order conditions the derivative assumes (machine precision after a Newton polish).

    Shapes: ``T_hat`` ``(n,)*p``, ``lambdas`` ``(r,)``, ``vectors`` ``(n, r)``; returns ``(r,)``.
    """
    That = check_symmetric_tensor(T_hat, "T_hat")
    lam = np.asarray(lambdas, dtype=float)
    V = np.asarray(vectors, dtype=float)
    H = _hessians(That, lam, V)
    g = np.einsum("jab,bj->aj", H, V)
    return np.linalg.norm(g - V * lam, axis=0)


def _sym_outer(a: FloatArray, V: FloatArray, W: FloatArray, p: int) -> FloatArray:
    """``Σ_k a_k v_k^{⊗p} + sym(w_k ⊗ v_k^{⊗(p-1)})`` for columns ``v_k``, ``w_k`` (dense)."""
    n = V.shape[0]
    letters = "abcdefghijklmnop"[:p]

    def outer(cols: list[FloatArray]) -> FloatArray:
        spec = ",".join(f"{c}z" for c in letters) + "->" + letters
        return np.einsum(spec, *cols, optimize=True)

    G = outer([V * a] + [V] * (p - 1))
    # sym(w ⊗ v^{p-1}) is the mean over the p positions w can take.
    for pos in range(p):
        cols = [V] * p
        cols[pos] = W / p
        G += outer(cols)
    return G.reshape((n,) * p)


def _complement(v: FloatArray) -> FloatArray:
    """Orthonormal basis of ``v^⊥`` (``(n, n-1)``): the Householder reflection mapping ``v`` to
    ``∓e_0`` has ``v`` as its first column up to sign and ``v^⊥`` as the others."""
    u = v.copy()
    u[0] += 1.0 if v[0] >= 0 else -1.0  # the sign that avoids cancellation
    R = np.eye(v.shape[0]) - 2.0 * np.outer(u, u) / float(u @ u)
    return R[:, 1:]


def sroa_vjp(
    T_hat: ArrayLike,
    lambdas: ArrayLike,
    vectors: ArrayLike,
    grad_lambdas: ArrayLike,
    grad_vectors: ArrayLike,
) -> FloatArray:
    """Gradient with respect to ``T̂`` of ``f = Σ_j a_j λ̂_j + Σ_j b_j · v̂_j`` through SROA.

    Parameters
    ----------
    T_hat : (n,)*p array_like
        The symmetric tensor SROA ran on.
    lambdas, vectors : (r,), (n, r) array_like
        SROA's output on ``T_hat`` (``SROAResult.lambdas`` / ``.vectors``): eigenpairs of the
        successively deflated tensors (check with :func:`eigen_residuals`).
    grad_lambdas, grad_vectors : (r,), (n, r) array_like
        ``a = ∂f/∂λ̂`` and ``b = ∂f/∂V̂`` (the vectors' unit-norm constraint is handled here: only
        the part of ``b_j`` orthogonal to ``v̂_j`` matters).

    Returns
    -------
    G : ndarray, shape (n,)*p
        Symmetric; ``df = ⟨G, dT̂⟩_F`` for every symmetric ``dT̂`` on the branch the forward pass
        selected (see the module docstring).

    Raises
    ------
    numpy.linalg.LinAlgError
        When a step's ``A_j`` is singular (a degenerate eigenpair: no derivative).
    """
    That = check_symmetric_tensor(T_hat, "T_hat")
    p, n = That.ndim, That.shape[0]
    lam = np.asarray(lambdas, dtype=float)
    V = np.asarray(vectors, dtype=float)
    a = np.asarray(grad_lambdas, dtype=float)
    b = np.asarray(grad_vectors, dtype=float)
    r = lam.shape[0]
    if V.shape != (n, r) or a.shape != (r,) or b.shape != (n, r):
        raise InputError(
            f"lambdas/vectors/grad_lambdas/grad_vectors: expected shapes ({r},)/({n}, {r})/"
            f"({r},)/({n}, {r}), received {lam.shape}/{V.shape}/{a.shape}/{b.shape}",
            "pass the SROA result's own lambdas and vectors and gradients of their shapes",
        )
    H = _hessians(That, lam, V)
    C = V.T @ V
    at = np.zeros(r)  # ã_k: coefficient of v̂_k^{⊗p} in the adjoint
    W = np.zeros((n, r))  # w_k: sym(w_k ⊗ v̂_k^{⊗(p-1)}) in the adjoint
    for j in range(r - 1, -1, -1):
        v = V[:, j]
        # The adjoint G_j of T̂_j collects the steps after j (k > j), contracted with v̂_j.
        c = C[j + 1 :, j]
        Wk, Vk, ak = W[:, j + 1 :], V[:, j + 1 :], at[j + 1 :]
        wv = Wk.T @ v
        g_vp = float(np.sum(ak * c**p + wv * c ** (p - 1)))  # ⟨G_j, v^{⊗p}⟩
        g_vp1 = Vk @ (ak * c ** (p - 1) + (p - 1) / p * wv * c ** (p - 2)) + Wk @ (
            c ** (p - 1) / p
        )  # G_j v^{p-1}
        at[j] = a[j] - g_vp
        bt = b[:, j] - p * lam[j] * g_vp1
        # w_j = P A_j^{-1} P b̃_j on v^⊥, through an orthonormal basis Q of v^⊥.
        Q = _complement(v)
        A = lam[j] * np.eye(n - 1) - (p - 1) * (Q.T @ H[j] @ Q)
        W[:, j] = Q @ np.linalg.solve(A, Q.T @ bt)
    return _sym_outer(at, V, W, p)
