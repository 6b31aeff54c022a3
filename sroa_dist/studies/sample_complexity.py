"""The sample size at which recovery succeeds with probability 1/2: the first crossing in N.

A sample-complexity study asks, per model and method, for ``N*``: the sample size at which
recovery from ``N`` samples succeeds with probability 1/2. :func:`sample_size_search` finds it
with the first-crossing search of :mod:`.first_crossing` run in ``N`` instead of ε: a geometric
scan upward in ``N`` (``scan_factor``, cheap sizes first), at each ``N`` a fixed number of
independent draws, and the first ``N`` whose success fraction reaches ``level`` (1/2) closes the
bracket ``(N_lo, N_hi]``; the refinement (``k_section`` points a round) narrows it to ``rtol``.
In :func:`first_crossing`'s terms an ``N`` *passes* while recovery still fails more often than
not, and the first *failure* of that test is the first success: the same machinery, scan,
refinement and bookkeeping, with no second copy.

The search's points depend on the outcomes and the settings only, never on how many
evaluators run a round; each ``N`` is rounded to an integer before it is evaluated. The
bracket's ends carry 95 % Wilson intervals of their fractions, and :attr:`SampleSizeResult.
interval` brackets ``N*`` by the evaluated sizes whose fraction is resolved from 1/2.

Core module: numpy only (the outcomes come from a caller's ``successes`` callable).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

from ..errors import InputError
from .first_crossing import first_crossing, max_evals
from .start_escape import wilson_interval

__all__ = [
    "LEVEL",
    "N_SCAN_FACTOR",
    "N_CONTINUE_POINTS",
    "SampleSizeResult",
    "SizeEvaluation",
    "max_size_evals",
    "sample_size_search",
]

#: The success probability whose crossing defines ``N*``.
LEVEL = 0.5
#: Ratio between consecutive scanned sample sizes: a sample's noise shrinks as ``N^{-1/2}``, so
#: a factor 2 in ``N`` is √2 in ‖E‖, close to the ε search's resolution √1.25 per phase.
N_SCAN_FACTOR = 2.0
#: Sizes evaluated past the first success (each ``scan_factor`` times the last): one checks
#: that the success holds at twice ``N_hi`` and gives :attr:`SampleSizeResult.interval` its
#: upper end, at a cost of twice ``N_hi``.
N_CONTINUE_POINTS = 1

#: ``successes(sizes) -> [successes at each size]``: of ``draws`` independent draws at each
#: integer size, in the order given (the caller may run them at once: the search never
#: depends on how).
Successes = Callable[[list[int]], Sequence[int]]


@dataclasses.dataclass(frozen=True)
class SizeEvaluation:
    """One evaluated sample size: ``successes`` of ``draws`` recoveries from ``n`` samples."""

    n: int
    successes: int
    draws: int

    @property
    def fraction(self) -> float:
        """Fraction of the draws that recovered every component."""
        return self.successes / self.draws

    @property
    def wilson(self) -> tuple[float, float]:
        """95 % Wilson interval of :attr:`fraction`."""
        return wilson_interval(self.successes, self.draws)


@dataclasses.dataclass(frozen=True)
class SampleSizeResult:
    """Outcome of :func:`sample_size_search`.

    Attributes
    ----------
    n_star : float
        ``N_hi``: the first evaluated size whose success fraction reached the level, below
        which every evaluated size stayed under it. ``inf`` when no size in range reached it.
    bracket : (float, float)
        ``(N_lo, N_hi)``: the crossing lies in ``(N_lo, N_hi]``; ``N_lo = 0`` when the range's
        first size already succeeded; ``(N_max, inf)`` when none did.
    reached : bool
        Whether a size in range reached the level.
    trace : tuple of SizeEvaluation
        Every evaluation in the order made.
    non_monotone : bool
        Some size failed (fraction below the level) above a size that succeeded.
    ends : ((float, float), (float, float))
        Wilson intervals of the fractions at ``N_lo`` and ``N_hi`` (NaN where the end was not
        evaluated).
    interval : (float, float)
        ``N*`` resolved from the evaluations: the largest evaluated size below ``N_hi`` whose
        Wilson interval lies below the level (0 where none does) and the smallest evaluated
        size above ``N_lo`` whose interval lies above it (``inf`` where none does).
    draws : int
        Draws per size.
    """

    n_star: float
    bracket: tuple[float, float]
    reached: bool
    trace: tuple[SizeEvaluation, ...]
    non_monotone: bool
    ends: tuple[tuple[float, float], tuple[float, float]]
    interval: tuple[float, float]
    draws: int

    @property
    def n_evals(self) -> int:
        """Number of sizes evaluated."""
        return len(self.trace)

    @property
    def total_draws(self) -> int:
        """Draws over the whole search (each one sample, one fit)."""
        return self.draws * len(self.trace)


def _check(n_range: Sequence[float], draws: int, level: float) -> tuple[int, int]:
    try:
        lo, hi = (int(x) for x in n_range)
    except (TypeError, ValueError):
        raise InputError(
            f"n_range: expected two integers (smallest, largest sample size), received {n_range!r}",
            "e.g. n_range=(100, 1_000_000)",
        ) from None
    if not 1 <= lo < hi:
        raise InputError(
            f"n_range: expected 1 <= smallest < largest, received {n_range!r}",
            "e.g. n_range=(100, 1_000_000)",
        )
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise InputError(
            f"draws: expected an integer >= 1 (draws per sample size), received {draws!r}",
            "e.g. draws=20",
        )
    if not 0 < level < 1:
        raise InputError(f"level: expected a probability in (0, 1), received {level!r}", "e.g. 0.5")
    return lo, hi


def max_size_evals(
    n_range: Sequence[float],
    rtol: float,
    scan_phases: int = 1,
    k_section: int = 1,
    scan_factor: float = N_SCAN_FACTOR,
    continue_points: int = N_CONTINUE_POINTS,
) -> int:
    """Most sizes one search can evaluate (:func:`~.first_crossing.max_evals` in ``N``)."""
    lo, hi = (float(x) for x in n_range)
    return max_evals(
        (lo, hi),
        rtol,
        scan_phases,
        k_section,
        scan_factor=scan_factor,
        continue_points=continue_points,
    )


def sample_size_search(
    successes: Successes,
    *,
    draws: int,
    n_range: Sequence[float] = (100, 1_000_000),
    rtol: float = 0.1,
    level: float = LEVEL,
    scan_factor: float = N_SCAN_FACTOR,
    scan_phases: int = 1,
    continue_points: int = N_CONTINUE_POINTS,
    k_section: int = 1,
) -> SampleSizeResult:
    """Bracket the first sample size at which recovery succeeds with probability ``level``.

    :func:`~.first_crossing.first_crossing` in ``N``: ``n_range[0] · scan_factor^j`` upward
    (``scan_phases = 2`` adds the midpoints in log N below the first success), up to
    ``continue_points`` further sizes past it, then refinement rounds of ``k_section`` sizes
    in log N until ``N_hi / N_lo − 1 <= rtol``. Each size is rounded to an integer and
    evaluated by ``successes`` (``draws`` draws each); a size succeeds when
    ``successes / draws >= level``.

    Returns
    -------
    SampleSizeResult
    """
    lo, hi = _check(n_range, draws, level)
    seen: dict[int, int] = {}

    def evaluate_many(points: list[float]) -> list[tuple[float, bool]]:
        sizes = [max(1, round(x)) for x in points]
        todo = list(dict.fromkeys(s for s in sizes if s not in seen))
        if todo:
            got = list(successes(todo))
            if len(got) != len(todo):
                raise RuntimeError(f"successes returned {len(got)} counts for {len(todo)} sizes")
            for s, g in zip(todo, got, strict=True):
                if not 0 <= int(g) <= draws:
                    raise RuntimeError(f"successes returned {g} of {draws} draws at N = {s}")
                seen[s] = int(g)
        # "passed" in the first-crossing sense: recovery still below the level.
        return [(seen[s] / draws, seen[s] / draws < level) for s in sizes]

    res = first_crossing(
        evaluate_many=evaluate_many,
        eps_range=(float(lo), float(hi)),
        rtol=rtol,
        criterion="sample-size",
        c=level,
        scan_phases=scan_phases,
        k_section=k_section,
        scan_factor=scan_factor,
        continue_points=continue_points,
    )
    trace = tuple(
        SizeEvaluation(max(1, round(e.eps)), seen[max(1, round(e.eps))], draws) for e in res.trace
    )
    n_lo, n_hi = (float(round(x)) if math.isfinite(x) else x for x in res.bracket)
    by_n = {e.n: e for e in trace}
    nan2 = (math.nan, math.nan)
    ends = (
        by_n[int(n_lo)].wilson if res.reached and n_lo in by_n else nan2,
        by_n[int(n_hi)].wilson if res.reached and n_hi in by_n else nan2,
    )
    below = [e.n for e in trace if e.n < n_hi and e.wilson[1] < level]
    above = [e.n for e in trace if e.n > n_lo and e.wilson[0] > level]
    return SampleSizeResult(
        n_star=n_hi if res.reached else math.inf,
        bracket=(n_lo, n_hi),
        reached=res.reached,
        trace=trace,
        non_monotone=res.non_monotone,
        ends=ends,
        interval=(float(max(below, default=0)), float(min(above, default=math.inf))),
        draws=draws,
    )
