"""Run a sweep on Dask distributed: client/cluster handling, block submission, progress, resume.

*What* is computed lives in spec/grid/worker; *where* in this module. One task = one block:
the task computes its instances with the numerical core and writes them straight into the
store (results never travel through the scheduler; the task returns a few timings). Finished
blocks are recorded in the store's ``done`` mask, so running again resumes where any earlier
run stopped, whatever killed it.

Order of a run (each step fails before the next can do harm): check that the store path may be
written (:func:`..store.target.check_store_target`) and that no other run holds its writer lease
(a read: a refused run starts no cluster), connect to the cluster (or start the embedded one,
on a free dashboard port), take the store's writer lease (:mod:`..store.lease`; this also creates
the store folder), then create / resume / extend the store and submit the blocks, each carrying the
layout token.

Faults are sorted by what a second attempt could change. The block kernel is a pure function of
its task, so its errors (a ``ValueError`` from the numerics, say) would repeat: the block is
reported failed at once and never retried. Faults around it -- store I/O (``OSError``), memory,
a worker lost mid-task -- may pass: Dask retries such a task up to ``retries`` times (and
reschedules the tasks of a lost worker on its own), then the block is reported failed. Failed
blocks stay not-done and are run again by the next run.

Worker set-up (imports, malloc settings, log filters) is the :class:`.plugin.WorkerSetup`
plugin, registered with the cluster, so that workers which join or replace others later get it
too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import errno
import os
import shutil
import sys
import time
import uuid
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from sroa_dist.errors import InputError, InputTypeError, SroaWarning

from ..cost import estimate_line
from ..kinds import (
    advice,
    estimate,
    load_spec,
    make_layout,
    point_cost,
    spec_from_dict,
)
from ..layout import BlockTask, Layout, block_task
from ..spec import SpecError, SweepSpec, apply_overrides
from ..store import DEFAULT_LEASE_TIMEOUT, StoreLease
from .cluster import (
    DEFAULT_DASHBOARD_ADDRESS,
    GPU_RESOURCE,
    ClusterConnectError,
    _positive,
    connect,
    uses_embedded,
)
from .routing import block_resources, check_gpu_here, spec_needs_gpu, warn_without_gpu_workers
from .watchdog import DEADLINE_TOPIC, task_deadline

__all__ = [
    "DEFAULT_DASHBOARD_ADDRESS",
    "DEFAULT_RETRIES",
    "TASK_DEADLINE_FACTOR",
    "TASK_DEADLINE_FLOOR",
    "ClusterConnectError",
    "DiskFullError",
    "SweepResult",
    "block_deadline",
    "connect",
    "run_sweep",
]

#: Extra attempts of a block task after a transient fault (``run_sweep(retries=)``,
#: ``sroa-dist run --retries``); errors of the block kernel itself are never retried.
DEFAULT_RETRIES = 2
#: A block's deadline is this multiple of its cost-model estimate (seconds on an idle core):
#: a busy machine runs several times slower than the estimate, a hang runs forever.
TASK_DEADLINE_FACTOR = 20.0
#: ...and never shorter than this many seconds (imports, a fresh worker, a slow store).
TASK_DEADLINE_FLOOR = 300.0


class DiskFullError(OSError):
    """The store's disk is full: names the store and the space left; ``hint`` says what to do."""

    def __init__(self, message: str, hint: str):
        super().__init__(errno.ENOSPC, message)
        self.hint = hint

    def __str__(self) -> str:
        return str(self.strerror)


@dataclass
class SweepResult:
    """What a run did: store, counts and timings.

    ``task_time`` sums the wall time of the tasks run, ``kernel_time`` the part of it spent
    inside numerical-core calls, ``cpu_time`` the CPU seconds the workers used for them;
    ``compute_wall_time`` runs from the first submission to the last result and ``wall_time``
    is the run's total (store preparation and cluster start-up included).
    """

    store: str
    name: str
    action: str
    n_instances: int
    n_blocks: int
    blocks_done_before: int
    blocks_reused: int
    blocks_computed: int
    failed: dict[int, str] = field(default_factory=dict)
    wall_time: float = 0.0
    compute_wall_time: float = 0.0
    task_time: float = 0.0
    kernel_time: float = 0.0
    cpu_time: float = 0.0
    instances_computed: int = 0
    n_workers: int = 0
    dashboard: str | None = None

    @property
    def complete(self) -> bool:
        """Every block is done."""
        return not self.failed and (
            self.blocks_done_before + self.blocks_reused + self.blocks_computed == self.n_blocks
        )


def block_deadline(spec: SweepSpec, task: BlockTask, task_timeout: float | None = None) -> float:
    """Seconds a block task may run before its worker is restarted and the block retried.

    ``task_timeout`` when given; otherwise :data:`TASK_DEADLINE_FACTOR` times the cost model's
    estimate for the block's instances (the same estimate that sized the blocks), and at least
    :data:`TASK_DEADLINE_FLOOR`.
    """
    if task_timeout is not None:
        return float(task_timeout)
    estimate = sum(point_cost(spec, st) for _, st, _ in task.instances(spec))
    return max(TASK_DEADLINE_FLOOR, TASK_DEADLINE_FACTOR * estimate)


def _run_block(
    url: str,
    task: BlockTask,
    storage_options: Mapping[str, Any] | None,
    deadline: float | None = None,
    label: str = "",
) -> dict:
    """Task body: compute a block and write it into the store (idempotent).

    Returns the block's counts and timings, or ``{"index", "error"}`` for a failure a retry
    cannot cure: an error of the kernel (a pure function of the task, except for ``OSError``
    and ``MemoryError``, which may be transient) or a write refused because the store's
    layout is no longer the one the task was planned for (``task.layout_token``; nothing is
    written). Any other fault propagates, and Dask retries the task. Past ``deadline``
    seconds the worker's watchdog ends the worker process (:mod:`.watchdog`; ``label`` names
    the task in its report).
    """
    with task_deadline(deadline, label or f"block {task.index}"):
        return _compute_and_write(url, task, storage_options)


def _compute_and_write(
    url: str, task: BlockTask, storage_options: Mapping[str, Any] | None
) -> dict:
    from ..inner_pool import inner_pool
    from ..store import EvaluationJournal, ResultStore, StaleLayoutError
    from .cluster_pool import WorkerTaskPool
    from .worker import compute_block

    t0, c0 = time.perf_counter(), time.process_time()
    # A threshold search with k_section > 1 hands each round's evaluations to the cluster, and
    # every evaluation it finishes is journalled in the store: a killed search resumes there.
    journal = EvaluationJournal(url, storage_options, task.dims, task.coords, WorkerTaskPool())
    try:
        with inner_pool(journal):
            result = compute_block(task)
    except (OSError, MemoryError):
        raise
    except Exception as exc:  # deterministic: would fail again on any worker
        return {"index": task.index, "error": f"{type(exc).__name__}: {exc}"}
    try:  # the store's one door writes certificates, then arrays, then the done flag
        ResultStore(url, storage_options).write(task, result)
    except StaleLayoutError as exc:  # the store moved on to another layout: final
        return {"index": task.index, "error": f"{type(exc).__name__}: {exc}"}
    # The block is written: its journal is spent. A folder left by a failed removal is never
    # read again (its block is done) and `--overwrite` clears it.
    with contextlib.suppress(OSError):
        journal.clear()
    return {
        "index": task.index,
        "n": result.n_instances,
        "kernel_time": result.kernel_time,
        "compute_time": result.wall_time,
        "task_time": time.perf_counter() - t0,
        # CPU seconds of the worker process: below task_time when the worker was starved
        # (other processes on the machine), which wall-clock efficiencies cannot tell apart.
        "cpu_time": time.process_time() - c0,
    }


class Progress:
    """Instances done / total, rate and ETA; a live line on a TTY, plain lines otherwise."""

    def __init__(self, total: int, done: int, stream: TextIO | None, interval: float = 5.0):
        self.total, self.done, self.start_done = total, done, done
        self.stream, self.interval = stream, interval
        self.t0 = self.last = time.perf_counter()
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())

    def update(self, n: int, force: bool = False) -> None:
        """Count ``n`` more instances; print when due."""
        self.done += n
        if self.stream is None:
            return
        now = time.perf_counter()
        if not (force or self.tty or now - self.last >= self.interval):
            return
        if self.tty and not force and now - self.last < 0.2:
            return
        self.last = now
        elapsed = now - self.t0
        rate = (self.done - self.start_done) / elapsed if elapsed > 0 else 0.0
        left = self.total - self.done
        eta = left / rate if rate > 0 else float("nan")
        pct = 100.0 * self.done / self.total if self.total else 100.0
        msg = (
            f"{self.done}/{self.total} instances ({pct:5.1f} %)  {rate:8.1f} inst/s  "
            f"elapsed {_hms(elapsed)}  ETA {_hms(eta)}"
        )
        if self.tty:
            self.stream.write("\r" + msg + ("\n" if force else ""))
        else:
            self.stream.write(msg + "\n")
        self.stream.flush()


def _hms(seconds: float) -> str:
    if seconds != seconds:  # NaN
        return "--:--:--"
    s = int(round(seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _seconds(name: str, value: Any, hint: str) -> None:
    """A duration keyword of :func:`run_sweep`: ``None`` or finite seconds > 0."""
    if value is None:
        return
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not (ok and 0 < value < float("inf")):
        raise InputError(f"{name}: expected seconds > 0; received {value!r}", hint)


#: The keywords of :func:`run_sweep` itself (every other keyword is a spec key).
def _own_keywords() -> list[str]:
    import inspect

    return [
        name
        for name, prm in inspect.signature(run_sweep).parameters.items()
        if prm.kind is inspect.Parameter.KEYWORD_ONLY
    ]


def _keyword_error(exc: SpecError, overrides: Mapping[str, Any]) -> InputError:
    """A spec error caused by a keyword of :func:`run_sweep` told as one: the spec layer
    names the ``--set`` option, which a Python caller never wrote.

    A key the spec does not have is a misspelt keyword (``replicatse=4``): an
    :class:`~sroa_dist.errors.InputTypeError` (Python's own answer is a ``TypeError``) that
    lists run_sweep's keywords and the spec keys; a bad value names the keyword and the key.
    Errors of the spec file itself pass unchanged."""
    keyword = next(
        (
            k
            for k in reversed(list(overrides))
            if (dotted := k.replace("__", ".")) == exc.key
            or exc.key.startswith(dotted + ".")
            or dotted.startswith(exc.key + ".")
        ),
        None,
    )
    if keyword is None:
        return exc
    if exc.received == "<unknown key>":
        own = ", ".join(_own_keywords())
        return InputTypeError(
            f"run_sweep() got an unexpected keyword argument {keyword!r}: expected one of its "
            f"keywords ({own}) or a spec key ({exc.expected}; nested keys as "
            f"table__key, e.g. noise__sigma); received {keyword}={overrides[keyword]!r}",
            "check the spelling; docs/sweeps.md lists every spec key",
        )
    return SpecError(
        f"run_sweep({keyword}={overrides[keyword]!r})",
        exc.key,
        exc.expected,
        exc.received,
        exc.given_hint or f"fix the value of keyword {keyword}; docs/sweeps.md lists the keys",
    )


def _resolve_spec(spec_or_path: Any, overrides: Mapping[str, Any]) -> SweepSpec:
    if isinstance(spec_or_path, SweepSpec):
        if overrides:
            return spec_from_dict(
                apply_overrides(spec_or_path.to_dict(), overrides, spec_or_path.source),
                source=spec_or_path.source,
            )
        return spec_or_path
    if isinstance(spec_or_path, Mapping):
        return spec_from_dict(apply_overrides(spec_or_path, overrides))
    return load_spec(spec_or_path, overrides)


def run_sweep(
    spec_or_path: SweepSpec | str | Path | Mapping[str, Any],
    store: str | Path | None = None,
    client: Any = None,
    *,
    scheduler: str | None = None,
    scheduler_file: str | None = None,
    workers: int | None = None,
    block_size: int | None = None,
    overwrite: bool = False,
    progress: TextIO | None | bool = False,
    history: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    dashboard_address: str = DEFAULT_DASHBOARD_ADDRESS,
    connect_timeout: float | None = None,
    lease_timeout: float = DEFAULT_LEASE_TIMEOUT,
    retries: int = DEFAULT_RETRIES,
    task_timeout: float | None = None,
    **overrides: Any,
) -> SweepResult:
    """Run (or resume, or extend) a sweep and write its result cube.

    Parameters
    ----------
    spec_or_path
        A :class:`SweepSpec`, a path to a TOML spec, or a spec dict.
    store
        Local path or fsspec URL of the zarr store (default ``results/<name>.zarr``).
    client
        A ``distributed.Client`` to use; otherwise see :func:`connect` (``scheduler``,
        ``scheduler_file``, ``workers``, ``dashboard_address``).
    block_size
        Instances per task when the store is created (default: about 4 s of work per task,
        at most 10^4 tasks; at least 1). An existing store keeps its blocks.
    overwrite
        Replace an existing sroa-dist store instead of resuming or extending it. Whatever
        the flag, only a new path, an empty folder or a sroa-dist store is written (see
        :func:`..store.target.check_store_target`).
    progress
        A stream for the progress bar, ``True`` for stderr, ``False``/``None`` for silence.
    history
        The line recorded in the store's ``history`` attribute (default: this call).
    storage_options
        fsspec options for remote stores (e.g. ``{"anon": False}``).
    connect_timeout
        Seconds to wait for a running scheduler (default: Dask's connect timeout).
    lease_timeout
        Seconds without a heartbeat after which another run may take over the store's writer
        lease (:class:`..store.lease.StoreLease`); this run renews it every ``lease_timeout / 6``.
    retries
        Extra attempts of a block task after a fault that may pass (store I/O, memory; a
        worker lost mid-task is rescheduled by Dask on its own); default
        :data:`DEFAULT_RETRIES`. Errors of the block kernel itself (deterministic) are never
        retried: the block is reported failed at once. For the embedded cluster it is also
        the number of worker deaths (a task past its deadline, say) a block may cause before
        it is given up; a running cluster uses its own ``allowed-failures`` setting.
    task_timeout
        Seconds a block task may run before its worker process is restarted and the block
        retried (default: :func:`block_deadline`, from the cost model). A block that
        outlives its deadline on every attempt is reported failed with that reason.
    **overrides
        Spec overrides by dotted key (``noise__sigma`` may stand for ``noise.sigma``), e.g.
        ``run_sweep("sweeps/figure2.toml", replicates=20)``.

    Returns
    -------
    SweepResult
        Counts and timings; ``failed`` maps block index to the error of blocks that failed
        (after their retries, if any; they are run again by the next run).

    Raises
    ------
    StoreRefusedError
        The store path is a file, a folder holding other things, another zarr store, or the
        current folder (or an ancestor).
    ClusterConnectError
        No cluster: raised before the store is created or changed.
    DiskFullError
        The store's disk filled up (names the store and the space left); blocks not yet
        written stay not-done.
    StoreLockedError
        Another run holds the store's writer lease (refused, whether it would resume, extend
        or overwrite; identical concurrent runs are refused too).
    LeaseLostError
        This run's lease was taken over while it ran (its heartbeat stalled past
        ``lease_timeout``); its remaining writes are refused by the layout token.
    """
    from ..store import (
        TAKEOVER_SETTLE_S,
        check_store_target,
        clear_failed,
        describe_journal,
        journal_counts,
        mark_failed,
        prepare_store,
        read_done,
    )

    t_start = time.perf_counter()
    _positive("workers", workers)
    _positive("block_size", block_size)
    _positive("retries", retries, least=0)
    if not isinstance(overwrite, bool):
        raise InputTypeError(
            f"overwrite: expected true or false; received {overwrite!r}",
            "pass overwrite=True (replace a sroa-dist store) or overwrite=False (resume it)",
        )
    _seconds("task_timeout", task_timeout, "e.g. task_timeout=600, or None for the cost model's")
    _seconds("connect_timeout", connect_timeout, "e.g. connect_timeout=30, or None for Dask's")
    _seconds("lease_timeout", lease_timeout, f"e.g. lease_timeout={DEFAULT_LEASE_TIMEOUT:g}")
    try:
        spec = _resolve_spec(spec_or_path, overrides)
    except SpecError as exc:
        raise _keyword_error(exc, overrides) from None
    url = str(store) if store is not None else spec.default_store
    if "://" not in url:
        # Workers may run in another folder (a cluster started elsewhere): they get the path
        # this process means, not one relative to their own working directory.
        url = os.path.abspath(url)
    stream = sys.stderr if progress is True else (progress or None)
    layout = make_layout(spec, block_size=block_size)
    if history is None:
        history = f"run_sweep({spec.source!r}, overrides={dict(overrides)!r})"
    command = history
    history = f"{_dt.datetime.now(_dt.UTC).isoformat(timespec='seconds')}: {history}"
    check_store_target(url, overwrite=overwrite, storage_options=storage_options)
    gpu = spec_needs_gpu(spec)
    embedded = uses_embedded(client, scheduler, scheduler_file)
    if gpu and embedded:
        check_gpu_here()
    lease = StoreLease(url, storage_options, timeout=lease_timeout, command=command)
    lease.check_free()  # a store another run writes is refused before any cluster starts
    for line in advice(spec):  # e.g. replicates of a deterministic family repeat one result
        warnings.warn(line, SroaWarning, stacklevel=2)
    with contextlib.ExitStack() as stack:
        # Released last, after the client is closed: no task of this run still runs then.
        stack.callback(lease.release)
        # Cluster first: a bad scheduler or embedded-cluster failure leaves the store untouched.
        c = stack.enter_context(
            connect(
                client,
                scheduler=scheduler,
                scheduler_file=scheduler_file,
                workers=workers,
                dashboard_address=dashboard_address,
                timeout=connect_timeout,
                allowed_failures=retries,
                worker_resources={GPU_RESOURCE: 1} if gpu and embedded else None,
            )
        )
        lease.acquire()
        prepared = prepare_store(
            url,
            spec,
            layout,
            overwrite=overwrite,
            history=history,
            storage_options=storage_options,
            # The holder whose lease was taken over may still have block writes in flight.
            settle=TAKEOVER_SETTLE_S if lease.took_over is not None else 0.0,
            # The default block shape of this call is no request to change a stored one.
            block_shape_requested=block_size is not None,
        )
        lease.renew(layout_token=prepared.layout_token)
        lease.start_heartbeat()
        layout = prepared.layout
        spec = prepared.spec or spec  # the method revisions the store computes with
        done = read_done(url, storage_options)
        pending = [int(b) for b in (~done).nonzero()[0]]
        done_before = int(done.sum()) - prepared.reused_blocks
        result = SweepResult(
            store=url,
            name=spec.name,
            action=prepared.action,
            n_instances=layout.n_instances,
            n_blocks=layout.n_blocks,
            blocks_done_before=done_before,
            blocks_reused=prepared.reused_blocks,
            blocks_computed=0,
        )
        if pending:
            clear_failed(url, storage_options)
            result.dashboard = getattr(c, "dashboard_link", None)
            result.n_workers = len(c.scheduler_info(n_workers=-1).get("workers", {}))
            from .plugin import WorkerSetup

            c.register_plugin(WorkerSetup())  # also reaches workers that join later
            if gpu:
                warn_without_gpu_workers(c, stream)
            if stream is not None:
                # The cost model's line (as `sroa-dist validate` prints it), for the blocks
                # still to run on the workers this run has.
                est = estimate(spec, layout, max(1, result.n_workers), pending)
                stream.write(
                    f"sroa-dist: sweep '{spec.name}' -> {url} ({prepared.action}); "
                    f"{len(pending)}/{layout.n_blocks} blocks to run on {result.n_workers} "
                    f"worker{'' if result.n_workers == 1 else 's'}; dashboard: "
                    f"{result.dashboard}\n{estimate_line(est, loaded=True)}\n"
                )
                # Searches killed mid-way resume from the evaluations they journalled.
                for line in describe_journal(journal_counts(url, layout, pending, storage_options)):
                    stream.write(f"sroa-dist: resuming: {line}\n")
                stream.flush()
            plan = _Plan(spec, layout, prepared.layout_token, retries, task_timeout)
            try:
                _submit_all(c, url, plan, pending, result, stream, storage_options, lease)
            except DiskFullError:
                # Best effort: the disk is full, so the record may not fit; the blocks stay
                # not-done either way and the next run computes them.
                with contextlib.suppress(Exception):
                    lease.renew()
                    mark_failed(url, result.failed, storage_options)
                raise
            if result.failed:
                lease.renew()  # compare-and-swap: never record failures in a store we lost
                mark_failed(url, result.failed, storage_options)
    result.wall_time = time.perf_counter() - t_start
    return result


@dataclass(frozen=True)
class _Plan:
    """What every block task of a run shares."""

    spec: SweepSpec
    layout: Layout
    layout_token: str
    retries: int
    task_timeout: float | None


def _submit_all(
    client: Any,
    url: str,
    plan: _Plan,
    pending: list[int],
    result: SweepResult,
    stream: TextIO | None,
    storage_options: Mapping[str, Any] | None,
    lease: StoreLease | None = None,
) -> None:
    """Submit blocks with a bounded window (scheduler memory stays small for 10^4+ tasks).

    Stops (raising :class:`..store.lease.LeaseLostError`) as soon as the writer lease is lost, and
    (raising :class:`DiskFullError`) at the first block that found the store's disk full:
    every later block would fail the same way.
    """
    from distributed import as_completed

    layout = plan.layout
    done_inst = layout.n_instances - sum(layout.block_size(b) for b in pending)
    bar = Progress(layout.n_instances, done_inst, stream)
    run_id = uuid.uuid4().hex[:8]
    nthreads = max(1, sum(client.nthreads().values()))
    window = max(4 * nthreads, 64)
    todo = iter(pending)
    ac = as_completed()
    futures: dict[str, tuple[int, float]] = {}

    def submit_next() -> bool:
        b = next(todo, None)
        if b is None:
            return False
        task = dataclasses.replace(block_task(plan.spec, layout, b), layout_token=plan.layout_token)
        deadline = block_deadline(plan.spec, task, plan.task_timeout)
        key = f"sroa_block-{run_id}-{b}"
        fut = client.submit(
            _run_block, url, task, storage_options, deadline, key, key=key, pure=False,
            retries=plan.retries, resources=block_resources(plan.spec, task),
        )  # fmt: skip
        futures[fut.key] = (b, deadline)
        ac.add(fut)
        return True

    t0 = time.perf_counter()
    for _ in range(window):
        if not submit_next():
            break
    try:
        for fut in ac:
            if lease is not None:
                lease.check()
            b, deadline = futures.pop(fut.key)
            try:
                info = fut.result()
            except Exception as exc:  # a failing block must not stop the others
                if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
                    result.failed[b] = f"{type(exc).__name__}: {exc}"
                    raise disk_full(url, exc) from None
                info = {"error": _failure(client, fut.key, exc, deadline)}
            if "error" in info:
                result.failed[b] = info["error"]
                bar.update(0)
            else:
                result.blocks_computed += 1
                result.instances_computed += info["n"]
                result.task_time += info["task_time"]
                result.kernel_time += info["kernel_time"]
                result.cpu_time += info["cpu_time"]
                bar.update(info["n"])
            fut.release()
            submit_next()
    finally:
        if futures:  # stopped early: what is still queued would only fail the same way
            client.cancel(list(ac.futures))
    result.compute_wall_time = time.perf_counter() - t0
    bar.update(0, force=True)


def _failure(client: Any, key: str, exc: BaseException, deadline: float) -> str:
    """One line for a block task that raised: its worker's deadline report, if there is one."""
    if type(exc).__name__ == "KilledWorker":
        try:
            events = client.get_events(DEADLINE_TOPIC)
        except Exception:  # the scheduler is gone: no better reason to give
            events = ()
        late = [msg for _, msg in events if isinstance(msg, dict) and msg.get("task") == key]
        if late:
            return (
                f"DeadlineExceeded: the block ran past its deadline of {deadline:g} s on "
                f"{len(late)} attempt(s); its worker was restarted each time (raise "
                "--task-timeout if the block is merely slow)"
            )
        return (
            f"KilledWorker: the block's worker process died on every attempt (out of memory, "
            f"or killed); deadline {deadline:g} s"
        )
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"


def disk_full(url: str, exc: OSError) -> DiskFullError:
    """A :class:`DiskFullError` naming the store (or the file the error names) and the free
    space of its disk."""
    where = getattr(exc, "filename", None) or url
    return DiskFullError(
        f"disk full: {where}: {_free_space(str(where))} free",
        "free space on that disk or write the store elsewhere (--store PATH); blocks not "
        "written stay not-done and the same command resumes",
    )


def _free_space(path: str) -> str:
    """Free bytes of the disk holding ``path`` (its nearest existing folder), for people."""
    if "://" in path and not path.startswith("file://"):
        return "unknown (remote store)"
    p = Path(path.removeprefix("file://"))
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        free = shutil.disk_usage(p).free
    except OSError:
        return "unknown"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if free < 1024 or unit == "TiB":
            return f"{free:.0f} {unit}" if unit == "B" else f"{free:.1f} {unit}"
        free /= 1024
    return "unknown"  # pragma: no cover
