"""Execution on real Dask processes with real zarr stores: end to end, bitwise reproducibility
across worker counts and block sizes, resume, axis extension, worker death, failures."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
from conftest import assert_same_bits, cube_values

from sroa_dist.sweep import open_results, run_sweep
from sroa_dist.sweep.execute import connect
from sroa_dist.sweep.storage import read_done, store_status

ROOT = Path(__file__).resolve().parents[1]
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


def _failing_method(Ts, rngs):
    raise ValueError("deliberate failure of a registered test method")


def _register_failing(install: bool) -> None:
    from sroa_dist import METHODS

    if install:
        METHODS["failing"] = _failing_method
    else:
        METHODS.pop("failing", None)


def test_failed_blocks_are_reported_and_retried(tmp_path, client):
    """Every block fails: a registered method that raises (validation refuses bad options, so
    a failure has to come from the computation itself), in this process and on the workers."""
    store = tmp_path / "fail.zarr"
    _register_failing(True)
    client.run(_register_failing, True)
    try:
        res = run_sweep(
            SMOKE / "figure2.toml",
            store,
            client=client,
            replicates=2,
            **{"solver.method": "failing", "solver.options": {}},
        )
        st = store_status(store)  # reads the stored spec, which names the method
    finally:
        client.run(_register_failing, False)
        _register_failing(False)
    assert not res.complete and len(res.failed) == res.n_blocks
    assert st.n_done == 0 and len(st.failed) == st.n_blocks
    assert "ValueError" in next(iter(st.failed.values()))


def test_certified_smoke(tmp_path, client):
    store = tmp_path / "cert.zarr"
    res = run_sweep(SMOKE / "certified.toml", store, client=client)
    assert res.complete
    ds = open_results(store).load()
    assert ds["certified"].all() and ds["eps_certified"].all()
    assert np.allclose(ds["eps_lower"], ds["eps_upper"], rtol=1e-4)


def test_killed_worker_loses_nothing(tmp_path, client):
    """SIGKILL a worker process mid-run: its task is retried elsewhere, the run completes, and
    the cube equals an uninterrupted run bit for bit."""
    spec = SMOKE / "figure1.toml"
    # ~0.25 s per block of 2, so that the kill lands mid-run
    over = {"replicates": 2, "tensor.n": 10, "solver.options": {"n_starts": 2048}}
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
