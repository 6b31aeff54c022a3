"""The tables of the rate study (docs/results/thresholds.md), as Markdown, from the published
data: the accumulation coefficients, the value and theorem criteria against the model fed by
n = 16, local slopes, the onset, p = 6, λ_min, the worst case, and the attractor studies.

Each table is a function of a :class:`~.sources.Data` reader, which records the files and
stores it read. The numbers come from :mod:`.rate_data` (a study's store where it has the
row, the study's JSON for the rest); this module only sets them as Markdown.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.stats import binomtest

from sroa_dist.methods import aghkt_budget

from .rate_data import (
    ASYMPTOTE_PREDICTIONS,
    GLOBAL_CHECKED,
    TILT_SHRINK_STUDY,
    VALUE_STUDIES,
    WORST_CASE_STUDIES,
    accumulation_curves,
    asymptote_brackets,
    asymptote_open,
    attractor_large_n_rows,
    confirm_points,
    escape_series,
    family_rows,
    hardest_stage,
    labelled_rows,
    note_large_n,
    per_size,
    predicted_at,
    prediction,
    prefactor,
    size_list,
    success_edge,
    threshold_rows,
    tilt_shrink_grid,
    value_rows,
    worst_case_rows,
)
from .sources import Data

__all__ = [
    "TABLES",
]


def _table(head: list[str], rows: list[str]) -> str:
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *rows]) + "\n"


def accumulation_table(data: Data) -> str:
    eps, curves = accumulation_curves(data)
    rows = {(r["p"], r["n"]): r for r in curves}
    out = []
    for p in (3, 4, 5, 6):
        a, b = np.array(rows[(p, 8)]["g"]), np.array(rows[(p, 16)]["g"])
        g0 = rows[(p, 16)]["g0"]
        rel = np.abs(a / b - 1)

        def at(e: float, b: np.ndarray = b) -> float:
            return float(np.exp(np.interp(np.log(e), np.log(eps), np.log(b))))

        out.append(
            f"| {p} | {g0:.4f} | {a[0]:.4f} | {b[0]:.4f} | {100 * (b[0] / g0 - 1):+.1f} % | "
            f"{100 * rel[eps <= 0.1].max():.2f} % | {100 * rel.max():.1f} % | "
            f"{at(0.1) / g0:.3f} | {at(0.5) / g0:.3f} |"
        )
    head = [
        "p", "g_p(0) = (p c_p)^-p", "g_p(0.02), n = 8", "n = 16", "g_p(0.02)/g_p(0) − 1",
        "n = 8 vs 16, ε ≤ 0.1", "n = 8 vs 16, ε ≤ 0.6", "g_p(0.1)/g_p(0)", "g_p(0.5)/g_p(0)",
    ]  # fmt: skip
    return _table(head, out)


def value_table(data: Data) -> str:
    out = []
    for p in VALUE_STUDIES:
        pr = prediction(data, p, "value c=0.5")
        asym = prefactor(data, p, 0.5)
        for n, (lo, hi) in per_size(value_rows(data, p)).items():
            mid = math.sqrt(lo * hi)
            pred = predicted_at(pr, n)
            slope = pr["local_slope"][pr["n"].index(n)] if n in pr["n"] else float("nan")
            out.append(
                f"| {p} | {n} | ({lo:.4f}, {hi:.4f}] | {pred:.4f} | "
                f"{100 * (mid / pred - 1):+.1f} % | "
                f"{mid * (n - 1) ** (1 / (p - 1)):.3f} | {asym:.3f} | {slope:+.3f} |"
            )
    head = [
        "p", "n", "measured bracket (lo, hi]", "predicted from n = 16", "measured/predicted − 1",
        "normalised ε*·(n−1)^{1/(p−1)}", "asymptote (c/g_p(0))^{1/(p−1)}", "model local slope",
    ]  # fmt: skip
    return _table(head, out)


def slopes_table(data: Data) -> str:
    """Local slopes between consecutive measured sizes, with the range the brackets allow."""
    out = []
    for p in VALUE_STUDIES:
        pr = prediction(data, p, "value c=0.5")
        sizes = per_size(value_rows(data, p))
        ns = list(sizes)
        for a, b in zip(ns, ns[1:], strict=False):
            (lo1, hi1), (lo2, hi2) = sizes[a], sizes[b]
            dx = math.log((b - 1) / (a - 1))
            s = math.log(math.sqrt(lo2 * hi2) / math.sqrt(lo1 * hi1)) / dx
            smin, smax = math.log(lo2 / hi1) / dx, math.log(hi2 / lo1) / dx
            model = pr["local_slope"][pr["n"].index(b)] if b in pr["n"] else float("nan")
            if b >= pr["onset_n"]:
                out.append(
                    f"| {p} | {a}→{b} | {s:+.3f} | [{smin:+.3f}, {smax:+.3f}] | {model:+.3f} | "
                    f"{-1 / (p - 1):+.3f} |"
                )
    head = [
        "p", "sizes", "local slope of the bracket centres", "range the brackets allow",
        "model slope at the larger size", "limit −1/(p−1)",
    ]  # fmt: skip
    return _table(head, out)


def onset_table(data: Data) -> str:
    eps, curves = accumulation_curves(data)
    out = []
    for p in (3, 4, 5, 6):
        pr = prediction(data, p, "value c=0.5")
        row = next(r for r in curves if r["p"] == p and r["n"] == 16)
        e = pr["plateau"]
        g = float(np.exp(np.interp(np.log(e), np.log(eps), np.log(row["g"]))))
        out.append(
            f"| {p} | {e:.4f} | {g:.4f} | {1 + 0.5 / (g * e ** (p - 1)):.0f} | {pr['onset_n']} | "
            f"{1 + 0.5 / (row['g0'] * e ** (p - 1)):.0f} |"
        )
    head = [
        "p", "plateau ε_pl (n = 16 model)", "g_p(ε_pl)", "1 + c/(g_p(ε_pl)·ε_pl^{p−1})",
        "predicted onset (model)", "1 + c/(g_p(0)·ε_pl^{p−1})",
    ]  # fmt: skip
    return _table(head, out)


def tilt_shrink_table(data: Data) -> str:
    """The tilt-shrink's first crossing of 2‖E‖ by the threshold kind's search (bisection to
    rtol, global steps, a random basis per search) beside the first run's grid crossing."""
    grid = tilt_shrink_grid(data)
    store = data.threshold_store(TILT_SHRINK_STUDY)
    found = {r["n"]: r for r in store or []}
    if found:
        data.note_store(TILT_SHRINK_STUDY, list(found.values()), f"n = {size_list(found)}")
    out = []
    for n in sorted(set(grid) | set(found)):
        g = grid.get(n)
        was = f"({g[0]:.5f}, {g[1]:.5f}]" if g else "—"
        r = found.get(n)
        if r is None:
            why = "not run yet" if store is None else "unfinished"
            out.append(f"| {n} | {was} | {why} | — | — | — |")
            continue
        root = math.sqrt(n - 1)
        inside = g is not None and g[0] < r["hi"] * root and r["lo"] * root <= g[1]
        out.append(
            f"| {n} | {was} | ({r['lo']:.5f}, {r['hi']:.5f}] | "
            f"({r['lo'] * root:.4f}, {r['hi'] * root:.4f}] | {r['n_evals']} | "
            f"{'yes' if inside else 'no'} |"
        )
    head = [
        "n", "first run: x = ε·(n − 1)^{1/2}, last grid point within 2‖E‖, first past it",
        "search: first crossing ε (lo, hi]", "as x", "evaluations",
        "overlaps the grid's bracket",
    ]  # fmt: skip
    return _table(head, out)


def p6_table(data: Data) -> str:
    pr = prediction(data, 6, "value c=0.5")
    out = []
    for r in threshold_rows(data, "tilt-p6"):
        mid, pred = math.sqrt(r["lo"] * r["hi"]), predicted_at(pr, r["n"])
        out.append(
            f"| {r['n']} | ({r['lo']:.4f}, {r['hi']:.4f}] | {pred:.4f} | "
            f"{100 * (mid / pred - 1):+.1f} % |"
        )
    head = ["n", "measured bracket (lo, hi]", "predicted from n = 16", "measured/predicted − 1"]
    return _table(head, out)


#: The theorem-criterion studies: (published name, p, c, radius or None).
THEOREM_STUDIES = [
    ("theorem-p3-c0.5", 3, 0.5, 0.3),
    ("theorem-p3-c2", 3, 2.0, None),
    ("theorem-p4-c0.5", 4, 0.5, 0.3),
    ("theorem-p4-c2", 4, 2.0, None),
]


def theorem_table(data: Data) -> str:
    out = []
    for name, p, c, radius in THEOREM_STUDIES:
        label = f"theorem c={c:g} r={radius:g}" if radius else f"value c={c:g}"
        pr = prediction(data, p, label)
        crit = f"c = {c:g}, " + (f"radius {radius:g}" if radius else "radius 20ε/λ_j")
        for r in threshold_rows(data, name):
            n = r["n"]
            asym = prefactor(data, p, c) * (n - 1) ** (-1 / (p - 1))
            pred = predicted_at(pr, n)
            if math.isfinite(r["hi"]):
                mid = math.sqrt(r["lo"] * r["hi"])
                cmp = f"{100 * (mid / pred - 1):+.1f} %" if math.isfinite(pred) else "—"
                meas = f"({r['lo']:.4f}, {r['hi']:.4f}]"
            else:
                cmp, meas = ("agrees (none)" if not math.isfinite(pred) else "—"), "none up to 1.5"
            pred_s = f"{pred:.4f}" if math.isfinite(pred) else "none in range"
            out.append(
                f"| {p} | {crit} | {n} | {meas} | {pred_s} | {cmp} | {asym:.4f} | "
                f"{r['redone']} of {r['evals']} |"
            )
    head = [
        "p", "criterion", "n", "measured (lo, hi]", "predicted from n = 16",
        "measured/predicted − 1", "asymptote", "evaluations with a redone step",
    ]  # fmt: skip
    return _table(head, out)


def worst_case_table(data: Data) -> str:
    out = []
    for name, p, steps in WORST_CASE_STUDIES:
        for n, (lo, hi, row) in worst_case_rows(data, name).items():
            if math.isfinite(hi):
                out.append(
                    f"| {p} | {steps} | {n} | ({lo:.4f}, {hi:.4f}] | {row['ratio']:.3f} | "
                    f"{row['tilt']:.3f} | {hi * (n - 1) ** (1 / (p - 1)):.3f} |"
                )
            else:
                out.append(
                    f"| {p} | {steps} | {n} | none up to {lo:.3f} | {row['ratio']:.3f} (at "
                    f"{lo:.3f}) | {row['tilt']:.3f} | — |"
                )
    head = [
        "p", "steps", "n",
        "first grid ε with a found max_j \\|λ̂_j − λ_j\\| / upper(‖E‖) > 2 (bracket)",
        "found value / upper(‖E‖) there (re-evaluated)", "the tilt's value there",
        "ε·(n−1)^{1/(p−1)} at the crossing",
    ]  # fmt: skip
    return _table(head, out)


def wilson(k: int, m: int) -> tuple[float, float]:
    """The 95 % Wilson interval of ``k`` successes in ``m`` trials (scipy's)."""
    ci = binomtest(int(k), int(m)).proportion_ci(0.95, method="wilson")
    return float(ci.low), float(ci.high)


def confirm_table(data: Data) -> str:
    """The first step of whole SROAs against 1 − (1 − q)^L (later steps: at these ε every
    run has lost a component before them)."""
    glob = {r["n"]: r for r in labelled_rows(data, "attractor-thresholds", (GLOBAL_CHECKED,))}
    out = []
    for row in confirm_points(data):
        q, L = row["q"], row["L"]
        a, b = wilson(row["passed"], row["reached"])
        g = glob.get(row["n"])
        cross = f"({g['lo']:.4f}, {g['hi']:.4f}]" if g else "—"
        out.append(
            f"| {row['n']} | {row['eps']:.3f} | {L} | {q:.3f} | {1 - (1 - q) ** L:.3f} | "
            f"{row['passed']} of {row['reached']}: {row['passed'] / row['reached']:.3f} "
            f"({a:.3f}, {b:.3f}) | {row['whole']} of {row['runs']} | {cross} |"
        )
    head = [
        "n", "ε", "L", "q of the first step (1000 single starts)", "1 − (1 − q)^L",
        "first step found a component, whole SROAs (95 % interval)",
        "whole SROAs that found every component", "global steps' first crossing at this n",
    ]  # fmt: skip
    return _table(head, out)


#: The weight sets of the λ_min study, in the table's order.
WEIGHTS = ("default (target 0.95)", "target 0.5", "linear [0.5, 1]")


def lambda_table(data: Data) -> str:
    rows = labelled_rows(data, "lambda-min")
    out = []
    for n in sorted({r["n"] for r in rows}):
        got = {r["weights"]: r for r in rows if r["n"] == n}
        cells = []
        for w in WEIGHTS:
            r = got.get(w)
            cells.append(f"({r['lo']:.4f}, {r['hi']:.4f}]" if r else "—")
        ratio = "—"
        if WEIGHTS[2] in got and WEIGHTS[0] in got:
            a, b = got[WEIGHTS[2]], got[WEIGHTS[0]]
            ratio = f"{math.sqrt(a['lo'] * a['hi'] / (b['lo'] * b['hi'])):.3f}"
        out.append(f"| {n} | " + " | ".join(cells) + f" | {ratio} |")
    return _table(["n", *WEIGHTS, "linear / default"], out)


def power_table(data: Data) -> str:
    rows = labelled_rows(data, "attractor-thresholds")
    solvers = list(dict.fromkeys(r["solver"] for r in rows))
    sizes = sorted({r["n"] for r in rows})
    out = []
    for s in solvers:
        cells = []
        for n in sizes:
            r = next((r for r in rows if r["solver"] == s and r["n"] == n), None)
            cells.append("—" if r is None else f"({r['lo']:.4f}, {r['hi']:.4f}]")
        out.append(f"| {s} | " + " | ".join(cells) + " |")
    return _table(["solver", *(f"n = {n}" for n in sizes)], out)


def attractor_large_n_table(data: Data) -> str:
    """Per size, solver and basis: the scan range the store's spec searched, the evaluations,
    the bracket and the evaluations with a redone step ("not measured" where no store exists,
    "unfinished" where its search has not ended)."""
    out = []
    for r in attractor_large_n_rows(data):
        n, solver = r["n"], r["solver"]
        if r["status"] == "not measured":
            out.append(f"| {n} | {solver} | — | — | — | not measured | — |")
            continue
        (a, b), basis = r["scan"], r["basis"]
        if r["status"] == "unfinished":
            out.append(f"| {n} | {solver} | {basis} | [{a:g}, {b:g}] | — | unfinished | — |")
            continue
        note_large_n(data, r)
        out.append(
            f"| {n} | {solver} | {basis} | [{a:g}, {b:g}] | {r['n_evals']} | "
            f"({r['lo']:.5f}, {r['hi']:.5f}] | {r['redone']} |"
        )
    head = ["n", "solver", "basis", "scan range", "evaluations", "first crossing (lo, hi]",
            "evaluations with a redone step"]  # fmt: skip
    return _table(head, out)


def escape_table(data: Data) -> str:
    table = escape_series(data)
    out = []
    for n in sorted({n for (n, _, _) in table}):
        cells = []
        for budget in ("fixed", "aghkt"):
            e, q = hardest_stage(table, n, budget)
            cells.append(" / ".join(f"{q[np.argmin(np.abs(e - x))]:.3f}" for x in (0.5, 0.69)))
        out.append(
            f"| {n} | {aghkt_budget(n, 0.5)} | {cells[0]} | {cells[1]} | "
            f"{success_edge(table, n, 'fixed'):.3f} | {success_edge(table, n, 'aghkt'):.3f} |"
        )
    head = [
        "n", "AGHKT budget at ε = 0.5 (L, N)", "least q over steps, N = 30, ε ≈ 0.5 / 0.69",
        "least q, AGHKT N, ε ≈ 0.5 / 0.69", "first ε with a step success < 1/2, L = 20",
        "AGHKT L",
    ]  # fmt: skip
    return _table(head, out)


def _doubling(brackets: dict[int, tuple[float, float]], n: int, p: int) -> str:
    """The measured slope of log ε* against log(n − 1) over the doubling ending at ``n``: the
    bracket centres' slope and the range the two brackets allow."""
    half = n // 2
    if n not in brackets or half not in brackets:
        return "—"
    (a_lo, a_hi), (b_lo, b_hi) = brackets[half], brackets[n]
    run = math.log((n - 1) / (half - 1))
    mid = math.log(math.sqrt(b_lo * b_hi) / math.sqrt(a_lo * a_hi)) / run
    lo, hi = math.log(b_lo / a_hi) / run, math.log(b_hi / a_lo) / run
    return f"{mid:+.3f} [{lo:+.3f}, {hi:+.3f}] (−1/(p−1) = {-1 / (p - 1):+.3f})"


def asymptote_table(data: Data) -> str:
    """The asymptote runs' predictions (committed before the runs) and, where a store exists,
    the measured bracket beside them; "not yet measured" where none does."""
    doc = data.json(ASYMPTOTE_PREDICTIONS)
    out = []
    for e in doc["predictions"]:
        p, label = e["p"], e["criterion"]
        brackets = asymptote_brackets(data, p, label)
        open_ = asymptote_open(data, p, label)
        for r in e["rows"]:
            n = r["n"]
            if p == 6 and label == "value c=0.5" and n < 2048:
                continue  # below the onset: the plateau, measured to n = 128 (tilt-p6)
            if p == 6 and label != "value c=0.5":
                continue  # only the value criterion's onset is a target
            pred = r["eps_star"]
            corr = r.get("eps_star_corrected")
            corr_s = f"{corr:.4f} ({r['corrected_is']})" if corr is not None else (
                "not corrected" if label.startswith("theorem") else "—"
            )  # fmt: skip
            if n in brackets:
                lo, hi = brackets[n]
                mid = math.sqrt(lo * hi)
                meas = f"({lo:.4f}, {hi:.4f}]"
                cmp = f"{100 * (mid / pred - 1):+.1f} %"
                if corr is not None:
                    cmp += f" ({100 * (mid / corr - 1):+.1f} % corrected)"
                norm = f"{mid * (n - 1) ** (1 / (p - 1)):.3f}"
            elif n in open_:  # passed over the whole scan: ε* lies above its end
                end = open_[n]
                meas = f"none: passes up to {end:.2f} (the scan's end)"
                cmp = f"> {100 * (end / pred - 1):+.0f} %"
                norm = f"> {end * (n - 1) ** (1 / (p - 1)):.3f}"
            else:
                meas, cmp, norm = "not yet measured", "—", "—"
            out.append(
                f"| {p} | {label} | {n} | {pred:.4f} | {corr_s} | "
                f"{r['normalised']:.3f} | {r['local_slope']:+.3f} | "
                f"{e['asymptote_prefactor']:.3f} | {meas} | {cmp} | {norm} | "
                f"{_doubling(brackets, n, p)} |"
            )
    head = [
        "p", "criterion", "n", "predicted ε* (n = 16 model)", "corrected for g_p(n)",
        "predicted ε*·(n−1)^{1/(p−1)}", "model local slope", "asymptote (c/g_p(0))^{1/(p−1)}",
        "measured (lo, hi]", "measured/predicted − 1", "measured ε*·(n−1)^{1/(p−1)}",
        "measured slope of the doubling [range]",
    ]  # fmt: skip
    prov = doc["provenance"]
    onsets = ", ".join(
        f"p = {e['p']} at n = {e['onset_n']}"
        for e in doc["predictions"]
        if e["criterion"] == "value c=0.5"
    )
    note = (
        f"\nPredicted onsets (value c = 0.5): {onsets}; every row above lies past its onset.\n"
        f"Predictions made {prov['date'][:16].replace('T', ' ')} UTC from model code "
        f"{prov['model_code_commit'][:7]} (`{prov['script']}`), before any of these runs.\n"
    )
    checks = "".join(
        f"- p = {c['p']}, n = {c['n']}: measured ({c['measured'][0]:.4f}, "
        f"{c['measured'][1]:.4f}], n = 16 model {c['model']:.4f} "
        f"({100 * c['measured_over_model']:+.1f} %), corrected "
        + (
            f"{c['corrected']:.4f} ({100 * c['measured_over_corrected']:+.1f} %)\n"
            if c["measured_over_corrected"] is not None
            else f"none ({c['corrected_is']}: the fitted decay does not hold there)\n"
        )
        for c in doc["correction_check"]
    )
    return (
        _table(head, out)
        + note
        + "\nThe c = 2 correction on the c = 2 crossings published before it:\n\n"
        + checks
    )


def _family_cell(rows: list[dict[str, Any]], eps_range: tuple[float, float]) -> str:
    """One size of a family: the median first crossing over the replicates (a bracket's
    geometric centre; an open bracket counts as past the scan's end, one from 0 as before its
    start), the range where the replicates differ, and the replicate count."""
    lo_end, hi_end = eps_range

    def centre(r: dict[str, Any]) -> float:
        if not math.isfinite(r["hi"]):
            return math.inf
        return 0.0 if r["lo"] == 0 else math.sqrt(r["lo"] * r["hi"])

    def text(x: float) -> str:
        return f"> {hi_end:g}" if math.isinf(x) else (f"< {lo_end:g}" if x == 0 else f"{x:.3f}")

    xs = sorted(centre(r) for r in rows)
    mid = xs[(len(xs) - 1) // 2] if len(xs) % 2 else _median_pair(xs)
    spread = f" [{text(xs[0])}, {text(xs[-1])}]" if xs[0] != xs[-1] else ""
    return f"{text(mid)}{spread} ({len(xs)})"


def _median_pair(xs: list[float]) -> float:
    a, b = xs[len(xs) // 2 - 1], xs[len(xs) // 2]
    return a if a == b else (math.inf if math.isinf(a) else math.sqrt(a * b) if b else 0.0)


def families_table(data: Data) -> str:
    """Per family the n-scaling specs sweep (the tilt, the tilt plus a Gaussian background,
    Gaussian noise; value and recovery criteria): the median first crossing per size over
    the replicates, the evaluations whose global check redid a step, and the searches that
    saw a pass above a failure."""
    found = family_rows(data)
    sizes = sorted({r["n"] for f in found for r in f["rows"]})
    out = []
    for f in found:
        cells = []
        for n in sizes:
            mine = [r for r in f["rows"] if r["n"] == n]
            cells.append(_family_cell(mine, f["eps_range"]) if mine else "—")
        flagged = sum(r["non_monotone"] for r in f["rows"])
        redone = sum(r["redone"] for r in f["rows"])
        evals = sum(r["n_evals"] for r in f["rows"])
        out.append(
            f"| {f['family']} | {f['p']} | {f['criterion']} | {f['steps']} | "
            + " | ".join(cells)
            + f" | {redone} of {evals} | {flagged} of {len(f['rows'])} |"
        )
    head = [
        "family", "p", "criterion", "steps",
        *(f"n = {n}: median ε* [range] (replicates)" if i == 0 else f"n = {n}"
          for i, n in enumerate(sizes)),
        "evaluations with a redone step", "non-monotone searches",
    ]  # fmt: skip
    return _table(head, out)


#: Block name -> table, in the order of docs/results/thresholds.md.
TABLES: dict[str, Callable[[Data], str]] = {
    "accumulation": accumulation_table,
    "value": value_table,
    "slopes": slopes_table,
    "onset": onset_table,
    "p6": p6_table,
    "theorem": theorem_table,
    "asymptote": asymptote_table,
    "lambda-min": lambda_table,
    "worst-case": worst_case_table,
    "tilt-shrink": tilt_shrink_table,
    "escape": escape_table,
    "attractor-thresholds": power_table,
    "attractor-large-n": attractor_large_n_table,
    "confirm": confirm_table,
    "families": families_table,
}
