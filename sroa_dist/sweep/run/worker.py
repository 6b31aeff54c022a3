"""Compute one block of sweep instances: numpy in, numpy out.

No Dask and no storage here, so a block can be computed (and tested) serially. The task
carries its spec as JSON; the spec's kind (:mod:`..kinds`) computes the block.
"""

from __future__ import annotations

import functools
import json

from ..cube import TENSOR_VARIABLES
from ..kinds import kind_of, parse_spec
from ..kinds.tensor.block import DrawnGroup, draw_group
from ..layout import BlockResult, BlockTask, allocate
from ..spec.base import SweepSpec

__all__ = ["VARIABLES", "BlockResult", "DrawnGroup", "allocate", "compute_block", "draw_group"]

#: The cube's variables of a tensor sweep by name (descriptions: :mod:`..cube`).
VARIABLES = TENSOR_VARIABLES


@functools.lru_cache(maxsize=16)
def spec_of_task(spec_json: str) -> SweepSpec:
    """The spec a task carries, parsed once per worker process for repeated tasks."""
    return parse_spec(json.loads(spec_json), source="<block task>")


def compute_block(task: BlockTask) -> BlockResult:
    """Compute every instance of ``task`` (pure: the result depends only on the task)."""
    spec = spec_of_task(task.spec_json)
    return kind_of(spec).compute_block(task, spec)
