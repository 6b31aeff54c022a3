"""Sample-size analysis of model sweeps: the N-exponent of the errors and the N needed for success.

A model sweep (``[model]`` spec) estimates the whitened third moment of a latent variable model
from ``N`` samples, ``T̂ = T + E``. Concentration gives ``‖E‖ = O(N^{-1/2})`` and, through the
paper's perturbation bounds, component errors of the same order. Here, for each grid point
other than ``N``:

- :func:`fit_sample_exponent` fits ``log error = a + b log N`` by least squares over every
  instance, with a percentile-bootstrap interval for ``b`` from resampling replicates as whole
  curves (replicate ``r`` is one model seen with more and more data, so its points are paired);
- :func:`sample_size_needed` fits ``P(success)`` by a logistic curve in ``log N`` and reports
  the ``N`` where it crosses 1/2, with a bootstrap interval from resampling the replicates within
  each ``N`` (the logistic fit of :mod:`sroa_dist.analysis.threshold`).

Both rely on the cube's dimension and variable names only (``N``, ``replicate``, ``step``,
``success``, ``component_error`` ...), never on attrs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ..errors import InputError
from ..sweep import REPLICATE, STEP
from ._cube import combinations, group_label, require, require_dim, sweep_axes
from ._plotting import plain_log_labels
from .kinds import KindAnalysis
from .threshold import _thresholds_one

__all__ = [
    "SAMPLE_ERRORS",
    "MODEL_ANALYSIS",
    "fit_sample_exponent",
    "plot_sample_scaling",
    "sample_error",
    "sample_size_needed",
]

#: Sample-size dimension of a model sweep's cube.
SAMPLE_AXIS = "N"
#: Per-instance errors whose N-scaling can be fitted (per-step ones are maxed over steps).
SAMPLE_ERRORS = {
    "eps": "‖E‖ with the population whitening (the paper's perturbation)",
    "eps_full": "‖E‖ with the estimated whitening (whole pipeline)",
    "component_error": (
        "largest matched component error (TV for topics, ℓ2 for means, relative ℓ2 up to sign "
        "for ICA's mixing columns)"
    ),
    "weight_error": "largest matched weight error |ŵ − w| (ICA: kurtosis error |κ̂ − κ|)",
}
#: The exponent concentration predicts for every error above.
REFERENCE_EXPONENT = -0.5


def _ran(ds: xr.Dataset) -> xr.DataArray:
    """Instances with results (unfinished blocks read as NaN errors)."""
    ran = ds["component_error"].notnull()
    return ran.any(STEP) if STEP in ran.dims else ran


def sample_error(ds: xr.Dataset, error: str = "eps") -> xr.DataArray:
    """Per-instance error named ``error`` (see :data:`SAMPLE_ERRORS`), NaN where not computed."""
    if error not in SAMPLE_ERRORS:
        raise InputError(
            f"error: expected one of {sorted(SAMPLE_ERRORS)}; received {error!r}",
            "component_error and weight_error are maxed over SROA steps",
        )
    require(ds, [error, "component_error"], f"the N-scaling of `{error}`")
    da = ds[error]
    if STEP in da.dims:
        da = da.max(STEP, skipna=True)
    return da.where(_ran(ds))


def _groups(ds: xr.Dataset) -> list[str]:
    return [a for a in sweep_axes(ds) if a != SAMPLE_AXIS]


def _percentiles(boot: np.ndarray, level: float) -> tuple[float, float]:
    boot = boot[np.isfinite(boot)]
    if boot.size < 2:
        return np.nan, np.nan
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def fit_sample_exponent(
    ds: xr.Dataset,
    error: str = "eps",
    *,
    n_boot: int = 200,
    rng: int | np.random.Generator = 0,
    level: float = 0.95,
    n_min: float | None = None,
) -> xr.Dataset:
    """Least-squares slope ``b`` of ``log error`` vs ``log N`` per grid point, with a CI.

    Parameters
    ----------
    ds : xarray.Dataset
        Cube of a model sweep (needs the ``N`` and ``replicate`` dims).
    error : str
        A key of :data:`SAMPLE_ERRORS`.
    n_boot, rng, level
        Bootstrap resamples (of whole replicate curves), their seed, and the interval level.
    n_min : float, optional
        Only use ``N >= n_min`` (the ``N^{-1/2}`` rate is asymptotic: tiny samples can sit on a
        plateau, e.g. recovered topics no better than chance).

    Returns
    -------
    xarray.Dataset
        Over the other sweep axes: ``exponent`` (``b``; about −1/2 expected), ``exponent_lo``,
        ``exponent_hi``, ``prefactor`` (``e^a``: the error at ``N = 1`` on the fitted line),
        ``n_points`` and ``reference`` (−1/2).
    """
    require_dim(ds, SAMPLE_AXIS, "the N-exponent fit")
    require_dim(ds, REPLICATE, "the N-exponent fit")
    gen = np.random.default_rng(rng)
    err = sample_error(ds, error).compute()
    groups = _groups(ds)
    rows = []
    for sel in combinations(err, groups):
        e = err.sel(sel).transpose(SAMPLE_AXIS, REPLICATE)
        logN = np.log(np.asarray(e[SAMPLE_AXIS].values, dtype=float))
        y = np.asarray(e.values, dtype=float)
        keep_n = np.ones(logN.size, bool) if n_min is None else logN >= np.log(n_min)
        y = np.where(keep_n[:, None] & (y > 0), y, np.nan)
        X = np.broadcast_to(logN[:, None], y.shape)
        n_rep = y.shape[1]

        b, a, n = _slope(X, y, np.arange(n_rep))
        boot = np.array([_slope(X, y, gen.integers(0, n_rep, n_rep))[0] for _ in range(n_boot)])
        lo, hi = _percentiles(boot, level)
        rows.append((sel, b, lo, hi, np.exp(a), n))
    return _to_dataset(
        err,
        groups,
        rows,
        ("exponent", "exponent_lo", "exponent_hi", "prefactor", "n_points"),
        {"error": error, "level": level, "n_boot": n_boot, "reference": REFERENCE_EXPONENT},
    )


def _slope(X: np.ndarray, y: np.ndarray, cols: np.ndarray) -> tuple[float, float, int]:
    """Least-squares ``(b, a, n)`` of ``log y = a + b X`` over the replicate columns ``cols``."""
    xx, yy = X[:, cols].ravel(), y[:, cols].ravel()
    ok = np.isfinite(yy)
    if ok.sum() < 3 or np.ptp(xx[ok]) == 0:
        return np.nan, np.nan, int(ok.sum())
    b, a = np.polyfit(xx[ok], np.log(yy[ok]), 1)
    return float(b), float(a), int(ok.sum())


def sample_size_needed(
    ds: xr.Dataset,
    *,
    n_boot: int = 200,
    rng: int | np.random.Generator = 0,
    level: float = 0.95,
) -> xr.Dataset:
    """The sample size where the success probability crosses 1/2, per grid point, with a CI.

    A logistic curve in ``log N`` is fitted to the ``success`` variable (every matched component
    and weight within the sweep's tolerances); ``n_needed`` is NaN when success does not
    increase with ``N`` or never varies. ``in_range`` says whether it lies inside the swept
    ``N`` (extrapolations are reported but flagged).

    Returns
    -------
    xarray.Dataset
        Over the other sweep axes: ``n_needed``, ``n_needed_lo``, ``n_needed_hi``, ``width``
        (logistic scale in ``log N``), ``in_range``, ``n_instances``, ``success_min`` /
        ``success_max`` (lowest / highest success fraction over ``N``) and ``bracket_lo`` /
        ``bracket_hi``: the swept ``N`` just below (success fraction < 1/2) and just above
        (>= 1/2) ``n_needed``. When success jumps from 0 to 1 between two grid points the
        bootstrap interval collapses (every resample is separated alike) and the bracket is the
        interval to quote; a finer ``N`` grid narrows it.
    """
    require_dim(ds, SAMPLE_AXIS, "the sample size needed for success")
    require(ds, ["success", "component_error"], "the sample size needed for success")
    gen = np.random.default_rng(rng)
    ran = _ran(ds).compute()
    succ = ds["success"].astype(float).where(ran).compute()
    groups = _groups(ds)
    Ns = np.asarray(ds[SAMPLE_AXIS].values, dtype=float)
    rows = []
    for sel in combinations(succ, groups):
        s = succ.sel(sel).transpose(SAMPLE_AXIS, ...)
        y2 = np.asarray(s.values, dtype=float).reshape(Ns.size, -1)
        lev = np.broadcast_to(np.arange(Ns.size)[:, None], y2.shape)
        ok = np.isfinite(y2)
        # success rises with N: fit it against -log N, where the shared fit expects a fall
        x = -np.log(np.broadcast_to(Ns[:, None], y2.shape)[ok])
        log_thr, width, boot = _thresholds_one(x, y2[ok], lev[ok], n_boot, gen)
        lo, hi = _percentiles(-boot, level)
        frac = np.nanmean(np.where(ok, y2, np.nan), axis=1) if ok.any() else np.array([np.nan])
        n_needed = float(np.exp(-log_thr))
        in_range = bool(Ns.min() <= n_needed <= Ns.max()) if np.isfinite(n_needed) else False
        # Swept N on either side of n_needed: the honest interval when success jumps from 0 to
        # 1 between two grid points (complete separation), where the bootstrap cannot move.
        fails, oks = Ns[frac < 0.5], Ns[frac >= 0.5]
        below, above = fails[fails <= n_needed], oks[oks >= n_needed]
        bracket_lo = float(below.max()) if below.size else np.nan
        bracket_hi = float(above.min()) if above.size else np.nan
        rows.append(
            (
                sel,
                n_needed,
                float(np.exp(lo)),
                float(np.exp(hi)),
                width,
                in_range,
                int(ok.sum()),
                float(np.nanmin(frac)),
                float(np.nanmax(frac)),
                bracket_lo,
                bracket_hi,
            )
        )
    return _to_dataset(
        succ,
        groups,
        rows,
        (
            "n_needed",
            "n_needed_lo",
            "n_needed_hi",
            "width",
            "in_range",
            "n_instances",
            "success_min",
            "success_max",
            "bracket_lo",
            "bracket_hi",
        ),
        {"level": level, "n_boot": n_boot},
    )


def _to_dataset(
    like: xr.DataArray,
    groups: Sequence[str],
    rows: list[tuple],
    names: Sequence[str],
    attrs: dict,
) -> xr.Dataset:
    dims = [g for g in groups if g in like.dims]
    shape = [like.sizes[g] for g in dims]
    coords = {g: like[g].values for g in dims}
    out = {}
    for j, name in enumerate(names):
        vals = np.array([r[j + 1] for r in rows])
        out[name] = (dims, vals.reshape(shape))
    ds = xr.Dataset(out, coords=coords)
    ds.attrs.update(attrs)
    return ds


def plot_sample_scaling(
    ds: xr.Dataset,
    out_dir: str | Path,
    *,
    exponents: xr.Dataset | None = None,
    needed: xr.Dataset | None = None,
    dpi: int = 120,
) -> list[Path]:
    """Two figures: ``sample_error`` (median ‖E‖ vs N, log-log, with fitted lines and the
    N^{-1/2} reference) and ``sample_success`` (success fraction vs N with the N needed)."""
    out_dir = Path(out_dir)
    exponents = fit_sample_exponent(ds) if exponents is None else exponents
    needed = sample_size_needed(ds) if needed is None else needed
    out_dir.mkdir(parents=True, exist_ok=True)  # after the cube's checks: bad input makes nothing
    groups = _groups(ds)
    Ns = np.asarray(ds[SAMPLE_AXIS].values, dtype=float)
    err = sample_error(ds, exponents.attrs.get("error", "eps")).compute()
    succ = ds["success"].astype(float).where(_ran(ds)).compute()
    paths = []

    fig = Figure(figsize=(6.4, 4.6), layout="constrained")
    ax = fig.add_subplot()
    for i, sel in enumerate(combinations(err, groups)):
        med = err.sel(sel).median(REPLICATE)
        color = f"C{i % 10}"
        label = group_label(sel) or "all"
        ax.loglog(Ns, med.values, "o", color=color, ms=4, label=label)
        ex = exponents.sel(sel)
        if np.isfinite(float(ex["exponent"])):
            ax.loglog(Ns, float(ex["prefactor"]) * Ns ** float(ex["exponent"]), "-", color=color)
    ref = float(np.nanmedian(err.values)) * (Ns / np.median(Ns)) ** REFERENCE_EXPONENT
    ax.loglog(Ns, ref, "k--", lw=1, label="∝ N^(−1/2)")
    ax.set_xlabel("N (samples)")
    ax.set_ylabel(f"median {exponents.attrs.get('error', 'eps')}")
    ax.legend(fontsize=7)
    plain_log_labels(fig)
    paths.append(out_dir / "sample_error.png")
    fig.savefig(paths[-1], dpi=dpi)

    fig = Figure(figsize=(6.4, 4.6), layout="constrained")
    ax = fig.add_subplot()
    for i, sel in enumerate(combinations(succ, groups)):
        color = f"C{i % 10}"
        ax.semilogx(
            Ns,
            succ.sel(sel).mean(REPLICATE).values,
            "o-",
            color=color,
            ms=4,
            label=group_label(sel) or "all",
        )
        nn = float(needed.sel(sel)["n_needed"])
        if np.isfinite(nn):
            ax.axvline(nn, color=color, ls=":", lw=1)
    ax.axhline(0.5, color="grey", lw=0.8)
    ax.set_xlabel("N (samples)")
    ax.set_ylabel("success fraction")
    ax.set_ylim(-0.03, 1.03)
    ax.legend(fontsize=7)
    plain_log_labels(fig)
    paths.append(out_dir / "sample_success.png")
    fig.savefig(paths[-1], dpi=dpi)
    return paths


def report_section(
    doc: object, ds: xr.Dataset, fig_dir: Path, *, n_boot: int = 200, rng: int = 0
) -> list[Path]:
    """Write the sample-size section of :func:`~sroa_dist.analysis.write_report` for a model
    cube into ``doc``; returns the figure files (drawn into ``fig_dir``)."""
    doc.heading("Sample size: error vs N and the N needed for success")
    ran = _ran(ds).compute()
    items = [f"Instances with results (model sweep): {int(ran.sum())} of {ran.size}"]
    if "certified" in ds.data_vars:
        steps = ds["component_error"].notnull().compute()
        cert = (ds["certified"].astype(bool) & steps).compute()
        per = [a for a in ("method",) if a in ds.dims]
        for sel in combinations(cert, per):
            n_steps, n_cert = int(steps.sel(sel).sum()), int(cert.sel(sel).sum())
            frac = f"{100 * n_cert / n_steps:.1f} %" if n_steps else "–"
            items.append(
                f"Certified SROA steps{' (' + group_label(sel) + ')' if sel else ''}: {frac}"
            )
    if "eps_certified" in ds.data_vars:
        n_eps = int((ds["eps_certified"].astype(bool) & ran).sum())
        items.append(f"Instances with a certified ‖E‖ bracket: {n_eps} of {int(ran.sum())}")
    doc.bullets(items)
    doc.para(
        "Per grid point, a least-squares fit of log error vs log N over every instance; "
        f"{n_boot} bootstrap resamples of whole replicate curves give the intervals. "
        "Concentration predicts the exponent −1/2 for ‖E‖ and, through the perturbation "
        "bounds, for the recovery errors."
    )
    fits = {e: fit_sample_exponent(ds, e, n_boot=n_boot, rng=rng) for e in SAMPLE_ERRORS}
    for error, fit in fits.items():
        df = fit.to_dataframe().reset_index() if fit.dims else None
        header = [*fit.dims, "exponent", "exponent_lo", "exponent_hi", "prefactor", "n_points"]
        rows = (
            df[header].itertuples(index=False, name=None)
            if df is not None
            else [[fit[h].values.item() for h in header]]
        )
        doc.para(f"`{error}`: {SAMPLE_ERRORS[error]}")
        doc.table([str(h) for h in header], list(rows))
    needed = sample_size_needed(ds, n_boot=n_boot, rng=rng)
    doc.para(
        "N needed for success (every matched component and weight within the sweep's "
        "tolerances): where a logistic fit of success vs log N crosses 1/2, with bootstrap "
        "intervals from resampling replicates within each N; bracket = the swept N just "
        "below and above it (the interval to quote when success jumps from 0 to 1 between two "
        "grid points, where the bootstrap interval collapses); in_range = inside the swept N."
    )
    df = needed.to_dataframe().reset_index() if needed.dims else None
    header = [*needed.dims, "n_needed", "n_needed_lo", "n_needed_hi", "bracket_lo", "bracket_hi"]
    header += ["in_range"]
    header += ["success_min", "success_max", "n_instances"]
    rows = (
        df[header].itertuples(index=False, name=None)
        if df is not None
        else [[needed[h].values.item() for h in header]]
    )
    doc.table([str(h) for h in header], list(rows))
    return plot_sample_scaling(ds, fig_dir, exponents=fits["eps"], needed=needed)


#: The ``model`` kind's analysis (its ``analysis`` member names it by import path): SROA's
#: per-step results, then the sample-size section.
MODEL_ANALYSIS = KindAnalysis(report_section=report_section)
