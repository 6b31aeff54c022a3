"""The sweep cost model: CPU seconds of one SROA instance, calibrated by measurement, and what a
whole sweep costs on a number of workers: the one estimate ``sroa-dist validate`` and
``sroa-dist run`` print before any work.

The home of the model. A sweep kind prices one instance of its own (its ``instance_cost``
member, see :mod:`.kinds.registry`) from :func:`sroa_seconds` (tensor sweeps; a threshold
search's evaluations) or from its own measured model; :func:`sweep_estimate` adds what running
on Dask adds (:data:`SWEEP_OVERHEAD`, :data:`STARTUP_SECONDS`) and schedules the blocks on the
workers. Every figure is for an idle machine: on a loaded one, CPU seconds hold roughly and
wall time grows with the load (:func:`estimate_line` says so when the load is high).

Pure arithmetic; imports only the numerical core's cost records.
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

from sroa_dist.methods import solve_cost

__all__ = [
    "CALIBRATED",
    "STARTUP_SECONDS",
    "SWEEP_OVERHEAD",
    "SweepEstimate",
    "estimate_line",
    "load_note",
    "makespan",
    "sroa_seconds",
    "sweep_estimate",
]

#: CPU seconds of one tensor-sweep instance on one core, one BLAS thread, by
#: ``(method, norm method, n, p)``: ``(fixed, per SROA step)``; ``fixed`` is drawing the
#: instance, the ``||E||`` bound and the block's bookkeeping. Measured with
#: ``benchmarks/bench_instance_cost.py`` on Figure 2's instances (identity basis, unit weights,
#: binary/uniform/Gaussian noise at σ = 0.01), one-step and full-SROA runs of the block kernel,
#: local methods in blocks of 64 instances (they batch a block). Data:
#: docs/data/cost/instance-cost.json (2026-11-28, CPU time on a shared 2-core machine at load
#: 10-17, which inflates it: Figure 2's certified instance measures 0.55 s here, 0.30 s on the
#: idle machine of docs/results/benchmarks.md, so an idle run beats the estimate).
CALIBRATED: dict[tuple[str, str, int, int], tuple[float, float]] = {
    ("certified", "certified", 10, 3): (0.04119, 0.050476),
    ("sshopm", "sshopm", 10, 3): (0.00301, 0.000661),
    ("sshopm", "certified", 10, 3): (0.02636, 0.000404),
    ("sshopm", "sshopm", 4, 3): (0.00195, 0.000215),
    ("sshopm", "sshopm", 16, 3): (0.00956, 0.001362),
    ("sshopm", "sshopm", 32, 3): (0.06288, 0.006674),
    ("sshopm", "sshopm", 8, 4): (0.03819, 0.00726),
    ("certified", "certified", 8, 4): (0.04923, 0.025854),
}

#: A sweep's block tasks cost this multiple of the same solves in one process (scheduling,
#: store writes, digests, certificates): ``benchmarks/bench_certified_sweep.py``
#: (docs/results/benchmarks.md, Certified Figure-2 sweep).
SWEEP_OVERHEAD = 1.1
#: Wall seconds before the first block runs: starting an embedded cluster's worker processes
#: and their imports, and preparing the store. Idle, 60 certified Figure-2 instances took
#: 11.2-12.8 s on 2 workers, 9 s of it solves (``benchmarks/bench_certified_sweep.py``,
#: docs/results/benchmarks.md, 2026-11-27): about 3 s, rounded up. A loaded machine takes
#: far longer (12-67 s at load 12-20), which the load note of :func:`estimate_line` covers.
STARTUP_SECONDS = 5.0


def _scaled(method: str, norm: str, n: int, p: int) -> tuple[float, float] | None:
    """``(fixed, step)`` from the calibrated point of the same method, norm method and ``p``
    nearest in ``n``, scaled by the core's cost records (:func:`solve_cost`) from there to
    ``n``; ``None`` when no such point was calibrated."""
    near = [k for k in CALIBRATED if k[0] == method and k[1] == norm and k[3] == p]
    if not near:
        return None
    key = min(near, key=lambda k: (abs(math.log(k[2] / n)), k[2]))
    fixed, step = CALIBRATED[key]
    n0 = key[2]
    return (
        fixed * solve_cost(norm, n, p) / solve_cost(norm, n0, p),
        step * solve_cost(method, n, p) / solve_cost(method, n0, p),
    )


def sroa_seconds(method: str, norm_method: str, n: int, p: int, steps: float) -> float:
    """CPU seconds of one instance on one idle core: ``steps`` SROA steps of ``method`` at
    size ``(n, p)`` and the ``||E||`` bound by ``norm_method``.

    From :data:`CALIBRATED` at a measured point; elsewhere the nearest measured ``n`` of the
    same methods and ``p``, scaled by the core's cost records; with no measured point of the
    methods at that ``p``, the core's records alone (rough: they size blocks).
    """
    parts = _scaled(method, norm_method, int(n), int(p))
    if parts is None:
        return steps * solve_cost(method, n, p) + solve_cost(norm_method, n, p)
    fixed, step = parts
    return fixed + steps * step


def makespan(block_seconds: Sequence[float], workers: int) -> float:
    """Seconds until the last of ``block_seconds`` finishes on ``workers`` workers, each block
    going, in order, to the worker free first (how the scheduler hands out ready tasks)."""
    free = [0.0] * max(1, min(int(workers), len(block_seconds) or 1))
    for b in block_seconds:
        heapq.heapreplace(free, free[0] + b)
    return max(free)


@dataclass(frozen=True)
class SweepEstimate:
    """What a sweep is expected to cost on an idle machine (:func:`sweep_estimate`)."""

    #: Instances and blocks (tasks) of the sweep.
    instances: int
    blocks: int
    #: Worker processes it was priced for (at most one per block).
    workers: int
    #: CPU seconds of all its tasks, overhead included.
    cpu_seconds: float
    #: Peak bytes of one worker process (its largest task).
    peak_bytes: float
    #: Wall seconds on ``workers`` workers, start-up included.
    wall_seconds: float


def sweep_estimate(
    block_seconds: Sequence[float], instances: int, workers: int, peak_bytes: float
) -> SweepEstimate:
    """The estimate of a sweep whose blocks cost ``block_seconds`` (CPU seconds in one
    process, the kind's instance costs summed) on ``workers`` workers."""
    tasks = [SWEEP_OVERHEAD * s for s in block_seconds]
    used = max(1, min(int(workers), len(tasks) or 1))
    return SweepEstimate(
        instances=int(instances),
        blocks=len(tasks),
        workers=used,
        cpu_seconds=float(sum(tasks)),
        peak_bytes=float(peak_bytes),
        wall_seconds=STARTUP_SECONDS + makespan(tasks, used),
    )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:,.1f} h"


def _count(k: int, noun: str) -> str:
    return f"{k:,} {noun}{'' if k == 1 else 's'}"


def _bytes(x: float) -> str:
    return f"{x / 2**30:,.2f} GiB" if x < 2**50 else f"{x:.2g} bytes"


def estimate_line(est: SweepEstimate, loaded: bool = False) -> str:
    """The one line ``validate`` and ``run`` print. ``loaded``: with this machine's load
    average above its CPU count, add that the wall time will be longer, by at least load / CPUs
    (the estimate is for an idle machine: other processes take the cores the workers would
    use)."""
    per = est.cpu_seconds / est.instances if est.instances else 0.0
    line = (
        f"estimate: {_count(est.instances, 'instance')} in {_count(est.blocks, 'block')}; "
        f"{_duration(est.cpu_seconds)} CPU ({per:.3g} s per instance), "
        f"peak {_bytes(est.peak_bytes)} per worker; "
        f"about {_duration(est.wall_seconds)} wall on {_count(est.workers, 'worker')} "
        "(idle machine)"
    )
    return line + (load_note(*_machine_load()) if loaded else "")


def load_note(load: float, cpus: int) -> str:
    """What :func:`estimate_line` adds on a machine with load average ``load`` and ``cpus``
    CPUs: nothing up to one runnable process per CPU."""
    if load <= cpus:
        return ""
    return (
        f"; load average now {load:.1f} on {cpus} CPUs: expect at least {load / cpus:.1f}x longer"
    )


def _machine_load() -> tuple[float, int]:
    try:
        cpus = len(os.sched_getaffinity(0))
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return 0.0, 1
    return load, cpus
