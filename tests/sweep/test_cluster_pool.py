"""A block's inner evaluations as cluster tasks (``sroa_dist.sweep.run.cluster_pool``) under
the block's deadline: the block's clock stops while it waits on them (they may queue behind
other blocks' evaluations), and each evaluation carries the block's deadline of its own."""

from __future__ import annotations

import time

import pytest

from sroa_dist.sweep.run.cluster_pool import WorkerTaskPool
from sroa_dist.sweep.run.watchdog import (
    DEADLINE_TOPIC,
    current_deadline,
    deadline_paused,
    task_deadline,
)


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def _block(deadline: float, sleeps: list[float]) -> list[float]:
    """A block task: under ``deadline``, hand ``sleeps`` to the cluster and wait."""
    with task_deadline(deadline, "block 0"):
        return WorkerTaskPool().map(_sleep, sleeps)


def test_outside_a_worker_there_is_no_deadline_to_pause():
    assert current_deadline() is None
    with task_deadline(0.01, "block 0"):  # not on a Dask worker: nothing is watched
        assert current_deadline() is None
        with deadline_paused():
            time.sleep(0.02)
    assert WorkerTaskPool().map(_sleep, [0.0, 0.0]) == [0.0, 0.0]  # in this thread


@pytest.mark.slow
def test_a_blocks_wait_behind_other_work_is_not_its_running_time():
    """One worker, two threads: a long task holds one, and the block's three evaluations run
    one after another on the other. The block waits 4.5 s, past its 3 s deadline, while each
    evaluation (1.5 s) is within it: the block completes and no worker is ended. Then an
    evaluation past the block's deadline ends its worker, reported as the block's
    evaluation."""
    import dask
    from distributed import Client, KilledWorker, LocalCluster

    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        LocalCluster(n_workers=1, threads_per_worker=2, dashboard_address=":0") as cluster,
        Client(cluster) as c,
    ):
        hog = c.submit(_sleep, 8.0, pure=False)
        while not c.processing()[next(iter(c.scheduler_info()["workers"]))]:
            time.sleep(0.05)  # the long task holds its thread before the block starts
        block = c.submit(_block, 3.0, [1.5, 1.5, 1.5], pure=False)
        assert block.result(timeout=60) == [1.5, 1.5, 1.5]
        assert hog.result(timeout=60) == 8.0
        assert c.get_events(DEADLINE_TOPIC) == ()

        late = c.submit(_block, 2.0, [0.1, 6.0], pure=False)
        with pytest.raises(KilledWorker):
            late.result(timeout=60)
        (_, event), *_ = c.get_events(DEADLINE_TOPIC)
        assert event["task"] == "block 0, one evaluation" and event["deadline"] == 2.0
