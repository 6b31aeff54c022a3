"""Per-step error figures: the paper's Figure 2 and the last-step accumulation across n.

Errors are non-negative, so the spread is drawn as replicate quantiles (a band that can never
dip below zero, unlike mean ± 2 std), with the median as the centre and the mean as a marker.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..errors import InputError
from ..sweep import REPLICATE, STEP
from ._completeness import Completeness, completeness, has_results, replicate_span, replicates_text
from ._cube import combinations, group_label, sweep_axes
from ._plotting import no_data, noise_rows, present_text, status_title
from .aggregate import step_stats as _step_stats

#: Quantile levels of the band drawn around the per-step median (a central 90 % band).
BAND = (0.05, 0.5, 0.95)
_YLABEL = {
    "lam_err": r"$|\hat\lambda_i - \lambda_{\pi(i)}|$  (units of λ)",
    "vec_err": r"$\|\hat v_i - v_{\pi(i)}\|$  (unit-vector distance)",
}
_WHAT = {"lam_err": "λ error", "vec_err": "vector error"}
#: Characters per panel-title line: two panels side by side at 10 in stay clear of each other.
_TITLE_WIDTH = 48


def _title(text: str) -> str:
    return "\n".join(textwrap.wrap(text, _TITLE_WIDTH))


def _band(ax, x: np.ndarray, q: np.ndarray, mean: np.ndarray, color: str, label: str) -> None:
    """Median with a quantile bar (never below zero for non-negative data) and the mean."""
    lo, med, hi = q
    ok = np.isfinite(med)
    yerr = np.stack([med - lo, hi - med])[:, ok]
    ax.errorbar(x[ok], med[ok], yerr=yerr, fmt="o", ms=4, capsize=3, color=color, label=label)
    ax.plot(x[ok], mean[ok], "x", ms=5, color=color, alpha=0.8)


def figure2(ds: xr.Dataset, *, max_series: int = 6, status: Completeness | None = None) -> Figure:
    """Figure 2: per-iteration λ and vector errors over replicates.

    Each step shows the replicate median with a central 90 % quantile band (errors are
    non-negative, so a mean ± 2 std bar would dip below zero and misstate the spread) and the
    mean as a small ×.  One row per noise model.  Other sweep axes with several values give
    one series each (up to ``max_series``, beyond which they are pooled and the title says so).
    Replicate counts in the titles are those with results, not those planned; ``status``
    (default: :func:`~sroa_dist.analysis.completeness`) is stated above the panels.
    """
    for name in ("lam_err", "vec_err"):
        if name not in ds.data_vars:
            raise InputError(
                f"figure 2 needs the cube variable {name!r}; the cube has none",
                "use a tensor sweep's cube (it stores the per-step errors)",
            )
    status = completeness(ds) if status is None else status
    has = has_results(ds).compute()
    other = [a for a in sweep_axes(ds) if a != "noise" and ds.sizes[a] > 1]
    n_series = int(np.prod([ds.sizes[a] for a in other])) if other else 1
    pooled = other if n_series > max_series else []
    series_dims = [] if pooled else other
    stats = _step_stats(ds, dim=[REPLICATE, *pooled], quantiles=BAND).compute()
    rows = noise_rows(ds)
    fig = Figure(figsize=(10, 3.4 * len(rows)), layout="constrained")
    axes = fig.subplots(len(rows), 2, squeeze=False)
    steps = ds[STEP].values
    band = f"median, {BAND[0]:.0%}–{BAND[-1]:.0%} band; × mean"
    for row, sel in zip(axes, rows, strict=True):
        prefix = f"{sel['noise']}: " if sel else ""
        row_has = has.sel(sel)
        n_rep = replicates_text(*replicate_span(row_has), ds.sizes.get(REPLICATE, 1))
        pool_note = f", pooled over {present_text(row_has, pooled)}" if pooled else ""
        for ax, kind in zip(row, ("lam_err", "vec_err"), strict=True):
            series = combinations(stats, series_dims)
            for k, ser in enumerate(series):
                sub = stats.sel({**sel, **ser})
                q = sub[f"{kind}_quantile"].transpose("quantile", ...).values
                shift = (k - (len(series) - 1) / 2) * 0.08  # side by side, not on top
                label = group_label(ser) or band
                _band(ax, steps + shift, q, sub[f"{kind}_mean"].values, f"C{k % 10}", label)
            head = _title(f"{prefix}{_WHAT[kind]} ({n_rep}{pool_note})")
            ax.set_title(f"{head}\n{band}", fontsize="medium")
            ax.set_xlabel("SROA iteration i")
            ax.set_ylabel(_YLABEL[kind])
            ax.set_xticks(steps if steps.size <= 12 else steps[:: int(np.ceil(steps.size / 12))])
            if not bool(row_has.any()):
                no_data(ax, status)
            elif series_dims:
                ax.legend(loc="best", fontsize="small")
    status_title(fig, status)
    return fig


def _fixed_eps(ds: xr.Dataset, eps: Sequence[float] | None, max_panels: int) -> list[float]:
    """The ε values to draw: the ones asked for, else up to ``max_panels`` spread over the axis."""
    values = np.asarray(ds["eps"].values, dtype=float)
    if eps is not None:
        missing = [e for e in eps if not np.any(np.isclose(values, e, rtol=1e-9))]
        if missing:
            raise InputError(
                f"eps={list(missing)}: not on the cube's eps axis; expected some of "
                f"{[float(v) for v in values]}",
                "choose eps values on the cube's eps axis",
            )
        return [float(values[np.argmin(np.abs(values - e))]) for e in eps]
    if values.size <= max_panels:
        return [float(v) for v in values]
    picks = np.unique(np.round(np.linspace(0, values.size - 1, max_panels)).astype(int))
    return [float(values[i]) for i in picks]


def figure_step_accumulation(
    ds: xr.Dataset,
    *,
    eps: Sequence[float] | None = None,
    variable: str = "lam_err",
    max_panels: int = 3,
    status: Completeness | None = None,
) -> Figure:
    """Per-step error at fixed ε for several n: where along SROA the error accumulates.

    For the coherent tilt every component leans toward the one deflated last, so the deflation
    residuals add up there and the last step's value error grows like (n−1)·ε^p (Theorem 3.1's
    accumulation term); pooling over n (as Figure 2 does when n is a series) hides this.  One
    panel per (noise family, ε), one line per n: the replicate median of ``variable`` against
    the step index i, with its central 90 % band shaded.  ``eps`` picks the ε values (default:
    up to ``max_panels`` spread over the axis).
    """
    if variable not in _WHAT:
        raise InputError(
            f"variable={variable!r}: expected one of {sorted(_WHAT)}",
            "use one of the listed variables",
        )
    for name in (variable,):
        if name not in ds.data_vars:
            raise InputError(
                f"the step-accumulation figure needs {name!r}; the cube has none",
                "use a tensor sweep's cube (it stores the per-step errors)",
            )
    if ds.sizes.get("n", 0) < 2 or "eps" not in ds.dims or STEP not in ds.dims:
        raise InputError(
            "the step-accumulation figure needs an `n` axis with >= 2 values, an `eps` axis "
            f"and a `step` dim; the cube has dims {dict(ds.sizes)}",
            "use a cube that sweeps n (two or more values) and eps",
        )
    status = completeness(ds) if status is None else status
    eps_values = _fixed_eps(ds, eps, max_panels)
    rows = noise_rows(ds)
    pooled = [a for a in sweep_axes(ds) if a not in ("noise", "n", "eps") and ds.sizes[a] > 1]
    sub = ds[[variable]].sel(eps=eps_values, method="nearest")
    stats = _step_stats(sub, [variable], dim=[REPLICATE, *pooled], quantiles=BAND).compute()
    fig = Figure(figsize=(4.2 * len(eps_values), 3.4 * len(rows)), layout="constrained")
    axes = fig.subplots(len(rows), len(eps_values), squeeze=False)
    ns = ds["n"].values
    for row, sel in zip(axes, rows, strict=True):
        for ax, e in zip(row, eps_values, strict=True):
            drawn = False
            for k, n in enumerate(ns):
                cur = stats.sel({**sel, "eps": e, "n": n})
                q = cur[f"{variable}_quantile"].transpose("quantile", ...).values
                ok = np.isfinite(q[1])
                drawn = drawn or bool(ok.any())
                steps = cur[STEP].values[ok]
                color = f"C{k % 10}"
                ax.plot(steps, q[1][ok], "-o", ms=3, color=color, label=f"n = {n}")
                ax.fill_between(steps, q[0][ok], q[2][ok], color=color, alpha=0.15, lw=0)
            prefix = f"{sel['noise']}, " if sel else ""
            pool = f", pooled over {', '.join(pooled)}" if pooled else ""
            ax.set_title(_title(f"{prefix}ε = {e:.3g}{pool}"), fontsize="medium")
            ax.set_xlabel("SROA step i")
            ax.set_ylabel(_YLABEL[variable])
            ax.set_ylim(bottom=0)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            if not drawn:
                no_data(ax, status)
    # One legend below the panels: inside them it covered the first steps' data.
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(
        handles, labels, loc="outside lower center", ncols=len(labels), fontsize="small",
        title="replicate median; shaded: 5–95 % band",
    )  # fmt: skip
    status_title(fig, status)
    return fig
