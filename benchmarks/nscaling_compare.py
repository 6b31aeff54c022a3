"""Compare a rerun of the n-scaling studies (``nscaling_study.py rerun``: the global check on)
with the published results: per study, how many evaluations had a non-global step and whether
any bracket moved.

Usage::

    python benchmarks/nscaling_compare.py [NEW_DIR] [OLD_DIR]

(defaults docs/data/nscaling-global and docs/data/nscaling). Per study it prints the thresholds
compared, the evaluations whose SROA had a step the global check found non-global (redone, or
left non-global), the brackets that moved (new and old brackets disjoint, or their upper ends
more than the larger rtol apart), the non-monotone flags before and after, the artefacts, the
certified ends, and the value passes below the bracket whose vector fails the theorem criterion
at c = 0.5, radius = 0.3. Studies still running are compared on what they have; a study with no
new file is listed as not rerun. Reads only; writes nothing.
"""

from __future__ import annotations

import json
import math
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
NEW = ROOT / "docs" / "data" / "nscaling-global"
OLD = ROOT / "docs" / "data" / "nscaling"


def _load(path: pathlib.Path) -> dict | None:
    if not path.exists():
        return None
    return json.loads(path.read_text())


def _moved(old: dict, new: dict, rtol: float) -> bool:
    """Whether a threshold's bracket moved: disjoint brackets, or upper ends more than the
    search's relative bracket width apart."""
    (olo, ohi), (nlo, nhi) = (old["lo"], old["hi"]), (new["lo"], new["hi"])
    if math.isinf(ohi) or math.isinf(nhi):
        return math.isinf(ohi) != math.isinf(nhi)
    disjoint = nhi <= olo or ohi <= nlo
    return disjoint or abs(nhi / ohi - 1) > rtol + 1e-12


def compare(new_dir: pathlib.Path = NEW, old_dir: pathlib.Path = OLD) -> list[dict]:
    """One row per study found in either directory (fits.json excluded)."""
    names = sorted(
        {p.stem for d in (new_dir, old_dir) for p in d.glob("*.json") if p.stem != "fits"}
    )
    rows = []
    for name in names:
        new, old = _load(new_dir / f"{name}.json"), _load(old_dir / f"{name}.json")
        row: dict = {"study": name}
        if new is None:
            row["status"] = "not rerun"
            rows.append(row)
            continue
        rtol = float(new["study"].get("rtol", 0.02))
        old_by = {(r["n"], r["replicate"]): r for r in (old or {}).get("results", [])}
        results = new["results"]
        fields = results[0].get("trace_fields", []) if results else []
        redone_i = fields.index("redone") if "redone" in fields else None
        nonglobal_i = fields.index("non_global") if "non_global" in fields else None
        evals = sum(len(r["trace"]) for r in results)
        flagged = 0
        for r in results:
            for e in r["trace"]:
                redone = redone_i is not None and e[redone_i] > 0
                left = nonglobal_i is not None and bool(e[nonglobal_i])
                flagged += redone or left
        moved = []
        for r in results:
            o = old_by.get((r["n"], r["replicate"]))
            if o is not None and _moved(o, r, rtol):
                moved.append(
                    f"n={r['n']} rep={r['replicate']}: ({o['lo']:.4g}, {o['hi']:.4g}] -> "
                    f"({r['lo']:.4g}, {r['hi']:.4g}]"
                )
        ends = [r.get("certified_ends") for r in results]
        status = "done" if len(results) >= len(old_by) else "partial"
        row.update(
            status="new study" if old is None else status,
            thresholds=len(results),
            published=len(old_by),
            evaluations=evals,
            evals_non_global_step=flagged,
            evals_left_non_global=sum(r.get("evals_non_global", 0) for r in results),
            brackets_moved=moved,
            non_monotone_old=sum(
                bool(old_by[k]["non_monotone"])
                for k in ((r["n"], r["replicate"]) for r in results)
                if k in old_by
            ),
            non_monotone_new=sum(bool(r["non_monotone"]) for r in results),
            artefacts=sum(int(r.get("artefacts", 0)) for r in results),
            certified_ends={
                "stands": sum(e is True for e in ends),
                "does_not": sum(e is False for e in ends),
                "not_run": sum(e is None for e in ends),
            },
            theorem_fails_below_bracket=sum(
                int(r.get("theorem_fails_below_bracket", 0)) for r in results
            ),
            hours=sum(r["seconds"] for r in results) / 3600,
        )
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    new_dir = pathlib.Path(args[0]) if args else NEW
    old_dir = pathlib.Path(args[1]) if len(args) > 1 else OLD
    for row in compare(new_dir, old_dir):
        if row["status"] == "not rerun":
            print(f"{row['study']}: not rerun (no file in {new_dir})")
            continue
        ends = row["certified_ends"]
        count = (
            f"{row['thresholds']} thresholds"
            if row["status"] == "new study"
            else f"{row['thresholds']} of {row['published']} published thresholds"
        )
        print(
            f"{row['study']} ({row['status']}: {count}, {row['hours']:.2f} h): "
            f"{row['evals_non_global_step']} of "
            f"{row['evaluations']} evaluations had a non-global step "
            f"({row['evals_left_non_global']} left non-global after redo); "
            f"brackets moved: {len(row['brackets_moved'])}; non-monotone "
            f"{row['non_monotone_old']} -> {row['non_monotone_new']}, artefacts "
            f"{row['artefacts']}; certified ends stand {ends['stands']}, do not "
            f"{ends['does_not']}, not run {ends['not_run']}; value passes below the bracket "
            f"failing theorem(c=0.5, r=0.3): {row['theorem_fails_below_bracket']}"
        )
        for line in row["brackets_moved"]:
            print(f"    moved {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
