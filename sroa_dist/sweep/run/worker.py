"""Compute one block of sweep instances: numpy in, numpy out.

No Dask and no storage here, so a block can be computed (and tested) serially. The task
carries its spec as JSON, validated once per worker and spec (:func:`..kinds.spec_of_task`);
the spec's kind (:mod:`..kinds`) computes the block.
"""

from __future__ import annotations

from ..kinds import kind_of, spec_of_task
from ..layout import BlockResult, BlockTask

__all__ = ["compute_block"]


def compute_block(task: BlockTask) -> BlockResult:
    """Compute every instance of ``task`` (pure: the result depends only on the task)."""
    spec = spec_of_task(task.spec_json)
    return kind_of(spec).compute_block(task, spec)
