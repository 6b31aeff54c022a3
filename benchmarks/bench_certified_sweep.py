"""The certified Figure 2 sweep against its own solves: CPU seconds per instance in the sweep
(embedded Dask cluster, store writes, digests, scheduling) divided by CPU seconds per instance
for the same blocks computed in one plain process, same machine, same run.

    python benchmarks/bench_certified_sweep.py                     # 60 instances, 2 rounds
    python benchmarks/bench_certified_sweep.py --replicates 100 --rounds 3
    python benchmarks/bench_certified_sweep.py --full               # also the whole 1,500
    python benchmarks/bench_certified_sweep.py --default-threads    # also unlimited BLAS

Writes ``benchmarks/out/bench_certified_sweep.json``. Target: ratio <= 1.1 on an idle machine.

Each round runs the sweep, then the one-process solves, in a fresh process each (so both build
the relaxation's cached structure once, as a fresh worker does). Rounds interleave the two
sides so that a change in the machine's load hits both. Measured per round:

* ``sweep.task_cpu_s``: CPU seconds the block tasks used in the workers (their process CPU
  while the task ran: solves, store writes and any Dask thread that ran meanwhile);
* ``sweep.worker_cpu_s``: CPU seconds of the whole worker processes from the start of the run
  to its end (plugin set-up, heartbeats and idle tails included);
* ``solo.cpu_s``: CPU seconds of ``compute_block`` over every block in one plain process with
  one BLAS thread (``sroa_dist.threads.limit_blas_threads``), imports excluded;
* ``ratio_task`` and ``ratio_worker``: the two sweep figures per instance over the solo's;
* with ``--default-threads``, the one-process side again with the machine's default BLAS
  threads (what a process without an explicit limit burns), and its ratio to one thread;
* the run's wall time, cluster start-up included, and the load average around it;
* with ``--idle-tax``, the CPU an idle worker uses per wall second (its event loop's periodic
  callbacks): a task is charged for it while it runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sroa_dist.sweep import load_spec, run_sweep  # noqa: E402
from sroa_dist.sweep.kinds import make_layout  # noqa: E402
from sroa_dist.sweep.run.cluster import connect  # noqa: E402

SPEC = ROOT / "sweeps/figure2.toml"

# The one-process side, in its own interpreter: the same blocks as the sweep, one after the
# other, with the BLAS thread limit the library sets for a single process.
_SOLO = r"""
import json, sys, time
from sroa_dist.sweep import load_spec
from sroa_dist.sweep.kinds import make_layout
from sroa_dist.sweep.layout import block_task
from sroa_dist.sweep.run.worker import compute_block
spec = load_spec(sys.argv[1], [f"replicates={sys.argv[2]}"])
layout = make_layout(spec)
if sys.argv[3] == "one":
    try:
        from sroa_dist.threads import limit_blas_threads
    except ImportError:  # a tree before sroa_dist.threads (a baseline): the same limit
        from threadpoolctl import threadpool_limits as limit_blas_threads
    limit_blas_threads(1)
c0, t0 = time.process_time(), time.perf_counter()
n = 0
for b in range(layout.n_blocks):
    n += compute_block(block_task(spec, layout, b)).n_instances
print(json.dumps({"instances": n, "cpu_s": time.process_time() - c0,
                  "wall_s": time.perf_counter() - t0}))
"""


def _process_cpu() -> float:
    return time.process_time()


def sweep_round(replicates: int, workers: int, tmp: Path) -> dict:
    """One sweep on a fresh embedded cluster; CPU of its tasks and of its worker processes."""
    spec = load_spec(SPEC, [f"replicates={replicates}"])
    store = tmp / "figure2.zarr"
    shutil.rmtree(store, ignore_errors=True)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with connect(workers=workers, dashboard_address=":0") as client:
        started = time.perf_counter() - t0
        before = client.run(_process_cpu)
        res = run_sweep(spec, store, client)  # the default blocks, as the one-process side
        after = client.run(_process_cpu)
    wall = time.perf_counter() - t0
    assert res.complete, res.failed
    worker_cpu = sum(after[w] - before[w] for w in after)
    n = res.n_instances
    return {
        "instances": n,
        "blocks": res.n_blocks,
        "workers": len(after),
        "wall_s": round(wall, 2),
        "cluster_start_s": round(started, 2),
        "compute_wall_s": round(res.compute_wall_time, 2),
        "task_cpu_s": round(res.cpu_time, 2),
        "worker_cpu_s": round(worker_cpu, 2),
        "kernel_time_s": round(res.kernel_time, 2),
        "task_cpu_per_instance_s": round(res.cpu_time / n, 4),
        "worker_cpu_per_instance_s": round(worker_cpu / n, 4),
        "loadavg": [round(load0, 2), round(os.getloadavg()[0], 2)],
    }


def idle_tax(workers: int, seconds: float = 30.0) -> dict:
    """CPU a worker of a fresh embedded cluster, set up for a sweep but given no task, uses
    per wall second (Dask's event-loop tick, memory and system monitors, heartbeats, the
    watchdog): what a block task's CPU includes on top of its own while it runs."""
    from sroa_dist.sweep.run.plugin import WorkerSetup

    with connect(workers=workers, dashboard_address=":0") as client:
        client.register_plugin(WorkerSetup())
        time.sleep(5.0)  # past the set-up
        before, t0 = client.run(_process_cpu), time.perf_counter()
        time.sleep(seconds)
        after, wall = client.run(_process_cpu), time.perf_counter() - t0
    per = [(after[w] - before[w]) / wall for w in after]
    return {
        "cpu_per_wall_s": [round(x, 4) for x in per],
        "seconds": seconds,
        "loadavg": round(os.getloadavg()[0], 2),
    }


def solo_round(replicates: int, threads: str = "one") -> dict:
    """The same blocks computed one after the other in a fresh plain process: with one BLAS
    thread (``threads="one"``), or with the BLAS default of the machine (``"default"``, and
    ``$SROA_BLAS_THREADS`` at the CPU count so the front doors do not limit it either)."""
    load0 = os.getloadavg()[0]
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(var, None)  # _common sets them for this process; the child chooses its own
    if threads == "default":
        env["SROA_BLAS_THREADS"] = str(os.cpu_count() or 1)
    out = subprocess.run(
        [sys.executable, "-c", _SOLO, str(SPEC), str(replicates), threads],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=env,
    )
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        "instances": res["instances"],
        "cpu_s": round(res["cpu_s"], 2),
        "wall_s": round(res["wall_s"], 2),
        "cpu_per_instance_s": round(res["cpu_s"] / res["instances"], 4),
        "loadavg": [round(load0, 2), round(os.getloadavg()[0], 2)],
    }


def main(argv: list[str] | None = None) -> int:
    ap = _common.parser(__doc__, "bench_certified_sweep")
    ap.add_argument("--replicates", type=int, default=20, help="per noise model (default 20)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--full", action="store_true", help="also time the whole 1,500-instance run")
    ap.add_argument(
        "--default-threads",
        action="store_true",
        help="also run the one-process side with the machine's default BLAS threads",
    )
    ap.add_argument(
        "--idle-tax",
        action="store_true",
        help="also measure the CPU an idle worker uses per wall second",
    )
    args = ap.parse_args(argv)
    layout = make_layout(load_spec(SPEC, [f"replicates={args.replicates}"]))
    out: dict = {
        "spec": str(SPEC.relative_to(ROOT)),
        "replicates": args.replicates,
        "blocks": layout.n_blocks,
        "loadavg_at_start": os.getloadavg(),
        "rounds": [],
    }
    tmp = Path(tempfile.mkdtemp(prefix="bench-certified-sweep-"))
    try:
        if args.idle_tax:
            out["idle_tax"] = idle_tax(args.workers)
            print(f"idle worker CPU per wall second: {out['idle_tax']}", flush=True)
        for k in range(args.rounds):
            sw = sweep_round(args.replicates, args.workers, tmp)
            so = solo_round(args.replicates)
            rnd = {
                "sweep": sw,
                "solo": so,
                "ratio_task": round(sw["task_cpu_per_instance_s"] / so["cpu_per_instance_s"], 3),
                "ratio_worker": round(
                    sw["worker_cpu_per_instance_s"] / so["cpu_per_instance_s"], 3
                ),
            }
            if args.default_threads:
                free = solo_round(args.replicates, "default")
                rnd["solo_default_blas_threads"] = free
                rnd["ratio_default_threads"] = round(
                    free["cpu_per_instance_s"] / so["cpu_per_instance_s"], 3
                )
                print(
                    f"round {k + 1}: one process with the default BLAS threads: "
                    f"{free['cpu_per_instance_s']} s CPU per instance "
                    f"({rnd['ratio_default_threads']}x one thread), wall {free['wall_s']} s vs "
                    f"{so['wall_s']} s",
                    flush=True,
                )
            out["rounds"].append(rnd)
            print(
                f"round {k + 1}: sweep {sw['instances']} instances in {sw['wall_s']} s wall "
                f"({sw['cluster_start_s']} s cluster start); CPU/instance: tasks "
                f"{sw['task_cpu_per_instance_s']} s, whole workers "
                f"{sw['worker_cpu_per_instance_s']} s, one process {so['cpu_per_instance_s']} s "
                f"-> ratio {rnd['ratio_task']} (tasks), {rnd['ratio_worker']} (workers); "
                f"load {sw['loadavg']} / {so['loadavg']}",
                flush=True,
            )
        if args.full:
            full = sweep_round(500, args.workers, tmp)
            out["full"] = full
            print(f"full figure2: {full['instances']} instances in {full['wall_s']} s wall")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    path = _common.write(args.out, out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
