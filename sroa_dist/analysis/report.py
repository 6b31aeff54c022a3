"""Markdown/HTML report of a result cube: provenance, certification, bound checks, scaling."""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pandas as pd
import xarray as xr

from ..errors import InputError
from ..studies import DEFAULT_RADIUS, DEFAULT_VALUE_C
from ..sweep import DAMAGED_BLOCKS, REPLICATE, STEP
from ._completeness import Completeness, completeness, warn_incomplete
from ._cube import combinations, group_label, scalar_p, sweep_axes
from .aggregate import (
    CRITERIA,
    SuccessCriterion,
    count_violations,
    criterion_options,
    error_growth,
    get_criterion,
    list_violations,
    success,
)
from .figures import _plot_cube, check_knobs, supported_figures
from .kinds import analysis_of
from .threshold import estimate_thresholds, fit_exponent

_MAX_VIOLATION_ROWS = 20
_THEOREM_TEXT = {
    "2.2": "Theorem 2.2 (step 1): |λ̂₁ − λ| ≤ ε, ‖v̂₁ − v‖ ≤ 10(ε/λ + (ε/λ)²)",
    "3.1": "Theorem 3.1 (every step): |λ̂ⱼ − λ| ≤ 2ε, ‖v̂ⱼ − v‖ ≤ 20ε/λ",
}


def summarize(
    ds: xr.Dataset,
    *,
    criterion: str | SuccessCriterion = "recovery",
    radius: float = DEFAULT_RADIUS,
    c: float = DEFAULT_VALUE_C,
    n_boot: int = 200,
    rng: int = 0,
    rtol: float = 1e-9,
    status: Completeness | None = None,
) -> dict[str, Any]:
    """The numbers of the report (computed, not lazy).

    Parameters
    ----------
    ds : xarray.Dataset
        Result cube (``open_results``); computed here.
    criterion : str or SuccessCriterion
        The criterion of the figures (success heat map, threshold plot).  Success fractions,
        thresholds and exponents are computed for every criterion in
        :data:`~sroa_dist.analysis.CRITERIA` whose variables the cube has.
    radius, c : float
        Options of the ``recovery`` and ``value`` criteria.
    n_boot, rng : int
        Bootstrap size and seed of the threshold and exponent confidence intervals.
    rtol : float
        Tolerance of the bound checks (:func:`~sroa_dist.analysis.violation_mask`) and of the
        ``value`` and ``theorem`` criteria.
    status : Completeness, optional
        Precomputed :func:`~sroa_dist.analysis.completeness` of ``ds``.

    Returns
    -------
    dict
        ``completeness`` (:class:`~sroa_dist.analysis.Completeness`), ``dims`` (sizes of the
        sweep axes, replicate and step), ``n_instances`` (instances with data) and
        ``n_planned``, ``certified_fraction`` (certified steps / steps run),
        ``all_certified_fraction`` (instances whose every step is certified),
        ``confirmed_fraction`` (uncertified steps whose best value an independent
        confirmation upheld: evidence against a local miss, not a certificate),
        ``eps_certified_fraction``, ``violations`` ({theorem: {lam, vec, any, n_checked}}),
        ``violation_rows`` ({theorem: DataFrame}), ``criteria`` ({name: label}),
        ``success_fraction`` ({criterion: fraction}), ``growth`` (:func:`error_growth`
        Dataset or None), ``thresholds`` and ``exponents`` ({criterion: Dataset}, empty when
        the cube has no n-scaling) and ``provenance`` (the cube's attrs).  Fractions are None
        when the cube lacks the variable or has no results.
    """
    status = completeness(ds) if status is None else status
    axes = sweep_axes(ds)
    pool = {"radius": radius, "c": c, "rtol": rtol}
    criteria = {name: criterion_options(name, **pool) for name in CRITERIA}
    lazy: dict[str, xr.DataArray] = {}
    ran = ds["vec_err"].notnull() if "vec_err" in ds.data_vars else None
    if ran is not None:
        has_data = ran.any(STEP) if STEP in ran.dims else ran
        lazy["n_instances"] = has_data.sum()
        if "certified" in ds.data_vars:
            cert = ds["certified"].astype(bool) & ran
            lazy["n_steps"] = ran.sum()
            lazy["n_certified"] = cert.sum()
            all_cert = (cert | ~ran).all(STEP) if STEP in ran.dims else cert
            lazy["n_all_certified"] = (all_cert & has_data).sum()
            if "confirmed" in ds.data_vars:  # local evidence for the uncertified steps
                uncertified = ran & ~cert
                lazy["n_uncertified"] = uncertified.sum()
                lazy["n_confirmed"] = (ds["confirmed"].astype(bool) & uncertified).sum()
        if "eps_certified" in ds.data_vars:
            lazy["n_eps_certified"] = (ds["eps_certified"].astype(bool) & has_data).sum()
    usable: dict[str, dict[str, Any]] = {}
    for name, opts in criteria.items():
        try:
            s = success(ds, name, **opts)
        except ValueError:  # the cube lacks the criterion's variables
            continue
        usable[name] = opts
        lazy[f"success_{name}_n"] = s.sum()
        lazy[f"success_{name}_of"] = s.notnull().sum()
    violations: dict[str, dict[str, int]] = {}
    for theorem in ("2.2", "3.1"):
        try:
            counts = count_violations(ds, theorem, dim=None, rtol=rtol)
        except ValueError:
            continue
        for k in ("lam", "vec", "any", "n_checked"):
            lazy[f"viol_{theorem}_{k}"] = counts[k]
        violations[theorem] = {}
    growth = None
    if (
        STEP in ds.dims
        and ds.sizes[STEP] > 1
        and {"lam_err", "vec_err"} <= set(ds.data_vars)
        and not status.empty
    ):
        growth = error_growth(ds)
    # The counts and the error growth in one dask graph, so their chunk reads are shared;
    # the violation rows and thresholds below take their own (cheaper) passes.
    values = xr.Dataset({k: v.reset_coords(drop=True) for k, v in lazy.items()})
    values, growth = dask.compute(values, growth)
    num = {k: int(values[k]) for k in values.data_vars}
    for theorem in violations:
        violations[theorem] = {
            k: num[f"viol_{theorem}_{k}"] for k in ("lam", "vec", "any", "n_checked")
        }
    n_planned = int(np.prod([ds.sizes[a] for a in axes])) * ds.sizes.get(REPLICATE, 1)

    def frac(k: str, of: str) -> float | None:
        return num[k] / num[of] if k in num and num.get(of) else None

    thresholds: dict[str, xr.Dataset] = {}
    exponents: dict[str, xr.Dataset] = {}
    if "success_heatmap" in supported_figures(ds) and not status.empty:
        for name, opts in usable.items():
            thresholds[name] = estimate_thresholds(ds, name, n_boot=n_boot, rng=rng, **opts)
            exponents[name] = fit_exponent(thresholds[name], p=scalar_p(ds))
    return {
        "completeness": status,
        "dims": {d: int(ds.sizes[d]) for d in [*axes, REPLICATE, STEP] if d in ds.dims},
        "axes": axes,
        "n_instances": num.get("n_instances"),
        "n_planned": n_planned,
        "certified_fraction": frac("n_certified", "n_steps"),
        "all_certified_fraction": frac("n_all_certified", "n_instances"),
        "confirmed_fraction": frac("n_confirmed", "n_uncertified"),
        "eps_certified_fraction": frac("n_eps_certified", "n_instances"),
        "violations": violations,
        "violation_rows": {t: list_violations(ds, t, rtol=rtol) for t in violations},
        "criteria": {k: get_criterion(k).label(**o) for k, o in usable.items()},
        "success_fraction": {k: frac(f"success_{k}_n", f"success_{k}_of") for k in usable},
        "criterion": get_criterion(criterion).name,
        "radius": radius,
        "c": c,
        "growth": growth,
        "thresholds": thresholds,
        "exponents": exponents,
        "provenance": dict(ds.attrs),
    }


class _Doc:
    """A report written to Markdown and HTML in parallel, block by block."""

    def __init__(self) -> None:
        self.md: list[str] = []
        self.html: list[str] = []

    def heading(self, text: str, level: int = 2) -> None:
        self.md.append(f"{'#' * level} {text}\n")
        self.html.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def para(self, text: str) -> None:
        self.md.append(text + "\n")
        self.html.append(f"<p>{html.escape(text)}</p>")

    def bullets(self, items: Sequence[str]) -> None:
        self.md.append("\n".join(f"- {i}" for i in items) + "\n")
        self.html.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>")

    def code(self, text: str, lang: str = "") -> None:
        fence = "````" if "```" in text else "```"
        self.md.append(f"{fence}{lang}\n{text.rstrip()}\n{fence}\n")
        self.html.append(f"<pre><code>{html.escape(text)}</code></pre>")

    def table(self, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        def cell(v: object) -> str:
            return _fmt(v).replace("|", "\\|").replace("\n", " ")

        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
        self.md.append("\n".join(lines) + "\n")
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>"
            for row in rows
        )
        self.html.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

    def image(self, path: Path, rel: str, caption: str) -> None:
        self.md.append(f"![{caption}]({rel})\n")
        mime = "image/svg+xml" if path.suffix == ".svg" else f"image/{path.suffix[1:]}"
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        self.html.append(
            f'<figure><img src="data:{mime};base64,{data}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )


def _fmt(v: object) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool | np.bool_):
        return "yes" if v else "no"
    if isinstance(v, float | np.floating):
        return "–" if not math.isfinite(float(v)) else f"{float(v):.4g}"
    if isinstance(v, np.generic):
        return str(v.item())
    return str(v)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


_CSS = (
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;line-height:1.4}"
    "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #bbb;padding:2px 8px;"
    "text-align:right}th{background:#eee}pre{background:#f6f6f6;padding:0.5em;overflow-x:auto}"
    "img{max-width:100%}figcaption{font-style:italic}"
)


def _provenance(doc: _Doc, attrs: dict[str, Any]) -> None:
    doc.heading("Provenance")
    if not attrs:
        doc.para("The cube carries no provenance attributes.")
        return
    short = [(k, v) for k, v in attrs.items() if "\n" not in str(v) and len(str(v)) <= 120]
    long = [(k, v) for k, v in attrs.items() if (k, v) not in short]
    if short:
        doc.table(["attribute", "value"], [(k, str(v)) for k, v in short])
    for k, v in long:
        doc.para(f"`{k}`:")
        text = str(v)
        lang = ("json" if text.lstrip().startswith("{") else "toml") if k == "spec" else ""
        doc.code(text, lang)


def _violations(doc: _Doc, summary: dict[str, Any]) -> None:
    doc.heading("Theorem bounds")
    if not summary["violations"]:
        doc.para("The cube lacks the error variables needed to check the bounds.")
        return
    rows = []
    for theorem, c in summary["violations"].items():
        rows.append([_THEOREM_TEXT[theorem], c["lam"], c["vec"], c["any"], c["n_checked"]])
    doc.table(["bounds", "λ violations", "vector violations", "either", "checked"], rows)
    doc.para(
        "Theorem 3.1 assumes ε ≤ c₀ λ_min n^(−1/(p−1)) with an unknown constant c₀, so exceeding "
        "its bounds does not contradict it; its vector bound is vacuous once 20ε/λ ≥ √2. A "
        "violation of either theorem on an uncertified step or norm may be a solver miss rather "
        "than a counterexample (see the certified columns)."
    )
    for theorem, df in summary["violation_rows"].items():
        if df.empty:
            continue
        shown = df.head(_MAX_VIOLATION_ROWS)
        more = f" (first {_MAX_VIOLATION_ROWS} of {len(df)})" if len(df) > len(shown) else ""
        doc.para(f"Instances above the Theorem {theorem} bounds{more}:")
        doc.table(list(shown.columns), shown.itertuples(index=False, name=None))


def _growth(doc: _Doc, growth: xr.Dataset) -> None:
    doc.heading("Error growth over deflation (step r vs step 1)")
    kept = list(growth.attrs.get("kept", []))
    last = int(growth[STEP].values.max())
    doc.para(
        "Mean error at each step over replicates"
        + (f" and pooled over every axis but {', '.join(kept)}" if kept else " and all axes")
        + ", divided by the mean at step 1. Theorem 3.1 predicts no accumulation (ratios near 1)."
    )
    header = [*kept, "variable", "mean at step 1", f"mean at step {last}", "ratio", "max ratio"]
    rows = []
    for sel in combinations(growth, kept):
        g = growth.sel(sel)
        for var in ("lam_err", "vec_err"):
            mean, ratio = g[f"{var}_mean"], g[f"{var}_growth"]
            finite = ratio.where(np.isfinite(ratio), drop=True)
            rows.append(
                [
                    *sel.values(),
                    var,
                    float(mean.sel({STEP: 1})),
                    float(mean.sel({STEP: last})),
                    float(ratio.sel({STEP: last})),
                    float(finite.max()) if finite.size else np.nan,
                ]
            )
    doc.table(header, rows)


def _scaling(doc: _Doc, summary: dict[str, Any]) -> None:
    thresholds, exponents = summary["thresholds"], summary["exponents"]
    doc.heading("Tolerable perturbation vs n")
    first = next(iter(thresholds.values()))
    level = first.attrs.get("level", 0.95)
    doc.para(
        "Threshold = ε where a logistic fit of success vs log ε crosses 1/2, with "
        f"{level:.0%} bootstrap intervals ({first.attrs.get('n_boot')} resamples of the "
        "replicates), for every success criterion and, with a `noise` axis, every perturbation "
        "family. Thresholds outside the swept ε range are not used in the exponent fit; a "
        "criterion that never fails (or never succeeds) on the grid has no threshold (–)."
    )
    doc.bullets([f"{name}: success = {label}" for name, label in summary["criteria"].items()])
    frames = []
    for name, thr in thresholds.items():
        df = thr.drop_vars("threshold_boot").to_dataframe().reset_index()
        df.insert(0, "criterion", name)
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    groups = [d for d in first["threshold"].dims]
    cols = ["criterion", *groups]
    cols += ["threshold", "threshold_lo", "threshold_hi", "width", "in_range", "n_instances"]
    doc.table(cols, df[cols].itertuples(index=False, name=None))
    frames = []
    for name, exp in exponents.items():
        edf = exp.to_dataframe().reset_index() if exp.dims else pd.DataFrame([_scalars(exp)])
        edf.insert(0, "criterion", name)
        frames.append(edf)
    edf = pd.concat(frames, ignore_index=True)
    exp_groups = list(next(iter(exponents.values()))["exponent"].dims)
    header = ["criterion", *exp_groups, "exponent", "exponent_lo", "exponent_hi", "n_points"]
    header += ["reference_sroa", "reference_power"]
    doc.para(
        "Fitted exponent k in threshold ∝ n^k, next to the references −1/(p−1) (Theorem 3.1, "
        "SROA with global rank-one steps) and −1 (power method):"
    )
    doc.table(header, edf[header].itertuples(index=False, name=None))
    notes = []
    for _, row in edf.iterrows():
        lo, hi = row["exponent_lo"], row["exponent_hi"]
        if not (np.isfinite(lo) and np.isfinite(hi)):
            continue
        name = group_label({c: row[c] for c in exp_groups}) or "all"
        for ref in ("reference_sroa", "reference_power"):
            if np.isfinite(row[ref]):
                verdict = "contains" if lo <= row[ref] <= hi else "excludes"
                notes.append(
                    f"{row['criterion']}, {name}: the CI [{lo:.3g}, {hi:.3g}] {verdict} "
                    f"{row[ref]:.3g}"
                )
    if notes:
        doc.bullets(notes)


def _scalars(ds: xr.Dataset) -> dict[str, object]:
    return {k: ds[k].values.item() for k in ds.data_vars}


#: The formats :func:`write_report` can write.
REPORT_FORMATS = ("md", "html")


def check_report_formats(formats: str | Sequence[str]) -> list[str]:
    """The report formats asked for, as a list; ``ValueError`` naming any unknown one."""
    formats = [formats] if isinstance(formats, str) else list(formats)
    unknown = [f for f in formats if f not in REPORT_FORMATS]
    if unknown:
        raise InputError(
            f"unknown report format(s) {unknown}: expected one or more of {list(REPORT_FORMATS)}",
            "e.g. formats=('md', 'html')",
        )
    return formats


def write_report(
    ds: xr.Dataset,
    out_path: str | Path,
    formats: Sequence[str] = ("md", "html"),
    *,
    criterion: str | SuccessCriterion = "recovery",
    radius: float = DEFAULT_RADIUS,
    c: float = DEFAULT_VALUE_C,
    n_boot: int = 200,
    rng: int = 0,
    rtol: float = 1e-9,
    status: Completeness | None = None,
) -> list[Path]:
    """Write a Markdown and/or HTML report of a result cube, with its figures.

    The report opens with the cube's :func:`~sroa_dist.analysis.completeness` (blocks done,
    failed and not run, missing axis values, failure messages); every figure states it in its
    title.  An incomplete cube also raises an
    :class:`~sroa_dist.analysis.IncompleteCubeWarning`; a cube without any result gets a
    report that says so and lists the failures, without analysis sections or figures.

    Parameters
    ----------
    ds : xarray.Dataset
        Result cube (``open_results``).
    out_path : str or Path
        Report file; its suffix (``.md``/``.html``, if any) is replaced by each format's.  The
        figures go to ``<stem>_figures/`` next to it: linked relatively from the Markdown,
        embedded as base64 data URIs in the HTML (which is then self-contained).
    formats : sequence of {"md", "html"}
        Report formats to write.
    criterion, radius, c, n_boot, rng, rtol, status
        As in :func:`summarize`; ``criterion`` is the one of the n-scaling figures (the tables
        cover every criterion).

    Returns
    -------
    list of Path
        The report files (in ``formats`` order), then the figure files.
    """
    formats = check_report_formats(formats)
    check_knobs(criterion, radius=radius, c=c, rtol=rtol, n_boot=n_boot, rng=rng)  # first
    out_path = Path(out_path)
    base = out_path.with_suffix("") if out_path.suffix in (".md", ".html") else out_path
    status = completeness(ds) if status is None else status
    base.parent.mkdir(
        parents=True, exist_ok=True
    )  # after the cube's check: bad input makes nothing
    warn_incomplete(status)
    summary = summarize(
        ds,
        criterion=criterion,
        radius=radius,
        c=c,
        n_boot=n_boot,
        rng=rng,
        rtol=rtol,
        status=status,
    )
    fig_dir = base.parent / f"{base.name}_figures"
    name = summary["criterion"]
    figures = _plot_cube(
        ds,
        fig_dir,
        ("png",),
        status,
        criterion=name,
        radius=radius,
        c=c,
        n_boot=n_boot,
        rng=rng,
        thresholds=summary["thresholds"].get(name),
    )

    doc = _Doc()
    doc.heading("SROA sweep report", 1)
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    doc.para(f"Generated by sroa_dist.analysis.write_report on {now}.")
    _completeness(doc, status, ds.attrs.get(DAMAGED_BLOCKS))
    hooks = analysis_of(ds)
    if not status.empty and hooks.instances:
        doc.heading("Instances")
        dims = ", ".join(f"{k} = {v}" for k, v in summary["dims"].items())
        items = [
            f"Cube dimensions: {dims}",
            f"Instances with results: {_fmt(summary['n_instances'])} of {summary['n_planned']}",
            f"Replicates with results per grid point: {status.replicates_text()}",
            f"Certified steps (variable `certified`): {_pct(summary['certified_fraction'])}",
            f"Instances with every step certified: {_pct(summary['all_certified_fraction'])}",
            *(
                [
                    "Uncertified steps whose best value an independent confirmation upheld "
                    f"(`confirmed`; evidence, not a certificate): "
                    f"{_pct(summary['confirmed_fraction'])}"
                ]
                if summary.get("confirmed_fraction") is not None
                else []
            ),
            f"Instances with certified ‖E‖ (`eps_certified`): "
            f"{_pct(summary['eps_certified_fraction'])}",
        ]
        items += [
            f"Success ({key}: {label}): {_pct(summary['success_fraction'][key])}"
            for key, label in summary["criteria"].items()
        ]
        doc.bullets(items)
        _violations(doc, summary)
        if summary["growth"] is not None:
            _growth(doc, summary["growth"])
        if summary["thresholds"]:
            _scaling(doc, summary)
    if not status.empty and hooks.report_section is not None:  # the kind's own section
        figures = figures + hooks.report_section(doc, ds, fig_dir, n_boot=n_boot, rng=rng)
    if figures:
        doc.heading("Figures")
        for path in figures:
            doc.image(path, f"{fig_dir.name}/{path.name}", _CAPTIONS.get(path.stem, path.stem))
    _provenance(doc, summary["provenance"])

    written = []
    for fmt in formats:
        path = base.with_suffix(f".{fmt}")
        if fmt == "md":
            path.write_text("\n".join(doc.md), encoding="utf-8")
        else:
            body = "\n".join(doc.html)
            path.write_text(
                f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>SROA sweep report'
                f"</title><style>{_CSS}</style></head><body>{body}</body></html>\n",
                encoding="utf-8",
            )
        written.append(path)
    return written + figures


_MAX_FAILURE_ROWS = 50


def _completeness(doc: _Doc, status: Completeness, damaged: str | None = None) -> None:
    """The report's opening section: what the cube holds, loudly when it is not everything.

    ``damaged``: the cube's ``damaged_blocks`` attribute (a masked read), shown as a table."""
    doc.heading("Completeness")
    line = status.describe()
    if status.complete:
        doc.para(f"Status: {line}.")
        return
    if status.empty:
        doc.para(
            f"WARNING: NO RESULTS ({status.details()}). No instance of this cube has results, "
            "so there is nothing to analyse"
            + (": every block failed." if status.blocks_failed == status.blocks_total else ".")
        )
    else:
        doc.para(
            f"WARNING: INCOMPLETE CUBE ({status.details()}). Every number and figure below "
            "covers only the instances with results; run the same `sroa-dist run` command to "
            "finish it."
        )
    if status.blocks_damaged:
        doc.para(
            f"WARNING: {status.blocks_damaged} DAMAGED BLOCK(S) MASKED. Their data or "
            "certificates did not match the digests recorded when they were written; they "
            "were read as missing (NaN) and no number below uses them. `sroa-dist check` "
            "names the damage; the same `sroa-dist run` command recomputes them bit for bit."
        )
    items = []
    if status.blocks_total is not None:
        items.append(
            f"Blocks: {status.blocks_done} done, "
            + (f"{status.blocks_damaged} damaged (masked), " if status.blocks_damaged else "")
            + f"{status.blocks_failed} failed, {status.blocks_missing} not run, "
            f"of {status.blocks_total}"
        )
    for axis, values in status.axis_values.items():
        for kind, table in (
            ("without results", status.missing_values),
            ("with partial results", status.partial_values),
        ):
            vals = table.get(axis, ())
            if vals:
                shown = ", ".join(_fmt(v) for v in vals[:20]) + (", …" if len(vals) > 20 else "")
                items.append(f"`{axis}`: {len(vals)} of {len(values)} values {kind}: {shown}")
    items.append(f"Replicates with results per grid point: {status.replicates_text()}")
    doc.bullets(items)
    if damaged:
        rows = sorted((int(b), "; ".join(p)) for b, p in json.loads(damaged).items())
        doc.para("Damaged blocks, masked on read, with what failed their check:")
        doc.table(["block", "damage"], rows[:_MAX_FAILURE_ROWS])
    if status.failures:
        rows = sorted(status.failures.items())
        more = (
            f" (first {_MAX_FAILURE_ROWS} of {len(rows)})" if len(rows) > _MAX_FAILURE_ROWS else ""
        )
        doc.para(f"Failed blocks{more}, with the error of their last attempt:")
        doc.table(["block", "error"], rows[:_MAX_FAILURE_ROWS])


_CAPTIONS = {
    "figure1": "Figure 1: first-step errors vs ‖E‖ with the Theorem 2.2 bounds",
    "figure2": "Figure 2: per-iteration errors (median, 5–95 % band over replicates; × mean)",
    "step_accumulation": "Per-step λ error at fixed ε for each n: where the error accumulates",
    "success_heatmap": "Success probability over (n, ε) (criterion of the figures)",
    "threshold_scaling": "Threshold vs n with fitted and reference exponents",
    "threshold_rate": "First-crossing ε*(n): every bracket, the fitted rate with its interval "
    "band, Theorem 3.1's slope −1/(p−1)",
    "rate_normalised": "(n − 1)^{1/(p−1)}·ε*: flat where Theorem 3.1's rate is attained",
    "sample_error": "Median ‖E‖ (population whitening) vs N with fitted lines and N^(−1/2)",
    "sample_success": "Success fraction vs N with the fitted N needed (dotted)",
}
