"""The figures of the rate study (docs/results/thresholds.md), drawn from the published data
(the same reader and rows as the tables: :mod:`.rate_data`):

- ``rate_accumulation.png``: g_p(ε)/g_p(0) against ε, p = 3–6, at n = 8 and 16;
- ``rate_value.png``: value-criterion thresholds against n with the prediction from n = 16,
  the asymptote and the onset (top), the residual per size (bottom);
- ``rate_normalised.png``: ε*·(n−1)^{1/(p−1)} over its asymptotic prefactor, against n, with
  the asymptote runs and the predictions committed before them;
- ``rate_theorem.png``: theorem-criterion thresholds (recovery part included), apart;
- ``rate_power_vs_global.png``: the power method's per-start escape probability and the
  step success it implies for both budgets, against ε and n, on the attractor;
- ``rate_lambda_min.png``: thresholds for three weight sets;
- ``rate_worst_case.png``: the worst cases with certified or exact norms against the coherent
  tilt.

Each function draws one :class:`~matplotlib.figure.Figure` (no pyplot state) and returns it
with its resolution; :data:`FIGURES` names them by block.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .._plotting import plain_log_labels
from ..accumulation import PredictedThreshold
from ..prediction import compare_prediction, figure_prediction
from .rate_data import (
    ASYMPTOTE_PREDICTIONS,
    GLOBAL_CHECKED,
    POWER_L20,
    TILT_SHRINK_STUDY,
    VALUE_STUDIES,
    WORST_CASE_STUDIES,
    accumulation_curves,
    asymptote_brackets,
    attractor_large_n_rows,
    escape_series,
    hardest_stage,
    labelled_rows,
    note_large_n,
    prediction,
    prefactor,
    success_edge,
    threshold_rows,
    tilt_shrink_grid,
    value_rows,
    worst_case_rows,
)
from .sources import Data

__all__ = ["FIGURES", "RateFigure", "save"]

COLOURS = {3: "tab:blue", 4: "tab:orange", 5: "tab:green", 6: "tab:red"}


class RateFigure:
    """One figure of the page: its file name, alt text, resolution and drawing function."""

    def __init__(self, file: str, alt: str, dpi: int, draw: Callable[[Data], Figure]) -> None:
        self.file, self.alt, self.dpi, self.draw = file, alt, dpi, draw


def save(fig: Figure, path, dpi: int) -> None:
    """Write ``fig`` with every log axis labelled in plain numbers (20, 0.2, not 2×10¹,
    2×10⁻¹: the package's own rule for its figures), once the limits are final."""
    plain_log_labels(fig)
    fig.savefig(path, dpi=dpi)


def _headroom(ax, factor: float = 1.3) -> None:
    """Raise the top of a log y axis by ``factor``, so markers at the top of the data do
    not sit on the frame."""
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * factor)


def _centres(rows: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per n: median geometric bracket centre, median lo and hi over replicates (closed
    brackets only)."""
    rows = [r for r in rows if r["lo"] > 0 and math.isfinite(r["hi"])]
    ns = np.array(sorted({r["n"] for r in rows}))

    def med(key):
        return np.array([np.median([key(r) for r in rows if r["n"] == s]) for s in ns])

    return (
        ns,
        med(lambda r: math.sqrt(r["lo"] * r["hi"])),
        med(lambda r: r["lo"]),
        med(lambda r: r["hi"]),
    )


def figure_accumulation(data: Data) -> Figure:
    eps, curves = accumulation_curves(data)
    fig = Figure(figsize=(7.5, 5))
    ax = fig.subplots()
    ax.axhspan(0.97, 1.03, color="0.9", label="±3 % of g_p(0)")
    ax.axhline(1.0, color="k", lw=0.8)
    for row in curves:
        p, n = row["p"], row["n"]
        ratio = row["g"] / row["g0"]
        ax.plot(
            eps,
            ratio,
            "o-" if n == 16 else "s--",
            color=COLOURS[p],
            mfc=COLOURS[p] if n == 16 else "none",
            ms=4,
            label=f"p = {p}, n = {n} (g_p(0) = {row['g0']:.4f})",
        )
    ax.set_xscale("log")
    ticks = [0.02, 0.05, 0.1, 0.2, 0.5]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("ε = ‖E‖")
    ax.set_ylabel("g_p(ε) / g_p(0)")
    ax.set_title(
        "Coherent tilt: accumulation coefficient over its closed-form limit (global "
        "steps)\nn = 8 (open) and 16 (filled) agree to 0.2 % for ε ≤ 0.1; p = 3 parts "
        "above ε ≈ 0.15",
        fontsize=10,
    )
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def figure_value(data: Data) -> Figure:
    """Measured value-criterion crossings (p = 3–6) beside the prediction from n = 16, by
    :func:`sroa_dist.analysis.compare_prediction` (the prediction read back from its record)."""
    comparisons = []
    for p in (3, 4, 5, 6):
        if p in VALUE_STUDIES:
            ns, _, lo, hi = _centres(value_rows(data, p))
        else:
            rows = [r for r in threshold_rows(data, "tilt-p6") if r["lo"] > 0]
            ns = np.array([r["n"] for r in rows])
            lo, hi = np.array([r["lo"] for r in rows]), np.array([r["hi"] for r in rows])
        if not len(ns):
            continue  # no store holds this order's crossings: no panel
        pr = PredictedThreshold.from_record(prediction(data, p, "value c=0.5"))
        comparisons.append(compare_prediction(ns, lo, hi, prediction=pr))
    titles = []
    for cmp in comparisons:
        p = cmp.prediction.p
        past = int(cmp.past_onset.sum())
        worst = f"worst {100 * cmp.worst_past_onset:.1f} %" if past else "all before the onset"
        titles.append(f"p = {p}: |λ̂_j − λ_j| ≤ 0.5·ε\n{past} sizes past the onset, {worst}")
    return figure_prediction(
        comparisons,
        titles=titles,
        suptitle=(
            "Coherent tilt, value criterion: measured first crossings against the accumulation "
            "model fed by n = 16 only (grey band ±2 %)"
        ),
    )


def _normalised_errorbar(ax, p: int, scale: float, ns, centre, lo, hi, **style) -> None:
    """Brackets (lo, hi] around ``centre`` at sizes ``ns``, drawn as ε*·(n−1)^{1/(p−1)} over
    the asymptote's prefactor ``scale``."""
    f = (ns - 1.0) ** (1 / (p - 1)) / scale
    ax.errorbar(ns - 1, centre * f, yerr=[(centre - lo) * f, (hi - centre) * f], capsize=3, **style)


def _asymptote_prediction(data: Data, p: int) -> dict[int, float]:
    """n -> the value-criterion first crossing predicted for the asymptote runs of order ``p``,
    as committed before them (empty where none was)."""
    doc = data.json(ASYMPTOTE_PREDICTIONS)
    for e in doc["predictions"]:
        if e["p"] == p and e["criterion"] == "value c=0.5":
            return {r["n"]: r["eps_star"] for r in e["rows"]}
    return {}


def figure_normalised(data: Data) -> Figure:
    fig = Figure(figsize=(18, 5.2))
    axes = fig.subplots(1, 4, squeeze=False)
    legend: dict[str, object] = {}
    for k, p in enumerate([3, 4, 5, 6]):
        ax = axes[0, k]
        pr = prediction(data, p, "value c=0.5")
        n_pred = np.array(pr["n"], dtype=float)
        scale = prefactor(data, p, 0.5)
        ax.axhline(1.0, color="k", ls="--", lw=1, label="asymptote: 1")
        ax.plot(
            n_pred - 1,
            np.array(pr["eps_star"]) * (n_pred - 1) ** (1 / (p - 1)) / scale,
            "-",
            color=COLOURS[p],
            label="predicted from n = 16",
        )
        if p in VALUE_STUDIES:
            ns, centre, lo, hi = _centres(value_rows(data, p))
            _normalised_errorbar(
                ax, p, scale, ns, centre, lo, hi,
                fmt="o", color="k", ms=4, label="measured (rate study)",
            )  # fmt: skip
        committed = _asymptote_prediction(data, p)
        if committed:
            n_c = np.array(sorted(committed), dtype=float)
            ax.plot(
                n_c - 1,
                [committed[int(k)] * (k - 1) ** (1 / (p - 1)) / scale for k in n_c],
                "x",
                color=COLOURS[p],
                ms=7,
                label="prediction committed before the asymptote runs",
            )
        brackets = asymptote_brackets(data, p, "value c=0.5")
        if brackets:
            ns = np.array(sorted(brackets), dtype=float)
            lo = np.array([brackets[int(k)][0] for k in ns])
            hi = np.array([brackets[int(k)][1] for k in ns])
            _normalised_errorbar(
                ax, p, scale, ns, np.sqrt(lo * hi), lo, hi,
                fmt="s", mfc="white", color="tab:purple", ms=5,
                label="measured, asymptote runs (every step global-checked)",
            )  # fmt: skip
        ax.axvline(pr["onset_n"] - 1, color="0.5", ls=":", label="onset (model)")
        ax.set_xscale("log")
        ax.set_xlabel("n − 1")
        ax.set_ylabel("ε*·(n−1)^(1/(p−1)) / prefactor")
        ax.set_title(f"p = {p}: prefactor {scale:.3f}, onset n = {pr['onset_n']}")
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(lab, h)
    fig.suptitle(
        "Value criterion c = 0.5: the threshold over the theorem's rate, relative to "
        "the limit (c/g_p(0))^(1/(p−1)); below the onset it rises as (n−1)^(1/(p−1))"
    )
    fig.legend(list(legend.values()), list(legend.keys()), loc="lower center", ncol=6, fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def figure_theorem(data: Data) -> Figure:
    panels = [
        (3, 0.5, "theorem c=0.5 r=0.3"),
        (3, 2.0, "value c=2"),
        (4, 0.5, "theorem c=0.5 r=0.3"),
        (4, 2.0, "value c=2"),
    ]
    fig = Figure(figsize=(18, 5.6))
    axes = fig.subplots(1, 4, squeeze=False)
    for ax, (p, c, label) in zip(axes[0], panels, strict=False):
        rel = f"theorem-p{p}-c{c:g}"
        pr = prediction(data, p, label)
        n_pred = np.array(pr["n"], dtype=float)
        e_pred = np.array(pr["eps_star"], dtype=float)
        ok = np.isfinite(e_pred)
        caveat = "" if c < 1 else " (assumes the target is still found)"
        ax.plot(
            n_pred[ok] - 1,
            e_pred[ok],
            "-",
            color=COLOURS[p],
            label=f"predicted from n = 16{caveat}",
        )
        ax.plot(
            n_pred - 1,
            prefactor(data, p, c) * (n_pred - 1) ** (-1 / (p - 1)),
            "k--",
            lw=1,
            label=f"asymptote {prefactor(data, p, c):.3f}·(n−1)^(−1/{p - 1})",
        )
        rows = threshold_rows(data, rel)
        closed = [r for r in rows if math.isfinite(r["hi"])]
        open_ = [r for r in rows if not math.isfinite(r["hi"])]
        if closed:
            ns, centre, lo, hi = _centres(closed)
            ax.errorbar(
                ns - 1,
                centre,
                yerr=[centre - lo, hi - centre],
                fmt="o",
                color="k",
                ms=4,
                capsize=3,
                label="measured (global steps)",
            )
        if open_:
            ax.plot(
                [r["n"] - 1 for r in open_],
                [r["lo"] for r in open_],
                "k^",
                ms=7,
                mfc="none",
                label="no crossing: passes up to ε = 1.5",
            )
        if c == 2.0:  # the asymptote runs of the theorem criterion, past n = 256
            _theorem_asymptote_runs(ax, data, p)
        radius = "radius 0.3" if "r=0.3" in label else "radius 20ε/λ_j"
        ax.set_title(f"p = {p}: |λ̂−λ| ≤ {c:g}ε and ‖v̂−v‖ ≤ {radius}", fontsize=9)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n − 1")
        ax.set_ylabel("ε*")
        # Below the panel: inside, it covered the predicted line and the asymptote.
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    fig.suptitle(
        "Theorem criterion (value and vector bound together), coherent tilt, every "
        "step global: measured first crossings, prediction and asymptote"
    )
    fig.tight_layout()
    return fig


def _theorem_asymptote_runs(ax: Axes, data: Data, p: int) -> None:
    """The theorem criterion's (c = 2) asymptote runs of order ``p`` on a panel of ε*: the
    predictions committed before them (the n = 16 model's, and the one corrected for g_p's
    decay in n where there is one) and the measured brackets."""
    label = "theorem c=2"
    doc = data.json(ASYMPTOTE_PREDICTIONS)
    rows = next(
        (e["rows"] for e in doc["predictions"] if e["p"] == p and e["criterion"] == label), []
    )
    if rows:
        n_c = np.array([r["n"] for r in rows], dtype=float)
        ax.plot(n_c - 1, [r["eps_star"] for r in rows], "x", color=COLOURS[p], ms=7,
                label="committed before the asymptote runs: n = 16 model")  # fmt: skip
        corr = [(r["n"], r["eps_star_corrected"]) for r in rows if "eps_star_corrected" in r]
        if corr:
            ax.plot([n - 1 for n, _ in corr], [e for _, e in corr], "+", color="tab:red", ms=9,
                    label="committed before them: corrected for g_p(n)")  # fmt: skip
    brackets = asymptote_brackets(data, p, label)
    if brackets:
        ns = np.array(sorted(brackets), dtype=float)
        lo = np.array([brackets[int(k)][0] for k in ns])
        hi = np.array([brackets[int(k)][1] for k in ns])
        centre = np.sqrt(lo * hi)
        ax.errorbar(ns - 1, centre, yerr=[centre - lo, hi - centre], fmt="s", mfc="white",
                    color="tab:purple", ms=5, capsize=3,
                    label="measured, asymptote runs (every step global-checked)")  # fmt: skip


def _large_n_brackets(data: Data) -> dict[str, list[dict]]:
    """Per solver of the attractor pair past n = 256, its measured brackets, one per size
    (the bases' stores give the same bracket: the first measured one is drawn)."""
    out: dict[str, list[dict]] = {"global (sshopm checked)": [], "power AGHKT": []}
    for r in attractor_large_n_rows(data):
        drawn = out[r["solver"]]
        if r["status"] == "measured" and all(d["n"] != r["n"] for d in drawn):
            note_large_n(data, r)
            drawn.append(r)
    return out


def figure_power_vs_global(data: Data) -> Figure:
    table = escape_series(data)
    sizes = sorted({n for (n, _, _) in table})
    cmap = matplotlib.colormaps["viridis"]
    fig = Figure(figsize=(17, 4.8))
    axes = fig.subplots(1, 3)
    for i, n in enumerate(sizes):
        colour = cmap(i / max(1, len(sizes) - 1))
        for ax, budget in [(axes[0], "fixed"), (axes[1], "aghkt")]:
            e, q = hardest_stage(table, n, budget)
            if e.size:
                ax.plot(e, q, "o-", ms=3, color=colour, label=f"n = {n}")
    for ax, title in [(axes[0], "N = 30 iterations"), (axes[1], "AGHKT N(n, ε) iterations")]:
        ax.set_xscale("log")
        ax.set_xlabel("ε = ‖E‖")
        ax.set_ylabel("q: one random start ends within 0.3 of a remaining component")
        ax.set_title(
            f"Power method, {title}: q of the hardest SROA step\n"
            "(the least q over the steps with r = n, n/8, 4, 1 components left)",
            fontsize=9,
        )
        ax.legend(fontsize=7)
    ns = np.array(sizes, dtype=float)
    fixed = np.array([success_edge(table, n, "fixed") for n in sizes])
    grow = np.array([success_edge(table, n, "aghkt") for n in sizes])
    ax = axes[2]
    ax.plot(ns, fixed, "o-", color="tab:blue", ms=9, mfc="none", label="power, L = 20, N = 30")
    ax.plot(ns, grow, "s-", color="tab:orange", ms=4, label="power, AGHKT L(n), N(n, ε)")
    drops = np.flatnonzero(np.isfinite(fixed) & (fixed < fixed[0]))
    if drops.size:  # reference rates through the fixed budget's first point off its plateau
        n0, e0 = ns[drops[0]], fixed[drops[0]]
        near = ns[ns >= n0 / 2]  # drawn over the sizes around the data they pass through
        ax.plot(near, e0 * n0 / near, "k:", lw=1, label=f"∝ 1/n through n = {n0:.0f}")
        root = np.sqrt(np.log(near) / near) / math.sqrt(math.log(n0) / n0)
        ax.plot(near, e0 * root, "k--", lw=1, label=f"∝ √(ln n / n) through n = {n0:.0f}")
    rows = labelled_rows(data, "attractor-thresholds", (GLOBAL_CHECKED, POWER_L20))
    large = _large_n_brackets(data)
    series = [
        ([r for r in rows if r["solver"] == GLOBAL_CHECKED] + large["global (sshopm checked)"],
         1.0, "global steps", {"fmt": "D", "color": "k", "ms": 5}),
        ([r for r in rows if r["solver"] == POWER_L20],
         1.06, "power L = 20", {"fmt": "d", "color": "tab:blue", "mfc": "none", "ms": 6}),
        (large["power AGHKT"],
         1.06, "power AGHKT", {"fmt": "s", "color": "tab:orange", "mfc": "none", "ms": 6}),
    ]  # fmt: skip
    for found, shift, solver, style in series:
        if found:
            xs, centre, lo, hi = _centres(found)
            ax.errorbar(
                xs * shift,
                centre,
                yerr=[centre - lo, hi - centre],
                capsize=3,
                label=f"whole SROA, {solver}: first crossing",
                **style,
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_xticks(ns, [f"{n:.0f}" for n in ns])
    ticks = [0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_ylabel("ε")
    ax.set_title(
        "Smallest ε where one step's success with the budget's starts is < 1/2,\n"
        "beside whole SROAs' first crossings (theorem c = 0.5, radius 0.3)",
        fontsize=9,
    )
    ax.legend(fontsize=7)
    fig.suptitle(
        "Attractor family E x³ = ε‖x‖²(u·x), u = Σ v_i/√n: random starts against "
        "global steps (1,000 single starts per point; n = 1024: ε ≥ 0.25 only)"
    )
    fig.tight_layout()
    return fig


def figure_lambda_min(data: Data) -> Figure:
    rows = labelled_rows(data, "lambda-min")
    fig = Figure(figsize=(12, 4.6))
    axes = fig.subplots(1, 2)
    for label, marker in [
        ("default (target 0.95)", "o"),
        ("target 0.5", "s"),
        ("linear [0.5, 1]", "^"),
    ]:
        sel = [r for r in rows if r["weights"] == label]
        if not sel:
            continue
        ns, centre, lo, hi = _centres(sel)
        lam_min = sel[0]["lambda_min"]
        axes[0].errorbar(
            ns - 1,
            centre,
            yerr=[centre - lo, hi - centre],
            fmt=marker + "-",
            ms=4,
            capsize=3,
            label=f"{label}, λ_min = {lam_min:g}",
        )
        axes[1].plot(ns - 1, centre / lam_min, marker + "-", label=label)
    for ax, ylabel in [(axes[0], "ε*"), (axes[1], "ε* / λ_min")]:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n − 1")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    axes[0].set_title("p = 3 coherent tilt, theorem criterion c = 0.5, radius 0.3", fontsize=9)
    axes[1].set_title(
        "Divided by λ_min: the theorem's scaling would put them on one curve", fontsize=9
    )
    fig.tight_layout()
    return fig


def _worst_case_panel(data: Data, ax, p: int) -> None:
    """One order: the worst case's first grid ε past 2ε beside the coherent tilt's first
    crossing of 2ε, with the tilt's asymptote."""
    marker, colour, what = "v", "tab:red", "SS-HOPM steps, global-checked"
    level = None
    sizes: list[float] = []
    for name, order, _steps in WORST_CASE_STUDIES:
        if order != p:
            continue
        rows = worst_case_rows(data, name)
        crossed = {n: v for n, v in rows.items() if math.isfinite(v[1])}
        never = {n: v for n, v in rows.items() if not math.isfinite(v[1])}
        sizes += list(rows)
        if crossed:
            ns = np.array(sorted(crossed), dtype=float)
            lo = np.array([crossed[n][0] for n in sorted(crossed)])
            hi = np.array([crossed[n][1] for n in sorted(crossed)])
            ax.errorbar(
                ns - 1,
                hi,
                yerr=[hi - lo, np.zeros_like(hi)],
                fmt=marker,
                color=colour,
                capsize=3,
                label=f"worst case found ({what}): first grid ε past 2ε",
            )
            level = float(np.median(hi * (ns - 1) ** (1 / (p - 1))))
        for n, (lo_n, _, _) in never.items():
            ax.plot(n - 1, lo_n, "^", color=colour, mfc="none", ms=8)
        if never:
            ax.plot(
                [], [], "^", color=colour, mfc="none", label=f"worst case ({what}): none up to here"
            )
    if p == 3:
        _tilt_shrink_points(data, ax, sizes)
    rows = threshold_rows(data, f"theorem-p{p}-c2")
    closed = [r for r in rows if math.isfinite(r["hi"])]
    open_ = [r for r in rows if not math.isfinite(r["hi"])]
    sizes += [r["n"] for r in rows]
    for r in open_:
        ax.plot(r["n"] - 1, 1.5, "^", color="tab:blue", mfc="none", ms=8)
    if open_:
        ax.plot([], [], "^", color="tab:blue", mfc="none", label="coherent tilt: none up to 1.5")
    if closed:
        tn, tc, tlo, thi = _centres(closed)
        ax.errorbar(
            tn - 1,
            tc,
            yerr=[tc - tlo, thi - tc],
            fmt="o",
            color="tab:blue",
            capsize=3,
            label="coherent tilt: first crossing of 2ε",
        )
    grid = np.geomspace(min(sizes) - 1, max(sizes) * 1.05, 50)
    k = 1 / (p - 1)
    if level is not None and p == 3:  # p = 4's sizes sit on the plateau: no rate to draw
        ax.plot(
            grid,
            level * grid**-k,
            ":",
            color="tab:red",
            lw=1,
            label=f"{level:.2f}·(n−1)^(−1/{p - 1}): median of the worst case's ε·(n−1)^(1/{p - 1})",
        )
    pre = prefactor(data, p, 2.0)
    label = f"tilt's asymptote {pre:.3f}·(n−1)^(−1/{p - 1})"
    ax.plot(grid, pre * grid**-k, "k--", lw=1, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n − 1")
    ax.set_ylabel("ε")
    ax.set_title(f"p = {p}", fontsize=10)
    _headroom(ax)  # the first grid ε past 2ε sits near the top: keep it off the frame
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), frameon=False)


def _tilt_shrink_points(data: Data, ax, sizes: list[float]) -> None:
    """The tilt-shrink family (θ = 0.7, exact norm): the first run's first grid ε past 2‖E‖
    per size with the last grid ε below it, and the search's first crossing where its store
    is beside the page."""
    grid = tilt_shrink_grid(data)
    if grid:
        ns = np.array(sorted(grid), dtype=float)
        root = np.sqrt(ns - 1)
        lo = np.array([grid[n][0] for n in sorted(grid)]) / root
        hi = np.array([grid[n][1] for n in sorted(grid)]) / root
        sizes += list(ns)
        ax.errorbar(
            ns - 1,
            hi,
            yerr=[hi - lo, np.zeros_like(hi)],
            fmt="s",
            color="tab:green",
            mfc="none",
            capsize=3,
            label="tilt-shrink (θ = 0.7, exact norm): first grid ε past 2‖E‖",
        )
    rows = data.threshold_store(TILT_SHRINK_STUDY) or []
    if rows:
        data.note_store(TILT_SHRINK_STUDY, rows, f"n = {', '.join(str(r['n']) for r in rows)}")
        tn, tc, tlo, thi = _centres(rows)
        sizes += list(tn)
        ax.errorbar(
            (tn - 1) * 1.04,
            tc,
            yerr=[tc - tlo, thi - tc],
            fmt="s",
            color="tab:green",
            ms=4,
            capsize=3,
            label="tilt-shrink (θ = 0.7): first crossing of 2‖E‖ (search)",
        )


def figure_worst_case(data: Data) -> Figure:
    fig = Figure(figsize=(13, 7.5))
    axes = fig.subplots(1, 2)
    for ax, p in zip(axes, (3, 4), strict=True):
        _worst_case_panel(data, ax, p)
    fig.suptitle(
        "Where Theorem 3.1's value bound |λ̂ − λ| ≤ 2‖E‖ first breaks, every norm certified or "
        "exact: the gradient search (n = 12 rerun), the tilt-shrink family and the coherent tilt",
        fontsize=11,
    )
    fig.tight_layout()
    return fig


#: Block name -> figure, in the order of docs/results/thresholds.md.
FIGURES: dict[str, RateFigure] = {
    "figure-accumulation": RateFigure(
        "rate_accumulation.png", "g_p over its limit", 120, figure_accumulation
    ),
    "figure-value": RateFigure("rate_value.png", "value thresholds", 110, figure_value),
    "figure-normalised": RateFigure(
        "rate_normalised.png", "normalised thresholds", 110, figure_normalised
    ),
    "figure-theorem": RateFigure("rate_theorem.png", "theorem thresholds", 110, figure_theorem),
    "figure-lambda-min": RateFigure("rate_lambda_min.png", "lambda_min", 110, figure_lambda_min),
    "figure-worst-case": RateFigure("rate_worst_case.png", "worst case", 120, figure_worst_case),
    "figure-power-vs-global": RateFigure(
        "rate_power_vs_global.png", "power against global", 110, figure_power_vs_global
    ),
}
