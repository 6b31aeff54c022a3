"""Deployment-test helpers: compose files as the source of service commands, real processes.

The compose files are the single place where the scheduler, worker and runner commands are
written. :func:`compose_service` reads them the way ``docker compose`` would (override merge,
``${VAR:-default}`` interpolation) and turns a service into an argv list and environment for a
local process: the test supplies the variables (loopback addresses, port 0, paths in a temporary
directory) and host directories for the service's mount points, nothing else. :class:`Processes`
starts such commands in their own process groups and kills every group on exit, whatever
happened in between.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = {
    "base": ROOT / "docker-compose.yml",
    "tls": ROOT / "docker-compose.tls.yml",
    "s3": ROOT / "docker-compose.s3.yml",
    "gpu": ROOT / "docker-compose.gpu.yml",
}
#: Where the Dockerfile puts repository files inside the image (checked in test_compose.py).
IMAGE_PATHS = {"/opt/sroa": ROOT, "/usr/local/lib/sroa": ROOT / "deploy" / "docker"}
#: Wall-clock variables: they differ between any two runs, so cube comparisons skip them.
TIMING_VARIABLES = ("solve_time", "done_time")
#: One sweep for every deployment test: the figure2 smoke spec, 72 instances in 36 blocks of 2
#: (~0.2 s each), long enough to kill something mid-sweep on two workers.
SPEC = "sweeps/smoke/figure2.toml"
RUN_ARGS = "--set replicates=24 --block-size 2"
OVERRIDES = {"replicates": 24}
BLOCK_SIZE = 2

# ---------------------------------------------------------------------------------------------
# Compose files

_VAR = re.compile(
    r"\$(?:(?P<escaped>\$)"
    r"|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}"
    r"|(?P<named>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<invalid>))"
)


def interpolate(text: str, variables: Mapping[str, str]) -> str:
    """Compose variable interpolation: ``$$``, ``$VAR``, ``${VAR}``, ``${VAR:-d}``, ``${VAR-d}``,
    ``${VAR:?err}``, ``${VAR?err}``. Stricter than compose (which warns and substitutes an
    empty string): a variable without a default must be given, and a stray ``$`` is an error."""

    def sub(m: re.Match) -> str:
        if m.group("escaped"):
            return "$"
        if m.group("invalid") is not None:
            raise ValueError(f"compose interpolation: invalid '$' in {text!r}")
        name = m.group("braced") or m.group("named")
        op, arg = m.group("op"), m.group("arg") or ""
        value = variables.get(name)
        if op in (":-", "-"):
            if value is None or (op == ":-" and value == ""):
                return arg
        elif op in (":?", "?"):
            if value is None or (op == ":?" and value == ""):
                raise ValueError(f"compose interpolation: {name} is required: {arg}")
        elif value is None:
            raise KeyError(f"compose interpolation: {name} is not set and has no default")
        return value

    return _VAR.sub(sub, text)


def _merge(base: Any, over: Any, key: str = "") -> Any:
    """Compose's override merge for the keys used in our files."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base[k], v, k) if k in base else v
        return out
    if key == "volumes" and isinstance(base, list) and isinstance(over, list):
        merged = {str(v).split(":")[1]: v for v in base}  # merged by mount target
        merged.update({str(v).split(":")[1]: v for v in over})
        return list(merged.values())
    if key == "ports" and isinstance(base, list):
        return base + list(over)
    return over  # command, image, scalars: the override replaces


def load_compose(*names: str) -> dict:
    """The merged compose document of ``names`` (keys of :data:`COMPOSE`), base first."""
    doc: dict = {}
    for name in names:
        with open(COMPOSE[name]) as f:
            doc = _merge(doc, yaml.safe_load(f))
    return doc


@dataclass
class ServiceCommand:
    """A compose service as a local process: argv, the service's environment, and mounts."""

    service: str
    argv: list[str]
    environment: dict[str, str]
    mounts: dict[str, Path] = field(default_factory=dict)


def map_image_paths(argv: Iterable[str]) -> list[str]:
    """Rewrite paths inside the image (:data:`IMAGE_PATHS`) to the repository's files."""
    return [_map_path(a, IMAGE_PATHS) for a in argv]


def _map_path(value: str, mounts: Mapping[str, Path]) -> str:
    for target in sorted(mounts, key=len, reverse=True):
        if value == target or value.startswith(target.rstrip("/") + "/"):
            return str(mounts[target]) + value[len(target.rstrip("/")) :]
    return value


def compose_service(
    service: str,
    files: Iterable[str] = ("base",),
    variables: Mapping[str, str] | None = None,
    volumes: Mapping[str, Path] | None = None,
) -> ServiceCommand:
    """Resolve ``service`` of the merged ``files`` with ``variables`` for a local process.

    Named volumes are replaced by the host directories in ``volumes`` (by volume name); bind
    mounts by their (interpolated) source; image paths by :data:`IMAGE_PATHS`. Every argv item
    and environment value naming a path under a mount point is rewritten to the host path.
    """
    variables = dict(variables or {})
    svc = load_compose(*files)["services"][service]
    mounts: dict[str, Path] = dict(IMAGE_PATHS)
    for spec in svc.get("volumes", []):
        source, target = interpolate(str(spec), variables).split(":")[:2]
        if source.startswith((".", "/")):
            mounts[target] = (ROOT / source).resolve()
        else:
            if not volumes or source not in volumes:
                raise KeyError(f"service {service}: give a host directory for volume {source!r}")
            mounts[target] = Path(volumes[source])
    argv = [_map_path(interpolate(str(a), variables), mounts) for a in svc["command"]]
    env = {
        k: _map_path(interpolate(str(v), variables), mounts)
        for k, v in (svc.get("environment") or {}).items()
    }
    return ServiceCommand(service, argv, env, mounts)


# ---------------------------------------------------------------------------------------------
# Processes


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without Dask/AWS settings, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DASK_", "AWS_")) and k not in ("SROA_SPEC", "SROA_STORE")
    }
    env["PYTHONUNBUFFERED"] = "1"
    # `dask`, `sroa-dist` and `python` in the compose commands must be this interpreter's (the
    # CI runs pytest from a virtualenv that is not on PATH).
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(extra or {})
    return env


@dataclass
class Proc:
    """A started process (leader of its own process group) and its log file."""

    name: str
    popen: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole group (e.g. a nanny and its worker process)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)

    def wait(self, timeout: float) -> int:
        return self.popen.wait(timeout=timeout)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.output().splitlines()[-n:])


class Processes:
    """Starts processes in new sessions; on exit kills every group it started (then reaps)."""

    def __init__(self, logdir: Path):
        self.logdir = Path(logdir)
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.procs: list[Proc] = []

    def start(self, name: str, cmd: ServiceCommand | list[str], env: Mapping[str, str]) -> Proc:
        argv = cmd.argv if isinstance(cmd, ServiceCommand) else list(cmd)
        full_env = clean_env({**(cmd.environment if isinstance(cmd, ServiceCommand) else {})})
        full_env.update(env)
        log = self.logdir / f"{name}-{len(self.procs)}.log"
        with open(log, "wb") as f:
            popen = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=f,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: kill_group reaches its children
            )
        proc = Proc(name, popen, log)
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.kill_group(signal.SIGTERM)
        deadline = time.monotonic() + 3  # a graceful close, then no more patience
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            proc.kill_group(signal.SIGKILL)  # stragglers, and children of exited leaders
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wait_for(predicate, timeout: float, what: str, procs: Iterable[Proc] = (), poll=0.05):
    """Poll ``predicate`` until truthy; fail early (with logs) when a watched process dies."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        dead = [p for p in procs if not p.alive()]
        if dead or time.monotonic() > deadline:
            logs = "\n".join(f"--- {p.name} (exit {p.popen.poll()}):\n{p.tail()}" for p in procs)
            reason = f"{dead[0].name} exited" if dead else f"timed out after {timeout} s"
            raise AssertionError(f"waiting for {what}: {reason}\n{logs}")
        time.sleep(poll)


def dockerfile_instructions(path: Path = ROOT / "Dockerfile") -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs of a Dockerfile, continuation lines joined."""
    out: list[tuple[str, str]] = []
    buf = ""
    for line in path.read_text().splitlines():
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        buf += line
        instr, _, args = buf.strip().partition(" ")
        out.append((instr.upper(), " ".join(args.split())))
        buf = ""
    return out


def exec_form(args: str) -> list[str]:
    """The JSON argv of an exec-form CMD / HEALTHCHECK CMD argument string."""
    return json.loads(args[args.index("[") :])


def free_port() -> int:
    """A free TCP port on the loopback interface (for servers that cannot take port 0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    """A scheduler and workers started from the compose commands."""

    address: str  # as written in the scheduler file, with scheme
    hostport: str  # what the compose files' ${SROA_SCHEDULER_ADDRESS} receives
    dashboard: str
    scheduler: Proc
    workers: list[Proc]
    files: tuple[str, ...]
    variables: dict[str, str]
    volumes: dict[str, Path]

    def counts(self) -> dict:
        """The scheduler's /json/counts.json (plain HTTP on the loopback dashboard, so it
        works whatever the comm security)."""
        with urllib.request.urlopen(f"{self.dashboard}/json/counts.json", timeout=5) as r:
            return json.load(r)

    def n_workers(self) -> int:
        try:
            return int(self.counts()["workers"])
        except OSError:
            return 0

    def runner(
        self,
        procs: Processes,
        store: str | None = None,
        files: tuple[str, ...] | None = None,
        variables: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> tuple[Proc, str]:
        """Start the compose ``runner`` service against this cluster; returns it and its store.

        ``store`` is a path inside the container (e.g. ``/results/x.zarr``) or a URL;
        ``files`` defaults to the cluster's compose files; ``env`` is added to the process
        environment (client-side settings a user could export too).
        """
        var = {**self.variables, **(variables or {})}
        if store is not None:
            var["SROA_STORE"] = store
        cmd = compose_service("runner", files or self.files, var, self.volumes)
        return procs.start("runner", cmd, dict(env or {})), cmd.environment["SROA_STORE"]


def start_cluster(
    procs: Processes,
    tmp: Path,
    n_workers: int = 2,
    files: tuple[str, ...] = ("base",),
    variables: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> Cluster:
    """Start the compose scheduler and ``n_workers`` compose workers on loopback; wait for all."""
    tmp = Path(tmp)
    results = tmp / "results"
    results.mkdir(parents=True, exist_ok=True)
    volumes = {"results": results}
    sfile = tmp / "scheduler.json"
    var = {
        "SROA_SCHEDULER_HOST": "127.0.0.1",
        "SROA_SCHEDULER_PORT": "0",
        "SROA_DASHBOARD_ADDRESS": "127.0.0.1:0",
        "SROA_SCHEDULER_FILE": str(sfile),
        "SROA_WORKER_HOST": "127.0.0.1",
        "SROA_WORKER_DASHBOARD_ADDRESS": "127.0.0.1:0",
        "SROA_SPEC": SPEC,
        "SROA_RUN_ARGS": RUN_ARGS,
        **(variables or {}),
    }
    sched = procs.start("scheduler", compose_service("scheduler", files, var, volumes), {})

    def read_sfile() -> dict | None:
        try:
            return json.loads(sfile.read_text())
        except (OSError, ValueError):
            return None

    info = wait_for(read_sfile, timeout, "the scheduler file", [sched])
    address = info["address"]
    hostport = address.split("://", 1)[1]
    dashboard = f"http://127.0.0.1:{info['services']['dashboard']}"
    var["SROA_SCHEDULER_ADDRESS"] = hostport
    cluster = Cluster(address, hostport, dashboard, sched, [], tuple(files), var, volumes)
    for i in range(n_workers):
        cmd = compose_service("worker", files, var, volumes)
        cluster.workers.append(procs.start(f"worker{i}", cmd, {}))
    wait_for(
        lambda: cluster.n_workers() >= n_workers,
        timeout,
        f"{n_workers} workers to register",
        [sched, *cluster.workers],
        poll=0.2,
    )
    return cluster


# ---------------------------------------------------------------------------------------------
# Stores and cubes


def done_mask(store: str, storage_options: Mapping[str, Any] | None = None) -> np.ndarray:
    """The store's completion mask (empty before the template exists)."""
    from sroa_dist.sweep.store.prepare import read_done

    try:
        return read_done(store, storage_options)
    except Exception:  # not created yet / being created
        return np.zeros(0, dtype=bool)


_REFERENCE: dict[str, Path] = {}


def reference_store(tmp_path_factory) -> Path:
    """The embedded run of :data:`SPEC` with the test overrides (run_sweep's own LocalCluster,
    dashboard bound to loopback): the cube every deployment must reproduce. Computed once per
    session, shared by the test modules."""
    from sroa_dist.sweep import run_sweep

    if "store" in _REFERENCE:
        return _REFERENCE["store"]
    store = tmp_path_factory.mktemp("embedded") / "embedded.zarr"
    res = run_sweep(
        ROOT / SPEC,
        store,
        workers=2,
        block_size=BLOCK_SIZE,
        dashboard_address="127.0.0.1:0",
        **OVERRIDES,
    )
    assert res.complete, res
    _REFERENCE["store"] = store
    return store


def assert_cubes_equal(
    got: str | Path,
    want: str | Path,
    got_options: Mapping[str, Any] | None = None,
    same_blocks: bool = True,
) -> None:
    """Every data variable and coordinate bit-for-bit equal (NaN where NaN), except the timing
    variables :data:`TIMING_VARIABLES`; the stored spec equal; every block done in both.
    Provenance attrs (created, history, versions, commit) are not compared.

    ``same_blocks=False`` compares stores written with different block sizes: results do not
    depend on the blocking (per-instance seeding), the per-block bookkeeping (``done`` ...) does,
    so variables along ``block`` are then skipped.
    """
    from sroa_dist.sweep import open_results

    a = open_results(str(got), got_options).load()
    b = open_results(str(want)).load()
    assert bool(a["done"].all()), f"{got}: not every block is done"
    assert bool(b["done"].all()), f"{want}: not every block is done"
    if not same_blocks:
        a = a.drop_dims("block")
        b = b.drop_dims("block")
    assert dict(a.sizes) == dict(b.sizes)
    assert sorted(a.data_vars) == sorted(b.data_vars)
    assert sorted(a.coords) == sorted(b.coords)
    assert json.loads(a.attrs["spec"]) == json.loads(b.attrs["spec"])
    for name in [*a.coords, *a.data_vars]:
        if name in TIMING_VARIABLES:
            continue
        x, y = a[name].values, b[name].values
        assert a[name].dims == b[name].dims, name
        if x.dtype.kind in "fc":
            assert np.array_equal(x, y, equal_nan=True), f"{name} differs"
        else:
            assert np.array_equal(x, y), f"{name} differs"


def summary_counts(stdout: str) -> dict[str, int]:
    """Parse the block line of ``sroa-dist run``'s summary."""
    m = re.search(
        r"blocks: (\d+) total, (\d+) already done, (\d+) reused, (\d+) computed, (\d+) failed",
        stdout,
    )
    if not m:
        raise AssertionError(f"no run summary in the output:\n{stdout}")
    keys = ("total", "done_before", "reused", "computed", "failed")
    return dict(zip(keys, map(int, m.groups()), strict=True))
