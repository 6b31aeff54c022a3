"""deploy/slurm/sroa_slurm.py's partition check, against sinfo output.

The real sinfo runs in deploy/test/slurm-e2e.sh (a single-node SLURM): there an oversized job is
refused with one line before anything is queued. Here a stand-in ``sinfo`` on PATH prints what
SLURM 22.05's ``sinfo --noheader --Node --format='%P %c %m'`` prints on a two-partition cluster,
so the parsing and the messages are checked on every test run, without a cluster.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import subprocess
import sys

import pytest

from tests.support.deploy_helpers import ROOT

SCRIPT = ROOT / "deploy" / "slurm" / "sroa_slurm.py"
#: Node lines: the default partition (marked *) has 2-CPU nodes with 3900 MiB, "big" 64 CPUs.
SINFO = "debug* 2 3900\ndebug* 2 3900\nbig 64 257000\n"


def _module():
    spec = importlib.util.spec_from_file_location("sroa_slurm", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def fake_sinfo(tmp_path, monkeypatch):
    """PATH with an ``sinfo`` that prints :data:`SINFO` (exit code settable via the file)."""

    def install(stdout: str = SINFO, code: int = 0, stderr: str = "") -> None:
        exe = tmp_path / "sinfo"
        exe.write_text(
            f"#!/bin/sh\nprintf '%s' '{stdout}'\nprintf '%s' '{stderr}' >&2\nexit {code}\n"
        )
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")

    return install


def test_capacity_of_default_and_named_partitions(fake_sinfo):
    fake_sinfo()
    m = _module()
    assert m.partition_capacity(None) == (2, 3900)
    assert m.partition_capacity("big") == (64, 257000)


def test_fitting_job_passes(fake_sinfo):
    fake_sinfo()
    m = _module()
    m.check_partition(None, 2, "3GB")
    m.check_partition("big", 8, "16GB")


@pytest.mark.parametrize(
    ("cores", "memory"), [(8, "1GB"), (1, "16GB")], ids=["too-many-cores", "too-much-memory"]
)
def test_oversized_job_is_one_line_error(fake_sinfo, cores, memory):
    fake_sinfo()
    m = _module()
    with pytest.raises(m.PartitionError) as e:
        m.check_partition(None, cores, memory)
    msg = str(e.value)
    assert "\n" not in msg
    assert "the default partition cannot fit a worker job" in msg
    assert "--cores <= 2" in msg and "--memory <= 3900MiB" in msg
    assert f"received --cores {cores} --memory {memory}" in msg


def test_unknown_partition_lists_the_known_ones(fake_sinfo):
    fake_sinfo()
    m = _module()
    with pytest.raises(m.PartitionError, match=r"no node in partition 'gpu'; partitions: big, "):
        m.check_partition("gpu", 1, "1GB")


def test_failing_sinfo_names_slurm_conf(fake_sinfo):
    fake_sinfo(stdout="", code=1, stderr="slurm_load_partitions: Unable to contact controller")
    m = _module()
    with pytest.raises(m.PartitionError, match="SLURM_CONF"):
        m.check_partition(None, 1, "1GB")


@pytest.mark.slow
def test_main_refuses_before_submitting(fake_sinfo, tmp_path):
    """The command line: exit 2, one line on stderr, no store (nothing was started)."""
    fake_sinfo()
    store = tmp_path / "never.zarr"
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "sweeps/smoke/certified.toml", "--store", str(store)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot fit a worker job" in lines[0], out.stderr
    assert not store.exists()
