"""Figures of a threshold cube (``[threshold]`` sweeps): ε*(n) with brackets and its rate.

A threshold cube holds, per instance, the first-crossing bracket ``(eps_lo, eps_hi]`` of a
success criterion in ε = ‖E‖ (``sroa_dist.find_threshold``). The figures show every bracket
(not a point estimate), the rate ``ε* ≈ C (n − 1)^k`` fitted by
:func:`~sroa_dist.analysis.threshold.fit_rate` with its interval, Theorem 3.1's reference slope
``−1/(p−1)``, and the rate-normalised threshold ``(n − 1)^{1/(p−1)} ε*``, flat where that rate
is attained.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from ..errors import InputError
from ._completeness import Completeness, completeness
from ._cube import combinations, group_label, sweep_axes
from ._plotting import plain_log_labels, status_title
from .kinds import KindAnalysis
from .threshold import RateFit, fit_rate, size_medians

#: The variables that make a cube a threshold cube.
THRESHOLD_VARS = ("eps_lo", "eps_hi")
_TITLE_WIDTH = 44
_LEGEND_WIDTH = 70
#: Margin (a factor on log axes) between the outermost bracket and the axis edge.
_Y_MARGIN = 1.25


def _panels(ds: xr.Dataset) -> list[dict[str, object]]:
    """One panel per tensor order (the rate's reference slope depends on p)."""
    return combinations(ds, ["p"]) if "p" in sweep_axes(ds) else [{}]


def _order(ds: xr.Dataset, panel: dict[str, object]) -> int:
    if "p" in panel:
        return int(panel["p"])  # type: ignore[call-overload]
    if "p" in ds.coords:
        return int(np.asarray(ds["p"].values).ravel()[0])
    p = next((ds.attrs[k] for k in ("setting_p", "setting_tensor.p", "p") if k in ds.attrs), None)
    if p is None:
        raise InputError(
            "the threshold cube names no tensor order p (coordinate or attribute)",
            "use a threshold sweep's cube (it records p)",
        )
    return int(p)


def _criterion_text(ds: xr.Dataset) -> str:
    """``"value, c = 0.5"`` from the cube's provenance (the search's criterion and level)."""
    name = ds.attrs.get("setting_criterion", ds.attrs.get("setting_threshold.criterion", ""))
    level = ds.attrs.get("setting_level")
    if not name:
        return ""
    option = {"value": "c", "recovery": "radius"}.get(str(name))
    return f"{name}, {option} = {level:g}" if option and level is not None else str(name)


def _series_dims(ds: xr.Dataset) -> list[str]:
    return [a for a in sweep_axes(ds) if a not in ("n", "p") and ds.sizes[a] > 1]


def rate_fits(
    ds: xr.Dataset, *, n_range: tuple[int | None, int | None] | None = None, level: float = 0.95
) -> dict[tuple[tuple[str, object], ...], RateFit | str]:
    """:func:`~sroa_dist.analysis.threshold.fit_rate` per (p, family, method, ...) series.

    Keys are the series' coordinates as sorted ``(dim, value)`` pairs; a value is the fit, or
    the reason no fit was possible (too few closed brackets or sizes) as a string.
    """
    if not (set(THRESHOLD_VARS) <= set(ds.data_vars) and "n" in ds.dims):
        raise InputError(
            f"a threshold cube needs variables {list(THRESHOLD_VARS)} and an `n` dim; "
            f"the cube has {sorted(ds.data_vars)}",
            "use the cube of a [threshold] sweep",
        )
    out: dict[tuple[tuple[str, object], ...], RateFit | str] = {}
    for panel in _panels(ds):
        p = _order(ds, panel)
        for ser in combinations(ds, _series_dims(ds)):
            sel = {**panel, **ser}
            n, lo, hi = _series(ds, sel)
            key = tuple(sorted(sel.items()))
            try:
                out[key] = fit_rate(
                    n.ravel(), lo.ravel(), hi.ravel(), p=p, n_range=n_range, level=level
                )
            except ValueError as exc:
                out[key] = str(exc).splitlines()[0]
    return out


def _series(ds: xr.Dataset, sel: dict[str, object]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n``, ``eps_lo`` and ``eps_hi`` of one series as ``(sizes, replicates)`` arrays."""
    sub = ds[list(THRESHOLD_VARS)].sel(sel).compute()
    lo = sub["eps_lo"].transpose("n", ...).values.reshape(sub.sizes["n"], -1)
    hi = sub["eps_hi"].transpose("n", ...).values.reshape(sub.sizes["n"], -1)
    n = np.broadcast_to(sub["n"].values[:, None].astype(float), lo.shape)
    return n, lo, hi


def _no_fit(name: str, reason: str) -> str:
    return f"{name}: brackets only, no rate fit ({reason})"


def _legend_below(ax) -> None:
    """The legend under the axes, never over the data (labels wrapped to the figure)."""
    handles, labels = ax.get_legend_handles_labels()
    labels = [textwrap.fill(lbl, _LEGEND_WIDTH, subsequent_indent="   ") for lbl in labels]
    ax.legend(
        handles,
        labels,
        fontsize="x-small",
        loc="upper center",
        bbox_to_anchor=(0.5, -0.13),
        frameon=False,
    )


def _fit_y_to(ax, values: list[float]) -> None:
    """Y limits that hold every bracket with a margin (bands and reference lines are clipped:
    a band with few sizes would otherwise squash the data into a sliver)."""
    v = np.asarray([x for x in values if np.isfinite(x) and x > 0])
    if v.size:
        ax.set_ylim(v.min() / _Y_MARGIN, v.max() * _Y_MARGIN)


def _brackets(ax, n: np.ndarray, lo: np.ndarray, hi: np.ndarray, color: str, shift: float) -> None:
    """Every replicate's bracket as a vertical bar (open brackets drawn to the axis edge)."""
    for j in range(lo.shape[1]):
        jitter = 1 + shift + 0.012 * (j - (lo.shape[1] - 1) / 2)
        ok = np.isfinite(lo[:, j]) & np.isfinite(hi[:, j]) & (lo[:, j] > 0)
        ax.vlines(n[ok] * jitter, lo[ok, j], hi[ok, j], color=color, lw=1.6, alpha=0.8)
        # A bracket of rtol = 1 % is thinner than a line: mark its centre so it stays visible.
        centre = np.sqrt(lo[ok, j] * hi[ok, j])
        ax.plot(n[ok] * jitter, centre, "_", color=color, ms=6, alpha=0.9)


def figure_threshold_rate(
    ds: xr.Dataset,
    *,
    n_range: tuple[int | None, int | None] | None = None,
    level: float = 0.95,
    status: Completeness | None = None,
) -> Figure:
    """ε*(n) on log–log axes: every bracket, the fitted rate with its band, the reference slope.

    One panel per tensor order p; one colour per (family, method, ...) series. Each replicate's
    first-crossing bracket is a vertical bar; the fitted line ``C (n − 1)^k`` is solid with its
    ``level`` interval on k drawn as a band pivoted at the fitted data's centre; the dashed grey
    line has Theorem 3.1's slope ``−1/(p−1)`` and the dotted one the power method's ``−1``.
    A dotted vertical line marks the onset n (where ε* leaves its small-n plateau by more than
    its bracket), where one was found.
    """
    status = completeness(ds) if status is None else status
    fits = rate_fits(ds, n_range=n_range, level=level)
    panels = _panels(ds)
    series = combinations(ds, _series_dims(ds))
    fig = Figure(figsize=(6.2 * len(panels), 5.4 + 0.25 * len(series)), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, panel in zip(axes, panels, strict=True):
        p = _order(ds, panel)
        ns = ds["n"].values.astype(float)
        grid = np.geomspace(ns.min(), ns.max(), 60)
        ys: list[float] = []
        ends: list[float] = []
        for k, ser in enumerate(series):
            color = f"C{k % 10}"
            sel = {**panel, **ser}
            _, lo, hi = _series(ds, sel)
            shift = 0.03 * (k - (len(series) - 1) / 2)
            _brackets(ax, ns, lo, hi, color, shift)
            ys.extend(v for v in hi.ravel() if np.isfinite(v) and v > 0)
            closed = np.isfinite(lo) & np.isfinite(hi) & (lo > 0)
            ends.extend([*lo[closed], *hi[closed]])
            fit = fits[tuple(sorted(sel.items()))]
            name = group_label(ser) or "threshold"
            if isinstance(fit, str):
                ax.plot([], [], color=color, label=_no_fit(name, fit))
                continue
            a, b = fit.n_range
            line = (grid >= a) & (grid <= b)
            g = grid[line]
            ax.plot(
                g,
                fit.prefactor * (g - 1) ** fit.exponent,
                color=color,
                label=(
                    f"{name}: k = {fit.exponent:.3f} [{fit.exponent_lo:.3f}, {fit.exponent_hi:.3f}]"
                ),
            )
            centre = np.sqrt((a - 1) * (b - 1))
            y_c = fit.prefactor * centre**fit.exponent
            lo_line = y_c * ((g - 1) / centre) ** fit.exponent_lo
            hi_line = y_c * ((g - 1) / centre) ** fit.exponent_hi
            ax.fill_between(
                g,
                np.minimum(lo_line, hi_line),
                np.maximum(lo_line, hi_line),
                color=color,
                alpha=0.15,
                lw=0,
            )
            if np.isfinite(fit.onset_n):
                ax.axvline(fit.onset_n, color=color, ls=":", lw=1)
        if ys:
            y0 = float(np.exp(np.mean(np.log(ys))))
            n0 = float(np.exp(np.mean(np.log(ns - 1))))
            for slope, style, label in (
                (
                    -1 / (p - 1),
                    "--",
                    f"reference slope −1/(p−1) = {-1 / (p - 1):.3g} (Theorem 3.1)",
                ),
                (-1.0, ":", "reference slope −1 (power method's analysis)"),
            ):
                ax.plot(grid, y0 * ((grid - 1) / n0) ** slope, style, color="grey", label=label)
            ax.set_yscale("log")
            _fit_y_to(ax, ends)
        ax.set_xscale("log")
        ax.set_xlim(ns.min() / 1.08, ns.max() * 1.08)  # room for the jittered bars at the ends
        ax.set_xticks(ns, [f"{v:g}" for v in ns])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("n  (tensor dimension)")
        ax.set_ylabel("first-crossing bracket of ε* = ‖E‖")
        crit = _criterion_text(ds)
        head = f"p = {p}: ε*(n), bars = brackets, band = {level:.0%} interval of k"
        if crit:
            head += f"; criterion {crit}"
        ax.set_title("\n".join(textwrap.wrap(head, _TITLE_WIDTH)), fontsize="medium")
        _legend_below(ax)
    plain_log_labels(fig)
    status_title(fig, status)
    return fig


def figure_rate_normalised(
    ds: xr.Dataset, *, level: float = 0.95, status: Completeness | None = None
) -> Figure:
    """``(n − 1)^{1/(p−1)} ε*`` against n: flat where Theorem 3.1's rate is attained.

    Per series, the median over replicates of the normalised bracket centre, with bars from the
    normalised brackets' medians; a falling curve means ε* shrinks faster than n^{−1/(p−1)}, a
    rising one slower (a plateau before the onset rises like (n − 1)^{1/(p−1)}).
    """
    status = completeness(ds) if status is None else status
    fits = rate_fits(ds, level=level)
    panels = _panels(ds)
    series = combinations(ds, _series_dims(ds))
    fig = Figure(figsize=(6.2 * len(panels), 5.0 + 0.25 * len(series)), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, panel in zip(axes, panels, strict=True):
        p = _order(ds, panel)
        for k, ser in enumerate(series):
            sel = {**panel, **ser}
            fit = fits[tuple(sorted(sel.items()))]
            name = group_label(ser) or "threshold"
            # The medians need no fit: they are shown for any number of sizes.
            n, lo, hi = _series(ds, sel)
            med = size_medians(n.ravel(), lo.ravel(), hi.ravel(), p=p)
            shown = np.isfinite(med.normalised) & (med.normalised > 0)
            x = med.sizes[shown] * (1 + 0.02 * (k - (len(series) - 1) / 2))
            y = med.normalised[shown]
            span = np.stack([med.normalised_lo[shown], med.normalised_hi[shown]])
            ax.errorbar(
                x,
                y,
                yerr=np.nan_to_num(np.abs(span - y), posinf=0.0),
                fmt="-o",
                ms=4,
                capsize=3,
                color=f"C{k % 10}",
                label=_no_fit(name, fit) if isinstance(fit, str) else name,
            )
        ax.set_xscale("log")
        ns = ds["n"].values.astype(float)
        ax.set_xlim(ns.min() / 1.08, ns.max() * 1.08)
        ax.set_xticks(ns, [f"{v:g}" for v in ns])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("n  (tensor dimension)")
        ax.set_ylabel(f"(n − 1)^(1/{p - 1}) · ε*")
        head = (
            f"p = {p}: rate-normalised threshold, median over replicates (flat = Theorem "
            "3.1's rate)"
        )
        ax.set_title("\n".join(textwrap.wrap(head, _TITLE_WIDTH)), fontsize="medium")
        _legend_below(ax)
    status_title(fig, status)
    return fig


def threshold_summary(ds: xr.Dataset, *, level: float = 0.95) -> list[dict[str, object]]:
    """One row per series: exponent with interval, onset n, fitted range, censored count."""
    rows = []
    for key, fit in rate_fits(ds, level=level).items():
        row: dict[str, object] = dict(key)
        if isinstance(fit, str):
            row["note"] = fit
        else:
            row.update(
                exponent=fit.exponent,
                interval=(fit.exponent_lo, fit.exponent_hi),
                reference=fit.reference,
                onset_n=fit.onset_n,
                n_range=fit.n_range,
                censored=fit.n_censored,
            )
        rows.append(row)
    return rows


__all__ = [
    "THRESHOLD_ANALYSIS",
    "THRESHOLD_VARS",
    "figure_rate_normalised",
    "figure_threshold_rate",
    "rate_fits",
    "report_section",
    "threshold_summary",
    "threshold_table",
]


#: What the threshold table of a report states about its numbers.
THRESHOLD_TABLE_NOTE = (
    "Each instance's first-crossing bracket (lo, hi] of ε = ‖E‖; the rate ε* ≈ C (n − 1)^k is "
    "fitted with intervals that carry the replicate spread and every bracket's width "
    "(sroa_dist.analysis.fit_rate); open brackets (not reached in eps_range) are censored."
)


def threshold_table(ds: xr.Dataset, *, level: float = 0.95) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the report's rate table (one row per series of the cube)."""
    header = [
        "series",
        f"k [{level:.0%} interval]",
        "−1/(p−1)",
        "onset n",
        "n fitted",
        "censored",
        "note",
    ]
    rows = []
    for row in threshold_summary(ds, level=level):
        series = ", ".join(f"{k} = {v}" for k, v in row.items() if k in ds.dims)
        if "note" in row:
            rows.append([series, "no fit", "–", "–", "–", "–", str(row["note"])])
            continue
        lo, hi = row["interval"]  # type: ignore[misc]
        n_lo, n_hi = row["n_range"]  # type: ignore[misc]
        onset = float(row["onset_n"])  # type: ignore[arg-type]
        rows.append(
            [
                series,
                f"{row['exponent']:.3f} [{lo:.3f}, {hi:.3f}]",
                f"{row['reference']:.3f}",
                "none" if not np.isfinite(onset) else f"{onset:g}",
                f"{n_lo}–{n_hi}",
                str(row["censored"]),
                "",
            ]
        )
    return header, rows


def report_section(
    doc: object, ds: xr.Dataset, fig_dir: Path, *, n_boot: int = 200, rng: int = 0
) -> list[Path]:
    """A threshold cube's answer in :func:`~sroa_dist.analysis.write_report`: per series, the
    fitted rate of ε* in n with its interval (no figures beyond :func:`_figures`)."""
    doc.heading("Thresholds: rate of ε* in n")  # type: ignore[attr-defined]
    doc.para(THRESHOLD_TABLE_NOTE)  # type: ignore[attr-defined]
    doc.table(*threshold_table(ds))  # type: ignore[attr-defined]
    return []


def _figures(ds: xr.Dataset) -> list[str]:
    """First-crossing brackets, no per-step errors: the rate and the rate-normalised ε*."""
    return ["threshold_rate", "rate_normalised"]


#: The ``threshold`` kind's analysis (its ``analysis`` member names it by import path).
THRESHOLD_ANALYSIS = KindAnalysis(instances=False, report_section=report_section, figures=_figures)
