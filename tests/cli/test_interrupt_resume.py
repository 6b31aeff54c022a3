"""Interruption changes no bit (issue 32): a certified sweep run through the real CLI with two
worker processes, signalled (SIGINT to the process group, as a terminal's Ctrl-C does, or
SIGKILL of the whole group) at a dozen points, each time resumed with the same command; the
finished store equals an uninterrupted run's in every result variable, bit for bit.

The points are mostly deterministic (once k more blocks are marked done in the store), a few
by time (while the cluster starts, and early in the first blocks). Every SCS solve of the
certified steps runs in a worker that ignores SIGINT, which SCS's own handler used to turn
into a cut-short solve and a block written with other bits."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sroa_dist.sweep.store.prepare import read_done
from tests.support.helpers import (
    assert_same_bits,
    cube_values,
    run_cli,
    start_cli,
    wait_signal_handlers,
)

#: The smallest sweep of certified steps that lasts long enough to be interrupted a dozen
#: times: sweeps/smoke/certified.toml at n = 6 with binary noise (whose steps often need the
#: full SCS solve), one instance per block.
SPEC = """\
name = "interrupt-certified"
seed = 11
replicates = 28

[tensor]
n = 6
p = 3

[noise]
model = "binary"
sigma = 0.01

[solver]
method = "certified"
"""

#: (when, signal): ``("blocks", k)``: once k more blocks than at the start of this run are
#: done; ``("time", s)``: s seconds after the CLI installed its signal handlers.
POINTS = [
    (("time", 0.2), signal.SIGINT),  # while the cluster starts
    (("blocks", 1), signal.SIGINT),
    (("blocks", 1), signal.SIGKILL),
    (("time", 2.5), signal.SIGINT),  # about when the first blocks are in flight
    (("blocks", 2), signal.SIGINT),
    (("blocks", 1), signal.SIGKILL),
    (("blocks", 1), signal.SIGINT),
    (("time", 1.0), signal.SIGKILL),
    (("blocks", 2), signal.SIGINT),
    (("blocks", 1), signal.SIGINT),
    (("blocks", 1), signal.SIGKILL),
    (("blocks", 1), signal.SIGINT),
]


def _done(store: Path) -> int:
    return int(read_done(store).sum()) if (store / "done" / "zarr.json").exists() else 0


def _group_gone(pgid: int, timeout: float = 120) -> None:
    """Wait until no process of the group is left (the workers end after the CLI)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.killpg(pgid, signal.SIGKILL)
    raise AssertionError("processes of the interrupted run outlived it")


def _interrupt(args: list[str], store: Path, when: tuple[str, float], sig: int) -> bool:
    """Run ``sroa-dist ARGS``, send ``sig`` to its process group at ``when``; whether the
    signal reached a running sweep (False: the run had finished first)."""
    before = _done(store)
    proc = start_cli(args, output=subprocess.DEVNULL)
    try:
        wait_signal_handlers(proc)
        kind, value = when
        if kind == "time":
            time.sleep(value)
        else:
            deadline = time.time() + 300
            while proc.poll() is None and _done(store) < before + value:
                assert time.time() < deadline, "no blocks done"
                time.sleep(0.02)
        if proc.poll() is not None:
            return False
        os.killpg(proc.pid, sig)
        proc.wait(120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    _group_gone(proc.pid)
    return True


@pytest.mark.slow
def test_interrupted_and_resumed_certified_sweep_equals_uninterrupted(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)

    def command(store: Path) -> list[str]:
        return ["run", str(spec), "--store", str(store), "--workers", "2", "--block-size", "1"]

    ref = tmp_path / "ref.zarr"
    run_cli(*command(ref))
    want = cube_values(ref)

    store = tmp_path / "interrupted.zarr"
    landed = 0
    for when, sig in POINTS:
        landed += _interrupt(command(store), store, when, sig)
    assert landed >= 10, f"only {landed} signals reached a running sweep"
    assert 0 < _done(store) < read_done(ref).size, "the interruptions left nothing to resume"
    run_cli(*command(store))
    assert read_done(store).all()
    assert_same_bits(cube_values(store), want)
    run_cli("check", str(store))
