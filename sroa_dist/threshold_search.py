"""Adaptive first-crossing search for the largest tolerable perturbation ε* of one instance.

A fixed ε grid and a logistic fit put every threshold at a grid midpoint, and success is not
monotone in ε for the value criterion (an instance can pass again above a failure). Here the
threshold of one instance is the *first crossing*: scan upward from ``eps_range[0]`` by a fixed
factor until the criterion fails, then bisect between the last pass and the first failure. The
answer is a bracket that contains that crossing, and the search records every evaluation.

Core module: numpy and the numerical core only (no Dask, xarray or zarr).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .criteria import get_run_criterion
from .decomposition import sroa_batch
from .errors import InputError, SroaWarning
from .instances import BASES, draw_lambdas, make_instance
from .method_records import revision_options
from .metrics import match
from .norms import operator_norm, scale_factors
from .perturbations import DEFAULT_WEIGHT, check_model
from .policy import resolve_norm_method
from .structured import structured_tensor
from .threads import single_blas

__all__ = [
    "CONTINUE_POINTS",
    "DENSE_BYTES_CAP",
    "SCAN_FACTOR",
    "ThresholdResult",
    "default_lambdas",
    "find_threshold",
    "first_crossing",
]

#: Ratio between consecutive ε of the upward scan. With the default rtol = 1 % the bisection
#: then needs log2(log 1.25 / log 1.01) ≈ 5 evaluations.
SCAN_FACTOR = 1.25
#: Scan points evaluated past the first failure (same factor, so up to 1.25^6 ≈ 3.8 times the
#: first failing ε, never past ``eps_range[1]``) to detect a pass above a failure.
CONTINUE_POINTS = 6
#: Largest dense tensor (bytes of one float64 ``n^p`` array) that :func:`find_threshold` forms
#: when ``matrix_free=None``: above it a family with a factored form (the coherent tilt) runs
#: matrix-free. 256 MiB: the dense search holds about four such arrays (T, E, T + E and the
#: solver's workspace), which is about 1 GiB, and a p = 4, n = 64 tensor (134 MB) still fits.
DENSE_BYTES_CAP = 256 * 2**20
#: Weight of the smallest component in the default weights (:func:`default_lambdas`).
SMALLEST_WEIGHT = 0.95


@dataclasses.dataclass(frozen=True)
class ThresholdResult:
    """Outcome of a first-crossing search (:func:`find_threshold`, :func:`first_crossing`).

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
    trace : tuple of (float, float, bool)
        Every evaluation ``(ε, metric, passed)`` in the order made.
    n_evals : int
        Number of evaluations (one SROA each for :func:`find_threshold`).
    non_monotone : bool
        True when some ε passed above an ε that failed (seen by the continued scan of
        :data:`CONTINUE_POINTS` points past the first failure, or inside the bisection).
    criterion : str
        Criterion name (``value``, ``recovery``, ``theorem`` or the caller's label).
    c : float or None
        The criterion's level (the multiple of ε for ``value``, the radius for ``recovery``);
        ``None`` for ``theorem``, whose level is fixed.
    certified_fraction : float
        Fraction of all SROA steps over all evaluations solved to certified global optimality
        (0 for local methods; NaN when the evaluations report no steps).
    """

    eps_star: float
    bracket: tuple[float, float]
    reached: bool
    trace: tuple[tuple[float, float, bool], ...]
    n_evals: int
    non_monotone: bool
    criterion: str
    c: float | None
    certified_fraction: float


def _check_range(eps_range: Any, rtol: Any) -> tuple[float, float, float]:
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
    if not (isinstance(rtol, (int, float)) and 0 < rtol < SCAN_FACTOR - 1):
        raise InputError(
            f"rtol: expected a relative bracket width in (0, {SCAN_FACTOR - 1:g}) (below the "
            f"scan factor {SCAN_FACTOR}), received {rtol!r}",
            "e.g. rtol=0.01",
        )
    return lo, hi, float(rtol)


def _scan_grid(start: float, stop: float) -> list[float]:
    """``start · SCAN_FACTOR^k`` up to ``stop``, and ``stop`` itself so the range is covered."""
    k_max = math.floor(math.log(stop / start) / math.log(SCAN_FACTOR) + 1e-12)
    grid = [start * SCAN_FACTOR**k for k in range(k_max + 1)]
    if grid[-1] < stop * (1 - 1e-12):
        grid.append(stop)
    return grid


def first_crossing(
    evaluate: Callable[[float], tuple[float, bool]],
    *,
    eps_range: tuple[float, float] = (0.02, 1.5),
    rtol: float = 0.01,
    criterion: str = "custom",
    c: float | None = None,
    certified_fraction: float = float("nan"),
) -> ThresholdResult:
    """Bracket the first ε at which ``evaluate`` fails, scanning upward then bisecting.

    1. Evaluate ``eps_range[0] · 1.25^k`` (:data:`SCAN_FACTOR`; ``eps_range[1]`` closes the
       grid) upward until the first failure.
    2. Evaluate up to :data:`CONTINUE_POINTS` further grid points past it (never beyond
       ``eps_range[1]``); a pass there sets ``non_monotone``. The bracket stays the first one.
    3. Bisect geometrically (ε = √(lo·hi)) between the last pass and the first failure until
       ``hi / lo − 1 ≤ rtol``.

    Between two scan points a pass–fail–pass pattern narrower than the scan factor cannot be
    seen; the bracket then holds the crossing that the bisection follows.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(eps) -> (metric, passed)``; called once per ε, in increasing order during
        the scan.
    eps_range : (float, float)
        Scan range, ``0 < start < stop``.
    rtol : float
        Final relative bracket width, ``0 < rtol < 0.25``.
    criterion, c, certified_fraction
        Recorded in the result (:func:`find_threshold` fills them in).

    Returns
    -------
    ThresholdResult
    """
    start, stop, rtol = _check_range(eps_range, rtol)
    trace: list[tuple[float, float, bool]] = []

    def run(eps: float) -> bool:
        metric, passed = evaluate(eps)
        trace.append((float(eps), float(metric), bool(passed)))
        return bool(passed)

    grid = _scan_grid(start, stop)
    lo, hi = 0.0, math.inf
    first_fail = None
    for k, eps in enumerate(grid):
        if run(eps):
            lo = eps
        else:
            hi, first_fail = eps, k
            break
    if first_fail is None:
        return _result(trace, math.inf, (stop, math.inf), False, criterion, c, certified_fraction)
    for eps in grid[first_fail + 1 : first_fail + 1 + CONTINUE_POINTS]:
        run(eps)
    if lo > 0:
        while hi / lo - 1 > rtol:
            mid = math.sqrt(lo * hi)
            if run(mid):
                lo = mid
            else:
                hi = mid
    return _result(trace, hi, (lo, hi), True, criterion, c, certified_fraction)


def _result(
    trace: list[tuple[float, float, bool]],
    eps_star: float,
    bracket: tuple[float, float],
    reached: bool,
    criterion: str,
    c: float | None,
    certified_fraction: float,
) -> ThresholdResult:
    fails = [e for e, _, ok in trace if not ok]
    non_monotone = bool(fails) and any(ok and e > min(fails) for e, _, ok in trace)
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
    )


def default_lambdas(n: int) -> np.ndarray:
    """Weights used when ``lambdas=None``: ``1`` for every component but the last, which gets
    :data:`SMALLEST_WEIGHT` (0.95).

    One distinct smallest weight makes the coherent tilt's target (the component of smallest
    ``|λ|``) unique and the one SROA deflates last, so the deflation residuals add up on it;
    the weights are fixed, so replicates differ only through the basis and the solver's starts.
    The same default serves every family, which keeps thresholds of families comparable.
    """
    if n < 2:
        raise InputError(f"n: expected at least 2 components, received {n}", "give n >= 2")
    return np.r_[np.ones(n - 1), SMALLEST_WEIGHT]


def _seed(rng: Any) -> np.random.SeedSequence:
    """A fresh SeedSequence (no children spawned yet) from a seed-like or a Generator."""
    if isinstance(rng, np.random.SeedSequence):
        return np.random.SeedSequence(rng.entropy, spawn_key=rng.spawn_key, pool_size=rng.pool_size)
    if isinstance(rng, np.random.Generator):
        return np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())
    if rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)):
        return np.random.SeedSequence(None if rng is None else int(rng))
    raise InputError(
        f"rng: expected None, an int, a SeedSequence or a Generator, received {rng!r}",
        "e.g. rng=1 or rng=numpy.random.default_rng(1)",
    )


def _copy(ss: np.random.SeedSequence) -> np.random.SeedSequence:
    # Generators built from one SeedSequence object would advance its spawn counter; a copy
    # per evaluation gives every ε exactly the same streams.
    return np.random.SeedSequence(ss.entropy, spawn_key=ss.spawn_key, pool_size=ss.pool_size)


@single_blas
def find_threshold(
    n: int,
    p: int,
    *,
    family: str = "coherent-tilt",
    lambdas: ArrayLike | Mapping[str, Any] | None = None,
    V: ArrayLike | None = None,
    criterion: str = "value",
    c: float = 0.5,
    method: str = "sshopm",
    eps_range: tuple[float, float] = (0.02, 1.5),
    rtol: float = 0.01,
    params: Mapping[str, Any] | None = None,
    rng: Any = None,
    matrix_free: bool | None = None,
    revisions: Mapping[str, int] | None = None,
) -> ThresholdResult:
    """First ε at which SROA on ``T̂ = Σ λ_i v_i^{⊗p} + E``, ``‖E‖ = ε``, fails a criterion.

    One instance (basis, weights, perturbation direction, solver starts) is drawn once; every
    ε evaluated rescales the same ``E`` to ``‖E‖ = ε`` and runs one full SROA (``n`` steps) with
    the same starts, so the threshold is a property of that instance. The search is
    :func:`first_crossing` (scan ×1.25 upward, :data:`CONTINUE_POINTS` more points past the
    first failure, then bisection to ``rtol``).

    The instance is built as a tensor sweep builds it: the seed's children 0/1/2 draw the
    instance (:func:`sroa_dist.make_instance` with σ = 1), the SROA starts and the norm's
    starts; ``E`` is scaled by ``ε / ‖E‖`` (``‖E‖`` exact when the family states it, else
    computed once with the sweep's default norm method) and added to ``T``. Passing the
    sweep's per-instance ``SeedSequence`` as ``rng`` (with its basis and weights) gives the
    sweep's tensor at every ε.

    Parameters
    ----------
    n, p : int
        Dimension and order.
    family : str
        Perturbation model (:func:`sroa_dist.draw_perturbation`: a family, an i.i.d. model or a
        mixture ``"FAMILY+BACKGROUND"``), e.g. ``"coherent-tilt"``.
    lambdas : array_like, number, distribution table or None
        Component weights (:func:`sroa_dist.make_instance`); ``None``: :func:`default_lambdas`.
    V : (n, n) array_like, optional
        Orthonormal basis; ``None`` draws a random one from ``rng``.
    criterion : {"value", "recovery", "theorem"}
        Success test of a run (:mod:`sroa_dist.criteria`).
    c : float
        The criterion's level: the multiple of ε allowed on ``max |λ̂ − λ|`` (``value``), the
        radius on ``max ‖v̂ − v‖`` (``recovery``); ignored by ``theorem`` (Theorem 3.1's own
        bounds; a value other than the default warns).
    method : str
        Rank-one method of every SROA step (:data:`sroa_dist.METHODS`).
    eps_range : (float, float)
        Scan range of ``‖E‖``.
    rtol : float
        Relative width of the final bracket.
    params : mapping, optional
        Parameters of the perturbation family (``noise.params`` of a spec).
    rng : None, int, SeedSequence or Generator
        Seed of the instance and the solver starts.
    matrix_free : bool or None
        Run every SROA on :func:`sroa_dist.structured_tensor` instead of the dense tensor
        (only for a family with a factored form, e.g. ``"coherent-tilt"``; local methods
        only, implicit deflation, no step certified). ``None``: matrix-free exactly when the
        family has a factored form and one dense ``n^p`` array would exceed
        :data:`DENSE_BYTES_CAP`. ``V`` and the weights are drawn from the same stream as the
        dense path draws them (the tilt itself draws nothing), so both paths search the same
        tensor; the solver's starts differ (operators add spectral starts to ``sshopm``).
    revisions : mapping, optional
        Method -> algorithm revision to compute with (:attr:`sroa_dist.solvers.Method.
        revision`), for the SROA steps and the norm; ``None`` or a method not named: the
        current one. A threshold sweep passes its store's, so a resumed store keeps them.

    Returns
    -------
    ThresholdResult
        ``reached`` False (``eps_star = inf``) when every ε in range passed.
    """
    crit = get_run_criterion(criterion)
    _check_range(eps_range, rtol)
    if crit.level_name is None:
        if c != 0.5:
            warnings.warn(
                f"c={c!r} is ignored by criterion 'theorem' (Theorem 3.1's bounds are fixed)",
                SroaWarning,
                stacklevel=2,
            )
        level = None
    else:
        if not (isinstance(c, (int, float)) and not isinstance(c, bool) and c > 0):
            raise InputError(
                f"c: expected a number > 0 ({crit.level_name}), received {c!r}",
                "give a number > 0, e.g. c=0.5",
            )
        level = float(c)
    if isinstance(n, bool) or int(n) != n or n < 2:
        raise InputError(f"n: expected an integer >= 2, received {n!r}", "give an integer n >= 2")
    n, p = int(n), int(p)
    lam_spec = default_lambdas(n) if lambdas is None else lambdas
    revisions = dict(revisions or {})
    options = revision_options(method, revisions.get(method))
    inst_ss, solve_ss, norm_ss = _seed(rng).spawn(3)
    if _use_matrix_free(matrix_free, n, p, family, params):
        return _find_matrix_free(
            n,
            p,
            family,
            lam_spec,
            V,
            params,
            inst_ss,
            solve_ss,
            method,
            crit,
            level,
            eps_range,
            rtol,
            options,
        )
    draw = _Draw(n, p, family, lam_spec, V, params, inst_ss, norm_ss, method, revisions)
    steps = [0, 0]  # certified steps, all steps

    def evaluate(eps: float) -> tuple[float, bool]:
        T, E, lam, basis = draw.scaled(eps)
        res = sroa_batch((T + E)[None], rank=n, method=method, rng=[_copy(solve_ss)], **options)
        m = match(res, lam[None], basis[None])
        steps[0] += int(np.sum(res.certified))
        steps[1] += int(np.size(res.certified))
        return crit.evaluate(m.lam_err[0], m.vec_err[0], eps, m.lam_matched[0], level)

    out = first_crossing(evaluate, eps_range=eps_range, rtol=rtol, criterion=crit.name, c=level)
    frac = steps[0] / steps[1] if steps[1] else float("nan")
    return dataclasses.replace(out, certified_fraction=float(frac))


def uses_matrix_free(n: int, p: int, family: str, params: Mapping[str, Any] | None = None) -> bool:
    """Whether :func:`find_threshold` with ``matrix_free=None`` builds the instance matrix-free:
    the family has a factored form and one dense ``n^p`` array would exceed
    :data:`DENSE_BYTES_CAP` (sweeps size their memory estimate by it)."""
    return _use_matrix_free(None, n, p, family, params)


def _use_matrix_free(
    matrix_free: bool | None, n: int, p: int, family: str, params: Mapping[str, Any] | None
) -> bool:
    if matrix_free is not None and not isinstance(matrix_free, bool):
        raise InputError(
            f"matrix_free: expected True, False or None, received {matrix_free!r}",
            "give matrix_free=True, False or None (decide from the family)",
        )
    if matrix_free is False:
        return False
    fam = check_model(family, params)
    factored = "+" not in family and fam.factored is not None and not fam.needs_eps
    if matrix_free is None:
        return factored and 8 * float(n) ** p > DENSE_BYTES_CAP
    if not factored:
        raise InputError(
            f"matrix_free: family {family!r} declares no factored form (i.i.d. noise or a "
            "mixture with it has n^p independent entries); use matrix_free=False or None",
            "use matrix_free=False or None with this family",
        )
    return True


def _find_matrix_free(
    n,
    p,
    family,
    lam_spec,
    V,
    params,
    inst_ss,
    solve_ss,
    method,
    crit,
    level,
    eps_range,
    rtol,
    options,
) -> ThresholdResult:
    """:func:`find_threshold` on :func:`sroa_dist.structured_tensor` (never certified)."""
    gen = np.random.default_rng(_copy(inst_ss))
    # make_instance's draw order: the basis (unless given), then the weights.
    basis = BASES["random"](n, n, rng=gen) if V is None else np.asarray(V, dtype=float)
    lam = draw_lambdas(lam_spec, n, rng=gen)

    def evaluate(eps: float) -> tuple[float, bool]:
        op = structured_tensor(p, lam, V=basis, family=family, eps=eps, params=params)
        res = sroa_batch(op.as_batch(), rank=n, method=method, rng=[_copy(solve_ss)], **options)
        m = match(res, lam[None], basis[None])
        return crit.evaluate(m.lam_err[0], m.vec_err[0], eps, m.lam_matched[0], level)

    out = first_crossing(evaluate, eps_range=eps_range, rtol=rtol, criterion=crit.name, c=level)
    return dataclasses.replace(out, certified_fraction=0.0)


class _Draw:
    """The instance of one search: drawn once (with σ = 1), rescaled to each ε.

    Families whose draw depends on the target norm (``needs_eps``) are redrawn at each ε from
    the same seed, as the sweep draws them at that ε.
    """

    def __init__(
        self,
        n: int,
        p: int,
        family: str,
        lam_spec: Any,
        V: ArrayLike | None,
        params: Mapping[str, Any] | None,
        inst_ss: np.random.SeedSequence,
        norm_ss: np.random.SeedSequence,
        method: str,
        revisions: Mapping[str, int],
    ) -> None:
        self.args = (n, p, family, lam_spec, V, params, inst_ss)
        self.norm_ss, self.method, self.revisions = norm_ss, method, revisions
        # check_model validates the name and parameters (and resolves mixtures and import paths).
        self.per_eps = bool(check_model(family, params).needs_eps)
        self.fixed = None if self.per_eps else self._build(None)

    def _build(
        self, eps: float | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
        """``(T, E, lambdas, V, ‖E‖)`` of the instance drawn with σ = 1."""
        n, p, family, lam_spec, V, params, inst_ss = self.args
        inst = make_instance(
            n,
            p,
            basis="random",
            lambdas=lam_spec,
            noise=family,
            sigma=1.0,
            rng=np.random.default_rng(_copy(inst_ss)),
            noise_params=params,
            noise_weight=DEFAULT_WEIGHT,
            noise_eps=eps,
            V=V,
        )
        norm = inst.E_norm
        if norm is None:  # no closed form: bound it as the sweep does by default
            nm = resolve_norm_method(self.method, n, p, None)
            norm = operator_norm(
                inst.E,
                nm,
                rng=np.random.default_rng(_copy(self.norm_ss)),
                **revision_options(nm, self.revisions.get(nm)),
            ).value
        return inst.T, inst.E, inst.lambdas, inst.V, float(norm)

    def scaled(self, eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(T, E scaled to ‖E‖ = eps, lambdas, V)``."""
        T, E, lam, V, norm = self.fixed if self.fixed is not None else self._build(eps)
        # The sweep's rule (scale_factors): E · (ε / ‖E‖), then T + E.
        return T, E * float(scale_factors(norm, eps)), lam, V
