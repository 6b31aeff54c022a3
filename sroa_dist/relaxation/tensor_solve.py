"""One tensor's relaxation solve in progress: what happens between a driver's iterates
(candidates from the moments, bounds from the dual, the bookkeeping), shared by
:meth:`~.core.MomentRelaxation.solve` and its batched form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import bound
from .driver import Schedule, SdpIterate
from .polish import polish, value
from .result import Best, RelaxationResult

__all__ = ["TensorSolve"]


def finite(it: SdpIterate) -> bool:
    """Whether an iterate's dual is finite (a driver may hand back NaN or inf)."""
    return bool(np.all(np.isfinite(it.z_zero)) and np.all(np.isfinite(it.Z)))


class TensorSolve:
    """One tensor's solve between a driver's iterates: the candidates, the best validated
    bound and the bookkeeping of :meth:`MomentRelaxation.solve` (which is a loop over
    :meth:`take`, then :meth:`result`).

    ``rel`` is the :class:`~.core.MomentRelaxation` (not imported: core imports this module).
    """

    def __init__(
        self,
        rel: Any,
        T: np.ndarray,
        s: int,
        scale: float,
        stop_below: float,
        candidates: np.ndarray | None,
        options: dict[str, Any],
        config: Any,
        schedule: Schedule,
        ops: Any,
    ):
        self.rel, self.s, self.scale = rel, s, scale
        self.config, self.schedule, self.ops = config, schedule, ops
        self.candidates = candidates
        self.gap_tol = options["gap_tol"]
        self.refine_iters = options["refine_iters"]
        self.polish_steps = options["polish_steps"]
        self.flat_tol = options["flat_tol"]
        self.with_certificate = options["with_certificate"]
        # Work with ||T||_F = 1 so that a solver's scale setting means the same for every
        # tensor (SCS's does).
        self.T_in, self.T = T, T / scale
        self.stop_below = stop_below / scale
        self.c = rel.objective(self.T, s)
        self.best = Best()
        self.iters, self.status = 0, "not run"
        self.rank_ratio, self.sdp_value = float("nan"), float("nan")
        self.last: SdpIterate | None = None

    def take(self, last: SdpIterate) -> bool:
        """Use one iterate: candidates from its moments, bounds from its dual. Returns whether
        the gap is closed (the driver may stop)."""
        rel, best = self.rel, self.best
        self.last = last
        self.iters += last.iterations
        self.status = last.status
        self.sdp_value = -last.primal_objective
        y = last.y  # None from a dual-only driver: candidates then come from T alone
        if y is None or np.all(np.isfinite(y)):
            if last.rank_ratio is not None:
                self.rank_ratio = float(last.rank_ratio)
            elif y is not None:
                ev = np.linalg.eigvalsh(rel.moment_matrix(y))
                self.rank_ratio = float(abs(ev[-2]) / ev[-1]) if ev[-1] > 0 else float("nan")
            first = best.x is None
            extra = self.candidates if first else None
            rel._candidates(self.T, self.s, y, self.polish_steps, best, first=first, extra=extra)
        if finite(last):
            self._offer(last)
        return best.done(self.gap_tol, self.stop_below)

    def _offer(self, last: SdpIterate) -> None:
        bound.offer_duals(
            self.rel,
            self.c,
            last.z_zero,
            last.Z,
            self.best,
            self.gap_tol,
            self.stop_below,
            self.refine_iters,
            self.ops,
        )

    def exhausted(self) -> None:
        """The driver stopped without closing the gap."""
        last, best = self.last, self.best
        if last is not None and best.x is not None and not best.random_starts_done:
            # The driver yielded once (an interior-point solve does) and that did not
            # close the gap: give the candidate search its later round (every
            # second-moment eigenvector, the fixed random starts) before giving up. An
            # optimum with many maximisers has a central, high-rank moment matrix there.
            self.rel._candidates(self.T, self.s, last.y, self.polish_steps, best, first=False)
            if finite(last):
                self._offer(last)

    def result(self, elapsed: Callable[[], float]) -> RelaxationResult:
        """The :class:`RelaxationResult` (``elapsed()``: its ``solve_time``)."""
        rel, best, s, T, scale = self.rel, self.best, self.s, self.T, self.scale
        if best.x is None:  # the driver returned nothing usable: a unit vector still gives fx
            best.x = polish(T, np.eye(rel.n)[0], s, newton_steps=self.polish_steps)
            best.fx = s * value(T, best.x)
        tight = best.bound - best.fx <= self.gap_tol
        face = best.which == "face"
        upper = rel._bound_at_scale(self.c, best.bound, scale)
        fx = float(s * value(self.T_in, best.x))
        rank_ratio = self.rank_ratio
        return RelaxationResult(
            value=fx if tight else scale * max(self.sdp_value, float(best.fx)),
            upper_bound=float(upper),
            x=best.x,
            fx=fx,
            sign=s,
            rank_ratio=rank_ratio,
            flat=bool(rank_ratio < self.flat_tol or (tight and face and best.margin > 0)),
            status=self.status,
            iterations=self.iters,
            solve_time=elapsed(),
            certificate=best.which,
            dual_margin=scale * best.margin if face else float("nan"),
            sdp_value=scale * self.sdp_value,
            sos_certificate=(
                rel.export_certificate(self.T_in, s, *best.dual, scale=scale)
                if self.with_certificate and best.dual is not None
                else None
            ),
        )
