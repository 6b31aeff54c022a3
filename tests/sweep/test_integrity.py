"""Damage to a finished store is found, named and repaired (issue 20, item 1).

Each damage row of the issue on a real zarr store written by a real sweep: garbage bytes in a
``lam_hat`` chunk, in a ``lam_err`` chunk and in a ``done`` chunk; a deleted chunk; a chunk
replaced by another block's valid chunk. For each, ``sroa-dist check`` exits 1 naming the block
(and the variable), a resumed run recomputes exactly the damaged block, and the repaired cube
is bit-identical to the clean one. Plus: every array is checksummed, a store without digests
(made before them, format 1) still resumes, gains digests, and is reported as not vouched for,
while a store of format 2 that lost its digests is damaged.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import zarr

from sroa_dist.sweep.cube import ATTR_FORMAT
from sroa_dist.sweep.run.execute import run_sweep
from sroa_dist.sweep.store import ResultStore
from sroa_dist.sweep.store.integrity import DIGEST, scan_store
from sroa_dist.sweep.store.prepare import store_layout
from tests.support.helpers import assert_same_bits, chunk_file, cube_values, run_cli

SPEC = {
    "name": "integrity",
    "seed": 7,
    "replicates": 2,
    "tensor": {"n": 3, "p": 3},
    "noise": {"model": ["binary", "gaussian"], "sigma": [0.01, 0.05]},
    "solver": {"method": "sshopm", "steps": 2, "options": {"n_starts": 4}},
}
BLOCK_SIZE = 2  # 8 instances -> 4 blocks of one chunk each


@pytest.fixture(scope="module")
def clean(tmp_path_factory, cluster) -> Path:
    """One clean store, run once; every test damages a copy of it."""
    from distributed import Client

    store = tmp_path_factory.mktemp("clean") / "clean.zarr"
    with Client(cluster) as c:
        res = run_sweep(SPEC, store, client=c, block_size=BLOCK_SIZE)
    assert res.blocks_computed == res.n_blocks >= 3
    return store


def _copy(clean: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "damaged.zarr"
    shutil.copytree(clean, dst)
    return dst


def _garbage(path: Path) -> None:
    n = path.stat().st_size
    path.write_bytes(np.random.default_rng(0).integers(0, 256, max(n, 16), np.uint8).tobytes())


def _check_names(store: Path, block: int, var: str) -> None:
    proc = run_cli("check", str(store), check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("block ")]
    assert len(lines) == 1, proc.stdout
    assert lines[0].startswith(f"block {block}:") and var in lines[0], proc.stdout


def _repair_and_compare(store: Path, clean: Path, cluster, n_damaged: int = 1) -> None:
    from distributed import Client

    with Client(cluster) as c, pytest.warns(UserWarning, match="damaged block"):
        res = run_sweep(SPEC, store, client=c, block_size=BLOCK_SIZE)
    assert res.blocks_computed == n_damaged  # exactly the damaged blocks
    assert scan_store(str(store), store_layout(store)[1]).ok
    assert_same_bits(cube_values(store), cube_values(clean))
    assert run_cli("check", str(store)).returncode == 0


@pytest.mark.parametrize("var", ["lam_hat", "lam_err"])
@pytest.mark.slow
def test_garbage_in_a_data_chunk_is_named_and_repaired(clean, tmp_path, cluster, var):
    store = _copy(clean, tmp_path)
    _garbage(chunk_file(store, var, 1))
    _check_names(store, 1, var)
    _repair_and_compare(store, clean, cluster)


@pytest.mark.slow
def test_garbage_in_a_done_chunk_is_named_and_repaired(clean, tmp_path, cluster):
    store = _copy(clean, tmp_path)
    _garbage(chunk_file(store, "done", 2))
    _check_names(store, 2, "done")
    status = run_cli("status", str(store), check=False)  # no traceback: block 2 not done
    assert status.returncode == 1 and "Traceback" not in status.stderr, status.stderr
    _repair_and_compare(store, clean, cluster)


@pytest.mark.slow
def test_deleted_chunk_is_named_and_repaired(clean, tmp_path, cluster):
    store = _copy(clean, tmp_path)
    chunk_file(store, "lam_hat", 0).unlink()
    _check_names(store, 0, "lam_hat")
    deep = run_cli("status", "--deep", str(store), check=False)
    assert deep.returncode == 1 and "block 0:" in deep.stdout, deep.stdout
    _repair_and_compare(store, clean, cluster)


@pytest.mark.slow
def test_chunk_replaced_by_another_blocks_chunk_is_named_and_repaired(clean, tmp_path, cluster):
    store = _copy(clean, tmp_path)
    shutil.copyfile(chunk_file(store, "lam_hat", 1), chunk_file(store, "lam_hat", 3))
    _check_names(store, 3, "lam_hat")
    _repair_and_compare(store, clean, cluster)


def test_every_array_has_a_crc32c_codec(clean):
    g = zarr.open_group(clean, mode="r")
    names = list(g.array_keys())
    assert "lam_hat" in names and "done" in names and DIGEST in names
    for name in names:
        codecs = [type(c).__name__ for c in g[name].metadata.codecs]
        assert "Crc32cCodec" in codecs, (name, codecs)
    report = ResultStore(clean).check()
    assert report.ok and report.n_done == 4 and not report.unvouched


@pytest.mark.slow
def test_store_without_digests_resumes_gains_digests_and_is_not_vouched_for(
    clean, tmp_path, cluster
):
    """A store made before digests: no digest array and no recorded format (format 1). It
    opens, `check` cannot vouch for its blocks (exit 0, said), a damaged block is still found
    by its unreadable chunk, and the blocks a run recomputes gain digests."""
    from distributed import Client

    store = _copy(clean, tmp_path)
    shutil.rmtree(store / DIGEST)
    del zarr.open_group(store, mode="r+").attrs[ATTR_FORMAT]
    proc = run_cli("check", str(store))
    assert "cannot vouch for 4 finished block(s)" in proc.stdout, proc.stdout
    _garbage(chunk_file(store, "lam_hat", 1))
    _check_names(store, 1, "lam_hat")
    with Client(cluster) as c, pytest.warns(UserWarning, match="damaged block"):
        res = run_sweep(SPEC, store, client=c, block_size=BLOCK_SIZE)
    assert res.blocks_computed == 1
    assert_same_bits(cube_values(store), cube_values(clean))
    report = scan_store(str(store), store_layout(store)[1])
    assert report.ok and report.unvouched == [0, 2, 3]  # block 1 was recomputed: digested


def test_a_deleted_digest_array_is_damage_in_a_store_of_format_2(clean, tmp_path):
    """The same deletion in a store that records format 2: every finished block is damage
    (the run that wrote them recorded digests), never "cannot vouch"."""
    store = _copy(clean, tmp_path)
    shutil.rmtree(store / DIGEST)
    report = scan_store(str(store), store_layout(store)[1])
    assert sorted(report.damaged) == [0, 1, 2, 3] and not report.unvouched
    assert all("block_digest: array missing" in p[0] for p in report.damaged.values())


SPEC_TOML = """
name = "integrity"
seed = 7
replicates = 2
[tensor]
n = 3
p = 3
[noise]
model = ["binary", "gaussian"]
sigma = [0.01, 0.05]
[solver]
method = "sshopm"
steps = 2
options = { n_starts = 4 }
"""


@pytest.mark.slow
def test_the_cli_reports_a_repair_in_one_warning_line(clean, tmp_path):
    """A resumed run after damage printed a raw UserWarning with its source line."""
    store = _copy(clean, tmp_path)
    _garbage(chunk_file(store, "lam_hat", 1))
    spec = tmp_path / "integrity.toml"
    spec.write_text(SPEC_TOML)
    args = ["--block-size", str(BLOCK_SIZE), "--workers", "1", "--dashboard-address", ":0"]
    proc = run_cli("run", str(spec), "--store", str(store), *args)
    warned = [ln for ln in proc.stderr.splitlines() if "warning" in ln.lower()]
    assert len(warned) == 1, proc.stderr
    assert warned[0].startswith("sroa-dist run: warning: store ") and "damaged" in warned[0]
    assert ".py:" not in proc.stderr and "warnings.warn" not in proc.stderr, proc.stderr
    assert "1 computed" in proc.stdout
