"""Inner evaluations of a block as tasks of the cluster the block runs on.

A threshold search with ``k_section > 1`` evaluates several ε per round
(:mod:`sroa_dist.sweep.inner_pool`). On a Dask worker, :class:`WorkerTaskPool` submits a
round's evaluations through :func:`distributed.worker_client`, which secedes the block's thread
from the worker's pool while it waits, so the evaluations can run on any free thread of the
cluster (this worker's included). A task may run twice (a worker lost, a retry); every
evaluation is a pure function of its arguments, so a rerun returns the same bits.

Deadlines: while the block waits, its deadline's clock is stopped (the evaluations may queue
behind other blocks' evaluations, and that wait is not the block's running time), and each
evaluation runs under the block's deadline of its own: one evaluation is a part of the block's
work, so it may not take longer than the whole block may.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from .watchdog import current_deadline, deadline_paused, task_deadline

__all__ = ["WorkerTaskPool"]


class WorkerTaskPool:
    """``map(fn, items)``: ``[fn(x) for x in items]``, as tasks of the cluster when called
    inside a Dask task, else in this thread."""

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """The results in the order of ``items``."""
        from distributed import get_worker, worker_client

        items = list(items)
        try:
            get_worker()
        except ValueError:  # not inside a Dask task: no cluster to hand them to
            return [fn(x) for x in items]
        if len(items) <= 1:
            return [fn(x) for x in items]
        deadline = current_deadline()
        if deadline is not None:
            fn = _UnderDeadline(fn, deadline[0], f"{deadline[1]}, one evaluation")
        with deadline_paused(), worker_client() as client:
            # pure=False: every call gets its own key (the evaluator is not tokenized).
            futures = client.map(fn, items, pure=False)
            return list(client.gather(futures))


@dataclasses.dataclass(frozen=True)
class _UnderDeadline:
    """``fn(x)`` under a deadline of ``seconds`` (the watchdog ends the worker past it)."""

    fn: Callable[[Any], Any]
    seconds: float
    label: str

    def __call__(self, x: Any) -> Any:
        with task_deadline(self.seconds, self.label):
            return self.fn(x)
