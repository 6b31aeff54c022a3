"""The tables of the rate study (docs/results/thresholds.md), as Markdown, from the published
data: the accumulation coefficients, the value and theorem criteria against the model fed by
n = 16, local slopes, the onset, p = 6, λ_min, the worst case, and the attractor studies.

Each table is a function of a :class:`~.sources.Data` reader, which records the files and
stores it read. First crossings come from a study's store where it has the size
(:func:`threshold_rows`), and from the study's JSON for the rest.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.stats import binomtest

from sroa_dist.methods import aghkt_budget

from .reruns import LABEL_KEYS, Rerun, rerun_of
from .sources import Data

__all__ = [
    "RATE",
    "TABLES",
    "ACCUMULATION_STUDY",
    "ASYMPTOTE_PREDICTIONS",
    "ASYMPTOTE_STUDIES",
    "ATTRACTOR_LARGE_N",
    "ATTRACTOR_LARGE_SIZES",
    "GLOBAL_CHECKED",
    "POWER_L20",
    "TILT_SHRINK_STUDY",
    "VALUE_STUDIES",
    "accumulation_curves",
    "asymptote_brackets",
    "asymptote_open",
    "WORST_CASE_RERUNS",
    "WORST_CASE_STUDIES",
    "bracket_moved",
    "ESCAPE_STUDIES",
    "escape_counts",
    "escape_series",
    "CONFIRM_STUDIES",
    "confirm_points",
    "hardest_stage",
    "labelled_rows",
    "per_size",
    "prediction",
    "prefactor",
    "rerun_row",
    "success_edge",
    "threshold_rows",
    "tilt_shrink_grid",
    "worst_case_brackets",
    "worst_case_points",
    "worst_case_rows",
]

#: The rate study's own data (the first crossings it compares with are under nscaling/).
RATE = "docs/data/rate"
NSCALING = "docs/data/nscaling"
#: The accumulation study (g_p(ε) of the coherent tilt, p = 3-6, n = 8 and 16).
ACCUMULATION_STUDY = "accumulation"
#: Published value-criterion studies of the coherent tilt (c = 0.5), per order.
VALUE_STUDIES = {3: ["tilt-p3"], 4: ["tilt-p4"], 5: ["tilt-p5", "tilt-p5-big"]}
#: Worst-case studies (file, order, steps) in docs/data/rate.
WORST_CASE_STUDIES = [
    ("worst-case.json", 3, "sshopm, re-evaluated with the global check"),
    ("worst-case-certified.json", 3, "certified"),
    ("worst-case-p4.json", 4, "sshopm, re-evaluated with the global check"),
]


def _sizes(ns) -> str:
    return ", ".join(str(n) for n in sorted(set(ns)))


def _part(rerun: Rerun, ns) -> str:
    """Which part of a store a block read: the rerun's coordinates, then the sizes."""
    where = ", ".join(f"{k} = {v}" for k, v in rerun.where.items())
    return f"{where}, n = {_sizes(ns)}" if where else f"n = {_sizes(ns)}"


def threshold_rows(data: Data, rel: str) -> list[dict[str, Any]]:
    """The first crossings of the threshold study whose JSON is ``rel``: from the store of the
    study that reruns it (:mod:`.reruns`) for every size the store holds, from the JSON for the
    others. Each row has ``n``, ``replicate``, ``lo``, ``hi``, ``eps_star``, ``evals`` and
    ``redone`` (the evaluations with a redone step; ``None`` where the JSON's trace does not
    record it)."""
    doc = data.json(rel, note=False)
    old = doc.get("results", doc.get("rows", []))
    rerun = rerun_of(rel)
    cube = []
    if rerun is not None and rerun.study:
        cube = [r for r in data.threshold_store(rerun.study) or [] if rerun.selects(r)]
    have = {r["n"] for r in cube}
    rest = [r for r in old if r["n"] not in have]
    if cube:
        data.note_store(rerun.study, cube, _part(rerun, have))
    if rest or not cube:
        data.json(rel, f"n = {_sizes(r['n'] for r in rest)}" if cube else "")
    rows = [{**r, "evals": r["n_evals"]} for r in cube]
    for r in rest:
        trace = r.get("trace", [])
        redone = sum(1 for e in trace if e[5]) if trace and len(trace[0]) > 5 else None
        rows.append(
            {
                "n": r["n"],
                "replicate": r.get("replicate", 0),
                "lo": r["lo"],
                "hi": r["hi"],
                "eps_star": r["eps_star"],
                "evals": len(trace) if trace else r["n_evals"],
                "redone": redone,
            }
        )
    return sorted(rows, key=lambda r: (r["n"], r["replicate"]))


def labelled_rows(
    data: Data, rel: str, labels: tuple[str, ...] | None = None
) -> list[dict[str, Any]]:
    """The published first crossings of ``rel``, a file whose rows come back from several
    studies (its label key names the row's rerun: :data:`.reruns.LABEL_KEYS`), in the file's
    order (only those of ``labels`` where given): each row whose instance a rerun store holds
    carries that store's bracket, ε*, evaluations and λ_min (from the store's spec); the others
    keep the file's. Every part read is recorded as a source."""
    doc = data.json(rel, note=False)
    key = LABEL_KEYS[rel]
    out: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    taken: dict[tuple, tuple[Rerun, list[dict[str, Any]]]] = {}
    for row in doc["rows"]:
        if labels is not None and str(row[key]) not in labels:
            continue
        rerun = rerun_of(rel, row)
        hit = None
        if rerun is not None and rerun.study:
            where = (row["n"], row.get("replicate", 0))
            cube = data.threshold_store(rerun.study) or []
            hit = next(
                (c for c in cube if rerun.selects(c) and (c["n"], c["replicate"]) == where), None
            )
        if hit is None:
            kept.append(row)
            out.append(row)
            continue
        part = (rerun.study, *sorted(rerun.where.items()))
        taken.setdefault(part, (rerun, []))[1].append(hit)
        lam = _smallest_weight(data, rerun.study)
        out.append(
            {
                **{k: row[k] for k in (key, "n") if k in row},
                "replicate": hit["replicate"],
                **{k: hit[k] for k in ("lo", "hi", "eps_star", "n_evals")},
                **({"lambda_min": lam} if lam is not None else {}),
            }
        )
    for rerun, hits in taken.values():
        data.note_store(rerun.study, hits, _part(rerun, (h["n"] for h in hits)))
    if kept:
        parts = dict.fromkeys(str(r[key]) for r in kept)
        data.json(
            rel,
            "; ".join(
                f"{label}: n = {_sizes(r['n'] for r in kept if str(r[key]) == label)}"
                for label in parts
            ),
        )
    return out


def _smallest_weight(data: Data, study: str) -> float | None:
    """The smallest weight λ_min of the threshold study ``study``'s spec: its weight profile's
    ``lambda_min``, else the coherent tilt's default smallest weight; None for a spec of
    explicit weights."""
    from sroa_dist.studies import SMALLEST_WEIGHT

    tensor = json.loads(data.store(study).attrs["spec"])["tensor"]
    if tensor.get("lambdas") is not None:
        return None
    return float(tensor.get("lambda_min") or SMALLEST_WEIGHT)


def per_size(rows: list[dict]) -> dict[int, tuple[float, float]]:
    """n -> median (lo, hi) over replicates of the closed brackets."""
    out: dict[int, list] = {}
    for r in rows:
        if r["lo"] > 0 and math.isfinite(r["hi"]):
            out.setdefault(r["n"], []).append((r["lo"], r["hi"]))
    return {
        n: (float(np.median([a for a, _ in v])), float(np.median([b for _, b in v])))
        for n, v in sorted(out.items())
    }


def value_rows(data: Data, p: int) -> list[dict]:
    """The published value-criterion first crossings of order ``p``."""
    return sum((threshold_rows(data, f"{NSCALING}/{s}.json") for s in VALUE_STUDIES[p]), [])


def prediction(data: Data, p: int, label: str) -> dict:
    """The stored prediction from n = 16 of order ``p`` and criterion ``label``."""
    rows = data.json(f"{RATE}/predictions.json")["rows"]
    return next(r for r in rows if r["p"] == p and r["criterion"] == label)


def predicted_at(pr: dict, n: int) -> float:
    ns, es = np.array(pr["n"], float), np.array(pr["eps_star"], float)
    if n in pr["n"]:
        return float(es[pr["n"].index(n)])
    return float(np.exp(np.interp(np.log(n), np.log(ns), np.log(es))))


def accumulation_curves(data: Data) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """The coherent tilt's accumulation coefficients: the ε grid and, per (p, n), ``g`` (g_p
    over the grid) and ``g0`` (its closed-form limit g_p(0)), from the accumulation study's
    store (``sroa-dist run sweeps/studies/accumulation.toml``), or from the JSON the study
    was first published in where no store is beside the page."""
    from ..accumulation import accumulation_limit

    ds = data.store(ACCUMULATION_STUDY)
    if ds is None:
        acc = data.json(f"{RATE}/accumulation.json")
        rows = [{"p": r["p"], "n": r["n"], "g": np.asarray(r["g"], float)} for r in acc["rows"]]
        eps = np.asarray(acc["setup"]["eps"], float)
    else:
        eps = np.asarray(ds["eps"].values, float)
        rows = [
            {"p": int(p), "n": int(n), "g": np.asarray(ds["g_p"].sel(p=p, n=n, replicate=0), float)}
            for p in ds["p"].values
            for n in ds["n"].values
        ]
        data.note_store(ACCUMULATION_STUDY, [r["g"] for r in rows], "g_p")
    for r in rows:
        r["g0"] = accumulation_limit(r["p"])
    return eps, sorted(rows, key=lambda r: (r["p"], r["n"]))


def g0_of(data: Data, p: int) -> float:
    """g_p(0) of the curves the page reads."""
    return next(r["g0"] for r in accumulation_curves(data)[1] if r["p"] == p)


def prefactor(data: Data, p: int, c: float) -> float:
    """(c/g_p(0))^{1/(p−1)}: ε*·(n−1)^{1/(p−1)} tends to it."""
    return (c / g0_of(data, p)) ** (1 / (p - 1))


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


#: The tilt-shrink family's first-crossing search (θ = 0.7, exact norm, c = 2), and the grid
#: it replaces (the first run: x = ε·(n − 1)^{1/2} up a ×1.05 grid, per size and θ).
TILT_SHRINK_STUDY = "worst-case-tilt-shrink"
TILT_SHRINK_GRID = f"{RATE}/worst-case-families.json"
TILT_SHRINK_THETA = 0.7


def tilt_shrink_grid(data: Data) -> dict[int, tuple[float, float]]:
    """n -> (last grid x within 2‖E‖, first grid x past it) of the first run at θ = 0.7."""
    rows = [r for r in data.json(TILT_SHRINK_GRID)["rows"] if r["theta"] == TILT_SHRINK_THETA]
    out = {}
    for n in sorted({r["n"] for r in rows}):
        mine = sorted((r for r in rows if r["n"] == n), key=lambda r: r["x"])
        past = [r for r in mine if r["broken"]]
        if past:
            below = [r["x"] for r in mine if r["x"] < past[0]["x"]]
            out[n] = (max(below) if below else 0.0, past[0]["x"])
    return out


def tilt_shrink_table(data: Data) -> str:
    """The tilt-shrink's first crossing of 2‖E‖ by the threshold kind's search (bisection to
    rtol, global steps, a random basis per search) beside the first run's grid crossing."""
    grid = tilt_shrink_grid(data)
    store = data.threshold_store(TILT_SHRINK_STUDY)
    found = {r["n"]: r for r in store or []}
    if found:
        data.note_store(TILT_SHRINK_STUDY, list(found.values()), f"n = {_sizes(found)}")
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
    for r in threshold_rows(data, f"{RATE}/tilt-p6.json"):
        mid, pred = math.sqrt(r["lo"] * r["hi"]), predicted_at(pr, r["n"])
        out.append(
            f"| {r['n']} | ({r['lo']:.4f}, {r['hi']:.4f}] | {pred:.4f} | "
            f"{100 * (mid / pred - 1):+.1f} % |"
        )
    head = ["n", "measured bracket (lo, hi]", "predicted from n = 16", "measured/predicted − 1"]
    return _table(head, out)


#: The theorem-criterion studies: (JSON under docs/data/rate/theorem, p, c, radius or None).
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
        for r in threshold_rows(data, f"{RATE}/theorem/{name}.json"):
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


def _past_bound(row: dict) -> bool:
    """Whether a worst-case row breaks the value bound 2‖E‖: on its certified ratio (error over
    the certified upper end of ‖E‖) where the row has one, never on a lower bound of it."""
    if "ratio" in row:
        return row.get("ratio_kind") == "certified" and row["ratio"] > 2.0
    return row["worst"] > 2.0


def _value(row: dict) -> float:
    """A row's value error over ‖E‖: the certified ratio where recorded, else over ε."""
    return row["ratio"] if "ratio" in row else row["worst"]


#: Stores that rerun a published worst-case study, by the study's file stem: the spec's whole
#: grid, or the spec run at the published sizes alone (``--set 'tensor.n=[12]'``).
WORST_CASE_RERUNS = {"worst-case": ["worst-case", "worst-case-n12"]}


def worst_case_points(data: Data, name: str) -> list[dict[str, Any]]:
    """The grid points of worst-case study ``name`` (a file of docs/data/rate): per size, from
    the first rerun store that holds it (:data:`WORST_CASE_RERUNS`; ``ratio_kind`` says whether
    its norm is certified), else from the file."""
    from ..worst_case import worst_case_points as cube_points

    out: dict[int, list[dict[str, Any]]] = {}
    for store in WORST_CASE_RERUNS.get(name.removesuffix(".json"), []):
        ds = data.store(store)
        if ds is None:
            continue
        mine = [pt for pt in cube_points(ds) if pt["n"] not in out]
        for pt in mine:
            kind = "certified" if pt["certified"] else "lower bound"
            row = {"n": pt["n"], "eps": pt["eps"], "ratio": pt["ratio"], "ratio_kind": kind}
            out.setdefault(pt["n"], []).append({**row, "tilt": pt["tilt"]})
        if mine:
            data.note_store(store, mine, f"n = {_sizes(pt['n'] for pt in mine)}")
    published = data.json(f"{RATE}/{name}", note=False)["rows"]
    rest = [r for r in published if r["n"] not in out]
    if rest or not out:
        data.json(f"{RATE}/{name}", f"n = {_sizes(r['n'] for r in rest)}" if out else "")
    return sum(out.values(), []) + rest


def worst_case_rows(data: Data, name: str) -> dict[int, tuple[float, float, dict]]:
    """n -> (last grid ε below the bound, first grid ε past it, that row) of worst-case study
    ``name`` as the page reads it (:func:`worst_case_points`; ``hi = inf`` when no grid ε broke
    the bound)."""
    return worst_case_brackets(worst_case_points(data, name))


def worst_case_brackets(rows: list[dict[str, Any]]) -> dict[int, tuple[float, float, dict]]:
    """n -> (last grid ε below the bound, first grid ε past it, that row) of a worst-case
    study's grid points ``rows`` (``hi = inf`` when no grid ε broke the bound)."""
    out = {}
    for n in sorted({r["n"] for r in rows}):
        mine = sorted((r for r in rows if r["n"] == n), key=lambda r: r["eps"])
        past = [r for r in mine if _past_bound(r)]
        if past:
            below = [r["eps"] for r in mine if r["eps"] < past[0]["eps"]]
            out[n] = (max(below) if below else 0.0, past[0]["eps"], past[0])
        else:
            out[n] = (mine[-1]["eps"], math.inf, mine[-1])
    return out


def worst_case_table(data: Data) -> str:
    out = []
    for name, p, steps in WORST_CASE_STUDIES:
        for n, (lo, hi, row) in worst_case_rows(data, name).items():
            cert = "—"
            if "all_certified" in row:
                rows = [r for r in worst_case_points(data, name) if r["n"] == n]
                cert = f"{sum(r['all_certified'] for r in rows)} of {len(rows)} grid points"
            if math.isfinite(hi):
                out.append(
                    f"| {p} | {steps} | {n} | ({lo:.4f}, {hi:.4f}] | {_value(row):.3f} | "
                    f"{row['tilt']:.3f} | {hi * (n - 1) ** (1 / (p - 1)):.3f} | {cert} |"
                )
            else:
                out.append(
                    f"| {p} | {steps} | {n} | none up to {lo:.3f} | {_value(row):.3f} (at "
                    f"{lo:.3f}) | {row['tilt']:.3f} | — | {cert} |"
                )
    head = [
        "p", "steps", "n",
        "first grid ε with a found max_j \\|λ̂_j − λ_j\\| / upper(‖E‖) > 2 (bracket)",
        "found value / upper(‖E‖) there (re-evaluated)", "the tilt's value there",
        "ε·(n−1)^{1/(p−1)} at the crossing", "every step certified",
    ]  # fmt: skip
    return _table(head, out)


def wilson(k: int, m: int) -> tuple[float, float]:
    """The 95 % Wilson interval of ``k`` successes in ``m`` trials (scipy's)."""
    ci = binomtest(int(k), int(m)).proportion_ci(0.95, method="wilson")
    return float(ci.low), float(ci.high)


#: The attractor study's rows of whole SROAs with global-checked steps, and with power steps
#: (L = 20 starts).
GLOBAL_CHECKED = "global (sshopm checked)"
POWER_L20 = "power L=20"


#: The whole-SROA confirmations of 1 − (1 − q)^L: one store per size.
CONFIRM_STUDIES = ("attractor-confirm", "attractor-confirm-256")


def confirm_points(data: Data) -> list[dict[str, Any]]:
    """Per size, ε and number of starts L (in that order): the first step's q from the
    single starts (``q``), and over whole SROA runs the first steps that found a component
    (``passed`` of ``reached``) and the runs that found every one (``whole`` of ``runs``);
    from the confirmation stores (:data:`CONFIRM_STUDIES`) where they are beside the page,
    else from the JSON they were first published in."""
    stores = [s for s in CONFIRM_STUDIES if data.store(s) is not None]
    if not stores:
        return [
            {
                "n": row["n"],
                "eps": row["eps"],
                "L": row["L"],
                "q": row["stages"][0]["q"],
                "passed": row["stages"][0]["passed"],
                "reached": row["stages"][0]["reached"],
                "whole": row["whole"],
                "runs": row["runs"],
            }  # fmt: skip
            for row in data.json(f"{RATE}/attractor-confirm.json")["rows"]
        ]
    out = []
    for study in stores:
        ds = data.store(study)
        for method in ds["method"].values:
            one = ds.sel({"method": method})
            found = one["step_found"].values[:, 0]
            success = one["sroa_success"].values
            out.append(
                {
                    "n": int(ds.attrs["setting_n"]),
                    "eps": float(ds.attrs["setting_eps"]),
                    "L": int(np.nanmax(one["budget_starts"].values)),
                    "q": float(
                        np.nansum(one["escape_hits"].values[:, 0])
                        / np.nansum(one["escape_starts"].values)
                    ),
                    "passed": int(np.sum(found == 1)),
                    "reached": int(np.sum(np.isfinite(found))),
                    "whole": int(np.sum(success == 1)),
                    "runs": int(np.sum(np.isfinite(success))),
                }
            )
        mine = [r for r in out if r["n"] == int(ds.attrs["setting_n"])]
        data.note_store(study, mine, "first step, whole runs")
    return sorted(out, key=lambda r: (r["n"], r["L"]))


def confirm_table(data: Data) -> str:
    """The first step of whole SROAs against 1 − (1 − q)^L (later steps: at these ε every
    run has lost a component before them)."""
    glob = {
        r["n"]: r
        for r in labelled_rows(data, f"{RATE}/attractor-thresholds.json", (GLOBAL_CHECKED,))
    }
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
    rows = labelled_rows(data, f"{RATE}/lambda-min.json")
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
    rows = labelled_rows(data, f"{RATE}/attractor-thresholds.json")
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


#: Whole-SROA first crossings on the attractor past n = 256 (issue 35): per size, the study
#: stores of each solver, run one size at a time (``--set 'tensor.n=[N]'``) on the same instance
#: (the two specs share seed and settings but the method and the check), on the random basis
#: and (``--set 'tensor.basis="identity"'``, where the basis' products would dominate the cost)
#: on the identity; each store that exists is a row.
ATTRACTOR_LARGE_N: dict[str, tuple[str, ...]] = {
    "global (sshopm checked)": (
        "asymptote-attractor-global-n{n}",
        "asymptote-attractor-global-n{n}-identity",
    ),
    "power AGHKT": ("asymptote-attractor-power-n{n}", "asymptote-attractor-power-n{n}-identity"),
}
ATTRACTOR_LARGE_SIZES = (512, 1024)


def attractor_large_n_table(data: Data) -> str:
    """Per size, solver and basis: the scan range the store's spec searched, the evaluations,
    the bracket and the evaluations with a redone step, from the stores that exist ("not
    measured" where none does, "unfinished" where its search has not ended)."""
    out = []
    for n in ATTRACTOR_LARGE_SIZES:
        for solver, patterns in ATTRACTOR_LARGE_N.items():
            found = False
            for pattern in patterns:
                study = pattern.format(n=n)
                rows = data.threshold_store(study)
                if rows is None:
                    continue
                found = True
                spec = json.loads(data.store(study).attrs["spec"])
                a, b = spec["threshold"]["eps_range"]
                basis = spec["tensor"].get("basis", "random")
                if not rows:
                    out.append(
                        f"| {n} | {solver} | {basis} | [{a:g}, {b:g}] | — | unfinished | — |"
                    )
                    continue
                data.note_store(study, rows, f"n = {n}")
                (r,) = rows
                out.append(
                    f"| {n} | {solver} | {basis} | [{a:g}, {b:g}] | {r['n_evals']} | "
                    f"({r['lo']:.5f}, {r['hi']:.5f}] | {r['redone']} |"
                )
            if not found:
                out.append(f"| {n} | {solver} | — | — | — | not measured | — |")
    head = ["n", "solver", "basis", "scan range", "evaluations", "first crossing (lo, hi]",
            "evaluations with a redone step"]  # fmt: skip
    return _table(head, out)


#: The attractor escape study's stores: n = 16-512, and n = 1024 (ε ≥ 0.25 only).
ESCAPE_STUDIES = ("attractor-escape", "attractor-escape-1024")


def escape_counts(ds: Any) -> dict[tuple[int, int, float, int], tuple[int, int]]:
    """(n, r, ε rounded to 9 digits, N) -> (hits, starts) of an escape store's single starts:
    of ``starts`` power-method starts with N iterations on the deflated tensor of the stage
    with r components left, ``hits`` ended near a component."""
    out = {}
    for n in ds["n"].values if "n" in ds.dims else [int(ds.attrs["setting_n"])]:
        sub = ds.sel(n=n) if "n" in ds.dims else ds
        for m in sub["method"].values:
            for e in sub["eps"].values:
                one = sub.sel({"method": m, "eps": e, "replicate": 0})
                big_n, starts = int(one["budget_iter"]), int(one["escape_starts"])
                hits = one["escape_hits"].values
                for j in np.flatnonzero(np.isfinite(hits)):
                    key = (int(n), int(n) - int(j), round(float(e), 9), big_n)
                    out[key] = (int(hits[j]), starts)
    return out


def escape_series(data: Data) -> dict:
    """{(n, r, n_iter): (eps array, q array)} of the attractor escape study: from its stores
    (:data:`ESCAPE_STUDIES`) where they are beside the page, else from the JSON it was first
    published in."""
    out: dict = {}
    stores = [s for s in ESCAPE_STUDIES if data.store(s) is not None]
    if stores:
        for study in stores:
            counts = escape_counts(data.store(study))
            data.note_store(study, sorted(counts.items()), "escape_hits")
            for (n, r, eps, big_n), (hits, starts) in counts.items():
                out.setdefault((n, r, big_n), []).append((eps, hits / starts))
    else:
        for row in data.json(f"{RATE}/attractor-escape.json")["rows"]:
            out.setdefault((row["n"], row["r"], row["n_iter"]), []).append((row["eps"], row["q"]))
    return {k: tuple(np.array(x) for x in zip(*sorted(v), strict=False)) for k, v in out.items()}


def _budget(n: int, eps: float, budget: str) -> tuple[int, int]:
    """Starts and iterations ``(L, N)`` of a budget: fixed (20, 30), or AGHKT's."""
    return (20, 30) if budget == "fixed" else aghkt_budget(n, eps)


def success_edge(table: dict, n: int, budget: str) -> float:
    """The smallest ε of the grid at which some stage's success with the budget's L starts,
    1 − (1 − q)^L, falls below 1/2 (``nan`` if none)."""
    stages = sorted({r for (m, r, _) in table if m == n})
    eps_grid = sorted({e for (m, r, it), (es, _) in table.items() if m == n for e in es})
    for eps in eps_grid:
        L, N = _budget(n, eps, budget)
        for r in stages:
            es, qs = table.get((n, r, N), (np.array([]), np.array([])))
            hit = np.isclose(es, eps)
            if hit.any() and 1 - (1 - qs[hit][0]) ** L < 0.5:
                return eps
    return math.nan


def hardest_stage(table: dict, n: int, budget: str) -> tuple[np.ndarray, np.ndarray]:
    """Per ε of the grid: the least q over the measured stages of size ``n`` with the budget's
    iteration count (30, or AGHKT's N(n, ε))."""
    best: dict[float, float] = {}
    for (m, _r, it), (es, qs) in table.items():
        if m != n:
            continue
        for e, q in zip(es, qs, strict=False):
            if it == _budget(n, e, budget)[1]:
                best[e] = min(best.get(e, 1.0), q)
    keys = sorted(best)
    return np.array(keys), np.array([best[k] for k in keys])


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


#: The published n-scaling studies rerun with the global check (docs/data/nscaling-global), in
#: the table's order; those under docs/data/nscaling without a rerun file are listed as not rerun.
NSCALING_GLOBAL = "docs/data/nscaling-global"
RERUN_STUDIES = (
    "gauss-p3", "gauss-p3-rec", "gauss-p4", "power-gauss-p3-rec", "power-tilt-p3",
    "power-tilt-p4", "tilt-p3", "tilt-p4", "tilt-p5", "tilt-p5-big", "tiltg-p3", "tiltg-p4",
)  # fmt: skip


def bracket_moved(old: dict, new: dict, rtol: float) -> bool:
    """Whether a threshold's bracket moved between two searches of one instance: disjoint
    brackets, or upper ends more than the search's relative bracket width ``rtol`` apart (an
    open end, ``hi = inf``, moved when only one of the two is open)."""
    (olo, ohi), (nlo, nhi) = (old["lo"], old["hi"]), (new["lo"], new["hi"])
    if math.isinf(ohi) or math.isinf(nhi):
        return math.isinf(ohi) != math.isinf(nhi)
    disjoint = nhi <= olo or ohi <= nlo
    return disjoint or abs(nhi / ohi - 1) > rtol + 1e-12


def rerun_row(old: dict, new: dict) -> dict[str, Any]:
    """One study's rerun against its published file: thresholds rerun of those published, the
    evaluations with a step the global check found non-global (redone, or left so), the
    brackets that moved (:func:`bracket_moved` at the rerun's ``rtol``) and the non-monotone
    flags of the rerun thresholds before and after."""
    rtol = float(new["study"].get("rtol", 0.02))
    old_by = {(r["n"], r["replicate"]): r for r in old.get("results", [])}
    results = new["results"]
    flagged = 0
    for r in results:
        fields = r.get("trace_fields", [])
        redone = fields.index("redone") if "redone" in fields else None
        left = fields.index("non_global") if "non_global" in fields else None
        for e in r["trace"]:
            flagged += (redone is not None and e[redone] > 0) or (
                left is not None and bool(e[left])
            )
    pairs = [(old_by[k], r) for r in results if (k := (r["n"], r["replicate"])) in old_by]
    return {
        "thresholds": len(results),
        "published": len(old_by),
        "evaluations": sum(len(r["trace"]) for r in results),
        "non_global": flagged,
        "left_non_global": sum(int(r.get("evals_non_global", 0)) for r in results),
        "moved": sum(bracket_moved(o, r, rtol) for o, r in pairs),
        "non_monotone_old": sum(bool(o["non_monotone"]) for o, _ in pairs),
        "non_monotone_new": sum(bool(r["non_monotone"]) for r in results),
    }


def rerun_table(data: Data) -> str:
    """The published n-scaling studies against their rerun with the global check."""
    out, missing = [], []
    for name in RERUN_STUDIES:
        rel = f"{NSCALING_GLOBAL}/{name}.json"
        if not data.exists(rel):
            missing.append(name)
            continue
        r = rerun_row(data.json(f"{NSCALING}/{name}.json"), data.json(rel))
        out.append(
            f"| {name} | {r['thresholds']} / {r['published']} | {r['non_global']} of "
            f"{r['evaluations']} ({r['left_non_global']}) | {r['moved']} | "
            f"{r['non_monotone_old']} → {r['non_monotone_new']} |"
        )
    head = [
        "study", "rerun / published thresholds",
        "evaluations with a non-global step (left after redo)", "brackets moved",
        "non-monotone, published → rerun",
    ]  # fmt: skip
    return _table(head, out) + f"\nNot rerun: {', '.join(missing) or 'none'}.\n"


#: The asymptote runs (issue 35): (p, criterion label of asymptote-predictions.json) -> the
#: study stores under docs/data/studies that hold its first crossings (the spec's own; the
#: spec's check at a smaller n; and the spec run one size at a time, ``--set 'tensor.n=[N]'``
#: into ``<spec>-nN``, so each size is committed the moment it is measured).
ASYMPTOTE_STUDIES: dict[tuple[int, str], list[str]] = {
    (3, "value c=0.5"): [
        "asymptote-p3-c0.5",
        "asymptote-p3-c0.5-n256",
        "asymptote-p3-c0.5-n512",
        "asymptote-p3-c0.5-n1024",
        # n = 2048 on the identity basis (the same brackets as the random one at n = 256, 512)
        "asymptote-p3-c0.5-n2048-identity",
    ],
    (3, "theorem c=2"): [
        "asymptote-p3-c2",
        "asymptote-p3-c2-n256",
        "asymptote-p3-c2-n512",
        "asymptote-p3-c2-n1024",
        "asymptote-p3-c2-n2048-identity",
    ],
    (4, "value c=0.5"): [
        "asymptote-p4-c0.5",
        "asymptote-p4-c0.5-n256",
        "asymptote-p4-c0.5-n512",
        "asymptote-p4-c0.5-n1024",
    ],
    (4, "theorem c=2"): [
        "asymptote-p4-c2",
        "asymptote-p4-c2-n512",
        "asymptote-p4-c2-n1024",
    ],
    (5, "value c=0.5"): [
        "asymptote-p5-c0.5",
        "asymptote-p5-c0.5-n256",
        "asymptote-p5-c0.5-n512",
        "asymptote-p5-c0.5-n1024",
    ],
    (5, "theorem c=2"): [
        "asymptote-p5-c2",
        "asymptote-p5-c2-n512",
        # n = 1024 on the identity basis (at n = 512 both bases gave the same scan verdicts)
        "asymptote-p5-c2-n1024-identity",
    ],
}
ASYMPTOTE_PREDICTIONS = f"{RATE}/asymptote-predictions.json"


def asymptote_brackets(data: Data, p: int, label: str) -> dict[int, tuple[float, float]]:
    """n -> the measured bracket (median over replicates) of the asymptote study of ``(p,
    label)``, from whichever of its stores exist (none: empty)."""
    rows: list[dict[str, Any]] = []
    for study in ASYMPTOTE_STUDIES.get((p, label), []):
        cube = data.threshold_store(study)
        if cube:
            data.note_store(study, cube, f"n = {_sizes(r['n'] for r in cube)}")
            rows += cube
    return per_size(rows)


def asymptote_open(data: Data, p: int, label: str) -> dict[int, float]:
    """n -> the scan end of an asymptote search of ``(p, label)`` that found no crossing in its
    range (the criterion passed everywhere, bracket ``(end, inf)``): a lower bound on ε*, not
    a crossing. Reads the stores :func:`asymptote_brackets` reads (and notes them)."""
    out: dict[int, float] = {}
    for study in ASYMPTOTE_STUDIES.get((p, label), []):
        for r in data.threshold_store(study) or []:
            if r["lo"] > 0 and not math.isfinite(r["hi"]):
                out[r["n"]] = min(out.get(r["n"], math.inf), r["lo"])
    return out


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
    "rerun": rerun_table,
}
