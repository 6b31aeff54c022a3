"""The sweep grid's front door: the layout of any spec, its block tasks, and the grid names
the CLI, benchmarks and tests import.

The kind-independent pieces live in :mod:`.layout` (layouts, blocks, hashing, block sizing);
a kind's settings, seeds, cost and memory model in its own module (:mod:`.tensor_spec`,
:mod:`.tensor_sweep`, :mod:`.model_sweep`); :func:`make_layout` asks the spec's kind
(:mod:`.kinds`). Seeding contract: see :mod:`.tensor_spec` and :mod:`.model_sweep`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sroa_dist.policy import certified_tractable, resolve_norm_method, solve_cost

from .common import SweepSpec
from .kinds import kind_of
from .layout import (
    MAX_TASKS,
    MIN_TASK_SECONDS,
    TARGET_TASK_SECONDS,
    WORKER_BASE_BYTES,
    WORKER_MEMORY_ENV,
    BlockTask,
    Layout,
    block_region,
    block_task,
    check_region_aligned,
    chunks_for_block_size,
    default_worker_memory,
    layout_chunks,
    parse_bytes,
    stable_hash32,
)
from .layout import default_block_size as _block_size_for_cost
from .tensor_block import MAX_BATCH_BYTES, batch_instances
from .tensor_spec import InstanceSettings, instance_seed
from .tensor_sweep import check_memory, task_memory

__all__ = [
    "MAX_BATCH_BYTES",
    "MAX_TASKS",
    "MIN_TASK_SECONDS",
    "TARGET_TASK_SECONDS",
    "WORKER_BASE_BYTES",
    "WORKER_MEMORY_ENV",
    "BlockTask",
    "InstanceSettings",
    "Layout",
    "batch_instances",
    "block_region",
    "block_task",
    "certified_tractable",
    "check_memory",
    "check_region_aligned",
    "chunks_for_block_size",
    "default_block_size",
    "default_worker_memory",
    "instance_seed",
    "layout_chunks",
    "make_layout",
    "parse_bytes",
    "resolve_norm_method",
    "solve_cost",
    "stable_hash32",
    "task_memory",
]


def default_block_size(spec: SweepSpec, mean_cost: float | None = None) -> int:
    """Instances per task (see :func:`.layout.default_block_size`); ``mean_cost`` (seconds
    per instance) defaults to the spec's kind's cost model."""
    if mean_cost is None:
        mean_cost = kind_of(spec).mean_cost(spec)
    return _block_size_for_cost(spec, mean_cost)


def make_layout(
    spec: SweepSpec,
    block_size: int | None = None,
    chunks: Sequence[int] | None = None,
    *,
    memory_limit: int | None = None,
) -> Layout:
    """The sweep's layout; block shape from explicit ``chunks``, a ``block_size`` or the default.

    Raises ``SpecError`` if a task would need more than ``memory_limit`` bytes (default:
    :func:`default_worker_memory`; ``math.inf`` skips the check).
    """
    return kind_of(spec).layout(spec, block_size, chunks, memory_limit=memory_limit)
