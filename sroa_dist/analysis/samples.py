"""Analysis of a samples cube (``[samples]`` sweeps): the sample size N* at which each method
recovers the model with probability 1/2, against k, and ‖E‖ there against the two scales.

Per grid point (k, weights, method) the cube holds one or more searches (replicates) for N*: the
bracket ``(n_lo, n_hi]``, an interval ``[n_star_low, n_star_high]`` from every evaluated size
whose Wilson interval is resolved from 1/2, and ‖E‖ at ``n_hi`` beside ``λ_min·k^{−1/(p−1)}``
and ``λ_min/k``. :func:`samples_rows` pools replicates (median), :func:`exponent_rows` fits
``N* ∝ k^b`` per (weights, method) by least squares in log–log on ``n_hi`` (its range from
the same fit on the intervals' ends), and the report section tabulates both and draws
:func:`figure_samples`.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from .kinds import KindAnalysis

__all__ = ["SAMPLES_ANALYSIS", "exponent_rows", "figure_samples", "report_section", "samples_rows"]

_AXES = ("k", "weights", "method")
_FIGURE = "samples_n_star"
_CAPTION = (
    "Top: N*, the sample size at which recovery succeeds with probability 1/2, against k (bars: "
    "the evaluated sizes resolved below and above 1/2 by 95 % Wilson intervals). Bottom: ‖E‖ at "
    "N* against λ_min·k^(−1/(p−1)) (global steps) and λ_min/k (the power method's analysis)"
)


def _values(ds: xr.Dataset, dim: str) -> list[Any]:
    if dim in ds.dims:
        return list(ds[dim].values)
    return [ds.attrs.get(f"setting_{dim}")]


def _median(values: np.ndarray) -> float:
    v = np.asarray(values, dtype=float).ravel()
    v = v[~np.isnan(v)]
    return float(np.median(v)) if v.size else math.nan


def samples_rows(ds: xr.Dataset) -> list[dict[str, Any]]:
    """One row per searched grid point: its coordinates and the medians over replicates of
    the bracket, the interval, the fractions at the ends, ‖E‖ at N* and the two scales."""
    ds = ds.load() if hasattr(ds, "load") else ds
    swept = [d for d in _AXES if d in ds.dims]
    rows = []
    for point in itertools.product(*(_values(ds, d) for d in _AXES)):
        coords = dict(zip(_AXES, point, strict=True))
        sel = ds.sel({d: coords[d] for d in swept}) if swept else ds
        if not bool(np.any(sel["searched"].values)):
            continue
        row: dict[str, Any] = {
            k: (v.item() if hasattr(v, "item") else v) for k, v in coords.items()
        }
        for var in (
            "n_star",
            "n_lo",
            "n_hi",
            "n_star_low",
            "n_star_high",
            "frac_lo",
            "frac_hi",
            "eps_at_star",
            "lambda_min",
            "scale_global",
            "scale_power",
            "n_evals",
            "draws",
        ):
            row[var] = _median(sel[var].values)
        row["reached"] = bool(np.all(sel["reached"].values[sel["searched"].values]))
        row["non_monotone"] = bool(np.any(sel["non_monotone"].values))
        row["eps_certified"] = bool(np.all(sel["eps_certified"].values[sel["searched"].values]))
        rows.append(row)
    return rows


def _slope(k: np.ndarray, n: np.ndarray) -> float:
    ok = np.isfinite(n) & (n > 0)
    if ok.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(k[ok]), np.log(n[ok]), 1)[0])


def exponent_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (weights, method) with N* at two k or more: the least-squares exponent ``b`` of
    ``N* ∝ k^b`` on ``n_hi``, and the exponents of the same fit on the bracket's lower ends and
    on the intervals' ends (a range, not a confidence interval)."""
    out = []
    keys = sorted({(str(r["weights"]), str(r["method"])) for r in rows})
    for w, m in keys:
        here = sorted(
            (r for r in rows if str(r["weights"]) == w and str(r["method"]) == m and r["reached"]),
            key=lambda r: r["k"],
        )
        if len(here) < 2:
            continue
        k = np.array([r["k"] for r in here], dtype=float)
        fits = [
            _slope(k, np.array([r[v] for r in here], dtype=float))
            for v in ("n_hi", "n_lo", "n_star_low", "n_star_high")
        ]
        finite = [f for f in fits if math.isfinite(f)]
        out.append(
            {
                "weights": w,
                "method": m,
                "ks": [int(x) for x in k],
                "exponent": fits[0],
                "range": (min(finite), max(finite)) if finite else (math.nan, math.nan),
            }
        )
    return out


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "inf" if x == math.inf else "–"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def figure_samples(rows: list[dict[str, Any]]) -> Figure:
    """N* against k (top) and ‖E‖ at N* against the two scales (bottom), one column per
    weight shape, one line per method."""
    shapes = sorted({str(r["weights"]) for r in rows})
    fig = Figure(figsize=(max(4.2 * len(shapes), 6.0), 6.4), layout="constrained")
    axes = fig.subplots(2, len(shapes), squeeze=False)
    methods = sorted({str(r["method"]) for r in rows})
    for col, w in enumerate(shapes):
        top, bottom = axes[0, col], axes[1, col]
        for i, m in enumerate(methods):
            here = sorted(
                (r for r in rows if str(r["weights"]) == w and str(r["method"]) == m),
                key=lambda r: r["k"],
            )
            here = [r for r in here if math.isfinite(r["n_hi"])]
            if not here:
                continue
            k = np.array([r["k"] for r in here], dtype=float)
            n = np.array([r["n_hi"] for r in here])
            low = np.array([r["n_star_low"] if r["n_star_low"] > 0 else r["n_lo"] for r in here])
            high = np.array([min(r["n_star_high"], 4 * r["n_hi"]) for r in here])
            top.errorbar(
                k * (1 + 0.03 * i),
                n,
                yerr=[np.maximum(n - low, 0), np.maximum(high - n, 0)],
                marker="o",
                ms=3,
                capsize=2,
                lw=1.1,
                label=m,
                color=f"C{i}",
            )
            eps = np.array([r["eps_at_star"] for r in here])
            bottom.plot(k, eps, marker="o", ms=3, lw=1.1, color=f"C{i}", label=f"‖E‖ at N*, {m}")
        pts = sorted(
            {(r["k"], r["scale_global"], r["scale_power"]) for r in rows if str(r["weights"]) == w}
        )
        if pts:
            kk = [t[0] for t in pts]
            bottom.plot(kk, [t[1] for t in pts], "k--", lw=1, label="λ_min·k^(−1/(p−1))")
            bottom.plot(kk, [t[2] for t in pts], "k:", lw=1, label="λ_min/k")
        for ax in (top, bottom):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.grid(alpha=0.3)
            ax.set_xlabel("k")
        top.set_title(f"weights: {w}")
        top.set_ylabel("N* (success 1/2)")
        bottom.set_ylabel("‖E‖")
        top.legend(fontsize=7)
        bottom.legend(fontsize=6)
    return fig


def report_section(
    doc: Any, ds: xr.Dataset, fig_dir: Path, *, n_boot: int = 200, rng: int = 0
) -> list[Path]:
    """A samples cube's answer in :func:`~sroa_dist.analysis.write_report`: the N* table, the
    fitted exponents and :func:`figure_samples`."""
    rows = samples_rows(ds)
    doc.heading("Sample complexity: N* per method")
    doc.para(
        "N* is the first evaluated sample size whose success fraction reached 1/2 (the "
        "bracket's upper end); the crossing lies in (N_lo, N*]. The interval is the largest "
        "evaluated size below N* whose 95 % Wilson interval lies below 1/2 and the smallest "
        "above N_lo whose interval lies above it. ‖E‖ at N* uses the population whitening "
        "(certified where marked, else a multi-start estimate, a lower bound)."
    )
    header = [
        "k",
        "weights",
        "method",
        "N_lo",
        "N*",
        "interval",
        "frac at N*",
        "‖E‖ at N*",
        "λ_min·k^(−1/(p−1))",
        "λ_min/k",
    ]
    table = [
        [
            str(r["k"]),
            str(r["weights"]),
            str(r["method"]),
            _fmt(r["n_lo"]),
            _fmt(r["n_hi"]) if r["reached"] else f"> {_fmt(r['n_lo'])}",
            f"[{_fmt(r['n_star_low'])}, {_fmt(r['n_star_high'])}]",
            _fmt(r["frac_hi"]),
            _fmt(r["eps_at_star"]) + ("" if r["eps_certified"] else " (est.)"),
            _fmt(r["scale_global"]),
            _fmt(r["scale_power"]),
        ]
        for r in rows
    ]
    doc.table(header, table)
    fits = exponent_rows(rows)
    if fits:
        doc.para(
            "Fitted exponents b of N* ∝ k^b (least squares in log–log over the k listed; "
            "range: the same fit on the bracket's lower ends and the intervals' ends)."
        )
        doc.table(
            ["weights", "method", "k", "b", "range"],
            [
                [
                    f["weights"],
                    f["method"],
                    ", ".join(map(str, f["ks"])),
                    f"{f['exponent']:.2f}",
                    f"[{f['range'][0]:.2f}, {f['range'][1]:.2f}]",
                ]
                for f in fits
            ],
        )
    if not rows:
        return []
    fig_dir.mkdir(parents=True, exist_ok=True)
    path = fig_dir / f"{_FIGURE}.png"
    figure_samples(rows).savefig(path, dpi=110)
    doc.image(path, f"{fig_dir.name}/{path.name}", _CAPTION)
    return [path]


def _figures(ds: xr.Dataset) -> list[str]:
    """No figure of :data:`~sroa_dist.analysis.FIGURES` (the section draws its own)."""
    return []


#: The ``samples`` kind's analysis (its ``analysis`` member names it by import path).
SAMPLES_ANALYSIS = KindAnalysis(instances=False, report_section=report_section, figures=_figures)
