"""The sweep grid shared by every kind: layouts, blocks of instances (the unit of work and of
storage), per-grid-point hashing, block sizing and a block's result arrays.

Pure data, no I/O. A :class:`Layout` is the single description shared by the storage layer
(zarr chunk shape = block shape) and the execution layer (one task = one block), and the one
place that computes a block's region (:func:`block_region`); a :class:`BlockTask` is
everything a worker needs to compute one block, small enough to ship through the scheduler
thousands of times. Which settings a grid point has, and how its instances are seeded and
computed, is the sweep kind's business (:mod:`.kinds`).

Results do not depend on worker count, block size, execution order or resume points: each
instance draws from a seed made of stable hashes (:func:`stable_hash32`) of its coordinate
values, so extending an axis leaves existing instances unchanged.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from .cube import COMPONENT, STEP, Variable
from .spec import SpecError, SweepSpec, round_sig

__all__ = [
    "BlockResult",
    "BlockTask",
    "Layout",
    "allocate",
    "block_region",
    "block_task",
    "check_region_aligned",
    "chunks_for_block_size",
    "default_block_size",
    "default_worker_memory",
    "grid_layout",
    "layout_chunks",
    "parse_bytes",
    "stable_hash32",
]

#: Largest number of tasks a sweep should need (the scheduler's per-task overhead adds up).
MAX_TASKS = 10_000
#: Aim for tasks of this many seconds (1–10 s keeps overhead negligible and progress smooth).
TARGET_TASK_SECONDS = 4.0
#: ...but not under this (per-task overhead: scheduling and store writes).
MIN_TASK_SECONDS = 1.0
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
        return block_region(index, self.chunks, self.shape)

    def block_size(self, index: int) -> int:
        """Number of instances in block ``index``."""
        return math.prod(s.stop - s.start for s in self.block_region(index))

    def block_of(self, position: Sequence[int]) -> tuple[int, tuple[int, ...]]:
        """The block holding the instance at ``position`` (one index per dim), and the
        instance's position inside that block's region."""
        multi = [int(i) // c for i, c in zip(position, self.chunks, strict=True)]
        block = int(np.ravel_multi_index(multi, self.block_grid))
        inner = tuple(int(i) - m * c for i, m, c in zip(position, multi, self.chunks, strict=True))
        return block, inner

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


def block_region(index: int, chunks: Sequence[int], shape: Sequence[int]) -> tuple[slice, ...]:
    """Index slices of block ``index`` (C order over the block grid) of a grid of ``shape``
    cut into blocks of ``chunks``: the one rule for where a block lies (layouts, stores)."""
    grid = tuple(-(-int(s) // int(c)) for s, c in zip(shape, chunks, strict=True))
    multi = np.unravel_index(index, grid)
    return tuple(
        slice(int(m) * int(c), min((int(m) + 1) * int(c), int(s)))
        for m, c, s in zip(multi, chunks, shape, strict=True)
    )


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
            raise InputError(
                f"region along {name}: expected whole chunks of {c} within [0, {s}); received "
                f"[{start}, {stop})",
                "make blocks from the store's own chunks (Layout.block_region): concurrent "
                "writers into one chunk silently lose data",
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


def default_block_size(spec: SweepSpec, mean_cost: float) -> int:
    """Instances per task from the kind's cost model (``mean_cost``: seconds per instance):
    about TARGET_TASK_SECONDS of work, at least ~32 tasks so that every worker of a small
    cluster stays busy, at least MIN_TASK_SECONDS so that per-task overhead (scheduling, store
    writes) stays small, and at most MAX_TASKS tasks in all. Costs O(axes), never O(grid
    points)."""
    total = math.prod(len(ax.values) for ax in spec.axes.values() if ax.swept) * spec.replicates
    size = min(TARGET_TASK_SECONDS / mean_cost, total / 32)
    size = max(size, MIN_TASK_SECONDS / mean_cost, total / MAX_TASKS, 1)
    return int(min(math.ceil(size), total))


def parse_bytes(text: str | int | float) -> int:
    """``"12GiB"``, ``"500 MB"``, ``"1e9"`` or a number → bytes."""
    units = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9}
    units |= {"gb": 10**9, "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20}
    units |= {"gib": 2**30, "tib": 2**40}
    match = re.fullmatch(r"\s*([0-9.eE+]+)\s*([A-Za-z]*)\s*", str(text))
    if not match or match.group(2).lower() not in units:
        raise InputError(
            f"expected a size such as 8GiB, 500MB or 2e9, received {text!r}",
            "e.g. 8GiB, 500MB or 2e9",
        )
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
        raise InputError(
            f"chunks: expected {len(dims)} positive sizes for {dims}; received {chunks}",
            "give one positive chunk size per dim",
        )
    return chunks


def grid_layout(
    spec: Any,
    block_size: int | None,
    chunks: Sequence[int] | None,
    default: Callable[[], int],
    n_steps: int,
    n_component: int,
) -> Layout:
    """The :class:`Layout` of a spec's whole instance grid: its swept dims in cube order, then
    ``replicate`` (``spec.instance_grid()``), blocks from explicit ``chunks``, a ``block_size``
    or ``default()`` (:func:`layout_chunks`), and the extents of ``step`` and ``component``.
    What every kind's ``layout`` builds before its own checks (memory, ...)."""
    dims, coords = spec.instance_grid()
    chunks = layout_chunks(dims, [len(c) for c in coords], block_size, chunks, default)
    return Layout(tuple(dims), tuple(coords), chunks, n_steps, n_component)


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

    def instances(self, spec: SweepSpec) -> Iterator[tuple[tuple[int, ...], Any, int]]:
        """Yield ``(index within block, settings, replicate)`` in C order; ``settings`` are
        the kind's grid-point settings (:meth:`~.spec.base.SweepSpec.settings_at`)."""
        cache: dict[tuple[int, ...], Any] = {}
        for idx in np.ndindex(*self.shape):
            outer = idx[:-1]
            if outer not in cache:
                values = {
                    d: self.coords[i][j]
                    for i, (d, j) in enumerate(zip(self.dims[:-1], outer, strict=True))
                }
                cache[outer] = spec.settings_at(values)
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


@dataclass
class BlockResult:
    """Arrays of one block (shape: block shape [+ step] [+ component]) and timings."""

    index: int
    data: dict[str, np.ndarray]
    kernel_time: float  # seconds inside numerical-core calls
    wall_time: float  # seconds for the whole block computation
    n_instances: int
    # ``[output] certificates``: each step's SOS certificate and the SROA steps needed to
    # rebuild the deflated tensors (sweep/store/verify.py), written beside the store.
    certificates: dict[str, np.ndarray] | None = None


def allocate(task: BlockTask, described: Mapping[str, Variable]) -> dict[str, np.ndarray]:
    """Output arrays of a block for the ``described`` variables, filled with their fill
    values (the block's shape, then ``step`` and ``component`` where a variable has them)."""
    extent = {STEP: task.n_steps, COMPONENT: task.n_component}
    return {
        name: np.full(task.shape + tuple(extent[d] for d in v.dims), v.fill, dtype=v.dtype)
        for name, v in described.items()
    }
