"""Analysis of an escape cube (``[escape]`` sweeps): per-start escape ``q`` against whole SROAs.

Per grid point (family, n, p, solver label, ε) the cube holds, over its replicates, single
starts and their hits per stage (``escape_hits`` over the ``step`` dim) and whole-SROA outcomes
(``step_found``, ``sroa_success``). :func:`escape_rows` pools them: ``q_r`` = hits / starts at
each measured stage with its Wilson interval, the predicted first-step success
``1 − (1 − q_n)^L`` and whole-run bound ``Π_r (1 − (1 − q_r)^L)`` (an upper bound when steps
are independent: unmeasured stages' factors are at most 1), and the measured fractions with
their intervals. The report section tabulates them, draws q against ε per n and stage
(:func:`figure_escape_q`) and, where the cube has whole SROAs, measured failure against the
predicted one per n (:func:`figure_escape`).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ..studies import step_success, wilson_interval
from .kinds import KindAnalysis

__all__ = ["ESCAPE_ANALYSIS", "escape_rows", "figure_escape", "figure_escape_q", "report_section"]

#: The grid dims of an escape cube (each swept or a root attr ``setting_<dim>``).
_AXES = ("noise", "n", "p", "method", "eps")
_ATTR = {"noise": "setting_noise_model"}
#: A lost step counts as captured by the attractor when its vector's overlap with ±u is at
#: least this (``|x·u| >= 0.9``).
CAPTURE_OVERLAP = 0.9
_FIGURE = "escape_whole_vs_predicted"
_FIGURE_Q = "escape_q"
_CAPTION_Q = (
    "Per-start escape probability q against ε, per n and stage r (r = n: SROA's first step), "
    "for each solver label's iterations N; bands: 95 % Wilson intervals of the pooled starts"
)
_CAPTION = (
    "Measured failure of whole SROAs against the failure predicted from the single starts' q, "
    "per n: the first step against (1 − q)^L (filled), the whole SROA against 1 − Π over the "
    "measured stages (hollow); 95 % intervals (x: q's, y: the runs' Wilson)"
)


def _values(ds: xr.Dataset, dim: str) -> list[Any]:
    if dim in ds.dims:
        return list(ds[dim].values)
    key = _ATTR.get(dim, f"setting_{dim}")
    return [ds.attrs[key]] if key in ds.attrs else [None]


def _fraction(values: np.ndarray) -> tuple[int, int]:
    v = values[np.isfinite(values)]
    return int(np.sum(v > 0.5)), int(v.size)


def escape_rows(ds: xr.Dataset) -> list[dict[str, Any]]:
    """One row per grid point with data: its coordinates, the pooled ``q`` per measured
    stage, the budget, the predictions and the measured whole-SROA fractions."""
    ds = ds.load() if hasattr(ds, "load") else ds
    swept = [d for d in _AXES if d in ds.dims]
    rows = []
    for point in itertools.product(*(_values(ds, d) for d in _AXES)):
        coords = dict(zip(_AXES, point, strict=True))
        sel = ds.sel({d: coords[d] for d in swept}) if swept else ds
        n = int(coords["n"])
        row: dict[str, Any] = {
            k: (v.item() if hasattr(v, "item") else v) for k, v in coords.items()
        }
        starts = np.nansum(sel["escape_starts"].values)
        hits = np.nansum(sel["escape_hits"].values, axis=0)  # per step
        measured = np.any(np.isfinite(sel["escape_hits"].values), axis=0)
        stages = []
        for j in np.flatnonzero(measured):
            k = int(hits[j])
            stages.append(
                {
                    "r": n - int(j),
                    "hits": k,
                    "starts": int(starts),
                    "q": k / starts,
                    "interval": wilson_interval(k, int(starts)),
                }
            )
        L = sel["budget_starts"].values
        L = L[np.isfinite(L)]
        row["L"] = int(L[0]) if L.size else None
        N = sel["budget_iter"].values
        N = N[np.isfinite(N)]
        row["N"] = int(N[0]) if N.size else None
        row["stages"] = stages
        if stages and row["L"]:
            row["predicted_first"] = float(step_success(stages[0]["q"], row["L"]))
            row["predicted_whole"] = float(
                np.prod([step_success(s["q"], row["L"]) for s in stages])
            )
        first = sel["step_found"].values[..., 0]
        row["first_found"] = _fraction(first)
        row["whole_found"] = _fraction(sel["sroa_success"].values)
        lost = sel["first_lost"].values
        lost = lost[np.isfinite(lost) & (lost > 0)]
        overlap = sel["lost_u_overlap"].values
        overlap = overlap[np.isfinite(overlap)]
        # capture: the lost step's vector within angle arccos(0.9) of ±u
        row["lost"] = {
            "runs": int(lost.size),
            "median_step": float(np.median(lost)) if lost.size else None,
            "captured": int(np.sum(np.abs(overlap) >= CAPTURE_OVERLAP)),
        }
        if not stages and row["whole_found"][1] == 0:
            continue
        rows.append(row)
    return rows


def _fmt_frac(k: int, m: int) -> str:
    if m == 0:
        return "—"
    lo, hi = wilson_interval(k, m)
    return f"{k}/{m} = {k / m:.3f} [{lo:.3f}, {hi:.3f}]"


def _fmt_lost(lost: dict[str, Any]) -> str:
    if not lost["runs"]:
        return "—"
    return f"{lost['runs']}, step {lost['median_step']:g}, {lost['captured']} captured"


def escape_table(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the report's table."""
    header = [
        "n",
        "ε",
        "solver",
        "L, N",
        "q of the first step [95 %]",
        "1 − (1 − q)^L",
        "first step found (runs)",
        "Π over stages",
        "whole SROA found all (runs)",
        "lost: runs, median first lost step, captured by u",
    ]
    out = []
    for r in rows:
        first = r["stages"][0] if r["stages"] else None
        q = (
            f"{first['hits']}/{first['starts']} = {first['q']:.3f} "
            f"[{first['interval'][0]:.3f}, {first['interval'][1]:.3f}]"
            if first
            else "—"
        )
        out.append(
            [
                str(r["n"]),
                f"{r['eps']:.4g}",
                str(r["method"]),
                f"{r['L']}, {r['N']}" if r["L"] else "—",
                q,
                f"{r['predicted_first']:.3f}" if "predicted_first" in r else "—",
                _fmt_frac(*r["first_found"]),
                f"{r['predicted_whole']:.3f}" if "predicted_whole" in r else "—",
                _fmt_frac(*r["whole_found"]),
                _fmt_lost(r["lost"]),
            ]
        )
    return header, out


def _failure(k: int, m: int) -> tuple[float, float, float]:
    """Measured failure ``1 − k/m`` and the distances to its Wilson interval's ends."""
    lo, hi = wilson_interval(k, m)
    fail = 1 - k / m
    return fail, max(0.0, fail - (1 - hi)), max(0.0, (1 - lo) - fail)  # rounding: never < 0


def figure_escape(rows: list[dict[str, Any]]) -> Figure:
    """Measured failure against predicted failure, one panel per n: the first step (filled
    circles; predicted ``(1 − q_n)^L``) and the whole SROA (hollow squares; predicted
    ``1 − Π_r (1 − (1 − q_r)^L)`` over the measured stages, a lower bound on failure), one
    colour per power budget, x error bars from q's interval and y error bars Wilson intervals
    of the runs. Solvers without a start budget (global steps) have no prediction: their
    measured whole-SROA failure is a dotted horizontal line."""
    sizes = sorted({r["n"] for r in rows})
    cols = min(3, len(sizes))
    nrows = math.ceil(len(sizes) / cols)
    fig = Figure(figsize=(max(3.9 * cols, 7.0), 3.7 * nrows + 1.3), layout="constrained")
    axes = fig.subplots(nrows, cols, squeeze=False).ravel()
    labels = sorted({str(r["method"]) for r in rows})
    colours = {m: f"C{i}" for i, m in enumerate(labels)}
    for ax, n in zip(axes, sizes, strict=False):
        ax.plot([0, 1], [0, 1], color="0.6", lw=0.8, zorder=0, label="measured = predicted")
        for r in (r for r in rows if r["n"] == n):
            m, c = str(r["method"]), colours[str(r["method"])]
            if "predicted_first" not in r:
                if r["whole_found"][1]:
                    fail = 1 - r["whole_found"][0] / r["whole_found"][1]
                    ax.axhline(fail, color=c, ls=":", lw=1.2, label=f"{m}: whole SROA failed")
                continue
            q_lo, q_hi = r["stages"][0]["interval"]
            L = r["L"]
            for key, marker, fill, what, pred, lo_hi in (
                (
                    "first_found",
                    "o",
                    c,
                    "first step",
                    1 - r["predicted_first"],
                    ((1 - q_hi) ** L, (1 - q_lo) ** L),
                ),
                ("whole_found", "s", "none", "whole SROA", 1 - r["predicted_whole"], None),
            ):
                k, runs = r[key]
                if not runs:
                    continue
                fail, e_lo, e_hi = _failure(k, runs)
                xerr = (
                    None
                    if lo_hi is None
                    else [[max(0.0, pred - lo_hi[0])], [max(0.0, lo_hi[1] - pred)]]
                )
                ax.errorbar(
                    [pred],
                    [fail],
                    xerr=xerr,
                    yerr=[[e_lo], [e_hi]],
                    fmt=marker,
                    mfc=fill,
                    mec=c,
                    ecolor=c,
                    ms=6,
                    capsize=2,
                    lw=0.8,
                    label=f"{m}: {what}",
                )
        ax.set_xlim(-0.03, 1.03)
        ax.set_ylim(-0.03, 1.03)
        ax.set_aspect("equal")
        ax.set_title(f"n = {n}")
        ax.set_xlabel("predicted failure from q")
        ax.set_ylabel("measured failure (whole SROAs)")
        ax.grid(alpha=0.3)
    for ax in axes[len(sizes) :]:
        ax.set_visible(False)
    seen: dict[str, Any] = {}
    for ax in axes[: len(sizes)]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncols=2, fontsize=7)
    fig.suptitle(
        "Start escape: measured failure against (1 − q)^L (first step) and 1 − Π (whole SROA)",
        fontsize=9,
    )
    return fig


def figure_escape_q(rows: list[dict[str, Any]]) -> Figure:
    """Per-start escape probability ``q`` against ε, one panel per n: a line per stage ``r``
    (colour; the first step ``r = n`` darkest) and solver label (line style: its ``N``), with
    the 95 % Wilson band of the pooled starts."""
    sizes = sorted({r["n"] for r in rows if r["stages"]})
    cols = min(3, len(sizes))
    nrows = math.ceil(len(sizes) / cols)
    fig = Figure(figsize=(max(3.9 * cols, 7.0), 3.3 * nrows + 1.1), layout="constrained")
    axes = fig.subplots(nrows, cols, squeeze=False).ravel()
    labels = sorted({str(r["method"]) for r in rows if r["stages"]})
    styles = dict(zip(labels, ("-", "--", ":", "-."), strict=False))
    for ax, n in zip(axes, sizes, strict=False):
        here = [r for r in rows if r["n"] == n and r["stages"]]
        stages = sorted({s["r"] for r in here for s in r["stages"]}, reverse=True)
        for i, stage in enumerate(stages):
            colour = f"C{i}"
            for m in labels:
                pts = sorted(
                    (
                        (r["eps"], s)
                        for r in here
                        if str(r["method"]) == m
                        for s in r["stages"]
                        if s["r"] == stage
                    ),
                    key=lambda t: t[0],
                )
                if not pts:
                    continue
                e = [t[0] for t in pts]
                ax.plot(
                    e,
                    [t[1]["q"] for t in pts],
                    color=colour,
                    ls=styles.get(m, "-"),
                    marker="." if len(pts) < 3 else None,
                    lw=1.2,
                    label=f"r = {'n' if stage == n else stage}, {m}",
                )
                lo = [t[1]["interval"][0] for t in pts]
                hi = [t[1]["interval"][1] for t in pts]
                ax.fill_between(e, lo, hi, color=colour, alpha=0.12, lw=0)
        ax.set_xscale("log")
        ax.set_ylim(-0.03, 1.03)
        ax.set_title(f"n = {n}")
        ax.set_xlabel("ε = ‖E‖")
        ax.set_ylabel("q (one start escapes)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="lower left")
    for ax in axes[len(sizes) :]:
        ax.set_visible(False)
    fig.suptitle("Per-start escape probability q of the power method, by stage r", fontsize=9)
    return fig


def report_section(
    doc: Any, ds: xr.Dataset, fig_dir: Path, *, n_boot: int = 200, rng: int = 0
) -> list[Path]:
    """An escape cube's answer in :func:`~sroa_dist.analysis.write_report`: the table of
    :func:`escape_rows` and the figure of :func:`figure_escape` (drawn into ``fig_dir``)."""
    rows = escape_rows(ds)
    doc.heading("Start escape: q against whole SROAs")
    doc.para(
        "q is the fraction of single power-method starts (pooled over replicates) that ended "
        "within the radius of a component still to be found, on the tensor of the stage's "
        "SROA step; a step with L independent starts succeeds with 1 − (1 − q)^L. The "
        "product over the measured stages bounds a whole SROA's success. Whole SROAs are "
        "the cube's runs (one per replicate); intervals are 95 % Wilson intervals."
    )
    doc.table(*escape_table(rows))
    drawn = []
    if any(r["stages"] for r in rows):
        drawn.append((_FIGURE_Q, figure_escape_q(rows), _CAPTION_Q))
    if any(r["whole_found"][1] for r in rows):
        drawn.append((_FIGURE, figure_escape(rows), _CAPTION))
    for name, fig, caption in drawn:
        fig_dir.mkdir(parents=True, exist_ok=True)
        path = fig_dir / f"{name}.png"
        fig.savefig(path, dpi=110)
        doc.image(path, f"{fig_dir.name}/{path.name}", caption)
    return []


def _figures(ds: xr.Dataset) -> list[str]:
    """No figure of :data:`~sroa_dist.analysis.FIGURES` (the section draws its own)."""
    return []


#: The ``escape`` kind's analysis (its ``analysis`` member names it by import path).
ESCAPE_ANALYSIS = KindAnalysis(instances=False, report_section=report_section, figures=_figures)
