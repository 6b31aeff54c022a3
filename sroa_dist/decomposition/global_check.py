"""The global check of a local SROA step: the best value a set of check starts reaches on the
step's tensor, against the value the step took.

The paper's SROA takes the global best rank-one approximation at every step; a local method
(SS-HOPM, the power method) takes the best local maximum its starts reached. Where those
differ the decomposition leaves the paper's algorithm: at p = 3, n = 128, on the coherent
tilt above the threshold, SS-HOPM deflates the tilted component at step 3 (λ̂ = 0.949) while
a local maximum of 1.011 remains near a component not yet deflated. A certificate settles
such a question only up to n ≈ 30 (the moment relaxation's size); beyond it this check
bounds the step from below: if a check start climbs higher than the step, the step was not
global, and by how much is :func:`check_step`'s gap.

Check starts of step j (each ascended with the monotone-shift SS-HOPM on the deflated tensor
``T̂_{j-1}``, never formed, both signs for even p):

* the remaining component estimates: the components an SROA of the same tensor found (its
  vectors) that the decomposition so far has not deflated (``|cos| < 0.99`` with every
  deflated vector and with the step's own), screened by their value on ``T̂_{j-1}`` (from
  one contraction per SROA, not per step), the :data:`CHECK_ESTIMATES` best ascended;
* :data:`CHECK_SPECTRAL` spectral starts (extreme eigenvectors of ``T̂_{j-1}(I, I, θ, …)``);
* :data:`CHECK_RANDOM` uniform random starts,

the last two drawn from a stream spawned off the instance's own: 8 starts per step.

Under ``sshopm``'s ``shared_check`` (revision 7, implicit deflation) the same draws are made
per step in the same order (:class:`CheckDraws`), and each step's own Lanczos run eigensolves
its check's contraction with the step's two (the method returns the check's spectral starts):
the same kinds of starts from the same stream, one eigensolve per step instead of two.

Certified steps are not checked: their certificate bounds the same gap by proof.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..integer_powers import ipow
from ..methods import (
    CONVERGED_SPECTRAL,
    Deflation,
    ascent_deflated,
    contraction_starts,
    deflated_values,
    newton_polish,
    random_starts,
    spectral_starts,
)
from ..tensors import FloatArray

__all__ = [
    "CHECK_ESTIMATES",
    "CHECK_RANDOM",
    "CHECK_SPECTRAL",
    "GLOBAL_RTOL",
    "CheckDraws",
    "CheckPoint",
    "check_step",
    "estimate_values",
    "remaining_estimates",
]

#: A step is non-global when the check found a value higher than the step's by more than this
#: fraction of ``‖T̂_{j-1}‖_F``: the certification tolerance (``GAP_TOL``), so a step passes
#: the check exactly when a certificate at the default tolerance could have called it global.
GLOBAL_RTOL = 1e-6
#: Remaining component estimates ascended per check (the best by their value on the step's
#: tensor): the issue's undeflated component sits at the top of that list.
CHECK_ESTIMATES = 4
#: Spectral starts per check (both extreme eigenvectors of one random contraction; the step's
#: own ``sshopm`` used four others): an n × n contraction and eigensolve on a formed tensor, a
#: Lanczos run on Hessian-vector products under the large-n engine (``ascent.ENGINES``).
CHECK_SPECTRAL = 2
#: Uniform random starts per check.
CHECK_RANDOM = 2
#: An estimate this close to a deflated vector (``|cos|``) is that component, already taken.
_DEFLATED_COS = 0.99
#: The best point is the step's own maximum when ``|cos|`` with it is at least this.
_SAME_POINT_COS = 0.999
#: Ascent settings of the check: each start only has to reach its basin (a step of 1e-3 leaves
#: the value about 1e-6 below the maximum's); the Newton polish of the best point delivers the
#: accuracy wherever it is within :data:`_POLISH_WITHIN` of the step's value.
_MAX_ITER, _TOL = 100, 1e-3
#: Relative distance to the step's value below which the best point is polished.
_POLISH_WITHIN = 1e-4


@dataclasses.dataclass(frozen=True)
class CheckPoint:
    """The best point the check starts of one step reached (normalised units).

    Attributes
    ----------
    objective : float
        The step's objective there: ``T̂_{j-1} x^p`` (odd p) or ``|T̂_{j-1} x^p|`` (even p).
    value : float
        ``T̂_{j-1} x^p`` (signed; NaN where the best point was the step's own, not evaluated).
    x : (n,) ndarray
        The point (unit norm), polished.
    n_starts : int
        Check starts ascended.
    """

    objective: float
    value: float
    x: FloatArray
    n_starts: int


class CheckDraws:
    """The random part of the check starts of every step of one instance, drawn from the
    check's stream in step order as :func:`check_step` draws them (for step ``j``: the
    ``CHECK_SPECTRAL / 2`` contraction vectors of its spectral starts, then its
    ``CHECK_RANDOM`` uniform starts), but on demand by step, so the step itself can eigensolve
    its check's contractions before the check runs (``shared_check``), and a step computed
    again after a redo gets the same draws."""

    def __init__(self, rng: np.random.Generator, n: int) -> None:
        self.rng, self.n = rng, n
        self.theta: list[FloatArray] = []
        self.uniform: list[FloatArray] = []

    def at(self, j: int) -> tuple[FloatArray, FloatArray]:
        """Step ``j``'s contraction vectors ``(C, n)`` and uniform starts ``(CHECK_RANDOM, n)``."""
        while len(self.theta) <= j:
            self.theta.append(random_starts([self.rng], -(-CHECK_SPECTRAL // 2), self.n)[0])
            self.uniform.append(random_starts([self.rng], CHECK_RANDOM, self.n)[0])
        return self.theta[j], self.uniform[j]


def estimate_values(Tn: FloatArray, E: FloatArray) -> FloatArray:
    """``T̂ e_k^p`` of the undeflated tensor ``Tn (1, n, …, n)`` (array or operator) at the
    estimates ``E (m, n)``: ``(m,)``, one contraction for every step of an SROA."""
    if len(E) == 0:
        return np.zeros(0)
    return deflated_values(Tn, E[None])[1][0]


def remaining_estimates(
    E: FloatArray,
    base: FloatArray,
    U: FloatArray,
    lam: FloatArray,
    x: FloatArray,
    p: int,
    C: FloatArray | None = None,
    Cp: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray]:
    """The estimates ``E (m, n)`` that are not yet deflated, with their objective on the step's
    tensor ``T̂ − Σ_i lam_i u_i^{⊗p}`` (``U (n, k)``), from their undeflated values ``base
    (m,)``: ``(E', objective')``, best first. Estimates at a deflated vector or at the step's
    own ``x`` are left out. ``C``: ``E @ U`` when the caller keeps it up to date (the large-n
    engine: one column per step instead of an ``O(m·n·k)`` product per step), and ``Cp``
    its ``p``-th powers, likewise kept (a pow per entry per step cost more than the product)."""
    C = E @ U if C is None else C  # (m, k)
    Cp = ipow(C, p) if Cp is None else Cp
    values = base - Cp @ lam if U.shape[1] else base.copy()
    taken = np.abs(C).max(axis=1, initial=0.0) >= _DEFLATED_COS
    taken |= np.abs(E @ x) >= _DEFLATED_COS
    objective = values if p % 2 else np.abs(values)
    keep = np.flatnonzero(~taken)
    order = keep[np.argsort(-objective[keep], kind="stable")]
    return E[order], objective[order]


def check_step(
    Tn: FloatArray,
    deflation: Deflation,
    estimates: FloatArray,
    rng: np.random.Generator,
    against: float = -np.inf,
    own: FloatArray | None = None,
    engine: str = "auto",
    spectral_low_dim: int | None = None,
    drawn: tuple[FloatArray, FloatArray] | None = None,
    spectral: FloatArray | None = None,
    polish_rtol: float = 1e-14,
    spectral_tol: float = CONVERGED_SPECTRAL,
) -> CheckPoint:
    """The best point of a step's check starts (see the module docstring).

    Parameters
    ----------
    Tn : (1, n, …, n) ndarray or operator
        The undeflated tensor, normalised (as SROA's steps see it).
    deflation : Deflation
        The deflation terms before this step (one instance; ``fro`` the step tensor's
        Frobenius norm, which scales the ascent's shift).
    estimates : (m, n) ndarray
        Remaining component estimates, best first (:func:`remaining_estimates`); the first
        :data:`CHECK_ESTIMATES` are ascended.
    rng : Generator
        The check's own stream (spectral and random starts).
    against : float
        The step's own objective: the best point is polished (Newton steps, to machine
        precision) only where the ascent brought it within ``1e-4·(1 + |against|)`` of it or
        above, where its exact value decides the gap's sign; below that the ascent's value
        (about 1e-6 below its maximum's) stands.
    own : (n,) ndarray, optional
        The step's own point: a best point at it (``|cos| >= 0.999``) is the step's maximum
        again, reported at ``against`` (gap 0) without polishing.
    engine : str
        The engine of the spectral starts and the polish on a matrix-free operator (the
        method's ``engine`` option, :data:`sroa_dist.methods.ascent.ENGINES`).
    spectral_low_dim : int, optional
        Where the large-n engine's Lanczos run accepts an even order's lower end (the
        method's ``spectral_low_dim`` option, :data:`sroa_dist.methods.ascent.LOW_END_DIM`).
    drawn : ((C, n), (CHECK_RANDOM, n)) ndarrays, optional
        This step's draws (:meth:`CheckDraws.at`) instead of drawing from ``rng``.
    spectral : (2C, n) ndarray, optional
        With ``drawn``: the spectral starts of its contractions, as the step's own run
        computed them (``shared_check``); ``None``: computed here.
    polish_rtol : float
        The polish's MINRES tolerance on the large-n engine (the method's ``polish_rtol``).
    spectral_tol : float
        The residual at which the large-n engine's Lanczos run accepts a spectral start (the
        method's ``spectral_tol``, :data:`sroa_dist.methods.ascent.SPECTRAL_TOL`).
    """
    n, p = Tn.shape[1], Tn.ndim - 1
    defl = deflation.cold()
    parts = [estimates[:CHECK_ESTIMATES]]
    if drawn is None:
        parts.append(
            spectral_starts(
                Tn, [rng], CHECK_SPECTRAL, defl, engine, spectral_low_dim, tol=spectral_tol
            )[0]
        )
        parts.append(random_starts([rng], CHECK_RANDOM, n)[0])
    else:
        theta, uniform = drawn
        if spectral is None:
            spectral = contraction_starts(
                Tn, theta[None], defl, engine, spectral_low_dim, tol=spectral_tol
            )[0]
        parts += [spectral[:CHECK_SPECTRAL], uniform]
    X0 = np.concatenate(parts)[None]
    signs = [defl] if p % 2 else [defl, defl.negated()]
    n_starts = int(X0.shape[1]) * len(signs)
    best_f, best_x = -np.inf, X0[0, 0]
    for k, d in enumerate(signs):
        # Even p, the second sign (−T x^p): as in sshopm's own steps, its starts stop climbing
        # once they are all below the best value seen (the step's or the first sign's);
        # for a tensor of positive weights they wander a flat region near 0 otherwise.
        floor = np.array([max(best_f, against)]) if k else None
        X, F, _, _ = ascent_deflated(
            Tn, X0, _MAX_ITER, _TOL, "monotone", d, lazy=bool(k), floor=floor
        )
        s = int(np.argmax(F[0]))
        if F[0, s] > best_f:
            best_f, best_x = float(F[0, s]), X[0, s]
    x = best_x / np.linalg.norm(best_x)
    if own is not None and abs(float(x @ own)) >= _SAME_POINT_COS:
        return CheckPoint(float(against), float("nan"), np.asarray(own, dtype=float), n_starts)
    if best_f >= against - _POLISH_WITHIN * (1.0 + abs(against)):
        x = newton_polish(Tn, best_x[None], deflation=defl, engine=engine, rtol=polish_rtol)[0]
    x = x / np.linalg.norm(x)
    value = float(deflated_values(Tn, x[None, None], defl)[1][0, 0])
    objective = value if p % 2 else abs(value)
    return CheckPoint(objective, value, x, n_starts)
