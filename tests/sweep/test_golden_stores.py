"""Stores written by earlier code open, resume and verify bit for bit.

The stores under tests/data/golden/ were written by the code at commit 57a4229, before the
package was reorganised (tests/data/golden/make.py says how): a tensor store with vectors, a
certified store with its certificate files, and a threshold store. Each is copied, read
through the verified read, checked against its digests, resumed after forgetting blocks (which
the code of today recomputes) and compared with the stored original, every bit.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import zarr

from sroa_dist.sweep import open_results, run_sweep
from sroa_dist.sweep.store.integrity import forget_blocks
from tests.support.helpers import (
    DATA,
    assert_same_bits,
    cube_values,
    require_recorded_blas_kernel,
    run_cli,
)

GOLDEN = DATA / "golden"
KINDS = ["tensor", "certified", "threshold"]
#: The sweep kind of each golden store (its stored spec's kind: they predate ``sroa_kind``).
SWEEP_KIND = {"tensor": "tensor", "certified": "tensor", "threshold": "threshold"}


def _copy(kind: str, tmp_path: Path) -> Path:
    """A private, writable copy of a golden store (with its certificates folder, if any)."""
    store = tmp_path / f"{kind}.zarr"
    shutil.copytree(GOLDEN / f"{kind}.zarr", store)
    if (GOLDEN / f"{kind}.zarr.certificates").is_dir():
        shutil.copytree(GOLDEN / f"{kind}.zarr.certificates", f"{store}.certificates")
    return store


@pytest.mark.parametrize("kind", KINDS)
def test_a_golden_store_opens_and_checks_clean(kind, tmp_path):
    store = _copy(kind, tmp_path)
    ds = open_results(store)
    assert bool(ds["done"].all())
    assert ds.attrs["git_commit"].startswith("57a4229")  # written by the code before the move
    # Written before stores recorded their kind: the read derives it from the stored spec,
    # and writes nothing into the store.
    assert "sroa_kind" not in zarr.open_group(str(store), mode="r").attrs
    assert ds.attrs["sroa_kind"] == SWEEP_KIND[kind]
    out = run_cli("check", str(store))  # exit 0: every chunk matches its recorded digest
    n_blocks = int(ds["done"].size)
    assert f"{n_blocks} match their recorded digests" in out.stdout


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_golden_store_resumes_bit_for_bit(kind, tmp_path, client):
    if kind == "certified":
        require_recorded_blas_kernel()
    store = _copy(kind, tmp_path)
    before = cube_values(store)
    n_blocks = int(open_results(store)["done"].size)
    forgotten = sorted({0, n_blocks - 1})
    forget_blocks(str(store), forgotten)
    res = run_sweep(GOLDEN / f"{kind}.toml", store, client=client)
    assert res.action == "resumed" and res.blocks_computed == len(forgotten)
    assert_same_bits(cube_values(store), before)
    run_cli("check", str(store))
    # Written before stores recorded a format (certificates beside the store): the run moved
    # them inside (issue 32).
    assert zarr.open_group(str(store), mode="r").attrs["store_format"] == 2
    assert not Path(f"{store}.certificates").exists()
    if kind == "certified":  # the recomputed blocks' certificate files re-verify too
        assert len(list((store / "certificates").glob("*.npz"))) == 2
        run_cli("verify", str(store))


def test_the_golden_certified_store_verifies(tmp_path):
    store = _copy("certified", tmp_path)
    out = run_cli("verify", str(store))
    assert "checked 12 certified steps of 4 instances in 2 certificate files" in out.stdout
    # Format 1: read beside the store; `check --migrate` moves the files inside, verified.
    assert "store format 1" in run_cli("check", str(store)).stdout
    moved = run_cli("check", "--migrate", str(store))
    assert "2 certificate file(s) moved inside" in moved.stdout, moved.stdout
    assert not Path(f"{store}.certificates").exists()
    out = run_cli("verify", str(store))
    assert "checked 12 certified steps of 4 instances in 2 certificate files" in out.stdout
