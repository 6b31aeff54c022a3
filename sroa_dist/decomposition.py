"""Successive rank-one approximation (SROA, the paper's Algorithm 1) of symmetric tensors."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .solvers import GAP_TOL, RankOneResult, RngLike, rank_one_batch
from .tensors import as_rng_list, check_symmetric_tensor, rank_one_tensor

__all__ = ["SROAResult", "sroa", "sroa_batch"]


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
    """

    lambdas: np.ndarray
    vectors: np.ndarray
    certified: np.ndarray
    upper_bounds: np.ndarray
    solve_time: np.ndarray
    p: int
    method: str
    steps: list[RankOneResult] = dataclasses.field(default_factory=list)

    @property
    def rank(self) -> int:
        """Number of deflation steps performed."""
        return int(self.lambdas.shape[-1])

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
        )


def sroa_batch(
    Ts: ArrayLike,
    rank: int | None = None,
    method: str = "certified",
    *,
    rng: RngLike | Sequence[RngLike] = None,
    gap_tol: float = GAP_TOL,
    **options: Any,
) -> SROAResult:
    """Algorithm 1 on every tensor of a stack ``(B, n, ..., n)``, all steps batched.

    Each instance draws from its own stream in ``rng`` (one seed-like spawned into B, or B
    seed-likes), so results match one-at-a-time :func:`sroa` calls bit for bit.
    """
    Ts = check_symmetric_tensor(Ts, "Ts", batched=True)
    B, n, p = Ts.shape[0], Ts.shape[1], Ts.ndim - 1
    r = n if rank is None else rank
    if isinstance(r, bool) or int(r) != r or not 1 <= int(r) <= n:
        raise ValueError(
            f"rank: expected an integer number of steps 1 <= rank <= n = {n}, got {rank!r}"
        )
    r = int(r)
    rngs = as_rng_list(rng, B)
    residual = Ts.copy()
    lambdas = np.empty((B, r))
    vectors = np.empty((B, n, r))
    certified = np.empty((B, r), dtype=bool)
    upper = np.empty((B, r))
    times = np.empty((B, r))
    steps = []
    for j in range(r):
        step = rank_one_batch(residual, method, rng=rngs, gap_tol=gap_tol, **options)
        steps.append(step)
        lambdas[:, j], vectors[:, :, j] = step.lam, step.x
        certified[:, j], upper[:, j], times[:, j] = (
            step.certified,
            step.upper_bound,
            step.solve_time,
        )
        # Deflation, Algorithm 1 line 4: T̂_j = T̂_{j-1} − λ̂_j v̂_j^{⊗p}.
        residual -= rank_one_tensor(step.lam, step.x, p)
    return SROAResult(lambdas, vectors, certified, upper, times, p, method, steps)


def sroa(
    T: ArrayLike,
    rank: int | None = None,
    method: str = "certified",
    *,
    rng: RngLike = None,
    gap_tol: float = GAP_TOL,
    **options: Any,
) -> SROAResult:
    """Successive rank-one approximation of a symmetric tensor (Algorithm 1).

    Parameters
    ----------
    T : (n,)*p array_like
        Symmetric tensor (e.g. a nearly SOD ``T̂ = Σ λ_i v_i^{⊗p} + E``).
    rank : int, optional
        Number of deflation steps ``r ≤ n`` (default ``n``).
    method : str
        Rank-one method for every step (see :func:`sroa_dist.rank_one`).
    rng : Generator, int or SeedSequence, optional
        Source of the local solvers' random starts.
    gap_tol, **options
        Passed to the rank-one method.

    Returns
    -------
    SROAResult
        With per-step :class:`RankOneResult` in ``steps``.
    """
    T = check_symmetric_tensor(T, "T")
    res = sroa_batch(T[None], rank, method, rng=[rng], gap_tol=gap_tol, **options)
    return res[0]
