"""The regression table (docs/results/regression.md): every published first-crossing bracket,
accumulation coefficient g_p and probability, from the JSON it was published from, beside the
study's cube where one exists.

A row with a cube says whether the cube holds the same bits, or by how much it differs and
why; a row without one says "not rerun yet". The scripts that wrote the JSON derived their
seeds their own way, and the sweep kinds derive an instance's seed from the spec's master seed
and the instance's coordinates, so a rerun has the same seeds only where a spec was written to
reproduce them; elsewhere "same bits" means the number does not depend on the draw (the
coherent tilt's bracket is a property of the family, not of its random basis).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .rate_tables import NSCALING, RATE, WORST_CASE_STUDIES, worst_case_rows
from .sources import Data

__all__ = ["regression_table", "summary"]

#: Threshold studies published as JSON, read per row: (JSON, key of its rows, row label).
THRESHOLD_FILES = [
    *(
        (f"{NSCALING}/{s}.json", None)
        for s in (
            "tilt-p3", "tilt-p4", "tilt-p5", "tilt-p5-big", "power-tilt-p3", "power-tilt-p4",
            "tiltg-p3", "tiltg-p4", "gauss-p3", "gauss-p3-rec", "gauss-p4", "power-gauss-p3-rec",
        )
    ),
    *((f"{RATE}/theorem/theorem-p{p}-c{c}.json", None) for p in (3, 4) for c in ("0.5", "2")),
    (f"{RATE}/tilt-p6.json", None),
    (f"{RATE}/lambda-min.json", "weights"),
    (f"{RATE}/attractor-thresholds.json", "solver"),
]  # fmt: skip
NOT_RERUN = "not rerun yet"


def _bracket(lo: float, hi: float) -> str:
    return f"({lo:.4f}, {hi:.4f}]" if math.isfinite(hi) else f"none up to {lo:.4g}"


def _compare(old: dict[str, Any], new: dict[str, Any] | None, family: str = "") -> tuple[str, str]:
    """(cube bracket, status) of one published bracket of a study of ``family``."""
    if new is None:
        return "—", NOT_RERUN
    cube = _bracket(new["lo"], new["hi"])
    if (new["lo"], new["hi"]) == (old["lo"], old["hi"]):
        if family == "coherent-tilt":
            return cube, "same bits (other seeds: the tilt's bracket does not depend on the draw)"
        return cube, "same bits (other seeds)"
    if not (math.isfinite(new["hi"]) and math.isfinite(old["hi"])):
        return cube, "differs: one search crossed, the other did not (other seeds)"
    shift = math.sqrt(new["lo"] * new["hi"] / (old["lo"] * old["hi"])) - 1
    overlap = new["lo"] < old["hi"] and old["lo"] < new["hi"]
    why = "brackets overlap" if overlap else "brackets disjoint"
    return cube, f"differs by {100 * shift:+.2f} % ({why}; other seeds)"


def bracket_rows(data: Data) -> list[list[str]]:
    """One row per published first crossing: study, row, n, published and cube bracket, status."""
    out = []
    for rel, label_key in THRESHOLD_FILES:
        doc = data.json(rel)
        study = Path(rel).stem
        cube = {(r["n"], r["replicate"]): r for r in (data.threshold_store(study) or [])}
        if cube:
            data.note_store(study, list(cube.values()))
        rows = doc.get("results", doc.get("rows", []))
        for r in sorted(rows, key=lambda r: (str(r.get(label_key, "")), r["n"])):
            label = r[label_key] if label_key else f"replicate {r.get('replicate', 0)}"
            new = None if label_key else cube.get((r["n"], r.get("replicate", 0)))
            shown, status = _compare(r, new, doc.get("study", {}).get("family", ""))
            out.append([study, label, str(r["n"]), _bracket(r["lo"], r["hi"]), shown, status])
    for name, p, steps in WORST_CASE_STUDIES:
        for n, (lo, hi, _) in worst_case_rows(data, name).items():
            label = f"p = {p}, {steps}"
            out.append(
                [Path(name).stem, label, str(n), _bracket(lo, hi), "—", f"withdrawn; {NOT_RERUN}"]
            )
    return out


def accumulation_rows(data: Data) -> list[list[str]]:
    """One row per published g_p curve (p, n): g_p(0) and g_p at the first and last ε."""
    acc = data.json(f"{RATE}/accumulation.json")
    eps = acc["setup"]["eps"]
    out = []
    for r in sorted(acc["rows"], key=lambda r: (r["p"], r["n"])):
        g = r["g"]
        values = f"{len(g)} values: g({eps[0]:g}) = {g[0]:.4f} … g({eps[-1]:g}) = {g[-1]:.4f}"
        out.append([str(r["p"]), str(r["n"]), f"{r['g0']:.4f}", values, "—", NOT_RERUN])
    return out


def probability_rows(data: Data) -> list[list[str]]:
    """The published probabilities: per-start escape q (grouped per n), whole-SROA
    confirmations per point and stage, captures per ε."""
    out = []
    esc = data.json(f"{RATE}/attractor-escape.json")["rows"]
    for n in sorted({r["n"] for r in esc}):
        mine = [r for r in esc if r["n"] == n]
        qs = [r["q"] for r in mine]
        what = f"q at {len(mine)} (r, N, ε) points, {min(qs):.3f}–{max(qs):.3f}"
        out.append(["attractor-escape", f"n = {n}", what, "—", NOT_RERUN])
    for row in data.json(f"{RATE}/attractor-confirm.json")["rows"]:
        for st in row["stages"]:
            if not st["reached"]:
                continue
            what = (
                f"r = {st['r']}: {st['passed']} of {st['reached']} (q = {st['q']:.3f}, "
                f"1 − (1 − q)^L = {st['predicted']:.3f})"
            )
            where = f"n = {row['n']}, ε = {row['eps']:.3f}, L = {row['L']}"
            out.append(["attractor-confirm", where, what, "—", NOT_RERUN])
    cap = data.json(f"{RATE}/attractor-capture.json")["rows"]
    for eps in sorted({r["eps"] for r in cap}):
        mine = [r for r in cap if r["eps"] == eps]
        lost = sum(r["first_lost_step"] > 0 for r in mine)  # 0: none lost
        out.append(
            ["attractor-capture", f"ε = {eps:.4f}", f"{lost} of {len(mine)} runs lost a "
             "component", "—", NOT_RERUN]
        )  # fmt: skip
    return out


def _md(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def summary(rows: list[list[str]]) -> dict[str, int]:
    """Rows by status: same bits, differs, not rerun yet (withdrawn rows count as not rerun)."""
    count = {"same bits": 0, "differs": 0, NOT_RERUN: 0}
    for row in rows:
        status = row[-1]
        key = next(k for k in count if k in status)
        count[key] += 1
    return count


def regression_table(data: Data) -> str:
    """The whole regression block: a count, then brackets, g_p and probabilities."""
    brackets = bracket_rows(data)
    acc = accumulation_rows(data)
    prob = probability_rows(data)
    total = summary([*brackets, *acc, *prob])
    parts = [
        f"{sum(total.values())} published rows: **{total['same bits']} same bits** from a "
        f"cube, **{total['differs']} differ**, **{total[NOT_RERUN]} not rerun yet** (their "
        "studies have no store under `docs/data/studies` yet).\n",
        "### First-crossing brackets\n",
        _md(["study", "row", "n", "published (lo, hi]", "cube (lo, hi]", "status"], brackets),
        "### Accumulation coefficients g_p(ε)\n",
        _md(["p", "n", "g_p(0)", "published g_p(ε)", "cube", "status"], acc),
        "### Probabilities\n",
        _md(["study", "point", "published", "cube", "status"], prob),
    ]
    return "\n".join(parts)
