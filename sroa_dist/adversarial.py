"""Worst-case perturbations: search symmetric ``E`` with ``‖E‖ = ε`` that maximise SROA's error.

Theorem 3.1 bounds SROA's errors for *every* ``E`` with ``‖E‖ ≤ ε``; random noise probes only
typical ones. :func:`worst_case` searches the sphere ``‖E‖ = ε`` (exact operator norm,
certified by the moment relaxation, so small ``n``) for a perturbation that maximises a chosen
error of SROA with certified (global) rank-one steps. The search is a seeded (1+1) evolution
strategy with the one-fifth success rule on the space of symmetric tensors, started from the
best of the structured families (the coherent tilt, a uniform shrink of the weights) and random
i.i.d. draws, whose mutations mix random and structured directions: derivative-free,
because SROA's output is piecewise smooth at best (the argmax of a step can jump).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .decomposition import sroa
from .metrics import match
from .noise import noise_tensor
from .norms import operator_norm
from .perturbations import coherent_tilt, register_perturbation
from .tensors import check_symmetric_tensor, identity_basis, sod_tensor

__all__ = ["METRICS", "WorstCaseResult", "tilt_alignment", "worst_case"]

#: Metrics :func:`worst_case` can maximise (see its docstring).
METRICS = ("lam", "vec", "first_failure")


@dataclasses.dataclass(frozen=True)
class WorstCaseResult:
    """The worst perturbation found and how the search got there.

    Attributes
    ----------
    E : ndarray, shape (n,)*p
        Symmetric, with operator norm ``eps`` (to the certified bracket ``norm_bracket``).
    metric : str
        The metric maximised.
    value : float
        The metric reached by ``E``.
    lam_err, vec_err : ndarray, shape (r,)
        Per-step errors of SROA on ``T + E`` after optimal matching.
    trace : ndarray, shape (n_evals,)
        Metric of every evaluated candidate, in order (the structured and random starts
        first); ``best_trace`` is its running maximum.
    best_trace : ndarray, shape (n_evals,)
    start : str
        The start the search began from (the best start by metric).
    start_values : dict
        Metric of each start.
    tilt_cosine : float
        Largest ``|⟨E, E_tilt,l⟩_F| / (‖E‖_F ‖E_tilt,l‖_F)`` over the coherent tilts toward
        each component ``l``: 1 means the search found a coherent tilt.
    tilt_component : int
        The ``l`` of that best-aligned tilt.
    norm_bracket : tuple of float
        Certified ``(lower, upper)`` of ``‖E‖``.
    eps : float
    lambdas, V : ndarray
        The SOD tensor ``T = Σ λ_i v_i^{⊗p}`` the search attacked.
    seed : Any
        The ``rng`` argument (the search is a pure function of it and the other arguments).
    """

    E: NDArray[np.float64]
    metric: str
    value: float
    lam_err: NDArray[np.float64]
    vec_err: NDArray[np.float64]
    trace: NDArray[np.float64]
    best_trace: NDArray[np.float64]
    start: str
    start_values: dict[str, float]
    tilt_cosine: float
    tilt_component: int
    norm_bracket: tuple[float, float]
    eps: float
    lambdas: NDArray[np.float64]
    V: NDArray[np.float64]
    seed: Any

    @property
    def n_evals(self) -> int:
        """Number of SROA runs the search spent."""
        return len(self.trace)


def tilt_alignment(E: ArrayLike, V: ArrayLike, lambdas: ArrayLike) -> tuple[float, int]:
    """Largest cosine ``|⟨E, E_tilt,l⟩_F| / (‖E‖_F ‖E_tilt,l‖_F)`` over tilts toward each ``l``,
    and that ``l``."""
    E = check_symmetric_tensor(E, "E")
    n, p = E.shape[0], E.ndim
    V, lam = np.asarray(V, dtype=float), np.asarray(lambdas, dtype=float)
    norm_e = float(np.linalg.norm(E))
    best, best_l = 0.0, 0
    for ell in range(V.shape[1]):
        tilt = coherent_tilt(n, p, V, lam, component=ell)[0]
        c = abs(float(np.vdot(E, tilt))) / max(norm_e * float(np.linalg.norm(tilt)), 1e-300)
        if c > best:
            best, best_l = c, ell
    return best, best_l


def _metric(kind: str, lam_err: np.ndarray, vec_err: np.ndarray, eps: float, radius: float):
    """(metric value, search score); the score breaks ties of the integer first-failure metric
    by the largest vector error so the search can climb plateaus."""
    if kind == "lam":
        v = float(np.max(lam_err)) / eps
        return v, (v,)
    if kind == "vec":
        v = float(np.max(vec_err))
        return v, (v,)
    failed = np.flatnonzero(vec_err > radius)
    v = float(len(vec_err) - failed[0]) if len(failed) else 0.0
    return v, (v, float(np.max(vec_err)))


def worst_case(
    n: int,
    p: int,
    eps: float,
    *,
    metric: str = "lam",
    budget: int = 100,
    rng: np.random.Generator | int | None = None,
    lambdas: ArrayLike | None = None,
    V: ArrayLike | None = None,
    starts: Sequence[str] = ("coherent-tilt", "sod-shrink", "gaussian"),
    n_random_starts: int = 2,
    step: float = 0.3,
    radius: float = 0.3,
    method: str = "certified",
) -> WorstCaseResult:
    """Search for a symmetric ``E`` with ``‖E‖ = eps`` maximising an error of SROA on ``T + E``.

    Parameters
    ----------
    n, p : int
        Dimension and order (certified steps need small ``n``: ``n <= 10`` for ``p = 3``).
    eps : float
        Operator norm of ``E`` (exact: every candidate is rescaled by its certified norm).
    metric : {"lam", "vec", "first_failure"}
        ``"lam"``: ``max_j |λ̂_j − λ_π(j)| / eps`` (Theorem 3.1 allows 2); ``"vec"``:
        ``max_j ‖v̂_j − v_π(j)‖``; ``"first_failure"``: ``r − j* + 1`` for the first step ``j*``
        (1-based) with vector error above ``radius``, 0 if none fails (earlier failure is
        larger).
    budget : int
        SROA evaluations in all, starts included (each costs one certified SROA and one
        certified norm).
    rng : Generator or seed
        The only source of randomness (random starts, mutations, solver starts).
    lambdas : (r,) array_like, optional
        Weights of ``T``; default ``1`` for every component except ``0.95`` for the last, so
        the deflation order is defined.
    V : (n, r) array_like, optional
        Orthonormal basis of ``T`` (default: the identity).
    starts : sequence of str
        Structured starts (``"coherent-tilt"``; ``"sod-shrink"``, ``-Σ v_i^{⊗p}``, which
        lowers every weight by ``eps``) and/or ``"gaussian"`` (``n_random_starts`` i.i.d.
        draws); the best start by metric begins the search.
    step : float
        Initial mutation size relative to ``‖E‖_F`` (adapted by the one-fifth rule).
    radius : float
        Recovery radius of ``"first_failure"``.
    method : str
        Rank-one method of SROA's steps (``"certified"``: global where tractable).

    Returns
    -------
    WorstCaseResult
    """
    if metric not in METRICS:
        raise ValueError(f"metric: expected one of {list(METRICS)}, received {metric!r}")
    if not (isinstance(budget, int) and budget >= 1):
        raise ValueError(f"budget: expected an integer >= 1 (SROA evaluations), got {budget!r}")
    eps = float(eps)
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps: expected a finite operator norm > 0, received {eps}")
    n, p = int(n), int(p)
    gen = np.random.default_rng(rng)
    V = identity_basis(n) if V is None else np.asarray(V, dtype=float)
    r = V.shape[1]
    if lambdas is None:
        lam = np.ones(r)
        lam[-1] = 0.95
    else:
        lam = np.broadcast_to(np.asarray(lambdas, dtype=float), (r,)).copy()
    T = sod_tensor(lam, V, p)
    solve_seed = int(gen.integers(2**63))
    norm_seed = int(gen.integers(2**63))

    def evaluate(D: np.ndarray) -> tuple[np.ndarray, float, tuple, np.ndarray, np.ndarray, tuple]:
        nr = operator_norm(D, "certified", rng=norm_seed)
        E = D * (eps / nr.value)
        res = sroa(T + E, method=method, rng=solve_seed)
        m = match(res, lam, V)
        lam_err, vec_err = np.asarray(m.lam_err), np.asarray(m.vec_err)
        value, score = _metric(metric, lam_err, vec_err, eps, radius)
        f = eps / nr.value
        return E, value, score, lam_err, vec_err, (nr.lower * f, nr.upper * f)

    candidates: list[tuple[str, np.ndarray]] = []
    for s in starts:
        if s == "coherent-tilt":
            candidates.append((s, coherent_tilt(n, p, V, lam)[0]))
        elif s == "sod-shrink":
            # -Σ v_i^{⊗p} (norm 1): every weight falls by eps, Theorem 2.2's first-order worst.
            candidates.append((s, -sod_tensor(np.ones(r), V, p)))
        elif s == "gaussian":
            for k in range(n_random_starts):
                candidates.append((f"gaussian-{k}", noise_tensor("gaussian", n, p, 1.0, rng=gen)))
        else:
            raise ValueError(
                f"starts: expected 'coherent-tilt', 'sod-shrink' or 'gaussian', received {s!r}"
            )
    if not candidates:
        raise ValueError("starts: expected at least one start")
    trace: list[float] = []
    start_values: dict[str, float] = {}
    best = None
    for name, D in candidates[:budget]:
        out = evaluate(D)
        trace.append(out[1])
        start_values[name] = out[1]
        if best is None or out[2] > best[1][2]:
            best = (name, out)
    assert best is not None
    start_name, (E, value, score, lam_err, vec_err, bracket) = best
    sigma = float(step)
    # Mutations: random symmetric directions, and with probability 1/3 a structured start, so
    # the search can combine structures (e.g. shrink every weight *and* tilt) that a random
    # direction in C(n+p-1, p) dimensions would rarely hit.
    pool = [D for name, D in candidates if not name.startswith("gaussian")]
    while len(trace) < budget:
        G = noise_tensor("gaussian", n, p, 1.0, rng=gen)
        if pool and gen.random() < 1 / 3:
            G = pool[int(gen.integers(len(pool)))]
        D = E / np.linalg.norm(E) + sigma * G / np.linalg.norm(G)
        out = evaluate(D)
        trace.append(out[1])
        if out[2] > score:
            E, value, score, lam_err, vec_err, bracket = out
            sigma *= 1.5
        else:
            sigma = max(sigma * 0.9, 1e-3)
    cos, ell = tilt_alignment(E, V, lam)
    tr = np.asarray(trace, dtype=float)
    return WorstCaseResult(
        E=E,
        metric=metric,
        value=value,
        lam_err=lam_err,
        vec_err=vec_err,
        trace=tr,
        best_trace=np.maximum.accumulate(tr),
        start=start_name,
        start_values=start_values,
        tilt_cosine=cos,
        tilt_component=ell,
        norm_bracket=(float(bracket[0]), float(bracket[1])),
        eps=eps,
        lambdas=lam,
        V=V,
        seed=rng,
    )


def _adversarial_draw(
    n: int,
    p: int,
    V: np.ndarray,
    lambdas: np.ndarray,
    rng: np.random.Generator,
    *,
    eps: float,
    budget: int = 40,
    metric: str = "lam",
) -> tuple[np.ndarray, float]:
    res = worst_case(n, p, eps, metric=metric, budget=int(budget), rng=rng, lambdas=lambdas, V=V)
    # The certified norm is eps up to the relaxation's bracket: state the attained value.
    return res.E, float(res.norm_bracket[0])


register_perturbation(
    "adversarial",
    _adversarial_draw,
    params={"budget": 40, "metric": "lam"},
    description="worst case found by sroa_dist.worst_case for the instance (small n)",
    needs_eps=True,
)
