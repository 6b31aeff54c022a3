"""Figures of a result cube: the paper's Figures 1 and 2 and the n-scaling of the threshold.

Figures are built as bare :class:`matplotlib.figure.Figure` objects (no pyplot state, Agg
rendering on save), so they can be inspected in tests and saved from any thread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from ..errors import InputError
from ..metrics import theorem_2_2_bounds
from ..studies import DEFAULT_RADIUS, DEFAULT_VALUE_C
from ..sweep import REPLICATE, STEP
from ._completeness import Completeness, completeness, warn_incomplete
from ._cube import (
    PERTURBATION_AXES,
    combinations,
    group_label,
    measured_eps,
    noise_axis,
    require,
    scalar_p,
    step_one,
    sweep_axes,
)
from ._plotting import (
    no_data,
    no_data_reason,
    noise_rows,
    plain_log_labels,
    set_scale,
    status_title,
)
from .aggregate import (
    SuccessCriterion,
    criterion_options,
    get_criterion,
    success_probability,
    violation_mask,
)
from .kinds import analysis_of
from .step_figures import figure2, figure_step_accumulation
from .threshold import check_n_boot, check_seed, estimate_thresholds, fit_exponent
from .threshold_figures import figure_rate_normalised, figure_threshold_rate

#: Figure names :func:`plot_cube` can produce, in order.
FIGURES = (
    "figure1",
    "figure2",
    "step_accumulation",
    "success_heatmap",
    "threshold_scaling",
    "threshold_rate",
    "rate_normalised",
)
#: Perturbation axes over which the n-scaling figures are drawn.
_SCALING_AXES = ("eps", "eps_scaled")
_POINT = {"color": "tab:red", "s": 9, "alpha": 0.7, "linewidths": 0}
_BOUND = {"color": "tab:blue", "lw": 1.5}
_VIOLATION = {"marker": "x", "color": "black", "s": 40, "linewidths": 1.5, "zorder": 3}


def supported_figures(ds: xr.Dataset) -> list[str]:
    """Names (from :data:`FIGURES`) of the figures this cube has the data for."""
    hooks = analysis_of(ds)
    own = _own_drawings(hooks.drawings)  # figures the kind draws itself
    if hooks.figures is not None:  # the kind chooses among FIGURES
        return [*hooks.figures(ds), *own]
    return [*_per_step_figures(ds), *own]


def _own_drawings(drawings: Mapping[str, Any]) -> list[str]:
    """The names of a kind's own figures; one that shadows a name of :data:`FIGURES` is an
    error in the kind, said as such."""
    clash = sorted(set(drawings) & set(FIGURES))
    if clash:
        raise InputError(
            f"sweep kind analysis: drawings: expected names of the kind's own figures; received "
            f"{clash}, which are names of FIGURES",
            "give the kind's figures names of their own",
        )
    return list(drawings)


def _per_step_figures(ds: xr.Dataset) -> list[str]:
    """The figures of SROA's per-step results that the cube has the variables for."""
    names: list[str] = []
    errs = {"lam_err", "vec_err"} <= set(ds.data_vars)
    has_step = STEP in ds.dims
    steps = np.asarray(ds[STEP].values) if has_step else np.array([])
    if errs and noise_axis(ds) and (not has_step or 1 in steps):
        names.append("figure1")
    if errs and has_step and steps.size > 1:
        names.append("figure2")
        if ds.sizes.get("n", 0) >= 2 and "eps" in ds.dims:
            names.append("step_accumulation")
    if (
        "vec_err" in ds.data_vars
        and ds.sizes.get("n", 0) >= 2
        and any(ds.sizes.get(a, 0) >= 2 for a in _SCALING_AXES)
        and REPLICATE in ds.dims
    ):
        names += ["success_heatmap", "threshold_scaling"]
    return names


def figure1(ds: xr.Dataset, *, rtol: float = 1e-9, status: Completeness | None = None) -> Figure:
    """Figure 1: first-step λ and vector errors vs ‖E‖ with the Theorem 2.2 bounds.

    One row per noise model (one row if there is no ``noise`` axis), one point per instance
    (every other axis is flattened), bound lines ``ε`` and ``10(ε/λ + (ε/λ)²)`` with λ from
    ``lam_true`` (one line per distinct λ; λ_min and λ_max when λ varies a lot).  Instances above
    their own bound are marked with a black × and counted in the panel title.  ``status``
    (default: :func:`~sroa_dist.analysis.completeness` of ``ds``) is stated in the title.
    """
    status = completeness(ds) if status is None else status
    require(ds, ["lam_err", "vec_err"], "figure 1")
    viol = violation_mask(ds, "2.2", rtol=rtol)
    parts = {
        "norm": measured_eps(ds),
        "lam_err": step_one(ds["lam_err"]),
        "vec_err": step_one(ds["vec_err"]),
        "lam_viol": viol["lam"],
        "vec_viol": viol["vec"],
    }
    if "lam_true" in ds.data_vars:
        parts["lam_true"] = step_one(ds["lam_true"])
    # One value per instance for every quantity (the ε coordinate of an n sweep is 1-D).
    data = xr.Dataset(
        dict(
            zip(
                parts,
                (v.reset_coords(drop=True) for v in xr.broadcast(*parts.values())),
                strict=True,
            )
        )
    ).compute()
    rows = noise_rows(ds)
    fig = Figure(figsize=(10, 3.4 * len(rows)), layout="constrained")
    axes = fig.subplots(len(rows), 2, squeeze=False)
    for row, sel in zip(axes, rows, strict=True):
        sub = data.sel(sel)
        eps = sub["norm"].values.ravel()
        valid = np.isfinite(eps) & np.isfinite(sub["vec_err"].values.ravel())
        prefix = f"{sel['noise']}: " if sel else ""
        pos = eps[valid & (eps > 0)]
        grid = np.geomspace(pos.min(), pos.max(), 200) if pos.size else np.array([])
        lam_values = sub["lam_true"].values.ravel()[valid] if "lam_true" in sub else np.ones(1)
        lams = np.unique(np.round(lam_values[np.isfinite(lam_values)], 12))
        if lams.size > 3:
            lams = np.array([lams.min(), lams.max()])
        for ax, kind, ylabel in (
            (row[0], "lam", r"$|\hat\lambda_1 - \lambda|$  (units of λ)"),
            (row[1], "vec", r"$\|\hat v_1 - v\|$  (unit-vector distance)"),
        ):
            err = sub[f"{kind}_err"].values.ravel()[valid]
            bad = sub[f"{kind}_viol"].values.ravel()[valid]
            ax.scatter(eps[valid], err, label="instance", **_POINT)
            if grid.size and kind == "lam":  # |λ̂ − λ| ≤ ε whatever λ
                ax.plot(grid, theorem_2_2_bounds(grid, 1.0)[0], label="Theorem 2.2 bound", **_BOUND)
            for lam in lams if grid.size and kind == "vec" else []:
                bound = theorem_2_2_bounds(grid, lam)[1]
                ax.plot(grid, bound, label=f"Theorem 2.2 bound (λ={lam:g})", **_BOUND)
            if bad.any():
                ax.scatter(eps[valid][bad], err[bad], label="violation", **_VIOLATION)
            what = "λ error" if kind == "lam" else "vector error"
            counted = f"{int(bad.sum())}/{err.size} above bound" if err.size else "NO RESULTS"
            if 0 < err.size < eps.size:  # say so when the row is partial
                # On a line of its own: on one line it ran into the next panel's title.
                counted += f"\n({err.size} of {eps.size} instances have results)"
            ax.set_title(f"{prefix}{what} at step 1, {counted}", fontsize="medium")
            ax.set_xlabel(r"$\|E\|$  (operator norm of the perturbation)")
            ax.set_ylabel(ylabel)
            set_scale(ax, "x", eps[valid])
            set_scale(ax, "y", err)
            if err.size:
                ax.legend(loc="upper left", fontsize="small")
            else:
                no_data(ax, status)
    plain_log_labels(fig)
    status_title(fig, status)
    return fig


def _log_edges(values: np.ndarray) -> np.ndarray:
    """Cell edges for a pcolormesh on a log axis: geometric midpoints, extended at the ends."""
    v = np.log(np.asarray(values, dtype=float))
    if v.size == 1:
        return np.exp(v + np.array([-0.5, 0.5]))
    mid = (v[1:] + v[:-1]) / 2
    return np.exp(np.concatenate([[2 * v[0] - mid[0]], mid, [2 * v[-1] - mid[-1]]]))


def figure_success_heatmap(
    ds: xr.Dataset,
    criterion: str | SuccessCriterion = "recovery",
    *,
    thresholds: xr.Dataset | None = None,
    status: Completeness | None = None,
    **options: Any,
) -> Figure:
    """Success probability over (n, ε): one heat map per combination of the other axes.

    The vertical axis is the swept perturbation axis (``eps``, else ``eps_scaled``, else
    ``sigma``).  ``criterion`` and ``options`` select the success criterion (see
    :func:`~sroa_dist.analysis.success`).  Thresholds (from
    :func:`~sroa_dist.analysis.estimate_thresholds` under the same criterion), when given and
    on the ``eps`` axis, are overlaid as white markers with their confidence intervals.  Cells
    without results are blank, a size without any says "no data" and why (damaged blocks
    masked, failed or not run), and panels without any say so.
    """
    crit = get_criterion(criterion)
    axis = noise_axis(ds)
    if "n" not in ds.dims or axis is None:
        raise InputError(
            "cube needs an `n` dimension and an `eps`, `eps_scaled` or `sigma` dimension: the "
            f"success heat map is over (n, ε) (dims present: {', '.join(map(str, ds.dims))})",
            "sweep n and one of eps, eps_scaled or sigma for this figure",
        )
    status = completeness(ds) if status is None else status
    prob = success_probability(ds, crit, **options)["p_success"].compute()
    # The ε axis is logarithmic: a level ε = 0 (unperturbed) has no place on it.
    dropped = int((prob[axis] <= 0).sum())
    prob = prob.where(prob[axis] > 0, drop=True) if dropped else prob
    panels = combinations(prob, [a for a in sweep_axes(ds) if a not in ("n", axis)])
    ncols = min(3, len(panels))
    nrows = int(np.ceil(len(panels) / ncols))
    fig = Figure(figsize=(4.6 * ncols, 3.8 * nrows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False).ravel())
    n, eps = prob["n"].values, prob[axis].values
    what = crit.label(**options) + (f"; {axis} = 0 not shown" if dropped else "")
    mesh = None
    for ax, sel in zip(axes, panels, strict=False):
        z = prob.sel(sel).transpose(axis, "n").values
        mesh = ax.pcolormesh(_log_edges(n), _log_edges(eps), z, vmin=0, vmax=1, cmap="viridis")
        centre = float(np.sqrt(np.nanmin(eps) * np.nanmax(eps)))
        for j in np.flatnonzero(~np.isfinite(z).any(axis=0)):  # a blank column: say why
            reason = no_data_reason(status)
            ax.text(
                n[j],
                centre,
                "no data" + (f" ({reason})" if reason else ""),
                rotation=90,
                ha="center",
                va="center",
                color="tab:red",
                fontsize="small",
            )
        if thresholds is not None and axis == "eps":  # thresholds are in ε units
            t = thresholds.sel({k: v for k, v in sel.items() if k in thresholds.dims})
            thr = t["threshold"].values
            err = np.abs(np.stack([t["threshold_lo"].values, t["threshold_hi"].values]) - thr)
            ax.errorbar(
                t["n"].values,
                thr,
                yerr=np.nan_to_num(err),
                fmt="o",
                color="white",
                mec="black",
                capsize=3,
                label="threshold (P = 1/2)",
            )
            ax.legend(loc="lower left", fontsize="small")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(n, [str(v) for v in n])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("n  (tensor dimension)")
        ax.set_ylabel(PERTURBATION_AXES[axis])
        empty = "" if np.isfinite(z).any() else "NO RESULTS"
        ax.set_title(
            ", ".join(filter(None, [group_label(sel), empty])) + f"\nP({what})",
            fontsize="medium",
        )
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    if mesh is not None:
        fig.colorbar(mesh, ax=list(axes[: len(panels)]), label="P(success)")
    plain_log_labels(fig)
    status_title(fig, status)
    return fig


def figure_threshold_scaling(
    thresholds: xr.Dataset,
    exponents: xr.Dataset | None = None,
    *,
    p: int | None = None,
    status: Completeness | None = None,
) -> Figure:
    """Threshold vs n on log–log axes, fitted power laws and the reference slopes.

    Each series (a combination of the non-n grid dims) shows its thresholds with confidence
    intervals and the fitted line, its exponent and CI in the legend.  Dashed grey lines show
    the reference slopes −1/(p−1) (Theorem 3.1, SROA with global rank-one steps) and −1 (power
    method), anchored at the geometric centre of the data so the slopes compare directly.
    The title names the success criterion; ``status`` (the cube's
    :func:`~sroa_dist.analysis.completeness`), when given, is stated above it.
    """
    if "n" not in thresholds.dims:
        raise InputError(
            "thresholds have no `n` dimension: the scaling plot is threshold vs n",
            "estimate thresholds on a cube that sweeps n",
        )
    if exponents is None:
        exponents = fit_exponent(thresholds, p=p)
    fig = Figure(figsize=(6.4, 4.8), layout="constrained")
    ax = fig.subplots()
    n = thresholds["n"].values.astype(float)
    series = combinations(thresholds, [d for d in thresholds["threshold"].dims if d != "n"])
    grid = np.geomspace(n.min(), n.max(), 50)
    plotted = []
    for k, sel in enumerate(series):
        t = thresholds.sel(sel)
        e = exponents.sel(sel)
        color = f"C{k % 10}"
        use = t["in_range"].values & np.isfinite(t["threshold"].values)
        thr = t["threshold"].values
        err = np.abs(np.stack([t["threshold_lo"].values, t["threshold_hi"].values]) - thr)
        name = group_label(sel) or "threshold"
        ax.errorbar(
            n[use], thr[use], yerr=np.nan_to_num(err[:, use]), fmt="o", color=color, capsize=3
        )
        plotted.extend(thr[use])
        k_fit = float(e["exponent"])
        if np.isfinite(k_fit):
            lo, hi = float(e["exponent_lo"]), float(e["exponent_hi"])
            ci = f" [{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) else ""
            ax.plot(
                grid,
                float(e["prefactor"]) * grid**k_fit,
                color=color,
                label=f"{name}: fitted k = {k_fit:.2f}{ci}",
            )
        else:
            ax.plot([], [], "o", color=color, label=f"{name}: too few thresholds to fit")
    if plotted:
        y0 = float(np.exp(np.mean(np.log(plotted))))
        n0 = float(np.exp(np.mean(np.log(n))))
        refs = np.unique(
            exponents["reference_sroa"].values[np.isfinite(exponents["reference_sroa"].values)]
        )
        for style, (slope, label) in zip(
            ("--", ":", "-."),
            [(r, f"reference $n^{{{r:.2g}}}$  (Theorem 3.1, −1/(p−1))") for r in refs]
            + [(-1.0, "reference $n^{-1}$  (power method)")],
            strict=False,
        ):
            ax.plot(grid, y0 * (grid / n0) ** slope, style, color="grey", label=label)
    ax.set_xscale("log")
    if plotted:  # a log axis without positive data cannot be drawn
        ax.set_yscale("log")
    else:
        ax.text(
            0.5,
            0.5,
            "NO THRESHOLD inside the swept ε range\n(success never crosses 1/2 there)",
            transform=ax.transAxes,
            ha="center",
            va="center",
        )
        # No y values: ticks from -0.04 to 0.04 read like thresholds of zero.
        ax.set_yticks([])
        ax.set_xlim(n.min() / 1.2, n.max() * 1.2)
    ax.set_xticks(n, [f"{v:g}" for v in n])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("n  (tensor dimension)")
    ax.set_ylabel("threshold ε where P(success) = 1/2  (‖E‖)")
    level = thresholds.attrs.get("level")
    crit = thresholds.attrs.get("criterion_label") or thresholds.attrs.get("criterion")
    ax.set_title(
        "Tolerable perturbation vs n"
        + (f" ({level:.0%} bootstrap CIs)" if level else "")
        + (f"\nsuccess: {crit}" if crit else ""),
        fontsize="medium",
    )
    if plotted:  # else the legend would only repeat "too few thresholds to fit"
        ax.legend(fontsize="small")
    plain_log_labels(fig)
    status_title(fig, status)
    return fig


def plot_cube(
    ds: xr.Dataset,
    out_dir: str | Path,
    formats: Sequence[str] = ("png",),
    *,
    criterion: str | SuccessCriterion = "recovery",
    radius: float = DEFAULT_RADIUS,
    c: float = DEFAULT_VALUE_C,
    n_boot: int = 200,
    rng: int = 0,
    dpi: int = 120,
    thresholds: xr.Dataset | None = None,
    status: Completeness | None = None,
) -> list[Path]:
    """Draw every figure the cube supports (:func:`supported_figures`) and save it.

    Every figure states the cube's :func:`~sroa_dist.analysis.completeness` in its title; an
    incomplete cube also raises an :class:`~sroa_dist.analysis.IncompleteCubeWarning`, and a
    cube without any result gives no figures (only the warning).

    Parameters
    ----------
    ds : xarray.Dataset
        Result cube (``open_results``).
    out_dir : str or Path
        Directory for the files (created if needed); files are named ``<figure>.<format>``.
    formats : sequence of str
        Matplotlib file formats, e.g. ``("png", "svg")``.
    criterion : str or SuccessCriterion
        Success criterion for the n-scaling figures (:data:`~sroa_dist.analysis.CRITERIA`).
    radius, c : float
        Options of the ``recovery`` and ``value`` criteria (each criterion takes its own).
    n_boot, rng : int
        Bootstrap size and seed for the threshold confidence intervals.
    dpi : int
        Resolution of raster formats.
    thresholds : xarray.Dataset, optional
        Precomputed :func:`~sroa_dist.analysis.estimate_thresholds` output, to avoid refitting.
    status : Completeness, optional
        Precomputed :func:`~sroa_dist.analysis.completeness` of ``ds``.

    Returns
    -------
    list of Path
        The files written, in :data:`FIGURES` order then ``formats`` order.
    """
    check_figure_formats(formats)
    check_knobs(criterion, radius=radius, c=c, n_boot=n_boot, rng=rng, dpi=dpi)
    status = completeness(ds) if status is None else status
    warn_incomplete(status)
    return _plot_cube(
        ds,
        out_dir,
        formats,
        status,
        criterion=criterion,
        radius=radius,
        c=c,
        n_boot=n_boot,
        rng=rng,
        dpi=dpi,
        thresholds=thresholds,
    )


def check_knobs(
    criterion: str | SuccessCriterion,
    *,
    n_boot: int,
    rng: Any = 0,
    dpi: float | None = None,
    **pool: Any,
) -> None:
    """Every option of :func:`plot_cube` and :func:`~sroa_dist.analysis.write_report`
    checked before any work or file: the criterion's name, each criterion knob of ``pool``
    (``radius``, ``c``, ``rtol``; also those the chosen criterion ignores, which the report's
    tables of the other criteria use), the bootstrap size and seed, and the resolution."""
    get_criterion(criterion)
    criterion_options(criterion, **pool)
    check_n_boot(n_boot)
    check_seed(rng)
    if dpi is not None and not (
        isinstance(dpi, (int, float, np.number))
        and not isinstance(dpi, bool)
        and 0 < dpi < float("inf")
    ):
        raise InputError(
            f"dpi: expected a finite number > 0 (dots per inch); received {dpi!r}", "e.g. dpi=120"
        )


def check_figure_formats(formats: Any) -> list[str]:
    """The figure formats asked for, as a list: a name or a sequence of names Matplotlib
    writes; an ``InputError`` naming the others."""
    valid = set(Figure().canvas.get_supported_filetypes())
    if isinstance(formats, str):
        formats = [formats]
    elif not isinstance(formats, Sequence) or not all(isinstance(f, str) for f in formats):
        raise InputError(
            f"formats: expected a figure format or a sequence of them; received {formats!r}",
            "e.g. formats=('png', 'svg')",
        )
    unknown = [f for f in formats if f not in valid]
    if unknown or not formats:
        raise InputError(
            f"unknown figure format(s) {unknown or formats}: expected some of {sorted(valid)}",
            "use formats matplotlib writes, e.g. ('png', 'svg')",
        )
    return list(formats)


def _plot_cube(
    ds: xr.Dataset,
    out_dir: str | Path,
    formats: Sequence[str],
    status: Completeness,
    *,
    dpi: int = 120,
    **options: Any,
) -> list[Path]:
    formats = check_figure_formats(formats)
    out_dir = Path(out_dir)
    names = supported_figures(ds) if not status.empty else []
    if not names:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = build_figures(ds, names, status=status, **options)
    paths = []
    for name, fig in figures.items():
        for fmt in formats:
            path = out_dir / f"{name}.{fmt}"
            fig.savefig(path, dpi=dpi)
            paths.append(path)
    return paths


def build_figures(
    ds: xr.Dataset,
    names: Sequence[str] | None = None,
    *,
    criterion: str | SuccessCriterion = "recovery",
    radius: float = DEFAULT_RADIUS,
    c: float = DEFAULT_VALUE_C,
    n_boot: int = 200,
    rng: int = 0,
    thresholds: xr.Dataset | None = None,
    status: Completeness | None = None,
) -> dict[str, Figure]:
    """Build the named figures (default: all supported) as Figure objects, sharing one fit."""
    names = supported_figures(ds) if names is None else list(names)
    own = analysis_of(ds).drawings
    unknown = [n for n in names if n not in FIGURES and n not in own]
    if unknown:
        raise InputError(
            f"unknown figure(s) {unknown}: expected some of {[*FIGURES, *own]}",
            "use some of the listed figures (figures_for(ds) lists the ones a cube supports)",
        )
    status = completeness(ds) if status is None else status
    options = criterion_options(criterion, radius=radius, c=c)
    if thresholds is None and {"success_heatmap", "threshold_scaling"} & set(names):
        thresholds = estimate_thresholds(ds, criterion, n_boot=n_boot, rng=rng, **options)
    out: dict[str, Figure] = {}
    for name in names:
        if name in own:
            out[name] = own[name](ds, status=status)
        elif name == "figure1":
            out[name] = figure1(ds, status=status)
        elif name == "figure2":
            out[name] = figure2(ds, status=status)
        elif name == "step_accumulation":
            out[name] = figure_step_accumulation(ds, status=status)
        elif name == "threshold_rate":
            out[name] = figure_threshold_rate(ds, status=status)
        elif name == "rate_normalised":
            out[name] = figure_rate_normalised(ds, status=status)
        elif name == "success_heatmap":
            out[name] = figure_success_heatmap(
                ds, criterion, thresholds=thresholds, status=status, **options
            )
        else:
            out[name] = figure_threshold_scaling(thresholds, p=scalar_p(ds), status=status)
    return out
