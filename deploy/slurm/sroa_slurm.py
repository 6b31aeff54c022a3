"""Run a sroa-dist sweep on SLURM: dask-jobqueue submits the worker jobs, this process holds the
Dask scheduler and drives the sweep (run it inside a long, small batch job: sroa-sweep.sbatch).

    python deploy/slurm/sroa_slurm.py sweeps/figure2.toml --store /scratch/$USER/figure2.zarr \\
        --partition normal --account myproject --jobs 8 --cores 8 --memory 16GB \\
        --walltime 02:00:00

Walltime. A worker job retires itself before SLURM kills it: ``--lifetime`` is the walltime less
a margin, ``--lifetime-stagger`` spreads the retirements so the jobs do not all leave at once.
A retiring worker takes no new tasks, its unfinished ones are rescheduled elsewhere (graceful
close), and it exits, which ends its job; the adaptive cluster
(``adapt(minimum_jobs=jobs, maximum_jobs=jobs)``) submits a replacement job. The workers get
``--no-lifetime-restart`` on purpose: ``--lifetime-restart`` would start a fresh worker inside the
same job, which SLURM then kills at the walltime, tasks and all (the option is here for sites
whose jobs outlive the worker lifetime, e.g. for periodic restarts). Whatever still gets killed
is harmless to the results: blocks are idempotent and only the store's done mask says a block is
finished, so killed blocks are recomputed, never lost or duplicated, and rerunning this script
resumes a sweep.

GPU workers. ``--gpu-jobs N`` also submits N jobs with ``--gres=gpu:1`` (``--gpu-gres``),
each one worker started with ``--resources GPU=1``: the blocks whose relaxation runs on
device "cuda" (``[solver.options.certified.relaxation] driver = "admm"``, ``device =
"cuda"``) run there and nowhere else, while the CPU jobs take the rest. Their worker
environment needs CuPy (``pip install 'sroa-dist[gpu]'``).

Exits. Before any job is queued, the partition is checked (``sinfo``) for a node that fits one
worker job's ``--cores`` and ``--memory``: a job that can never start would otherwise wait in
the queue forever while the driver waits for it. However the driver ends (sweep done, an error,
Ctrl-C, ``scancel`` or the walltime's SIGTERM, a hang-up), its worker jobs, running or pending,
are cancelled; only SIGKILL leaves them to their own walltime (SLURM sends SIGTERM first and
SIGKILL only ``KillWait`` seconds later).

Every SLURM command (``sbatch``, ``squeue``, ``scancel``, ``sinfo``) must find the cluster's
configuration: where it is not in the default place, export ``SLURM_CONF``.

Security. The scheduler listens on a login/batch node that other users share, so TLS is on by
default: ``--tls-dir`` takes the certificates of deploy/tls/make-certs.sh (on a shared file
system); without it a temporary CA is made and the worker certificate written (mode 0600) to
``--shared-temp-dir``. ``--no-tls`` turns TLS off. The dashboard binds to 127.0.0.1:8787 by
default: reach it with ``ssh -L 8787:127.0.0.1:8787 NODE``.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any


def walltime_seconds(walltime: str) -> int:
    """SLURM walltime ``[D-]HH:MM:SS`` / ``HH:MM`` / ``MM`` in seconds."""
    days = 0
    if "-" in walltime:
        d, walltime = walltime.split("-", 1)
        days = int(d)
    parts = [int(p) for p in walltime.split(":")]
    if len(parts) == 1:
        h, m, s = 0, parts[0], 0
    elif len(parts) == 2:
        h, m, s = parts[0], parts[1], 0
    elif len(parts) == 3:
        h, m, s = parts
    else:
        raise ValueError(f"walltime: expected [D-]HH:MM:SS; received {walltime!r}")
    return ((days * 24 + h) * 60 + m) * 60 + s


def lifetime_args(
    walltime: str, margin_s: int = 600, stagger_s: int = 300, restart: bool = False
) -> list[str]:
    """``dask worker`` options that retire a worker before its job's walltime.

    The latest retirement (lifetime + stagger) still leaves ``margin_s`` for the graceful close.
    """
    total = walltime_seconds(walltime)
    lifetime = total - margin_s - stagger_s
    if lifetime <= 0:
        raise ValueError(
            f"walltime {walltime}: expected more than margin + stagger = "
            f"{margin_s + stagger_s} s; received {total} s. Hint: lower --lifetime-margin / "
            "--lifetime-stagger or ask for a longer walltime"
        )
    return [
        "--lifetime",
        f"{lifetime}s",
        "--lifetime-stagger",
        f"{stagger_s}s",
        "--lifetime-restart" if restart else "--no-lifetime-restart",
    ]


class PartitionError(RuntimeError):
    """The partition cannot run a worker job of the requested size (or cannot be queried)."""


def partition_capacity(partition: str | None) -> tuple[int, int]:
    """Largest CPU count and memory (MiB) of one node of ``partition`` (None: the default one).

    Read from ``sinfo``, which lists each node of each partition (the default one marked ``*``).
    """
    cmd = ["sinfo", "--noheader", "--Node", "--format=%P %c %m"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise PartitionError(
            "sinfo not found: SLURM's client commands must be on PATH to submit worker jobs"
        ) from None
    if out.returncode != 0:
        msg = " ".join(out.stderr.split())
        raise PartitionError(f"sinfo failed: {msg}. Hint: is SLURM_CONF set for this cluster?")
    cpus, mem = [], []
    names = set()
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) != 3:
            continue
        name, default = fields[0].rstrip("*"), fields[0].endswith("*")
        names.add(name)
        if (partition is None and default) or name == partition:
            cpus.append(int(fields[1].rstrip("+")))
            mem.append(int(fields[2].rstrip("+")))
    if not cpus:
        which = f"partition {partition!r}" if partition else "a default partition"
        raise PartitionError(
            f"sinfo shows no node in {which}; partitions: {', '.join(sorted(names)) or 'none'}"
        )
    return max(cpus), max(mem)


def check_partition(partition: str | None, cores: int, memory: str) -> None:
    """Raise :class:`PartitionError` (one line) if no node of the partition fits one worker job.

    Without this check such jobs stay pending forever and the driver waits for them in silence.
    """
    from dask.utils import parse_bytes

    max_cpus, max_mib = partition_capacity(partition)
    want_mib = math.ceil(parse_bytes(memory) / 2**20)
    if cores > max_cpus or want_mib > max_mib:
        which = f"partition {partition!r}" if partition else "the default partition"
        raise PartitionError(
            f"{which} cannot fit a worker job: expected --cores <= {max_cpus} and --memory <= "
            f"{max_mib}MiB (its largest node); received --cores {cores} --memory {memory}. "
            "Hint: lower --cores/--memory or choose another --partition"
        )


def cancel_jobs(job_ids: list[str]) -> None:
    """``scancel`` these jobs (running or pending); ids already gone are ignored by SLURM."""
    ids = [j for j in job_ids if j]
    if ids:
        subprocess.run(["scancel", *ids], capture_output=True, timeout=60)


def _exit_on_signal(signum: int, frame: object) -> None:
    # SystemExit unwinds the `with` blocks of main: the client and the cluster close, which
    # cancels the worker jobs, and the sweep's writer lease is released.
    signal.signal(signum, signal.SIG_DFL)  # a second signal ends the process at once
    raise SystemExit(128 + signum)


def security(args: argparse.Namespace) -> Any:
    """The Security object for the cluster (None without TLS)."""
    if args.no_tls:
        return None
    from distributed.security import Security

    if args.tls_dir is None:
        return Security.temporary()
    d = Path(args.tls_dir)
    return Security(
        tls_ca_file=str(d / "ca.pem"),
        tls_scheduler_cert=str(d / "scheduler.pem"),
        tls_scheduler_key=str(d / "scheduler-key.pem"),
        tls_worker_cert=str(d / "worker.pem"),
        tls_worker_key=str(d / "worker-key.pem"),
        tls_client_cert=str(d / "client.pem"),
        tls_client_key=str(d / "client-key.pem"),
        require_encryption=True,
    )


def make_cluster(args: argparse.Namespace):
    """The SLURMCluster of these options (no job is submitted until it is scaled)."""
    from dask_jobqueue import SLURMCluster

    from sroa_dist.threads import blas_thread_env

    sec = security(args)
    scheduler_options: dict[str, Any] = {"dashboard_address": args.dashboard_address}
    if args.scheduler_host:
        scheduler_options["host"] = args.scheduler_host
    shared = args.shared_temp_dir
    if sec is not None and shared:
        Path(shared).expanduser().mkdir(mode=0o700, parents=True, exist_ok=True)
    return SLURMCluster(
        queue=args.partition,
        account=args.account,
        cores=args.cores,
        processes=args.cores,  # one single-threaded worker process per core
        memory=args.memory,
        walltime=args.walltime,
        job_name="sroa-worker",
        interface=args.interface,
        log_directory=args.log_directory,
        job_extra_directives=list(args.sbatch or []),
        # Dask's profiler can deadlock a worker on CPython < 3.11.9 (gh-106883): off. One BLAS
        # thread per worker process, set before numpy loads (sroa_dist.threads).
        job_script_prologue=[
            "export DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False",
            *(f"export {var}={value}" for var, value in blas_thread_env().items()),
            *list(args.prologue or []),
        ],
        # No worker dashboards on the compute nodes: the scheduler's dashboard shows the workers.
        worker_extra_args=[
            *lifetime_args(
                args.walltime, args.lifetime_margin, args.lifetime_stagger, args.lifetime_restart
            ),
            "--no-dashboard",
        ],
        scheduler_options=scheduler_options,
        security=sec,
        protocol="tls://" if sec is not None else None,
        shared_temp_directory=str(Path(shared).expanduser()) if shared else None,
    )


#: The Dask resource a GPU worker advertises; the sweep's GPU blocks (relaxation device
#: "cuda") hold one while they run (sroa_dist.sweep.run.cluster.GPU_RESOURCE).
GPU_RESOURCE = "GPU"


def gpu_job_script(cluster: Any, args: argparse.Namespace) -> str:
    """The job script of one GPU worker job: the cluster's worker job (same scheduler,
    security, prologue, lifetime) on a GPU node (``--gres``) with one worker process that
    advertises the GPU resource. Only blocks whose relaxation runs on device "cuda" need it;
    the worker's other threads may take CPU blocks too."""
    from dask_jobqueue.slurm import SLURMJob

    kw = dict(cluster._job_kwargs)  # what the cluster's own worker jobs are made from
    kw.pop("name", None)
    kw.update(
        cores=args.gpu_cores,
        processes=1,
        memory=args.gpu_memory,
        queue=args.gpu_partition or args.partition,
        job_name="sroa-gpu-worker",
        job_extra_directives=[f"--gres={args.gpu_gres}", *kw.get("job_extra_directives", [])],
        worker_extra_args=[*kw.get("worker_extra_args", []), "--resources", f"{GPU_RESOURCE}=1"],
    )
    return SLURMJob(scheduler=cluster.scheduler_address, name="sroa-gpu-worker", **kw).job_script()


def submit_gpu_jobs(cluster: Any, args: argparse.Namespace) -> list[str]:
    """``sbatch`` ``--gpu-jobs`` GPU worker jobs (:func:`gpu_job_script`); their job ids, for
    cancelling them at the end. They are not replaced at their walltime: give them one that
    covers the sweep, or resubmit the driver (it resumes)."""
    script = Path(args.log_directory) / "sroa-gpu-worker.sh"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(gpu_job_script(cluster, args))
    ids = []
    for _ in range(args.gpu_jobs):
        out = subprocess.run(
            ["sbatch", "--parsable", str(script)], capture_output=True, text=True, timeout=60
        )
        if out.returncode != 0:
            raise RuntimeError(f"sbatch {script}: {out.stderr.strip() or out.stdout.strip()}")
        ids.append(out.stdout.strip().split(";")[0])
    return ids


def _jobs(cluster: Any) -> list[Any]:
    """The cluster's worker job objects (SLURMJob), started or pending."""
    return list(getattr(cluster, "workers", {}).values())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Run a sroa-dist sweep on SLURM workers (dask-jobqueue).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("spec", help="TOML sweep spec")
    p.add_argument("--store", help="zarr store path (shared file system) or s3:// URL")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="spec override")
    p.add_argument("--block-size", type=int, help="instances per task for a new store")
    p.add_argument("--partition", help="SLURM partition (-p)")
    p.add_argument("--account", help="SLURM account (-A)")
    p.add_argument("--jobs", type=int, default=4, help="worker jobs kept running")
    p.add_argument("--cores", type=int, default=8, help="cores (= worker processes) per job")
    p.add_argument("--memory", default="16GB", help="memory per job")
    p.add_argument("--walltime", default="02:00:00", help="walltime per worker job")
    p.add_argument("--lifetime-margin", type=int, default=600, help="seconds kept for closing")
    p.add_argument("--lifetime-stagger", type=int, default=300, help="seconds of stagger")
    p.add_argument(
        "--lifetime-restart",
        action="store_true",
        help="restart workers inside their job at the lifetime (not for walltime-bound jobs)",
    )
    p.add_argument("--interface", help="network interface of the workers, e.g. ib0")
    p.add_argument("--scheduler-host", help="address the scheduler binds to")
    p.add_argument("--dashboard-address", default="127.0.0.1:8787")
    p.add_argument("--log-directory", default="logs/dask", help="worker job logs")
    p.add_argument("--sbatch", action="append", metavar="DIRECTIVE", help="extra #SBATCH line")
    p.add_argument(
        "--prologue",
        action="append",
        metavar="LINE",
        help="job script line before the worker starts, e.g. 'source ~/sroa/.venv/bin/activate'",
    )
    p.add_argument("--tls-dir", help="certificates from deploy/tls/make-certs.sh")
    p.add_argument("--no-tls", action="store_true", help="plain TCP (trusted networks only)")
    p.add_argument(
        "--shared-temp-dir",
        default="~/.sroa-dask",
        help="shared directory for the temporary worker certificate",
    )
    p.add_argument(
        "--gpu-jobs",
        type=int,
        default=0,
        help="GPU worker jobs (one worker with the GPU resource each) for blocks whose "
        "relaxation runs on device 'cuda'",
    )
    p.add_argument("--gpu-gres", default="gpu:1", help="--gres of a GPU worker job")
    p.add_argument("--gpu-partition", help="partition of the GPU jobs (default --partition)")
    p.add_argument("--gpu-cores", type=int, default=4, help="cores of a GPU worker job")
    p.add_argument("--gpu-memory", default="32GB", help="memory of a GPU worker job")
    p.add_argument("--dry-run", action="store_true", help="print the worker job script, exit")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from distributed import Client

    from sroa_dist.sweep import load_spec
    from sroa_dist.sweep.run.execute import run_sweep

    if not args.dry_run:
        try:
            check_partition(args.partition, args.cores, args.memory)
        except PartitionError as e:
            print(f"sroa_slurm.py: error: {e}", file=sys.stderr)
            return 2
    spec = load_spec(args.spec, args.set or ())
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    with make_cluster(args) as cluster:
        if args.dry_run:
            print(cluster.job_script())
            if args.gpu_jobs:
                print(gpu_job_script(cluster, args))
            return 0
        gpu_ids: list[str] = []
        try:
            cluster.adapt(minimum_jobs=args.jobs, maximum_jobs=args.jobs)
            gpu_ids = submit_gpu_jobs(cluster, args) if args.gpu_jobs else []
            with Client(cluster) as client:
                print(f"sroa-slurm: dashboard {client.dashboard_link}", file=sys.stderr)
                res = run_sweep(
                    spec,
                    args.store,
                    client=client,
                    block_size=args.block_size,
                    progress=sys.stderr,
                    history="sroa_slurm.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                )
        finally:
            # Closing the cluster cancels the jobs it knows; this also catches a job whose
            # submission raced with the close (scancel of a finished job is a no-op).
            job_ids = [getattr(w, "job_id", None) for w in _jobs(cluster)]
            cluster.close()
            cancel_jobs(job_ids + gpu_ids)
    print(
        # The block line of `sroa-dist run`'s summary: a resubmitted driver shows what it resumed.
        f"store: {res.store} ({res.action}); blocks: {res.n_blocks} total, "
        f"{res.blocks_done_before} already done, {res.blocks_computed} computed, "
        f"{len(res.failed)} failed"
    )
    return 0 if res.complete else 1


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.exit(main())
