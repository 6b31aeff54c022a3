"""Analysis of a structure cube (``[structure]`` sweeps): is the sampling noise attractor-like?

Per grid point (k, weights, target) the cube holds, over its replicates, the measured sample
size, ``‖E‖`` against the two scales (``λ_min/k``, the power method's; ``λ_min·k^{−1/(p−1)}``,
global steps'), the overlaps of E's best rank-one direction with one component and with the
attractor's direction beside their isotropic values, and the escape hits of the power method's
starts on ``T + E``, on ``T`` and on the attractor family at the same norm.
:func:`structure_rows` gathers them per point (ranges over replicates, pooled escape fractions
with Wilson intervals); the report section tabulates them and draws :func:`figure_structure`,
which docs/results draws across the models' stores too.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ..studies import wilson_interval
from .kinds import KindAnalysis

__all__ = [
    "STRUCTURE_ANALYSIS",
    "figure_structure",
    "report_section",
    "span_text",
    "structure_rows",
    "structure_table",
]

#: The grid dims of a structure cube (each swept or a root attr ``setting_<dim>``).
_AXES = ("k", "weights", "target")
_FIGURE = "noise_structure"
_CAPTION = (
    "Left: E's best rank-one direction, its largest overlap with one component and its overlap "
    "with the attractor's direction, each over its value for a uniform random direction (1: "
    "isotropic). Right: per-start escape probability q of the power method on T + E and on the "
    "attractor family at the same norm, against ‖E‖ over the global scale"
)
#: Colour of each model in the figure.
MODEL_COLOURS = {"topics": "tab:blue", "gmm": "tab:orange", "ica": "tab:green"}
_ESCAPES = (("q", "q_hits"), ("q_clean", "q_clean_hits"), ("q_attractor", "q_attractor_hits"))


def _pooled(hits: np.ndarray, starts: np.ndarray) -> dict[str, Any] | None:
    ok = np.isfinite(hits) & np.isfinite(starts)
    if not ok.any():
        return None
    h, m = int(hits[ok].sum()), int(starts[ok].sum())
    return {
        "q": h / m,
        "interval": wilson_interval(h, m),
        "values": [float(x) for x in hits[ok] / starts[ok]],
    }


def structure_rows(ds: xr.Dataset) -> list[dict[str, Any]]:
    """One row per grid point with a measurement: its coordinates, the model, and per
    replicate the sample size, whether it was capped, ``‖E‖`` (and whether certified), the two
    norm ratios and the overlaps; the isotropic overlaps' mean; the escape fractions pooled over
    replicates (``q``, ``q_clean``, ``q_attractor``: fraction, Wilson interval, per-replicate
    values)."""
    ds = ds.compute()
    model = str(ds.attrs.get("setting_model", ""))
    order = int(ds.attrs.get("setting_order", 3))
    dims = [d for d in _AXES if d in ds.dims]
    rows = []
    for point in itertools.product(*(list(ds[d].values) for d in dims)):
        one = ds.sel(dict(zip(dims, point, strict=True)))
        n = np.asarray(one["n_samples"].values, float).ravel()
        done = np.isfinite(n)
        if not done.any():
            continue

        def per(var: str, one: xr.Dataset = one, done: np.ndarray = done) -> list[float]:
            return [float(x) for x in np.asarray(one[var].values, float).ravel()[done]]

        eps = np.array(per("eps"))
        row: dict[str, Any] = {
            "model": model,
            "p": order,
            **{d: ds.attrs.get(f"setting_{d}") for d in _AXES if d not in dims},
            **{
                d: (v.item() if hasattr(v, "item") else v) for d, v in zip(dims, point, strict=True)
            },
            "n_samples": [int(x) for x in per("n_samples")],
            "capped": bool(np.asarray(one["capped"].values).ravel()[done].any()),
            "eps": list(eps),
            "certified": bool(np.asarray(one["eps_certified"].values).ravel()[done].all()),
            "power_ratio": list(eps / np.array(per("scale_power"))),
            "global_ratio": list(eps / np.array(per("scale_global"))),
            "component_overlap": per("component_overlap"),
            "attractor_overlap": per("attractor_overlap"),
            "component_overlap_random": float(np.mean(per("component_overlap_random"))),
            "attractor_overlap_random": float(np.mean(per("attractor_overlap_random"))),
            "replicates": int(done.sum()),
            "seconds": per("solve_time"),
            "starts": int(np.nanmax(np.asarray(one["starts"].values, float))),
        }
        starts = np.asarray(one["starts"].values, float).ravel()[done]
        for name, var in _ESCAPES:
            row[name] = _pooled(np.asarray(one[var].values, float).ravel()[done], starts)
        rows.append(row)
    return rows


def span_text(vals: Sequence[float], fmt: str = ".2f") -> str:
    """``lo–hi`` of ``vals`` in ``fmt`` (one number where both ends print alike)."""
    lo, hi = min(vals), max(vals)
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}–{hi:{fmt}}"


def structure_table(rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the structure table: per point the sample sizes, the norm ratios
    (``≥``: a multi-start lower bound), the overlaps over their isotropic values and the three
    pooled escape probabilities with their 95 % Wilson intervals."""
    head = [
        "model",
        "k",
        "weights",
        "N for",
        "N",
        "‖E‖/(λ_min/k)",
        "‖E‖/(λ_min k^−1/(p−1))",
        "max_i |v_i·x_E| (random)",
        "attractor overlap (random)",
        "q on T+E",
        "q on T",
        "q, attractor",
    ]
    out = []
    for r in rows:
        ns = sorted(set(r["n_samples"]))
        mark = "" if r["certified"] else " ≥"

        def q(name: str, r: dict[str, Any] = r) -> str:
            e = r[name]
            if e is None:
                return "—"
            lo, hi = e["interval"]
            return f"{e['q']:.2f} [{lo:.2f}, {hi:.2f}]"

        out.append(
            [
                r["model"],
                str(r.get("k", "")),
                str(r.get("weights", "")),
                str(r.get("target", "")),
                ", ".join(f"{n:,}" for n in ns) + (" (capped)" if r["capped"] else ""),
                span_text(r["power_ratio"]) + mark,
                span_text(r["global_ratio"]) + mark,
                f"{span_text(r['component_overlap'])} ({r['component_overlap_random']:.2f})",
                f"{span_text(r['attractor_overlap'])} ({r['attractor_overlap_random']:.2f})",
                q("q"),
                q("q_clean"),
                q("q_attractor"),
            ]
        )
    return head, out


def figure_structure(rows: Sequence[dict[str, Any]]) -> Figure:
    """Left: the overlaps of E's best direction (with one component, with the attractor's
    direction) over their isotropic values, against k, per replicate. Right: q on ``T + E``
    and on the attractor family at the same norm against ``‖E‖/(λ_min k^{−1/(p−1)})``."""
    fig = Figure(figsize=(11, 4.2))
    ax1, ax2 = fig.subplots(1, 2)
    models = list(dict.fromkeys(r["model"] for r in rows))
    q_all: list[float] = []
    qa_all: list[float] = []
    for i, model in enumerate(models):
        mine = [r for r in rows if r["model"] == model]
        c = MODEL_COLOURS.get(model, f"C{i}")
        k, comp, att, g, q, qa_x, qa_y = [], [], [], [], [], [], []
        for r in mine:
            reps = len(r["eps"])
            k += [float(r["k"]) * (1 + 0.04 * (i - 1))] * reps
            comp += [x / r["component_overlap_random"] for x in r["component_overlap"]]
            att += [x / r["attractor_overlap_random"] for x in r["attractor_overlap"]]
            if r["q"] is not None and len(r["q"]["values"]) == reps:
                g += r["global_ratio"]
                q += r["q"]["values"]
            if r["q_attractor"] is not None and len(r["q_attractor"]["values"]) == reps:
                qa_x += r["global_ratio"]
                qa_y += r["q_attractor"]["values"]
        ax1.scatter(k, comp, color=c, marker="o", s=18, label=f"{model}: one component")
        ax1.scatter(k, att, color=c, marker="x", s=22, label=f"{model}: attractor")
        ax2.scatter(g, q, color=c, marker="o", s=18, label=f"{model}: T+E")
        q_all += q
        qa_all += qa_y
        if qa_x:
            ax2.scatter(qa_x, qa_y, color=c, marker="^", s=18, facecolors="none",
                        label=f"{model}: attractor, same ‖E‖")  # fmt: skip
    ks = sorted({float(r["k"]) for r in rows})
    ax1.axhline(1.0, color="grey", ls="--", lw=1)
    if ks:
        ax1.text(float(np.sqrt(ks[0] * ks[-1])), 1.04, "isotropic", color="grey", fontsize=8,
                 ha="center")  # fmt: skip
        ax1.set_xscale("log")
        ax1.set_xticks(ks)
        ax1.set_xticklabels([f"{x:g}" for x in ks])
        top = max(
            max(x / r["component_overlap_random"] for x in r["component_overlap"]) for r in rows
        )
        ax1.set_ylim(0, 1.5 * top)  # the legend sits above the data
    ax1.set_xlabel("k (whitened dimension)")
    ax1.set_ylabel("overlap / its value for a random direction")
    ax1.set_title("E's best rank-one direction")
    ax1.legend(fontsize=7, ncol=2, loc="upper left")
    ax2.set_xscale("log")
    ax2.set_xlabel("‖E‖ / (λ_min k^(−1/(p−1)))")
    ax2.set_ylabel("per-start escape probability q")
    low = min([*q_all, *qa_all], default=1.0)
    ax2.set_ylim(min(0.5, 0.1 * math.floor(10 * low - 0.5)), 1.02)  # every point on the axes
    ax2.set_title("random starts of the power method (AGHKT iterations)")
    ax2.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


def report_section(
    doc: Any, ds: xr.Dataset, fig_dir: Path, *, n_boot: int = 200, rng: int = 0
) -> list[Path]:
    """A structure cube's answer in :func:`~sroa_dist.analysis.write_report`: the table of
    :func:`structure_rows` and the figure of :func:`figure_structure` (drawn into ``fig_dir``)."""
    rows = structure_rows(ds)
    doc.heading("Structure of the sampling noise")
    doc.para(
        "E = T̂ − T at each sample size N. Overlaps: of E's best rank-one direction x_E with "
        "one component (max_i |v_i·x_E|) and with the attractor's direction, beside their mean "
        "for a uniform random direction in brackets (isotropic noise gives about that; the "
        "attractor gives an attractor overlap of 1). q: the fraction of uniform power-method "
        "starts ending within the radius of a component, pooled over replicates, with 95 % "
        "Wilson intervals; a ≥ marks norms that are multi-start lower bounds."
    )
    if not rows:
        doc.para("No instance has been measured yet.")
        return []
    doc.table(*structure_table(rows))
    fig_dir.mkdir(parents=True, exist_ok=True)
    path = fig_dir / f"{_FIGURE}.png"
    figure_structure(rows).savefig(path, dpi=110)
    doc.image(path, f"{fig_dir.name}/{path.name}", _CAPTION)
    return []


def _figures(ds: xr.Dataset) -> list[str]:
    """No figure of :data:`~sroa_dist.analysis.FIGURES` (the section draws its own)."""
    return []


#: The ``structure`` kind's analysis (its ``analysis`` member names it by import path).
STRUCTURE_ANALYSIS = KindAnalysis(instances=False, report_section=report_section, figures=_figures)
