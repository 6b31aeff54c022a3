"""Getting a Dask cluster for a sweep: the client given, a running scheduler, or an embedded one.

Every way of failing to get a cluster is a :class:`ClusterConnectError` with a hint for its
cause, raised before the store is touched. A peer that is not a Dask scheduler (a web server, a
port that accepts and never answers) is found by a bounded handshake before the client is made,
so it is an error within the connect timeout, not a hang or a traceback.

The embedded cluster is started so that it cannot outlive or ignore the user: its workers run
without Dask's statistical profiler (:data:`WORKER_CONFIG`), ignore the terminal's Ctrl-C (the
run closes them), and a Ctrl-C or SIGTERM that arrives while they start is delivered as soon
as they have started, not lost.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import queue
import signal
import socket
import threading
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from sroa_dist.errors import InputError, SroaWarning
from sroa_dist.threads import blas_thread_env

__all__ = [
    "DEFAULT_DASHBOARD_ADDRESS",
    "GPU_RESOURCE",
    "WORKER_CONFIG",
    "ClusterConnectError",
    "connect",
    "default_workers",
    "free_dashboard_address",
    "probe_scheduler",
    "uses_embedded",
]

#: Dashboard of the embedded cluster: loopback only.
DEFAULT_DASHBOARD_ADDRESS = "127.0.0.1:8787"

#: Dask settings every sweep worker should run with (embedded cluster: set here; remote
#: workers: the same keys as ``DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False`` etc.).
#: The profiler samples every thread's frame with ``sys._current_frames()``; on CPython before
#: 3.11.9 a garbage collection inside that call can deadlock the worker against a thread that
#: holds the GIL (CPython gh-106883). The dashboard works without it (no profile plot).
#: The event loop's health tick (default every 20 ms), the memory monitor (100 ms) and the
#: system monitor (500 ms) wake an idle worker about 60 times a second: 2 % of a core per
#: worker, CPU a block task is charged for while it runs (its process's CPU), and a larger
#: share the less of a core a loaded machine leaves the task. At 1 s, 1 s and 5 s an idle
#: worker uses 0.4 % (benchmarks/bench_certified_sweep.py, docs/results/benchmarks.md); the
#: memory limits are still enforced every second, and the dashboard's system plots are coarser.
WORKER_CONFIG: Mapping[str, Any] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
}


#: The Dask worker resource a GPU worker advertises (``dask worker ADDRESS --resources
#: GPU=1``); a block whose relaxation runs on device ``"cuda"`` holds one while it runs, so it
#: is scheduled on GPU workers only, and a cluster can mix CPU and GPU workers.
GPU_RESOURCE = "GPU"


class ClusterConnectError(OSError):
    """No Dask cluster to run on: a bad or unreachable scheduler, or the embedded one failed.

    ``hint`` says what to check for this cause.
    """

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.hint = hint


def default_workers() -> int:
    """CPUs available to this process."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def _positive(name: str, value: int | None, least: int = 1) -> None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or value < least
    ):
        raise InputError(
            f"{name}: expected an integer >= {least}; received {value!r}",
            "e.g. workers=2 (at most the CPUs available)",
        )


def _check_dashboard_address(address: str) -> None:
    host, sep, port = str(address).rpartition(":")
    ok = sep and port.isdigit() and int(port) <= 65535
    if not ok and not (str(address).isdigit() and int(address) <= 65535):
        raise ClusterConnectError(
            f"--dashboard-address: expected HOST:PORT (or :PORT); received {address!r}",
            "e.g. --dashboard-address 127.0.0.1:8787, or :0 for any free port",
        )


def check_workers(workers: int | None) -> None:
    """Refuse more embedded workers than CPUs: each is a process with one solver thread, so more
    of them only add memory (hundreds of MB each) and start-up time, and a huge count would
    spend minutes starting nothing."""
    _positive("workers", workers)
    cpus = default_workers()
    if workers is not None and workers > cpus:
        raise ClusterConnectError(
            f"--workers {workers}: expected at most {cpus} (the CPUs available to this "
            f"process); received {workers}",
            f"give --workers {cpus} or fewer; for more workers start a cluster on more machines "
            "and pass --scheduler",
        )


def uses_embedded(client: Any, scheduler: str | None, scheduler_file: str | None) -> bool:
    """Whether :func:`connect` with these arguments starts the embedded LocalCluster (no
    client, no scheduler address given or configured, no scheduler file)."""
    import dask

    address = scheduler or dask.config.get("scheduler-address", None)
    return client is None and not address and not scheduler_file


@contextlib.contextmanager
def connect(
    client: Any = None,
    *,
    scheduler: str | None = None,
    scheduler_file: str | None = None,
    workers: int | None = None,
    dashboard_address: str = DEFAULT_DASHBOARD_ADDRESS,
    timeout: float | None = None,
    allowed_failures: int | None = None,
    worker_resources: Mapping[str, float] | None = None,
) -> Iterator[Any]:
    """A Dask client: the one given, a running cluster, or an embedded LocalCluster.

    Precedence: ``client``; ``scheduler`` (address) or the ``DASK_SCHEDULER_ADDRESS`` setting;
    ``scheduler_file``; otherwise an in-process LocalCluster with ``workers`` processes
    (default: the CPUs available; more than that is refused) of one thread each, with one
    BLAS thread each (:func:`sroa_dist.threads.blas_thread_env`) — the solvers are small
    numpy products, and processes avoid the GIL. Clients and clusters opened here
    are closed on exit.

    ``timeout`` (seconds) bounds the connection to a running scheduler, handshake included
    (default: Dask's ``distributed.comm.timeouts.connect``, 30 s). ``allowed_failures`` sets
    the embedded scheduler's ``distributed.scheduler.allowed-failures`` (worker deaths a task
    may cause before it is given up). ``worker_resources`` are the Dask resources each
    embedded worker advertises (``{GPU_RESOURCE: 1}`` where blocks need this machine's GPU;
    the workers then share it). Every failure to get a cluster raises
    :class:`ClusterConnectError` with a hint for its cause; ``workers < 1`` raises
    ``ValueError``.
    """
    import dask

    _positive("workers", workers)
    address = scheduler or dask.config.get("scheduler-address", None)
    if workers is not None and (client is not None or address or scheduler_file):
        warnings.warn(
            f"workers={workers} is ignored: it sizes only the embedded LocalCluster, and a "
            "client or running cluster was given",
            SroaWarning,
            stacklevel=3,
        )
    if client is not None:
        yield client
        return
    if not address and scheduler_file:
        address = _address_from_file(scheduler_file)
    if address:
        with _client(address, timeout) as c:
            yield c
        return
    _check_dashboard_address(dashboard_address)
    check_workers(workers)
    n = workers or default_workers()
    dashboard_address = free_dashboard_address(dashboard_address)
    with _embedded(n, dashboard_address, allowed_failures, worker_resources) as c:
        yield c


def free_dashboard_address(address: str) -> str:
    """``address``, or the same host with port 0 (any free port) when its port is taken.

    Checked before the embedded cluster starts, so that a taken port (another Dask cluster on
    this machine) is one line of warning, not Dask's four, and the dashboard URL the run
    prints is where it really is.
    """
    host, _, port = str(address).rpartition(":")
    if not port.isdigit() or int(port) == 0:
        return address
    probe = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        # As the dashboard's server binds: address reuse on, so a port in TIME_WAIT is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host.strip("[]") or "", int(port)))
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            return address  # not an address of this machine: Dask's start says so
        warnings.warn(
            f"dashboard port {port} is in use (another Dask cluster on this machine?); the "
            "dashboard is served on a free port instead (--dashboard-address :PORT chooses)",
            SroaWarning,
            stacklevel=4,
        )
        return f"{host}:0"
    finally:
        probe.close()
    return address


@contextlib.contextmanager
def _embedded(
    n: int,
    dashboard_address: str,
    allowed_failures: int | None,
    resources: Mapping[str, float] | None = None,
) -> Iterator[Any]:
    import dask
    from distributed import Client, LocalCluster

    config = dict(WORKER_CONFIG)
    # BLAS threads are set before numpy loads in each worker process (the nanny's environment
    # of the processes it starts), not left to Dask's default; the worker plugin also limits
    # the loaded libraries (sroa_dist.threads).
    for var, value in blas_thread_env().items():
        config[f"distributed.nanny.pre-spawn-environ.{var}"] = value
    if allowed_failures is not None:
        config["distributed.scheduler.allowed-failures"] = allowed_failures
    quiet_resource_tracker()
    with contextlib.ExitStack() as stack:
        stack.enter_context(dask.config.set(config))  # the nannies pass it to their workers
        try:
            with _sigint_deferred():
                cluster = stack.enter_context(
                    LocalCluster(
                        n_workers=n,
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address=dashboard_address,
                        **({"resources": dict(resources)} if resources else {}),
                    )
                )
        except (RuntimeError, OSError, ValueError) as exc:
            raise ClusterConnectError(
                f"embedded Dask cluster: could not start {n} workers: {exc}",
                "check --dashboard-address (HOST:PORT, :0 for any free port; the host must be "
                "an address of this machine) and --workers",
            ) from None
        yield stack.enter_context(Client(cluster))


#: The ``-W`` option that silences the resource tracker's warnings (and only them).
TRACKER_WARNINGS = "ignore::UserWarning:multiprocessing.resource_tracker"


def quiet_resource_tracker() -> None:
    """Start multiprocessing's resource tracker, if it is not running yet, with its warnings
    silenced, so that a ``kill -9`` of the run prints nothing after the shell prompt.

    Each nanny of the embedded cluster holds two ``multiprocessing`` queues of its worker
    (Dask's ``WorkerProcess``: three named semaphores each), registered with the resource
    tracker, a helper process of this one that unlinks them if this process dies without doing
    so. After a SIGKILL it does exactly that, and also prints "resource_tracker: There appear
    to be 12 leaked semaphore objects to clean up at shutdown" (two workers, or one restarted)
    to the terminal, after the prompt. The semaphores are Dask's and their cleanup is needed,
    so only the message goes: the tracker takes the interpreter's ``-W`` options of this
    process when it starts (``sys.warnoptions``), and its warnings are all of this one kind.
    A tracker that already runs (started by the caller) is left as it is.
    """
    import sys
    from multiprocessing import resource_tracker

    if TRACKER_WARNINGS not in sys.warnoptions:
        sys.warnoptions.append(TRACKER_WARNINGS)
    resource_tracker.ensure_running()


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Start worker processes that never see the terminal's Ctrl-C, and defer this process's.

    The terminal sends Ctrl-C to the whole process group. A worker that receives it while it
    still imports prints a ``KeyboardInterrupt`` traceback, so the workers must start with
    SIGINT ignored; this process, not each worker, answers it (one line, then it closes them).
    A blocked signal mask does not reach them (Python's process start clears it), but an
    ignored signal survives ``exec``: the workers are started through a two-line launcher that
    ignores SIGINT and then runs this Python (:func:`_ignoring_launcher`).

    In this thread SIGINT is blocked meanwhile, not ignored: a Ctrl-C that arrives during the
    start stays pending and is delivered when the start ends (``SIG_IGN`` would lose it).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with _ignoring_launcher():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextlib.contextmanager
def _ignoring_launcher() -> Iterator[None]:
    """Processes started by ``multiprocessing``'s spawn method meanwhile ignore SIGINT from
    their first instruction: they run a shell launcher (``trap '' INT; exec python ...``)
    instead of this Python directly. The launcher lives in a private temporary folder and the
    previous executable is restored afterwards (a later worker restart runs Python directly and
    ignores SIGINT from the worker plugin on)."""
    import multiprocessing.spawn as mp_spawn
    import shlex
    import sys
    import tempfile

    shell = "/bin/sh"
    if os.name != "posix" or not os.path.exists(shell):
        yield
        return
    previous = mp_spawn.get_executable()
    with tempfile.TemporaryDirectory(prefix="sroa-launch-") as folder:
        launcher = os.path.join(folder, "python")
        with open(launcher, "w", encoding="utf-8") as f:
            python = shlex.quote(os.fsdecode(previous or sys.executable))
            f.write(f"#!{shell}\ntrap '' INT\nexec {python} \"$@\"\n")
        os.chmod(launcher, 0o700)
        mp_spawn.set_executable(launcher)
        try:
            yield
        finally:
            mp_spawn.set_executable(previous)


def _address_from_file(path: str) -> str:
    """The address in a scheduler file (``distributed.Client`` would wait for it forever)."""
    try:
        with open(path, encoding="utf-8") as f:
            address = json.load(f)["address"]
    except FileNotFoundError:
        raise ClusterConnectError(
            f"--scheduler-file {path}: expected the file a running scheduler wrote; received a "
            "path that does not exist",
            "start the scheduler first (dask scheduler --scheduler-file PATH) or fix the path",
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ClusterConnectError(
            f"--scheduler-file {path}: expected a JSON scheduler file with an 'address'; "
            f"could not read one ({type(exc).__name__}: {exc})",
            "give the file written by `dask scheduler --scheduler-file PATH`",
        ) from None
    return str(address)


_CONNECT_HINT = (
    "check the scheduler address, that the scheduler runs, and the TLS settings "
    "(DASK_DISTRIBUTED__COMM__TLS__*)"
)


def _connect_timeout(timeout: float | None) -> float:
    import dask
    from dask.utils import parse_timedelta

    if timeout:
        return float(timeout)
    return float(parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s"))


def probe_scheduler(address: str, timeout: float | None = None) -> None:
    """Check within ``timeout`` seconds that ``address`` is a Dask scheduler that answers.

    Opens one Dask comm (its handshake included) and asks for the peer's identity. Raises
    :class:`ClusterConnectError` when the connection is refused, when the peer speaks another
    protocol (an HTTP server's answer read as a Dask frame asks for exabytes), when it answers
    nothing, or when it is another kind of Dask server. Runs in its own thread and event loop
    (so it works under a running loop, e.g. Jupyter); the calling thread waits at most
    ``timeout`` plus a second, and stays interruptible.
    """
    from distributed.comm.addressing import parse_address, parse_host_port

    host_port = None
    try:
        protocol, location = parse_address(address)
        if protocol in ("tcp", "tls"):
            host_port = parse_host_port(location)  # a missing port is found here
    except ValueError as exc:
        raise ClusterConnectError(
            f"--scheduler {address}: expected a scheduler address such as tcp://HOST:8786; "
            f"received one that cannot be parsed ({exc})",
            "give PROTOCOL://HOST:PORT, e.g. tcp://10.0.0.5:8786 or tls://host:8786",
        ) from None
    seconds = _connect_timeout(timeout)
    if host_port is not None:
        # Dask's connect retries a refused connection until its timeout, which would read as
        # "no answer"; a plain TCP connect tells a refused port from a silent peer at once.
        try:
            socket.create_connection(host_port, timeout=seconds).close()
        except OSError as exc:
            raise ClusterConnectError(
                f"scheduler {address}: could not connect ({exc})", _CONNECT_HINT
            ) from None
    answers: queue.Queue = queue.Queue()

    def target() -> None:
        import asyncio

        try:
            answers.put(("ok", asyncio.run(_identity(address, seconds))))
        except BaseException as exc:  # handed to the caller
            answers.put(("error", exc))

    threading.Thread(target=target, name="sroa-dist-probe", daemon=True).start()
    try:
        kind, value = answers.get(timeout=seconds + 1.0)
    except queue.Empty:
        kind, value = "error", TimeoutError()
    if kind == "ok" and isinstance(value, Mapping) and value.get("type") == "Scheduler":
        return
    if kind == "ok":
        what = value.get("type") if isinstance(value, Mapping) else type(value).__name__
        raise ClusterConnectError(
            f"--scheduler {address}: expected a Dask scheduler; received a Dask {what}",
            "give the scheduler's address (dask scheduler prints it), not a worker's",
        )
    exc = value
    if isinstance(exc, TimeoutError):  # asyncio's too (an alias since Python 3.11)
        raise ClusterConnectError(
            f"--scheduler {address}: no Dask answer within {seconds:g} s: the peer accepts "
            "connections but is not a Dask scheduler, or it is overloaded",
            "check the address and port (the scheduler's is usually 8786; 8787 is its "
            "dashboard); raise --connect-timeout for a slow network",
        )
    if isinstance(exc, OSError) and not _garbled(exc):
        raise ClusterConnectError(f"scheduler {address}: could not connect ({exc})", _CONNECT_HINT)
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        raise exc
    first = str(exc).splitlines()[0][:120] if str(exc) else ""
    if isinstance(exc, MemoryError):  # the first bytes, read as a Dask frame length
        first = "its first bytes announce a message of exabytes, as an HTTP reply would"
    raise ClusterConnectError(
        f"--scheduler {address}: expected a Dask scheduler; the peer answered in another "
        f"protocol ({type(exc).__name__}{': ' + first if first else ''})",
        "check the address and port (the scheduler's is usually 8786; 8787 is its dashboard, "
        "an HTTP server)",
    )


def _garbled(exc: BaseException) -> bool:
    """A comm error raised while decoding what the peer sent (not a refused connection)."""
    text = str(exc).lower()
    return any(word in text for word in ("deserial", "frame", "unpack", "protocol"))


async def _identity(address: str, seconds: float) -> Any:
    import asyncio

    from distributed.comm import connect as comm_connect
    from distributed.security import Security

    args = Security().get_connection_args("client")

    async def ask() -> Any:
        comm = await comm_connect(address, timeout=seconds, **args)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    return await asyncio.wait_for(ask(), seconds)


@contextlib.contextmanager
def _client(address: str, timeout: float | None) -> Iterator[Any]:
    import dask
    from distributed import Client

    probe_scheduler(address, timeout)
    # A Client sets dask's default scheduler in __init__ and resets it in close(); one that
    # fails to connect is never closed, and would leave every later dask computation in this
    # process asking for a distributed client.
    missing = object()
    saved = dask.config.config.get("scheduler", missing)
    try:
        try:
            client = Client(address, timeout=timeout) if timeout else Client(address)
        except BaseException:
            if saved is missing:
                dask.config.config.pop("scheduler", None)
            else:
                dask.config.config["scheduler"] = saved
            raise
    except ValueError as exc:  # malformed address
        raise ClusterConnectError(
            f"--scheduler {address}: expected a scheduler address such as tcp://HOST:8786; "
            f"received one that cannot be parsed ({exc})",
            "give PROTOCOL://HOST:PORT, e.g. tcp://10.0.0.5:8786 or tls://host:8786",
        ) from None
    except (OSError, TimeoutError) as exc:  # refused, unreachable, TLS handshake refused
        raise ClusterConnectError(
            f"scheduler {address}: could not connect ({exc})", _CONNECT_HINT
        ) from None
    with client:
        yield client
