"""How often one random start of the power method escapes a perturbation's attractor.

The robust tensor power method (Anandkumar et al.) draws ``L`` uniform starts, runs ``N``
unshifted power iterations from each and keeps the start of largest ``T x^p``. Where a
perturbation pulls every start toward one direction ``u`` (the ``attractor`` family), a step
succeeds when at least one start reaches a component instead; with per-start escape
probability ``q`` and independent starts that is ``1 − (1 − q)^L``, for any budget ``L``. This
module measures ``q`` directly, from many single starts on the tensor one SROA step sees: the
weights still to be found, ``r`` of them, plus the whole perturbation (the earlier components
deflated exactly: what global steps leave, up to their small residuals).

:func:`whole_sroa` runs one whole SROA on the same family (identity basis, unit weights) and
says which steps found a component not found before (:func:`step_successes`): the measurement
``1 − (1 − q)^L`` is confirmed against. Numerics only: the package's own power iterations and
SROA on matrix-free operators; the ``escape`` sweep kind
(:mod:`sroa_dist.sweep.kinds.start_escape`) fans them out and stores them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..decomposition import sroa
from ..errors import InputError
from ..methods import aghkt_budget, power_iterations, random_starts
from ..operators import StructuredTensor, SymmetricProducts
from ..problems import attractor_factored, structured_tensor
from .criteria import DEFAULT_RADIUS

__all__ = [
    "DEFAULT_RADIUS",
    "ESCAPE_FAMILIES",
    "EscapeResult",
    "SroaOutcome",
    "escape_probability",
    "start_escapes",
    "step_success",
    "step_successes",
    "whole_sroa",
    "wilson_interval",
]

#: Perturbation families whose escape this module can measure (their factored form per stage).
ESCAPE_FAMILIES = ("attractor",)

# DEFAULT_RADIUS (0.3, from .criteria): a start escaped when it ends within this distance of a
# component still to be found, the threshold studies' vector bound.


@dataclasses.dataclass(frozen=True)
class EscapeResult:
    """Per-start escape probability of the power method at one ``(n, ε, r)``.

    Attributes
    ----------
    q : float
        Fraction of starts that ended within ``radius`` of a component still to be found.
    interval : (float, float)
        Its 95 % Wilson interval.
    n, p, r : int
        Dimension, order and the number of components still to be found.
    eps : float
        ``‖E‖``.
    n_starts, n_iter : int
        Starts measured and power iterations per start.
    hits : int
        Starts that escaped (``q · n_starts``).
    """

    q: float
    interval: tuple[float, float]
    n: int
    p: int
    r: int
    eps: float
    n_starts: int
    n_iter: int
    hits: int = 0


def escape_probability(
    n: int,
    eps: float,
    *,
    p: int = 3,
    remaining: int | None = None,
    n_starts: int = 1000,
    n_iter: int | None = None,
    radius: float = DEFAULT_RADIUS,
    rng: int | np.random.SeedSequence = 0,
) -> EscapeResult:
    """Measure ``q(n, ε)``: the probability that one uniform start, after ``n_iter`` power
    iterations, ends within ``radius`` of a component, on ``Σ_{i<r} e_i^{⊗p} + ε·E`` with ``E``
    the ``attractor`` of all ``n`` components (unit weights; the family turns with the basis
    and the starts are uniform, so the identity basis loses nothing).

    Parameters
    ----------
    n : int
        Dimension (= rank).
    eps : float
        ``‖E‖ > 0``.
    p : int
        3 or 4.
    remaining : int, optional
        ``r``, the components still to be found: ``n`` (default) is SROA's first step, 1 its
        last.
    n_starts : int
        Starts measured.
    n_iter : int, optional
        Power iterations per start; default the AGHKT budget's ``N`` for ``(n, ε)``
        (:func:`sroa_dist.methods.builtin.aghkt_budget`).
    radius : float
        Recovery radius.
    rng : int or SeedSequence
        Seed of the starts.
    """
    if isinstance(n, bool) or int(n) != n or n < 2:
        raise InputError(f"n: expected an integer >= 2, received {n!r}", "e.g. n=256")
    n = int(n)
    r = n if remaining is None else remaining
    if isinstance(r, bool) or int(r) != r or not 1 <= r <= n:
        raise InputError(f"remaining: expected an integer in [1, {n}], received {r!r}", "e.g. 1")
    if not (isinstance(eps, (int, float)) and eps > 0):
        raise InputError(f"eps: expected a number > 0, received {eps!r}", "e.g. eps=0.3")
    if not (isinstance(n_starts, int) and n_starts >= 1):
        raise InputError(f"n_starts: expected an integer >= 1, received {n_starts!r}", "1000")
    if not 0 < radius < math.sqrt(2):
        raise InputError(f"radius: expected a number in (0, √2), received {radius!r}", "0.3")
    iters = aghkt_budget(n, float(eps))[1] if n_iter is None else int(n_iter)
    basis = np.eye(n)
    sod = SymmetricProducts((basis[:, : int(r)],), (int(p),), np.ones(int(r)))
    E, _ = attractor_factored(n, p, basis, np.ones(n))
    T = StructuredTensor(((sod, E.scaled(float(eps))),), batched=True)
    hits = start_escapes(T, basis[:, : int(r)], int(p), n_starts, iters, radius, rng)
    return EscapeResult(
        q=hits / n_starts,
        interval=wilson_interval(hits, n_starts),
        n=n,
        p=int(p),
        r=int(r),
        eps=float(eps),
        n_starts=int(n_starts),
        n_iter=int(iters),
        hits=hits,
    )


def start_escapes(
    T: Any,
    components: np.ndarray,
    p: int,
    n_starts: int,
    n_iter: int,
    radius: float = DEFAULT_RADIUS,
    rng: int | np.random.SeedSequence | np.random.Generator = 0,
) -> int:
    """How many of ``n_starts`` uniform starts end within ``radius`` of a component after
    ``n_iter`` unshifted power iterations on ``T``: the count behind every ``q`` measured here.

    ``T`` is a batch of one tensor, formed ``(1, n, …, n)`` or a batched operator;
    ``components`` holds the components a start may reach as columns (``(n, r)``, unit norm, in
    ``T``'s coordinates). Odd ``p``: a start must reach ``+v_i`` (the maximiser of ``T x^p``
    for ``λ_i > 0``); even ``p``: ``±v_i``.
    """
    X = random_starts([np.random.default_rng(rng)], int(n_starts), components.shape[0])
    X = power_iterations(T, X, int(n_iter))[0]
    overlap = X @ components
    best = overlap.max(axis=1) if p % 2 else np.abs(overlap).max(axis=1)
    return int(np.sum(best >= 1 - radius**2 / 2))  # ‖x − v‖ ≤ radius


def step_success(q: float | np.ndarray, starts: int) -> float | np.ndarray:
    """``1 − (1 − q)^L``: the probability that some start of ``L`` independent ones escapes."""
    return 1.0 - (1.0 - np.asarray(q, dtype=float)) ** int(starts)


def wilson_interval(k: int, m: int, z: float = 1.959964) -> tuple[float, float]:
    """The 95 % (``z``) Wilson score interval of a binomial proportion ``k / m`` (``m >= 1``):
    it keeps its coverage at ``k = 0`` and ``k = m``, where the q of this study often lies."""
    if m < 1:
        return (math.nan, math.nan)
    phat = k / m
    den = 1 + z * z / m
    mid = (phat + z * z / (2 * m)) / den
    half = z * math.sqrt(phat * (1 - phat) / m + z * z / (4 * m * m)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def step_successes(vectors: np.ndarray, radius: float = DEFAULT_RADIUS) -> np.ndarray:
    """Per SROA step: did it end within ``radius`` of a component not found before?

    ``vectors`` holds the steps' vectors as columns, in the components' coordinates (the
    identity basis: as they are). A step whose nearest component an earlier step already
    found fails, so a run that finds one component twice has lost another.
    """
    found: set[int] = set()
    ok = np.zeros(vectors.shape[1], dtype=bool)
    for j in range(vectors.shape[1]):
        i = int(np.argmax(vectors[:, j]))
        if i not in found and vectors[i, j] >= 1 - radius**2 / 2:
            ok[j] = True
            found.add(i)
    return ok


@dataclasses.dataclass(frozen=True)
class SroaOutcome:
    """One whole SROA on the attractor family: which steps found a new component.

    Attributes
    ----------
    found : (n,) bool array
        Step ``j`` (0-based) ended within the radius of a component not found before.
    first_lost : int
        1-based index of the first step that found none (0: every step found one).
    u_overlap, weight : float
        That step's vector's overlap with the attractor's direction ``u = Σ v_i/√n`` and its
        weight (NaN when no step was lost): a lost step captured by ``u`` has overlap near ±1.
    n_starts, n_iter : int
        The method's starts and iterations per step (0 where the method has no such budget).
    """

    found: np.ndarray
    first_lost: int
    u_overlap: float
    weight: float
    n_starts: int
    n_iter: int


def whole_sroa(
    n: int,
    eps: float,
    *,
    p: int = 3,
    method: str = "power",
    n_starts: int | None = None,
    n_iter: int | None = None,
    global_check: bool = False,
    radius: float = DEFAULT_RADIUS,
    rng: int | np.random.SeedSequence = 0,
    options: Mapping[str, Any] | None = None,
) -> SroaOutcome:
    """One whole SROA (n steps) of ``Σ_i e_i^{⊗p} + ε·E`` with ``E`` the attractor (identity
    basis, unit weights, matrix-free), and which of its steps found a new component.

    ``method`` ``"power"`` takes ``n_starts`` (``L``) and ``n_iter`` (``N``) per step;
    ``"sshopm"`` its defaults. ``global_check`` checks every step and redoes it on the global
    branch (global steps, up to the check's own starts). ``options``: further method options
    (an older method revision's), under the budget.
    """
    T = structured_tensor(int(p), np.ones(int(n)), family="attractor", eps=float(eps))
    budget: dict[str, int] = {}
    if method == "power":
        budget = {"n_starts": int(n_starts or 20), "n_iter": int(n_iter or 30)}
    kwargs = {**(options or {}), **budget}
    res = sroa(T, method=method, rng=rng, global_check=global_check, redo=global_check, **kwargs)
    V = np.asarray(res.vectors)
    ok = step_successes(V if p % 2 else np.abs(V), radius)
    lost = 0 if ok.all() else int(np.argmin(ok)) + 1
    u = np.ones(int(n)) / math.sqrt(n)
    return SroaOutcome(
        found=ok,
        first_lost=lost,
        u_overlap=float(V[:, lost - 1] @ u) if lost else math.nan,
        weight=float(res.lambdas[lost - 1]) if lost else math.nan,
        n_starts=budget.get("n_starts", 0),
        n_iter=budget.get("n_iter", 0),
    )
