"""Calibration of the sweep cost model (:mod:`sroa_dist.sweep.cost`): CPU seconds of one
instance per ``(method, norm method, n, p)``, split into a fixed part (drawing the instance,
the ``||E||`` bound, the block's bookkeeping) and a part per SROA step, and the evaluations a
threshold search makes out of its bound.

    python benchmarks/bench_instance_cost.py                    # the calibration points below
    python benchmarks/bench_instance_cost.py --replicates 4     # fewer instances per point

Each point runs the tensor kind's block kernel (``compute_block``) in this one process with one
BLAS thread, Figure-2's instances (identity basis, unit weights, binary/uniform/Gaussian noise at
σ = 0.01), once with one SROA step and once with the full ``n`` steps: CPU seconds per instance
(``time.process_time``, so a loaded machine inflates them little; the wall times are recorded
beside them) give ``step = (full − one) / (n − 1)`` and ``fixed = one − step``. The threshold
part runs the smoke threshold spec's searches (sweeps/smoke/threshold.toml) the same way and
records their mean evaluations over ``max_evals``, their CPU seconds per evaluation and the
ratio of their CPU seconds to the threshold kind's search model at the most evaluations (an
input of ``SEARCH_COST_SCALE``, now refitted per evaluation at the expected count:
docs/data/cost/study-estimates.json).

Writes ``benchmarks/out/bench_instance_cost.json``; the committed copy of a calibration is
``docs/data/cost/instance-cost.json``, whose numbers the package's constants carry.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import _common

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sroa_dist.sweep import load_spec  # noqa: E402
from sroa_dist.sweep.kinds import make_layout, spec_from_dict  # noqa: E402
from sroa_dist.sweep.kinds.threshold import search_cost  # noqa: E402
from sroa_dist.sweep.layout import block_task  # noqa: E402
from sroa_dist.sweep.run.worker import compute_block  # noqa: E402
from sroa_dist.threads import limit_blas_threads  # noqa: E402

#: (method, norm method, n, p) calibrated: Figure 1/2's certified and SS-HOPM sweeps, the
#: default SS-HOPM sweep (certified norm) and the local method at the threshold smoke's sizes.
POINTS = [
    ("certified", "certified", 10, 3),
    ("sshopm", "sshopm", 10, 3),
    ("sshopm", "certified", 10, 3),
    ("sshopm", "sshopm", 4, 3),
    ("sshopm", "sshopm", 16, 3),
    ("sshopm", "sshopm", 32, 3),
    ("sshopm", "sshopm", 8, 4),
    ("certified", "certified", 8, 4),
]


#: Instances per noise model (and per block) of a local method's calibration point.
LOCAL_REPLICATES = 64


def _spec(method: str, norm: str, n: int, p: int, steps: int, replicates: int):
    return spec_from_dict(
        {
            "name": "calibration",
            "seed": 2015,
            "replicates": replicates,
            "tensor": {"n": n, "p": p, "basis": "identity", "lambdas": 1.0},
            "noise": {"model": ["binary", "uniform", "gaussian"], "sigma": 0.01},
            "solver": {"method": method, "norm_method": norm, "steps": steps},
        }
    )


def _run_blocks(spec, block_size: int | None = None) -> dict:
    """Every block of ``spec`` in this process: CPU and wall seconds, instances, results."""
    layout = make_layout(spec, block_size=block_size)
    c0, t0 = time.process_time(), time.perf_counter()
    results = [compute_block(block_task(spec, layout, b)) for b in range(layout.n_blocks)]
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    n = sum(r.n_instances for r in results)
    return {"instances": n, "blocks": layout.n_blocks, "cpu_s": cpu, "wall_s": wall, "res": results}


def tensor_point(method: str, norm: str, n: int, p: int, replicates: int) -> dict:
    """Fixed and per-step CPU seconds of one instance at one calibration point.

    A local method solves a block's instances as one batch, cheaper per instance the larger
    the batch: its points run :data:`LOCAL_REPLICATES` instances per noise model in blocks of
    that many (cheap instances get blocks of tens to hundreds by default); a certified point
    solves one relaxation per instance, whatever the block, and runs ``replicates``.
    """
    local = method not in ("certified", "sos")
    reps = max(replicates, LOCAL_REPLICATES) if local else replicates
    block = reps if local else None
    _run_blocks(_spec(method, norm, n, p, 1, 1))  # warm: imports, the relaxation's structure
    one = _run_blocks(_spec(method, norm, n, p, 1, reps), block)
    full = _run_blocks(_spec(method, norm, n, p, n, reps), block)
    per_one = one["cpu_s"] / one["instances"]
    per_full = full["cpu_s"] / full["instances"]
    step = max(0.0, (per_full - per_one) / (n - 1))
    return {
        "method": method,
        "norm_method": norm,
        "n": n,
        "p": p,
        "instances": one["instances"],
        "cpu_one_step_s": round(per_one, 5),
        "cpu_full_s": round(per_full, 5),
        "wall_one_step_s": round(one["wall_s"] / one["instances"], 5),
        "wall_full_s": round(full["wall_s"] / full["instances"], 5),
        "fixed_s": round(per_one - step, 5),
        "step_s": round(step, 6),
    }


def threshold_point(replicates: int) -> dict:
    """The smoke threshold searches: evaluations made over the bound, CPU per evaluation."""
    spec = load_spec(ROOT / "sweeps/smoke/threshold.toml", [f"replicates={replicates}"])
    run = _run_blocks(spec)
    evals = [int(e) for r in run["res"] for e in r.data["n_evals"].ravel()]
    # The threshold kind's model of the same searches, each at its most evaluations: what
    # SEARCH_COST_SCALE scales to the measured CPU.
    layout = make_layout(spec)
    checked = bool(spec.threshold.search["global_check"])
    model = sum(
        search_cost(st.method, st.n, st.p, spec.n_steps, st.noise, checked)
        for b in range(layout.n_blocks)
        for _, st, _ in block_task(spec, layout, b).instances(spec)
    )
    return {
        "spec": "sweeps/smoke/threshold.toml",
        "searches": run["instances"],
        "max_evals": spec.n_steps,
        "mean_evals": round(sum(evals) / len(evals), 2),
        "eval_fraction": round(sum(evals) / len(evals) / spec.n_steps, 3),
        "cpu_s": round(run["cpu_s"], 2),
        "cpu_per_search_s": round(run["cpu_s"] / run["instances"], 4),
        "cpu_per_eval_s": round(run["cpu_s"] / sum(evals), 5),
        "model_at_max_evals_s": round(model, 2),
        "search_cost_scale": round(run["cpu_s"] / model, 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = _common.parser(__doc__, None)
    ap.add_argument("--replicates", type=int, default=8, help="per noise model (default 8)")
    ap.add_argument("--threshold-replicates", type=int, default=1)
    ap.add_argument(
        "--part", choices=["all", "tensor", "threshold"], default="all", help="what to measure"
    )
    args = ap.parse_args(argv)
    limit_blas_threads(1)
    out: dict = {"loadavg_at_start": os.getloadavg(), "points": []}
    name = args.out or "bench_instance_cost" + ("" if args.part == "all" else f"-{args.part}")
    if args.part in ("all", "tensor"):
        for m, norm, n, p in POINTS:
            pt = tensor_point(m, norm, n, p, args.replicates)
            pt["loadavg"] = os.getloadavg()[0]
            out["points"].append(pt)
            print(
                f"{m}/{norm} n={n} p={p}: fixed {pt['fixed_s']} s + {pt['step_s']} s/step "
                f"(CPU per instance, {pt['instances']} instances)",
                flush=True,
            )
            _common.write(name, out)  # what is measured survives an interrupted run
    if args.part in ("all", "threshold"):
        out["threshold"] = threshold_point(args.threshold_replicates)
        print(f"threshold smoke: {out['threshold']}", flush=True)
    out["loadavg_at_end"] = os.getloadavg()
    print(_common.write(name, out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
