"""Storage: template, chunk = block, the misaligned-write guard, done mask, provenance,
compatibility checks and reading back with open_results (real zarr stores, no Dask cluster)."""

from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import zarr

from sroa_dist.sweep import open_results
from sroa_dist.sweep.grid import block_task, make_layout
from sroa_dist.sweep.spec import load_spec
from sroa_dist.sweep.storage import (
    StoreIncompatibleError,
    prepare_store,
    read_done,
    store_status,
    write_block,
)
from sroa_dist.sweep.worker import compute_block

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "sweeps/smoke/figure1.toml"


def _store(tmp_path, spec, block_size=4, name="cube.zarr"):
    layout = make_layout(spec, block_size=block_size)
    url = str(tmp_path / name)
    prepared = prepare_store(url, spec, layout, history="test: created")
    return url, prepared.layout


def test_template_chunks_equal_blocks_and_carry_provenance(tmp_path):
    spec = load_spec(SPEC)
    url, layout = _store(tmp_path, spec)
    g = zarr.open_group(url, mode="r")
    for name in ("lam_hat", "vec_err", "eps", "certified", "thm22_vec_bound", "solve_time"):
        assert g[name].chunks[: len(layout.dims)] == layout.chunks, name
    assert g["done"].chunks == (1,) and g["done"].shape == (layout.n_blocks,)
    ds = open_results(url)
    assert tuple(ds["lam_hat"].dims) == (*layout.dims, "step")
    assert list(ds["noise"].values) == ["binary", "gaussian"]
    assert ds["sigma"].values[0] == 0.01 and ds["step"].values.tolist() == [1]
    assert ds["lam_hat"].attrs["units"] and ds["vec_err"].attrs["long_name"]
    assert ds["sigma"].attrs["long_name"]
    for key in (
        "spec",
        "sroa_dist_version",
        "git_commit",
        "numpy_version",
        "scipy_version",
        "dask_version",
        "zarr_version",
        "xarray_version",
        "created",
        "history",
    ):
        assert ds.attrs.get(key), key
    assert json.loads(ds.attrs["spec"]) == spec.to_dict()
    assert ds.attrs["history"].endswith("test: created")
    assert np.isnan(ds["lam_hat"].values).all()  # nothing computed yet
    assert not read_done(url).any()


def test_misaligned_region_write_is_refused(tmp_path):
    spec = load_spec(SPEC)
    url, layout = _store(tmp_path, spec, block_size=4)  # chunks (1, 2, 2)
    result = compute_block(block_task(spec, layout, 0))
    region = layout.block_region(0)
    shifted = (region[0], slice(region[1].start + 1, region[1].stop + 1), region[2])
    with pytest.raises(ValueError, match="whole chunks"):
        write_block(url, 0, result, region=shifted)
    assert np.isnan(open_results(url)["lam_hat"].values).all()
    assert not read_done(url).any()
    write_block(url, 0, result, region=region)  # the aligned write goes through
    assert read_done(url)[0]


def _write_one(args):
    url, spec_path, block_size, b = args
    spec = load_spec(spec_path)
    layout = make_layout(spec, block_size=block_size)
    write_block(url, b, compute_block(block_task(spec, layout, b)))
    return b


def test_concurrent_aligned_writes_lose_nothing(tmp_path):
    """All blocks written at once from 4 processes: every value and done flag arrives
    (the failure mode of shared chunks is silent loss, so check every value)."""
    spec = load_spec(SPEC)
    url, layout = _store(tmp_path, spec, block_size=2)
    jobs = [(url, str(SPEC), 2, b) for b in range(layout.n_blocks)]
    with ProcessPoolExecutor(4) as pool:
        assert sorted(pool.map(_write_one, jobs)) == list(range(layout.n_blocks))
    ds = open_results(url).load()
    assert read_done(url).all()
    assert np.isfinite(ds["lam_hat"].values).all() and np.isfinite(ds["eps"].values).all()
    st = store_status(url)
    assert st.done_fraction == 1.0 and st.n_done == layout.n_blocks and not st.failed


def test_incompatible_spec_is_refused_unless_overwrite(tmp_path):
    spec = load_spec(SPEC)
    url, layout = _store(tmp_path, spec)
    other = load_spec(SPEC, ["tensor.n=5"])
    with pytest.raises(StoreIncompatibleError, match=r"tensor\.n: 4 -> 5"):
        prepare_store(url, other, make_layout(other, block_size=4))
    fewer = load_spec(SPEC, ["noise.model=['gaussian']"])
    with pytest.raises(StoreIncompatibleError, match="axes may only grow"):
        prepare_store(url, fewer, make_layout(fewer, block_size=4))
    p = prepare_store(url, other, make_layout(other, block_size=4), overwrite=True)
    assert p.action == "created"
    assert json.loads(open_results(url).attrs["spec"])["tensor"]["n"] == 5


def test_resume_keeps_the_stored_blocks_and_appends_history(tmp_path):
    spec = load_spec(SPEC)
    url, layout = _store(tmp_path, spec, block_size=4)
    with pytest.warns(UserWarning, match="keeping its block shape"):
        p = prepare_store(url, spec, make_layout(spec, block_size=8), history="second")
    assert p.action == "resumed" and p.layout.chunks == layout.chunks
    assert open_results(url).attrs["history"].splitlines()[-1] == "second"


def test_open_results_names_a_missing_store(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        open_results(tmp_path / "nope.zarr")


def test_a_foreign_zarr_store_is_not_taken_over(tmp_path):
    url = str(tmp_path / "foreign.zarr")
    zarr.open_group(url, mode="w").attrs["owner"] = "someone else"
    spec = load_spec(SPEC)
    with pytest.raises(StoreIncompatibleError, match="expected a sroa-dist result store"):
        prepare_store(url, spec, make_layout(spec, block_size=4))


def test_git_commit_comes_from_the_environment_in_images(monkeypatch):
    """Images carry no .git: SROA_GIT_COMMIT (a Docker build arg) is the provenance there."""
    from sroa_dist.sweep.storage import git_commit

    monkeypatch.setenv("SROA_GIT_COMMIT", "0123abcd")
    assert git_commit() == "0123abcd"
    monkeypatch.delenv("SROA_GIT_COMMIT")
    assert git_commit() != "0123abcd"


def test_resuming_with_other_code_warns(tmp_path, monkeypatch):
    """Bits are reproducible per code version: continuing another commit's store says so."""
    import warnings

    spec = load_spec(SPEC)
    monkeypatch.setenv("SROA_GIT_COMMIT", "aaaa1111")
    url, layout = _store(tmp_path, spec, block_size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same commit: silent
        prepare_store(url, spec, layout, history="same code")
    monkeypatch.setenv("SROA_GIT_COMMIT", "bbbb2222")
    with pytest.warns(UserWarning, match="created by commit aaaa1111, continued by bbbb2222"):
        prepare_store(url, spec, layout, history="other code")
