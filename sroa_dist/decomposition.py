"""Successive rank-one approximation (SROA, the paper's Algorithm 1) of symmetric tensors."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .ascent import DEFAULT_N_STARTS, Deflation
from .errors import InputError
from .finishing import finish_step, normalize
from .matrix_free import TensorOperator, check_local_method, operator_options
from .methods import IMPLICIT_BYTES, MethodOutput
from .solvers import (
    GAP_TOL,
    RankOneResult,
    RngLike,
    check_options,
    rank_one_of_checked,
    resolve_method,
)
from .tensors import as_rng_list, check_symmetric_tensor, rank_one_tensor
from .threads import single_blas

__all__ = ["SROAResult", "sroa", "sroa_batch", "DEFLATION_MODES"]

#: ``deflation=`` choices of :func:`sroa`: ``"explicit"`` forms each deflated tensor (needed by
#: the relaxation-based methods), ``"implicit"`` keeps only the deflation terms (local methods),
#: ``"auto"`` is implicit for local methods once one tensor is larger than ``IMPLICIT_BYTES``.
DEFLATION_MODES = ("auto", "explicit", "implicit")


@dataclasses.dataclass(frozen=True)
class SROAResult:
    """Output of Algorithm 1: one ``(λ̂_j, v̂_j)`` per deflation step ``j``.

    Attributes (a leading batch axis is added when batched)
    ----------
    lambdas : (r,) ndarray
        ``λ̂_j = T̂_{j-1} v̂_j^p`` (signed).
    vectors : (n, r) ndarray
        ``v̂_j`` as columns.
    certified : (r,) bool ndarray
        Whether step ``j`` was solved to proven global optimality.
    upper_bounds : (r,) ndarray
        Valid upper bound of each step's objective.
    solve_time : (r,) ndarray
        Seconds spent per step.
    p, method
        Tensor order and rank-one method.
    steps : list of RankOneResult
        Per-step solver results (batched results when the SROA result is batched).
    n_best : (r,) int ndarray
        Starts that reached each step's best value (``-1`` for methods without starts).
    confirmed : (r,) bool ndarray
        Whether two independent random starts reached each step's best value (see
        :class:`RankOneResult`); evidence against a missed global step, not a certificate.
    """

    lambdas: np.ndarray
    vectors: np.ndarray
    certified: np.ndarray
    upper_bounds: np.ndarray
    solve_time: np.ndarray
    p: int
    method: str
    steps: list[RankOneResult] = dataclasses.field(default_factory=list)
    n_best: np.ndarray | None = None
    confirmed: np.ndarray | None = None

    @property
    def rank(self) -> int:
        """Number of deflation steps performed."""
        return int(self.lambdas.shape[-1])

    @property
    def gaps(self) -> np.ndarray:
        """Per-step gap ``upper_bound − |λ̂_j|``: how much better a global step could be."""
        return self.upper_bounds - np.abs(self.lambdas)

    def __getitem__(self, i: int) -> SROAResult:
        """The ``i``-th instance of a batched result."""
        return SROAResult(
            self.lambdas[i],
            self.vectors[i],
            self.certified[i],
            self.upper_bounds[i],
            self.solve_time[i],
            self.p,
            self.method,
            [step[i] for step in self.steps],
            None if self.n_best is None else self.n_best[i],
            None if self.confirmed is None else self.confirmed[i],
        )


@single_blas
def sroa_batch(
    Ts: ArrayLike,
    rank: int | None = None,
    method: str = "certified",
    *,
    rng: RngLike | Sequence[RngLike] = None,
    gap_tol: float = GAP_TOL,
    deflation: str = "auto",
    **options: Any,
) -> SROAResult:
    """Algorithm 1 on every tensor of a stack ``(B, n, ..., n)``, all steps batched.

    Each instance draws from its own stream in ``rng`` (one seed-like spawned into B, or B
    seed-likes), so results match one-at-a-time :func:`sroa` calls bit for bit.
    ``deflation`` is one of :data:`DEFLATION_MODES` (see :func:`sroa`).
    """
    if isinstance(Ts, TensorOperator):  # checked when it was built; its start policy
        options = operator_options(method, options)
    else:
        Ts = check_symmetric_tensor(Ts, "Ts", batched=True)
    B, n, p = Ts.shape[0], Ts.shape[1], Ts.ndim - 1
    r = n if rank is None else rank
    if isinstance(r, bool) or int(r) != r or not 1 <= int(r) <= n:
        raise InputError(
            f"rank: expected an integer number of steps 1 <= rank <= n = {n}, got {rank!r}",
            "give rank=None for n steps, or an integer between 1 and n",
        )
    r = int(r)
    rngs = as_rng_list(rng, B)
    if _deflation_mode(deflation, method, Ts) == "implicit":
        return _sroa_implicit(Ts, r, method, rngs, gap_tol, options)
    residual = Ts.copy()
    lambdas = np.empty((B, r))
    vectors = np.empty((B, n, r))
    certified = np.empty((B, r), dtype=bool)
    upper = np.empty((B, r))
    times = np.empty((B, r))
    steps = []
    for j in range(r):
        step = rank_one_of_checked(residual, method, rng=rngs, gap_tol=gap_tol, **options)
        steps.append(step)
        lambdas[:, j], vectors[:, :, j] = step.lam, step.x
        certified[:, j], upper[:, j], times[:, j] = (
            step.certified,
            step.upper_bound,
            step.solve_time,
        )
        # Deflation, Algorithm 1 line 4: T̂_j = T̂_{j-1} − λ̂_j v̂_j^{⊗p}.
        residual -= rank_one_tensor(step.lam, step.x, p)
    return SROAResult(
        lambdas, vectors, certified, upper, times, p, method, steps, *_start_stats(steps)
    )


def sroa(
    T: ArrayLike,
    rank: int | None = None,
    method: str = "certified",
    *,
    rng: RngLike = None,
    gap_tol: float = GAP_TOL,
    deflation: str = "auto",
    **options: Any,
) -> SROAResult:
    """Successive rank-one approximation of a symmetric tensor (Algorithm 1).

    Parameters
    ----------
    T : (n,)*p array_like
        Symmetric tensor (e.g. a nearly SOD ``T̂ = Σ λ_i v_i^{⊗p} + E``).
        Or a matrix-free operator (:func:`sroa_dist.structured_tensor`): local methods only,
        implicit deflation, no step certified.
    rank : int, optional
        Number of deflation steps ``r ≤ n`` (default ``n``).
    method : str
        Rank-one method for every step (see :func:`sroa_dist.rank_one`).
    rng : Generator, int or SeedSequence, optional
        Source of the local solvers' random starts.
    gap_tol, **options
        Passed to the rank-one method.
    deflation : {"auto", "explicit", "implicit"}
        ``"explicit"`` forms each deflated tensor ``T̂_j = T̂_{j-1} − λ̂_j v̂_j^{⊗p}`` (any
        method). ``"implicit"`` (local methods ``sshopm`` and ``power``) never forms it: every
        contraction of ``T̂_j`` is one of ``T̂`` minus ``Σ_{i≤j} λ̂_i (v̂_i·x)^{p-1} v̂_i``, so
        memory stays at one tensor; each step's unfolding bound comes from an updated Gram
        matrix, and ``sshopm`` also restarts from the previous step's other local maxima
        (leftovers). Equal to explicit deflation up to rounding (about ``1e-12`` relative on
        the values in tests; the iterates can then take different but equivalent paths).
        ``"auto"``: implicit for local methods when one tensor exceeds ``IMPLICIT_BYTES``
        (1 MiB), else explicit (which keeps small-n results bit for bit).

    Returns
    -------
    SROAResult
        With per-step :class:`RankOneResult` in ``steps``.
    """
    T = T.as_batch() if isinstance(T, TensorOperator) else check_symmetric_tensor(T, "T")[None]
    res = sroa_batch(T, rank, method, rng=[rng], gap_tol=gap_tol, deflation=deflation, **options)
    return res[0]


def _deflation_mode(deflation: str, method: str, Ts: np.ndarray) -> str:
    if deflation not in DEFLATION_MODES:
        raise InputError(
            f"deflation: expected one of {DEFLATION_MODES}, received {deflation!r}",
            "'auto' chooses; 'implicit' saves memory at large n for local methods",
        )
    local = resolve_method(method).implicit
    if isinstance(Ts, TensorOperator):
        check_local_method(method, resolve_method(method))
        if deflation == "explicit":
            raise InputError(
                "deflation: 'explicit' forms each deflated tensor, which a matrix-free operator "
                "never does; use 'implicit' or 'auto'",
                "use deflation='implicit' or 'auto' with a matrix-free operator",
            )
        return "implicit"
    if deflation == "implicit" and not local:
        raise InputError(
            f"deflation: method {method!r} needs the deflated tensor itself (its relaxation "
            "reads every entry); use deflation='explicit' or a local method (sshopm, power)",
            "use deflation='explicit' (or 'auto'), or a local method such as 'sshopm'",
        )
    if deflation == "auto":
        return "implicit" if local and Ts[0].nbytes > IMPLICIT_BYTES else "explicit"
    return deflation


def _start_stats(steps: list[RankOneResult]) -> tuple[np.ndarray, np.ndarray]:
    """``(B, r)`` arrays of ``n_best`` (``-1`` when unknown) and ``confirmed``."""
    B = len(steps[0].lam)
    n_best = np.stack(
        [np.full(B, -1) if s.n_best is None else np.asarray(s.n_best) for s in steps], axis=1
    )
    conf = np.stack(
        [np.zeros(B, bool) if s.confirmed is None else np.asarray(s.confirmed) for s in steps],
        axis=1,
    )
    return n_best.astype(np.int64), conf.astype(bool)


def _gram_bound(
    gram0: np.ndarray, W: np.ndarray, U: np.ndarray, lam: np.ndarray, p: int, slack: np.ndarray
) -> np.ndarray:
    """Spectral norm of the unfolding of ``T̂ − Σ_j λ_j u_j^{⊗p}`` from ``gram0 = M Mᵀ``.

    With ``k_j = u_j^{⊗(p-1)}`` and ``w_j = M k_j = T̂ u_j^{p-1}``, the residual unfolding is
    ``M − U Λ Kᵀ`` and its Gram matrix ``M Mᵀ − W Λ Uᵀ − U Λ Wᵀ + U Λ C Λ Uᵀ`` with
    ``C = (UᵀU)^{∘(p-1)}``: n × n work per step instead of a pass over the tensor. ``slack``
    (B,) is a worst-case rounding allowance on the Gram matrix, added before the square root
    so the result stays an upper bound.
    """
    WL = W * lam[:, None, :]
    C = np.matmul(U.transpose(0, 2, 1), U) ** (p - 1)
    G = gram0 - np.matmul(WL, U.transpose(0, 2, 1))
    G = G - np.matmul(U, WL.transpose(0, 2, 1))
    UL = U * lam[:, None, :]
    G = G + np.matmul(UL, np.matmul(C, UL.transpose(0, 2, 1)))
    top = np.linalg.eigvalsh(0.5 * (G + G.transpose(0, 2, 1)))[:, -1]
    return np.sqrt(np.maximum(top + slack, 0.0))


def _leftovers(
    X: np.ndarray, F: np.ndarray, G: np.ndarray, x: np.ndarray, keep: int
) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``keep`` distinct final iterates per instance away from the chosen ``x``, with their
    gradients: the other local maxima a step found (or is still climbing to), which stay near
    local maxima after ``x`` is deflated and so are nearly converged starts for the next step.
    ``(B, keep, n)`` twice, padded by repetition."""
    B, S, n = X.shape
    out, grad = np.empty((B, keep, n)), np.empty((B, keep, n))
    for b in range(B):
        chosen: list[int] = []
        cos = np.abs(X[b] @ X[b].T)
        for s in np.argsort(-F[b], kind="stable"):
            if abs(X[b, s] @ x[b]) >= 0.5 or (chosen and cos[s, chosen].max() > 0.99):
                continue
            chosen.append(int(s))
            if len(chosen) == keep:
                break
        rows = np.array(chosen or [int(np.argmax(F[b]))])[np.arange(keep) % max(1, len(chosen))]
        out[b], grad[b] = X[b, rows], G[b, rows]
    return out, grad


def _sroa_implicit(
    Ts: np.ndarray,
    r: int,
    method: str,
    rngs: list[np.random.Generator],
    gap_tol: float,
    options: dict[str, Any],
) -> SROAResult:
    """Algorithm 1 with implicit deflation (see :func:`sroa`, ``deflation="implicit"``)."""
    fn = resolve_method(method)
    B, n, p = Ts.shape[0], Ts.shape[1], Ts.ndim - 1
    check_options(method, {**options, "gap_tol": gap_tol}, n=n, p=p)
    # Every step runs on T̂ / 2^k, as the front door's steps do (one k per instance, from T̂:
    # the deflated tensors are no larger), so the Gram matrix and the deflation terms neither
    # underflow nor overflow; finish_step scales the answers back.
    norm = normalize(Ts)
    Tn = norm.T
    eps = np.finfo(float).eps
    if isinstance(Tn, TensorOperator):
        # Matrix-free: no unfolding to bound the steps with (upper_bound = inf, never
        # certified); the Frobenius norm, which scales the shift and tolerances, is exact.
        gram0, fro2 = None, Tn.fro2()
    else:
        M = Tn.reshape(B, n, -1)
        gram0 = np.matmul(M, M.transpose(0, 2, 1))
        fro2 = np.array([np.dot(m, m) for m in Tn.reshape(B, -1)])  # no n^p temporary
    # Worst-case rounding of the Gram entries (inner dimension n^{p-1}) and of the update.
    gamma = (n ** (p - 1) + 8 * n) * eps
    U = np.zeros((B, n, 0))
    W = np.zeros((B, n, 0))
    lams = np.zeros((B, 0))
    abs_sum = np.zeros(B)
    keep = int(options.get("n_starts", DEFAULT_N_STARTS))
    warm = None
    lambdas, certified, upper, times = (np.empty((B, r)) for _ in range(4))
    vectors = np.empty((B, n, r))
    steps: list[RankOneResult] = []
    for j in range(r):
        t0 = time.perf_counter()
        fro = np.sqrt(np.maximum(fro2, 0.0))
        defl = Deflation(U, lams, fro, 1.0, *(warm or (None, None)))
        slack = gamma * (fro2 + 2 * abs_sum * np.sqrt(np.maximum(fro2, 0)) + abs_sum**2)
        bound = np.full(B, np.inf) if gram0 is None else _gram_bound(gram0, W, U, lams, p, slack)
        out = MethodOutput.coerce(fn(Tn, rngs, defl, **options), method)
        done = finish_step(
            norm,
            out,
            method,
            gap_tol=gap_tol,
            elapsed=time.perf_counter() - t0,
            deflation=defl,
            unfolding_bound=bound,
            notes="implicit deflation",
        )
        x, lam = out.x, done.lam_n
        # T̂ x^{p-1} (undeflated) = deflated gradient + the deflation terms at x.
        w = done.grad_n + np.einsum(
            "bk,bik->bi", lams * np.einsum("bi,bik->bk", x, U) ** (p - 1), U
        )
        U = np.concatenate([U, x[:, :, None]], axis=2)
        W = np.concatenate([W, w[:, :, None]], axis=2)
        lams = np.concatenate([lams, lam[:, None]], axis=1)
        abs_sum = abs_sum + np.abs(lam)
        fro2 = fro2 - lam**2  # ‖R − λ x^{⊗p}‖² = ‖R‖² − λ² exactly when λ = R x^p, ‖x‖ = 1
        if out.final_grads is not None and options.get("warm", True):
            Xw, Gw = _leftovers(out.final_starts, out.final_values, out.final_grads, x, keep)
            # Their gradients under the next deflated tensor: subtract λ̂ (x·w)^{p-1} x.
            Gw -= (lam[:, None] * np.einsum("bsi,bi->bs", Xw, x) ** (p - 1))[..., None] * x[
                :, None, :
            ]
            warm = (Xw, Gw)
        res = done.result
        lambdas[:, j], vectors[:, :, j], upper[:, j] = res.lam, x, res.upper_bound
        certified[:, j], times[:, j] = res.certified, res.solve_time
        steps.append(res)
    return SROAResult(
        lambdas,
        vectors,
        certified.astype(bool),
        upper,
        times,
        p,
        method,
        steps,
        *_start_stats(steps),
    )
