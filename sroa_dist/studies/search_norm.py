"""The operator norm an adversarial search rescales its candidates by, built so that the search
cannot learn to fool it.

A search that keeps ``‖E‖ = ε`` by rescaling every candidate ``D`` with a norm *estimate* is
itself an adversary of that estimate: ascending SROA's error, it is rewarded for every ``D``
whose largest value ``|D x^p|`` the estimate misses (the estimate reports less, the rescale
makes ``E`` larger than ``ε``, SROA's error grows). With one fixed seed for the whole search
it learns to hide ``D``'s maximum from exactly those starts (issue 33: at ``n = 12`` a
fixed-seed SS-HOPM reported 0.2358 for a worst case whose certified norm is 0.38927, its
maximiser next to a component ``v_12`` of ``T``). :class:`SearchNorm` is the one norm every
search of :mod:`sroa_dist.studies` rescales by:

* a *global* method (``global_steps``, e.g. ``"certified"``, the moment relaxation where it is
  tractable): its bracket is validated, whatever the starts;
* a *local* method (``"sshopm"``, ...): never with a fixed seed. Each evaluation draws fresh
  starts from its own stream, derived from the search's seed and the evaluation's index (so
  the search stays a pure function of its inputs, yet no later candidate can adapt to the
  starts an earlier one was measured from), the method's spectral starts, and an ascent from
  the component starts ``±v_i`` of ``T`` (where a spike hides best: SROA's errors are largest
  there) and from the maximisers of earlier evaluations. The value is still a lower bound;
  the upper end of the bracket is the unfolding bound, so the bracket is honest, just wide.

A fixed-seed local estimate is therefore not refused but impossible: a search's norm always
takes fresh seeds (the choice documented in :func:`sroa_dist.worst_case`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..methods import GAP_TOL, resolve_method
from ..norms import OperatorNormResult, operator_norm
from ..tensors import FloatArray, contract

__all__ = ["SearchNorm", "ascend_maximisers"]

#: Shifted power iterations from the component and warm starts (each start is next to the
#: maximiser it is meant to catch, so few are needed; the value is a lower bound whatever).
POWER_ITERS = 100


def ascend_maximisers(
    E: FloatArray, X: FloatArray, alpha: float, iters: int = POWER_ITERS
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Shifted power iterations (SS-HOPM) on ``s·E x^p`` from the unit rows of ``X``.

    ``s`` is the sign of ``E x^p`` at each start (for odd ``p`` the start ``−x`` gives the
    other sign's maximiser); ``alpha`` must bound ``(p − 1)‖E‖`` for monotone ascent.
    Returns ``(s, X, values)``: the signs, the points reached and ``s·E x^p`` there.
    """
    p = E.ndim
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    s = np.where(contract(E[None], X[None], p)[0] < 0, -1.0, 1.0)
    for _ in range(iters):
        Y = s[:, None] * contract(E[None], X[None], p - 1)[0] + alpha * X
        X = Y / np.linalg.norm(Y, axis=1, keepdims=True)
    return s, X, s * contract(E[None], X[None], p)[0]


class SearchNorm:
    """``D ↦ ‖D‖`` (an :class:`~sroa_dist.norms.OperatorNormResult`) for the ``k``-th evaluation.

    Parameters
    ----------
    method : str
        A rank-one method. Global methods give validated brackets; local ones get the fresh
        starts described in the module docstring.
    seed : int
        The search's norm seed (drawn from its ``rng``): evaluation ``k`` uses the stream
        ``SeedSequence([seed, k])``.
    V : (n, r) ndarray
        Components of ``T``: ``±v_i`` are starts of every local estimate.
    options : dict, optional
        Options of ``method`` (tests restrict a local method's starts with them).
    """

    def __init__(
        self, method: str, seed: int, V: FloatArray, options: dict[str, Any] | None = None
    ):
        self.method = method
        self.options = dict(options or {})
        self.seed = int(seed)
        self.is_global = bool(resolve_method(method).global_steps)
        self.components = np.concatenate([V.T, -V.T])  # (2r, n)

    def __call__(self, D: FloatArray, k: int, warm: list[FloatArray]) -> OperatorNormResult:
        """The norm of ``D`` at evaluation ``k``; ``warm`` are unit maximisers of earlier
        evaluations (extra starts of a local estimate)."""
        stream = np.random.default_rng(np.random.SeedSequence([self.seed, int(k)]))
        nr = operator_norm(D, self.method, rng=stream, **self.options)
        if self.is_global and nr.certified:
            return nr
        # A local estimate (or a global method that fell back to local steps): climb from the
        # natural hiding places too. Any value reached is attained, so the max is a lower bound.
        X = np.concatenate([self.components, *(x[None] for x in warm)])
        alpha = (D.ndim - 1) * float(nr.upper)
        s, Xr, vals = ascend_maximisers(D, X, alpha)
        b = int(np.argmax(vals))
        value, x = float(nr.value), np.asarray(nr.x, dtype=float)
        if vals[b] > value:
            value, x = float(vals[b]), Xr[b]
        upper = max(float(nr.upper), value)
        fro = float(np.linalg.norm(D))
        return OperatorNormResult(
            value=value,
            lower=value,
            upper=upper,
            certified=bool(nr.certified) or upper - value <= GAP_TOL * fro,
            x=x,
            method=self.method,
            solve_time=nr.solve_time,
        )
