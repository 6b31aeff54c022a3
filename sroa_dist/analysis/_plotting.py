"""Plot helpers shared by the figure modules: axis scaling, titles, completeness banners."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.ticker import (
    FuncFormatter,
    LogFormatter,
    MaxNLocator,
    NullFormatter,
    NullLocator,
)

from ._completeness import Completeness
from ._cube import combinations, sweep_axes


def set_scale(ax, axis: str, values: np.ndarray) -> None:
    """Log scale when the positive values span a decade or more (readable at a glance)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size and v.max() / v.min() >= 10:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")


#: Mantissas labelled on a short log axis, tried in turn until at least three ticks show.
_MANTISSA_SETS = ((1, 2, 5), (1, 2, 3, 5), (1, 2, 3, 4, 5, 6, 8), tuple(range(1, 10)))
#: Labelled ticks a log axis should show (one or two give no sense of the scale).
_MIN_LABELS = 3
#: A log axis spanning less than this factor gets evenly spaced ticks: its mantissa ticks
#: bunch up (0.08, 0.09, 0.1 labelled at the foot of an axis up to 0.19, its top bare).
_SHORT = 3.0


def _ticks_in(lo: float, hi: float, mantissas: Sequence[int]) -> int:
    count = 0
    for e in range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1):
        count += sum(lo <= m * 10.0**e <= hi for m in mantissas)
    return count


def plain_log_labels(fig: Figure) -> None:
    """Label the ticks of every log axis as plain numbers: 0.05, 0.1, 0.2 … and 10, 100, 1000
    instead of 5×10⁻², 2×10¹ and 10³. Call it once the axes' limits are final.

    On an axis spanning under two decades Matplotlib labels minor ticks in scientific
    notation, which overlap; plain numbers at the 1-2-5 ticks stay readable, and at least three
    are labelled: a shorter axis labels more mantissas (1-2-3-5, then more), and one spanning
    less than a factor of 3 gets evenly spaced plain ticks. A longer axis labels its decades
    only.
    Axes given their own tick labels are left alone.
    """

    def plain(v: float, _pos: int | None = None) -> str:
        return f"{v:g}"

    for ax in fig.axes:
        for axis, lim in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            if axis.get_scale() != "log" or not isinstance(
                axis.get_major_formatter(), LogFormatter
            ):
                continue
            lo, hi = sorted(lim)
            if not lo > 0:
                continue
            axis.set_major_formatter(FuncFormatter(plain))
            if np.log10(hi / lo) >= 2:
                axis.set_minor_formatter(NullFormatter())
                continue
            chosen = next((m for m in _MANTISSA_SETS if _ticks_in(lo, hi, m) >= _MIN_LABELS), None)
            if chosen is None or hi / lo < _SHORT:  # nearly linear: plain, evenly spaced ticks
                axis.set_major_locator(MaxNLocator(nbins=4))
                axis.set_minor_locator(NullLocator())
                continue
            axis.set_minor_formatter(FuncFormatter(_mantissa_labels(chosen)))


def _mantissa_labels(mantissas: Sequence[int]):
    def label(v: float, _pos: int | None = None) -> str:
        mantissa = round(v / 10 ** np.floor(np.log10(v)), 6) if v > 0 else 0
        return f"{v:g}" if mantissa in mantissas and mantissa != 1 else ""

    return label


def no_data_reason(status: Completeness | None) -> str:
    """Why a part of a cube has no results, from its completeness: ``"2 damaged blocks
    masked, 1 failed"``; ``""`` when the counts say nothing (a cube without bookkeeping)."""
    if status is None:
        return ""
    counts = (
        (status.blocks_damaged, "damaged block{s} masked"),
        (status.blocks_failed, "block{s} failed"),
        (status.blocks_missing, "block{s} not run"),
    )
    return ", ".join(f"{k} " + what.format(s="" if k == 1 else "s") for k, what in counts if k)


def no_data(ax, status: Completeness | None) -> None:
    """Mark a panel without any result: "no data" and why (damaged blocks masked by
    ``open_results(damaged="mask")``, failed or not-run blocks) across it, no ticks and no
    legend; it showed bare axes from −0.04 to 0.04 that read like a plot of zeros."""
    reason = no_data_reason(status)
    ax.text(
        0.5,
        0.5,
        "no data" + (f"\n({reason})" if reason else ""),
        ha="center",
        va="center",
        transform=ax.transAxes,
        color="tab:red",
        fontsize="medium",
    )
    ax.set_xticks([])
    ax.set_yticks([])
    legend = ax.get_legend()
    if legend is not None:
        legend.remove()


def noise_rows(ds: xr.Dataset) -> list[dict[str, object]]:
    return combinations(ds, ["noise"]) if "noise" in sweep_axes(ds) else [{}]


def status_title(fig: Figure, status: Completeness | None) -> None:
    """State the cube's completeness above every figure (loud when incomplete)."""
    if status is None:
        return
    # Wrapped to the figure's width (about 11 characters an inch): at a fixed 120 a narrow
    # figure (threshold scaling, 6.4 in) cut the line off at both sides.
    width = max(40, min(120, int(11 * fig.get_figwidth())))
    text = "\n".join(textwrap.wrap(status.describe(), width))
    if status.complete:
        fig.suptitle(text, fontsize="small", color="dimgray")
    else:
        fig.suptitle(text.upper()[:1] + text[1:], fontsize="medium", color="tab:red")


def present_text(has: xr.DataArray, dims: Sequence[str]) -> str:
    """``"sigma (7 of 10 values have results)"`` for each pooled dim, from the data."""
    parts = []
    for d in dims:
        others = [o for o in has.dims if o != d]
        n_with = int(has.any(others).sum()) if others else int(has.sum())
        total = has.sizes[d]
        parts.append(d if n_with == total else f"{d} ({n_with} of {total} values have results)")
    return ", ".join(parts)
