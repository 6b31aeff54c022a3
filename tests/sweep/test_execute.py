"""Execution on real Dask processes with real zarr stores: end to end, bitwise reproducibility
across worker counts and block sizes, resume, axis extension, worker death, failures."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from distributed.diagnostics.plugin import WorkerPlugin

from sroa_dist.sweep import open_results, run_sweep
from sroa_dist.sweep.run.cluster import connect
from sroa_dist.sweep.store.prepare import read_done, store_status
from tests.support.helpers import PACED, ROOT, assert_same_bits, cube_values

SMOKE = ROOT / "sweeps" / "smoke"


def test_smoke_sweep_end_to_end(tmp_path, client):
    store = tmp_path / "f2.zarr"
    res = run_sweep(SMOKE / "figure2.toml", store, client=client)
    assert res.complete and res.action == "created"
    assert res.blocks_computed == res.n_blocks and res.instances_computed == 36
    assert 0 < res.kernel_time <= res.task_time
    ds = open_results(store).load()
    assert dict(ds["lam_hat"].sizes) == {"noise": 3, "replicate": 12, "step": 4}
    assert ds["v_hat"].dims[-1] == "component"
    for name in ("lam_hat", "lam_err", "vec_err", "eps", "eps_lower", "eps_upper"):
        assert np.isfinite(ds[name].values).all(), name
    assert (ds["eps_lower"] <= ds["eps_upper"]).all()
    # sigma = 0.01 is small: every component recovered closely, within the Theorem 3.1 bound
    assert float(ds["vec_err"].max()) < 0.1
    assert (ds["vec_err"] <= ds["thm31_vec_bound"]).all()
    assert (ds["lam_err"] <= ds["thm31_lam_bound"]).all()
    # unit columns
    norms = np.sqrt((ds["v_hat"] ** 2).sum("component"))
    assert np.allclose(norms, 1.0)
    again = run_sweep(SMOKE / "figure2.toml", store, client=client)
    assert again.action == "resumed" and again.blocks_computed == 0 and again.complete


def test_a_relative_store_is_where_the_caller_means(tmp_path, client, monkeypatch):
    """The shared cluster's workers run in another folder than the caller: a relative store
    path (the default results/<name>.zarr is one) must reach them as the caller's path."""
    workers_cwd = set(client.run(os.getcwd).values())
    monkeypatch.chdir(tmp_path)
    assert str(tmp_path) not in workers_cwd
    res = run_sweep(SMOKE / "figure2.toml", "relative.zarr", client=client)
    assert res.complete and res.blocks_computed == res.n_blocks
    assert (tmp_path / "relative.zarr").is_dir()
    assert not any((Path(w) / "relative.zarr").exists() for w in workers_cwd)


@pytest.mark.slow
def test_bits_identical_for_worker_counts_and_block_sizes(tmp_path, client):
    spec = SMOKE / "nscaling.toml"
    a = run_sweep(spec, tmp_path / "a.zarr", client=client, block_size=2)
    b = run_sweep(spec, tmp_path / "b.zarr", workers=1, block_size=5, dashboard_address=":0")
    assert a.complete and b.complete and b.n_workers == 1 and a.n_workers == 2
    assert (
        open_results(tmp_path / "a.zarr")["lam_hat"].encoding["chunks"]
        != (open_results(tmp_path / "b.zarr")["lam_hat"].encoding["chunks"])
    )
    assert_same_bits(cube_values(tmp_path / "a.zarr"), cube_values(tmp_path / "b.zarr"))


@pytest.mark.slow
def test_extending_axes_reuses_finished_blocks(tmp_path, client):
    spec = SMOKE / "figure1.toml"
    store = tmp_path / "ext.zarr"
    first = run_sweep(
        spec, store, client=client, block_size=2, replicates=2, **{"noise.sigma": [0.02, 0.04]}
    )
    assert first.n_blocks == 4 and first.complete
    t_old = open_results(store)["done_time"].values.copy()
    # more replicates and more sigma values (inserted before, between and after the old ones)
    sigma = {"start": 0.01, "stop": 0.05, "step": 0.01}
    ext = run_sweep(spec, store, client=client, replicates=4, **{"noise.sigma": sigma})
    assert ext.action == "extended" and ext.complete
    assert ext.n_blocks == 20  # the stored block shape (1 sigma x 2 replicates) is kept
    assert ext.blocks_reused == 4 and ext.blocks_computed == 16
    ds = open_results(store)
    assert np.array_equal(np.sort(ds["done_time"].values)[:4], np.sort(t_old))  # not recomputed
    fresh = run_sweep(
        spec,
        tmp_path / "fresh.zarr",
        client=client,
        block_size=8,
        replicates=4,
        **{"noise.sigma": sigma},
    )
    assert fresh.complete
    assert_same_bits(cube_values(store), cube_values(tmp_path / "fresh.zarr"))


def _toml(text: str):
    import tomllib

    return tomllib.loads(f"v = {text}")["v"]


def test_eps_axis_is_the_coordinate(tmp_path, client):
    store = tmp_path / "eps.zarr"
    res = run_sweep(
        SMOKE / "figure2.toml",
        store,
        client=client,
        replicates=2,
        **{"noise.sigma": None, "noise.eps": [0.05, 0.2], "output.vectors": False},
    )
    assert res.complete
    ds = open_results(store)
    assert "eps" in ds.coords and "eps" not in ds.data_vars
    assert ds["eps_lower"].dims == ("noise", "eps", "replicate")
    # E is scaled so that its best-found norm equals the coordinate
    ratio = ds["eps_lower"] / ds["eps"]
    assert np.allclose(ratio, 1.0, rtol=1e-12)


# ---- faults: kernel errors reported at once, transient faults retried ---------------------
#
# Faults are injected on the workers by patching the two calls a block task makes (the kernel
# `worker.compute_block` and the store write `storage.write_block`); each attempt leaves a
# marker file, so the test counts attempts across worker processes. Validation refuses every
# spec that would fail, so a kernel error cannot be provoked through the spec itself.

_PATCHED: dict = {}


def _inject(target: str, kind: str, markers: str) -> None:
    """On a worker: make ``target`` ("compute_block" or "write_block") fail as ``kind``."""
    import uuid

    from sroa_dist.sweep.run import worker
    from sroa_dist.sweep.store import prepare as storage

    module = worker if target == "compute_block" else storage
    original = _PATCHED.setdefault(target, getattr(module, target))

    def faulty(*args, **kwargs):
        index = args[0].index if target == "compute_block" else args[1]
        first = not any(Path(markers).glob(f"{index}-*"))
        (Path(markers) / f"{index}-{uuid.uuid4().hex}").touch()  # one file per attempt
        if kind == "numerical":
            raise ValueError(f"deliberate numerical error in block {index}")
        if kind == "transient-always" or first:
            raise OSError(f"deliberate transient fault in block {index}")
        return original(*args, **kwargs)

    setattr(module, target, faulty)


def _restore() -> None:
    from sroa_dist.sweep.run import worker
    from sroa_dist.sweep.store import prepare as storage

    for target, original in _PATCHED.items():
        setattr(worker if target == "compute_block" else storage, target, original)
    _PATCHED.clear()


def _attempts(markers: Path) -> dict[int, int]:
    counts: dict[int, int] = {}
    for f in markers.iterdir():
        b = int(f.name.split("-")[0])
        counts[b] = counts.get(b, 0) + 1
    return counts


def _run_with_fault(client, tmp_path, target, kind, store, **kw):
    markers = tmp_path / f"markers-{store.name}"
    markers.mkdir()
    client.run(_inject, target, kind, str(markers))
    try:
        res = run_sweep(SMOKE / "figure2.toml", store, client=client, replicates=2, **kw)
    finally:
        client.run(_restore)
    return res, _attempts(markers)


@pytest.mark.slow
def test_kernel_errors_are_reported_at_once_and_rerun_by_the_next_run(tmp_path, client):
    """A deterministic error of the kernel is not retried (one attempt per block, although
    retries are allowed), every block is reported failed in the result and the store; the next
    run runs them again and completes."""
    store = tmp_path / "fail.zarr"
    res, attempts = _run_with_fault(
        client, tmp_path, "compute_block", "numerical", store, block_size=2, retries=2
    )
    assert not res.complete and len(res.failed) == res.n_blocks == 3
    assert attempts == {b: 1 for b in range(res.n_blocks)}
    st = store_status(store)
    assert st.n_done == 0 and len(st.failed) == st.n_blocks
    assert next(iter(st.failed.values())).startswith("ValueError: deliberate numerical error")
    again = run_sweep(SMOKE / "figure2.toml", store, client=client, replicates=2, block_size=2)
    assert again.action == "resumed" and again.complete and again.blocks_computed == 3
    assert not store_status(store).failed


@pytest.mark.slow
def test_a_transient_fault_is_retried_and_changes_no_bit(tmp_path, client):
    """Every block's first write fails (an OSError, as a store hiccup would): with retries the
    run completes, each block took two attempts, and the cube equals a clean run bit for bit.
    Without retries the same fault fails every block; a fault that never passes is given up
    after 1 + retries attempts and reported."""
    res, attempts = _run_with_fault(
        client, tmp_path, "write_block", "transient-once", tmp_path / "r.zarr", block_size=2
    )
    assert res.complete and not res.failed, res.failed
    assert attempts == {b: 2 for b in range(res.n_blocks)}  # DEFAULT_RETRIES allows them
    clean = run_sweep(SMOKE / "figure2.toml", tmp_path / "c.zarr", client=client, replicates=2)
    assert clean.complete
    assert_same_bits(cube_values(tmp_path / "r.zarr"), cube_values(tmp_path / "c.zarr"))

    res0, attempts0 = _run_with_fault(
        client, tmp_path, "write_block", "transient-once", tmp_path / "r0.zarr", retries=0
    )
    assert len(res0.failed) == res0.n_blocks and set(attempts0.values()) == {1}
    assert next(iter(res0.failed.values())).startswith("OSError: deliberate transient fault")

    res1, attempts1 = _run_with_fault(
        client, tmp_path, "write_block", "transient-always", tmp_path / "r1.zarr", retries=1
    )
    assert len(res1.failed) == res1.n_blocks and set(attempts1.values()) == {2}
    assert store_status(tmp_path / "r1.zarr").n_done == 0


def test_a_block_task_sorts_its_failures(tmp_path):
    """The task body in this process, on a real store: a kernel error and a write into a
    store whose layout moved on come back as the block's error (final: nothing written, no
    retry); a store fault (OSError) propagates, for Dask to retry; a good task writes."""
    import dataclasses
    import json

    import pytest

    from sroa_dist.sweep import load_spec
    from sroa_dist.sweep.kinds import make_layout
    from sroa_dist.sweep.layout import block_task
    from sroa_dist.sweep.run.execute import _run_block
    from sroa_dist.sweep.store import prepare as storage

    spec = load_spec(SMOKE / "figure2.toml", ["replicates=2"])
    url = str(tmp_path / "t.zarr")
    layout = make_layout(spec, block_size=2)
    token = storage.prepare_store(url, spec, layout).layout_token
    task = dataclasses.replace(block_task(spec, layout, 1), layout_token=token)

    data = json.loads(task.spec_json)
    data["tensor"]["p"] = 1
    out = _run_block(url, dataclasses.replace(task, spec_json=json.dumps(data)), None)
    assert out["index"] == 1 and out["error"].startswith("SpecError: ")
    stale = _run_block(url, dataclasses.replace(task, layout_token="another"), None)
    assert stale["error"].startswith("StaleLayoutError: ")
    with pytest.raises(FileNotFoundError):
        _run_block(str(tmp_path / "gone.zarr"), task, None)
    assert not read_done(url).any()  # nothing written by any of them
    ok = _run_block(url, task, None)
    assert "error" not in ok and ok["n"] == 2
    assert read_done(url).tolist() == [False, True, False]


@pytest.mark.slow
def test_replacement_workers_get_the_worker_setup(tmp_path):
    """The worker set-up is a registered plugin: workers added after the run (scaled up) and
    workers that replace others (restart) run it too, which a one-off client.run would miss."""
    from distributed import Client, LocalCluster

    from sroa_dist.sweep.run.plugin import worker_setup_state

    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as c,
    ):
        assert list(c.run(worker_setup_state).values()) == [None]  # nothing before a run
        res = run_sweep(SMOKE / "figure2.toml", tmp_path / "p.zarr", client=c, replicates=2)
        assert res.complete
        first = c.run(worker_setup_state)
        assert [s["pid"] for s in first.values()] == list(c.run(os.getpid).values())
        cluster.scale(2)
        c.wait_for_workers(2, timeout=60)
        states = c.run(worker_setup_state)
        assert len(states) == 2 and all(s is not None for s in states.values()), states
        c.restart()
        c.wait_for_workers(2, timeout=60)
        pids = c.run(os.getpid)
        states = c.run(worker_setup_state)
        assert not set(pids.values()) & {s["pid"] for s in first.values()}  # new processes
        for addr, state in states.items():
            assert state is not None and state["pid"] == pids[addr]
            assert state["malloc_tuned"] and state["log_filter"]
            assert state["blas_env"]["OMP_NUM_THREADS"] == "1"  # the nanny's, set by us
            # ...and every BLAS library the worker loaded runs one thread (set at run time)
            assert state["blas_threads"] and set(state["blas_threads"].values()) == {1}


def test_certified_smoke(tmp_path, client):
    store = tmp_path / "cert.zarr"
    res = run_sweep(SMOKE / "certified.toml", store, client=client)
    assert res.complete
    ds = open_results(store).load()
    assert ds["certified"].all() and ds["eps_certified"].all()
    assert np.allclose(ds["eps_lower"], ds["eps_upper"], rtol=1e-4)


@pytest.mark.slow
def test_killed_worker_loses_nothing(tmp_path, client):
    """SIGKILL a worker process mid-run: its task is retried elsewhere, the run completes, and
    the cube equals an uninterrupted run bit for bit."""
    spec = SMOKE / "figure1.toml"
    # about 0.5 s per block of 2, waited (tests/support/paced.py), so that the kill lands mid-run
    over = {"replicates": 2, **PACED}
    store = tmp_path / "k.zarr"
    with connect(workers=2, dashboard_address=":0") as c:
        box = {}
        t = threading.Thread(
            target=lambda: box.setdefault(
                "res", run_sweep(spec, store, client=c, block_size=2, **over)
            )
        )
        t.start()
        deadline = time.time() + 60
        while time.time() < deadline:
            if (store / "done").exists() and read_done(store).sum() >= 2:
                break
            time.sleep(0.05)
        done_at_kill = int(read_done(store).sum())
        pids = c.run(os.getpid)
        victim = sorted(pids.values())[0]
        os.kill(victim, signal.SIGKILL)
        t.join(120)
        res = box["res"]
    assert res.complete, res.failed
    assert 2 <= done_at_kill < res.n_blocks  # the kill landed mid-run
    assert read_done(store).all()
    ref = run_sweep(spec, tmp_path / "ref.zarr", client=client, block_size=16, **over)
    assert ref.complete
    assert_same_bits(cube_values(store), cube_values(tmp_path / "ref.zarr"))


@pytest.mark.slow
def test_figure1_reduced_certified(tmp_path, client):
    """The paper's Figure 1 setting on a coarse sigma grid with the certified method."""
    store = tmp_path / "fig1.zarr"
    res = run_sweep(
        ROOT / "sweeps/figure1.toml",
        store,
        client=client,
        **{"noise.sigma": {"start": 0.02, "stop": 0.2, "step": 0.06}},
    )
    assert res.complete
    ds = open_results(store).load()
    assert (ds["vec_err"].sel(step=1) <= ds["thm22_vec_bound"]).all()
    assert (ds["lam_err"].sel(step=1) <= ds["thm22_lam_bound"] + 1e-9).all()


# ---- store safety: connect before creating, the writer lease, the layout token --------------


def test_no_cluster_no_store(tmp_path):
    """A scheduler that cannot be reached fails before the store is created (it used to leave
    an empty store behind), with the connect timeout honoured (no hang)."""
    import socket

    import pytest

    from sroa_dist.sweep.run.cluster import ClusterConnectError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for kw in (
        {"scheduler": f"tcp://127.0.0.1:{port}", "connect_timeout": 1},
        {"scheduler_file": str(tmp_path / "missing.json")},
        {"scheduler": "bogus"},
        {"dashboard_address": "nohost-or-port"},
    ):
        with pytest.raises(ClusterConnectError) as err:
            run_sweep(SMOKE / "figure2.toml", tmp_path / "x.zarr", **kw)
        assert err.value.hint
        assert not (tmp_path / "x.zarr").exists(), kw
    # a Client that failed to connect leaves dask's default scheduler as it was
    import dask

    assert dask.config.get("scheduler", None) != "dask.distributed"
    for bad in ({"workers": 0}, {"block_size": 0}, {"workers": -1}, {"block_size": -5}):
        with pytest.raises(ValueError, match="expected an integer >= 1"):
            run_sweep(SMOKE / "figure2.toml", tmp_path / "x.zarr", **bad)
    assert not (tmp_path / "x.zarr").exists()


@pytest.mark.slow
def test_a_stale_lease_is_taken_over(tmp_path, client):
    """A run whose holder stopped heart-beating (another host, heartbeat older than the
    timeout) is taken over; a live holder is refused."""
    import dataclasses
    import json

    import pytest

    from sroa_dist.sweep.store.lease import LEASE_GROUP, StoreLease, StoreLockedError, read_lease

    store = tmp_path / "s.zarr"
    first = run_sweep(SMOKE / "figure2.toml", store, client=client, replicates=2)
    assert first.complete and read_lease(str(store)) is None
    holder = StoreLease(str(store)).info

    def plant(age):
        info = dataclasses.replace(holder, host="elsewhere", heartbeat=time.time() - age)
        doc = {"zarr_format": 3, "node_type": "group", "attributes": {"sroa_lease": {}}}
        doc["attributes"]["sroa_lease"] = dataclasses.asdict(info)
        (store / LEASE_GROUP).mkdir(exist_ok=True)
        (store / LEASE_GROUP / "zarr.json").write_text(json.dumps(doc))

    plant(age=1)
    with pytest.raises(StoreLockedError, match="elsewhere"):
        run_sweep(SMOKE / "figure2.toml", store, client=client, replicates=3, lease_timeout=5)
    assert open_results(store).sizes["replicate"] == 2  # refused before anything changed
    plant(age=10)
    ext = run_sweep(SMOKE / "figure2.toml", store, client=client, replicates=3, lease_timeout=5)
    assert ext.action == "extended" and ext.complete
    assert read_lease(str(store)) is None


@pytest.mark.slow
def test_a_stale_writer_never_writes_into_a_new_layout(tmp_path, client, monkeypatch):
    """Run A stops heart-beating (as if stalled); run B takes its lease over and overwrites the
    store with another spec. A's remaining tasks are refused by the layout token, A ends with
    LeaseLostError, and B's cube equals a clean run bit for bit."""
    import sroa_dist.sweep.store as store_door
    from sroa_dist.sweep.store import lease as lease_mod
    from sroa_dist.sweep.store import prepare as storage_mod

    spec = SMOKE / "figure1.toml"
    slow = PACED  # about 0.5 s per block, waited: A is still running when B takes over
    real_heartbeat = lease_mod.StoreLease.start_heartbeat
    store = tmp_path / "s.zarr"
    monkeypatch.setattr(lease_mod.StoreLease, "start_heartbeat", lambda self, interval=None: None)
    box, settles = {}, []
    real_prepare = storage_mod.prepare_store

    def prepare_recording_settle(*args, **kw):
        settles.append(kw.get("settle"))
        return real_prepare(*args, **kw)

    # run_sweep looks prepare_store up on the store package's door when it runs.
    monkeypatch.setattr(store_door, "prepare_store", prepare_recording_settle)

    def run_a():
        try:
            box["a"] = run_sweep(
                spec, store, client=client, block_size=2, replicates=2, lease_timeout=1, **slow
            )
        except BaseException as exc:  # noqa: BLE001 - inspected below
            box["a"] = exc

    t = threading.Thread(target=run_a)
    t.start()
    deadline = time.time() + 120
    while time.time() < deadline:
        if (store / "done").exists() and read_done(store).sum() >= 1:
            break
        time.sleep(0.05)
    time.sleep(1.5)  # A's lease is now older than its timeout
    monkeypatch.setattr(lease_mod.StoreLease, "start_heartbeat", real_heartbeat)  # B beats
    b = run_sweep(
        spec,
        store,
        client=client,
        overwrite=True,
        block_size=3,
        lease_timeout=1,
        replicates=3,
        **slow,
    )
    t.join(300)
    assert b.complete and b.action == "created"
    assert isinstance(box["a"], lease_mod.LeaseLostError), box["a"]
    # B took A's lease over, so it let A's writes in flight settle before clearing the store.
    assert settles == [0.0, storage_mod.TAKEOVER_SETTLE_S]
    ref = run_sweep(spec, tmp_path / "ref.zarr", client=client, block_size=16, replicates=3, **slow)
    assert ref.complete
    assert_same_bits(cube_values(store), cube_values(tmp_path / "ref.zarr"))
    assert not store_status(store).failed and read_done(store).all()


# ---- runs that cannot hang: task deadlines, the profiler, the worker cap ----------------------


class _SleepPastDeadline(WorkerPlugin):
    """A worker plugin (so that restarted workers get it too) that makes block ``block`` sleep
    far past any deadline and leaves a marker file per attempt."""

    name = "test-sleep-past-deadline"

    def __init__(self, block: int, markers: str):
        self.block, self.markers = block, markers

    def setup(self, worker):
        import uuid

        from sroa_dist.sweep.run import worker as kernel

        original = kernel.compute_block
        block, markers = self.block, self.markers

        def hanging(task):
            if task.index == block:
                (Path(markers) / f"{block}-{uuid.uuid4().hex}").touch()
                time.sleep(3600)  # a hang, as far as the run can tell
            return original(task)

        kernel.compute_block = hanging

    def teardown(self, worker):
        pass


@pytest.mark.slow
def test_a_block_past_its_deadline_is_retried_then_failed(tmp_path):
    """A block task that hangs is ended at its deadline (the worker process is restarted by its
    nanny), retried, and after the allowed attempts reported failed with a one-line reason;
    the other blocks complete, the hung one stays not-done, and the next run finishes it."""
    import dask
    from distributed import Client, LocalCluster

    markers = tmp_path / "markers"
    markers.mkdir()
    store = tmp_path / "d.zarr"
    kw = {"replicates": 2, "block_size": 2}
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 1}),
        LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster,
        Client(cluster) as c,
    ):
        # the last block: nothing else waits behind it on the one worker when it is killed
        c.register_plugin(_SleepPastDeadline(2, str(markers)))
        res = run_sweep(SMOKE / "figure2.toml", store, client=c, task_timeout=2, **kw)
        assert set(res.failed) == {2} and res.blocks_computed == res.n_blocks - 1, res.failed
        reason = res.failed[2]
        assert reason.startswith("DeadlineExceeded: the block ran past its deadline of 2 s")
        assert "\n" not in reason
        assert len(list(markers.iterdir())) == 2  # 1 + allowed-failures attempts
        assert read_done(store).tolist() == [True, True, False]
        c.unregister_worker_plugin(_SleepPastDeadline.name)
    again = run_sweep(SMOKE / "figure2.toml", store, workers=1, dashboard_address=":0", **kw)
    assert again.complete and again.blocks_computed == 1


def test_block_deadlines_follow_the_cost_model(tmp_path):
    from sroa_dist.sweep import load_spec
    from sroa_dist.sweep.kinds import make_layout
    from sroa_dist.sweep.layout import block_task
    from sroa_dist.sweep.run.execute import TASK_DEADLINE_FLOOR, block_deadline

    small = load_spec(SMOKE / "figure2.toml")
    layout = make_layout(small, block_size=4)
    task = block_task(small, layout, 0)
    assert block_deadline(small, task) == TASK_DEADLINE_FLOOR  # cheap: the floor
    assert block_deadline(small, task, 7.5) == 7.5  # the option wins
    big = load_spec(SMOKE / "figure1.toml", ["tensor.n=22", 'solver.method="certified"'])
    big_layout = make_layout(big, block_size=64)
    deadline = block_deadline(big, block_task(big, big_layout, 0))
    assert deadline > TASK_DEADLINE_FLOOR  # 64 certified n = 22 instances: the estimate rules


def test_a_blocks_deadline_is_priced_at_its_own_grid_point():
    """A search spec whose sizes differ in cost by orders of magnitude (the recovery study,
    n = 8-64) gives each block the deadline of its own point (the kind's ``instance_cost``),
    not 20x the grid's mean: the n = 64 searches, priced at the mean, were restarted mid-run."""
    from sroa_dist.sweep import load_spec
    from sroa_dist.sweep.kinds import kind_of, make_layout, point_cost
    from sroa_dist.sweep.layout import block_task
    from sroa_dist.sweep.run.execute import TASK_DEADLINE_FACTOR, block_deadline

    spec = load_spec(ROOT / "sweeps" / "studies" / "nscaling-recovery-p3.toml")
    layout = make_layout(spec)
    deadlines = {}
    for b in range(layout.n_blocks):
        task = block_task(spec, layout, b)
        ((_, settings, _),) = list(task.instances(spec))
        deadlines[(settings.n, settings.method)] = block_deadline(spec, task)
        own = kind_of(spec).instance_cost(spec, settings)
        assert point_cost(spec, settings) == own
        assert deadlines[(settings.n, settings.method)] >= TASK_DEADLINE_FACTOR * own
    mean = kind_of(spec).mean_cost(spec)
    assert deadlines[(64, "sshopm")] > TASK_DEADLINE_FACTOR * mean
    assert deadlines[(64, "sshopm")] > deadlines[(8, "sshopm")]


def _profiler_state(dask_worker) -> dict:
    import threading

    return {
        "threads": sorted(t.name for t in threading.enumerate()),
        "callbacks": sorted(dask_worker.periodic_callbacks),
    }


@pytest.mark.slow
def test_the_dask_profiler_does_not_run_in_sweep_workers(tmp_path):
    """Dask's profiler (sys._current_frames every 10 ms: the gh-106883 deadlock on CPython
    < 3.11.9) runs in a plain LocalCluster's workers; it does not run in the embedded
    cluster's workers (config), nor in a plain cluster's workers once a sweep ran there (the
    worker plugin stops it, for clusters started elsewhere)."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster,
        Client(cluster) as c,
    ):
        before = next(iter(c.run(_profiler_state).values()))
        assert "profile" in before["callbacks"]  # the control: on by default
        assert run_sweep(SMOKE / "figure2.toml", tmp_path / "a.zarr", client=c).complete
        after = next(iter(c.run(_profiler_state).values()))
        assert "profile" not in after["callbacks"] and "profile-cycle" not in after["callbacks"]
        assert "sroa-dist-watchdog" in after["threads"]
    with connect(workers=1, dashboard_address=":0") as c:
        state = next(iter(c.run(_profiler_state).values()))
        assert "profile" not in state["callbacks"] and "Profile" not in state["threads"]


def test_more_workers_than_cpus_is_refused_before_anything_starts(tmp_path):
    import pytest

    from sroa_dist.sweep.run.cluster import ClusterConnectError, default_workers

    with pytest.raises(ClusterConnectError, match="expected at most") as err:
        run_sweep(SMOKE / "figure2.toml", tmp_path / "w.zarr", workers=default_workers() + 1)
    assert "--scheduler" in err.value.hint
    assert not (tmp_path / "w.zarr").exists()
