"""Sweep grid: axes and coordinates, blocks of instances (the unit of work and of storage), and
per-instance seeding from coordinate values.

Pure data, no I/O. A :class:`Layout` is the single description shared by the storage layer
(zarr chunk shape = block shape) and the execution layer (one task = one block); a
:class:`BlockTask` is everything a worker needs to compute one block, small enough to ship
through the scheduler thousands of times.

Seeding (the reproducibility contract): instance ``(settings, replicate)`` draws from
``SeedSequence(seed, spawn_key=(h("noise=…"), h("n=…"), h("p=…"), h("rank=…"), h("<level>=…"),
replicate))`` where ``h`` is a stable 32-bit hash (SHA-256) of ``name=value`` and floats enter as
the repr of their 12-significant-digit rounding. The solver method is deliberately *not* part of
the key: every method sees the same tensor, so a ``method`` axis compares methods on paired
instances. Results therefore do not depend on worker count, block size, execution order or
resume points, and extending an axis leaves existing instances unchanged.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sroa_dist.policy import certified_tractable, resolve_norm_method, solve_cost
from sroa_dist.solvers import memory_estimate

from .spec import SpecError, SweepSpec, round_sig

__all__ = [
    "BlockTask",
    "InstanceSettings",
    "Layout",
    "certified_tractable",
    "check_memory",
    "check_region_aligned",
    "chunks_for_block_size",
    "default_block_size",
    "default_worker_memory",
    "instance_seed",
    "make_layout",
    "resolve_norm_method",
    "solve_cost",
    "stable_hash32",
    "task_memory",
]

#: Largest number of tasks a sweep should need (the scheduler's per-task overhead adds up).
MAX_TASKS = 10_000
#: Aim for tasks of this many seconds (1–10 s keeps overhead negligible and progress smooth).
TARGET_TASK_SECONDS = 4.0
#: ...but not under this (per-task overhead: scheduling and store writes).
MIN_TASK_SECONDS = 1.0
#: Largest tensor stack (bytes of T̂) handed to one core call; bounds worker memory, does not
#: change results (batched calls equal one-at-a-time calls bit for bit).
MAX_BATCH_BYTES = 64 * 2**20
#: Environment variable overriding the memory one worker may use (bytes, or e.g. "8GiB").
WORKER_MEMORY_ENV = "SROA_DIST_WORKER_MEMORY"
#: Memory of a worker process before any task (interpreter, numpy/scipy/SCS, Dask).
WORKER_BASE_BYTES = 256 * 2**20


def stable_hash32(name: str, value: Any) -> int:
    """Stable 32-bit hash of ``name=value`` (floats via repr of their 12-digit rounding).

    Python's ``hash`` is salted per process, so it cannot seed anything reproducibly.
    """
    if isinstance(value, bool):
        text = f"{name}={value}"
    elif isinstance(value, float):
        text = f"{name}={round_sig(value)!r}"
    elif isinstance(value, (int, np.integer)):
        text = f"{name}={int(value)}"
    else:
        text = f"{name}={value}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


@dataclass(frozen=True)
class InstanceSettings:
    """Everything that defines one grid point (all instances at it differ only by replicate)."""

    noise: str
    n: int
    p: int
    rank: int
    method: str
    level_name: str  # "sigma", "eps" or "eps_scaled"
    level: float
    steps: int
    norm_method: str

    def seed_key(self) -> tuple[int, ...]:
        """Spawn-key prefix of this grid point; the method is excluded on purpose (paired runs)."""
        return (
            stable_hash32("noise", self.noise),
            stable_hash32("n", self.n),
            stable_hash32("p", self.p),
            stable_hash32("rank", self.rank),
            stable_hash32(self.level_name, self.level),
        )

    def group_key(self) -> tuple[Any, ...]:
        """Instances sharing this key can go through one batched core call."""
        return (self.noise, self.n, self.p, self.rank, self.method, self.steps, self.norm_method)


def instance_seed(
    master_seed: int, settings: InstanceSettings, replicate: int
) -> np.random.SeedSequence:
    """The instance's seed sequence; children 0/1/2 feed instance, solver and norm streams."""
    return np.random.SeedSequence(master_seed, spawn_key=(*settings.seed_key(), int(replicate)))


def _instance_cost(s: InstanceSettings) -> float:
    if not isinstance(s, InstanceSettings):  # a model sweep's settings carry their own cost
        return s.cost()
    return s.steps * solve_cost(s.method, s.n, s.p) + solve_cost(s.norm_method, s.n, s.p)


@dataclass(frozen=True)
class Layout:
    """Shape of a sweep: dims, coordinates, block (= zarr chunk) shape and per-step extents.

    ``dims`` are the swept dims in cube order followed by ``replicate``; ``chunks`` is the block
    shape along them. ``n_steps`` is the length of the ``step`` dim (largest number of SROA steps
    on the grid) and ``n_component`` the length of ``component`` (largest n) for ``v_hat``.
    """

    dims: tuple[str, ...]
    coords: tuple[tuple[Any, ...], ...]
    chunks: tuple[int, ...]
    n_steps: int
    n_component: int

    @property
    def shape(self) -> tuple[int, ...]:
        """Instance-grid shape along ``dims``."""
        return tuple(len(c) for c in self.coords)

    @property
    def n_instances(self) -> int:
        """Total number of instances."""
        return math.prod(self.shape)

    @property
    def block_grid(self) -> tuple[int, ...]:
        """Number of blocks along each dim."""
        return tuple(-(-s // c) for s, c in zip(self.shape, self.chunks, strict=True))

    @property
    def n_blocks(self) -> int:
        """Total number of blocks (tasks)."""
        return math.prod(self.block_grid)

    def coord(self, dim: str) -> tuple[Any, ...]:
        """Coordinate values of one dim."""
        return self.coords[self.dims.index(dim)]

    def block_region(self, index: int) -> tuple[slice, ...]:
        """Index slices (one per dim) of block ``index`` (C order over the block grid)."""
        multi = np.unravel_index(index, self.block_grid)
        return tuple(
            slice(int(m) * c, min((int(m) + 1) * c, s))
            for m, c, s in zip(multi, self.chunks, self.shape, strict=True)
        )

    def block_size(self, index: int) -> int:
        """Number of instances in block ``index``."""
        return math.prod(s.stop - s.start for s in self.block_region(index))

    def check_aligned(self, region: Sequence[slice]) -> None:
        """Raise ``ValueError`` unless ``region`` covers whole blocks only (see
        :func:`check_region_aligned`)."""
        check_region_aligned(region, self.chunks, self.shape, self.dims)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able description (for provenance and comparisons)."""
        return {
            "dims": list(self.dims),
            "chunks": list(self.chunks),
            "shape": list(self.shape),
            "n_steps": self.n_steps,
            "n_component": self.n_component,
        }


def check_region_aligned(
    region: Sequence[slice],
    chunks: Sequence[int],
    shape: Sequence[int],
    names: Sequence[str] | None = None,
) -> None:
    """Raise ``ValueError`` unless ``region`` covers whole chunks only.

    Concurrent writes into a shared zarr chunk silently lose data (xarray #8371), so a region that
    starts inside a chunk, or ends inside one other than at the array's end, is refused. Only
    the leading ``len(region)`` axes are checked.
    """
    for axis, (sl, c, s) in enumerate(zip(region, chunks, shape, strict=False)):
        start, stop = sl.start or 0, s if sl.stop is None else sl.stop
        if start % c or (stop % c and stop != s) or not 0 <= start < stop <= s:
            name = names[axis] if names else f"axis {axis}"
            raise ValueError(
                f"region along {name}: expected whole chunks of {c} within [0, {s}); received "
                f"[{start}, {stop}). Hint: blocks must equal the store's chunks, or concurrent "
                "writers silently lose data"
            )


def chunks_for_block_size(shape: Sequence[int], block_size: int) -> tuple[int, ...]:
    """Block shape holding at most ``block_size`` instances, filling the innermost dims first.

    Replicates first (they vary fastest), then the noise level, and so on. A dim that is split
    is split evenly (no small trailing block: tasks of equal size balance best): 500 replicates
    with block size 120 gives ``(…, 100)``; one replicate over 2000 σ values with block size
    256 gives ``(…, 250, 1)``.
    """
    chunks = [1] * len(shape)
    remaining = max(1, int(block_size))
    for d in reversed(range(len(shape))):
        if remaining >= shape[d]:
            chunks[d] = shape[d]
            remaining //= shape[d]
            if remaining <= 1:
                break
            continue
        pieces = -(-shape[d] // remaining)
        chunks[d] = -(-shape[d] // pieces)
        break
    return tuple(chunks)


def default_block_size(spec: SweepSpec, mean_cost: float | None = None) -> int:
    """Instances per task from the cost model: about TARGET_TASK_SECONDS of work, at least
    ~32 tasks so that every worker of a small cluster stays busy, at least MIN_TASK_SECONDS so
    that per-task overhead (scheduling, store writes) stays small, and at most MAX_TASKS
    tasks in all. Costs O(axes), never O(grid points). Sweep kinds with their own cost model
    (model sweeps) pass their ``mean_cost`` (seconds per instance)."""
    if mean_cost is None:
        mean_cost = _mean_instance_cost(spec)
    total = math.prod(len(ax.values) for ax in spec.axes.values() if ax.swept) * spec.replicates
    size = min(TARGET_TASK_SECONDS / mean_cost, total / 32)
    size = max(size, MIN_TASK_SECONDS / mean_cost, total / MAX_TASKS, 1)
    return int(min(math.ceil(size), total))


def _solver_combos(spec: SweepSpec) -> Iterator[tuple[str, int, int, str]]:
    """Every ``(method, n, p, norm method)`` of the grid: the only axes solver cost and memory
    depend on (the noise axes and replicates do not change them)."""
    for m in spec.axes["solver.method"].values:
        for n in spec.axes["tensor.n"].values:
            for p in spec.axes["tensor.p"].values:
                yield m, int(n), int(p), spec.norm_method_for(m, int(n), int(p))


def _mean_instance_cost(spec: SweepSpec) -> float:
    """Mean of the per-instance cost over the grid. Every grid point weighs the same and the
    cost is linear in the steps, so averaging the steps over the rank axis separately is exact.
    """
    fixed = spec.solver.steps
    ranks = spec.axes["tensor.rank"].values if "tensor.rank" in spec.axes else None
    costs = []
    for m, n, p, norm in _solver_combos(spec):
        steps = fixed or (sum(ranks) / len(ranks) if ranks else n)
        costs.append(steps * solve_cost(m, n, p) + solve_cost(norm, n, p))
    return sum(costs) / len(costs)


def batch_instances(n: int, p: int) -> int:
    """Instances of one grid point per core call: as many as fit in MAX_BATCH_BYTES (>= 1)."""
    return max(1, MAX_BATCH_BYTES // (8 * int(n) ** int(p)))


def parse_bytes(text: str | int | float) -> int:
    """``"12GiB"``, ``"500 MB"``, ``"1e9"`` or a number → bytes."""
    units = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9}
    units |= {"gb": 10**9, "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20}
    units |= {"gib": 2**30, "tib": 2**40}
    match = re.fullmatch(r"\s*([0-9.eE+]+)\s*([A-Za-z]*)\s*", str(text))
    if not match or match.group(2).lower() not in units:
        raise ValueError(f"expected a size such as 8GiB, 500MB or 2e9, received {text!r}")
    return int(float(match.group(1)) * units[match.group(2).lower()])


def default_worker_memory(workers: int | None = None) -> tuple[int, str]:
    """Memory one worker may use, and where the figure comes from.

    ``$SROA_DIST_WORKER_MEMORY`` if set; otherwise the machine's memory divided by ``workers``
    (default: the CPUs available, the embedded cluster's default), as Dask's ``memory_limit=
    "auto"`` does.
    """
    env = os.environ.get(WORKER_MEMORY_ENV)
    if env:
        try:
            return parse_bytes(env), f"${WORKER_MEMORY_ENV}"
        except ValueError:
            raise SpecError(
                "environment", WORKER_MEMORY_ENV, "a size such as 8GiB, 500MB or 2e9", env
            ) from None
    if workers is None:
        try:
            workers = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - non-Linux
            workers = os.cpu_count() or 1
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return total // max(1, workers), (
        f"machine memory {total / 2**30:.1f} GiB / {workers} workers; set "
        f"${WORKER_MEMORY_ENV} to override"
    )


def task_memory(
    spec: SweepSpec, block: int, method: str, n: int, p: int, norm_method: str, n_steps: int
) -> dict[str, float]:
    """Estimated peak bytes of one task of ``block`` instances at one ``(method, n, p)``, by part.

    ``instances``: per batched instance ``T``, ``E``, ``T̂`` and the two stacks, plus the cached
    noise index table; ``solver``: the core's :func:`sroa_dist.solvers.memory_estimate` of the
    larger of the SROA and norm calls; ``generation``: what drawing an instance needs beyond
    that (:func:`sroa_dist.noise_tensor` sorts index arrays of ``p`` times the tensor's size);
    ``outputs``: the block's result arrays; ``base``: the worker process. Calibrated with
    tracemalloc on n = 200, p = 3 and n = 40, p = 4 (peaks of 11 and 14 tensor sizes for one
    instance; this gives 12 and 13.4).
    """
    batch = min(block, batch_instances(n, p))
    tensor = 8.0 * float(n) ** p
    solve = memory_estimate(method, n, p, batch, spec.options_for(method))
    norm = memory_estimate(norm_method, n, p, batch, spec.options_for(norm_method, norm=True))
    held = (5 * batch + 1) * tensor
    solver = float(max(solve, norm))
    generation = max(0.0, ((2 * p + 2) + 3 * (batch - 1)) * tensor - held - solver)
    per_instance = 8.0 * (8 * n_steps + 8)
    if spec.output.vectors:
        per_instance += 8.0 * n_steps * n
    return {
        "base": float(WORKER_BASE_BYTES),
        "instances": held,
        "solver": solver,
        "generation": generation,
        "outputs": block * per_instance,
    }


def _gib(x: float) -> str:
    return f"{x / 2**30:,.1f} GiB" if x < 2**50 else f"{x:.2g} bytes"


def check_memory(spec: SweepSpec, layout: Layout, limit: int | None = None) -> None:
    """Refuse a sweep whose tasks would not fit in a worker's memory (a ``SpecError`` naming
    the key to change), before any store is created or any worker runs out of memory.

    ``limit`` defaults to :func:`default_worker_memory`. Costs O(axes).
    """
    if limit is None:
        limit, origin = default_worker_memory()
    else:
        origin = "given limit"
    block = math.prod(layout.chunks)
    worst, where = None, None
    for m, n, p, norm in _solver_combos(spec):
        parts = task_memory(spec, block, m, n, p, norm, layout.n_steps)
        if worst is None or sum(parts.values()) > sum(worst.values()):
            worst, where = parts, (m, n, p)
    assert worst is not None and where is not None
    total = sum(worst.values())
    if total <= limit:
        return
    m, n, p = where
    if worst["outputs"] >= max(worst["instances"], worst["solver"]):
        raise spec.error(
            "replicates",
            f"result blocks that fit in a worker's memory limit of {_gib(limit)} ({origin})",
            f"<{block:,} instances per task: about {_gib(total)} per task, of which results "
            f"{_gib(worst['outputs'])}>",
            "use a smaller --block-size, or fewer replicates or axis values",
        )
    raise spec.error(
        "tensor.n",
        f"instances that fit in a worker's memory limit of {_gib(limit)} ({origin})",
        f"<n = {n}, p = {p}, method {m!r}: about {_gib(total)} per task; one tensor of "
        f"n^p entries is {_gib(8.0 * float(n) ** p)}>",
        "use a smaller n or p, or workers with more memory",
    )


def _settings_from_coords(spec: SweepSpec, values: dict[str, Any]) -> InstanceSettings:
    """Settings of the grid point whose swept coordinates are ``values`` (scalars from spec)."""
    if spec.kind == "model":  # a model sweep (model_sweep builds on this module)
        from .model_sweep import settings_from_coords

        return settings_from_coords(spec, values)
    n, p = int(spec.setting("tensor.n", values)), int(spec.setting("tensor.p", values))
    rank = spec.setting("tensor.rank", values)
    rank = n if rank is None else int(rank)  # full rank by default
    level_key = spec.noise_level_key
    method = spec.setting("solver.method", values)
    return InstanceSettings(
        noise=spec.setting("noise.model", values),
        n=n,
        p=p,
        rank=rank,
        method=method,
        level_name=spec.noise.level_name,
        level=float(spec.setting(level_key, values)),
        steps=spec.steps_for(rank),
        norm_method=spec.norm_method_for(method, n, p),
    )


def layout_chunks(
    dims: Sequence[str],
    shape: Sequence[int],
    block_size: int | None,
    chunks: Sequence[int] | None,
    default: Callable[[], int],
) -> tuple[int, ...]:
    """Block (= chunk) shape from explicit ``chunks``, a ``block_size`` or ``default()``.

    Blocks do not straddle outer coordinates, so rounding can add blocks: the default grows
    until it stays within MAX_TASKS tasks.
    """
    if chunks is None:
        auto = block_size is None
        block_size = default() if auto else block_size
        chunks = chunks_for_block_size(shape, block_size)
        while (
            auto and math.prod(-(-s // c) for s, c in zip(shape, chunks, strict=True)) > MAX_TASKS
        ):
            block_size = int(block_size * 1.25) + 1
            chunks = chunks_for_block_size(shape, block_size)
    chunks = tuple(min(int(c), s) for c, s in zip(chunks, shape, strict=True))
    if len(chunks) != len(dims) or min(chunks) < 1:
        raise ValueError(
            f"chunks: expected {len(dims)} positive sizes for {dims}; received {chunks}"
        )
    return chunks


def make_layout(
    spec: SweepSpec,
    block_size: int | None = None,
    chunks: Sequence[int] | None = None,
    *,
    memory_limit: int | None = None,
) -> Layout:
    """The sweep's layout; block shape from explicit ``chunks``, a ``block_size`` or the default.

    Raises ``SpecError`` if a task would need more than ``memory_limit`` bytes (default:
    :func:`default_worker_memory`; ``math.inf`` skips the check), see :func:`check_memory`.
    """
    if spec.kind == "model":  # a model sweep (model_sweep builds on this module)
        from .model_sweep import model_layout

        return model_layout(spec, block_size, chunks)
    dims, coords = spec.instance_grid()
    shape = [len(c) for c in coords]
    chunks = layout_chunks(dims, shape, block_size, chunks, lambda: default_block_size(spec))
    n_component = max(spec.axes["tensor.n"].values)
    layout = Layout(tuple(dims), tuple(coords), chunks, spec.n_steps, int(n_component))
    check_memory(spec, layout, memory_limit)
    return layout


@dataclass(frozen=True)
class BlockTask:
    """One unit of work: a block of the grid and the spec settings needed to compute it.

    ``coords`` holds, per dim, only the coordinate values inside the block, so the task stays
    small (no full axes) however large the sweep.
    """

    index: int
    region: tuple[tuple[int, int], ...]
    dims: tuple[str, ...]
    coords: tuple[tuple[Any, ...], ...]
    spec_json: str
    n_steps: int
    n_component: int
    #: The store layout this task was planned for; the write is refused in any other layout.
    layout_token: str = ""

    @property
    def shape(self) -> tuple[int, ...]:
        """Block shape along ``dims``."""
        return tuple(b - a for a, b in self.region)

    def instances(self, spec: SweepSpec) -> Iterator[tuple[tuple[int, ...], InstanceSettings, int]]:
        """Yield ``(index within block, settings, replicate)`` in C order."""
        cache: dict[tuple[int, ...], InstanceSettings] = {}
        for idx in np.ndindex(*self.shape):
            outer = idx[:-1]
            if outer not in cache:
                values = {
                    d: self.coords[i][j]
                    for i, (d, j) in enumerate(zip(self.dims[:-1], outer, strict=True))
                }
                cache[outer] = _settings_from_coords(spec, values)
            yield idx, cache[outer], int(self.coords[-1][idx[-1]])


def block_task(spec: SweepSpec, layout: Layout, index: int) -> BlockTask:
    """The task computing block ``index`` of ``layout``."""
    region = layout.block_region(index)
    return BlockTask(
        index=index,
        region=tuple((s.start, s.stop) for s in region),
        dims=layout.dims,
        coords=tuple(c[s] for c, s in zip(layout.coords, region, strict=True)),
        spec_json=spec.to_json(),
        n_steps=layout.n_steps,
        n_component=layout.n_component,
    )
