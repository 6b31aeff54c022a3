"""The regression table (docs/results/regression.md): every published first-crossing bracket,
accumulation coefficient g_p and probability, from the JSON it was published from, beside the
study's cube where one exists.

A row with a cube says whether the cube holds the same bits, or by how much it differs and
why; a row without one says "not rerun yet" (naming the spec that reruns it), or why no spec
can. The scripts that wrote the JSON derived their seeds their own way, and the sweep kinds
derive an instance's seed from the spec's master seed and the instance's coordinates, so a
rerun draws other instances; "same bits" then means the number does not depend on the draw
(the coherent tilt's bracket is a property of the family, not of its random basis). Where a
reason for a difference can be checked from the data at hand (the same search rerun by the
current search revision, the script's seeds through the kind's numerics), the row says what
was checked and where.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..worst_case import worst_case_rows as cube_worst_case_rows
from .rate_data import (
    ESCAPE_STUDIES,
    NSCALING,
    RATE,
    WORST_CASE_RERUNS,
    WORST_CASE_STUDIES,
    escape_counts,
    worst_case_brackets,
)
from .reruns import LABEL_KEYS, Rerun, rerun_of
from .sources import STUDIES, Data

__all__ = ["regression_table", "summary"]

#: Threshold studies published as JSON, in table order (their reruns: :mod:`.reruns`).
THRESHOLD_FILES = [
    *(
        f"{NSCALING}/{s}.json"
        for s in (
            "tilt-p3", "tilt-p4", "tilt-p5", "tilt-p5-big", "power-tilt-p3", "power-tilt-p4",
            "tiltg-p3", "tiltg-p4", "gauss-p3", "gauss-p3-rec", "gauss-p4", "power-gauss-p3-rec",
        )
    ),
    *(f"{RATE}/theorem/theorem-p{p}-c{c}.json" for p in (3, 4) for c in ("0.5", "2")),
    f"{RATE}/tilt-p6.json",
    f"{RATE}/lambda-min.json",
    f"{RATE}/attractor-thresholds.json",
]  # fmt: skip
#: The published first crossings rerun with the current search (global check and redo) by
#: the script itself, before the sweeps: the search revision's own bits, same seeds.
NSCALING_GLOBAL = "docs/data/nscaling-global"
#: Checks of the kinds against the scripts' own seeds, run once and kept as JSON.
ACCUMULATION_CHECK = f"{STUDIES}/accumulation-regression.json"
ESCAPE_CHECK = f"{STUDIES}/escape-regression.json"
THRESHOLD_CHECK = f"{STUDIES}/threshold-regression.json"
NOT_RERUN = "not rerun yet"
WITHDRAWN = "withdrawn"
NO_SPEC = "no spec"
#: Where the page says why the worst-case rows were withdrawn.
WITHDRAWN_WHY = "thresholds.md, “The worst case against n” (issue 33)"


def _bracket(lo: float, hi: float) -> str:
    return f"({lo:.4f}, {hi:.4f}]" if math.isfinite(hi) else f"none up to {lo:.4g}"


def _not_rerun(study: str) -> str:
    return f"{NOT_RERUN} (`sweeps/studies/{study}.toml`)" if study else NOT_RERUN


def _compare(
    old: dict[str, Any], new: dict[str, Any] | None, family: str = "", why: str = "other seeds"
) -> tuple[str, str]:
    """(cube bracket, status) of one published bracket of a study of ``family``; ``why`` is
    the checked reason of a difference (default: the seeds differ)."""
    if new is None:
        return "—", NOT_RERUN
    cube = _bracket(new["lo"], new["hi"])
    if (new["lo"], new["hi"]) == (old["lo"], old["hi"]):
        if family == "coherent-tilt":
            return cube, "same bits (other seeds: the tilt's bracket does not depend on the draw)"
        return cube, "same bits (other seeds)"
    if not (math.isfinite(new["hi"]) and math.isfinite(old["hi"])):
        return cube, f"differs: one search crossed, the other did not ({why})"
    overlap = new["lo"] < old["hi"] and old["lo"] < new["hi"]
    where = "brackets overlap" if overlap else "brackets disjoint"
    if min(new["lo"], old["lo"]) <= 0:
        # A search that failed at its first point has the bracket (0, hi]: no geometric centre,
        # so the upper ends (the first failures) are compared.
        shift = new["hi"] / old["hi"] - 1
        return (
            cube,
            f"differs by {100 * shift:+.2f} % in the upper end, a bracket from 0 ({where}; {why})",
        )
    shift = math.sqrt(new["lo"] * new["hi"] / (old["lo"] * old["hi"])) - 1
    if abs(shift) < 1e-12:
        if family == "coherent-tilt" and why == "other seeds":
            why = (
                "the tilt's bracket does not depend on the draw: the last bits are the search "
                "revision's, as in each file the script reran with the current search "
                f"(`{NSCALING_GLOBAL}`); not checked for this one"
            )
        return cube, f"differs in the last bits only ({why})"
    return cube, f"differs by {100 * shift:+.2f} % ({where}; {why})"


def _rerun_rows(data: Data, rerun: Rerun) -> list[dict[str, Any]] | None:
    """The store rows ``rerun`` selects, or None when its study has no store."""
    rows = data.threshold_store(rerun.study)
    return None if rows is None else [r for r in rows if rerun.selects(r)]


def _same_search(data: Data, rel: str, old: dict[str, Any], new: dict[str, Any]) -> str:
    """Why a cube bracket differs from a published row, as far as the data at hand checks it:
    the script's rerun with the current search revision (same seeds;
    ``docs/data/nscaling-global``) has the cube's bits when only the revision made the
    difference; the kind's search at the script's seed (:data:`THRESHOLD_CHECK`) gives the
    published bits when only the seeds did, and the cube's bits when the seeds made no
    difference. Otherwise: the seeds differ, unchecked."""
    name = Path(rel).name
    key = (old["n"], old.get("replicate", 0))
    if rel.startswith(f"{NSCALING}/") and data.exists(f"{NSCALING_GLOBAL}/{name}"):
        doc = data.json(f"{NSCALING_GLOBAL}/{name}", note=False)
        again = next((r for r in doc["results"] if (r["n"], r.get("replicate", 0)) == key), None)
        if again is not None and (again["lo"], again["hi"]) == (new["lo"], new["hi"]):
            data.json(f"{NSCALING_GLOBAL}/{name}")
            return (
                "search revision: the script's rerun with the current search, same seeds "
                f"(`{NSCALING_GLOBAL}/{name}`), has the cube's bits"
            )
    if data.exists(THRESHOLD_CHECK):
        checks = data.json(THRESHOLD_CHECK, note=False)["rows"]
        mine = [r for r in checks if (r["file"], r["n"], r["replicate"]) == (Path(rel).stem, *key)]
        if mine:
            data.json(THRESHOLD_CHECK)
            (check,) = mine
            if check["same_bits_as_published"]:
                found = "the published bracket bit for bit"
            elif check["same_bits_as_script_current_search"]:
                found = (
                    "the published bracket up to its last bits, which are the search "
                    "revision's: the script's own rerun with the current search "
                    f"(`{NSCALING_GLOBAL}/{name}`) has the same bits"
                )
                if abs(check["rel_diff_published"]) >= 1e-12:
                    found = (
                        "the bits of the script's rerun with the current search "
                        f"(`{NSCALING_GLOBAL}/{name}`)"
                    )
            elif list(check["kind_at_script_seed"]) == [new["lo"], new["hi"]]:
                found = (
                    "the cube's bits, so the draw makes no difference and the last bits are "
                    "the search revision's"
                )
            else:
                found = f"a bracket {100 * check['rel_diff_published']:+.2f} % from the published"
            return f"other seeds: the kind at the script's seed gives {found} (`{THRESHOLD_CHECK}`)"
    return "other seeds"


def bracket_rows(data: Data) -> list[list[str]]:
    """One row per published first crossing: study, row, n, published and cube bracket, status."""
    out = []
    used: dict[str, list[dict[str, Any]]] = {}
    for rel in THRESHOLD_FILES:
        doc = data.json(rel)
        study = Path(rel).stem
        label_key = LABEL_KEYS.get(rel)
        rows = doc.get("results", doc.get("rows", []))
        for r in sorted(rows, key=lambda r: (str(r.get(label_key, "")), r["n"])):
            label = r[label_key] if label_key else f"replicate {r.get('replicate', 0)}"
            shown, status = _row(data, rel, r, used)
            out.append([study, label, str(r["n"]), _bracket(r["lo"], r["hi"]), shown, status])
    for name, rows in used.items():
        data.note_store(name, rows)
    for name, p, steps in WORST_CASE_STUDIES:
        found = worst_case_brackets(data.json(f"{RATE}/{name}")["rows"])
        label = f"p = {p}, {steps}"
        if not found:  # the withdrawn rows were removed from the file
            out.append(
                [Path(name).stem, label, "—", "rows removed from the JSON", "—",
                 f"{WITHDRAWN}: see {WITHDRAWN_WHY}"]
            )  # fmt: skip
        for n, (lo, hi, _) in found.items():
            shown, status = _worst_case_rerun(data, Path(name).stem, n, lo, hi)
            out.append([Path(name).stem, label, str(n), _bracket(lo, hi), shown, status])
    return out


def _worst_case_rerun(data: Data, study: str, n: int, lo: float, hi: float) -> tuple[str, str]:
    """(cube's finding, status) of the published worst case of ``study`` at ``n``: the first
    grid ε whose found value error exceeds c times the certified upper end of ‖E‖ (``hi``; inf:
    none up to the grid's last ε ``lo``), beside the first certified such ε of the worst_case
    kind's cube. The adversary's seeds differ from the script's, so the finding, not the
    bits, is compared; the largest ratio found says how close each came."""
    for store in WORST_CASE_RERUNS.get(study, []):
        ds = data.store(store)
        if ds is None:
            continue
        rows = [r for r in cube_worst_case_rows(ds) if r["n"] == n]
        if not rows:
            continue
        (r,) = rows
        data.note_store(store, r, f"n = {n}")
        first = r["first_certified_eps_over_c"]
        grid = float(np.max(ds["eps"].values)) if "eps" in ds.dims else lo
        shown = f"none up to {grid:.4g}" if first is None else f"first at ε = {first:.4g}"
        pub = max(
            (x for x in data.json(f"{RATE}/{study}.json")["rows"] if x["n"] == n),
            key=lambda x: x["ratio"],
        )
        largest = (
            f"largest ratio {r['max_ratio']:.3f} ({r['max_kind']}) at ε = {r['max_eps']:.4g}; "
            f"published {pub['ratio']:.3f} ({pub['ratio_kind']}) at ε = {pub['eps']:.4g}"
        )
        if not r["all_certified"]:
            return shown, f"differs: not every norm of the rerun is certified ({largest})"
        same = (first is None and not math.isfinite(hi)) or (
            first is not None and math.isfinite(hi) and math.isclose(first, hi, rel_tol=1e-3)
        )
        verdict = "same finding" if same else "differs"
        return shown, f"{verdict} (other seeds; every norm certified; {largest})"
    status = (
        f"{_not_rerun(study)}; not {WITHDRAWN}: the gradient adversary rerun with certified "
        "norms that replaced the withdrawn rows (thresholds.md, “The gradient adversary, "
        "rerun with certified norms”)"
    )
    return "—", status


def _row(
    data: Data, rel: str, old: dict[str, Any], used: dict[str, list[dict[str, Any]]]
) -> tuple[str, str]:
    """(cube bracket, status) of published row ``old`` of ``rel``, recording the store rows it
    read in ``used`` (study -> rows)."""
    rerun = rerun_of(rel, old)
    if rerun is None:
        return "—", NOT_RERUN
    if not rerun.study:
        return "—", rerun.why
    cube = _rerun_rows(data, rerun)
    if cube is None:
        return "—", _not_rerun(rerun.study)
    mine = used.setdefault(rerun.study, [])
    by_key = {(r["n"], r["replicate"]): r for r in cube}
    new = by_key.get((old["n"], old.get("replicate", 0)))
    extra = ""
    if new is None and old.get("replicate", 0) > 0 and (old["n"], 0) in by_key:
        # The spec runs fewer replicates than were published (the pure tilt's repeat one
        # bracket): the published replicate is set beside the cube's replicate 0.
        new = by_key[(old["n"], 0)]
        extra = "; the spec runs fewer replicates: beside the cube's replicate 0"
    if new is None:
        return "—", f"{NOT_RERUN}: the store lacks this instance (`{rerun.study}`)"
    if new not in mine:
        mine.append(new)
    shown, status = _compare(old, new, new.get("noise", ""), _same_search(data, rel, old, new))
    return shown, status + extra


def accumulation_rows(data: Data) -> list[list[str]]:
    """One row per published g_p curve (p, n): g_p(0) and g_p at the first and last ε, beside
    the accumulation study's store."""
    acc = data.json(f"{RATE}/accumulation.json")
    eps = acc["setup"]["eps"]
    ds = data.store("accumulation")
    check = data.json(ACCUMULATION_CHECK)["same_seed_slice"] if ds is not None else None
    out, read = [], []
    for r in sorted(acc["rows"], key=lambda r: (r["p"], r["n"])):
        g = r["g"]
        values = f"{len(g)} values: g({eps[0]:g}) = {g[0]:.4f} … g({eps[-1]:g}) = {g[-1]:.4f}"
        shown, status = "—", _not_rerun("accumulation")
        if ds is not None:
            new = _cube_g(ds, r["p"], r["n"], eps)
            read.append(new)
            shown, status = _compare_g(np.asarray(g, float), new, check)
        out.append([str(r["p"]), str(r["n"]), f"{r['g0']:.4f}", values, shown, status])
    if ds is not None:
        data.note_store("accumulation", read, "g_p")
    return out


def _cube_g(ds: Any, p: int, n: int, eps: list[float]) -> np.ndarray:
    """The cube's g_p at (p, n) on the published ε (NaN where the cube lacks one)."""
    one = ds["g_p"].sel(p=p, n=n, replicate=0)
    grid = [float(e) for e in one["eps"].values]
    return np.array([float(one.values[grid.index(e)]) if e in grid else math.nan for e in eps])


def _compare_g(old: np.ndarray, new: np.ndarray, check: Mapping[str, Any]) -> tuple[str, str]:
    same = int(np.sum(old.view(np.int64) == new.view(np.int64)))
    shown = f"{same} of {len(old)} the same bits"
    if same == len(old):
        return shown, "same bits"
    if np.isnan(new).any():
        return shown, f"{NOT_RERUN}: the store lacks {int(np.isnan(new).sum())} of the ε"
    rel = float(np.max(np.abs(new / old - 1)))
    return shown, (
        f"differs by at most {rel:.1e} relative (other seeds: SS-HOPM's starts differ and "
        "converge to the same points to the solver's tolerance; with the script's seed, "
        f"rng = 0, the kind gives {check['same_bits']} of {check['values']} values the same "
        f"bits: `{ACCUMULATION_CHECK}`)"
    )


def _z(k1: int, m1: int, k2: int, m2: int) -> float:
    """Two-proportion z score of k1/m1 against k2/m2 (0 when both are 0 or 1)."""
    p = (k1 + k2) / (m1 + m2)
    se = math.sqrt(p * (1 - p) * (1 / m1 + 1 / m2))
    return 0.0 if se == 0 else (k1 / m1 - k2 / m2) / se


#: A row of many independent probabilities differs beyond noise when the largest of its |z|
#: would be reached by chance less often than this.
FAMILY_ALPHA = 0.01
#: ... and at the edge of noise below this: said so, with the point.
EDGE_ALPHA = 0.05


def largest_z_p(z: float, m: int) -> float:
    """The chance that the largest |z| of ``m`` independent standard normal scores reaches
    ``z``: a row compares hundreds of probabilities, and the largest of 224 passes 3.5 one time
    in ten by chance alone, so a fixed cut on it says nothing."""
    one = math.erfc(abs(z) / math.sqrt(2.0))
    return float(-math.expm1(m * math.log1p(-one))) if one < 1 else 1.0


def escape_rows(data: Data) -> list[list[str]]:
    """The per-start escape probability q, one row per n, beside the escape stores."""
    esc = data.json(f"{RATE}/attractor-escape.json")["rows"]
    cube: dict[tuple[int, int, float, int], tuple[int, int]] = {}
    studies = [s for s in ESCAPE_STUDIES if data.store(s)]
    for s in studies:
        mine = escape_counts(data.store(s))
        cube.update(mine)
        data.note_store(s, sorted(mine.items()), "escape_hits")
    check = data.json(ESCAPE_CHECK)["escape_same_seeds"] if studies else None
    out = []
    for n in sorted({r["n"] for r in esc}):
        mine = [r for r in esc if r["n"] == n]
        qs = [r["q"] for r in mine]
        what = f"q at {len(mine)} (r, N, ε) points, {min(qs):.3f}–{max(qs):.3f}"
        study = "attractor-escape-1024" if n == 1024 else "attractor-escape"
        pairs = [(r, cube.get((n, r["r"], round(r["eps"], 9), r["n_iter"]))) for r in mine]
        pairs = [(r, c) for r, c in pairs if c is not None]
        if not pairs:
            out.append(["attractor-escape", f"n = {n}", what, "—", _not_rerun(study)])
            continue
        same = sum(c[0] / c[1] == r["q"] for r, c in pairs)
        counts = [(c[0], c[1], round(r["q"] * r["n_starts"]), r["n_starts"]) for r, c in pairs]
        scores = [abs(_z(*k)) for k in counts]
        top = int(np.argmax(scores))
        z, (top_r, top_k) = scores[top], (pairs[top][0], counts[top])
        # Points where both sides saw q = 0 (or both 1) carry no score: not counted among m.
        scored = sum(0 < k[0] + k[2] < k[1] + k[3] for k in counts)
        family = largest_z_p(z, scored) if scored else 1.0
        shown = (
            f"{len(pairs)} of {len(mine)} points; {same} q equal; max |z| = {z:.2f} "
            f"(p = {family:.2g} for the largest of {scored} scored; at r = {top_r['r']}, "
            f"ε = {top_r['eps']:.3f}, N = {top_r['n_iter']}: {top_k[0]}/{top_k[1]} against "
            f"{top_k[2]}/{top_k[3]})"
        )
        if len(pairs) < len(mine):
            status = f"{NOT_RERUN}: the store holds {len(pairs)} of these points"
        elif same == len(mine):
            status = "same bits"
        else:
            noise = (
                "beyond"
                if family < FAMILY_ALPHA
                else "at the edge of"
                if family < EDGE_ALPHA
                else "within"
            )
            status = (
                f"differs {noise} binomial noise (other seeds: independent starts; the script's "
                f"seeds through the kind's numerics give {check['same_bits']} of "
                f"{check['rows']} q the same bits at n = {check['n']}: `{ESCAPE_CHECK}`)"
            )
        out.append(["attractor-escape", f"n = {n}", what, shown, status])
    return out


def confirm_rows(data: Data) -> list[list[str]]:
    """Whole-SROA confirmations of 1 − (1 − q)^L per point and stage, beside the stores."""
    out = []
    stores = {128: "attractor-confirm", 256: "attractor-confirm-256"}
    for row in data.json(f"{RATE}/attractor-confirm.json")["rows"]:
        study = stores[row["n"]]
        ds = data.store(study)
        sel = None
        if ds is not None and "eps" in ds.dims:  # the published ε, if the store sweeps ε
            grid = {round(float(e), 9): e for e in ds["eps"].values}
            at = grid.get(round(row["eps"], 9))
            ds = None if at is None else ds.sel({"eps": at})
        if ds is not None:
            starts = {m: ds.sel({"method": m})["budget_starts"].values for m in ds["method"].values}
            budget = {  # L of each method (NaN at instances not yet run)
                int(np.nanmax(v)): m for m, v in starts.items() if np.isfinite(v).any()
            }
            sel = ds.sel({"method": budget[row["L"]]}) if row["L"] in budget else None
        for st in row["stages"]:
            if not st["reached"]:
                continue
            j = row["n"] - st["r"]  # the cube's step index of stage r (step j + 1)
            what = (
                f"r = {st['r']}: {st['passed']} of {st['reached']} (q = {st['q']:.3f}, "
                f"1 − (1 − q)^L = {st['predicted']:.3f})"
            )
            where = f"n = {row['n']}, ε = {row['eps']:.3f}, L = {row['L']}"
            if sel is None:
                out.append(["attractor-confirm", where, what, "—", _not_rerun(study)])
                continue
            found = sel["step_found"].values[:, j]
            k, m = int(np.sum(found == 1)), int(np.sum(np.isfinite(found)))
            hits = int(np.nansum(sel["escape_hits"].values[:, j]))
            starts = int(np.nansum(sel["escape_starts"].values))
            q = hits / starts
            data.note_store(study, [k, m, hits, starts], f"L = {row['L']}")
            shown = (
                f"{k} of {m} (q = {q:.3f} from {starts} starts, 1 − (1 − q)^L = "
                f"{1 - (1 - q) ** row['L']:.3f})"
            )
            z = _z(k, m, st["passed"], st["reached"])
            zq = _z(hits, starts, round(st["q"] * starts), starts)
            status = (
                f"differs within binomial noise (z = {z:+.2f}; q: z = {zq:+.2f}; other seeds: "
                "independent runs and starts)"
                if max(abs(z), abs(zq)) < 3.5
                else f"differs beyond binomial noise (z = {z:+.2f}, q: z = {zq:+.2f})"
            )
            if (k, m) == (st["passed"], st["reached"]) and abs(q - st["q"]) < 5e-4:
                status = "same counts (other seeds)"
            if m < row["runs"]:  # an interrupted run: the same command resumes it
                status = f"{NOT_RERUN}: the store holds {m} of the {row['runs']} runs"
            out.append(["attractor-confirm", where, what, shown, status])
    return out


def capture_rows(data: Data) -> list[list[str]]:
    """Runs of the power method's whole SROA that lost a component, per ε, beside the store."""
    cap = data.json(f"{RATE}/attractor-capture.json")["rows"]
    ds = data.store("attractor-capture")
    out = []
    for eps in sorted({r["eps"] for r in cap}):
        mine = [r for r in cap if r["eps"] == eps]
        lost = sum(r["first_lost_step"] > 0 for r in mine)  # 0: none lost
        what = f"{lost} of {len(mine)} runs lost a component"
        shown, status = "—", _not_rerun("attractor-capture")
        if ds is not None:
            grid = {round(float(e), 9): e for e in ds["eps"].values}
            one = ds.sel({"method": "power@20", "eps": grid[round(eps, 9)]})["first_lost"].values
            k, m = int(np.sum(one > 0)), int(np.sum(np.isfinite(one)))
            data.note_store("attractor-capture", [k, m], f"power@20, ε = {eps:.4f}")
            z = _z(k, m, lost, len(mine))
            shown = f"{k} of {m} runs lost a component"
            status = (
                f"differs within binomial noise (z = {z:+.2f}; other seeds and instance: the "
                "kind's identity basis and unit weights, not the search's)"
                if abs(z) < 3.5
                else f"differs beyond binomial noise (z = {z:+.2f})"
            )
        out.append(["attractor-capture", f"ε = {eps:.4f}", what, shown, status])
    return out


def probability_rows(data: Data) -> list[list[str]]:
    """The published probabilities: per-start escape q (grouped per n), whole-SROA
    confirmations per point and stage, captures per ε."""
    return [*escape_rows(data), *confirm_rows(data), *capture_rows(data)]


def _md(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


#: Row statuses by what they start with, in the summary's order.
STATUSES = ("same", "differs", NOT_RERUN, NO_SPEC, WITHDRAWN)


def summary(rows: list[list[str]]) -> dict[str, int]:
    """Rows by status: same bits (or counts), differs, not rerun yet, no spec, withdrawn."""
    count = dict.fromkeys(STATUSES, 0)
    for row in rows:
        count[next(k for k in STATUSES if row[-1].startswith(k))] += 1
    return count


def regression_table(data: Data) -> str:
    """The whole regression block: a count, then brackets, g_p and probabilities."""
    brackets = bracket_rows(data)
    acc = accumulation_rows(data)
    prob = probability_rows(data)
    total = summary([*brackets, *acc, *prob])
    parts = [
        f"{sum(total.values())} published rows: **{total['same']} same** from a cube (bits, or "
        "counts and findings where the draw differs), "
        f"**{total['differs']} differ** (each says why), **{total[NOT_RERUN]} not rerun yet** "
        f"(no store under `{STUDIES}` holds them yet: none for their study, or an unfinished "
        f"one), **{total[NO_SPEC]} without a spec** (each says why), "
        f"**{total[WITHDRAWN]} withdrawn**.\n",
        "### First-crossing brackets\n",
        _md(["study", "row", "n", "published (lo, hi]", "cube (lo, hi]", "status"], brackets),
        "### Accumulation coefficients g_p(ε)\n",
        _md(["p", "n", "g_p(0)", "published g_p(ε)", "cube", "status"], acc),
        "### Probabilities\n",
        _md(["study", "point", "published", "cube", "status"], prob),
    ]
    return "\n".join(parts)
