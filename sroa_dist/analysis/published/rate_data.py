"""The rate study's data as its results page reads it (docs/results/thresholds.md): per block,
the study stores under docs/data/studies that hold it (each published study's spec:
:mod:`.reruns`), and the predictions committed before the runs; and the numbers derived from
them that the tables and figures share (brackets per size, predictions at a size, escape
edges).

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
    "ATTRACTOR_LARGE_N",
    "ATTRACTOR_LARGE_SIZES",
    "ASYMPTOTE_STUDIES",
    "CONFIRM_STUDIES",
    "ESCAPE_STUDIES",
    "GLOBAL_CHECKED",
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
    "attractor_large_n_rows",
    "confirm_points",
    "escape_counts",
    "escape_series",
    "FAMILY_STUDIES",
    "family_rows",
    "g0_of",
    "hardest_stage",
    "labelled_rows",
    "note_large_n",
    "per_size",
    "predicted_at",
    "prediction",
    "prefactor",
    "size_list",
    "success_edge",
    "threshold_rows",
    "tilt_shrink_grid",
    "value_rows",
    "worst_case_brackets",
    "worst_case_points",
    "worst_case_rows",
]

#: The rate study's committed inputs: the predictions, and the worst-case claims and grid.
RATE = "docs/data/rate"
#: The accumulation study (g_p(ε) of the coherent tilt, p = 3-6, n = 8 and 16).
ACCUMULATION_STUDY = "accumulation"
#: Published value-criterion studies of the coherent tilt (c = 0.5), per order.
VALUE_STUDIES = {3: ["tilt-p3"], 4: ["tilt-p4"], 5: ["tilt-p5", "tilt-p5-big"]}
#: Published worst-case studies (name, order, steps); the certified-step and p = 4 searches
#: were withdrawn (issue 33) and are not rerun.
WORST_CASE_STUDIES = [("worst-case", 3, "sshopm, re-evaluated with the global check")]


def size_list(ns) -> str:
    """The distinct sizes of ``ns``, ascending, as a comma-separated list."""
    return ", ".join(str(n) for n in sorted(set(ns)))


def _part(rerun: Rerun, ns) -> str:
    """Which part of a store a block read: the rerun's coordinates, then the sizes."""
    where = ", ".join(f"{k} = {v}" for k, v in rerun.where.items())
    return f"{where}, n = {size_list(ns)}" if where else f"n = {size_list(ns)}"


def threshold_rows(data: Data, name: str) -> list[dict[str, Any]]:
    """The first crossings of published threshold study ``name`` (:mod:`.reruns`), from the
    store of the spec that holds them. Each row has ``n``, ``replicate``, ``lo``, ``hi``,
    ``eps_star``, ``evals`` and ``redone`` (the evaluations with a redone step); none where
    the store is not beside the page."""
    rerun = rerun_of(name)
    cube = [r for r in data.threshold_store(rerun.study) or [] if rerun.selects(r)]
    if cube:
        data.note_store(rerun.study, cube, _part(rerun, (r["n"] for r in cube)))
    rows = [{**r, "evals": r["n_evals"]} for r in cube]
    return sorted(rows, key=lambda r: (r["n"], r["replicate"]))


def labelled_rows(
    data: Data, name: str, labels: tuple[str, ...] | None = None
) -> list[dict[str, Any]]:
    """The first crossings of published study ``name``, whose rows come back from several
    specs (its label key names the row's spec: :data:`.reruns.LABEL_KEYS`): per size, each
    label's rows in its table's label order (only those of ``labels`` where given), at the
    sizes the label was published at, with the store's bracket, ε*, evaluations and λ_min
    (from the store's spec). Every part read is recorded as a source."""
    key = LABEL_KEYS[name]
    found = []
    taken: dict[str, tuple[Rerun, list[dict[str, Any]]]] = {}
    for order, (label, rerun) in enumerate(labelled_reruns(name).items()):
        if labels is not None and label not in labels:
            continue
        for r in data.threshold_store(rerun.study) or []:
            if rerun.selects(r) and rerun.publishes(r["n"]):
                found.append(((r["n"], order, r["replicate"]), label, rerun, r))
                taken.setdefault(label, (rerun, []))[1].append(r)
    for rerun, hits in taken.values():
        data.note_store(rerun.study, hits, _part(rerun, (h["n"] for h in hits)))
    out = []
    for _, label, rerun, hit in sorted(found, key=lambda f: f[0]):
        lam = _smallest_weight(data, rerun.study)
        out.append(
            {
                key: label,
                "n": hit["n"],
                "replicate": hit["replicate"],
                **{k: hit[k] for k in ("lo", "hi", "eps_star", "n_evals")},
                **({"lambda_min": lam} if lam is not None else {}),
            }
        )
    return out


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


def attractor_large_n_rows(data: Data) -> list[dict[str, Any]]:
    """Per size (:data:`ATTRACTOR_LARGE_SIZES`), solver (:data:`ATTRACTOR_LARGE_N`) and store
    that exists: ``n``, ``solver``, ``status`` ("measured", "unfinished": its search has not
    ended, or "not measured": no store, the one row of its solver and size), ``basis`` and
    ``scan`` (the spec's ``eps_range``) and, once measured, the store's ``lo``, ``hi``,
    ``n_evals`` and ``redone``, and ``study``, its store's name. Not recorded as sources:
    :func:`note_large_n` records the rows a block uses."""
    out: list[dict[str, Any]] = []
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
                row = {
                    "study": study,
                    "n": n,
                    "solver": solver,
                    "basis": spec["tensor"].get("basis", "random"),
                    "scan": tuple(spec["threshold"]["eps_range"]),
                    "status": "measured" if rows else "unfinished",
                }
                if rows:
                    (r,) = rows
                    row.update({k: r[k] for k in ("lo", "hi", "n_evals", "redone")})
                out.append(row)
            if not found:
                out.append({"n": n, "solver": solver, "status": "not measured"})
    return out


def note_large_n(data: Data, row: dict[str, Any]) -> None:
    """Record a measured row of :func:`attractor_large_n_rows` as a source of the block that
    uses it."""
    data.note_store(row["study"], data.threshold_store(row["study"]), f"n = {row['n']}")


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
    return sum((threshold_rows(data, s) for s in VALUE_STUDIES[p]), [])


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
    store (``sroa-dist run sweeps/studies/accumulation.toml``); no curves where the store is
    not beside the page."""
    ds = data.store(ACCUMULATION_STUDY)
    if ds is None:
        return np.empty(0), []
    eps = np.asarray(ds["eps"].values, float)
    rows = [
        {
            "p": int(p),
            "n": int(n),
            "g": np.asarray(ds["g_p"].sel(p=p, n=n, replicate=0), float),
            "g0": g0_of(int(p)),
        }
        for p in ds["p"].values
        for n in ds["n"].values
    ]
    data.note_store(ACCUMULATION_STUDY, [r["g"] for r in rows], "g_p")
    return eps, sorted(rows, key=lambda r: (r["p"], r["n"]))


def g0_of(p: int) -> float:
    """g_p(0), the accumulation coefficient's limit as ε → 0 (closed form)."""
    from ..accumulation import accumulation_limit

    return accumulation_limit(p)


def prefactor(data: Data, p: int, c: float) -> float:
    """(c/g_p(0))^{1/(p−1)}: ε*·(n−1)^{1/(p−1)} tends to it."""
    return (c / g0_of(p)) ** (1 / (p - 1))


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
    the certified upper end of ‖E‖), never on a lower bound of it."""
    return row["ratio_kind"] == "certified" and row["ratio"] > 2.0


#: Stores that hold a published worst-case study, by the study's name: the spec's whole
#: grid, or the spec run at the published sizes alone (``--set 'tensor.n=[12]'``).
WORST_CASE_RERUNS = {"worst-case": ["worst-case", "worst-case-n12"]}


def worst_case_points(data: Data, name: str) -> list[dict[str, Any]]:
    """The grid points of published worst-case study ``name``: per size, from the first store
    that holds it (:data:`WORST_CASE_RERUNS`; ``ratio_kind`` says whether its norm is
    certified)."""
    from ..worst_case import worst_case_points as cube_points

    out: dict[int, list[dict[str, Any]]] = {}
    for store in WORST_CASE_RERUNS.get(name, []):
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
    return sum(out.values(), [])


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
    from the confirmation stores (:data:`CONFIRM_STUDIES`) beside the page."""
    stores = [s for s in CONFIRM_STUDIES if data.store(s) is not None]
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
    """{(n, r, n_iter): (eps array, q array)} of the attractor escape study, from its stores
    (:data:`ESCAPE_STUDIES`) beside the page."""
    out: dict = {}
    for study in ESCAPE_STUDIES:
        if data.store(study) is None:
            continue
        counts = escape_counts(data.store(study))
        data.note_store(study, sorted(counts.items()), "escape_hits")
        for (n, r, eps, big_n), (hits, starts) in counts.items():
            out.setdefault((n, r, big_n), []).append((eps, hits / starts))
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


#: The n-scaling families beside the coherent tilt, as their specs sweep them: (family, p,
#: criterion, steps, the store's instances). Each family's search uses the spec's scan range, so
#: an open bracket is a bound at the range's end.
FAMILY_STUDIES: tuple[tuple[str, int, str, str, Rerun], ...] = (
    ("coherent tilt", 3, "value c = 0.5", "sshopm",
     Rerun("nscaling-value-p3", {"noise": "coherent-tilt", "method": "sshopm"})),
    ("coherent tilt", 3, "value c = 0.5", "power",
     Rerun("nscaling-value-p3", {"noise": "coherent-tilt", "method": "power"})),
    ("tilt + Gaussian", 3, "value c = 0.5", "sshopm",
     Rerun("nscaling-value-p3", {"noise": "coherent-tilt+gaussian", "method": "sshopm"})),
    ("tilt + Gaussian", 3, "value c = 0.5", "power",
     Rerun("nscaling-value-p3", {"noise": "coherent-tilt+gaussian", "method": "power"})),
    ("Gaussian", 3, "value c = 0.5", "sshopm",
     Rerun("nscaling-value-p3", {"noise": "gaussian", "method": "sshopm"})),
    ("Gaussian", 3, "value c = 0.5", "power",
     Rerun("nscaling-value-p3", {"noise": "gaussian", "method": "power"})),
    ("tilt + Gaussian", 4, "value c = 0.5", "sshopm (dense)",
     Rerun("nscaling-dense-p4", {"noise": "coherent-tilt+gaussian"})),
    ("Gaussian", 4, "value c = 0.5", "sshopm (dense)",
     Rerun("nscaling-dense-p4", {"noise": "gaussian"})),
    ("Gaussian", 3, "recovery r = 0.3", "sshopm",
     Rerun("nscaling-recovery-p3", {"method": "sshopm"})),
    ("Gaussian", 3, "recovery r = 0.3", "power",
     Rerun("nscaling-recovery-p3", {"method": "power"})),
)  # fmt: skip


def family_rows(data: Data) -> list[dict[str, Any]]:
    """Per family of :data:`FAMILY_STUDIES` whose store is beside the page: its label fields
    and ``rows`` (the store's first crossings of that family, each with ``non_monotone``),
    and the spec's scan range ``eps_range``."""
    out = []
    for family, p, criterion, steps, rerun in FAMILY_STUDIES:
        cube = data.threshold_store(rerun.study)
        if cube is None:
            continue
        mine = [r for r in cube if rerun.selects(r)]
        data.note_store(rerun.study, mine, _part(rerun, (r["n"] for r in mine)))
        spec = json.loads(data.store(rerun.study).attrs["spec"])
        out.append(
            {
                "family": family,
                "p": p,
                "criterion": criterion,
                "steps": steps,
                "eps_range": tuple(spec["threshold"]["eps_range"]),
                "rows": mine,
            }
        )
    return out


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
