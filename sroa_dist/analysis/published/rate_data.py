"""The rate study's data as its results page reads it (docs/results/thresholds.md): per block,
the stores that rerun a published study, and the JSON the study was first published in for
what no store holds yet; and the numbers derived from them that the tables and figures share
(brackets per size, predictions at a size, escape edges, a rerun against its file).

Each reader takes a :class:`~.sources.Data` and records the files and stores it read (with
the part of each), so that every block can name its sources. The Markdown is
:mod:`.rate_tables`'s, the pictures :mod:`.rate_figures`'.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from sroa_dist.methods import aghkt_budget

from .reruns import LABEL_KEYS, Rerun, labelled_reruns, rerun_of
from .sources import Data

__all__ = [
    "ACCUMULATION_STUDY",
    "ASYMPTOTE_PREDICTIONS",
    "ASYMPTOTE_STUDIES",
    "CONFIRM_STUDIES",
    "ESCAPE_STUDIES",
    "GLOBAL_CHECKED",
    "NSCALING",
    "NSCALING_GLOBAL",
    "POWER_L20",
    "RATE",
    "TILT_SHRINK_GRID",
    "TILT_SHRINK_STUDY",
    "TILT_SHRINK_THETA",
    "VALUE_STUDIES",
    "WORST_CASE_RERUNS",
    "WORST_CASE_STUDIES",
    "accumulation_curves",
    "asymptote_brackets",
    "asymptote_open",
    "bracket_moved",
    "confirm_points",
    "escape_counts",
    "escape_series",
    "g0_of",
    "hardest_stage",
    "labelled_rows",
    "per_size",
    "predicted_at",
    "prediction",
    "prefactor",
    "rerun_row",
    "size_list",
    "success_edge",
    "threshold_rows",
    "tilt_shrink_grid",
    "value_rows",
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


def size_list(ns) -> str:
    """The distinct sizes of ``ns``, ascending, as a comma-separated list."""
    return ", ".join(str(n) for n in sorted(set(ns)))


def _part(rerun: Rerun, ns) -> str:
    """Which part of a store a block read: the rerun's coordinates, then the sizes."""
    where = ", ".join(f"{k} = {v}" for k, v in rerun.where.items())
    return f"{where}, n = {size_list(ns)}" if where else f"n = {size_list(ns)}"


def threshold_rows(data: Data, rel: str) -> list[dict[str, Any]]:
    """The first crossings of the threshold study whose JSON is ``rel``: from the store of the
    study that reruns it (:mod:`.reruns`) for every size the store holds, from the JSON for the
    others. Each row has ``n``, ``replicate``, ``lo``, ``hi``, ``eps_star``, ``evals`` and
    ``redone`` (the evaluations with a redone step; ``None`` where the JSON's trace does not
    record it)."""
    doc = data.json(rel, note=False) if data.exists(rel) else {}
    old = doc.get("results", doc.get("rows", []))
    rerun = rerun_of(rel)
    cube = []
    if rerun is not None and rerun.study:
        cube = [r for r in data.threshold_store(rerun.study) or [] if rerun.selects(r)]
    have = {r["n"] for r in cube}
    rest = [r for r in old if r["n"] not in have]
    if cube:
        data.note_store(rerun.study, cube, _part(rerun, have))
    if data.exists(rel) and (rest or not cube):
        data.json(rel, f"n = {size_list(r['n'] for r in rest)}" if cube else "")
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
    key = LABEL_KEYS[rel]
    published = data.json(rel, note=False)["rows"] if data.exists(rel) else _rerun_rows(data, rel)
    out: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    taken: dict[tuple, tuple[Rerun, list[dict[str, Any]]]] = {}
    for row in published:
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
                f"{label}: n = {size_list(r['n'] for r in kept if str(r[key]) == label)}"
                for label in parts
            ),
        )
    return out


def _rerun_rows(data: Data, rel: str) -> list[dict[str, Any]]:
    """The rows of labelled file ``rel`` as its reruns hold them, for a tree without the file:
    per size, each label's instances (in :data:`.reruns.RERUNS`' label order) at the sizes
    the label was published at."""
    key = LABEL_KEYS[rel]
    found = []
    for order, (label, rerun) in enumerate(labelled_reruns(rel).items()):
        for r in data.threshold_store(rerun.study) or []:
            if rerun.selects(r) and rerun.publishes(r["n"]):
                found.append(((r["n"], order, r["replicate"]), label))
    return [{key: label, "n": n, "replicate": rep} for (n, _, rep), label in sorted(found)]


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


#: The tilt-shrink family's first-crossing search (θ = 0.7, exact norm, c = 2), and the grid
#: it replaces (the first run: x = ε·(n − 1)^{1/2} up a ×1.05 grid, per size and θ).
TILT_SHRINK_STUDY = "worst-case-tilt-shrink"


TILT_SHRINK_GRID = f"{RATE}/worst-case-families.json"


TILT_SHRINK_THETA = 0.7


def tilt_shrink_grid(data: Data) -> dict[int, tuple[float, float]]:
    """n -> (last grid x within 2‖E‖, first grid x past it) of the first run at θ = 0.7
    (empty in a tree without the first run's file)."""
    if not data.exists(TILT_SHRINK_GRID):
        return {}
    rows = [r for r in data.json(TILT_SHRINK_GRID)["rows"] if r["theta"] == TILT_SHRINK_THETA]
    out = {}
    for n in sorted({r["n"] for r in rows}):
        mine = sorted((r for r in rows if r["n"] == n), key=lambda r: r["x"])
        past = [r for r in mine if r["broken"]]
        if past:
            below = [r["x"] for r in mine if r["x"] < past[0]["x"]]
            out[n] = (max(below) if below else 0.0, past[0]["x"])
    return out


def _past_bound(row: dict) -> bool:
    """Whether a worst-case row breaks the value bound 2‖E‖: on its certified ratio (error over
    the certified upper end of ‖E‖) where the row has one, never on a lower bound of it."""
    if "ratio" in row:
        return row.get("ratio_kind") == "certified" and row["ratio"] > 2.0
    return row["worst"] > 2.0


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
            data.note_store(store, mine, f"n = {size_list(pt['n'] for pt in mine)}")
    rel = f"{RATE}/{name}"
    published = data.json(rel, note=False)["rows"] if data.exists(rel) else []
    rest = [r for r in published if r["n"] not in out]
    if data.exists(rel) and (rest or not out):
        data.json(f"{RATE}/{name}", f"n = {size_list(r['n'] for r in rest)}" if out else "")
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


#: The published n-scaling studies rerun with the global check (docs/data/nscaling-global), in
#: the table's order; those under docs/data/nscaling without a rerun file are listed as not rerun.
NSCALING_GLOBAL = "docs/data/nscaling-global"


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
            data.note_store(study, cube, f"n = {size_list(r['n'] for r in cube)}")
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
