"""docker-compose.yml's scheduler, workers and runner, run as real processes on loopback.

The commands come from the compose file itself (see deploy_helpers); the sweep is the figure2
smoke spec with 24 replicates in 36 blocks of 2 instances. "Equal" means every data variable and
coordinate bit for bit (NaN where NaN) except the wall-clock variables solve_time and done_time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.request

import pytest

from tests.support.deploy_helpers import (
    Processes,
    assert_cubes_equal,
    clean_env,
    dockerfile_instructions,
    done_mask,
    exec_form,
    map_image_paths,
    reference_store,
    start_cluster,
    summary_counts,
    wait_for,
)

N_BLOCKS = 36
RUN_TIMEOUT = 180
#: The study run on the compose cluster (issue 34): the cheapest threshold smoke study.
STUDY = "sweeps/studies/smoke/tilt-p6.toml"


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    return reference_store(tmp_path_factory)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """Scheduler + two workers from docker-compose.yml, shared by the tests that keep them."""
    tmp = tmp_path_factory.mktemp("plain-cluster")
    with Processes(tmp / "logs") as procs:
        yield start_cluster(procs, tmp, n_workers=2)


def finish(runner, timeout: float = RUN_TIMEOUT) -> str:
    try:
        code = runner.wait(timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"runner still running after {timeout} s:\n{runner.tail()}") from None
    out = runner.output()
    assert code == 0, f"runner exited {code}:\n{out}"
    return out


@pytest.mark.slow
def test_compose_cluster_matches_embedded(plain, embedded, tmp_path):
    with Processes(tmp_path / "logs") as procs:
        runner, store = plain.runner(procs, store="/results/clean.zarr")
        out = finish(runner)
    counts = summary_counts(out)
    assert counts == {
        "total": N_BLOCKS,
        "done_before": 0,
        "reused": 0,
        "computed": N_BLOCKS,
        "failed": 0,
    }
    assert "on 2 workers" in out  # the run went to the compose cluster, not an embedded one
    assert_cubes_equal(store, embedded)


@pytest.mark.slow
def test_worker_killed_mid_sweep(embedded, tmp_path):
    """kill -9 of one worker's process group (nanny and worker: the container is gone)."""
    with Processes(tmp_path / "logs") as procs:
        cluster = start_cluster(procs, tmp_path, n_workers=2)
        runner, store = cluster.runner(procs, store="/results/worker-kill.zarr")
        wait_for(lambda: done_mask(store).sum() >= 4, 120, "4 finished blocks", [runner])
        victim = cluster.workers[0]
        victim.kill_group(signal.SIGKILL)
        at_kill = int(done_mask(store).sum())
        assert at_kill < N_BLOCKS, "the sweep finished before the kill: make it longer"
        victim.wait(10)
        out = finish(runner)
        assert cluster.n_workers() == 1
    counts = summary_counts(out)
    # Every block reported exactly once by the client, none failed, all done in the store.
    assert counts["computed"] == N_BLOCKS and counts["failed"] == 0, out
    assert_cubes_equal(store, embedded)


@pytest.mark.slow
def test_client_killed_then_resumed(plain, embedded, tmp_path):
    with Processes(tmp_path / "logs") as procs:
        runner, store = plain.runner(procs, store="/results/client-kill.zarr")
        wait_for(lambda: done_mask(store).sum() >= 6, 120, "6 finished blocks", [runner])
        runner.kill_group(signal.SIGKILL)
        runner.wait(10)
        at_kill = int(done_mask(store).sum())
        assert 0 < at_kill < N_BLOCKS, f"{at_kill} blocks done at the kill: not mid-sweep"

        again, store2 = plain.runner(procs, store="/results/client-kill.zarr")
        assert store2 == store
        out = finish(again)
    assert "(resumed)" in out, out
    counts = summary_counts(out)
    # Blocks finished before the second run started are not recomputed (orphaned tasks of the
    # killed client may still have finished a few after the kill, hence >=).
    assert counts["done_before"] >= at_kill
    assert counts["done_before"] + counts["computed"] == N_BLOCKS
    assert counts["failed"] == 0
    assert_cubes_equal(store, embedded)


@pytest.mark.slow
def test_a_study_runs_on_the_compose_cluster_and_checks(plain, tmp_path):
    """A study spec through the compose runner on the compose workers, as shipped (no run
    arguments), then `sroa-dist check` on its store."""
    from tests.support.helpers import run_cli

    with Processes(tmp_path / "logs") as procs:
        runner, store = plain.runner(
            procs,
            store="/results/study.zarr",
            variables={"SROA_SPEC": STUDY, "SROA_RUN_ARGS": ""},
        )
        out = finish(runner)
    assert "on 2 workers" in out  # the compose cluster ran it, not an embedded one
    counts = summary_counts(out)
    assert counts["failed"] == 0 and counts["computed"] == counts["total"] > 0
    assert "integrity ok" in run_cli("check", store).stdout


def test_image_healthcheck_probes_scheduler(plain):
    """The Dockerfile's HEALTHCHECK command, run against the live scheduler's dashboard."""
    (health,) = [args for instr, args in dockerfile_instructions() if instr == "HEALTHCHECK"]
    cmd = map_image_paths(exec_form(health))
    with urllib.request.urlopen(f"{plain.dashboard}/health", timeout=5) as r:
        assert r.read() == b"ok"
    ok = subprocess.run(
        cmd, env=clean_env({"SROA_HEALTH_URL": f"{plain.dashboard}/health"}), timeout=30
    )
    assert ok.returncode == 0
    closed = plain.dashboard.rsplit(":", 1)[0] + ":1/health"
    bad = subprocess.run(
        cmd, env=clean_env({"SROA_HEALTH_URL": closed}), timeout=30, capture_output=True
    )
    assert bad.returncode == 1


def test_only_loopback_listeners(plain):
    """Every socket the compose commands opened in the tests listens on 127.0.0.1."""
    pids = {p.pid for p in [plain.scheduler, *plain.workers]}
    pids |= {c for p in pids for c in _children(p)}
    inodes = set()
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        for fd in os.listdir(fd_dir):
            try:
                link = os.readlink(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:  # 0A = LISTEN
                    listening.append((table, cols[1]))
    assert listening, "found no listening sockets of the cluster processes"
    loopback = "0100007F"  # 127.0.0.1, little-endian hex
    assert all(addr.split(":")[0] == loopback for _, addr in listening), listening


def _children(pid: int) -> list[int]:
    out = []
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(c) for c in f.read().split()]
    except OSError:
        return out
    for k in kids:
        out += [k, *_children(k)]
    return out
