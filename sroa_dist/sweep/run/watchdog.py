"""Deadlines of running tasks, and the watchdog thread that ends a worker process past one.

A Python thread cannot be interrupted, so a task that hangs (a deadlock, a stuck file system)
can only be ended with its process. :func:`task_deadline` registers the running task's
deadline with a watchdog thread; past it the watchdog reports the task to the scheduler's
event log (topic :data:`DEADLINE_TOPIC`) and ends the process. The nanny starts a fresh
worker, and the scheduler runs the task again, up to ``distributed.scheduler.allowed-failures``
times, after which the client gets ``KilledWorker``.

A worker whose nanny (or, for the embedded cluster, whose client process) is gone has nobody
to collect its results. Dask ends such a worker from a thread of its own, which cannot run
while another thread holds the GIL forever (the deadlock of CPython gh-106883);
:func:`die_with_parent` asks the kernel instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

__all__ = [
    "DEADLINE_EXIT_CODE",
    "DEADLINE_TOPIC",
    "current_deadline",
    "deadline_paused",
    "die_with_parent",
    "start_watchdog",
    "task_deadline",
]

#: Scheduler event topic of tasks that ran past their deadline (``client.get_events``).
DEADLINE_TOPIC = "sroa-dist-deadline"
#: Exit status of a worker process ended by the watchdog (EX_SOFTWARE).
DEADLINE_EXIT_CODE = 70
#: Seconds between the watchdog's checks.
WATCH_PERIOD = 0.25


_LOCK = threading.Lock()
#: Running tasks of this process: token -> (start, seconds allowed, label).
_RUNNING: dict[int, tuple[float, float, str]] = {}
_WATCHDOG: threading.Thread | None = None
_TOKENS = itertools.count()


#: This thread's deadlines, innermost last: (token, seconds, label).
_THREAD = threading.local()


def _stack() -> list[tuple[int, float, str]]:
    if not hasattr(_THREAD, "stack"):
        _THREAD.stack = []
    return _THREAD.stack


@contextlib.contextmanager
def task_deadline(seconds: float | None, label: str) -> Iterator[None]:
    """Run the body under a deadline: past ``seconds`` the watchdog ends this worker process.

    ``label`` names the task in the scheduler event (e.g. ``"block 7"``). ``None`` means no
    deadline. Outside a Dask worker (a plain process) nothing is watched: ending the caller's
    own process would be no help.
    """
    worker = _current_worker()
    if seconds is None or worker is None:
        yield
        return
    start_watchdog(worker)
    token = next(_TOKENS)
    with _LOCK:
        _RUNNING[token] = (time.monotonic(), float(seconds), label)
    _stack().append((token, float(seconds), label))
    try:
        yield
    finally:
        _stack().pop()
        with _LOCK:
            _RUNNING.pop(token, None)


def current_deadline() -> tuple[float, str] | None:
    """``(seconds, label)`` of the innermost deadline this thread runs under, or None."""
    stack = _stack()
    return stack[-1][1:] if stack else None


@contextlib.contextmanager
def deadline_paused() -> Iterator[None]:
    """Stop the clock of this thread's innermost deadline for the body, then restart it where
    it stopped: for a task that hands work to other tasks of the cluster and waits, so that
    the wait (behind other tasks, which may be long) does not count as its own running time.
    The tasks it waits on carry deadlines of their own."""
    stack = _stack()
    if not stack:
        yield
        return
    token = stack[-1][0]
    with _LOCK:
        start, seconds, label = _RUNNING.pop(token)
    used = time.monotonic() - start
    try:
        yield
    finally:
        with _LOCK:
            _RUNNING[token] = (time.monotonic() - used, seconds, label)


def _current_worker() -> Any:
    try:
        from distributed import get_worker

        return get_worker()
    except ValueError:  # not in a worker
        return None


def start_watchdog(worker: Any) -> None:
    """Start this process's watchdog thread once."""
    global _WATCHDOG
    with _LOCK:
        if _WATCHDOG is not None and _WATCHDOG.is_alive():
            return
        _WATCHDOG = threading.Thread(
            target=_watch, args=(worker,), name="sroa-dist-watchdog", daemon=True
        )
        _WATCHDOG.start()


def _watch(worker: Any) -> None:
    """Every :data:`WATCH_PERIOD`: end the process when a task is past its deadline."""
    while True:
        time.sleep(WATCH_PERIOD)
        now = time.monotonic()
        with _LOCK:
            late = [(label, secs) for start, secs, label in _RUNNING.values() if now - start > secs]
        if late:
            label, secs = late[0]
            _report(worker, {"task": label, "deadline": secs, "worker": worker.address})
            os._exit(DEADLINE_EXIT_CODE)


def _report(worker: Any, message: dict) -> None:
    """Send ``message`` to the scheduler's event log and give it a moment to leave."""
    with contextlib.suppress(Exception):
        worker.loop.add_callback(worker.log_event, DEADLINE_TOPIC, message)
        time.sleep(1.0)  # the batched stream sends every few milliseconds


def die_with_parent(worker: Any) -> bool:
    """Ask Linux to SIGKILL this worker when the thread that started it ends.

    Covers a worker that is stuck with the GIL held, which no thread of its own can end. Only
    for workers started by a nanny or the embedded cluster (a worker without a nanny was
    started by a shell or a container, whose exit must not end it). The nanny starts each
    worker process from a thread that lives exactly as long as its handle on that process
    (``distributed.process.AsyncProcess``), so the signal comes only when the nanny is gone
    or done with the worker.
    """
    if not getattr(worker, "nanny", None):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:  # not glibc
        return False
    pr_set_pdeathsig = 1
    parent = os.getppid()
    ok = libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) == 0
    if ok and os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(DEADLINE_EXIT_CODE)
    return ok
