"""The coherent tilt's accumulation coefficients and the thresholds they predict.

Under the coherent tilt (every component tilted toward the one SROA deflates last, ``v_l``),
each global step ``j`` leans toward ``v_l`` by ``δ_j ≈ ε/(p·c_p·λ_j)`` (``c_p`` the tilt's
norm constant) and its deflation leaves a residual ``λ_j δ_j^p`` at ``v_l``. The residuals have
one sign and add up, so the last component's value error is

    |λ̂_l − λ_l| = (n − 1)·g_p(ε)·ε^p,   g_p(0) = (p·c_p)^{−p}

(with unit weights), ``g_p`` independent of ``n``. Its vector error grows as ``√(n − 1)``
(the residual gradients are orthogonal), and the other components' errors do not depend on
``n`` at all. A first-crossing threshold is therefore the first ``ε`` at which one of these
four ``n``-independent curves, scaled by its power of ``n − 1``, reaches its bound: measured
once at a small ``n`` they predict ``ε*(n)`` at every ``n``, the size at which the threshold
leaves its small-``n`` plateau (the onset), and its asymptote
``(c/g_p(0))^{1/(p−1)}·(n − 1)^{−1/(p−1)}``: Theorem 3.1's ``n``-exponent, which the tilt
shows cannot be improved.

Every SROA here takes global steps: local steps checked and redone on the global branch
(:func:`sroa_dist.sroa` with ``global_check=True, redo=True``); the largest remaining gap is
recorded. Numerics only (numpy, scipy); no cube is read.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.interpolate import PchipInterpolator
from scipy.optimize import brentq

from ..errors import InputError
from ..problems import tilt_norm
from ..studies import TILTED_WEIGHT, accumulation_errors, coefficients

__all__ = [
    "Accumulation",
    "PredictedThreshold",
    "accumulation",
    "accumulation_limit",
    "predict_threshold",
]

#: The family whose accumulation the closed form describes.
FAMILY = "coherent-tilt"
#: Size at which :func:`predict_threshold` measures its curves by default. At n = 8 the
#: p = 3 coefficient still moves by 1.5-3 % between n = 8 and 16 for ε ≥ 0.15 (cross terms of
#: the residuals); from n = 16 on it is n-independent to the precision the thresholds need.
MODEL_N = 16


def accumulation_limit(p: int) -> float:
    """``g_p(0) = (p·c_p)^{−p}``, the small-ε limit of the coherent tilt's accumulation
    coefficient (``c_p`` = :func:`sroa_dist.problems.perturbations.tilt_norm`): 0.6495, 0.3512,
    0.1666, 0.0713 for p = 3, 4, 5, 6."""
    _check_order(p)
    return float((p * tilt_norm(p)) ** (-p))


@dataclasses.dataclass(frozen=True)
class Accumulation:
    """SROA errors of the coherent tilt at one ``(p, n)`` over a grid of ``ε``.

    Attributes
    ----------
    p, n : int
        Order and dimension (rank ``n``, weights 1 except :data:`TILTED_WEIGHT`).
    eps : (m,) ndarray
        ``‖E‖`` values.
    g : (m,) ndarray
        ``g_p(ε)``: the tilted component's value error ``/ ((n − 1)·ε^p)``.
    h : (m,) ndarray
        The tilted component's vector error ``/ √(n − 1)``.
    value_other, vector_other : (m,) ndarray
        The largest value and vector errors of the other components (``n``-independent).
    last : (m,) ndarray of bool
        Whether the tilted component was deflated last (what the closed form assumes).
    global_gap : (m,) ndarray
        The largest global gap left over the run's steps (``≤ 1e-6·‖T_j‖_F``: global).
    g0 : float
        :func:`accumulation_limit`.
    """

    p: int
    n: int
    eps: np.ndarray
    g: np.ndarray
    h: np.ndarray
    value_other: np.ndarray
    vector_other: np.ndarray
    last: np.ndarray
    global_gap: np.ndarray
    g0: float


def accumulation(
    p: int,
    eps: ArrayLike,
    *,
    n: int,
    family: str = FAMILY,
    method: str = "sshopm",
    rng: int | np.random.SeedSequence = 0,
) -> Accumulation:
    """Measure the coherent tilt's accumulation coefficient ``g_p(ε)`` (and the other error
    curves of :class:`Accumulation`) with global SROA steps.

    Parameters
    ----------
    p : int
        Order, ``>= 3``.
    eps : float or sequence of float
        Perturbation norms ``ε > 0``.
    n : int
        Dimension (``>= 3``); ``g_p`` does not depend on it, which two calls at two ``n`` show.
    family : str
        ``"coherent-tilt"`` (the family the closed form describes).
    method : str
        Local rank-one method of every step (checked and redone on the global branch).
    rng : int or SeedSequence
        Seed of the solver's starts (one stream for every ε, as the accumulation sweep kind
        seeds one curve).
    """
    p = _check_order(p)
    if family != FAMILY:
        raise InputError(
            f"family: the accumulation coefficient is defined for {FAMILY!r}, received {family!r}",
            f"use family={FAMILY!r}",
        )
    if isinstance(n, bool) or int(n) != n or n < 3:
        raise InputError(f"n: expected an integer >= 3, received {n!r}", "e.g. n=16")
    grid = np.atleast_1d(np.asarray(eps, dtype=float))
    if grid.ndim != 1 or not np.all(np.isfinite(grid) & (grid > 0)):
        raise InputError(f"eps: expected numbers > 0, received {eps!r}", "e.g. eps=[0.05, 0.1]")
    seed = rng if isinstance(rng, np.random.SeedSequence) else int(rng)
    rows = [_errors(p, int(n), float(e), method, seed) for e in grid]
    col = {k: np.array([r[k] for r in rows]) for k in rows[0]}
    g, h = coefficients(col["value_last"], col["vector_last"], int(n), grid, p)
    return Accumulation(
        p=p,
        n=int(n),
        eps=grid,
        g=g,
        h=h,
        value_other=col["value_other"],
        vector_other=col["vector_other"],
        last=col["last"].astype(bool),
        global_gap=col["global_gap"],
        g0=accumulation_limit(p),
    )


def _errors(
    p: int, n: int, eps: float, method: str, rng: int | np.random.SeedSequence
) -> dict[str, float]:
    """One global SROA of the tilt (:func:`sroa_dist.studies.accumulation.accumulation_errors`,
    the run the accumulation sweep kind makes per instance)."""
    e = accumulation_errors(p, n, eps, method=method, rng=rng, weight=TILTED_WEIGHT)
    return {
        "value_last": e.value_last,
        "vector_last": e.vector_last,
        "value_other": e.value_other,
        "vector_other": e.vector_other,
        "last": float(e.last),
        "global_gap": e.global_gap,
    }


@dataclasses.dataclass(frozen=True)
class PredictedThreshold:
    """First-crossing thresholds of the coherent tilt predicted from curves measured at one
    small ``n`` (:func:`predict_threshold`).

    Attributes
    ----------
    n : (k,) ndarray of int
        Sizes predicted.
    eps_star : (k,) ndarray
        The predicted first crossing at each size (``inf`` beyond the model's ε range).
    plateau : float
        The threshold set by the ``n``-independent errors alone (the small-``n`` plateau).
    onset_n : int
        The smallest ``n`` whose accumulation crossing lies below the plateau (with no
        plateau in the model's ε range: the smallest ``n`` with a crossing in it).
    asymptote : (k,) ndarray
        ``(c/g_p(0))^{1/(p−1)}·(n − 1)^{−1/(p−1)}`` (value part of the criterion).
    local_slope : (k,) ndarray
        ``d log ε*/d log(n − 1)`` of the prediction at each size (its limit is ``−1/(p−1)``).
    model : Accumulation or None
        The curves the prediction rests on (``None`` for a prediction read back from its
        record, :meth:`from_record`).
    criterion, c, radius
        The criterion predicted (``"value"``: ``|λ̂ − λ| ≤ c·ε``; ``"theorem"``: that and
        ``‖v̂ − v‖ ≤ radius``).
    p : int
        Tensor order.
    """

    n: np.ndarray
    eps_star: np.ndarray
    plateau: float
    onset_n: int
    asymptote: np.ndarray
    local_slope: np.ndarray
    model: Accumulation | None
    criterion: str
    c: float
    radius: float | None
    p: int

    def as_record(self) -> dict[str, object]:
        """The prediction as plain JSON-ready numbers (the curves are not kept)."""
        return {
            "p": self.p,
            "criterion": self.criterion,
            "c": self.c,
            "radius": self.radius,
            "n": [int(k) for k in self.n],
            "eps_star": [float(x) for x in self.eps_star],
            "asymptote": [float(x) for x in self.asymptote],
            "local_slope": [float(x) for x in self.local_slope],
            "plateau": float(self.plateau),
            "onset_n": int(self.onset_n),
        }

    @classmethod
    def from_record(cls, record: dict[str, object]) -> PredictedThreshold:
        """Read back :meth:`as_record`'s numbers (a stored study row), without the curves.

        ``criterion`` may carry a label after the name (``"value c=0.5"``): the first word is
        the criterion.
        """
        missing = [
            k
            for k in ("p", "criterion", "c", "n", "eps_star", "asymptote", "plateau", "onset_n")
            if k not in record
        ]
        if missing:
            raise InputError(
                f"prediction record: missing key(s) {missing}",
                "use a record written by PredictedThreshold.as_record",
            )
        n = np.asarray(record["n"], dtype=int)
        slope = record.get("local_slope")
        return cls(
            n=n,
            eps_star=np.asarray(record["eps_star"], dtype=float),
            plateau=float(record["plateau"]),  # type: ignore[arg-type]
            onset_n=int(record["onset_n"]),  # type: ignore[call-overload]
            asymptote=np.asarray(record["asymptote"], dtype=float),
            local_slope=np.full(n.shape, np.nan)
            if slope is None
            else np.asarray(slope, dtype=float),
            model=None,
            criterion=str(record["criterion"]).split()[0],
            c=float(record["c"]),  # type: ignore[arg-type]
            radius=None if record.get("radius") is None else float(record["radius"]),  # type: ignore[arg-type]
            p=int(record["p"]),  # type: ignore[call-overload]
        )


def predict_threshold(
    p: int,
    n: int | Sequence[int],
    *,
    c: float = 0.5,
    family: str = FAMILY,
    criterion: str = "value",
    radius: float | None = None,
    n_model: int = MODEL_N,
    eps_range: tuple[float, float] = (0.01, 1.5),
    points: int = 48,
    method: str = "sshopm",
    model: Accumulation | None = None,
) -> PredictedThreshold:
    """Predict the coherent tilt's first-crossing threshold ``ε*(n)`` from SROA errors measured
    at one small size ``n_model`` only.

    The run at size ``n`` fails at ``ε`` when one of its errors exceeds its bound: the other
    components' value error ``k(ε) > c·ε`` or vector error ``> radius`` (both independent of
    ``n``), or the tilted component's value error ``(n − 1)·g_p(ε)·ε^p > c·ε`` or vector error
    ``√(n − 1)·h(ε) > radius``. Each curve is interpolated (monotone cubic in log-log) on
    ``points`` values of ``ε`` in ``eps_range``, measured once per ``(p, n_model, method)``;
    ``ε*(n)`` is the first root. The vector bound enters only for ``criterion="theorem"``
    with a ``radius`` (Theorem 3.1's own radius ``20ε/λ_j`` cannot bind for ``ε ≥ 0.1``).

    ``model``: curves measured already (an accumulation sweep's cube,
    :func:`sroa_dist.analysis.accumulation_curves`), used instead of measuring them here
    (``n_model``, ``eps_range``, ``points`` and ``method`` are then the model's own).
    """
    p = _check_order(p)
    if criterion not in ("value", "theorem"):
        raise InputError(
            f"criterion: expected 'value' or 'theorem', received {criterion!r}",
            "'value': |λ̂ − λ| ≤ c·ε; 'theorem': that and ‖v̂ − v‖ ≤ radius",
        )
    if not (isinstance(c, (int, float)) and c > 0):
        raise InputError(f"c: expected a number > 0, received {c!r}", "e.g. c=0.5")
    if radius is not None and not (isinstance(radius, (int, float)) and radius > 0):
        raise InputError(f"radius: expected a number > 0, received {radius!r}", "e.g. 0.3")
    if criterion == "value" and radius is not None:
        raise InputError("radius: criterion 'value' takes no radius", "use criterion='theorem'")
    sizes = np.atleast_1d(np.asarray(n))
    if sizes.ndim != 1 or not np.all(sizes == np.round(sizes)) or np.any(sizes < 2):
        raise InputError(f"n: expected integers >= 2, received {n!r}", "e.g. n=[32, 64, 128]")
    sizes = sizes.astype(int)
    if model is None:
        model = _model(p, int(n_model), family, tuple(map(float, eps_range)), int(points), method)
    elif model.p != p:
        raise InputError(
            f"model: curves of order p = {model.p}, received p = {p}",
            "predict with the curves of the same order",
        )
    curves = _Curves(model)
    r = radius if criterion == "theorem" else None
    eps_star = np.array([curves.first_root(int(k), float(c), r) for k in sizes])
    plateau = curves.first_root(None, float(c), r)
    onset = _onset(curves, float(c), r, plateau)
    asym = (c / model.g0) ** (1 / (p - 1)) * (sizes - 1.0) ** (-1 / (p - 1))
    slope = np.array([curves.local_slope(int(k), float(c), r) for k in sizes])
    return PredictedThreshold(
        sizes, eps_star, plateau, onset, asym, slope, model, criterion, c, r, p
    )


@functools.lru_cache(maxsize=32)
def _model(
    p: int, n_model: int, family: str, eps_range: tuple[float, float], points: int, method: str
) -> Accumulation:
    lo, hi = eps_range
    if not 0 < lo < hi:
        raise InputError(
            f"eps_range: expected 0 < start < stop, received {eps_range!r}", "e.g. (0.01, 1.5)"
        )
    return accumulation(p, np.geomspace(lo, hi, points), n=n_model, family=family, method=method)


class _Curves:
    """The four error curves of a model, interpolated in log-log."""

    def __init__(self, m: Accumulation):
        self.m = m
        x = np.log(m.eps)

        def interp(y: np.ndarray) -> PchipInterpolator:
            return PchipInterpolator(x, np.log(np.maximum(y, 1e-300)))

        self.k, self.kv = interp(m.value_other), interp(m.vector_other)
        self.g, self.h = interp(m.g), interp(m.h)

    def ratio(self, n: int | None, eps: float, c: float, radius: float | None) -> float:
        """The largest error over its bound at ``ε`` (``n = None``: the n-independent part)."""
        x = math.log(eps)
        worst = math.exp(self.k(x)) / (c * eps)
        if n is not None:
            worst = max(worst, (n - 1) * math.exp(self.g(x)) * eps ** (self.m.p - 1) / c)
        if radius is not None:
            worst = max(worst, math.exp(self.kv(x)) / radius)
            if n is not None:
                worst = max(worst, math.sqrt(n - 1) * math.exp(self.h(x)) / radius)
        return worst

    def first_root(self, n: int | None, c: float, radius: float | None) -> float:
        grid = np.geomspace(self.m.eps[0], self.m.eps[-1], 4000)
        vals = np.array([self.ratio(n, e, c, radius) for e in grid]) - 1.0
        above = np.flatnonzero(vals >= 0)
        if not above.size:
            return math.inf
        i = int(above[0])
        if i == 0:
            return float(grid[0])
        return float(brentq(lambda e: self.ratio(n, e, c, radius) - 1.0, grid[i - 1], grid[i]))

    def local_slope(self, n: int, c: float, radius: float | None) -> float:
        """``d log ε*/d log(n − 1)`` by central differences in ``n``."""
        a, b = self.first_root(max(n - 1, 2), c, radius), self.first_root(n + 1, c, radius)
        na, nb = max(n - 1, 2) - 1.0, n + 1 - 1.0
        if not (math.isfinite(a) and math.isfinite(b)) or a == b:
            return 0.0
        return math.log(b / a) / math.log(nb / na)


def _onset(curves: _Curves, c: float, radius: float | None, plateau: float) -> int:
    """The smallest n whose first crossing lies below the plateau (bisection in n); with no
    plateau in the model's range, the smallest n with a crossing in it. 0: none below 2^40."""
    lo, hi = 2, 4
    while curves.first_root(hi, c, radius) >= plateau * (1 - 1e-9):
        lo, hi = hi, hi * 2
        if hi > 2**40:
            return 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if curves.first_root(mid, c, radius) >= plateau * (1 - 1e-9):
            lo = mid
        else:
            hi = mid
    return hi


def _check_order(p: int) -> int:
    if isinstance(p, bool) or int(p) != p or p < 3:
        raise InputError(f"p: expected an integer tensor order >= 3, received {p!r}", "e.g. p=3")
    return int(p)
