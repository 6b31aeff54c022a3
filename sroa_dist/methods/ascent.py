"""Local ascent on the unit sphere, batched over instances and starts: random and spectral
starts, the shifted symmetric higher-order power method, Newton polish, and SROA's implicit
deflation (the deflated tensors are never formed)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..integer_powers import ipow
from ..operators import TensorOperator
from ..tensors import FloatArray, contract, kron_power, sphere_newton_step

#: Relative distance below which a start counts as having reached the best value (``n_best``).
BEST_RTOL = 1e-6
#: ``sshopm``'s default cap on start doubling (``max_starts``) on formed tensors (at least
#: four times the first start set).
DEFAULT_MAX_STARTS = 64
#: ``sshopm``'s first start set under implicit deflation, and its floor on formed tensors, where
#: it grows with n up to 64: local misses of the global step grow with n (measured against
#: certified steps by benchmarks/bench_miss_rate.py).
DEFAULT_N_STARTS = 16
#: ``sshopm``'s spectral starts (:func:`spectral_starts`) on every path since its revision 4
#: (before it: on matrix-free operators only). At large n uniform starts drift into the basin
#: of a coherent perturbation's sink: on the p = 5 coherent tilt (ε = 0.2) the share of
#: uniform starts reaching the global first step halves as n doubles (about 0.9, 0.5 and 0.25
#: at n = 100, 200, 400), while every spectral start reached it; on the dense p = 3 tilt at
#: n = 256 (ε = 0.055) uniform starts deflated the tilted component at step 2. Four cost two
#: ``T x^{p-2}`` contractions and two n × n eigensolves per step (on a large operator, two
#: Lanczos runs on Hessian-vector products, :data:`LARGE_N`).
DEFAULT_N_SPECTRAL = 4
#: Engines of the local methods on matrix-free operators (their ``engine`` option,
#: :func:`large_engine`). The large-n engine runs spectral starts by a Lanczos solver on
#: ``y ↦ T(θ, …, θ, y, ·)`` instead of a dense eigensolve, the Newton polish by MINRES on the
#: same products instead of a dense solve, and the global check's deflation terms as matrix
#: products: the same steps as the dense engine up to rounding (tests/core/test_large_n.py), not
#: bit for bit. ``"auto"`` (``sshopm`` revisions 5 on, ``power`` 2 on): the large-n engine on
#: operators of ``n >= LARGE_N``; ``"krylov"``: on every operator; ``"dense"``: never, the engine
#: of the earlier revisions, which stores made with them keep (formed tensors always run it).
ENGINES = ("auto", "krylov", "dense")
#: ``sshopm``'s and ``power``'s default ``spectral_low_dim`` (``sshopm`` revision 6, ``power``
#: revision 3; ``None`` before): the Krylov dimension from which the large-n engine's Lanczos
#: run accepts the lower end of an even order's ``T(I, I, θ, …, θ)`` unconverged. With positive
#: weights that matrix is ``Σ_i λ_i (v_i·θ)^{p-2} v_i v_iᵀ`` plus a small perturbation, so its
#: lower end is a cluster of about n eigenvalues near 0 (the ``(v_i·θ)^{p-2}`` near 0) whose
#: lowest eigenvector Lanczos resolves to a residual of 1e-10 only after about n products (it
#: ran to its cap of 400 at n = 512: why p = 4 cost 4.6 times p = 3). That start serves the
#: ``−T x^p`` ascent, for which every unit vector of the cluster's span is as good a start; an
#: isolated lower end (a component of negative weight) converges well before this dimension,
#: as before, and the upper end is always converged to the tolerance.
LOW_END_DIM = 64
#: ``sshopm``'s default ``spectral_tol`` (revision 9 on; :data:`CONVERGED_SPECTRAL` before): the
#: residual, relative to the largest Ritz value, at which the large-n engine's Lanczos run
#: accepts an extreme Ritz pair as a spectral start. A start only has to lie in the basin of
#: the maximiser its eigenvector points to (the ascent then runs to its own tolerance and the
#: polish to rounding): a residual ``r·‖M‖`` puts the Ritz vector within an angle of about
#: ``r·‖M‖/gap`` of the eigenvector, 1e-2 rad at a relative gap of 0.1, well inside such a
#: basin, where 1e-10 bought 40 % more products for nothing the ascent keeps. Measured on the
#: p = 3 tilt at n = 256 and 512 (every step global-checked): 47 % fewer Lanczos products, the
#: same λ̂ at every step to 1.1e-15 and no step redone; among the tilt's tied unit weights the
#: starts then pick another of the equal components first, a permutation of the same steps.
SPECTRAL_TOL = 1e-3
#: The spectral starts' Lanczos tolerance of ``sshopm`` revisions 5-8 and of ``power``'s
#: check: the extreme pairs converged to a residual of 1e-10 of the largest Ritz value.
CONVERGED_SPECTRAL = 1e-10
#: ``sshopm``'s ``spectral_precision`` values: ``"single"`` (revision 9 on) runs the spectral
#: starts' Lanczos products against a single-precision copy of the deflation terms (half the
#: bytes of the memory-bound pass over the ``n × k`` terms; an error of about 1e-7 of their
#: part of a product, which the Lanczos tolerance :data:`SPECTRAL_TOL` does not see: the
#: start only has to lie in its basin, and the ascent and the polish that follow run in
#: double); ``"double"`` (revisions 1-8) runs them in double precision.
SPECTRAL_PRECISIONS = ("double", "single")
#: ``sshopm``'s default ``polish_rtol`` (revision 7 on; ``1e-14`` before, :data:`EXACT_SOLVE`):
#: the relative residual to which the large-n engine's MINRES solves each Newton system of the
#: polish. An inexact Newton step with relative error η leaves an error ``η·e + C·e²`` from
#: ``e``: from an ascent point (``e`` about 1e-5) two steps at η = 1e-6 reach rounding, as two
#: at 1e-14 did, with about half the Hessian products (each two passes over the n × k
#: deflation terms, a third of a large-n step's products).
POLISH_RTOL = 1e-6
#: The polish's MINRES tolerance before ``sshopm`` revision 7, and ``power``'s check's.
EXACT_SOLVE = 1e-14
#: ``sshopm``'s default ``deflation_block`` (revision 8 on; ``None`` before): the bytes of
#: deflation terms one block of a fused deflated product reads. A product of a few vectors
#: ``y ↦ Σ_j u_j c_j (u_j·y)`` against the ``n × k`` terms is memory bound: as two whole matrix
#: products it reads ``U`` twice from memory (and a GEMM of 2-8 rows packs it as well: three
#: vectors cost 2.4 times one at n = 1024); in blocks of terms (columns of ``U``) that fit L2
#: cache the second pass of each block reads it from the cache (a block is rows of ``Uᵀ``,
#: contiguous where the engine keeps ``Uᵀ``), which halved a Lanczos product of three vectors at
#: n = 1024 (micro-measured, one BLAS thread). Rows per block: ``block // (8 n)``, at least
#: :data:`_FUSED_MIN_ROWS`; the same values as two whole products up to rounding.
DEFLATION_BLOCK = 1 << 20
#: The large-n engine's Lanczos variants (``sshopm``'s ``lanczos`` option): ``"lockstep"``
#: (revisions 5-7) runs the matrices of one instance in lockstep until the slowest has
#: converged, reorthogonalising each new vector twice against the whole basis; ``"own"``
#: (revision 8 on) drops a matrix from the block once its pairs have converged, where a run of
#: its own would stop, and reorthogonalises once after the three-term step, twice only where
#: that pass removed more than ``1 − 1/√2`` of the vector's norm (the Kahan–Parlett test):
#: after the three-term step the vector is orthogonal to the basis up to the loss of the
#: recurrence, so one pass restores it to rounding.
LANCZOS_VARIANTS = ("lockstep", "own")
#: Fused deflated products serve blocks of this many vectors (the Lanczos runs' 1-3, an
#: ascent's last live starts); one vector is a GEMV, already one pass per product, and a block
#: of more is a GEMM that reuses what it reads.
_FUSED_VECTORS = (2, 8)
_FUSED_MIN_ROWS = 16
#: From this dimension on ``engine="auto"`` runs the large-n engine: below it the dense
#: eigensolves cost little, and results at small n keep the bits they had before the engine.
LARGE_N = 128
#: ``shifted_ascent``'s gradient kernels on formed tensors (see :class:`_Gradients`).
KERNELS = ("dense", "symmetric", "packed")
#: Above this many starts (A·S) the packed kernel forms its pair products block by block.
_BLOCKED_PRODUCTS = 1024


@dataclasses.dataclass(frozen=True)
class Deflation:
    """The deflated tensors ``sign·(T̂ − Σ_j λ̂_j v̂_j^{⊗p})`` of SROA (Algorithm 1, line 4),
    represented by their terms and never formed, so a large-n SROA holds one tensor, not two.

    Attributes
    ----------
    U : (B, n, k) ndarray
        Deflated vectors ``v̂_j`` as columns (``k = 0`` before the first deflation).
    lam : (B, k) ndarray
        Their weights ``λ̂_j`` (already multiplied by ``sign``).
    fro : (B,) ndarray
        Frobenius norm of each deflated tensor (scales the shift cap and the tolerances).
    sign : float
        ``+1`` or ``−1``: the second sign lets even orders maximise ``−T x^p`` without a
        negated copy of the tensor.
    warm : (B, W, n) ndarray, optional
        Extra starts (previous steps' leftovers), appended after the others.
    warm_grad : (B, W, n) ndarray, optional
        ``(T̂ − Σ_j λ̂_j v̂_j^{⊗p}) w^{p-1}`` at the warm starts (sign not applied), carried over
        from the previous step, which saves the first pass over the tensor.
    check_theta : (B, C, n) ndarray, optional
        The contraction vectors of this step's global check's spectral starts (SROA's
        ``global_check`` under ``sshopm``'s ``shared_check``): a method with spectral starts
        computes theirs in the same run as its own (:func:`shared_spectral_starts`, one
        Lanczos run per step instead of two) and returns them as ``check_starts``.
    block : int, optional
        Fused deflated products of 2-8 vectors in blocks of this many bytes of the terms
        (:data:`DEFLATION_BLOCK`, ``sshopm``'s ``deflation_block``, revision 8 on); ``None``:
        two whole matrix products, the arithmetic of the earlier revisions.
    single : bool
        The spectral starts' Lanczos products run against a single-precision copy of the
        terms (``sshopm``'s ``spectral_precision="single"``, revision 9 on; see
        :data:`SPECTRAL_PRECISIONS`); every other product stays in double precision.
    """

    U: FloatArray
    lam: FloatArray
    fro: FloatArray
    sign: float = 1.0
    warm: FloatArray | None = None
    warm_grad: FloatArray | None = None
    check_theta: FloatArray | None = None
    block: int | None = None
    single: bool = False

    def take(self, rows: Any) -> Deflation:
        """The same deflation for the instances ``rows`` only (one instance: views, no copy of
        the ``n × k`` terms per call)."""
        idx = np.atleast_1d(np.asarray(rows))
        if idx.dtype.kind in "iu" and idx.size == 1:
            rows = slice(int(idx[0]), int(idx[0]) + 1) if idx[0] >= 0 else rows
        warm = None if self.warm is None else self.warm[rows]
        grad = None if self.warm_grad is None else self.warm_grad[rows]
        theta = None if self.check_theta is None else self.check_theta[rows]
        return Deflation(
            self.U[rows],
            self.lam[rows],
            self.fro[rows],
            self.sign,
            warm,
            grad,
            theta,
            self.block,
            self.single,
        )

    def negated(self) -> Deflation:
        """``−(T̂ − Σ λ̂_j v̂_j^{⊗p})``."""
        return dataclasses.replace(self, lam=-self.lam, sign=-self.sign)

    def cold(self) -> Deflation:
        """The same tensors without warm starts (and without the check's contractions)."""
        return dataclasses.replace(self, warm=None, warm_grad=None, check_theta=None)


def large_engine(Ts: Any, engine: str = "auto") -> bool:
    """Whether ``Ts`` runs the large-n engine under ``engine`` (:data:`ENGINES`): only a
    matrix-free operator can, every one under ``"krylov"``, those of ``n >= LARGE_N`` under
    ``"auto"``, none under ``"dense"``."""
    if engine not in ENGINES:
        raise InputError(
            f"engine: expected one of {list(ENGINES)}, received {engine!r}",
            "leave it unset ('auto') for the current revision's engine",
        )
    if engine == "dense" or not isinstance(Ts, TensorOperator):
        return False
    return engine == "krylov" or Ts.shape[1] >= LARGE_N


def _hessian_at(
    Ts: TensorOperator,
    X: FloatArray,
    deflation: Deflation | None = None,
    Ut32: FloatArray | None = None,
) -> Any:
    """``Y ↦ (T x^{p-2}) y`` of the implicitly deflated operator for ``X``, ``Y (B, S, n)``:
    ``(B, S, n)``, the deflation terms one matrix product, ``O(S·n·k)``; what depends on ``X``
    only is computed once. ``Ut32 (B, k, n)``: the deflation's terms in single precision, which
    the terms' part of each product then runs against (the spectral starts' Lanczos products
    under ``spectral_precision="single"``; the coefficients still from the double terms)."""
    p = Ts.ndim - 1
    base = Ts.hessian_at(X)
    if deflation is None:
        return base
    sign, U, lam = deflation.sign, deflation.U, deflation.lam
    if lam.shape[-1] == 0:
        return base if sign > 0 else (lambda Y: -base(Y))
    Cx = ipow(np.matmul(X, U), p - 2) * lam[:, None, :]
    if Ut32 is not None:  # the terms' part in single precision, in blocks of half the bytes
        rows = max(_FUSED_MIN_ROWS, int(deflation.block or DEFLATION_BLOCK) // (4 * U.shape[1]))
        Ut, C = Ut32, Cx.astype(np.float32)
    else:
        rows = _fused_rows(deflation, X.shape[1])  # the terms' rows contiguous: a view where
        Ut, C = (np.ascontiguousarray(U.transpose(0, 2, 1)) if rows else None), Cx  # Uᵀ is kept
    if rows:

        def fused(Y: FloatArray) -> FloatArray:
            out = base(Y)
            if sign < 0:
                out = -out
            return out - _fused_terms(Y, Ut, rows, lambda Z, i, a, b: _scaled(Z, C[i, :, a:b]))

        return fused
    Ut = U.transpose(0, 2, 1)

    def apply(Y: FloatArray) -> FloatArray:
        out = base(Y)
        if sign < 0:
            out = -out
        return out - np.matmul(Cx * np.matmul(Y, U), Ut)

    return apply


def _scaled(Z: FloatArray, c: FloatArray) -> FloatArray:
    """``Z * c``, in place."""
    Z *= c
    return Z


def _fused_rows(deflation: Deflation, S: int) -> int | None:
    """Terms per block of a fused deflated product of ``S`` vectors (:data:`DEFLATION_BLOCK`),
    or ``None`` where the product runs as two whole matrix products: no ``block`` set, ``S``
    outside :data:`_FUSED_VECTORS`, or terms of at most one and a half blocks, which a core's
    cache holds whole anyway (there the blocks' overhead made it 10-20 % slower; micro-measured
    at n = 512 and 1024)."""
    n, k = deflation.U.shape[1], deflation.U.shape[2]
    if deflation.block is None or not _FUSED_VECTORS[0] <= S <= _FUSED_VECTORS[1]:
        return None
    if 2 * 8 * n * k <= 3 * int(deflation.block):
        return None
    return max(_FUSED_MIN_ROWS, int(deflation.block) // (8 * n))


def _fused_terms(Y: FloatArray, Ut: FloatArray, rows: int, coef: Any) -> FloatArray:
    """``Σ_j u_j · coef(Y·u_j)`` for ``Y (B, S, n)`` and the terms ``Ut (B, k, n)`` (rows
    contiguous), ``rows`` terms at a time, each block's two products reading it once from
    memory: ``(B, S, n)`` in double. ``coef(Z, i, a, b)`` maps instance ``i``'s block
    ``Z = Y[i]·U[i][:, a:b]`` (``(S, b - a)``) to its coefficients (it may overwrite ``Z``).

    The products run in ``Ut``'s precision: single-precision terms (the spectral starts'
    Lanczos products under ``spectral_precision="single"``) take half the bytes per term, and
    each product's error is then about 1e-7 of the terms' part, far below the spectral starts'
    Lanczos tolerance (:data:`SPECTRAL_TOL`). Micro-measured at n = 1024, 3 vectors, one BLAS
    thread: 0.19 ms at k = 512 and 0.49 ms at k = 1024 in single against 0.54 and 1.02 ms in
    double."""
    B, k = Ut.shape[0], Ut.shape[1]
    out = np.empty(Y.shape)
    acc = np.empty(Y.shape[1:], dtype=Ut.dtype)
    tmp = np.empty(Y.shape[1:], dtype=Ut.dtype)
    for i in range(B):  # one instance in practice: 2-d products, no batch loop per block
        y, u = Y[i].astype(Ut.dtype, copy=False), Ut[i]
        acc[...] = 0.0
        for a in range(0, k, rows):
            b = min(k, a + rows)
            block = u[a:b]
            z = coef(np.matmul(y, block.T), i, a, b)
            acc += np.matmul(z, block, out=tmp)
        out[i] = acc
    return out


def deflated_contract(
    Ts: FloatArray, X: FloatArray, times: int, deflation: Deflation | None = None
) -> FloatArray:
    """:func:`~sroa_dist.tensors.contract` of the (implicitly deflated) tensors.

    The deflation terms cost ``O(S n k)`` (vectors) or ``O(S n² k)`` (matrices) on top of the
    one GEMM against ``T̂``; without a deflation this is exactly ``contract``.
    """
    matrix_free = isinstance(Ts, TensorOperator)
    if deflation is None and not matrix_free:
        return contract(Ts, X, times)
    B, n, p = Ts.shape[0], Ts.shape[1], Ts.ndim - 1
    # By symmetry any axes may be contracted; these orders stream T once in the layout BLAS
    # reads fastest (benchmarks/bench_large_n.py times them against `contract`).
    if matrix_free:
        out = Ts.contract(X, times)  # a matrix-free operator contracts itself
        if deflation is None:
            return out
    elif times == p - 2:
        K = kron_power(X, times)  # T(I, I, x, …) over the leading axes
        out = np.matmul(K, Ts.reshape(B, n**times, n * n)).reshape(X.shape[:2] + (n, n))
    elif times == p - 1 and p == 3:
        out = np.matmul(kron_power(X, 2), Ts.reshape(B, n * n, n))
    elif times == p - 1:
        # Stacked GEMMs T[i] (n × n^{p-2}) @ x^{⊗(p-2)}, then Σ_i x_i: no (S, n^{p-1}) Kronecker
        # power (as large as T itself when S = n at p = 4).
        K = kron_power(X, p - 2).transpose(0, 2, 1)[:, None]  # (B, 1, n^{p-2}, S)
        Y = np.matmul(Ts.reshape(B, n, n, n ** (p - 2)), K)  # (B, i, a, S)
        out = np.einsum("bias,bsi->bsa", Y, X)
    else:
        out = contract(Ts, X, times)
    if deflation.sign < 0:
        out = -out
    if deflation.lam.shape[-1] == 0:
        return out
    U, lam = deflation.U, deflation.lam
    rows = _fused_rows(deflation, X.shape[1]) if times == p - 1 else None
    if rows:
        Ut = np.ascontiguousarray(U.transpose(0, 2, 1))
        return out - _fused_terms(
            X, Ut, rows, lambda C, i, a, b: ipow(C, times) * lam[i, None, a:b]
        )
    C = np.matmul(X, U)  # (B, S, k): v̂_j · x
    W = ipow(C, times) * lam[:, None, :]
    if times == p:
        return out - W.sum(axis=-1)
    if times == p - 1:
        return out - np.matmul(W, U.transpose(0, 2, 1))
    if times == p - 2:
        return out - np.einsum("bsk,bik,bjk->bsij", W, U, U)
    raise InputError(
        f"times: implicit deflation supports times >= p - 2, received {times}",
        "contract at least p - 2 times under implicit deflation",
    )


def random_starts(rngs: Sequence[np.random.Generator], n_starts: int, n: int) -> FloatArray:
    """Starts uniform on the sphere, drawn from each instance's own stream: ``(B, S, n)``."""
    X = np.stack([g.standard_normal((n_starts, n)) for g in rngs])
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def spectral_starts(
    Ts: FloatArray,
    rngs: Sequence[np.random.Generator],
    n_starts: int,
    deflation: Deflation | None = None,
    engine: str = "auto",
    low_end_dim: int | None = None,
    drop: bool = False,
    tol: float = CONVERGED_SPECTRAL,
) -> FloatArray:
    """Top eigenvectors (both signs of the extreme eigenvalues) of random contractions
    ``T(I, I, θ, …, θ)``: each matrix is dominated by the components ``v_i`` with large
    ``λ_i (v_i·θ)^{p-2}``, so its extreme eigenvectors start next to large components, which
    uniform starts rarely do when n is large. ``(B, n_starts, n)``. ``engine``
    (:data:`ENGINES`): by Lanczos on Hessian-vector products where :func:`large_engine`,
    else by a dense eigensolve of each formed matrix. ``low_end_dim`` (large-n engine, even
    p): the Krylov dimension from which the lower end is accepted unconverged
    (:data:`LOW_END_DIM`; ``None``: converged like the upper end). ``drop`` (large-n engine):
    the Lanczos variant ``"own"`` (:data:`LANCZOS_VARIANTS`; ``False``: ``"lockstep"``).
    ``tol`` (large-n engine): the residual, relative to the largest Ritz value, at which an
    extreme pair is accepted (:data:`SPECTRAL_TOL`; default :data:`CONVERGED_SPECTRAL`)."""
    theta = random_starts(rngs, -(-n_starts // 2), Ts.shape[1])
    return contraction_starts(Ts, theta, deflation, engine, low_end_dim, drop, tol)[:, :n_starts]


def contraction_starts(
    Ts: FloatArray,
    theta: FloatArray,
    deflation: Deflation | None = None,
    engine: str = "auto",
    low_end_dim: int | None = None,
    drop: bool = False,
    tol: float = CONVERGED_SPECTRAL,
) -> FloatArray:
    """The spectral starts of the given contraction vectors ``theta (B, S, n)`` (see
    :func:`spectral_starts`): the eigenvectors of the highest eigenvalue of each
    ``T(I, I, θ, …)``, then those of the lowest, ``(B, 2S, n)``, unit norm."""
    hi, lo = _spectral_ends(Ts, theta, deflation, engine, low_end_dim, drop, tol)
    X = np.concatenate([hi, lo], axis=1)
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def shared_spectral_starts(
    Ts: FloatArray,
    rngs: Sequence[np.random.Generator],
    n_starts: int,
    check_theta: FloatArray,
    deflation: Deflation | None = None,
    engine: str = "auto",
    low_end_dim: int | None = None,
    drop: bool = False,
    tol: float = CONVERGED_SPECTRAL,
) -> tuple[FloatArray, FloatArray]:
    """:func:`spectral_starts` (the same draws from ``rngs``) and, from the same run, the
    spectral starts of the contractions ``check_theta (B, C, n)`` (the step's global check's,
    :attr:`Deflation.check_theta`): ``(B, n_starts, n)`` and ``(B, 2C, n)`` (the highest
    ends, then the lowest). The step's and its check's matrices are eigensolved together: one
    Lanczos run in lockstep (each product one pass over the deflation terms for all of them)
    instead of two runs per step. Under ``drop=False`` (``lanczos="lockstep"``, revision 7)
    the run continues until every matrix's ends have converged, so the step's own starts
    differ from :func:`spectral_starts`' by rounding, not in what they are; under ``drop``
    (``"own"``, revision 8) each matrix leaves the run once converged, where its own would."""
    S = -(-n_starts // 2)
    theta = np.concatenate([random_starts(rngs, S, Ts.shape[1]), check_theta], axis=1)
    A = contraction_starts(Ts, theta, deflation, engine, low_end_dim, drop, tol)
    hi, lo = A[:, : theta.shape[1]], A[:, theta.shape[1] :]
    X = np.concatenate([hi[:, :S], lo[:, :S]], axis=1)[:, :n_starts]
    return X, np.concatenate([hi[:, S:], lo[:, S:]], axis=1)


def _spectral_ends(
    Ts: FloatArray,
    theta: FloatArray,
    deflation: Deflation | None,
    engine: str,
    low_end_dim: int | None,
    drop: bool = False,
    tol: float = CONVERGED_SPECTRAL,
) -> tuple[FloatArray, FloatArray]:
    """The eigenvectors of the highest and of the lowest eigenvalue of each ``T(I, I, θ, …)``
    (``theta (B, S, n)``): ``(B, S, n)`` each (see :func:`spectral_starts`)."""
    p = Ts.ndim - 1
    # T(I, I, θ, ...) = Σ_i λ_i (v_i·θ)^{p-2} v_i v_iᵀ + noise: both extreme eigenvalues.
    zero = _ZERO_RTOL
    if large_engine(Ts, engine):
        w, ends = _extreme_pairs(Ts, theta, deflation, None if p % 2 else low_end_dim, drop, tol)
        if deflation is not None and deflation.single:
            zero = _ZERO_RTOL_SINGLE
    else:
        w, V = np.linalg.eigh(deflated_contract(Ts, theta, p - 2, deflation))
        ends = [V[..., -1], V[..., 0]]
    # An extreme eigenvalue that is zero (a tensor of rank below n, no negative part) has an
    # eigenvector in the null space, where T x^{p-1} = 0 and no ascent can start: θ instead.
    scale = np.max(np.abs(w), axis=-1)
    for k, col in enumerate((-1, 0)):
        null = np.abs(w[..., col]) <= zero * scale
        if np.any(null):
            ends[k] = np.where(null[..., None], theta, ends[k])
    return ends[0], ends[1]


#: An extreme eigenvalue within this fraction of the largest is zero (its eigenvector lies in
#: the null space, where no ascent can start), in double precision; with the deflation terms in
#: single precision (``spectral_precision="single"``) a deflated direction's eigenvalue, 0 in
#: exact arithmetic, comes out near 1e-8 of the terms' part, so there the test is looser.
_ZERO_RTOL, _ZERO_RTOL_SINGLE = 1e-12, 1e-5
#: The large-n spectral starts' Krylov space (no restarts) stops at this dimension (the
#: residual tolerance is the method's ``spectral_tol``, :data:`SPECTRAL_TOL`).
_LANCZOS_MAX_DIM = 400


def _extreme_pairs(
    Ts: TensorOperator,
    theta: FloatArray,
    deflation: Deflation | None,
    low_end_dim: int | None,
    drop: bool = False,
    tol: float = CONVERGED_SPECTRAL,
) -> tuple[FloatArray, list[FloatArray]]:
    """Both extreme eigenpairs of each ``T(I, I, θ, …)`` (implicitly deflated) by Lanczos on
    the products ``y ↦ T(θ, …, θ, y, ·)`` (:func:`_lanczos_extremes`, started from ``θ``
    itself, so the result is a pure function of the inputs): ``O(n·R)`` per product instead of
    a dense ``n × n`` eigensolve per matrix, the matrices of one instance in lockstep (one
    block product per Lanczos step; ``drop``: the variant ``"own"`` of
    :data:`LANCZOS_VARIANTS`, a matrix leaves the block once its pairs have converged).
    Returns eigenvalues ``(B, S, 2)`` (lowest, highest) and the eigenvectors of the highest
    and of the lowest, ``(B, S, n)`` each."""
    B, S, n = theta.shape
    w = np.empty((B, S, 2))
    hi, lo = np.empty((B, S, n)), np.empty((B, S, n))
    for b in range(B):
        Tb, db = Ts.take([b]), None if deflation is None else deflation.take([b])
        Ut32 = None
        if db is not None and db.single and db.lam.shape[-1]:
            Ut32 = np.ascontiguousarray(db.U.transpose(0, 2, 1), dtype=np.float32)

        def restrict(rows: Any, Tb: Any = Tb, db: Any = db, b: int = b, Ut32: Any = Ut32) -> Any:
            """The products of the matrices ``rows`` only (theirs, in that order)."""
            H = _hessian_at(Tb, theta[b : b + 1, rows], db, Ut32)
            return lambda Y: H(Y[None])[0]

        w[b], lo[b], hi[b] = _lanczos_extremes(
            restrict(slice(None)), theta[b], low_end_dim, restrict if drop else None, tol
        )
    return w, [hi, lo]


def _lanczos_extremes(
    apply: Any,
    V0: FloatArray,
    low_end_dim: int | None = None,
    restrict: Any = None,
    tol: float = CONVERGED_SPECTRAL,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Extreme eigenpairs of ``S`` symmetric matrices ``M_s`` known by ``apply(Y) = (M_s y_s)_s``
    (``Y (S, n)``), by Lanczos with full reorthogonalisation (twice, so the basis stays
    orthonormal to rounding) from the rows of ``V0``, run in lockstep until every matrix's
    lowest and highest Ritz pairs have residual ``<= tol · max |Ritz value|`` (or the
    space is invariant, or ``_LANCZOS_MAX_DIM``); from dimension ``low_end_dim`` on only the
    highest pair has to meet that test (:data:`LOW_END_DIM`). ``restrict(rows)``, given: the
    ``apply`` of the matrices ``rows`` (indices into the ``S``) alone, and the run is
    ``sshopm``'s ``lanczos="own"`` (revision 8, :data:`LANCZOS_VARIANTS`): a matrix whose pairs
    have converged leaves the lockstep block at that test, so each stops where a run of its own
    would and the others' products no longer pay for it (a product of three vectors against
    the deflation terms costs about 2.4 times one), and each new vector is reorthogonalised
    once, twice only where the Kahan–Parlett test asks. Returns eigenvalues ``(S, 2)``
    (lowest, highest) and the two eigenvectors ``(S, n)`` each."""
    S, n = V0.shape
    m_max = min(n, _LANCZOS_MAX_DIM)
    # The basis grows by doubling from what a run usually needs: a buffer for the largest
    # dimension (10 MB at n = 1024) cost 0.6 ms per run to allocate, more than a product.
    Q = np.empty((S, min(m_max, _LANCZOS_FIRST_DIM) + 1, n))
    alpha, beta = np.zeros((S, m_max)), np.zeros((S, m_max))
    Q[:, 0] = V0 / np.linalg.norm(V0, axis=1, keepdims=True)
    live = np.ones(S, dtype=bool)  # Krylov space not yet invariant
    done = np.zeros(S, dtype=bool)
    rows = np.arange(S)  # the matrix of each working row
    w = np.empty((S, 2))
    lo, hi = np.empty((S, n)), np.empty((S, n))
    m = 0
    while m < m_max:
        W = apply(Q[:, m])
        alpha[:, m] = np.sum(W * Q[:, m], axis=1)
        if restrict is None:
            for _ in range(2):
                C = np.matmul(Q[:, : m + 1], W[:, :, None])  # (S, m+1, 1)
                W -= np.matmul(Q[:, : m + 1].transpose(0, 2, 1), C)[..., 0]
            b = _norms(W)
        else:
            b = _reorthogonalised(W, Q, alpha, beta, m)
        m += 1
        if m == Q.shape[1]:
            Q = _grown(Q, m, min(m_max, 2 * (m - 1)) + 1)
        # A space that stopped growing is invariant: its Ritz pairs are eigenpairs.
        live &= b > 1e-13 * (np.abs(alpha[:, :m]).max(axis=1) + 1e-300)
        if live.all():  # the same numbers as the masked form below, without its temporaries
            beta[:, m - 1] = b
            np.divide(W, b[:, None], out=Q[:, m])
        else:
            beta[:, m - 1] = np.where(live, b, 0.0)
            Q[:, m] = np.where(live[:, None], W / np.where(live, b, 1.0)[:, None], 0.0)
        if m == m_max or not live.any() or (m >= 16 and m % 8 == 0):
            high_only = low_end_dim is not None and m >= low_end_dim
            done |= ~live | _ritz_converged(alpha[:, :m], beta[:, :m], high_only, tol)
            if done.all():
                break
            if restrict is not None and done.any():
                _ritz_pairs(np.flatnonzero(done), rows, m, Q, alpha, beta, live, w, lo, hi)
                keep = ~done
                Q, alpha, beta = Q[keep], alpha[keep], beta[keep]
                live, done, rows = live[keep], done[keep], rows[keep]
                apply = restrict(rows)
    _ritz_pairs(np.arange(len(rows)), rows, m, Q, alpha, beta, live, w, lo, hi)
    return w, lo, hi


#: The Lanczos basis's first capacity (it doubles when a run needs more, up to
#: ``_LANCZOS_MAX_DIM``): the Krylov dimension a spectral start of the tilt usually needs.
_LANCZOS_FIRST_DIM = 96


def _grown(Q: FloatArray, m: int, rows: int) -> FloatArray:
    """The basis ``Q (S, ·, n)`` with its first ``m`` vectors in a buffer of ``rows``."""
    out = np.empty((Q.shape[0], rows, Q.shape[2]))
    out[:, :m] = Q[:, :m]
    return out


def _reorthogonalised(
    W: FloatArray, Q: FloatArray, alpha: FloatArray, beta: FloatArray, m: int
) -> FloatArray:
    """``W`` (in place) after the three-term step and one pass of Gram–Schmidt against the
    basis ``Q[:, :m+1]``, and a second pass for the rows where the first removed more than
    ``1 − 1/√2`` of the norm (``lanczos="own"``, :data:`LANCZOS_VARIANTS`): its norms ``(S,)``."""
    W -= alpha[:, m, None] * Q[:, m]
    if m:
        W -= beta[:, m - 1, None] * Q[:, m - 1]
    before = _norms(W)
    C = np.matmul(Q[:, : m + 1], W[:, :, None])
    W -= np.matmul(Q[:, : m + 1].transpose(0, 2, 1), C)[..., 0]
    b = _norms(W)
    again = np.flatnonzero(b * math.sqrt(2.0) < before)
    if again.size:
        C = np.matmul(Q[again, : m + 1], W[again, :, None])
        W[again] -= np.matmul(Q[again, : m + 1].transpose(0, 2, 1), C)[..., 0]
        b[again] = _norms(W[again])
    return b


def _ritz_pairs(
    which: Any,
    rows: Any,
    m: int,
    Q: FloatArray,
    alpha: FloatArray,
    beta: FloatArray,
    live: Any,
    w: FloatArray,
    lo: FloatArray,
    hi: FloatArray,
) -> None:
    """The extreme Ritz pairs of the working rows ``which`` of a Lanczos run at dimension ``m``
    into ``w``, ``lo`` and ``hi`` at their matrices ``rows[which]``."""
    for s in which:
        k = m if live[s] else int(np.count_nonzero(beta[s, :m])) + 1
        vals, Y = np.linalg.eigh(_tridiagonal(alpha[s, :k], beta[s, : k - 1]))
        X = Y[:, [0, -1]].T @ Q[s, :k]
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        t = rows[s]
        w[t], lo[t], hi[t] = vals[[0, -1]], X[0], X[1]


#: Above this Krylov dimension the convergence test computes only the two extreme Ritz pairs
#: (O(m) each) instead of a batched dense eigensolve (O(m³)): the clustered lower end of an even
#: order's ``T(I, I, θ, θ)`` keeps Lanczos running to large m.
_RITZ_DENSE_MAX = 48


def _ritz_converged(
    alpha: FloatArray, beta: FloatArray, high_only: bool = False, tol: float = CONVERGED_SPECTRAL
) -> NDArray[np.bool_]:
    """Whether both extreme Ritz pairs (``high_only``: the highest) of each Lanczos tridiagonal
    (``alpha (S, m)``, ``beta (S, m)``, the last entry the residual norm) have residual
    ``<= tol · max |Ritz value|``: ``(S,)``."""
    S, m = alpha.shape
    if m <= _RITZ_DENSE_MAX:
        vals, Y = np.linalg.eigh(_tridiagonal(alpha, beta[:, :-1]))
        res = np.abs(beta[:, -1, None] * Y[:, -1, [0, -1]])
        scale = np.abs(vals).max(axis=1, keepdims=True) + 1e-300
        ok = res <= tol * scale
        return ok[:, 1] if high_only else np.all(ok, axis=1)
    from scipy.linalg import eigh_tridiagonal

    out = np.empty(S, dtype=bool)
    for s in range(S):
        ends = [
            eigh_tridiagonal(alpha[s], beta[s, :-1], select="i", select_range=(i, i))
            for i in (0, m - 1)
        ]
        vals = np.array([e[0][0] for e in ends])
        res = np.abs(beta[s, -1] * np.array([e[1][-1, 0] for e in ends]))
        ok = res <= tol * (np.abs(vals).max() + 1e-300)
        out[s] = bool(ok[1] if high_only else ok.all())
    return out


def _tridiagonal(a: FloatArray, b: FloatArray) -> FloatArray:
    """The symmetric tridiagonal matrices ``(..., m, m)`` with diagonals ``a`` and ``b``
    (a batched dense eigensolve of these small matrices costs less than a call per matrix)."""
    m = a.shape[-1]
    T = np.zeros(a.shape[:-1] + (m, m))
    i = np.arange(m)
    T[..., i, i] = a
    T[..., i[:-1], i[1:]] = b
    T[..., i[1:], i[:-1]] = b
    return T


def deflated_values(
    Ts: FloatArray, X: FloatArray, deflation: Deflation | None = None
) -> tuple[FloatArray, FloatArray]:
    """Gradients ``G = T x^{p-1}`` (B, S, n) and values ``T x^p`` (B, S) of the (implicitly
    deflated) tensors at the unit starts ``X`` (B, S, n): shared by the methods and by SROA's
    global check, which must score points exactly as the ascent does."""
    G = deflated_contract(Ts, X, Ts.ndim - 2, deflation)
    return G, np.sum(G * X, axis=-1)


def shifted_ascent(
    Ts: FloatArray,
    X0: FloatArray,
    *,
    max_iter: int,
    tol: float,
    shift: str | float = "adaptive",
    deflation: Deflation | None = None,
    lazy: bool = False,
    abandon_margin: float = math.inf,
    kernel: str = "dense",
) -> tuple[FloatArray, FloatArray, NDArray[np.int64]]:
    """Shifted symmetric higher-order power method, batched: maximise ``T x^p`` from each start.

    Iterates ``x ← normalize(T x^{p-1} + α x)``. With ``shift="adaptive"`` (Kolda & Mayo,
    SIAM J. Matrix Anal. Appl. 2014) the shift is ``α = max(0, τ − (p−1) λ_min(T x^{p−2}))``,
    which makes ``T x^p + α‖x‖^p`` locally convex so ``T x^p`` increases monotonically. With
    ``shift="monotone"`` no eigenvalues are computed: each start keeps its own shift, halves it
    after an ascent step and doubles it after a rejected (descending) step, which gives the same
    monotonicity guarantee at the cost of one contraction per step. A float is a fixed shift
    (SS-HOPM). Each instance stops once all its starts moved less than ``tol``.

    With a :class:`Deflation` the tensors are ``sign·(T̂ − Σ λ̂_j v̂_j^{⊗p})`` (never formed)
    and converged starts drop out of the GEMM, so a step costs what its live starts cost.
    ``lazy`` (deflated only) stops an instance as soon as its best converged start is at least
    as high as every unconverged one: the unconverged starts are returned where they are, to be
    continued as the next SROA step's warm starts, instead of being finished now.
    ``abandon_margin`` (formed tensors only): an instance stops once it has a converged start
    and every start still climbing is more than ``abandon_margin·|best|`` below the best
    converged value. Such starts wander the flat region between components (late SROA steps,
    where the residual holds one or two components and noise) for up to ``max_iter``
    iterations; ``inf`` never abandons them. ``kernel`` (formed tensors only):
    ``"symmetric"`` contracts p = 3 tensors over their ``n(n+1)/2`` distinct index pairs
    (:class:`_Gradients`), ``"dense"`` over all ``n²`` (the unfolding GEMM); ``"packed"`` is
    the symmetric contraction with the iterates held coordinates first (:func:`_ascent_packed`,
    p = 3 with a shift other than ``"adaptive"``; otherwise ``"symmetric"``): the same iterates
    up to rounding, at 1.2-1.5 times the throughput (Figure 2). Other orders use the dense kernel.

    Returns ``X (B, S, n)``, ``f (B, S)`` and iterations per instance ``(B,)``.
    """
    if deflation is not None:
        return ascent_deflated(Ts, X0, max_iter, tol, shift, deflation, lazy)[:3]
    if kernel not in KERNELS:
        raise InputError(
            f"kernel: expected one of {list(KERNELS)}, received {kernel!r}",
            "use one of the listed kernels",
        )
    formed_p3 = Ts.ndim == 4 and not isinstance(Ts, TensorOperator)
    if kernel == "packed" and formed_p3 and shift != "adaptive":
        return _ascent_packed(Ts, X0, max_iter, tol, shift, abandon_margin)
    B, S, n = X0.shape
    p = Ts.ndim - 1
    X = X0.copy()
    grads = _Gradients(Ts, kernel)
    G, F = grads.values(np.arange(B), X)
    scale, cap, alpha = _shift_state(Ts, F, shift)
    n_iter = np.zeros(B, dtype=np.int64)
    active = np.arange(B)
    done = np.zeros((B, S), dtype=bool)
    slack = 64 * np.finfo(float).eps
    for _ in range(max_iter):
        if active.size == 0:
            break
        # A slice while every instance is active: views, not copies.
        sel = slice(None) if active.size == B else active
        Xa, Ga, Fa = X[sel], G[sel], F[sel]
        if shift == "adaptive":
            H = contract(Ts if active.size == B else Ts[active], Xa, p - 2)
            lmin = np.linalg.eigvalsh(H)[..., 0]
            a = np.maximum(0.0, 1e-6 * scale[sel] - (p - 1) * lmin)
        else:
            a = alpha[sel]
        Y = Ga + a[..., None] * Xa
        Y /= _norms(Y, keepdims=True)
        Gy, Fy = grads.values(active, Y)
        accept = (Fy >= Fa - slack * scale[sel]) & ~done[sel]
        step = _norms(Y - Xa)
        X[sel] = np.where(accept[..., None], Y, Xa)
        G[sel] = np.where(accept[..., None], Gy, Ga)
        F[sel] = np.where(accept, Fy, Fa)
        if shift == "monotone":
            alpha[sel] = _monotone_shift(a, accept, scale[sel], cap[sel])
        done[sel] |= accept & (step <= tol)
        n_iter[sel] += 1
        active = active[~_stopped(done[sel], F[sel], abandon_margin)]
    return X, F, n_iter


def _shift_state(
    Ts: FloatArray, F: FloatArray, shift: str | float
) -> tuple[FloatArray, FloatArray, FloatArray | None]:
    """``(scale (B, 1), cap (B, 1), alpha (B, S))`` of an ascent from values ``F (B, S)``: the
    value scale of the tolerances, the largest shift and the starting shifts (``None`` for the
    adaptive shift, which is computed each step)."""
    B, p = len(Ts), Ts.ndim - 1
    tiny = np.finfo(float).tiny
    scale = np.max(np.abs(F), axis=1, keepdims=True) + tiny
    # (p-1)·‖T‖_F ≥ (p-1)·‖T‖ makes T x^p + α‖x‖^p convex, so a larger shift is never needed.
    cap = (p - 1) * np.linalg.norm(Ts.reshape(B, -1), axis=1)[:, None] + tiny
    if shift == "adaptive":
        return scale, cap, None
    alpha = np.zeros(F.shape) if shift == "monotone" else np.full(F.shape, float(shift))
    return scale, cap, alpha


def _monotone_shift(
    a: FloatArray, accept: NDArray[np.bool_], scale: FloatArray, cap: FloatArray
) -> FloatArray:
    """The monotone shift's next values: halved after an accepted step, doubled (at least half
    the value scale, at most ``cap``) after a rejected one."""
    return np.where(accept, 0.5 * a, np.minimum(np.maximum(2.0 * a, 0.5 * scale), cap))


def _stopped(done: NDArray[np.bool_], F: FloatArray, abandon_margin: float) -> NDArray[np.bool_]:
    """Instances ``(A,)`` whose ascent ends: every start converged (``done (A, S)``), or, with
    a finite ``abandon_margin``, every start still climbing is more than that fraction of the
    best converged value below it (values ``F (A, S)``)."""
    finished = np.all(done, axis=1)
    if abandon_margin < math.inf:
        best = np.max(np.where(done, F, -np.inf), axis=1)
        climbing = np.max(np.where(done, -np.inf, F), axis=1)
        with np.errstate(invalid="ignore"):  # no converged start yet: -inf, never stops
            finished |= climbing < best - abandon_margin * np.abs(best)
    return finished


def _norms(X: FloatArray, keepdims: bool = False) -> FloatArray:
    """Euclidean norms along the last axis: ``np.linalg.norm(X, axis=-1)``'s arithmetic (the
    same bits) without its argument handling, which costs more than the sums at these sizes."""
    return np.sqrt(np.add.reduce(X * X, axis=-1, keepdims=keepdims))


class _Gradients:
    """``(T x^{p-1}, T x^p)`` of formed tensors for the instances still ascending, keeping
    their copy of the tensors until that set shrinks (indexing copies every tensor).

    ``kernel="symmetric"`` (p = 3): ``T x² = Σ_{j<=k} w_jk T[:, j, k] x_j x_k`` with ``w = 2``
    off the diagonal, one GEMM against the ``n(n+1)/2`` distinct products ``x_j x_k`` instead of
    the ``n²`` of the Kronecker square: 45 % fewer multiplications at n = 10 and half the
    memory traffic, the same values up to rounding. Other orders use the dense kernel.
    ``"packed"`` reaches this class only where its own loop does not apply: with the adaptive
    shift it runs as ``"symmetric"``, on other orders and operators as ``"dense"``.
    """

    def __init__(self, Ts: FloatArray, kernel: str) -> None:
        formed = not isinstance(Ts, TensorOperator)
        self.symmetric = kernel != "dense" and Ts.ndim == 4 and formed
        if self.symmetric:
            Ts, *self.pairs = _packed_tensors(Ts)  # (B, n, m)
        self.all, self.rows = Ts, len(Ts)
        self.sub = Ts

    def values(self, rows: NDArray[np.intp], X: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Gradients ``(len(rows), S, n)`` and values ``(len(rows), S)`` at ``X``; ``rows``
        only ever shrinks between calls."""
        if rows.size != self.rows:
            self.sub = self.all if rows.size == len(self.all) else self.all[rows]
            self.rows = rows.size
        if not self.symmetric:
            return deflated_values(self.sub, X)
        # Coordinates first: the pair products are rows of S contiguous numbers.
        Xt = np.ascontiguousarray(X.transpose(0, 2, 1))  # (A, n, S)
        j, k = self.pairs
        K = np.take(Xt, j, axis=1) * np.take(Xt, k, axis=1)  # (A, m, S)
        G = np.ascontiguousarray(np.matmul(self.sub, K).transpose(0, 2, 1))
        return G, np.sum(G * X, axis=-1)


def ascent_deflated(
    Ts: FloatArray,
    X0: FloatArray,
    max_iter: int,
    tol: float,
    shift: str | float,
    deflation: Deflation,
    lazy: bool,
    floor: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray, NDArray[np.int64], FloatArray]:
    """:func:`shifted_ascent` on implicitly deflated tensors, one instance at a time (large n:
    the GEMM dominates and a per-instance loop costs nothing) so that converged starts stop
    costing contractions. Also returns the final gradients ``(B, S, n)`` (sign not applied);
    when ``deflation.warm_grad`` is given, the last ``W`` starts are the warm ones. ``floor``
    (B,): a value already attained elsewhere (the other sign), which a lazy stop counts as a
    converged start."""
    B, S, n = X0.shape
    p = Ts.ndim - 1
    X = X0.copy()
    F = np.empty((B, S))
    G = np.empty((B, S, n))
    n_iter = np.zeros(B, dtype=np.int64)
    slack = 64 * np.finfo(float).eps
    W = 0 if deflation.warm_grad is None else deflation.warm_grad.shape[1]
    for b in range(B):
        T1, d1 = Ts[b : b + 1], deflation.take([b])
        G1 = np.empty((S, n))
        if S > W:
            G1[: S - W] = deflated_values(T1, X[b : b + 1, : S - W], d1)[0][0]
        if W:
            G1[S - W :] = deflation.sign * deflation.warm_grad[b]
        F1 = np.sum(G1 * X[b], axis=-1)
        scale = np.max(np.abs(F1)) + np.finfo(float).tiny
        cap = (p - 1) * d1.fro[0] + np.finfo(float).tiny
        alpha = np.zeros(S) if shift in ("monotone", "adaptive") else np.full(S, float(shift))
        live = np.arange(S)
        for _ in range(max_iter):
            if live.size == 0:
                break
            if lazy:
                conv = np.ones(S, dtype=bool)
                conv[live] = False
                best = F1[conv].max(initial=-np.inf)
                if floor is not None:
                    best = max(best, floor[b])
                if best >= F1[live].max():
                    break
            Xa, Ga, Fa = X[b, live], G1[live], F1[live]
            if shift == "adaptive":
                H = deflated_contract(T1, Xa[None], p - 2, d1)[0]
                lmin = np.linalg.eigvalsh(H)[..., 0]
                a = np.maximum(0.0, 1e-6 * scale - (p - 1) * lmin)
            else:
                a = alpha[live]
            Y = Ga + a[:, None] * Xa
            Y /= _norms(Y, keepdims=True)
            Gy, Fy = deflated_values(T1, Y[None], d1)
            Gy, Fy = Gy[0], Fy[0]
            accept = Fy >= Fa - slack * scale
            step = _norms(Y - Xa)
            X[b, live] = np.where(accept[:, None], Y, Xa)
            G1[live] = np.where(accept[:, None], Gy, Ga)
            F1[live] = np.where(accept, Fy, Fa)
            if shift == "monotone":
                grown = np.minimum(np.maximum(2.0 * a, 0.5 * scale), cap)
                alpha[live] = np.where(accept, 0.5 * a, grown)
            n_iter[b] += 1
            live = live[~(accept & (step <= tol))]
        F[b], G[b] = F1, deflation.sign * G1
    return X, F, n_iter, G


def power_iterations(
    Ts: FloatArray, X: FloatArray, n_iter: int, deflation: Deflation | None = None
) -> FloatArray:
    """``n_iter`` unshifted power iterations ``x ← normalize(T x^{p-1})`` from every start."""
    for _ in range(n_iter):
        G = deflated_contract(Ts, X, Ts.ndim - 2, deflation)
        norm = np.linalg.norm(G, axis=-1, keepdims=True)
        X = np.where(norm > 0, G / np.where(norm > 0, norm, 1.0), X)
    return X


def newton_polish(
    Ts: FloatArray,
    x: FloatArray,
    *,
    steps: int = 4,
    deflation: Deflation | None = None,
    engine: str = "auto",
    rtol: float = EXACT_SOLVE,
) -> FloatArray:
    """Refine one candidate per instance to a Z-eigenvector by Newton steps on the sphere.

    Solves the bordered KKT system of ``T x^{p-1} = λ x, ‖x‖ = 1`` and keeps a step only when it
    does not move ``|T x^p|`` downhill (so a maximiser stays a maximiser). Shape ``(B, n)``.
    With a :class:`Deflation` (large n) each step costs one contraction ``T x^{p-2}`` instead
    of three, and a step below ``1e-8`` (already in the quadratic regime) ends the polish;
    where :func:`large_engine` (``engine``) its system is solved by MINRES on products, to the
    relative residual ``rtol`` (:data:`POLISH_RTOL`; the dense solves are exact).
    """
    if deflation is not None and large_engine(Ts, engine):
        return _polish_krylov(Ts, x, steps, deflation, rtol)
    if deflation is not None:
        return _polish_deflated(Ts, x, steps, deflation)
    B, n = x.shape
    p = Ts.ndim - 1
    x = x.copy()
    fx = contract(Ts, x[:, None, :], p)[:, 0]
    for _ in range(steps):
        H = contract(Ts, x[:, None, :], p - 2)[:, 0]
        g = np.einsum("bij,bj->bi", H, x)
        lam = np.sum(g * x, axis=-1)
        d = sphere_newton_step(H, g, lam, x, p)
        y = x + d[:, :n]
        y /= np.linalg.norm(y, axis=-1, keepdims=True)
        fy = contract(Ts, y[:, None, :], p)[:, 0]
        ok = np.isfinite(fy) & (np.abs(fy) >= np.abs(fx) - 1e-13 * (np.abs(fx) + 1e-300))
        ok &= np.sign(fy) * np.sign(fx) >= 0
        x = np.where(ok[:, None], y, x)
        fx = np.where(ok, fy, fx)  # T x^p at the new x, bit for bit, without contracting again
    return x


def _polish_deflated(Ts: FloatArray, x: FloatArray, steps: int, deflation: Deflation) -> Any:
    B, n = x.shape
    p = Ts.ndim - 1
    x = x.copy()
    H = deflated_contract(Ts, x[:, None, :], p - 2, deflation)[:, 0]
    for _ in range(steps):
        g = np.einsum("bij,bj->bi", H, x)
        lam = np.sum(g * x, axis=-1)
        d = sphere_newton_step(H, g, lam, x, p)[:, :n]
        size = np.linalg.norm(d, axis=-1)
        y = x + d
        y /= np.linalg.norm(y, axis=-1, keepdims=True)
        if np.all(size <= 1e-8):
            # Quadratic convergence: a step this small lands at rounding level and cannot
            # leave the maximiser's basin, so it is taken without paying for its check.
            return y
        Hy = deflated_contract(Ts, y[:, None, :], p - 2, deflation)[:, 0]
        fy = np.einsum("bi,bij,bj->b", y, Hy, y)
        ok = np.isfinite(fy) & (np.abs(fy) >= np.abs(lam) - 1e-13 * (np.abs(lam) + 1e-300))
        ok &= np.sign(fy) * np.sign(lam) >= 0
        x = np.where(ok[:, None], y, x)
        H = np.where(ok[:, None, None], Hy, H)
    return x


def _polish_krylov(
    Ts: TensorOperator, x: FloatArray, steps: int, deflation: Deflation, rtol: float = EXACT_SOLVE
) -> Any:
    """:func:`_polish_deflated` on a large operator: the same Newton steps on the sphere, with
    the same acceptance rule, the bordered system solved by MINRES on the tangent space
    (``P((p-1)H − λI)P dx = −(g − λx)``, ``P = I − xxᵀ``) from products ``H y``, never forming
    ``H = T x^{p-2}``. Near a maximiser of a nearly SOD tensor that operator is close to
    ``−λ·P`` (well conditioned), so a few products reach the relative tolerance ``1e-14``."""
    from scipy.sparse.linalg import LinearOperator, minres

    B, n = x.shape
    p = Ts.ndim - 1
    out = x.copy()
    for b in range(B):
        Tb, db = Ts.take([b]), deflation.take([b])
        xb = out[b].copy()
        g = deflated_contract(Tb, xb[None, None], p - 1, db)[0, 0]
        lam = float(g @ xb)
        for _ in range(steps):
            r = g - lam * xb
            H = _hessian_at(Tb, xb[None, None], db)

            def matvec(v: FloatArray, xb: FloatArray = xb, lam: float = lam, H: Any = H) -> Any:
                v = np.ravel(v)
                v = v - xb * (xb @ v)
                Hv = H(v[None, None])[0, 0]
                y = (p - 1) * Hv - lam * v
                return y - xb * (xb @ y)

            op = LinearOperator((n, n), matvec=matvec, dtype=float)
            d, _ = minres(op, -r, rtol=rtol, maxiter=10 * n)
            d = d - xb * (xb @ d)
            size = float(np.linalg.norm(d))
            y = xb + d
            y /= np.linalg.norm(y)
            if size <= 1e-8:
                xb = y  # quadratic regime: taken without its check, as _polish_deflated does
                break
            gy = deflated_contract(Tb, y[None, None], p - 1, db)[0, 0]
            fy = float(gy @ y)
            ok = np.isfinite(fy) and abs(fy) >= abs(lam) - 1e-13 * (abs(lam) + 1e-300)
            ok = ok and np.sign(fy) * np.sign(lam) >= 0
            if not ok:
                break  # the dense polish would keep x and retry the same step: it stays put
            xb, g, lam = y, gy, fy
        out[b] = xb
    return out


def _signed_problems(Ts: FloatArray) -> tuple[FloatArray, int]:
    """For even p, maximise both ``T x^p`` and ``−T x^p`` (stacked as ``2B`` problems)."""
    p = Ts.ndim - 1
    if p % 2 == 1:
        return Ts, 1
    return np.concatenate([Ts, -Ts]), 2


def _packed_tensors(Ts: FloatArray) -> tuple[FloatArray, NDArray[np.intp], NDArray[np.intp]]:
    """p = 3 tensors over their distinct index pairs ``j <= k``, weighted 2 off the diagonal:
    ``(B, n, n(n+1)/2)``, with the pairs."""
    n = Ts.shape[1]
    j, k = np.triu_indices(n)
    return np.ascontiguousarray(Ts[:, :, j, k] * np.where(j == k, 1.0, 2.0)), j, k


def _coordinate_sums(P: FloatArray) -> FloatArray:
    """``Σ_i P[i]`` over the leading (coordinate) axis of ``(n, A, S)``, accumulated in index
    order whatever A and S are, so an instance's bits do not depend on its batch. (numpy's
    reduce over a leading axis adds row after row, but sums a lone column pairwise.)"""
    if P[0].size > 1:
        return np.add.reduce(P, axis=0)
    out = P[0].copy()
    for row in P[1:]:
        out += row
    return out


def _packed_values(
    Tp: FloatArray, Xc: FloatArray, j: NDArray[np.intp], k: NDArray[np.intp]
) -> tuple[FloatArray, FloatArray]:
    """``(T x², T x³)`` in coordinates-first layout: ``Xc (n, A, S)`` → gradients ``(n, A, S)``
    and values ``(A, S)``, the sums over coordinates in index order."""
    n, A, S = Xc.shape
    if A * S >= _BLOCKED_PRODUCTS:
        # Row j's block x_j·x_{j..n-1} is contiguous in K: n products, no gathers.
        K = np.empty((j.size, A, S))
        lo = 0
        for a in range(n):
            np.multiply(Xc[a], Xc[a:], out=K[lo : lo + n - a])
            lo += n - a
    else:
        K = np.take(Xc, j, axis=0)
        K *= np.take(Xc, k, axis=0)  # (m, A, S): the distinct products x_j x_k
    G = np.empty_like(Xc)
    np.matmul(Tp, K.transpose(1, 0, 2), out=G.transpose(1, 0, 2))  # BLAS writes (n, A, S)
    return G, _coordinate_sums(G * Xc)


def _ascent_packed(
    Ts: FloatArray,
    X0: FloatArray,
    max_iter: int,
    tol: float,
    shift: str | float,
    abandon_margin: float,
) -> tuple[FloatArray, FloatArray, NDArray[np.int64]]:
    """:func:`shifted_ascent` of formed p = 3 tensors (``kernel="packed"``, shifts other than
    ``"adaptive"``): the distinct-pair GEMM of the symmetric kernel, with every iterate held
    coordinates first, ``(n, A, S)``, so each element-wise step and each sum over coordinates
    runs over contiguous rows of ``A·S`` numbers (in ``(A, S, n)`` a sum over 10 coordinates
    costs more than the GEMM). The sums over coordinates run in index order, so the values
    differ from the other kernels' by rounding. An instance's results are taken when it stops;
    its rows are dropped from the working arrays once a quarter of them have stopped."""
    B, S, n = X0.shape
    Tp, j, k = _packed_tensors(Ts)
    X, F = np.empty_like(X0), np.empty((B, S))
    Xc = np.ascontiguousarray(X0.transpose(2, 0, 1))
    Gc, Fc = _packed_values(Tp, Xc, j, k)
    scale, cap, alpha = _shift_state(Ts, Fc, shift)
    n_iter = np.zeros(B, dtype=np.int64)
    rows = np.arange(B)  # the instance of each working row
    live = np.ones(B, dtype=bool)  # working rows whose instance is still ascending
    done = np.zeros((B, S), dtype=bool)
    slack = 64 * np.finfo(float).eps
    iterations = 0
    while iterations < max_iter and live.any():
        iterations += 1
        Y = alpha * Xc
        Y += Gc
        Y /= np.sqrt(_coordinate_sums(Y * Y))
        Gy, Fy = _packed_values(Tp, Y, j, k)
        accept = (Fy >= Fc - slack * scale) & ~done
        D = Y - Xc
        step = np.sqrt(_coordinate_sums(D * D))
        np.copyto(Xc, Y, where=accept)
        np.copyto(Gc, Gy, where=accept)
        np.copyto(Fc, Fy, where=accept)
        if shift == "monotone":
            alpha = _monotone_shift(alpha, accept, scale, cap)
        done |= accept & (step <= tol)
        finished = _stopped(done, Fc, abandon_margin) & live
        if not finished.any():
            continue
        stopped = rows[finished]
        n_iter[stopped] = iterations
        X[stopped] = Xc[:, finished].transpose(1, 2, 0)
        F[stopped] = Fc[finished]
        live &= ~finished
        if 4 * np.count_nonzero(live) <= 3 * live.size:
            rows, Tp = rows[live], Tp[live]
            Xc, Gc = Xc[:, live], Gc[:, live]
            Fc, done, scale, cap, alpha = (v[live] for v in (Fc, done, scale, cap, alpha))
            live = live[live]
    last = rows[live]
    n_iter[last] = iterations
    X[last] = Xc[:, live].transpose(1, 2, 0)
    F[last] = Fc[live]
    return X, F, n_iter
