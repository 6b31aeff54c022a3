"""The first crossing of a pass/fail criterion in ε, with its bracket: the scan, the bisection,
and what the evaluations above the first failure say (:class:`ThresholdResult`).

A fixed ε grid and a logistic fit put every threshold at a grid midpoint, and success is not
monotone in ε for the value criterion (an instance can pass again above a failure). Here the
threshold is the *first crossing*: scan upward from ``eps_range[0]`` until the criterion fails,
then bisect between the last pass and the first failure. The scan runs in two phases offset by
half the factor in log ε, so a failure window is missed only when it is narrower than
``SCAN_FACTOR^(1/2)`` (the recorded ``scan_resolution``), whatever ``eps_range[0]`` is.

Core module: numpy only.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ..errors import InputError

__all__ = [
    "CONTINUE_POINTS",
    "K_SECTION",
    "SCAN_FACTOR",
    "SCAN_PHASES",
    "Evaluation",
    "ThresholdResult",
    "check_k_section",
    "check_range",
    "expected_evals",
    "first_crossing",
    "max_evals",
    "section_points",
]

#: Ratio between consecutive ε of one scan phase. With rtol = 1 % the bisection then needs
#: log2(log 1.25 / log 1.01) ≈ 5 evaluations.
SCAN_FACTOR = 1.25
#: Scan phases, each offset from the previous by ``SCAN_FACTOR^(1/SCAN_PHASES)`` in ε: the
#: second phase evaluates the midpoints (in log ε) below the first phase's first failure, so
#: the scan resolution is ``√1.25 ≈ 1.118``. At p = 3, n = 128 the coherent tilt has a failure
#: window of ratio ≤ 1.30 just above its threshold, which one phase at 1.25 can step over
#: depending on where it starts. 1: the single scan of search revision 1.
SCAN_PHASES = 2
#: Scan points of the first phase evaluated past its first failure (same factor, so up to
#: 1.25^6 ≈ 3.8 times the first failing ε, never past ``eps_range[1]``) to detect a pass above
#: a failure.
CONTINUE_POINTS = 6

#: Interior points of one refinement round (the bracket split into ``k + 1`` equal parts in
#: log ε) and scan points per scan round, when the search does not say: 1, the sequential
#: search (a bisection).
K_SECTION = 1


class Evaluation(NamedTuple):
    """One evaluation of a search: the criterion's verdict at one ε, and how it was reached.

    ``global_gap`` is the largest global gap of the evaluation's SROA steps
    (:attr:`sroa_dist.SROAResult.global_gap`, in the tensor's units; NaN where no step was
    checked), ``non_global`` whether a step's gap exceeded its tolerance after any redo,
    ``redone`` how many steps were redone from a check's point, ``lam_err`` and ``vec_err``
    the run's largest ``|λ̂_j − λ_j|`` and ``‖v̂_j − v_j‖`` (after matching), from which any
    criterion with fixed levels can judge the run again (:meth:`ThresholdResult.judged`).
    """

    eps: float
    metric: float
    passed: bool
    global_gap: float = math.nan
    non_global: bool = False
    redone: int = 0
    lam_err: float = math.nan
    vec_err: float = math.nan


@dataclasses.dataclass(frozen=True)
class ThresholdResult:
    """Outcome of a first-crossing search (:func:`sroa_dist.find_threshold`,
    :func:`first_crossing`).

    Attributes
    ----------
    eps_star : float
        Upper end of the final bracket: the smallest ε seen to fail below which every ε
        evaluated passed. ``inf`` when no ε in range failed (``reached`` is False).
    bracket : (float, float)
        ``(lo, hi)``: ``lo`` passed, ``hi`` failed and the first crossing lies in ``(lo, hi]``;
        ``hi / lo − 1 ≤ rtol`` after bisection. ``lo = 0`` when ``eps_range[0]`` already failed
        (the crossing is below the range); ``(eps_range[1], inf)`` when it was never reached.
    reached : bool
        Whether a failure was seen in ``eps_range`` (else the threshold lies above it).
    trace : tuple of Evaluation
        Every evaluation in the order made (``(ε, metric, passed, …)``, see
        :class:`Evaluation`).
    n_evals : int
        Number of evaluations (one SROA each for :func:`sroa_dist.find_threshold`).
    non_monotone : bool
        Some ε passed above an ε that failed, both evaluations with global steps only (no
        step's global gap above its tolerance): a pass above a failure of SROA as the paper
        defines it (up to what the check can see).
    criterion : str
        Criterion name (``value``, ``recovery``, ``theorem`` or the caller's label).
    c : float or None
        The criterion's level: the multiple of ε for ``value``, the radius for ``recovery``,
        the value bound's multiple of ε for ``theorem``.
    certified_fraction : float
        Fraction of all SROA steps over all evaluations solved to certified global optimality
        (0 for local methods; NaN when the evaluations report no steps).
    radius : float or None
        The vector bound of ``theorem`` (``None``: Theorem 3.1's ``20ε/λ_j``) or the radius of
        ``recovery``; ``None`` for ``value``.
    artefacts : int
        Evaluations whose verdict came from an SROA with a non-global step: passes above a
        failure, and failures, with a step whose global gap exceeded its tolerance (after
        any redo). Such a verdict says where the local method went, not where SROA fails.
    scan_resolution : float
        Ratio between consecutive scanned ε below the first failure (``SCAN_FACTOR`` with
        one phase, its square root with two): failure windows narrower than it can be missed.
    certified_ends : bool or None
        ``find_threshold(certify_ends=True)``: whether the bracket stands when the SROA at
        both ends is run again with certified steps (``lo`` passes and ``hi`` fails); ``None``
        where that was not run (outside the budget, matrix-free, no bracket) or a step could
        not be certified.
    k_section : int
        Points per scan round and interior points per refinement round of the search
        (:func:`first_crossing`; 1: the sequential search). The bracket depends on it, never
        on how many evaluators ran a round.
    """

    eps_star: float
    bracket: tuple[float, float]
    reached: bool
    trace: tuple[Evaluation, ...]
    n_evals: int
    non_monotone: bool
    criterion: str
    c: float | None
    certified_fraction: float
    radius: float | None = None
    artefacts: int = 0
    scan_resolution: float = SCAN_FACTOR
    certified_ends: bool | None = None
    k_section: int = 1

    def judged(self, criterion: Any, level: float | None = None, **params: Any) -> list[bool]:
        """Each evaluation's verdict under another criterion (a
        :class:`sroa_dist.studies.criteria.RunCriterion`) from its largest errors, e.g. the theorem
        criterion at ``c = 0.5, radius = 0.3`` beside ``value``. Exact for criteria whose
        bounds do not depend on the step (value, recovery, theorem with a ``radius``)."""
        if criterion.name == "theorem" and params.get("radius") is None:
            raise InputError(
                "radius: judging a trace by 'theorem' needs a fixed radius (its default "
                "20ε/λ_j depends on each step's weight, which the trace does not keep)",
                "pass a radius, e.g. radius=0.3",
            )
        out = []
        for e in self.trace:
            # The bounds are the same for every step, so the worst step is the one with the
            # largest error of each kind; lam_true only enters the default vector bound.
            _, ok = criterion.evaluate([e.lam_err], [e.vec_err], e.eps, [1.0], level, **params)
            out.append(ok)
        return out


def check_range(
    eps_range: Any, rtol: Any, scan_factor: float = SCAN_FACTOR
) -> tuple[float, float, float]:
    """``(start, stop, rtol)`` of a search, checked: ``0 < start < stop`` finite and
    ``0 < rtol < scan_factor − 1``; a ``ValueError`` naming the argument otherwise."""
    try:
        lo, hi = (float(x) for x in eps_range)
    except (TypeError, ValueError):
        raise InputError(
            f"eps_range: expected two numbers (start, stop), received {eps_range!r}",
            "e.g. eps_range=(0.02, 1.5)",
        ) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo < hi):
        raise InputError(
            f"eps_range: expected finite 0 < start < stop, received {eps_range!r}",
            "e.g. eps_range=(0.02, 1.5)",
        )
    if not math.isfinite(hi / lo):  # the scan grid start * SCAN_FACTOR^k would overflow
        raise InputError(
            f"eps_range: expected stop / start within the float range, received {eps_range!r}",
            "e.g. eps_range=(0.02, 1.5); a search scans the range in steps of a factor "
            f"{scan_factor}",
        )
    if not (isinstance(rtol, (int, float)) and 0 < rtol < scan_factor - 1):
        raise InputError(
            f"rtol: expected a relative bracket width in (0, {scan_factor - 1:g}) (below the "
            f"scan factor {scan_factor}), received {rtol!r}",
            "e.g. rtol=0.02",
        )
    return lo, hi, float(rtol)


def _check_phases(scan_phases: Any) -> int:
    if isinstance(scan_phases, bool) or scan_phases not in (1, 2):
        raise InputError(
            f"scan_phases: expected 1 or 2, received {scan_phases!r}",
            "2 (the default) guards against a failure window between scan points",
        )
    return int(scan_phases)


def _scan_grid(start: float, stop: float, factor: float = SCAN_FACTOR) -> list[float]:
    """``start · factor^k`` up to ``stop``, and ``stop`` itself so the range is covered."""
    k_max = math.floor(math.log(stop / start) / math.log(factor) + 1e-12)
    grid = [start * factor**k for k in range(k_max + 1)]
    if grid[-1] < stop * (1 - 1e-12):
        grid.append(stop)
    return grid


def _offset_grid(start: float, below: float, factor: float = SCAN_FACTOR) -> list[float]:
    """The second phase: ``start · factor^(k + 1/2)`` below ``below``."""
    half = math.sqrt(factor)
    out, eps = [], start * half
    while eps < below * (1 - 1e-12):
        out.append(eps)
        eps *= factor
    return out


def max_evals(
    eps_range: Any,
    rtol: float,
    scan_phases: int = SCAN_PHASES,
    k_section: int = K_SECTION,
    *,
    scan_factor: float = SCAN_FACTOR,
    continue_points: int = CONTINUE_POINTS,
) -> int:
    """Most evaluations one search can make: every scan point of both phases, the continued
    scan, and the refinement of a bracket no wider than the scan factor down to ``rtol`` in
    rounds of ``k_section`` points (each round divides its width in log ε by ``k_section + 1``;
    one round of slack). ``scan_factor`` and ``continue_points``: as :func:`first_crossing`."""
    start, stop, rtol = check_range(eps_range, rtol, _check_factor(scan_factor))
    k = check_k_section(k_section)
    scan = len(_scan_grid(start, stop, scan_factor))
    if _check_phases(scan_phases) == 2:
        scan += len(_offset_grid(start, stop, scan_factor))
    widths = math.log(scan_factor) / math.log1p(rtol)  # how much the log-width must shrink
    # k = 1: log2 exactly, as the sequential search has always bounded it (the cube's step dim).
    rounds = math.ceil(math.log2(widths) if k == 1 else math.log(widths) / math.log(k + 1))
    return scan + _check_continue(continue_points) + k * (rounds + 1)


#: Crossings a search's expected evaluation count averages over (:func:`expected_evals`).
EXPECTED_EVALS_POINTS = 64


@functools.lru_cache(maxsize=256)
def expected_evals(
    eps_range: tuple[float, float],
    rtol: float,
    scan_phases: int = SCAN_PHASES,
    k_section: int = K_SECTION,
) -> float:
    """Evaluations one search makes on average when its first crossing is equally likely
    anywhere in ``eps_range`` (uniform in log ε): the mean of :func:`first_crossing`'s own
    ``n_evals`` on a clean step function, at :data:`EXPECTED_EVALS_POINTS` crossings spread
    evenly in log ε across the range. So it follows the search's parameters (range, ``rtol``,
    scan phases, ``k_section``) exactly as the search counts, never a constant.

    What a cost estimate should charge per search: committed studies' searches make 0.95-1.2x
    this count (a failure window, or a crossing above the range, which scans the whole range,
    makes more), against 0.5-0.9x :func:`max_evals`."""
    lo, hi = (float(x) for x in eps_range)
    counts = []
    for j in range(EXPECTED_EVALS_POINTS):
        star = lo * (hi / lo) ** ((j + 0.5) / EXPECTED_EVALS_POINTS)
        res = first_crossing(
            lambda eps, star=star: (eps, eps < star),
            eps_range=(lo, hi),
            rtol=rtol,
            scan_phases=scan_phases,
            k_section=k_section,
        )
        counts.append(res.n_evals)
    return sum(counts) / len(counts)


def _check_factor(scan_factor: Any) -> float:
    """``scan_factor`` checked: a finite number > 1 (the ratio of consecutive scan points)."""
    ok = isinstance(scan_factor, (int, float)) and not isinstance(scan_factor, bool)
    if not (ok and math.isfinite(scan_factor) and scan_factor > 1):
        raise InputError(
            f"scan_factor: expected a finite ratio > 1 between scan points, received "
            f"{scan_factor!r}",
            f"e.g. scan_factor={SCAN_FACTOR} (the threshold search's) or 2",
        )
    return float(scan_factor)


def _check_continue(continue_points: Any) -> int:
    """``continue_points`` checked: an integer >= 0."""
    ok = isinstance(continue_points, int) and not isinstance(continue_points, bool)
    if not (ok and continue_points >= 0):
        raise InputError(
            f"continue_points: expected an integer >= 0, received {continue_points!r}",
            f"e.g. continue_points={CONTINUE_POINTS} (the threshold search's); 0 skips the "
            "continued scan",
        )
    return int(continue_points)


#: ``evaluate(eps) -> (metric, passed)`` or ``(metric, passed, extras)``, ``extras`` a mapping
#: of the other :class:`Evaluation` fields.
Evaluate = Callable[[float], tuple[Any, ...]]
#: ``evaluate_many([eps, ...]) -> [outcome, ...]``: one outcome per ε, in the order given, each
#: an :class:`Evaluation` or a tuple as :data:`Evaluate` returns it. It may evaluate the points
#: at once (a pool, a cluster): the search's points never depend on how.
EvaluateMany = Callable[[list[float]], Sequence[Any]]


def check_k_section(k_section: Any) -> int:
    """``k_section`` checked: an integer >= 1 (an ``InputError`` naming it otherwise)."""
    if isinstance(k_section, bool) or not isinstance(k_section, int) or k_section < 1:
        raise InputError(
            f"k_section: expected an integer >= 1 (points evaluated per round), received "
            f"{k_section!r}",
            "1 bisects sequentially; e.g. 4 evaluates four points a round on four workers",
        )
    return int(k_section)


def section_points(lo: float, hi: float, k: int, rtol: float) -> list[float]:
    """The interior points of one refinement round of ``(lo, hi)``: ``lo · (hi/lo)^(j/(m+1))``
    for ``j = 1..m``, equally spaced in log ε, with ``m`` the fewest points ``<= k`` that take
    the bracket to ``rtol`` in this round (``k`` when one round cannot). ``k = 1`` is the
    bisection's ``√(lo·hi)``, bit for bit. A pure function of its arguments: the points do
    not depend on how many evaluators run them."""
    if k == 1:
        return [math.sqrt(lo * hi)]
    width = math.log(hi / lo)
    m = k
    for j in range(1, k + 1):
        # j interior points leave parts of width / (j + 1) in log ε.
        if math.expm1(width / (j + 1)) <= rtol:
            m = j
            break
    ratio = hi / lo
    return [lo * ratio ** (j / (m + 1)) for j in range(1, m + 1)]


def first_crossing(
    evaluate: Evaluate | None = None,
    *,
    eps_range: tuple[float, float] = (0.02, 1.5),
    rtol: float = 0.01,
    criterion: str = "custom",
    c: float | None = None,
    radius: float | None = None,
    certified_fraction: float = float("nan"),
    scan_phases: int = SCAN_PHASES,
    k_section: int = K_SECTION,
    evaluate_many: EvaluateMany | None = None,
    scan_factor: float = SCAN_FACTOR,
    continue_points: int = CONTINUE_POINTS,
) -> ThresholdResult:
    """Bracket the first ε at which ``evaluate`` fails, scanning upward then refining.

    1. Evaluate ``eps_range[0] · 1.25^k`` (:data:`SCAN_FACTOR`; ``eps_range[1]`` closes the
       grid) upward until the first failure.
    2. With ``scan_phases=2``: evaluate ``eps_range[0] · 1.25^(k + 1/2)`` below that failure
       (below ``eps_range[1]`` when there was none) upward until a failure. The first
       failure of the two phases is the upper end, the last pass below it the lower one.
    3. Evaluate up to :data:`CONTINUE_POINTS` further first-phase points past its first
       failure (never beyond ``eps_range[1]``); a pass above a failure there or anywhere is
       classified (``non_monotone`` or ``artefacts``). The bracket stays the first one.
    4. Refine geometrically between the last pass and the first failure until
       ``hi / lo − 1 ≤ rtol``: each round evaluates the interior points of
       :func:`section_points` (``√(lo·hi)`` when ``k_section = 1``), and the new bracket is
       the lowest failing point among them and the point (or end) just below it.

    Rounds: each scan phase evaluates its points ``k_section`` at a time, in order, and stops
    after the first round with a failure (taking its first failure in order; the round's points
    above it stay in the trace); the continued scan is one round; each refinement is one round.
    A round's points depend only on the search's state and ``k_section``, never on how many
    points ``evaluate_many`` runs at once, so the trace and the bracket are the same on one
    evaluator or many. ``k_section = 1`` is the sequential search, evaluation for evaluation.

    Between two scanned points a pass–fail–pass pattern narrower than ``scan_resolution``
    cannot be seen; the bracket then holds the crossing that the refinement follows.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(eps) -> (metric, passed)`` or ``(metric, passed, extras)`` with
        ``extras`` the other :class:`Evaluation` fields; called once per ε, in increasing
        order within each scan phase. Give it or ``evaluate_many``.
    eps_range : (float, float)
        Scan range, ``0 < start < stop``.
    rtol : float
        Final relative bracket width, ``0 < rtol < 0.25``.
    criterion, c, radius, certified_fraction
        Recorded in the result (:func:`sroa_dist.find_threshold` fills them in).
    scan_phases : {1, 2}
        Scan phases (:data:`SCAN_PHASES`).
    k_section : int
        Points per scan round and interior points per refinement round (:data:`K_SECTION`);
        recorded in the result.
    evaluate_many : callable, optional
        :data:`EvaluateMany`: a round's points at once (instead of ``evaluate``).
    scan_factor : float
        Ratio between consecutive points of one scan phase (:data:`SCAN_FACTOR`; ``rtol`` must
        lie below ``scan_factor − 1``). A search in another variable than ε (the sample size
        of :mod:`.sample_complexity`) scans coarser.
    continue_points : int
        Points of the continued scan (:data:`CONTINUE_POINTS`; 0 skips it).

    Returns
    -------
    ThresholdResult
    """
    factor = _check_factor(scan_factor)
    start, stop, rtol = check_range(eps_range, rtol, factor)
    phases = _check_phases(scan_phases)
    k = check_k_section(k_section)
    n_continue = _check_continue(continue_points)
    if (evaluate is None) == (evaluate_many is None):
        raise InputError(
            "evaluate: expected exactly one of evaluate and evaluate_many",
            "pass evaluate(eps) or evaluate_many([eps, ...])",
        )
    many: EvaluateMany = evaluate_many or (lambda pts: [evaluate(e) for e in pts])  # type: ignore[misc]
    trace: list[Evaluation] = []

    def run_round(points: list[float]) -> list[bool]:
        outs = list(many(list(points)))
        if len(outs) != len(points):
            raise RuntimeError(
                f"evaluate_many returned {len(outs)} outcomes for {len(points)} points"
            )
        verdicts = []
        for eps, out in zip(points, outs, strict=True):
            if not isinstance(out, Evaluation):
                extras: Mapping[str, Any] = out[2] if len(out) > 2 else {}
                out = Evaluation(float(eps), float(out[0]), bool(out[1]), **extras)
            trace.append(out)
            verdicts.append(bool(out.passed))
        return verdicts

    def scan(points: list[float]) -> int | None:
        """Index in ``points`` of the first failure, evaluating ``k`` points a round."""
        for r in range(0, len(points), k):
            verdicts = run_round(points[r : r + k])
            if not all(verdicts):
                return r + verdicts.index(False)
        return None

    grid = _scan_grid(start, stop, factor)
    first_fail = scan(grid)
    # Phase-one points evaluated past its first failure (the rest of its last round).
    scanned = len(grid) if first_fail is None else min(len(grid), (first_fail // k + 1) * k)
    if phases == 2:
        below = grid[first_fail] if first_fail is not None else stop
        scan(_offset_grid(start, below, factor))
    fails = [e.eps for e in trace if not e.passed]
    resolution = factor ** (1.0 / phases)
    done = dict(criterion=criterion, c=c, radius=radius, scan_resolution=resolution, k_section=k)
    if not fails:
        return _result(trace, math.inf, (stop, math.inf), False, certified_fraction, **done)
    if first_fail is not None:
        cont = grid[scanned : first_fail + 1 + n_continue]
        if cont:
            run_round(cont)
    hi = min(fails)
    passes_below = [e.eps for e in trace if e.passed and e.eps < hi]
    lo = max(passes_below, default=0.0)
    if lo > 0:
        while hi / lo - 1 > rtol:
            points = section_points(lo, hi, k, rtol)
            verdicts = run_round(points)
            if all(verdicts):
                lo = points[-1]
            else:
                j = verdicts.index(False)
                hi = points[j]
                lo = points[j - 1] if j > 0 else lo
    return _result(trace, hi, (lo, hi), True, certified_fraction, **done)


def classify(trace: list[Evaluation] | tuple[Evaluation, ...]) -> tuple[bool, int]:
    """``(non_monotone, artefacts)`` of a trace (see :class:`ThresholdResult`): a pass above a
    failure with global steps in both, and the evaluations among the passes above a failure
    and the failures whose SROA had a non-global step."""
    fails = [e for e in trace if not e.passed]
    if not fails:
        return False, 0
    lowest = min(e.eps for e in fails)
    above = [e for e in trace if e.passed and e.eps > lowest]
    global_fails = [e.eps for e in fails if not e.non_global]
    non_monotone = any(not e.non_global and any(f < e.eps for f in global_fails) for e in above)
    artefacts = sum(e.non_global for e in above) + sum(e.non_global for e in fails)
    return bool(non_monotone), int(artefacts)


def _result(
    trace: list[Evaluation],
    eps_star: float,
    bracket: tuple[float, float],
    reached: bool,
    certified_fraction: float,
    *,
    criterion: str,
    c: float | None,
    radius: float | None,
    scan_resolution: float,
    k_section: int,
) -> ThresholdResult:
    non_monotone, artefacts = classify(trace)
    return ThresholdResult(
        eps_star=float(eps_star),
        bracket=(float(bracket[0]), float(bracket[1])),
        reached=reached,
        trace=tuple(trace),
        n_evals=len(trace),
        non_monotone=non_monotone,
        criterion=criterion,
        c=c,
        certified_fraction=float(certified_fraction),
        radius=radius,
        artefacts=artefacts,
        scan_resolution=float(scan_resolution),
        k_section=int(k_section),
    )
