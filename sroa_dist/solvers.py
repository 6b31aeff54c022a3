"""Best rank-one approximation of symmetric tensors: one front door over a registry of methods.

``rank_one(T, method=...)`` maximises ``T x^p`` over the unit sphere (odd ``p``) or ``|T x^p|``
(even ``p``, paper Section 3.3; ``lam`` keeps its sign). The best rank-one approximation in
Frobenius norm is then ``lam · x^{⊗p}`` (Algorithm 1, line 3).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .tensors import (
    as_rng_list,
    check_symmetric_tensor,
    contract,
    kron_power,
    normalized_unfolding_norm,
    normalizing_exponents,
    scale_up_bound,
    sphere_newton_step,
)

__all__ = [
    "DEFAULT_TIME_BUDGET",
    "METHODS",
    "MethodOutput",
    "OptionError",
    "RankOneResult",
    "check_options",
    "memory_estimate",
    "rank_one",
    "rank_one_batch",
    "register_method",
    "relaxation_cost",
    "relaxation_tractable",
]

FloatArray = NDArray[np.float64]
RngLike = np.random.Generator | int | np.random.SeedSequence | None

#: Default gap ``upper_bound − |lam|`` (relative to ‖T‖_F) under which a solution is certified.
GAP_TOL = 1e-6
#: Default seconds per step ``certified`` may spend on the moment relaxation (``time_budget``):
#: the relaxation runs where :func:`relaxation_cost` predicts at most this.
DEFAULT_TIME_BUDGET = 1.0
#: Cost model ``seconds ~ a * (m / 100) ** b`` of one certified step (SS-HOPM candidate plus
#: relaxation; both signs for even p) with moment-matrix side ``m``, one BLAS thread, by ``p``
#: (larger p use the largest calibrated p of the same parity). Least-squares fits in log-log
#: to the per-step medians of benchmarks/bench_certified_scaling.py (2026-11-26, shared 2-core
#: machine): p = 3 between the fresh nearly SOD and the deflated coherent-tilt families, p = 4
#: and 5 on fresh nearly SOD tensors and their deflations. SCS's full eigendecomposition of the
#: m x m dual matrix per iteration dominates, hence the steep exponent.
COST_MODEL: dict[int, tuple[float, float]] = {3: (0.35, 2.5), 4: (1.2, 2.2), 5: (0.54, 2.5)}
#: Tensors with ``2^-64 <= ‖T‖_F < 2^64`` are solved as given (see :func:`rank_one_batch`).
_UNSCALED_EXPONENT = 64


@dataclasses.dataclass(frozen=True)
class RankOneResult:
    """Result of a best rank-one approximation (fields gain a leading batch axis when batched).

    Attributes
    ----------
    lam : float
        ``T x^p`` at the returned ``x`` (signed; for even p the sign of the extremum found).
    x : (n,) ndarray
        Unit-norm maximiser of ``T x^p`` (odd p) or ``|T x^p|`` (even p).
    upper_bound : float
        A valid upper bound of ``max T x^p`` (odd p) or ``max |T x^p|`` (even p): from the
        moment relaxation's validated dual where it was solved, otherwise the spectral norm
        of the ``n × n^{p-1}`` unfolding.
    certified : bool
        ``upper_bound − |lam| ≤ gap_tol · ‖T‖_F``: ``x`` is a proven global optimum.
    method, n_starts, n_iter, message, solve_time
        Method name, random starts used, iterations of the local phase, a human-readable
        status, and seconds spent (batched local phases are shared equally by the instances).
    certificate : Certificate or None
        With ``certificate=True``: the auditable SOS certificate of the relaxation's bound
        (:class:`sroa_dist.certificate.Certificate`; both signs for even p), ``None`` where no
        relaxation ran (local methods, or ``certified`` above its size cap). Batched: an
        object array. Its ``verify(T)`` re-derives a bound ``>= upper_bound`` in plain numpy
        (equal up to rounding unless the unfolding bound was the smaller one).
    n_best : int or None
        How many local starts reached the best value (within ``BEST_RTOL``): one lone start is
        a warning sign that the global maximiser's basin is small. ``None`` for methods
        without starts.
    confirmed : bool or None
        Whether two independent start sets reached the same best value (``sshopm`` with
        ``max_starts``). A confirmation is evidence, not a proof: only ``certified`` is.
    """

    lam: Any
    x: Any
    upper_bound: Any
    certified: Any
    method: str
    n_starts: Any
    n_iter: Any
    message: Any
    solve_time: Any
    certificate: Any = None
    n_best: Any = None
    confirmed: Any = None

    @property
    def gap(self) -> Any:
        """Certification gap ``upper_bound − |lam|`` (≥ 0 up to rounding)."""
        return np.asarray(self.upper_bound) - np.abs(np.asarray(self.lam))

    def __getitem__(self, i: int) -> RankOneResult:
        """The ``i``-th instance of a batched result."""
        return RankOneResult(
            lam=float(self.lam[i]),
            x=self.x[i],
            upper_bound=float(self.upper_bound[i]),
            certified=bool(self.certified[i]),
            method=self.method,
            n_starts=int(self.n_starts[i]),
            n_iter=int(self.n_iter[i]),
            message=str(self.message[i]),
            solve_time=float(self.solve_time[i]),
            certificate=None if self.certificate is None else self.certificate[i],
            n_best=None if self.n_best is None else int(self.n_best[i]),
            confirmed=None if self.confirmed is None else bool(self.confirmed[i]),
        )


@dataclasses.dataclass(frozen=True)
class MethodOutput:
    """What a rank-one method returns for a stack of ``B`` tensors: the method contract.

    A method is ``fn(Ts, rngs, **options) -> MethodOutput`` with ``Ts`` the ``(B, n, ..., n)``
    stack (already scaled to ``‖T‖_F`` in ``[1/2, 1)``), ``rngs`` one Generator per tensor and
    ``options`` keyword-only parameters (what :func:`method_options` lists). A local method
    may also take a positional ``deflation`` (:class:`Deflation`) after ``rngs``, which lets
    SROA deflate implicitly. :func:`rank_one_batch` recomputes ``lam`` from ``x`` and takes
    the smaller of ``upper_bound`` and the unfolding bound, so a method never has to be
    trusted for its values.

    Attributes
    ----------
    x : (B, n) ndarray
        Unit-norm maximiser candidates of ``T x^p`` (odd p) or ``|T x^p|`` (even p).
    n_starts, n_iter : (B,) int ndarrays
        Starts used and iterations of the local phase (0 where there is none).
    upper_bound : (B,) ndarray, optional
        Valid upper bounds of ``max T x^p`` (odd p) / ``max |T x^p|`` (even p) of the tensors
        as given; ``None``: only the unfolding bound is known.
    solve_time : (B,) ndarray, optional
        Seconds per instance; ``None``: the call's wall time is shared equally.
    certificate : (B,) object ndarray, optional
        Auditable SOS certificates of ``upper_bound`` (or ``None`` entries).
    n_best : (B,) int ndarray, optional
        Starts that reached the best value (see :class:`RankOneResult`).
    confirmed : (B,) bool ndarray, optional
        Whether two independent start sets agreed (see :class:`RankOneResult`).
    notes : str
        Appended to every instance's ``message`` (e.g. why a relaxation was skipped).
    final_starts, final_values, final_grads : ndarrays, optional
        The local phase's final iterates ``(B, S, n)``, their values ``(B, S)`` and (under a
        deflation) unsigned gradients ``(B, S, n)``: SROA continues from them as warm starts.
    """

    x: FloatArray
    n_starts: Any
    n_iter: Any
    upper_bound: Any = None
    solve_time: Any = None
    certificate: Any = None
    n_best: Any = None
    confirmed: Any = None
    notes: str = ""
    final_starts: Any = None
    final_values: Any = None
    final_grads: Any = None

    @classmethod
    def coerce(cls, out: Any, method: str) -> MethodOutput:
        """``out`` itself, or (deprecated, one release) a mapping with the same keys, where the
        former ``message_extra`` key becomes ``notes``."""
        if isinstance(out, cls):
            return out
        if isinstance(out, Mapping):
            warnings.warn(
                f"method {method!r} returned a {type(out).__name__}; return a "
                "sroa_dist.solvers.MethodOutput instead (mappings are deprecated and will be "
                "refused in the next release)",
                DeprecationWarning,
                stacklevel=3,
            )
            d = dict(out)
            if "message_extra" in d:
                d["notes"] = d.pop("message_extra") or ""
            names = {f.name for f in dataclasses.fields(cls)}
            unknown = sorted(set(d) - names)
            if unknown:
                raise ValueError(
                    f"method {method!r}: returned unknown keys {unknown}; expected the fields "
                    f"of MethodOutput: {sorted(names)}"
                )
            return cls(**d)
        raise TypeError(
            f"method {method!r}: expected it to return a MethodOutput, received "
            f"{type(out).__name__}"
        )


# ---------------------------------------------------------------------------------------------
# Local ascent building blocks (batched over instances and starts)

#: Relative distance below which a start counts as having reached the best value (``n_best``).
BEST_RTOL = 1e-6
#: ``sshopm``'s default cap on start doubling (``max_starts``) on formed tensors.
DEFAULT_MAX_STARTS = 64


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
    """

    U: FloatArray
    lam: FloatArray
    fro: FloatArray
    sign: float = 1.0
    warm: FloatArray | None = None
    warm_grad: FloatArray | None = None

    def take(self, rows: Any) -> Deflation:
        """The same deflation for the instances ``rows`` only."""
        warm = None if self.warm is None else self.warm[rows]
        grad = None if self.warm_grad is None else self.warm_grad[rows]
        return Deflation(self.U[rows], self.lam[rows], self.fro[rows], self.sign, warm, grad)

    def negated(self) -> Deflation:
        """``−(T̂ − Σ λ̂_j v̂_j^{⊗p})``."""
        return dataclasses.replace(self, lam=-self.lam, sign=-self.sign)

    def cold(self) -> Deflation:
        """The same tensors without warm starts."""
        return dataclasses.replace(self, warm=None, warm_grad=None)


def _contract(
    Ts: FloatArray, X: FloatArray, times: int, deflation: Deflation | None = None
) -> FloatArray:
    """:func:`~sroa_dist.tensors.contract` of the (implicitly deflated) tensors.

    The deflation terms cost ``O(S n k)`` (vectors) or ``O(S n² k)`` (matrices) on top of the
    one GEMM against ``T̂``; without a deflation this is exactly ``contract``.
    """
    if deflation is None:
        return contract(Ts, X, times)
    B, n, p = Ts.shape[0], Ts.shape[1], Ts.ndim - 1
    # By symmetry any axes may be contracted; these orders stream T once in the layout BLAS
    # reads fastest (benchmarks/bench_large_n.py times them against `contract`).
    if times == p - 2:
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
    C = np.matmul(X, U)  # (B, S, k): v̂_j · x
    W = C**times * lam[:, None, :]
    if times == p:
        return out - W.sum(axis=-1)
    if times == p - 1:
        return out - np.matmul(W, U.transpose(0, 2, 1))
    if times == p - 2:
        return out - np.einsum("bsk,bik,bjk->bsij", W, U, U)
    raise ValueError(f"times: implicit deflation supports times >= p - 2, received {times}")


def random_starts(rngs: Sequence[np.random.Generator], n_starts: int, n: int) -> FloatArray:
    """Starts uniform on the sphere, drawn from each instance's own stream: ``(B, S, n)``."""
    X = np.stack([g.standard_normal((n_starts, n)) for g in rngs])
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def spectral_starts(
    Ts: FloatArray,
    rngs: Sequence[np.random.Generator],
    n_starts: int,
    deflation: Deflation | None = None,
) -> FloatArray:
    """Top eigenvectors (both signs of the extreme eigenvalues) of random contractions
    ``T(I, I, θ, …, θ)``: each matrix is dominated by the components ``v_i`` with large
    ``λ_i (v_i·θ)^{p-2}``, so its extreme eigenvectors start next to large components, which
    uniform starts rarely do when n is large. ``(B, n_starts, n)``."""
    n, p = Ts.shape[1], Ts.ndim - 1
    theta = random_starts(rngs, -(-n_starts // 2), n)
    # T(I, I, θ, ...) = Σ_i λ_i (v_i·θ)^{p-2} v_i v_iᵀ + noise: both extreme eigenvalues.
    _, V = np.linalg.eigh(_contract(Ts, theta, p - 2, deflation))
    X = np.concatenate([V[..., -1], V[..., 0]], axis=1)[:, :n_starts]
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def _values(
    Ts: FloatArray, X: FloatArray, deflation: Deflation | None = None
) -> tuple[FloatArray, FloatArray]:
    G = _contract(Ts, X, Ts.ndim - 2, deflation)
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

    Returns ``X (B, S, n)``, ``f (B, S)`` and iterations per instance ``(B,)``.
    """
    if deflation is not None:
        return _ascent_deflated(Ts, X0, max_iter, tol, shift, deflation, lazy)[:3]
    B, S, n = X0.shape
    p = Ts.ndim - 1
    X = X0.copy()
    G, F = _values(Ts, X)
    scale = np.max(np.abs(F), axis=1, keepdims=True) + np.finfo(float).tiny
    # (p-1)·‖T‖_F ≥ (p-1)·‖T‖ makes T x^p + α‖x‖^p convex, so a larger shift is never needed.
    cap = (p - 1) * np.linalg.norm(Ts.reshape(B, -1), axis=1)[:, None] + np.finfo(float).tiny
    if shift == "monotone":
        alpha = np.zeros((B, S))
    elif shift == "adaptive":
        alpha = None
    else:
        alpha = np.full((B, S), float(shift))
    n_iter = np.zeros(B, dtype=np.int64)
    active = np.arange(B)
    done = np.zeros((B, S), dtype=bool)
    slack = 64 * np.finfo(float).eps
    for _ in range(max_iter):
        if active.size == 0:
            break
        # Indexing with all instances would copy every tensor once per iteration.
        Ta = Ts if active.size == B else Ts[active]
        Xa, Ga, Fa = X[active], G[active], F[active]
        if shift == "adaptive":
            H = contract(Ta, Xa, p - 2)
            lmin = np.linalg.eigvalsh(H)[..., 0]
            a = np.maximum(0.0, 1e-6 * scale[active] - (p - 1) * lmin)
        else:
            a = alpha[active]
        Y = Ga + a[..., None] * Xa
        Y /= np.linalg.norm(Y, axis=-1, keepdims=True)
        Gy, Fy = _values(Ta, Y)
        accept = (Fy >= Fa - slack * scale[active]) & ~done[active]
        step = np.linalg.norm(Y - Xa, axis=-1)
        X[active] = np.where(accept[..., None], Y, Xa)
        G[active] = np.where(accept[..., None], Gy, Ga)
        F[active] = np.where(accept, Fy, Fa)
        if shift == "monotone":
            grown = np.minimum(np.maximum(2.0 * a, 0.5 * scale[active]), cap[active])
            alpha[active] = np.where(accept, 0.5 * a, grown)
        done[active] |= accept & (step <= tol)
        n_iter[active] += 1
        active = active[~np.all(done[active], axis=1)]
    return X, F, n_iter


def _ascent_deflated(
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
            G1[: S - W] = _values(T1, X[b : b + 1, : S - W], d1)[0][0]
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
                H = _contract(T1, Xa[None], p - 2, d1)[0]
                lmin = np.linalg.eigvalsh(H)[..., 0]
                a = np.maximum(0.0, 1e-6 * scale - (p - 1) * lmin)
            else:
                a = alpha[live]
            Y = Ga + a[:, None] * Xa
            Y /= np.linalg.norm(Y, axis=-1, keepdims=True)
            Gy, Fy = _values(T1, Y[None], d1)
            Gy, Fy = Gy[0], Fy[0]
            accept = Fy >= Fa - slack * scale
            step = np.linalg.norm(Y - Xa, axis=-1)
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
        G = _contract(Ts, X, Ts.ndim - 2, deflation)
        norm = np.linalg.norm(G, axis=-1, keepdims=True)
        X = np.where(norm > 0, G / np.where(norm > 0, norm, 1.0), X)
    return X


def newton_polish(
    Ts: FloatArray, x: FloatArray, *, steps: int = 4, deflation: Deflation | None = None
) -> FloatArray:
    """Refine one candidate per instance to a Z-eigenvector by Newton steps on the sphere.

    Solves the bordered KKT system of ``T x^{p-1} = λ x, ‖x‖ = 1`` and keeps a step only when it
    does not move ``|T x^p|`` downhill (so a maximiser stays a maximiser). Shape ``(B, n)``.
    With a :class:`Deflation` (large n) each step costs one contraction ``T x^{p-2}`` instead
    of three, and a step below ``1e-8`` (already in the quadratic regime) ends the polish.
    """
    if deflation is not None:
        return _polish_deflated(Ts, x, steps, deflation)
    B, n = x.shape
    p = Ts.ndim - 1
    x = x.copy()
    for _ in range(steps):
        H = contract(Ts, x[:, None, :], p - 2)[:, 0]
        g = np.einsum("bij,bj->bi", H, x)
        lam = np.sum(g * x, axis=-1)
        d = sphere_newton_step(H, g, lam, x, p)
        y = x + d[:, :n]
        y /= np.linalg.norm(y, axis=-1, keepdims=True)
        fy = contract(Ts, y[:, None, :], p)[:, 0]
        fx = contract(Ts, x[:, None, :], p)[:, 0]
        ok = np.isfinite(fy) & (np.abs(fy) >= np.abs(fx) - 1e-13 * (np.abs(fx) + 1e-300))
        ok &= np.sign(fy) * np.sign(fx) >= 0
        x = np.where(ok[:, None], y, x)
    return x


def _polish_deflated(Ts: FloatArray, x: FloatArray, steps: int, deflation: Deflation) -> Any:
    B, n = x.shape
    p = Ts.ndim - 1
    x = x.copy()
    H = _contract(Ts, x[:, None, :], p - 2, deflation)[:, 0]
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
        Hy = _contract(Ts, y[:, None, :], p - 2, deflation)[:, 0]
        fy = np.einsum("bi,bij,bj->b", y, Hy, y)
        ok = np.isfinite(fy) & (np.abs(fy) >= np.abs(lam) - 1e-13 * (np.abs(lam) + 1e-300))
        ok &= np.sign(fy) * np.sign(lam) >= 0
        x = np.where(ok[:, None], y, x)
        H = np.where(ok[:, None, None], Hy, H)
    return x


def _signed_problems(Ts: FloatArray) -> tuple[FloatArray, int]:
    """For even p, maximise both ``T x^p`` and ``−T x^p`` (stacked as ``2B`` problems)."""
    p = Ts.ndim - 1
    if p % 2 == 1:
        return Ts, 1
    return np.concatenate([Ts, -Ts]), 2


def _pick_best(X: FloatArray, F: FloatArray, B: int) -> FloatArray:
    """Best start per instance over all signs: ``X (k·B, S, n)``, ``F (k·B, S)`` → ``(B, n)``."""
    k = X.shape[0] // B
    S = X.shape[1]
    Xr = X.reshape(k, B, S, -1).transpose(1, 0, 2, 3).reshape(B, k * S, -1)
    Fr = F.reshape(k, B, S).transpose(1, 0, 2).reshape(B, k * S)
    return Xr[np.arange(B), np.argmax(Fr, axis=1)]


# ---------------------------------------------------------------------------------------------
# Methods. Each takes (Ts (B, n..n), rngs) plus keyword options and returns a MethodOutput.
# Local methods also take an optional positional Deflation (SROA's implicit deflation); being
# positional, it is not a user option (method_options lists keyword-only parameters).


def _method_power(
    Ts: FloatArray,
    rngs: Sequence[np.random.Generator],
    deflation: Deflation | None = None,
    *,
    n_starts: int = 20,
    n_iter: int = 30,
) -> MethodOutput:
    """Randomized robust tensor power method (Anandkumar et al., JMLR 2014, Algorithm 1).

    Options: ``n_starts`` (L) random starts uniform on the sphere, ``n_iter`` (N) unshifted power
    iterations each; the start with the largest ``T x^p`` (``|T x^p|`` for even p) is iterated
    ``N`` more times. No convergence test and no shift: the paper's local baseline.
    """
    B, n = Ts.shape[0], Ts.shape[1]
    p = Ts.ndim - 1
    X = power_iterations(Ts, random_starts(rngs, n_starts, n), n_iter, deflation)
    _, F = _values(Ts, X, deflation)
    score = np.abs(F) if p % 2 == 0 else F
    x = X[np.arange(B), np.argmax(score, axis=1)]
    x = power_iterations(Ts, x[:, None, :], n_iter, deflation)[:, 0]
    return MethodOutput(x=x, n_starts=np.full(B, n_starts), n_iter=np.full(B, 2 * n_iter))


def _ascend(
    Ts: FloatArray, X0: FloatArray, deflation: Deflation | None, **kw: Any
) -> tuple[FloatArray, FloatArray, NDArray[np.int64], FloatArray | None]:
    """:func:`shifted_ascent` over both signs for even p: ``(k·B, S, n)``, ``(k·B, S)``,
    ``(k·B,)`` with ``k = 2`` for even p (sign-major), 1 for odd p; with a deflation also the
    unsigned gradients at the final iterates ``(k·B, S, n)``."""
    p = Ts.ndim - 1
    if deflation is None:
        signed, k = _signed_problems(Ts)
        X0 = np.concatenate([X0] * k) if k > 1 else X0
        return (*shifted_ascent(signed, X0, **kw), None)
    lazy = kw.pop("lazy", False)
    args = (kw["max_iter"], kw["tol"], kw["shift"])
    parts = [_ascent_deflated(Ts, X0, *args, deflation, lazy)]
    if p % 2 == 0:
        # The larger |T x^p| wins: once the + sign has a value, a lazy − sign stops as soon as
        # its climbing starts are below it.
        floor = parts[0][1].max(axis=1) if lazy else None
        parts.append(_ascent_deflated(Ts, X0, *args, deflation.negated(), lazy, floor))
    return tuple(np.concatenate(a) for a in zip(*parts, strict=True))  # type: ignore[return-value]


def _by_instance(A: FloatArray, B: int) -> FloatArray:
    """``(k·B, S, ...)`` sign-major → ``(B, k·S, ...)`` (the layout :func:`_pick_best` reads)."""
    k, S = A.shape[0] // B, A.shape[1]
    rest = A.shape[2:]
    A = A.reshape((k, B, S) + rest)
    return np.moveaxis(A, 0, 1).reshape((B, k * S) + rest)


def _method_sshopm(
    Ts: FloatArray,
    rngs: Sequence[np.random.Generator],
    deflation: Deflation | None = None,
    *,
    n_starts: int = 16,
    max_iter: int = 100,
    tol: float = 1e-5,
    shift: str | float = "monotone",
    polish: bool = True,
    max_starts: int | None = None,
    n_spectral: int = 0,
    warm: bool = True,
    lazy: bool = True,
) -> MethodOutput:
    """Multi-start shifted symmetric higher-order power method with adaptive shift.

    Options: ``n_starts`` random starts (per sign for even p), ``max_iter`` and step tolerance
    ``tol`` of the ascent (the Newton polish, not the ascent, delivers the final accuracy, so
    the ascent only has to reach the right basin), ``shift`` (``"monotone"``: eigenvalue-free
    adaptive shift; ``"adaptive"``: Kolda–Mayo's Hessian-based shift; a float: fixed shift),
    ``polish``: Newton steps on the sphere from the best start to machine precision;
    ``n_spectral``: extra starts at the extreme eigenvectors of random contractions
    ``T(I, I, θ, …)`` (see :func:`spectral_starts`); ``warm``: in an implicitly deflated
    SROA, also start from the previous step's other local maxima; ``lazy``: there,
    stop a step once its best converged start beats every unconverged one and carry those
    on as warm starts (see :func:`shifted_ascent`); ``max_starts``: when at least
    ``2·n_starts``, a second, independent start set (from a stream spawned off the instance's,
    so the first set and later SROA steps keep their draws) is run, and the starts are doubled
    until the best values of the old and the new set agree (``confirmed``) or ``max_starts``
    would be exceeded; the first set's pick stands unless a later set beats it. Default
    (``None``): ``DEFAULT_MAX_STARTS`` (64) on a formed tensor, which cut the rate of missed
    global steps on Gaussian nearly-SOD tensors at n = 16–24 from about one in six to about
    one in thirty (benchmarks/bench_miss_rate.py), and 0 under implicit deflation (large n),
    where a cold second set would cost several times the warm-started step; pass it there to
    confirm.
    Converges to local maxima: fast, not certified. Besides ``x`` it reports how many starts
    reached the best value (``n_best``) and whether two independent start sets agreed
    (``confirmed``; false when no second set ran).
    """
    B, n = Ts.shape[0], Ts.shape[1]
    if max_starts is None:
        max_starts = DEFAULT_MAX_STARTS if deflation is None else 0
    kw: dict[str, Any] = {"max_iter": max_iter, "tol": tol, "shift": shift}
    if deflation is not None:
        kw["lazy"] = warm and lazy
    X0 = random_starts(rngs, n_starts, n)
    if n_spectral:
        X0 = np.concatenate([X0, spectral_starts(Ts, rngs, n_spectral, deflation)], axis=1)
    if warm and deflation is not None and deflation.warm is not None:
        X0 = np.concatenate([X0, deflation.warm], axis=1)
    elif deflation is not None:
        deflation = deflation.cold()
    X, F, it, grads = _ascend(Ts, X0, deflation, **kw)
    Xs, Fs = _by_instance(X, B), _by_instance(F, B)
    first = np.argmax(Fs, axis=1)
    used = np.full(B, Xs.shape[1])
    n_iter = it.reshape(-1, B).max(axis=0)
    confirmed = np.zeros(B, dtype=bool)
    size = n_starts
    while 2 * size <= max_starts:
        rows = np.flatnonzero(~confirmed)
        if rows.size == 0:
            break
        sub = Ts if rows.size == B else Ts[rows]
        d = None if deflation is None else deflation.take(rows).cold()
        fresh = random_starts([rngs[b].spawn(1)[0] for b in rows], size, n)
        Xn, Fn, itn, _ = _ascend(sub, fresh, d, **{**kw, "lazy": False})
        Xn, Fn = _by_instance(Xn, rows.size), _by_instance(Fn, rows.size)
        old, new = Fs[rows].max(axis=1), Fn.max(axis=1)
        scale = np.maximum(np.abs(old), np.abs(new)) + np.finfo(float).tiny
        confirmed[rows] = np.abs(new - old) <= BEST_RTOL * scale
        n_iter[rows] = np.maximum(n_iter[rows], itn.reshape(-1, rows.size).max(axis=0))
        used[rows] += Xn.shape[1]
        # Merge; instances not in `rows` get padding at -inf, which no statistic counts.
        pad_X = np.zeros((B,) + Xn.shape[1:])
        pad_F = np.full((B, Xn.shape[1]), -np.inf)
        pad_X[rows], pad_F[rows] = Xn, Fn
        Xs, Fs = np.concatenate([Xs, pad_X], axis=1), np.concatenate([Fs, pad_F], axis=1)
        size *= 2
    rows_b = np.arange(B)
    top1, best = Fs[rows_b, first], np.argmax(Fs, axis=1)
    # Keep the first set's pick (and its bits) unless a later set found a clearly higher value.
    best = np.where(Fs[rows_b, best] > top1 + BEST_RTOL * np.abs(top1), best, first)
    x = Xs[rows_b, best]
    top = Fs[rows_b, best]
    n_best = np.sum(Fs >= (top - BEST_RTOL * np.abs(top))[:, None], axis=1)
    if polish:
        x = newton_polish(Ts, x, deflation=deflation)
    return MethodOutput(
        x=x,
        n_starts=used,
        n_iter=n_iter,
        n_best=n_best,
        confirmed=confirmed,
        final_starts=_by_instance(X, B),
        final_values=_by_instance(F, B),
        final_grads=None if grads is None else _by_instance(grads, B),
    )


def _gram_side(n: int, p: int) -> int:
    """Side of the order-⌈p/2⌉ moment matrix of the (homogeneous) relaxation: the monomials of
    degree ``d`` (and ``d - 1`` for odd p), ``d = ⌈p/2⌉``."""
    d = (p + 1) // 2
    return math.comb(n + d - 1, d) + (math.comb(n + d - 2, d - 1) if p % 2 else 0)


def relaxation_cost(n: int, p: int) -> float:
    """Predicted seconds of one certified step at ``(n, p)`` (:data:`COST_MODEL`)."""
    known = [q for q in COST_MODEL if q <= p and q % 2 == p % 2]
    a, b = COST_MODEL[max(known)] if known else COST_MODEL[min(COST_MODEL)]
    return a * (_gram_side(n, p) / 100.0) ** b


def relaxation_tractable(
    n: int,
    p: int,
    max_gram_size: int | None = None,
    time_budget: float = DEFAULT_TIME_BUDGET,
) -> bool:
    """Whether ``certified`` runs the relaxation at ``(n, p)``.

    With ``max_gram_size`` the full order-⌈p/2⌉ basis ``C(n + ⌈p/2⌉, ⌈p/2⌉)`` must not exceed
    it (the former fixed cap, 120, meant n <= 14 for p = 3, 4); otherwise the predicted step time
    (:func:`relaxation_cost`) must fit ``time_budget`` seconds.
    """
    if max_gram_size is not None:
        d = (p + 1) // 2
        return math.comb(n + d, d) <= max_gram_size
    return relaxation_cost(n, p) <= time_budget


def _relax(
    Ts: FloatArray,
    order: int | None,
    options: dict[str, Any],
    candidates: FloatArray | None = None,
) -> list[Any]:
    """Solve the moment relaxation of ``max |T x^p|`` (odd p: ``max T x^p``) per instance,
    optionally seeding each with a candidate maximiser ``candidates[b]``."""
    from .relaxation import get_relaxation

    n, p = Ts.shape[1], Ts.ndim - 1
    relax = get_relaxation(n, p, order=order)
    solve = relax.solve if p % 2 else relax.solve_abs
    out = []
    for b, T in enumerate(Ts):
        extra = {} if candidates is None else {"candidates": candidates[b][None, :]}
        out.append(solve(T, **extra, **options))
    return out


def _with_certificate(options: dict[str, Any] | None, certificate: bool) -> dict[str, Any]:
    return {**(options or {}), "with_certificate": True} if certificate else (options or {})


def _method_sos(
    Ts: FloatArray,
    rngs: Sequence[np.random.Generator],
    *,
    order: int | None = None,
    relaxation: dict[str, Any] | None = None,
    certificate: bool = False,
) -> MethodOutput:
    """Lasserre moment relaxation (order ⌈p/2⌉ by default) solved with SCS.

    Maximiser candidates are extracted from the moments and polished; a validated dual bound
    is the certificate (see :mod:`sroa_dist.relaxation`). Options: ``order`` (relaxation
    order), ``relaxation`` (keyword options of ``MomentRelaxation.solve``, e.g. SCS settings),
    ``certificate`` (export the SOS certificate; also set by ``rank_one(certificate=True)``).
    """
    return _sos_result(_relax(Ts, order, _with_certificate(relaxation, certificate)))


def _sos_result(rel: list[Any]) -> MethodOutput:
    return MethodOutput(
        x=np.stack([r.x for r in rel]),
        upper_bound=np.array([r.upper_bound for r in rel]),
        n_starts=np.zeros(len(rel), dtype=np.int64),
        n_iter=np.array([r.iterations for r in rel]),
        solve_time=np.array([r.solve_time for r in rel]),
        certificate=_object_array([r.sos_certificate for r in rel]),
    )


def _object_array(items: list[Any]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _method_certified(
    Ts: FloatArray,
    rngs: Sequence[np.random.Generator],
    *,
    n_starts: int = 8,
    max_iter: int = 100,
    tol: float = 1e-5,
    shift: str | float = "monotone",
    order: int | None = None,
    max_gram_size: int | None = None,
    time_budget: float = DEFAULT_TIME_BUDGET,
    relaxation: dict[str, Any] | None = None,
    certificate: bool = False,
) -> MethodOutput:
    """Fast local candidate plus a certified global upper bound from the moment relaxation.

    A multi-start SS-HOPM gives a candidate; the relaxation, seeded with it, adds candidates
    extracted from its moments and returns the best one with a validated upper bound (certified
    when they meet). Where the moment matrix would exceed ``max_gram_size`` the relaxation is
    skipped and the unfolding bound is used (so ``certified`` is then rare). By default the cap
    follows from ``time_budget`` (seconds per step, :func:`relaxation_cost`); an explicit
    ``max_gram_size`` overrides it. Options: those of ``sshopm`` and ``sos`` (``certificate``
    included), ``time_budget`` and ``max_gram_size``.
    """
    n, p = Ts.shape[1], Ts.ndim - 1
    t0 = time.perf_counter()
    local = _method_sshopm(
        Ts, rngs, n_starts=n_starts, max_iter=max_iter, tol=tol, shift=shift, max_starts=0
    )
    if not time_budget >= 0:
        raise ValueError(f"time_budget: expected seconds >= 0, received {time_budget!r}")
    if not relaxation_tractable(n, p, max_gram_size, time_budget):
        notes = (
            f"relaxation skipped (moment matrix larger than {max_gram_size})"
            if max_gram_size is not None
            else f"relaxation skipped (predicted {relaxation_cost(n, p):.3g} s per step > "
            f"time_budget = {time_budget:g} s; raise time_budget to certify)"
        )
        return dataclasses.replace(local, notes=notes)
    local_share = (time.perf_counter() - t0) / len(Ts)
    options = _with_certificate(relaxation, certificate)
    sos = _sos_result(_relax(Ts, order, options, local.x))
    return dataclasses.replace(
        sos,
        solve_time=sos.solve_time + local_share,
        n_starts=local.n_starts,
        n_iter=local.n_iter,
    )


MethodFn = Callable[..., MethodOutput]
_REGISTRY: dict[str, MethodFn] = {}
#: Read-only view of the rank-one methods by name (add one with :func:`register_method`);
#: every entry is tested by the same suite.
METHODS: Mapping[str, MethodFn] = MappingProxyType(_REGISTRY)


def register_method(name: str, fn: MethodFn, *, overwrite: bool = False) -> None:
    """Register a rank-one method under ``name``, so ``rank_one(T, method=name)``, SROA and
    sweep specs can use it.

    ``fn(Ts, rngs, **options) -> MethodOutput`` follows the contract documented on
    :class:`MethodOutput`; its keyword-only parameters are its options. Registering a name
    that exists is refused unless ``overwrite=True``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a non-empty string, received {name!r}")
    if not callable(fn):
        raise ValueError(
            f"fn: expected a callable (Ts, rngs, **options) -> MethodOutput, received {fn!r}"
        )
    if name in _REGISTRY and not overwrite:
        raise ValueError(
            f"rank-one method {name!r} is already registered; hint: pass overwrite=True to "
            "replace it"
        )
    _REGISTRY[name] = fn


def unregister_method(name: str) -> None:
    """Remove a method added with :func:`register_method` (the built-in ones stay)."""
    if name in _BUILTIN:
        raise ValueError(f"method {name!r} is built in and cannot be removed")
    _REGISTRY.pop(name, None)


_BUILTIN = ("certified", "sos", "sshopm", "power")
for _name, _fn in zip(
    _BUILTIN, (_method_certified, _method_sos, _method_sshopm, _method_power), strict=True
):
    register_method(_name, _fn)


def method_options(method: str) -> list[str]:
    """Names of the keyword options a method accepts."""
    sig = inspect.signature(_lookup(method))
    return [k for k, v in sig.parameters.items() if v.kind is inspect.Parameter.KEYWORD_ONLY]


def _lookup(method: str) -> MethodFn:
    try:
        return METHODS[method]
    except (KeyError, TypeError):
        raise ValueError(
            f"method: unknown rank-one method {method!r}; expected one of {sorted(METHODS)}"
        ) from None


class OptionError(ValueError):
    """A rank-one method option has an unknown name or an invalid value.

    ``option`` is the offending keyword and ``method`` the method, so callers (the sweep spec)
    can name the key in their own terms.
    """

    def __init__(self, method: str, option: str, message: str, expected: str | None = None):
        self.method, self.option, self.expected = method, option, expected
        super().__init__(message)


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_real(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, (float, np.floating))) and bool(np.isfinite(v))


def _int_at_least(lo: int) -> tuple[Callable[[Any], bool], str]:
    return (lambda v: _is_int(v) and v >= lo), f"an integer >= {lo}"


def _relaxation_keys() -> frozenset[str]:
    from .relaxation import SCS_SETTING_NAMES, SOLVE_OPTIONS

    return frozenset(SOLVE_OPTIONS) | SCS_SETTING_NAMES


#: Value rules of the options the built-in methods share, by option name (one meaning per
#: name across methods): ``(predicate, what is expected)``. Options of user-registered methods
#: that have no rule here are checked by name only.
OPTION_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "n_starts": _int_at_least(1),
    "n_iter": _int_at_least(0),
    "max_iter": _int_at_least(0),
    "tol": (lambda v: _is_real(v) and v >= 0, "a finite number >= 0"),
    "gap_tol": (lambda v: _is_real(v) and v >= 0, "a finite number >= 0"),
    "shift": (
        lambda v: v in ("adaptive", "monotone") if isinstance(v, str) else _is_real(v) and v >= 0,
        "'adaptive', 'monotone' or a finite number >= 0 (a fixed shift)",
    ),
    "polish": (lambda v: isinstance(v, (bool, np.bool_)), "true or false"),
    "max_starts": (lambda v: v is None or (_is_int(v) and v >= 0), "an integer >= 0"),
    "n_spectral": _int_at_least(0),
    "warm": (lambda v: isinstance(v, (bool, np.bool_)), "true or false"),
    "lazy": (lambda v: isinstance(v, (bool, np.bool_)), "true or false"),
    "order": (lambda v: v is None or (_is_int(v) and v >= 1), "an integer relaxation order"),
    "max_gram_size": _int_at_least(1),
    "relaxation": (
        lambda v: v is None or (isinstance(v, Mapping) and set(v) <= _relaxation_keys()),
        "a table of MomentRelaxation.solve options and SCS settings",
    ),
}

_FLAG = (lambda v: isinstance(v, (bool, np.bool_)), "true or false")
_NONNEG = (lambda v: _is_real(v) and v >= 0, "a finite number >= 0")
_POSITIVE = (lambda v: _is_real(v) and v > 0, "a finite number > 0")
#: Value rules of the ``relaxation`` sub-options (``MomentRelaxation.solve`` keywords and SCS
#: settings); keys without a rule are checked by name only.
RELAXATION_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "warmup_iters": (lambda v: v is None or (_is_int(v) and v >= 0), "an integer >= 0"),
    "warmup_chunks": _int_at_least(1),
    "refine_iters": _int_at_least(0),
    "fallback_chunk": _int_at_least(1),
    "gap_tol": _NONNEG,
    "fallback": _FLAG,
    "polish_steps": _int_at_least(0),
    "flat_tol": _NONNEG,
    "normalize": _FLAG,
    "adaptive_scale": _FLAG,
    "verbose": _FLAG,
    "scale": _POSITIVE,
    "rho_x": _POSITIVE,
    "max_iters": _int_at_least(1),
    "eps_abs": _NONNEG,
    "eps_rel": _NONNEG,
    "eps_infeas": _NONNEG,
    "alpha": (lambda v: _is_real(v) and 0 < v < 2, "a number in (0, 2)"),
    "time_limit_secs": _NONNEG,
    "acceleration_interval": _int_at_least(1),
}


def check_options(
    method: str, options: Mapping[str, Any], *, n: int | None = None, p: int | None = None
) -> dict[str, Any]:
    """Dry-bind ``options`` to ``method`` as :func:`rank_one` would, without solving anything.

    Checks the method name, that every option is a keyword the method accepts (``gap_tol`` is
    accepted for every method: it belongs to the front door), and each value against
    :data:`OPTION_RULES`; with the tensor order ``p`` also that a relaxation ``order`` is at
    least ``⌈p/2⌉``, and with ``n`` too that ``sos`` can index the relaxation's monomials.
    :func:`rank_one_batch` calls this before every solve, and sweep specs call
    it at validation, so a setting that validates is one the solver accepts.

    Returns the options as a dict. Raises :class:`OptionError` (a ``ValueError``) naming the
    option, what was expected and what was received.
    """
    valid = method_options(method)
    unknown = sorted(set(options) - set(valid) - {"gap_tol"})
    if unknown:
        raise OptionError(
            method,
            unknown[0],
            f"options: method {method!r} does not accept {unknown}; valid options: "
            f"{valid + ['gap_tol']}",
        )
    for name, value in options.items():
        rule = OPTION_RULES.get(name)
        if rule is not None and not rule[0](value):
            hint = ""
            if name == "relaxation" and isinstance(value, Mapping):
                bad = sorted(set(value) - _relaxation_keys())
                hint = f" (unknown keys {bad}; valid: {sorted(_relaxation_keys())})"
            raise OptionError(
                method,
                name,
                f"options: {name} of method {method!r}: expected {rule[1]}, received "
                f"{value!r} ({type(value).__name__}){hint}",
                rule[1] + hint,
            )
    for key, value in (options.get("relaxation") or {}).items():
        rule = RELAXATION_RULES.get(key)
        if rule is not None and not rule[0](value):
            raise OptionError(
                method,
                "relaxation",
                f"options: relaxation.{key} of method {method!r}: expected {rule[1]}, received "
                f"{value!r} ({type(value).__name__})",
                f"{rule[1]} for relaxation.{key}",
            )
    order = options.get("order")
    if p is not None and order is not None and order < (int(p) + 1) // 2:
        raise OptionError(
            method,
            "order",
            f"options: order of method {method!r}: expected a relaxation order >= ceil(p/2) = "
            f"{(int(p) + 1) // 2} for p = {p}, received {order!r}",
            f"a relaxation order >= ceil(p/2) = {(int(p) + 1) // 2} (p = {p})",
        )
    if method == "sos" and n is not None and p is not None:
        d = (int(p) + 1) // 2 if order is None else int(order)
        if int(n) * math.log2(2 * d + 1) > 62:
            raise OptionError(
                method,
                "order" if order is not None else "method",
                f"method 'sos': the order-{d} moment relaxation cannot index n = {n} variables "
                "(its int64 monomial keys would overflow); hint: use method 'certified', which "
                "skips the relaxation where it is intractable, or 'sshopm'",
            )
    return dict(options)


def memory_estimate(
    method: str, n: int, p: int, batch: int = 1, options: Mapping[str, Any] | None = None
) -> int:
    """Rough peak bytes of one :func:`rank_one_batch` call on ``batch`` tensors ``(n,)*p``.

    Counts the tensor stack and the copies the front door and the local phase make (normalised
    stack, the ``±T`` stack of even orders, the active subset of the ascent), the Kronecker
    powers of the starts, and for the relaxation (where the method solves one) its moment
    index tables and SCS workspace. An order-of-magnitude guard against requests that cannot
    fit in memory, not an exact figure; computed without allocating anything.
    """
    options = dict(options or {})
    fn = _lookup(method)
    defaults = {
        k: v.default
        for k, v in inspect.signature(fn).parameters.items()
        if v.kind is inspect.Parameter.KEYWORD_ONLY
    }
    starts = int(options.get("n_starts", defaults.get("n_starts", 16)) or 1)
    tensor = 8.0 * batch * float(n) ** p
    local = 5 * tensor + 8.0 * batch * 2 * starts * (3 * float(n) ** (p - 1) + 2 * n * n)
    relax = 0.0
    order = options.get("order", defaults.get("order"))
    max_gram = options.get("max_gram_size", defaults.get("max_gram_size"))
    budget = options.get("time_budget", defaults.get("time_budget", DEFAULT_TIME_BUDGET))
    if method == "sos" or (
        method == "certified" and relaxation_tractable(n, p, max_gram, float(budget))
    ):
        d = (p + 1) // 2 if order is None else int(order)
        side = float(math.comb(n + d, d))
        moments = float(math.comb(n + 2 * d, 2 * d))
        # Moment map (side² nonzeros), SCS's KKT factorisation and per-thread workspaces.
        relax = 400.0 * side * side + 200.0 * moments
    return int(local + relax)


def _expand(out: MethodOutput, keep: NDArray[np.intp], B: int, n: int) -> MethodOutput:
    """Results of the non-zero tensors ``keep`` spread over the whole batch: the zero tensors
    get ``x = e_1``, zero counts and times (their answer is exact without solving)."""
    full: dict[str, Any] = {}
    for field in dataclasses.fields(out):
        val = getattr(out, field.name)
        if isinstance(val, np.ndarray) and val.ndim >= 1 and val.shape[0] == len(keep):
            # Object fields (certificates) get None for the zero tensors: nothing was solved.
            arr = (
                np.full((B,) + val.shape[1:], None, dtype=object)
                if val.dtype == object
                else np.zeros((B,) + val.shape[1:], dtype=val.dtype)
            )
            arr[keep] = val
            full[field.name] = arr
        else:
            full[field.name] = val
    x = np.zeros((B, n))
    x[:, 0] = 1.0
    x[keep] = out.x
    full["x"] = x
    if full["upper_bound"] is not None:
        full["upper_bound"] = np.asarray(full["upper_bound"], dtype=float)
    return MethodOutput(**full)


def _scaled_certificates(out: MethodOutput, k: NDArray[np.int64], B: int) -> Any:
    """The methods' certificates (of ``T / 2^k``) turned into certificates of ``T``."""
    certs = out.certificate
    if certs is None:
        return _object_array([None] * B)
    return _object_array(
        [None if c is None else c.scaled(int(kb)) for c, kb in zip(certs, k, strict=True)]
    )


def rank_one_batch(
    Ts: ArrayLike,
    method: str = "certified",
    *,
    rng: RngLike | Sequence[RngLike] = None,
    gap_tol: float = GAP_TOL,
    certificate: bool = False,
    **options: Any,
) -> RankOneResult:
    """Best rank-one approximation of every tensor in a stack ``(B, n, ..., n)``.

    Same as :func:`rank_one` with a leading batch axis on every result field. ``rng`` is one
    seed-like (spawned into B streams) or B per-instance seed-likes; with the same per-instance
    seeds the results are bitwise identical to one-at-a-time calls.

    Every method runs on ``T / 2^k`` with ``‖T / 2^k‖_F`` in ``[1/2, 1)``
    (:func:`sroa_dist.tensors.normalizing_exponents`) and the value and bound are scaled back
    by ``2^k``, so results do not depend on the tensor's scale and nothing underflows or
    overflows between 1e-300 and 1e300. Dividing by a power of two is exact, so for
    ``2^-64 <= ‖T‖_F < 2^64`` it would change no bit of the result and is skipped. Zero
    tensors get the exact answer ``lam = upper_bound = 0`` (certified) without a solve.
    """
    fn = _lookup(method)
    if certificate and "certificate" in method_options(method):
        options = {**options, "certificate": True}
    Ts = check_symmetric_tensor(Ts, "Ts", batched=True)
    B, n, p = Ts.shape[0], Ts.shape[1], Ts.ndim - 1
    check_options(method, {**options, "gap_tol": gap_tol}, n=n, p=p)
    rngs = as_rng_list(rng, B)
    k, zero = normalizing_exponents(Ts)
    if np.all(np.abs(k) <= _UNSCALED_EXPONENT):
        # Dividing by a power of two this close to 1 changes no bit of any result (nothing
        # under- or overflows either way; test_scale checks it), so skip the copy.
        k = np.zeros_like(k)
    Tn = np.ldexp(Ts, -k.reshape((B,) + (1,) * p)) if np.any(k) else Ts
    # Dividing by 2^k (k > 0) is exact unless an entry became subnormal; then it moved by at
    # most half the smallest subnormal, which moves T x^p by at most that times n^{p/2}. The
    # bound below is padded by that always (far below an ulp of it, so no bits change).
    inexact = k > 0
    keep = np.flatnonzero(~zero)
    t0 = time.perf_counter()
    if len(keep) == B:
        out = MethodOutput.coerce(fn(Tn, rngs, **options), method)
    elif len(keep):
        part = MethodOutput.coerce(fn(Tn[keep], [rngs[i] for i in keep], **options), method)
        out = _expand(part, keep, B, n)
    else:
        none = np.zeros(0, dtype=np.int64)
        out = _expand(MethodOutput(x=np.zeros((0, n)), n_starts=none, n_iter=none), keep, B, n)
    elapsed = time.perf_counter() - t0
    x = out.x
    _, f = _values(Tn, x[:, None, :])
    lam_n = f[:, 0]
    fro_n = np.linalg.norm(Tn.reshape(B, -1), axis=1)
    cheap = normalized_unfolding_norm(Tn)
    upper_n = cheap if out.upper_bound is None else np.minimum(out.upper_bound, cheap)
    upper_n = upper_n + np.where(inexact, 2.0**-1074 * n ** (p / 2), 0.0)
    certified = upper_n - np.abs(lam_n) <= gap_tol * fro_n
    if p % 2 == 1:
        # For odd p, max T x^p = max |T x^p|, so a bound on |.| bounds the objective too.
        certified &= lam_n >= 0
    with np.errstate(over="ignore"):
        lam = np.ldexp(lam_n, k)
    if not np.all(np.isfinite(lam)):
        b = int(np.flatnonzero(~np.isfinite(lam))[0])
        raise ValueError(
            f"Ts: the best rank-one value of tensor {b} is {lam_n[b]!r} · 2^{k[b]}, beyond the "
            "float64 range; hint: divide the tensor by a power of two and scale the result back"
        )
    upper = scale_up_bound(upper_n, k)
    lam = np.where(zero, 0.0, lam)
    upper = np.where(zero, 0.0, upper)
    # Invariant: a certificate is a proof, so it never comes with a bound below the value.
    # Rounding could in principle break it; then the instance is simply not certified.
    sound = (upper_n >= np.abs(lam_n)) & (upper >= np.abs(lam))
    anomaly = certified & ~sound
    certified = (certified & sound) | zero
    solve_time = np.full(B, elapsed / B) if out.solve_time is None else out.solve_time
    extra = out.notes
    message = np.array(
        [
            (
                "certified global optimum"
                if c
                else "not certified (bound below value by rounding)"
                if a
                else "not certified (local optimum)"
            )
            + (f"; {extra}" if extra else "")
            for c, a in zip(certified, anomaly, strict=True)
        ],
        dtype=object,
    )
    return RankOneResult(
        lam=lam,
        x=x,
        upper_bound=upper,
        certified=certified,
        method=method,
        n_starts=np.asarray(out.n_starts),
        n_iter=np.asarray(out.n_iter),
        message=message,
        solve_time=np.asarray(solve_time, dtype=float),
        certificate=(_scaled_certificates(out, k, B) if certificate else None),
        n_best=None if out.n_best is None else np.asarray(out.n_best),
        confirmed=None if out.confirmed is None else np.asarray(out.confirmed),
    )


def rank_one(
    T: ArrayLike,
    method: str = "certified",
    *,
    rng: RngLike = None,
    gap_tol: float = GAP_TOL,
    certificate: bool = False,
    **options: Any,
) -> RankOneResult:
    """Best rank-one approximation ``lam · x^{⊗p}`` of a symmetric tensor.

    Parameters
    ----------
    T : (n,)*p array_like
        Symmetric tensor, ``p >= 3``, ``n >= 2``.
    method : str
        ``"certified"`` (default: local multi-start + moment-relaxation certificate),
        ``"sos"`` (relaxation only), ``"sshopm"`` (multi-start shifted power method) or
        ``"power"`` (robust tensor power method). See each method's options with
        :func:`sroa_dist.solvers.method_options`.
    rng : Generator, int or SeedSequence, optional
        Source of the random starts.
    gap_tol : float
        Certification tolerance relative to ``‖T‖_F``.
    certificate : bool
        Attach the relaxation's auditable SOS certificate (``result.certificate``, checkable
        with ``result.certificate.verify(T)``); ``None`` where no relaxation ran.

    Returns
    -------
    RankOneResult
    """
    T = check_symmetric_tensor(T, "T")
    res = rank_one_batch(
        T[None], method, rng=[rng], gap_tol=gap_tol, certificate=certificate, **options
    )
    return res[0]
