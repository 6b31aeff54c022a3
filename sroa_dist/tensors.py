"""Dense symmetric tensors: construction, validation and batched contractions through BLAS."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import InputError, one_line

__all__ = [
    "sod_tensor",
    "identity_basis",
    "random_orthonormal_basis",
    "symmetrize",
    "contract",
    "rank_one_tensor",
    "check_symmetric_tensor",
    "check_symmetry",
    "normalizing_exponents",
    "sphere_newton_step",
    "unfolding_norm",
]

FloatArray = NDArray[np.float64]

#: Relative tolerance for "symmetric" and "orthonormal" input checks.
SYMMETRY_RTOL = 1e-10


def _as_float_array(x: ArrayLike, name: str) -> FloatArray:
    try:
        # iscomplexobj converts x too: a ragged nested list fails here, with numpy's error.
        complex_input = np.iscomplexobj(x)
        arr = None if complex_input else np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"{name}: expected a real numeric array ({one_line(str(exc))})",
            "pass a real numeric array (numpy.asarray(T, dtype=float) must work)",
        ) from None
    if arr is None:
        # Casting would silently drop the imaginary part (numpy only warns).
        raise InputError(
            f"{name}: expected a real array, received a complex one (dtype {np.asarray(x).dtype})",
            "pass the real part explicitly if the imaginary part is zero",
        )
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
        raise InputError(
            f"{name}: expected {what}, received a scalar", "pass an (n,)*p array with p >= 3"
        )
    if len(shape) < 3:
        raise InputError(
            f"{name}: expected {what} with order p >= 3, received shape {arr.shape} "
            f"(order {len(shape)})",
            "pass an (n,)*p array with p >= 3 axes (a stack: (B,) + (n,)*p)",
        )
    if len(set(shape)) != 1:
        raise InputError(
            f"{name}: expected a cubical tensor (all axes equal), received {arr.shape}",
            "every axis of a symmetric tensor has the same length n",
        )
    if shape[0] < 2:
        raise InputError(
            f"{name}: expected dimension n >= 2, received n = {shape[0]}",
            "use a tensor of dimension n >= 2",
        )
    if not np.all(np.isfinite(arr)):
        raise InputError(
            f"{name}: contains NaN or infinite entries",
            "replace or drop the non-finite entries before the call",
        )
    if batched and arr.shape[0] == 0:
        raise InputError(
            f"{name}: expected a stack of at least one tensor, received an empty batch of shape "
            f"{arr.shape}",
            "pass at least one tensor, or call the unbatched function",
        )
    check_symmetry(arr, name, batched=batched)
    return arr


def check_symmetry(arr: FloatArray, name: str = "T", *, batched: bool = False) -> None:
    """Raise a ``ValueError`` naming ``name`` unless every tensor of ``arr`` (finite, cubical)
    is symmetric under index permutations, to ``SYMMETRY_RTOL`` of its largest entry.

    The one symmetry test of the package: the front door, the moment relaxation and the
    certificates all call it, so a tensor one accepts is never refused by another.
    """
    p = arr.ndim - (1 if batched else 0)
    off = 1 if batched else 0
    # Tolerance relative to each tensor's own largest entry, so a tiny tensor batched with a
    # large one is judged on its own scale.
    flat = arr.reshape(arr.shape[:off] + (-1,))
    peak = np.maximum(np.max(flat, axis=-1), -np.min(flat, axis=-1))
    # Adjacent transpositions generate the symmetric group, so checking them suffices.
    for k in range(p - 1):
        axes = list(range(arr.ndim))
        axes[off + k], axes[off + k + 1] = axes[off + k + 1], axes[off + k]
        with np.errstate(over="ignore"):
            dev = _deviation(arr, arr.transpose(axes), batched)
        if not np.all(np.isfinite(dev)):
            # Entries near the float64 limit: compare halves, which cannot overflow.
            dev = 2 * np.max(np.abs(0.5 * arr - 0.5 * arr.transpose(axes)).reshape(flat.shape), -1)
        rel = dev / np.maximum(peak, np.finfo(float).tiny)
        if np.any(rel > SYMMETRY_RTOL):
            raise InputError(
                f"{name}: tensor is not symmetric (swapping axes {k} and {k + 1} changes entries "
                f"by up to {float(np.max(rel)):.3g} of the largest entry)",
                "symmetrize it first (sroa_dist.symmetrize)",
            )


def _deviation(a: FloatArray, b: FloatArray, batched: bool, size: int = 2**19) -> Any:
    """``max |a − b|`` per tensor (shape ``(B,)`` when batched, else a scalar), computed in
    slices of about ``size`` entries so that a large tensor needs no full-size temporaries."""
    if a.size <= size:
        diff = np.abs(a - b)
        return np.max(diff.reshape(diff.shape[:1] + (-1,)), axis=-1) if batched else diff.max()
    pairs = list(zip(a, b, strict=True)) if batched else [(a, b)]
    out = np.empty(len(pairs))
    for t, (x, y) in enumerate(pairs):
        step = max(1, size // max(1, x[0].size))
        out[t] = max(
            float(np.max(np.abs(x[i : i + step] - y[i : i + step]))) for i in range(0, len(x), step)
        )
    return out if batched else out[0]


def symmetrize(T: ArrayLike, *, batched: bool = False) -> FloatArray:
    """Average a tensor over all permutations of its axes (the orthogonal projection onto
    symmetric tensors)."""
    arr = _as_float_array(T, "T")
    off = 1 if batched else 0
    p = arr.ndim - off
    if p < 1 or len(set(arr.shape[off:])) != 1:
        raise InputError(
            f"T: expected a cubical array (every axis of one length"
            f"{', after the batch axis' if batched else ''}); received shape {arr.shape}",
            "pass an (n,)*p array (a stack: batched=True with shape (B,) + (n,)*p)",
        )
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
    n: int, r: int | None = None, *, rng: np.random.Generator | int | None = None
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
        raise InputError(f"n: expected an integer >= 2, received {n}", "give an integer n >= 2")
    if not 1 <= int(r) <= int(n):
        raise InputError(
            f"r: expected 1 <= r <= n = {n}, received r = {r}", "give a rank r between 1 and n"
        )


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
        raise InputError(
            f"V: expected an (n, r) matrix of orthonormal columns, received {V.shape}",
            "pass V as an (n, r) matrix with orthonormal columns",
        )
    n, r = V.shape
    _check_rank(n, r)
    if lambdas.shape != (r,):
        raise InputError(
            f"lambdas: expected {r} values (one per column of V), received {lambdas.shape}",
            "give one weight per column of V",
        )
    if not (np.all(np.isfinite(lambdas)) and np.all(np.isfinite(V))):
        raise InputError(
            "lambdas/V: contain NaN or infinite entries", "replace the non-finite entries"
        )
    if np.any(lambdas == 0):
        raise InputError(
            "lambdas: every component weight must be non-zero",
            "drop the zero weights and the columns of V that go with them",
        )
    dev = float(np.max(np.abs(V.T @ V - np.eye(r))))
    if dev > 1e-8:
        raise InputError(
            f"V: columns are not orthonormal (max |VᵀV − I| = {dev:.3g} > 1e-8)",
            "orthonormalise V first, e.g. with numpy.linalg.qr",
        )
    # Σ_i λ_i v_i^{⊗p} = reshape(V_kr diag(λ) V_kr^{(p-1)ᵀ}) via Khatri–Rao products: one GEMM.
    kr = V
    for _ in range(p - 2):
        kr = (kr[:, None, :] * V[None, :, :]).reshape(-1, r)
    return ((V * lambdas) @ kr.T).reshape((n,) * p)


def _check_order(p: int) -> int:
    if isinstance(p, bool) or int(p) != p or int(p) < 3:
        raise InputError(
            f"p: expected an integer tensor order >= 3, received {p!r}",
            "give an integer p >= 3, e.g. p=3",
        )
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
        raise InputError(
            f"times: expected 1 <= times <= p = {p}, received {times}",
            "contract between 1 and p times",
        )
    if times == p:
        g = contract(Ts, X, p - 1)
        return np.einsum("bsi,bsi->bs", g, X)
    K = kron_power(X, times)  # (B, S, n^times)
    unfolded = Ts.reshape(B, n ** (p - times), n**times)
    out = np.matmul(unfolded, K.transpose(0, 2, 1))  # (B, n^{p-times}, S)
    out = out.transpose(0, 2, 1)
    return out.reshape((B, X.shape[1]) + (n,) * (p - times))


def normalizing_exponents(Ts: FloatArray) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Power-of-two exponents ``k`` with ``1/2 <= ‖T / 2^k‖_F < 1`` for each tensor of a stack.

    Dividing by a power of two is exact in floating point (unless entries become subnormal), so
    a computation on ``T / 2^k`` followed by multiplying the answer by ``2^k`` returns the same
    bits as the computation on ``T`` wherever the latter neither overflows nor underflows, and
    the right answer where it would. ``‖T‖_F`` itself is never formed (it can overflow or
    underflow when ``T``'s entries do not). Returns ``(k (B,), zero (B,))``; ``k = 0`` for zero
    tensors.
    """
    B = Ts.shape[0]
    flat = Ts.reshape(B, -1)
    peak = np.maximum(np.max(flat, axis=1), -np.min(flat, axis=1))
    e_peak = np.frexp(peak)[1]
    # Within these exponents the sum of squares neither overflows nor underflows, and
    # ‖T / 2^e‖_F = ‖T‖_F / 2^e exactly, so one unscaled pass gives the same k.
    safe = (e_peak > -400) & (e_peak < 400)
    nu = np.empty(B)
    for b in np.flatnonzero(safe):
        # One dot per tensor: no tensor-sized temporary (implicit SROA holds one tensor only).
        nu[b] = np.ldexp(np.sqrt(np.dot(flat[b], flat[b])), -e_peak[b])
    if not np.all(safe):
        out = ~safe
        nu[out] = np.linalg.norm(np.ldexp(flat[out], -e_peak[out][:, None]), axis=1)
    zero = peak == 0
    nu[zero] = 1.0
    k = (e_peak + np.frexp(nu)[1]).astype(np.int64)
    return np.where(zero, 0, k), zero


def scale_up_bound(bound: FloatArray, k: NDArray[np.int64]) -> FloatArray:
    """``bound · 2^k`` rounded so that it stays an upper bound (one ulp up where the product
    is subnormal and may have been rounded down); ``inf`` where it overflows."""
    with np.errstate(over="ignore"):
        out = np.ldexp(bound, k)
    tiny = np.finfo(float).tiny
    return np.where((np.abs(out) < tiny) & (bound > 0), np.nextafter(out, np.inf), out)


def unfolding_norm(Ts: FloatArray) -> FloatArray:
    """Spectral norm of the ``n × n^{p-1}`` unfolding: a cheap valid upper bound on the operator
    norm ``max_{‖x‖=1} |T x^p|`` because ``‖x^{⊗(p-1)}‖ = 1``. Shape ``(B,)``.

    Computed on ``T / 2^k`` (:func:`normalizing_exponents`) so that the Gram matrix neither
    underflows nor overflows, and padded by the rounding error of the Gram matrix and of its
    eigenvalues so that it remains a bound in floating point.
    """
    B = Ts.shape[0]
    k, _ = normalizing_exponents(Ts)
    kk = k.reshape((B,) + (1,) * (Ts.ndim - 1))
    Tn = np.ldexp(Ts, -kk) if np.any(k) else Ts
    bound = normalized_unfolding_norm(Tn)
    # Where 2^-k made entries subnormal each moved by at most half the smallest subnormal.
    bound = bound + np.where(k > 0, 2.0**-1074 * Ts.shape[1] ** ((Ts.ndim - 1) / 2), 0.0)
    return scale_up_bound(bound, k)


def normalized_unfolding_norm(Tn: FloatArray) -> FloatArray:
    """:func:`unfolding_norm` of tensors already scaled to ``‖T‖_F <= 1`` (no rescaling)."""
    B, n = Tn.shape[0], Tn.shape[1]
    M = Tn.reshape(B, n, -1)
    gram = np.matmul(M, M.transpose(0, 2, 1))
    u = np.finfo(float).eps / 2
    # |fl(M Mᵀ) − M Mᵀ| ≤ γ_N |M||M|ᵀ and a backward stable eigensolver adds O(n u ‖G‖); both
    # are below (N + 8n + 4)·u·‖M‖_F², padded here by a factor 2 (‖M‖_F² = trace G).
    pad = (M.shape[2] + 8 * n + 4) * u * 2.0 * np.trace(gram, axis1=1, axis2=2)
    top = np.maximum(np.linalg.eigvalsh(gram)[:, -1], 0.0)
    return np.sqrt(top + pad) * (1 + 4 * u)


def _check_seed_like(r: object) -> None:
    ok = r is None or isinstance(
        r, (int, np.integer, np.random.Generator, np.random.SeedSequence, np.random.BitGenerator)
    )
    if not ok or isinstance(r, bool) or (isinstance(r, (int, np.integer)) and r < 0):
        raise InputError(
            "rng: expected None, a non-negative int seed, a numpy Generator, BitGenerator or "
            f"SeedSequence (or a sequence of them, one per instance), received {r!r} "
            f"({type(r).__name__})",
            "e.g. rng=0 or rng=np.random.default_rng(0)",
        )


#: The seed an engine call without ``rng`` uses (see :func:`as_rng_list`).
ENGINE_DEFAULT_SEED = 0


def _engine_rng(r: object) -> np.random.Generator:
    """One item of a per-instance seed sequence as a generator (``None``: the default seed)."""
    return np.random.default_rng(ENGINE_DEFAULT_SEED if r is None else r)


def as_rng_list(
    rng: np.random.Generator | int | np.random.SeedSequence | Sequence | None, count: int
) -> list[np.random.Generator]:
    """Per-instance generators for a batch of ``count`` instances.

    A sequence of length ``count`` gives one generator per item (so a batch reproduces
    one-at-a-time calls seeded with the same items); a single seed-like is spawned into
    ``count`` independent streams. ``None`` is :data:`ENGINE_DEFAULT_SEED`, not fresh OS
    entropy: the engines (``rank_one``, ``sroa``) use randomness only to place local starts,
    and a call that names no seed must still be a pure function of its tensor, giving the
    same bits on every call. Anything else is refused with an ``InputError`` naming ``rng``.
    """
    if isinstance(rng, (list, tuple)) or (isinstance(rng, np.ndarray) and rng.ndim == 1):
        if len(rng) != count:
            raise InputError(
                f"rng: expected {count} per-instance seeds, received {len(rng)}",
                "give one seed per instance, or a single seed to spawn them from",
            )
        for r in rng:
            _check_seed_like(r)
        return [r if isinstance(r, np.random.Generator) else _engine_rng(r) for r in rng]
    _check_seed_like(rng)
    if rng is None:
        rng = ENGINE_DEFAULT_SEED
    if isinstance(rng, np.random.Generator):
        return [rng] if count == 1 else list(rng.spawn(count))
    if isinstance(rng, np.random.BitGenerator):
        gen = np.random.Generator(rng)
        return [gen] if count == 1 else list(gen.spawn(count))
    seq = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(rng)
    if count == 1:
        return [np.random.default_rng(seq)]
    return [np.random.default_rng(s) for s in seq.spawn(count)]


def sphere_newton_step(
    H: FloatArray, g: FloatArray, lam: FloatArray, x: FloatArray, p: int
) -> FloatArray:
    """Newton step towards a Z-eigenpair ``T x^{p-1} = λ x, ‖x‖ = 1`` from unit rows ``x``.

    ``H = T x^{p-2}`` ``(B, n, n)``, ``g = T x^{p-1}`` and ``λ = T x^p`` at ``x``. Solves the
    bordered KKT system ``[(p-1) H − λ I, −x; −xᵀ, 0] (dx, dμ) = (−(g − λ x), 0)``, whose ``dx``
    is the Riemannian Newton step on the sphere (the tangent component of the Euclidean Newton
    step of the Lagrangian). Returns ``(dx, dμ)``, shape ``(B, n + 1)``; the package's one
    Newton polisher (:func:`sroa_dist.methods.ascent.newton_polish`,
    :func:`sroa_dist.relaxation.polish`) takes its steps from here and decides itself which steps to
    accept.
    """
    B, n = x.shape
    K = np.zeros((B, n + 1, n + 1))
    K[:, :n, :n] = (p - 1) * H - lam[:, None, None] * np.eye(n)
    K[:, :n, n] = -x
    K[:, n, :n] = -x
    rhs = np.concatenate([-(g - lam[:, None] * x), np.zeros((B, 1))], axis=1)
    try:
        return np.linalg.solve(K, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:
        # One singular system must not change the others' bits: solve each on its own.
        return np.stack([_solve_or_lstsq(K[b], rhs[b]) for b in range(B)])


def _solve_or_lstsq(K: FloatArray, rhs: FloatArray) -> FloatArray:
    try:
        return np.linalg.solve(K, rhs[:, None])[:, 0]
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(K, rhs, rcond=None)[0]
