"""The cost estimate of ``sroa-dist validate`` beside what each committed study store cost.

Inputs: the stores under docs/data/studies (their specs, from the store's own attributes, and
their per-instance timings) and docs/data/cost/study-runs.json (how each was run: workers, wall,
load, CPU where recorded). Writes docs/data/cost/study-estimates.json, one row per run:

- ``estimate_cpu_s``: the CPU seconds the cost model now prices the blocks that run computed at
  (:func:`sroa_dist.sweep.kinds.estimate` on the store's own layout);
- ``estimate_before_cpu_s``: the same from the model before the 2026-11-29 refit (kept from the
  previous output: the first run of this script recorded it; for a run made after the refit,
  the estimate its `sroa-dist run` printed when it started, ``printed_estimate_cpu_s`` in
  study-runs.json, which a run started before the refit was merged printed from the old model);
- ``measured_cpu_s``: the run's CPU seconds where recorded, else its wall seconds times its
  workers times min(1, CPUs / load) (``measured_kind`` says which; the load-scaled figure
  matches the recorded CPU within 0.7-1.2x on the runs that recorded both); with no load
  recorded, the wall times the workers (an upper bound);
- for threshold stores, ``searches``: per search n, p, method, n_evals and the wall seconds of
  the search (``solve_time``), the data the per-evaluation law is fitted to.

Usage: ``python docs/data/cost/study-estimates.py``
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from sroa_dist.sweep import open_results
from sroa_dist.sweep.kinds import estimate, make_layout, spec_from_dict

ROOT = Path(__file__).resolve().parents[3]
RUNS = Path(__file__).with_name("study-runs.json")
OUT = Path(__file__).with_name("study-estimates.json")
STUDIES = ROOT / "docs" / "data" / "studies"


def busy_seconds(ds, layout, workers: int, per_search: int) -> float:
    """Worker-seconds the run kept busy, from the store's own timings: block ``b`` ran from
    ``done_time[b]`` minus its instances' ``solve_time`` to ``done_time[b]``, and at any moment
    ``min(workers, per_search x running blocks)`` workers were busy (a search has
    ``per_search`` evaluations in flight: its ``k_section``). A run whose last long search ran
    alone kept one worker busy, not all of them."""
    st = np.asarray(ds["solve_time"], dtype=float)
    done = np.asarray(ds["done_time"], dtype=float)
    starts, ends = [], []
    for b in range(layout.n_blocks):
        t = st[layout.block_region(b)]
        if not np.isfinite(done[b]) or not np.isfinite(t).any():
            continue
        ends.append(done[b])
        starts.append(done[b] - float(np.nansum(t)))
    starts_a, ends_a = np.array(starts), np.array(ends)
    edges = np.unique(np.concatenate([starts_a, ends_a]))
    total = 0.0
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        active = int(np.sum((starts_a < b) & (ends_a > a)))
        total += (b - a) * min(workers, per_search * active)
    return float(total)


def measured(run: dict, cpus: int, busy: float | None) -> tuple[float, str]:
    """The run's CPU seconds, or the load-scaled figure from its busy worker-seconds (see the
    docstring)."""
    if run.get("cpu_s") is not None:
        return float(run["cpu_s"]), "cpu"
    if busy is None:
        busy = run["wall_s"] * run["workers"]
    if run.get("load") is None:
        return float(busy), "busy worker-s (upper bound)"
    load = sum(run["load"]) / 2
    return float(busy * min(1.0, cpus / max(load, 1e-9))), "busy worker-s x CPUs / load"


def searches(ds) -> list[dict]:
    flat = ds.stack(i=list(ds["solve_time"].dims))
    out = []
    for i in range(flat.sizes["i"]):
        one = flat.isel(i=i)
        t = float(one["solve_time"])
        if math.isnan(t):
            continue
        row = {k: one[k].item() for k in ("n", "method") if k in one.coords}
        if "n_evals" in one:
            row["n_evals"] = int(one["n_evals"])
        row["solve_time_s"] = round(t, 2)
        out.append(row)
    return out


def main() -> None:
    runs = json.loads(RUNS.read_text())
    before = {}
    if OUT.exists():
        before = {
            r["store"]: r.get("estimate_before_cpu_s") for r in json.loads(OUT.read_text())["rows"]
        }
    rows = []
    for run in runs["runs"]:
        ds = open_results(STUDIES / run["store"]).compute()
        spec = spec_from_dict(json.loads(ds.attrs["spec"]), run["store"])
        shape = json.loads(ds.attrs["block_shape"])  # the store's own blocks
        layout = make_layout(spec, chunks=[int(shape[d]) for d in make_layout(spec).dims])
        blocks = run.get("blocks")
        if blocks == "done":
            blocks = [int(b) for b in np.flatnonzero(np.asarray(ds["done"]).reshape(-1))]
        est = estimate(spec, layout, run["workers"], blocks)
        k = int(json.loads(ds.attrs.get("setting_search", "{}") or "{}").get("k_section", 1) or 1)
        busy = busy_seconds(ds, layout, run["workers"], k)
        cpu, kind = measured(run, runs["cpus"], busy)
        row = {
            "store": run["store"],
            "spec": str(ds.attrs.get("spec_source")),
            "kind": str(ds.attrs.get("sroa_kind")),
            "instances": est.instances,
            "workers": run["workers"],
            "load": run.get("load"),
            "note": run.get("note", ""),
            # a run after the refit: the estimate it printed when it started, where recorded
            "estimate_before_cpu_s": before.get(run["store"], run.get("printed_estimate_cpu_s")),
            "estimate_cpu_s": round(est.cpu_seconds, 1),
            "measured_cpu_s": round(cpu, 1),
            "measured_kind": kind,
            "busy_worker_s": None if busy is None else round(busy, 1),
            "ratio": round(est.cpu_seconds / cpu, 3),
        }
        if "n_evals" in ds:
            row["searches"] = searches(ds)
        rows.append(row)
        print(
            f"{row['store']:38s} before {row['estimate_before_cpu_s'] or float('nan'):9.1f} "
            f"now {row['estimate_cpu_s']:9.1f} measured {row['measured_cpu_s']:8.1f} "
            f"({kind}) x{row['ratio']}"
        )
    OUT.write_text(json.dumps({"rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
