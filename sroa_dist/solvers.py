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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .tensors import as_rng_list, check_symmetric_tensor, contract, unfolding_norm

__all__ = [
    "DEFAULT_TIME_BUDGET",
    "METHODS",
    "RankOneResult",
    "rank_one",
    "rank_one_batch",
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
        )


# ---------------------------------------------------------------------------------------------
# Local ascent building blocks (batched over instances and starts)


def random_starts(rngs: Sequence[np.random.Generator], n_starts: int, n: int) -> FloatArray:
    """Starts uniform on the sphere, drawn from each instance's own stream: ``(B, S, n)``."""
    X = np.stack([g.standard_normal((n_starts, n)) for g in rngs])
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def _values(Ts: FloatArray, X: FloatArray) -> tuple[FloatArray, FloatArray]:
    G = contract(Ts, X, Ts.ndim - 2)
    return G, np.sum(G * X, axis=-1)


def shifted_ascent(
    Ts: FloatArray,
    X0: FloatArray,
    *,
    max_iter: int,
    tol: float,
    shift: str | float = "adaptive",
) -> tuple[FloatArray, FloatArray, NDArray[np.int64]]:
    """Shifted symmetric higher-order power method, batched: maximise ``T x^p`` from each start.

    Iterates ``x ← normalize(T x^{p-1} + α x)``. With ``shift="adaptive"`` (Kolda & Mayo,
    SIAM J. Matrix Anal. Appl. 2014) the shift is ``α = max(0, τ − (p−1) λ_min(T x^{p−2}))``,
    which makes ``T x^p + α‖x‖^p`` locally convex so ``T x^p`` increases monotonically. With
    ``shift="monotone"`` no eigenvalues are computed: each start keeps its own shift, halves it
    after an ascent step and doubles it after a rejected (descending) step, which gives the same
    monotonicity guarantee at the cost of one contraction per step. A float is a fixed shift
    (SS-HOPM). Each instance stops once all its starts moved less than ``tol``.

    Returns ``X (B, S, n)``, ``f (B, S)`` and iterations per instance ``(B,)``.
    """
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
        Ta, Xa, Ga, Fa = Ts[active], X[active], G[active], F[active]
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


def power_iterations(Ts: FloatArray, X: FloatArray, n_iter: int) -> FloatArray:
    """``n_iter`` unshifted power iterations ``x ← normalize(T x^{p-1})`` from every start."""
    for _ in range(n_iter):
        G = contract(Ts, X, Ts.ndim - 2)
        norm = np.linalg.norm(G, axis=-1, keepdims=True)
        X = np.where(norm > 0, G / np.where(norm > 0, norm, 1.0), X)
    return X


def newton_polish(Ts: FloatArray, x: FloatArray, *, steps: int = 4) -> FloatArray:
    """Refine one candidate per instance to a Z-eigenvector by Newton steps on the sphere.

    Solves the bordered KKT system of ``T x^{p-1} = λ x, ‖x‖ = 1`` and keeps a step only when it
    does not move ``|T x^p|`` downhill (so a maximiser stays a maximiser). Shape ``(B, n)``.
    """
    B, n = x.shape
    p = Ts.ndim - 1
    x = x.copy()
    for _ in range(steps):
        H = contract(Ts, x[:, None, :], p - 2)[:, 0]
        g = np.einsum("bij,bj->bi", H, x)
        lam = np.sum(g * x, axis=-1)
        K = np.zeros((B, n + 1, n + 1))
        K[:, :n, :n] = (p - 1) * H - lam[:, None, None] * np.eye(n)
        K[:, :n, n] = -x
        K[:, n, :n] = -x
        rhs = np.concatenate([-(g - lam[:, None] * x), np.zeros((B, 1))], axis=1)
        try:
            d = np.linalg.solve(K, rhs[..., None])[..., 0]
        except np.linalg.LinAlgError:
            # One singular system must not change the others' bits: solve each on its own.
            d = np.stack([_solve_or_lstsq(K[b], rhs[b]) for b in range(B)])
        y = x + d[:, :n]
        y /= np.linalg.norm(y, axis=-1, keepdims=True)
        fy = contract(Ts, y[:, None, :], p)[:, 0]
        fx = contract(Ts, x[:, None, :], p)[:, 0]
        ok = np.isfinite(fy) & (np.abs(fy) >= np.abs(fx) - 1e-13 * (np.abs(fx) + 1e-300))
        ok &= np.sign(fy) * np.sign(fx) >= 0
        x = np.where(ok[:, None], y, x)
    return x


def _solve_or_lstsq(K: FloatArray, rhs: FloatArray) -> FloatArray:
    try:
        return np.linalg.solve(K, rhs[:, None])[:, 0]
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(K, rhs, rcond=None)[0]


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
# Methods. Each takes (Ts (B, n..n), rngs) plus keyword options and returns a dict of arrays.


def _method_power(
    Ts: FloatArray, rngs: Sequence[np.random.Generator], *, n_starts: int = 20, n_iter: int = 30
) -> dict[str, Any]:
    """Randomized robust tensor power method (Anandkumar et al., JMLR 2014, Algorithm 1).

    Options: ``n_starts`` (L) random starts uniform on the sphere, ``n_iter`` (N) unshifted power
    iterations each; the start with the largest ``T x^p`` (``|T x^p|`` for even p) is iterated
    ``N`` more times. No convergence test and no shift: the paper's local baseline.
    """
    B, n = Ts.shape[0], Ts.shape[1]
    p = Ts.ndim - 1
    X = power_iterations(Ts, random_starts(rngs, n_starts, n), n_iter)
    _, F = _values(Ts, X)
    score = np.abs(F) if p % 2 == 0 else F
    x = X[np.arange(B), np.argmax(score, axis=1)]
    x = power_iterations(Ts, x[:, None, :], n_iter)[:, 0]
    return {"x": x, "n_starts": np.full(B, n_starts), "n_iter": np.full(B, 2 * n_iter)}


def _method_sshopm(
    Ts: FloatArray,
    rngs: Sequence[np.random.Generator],
    *,
    n_starts: int = 16,
    max_iter: int = 100,
    tol: float = 1e-5,
    shift: str | float = "monotone",
    polish: bool = True,
) -> dict[str, Any]:
    """Multi-start shifted symmetric higher-order power method with adaptive shift.

    Options: ``n_starts`` random starts (per sign for even p), ``max_iter`` and step tolerance
    ``tol`` of the ascent (the Newton polish, not the ascent, delivers the final accuracy, so
    the ascent only has to reach the right basin), ``shift`` (``"monotone"``: eigenvalue-free
    adaptive shift; ``"adaptive"``: Kolda–Mayo's Hessian-based shift; a float: fixed shift),
    ``polish``: Newton steps on the sphere from the best start to machine precision. Converges
    to local maxima: fast, not certified.
    """
    B, n = Ts.shape[0], Ts.shape[1]
    X0 = random_starts(rngs, n_starts, n)
    signed, k = _signed_problems(Ts)
    X0 = np.concatenate([X0] * k) if k > 1 else X0
    X, F, it = shifted_ascent(signed, X0, max_iter=max_iter, tol=tol, shift=shift)
    x = _pick_best(X, F, B)
    if polish:
        x = newton_polish(Ts, x)
    n_iter = it.reshape(k, B).max(axis=0)
    return {"x": x, "n_starts": np.full(B, k * n_starts), "n_iter": n_iter}


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
) -> dict[str, Any]:
    """Lasserre moment relaxation (order ⌈p/2⌉ by default) solved with SCS.

    Maximiser candidates are extracted from the moments and polished; a validated dual bound
    is the certificate (see :mod:`sroa_dist.relaxation`). Options: ``order`` (relaxation
    order), ``relaxation`` (keyword options of ``MomentRelaxation.solve``, e.g. SCS settings),
    ``certificate`` (export the SOS certificate; also set by ``rank_one(certificate=True)``).
    """
    return _sos_result(_relax(Ts, order, _with_certificate(relaxation, certificate)))


def _sos_result(rel: list[Any]) -> dict[str, Any]:
    return {
        "x": np.stack([r.x for r in rel]),
        "upper_bound": np.array([r.upper_bound for r in rel]),
        "n_starts": np.zeros(len(rel), dtype=np.int64),
        "n_iter": np.array([r.iterations for r in rel]),
        "solve_time": np.array([r.solve_time for r in rel]),
        "certificate": _object_array([r.sos_certificate for r in rel]),
    }


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
) -> dict[str, Any]:
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
    local = _method_sshopm(Ts, rngs, n_starts=n_starts, max_iter=max_iter, tol=tol, shift=shift)
    if not time_budget >= 0:
        raise ValueError(f"time_budget: expected seconds >= 0, received {time_budget!r}")
    if not relaxation_tractable(n, p, max_gram_size, time_budget):
        local["message_extra"] = (
            f"relaxation skipped (moment matrix larger than {max_gram_size})"
            if max_gram_size is not None
            else f"relaxation skipped (predicted {relaxation_cost(n, p):.3g} s per step > "
            f"time_budget = {time_budget:g} s; raise time_budget to certify)"
        )
        return local
    local_share = (time.perf_counter() - t0) / len(Ts)
    options = _with_certificate(relaxation, certificate)
    sos = _sos_result(_relax(Ts, order, options, local["x"]))
    sos["solve_time"] = sos["solve_time"] + local_share
    sos["n_starts"], sos["n_iter"] = local["n_starts"], local["n_iter"]
    return sos


MethodFn = Callable[..., dict[str, Any]]
#: Registry of rank-one methods by name; every entry is tested by the same suite.
METHODS: dict[str, MethodFn] = {
    "certified": _method_certified,
    "sos": _method_sos,
    "sshopm": _method_sshopm,
    "power": _method_power,
}


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


def _check_options(method: str, options: dict[str, Any]) -> None:
    valid = method_options(method)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(
            f"options: method {method!r} does not accept {unknown}; valid options: {valid}"
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
    """
    fn = _lookup(method)
    _check_options(method, options)
    if certificate and "certificate" in method_options(method):
        options = {**options, "certificate": True}
    Ts = check_symmetric_tensor(Ts, "Ts", batched=True)
    if not (np.isfinite(gap_tol) and gap_tol >= 0):
        raise ValueError(f"gap_tol: expected a finite value >= 0, received {gap_tol}")
    B, p = Ts.shape[0], Ts.ndim - 1
    rngs = as_rng_list(rng, B)
    t0 = time.perf_counter()
    out = fn(Ts, rngs, **options)
    elapsed = time.perf_counter() - t0
    x = out["x"]
    _, f = _values(Ts, x[:, None, :])
    lam = f[:, 0]
    fro = np.linalg.norm(Ts.reshape(B, -1), axis=1)
    cheap = unfolding_norm(Ts)
    upper = np.minimum(out.get("upper_bound", cheap), cheap)
    certified = upper - np.abs(lam) <= gap_tol * fro
    if p % 2 == 1:
        # For odd p, max T x^p = max |T x^p|, so a bound on |.| bounds the objective too.
        certified &= lam >= 0
    solve_time = out.get("solve_time", np.full(B, elapsed / B))
    extra = out.get("message_extra")
    message = np.array(
        [
            ("certified global optimum" if c else "not certified (local optimum)")
            + (f"; {extra}" if extra else "")
            for c in certified
        ],
        dtype=object,
    )
    return RankOneResult(
        lam=lam,
        x=x,
        upper_bound=upper,
        certified=certified,
        method=method,
        n_starts=np.asarray(out["n_starts"]),
        n_iter=np.asarray(out["n_iter"]),
        message=message,
        solve_time=np.asarray(solve_time, dtype=float),
        certificate=(out.get("certificate", _object_array([None] * B)) if certificate else None),
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
