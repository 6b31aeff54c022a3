"""Routing blocks by device (sroa_dist/sweep/run/routing.py): a block whose relaxation runs on a
GPU holds the GPU resource, so one cluster mixes CPU workers and GPU workers and the GPU
blocks run on the GPU workers only (real scheduler, real `dask worker` processes)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest

from sroa_dist.sweep import load_spec, run_sweep
from sroa_dist.sweep.kinds import make_layout
from sroa_dist.sweep.layout import block_task
from sroa_dist.sweep.run.cluster import GPU_RESOURCE
from sroa_dist.sweep.run.routing import block_resources, spec_needs_gpu, warn_without_gpu_workers
from sroa_dist.sweep.spec.fields import SpecError

#: A user method routed like a certified step (tests/support/user_method.py).
ROUTED_METHOD = "tests.support.user_method:routed"

SPEC = "sweeps/smoke/figure2.toml"
GPU = {"driver": "admm", "device": "cuda"}
#: A method axis: the routed test method asks for a GPU relaxation, sshopm for nothing.
ROUTED = {
    "replicates": 2,
    "solver.method": [ROUTED_METHOD, "sshopm"],
    "solver.options": {
        ROUTED_METHOD: {"relaxation": GPU},
        "sshopm": {"n_starts": 4},
    },
}


def test_blocks_that_solve_on_a_gpu_hold_the_gpu_resource(root):
    spec = load_spec(root / SPEC, ROUTED)
    layout = make_layout(spec, block_size=1)
    methods = {}
    for b in range(layout.n_blocks):
        task = block_task(spec, layout, b)
        method = next(iter(task.instances(spec)))[1].method
        methods.setdefault(method, set()).add(str(block_resources(spec, task)))
    assert methods == {
        ROUTED_METHOD: {str({GPU_RESOURCE: 1})},
        "sshopm": {"None"},
    }
    assert spec_needs_gpu(spec)
    assert not spec_needs_gpu(load_spec(root / SPEC))


def test_the_norm_methods_device_counts_too(root):
    spec = load_spec(
        root / SPEC,
        {
            "solver.norm_method": "certified",
            "solver.norm_options": {"certified": {"relaxation": GPU}},
        },
    )
    layout = make_layout(spec, block_size=4)
    assert block_resources(spec, block_task(spec, layout, 0)) == {GPU_RESOURCE: 1}


def test_a_gpu_spec_validates_without_a_gpu_and_bad_keys_are_named(root):
    """The option checks are static: a spec for a GPU cluster validates on its client."""
    certified = {"solver.method": "certified"}
    load_spec(root / SPEC, {**certified, "solver.options": {"certified": {"relaxation": GPU}}})
    bad = {"certified": {"relaxation": {"device": "cuda"}}}
    with pytest.raises(SpecError, match="solver.options.certified.relaxation") as err:
        load_spec(root / SPEC, {**certified, "solver.options": bad})
    assert "driver 'scs' runs on cpu" in str(err.value)


def test_without_a_gpu_worker_the_sweep_says_it_waits():
    class Client:
        def scheduler_info(self, n_workers=-1):
            return {"workers": {"tcp://a": {"resources": {}}, "tcp://b": {}}}

    with pytest.warns(UserWarning, match=f"none is connected yet.*--resources {GPU_RESOURCE}=1"):
        warn_without_gpu_workers(Client(), None)

    class WithGpu:
        def scheduler_info(self, n_workers=-1):
            return {"workers": {"tcp://a": {"resources": {GPU_RESOURCE: 1.0}}}}

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_without_gpu_workers(WithGpu(), None)


def test_the_embedded_cluster_refuses_a_gpu_spec_on_a_machine_without_one(root, tmp_path):
    from sroa_dist.relaxation.backend import DeviceUnavailableError, get_backend
    from sroa_dist.sweep.run.cluster import ClusterConnectError

    try:
        get_backend("cuda")
    except DeviceUnavailableError:
        pass
    else:  # pragma: no cover - a machine with a GPU
        pytest.skip("this machine has a GPU")
    store = tmp_path / "s.zarr"
    with pytest.raises(ClusterConnectError, match="device 'cuda'") as err:
        run_sweep(root / SPEC, store, **ROUTED)
    assert err.value.hint and "--resources GPU=1" in err.value.hint
    assert not store.exists()  # refused before the store was touched


@pytest.mark.slow
def test_gpu_blocks_run_on_gpu_workers_of_a_mixed_cluster(root, tmp_path, monkeypatch):
    """A scheduler, one CPU worker and one worker started with `--resources GPU=1` (the
    documented command): every block that asks for the GPU ran on the GPU worker, and the
    sweep completes."""
    from distributed import Client, LocalCluster

    log = tmp_path / "routing.log"
    env = {
        **os.environ,
        "SROA_TEST_ROUTING_LOG": str(log),
        "PYTHONPATH": f"{root}:{root / 'tests'}",
    }
    procs = []
    with LocalCluster(
        n_workers=0, processes=True, host="127.0.0.1", dashboard_address=":0"
    ) as cluster:
        try:
            for name, extra in (("cpu-worker", []), ("gpu-worker", ["--resources", "GPU=1"])):
                cmd = [sys.executable, "-m", "distributed.cli.dask_worker"]
                cmd += [cluster.scheduler_address, "--name", name, "--nthreads", "1", *extra]
                procs.append(
                    subprocess.Popen(
                        cmd,
                        env=env,
                        cwd=root,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
            with Client(cluster) as client:
                client.wait_for_workers(2, timeout=60)
                monkeypatch.syspath_prepend(str(root / "tests"))
                result = run_sweep(root / SPEC, tmp_path / "s.zarr", client, block_size=1, **ROUTED)
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=30)
    assert result.complete
    ran = [line.split() for line in log.read_text().splitlines()]
    assert ran and {worker for worker, _ in ran} == {"gpu-worker"}
    assert {device for _, device in ran} == {"cuda"}
