"""Dense symmetric tensors: construction, validation and batched contractions through BLAS."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "sod_tensor",
    "identity_basis",
    "random_orthonormal_basis",
    "symmetrize",
    "contract",
    "rank_one_tensor",
    "check_symmetric_tensor",
    "check_tensor_stack",
    "tensor_order",
]

FloatArray = NDArray[np.float64]

#: Relative tolerance for "symmetric" and "orthonormal" input checks.
SYMMETRY_RTOL = 1e-10


def tensor_order(T: NDArray, *, batched: bool = False) -> tuple[int, int]:
    """Return ``(n, p)`` of a cubical tensor (or stack of tensors when ``batched``)."""
    shape = T.shape[1:] if batched else T.shape
    if len(shape) == 0:
        raise ValueError("tensor: expected an array with p >= 3 axes, received a scalar")
    return int(shape[0]), len(shape)


def _as_float_array(x: ArrayLike, name: str) -> FloatArray:
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected a real numeric array ({exc})") from None
    return arr


def check_symmetric_tensor(T: ArrayLike, name: str = "T", *, batched: bool = False) -> FloatArray:
    """Validate a (stack of) dense symmetric tensor(s) and return it as float64.

    Raises a ``ValueError`` naming ``name`` when the array is not cubical, has order below 3,
    dimension below 2, non-finite entries, or is not symmetric under index permutations
    (relative tolerance ``SYMMETRY_RTOL`` of the largest entry).
    """
    arr = _as_float_array(T, name)
    shape = arr.shape[1:] if batched else arr.shape
    what = "a stack of tensors of shape (B, n, ..., n)" if batched else "a tensor of shape (n,)*p"
    if batched and arr.ndim == 0:
        raise ValueError(f"{name}: expected {what}, received a scalar")
    if len(shape) < 3:
        raise ValueError(
            f"{name}: expected {what} with order p >= 3, received shape {arr.shape} "
            f"(order {len(shape)})"
        )
    if len(set(shape)) != 1:
        raise ValueError(
            f"{name}: expected a cubical tensor (all axes equal), received {arr.shape}"
        )
    if shape[0] < 2:
        raise ValueError(f"{name}: expected dimension n >= 2, received n = {shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or infinite entries")
    p = len(shape)
    off = 1 if batched else 0
    # max |entry| from max and min: no full-size temporary of |arr|.
    scale = max(float(np.max(arr, initial=0.0)), -float(np.min(arr, initial=0.0)))
    scale = max(scale, np.finfo(float).tiny)
    # Adjacent transpositions generate the symmetric group, so checking them suffices.
    for k in range(p - 1):
        axes = list(range(arr.ndim))
        axes[off + k], axes[off + k + 1] = axes[off + k + 1], axes[off + k]
        pairs = _slabs(arr, arr.transpose(axes), batched)
        dev = max(float(np.max(np.abs(a - b))) for a, b in pairs)
        if dev > SYMMETRY_RTOL * scale:
            raise ValueError(
                f"{name}: tensor is not symmetric (swapping axes {k} and {k + 1} changes entries "
                f"by up to {dev:.3g}); hint: use sroa_dist.symmetrize"
            )
    return arr


def _slabs(
    a: FloatArray, b: FloatArray, batched: bool, size: int = 2**19
) -> Iterator[tuple[FloatArray, FloatArray]]:
    """Matching slices of two equally shaped arrays, about ``size`` entries each, so that a
    large tensor is compared without full-size temporaries."""
    if a.size <= size:
        yield a, b
        return
    for x, y in zip(a, b, strict=True) if batched else [(a, b)]:
        step = max(1, size // max(1, x[0].size))
        for i in range(0, len(x), step):
            yield x[i : i + step], y[i : i + step]


def check_tensor_stack(Ts: ArrayLike, name: str = "Ts") -> FloatArray:
    """Validate a stack ``(B, n, ..., n)`` of symmetric tensors."""
    return check_symmetric_tensor(Ts, name, batched=True)


def symmetrize(T: ArrayLike, *, batched: bool = False) -> FloatArray:
    """Average a tensor over all permutations of its axes (the orthogonal projection onto
    symmetric tensors)."""
    arr = _as_float_array(T, "T")
    off = 1 if batched else 0
    p = arr.ndim - off
    out = np.zeros_like(arr)
    for perm in itertools.permutations(range(p)):
        out += arr.transpose(tuple(range(off)) + tuple(off + q for q in perm))
    return out / math.factorial(p)


def identity_basis(n: int, r: int | None = None) -> FloatArray:
    """The paper's basis: the first ``r`` (default ``n``) coordinate vectors as columns."""
    r = n if r is None else r
    _check_rank(n, r)
    return np.eye(n, r)


def random_orthonormal_basis(
    n: int, r: int | None = None, rng: np.random.Generator | int | None = None
) -> FloatArray:
    """``r`` orthonormal columns drawn from the Haar measure on O(n) (QR with sign fix)."""
    r = n if r is None else r
    _check_rank(n, r)
    gen = np.random.default_rng(rng)
    Q, R = np.linalg.qr(gen.standard_normal((n, n)))
    Q = Q * np.sign(np.diag(R))  # makes the distribution exactly Haar (Mezzadri 2007)
    return Q[:, :r].copy()


def _check_rank(n: int, r: int) -> None:
    if int(n) < 2:
        raise ValueError(f"n: expected an integer >= 2, received {n}")
    if not 1 <= int(r) <= int(n):
        raise ValueError(f"r: expected 1 <= r <= n = {n}, received r = {r}")


def rank_one_tensor(lam: ArrayLike, x: ArrayLike, p: int) -> FloatArray:
    """``lam * x^{⊗p}`` for a vector, or a stack when ``x`` is ``(B, n)`` and ``lam`` ``(B,)``."""
    x = np.asarray(x, dtype=np.float64)
    lam = np.asarray(lam, dtype=np.float64)
    out = x
    for _ in range(p - 1):
        out = out[..., None] * x.reshape(x.shape[:-1] + (1,) * (out.ndim - x.ndim + 1) + (-1,))
    return lam.reshape(lam.shape + (1,) * p) * out


def sod_tensor(lambdas: ArrayLike, V: ArrayLike, p: int) -> FloatArray:
    """Orthogonally decomposable tensor ``Σ_i λ_i v_i^{⊗p}`` (paper, Section 1).

    Parameters
    ----------
    lambdas : (r,) array_like
        Component weights, all non-zero.
    V : (n, r) array_like
        Orthonormal columns ``v_i`` (checked to ``1e-8``).
    p : int
        Tensor order, ``p >= 3``.
    """
    p = _check_order(p)
    V = _as_float_array(V, "V")
    lambdas = np.atleast_1d(_as_float_array(lambdas, "lambdas"))
    if V.ndim != 2:
        raise ValueError(f"V: expected an (n, r) matrix of orthonormal columns, received {V.shape}")
    n, r = V.shape
    _check_rank(n, r)
    if lambdas.shape != (r,):
        raise ValueError(
            f"lambdas: expected {r} values (one per column of V), received {lambdas.shape}"
        )
    if not (np.all(np.isfinite(lambdas)) and np.all(np.isfinite(V))):
        raise ValueError("lambdas/V: contain NaN or infinite entries")
    if np.any(lambdas == 0):
        raise ValueError("lambdas: every component weight must be non-zero")
    dev = float(np.max(np.abs(V.T @ V - np.eye(r))))
    if dev > 1e-8:
        raise ValueError(f"V: columns are not orthonormal (max |VᵀV − I| = {dev:.3g} > 1e-8)")
    # Σ_i λ_i v_i^{⊗p} = reshape(V_kr diag(λ) V_kr^{(p-1)ᵀ}) via Khatri–Rao products: one GEMM.
    kr = V
    for _ in range(p - 2):
        kr = (kr[:, None, :] * V[None, :, :]).reshape(-1, r)
    return ((V * lambdas) @ kr.T).reshape((n,) * p)


def _check_order(p: int) -> int:
    if isinstance(p, bool) or int(p) != p or int(p) < 3:
        raise ValueError(f"p: expected an integer tensor order >= 3, received {p!r}")
    return int(p)


def kron_power(X: FloatArray, k: int) -> FloatArray:
    """Row-wise Kronecker power ``x^{⊗k}`` of vectors ``X (..., n)`` → ``(..., n**k)``."""
    if k == 0:
        return np.ones(X.shape[:-1] + (1,))
    out = X
    for _ in range(k - 1):
        out = (out[..., :, None] * X[..., None, :]).reshape(X.shape[:-1] + (-1,))
    return out


def contract(Ts: FloatArray, X: FloatArray, times: int) -> FloatArray:
    """Contract each tensor of a stack with many vectors ``times`` times.

    ``Ts`` is ``(B, n, ..., n)`` of order p, ``X`` is ``(B, S, n)`` (S vectors per tensor).
    Returns ``T x^{times}`` for every pair: ``(B, S)`` when ``times == p``, ``(B, S, n)`` when
    ``times == p - 1`` and ``(B, S, n, n)`` when ``times == p - 2``. One batched GEMM of the
    ``n^{p-times} × n^{times}`` unfolding against Kronecker powers of the vectors, so the work
    runs at BLAS speed with no Python loop per instance or per vector.
    """
    B, n = Ts.shape[0], Ts.shape[1]
    p = Ts.ndim - 1
    if not 1 <= times <= p:
        raise ValueError(f"times: expected 1 <= times <= p = {p}, received {times}")
    if times == p:
        g = contract(Ts, X, p - 1)
        return np.einsum("bsi,bsi->bs", g, X)
    K = kron_power(X, times)  # (B, S, n^times)
    unfolded = Ts.reshape(B, n ** (p - times), n**times)
    out = np.matmul(unfolded, K.transpose(0, 2, 1))  # (B, n^{p-times}, S)
    out = out.transpose(0, 2, 1)
    return out.reshape((B, X.shape[1]) + (n,) * (p - times))


def unfolding_norm(Ts: FloatArray) -> FloatArray:
    """Spectral norm of the ``n × n^{p-1}`` unfolding: a cheap valid upper bound on the operator
    norm ``max_{‖x‖=1} |T x^p|`` because ``‖x^{⊗(p-1)}‖ = 1``. Shape ``(B,)``."""
    B, n = Ts.shape[0], Ts.shape[1]
    M = Ts.reshape(B, n, -1)
    gram = np.matmul(M, M.transpose(0, 2, 1))
    return np.sqrt(np.maximum(np.linalg.eigvalsh(gram)[:, -1], 0.0))


def as_rng_list(
    rng: np.random.Generator | int | np.random.SeedSequence | Sequence | None, count: int
) -> list[np.random.Generator]:
    """Per-instance generators for a batch of ``count`` instances.

    A sequence of length ``count`` gives one generator per item (so a batch reproduces
    one-at-a-time calls seeded with the same items); a single seed-like is spawned into
    ``count`` independent streams.
    """
    if isinstance(rng, (list, tuple)) or (isinstance(rng, np.ndarray) and rng.ndim == 1):
        if len(rng) != count:
            raise ValueError(f"rng: expected {count} per-instance seeds, received {len(rng)}")
        return [r if isinstance(r, np.random.Generator) else np.random.default_rng(r) for r in rng]
    if isinstance(rng, np.random.Generator):
        return [rng] if count == 1 else list(rng.spawn(count))
    seq = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(rng)
    if count == 1:
        return [np.random.default_rng(seq)]
    return [np.random.default_rng(s) for s in seq.spawn(count)]
