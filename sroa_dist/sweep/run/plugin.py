"""Per-worker set-up of a sweep as a Dask worker plugin, so that late workers get it too.

A one-off ``client.run`` reaches only the workers present at that moment; a worker that joins
later (the cluster scaled up, a crashed worker restarted by its nanny) would run without the
set-up. A registered :class:`WorkerSetup` runs on every worker when it joins: imports, malloc,
log filters, BLAS threads (one per worker thread, :mod:`sroa_dist.threads`), the
:mod:`.watchdog` (task deadlines, parent death) and a check that Dask's profiler is off
(:data:`.cluster.WORKER_CONFIG`).
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import threading
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from sroa_dist.threads import BLAS_THREAD_VARIABLES, configured_blas_threads, limit_blas_threads

from .watchdog import die_with_parent, start_watchdog

__all__ = ["WorkerSetup", "stop_profiler", "tune_malloc", "worker_setup_state"]

_MALLOC_TUNED = False


def tune_malloc() -> bool:
    """Let glibc keep freed memory for reuse in this process (once; no-op elsewhere).

    Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which also pins glibc's
    mmap threshold at 128 KiB: every batched temporary array is then mmap-ed and unmapped
    again, and the batched solves run much slower in workers than in a plain process (numbers
    in docs/sweeps.md). Raising both thresholds at run time fixes workers however they were
    started (LocalCluster, ``dask worker``, containers).

    Returns
    -------
    bool
        Whether glibc accepted both settings (``False`` on other C libraries).
    """
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return True
    _MALLOC_TUNED = True
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # from <malloc.h>
    ok = libc.mallopt(m_mmap_threshold, 32 * 2**20) == 1
    return bool(ok and libc.mallopt(m_trim_threshold, 64 * 2**20) == 1)


class _CancelledTaskNoise(logging.Filter):
    """Records of expected events that would flood the shared terminal of an embedded run.

    - Cancelled block tasks (a run interrupted or stopped).
    - A failed block's traceback ("Compute Failed"): it reaches the client, which counts the
      failures and shows the first, so the worker does not print one per block.
    - A heartbeat that found the scheduler's connection closed (the run ended or was
      interrupted, and the scheduler closed first): the worker is being closed too.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if "ended with CancelledError" in text or text.startswith("Compute Failed"):
            return False
        exc = record.exc_info[1] if record.exc_info else None
        closed = exc is not None and type(exc).__name__ == "CommClosedError"
        return not (closed and "during heartbeat" in text)


_SETUP_STATE: dict[str, Any] | None = None


def worker_setup_state() -> dict[str, Any] | None:
    """What :class:`WorkerSetup` did in this process, or ``None`` if it never ran here.

    Keys: ``pid``; ``malloc_tuned`` (see :func:`tune_malloc`); ``log_filter`` (warnings of
    cancelled block tasks and per-task failure records filtered); ``blas_env`` (the values
    of :data:`~sroa_dist.threads.BLAS_THREAD_VARIABLES` the process was started with);
    ``blas_threads`` (each loaded BLAS library and the thread count it runs with after the
    set-up); ``parent_death_signal``
    (see :func:`.watchdog.die_with_parent`); ``profiler_stopped`` (Dask's profiler was
    running and :func:`stop_profiler` stopped it). Ask every worker with
    ``client.run(worker_setup_state)``.
    """
    return None if _SETUP_STATE is None else dict(_SETUP_STATE)


class WorkerSetup(WorkerPlugin):
    """Set up a worker process for sweep tasks; registered by ``run_sweep``.

    Imports the numerics and storage stack (out of the first tasks and their timings), tunes
    malloc (:func:`tune_malloc`), limits every BLAS library of the process to
    ``$SROA_BLAS_THREADS`` (default one) threads per worker thread, filters the warnings of
    cancelled block tasks and the per-task failure records (the client counts them), starts
    the deadline watchdog, asks to die with its nanny and stops Dask's profiler
    (:func:`stop_profiler`). Registration is idempotent: a cluster keeps one copy under
    :attr:`name`, whichever run registered it first, and each worker runs it once when it
    joins.

    A worker has loaded its BLAS before any plugin runs, so the limit is set on the loaded
    libraries (``threadpoolctl``), whatever the environment the worker was started with: the
    nanny's ``pre-spawn-environ`` (the embedded cluster sets it, :mod:`.cluster`), a container
    or job script, or none. The plugin records both (:func:`worker_setup_state`).
    """

    name = "sroa-dist-worker-setup"
    idempotent = True

    def setup(self, worker: Any) -> None:
        """Set up this worker's process (see the class)."""
        global _SETUP_STATE
        from .. import store  # noqa: F401
        from . import worker as kernel  # noqa: F401

        for name in ("distributed.worker.state_machine", "distributed.worker"):
            logger = logging.getLogger(name)
            if not any(isinstance(f, _CancelledTaskNoise) for f in logger.filters):
                logger.addFilter(_CancelledTaskNoise())
        start_watchdog(worker)
        ignore_interrupts()
        profiler_stopped = stop_profiler(worker)
        blas_env = {v: os.environ.get(v) for v in BLAS_THREAD_VARIABLES}
        # Each of the worker's threads runs one task whose solves want one BLAS thread each.
        threads = configured_blas_threads()
        _SETUP_STATE = {
            "pid": os.getpid(),
            "malloc_tuned": tune_malloc(),
            "log_filter": True,
            "blas_env": blas_env,
            "blas_threads": limit_blas_threads(threads),
            "parent_death_signal": die_with_parent(worker),
            "profiler_stopped": profiler_stopped,
        }


def ignore_interrupts() -> None:
    """A worker ignores SIGINT: the terminal's Ctrl-C goes to the whole process group, and the
    client, not each worker, answers it (one line, then it closes the workers). Without this a
    worker whose start did not inherit the client's blocked SIGINT prints a traceback."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def stop_profiler(worker: Any) -> bool:
    """Stop Dask's statistical profiler on a running worker; returns whether it was running.

    The profiler calls ``sys._current_frames()`` every 10 ms from the worker's event loop; on
    CPython before 3.11.9 a garbage collection inside that call can deadlock the worker
    (gh-106883). Workers started with ``distributed.worker.profile.enabled: false`` (the
    embedded cluster; see :data:`.cluster.WORKER_CONFIG` for remote workers) never start it;
    this catches workers started without that setting. The dashboard works without it.
    """
    callbacks = getattr(worker, "periodic_callbacks", {})
    found = False
    for name in ("profile", "profile-cycle"):
        pc = callbacks.pop(name, None)
        if pc is not None:
            pc.stop()
            found = True
    return found
