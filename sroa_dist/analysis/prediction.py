"""Measured first crossings against the accumulation model's prediction, size by size.

:func:`~sroa_dist.analysis.predict_threshold` predicts the coherent tilt's first-crossing
threshold ``ε*(n)`` at every ``n`` from SROA errors measured at one small size. This module
sets measured brackets ``(lo, hi]`` beside that prediction: the residual per size (of the
bracket's geometric centre, with the range the bracket allows), whether each size lies past
the predicted onset, and a two-panel figure (the predicted curve, its asymptote and onset over
the measured brackets; the residual per size under it). The comparison is what the claim
"the model predicts every measured threshold past the onset within 2 %" rests on.

Numerics and drawing only: brackets come from a threshold cube, a
:class:`~sroa_dist.studies.threshold.ThresholdResult` list or stored study rows.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from ..errors import InputError
from ._plotting import plain_log_labels
from .accumulation import PredictedThreshold, predict_threshold

__all__ = ["PredictionComparison", "compare_prediction", "figure_prediction"]

#: The agreement the claim states: measured / predicted − 1 within ±2 % past the onset.
DEFAULT_TOLERANCE = 0.02


@dataclasses.dataclass(frozen=True)
class PredictionComparison:
    """Measured first crossings beside the accumulation model's prediction.

    Attributes
    ----------
    n : (k,) ndarray of int
        Measured sizes, ascending.
    lo, hi : (k,) ndarray
        Measured brackets ``(lo, hi]`` (the median over replicates when a size has several).
    predicted : (k,) ndarray
        The predicted ``ε*`` at each size (``inf`` where the model has no crossing in its ε
        range).
    residual : (k,) ndarray
        ``√(lo·hi)/predicted − 1``: the bracket centre's relative distance from the prediction
        (``nan`` where ``predicted`` is ``inf``).
    residual_lo, residual_hi : (k,) ndarray
        ``lo/predicted − 1`` and ``hi/predicted − 1``: the range the bracket allows.
    past_onset : (k,) ndarray of bool
        ``n ≥`` the predicted onset (before it the threshold sits on the small-``n`` plateau).
    within : (k,) ndarray of bool
        ``|residual| ≤ tolerance``.
    tolerance : float
        The agreement asked for.
    prediction : PredictedThreshold
        The prediction, on a grid spanning the measured sizes (for drawing the curve).
    """

    n: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    predicted: np.ndarray
    residual: np.ndarray
    residual_lo: np.ndarray
    residual_hi: np.ndarray
    past_onset: np.ndarray
    within: np.ndarray
    tolerance: float
    prediction: PredictedThreshold

    @property
    def worst_past_onset(self) -> float:
        """The largest ``|residual|`` over the sizes past the onset (``nan`` if none is)."""
        r = np.abs(self.residual[self.past_onset])
        return float(np.nanmax(r)) if np.isfinite(r).any() else math.nan

    def rows(self) -> list[dict[str, float | int | bool]]:
        """One plain row per size (for tables and JSON)."""
        return [
            {
                "n": int(k),
                "lo": float(a),
                "hi": float(b),
                "predicted": float(e),
                "residual": float(r),
                "past_onset": bool(o),
                "within": bool(w),
            }
            for k, a, b, e, r, o, w in zip(
                self.n,
                self.lo,
                self.hi,
                self.predicted,
                self.residual,
                self.past_onset,
                self.within,
                strict=True,
            )
        ]


def compare_prediction(
    n: ArrayLike,
    lo: ArrayLike,
    hi: ArrayLike,
    *,
    prediction: PredictedThreshold | None = None,
    p: int | None = None,
    c: float = 0.5,
    criterion: str = "value",
    radius: float | None = None,
    n_model: int = 16,
    tolerance: float = DEFAULT_TOLERANCE,
) -> PredictionComparison:
    """Set measured first-crossing brackets beside the coherent tilt's predicted ``ε*(n)``.

    Parameters
    ----------
    n, lo, hi : array_like
        Sizes and their brackets ``(lo, hi]``, one entry per search (a size may repeat:
        replicates are reduced to their median ``lo`` and ``hi``). Open brackets
        (``hi = inf``) and sizes with no crossing are refused: they have no residual.
    prediction : PredictedThreshold, optional
        A prediction to compare with (e.g. read back from a study's record); its sizes must
        span the measured ones (between its sizes it is interpolated in log ε* against
        log(n − 1), where it is smooth). Default: :func:`~sroa_dist.analysis.predict_threshold`
        with ``p``, ``c``, ``criterion``, ``radius`` and ``n_model``, at the measured sizes and
        a grid from half the smallest to twice the largest.
    p, c, criterion, radius, n_model
        The prediction's settings when ``prediction`` is not given (``p`` required then).
    tolerance : float
        The agreement asked for (default 2 %).
    """
    sizes, lo_m, hi_m = _per_size(n, lo, hi)
    if not 0 < tolerance < 1:
        raise InputError(f"tolerance: expected a number in (0, 1), received {tolerance!r}", "0.02")
    if prediction is None:
        if p is None:
            raise InputError("p: required when no prediction is given", "e.g. p=3")
        # from below the smallest size to past the largest, so the curve shows the knee
        span = np.geomspace(max(2, sizes.min() // 2), 2 * sizes.max(), 40)
        grid = np.unique(np.r_[np.round(span).astype(int), sizes])
        prediction = predict_threshold(
            p, grid, c=c, criterion=criterion, radius=radius, n_model=n_model
        )
    pn = np.asarray(prediction.n, dtype=float)
    if sizes.min() < pn.min() or sizes.max() > pn.max():
        raise InputError(
            f"prediction: its sizes {int(pn.min())}–{int(pn.max())} do not span the measured "
            f"sizes {int(sizes.min())}–{int(sizes.max())}",
            "predict at sizes that include every measured one",
        )
    # log ε* against log(n − 1) is smooth (the asymptote is a power of n − 1)
    predicted = np.exp(np.interp(np.log(sizes - 1.0), np.log(pn - 1), np.log(prediction.eps_star)))
    centre = np.sqrt(lo_m * hi_m)
    # where the model has no crossing in its ε range (ε* = inf) there is no residual: nan
    with np.errstate(invalid="ignore"):
        residual = np.where(np.isfinite(predicted), centre / predicted - 1, np.nan)
    return PredictionComparison(
        n=sizes,
        lo=lo_m,
        hi=hi_m,
        predicted=predicted,
        residual=residual,
        residual_lo=np.where(np.isfinite(predicted), lo_m / predicted - 1, np.nan),
        residual_hi=np.where(np.isfinite(predicted), hi_m / predicted - 1, np.nan),
        past_onset=sizes >= prediction.onset_n,
        within=np.abs(residual) <= tolerance,
        tolerance=float(tolerance),
        prediction=prediction,
    )


def _per_size(n: ArrayLike, lo: ArrayLike, hi: ArrayLike) -> tuple[np.ndarray, ...]:
    n_a, lo_a, hi_a = (np.atleast_1d(np.asarray(x, dtype=float)) for x in (n, lo, hi))
    if not (n_a.shape == lo_a.shape == hi_a.shape) or n_a.ndim != 1 or not n_a.size:
        raise InputError(
            f"n, lo, hi: expected three 1-d arrays of one length, received shapes "
            f"{n_a.shape}, {lo_a.shape}, {hi_a.shape}",
            "one entry per search: its size and its bracket (lo, hi]",
        )
    if np.any(n_a != np.round(n_a)) or np.any(n_a < 2):
        raise InputError(f"n: expected integers >= 2, received {n_a.tolist()}", "e.g. [32, 64]")
    bad = ~(np.isfinite(lo_a) & np.isfinite(hi_a) & (lo_a > 0) & (hi_a > lo_a))
    if np.any(bad):
        k = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"lo, hi: bracket {k} (n = {int(n_a[k])}) is ({lo_a[k]}, {hi_a[k]}]: expected a "
            "closed bracket 0 < lo < hi < inf",
            "leave out searches that found no crossing in their range",
        )
    sizes = np.unique(n_a).astype(int)
    lo_m = np.array([np.median(lo_a[n_a == k]) for k in sizes])
    hi_m = np.array([np.median(hi_a[n_a == k]) for k in sizes])
    return sizes, lo_m, hi_m


def _model_label(pr: PredictedThreshold) -> str:
    where = "" if pr.model is None else f" (curves measured at n = {pr.model.n})"
    return "predicted" + where


def figure_prediction(
    comparisons: PredictionComparison | Sequence[PredictionComparison],
    *,
    titles: Sequence[str] | None = None,
    suptitle: str | None = None,
) -> Figure:
    """One column per comparison: top, the predicted ``ε*(n)``, its asymptote
    ``(c/g_p(0))^{1/(p−1)}·(n − 1)^{−1/(p−1)}`` and onset over the measured brackets (log-log,
    against ``n − 1``); bottom, the residual per size with the tolerance band."""
    items = [comparisons] if isinstance(comparisons, PredictionComparison) else list(comparisons)
    if not items:
        raise InputError("comparisons: expected at least one", "compare_prediction(...)")
    if titles is not None and len(titles) != len(items):
        raise InputError(
            f"titles: expected {len(items)}, received {len(titles)}", "one title per column"
        )
    fig = Figure(figsize=(4.6 * len(items), 6.8), layout="constrained")
    axes = fig.subplots(2, len(items), squeeze=False, height_ratios=[3, 1.3])
    for k, cmp in enumerate(items):
        top, bottom = axes[0, k], axes[1, k]
        pr = cmp.prediction
        p = pr.p
        pn = np.asarray(pr.n, dtype=float)
        finite = np.isfinite(pr.eps_star)
        # The prediction is smooth in log-log between its sizes: draw it on a fine grid.
        fine = np.geomspace(pn[finite].min(), pn[finite].max(), 240)
        curve = np.exp(
            np.interp(np.log(fine - 1), np.log(pn[finite] - 1), np.log(pr.eps_star[finite]))
        )
        top.plot(fine - 1, curve, "-", color="C0", label=_model_label(pr))
        prefactor = float(pr.asymptote[0] * (pn[0] - 1) ** (1 / (p - 1)))
        top.plot(
            fine - 1,
            prefactor * (fine - 1) ** (-1 / (p - 1)),
            "k--",
            lw=1,
            label=f"asymptote {prefactor:.3f}·(n−1)^(−1/{p - 1})",
        )
        onset = pr.onset_n
        if onset:
            for ax in (top, bottom):
                ax.axvline(onset - 1, color="0.5", ls=":", lw=1)
            top.plot([], [], color="0.5", ls=":", label=f"predicted onset n = {onset}")
        centre = np.sqrt(cmp.lo * cmp.hi)
        top.errorbar(
            cmp.n - 1,
            centre,
            yerr=[centre - cmp.lo, cmp.hi - centre],
            fmt="o",
            color="k",
            ms=4,
            capsize=3,
            label="measured (bracket)",
        )
        top.set_xscale("log")
        top.set_yscale("log")
        top.set_ylabel("first crossing ε*")
        crit = f"{pr.criterion}, c = {pr.c:g}" + (
            f", radius {pr.radius:g}" if pr.radius is not None else ""
        )
        top.set_title(titles[k] if titles else f"p = {p}: {crit}", fontsize="medium")
        top.legend(fontsize="x-small")
        band = 100 * cmp.tolerance
        bottom.axhspan(-band, band, color="0.9", label=f"±{band:g} %")
        bottom.axhline(0, color="C0", lw=1)
        bottom.errorbar(
            cmp.n - 1,
            100 * cmp.residual,
            yerr=[100 * (cmp.residual - cmp.residual_lo), 100 * (cmp.residual_hi - cmp.residual)],
            fmt="o",
            color="k",
            ms=4,
            capsize=3,
        )
        bottom.set_xscale("log")
        bottom.set_xlim(top.get_xlim())
        ends = np.abs(100 * np.r_[cmp.residual_lo, cmp.residual_hi])
        lim = max(3 * band, 1.2 * float(np.nanmax(ends)) if np.isfinite(ends).any() else 0.0)
        bottom.set_ylim(-lim, lim)
        bottom.set_xlabel("n − 1")
        bottom.set_ylabel("measured / predicted − 1 (%)")
    if suptitle:
        fig.suptitle(suptitle)
    plain_log_labels(fig)
    return fig
