"""The cost estimate of ``sroa-dist validate`` / ``run`` against measured runs: for each shipped
spec (reduced with ``--set`` overrides to a few minutes), the estimate the CLI prints
(:func:`sroa_dist.sweep.kinds.estimate`), then the sweep itself on a fresh embedded cluster.

    python benchmarks/bench_estimate.py                 # figure1, figure2 (both), threshold
    python benchmarks/bench_estimate.py --only figure2-sshopm

Measured per run: CPU seconds of the block tasks (``SweepResult.cpu_time``), the run's wall
time (cluster start-up included) and the load average before and after. The estimate is for
an idle machine, so the CPU figures compare directly, and the wall time is compared with the
estimate and with the estimate scaled by the load (load / CPUs, what the printed line warns
of). Writes ``benchmarks/out/bench_estimate.json``.
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
from sroa_dist.sweep.kinds import estimate, make_layout  # noqa: E402
from sroa_dist.sweep.run.cluster import connect, default_workers  # noqa: E402

#: name -> (spec, overrides): each a few minutes on 2 loaded cores.
RUNS = {
    "figure1": ("sweeps/figure1.toml", ["noise.sigma={start=0.0001, stop=0.2, step=0.0034}"]),
    "figure2-sshopm": ("sweeps/figure2-sshopm.toml", ["replicates=200"]),
    "figure2": ("sweeps/figure2.toml", ["replicates=15"]),
    "threshold": ("sweeps/smoke/threshold.toml", ["replicates=1", "tensor.n=[4, 6, 8]"]),
}


def measure(name: str, workers: int, tmp: Path) -> dict:
    path, overrides = RUNS[name]
    spec = load_spec(ROOT / path, overrides)
    est = estimate(spec, make_layout(spec), workers)
    store = tmp / f"{name}.zarr"
    shutil.rmtree(store, ignore_errors=True)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    with connect(workers=workers, dashboard_address=":0") as client:
        res = run_sweep(spec, store, client)
    wall = time.perf_counter() - t0
    assert res.complete, res.failed
    load1 = os.getloadavg()
    load = (load0[0] + load1[0]) / 2
    slow = max(1.0, load / default_workers())
    return {
        "spec": path,
        "overrides": overrides,
        "instances": res.n_instances,
        "blocks": res.n_blocks,
        "workers": workers,
        "predicted_cpu_s": round(est.cpu_seconds, 2),
        "measured_cpu_s": round(res.cpu_time, 2),
        "cpu_ratio": round(res.cpu_time / est.cpu_seconds, 3),
        "predicted_wall_s": round(est.wall_seconds, 1),
        "predicted_wall_at_load_s": round(est.wall_seconds * slow, 1),
        "measured_wall_s": round(wall, 1),
        "wall_ratio": round(wall / est.wall_seconds, 3),
        "loadavg_before": [round(x, 2) for x in load0],
        "loadavg_after": [round(x, 2) for x in load1],
    }


def main(argv: list[str] | None = None) -> int:
    ap = _common.parser(__doc__, "bench_estimate")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", choices=sorted(RUNS), action="append")
    args = ap.parse_args(argv)
    out: dict = {"runs": {}}
    tmp = Path(tempfile.mkdtemp(prefix="bench-estimate-"))
    try:
        for name in args.only or list(RUNS):
            r = measure(name, args.workers, tmp)
            out["runs"][name] = r
            print(
                f"{name}: {r['instances']} instances; CPU predicted {r['predicted_cpu_s']} s, "
                f"measured {r['measured_cpu_s']} s ({r['cpu_ratio']}x); wall predicted "
                f"{r['predicted_wall_s']} s (at load {r['predicted_wall_at_load_s']} s), measured "
                f"{r['measured_wall_s']} s; load {r['loadavg_before'][0]} -> "
                f"{r['loadavg_after'][0]}",
                flush=True,
            )
            _common.write(args.out, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
