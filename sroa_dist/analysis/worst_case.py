"""A worst-case cube (``[worst_case]`` sweeps): the adversary's ratio against n, each ratio
marked certified or a lower bound, the first ε that breaks ``error ≤ c‖E‖``, and the re-check
of every claimed violation from the store alone.

The cube holds, per instance, SROA's value error on ``T + E`` for the ``E`` the search found,
``‖E‖``'s bracket, ``ratio = error / upper(‖E‖)`` and whether that ratio is certified (its
bracket is) or a lower bound on the ratio, and ``E`` itself (packed) with ``λ`` and ``V``. A
claim about Theorem 3.1's constant needs the certified kind: a lower bound on the ratio above
``c`` is a violation only once the norm is certified. :func:`recheck_worst_cases` recomputes the
certified norm and the certified SROA of stored instances
(:func:`sroa_dist.recheck_worst_case`) and says whether each claim stands.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ..errors import InputError
from ..methods import certified_tractable
from ..studies import recheck_worst_case
from ..sweep import REPLICATE
from ..sweep.kinds.worst_case import WORST_CASE_VARIABLES, stored_result
from ._completeness import completeness
from ._plotting import status_title
from .kinds import KindAnalysis

__all__ = [
    "WORST_CASE_ANALYSIS",
    "figure_worst_case_ratio",
    "recheck_worst_cases",
    "worst_case_points",
    "worst_case_rows",
]

#: The file name (stem) of the report's figure.
FIGURE_NAME = "worst_case_ratio"
_SERIES = ("p", "method")


def _claim_c(ds: xr.Dataset) -> float:
    return float(ds.attrs.get("setting_c", 2.0))


def _metric(ds: xr.Dataset) -> str:
    return str(json.loads(ds.attrs.get("setting_search", "{}")).get("metric", "lam"))


def _scalar(ds: xr.Dataset, dim: str, point: dict[str, Any]) -> Any:
    """The value of ``dim`` at ``point`` (a swept coordinate), or the spec's scalar."""
    if dim in point:
        return point[dim]
    spec = json.loads(ds.attrs["spec"])
    key = {"n": ("tensor", "n"), "p": ("tensor", "p"), "eps": ("worst_case", "eps")}
    key["method"] = ("solver", "method")
    sect, leaf = key[dim]
    return spec[sect][leaf]


def _points(ds: xr.Dataset) -> list[dict[str, Any]]:
    """Every instance of the cube as ``{dim: coordinate}`` over its sweep dims and replicate."""
    dims = [d for d in ds["ratio"].dims]
    values = [ds[d].values.tolist() for d in dims]
    return [dict(zip(dims, combo, strict=True)) for combo in itertools.product(*values)]


def worst_case_points(ds: xr.Dataset) -> list[dict[str, Any]]:
    """Every finished instance of a worst-case cube: its ``p``, ``method``, ``n``, ``eps``,
    ``ratio`` (error over the upper end of ‖E‖), whether that ratio is ``certified``, the
    coherent tilt's value ratio at the same ε (``tilt``) and the ratio's upper end (error over
    the lower end of ‖E‖, ``upper``)."""
    out = []
    for pt in _points(ds):
        ratio = float(ds["ratio"].sel(pt))
        if not np.isfinite(ratio):
            continue
        out.append(
            {
                "p": int(_scalar(ds, "p", pt)),
                "method": str(_scalar(ds, "method", pt)),
                "n": int(_scalar(ds, "n", pt)),
                "eps": float(_scalar(ds, "eps", pt)),
                "ratio": ratio,
                "certified": bool(ds["ratio_certified"].sel(pt)),
                "tilt": float(ds["tilt_value"].sel(pt)),
                # error / lower(||E||): the ratio's upper end (equal to it where certified).
                "upper": float(ds["error"].sel(pt)) / float(ds["norm_lower"].sel(pt)),
            }
        )
    return out


def worst_case_rows(ds: xr.Dataset) -> list[dict[str, Any]]:
    """One row per (p, method, n): the largest ratio over ε and replicates with its kind, and
    the first ε whose ratio exceeds ``c`` (``setting_c``), certified and as a lower bound."""
    c = _claim_c(ds)
    rows = []
    groups: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for point in worst_case_points(ds):
        groups.setdefault((point["p"], point["method"], point["n"]), []).append(point)
    for (p, method, n), inst in sorted(groups.items()):
        best = max(inst, key=lambda r: r["ratio"])
        over = sorted((r for r in inst if r["ratio"] > c), key=lambda r: r["eps"])
        over_cert = [r for r in over if r["certified"]]
        rows.append(
            {
                "p": p,
                "method": method,
                "n": n,
                "instances": len(inst),
                "max_ratio": best["ratio"],
                "max_kind": "certified" if best["certified"] else "lower bound",
                "max_eps": best["eps"],
                "max_upper": max(r["upper"] for r in inst),
                "first_eps_over_c": over[0]["eps"] if over else None,
                "first_kind": (
                    None if not over else "certified" if over[0]["certified"] else "lower bound"
                ),
                "first_certified_eps_over_c": over_cert[0]["eps"] if over_cert else None,
                "all_certified": all(r["certified"] for r in inst),
            }
        )
    return rows


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.4g}"


def worst_case_table(ds: xr.Dataset) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the report's table (one row per p, method and n)."""
    c = _claim_c(ds)
    header = [
        "p",
        "steps",
        "n",
        "instances",
        "largest ratio (kind)",
        "at ε",
        "largest error / lower(‖E‖)",
        f"first ε with ratio > {c:g} (kind)",
        f"first certified ε with ratio > {c:g}",
    ]
    rows = []
    for r in worst_case_rows(ds):
        first = _fmt(r["first_eps_over_c"])
        if r["first_kind"] is not None:
            first += f" ({r['first_kind']})"
        rows.append(
            [
                str(r["p"]),
                r["method"],
                str(r["n"]),
                str(r["instances"]),
                f"{r['max_ratio']:.4f} ({r['max_kind']})",
                _fmt(r["max_eps"]),
                f"{r['max_upper']:.4f}",
                first,
                _fmt(r["first_certified_eps_over_c"]),
            ]
        )
    return header, rows


def figure_worst_case_ratio(ds: xr.Dataset) -> Figure:
    """The ratio ``error / upper(‖E‖)`` against n: every instance a point, coloured by ε,
    filled where the ratio is certified and hollow where it is a lower bound on the ratio; one
    panel per (p, steps' method); the claim's level ``c`` as a dashed line."""
    c = _claim_c(ds)
    pts = [pt for pt in _points(ds) if np.isfinite(float(ds["ratio"].sel(pt)))]
    panels = sorted({(int(_scalar(ds, "p", pt)), str(_scalar(ds, "method", pt))) for pt in pts})
    if not panels:
        raise InputError(
            "worst-case cube: expected at least one computed instance; received none",
            "run the sweep (sroa-dist run) before drawing its figure",
        )
    eps_all = sorted({float(_scalar(ds, "eps", pt)) for pt in pts})
    cmap = _colormap()
    fig = Figure(figsize=(5.6 * len(panels), 5.6), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (p, method) in zip(axes, panels, strict=True):
        mine = [
            pt
            for pt in pts
            if int(_scalar(ds, "p", pt)) == p and str(_scalar(ds, "method", pt)) == method
        ]
        ns = sorted({int(_scalar(ds, "n", pt)) for pt in mine})
        for pt in mine:
            eps = float(_scalar(ds, "eps", pt))
            k = eps_all.index(eps)
            # Spread the points of one n by eps (and replicate), so none hides another.
            spread = (k - (len(eps_all) - 1) / 2) / max(len(eps_all), 1)
            x = int(_scalar(ds, "n", pt)) * (1 + 0.06 * spread + 0.01 * pt.get(REPLICATE, 0))
            y = float(ds["ratio"].sel(pt))
            color = cmap(k / max(len(eps_all) - 1, 1))
            cert = bool(ds["ratio_certified"].sel(pt))
            if not cert:  # the true ratio lies in [error / upper, error / lower]
                top = float(ds["error"].sel(pt)) / float(ds["norm_lower"].sel(pt))
                ax.plot([x, x], [y, top], color=color, lw=1.2, ls=":", zorder=2)
                ax.plot([x], [top], marker="_", color=color, ms=9, zorder=2)
            ax.scatter(
                [x],
                [y],
                s=36,
                marker="o",
                facecolors=color if cert else "none",
                edgecolors=color,
                linewidths=1.4,
                zorder=3,
            )
        ax.axhline(
            c, ls="--", color="black", lw=1, label=f"c = {c:g}: error > c·‖E‖ breaks the bound"
        )
        ax.set_xscale("log")
        ax.set_xticks(ns, [str(v) for v in ns])
        ax.minorticks_off()
        ax.set_xlabel("n  (tensor dimension)")
        ax.set_ylabel("ratio = error / upper(‖E‖)")
        ax.set_title(f"p = {p}, {method} steps: worst case found per ε", fontsize="medium")
        ax.scatter([], [], marker="o", color="grey", label="certified ratio (‖E‖ certified)")
        ax.scatter(
            [], [], marker="o", facecolors="none", edgecolors="grey", label="lower bound on ratio"
        )
        ax.plot(
            [],
            [],
            color="grey",
            ls=":",
            marker="_",
            label="up to error / lower(‖E‖) (‖E‖ uncertified)",
        )
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize="small", ncol=1)
    sm = _scalar_mappable(cmap, eps_all)
    fig.colorbar(sm, ax=list(axes), label="ε  (target ‖E‖ of the search)")
    status_title(fig, completeness(ds))
    return fig


def _colormap() -> Any:
    from matplotlib import colormaps

    return colormaps["viridis"]


def _scalar_mappable(cmap: Any, eps: list[float]) -> Any:
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    sm = ScalarMappable(norm=Normalize(min(eps), max(eps)), cmap=cmap)
    sm.set_array([])
    return sm


def recheck_worst_cases(
    ds: xr.Dataset, *, c: float | None = None, claims_only: bool = True, rng: int = 0
) -> list[dict[str, Any]]:
    """Re-check stored worst cases from the cube alone: ``E``, ``λ`` and ``V`` are read back,
    and :func:`sroa_dist.recheck_worst_case` recomputes the certified norm bracket and the
    certified SROA on ``T + E``.

    Parameters
    ----------
    ds : Dataset
        A worst-case cube (:func:`sroa_dist.open_results`).
    c : float, optional
        The constant; default the sweep's (``setting_c``).
    claims_only : bool
        Only the instances that claim ``ratio > c`` (``exceeds_c``); False: every instance.
    rng : int
        Seed of the certified solvers' local starts (their brackets are validated whatever).

    Returns
    -------
    list of dict
        Per instance: its coordinates, the stored ratio and kind, and the re-check's error,
        norm bracket, ratio, ``stands`` and ``reason``; an instance beyond the certified
        relaxation's reach gets ``stands = None`` and says so.
    """
    c = _claim_c(ds) if c is None else float(c)
    metric = _metric(ds)
    out = []
    for pt in _points(ds):
        if not np.isfinite(float(ds["ratio"].sel(pt))):
            continue
        if claims_only and not bool(ds["exceeds_c"].sel(pt)):
            continue
        n, p = int(_scalar(ds, "n", pt)), int(_scalar(ds, "p", pt))
        eps = float(_scalar(ds, "eps", pt))
        values = {name: ds[name].sel(pt).values for name in WORST_CASE_VARIABLES}
        result = stored_result(values, n, p, eps, metric)
        row: dict[str, Any] = {
            **pt,
            "n": n,
            "p": p,
            "eps": eps,
            "stored_ratio": result.ratio,
            "stored_kind": result.ratio_kind,
        }
        if not certified_tractable(n, p):
            row.update(stands=None, reason=f"n = {n}, p = {p}: beyond the certified relaxation")
        else:
            rc = recheck_worst_case(result, c, rng=rng)
            row.update(
                stands=rc.stands,
                error=rc.error,
                norm_lower=rc.norm_lower,
                norm_upper=rc.norm_upper,
                ratio=rc.ratio,
                reason=rc.reason,
            )
        out.append(row)
    return out


#: What the report's table states about its numbers.
WORST_CASE_NOTE = (
    "Per instance, the gradient adversary's E at ‖E‖ = ε and SROA's value error on T + E; "
    "ratio = error / upper(‖E‖). Certified: ‖E‖'s bracket is certified, so the ratio is "
    "(to the bracket's tolerance). Lower bound: ‖E‖ is an estimate with fresh starts, its upper "
    "end the unfolding bound, so the true ratio is at least the one shown and at most error / "
    "lower(‖E‖) (the search's own value). A claimed violation "
    "(ratio > c) stands once re-checked with certified steps: "
    "sroa_dist.analysis.worst_case.recheck_worst_cases(open_results(store))."
)


def report_section(
    doc: Any, ds: xr.Dataset, fig_dir: Path, *, n_boot: int = 200, rng: int = 0
) -> list[Path]:
    """A worst-case cube's answer in :func:`~sroa_dist.analysis.write_report`: the table of
    ratios per (p, steps, n) and the figure of the ratio against n."""
    doc.heading("Worst case: the adversary's ratio against n")
    doc.para(WORST_CASE_NOTE)
    doc.table(*worst_case_table(ds))
    fig_dir = Path(fig_dir)
    fig_dir.mkdir(parents=True, exist_ok=True)
    path = fig_dir / f"{FIGURE_NAME}.png"
    figure_worst_case_ratio(ds).savefig(path, dpi=120)
    return [path]


#: The ``worst_case`` kind's analysis (its ``analysis`` member names it by import path).
WORST_CASE_ANALYSIS = KindAnalysis(
    instances=False, report_section=report_section, figures=lambda ds: []
)
