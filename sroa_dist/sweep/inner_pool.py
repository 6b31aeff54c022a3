"""The pool a block may hand the evaluations of one instance to.

A threshold search evaluates several ε per round when its ``k_section`` says so
(:func:`sroa_dist.studies.first_crossing.first_crossing`); whoever runs the block decides
where those evaluations run. The execution layer (:mod:`.run.cluster_pool`) sets a pool that
submits them as tasks of the cluster the block runs on; without one they run one after the
other in the block's thread. The search's points never depend on the pool, so neither does the
block's result.

Pure: no Dask here (the block kernel reads the pool, the execution layer sets it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

__all__ = ["current_pool", "inner_pool"]

_POOL: ContextVar[Any] = ContextVar("sroa_dist_inner_pool", default=None)


def current_pool() -> Any:
    """The pool set by :func:`inner_pool` in this context (an object with ``map(fn,
    iterable)``), or ``None``."""
    return _POOL.get()


@contextlib.contextmanager
def inner_pool(pool: Any) -> Iterator[None]:
    """Within the block, hand inner evaluations to ``pool`` (``map(fn, iterable)`` returning
    the results in order)."""
    token = _POOL.set(pool)
    try:
        yield
    finally:
        _POOL.reset(token)
