"""The ``sroa-dist`` CLI in real subprocesses: validate, run, status, info, the analysis slots,
and kill -9 of the whole process tree mid-run followed by a resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from sroa_dist.studies.first_crossing import max_evals
from sroa_dist.sweep import run_sweep
from sroa_dist.sweep.store.prepare import read_done
from tests.support.helpers import (
    PACED,
    ROOT,
    assert_same_bits,
    cli_env,
    cube_values,
    run_cli,
    sigkill_run_mid_sweep,
    start_cli,
    wait_blocks,
    wait_signal_handlers,
)

SMOKE = "sweeps/smoke"


#: A run that lasts long enough to be raced or killed: blocks of 2 instances of about 0.5 s
#: each, spent waiting (PACED), not computing.
SLOW = [
    "--block-size",
    "2",
    "--set",
    'solver.method="tests.support.paced:sshopm"',
    "--set",
    "solver.options={}",
]


def test_validate_shows_the_grid():
    out = run_cli("validate", "sweeps/figure1.toml").stdout
    assert "valid sweep 'figure1'" in out
    assert "noise=3, sigma=2000, replicate=1, step=1 (SROA steps)" in out


def test_validate_says_what_step_counts_in_a_threshold_sweep():
    """`step=33` read as 33 SROA steps; in a threshold cube it counts search evaluations."""
    proc = run_cli("validate", f"{SMOKE}/threshold.toml", "--set", "replicates=1")
    dims = next(ln for ln in proc.stdout.splitlines() if ln.startswith("dims: "))
    want = max_evals((0.05, 1.5), 0.02)  # the smoke spec's eps_range and rtol
    assert f"step={want} (search evaluations" in dims and "not SROA steps" in dims
    assert "warning" not in proc.stdout + proc.stderr  # one replicate: nothing repeats
    proc = run_cli("validate", f"{SMOKE}/threshold.toml")  # 2 replicates, the tilt among them
    warned = [ln for ln in proc.stdout.splitlines() if ln.startswith("warning: ")]
    assert len(warned) == 1 and "coherent-tilt" in warned[0] and "['gaussian']" in warned[0]


@pytest.mark.slow
def test_validate_errors_name_file_key_reason(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[tensor]\nn = 3\np = 2\n[noise]\nsigma = 0.1\n')
    proc = run_cli("validate", str(bad), check=False)
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and "'tensor.p'" in proc.stderr and "p >= 3" in proc.stderr
    proc = run_cli("validate", "sweeps/figure2.toml", "--set", "noise.model=cauchy", check=False)
    assert proc.returncode == 2 and "'noise.model'" in proc.stderr and "cauchy" in proc.stderr


@pytest.mark.slow
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


@pytest.mark.slow
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
        *SLOW[2:],  # about 0.5 s per block, so that the kill lands mid-run
    ]
    sigkill_run_mid_sweep(args, store)
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
        **PACED,
    )
    assert ref.complete
    got, want = cube_values(store), cube_values(tmp_path / "ref.zarr")
    assert_same_bits(got, want)
    assert np.isfinite(got["lam_hat"]).all()


@pytest.mark.slow
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


@pytest.mark.slow
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


# ---- bad input and faults: one line what/why, a hint that fits, no traceback ------------------

SPEC2 = str(ROOT / SMOKE / "figure2.toml")


def _cli(args, cwd, env=None, timeout=120, wrap=(), **kw):
    return subprocess.run(
        [*wrap, sys.executable, "-m", "sroa_dist.cli", *args],
        cwd=cwd,
        env={**cli_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,  # a hang fails the test
        **kw,
    )


def _no_aws() -> dict:
    env = {k: v for k, v in cli_env().items() if not k.startswith("AWS_")}
    env.update(
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE="/nonexistent",
        AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
    )
    return env


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A folder of things users point the CLI at by mistake."""
    import zarr

    from sroa_dist.sweep import load_spec
    from sroa_dist.sweep.kinds import make_layout
    from sroa_dist.sweep.store.prepare import prepare_store

    d = tmp_path_factory.mktemp("bad")
    (d / "latin1.toml").write_bytes('name = "café"\n'.encode("latin-1"))
    (d / "specs").mkdir()
    (d / "afile").write_text("a file, not a store")
    (d / "empty").mkdir()
    zarr.open_group(str(d / "foreign.zarr"), mode="w").attrs["owner"] = "someone else"
    spec = load_spec(SPEC2)
    prepare_store(str(d / "cube.zarr"), spec, make_layout(spec, block_size=12))
    return d


# (id, argv with {d} for the folder above, expected stderr parts; the hint is the last part)
BAD = [
    ("spec-not-utf8", ["validate", "{d}/latin1.toml"], ["not UTF-8", "hint: save the spec"]),
    ("spec-is-dir", ["run", "{d}/specs", "--store", "{d}/x"], ["received a directory", "hint:"]),
    ("store-is-file", ["run", SPEC2, "--store", "{d}/afile"], ["received a file", "hint: name"]),
    ("status-file", ["status", "{d}/afile"], ["received a file", "hint: give the --store"]),
    ("status-empty", ["status", "{d}/empty"], ["an empty folder", "hint:"]),
    ("info-empty", ["info", "{d}/empty"], ["an empty folder", "hint:"]),
    ("verify-empty", ["verify", "{d}/empty"], ["an empty folder", "hint:"]),
    ("verify-foreign", ["verify", "{d}/foreign.zarr"], ["did not write", "hint: give"]),
    ("status-missing", ["status", "{d}/nope.zarr"], ["does not exist", "sroa-dist run"]),
    ("status-foreign", ["status", "{d}/foreign.zarr"], ["did not write", "hint: give"]),
    ("info-foreign", ["info", "{d}/foreign.zarr"], ["did not write", "hint: give"]),
    ("report-foreign", ["report", "{d}/foreign.zarr", "--out", "{d}/r"], ["did not write"]),
    ("plot-foreign", ["plot", "{d}/foreign.zarr", "--out", "{d}/f"], ["did not write"]),
    (
        "run-foreign-overwrite",
        ["run", SPEC2, "--store", "{d}/foreign.zarr", "--overwrite"],
        ["zarr store that sroa-dist did not write", "hint: choose another --store"],
    ),
    (
        "report-format",
        ["report", "{d}/cube.zarr", "--out", "{d}/r", "--format", "bogus"],
        ["--format bogus", "'md'", "hint: e.g. --format md,html"],
    ),
    (
        "plot-format",
        ["plot", "{d}/cube.zarr", "--out", "{d}/f", "--format", "bogus"],
        ["['bogus']", "hint: use one or more of", "png"],
    ),
    (
        "dashboard-bogus",
        ["run", SPEC2, "--store", "{d}/new1.zarr", "--dashboard-address", "bogus"],
        ["--dashboard-address: expected HOST:PORT", "hint: e.g."],
    ),
    (
        "scheduler-bogus",
        ["run", SPEC2, "--store", "{d}/new2.zarr", "--scheduler", "bogus"],
        ["--scheduler bogus: expected a scheduler address", "hint: give PROTOCOL://HOST:PORT"],
    ),
    (
        "scheduler-file-missing",
        ["run", SPEC2, "--store", "{d}/new3.zarr", "--scheduler-file", "/nonexistent"],
        ["--scheduler-file /nonexistent", "does not exist", "hint: start the scheduler"],
    ),
    ("workers-0", ["run", SPEC2, "--workers", "0"], ["--workers: expected an integer >= 1"]),
    (
        "workers-over-cpus",
        ["run", SPEC2, "--store", "{d}/new4.zarr", "--workers", "100000"],
        ["--workers 100000: expected at most", "(the CPUs available", "hint: give --workers"],
    ),
    ("task-timeout-0", ["run", SPEC2, "--task-timeout", "0"], ["--task-timeout: expected"]),
    ("workers-neg", ["run", SPEC2, "--workers", "-1"], ["--workers: expected an integer >= 1"]),
    ("block-0", ["run", SPEC2, "--block-size", "0"], ["--block-size: expected an integer >= 1"]),
    ("block-neg", ["run", SPEC2, "--block-size=-5"], ["--block-size: expected an integer >= 1"]),
    ("validate-block-0", ["validate", SPEC2, "--block-size", "0"], ["expected an integer >= 1"]),
    ("retries-neg", ["run", SPEC2, "--retries=-1"], ["--retries: expected an integer >= 0"]),
    (
        "protocol-run",
        ["run", SPEC2, "--store", "bogus://x"],
        ["unknown protocol 'bogus'", "hint: give a local path or an fsspec URL"],
    ),
    ("protocol-status", ["status", "bogus://x"], ["unknown protocol 'bogus'", "hint:"]),
    (
        "s3-no-credentials",
        ["status", "s3://sroa-no-such-bucket/x.zarr"],
        ["no credentials", "hint: set AWS_ACCESS_KEY_ID"],
    ),
    (
        "s3-no-credentials-run",
        ["run", SPEC2, "--store", "s3://sroa-no-such-bucket/x.zarr"],
        ["no credentials", "hint: set AWS_ACCESS_KEY_ID"],
    ),
]


#: Cases also run as a real `python -m sroa_dist.cli` process (the rest call main() in-process,
#: which is the same code path without ~3 s of interpreter start-up and imports per case).
IN_A_PROCESS = {"spec-not-utf8", "scheduler-file-missing", "s3-no-credentials", "workers-neg"}


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
@pytest.mark.slow
def test_bad_input_is_one_line_and_a_hint(files, case, monkeypatch, capsys):
    name, argv, expected = case
    args = [a.replace("{d}", str(files)) for a in argv]
    before = sorted(p.name for p in files.iterdir())
    if name in IN_A_PROCESS:
        proc = _cli(args, cwd=files, env=_no_aws())
        code, err = proc.returncode, proc.stderr
    else:
        from sroa_dist.cli import main

        monkeypatch.chdir(files)
        for key in [k for k in os.environ if k.startswith("AWS_")]:
            monkeypatch.delenv(key)
        for key, value in _no_aws().items():
            if key.startswith("AWS_"):
                monkeypatch.setenv(key, value)
        try:
            code = main(args)
        except SystemExit as exc:  # argparse
            code = exc.code
        err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    for part in expected:
        assert part in err, (part, err)
    lines = err.splitlines()  # what and why, then the hint: nothing else (no usage block)
    assert len(lines) == 2 and ": error: " in lines[0] and lines[1].startswith("hint: "), err
    if "scheduler" not in " ".join(argv):  # the scheduler/TLS hint only where it is the cause
        assert "TLS" not in err
    # nothing was created, changed or deleted (connect and check before creating a store)
    assert sorted(p.name for p in files.iterdir()) == before
    assert (files / "afile").read_text() == "a file, not a store"


@pytest.mark.slow
@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("target", ["results", ".", ".."])
def test_run_never_clobbers_user_files(tmp_path, target, overwrite):
    """The data-loss reports: `run --store results` (a folder with user files) and `--store .`
    deleted the user's files; now they are refused, with or without --overwrite."""
    work = tmp_path / "work"
    (work / "results").mkdir(parents=True)
    (work / "results" / "precious.txt").write_text("keep")
    (work / "mine.txt").write_text("mine")
    args = ["run", SPEC2, "--store", target] + (["--overwrite"] if overwrite else [])
    proc = _cli(args, cwd=work)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "hint: " in proc.stderr
    assert (work / "results" / "precious.txt").read_text() == "keep"
    assert (work / "mine.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]
    assert sorted(p.name for p in work.iterdir()) == ["mine.txt", "results"]


@pytest.mark.slow
def test_a_read_only_store_is_a_short_error(files, tmp_path):
    """Permission denied names the path and says the store must be writable (not the
    scheduler/TLS hint). As root, the run drops the capabilities that bypass file modes
    (switching to user nobody instead fails wherever nobody cannot reach the interpreter)."""
    import shutil

    store = tmp_path / "ro" / "cube.zarr"
    store.parent.mkdir()
    shutil.copytree(files / "cube.zarr", store)
    wrap: tuple[str, ...] = ()
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without util-linux setpriv to drop CAP_DAC_OVERRIDE")
        drop = "-dac_override,-dac_read_search"
        wrap = (setpriv, "--inh-caps", drop, "--bounding-set", drop, "--")
    subprocess.run(["chmod", "-R", "a-w", str(store.parent)], check=True)
    try:
        proc = _cli(
            ["run", SPEC2, "--store", str(store), "--workers", "1", "--dashboard-address", ":0"],
            cwd=store.parent,
            env={"HOME": str(store.parent)},
            wrap=wrap,
        )
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(store.parent)], check=True)
    assert proc.returncode == 2, proc.stderr
    assert "permission denied" in proc.stderr and "Traceback" not in proc.stderr
    assert "hint: the store (and its folder) must be writable" in proc.stderr
    assert "TLS" not in proc.stderr


@pytest.mark.slow
def test_broken_pipe_exits_quietly(files):
    """`sroa-dist info STORE | head -1`: the reader leaves first; no traceback, no message."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sroa_dist.cli", "info", str(files / "cube.zarr"), "--full"],
        cwd=ROOT,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # before the CLI writes anything
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 141, err
    assert err == ""


# ---- one writer per store: real processes racing ---------------------------------------------

FIG1 = f"{SMOKE}/figure1.toml"


_REFS: dict[int, dict] = {}
#: Replicates of a raced run: 60 paced blocks, about 15 s on the two test workers, so a second
#: CLI process (several seconds to start on a loaded machine) meets it still running.
RACED = 6
#: Replicates of the run the three second writers race (80 blocks, about 20 s).
FIRST = RACED + 2


def _reference(tmp_path, name, client, replicates):
    """The clean run's cube (computed once per module and replicate count)."""
    if replicates not in _REFS:
        ref = run_sweep(
            ROOT / FIG1,
            tmp_path / name,
            client=client,
            block_size=16,
            replicates=replicates,
            **PACED,
        )
        assert ref.complete
        _REFS[replicates] = cube_values(tmp_path / name)
    return _REFS[replicates]


@pytest.mark.slow
def test_a_second_writer_is_refused_while_the_first_runs(tmp_path, cluster, client):
    """The corruption report: a second `run` extending (or overwriting) the store while the
    first ran left 11 variables wrong. Now the second run is refused, naming the holder; the
    first finishes, and the cube equals a clean run bit for bit (then the extension works).

    One first run is raced by all three kinds of second run (extend, overwrite, the same
    command), started together while it runs; each refusal is asserted on its own. The
    refused runs only read the lease, so they do not race each other. Three CLI processes
    starting together take longer to be refused than one (4.6-5.8 s at load 2, against 13 s
    left of a run of RACED replicates), so the first run is longer here: FIRST replicates."""
    store = tmp_path / "race.zarr"
    sched = ["--scheduler", cluster.scheduler_address]
    first = [
        "run", FIG1, "--store", str(store), *sched, *SLOW, "--set", f"replicates={FIRST}",
    ]  # fmt: skip
    extras = {
        "extend": ["--set", f"replicates={FIRST + 2}"],
        "overwrite": ["--set", f"replicates={FIRST}", "--overwrite"],
        "same": ["--set", f"replicates={FIRST}"],
    }
    again = {
        second: ["run", FIG1, "--store", str(store), *sched, *SLOW, *extra]
        for second, extra in extras.items()
    }
    a = start_cli(first)
    seconds: dict[str, subprocess.Popen] = {}
    try:
        wait_blocks(store, a)
        seconds = {second: start_cli(args) for second, args in again.items()}
        refused = {second: b.communicate(timeout=120) for second, b in seconds.items()}
        assert a.poll() is None, "the first run ended before the second runs were refused"
        out_a, err_a = a.communicate(timeout=300)
    finally:
        for p in (a, *seconds.values()):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    for second, b in seconds.items():
        err = refused[second][1]
        assert b.returncode == 2, f"second writer {second!r} not refused: {err}"
        assert "writer lease held by" in err and f"(pid {a.pid})" in err, (second, err)
        assert "since" in err and "hint: wait for that run" in err, (second, err)
        assert "Traceback" not in err, (second, err)
    assert a.returncode == 0, err_a
    assert read_done(store).all()
    reference = _reference(tmp_path, "ref.zarr", client, replicates=FIRST)
    assert_same_bits(cube_values(store), reference)
    from sroa_dist.sweep import open_results

    # the refused runs changed nothing, not even the history
    assert open_results(store).attrs["history"].count("sroa-dist run") == 1
    # once the first run is done, the extension goes through
    done = run_cli(*again["extend"])
    assert "(extended)" in done.stdout
    assert_same_bits(
        cube_values(store), _reference(tmp_path, "ref+.zarr", client, replicates=FIRST + 2)
    )


@pytest.mark.slow
def test_simultaneous_creations_one_wins(tmp_path, cluster, client):
    """Two runs creating the same new store at the same moment: one creates and runs, the
    other is refused (before, both said "created" and a history line was lost)."""
    store = tmp_path / "new.zarr"
    args = [
        "run", FIG1, "--store", str(store), "--scheduler", cluster.scheduler_address,
        *SLOW, "--set", f"replicates={RACED}",
    ]  # fmt: skip
    procs = [start_cli(args) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], outs
    loser = next(o for p, o in zip(procs, outs, strict=True) if p.returncode == 2)
    assert "writer lease held by" in loser[1] and "Traceback" not in loser[1]
    winner = next(o for p, o in zip(procs, outs, strict=True) if p.returncode == 0)
    assert "(created)" in winner[0]
    reference = _reference(tmp_path, "ref.zarr", client, replicates=RACED)
    assert_same_bits(cube_values(store), reference)
    again = run_cli(*args)  # the loser, run again, resumes the finished store
    assert "(resumed)" in again.stdout
    from sroa_dist.sweep import open_results

    assert open_results(store).attrs["history"].count("sroa-dist run") == 2  # no lost line


# ---- signals ------------------------------------------------------------------------------


def _shell_status(returncode: int) -> int:
    """The exit status a shell reports: 128 + N for a process ended by signal N.

    A Ctrl-C during start-up's imports ends, about once in 16 tries on a loaded machine, with
    the one closing line printed and ``main`` returning 130, yet the process ending by SIGINT:
    CPython re-sends SIGINT to itself at exit when a KeyboardInterrupt went through code run
    at C level (``Py_RunMain`` checks ``_Py_UnhandledKeyboardInterrupt``). That is the Unix
    convention for an interrupted program; a shell reports 130 either way, Popen -2."""
    return 128 - returncode if returncode < 0 else returncode


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_is_one_line_and_resumable(tmp_path, sig, code):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) and SIGTERM (to the
    CLI only, as `kill` or a batch system sends it): one line, no worker tracebacks, the lease
    released, and the same command finishes the run."""
    store = tmp_path / "sig.zarr"
    args = [
        "run", FIG1, "--store", str(store), "--workers", "2", "--dashboard-address", ":0",
        *SLOW, "--set", "replicates=2",
    ]  # fmt: skip
    proc = start_cli(args)
    try:
        wait_blocks(store, proc, n=2)
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert _shell_status(proc.returncode) == code, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    last = err.strip().splitlines()[-1]
    n_done = int(read_done(store).sum())
    assert last == (
        f"sroa-dist run: interrupted; {n_done} blocks done; run the same command to resume"
    ), err
    # only the start line and its estimate, progress lines and the one closing line
    other = [x for x in err.splitlines()[:-1] if " instances (" not in x]
    assert len(other) == 2 and other[0].startswith("sroa-dist: sweep"), err
    assert other[1].startswith("estimate: "), err
    assert not (store / "sroa_lease").exists()  # released on the way out
    again = run_cli(*args)
    assert f"{n_done} already done" in again.stdout
    assert read_done(store).all()


@pytest.mark.parametrize(
    "sig, code, delay",
    [
        (signal.SIGINT, 130, 1.0),  # the everyday case stays in the fast subset
        *(
            pytest.param(sig, code, delay, marks=pytest.mark.slow)
            for sig, code in [(signal.SIGINT, 130), (signal.SIGTERM, 143)]
            for delay in (0.5, 1.0, 2.0)
            if (sig, delay) != (signal.SIGINT, 1.0)
        ),
    ],
)
def test_a_signal_in_the_first_seconds_is_honoured(tmp_path, sig, code, delay):
    """Ctrl-C or SIGTERM at 0.5, 1 and 2 s after `sroa-dist run` starts (imports, cluster
    start-up, store creation): never lost (the run used to complete and exit 0), never a
    traceback; exit 130 / 143 with one closing line; no lease left behind and the store, if
    it was created, resumes to completion with the same command. The delay counts from the
    start, but the signal waits for the package's first line: the interpreter's own start
    (about 60 ms here, much longer on a loaded CI machine) meets Python's defaults."""
    store = tmp_path / "early.zarr"
    args = [
        "run", FIG1, "--store", str(store), "--workers", "2", "--dashboard-address", ":0",
        *SLOW, "--set", "replicates=2",
    ]  # fmt: skip
    started = time.monotonic()
    proc = start_cli(args)
    try:
        wait_signal_handlers(proc)  # past the interpreter's own start, which no program owns
        time.sleep(max(0.0, delay - (time.monotonic() - started)))
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert _shell_status(proc.returncode) == code, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "interrupted" in err.strip().splitlines()[-1], err
    assert not (store / "sroa_lease").exists()  # released on the way out, or never taken
    if (store / "zarr.json").exists():
        again = run_cli(*args)
        assert "0 failed" in again.stdout
        assert read_done(store).all()


@pytest.mark.slow
def test_killing_the_client_ends_its_workers(tmp_path):
    """SIGKILL of the CLI alone (no chance to close anything): its embedded workers, which
    would otherwise run on as orphans, end within seconds."""
    store = tmp_path / "orphans.zarr"
    args = [
        "run", FIG1, "--store", str(store), "--workers", "2", "--dashboard-address", ":0",
        *SLOW, "--set", "replicates=4",
    ]  # fmt: skip
    proc = start_cli(args)
    try:
        wait_blocks(store, proc, n=1)
        children = _children(proc.pid)
        assert children, "the embedded cluster runs worker processes"
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        deadline = time.time() + 60
        while time.time() < deadline and any(_alive(c) for c in children):
            time.sleep(0.2)
        assert not any(_alive(c) for c in children), [c for c in children if _alive(c)]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.slow
def test_kill_9_of_the_client_prints_nothing_after_it(tmp_path):
    """After `kill -9` of `sroa-dist run` the terminal showed multiprocessing's
    "resource_tracker: There appear to be 12 leaked semaphore objects" (the nannies' queues):
    the stderr of the whole process group -- workers and resource tracker, which outlive the
    CLI and share its stderr -- is read to its end, and holds no warning."""
    store = tmp_path / "killed.zarr"
    args = [
        "run", FIG1, "--store", str(store), "--workers", "2", "--dashboard-address", ":0",
        *SLOW, "--set", "replicates=4",
    ]  # fmt: skip
    proc = start_cli(args)
    try:
        wait_blocks(store, proc, n=1)
        proc.send_signal(signal.SIGKILL)
        # communicate() returns at the end of the pipe: when every process of the group that
        # holds it (workers, resource tracker) has ended too.
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "resource_tracker" not in err and "leaked" not in err, err
    assert "Warning" not in err and "Traceback" not in err, err


def _children(pid: int) -> list[int]:
    """Process ids whose parent is ``pid`` (Linux /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# ---- a peer that is not a Dask scheduler -----------------------------------------------------


class _Peer:
    """A loopback TCP server that is not a Dask scheduler: ``silent`` accepts and never
    answers; ``http`` answers every connection with an HTTP 400 and closes it."""

    def __init__(self, mode: str):
        import socket
        import threading

        self.mode, self.conns = mode, []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.address = f"tcp://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            if self.mode == "http":
                conn.settimeout(1)
                try:
                    conn.recv(65536)
                except OSError:
                    pass
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                conn.close()

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.mark.parametrize(
    "mode, expect",
    [("silent", "no Dask answer within 2 s"), ("http", "answered in another protocol")],
)
@pytest.mark.slow
def test_a_peer_that_is_not_a_scheduler_is_one_line(tmp_path, mode, expect):
    """A port that accepts but never answers used to hang past --connect-timeout; one that
    answers HTTP 400 gave a traceback (a 3 EiB allocation). Both are one line and a hint, the
    first within the timeout (the subprocess timeout is the hang guard), and no store."""
    peer = _Peer(mode)
    try:
        proc = _cli(
            ["run", SPEC2, "--store", str(tmp_path / "x.zarr"), "--scheduler", peer.address,
             "--connect-timeout", "2"],
            cwd=ROOT, timeout=120,
        )  # fmt: skip
    finally:
        peer.close()
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2 and expect in lines[0] and lines[1].startswith("hint: "), lines
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "x.zarr").exists()


# ---- a full disk ------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MiB tmpfs (root may mount one here; skipped where mounting is not allowed)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    ok = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)], capture_output=True
    )
    if ok.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {ok.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.slow
def test_a_full_disk_names_the_store_and_the_free_space(small_disk):
    """The store's disk fills up mid-run: one line naming the path and the space left, no
    per-task failure records on the terminal, exit 2; status afterwards is clean (no warning
    about leftover temporary files). The disk is filled to leave room for the store's
    template (measured by creating one there) and a few blocks, not for all 36."""
    import shutil

    from sroa_dist.sweep import load_spec
    from sroa_dist.sweep.kinds import make_layout
    from sroa_dist.sweep.store.prepare import prepare_store

    spec = load_spec(SPEC2)
    free0 = shutil.disk_usage(small_disk).free
    prepare_store(str(small_disk / "probe.zarr"), spec, make_layout(spec, block_size=1))
    template = free0 - shutil.disk_usage(small_disk).free
    shutil.rmtree(small_disk / "probe.zarr")
    room = template + 128 * 1024  # the template, the lease, and a block or two
    (small_disk / "filler").write_bytes(b"\0" * (shutil.disk_usage(small_disk).free - room))
    store = small_disk / "full.zarr"
    proc = _cli(
        ["run", SPEC2, "--store", str(store), "--block-size", "1", "--workers", "2",
         "--dashboard-address", ":0"],
        cwd=ROOT, timeout=600,
    )  # fmt: skip
    err = proc.stderr
    assert proc.returncode == 2, (proc.stdout, err)
    assert "Traceback" not in err and "Compute Failed" not in err, err
    errors = [x for x in err.splitlines() if " error: " in x]
    assert len(errors) == 1 and "disk full: " in errors[0] and str(small_disk) in errors[0], err
    assert " free" in errors[0] and err.strip().splitlines()[-1].startswith("hint: "), err
    assert (store / "zarr.json").exists()  # the template fitted: the fault was in a task
    leftovers = sorted(store.rglob("*.tmp"))
    assert not leftovers, f"temporary files left behind: {leftovers[:2]}"
    st = _cli(["status", str(store)], cwd=ROOT)
    assert st.returncode == 1 and "warn" not in st.stderr.lower(), st.stderr


def test_log_noise_is_kept_off_the_progress_line(capsys):
    """Dask INFO records and the traceback of a dashboard websocket that a browser closed early
    do not reach stderr; warnings do (one line each)."""
    import logging

    from tornado.websocket import WebSocketClosedError

    from sroa_dist import cli

    root = logging.getLogger()
    before = list(root.handlers)
    try:
        root.handlers = []
        cli._route_logs()
        handler = root.handlers[0]
        handler.stream = sys.stderr  # capsys's stream
        logging.getLogger("distributed.scheduler").info("Receive client connection")
        try:
            raise WebSocketClosedError()
        except WebSocketClosedError:
            logging.getLogger("asyncio").error("Task exception was never retrieved", exc_info=True)
            logging.getLogger("tornado.application").error("Uncaught exception", exc_info=True)
        logging.getLogger("bokeh.server.views.ws").warning(
            "Failed sending message as connection was closed: WebSocketClosedError"
        )
        logging.getLogger("sroa_dist.test").warning("a real warning")
    finally:
        root.handlers = before
    err = capsys.readouterr().err
    assert "Receive client connection" not in err
    assert "WebSocketClosedError" not in err and "Traceback" not in err
    assert "a real warning" in err


def test_run_defaults_come_from_the_sweep_service():
    """The CLI's run defaults are the sweep service's own (no second copy to drift)."""
    from sroa_dist import cli
    from sroa_dist.sweep.run import execute
    from sroa_dist.sweep.store import lease

    args = cli.build_parser().parse_args(["run", SPEC2])
    assert args.retries == execute.DEFAULT_RETRIES == 2
    assert args.lease_timeout == lease.DEFAULT_LEASE_TIMEOUT
    assert args.dashboard_address == execute.DEFAULT_DASHBOARD_ADDRESS
    assert cli.build_parser().parse_args(["run", SPEC2, "--retries", "0"]).retries == 0


def test_the_early_signal_handlers_are_only_for_the_command():
    """Ctrl-C is answered before the core loads only in the `sroa-dist` process itself: not
    in library users, and not in the workers multiprocessing starts (they inherit sys.argv)."""
    from sroa_dist.cli._early_signals import _is_command

    assert _is_command(["python", "/venv/bin/sroa-dist", "run", "x.toml"])
    assert _is_command(["python", "-X", "importtime", "/venv/bin/sroa-dist"])
    assert _is_command(["python", "-m", "sroa_dist.cli", "run"])
    spawn = "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5)"
    assert not _is_command(["python", "-c", spawn, "--multiprocessing-fork"])
    assert not _is_command(["python", "-m", "pytest", "sroa-dist"])
    assert not _is_command(["python", "analysis.py"]) and not _is_command(["python"])
    # This (pytest) process imported sroa_dist without installing them; its SIGINT handler
    # is pytest's own (a pytest-xdist worker ignores SIGINT).
    from sroa_dist.cli import _early_signals

    for sig in (signal.SIGINT, signal.SIGTERM):
        assert signal.getsignal(sig) is not _early_signals._exit
