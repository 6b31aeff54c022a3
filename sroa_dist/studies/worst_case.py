"""Worst-case perturbations: search symmetric ``E`` with ``‖E‖ = ε`` that maximise SROA's error.

Theorem 3.1 bounds SROA's errors for *every* ``E`` with ``‖E‖ ≤ ε``; random noise probes only
typical ones. :func:`worst_case` searches the sphere ``‖E‖ = ε`` (operator norm) for a
perturbation that maximises a chosen error of SROA, from the best of the structured families
(the coherent tilt, a uniform shrink of the weights) and random i.i.d. draws. Two searches
(``method=``): ``"es"``, a seeded (1+1) evolution strategy (derivative-free: SROA's output is
piecewise smooth, the argmax of a step can jump), and ``"gradient"``, Riemannian gradient
ascent through SROA's first-order conditions (:mod:`sroa_dist.decomposition.adjoint`) with
backtracking and restarts, which reaches larger ``n`` for the same number of SROA runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InputError
from ..methods import CERTIFIED_NORM_METHOD, METHODS, certified_tractable
from ..problems import coherent_tilt, noise_tensor, register_perturbation
from ..tensors import check_symmetric_tensor, identity_basis, sod_tensor
from ..threads import single_blas
from .worst_case_result import WorstCaseResult
from .worst_case_search import METRICS, SEARCHES, SMOOTH_METRICS, Objective, Point

__all__ = ["METRICS", "SEARCH_METHODS", "WorstCaseResult", "tilt_alignment", "worst_case"]

#: Search methods of :func:`worst_case` (``method=``).
SEARCH_METHODS = tuple(SEARCHES)


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


def _resolve_methods(
    method: str, step_method: str | None, norm_method: str | None, n: int, p: int
) -> tuple[str, str, str]:
    """(search, step method, norm method), with the defaults filled in."""
    if method not in SEARCHES:
        raise InputError(
            f"method: expected a search method, one of {list(SEARCHES)}, received {method!r}",
            "use one of the listed search methods (steps' method: step_method=...)",
        )
    tractable = certified_tractable(n, p)
    if step_method is None:
        # The ES keeps its original behaviour (certified steps); the gradient search is meant
        # to reach n where the relaxation is out of reach, so it falls back to SS-HOPM there.
        step_method = "certified" if method == "es" or tractable else "sshopm"
    if norm_method is None:
        norm_method = "certified" if method == "es" or tractable else "sshopm"
    for name, m in (("step_method", step_method), ("norm_method", norm_method)):
        if m not in METHODS:
            raise InputError(
                f"{name}: expected one of {list(METHODS)}, received {m!r}",
                "use one of the listed rank-one methods",
            )
    return method, step_method, norm_method


def _starts(
    starts: Sequence[Any], n: int, p: int, V: np.ndarray, lam: np.ndarray, k: int, gen: Any
) -> list[tuple[str, np.ndarray]]:
    candidates: list[tuple[str, np.ndarray]] = []
    for pos, s in enumerate(starts):
        if not isinstance(s, str):  # a given direction (e.g. a saved worst case's E)
            D = check_symmetric_tensor(s, f"starts[{pos}]")
            if D.shape != (n,) * p or not np.any(D):
                raise InputError(
                    f"starts[{pos}]: expected a nonzero symmetric tensor of shape {(n,) * p}, "
                    f"received shape {D.shape}",
                    "give a nonzero symmetric array of the searched shape, or a start's name",
                )
            candidates.append((f"given-{pos}", D))
        elif s == "coherent-tilt":
            candidates.append((s, coherent_tilt(n, p, V, lam)[0]))
        elif s == "sod-shrink":
            # -Σ v_i^{⊗p} (norm 1): every weight falls by eps, Theorem 2.2's first-order worst.
            candidates.append((s, -sod_tensor(np.ones(V.shape[1]), V, p)))
        elif s == "gaussian":
            for i in range(k):
                candidates.append((f"gaussian-{i}", noise_tensor("gaussian", n, p, 1.0, rng=gen)))
        else:
            raise InputError(
                f"starts: expected 'coherent-tilt', 'sod-shrink', 'gaussian' or an array, "
                f"received {s!r}",
                "use 'coherent-tilt', 'sod-shrink', 'gaussian' or a symmetric array",
            )
    if not candidates:
        raise InputError(
            "starts: expected at least one start",
            "give at least one start, e.g. starts=('coherent-tilt',)",
        )
    return candidates


@single_blas
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
    starts: Sequence[str | ArrayLike] = ("coherent-tilt", "sod-shrink", "gaussian"),
    n_random_starts: int = 2,
    step: float = 0.3,
    radius: float = 0.3,
    method: str = "es",
    step_method: str | None = None,
    norm_method: str | None = None,
    step_options: dict[str, Any] | None = None,
) -> WorstCaseResult:
    """Search for a symmetric ``E`` with ``‖E‖ = eps`` maximising an error of SROA on ``T + E``.

    Parameters
    ----------
    n, p : int
        Dimension and order.
    eps : float
        Operator norm of ``E``: every candidate ``D`` is used as ``eps · D / ‖D‖`` with ``‖D‖``
        from ``norm_method``.
    metric : {"lam", "vec", "first_failure"}
        ``"lam"``: ``max_j |λ̂_j − λ_π(j)| / eps`` (Theorem 3.1 allows 2); ``"vec"``:
        ``max_j ‖v̂_j − v_π(j)‖``; ``"first_failure"``: ``r − j* + 1`` for the first step ``j*``
        (1-based) with vector error above ``radius``, 0 if none fails (earlier failure is
        larger; ES only: it is integer-valued, so it has no gradient).
    budget : int
        SROA evaluations in all, starts and line-search trials included (each costs one SROA
        and one operator norm; the gradient search's derivatives cost no SROA run). Where the
        search's norm was an estimate and the relaxation is tractable, certifying the returned
        ``E`` adds one certified norm and one SROA run outside the budget.
    rng : Generator or seed
        The only source of randomness (random starts, mutations, solver starts, the norm's
        fresh starts at each evaluation).
    lambdas : (r,) array_like, optional
        Weights of ``T``; default ``1`` for every component except ``0.95`` for the last, so
        the deflation order is defined.
    V : (n, r) array_like, optional
        Orthonormal basis of ``T`` (default: the identity).
    starts : sequence of str
        Structured starts (``"coherent-tilt"``; ``"sod-shrink"``, ``-Σ v_i^{⊗p}``, which
        lowers every weight by ``eps``) and/or ``"gaussian"`` (``n_random_starts`` i.i.d.
        draws) and/or arrays (directions given by the caller, named ``"given-i"``, e.g. a saved
        worst case's ``E``); the best start by metric begins the search, and the gradient search
        restarts from the others (best first), then from new Gaussian draws, when it stalls.
    step : float
        Initial step relative to ``‖E‖_F``: the ES's mutation size (adapted by the one-fifth
        rule), the gradient search's first trial step (doubled after a success, halved on
        failure; below ``1e-2`` the ascent restarts).
    radius : float
        Recovery radius of ``"first_failure"``.
    method : {"es", "gradient"}
        The search. ``"es"``: (1+1) evolution strategy with mutations mixing random and
        structured directions. ``"gradient"``: Riemannian gradient ascent on the sphere
        ``{‖E‖ = eps}``. The derivative of SROA's output is exact on the branch of local
        maxima the forward pass selected (implicit function theorem on each step's
        ``T̂_{j-1} v^{p-1} = λ v``, ``‖v‖ = 1``, chained through the deflations; see
        :func:`sroa_dist.decomposition.adjoint.sroa_vjp`), taken for the step with the largest
        error. The norm's gradient at ``E`` is ``N = s x*^{⊗p}`` (``x*`` the maximiser of ``|E
        x^p|``). The search steps and retracts by rescaling with the operator norm (which keeps
        ``‖E‖ = eps`` to the norm's accuracy whatever the step), so it ascends the gradient of that
        composite, ``G − (⟨G, E⟩/eps) N``: it acts on the tangent space ``N^⊥`` as the Riemannian
        gradient does, and it is orthogonal to ``E``. Where several local maximisers of ``|E x^p|``
        are within 2 % of ``eps`` (a corner of the sphere, where the norm is not differentiable and
        worst cases tend to sit) it takes the steepest ascent direction over all of them (a
        least-norm point, see :meth:`sroa_dist.studies.worst_case_search.Objective.gradient`).
    step_method : str, optional
        Rank-one method of SROA's steps. Default: ``"certified"`` for the ES; for the
        gradient search ``"certified"`` where the relaxation is tractable for ``(n, p)``
        (:func:`sroa_dist.methods.cost.certified_tractable`), else ``"sshopm"`` (multi-start local
        steps with a Newton polish: the first-order conditions hold to machine precision).
    norm_method : str, optional
        Method computing ``‖D‖`` for the renormalisation. Default: ``"certified"`` where the
        relaxation is tractable for ``(n, p)`` (every candidate's ``‖E‖ = eps`` then holds to
        a validated bracket; for p = 3 about n ≤ 22 on one core), else ``"sshopm"``. A local
        method is never run with one fixed seed (a search learns to hide ``E``'s maximum from
        fixed starts, and the rescale then makes ``‖E‖`` larger than ``eps``): every
        evaluation draws fresh starts from a stream derived from ``rng`` and its index, plus
        spectral starts, the component starts ``±v_i`` and the maximisers of earlier
        evaluations (:class:`sroa_dist.studies.search_norm.SearchNorm`). Whatever
        ``norm_method``, the returned ``E`` is rescaled to its certified norm (and SROA rerun
        on it) wherever the relaxation is tractable; elsewhere its bracket is the estimate and
        the unfolding bound, and ``ratio_kind`` says ``"lower-bound"``.
    step_options : dict, optional
        Options of ``step_method`` (e.g. ``{"n_starts": 64}``).

    Returns
    -------
    WorstCaseResult
        ``value`` is the metric the search maximised (``"lam"``: the value error over ``eps``,
        the attained lower end of ``‖E‖``, so an upper bound of ``error / ‖E‖``); ``ratio`` is
        the value error over the upper end, a lower bound of it, and ``ratio_kind`` says
        whether the two meet (a certified bracket) or not (an estimate).
    """
    if metric not in METRICS:
        raise InputError(
            f"metric: expected one of {list(METRICS)}, received {metric!r}",
            "use one of the listed metrics",
        )
    if not (isinstance(budget, int) and budget >= 1):
        raise InputError(
            f"budget: expected an integer >= 1 (SROA evaluations), got {budget!r}",
            "give an integer budget >= 1, e.g. budget=40",
        )
    eps = float(eps)
    if not (math.isfinite(eps) and eps > 0):
        raise InputError(
            f"eps: expected a finite operator norm > 0, received {eps}", "give a finite eps > 0"
        )
    n, p = int(n), int(p)
    method, step_method, norm_method = _resolve_methods(method, step_method, norm_method, n, p)
    if method == "gradient" and metric not in SMOOTH_METRICS:
        raise InputError(
            f"metric: the gradient search needs one of {list(SMOOTH_METRICS)} ({metric!r} is "
            "integer-valued, so its gradient is zero)",
            "use method='es' with this metric",
        )
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
    obj = Objective(
        T, lam, V, eps, metric, radius, step_method, norm_method, solve_seed, norm_seed,
        dict(step_options or {}),
    )  # fmt: skip
    candidates = _starts(starts, n, p, V, lam, n_random_starts, gen)
    start_values: dict[str, float] = {}
    evaluated: list[tuple[str, Point]] = []
    for name, D in candidates[:budget]:
        pt = obj(D)
        start_values[name] = pt.value
        evaluated.append((name, pt))
    # The best start (first among equals) begins; stable sort keeps that order for restarts.
    ranked = sorted(evaluated, key=lambda e: e[1].score, reverse=True)
    start_name, start = ranked[0]
    pool = [D for name, D in candidates if not name.startswith("gaussian")]
    best = SEARCHES[method](obj, start, pool, budget, gen, step, restarts=[pt for _, pt in ranked])
    if certified_tractable(n, p):  # whatever the search's norm, the E returned is certified
        best = obj.certify(best, CERTIFIED_NORM_METHOD)
    cos, ell = tilt_alignment(best.E, V, lam)
    tr = np.asarray(obj.trace, dtype=float)
    return WorstCaseResult(
        E=best.E,
        metric=metric,
        value=best.value,
        lam_err=best.lam_err,
        vec_err=best.vec_err,
        trace=tr,
        best_trace=np.maximum.accumulate(tr),
        start=start_name,
        start_values=start_values,
        tilt_cosine=cos,
        tilt_component=ell,
        norm_bracket=(float(best.bracket[0]), float(best.bracket[1])),
        eps=eps,
        lambdas=lam,
        V=V,
        seed=rng,
        method=method,
        step_method=step_method,
        norm_method=norm_method,
        norm_certified=best.certified,
        ratio=float(np.max(best.lam_err)) / float(best.bracket[1]),
        ratio_kind="certified" if best.certified else "lower-bound",
        solve_seed=solve_seed,
        norm_seed=norm_seed,
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
    # A certified bracket is the norm to the relaxation's tolerance: state its attained end.
    # An estimate is no norm to state (the sweep would store it as exact): let the sweep bound it.
    return res.E, (float(res.norm_bracket[0]) if res.norm_certified else None)


register_perturbation(
    "adversarial",
    _adversarial_draw,
    params={"budget": 40, "metric": "lam"},
    description="worst case found by sroa_dist.worst_case for the instance (small n)",
    needs_eps=True,
)
