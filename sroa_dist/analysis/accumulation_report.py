"""The report section and figure of an accumulation cube (``[accumulation]`` sweeps): the
coherent tilt's accumulation coefficient ``g_p(ε)`` against its closed form, per p and n.

An accumulation cube holds, per ``(family, n, p, method, ε, replicate)``, one global SROA
run's errors (:mod:`sroa_dist.sweep.kinds.accumulation`). :func:`accumulation_curves` reads one
``(p, n)`` of it back as the :class:`~sroa_dist.analysis.Accumulation` that
:func:`~sroa_dist.analysis.accumulation` measures in one process, so
:func:`~sroa_dist.analysis.predict_threshold` (``model=``) predicts thresholds from a cube
exactly as from its own curves.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ..errors import InputError
from ._cube import combinations
from ._plotting import plain_log_labels, status_title
from .accumulation import FAMILY, Accumulation, accumulation_limit, predict_threshold
from .kinds import KindAnalysis

__all__ = [
    "ACCUMULATION_ANALYSIS",
    "accumulation_curves",
    "accumulation_table",
    "figure_accumulation",
    "report_section",
]

#: The variables that make a cube an accumulation cube.
ACCUMULATION_VARS = ("g_p", "h_p", "value_other", "vector_other", "last", "global_gap")
#: The value criterion's level the report predicts thresholds for (the published study's).
REPORT_C = 0.5
#: Sizes the report predicts ε* at (those of the published n-scaling studies and beyond).
_PREDICT_SIZES = (16, 32, 64, 128, 256, 512, 1024)
_TITLE_WIDTH = 60


def _require(ds: xr.Dataset) -> None:
    missing = [v for v in ACCUMULATION_VARS if v not in ds.data_vars]
    if missing or "eps" not in ds.dims and "eps" not in ds.coords:
        raise InputError(
            f"an accumulation cube needs variables {list(ACCUMULATION_VARS)} and an `eps` "
            f"coordinate; the cube lacks {missing or ['eps']}",
            "use the cube of an [accumulation] sweep",
        )


def _scalar(ds: xr.Dataset, dim: str) -> Any:
    """A setting that is not swept: a size-1 coordinate, else the store's ``setting_*`` attr
    (``noise`` is recorded as ``setting_noise_model``)."""
    if dim in ds.coords:
        return np.asarray(ds[dim].values).ravel()[0]
    return ds.attrs.get(f"setting_{'noise_model' if dim == 'noise' else dim}")


def _series(ds: xr.Dataset) -> list[dict[str, object]]:
    """One entry per curve: every swept dim but ``eps`` and ``replicate``."""
    dims = [d for d in ("noise", "method", "p", "n") if d in ds.dims]
    return combinations(ds, dims)


def _select(ds: xr.Dataset, sel: dict[str, object]) -> xr.Dataset:
    """One curve, median over replicates (replicates differ only by SROA's starts)."""
    sub = ds[list(ACCUMULATION_VARS)].sel(sel).compute()
    if "replicate" in sub.dims:
        last = sub["last"].all("replicate")
        sub = sub.drop_vars("last").median("replicate")
        sub["last"] = last
    return sub


def _value(ds: xr.Dataset, sel: dict[str, object], dim: str) -> Any:
    return sel[dim] if dim in sel else _scalar(ds, dim)


def accumulation_curves(ds: xr.Dataset, **sel: Any) -> Accumulation:
    """The :class:`~sroa_dist.analysis.Accumulation` of one ``(p, n)`` of the cube (keywords
    select the swept dims, e.g. ``p=3, n=16``; the median over replicates)."""
    _require(ds)
    sub = _select(ds, {k: v for k, v in sel.items() if k in ds.dims})
    if set(sub.dims) - {"eps"}:
        raise InputError(
            f"accumulation_curves: expected one curve over eps; the selection {sel} leaves "
            f"dims {sorted(set(sub.dims) - {'eps'})}",
            "select every swept dim but eps, e.g. accumulation_curves(ds, p=3, n=16)",
        )
    p = int(_value(ds, sel, "p"))
    return Accumulation(
        p=p,
        n=int(_value(ds, sel, "n")),
        eps=np.asarray(sub["eps"].values, float),
        g=np.asarray(sub["g_p"].values, float),
        h=np.asarray(sub["h_p"].values, float),
        value_other=np.asarray(sub["value_other"].values, float),
        vector_other=np.asarray(sub["vector_other"].values, float),
        last=np.asarray(sub["last"].values, bool),
        global_gap=np.asarray(sub["global_gap"].values, float),
        g0=accumulation_limit(p),
    )


def _is_tilt(ds: xr.Dataset, sel: dict[str, object]) -> bool:
    return str(_value(ds, sel, "noise")) == FAMILY


def accumulation_table(ds: xr.Dataset) -> tuple[list[str], list[list[object]]]:
    """Header and rows of the report's table: one row per curve, its g_p at the smallest and
    largest ε, against the closed form ``g_p(0)`` for the coherent tilt."""
    _require(ds)
    header = [
        "curve",
        "g_p(0) = (p c_p)^-p",
        "ε min",
        "g_p(ε min)",
        "g_p(ε min)/g_p(0) − 1",
        "ε max",
        "g_p(ε max)/g_p(0)",
        "target last",
        "largest global gap",
    ]
    rows: list[list[object]] = []
    for sel in _series(ds):
        sub = _select(ds, sel)
        g = np.asarray(sub["g_p"].values, float)
        ok = np.isfinite(g)
        if not ok.any():
            continue
        eps = np.asarray(sub["eps"].values, float)[ok]
        g = g[ok]
        p = int(_value(ds, sel, "p"))
        tilt = _is_tilt(ds, sel)
        g0 = accumulation_limit(p) if tilt else math.nan
        label = ", ".join(f"{k} = {v}" for k, v in sel.items()) or "all"
        rows.append(
            [
                label,
                f"{g0:.4f}" if tilt else "–",
                f"{eps[0]:.4g}",
                f"{g[0]:.4f}",
                f"{100 * (g[0] / g0 - 1):+.1f} %" if tilt else "–",
                f"{eps[-1]:.4g}",
                f"{g[-1] / g0:.3f}" if tilt else "–",
                f"{int(np.asarray(sub['last'].values)[ok].sum())}/{ok.sum()}",
                f"{float(np.nanmax(sub['global_gap'].values)):.2g}"
                if np.isfinite(sub["global_gap"].values).any()
                else "–",
            ]
        )
    return header, rows


def prediction_rows(ds: xr.Dataset, c: float = REPORT_C) -> list[list[object]]:
    """The coherent tilt's value-criterion thresholds predicted from each curve at the
    cube's largest n (:func:`~sroa_dist.analysis.predict_threshold` with ``model=``): the
    plateau, the onset n and ε* at a few sizes. Only curves whose ε range brackets the
    plateau (the prediction needs the crossing inside the measured range)."""
    rows: list[list[object]] = []
    n_model = int(np.max(ds["n"].values)) if "n" in ds.coords else int(_scalar(ds, "n"))
    for sel in _series(ds):
        if sel.get("n", n_model) != n_model or not _is_tilt(ds, sel):
            continue
        model = accumulation_curves(ds, **sel)
        if not (np.isfinite(model.g).all() and model.eps.size >= 4):
            continue
        pr = predict_threshold(model.p, list(_PREDICT_SIZES), c=c, model=model)
        if not math.isfinite(pr.plateau):
            continue
        label = ", ".join(f"{k} = {v}" for k, v in sel.items() if k != "n")
        rows.append(
            [
                label or "all",
                f"{pr.plateau:.4f}",
                str(pr.onset_n),
                *(f"{e:.4f}" if math.isfinite(e) else "–" for e in pr.eps_star),
            ]
        )
    return rows


def figure_accumulation(ds: xr.Dataset, *, status: Any = None) -> Figure:
    """``g_p(ε)/g_p(0)`` against ε (the coherent tilt; ``g_p`` itself for another family),
    one colour per p and one marker per n, a panel per (family, method)."""
    _require(ds)
    panels = combinations(ds, [d for d in ("noise", "method") if d in ds.dims])
    fig = Figure(figsize=(7.5 * len(panels), 5.6), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    ps = [int(v) for v in np.atleast_1d(ds["p"].values)] if "p" in ds.coords else []
    ns = [int(v) for v in np.atleast_1d(ds["n"].values)] if "n" in ds.coords else []
    ps, ns = ps or [int(_scalar(ds, "p"))], ns or [int(_scalar(ds, "n"))]
    markers = "osD^v<>"
    for ax, panel in zip(axes, panels, strict=True):
        tilt = _is_tilt(ds, panel)
        if tilt:
            ax.axhspan(0.97, 1.03, color="0.9", label="±3 % of g_p(0)")
            ax.axhline(1.0, color="k", lw=0.8)
        for sel in _series(ds):
            if any(sel.get(k) != v for k, v in panel.items()):
                continue
            sub = _select(ds, sel)
            p, n = int(_value(ds, sel, "p")), int(_value(ds, sel, "n"))
            g0 = accumulation_limit(p)
            y = np.asarray(sub["g_p"].values, float) / (g0 if tilt else 1.0)
            colour = f"C{ps.index(p) % 10}" if p in ps else "C0"
            k = ns.index(n) if n in ns else 0
            filled = k == len(ns) - 1
            ax.plot(
                sub["eps"].values,
                y,
                f"{markers[k % len(markers)]}{'-' if filled else '--'}",
                color=colour,
                mfc=colour if filled else "none",
                ms=4,
                label=f"p = {p}, n = {n}" + (f" (g_p(0) = {g0:.4f})" if tilt else ""),
            )
        ax.set_xscale("log")
        ax.set_xlabel("ε = ‖E‖")
        ax.set_ylabel("g_p(ε) / g_p(0)" if tilt else "g_p(ε) = value error / ((n − 1) ε^p)")
        name = ", ".join(f"{k} = {v}" for k, v in panel.items()) or str(_scalar(ds, "noise"))
        head = (
            f"{name}: accumulation coefficient"
            + (" over its closed-form limit (p c_p)^-p" if tilt else "")
            + "; filled: largest n"
        )
        ax.set_title("\n".join(textwrap.wrap(head, _TITLE_WIDTH)), fontsize="medium")
        ax.legend(fontsize="x-small", ncol=2)
    plain_log_labels(fig)
    if status is not None:
        status_title(fig, status)
    return fig


#: What the report's table states about its numbers.
TABLE_NOTE = (
    "One global SROA run per (family, p, n, ε) (every step checked and redone on the global "
    "branch); g_p = the target component's value error / ((n − 1) ε^p), the median over "
    "replicates. For the coherent tilt g_p tends to (p c_p)^-p as ε → 0 and does not depend "
    "on n (sroa_dist.analysis.accumulation)."
)


def report_section(
    doc: Any, ds: xr.Dataset, fig_dir: Path, *, n_boot: int = 200, rng: int = 0
) -> list[Path]:
    """An accumulation cube's answer in :func:`~sroa_dist.analysis.write_report`: the table
    of g_p against the closed form, the thresholds its largest n predicts, and the figure."""
    doc.heading("Accumulation: g_p(ε) against the closed form")
    doc.para(TABLE_NOTE)
    doc.table(*accumulation_table(ds))
    rows = prediction_rows(ds)
    if rows:
        doc.para(
            f"Value criterion |λ̂ − λ| ≤ {REPORT_C:g}·ε: the first crossing ε*(n) predicted from "
            "the curves at the cube's largest n (sroa_dist.analysis.predict_threshold), its "
            "small-n plateau and the size at which it leaves it (onset)."
        )
        doc.table(["curve", "plateau", "onset n", *(f"ε*(n = {n})" for n in _PREDICT_SIZES)], rows)
    fig_dir.mkdir(parents=True, exist_ok=True)
    path = fig_dir / "accumulation.png"
    fig = figure_accumulation(ds)
    fig.savefig(path, dpi=110)
    return [path]


def _figures(ds: xr.Dataset) -> list[str]:
    """None of :data:`~sroa_dist.analysis.FIGURES` (per-step SROA figures): the report draws
    its own."""
    return []


#: The ``accumulation`` kind's analysis (its ``analysis`` member names it by import path).
ACCUMULATION_ANALYSIS = KindAnalysis(
    instances=False, report_section=report_section, figures=_figures
)
