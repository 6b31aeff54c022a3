"""Sweep throughput on the embedded LocalCluster: parallel efficiency (1 vs 2 workers), the
fraction of wall time spent outside the numerical kernels, and end-to-end wall time of the
paper's figure sweeps.

    python benchmarks/bench_sweep.py                 # everything affordable (~5 min on 2 cores)
    python benchmarks/bench_sweep.py --quick         # smaller certified sample
    python benchmarks/bench_sweep.py --full-certified  # also run figure1+figure2 certified in full

Writes ``benchmarks/out/bench_sweep.json``.

Definitions (per run, ``W`` workers):

* ``compute_wall``: from the first submission to the last result (cluster start-up excluded);
* ``task_time``: summed wall time of the tasks (compute + store writes), ``kernel_time``: summed
  time inside numerical-core calls;
* ``outside_kernel = 1 - kernel_time / (W * compute_wall)``: everything that is not numerics
  (scheduling, serialisation, store writes, idle workers at the tail);
* parallel efficiency ``= compute_wall(1) / (2 * compute_wall(2))``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import _common

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sroa_dist.sweep import load_spec, run_sweep  # noqa: E402
from sroa_dist.sweep.kinds import make_layout  # noqa: E402


def one_run(spec, workers: int, tmp: Path, tag: str, **kw) -> dict:
    store = tmp / f"{tag}-{workers}.zarr"
    shutil.rmtree(store, ignore_errors=True)
    t0 = time.perf_counter()
    res = run_sweep(spec, store, workers=workers, dashboard_address=":0", **kw)
    wall = time.perf_counter() - t0
    assert res.complete, res.failed
    W = res.n_workers
    return {
        "spec": spec.name,
        "workers": W,
        "instances": res.n_instances,
        "blocks": res.n_blocks,
        "wall_s": round(wall, 3),
        "compute_wall_s": round(res.compute_wall_time, 3),
        "task_time_s": round(res.task_time, 3),
        "kernel_time_s": round(res.kernel_time, 3),
        "cpu_time_s": round(res.cpu_time, 3),
        # < 1 when other processes took CPU from the workers: wall-clock ratios then
        # measure the machine's load, not the sweep service
        "cpu_share_of_task_wall": round(res.cpu_time / res.task_time, 4),
        "loadavg_after": os.getloadavg()[0],
        "instances_per_s": round(res.n_instances / res.compute_wall_time, 2),
        "outside_kernel_fraction": round(1 - res.kernel_time / (W * res.compute_wall_time), 4),
        "outside_kernel_in_tasks_fraction": round(1 - res.kernel_time / res.task_time, 4),
    }


def scaling(spec, tmp: Path, tag: str, **kw) -> dict:
    r1 = one_run(spec, 1, tmp, tag, **kw)
    r2 = one_run(spec, 2, tmp, tag, **kw)
    eff = r1["compute_wall_s"] / (2 * r2["compute_wall_s"])
    print(
        f"{tag}: 1 worker {r1['compute_wall_s']:.1f} s, 2 workers {r2['compute_wall_s']:.1f} s "
        f"-> parallel efficiency {eff:.1%}; outside kernels {r2['outside_kernel_fraction']:.1%} "
        f"of worker time ({r2['outside_kernel_in_tasks_fraction']:.1%} inside tasks)",
        flush=True,
    )
    return {"one_worker": r1, "two_workers": r2, "parallel_efficiency": round(eff, 4)}


def main(argv: list[str] | None = None) -> int:
    ap = _common.parser(__doc__, "bench_sweep")
    ap.add_argument("--quick", action="store_true", help="smaller certified sample")
    ap.add_argument("--full-certified", action="store_true", help="run figure1+2 certified")
    args = ap.parse_args(argv)
    out: dict = {"loadavg_at_start": os.getloadavg()}
    tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    try:
        # 1. figure2 with SS-HOPM (steps and norm): the whole sweep, 1 vs 2 workers.
        f2s = load_spec(ROOT / "sweeps/figure2-sshopm.toml")
        out["figure2_sshopm"] = scaling(f2s, tmp, "figure2-sshopm")
        # 2. figure2 with the certified method: a sample of replicates, 1 vs 2 workers.
        reps = 8 if args.quick else 16
        f2c = load_spec(ROOT / "sweeps/figure2.toml", [f"replicates={reps}"])
        out["figure2_certified_sample"] = scaling(f2c, tmp, "figure2-certified")
        per_inst = out["figure2_certified_sample"]["two_workers"]["kernel_time_s"] / (3 * reps)
        # 3. end to end (start-up included), embedded default cluster: figure1 + figure2 sshopm.
        t0 = time.perf_counter()
        e1 = one_run(load_spec(ROOT / "sweeps/figure1-sshopm.toml"), 2, tmp, "e2e")
        e2 = one_run(f2s, 2, tmp, "e2e")
        out["figure1_plus_figure2_sshopm_wall_s"] = round(time.perf_counter() - t0, 2)
        out["figure1_sshopm"], out["figure2_sshopm_e2e"] = e1, e2
        print(
            f"figure1 + figure2 (sshopm), 2 workers: {out['figure1_plus_figure2_sshopm_wall_s']} s"
        )
        # 4. figure1 certified: a sample along sigma, then the full-size estimate.
        sig = "{start = 0.0001, stop = 0.2, step = 0.02}"
        f1c = load_spec(ROOT / "sweeps/figure1.toml", [f"noise.sigma={sig}"])
        s1 = one_run(f1c, 2, tmp, "figure1-certified", block_size=1)
        per_inst_f1 = s1["kernel_time_s"] / s1["instances"]
        out["figure1_certified_sample"] = s1
        n1 = make_layout(load_spec(ROOT / "sweeps/figure1.toml")).n_instances
        est = (n1 * per_inst_f1 + 1500 * per_inst) / 2
        out["figure1_plus_figure2_certified_estimate_s"] = round(est, 1)
        out["certified_seconds_per_instance"] = {
            "figure1": round(per_inst_f1, 3),
            "figure2": round(per_inst, 3),
        }
        print(
            f"certified: {per_inst_f1:.2f} s/instance (figure1), {per_inst:.2f} s/instance "
            f"(figure2) -> figure1 + figure2 on 2 workers ~ {est / 60:.0f} min (estimate)"
        )
        if args.full_certified:
            t0 = time.perf_counter()
            one_run(load_spec(ROOT / "sweeps/figure1.toml"), 2, tmp, "full")
            one_run(load_spec(ROOT / "sweeps/figure2.toml"), 2, tmp, "full")
            out["figure1_plus_figure2_certified_wall_s"] = round(time.perf_counter() - t0, 1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    path = _common.write(args.out, out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
