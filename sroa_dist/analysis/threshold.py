"""Tolerable-perturbation thresholds: logistic fits of success vs log ε, and their n-scaling.

Two routes. On a tensor cube (success at fixed ε levels) :func:`estimate_thresholds` and
:func:`fit_exponent` fit logistic curves and bootstrap them. On thresholds found by a
first-crossing search (``sroa_dist.find_threshold``: one bracket ``(lo, hi]`` per instance)
:func:`fit_rate` fits the rate with a size effect and each bracket's width as a known error, so
that its interval carries both the replicate spread and each threshold's bracket width.

The paper (Theorem 3.1) guarantees SROA with global rank-one steps for ε ≲ λ_min n^{-1/(p-1)},
against O(1/n) for the power method, and leaves the empirical check open.  Here, for each grid
point other than ε, the success probability is fitted by a logistic curve in log ε; the
threshold is the ε where it crosses 1/2.  A log–log fit of threshold vs n gives the empirical
exponent.  Both come with percentile-bootstrap confidence intervals from resampling replicates.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr
from numpy.typing import ArrayLike
from scipy.special import expit

from ..errors import InputError
from ..sweep import REPLICATE
from . import _rate_model
from ._cube import measured_eps, noise_axis, require_dim
from .aggregate import SuccessCriterion, get_criterion, success

BOOT = "boot"
# Weak ridge penalties on the (standardised) logistic coefficients: they keep the estimate
# finite under complete separation (success exactly 1 below some ε and 0 above, common with
# few replicates) while leaving well-conditioned fits unchanged to ~1e-3.
_RIDGE_INTERCEPT = 1e-6
_RIDGE_SLOPE = 1e-2


def _fit_logistic(z: np.ndarray, y: np.ndarray, w: np.ndarray, n_iter: int = 100) -> np.ndarray:
    """Penalised maximum-likelihood fit of P(y=1) = expit(a + b z), batched over weight rows.

    z, y: (N,) standardised log ε and 0/1 outcomes; w: (B, N) non-negative case weights
    (bootstrap multiplicities).  Returns (B, 2) coefficients.  Newton's method on a strictly
    concave objective, steps capped for robustness.
    """
    theta = np.zeros((w.shape[0], 2))
    ridge = np.array([_RIDGE_INTERCEPT, _RIDGE_SLOPE])
    for _ in range(n_iter):
        mu = expit(theta[:, :1] + theta[:, 1:] * z)
        r = w * (y - mu)
        g = np.stack([r.sum(1), (r * z).sum(1)], axis=1) - ridge * theta
        h = w * mu * (1 - mu)
        h00 = h.sum(1) + ridge[0]
        h01 = (h * z).sum(1)
        h11 = (h * z * z).sum(1) + ridge[1]
        det = h00 * h11 - h01**2
        step = np.stack([h11 * g[:, 0] - h01 * g[:, 1], h00 * g[:, 1] - h01 * g[:, 0]], 1)
        step /= det[:, None]
        norm = np.linalg.norm(step, axis=1, keepdims=True)
        step *= np.minimum(1.0, 5.0 / np.maximum(norm, 1e-300))
        theta += step
        if np.max(norm) < 1e-10:
            break
    return theta


def _thresholds_one(
    x: np.ndarray, y: np.ndarray, level: np.ndarray, n_boot: int, rng: np.random.Generator
) -> tuple[float, float, np.ndarray]:
    """Threshold (log ε), logistic width and bootstrap thresholds for one grid point.

    x, y, level: flat arrays over valid instances (log ε, success, index of the ε level used to
    stratify the resampling).  NaN when the fit is not decreasing in ε or success never crosses.
    """
    nan_boot = np.full(n_boot, np.nan)
    if y.size == 0 or y.min() == y.max():
        return np.nan, np.nan, nan_boot
    centre, scale = x.mean(), x.std() or 1.0
    z = (x - centre) / scale
    weights = [np.ones(x.size)]
    if n_boot:
        # Stratified bootstrap: resample the replicates within each ε level, keeping the design.
        wb = np.zeros((n_boot, x.size))
        for lev in np.unique(level):
            idx = np.flatnonzero(level == lev)
            wb[:, idx] = rng.multinomial(idx.size, np.full(idx.size, 1.0 / idx.size), n_boot)
        weights.append(wb)
    theta = _fit_logistic(z, y, np.concatenate([np.atleast_2d(w) for w in weights]))
    a, b = theta[:, 0], theta[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_thr = np.where(b < 0, centre - scale * a / b, np.nan)
        width = np.where(b < 0, -scale / b, np.nan)
    return float(log_thr[0]), float(width[0]), log_thr[1:]


def _perturbation_x(ds: xr.Dataset, s: xr.DataArray) -> tuple[str, xr.DataArray]:
    axis = noise_axis(ds)
    if axis is None:
        raise InputError(
            "cube has no `eps`, `eps_scaled` or `sigma` axis: threshold estimation needs success "
            "data over a range of perturbation sizes",
            "sweep noise.eps, noise.eps_scaled or noise.sigma over several values",
        )
    # Swept ε: the coordinate (E was scaled to it).  Swept σ or ε-scaled: measured ‖E‖.
    x = ds[axis].astype(float) if axis == "eps" else measured_eps(ds)
    if x.sizes.get(axis, 0) < 2:
        raise InputError(
            f"`{axis}` axis has {x.sizes.get(axis, 0)} value(s): need ≥ 2 to fit",
            "sweep that axis over two or more values",
        )
    return axis, np.log(x.where(x > 0)).broadcast_like(s)


def check_n_boot(n_boot: Any) -> int:
    """``n_boot`` when it is a bootstrap size (an integer >= 0); else an ``InputError``."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise InputError(
            f"n_boot: expected an integer >= 0 (bootstrap resamples); received {n_boot!r}",
            "e.g. n_boot=200, or n_boot=0 for no confidence interval",
        )
    return int(n_boot)


def check_seed(rng: Any) -> None:
    """``rng`` when NumPy takes it as a seed (None, an int >= 0, a Generator, ...); else an
    ``InputError`` (``np.random.default_rng`` answered ``'x'`` with a bare ``TypeError``)."""
    try:
        np.random.default_rng(rng)
    except (TypeError, ValueError):
        raise InputError(
            f"rng: expected a seed (None, an integer >= 0 or a numpy Generator); received {rng!r}",
            "e.g. rng=0 (the default: reports and figures that repeat exactly)",
        ) from None


def estimate_thresholds(
    ds: xr.Dataset,
    criterion: str | SuccessCriterion = "recovery",
    *,
    n_boot: int = 200,
    level: float = 0.95,
    rng: int | np.random.Generator | None = 0,
    steps: Sequence[int] | None = None,
    **options: Any,
) -> xr.Dataset:
    """Perturbation size ε at which the success probability crosses 1/2, per grid point.

    For every combination of sweep axes other than the perturbation axis (``eps``, else
    ``eps_scaled``, else ``sigma``) — typically each (noise, n, p, method) — fit
    ``P(success) = logistic((log θ − log ε) / w)`` by maximum likelihood on the instances, and
    bootstrap by resampling replicates within each level of that axis.  With a swept ``eps``
    the coordinate (the norm E was scaled to) is ε; otherwise the measured ‖E‖ of each instance
    (variable ``eps``), so θ is always in units of ‖E‖.

    Parameters
    ----------
    ds : xarray.Dataset
        Result cube; computed here (thresholds are final numbers, not lazy).
    criterion : str or SuccessCriterion
        Success criterion (:data:`~sroa_dist.analysis.CRITERIA`): ``"recovery"`` (default),
        ``"value"`` or ``"theorem"`` (vacuous at large ε, so its threshold is often NaN).
    n_boot : int
        Bootstrap resamples (0: no confidence interval).
    level : float
        Confidence level of the percentile interval.
    rng : int, Generator or None
        Seed of the bootstrap; the default 0 makes reports reproducible.
    steps : sequence of int, optional
        Restrict success to these steps (default all).
    **options
        The criterion's options, e.g. ``radius=0.3`` (recovery) or ``c=1.0`` (value).

    Returns
    -------
    xarray.Dataset
        Over the remaining sweep axes: ``threshold`` (θ, NaN when success never crosses 1/2 or
        does not decrease with ε), ``threshold_lo``/``threshold_hi`` (CI), ``width`` (logistic
        scale w in log ε), ``in_range`` (θ inside the swept ε range), ``n_instances`` and
        ``threshold_boot`` (dim ``boot``: the bootstrap thresholds, reused by
        :func:`fit_exponent` so that its CI accounts for the same resampling).
    """
    if not 0 < level < 1:
        raise InputError(f"level must be in (0, 1), got {level}", "e.g. level=0.95")
    check_n_boot(n_boot)
    check_seed(rng)
    rng = np.random.default_rng(rng)
    crit = get_criterion(criterion)
    s = success(ds, crit, steps=steps, **options)
    axis, x = _perturbation_x(ds, s)
    require_dim(s, REPLICATE, "threshold estimation (resampling replicates)")
    groups = [d for d in s.dims if d not in (axis, REPLICATE)]
    order = [*groups, axis, REPLICATE]
    s_np = np.asarray(s.transpose(*order).values, dtype=float)
    x_np = np.asarray(x.transpose(*order).values, dtype=float)
    gshape = s_np.shape[: len(groups)]
    n_levels = s_np.shape[len(groups)]
    s_flat = s_np.reshape(-1, n_levels * s_np.shape[-1])
    x_flat = x_np.reshape(s_flat.shape)
    lev_flat = np.repeat(np.arange(n_levels), s_np.shape[-1])
    n_groups = s_flat.shape[0]
    thr = np.full(n_groups, np.nan)
    width = np.full(n_groups, np.nan)
    boot = np.full((n_groups, n_boot), np.nan)
    lo = np.full(n_groups, np.nan)
    hi = np.full(n_groups, np.nan)
    in_range = np.zeros(n_groups, dtype=bool)
    count = np.zeros(n_groups, dtype=int)
    alpha = (1 - level) / 2
    for g in range(n_groups):
        valid = np.isfinite(s_flat[g]) & np.isfinite(x_flat[g])
        count[g] = valid.sum()
        xv = x_flat[g, valid]
        thr[g], width[g], boot[g] = _thresholds_one(
            xv, s_flat[g, valid], lev_flat[valid], n_boot, rng
        )
        if np.isfinite(thr[g]):
            in_range[g] = xv.min() <= thr[g] <= xv.max()
        # A CI needs most resamples to give a threshold; otherwise it would be overconfident.
        finite = boot[g][np.isfinite(boot[g])]
        if n_boot and finite.size >= 0.5 * n_boot:
            lo[g], hi[g] = np.quantile(finite, [alpha, 1 - alpha])
    coords = {d: s[d] for d in groups}
    dims = tuple(groups)

    def arr(a: np.ndarray, extra: tuple[str, ...] = ()) -> xr.DataArray:
        return xr.DataArray(a.reshape(*gshape, *a.shape[1:]), dims=dims + extra, coords=coords)

    with np.errstate(over="ignore"):  # a far-extrapolated fit is +inf, i.e. off the range
        values = {k: np.exp(v) for k, v in {"thr": thr, "lo": lo, "hi": hi, "boot": boot}.items()}
    out = xr.Dataset(
        {
            "threshold": arr(values["thr"]),
            "threshold_lo": arr(values["lo"]),
            "threshold_hi": arr(values["hi"]),
            "width": arr(width),
            "in_range": arr(in_range),
            "n_instances": arr(count),
            "threshold_boot": arr(values["boot"], (BOOT,)),
        }
    )
    out["threshold"].attrs = {"long_name": "ε where P(success) = 1/2", "units": "same as ‖E‖"}
    out["width"].attrs = {"long_name": "logistic scale in log ε"}
    opts = crit.resolve(options)
    out.attrs = {
        "criterion": crit.name,
        "criterion_label": crit.label(**opts),
        **opts,
        "perturbation_axis": axis,
        "level": level,
        "n_boot": n_boot,
    }
    return out


def _p_of(thresholds: xr.Dataset, p: int | None) -> xr.DataArray | float:
    if "p" in thresholds.coords:
        return thresholds["p"]
    if p is not None:
        return float(p)
    return np.nan


def fit_exponent(
    thresholds: xr.Dataset,
    *,
    criterion: str | SuccessCriterion | None = None,
    dim: str = "n",
    p: int | None = None,
    level: float | None = None,
    **threshold_options: Any,
) -> xr.Dataset:
    """Log–log fit ``threshold ≈ C · n^k`` giving the empirical exponent k with a bootstrap CI.

    Only thresholds inside the swept ε range are used.  The CI is the percentile interval of
    the slopes fitted to each bootstrap resample of :func:`estimate_thresholds` (same resampled
    replicates for every n), so it reflects the uncertainty of the thresholds themselves.

    Parameters
    ----------
    thresholds : xarray.Dataset
        Output of :func:`estimate_thresholds` with an ``n`` dimension, or a result cube, whose
        thresholds are then estimated here under ``criterion``.
    criterion : str or SuccessCriterion, optional
        Success criterion (:data:`~sroa_dist.analysis.CRITERIA`).  For a cube, the one the
        thresholds are estimated with (default ``"recovery"``); for thresholds, a check that
        they were estimated with it.
    dim : str
        The size dimension (default ``n``).
    p : int, optional
        Tensor order for the reference exponent −1/(p−1) when ``p`` is not a coordinate
        (a scalar setting of the sweep).  Left NaN when unknown.
    level : float, optional
        Confidence level; default the one used for the thresholds.
    **threshold_options
        For a cube: passed to :func:`estimate_thresholds` (``n_boot``, ``rng``, the
        criterion's options such as ``radius`` or ``c``).

    Returns
    -------
    xarray.Dataset
        Over the other grid dims: ``exponent`` k, ``exponent_lo``/``exponent_hi``,
        ``prefactor`` C, ``n_points`` (thresholds used), ``reference_sroa`` = −1/(p−1)
        (Theorem 3.1) and ``reference_power`` = −1 (power method).  ``attrs["criterion"]``
        names the success criterion.
    """
    if "threshold" not in thresholds.data_vars:  # a cube: estimate its thresholds first
        thresholds = estimate_thresholds(
            thresholds, "recovery" if criterion is None else criterion, **threshold_options
        )
    elif threshold_options:
        raise InputError(
            f"fit_exponent: options {sorted(threshold_options)} apply to a cube, but "
            "`thresholds` already holds thresholds (pass them to estimate_thresholds instead)",
            "pass these options to estimate_thresholds, or pass the cube itself",
        )
    elif criterion is not None:
        # Our own output's attrs: a consistency check that the thresholds are the ones asked for.
        want, have = get_criterion(criterion).name, thresholds.attrs.get("criterion")
        if have is not None and have != want:
            raise InputError(
                f"criterion: expected the thresholds' own criterion {have!r}; received {want!r}",
                f"estimate_thresholds(ds, {want!r}) first, or pass the cube",
            )
    require_dim(thresholds, dim, "fit_exponent (threshold vs size)")
    if thresholds.sizes[dim] < 2:
        raise InputError(
            f"`{dim}` has {thresholds.sizes[dim]} value(s): need ≥ 2 to fit a slope",
            "sweep n over two or more values",
        )
    level = float(thresholds.attrs.get("level", 0.95)) if level is None else level
    alpha = (1 - level) / 2
    has_boot = BOOT in thresholds.dims and thresholds.sizes[BOOT] > 0
    groups = [d for d in thresholds["threshold"].dims if d != dim]
    thr = thresholds["threshold"].where(thresholds["in_range"]).transpose(*groups, dim)
    logn = np.log(np.asarray(thresholds[dim].values, dtype=float))
    gshape = thr.shape[:-1]
    # A bootstrap threshold that underflowed to 0 gives log = -inf: dropped as non-finite.
    with np.errstate(divide="ignore"):
        t_flat = np.log(np.asarray(thr.values)).reshape(-1, thr.shape[-1])
        if has_boot:
            tb = thresholds["threshold_boot"].transpose(*groups, dim, BOOT).values
            b_flat = np.log(np.asarray(tb)).reshape(-1, thr.shape[-1], thresholds.sizes[BOOT])
    n_groups = t_flat.shape[0]
    k = np.full(n_groups, np.nan)
    c = np.full(n_groups, np.nan)
    lo = np.full(n_groups, np.nan)
    hi = np.full(n_groups, np.nan)
    npts = np.zeros(n_groups, dtype=int)
    for g in range(n_groups):
        use = np.isfinite(t_flat[g])
        npts[g] = use.sum()
        if npts[g] < 2:
            continue
        k[g], logc = np.polyfit(logn[use], t_flat[g, use], 1)
        c[g] = np.exp(logc)
        if has_boot:
            yb = b_flat[g][use]  # (points, boot)
            ok = np.all(np.isfinite(yb), axis=0)
            if ok.sum() >= 0.5 * yb.shape[1]:
                xc = logn[use] - logn[use].mean()
                slopes = (xc @ yb[:, ok]) / (xc @ xc)
                lo[g], hi[g] = np.quantile(slopes, [alpha, 1 - alpha])
    coords = {d: thr[d] for d in groups}

    def arr(a: np.ndarray) -> xr.DataArray:
        return xr.DataArray(a.reshape(gshape), dims=groups, coords=coords)

    p_val = _p_of(thresholds, p)
    out = xr.Dataset(
        {
            "exponent": arr(k),
            "exponent_lo": arr(lo),
            "exponent_hi": arr(hi),
            "prefactor": arr(c),
            "n_points": arr(npts),
        }
    )
    ref = -1.0 / (p_val - 1)
    out["reference_sroa"] = xr.zeros_like(out["exponent"]) + ref
    out["reference_power"] = xr.full_like(out["exponent"], -1.0)
    out["exponent"].attrs = {"long_name": f"fitted exponent k in threshold ∝ {dim}^k"}
    out["reference_sroa"].attrs = {"long_name": "−1/(p−1): Theorem 3.1 (SROA, global steps)"}
    out["reference_power"].attrs = {"long_name": "−1: power method"}
    out.attrs = {"level": level, "dim": dim, "criterion": thresholds.attrs.get("criterion")}
    out.attrs = {k: v for k, v in out.attrs.items() if v is not None}
    return out


@dataclasses.dataclass(frozen=True)
class RateFit:
    """The rate ``ε* ≈ C (n − 1)^k`` fitted to bracketed thresholds (:func:`fit_rate`).

    Attributes
    ----------
    exponent, exponent_lo, exponent_hi : float
        ``k`` and its interval at ``level``.
    prefactor : float
        ``C``.
    reference : float
        ``−1/(p−1)``, Theorem 3.1's rate.
    spread, lack_of_fit : float
        REML estimates of the standard deviations in log ε of the replicates at one size (σ)
        and of the sizes about the line (τ), beyond the brackets' own width.
    level : float
        Confidence level.
    n_range : (int, int)
        Smallest and largest n used by the fit.
    n_points, n_sizes, n_censored : int
        Thresholds used, distinct sizes in ``n_range``, and thresholds in ``n_range`` left out
        because their bracket is open (crossing below the scan range, ``lo = 0``, or not
        reached, ``hi = inf``).
    onset_n : float
        The smallest size from which on ε* stays below its small-n plateau by more than its
        bracket (see :func:`fit_rate`); NaN when it never leaves it.
    sizes : ndarray
        Every distinct n given (not only the fitted range).
    normalised, normalised_lo, normalised_hi : ndarray
        Per size, the medians over replicates of ``(n − 1)^{1/(p−1)}`` times the bracket's
        geometric centre, lower and upper end: flat in n when Theorem 3.1's rate is attained.
    converged : bool
        Whether the likelihood maximisation reported success.
    """

    exponent: float
    exponent_lo: float
    exponent_hi: float
    prefactor: float
    reference: float
    spread: float
    lack_of_fit: float
    level: float
    n_range: tuple[int, int]
    n_points: int
    n_sizes: int
    n_censored: int
    onset_n: float
    sizes: np.ndarray
    normalised: np.ndarray
    normalised_lo: np.ndarray
    normalised_hi: np.ndarray
    converged: bool


def _bracket_arrays(
    n: ArrayLike, lo: ArrayLike, hi: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    arrays = [np.asarray(a, dtype=float).ravel() for a in (n, lo, hi)]
    if len({a.size for a in arrays}) != 1:
        raise InputError(
            f"n, lo, hi: expected arrays of one length, received sizes {[a.size for a in arrays]}",
            "pass one n, lo and hi per threshold (replicates repeat their n)",
        )
    n_, lo_, hi_ = arrays
    keep = np.isfinite(n_) & ~np.isnan(lo_) & ~np.isnan(hi_)  # NaN: instance not run
    n_, lo_, hi_ = n_[keep], lo_[keep], hi_[keep]
    if np.any(n_ < 2) or np.any(n_ != np.round(n_)):
        raise InputError(
            f"n: expected integer sizes >= 2, received {np.unique(n_)}",
            "pass the sizes n as integers >= 2",
        )
    if np.any(lo_ < 0) or np.any(~(hi_ > lo_)) or np.any(np.isinf(lo_)):
        raise InputError(
            "lo, hi: expected brackets 0 <= lo < hi <= inf (lo = eps_lo, hi = eps_hi)",
            "pass a threshold cube's eps_lo and eps_hi",
        )
    return n_, lo_, hi_


@dataclasses.dataclass(frozen=True)
class SizeMedians:
    """Per size, the medians over replicates of first-crossing brackets, and the same times
    Theorem 3.1's rate ``(n − 1)^{1/(p−1)}`` (:func:`size_medians`).

    Attributes
    ----------
    sizes : ndarray
        Every distinct n given, increasing.
    lo, hi, centre : ndarray
        Medians of the brackets' lower ends, upper ends and geometric centres.
    normalised, normalised_lo, normalised_hi : ndarray
        ``centre``, ``lo`` and ``hi`` times ``(n − 1)^{1/(p−1)}``: flat in n where Theorem
        3.1's rate is attained.
    """

    sizes: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    centre: np.ndarray
    normalised: np.ndarray
    normalised_lo: np.ndarray
    normalised_hi: np.ndarray


def size_medians(n: ArrayLike, lo: ArrayLike, hi: ArrayLike, *, p: int) -> SizeMedians:
    """Median bracket per size and its rate-normalised values; needs no fit, so it exists for
    any number of sizes (a figure shows them even where :func:`fit_rate` cannot fit)."""
    _check_order(p)
    n_all, lo_all, hi_all = _bracket_arrays(n, lo, hi)
    sizes = np.unique(n_all)
    lo_med = np.array([np.median(lo_all[n_all == s]) for s in sizes])
    hi_med = np.array([np.median(hi_all[n_all == s]) for s in sizes])
    centre = np.array([np.median(np.sqrt(lo_all[n_all == s] * hi_all[n_all == s])) for s in sizes])
    scale = (sizes - 1.0) ** (1.0 / (p - 1))
    return SizeMedians(
        sizes, lo_med, hi_med, centre, scale * centre, scale * lo_med, scale * hi_med
    )


def _check_order(p: int) -> None:
    if isinstance(p, bool) or int(p) != p or p < 3:
        raise InputError(
            f"p: expected an integer order >= 3; received {p!r}",
            "give the tensor order of the cube, e.g. p=3",
        )


def _onset(sizes: np.ndarray, lo_med: np.ndarray, hi_med: np.ndarray) -> float:
    """First size from which the median bracket lies wholly below the smallest size's."""
    below = hi_med < lo_med[0]
    for i in range(1, sizes.size):
        if np.all(below[i:]):
            return float(sizes[i])
    return math.nan


def fit_rate(
    n: ArrayLike,
    lo: ArrayLike,
    hi: ArrayLike,
    *,
    p: int,
    n_range: tuple[int | None, int | None] | None = None,
    level: float = 0.95,
) -> RateFit:
    """Fit ``log ε* = log C + k log(n − 1)`` to bracketed thresholds, with an honest interval.

    Each threshold is only known to lie in its bracket ``(lo, hi]`` (the first-crossing search
    of ``sroa_dist.find_threshold``; ``lo = 0`` when the scan's first ε already failed,
    ``hi = inf`` when no ε in range failed). In log ε, the bracket's centre is modelled as
    ``log C + k log(n_i − 1) + u_i + e_ij + δ_ij``: ``u_i ~ N(0, τ²)`` is the size's deviation
    from a straight line, shared by its replicates; ``e_ij ~ N(0, σ²)`` the replicate spread;
    ``δ_ij`` the threshold's unknown place in its bracket, uniform, so of known variance
    ``w²/12`` for a bracket of log width ``w``. The spreads are estimated by restricted maximum
    likelihood, ``(C, k)`` by generalised least squares, and the interval is
    ``k̂ ± t · se(k̂)`` with Student's t on (number of sizes − 2) degrees of freedom.

    Why this and not a bootstrap over replicates: the coherent tilt's replicates are nearly
    identical, so such a bootstrap has zero width. Here the bracket widths enter as a known
    variance, and the size effect keeps identical replicates from counting as independent
    evidence: the interval then comes from the brackets and from how far the sizes scatter
    about the line. The t calibration on the number of sizes is the honest one when the
    sizes' scatter dominates and conservative when replicates are many and the sizes lie on
    the line. An exact interval-censored likelihood (integrating ``u_i`` by quadrature) was
    tried first: it agreed in coverage but cost seconds per fit, and first-crossing brackets
    are narrow (``rtol`` 1 %), where the uniform-as-variance approximation is immaterial.
    Open brackets only bound their threshold: they are left out of the fit and counted in
    ``n_censored`` (choose ``n_range`` where the scan range brackets every threshold).

    Parameters
    ----------
    n, lo, hi : array_like
        One entry per threshold (replicates repeat their n); a threshold cube's ``eps_lo`` and
        ``eps_hi`` flattened beside its ``n``. NaN entries (not run) are dropped.
    p : int
        Tensor order, for the reference ``−1/(p−1)`` and the normalisation.
    n_range : (int or None, int or None), optional
        Inclusive range of n used by the fit (None: unbounded); the onset and the normalised
        thresholds use every size. Fit from the onset to measure the rate where it lives.
    level : float
        Confidence level of the exponent's interval.

    Returns
    -------
    RateFit
        The onset is the smallest size from which on the median bracket (over replicates)
        lies wholly below the smallest size's median bracket: ε* has left its small-n plateau
        by more than the bracket width.
    """
    if not 0 < level < 1:
        raise InputError(
            f"level: expected a number in (0, 1); received {level!r}", "e.g. level=0.95"
        )
    _check_order(p)
    n_all, lo_all, hi_all = _bracket_arrays(n, lo, hi)
    if n_all.size == 0:
        raise InputError(
            "n: expected thresholds to fit; received none (every entry is NaN, or no input)",
            "run the sweep's blocks first (sroa-dist status STORE shows what is done)",
        )
    med = size_medians(n_all, lo_all, hi_all, p=p)
    sizes = med.sizes
    n_min, n_max = (None, None) if n_range is None else n_range
    use = np.ones(n_all.size, dtype=bool)
    if n_min is not None:
        use &= n_all >= n_min
    if n_max is not None:
        use &= n_all <= n_max
    fit_sizes = np.unique(n_all[use])
    if fit_sizes.size < 3:
        shown = ", ".join(f"{v:g}" for v in fit_sizes)
        where = "" if n_range is None else f" in n_range {tuple(n_range)}"
        raise InputError(
            f"n: expected at least 3 sizes{where} (a rate and the scatter about it); received "
            f"{fit_sizes.size}: {shown or 'none'}",
            "run more sizes (tensor.n = [8, 16, 32], say) or widen n_range",
        )
    closed = use & (lo_all > 0) & np.isfinite(hi_all)
    if np.unique(n_all[closed]).size < 3:
        raise InputError(
            f"lo, hi: expected closed brackets (0 < lo < hi < inf) at 3 or more sizes; received "
            f"them at {np.unique(n_all[closed]).size} (an open bracket only bounds its threshold)",
            "widen [threshold] eps_range so that every search crosses inside it",
        )
    est = _rate_model.estimate(
        np.log(n_all[closed] - 1.0), np.log(lo_all[closed]), np.log(hi_all[closed])
    )
    k_lo, k_hi = _rate_model.slope_interval(est, level, df=fit_sizes.size - 2)
    a, k = (float(v) for v in est.coef)
    return RateFit(
        exponent=k,
        exponent_lo=k_lo,
        exponent_hi=k_hi,
        prefactor=math.exp(a),
        reference=-1.0 / (p - 1),
        spread=est.sigma,
        lack_of_fit=est.tau,
        level=level,
        n_range=(int(fit_sizes[0]), int(fit_sizes[-1])),
        n_points=int(closed.sum()),
        n_sizes=int(fit_sizes.size),
        n_censored=int(np.sum(use & ~closed)),
        onset_n=_onset(sizes, med.lo, med.hi),
        sizes=sizes,
        normalised=med.normalised,
        normalised_lo=med.normalised_lo,
        normalised_hi=med.normalised_hi,
        converged=est.converged,
    )
