"""The ``sroa-dist`` CLI in real subprocesses: validate, run, status, info, the analysis slots,
and kill -9 of the whole process tree mid-run followed by a resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
from conftest import ROOT, assert_same_bits, cli_env, cube_values, run_cli

from sroa_dist.sweep import run_sweep
from sroa_dist.sweep.storage import read_done

SMOKE = "sweeps/smoke"


def test_validate_shows_the_grid():
    out = run_cli("validate", "sweeps/figure1.toml").stdout
    assert "valid sweep 'figure1'" in out
    assert "noise=3, sigma=2000, replicate=1, step=1" in out


def test_validate_errors_name_file_key_reason(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[tensor]\nn = 3\np = 2\n[noise]\nsigma = 0.1\n')
    proc = run_cli("validate", str(bad), check=False)
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and "'tensor.p'" in proc.stderr and "p >= 3" in proc.stderr
    proc = run_cli("validate", "sweeps/figure2.toml", "--set", "noise.model=cauchy", check=False)
    assert proc.returncode == 2 and "'noise.model'" in proc.stderr and "cauchy" in proc.stderr


def test_run_status_info_plot_report(tmp_path):
    store = tmp_path / "cli.zarr"
    proc = run_cli(
        "run",
        f"{SMOKE}/figure2.toml",
        "--store",
        str(store),
        "--workers",
        "2",
        "--set",
        "replicates=4",
        "--set",
        "noise.model=['gaussian']",
    )
    assert "blocks:" in proc.stdout and "0 failed" in proc.stdout
    assert "dashboard: http" in proc.stderr  # printed at start
    assert "4/4 instances (100.0 %)" in proc.stderr  # plain progress lines when not a TTY
    st = run_cli("status", str(store)).stdout
    assert "100.0% done" in st and "failed blocks: 0" in st
    info = run_cli("info", str(store)).stdout
    for text in (
        "dims:",
        "noise=1",
        "replicate=4",
        "lam_hat",
        "vec_err",
        "git_commit",
        "numpy_version",
        "history:",
        "sroa-dist run",
    ):
        assert text in info, text
    # the analysis slots (sroa_dist.analysis.plot_cube / write_report) run on the store
    run_cli("plot", str(store), "--out", str(tmp_path / "figs"), "--format", "png")
    assert list((tmp_path / "figs").glob("*.png"))
    run_cli("report", str(store), "--out", str(tmp_path / "rep" / "report"), "--formats", "md")
    assert (tmp_path / "rep" / "report.md").exists()
    # an incompatible rerun is refused with a clear message, --overwrite accepts it
    proc = run_cli(
        "run",
        f"{SMOKE}/figure2.toml",
        "--store",
        str(store),
        "--set",
        "tensor.n=5",
        check=False,
    )
    assert (
        proc.returncode == 2 and "tensor.n: 4 -> 5" in proc.stderr and "--overwrite" in proc.stderr
    )


def test_kill_9_of_the_process_tree_then_resume_equals_uninterrupted(tmp_path, client):
    """SIGKILL the CLI, its scheduler and its workers mid-run; running the same command again
    finishes, and the cube is bitwise the uninterrupted run's (nothing lost or duplicated)."""
    store = tmp_path / "killed.zarr"
    args = [
        "run",
        f"{SMOKE}/figure1.toml",
        "--store",
        str(store),
        "--workers",
        "2",
        "--block-size",
        "2",
        "--set",
        "replicates=2",
        "--set",
        "tensor.n=10",
        "--set",  # ~0.5 s per block, so that the kill lands mid-run
        "solver.options={n_starts=2048}",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sroa_dist.cli", *args],
        cwd=ROOT,
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 120
        n_done = 0
        while time.time() < deadline and proc.poll() is None:
            if (store / "done" / "zarr.json").exists():
                n_done = int(read_done(store).sum())
                if n_done >= 2:
                    break
            time.sleep(0.05)
        assert proc.poll() is None, "the run finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    done = read_done(store)
    assert 2 <= done.sum() < done.size
    time.sleep(0.5)
    again = run_cli(*args)
    assert "already done" in again.stdout
    assert read_done(store).all()
    ref = run_sweep(
        ROOT / SMOKE / "figure1.toml",
        tmp_path / "ref.zarr",
        client=client,
        block_size=16,
        replicates=2,
        **{"tensor.n": 10, "solver.options": {"n_starts": 2048}},
    )
    assert ref.complete
    got, want = cube_values(store), cube_values(tmp_path / "ref.zarr")
    assert_same_bits(got, want)
    assert np.isfinite(got["lam_hat"]).all()


def test_running_cluster_by_address_env_and_scheduler_file(tmp_path, cluster):
    """--scheduler, DASK_SCHEDULER_ADDRESS and --scheduler-file all use the running cluster
    (no embedded cluster: the run reports the running cluster's two workers)."""
    spec = f"{SMOKE}/figure2.toml"
    base = ["--set", "replicates=2", "--set", "noise.model=['gaussian']"]
    a = run_cli(
        "run",
        spec,
        "--store",
        str(tmp_path / "a.zarr"),
        "--scheduler",
        cluster.scheduler_address,
        *base,
    )
    # the running cluster's dashboard (a random port), not an embedded one on :8787
    assert f"dashboard: {cluster.dashboard_link}" in a.stderr
    env = {"DASK_SCHEDULER_ADDRESS": cluster.scheduler_address}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sroa_dist.cli",
            "run",
            spec,
            "--store",
            str(tmp_path / "b.zarr"),
            *base,
        ],
        cwd=ROOT,
        env={**cli_env(), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"dashboard: {cluster.dashboard_link}" in proc.stderr
    sched_file = tmp_path / "sched.json"
    sched_file.write_text(json.dumps({"address": cluster.scheduler_address}))
    c = run_cli(
        "run",
        spec,
        "--store",
        str(tmp_path / "c.zarr"),
        "--scheduler-file",
        str(sched_file),
        *base,
    )
    assert f"dashboard: {cluster.dashboard_link}" in c.stderr
    for name in ("b", "c"):
        assert_same_bits(cube_values(tmp_path / "a.zarr"), cube_values(tmp_path / f"{name}.zarr"))


def test_unreachable_scheduler_is_a_short_error_with_a_hint(tmp_path):
    """A refused connection ends with exit status 2 and a hint, not a traceback."""
    import socket

    with socket.socket() as s:  # a loopback port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sroa_dist.cli",
            "run",
            f"{SMOKE}/figure2.toml",
            "--store",
            str(tmp_path / "x.zarr"),
            "--scheduler",
            f"tcp://127.0.0.1:{port}",
        ],
        cwd=ROOT,
        env={**cli_env(), "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "hint: check the scheduler address" in proc.stderr
    assert "Traceback" not in proc.stderr
