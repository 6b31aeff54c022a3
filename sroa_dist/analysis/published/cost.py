"""The table of docs/results/benchmarks.md that sets ``sroa-dist validate``'s cost estimate
beside what each committed study store cost (docs/data/cost/study-estimates.json, written by
its script there; a test keeps its estimates equal to what the model prices now)."""

from __future__ import annotations

from .sources import Data

__all__ = ["COST_BLOCKS", "estimate_table"]

ESTIMATES = "docs/data/cost/study-estimates.json"

#: How each run's CPU seconds were measured, in the table's words.
_HOW = {
    "cpu": "CPU recorded",
    "busy worker-s x CPUs / load": "busy worker-s × CPUs / load",
    "busy worker-s (upper bound)": "busy worker-s, load unknown (upper bound)",
}


def _cpu(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds:,.0f}"


def _load(load: list[float] | None) -> str:
    return "—" if not load else f"{load[0]:g}–{load[1]:g}"


def estimate_table(data: Data) -> str:
    """One row per study run: the estimate before the 2026-11-29 refit, after it, the
    measured CPU seconds and how they were measured, and the ratio estimate / measured."""
    doc = data.json(ESTIMATES)
    head = ["store", "kind", "workers", "load", "estimate before, CPU s",
            "estimate now, CPU s", "measured, CPU s", "how measured", "busy worker-s",
            "now / measured"]  # fmt: skip
    rows = []
    for r in doc["rows"]:
        busy = r.get("busy_worker_s")
        ratio = r["estimate_cpu_s"] / r["measured_cpu_s"]
        rows.append(
            f"| {r['store']} | {r['kind']} | {r['workers']} | {_load(r.get('load'))} | "
            f"{_cpu(r['estimate_before_cpu_s'])} | {r['estimate_cpu_s']:,.0f} | "
            f"{r['measured_cpu_s']:,.0f} | {_HOW.get(r['measured_kind'], r['measured_kind'])} | "
            f"{'—' if busy is None else f'{busy:,.0f}'} | "
            f"{'**' if not 1 / 1.5 <= ratio <= 1.5 else ''}{ratio:.2f}"
            f"{'**' if not 1 / 1.5 <= ratio <= 1.5 else ''} |"
        )
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *rows]) + "\n"


#: Block name -> text generator (docs/results/benchmarks.md).
COST_BLOCKS = {"cost-estimates": estimate_table}
