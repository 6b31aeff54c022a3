"""Reads that cannot lie (issue 24): every damage kind against every read path.

Real stores of ``sweeps/smoke/figure2.toml`` (9 blocks of 4 instances) and of a certified
smoke spec with ``[output] certificates = true`` (2 blocks), written once per module and
copied per test. Each damage kind -- two chunks swapped, a chunk deleted, random bytes, a
chunk truncated to zero length, a value written through zarr, a certificate file deleted, a
certificate file rewritten (a valid ``.npz`` with one value changed) -- is refused by
``open_results`` with one line naming the store, the variable and the blocks, read masked on
request, refused by ``report`` / ``report --strict`` / ``plot`` (exit 2), named by ``check``
(exit 1), and repaired bit for bit by rerunning the same sweep.
"""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import zarr

from sroa_dist.sweep import load_spec
from sroa_dist.sweep.kinds import make_layout
from sroa_dist.sweep.layout import block_task
from sroa_dist.sweep.run.worker import compute_block
from sroa_dist.sweep.store import ResultStore
from sroa_dist.sweep.store import read as verified_read
from sroa_dist.sweep.store.certificate_files import block_file_name, certificates_folder
from sroa_dist.sweep.store.integrity import DamagedStoreError
from sroa_dist.sweep.store.prepare import store_layout
from sroa_dist.sweep.store.read import open_results
from tests.support.helpers import SMOKE, assert_same_bits, chunk_file, cube_values, run_cli

FIGURE2 = SMOKE / "figure2.toml"
CERTIFIED = {"output.certificates": True}


def _write(store: Path, spec_path: Path, block_size: int, overrides=None) -> Path:
    """A finished store written in this process (the blocks a sweep's tasks would write)."""
    spec = load_spec(spec_path, overrides or {})
    layout = make_layout(spec, block_size=block_size)
    rs = ResultStore(store)
    prepared = rs.prepare(spec, layout)
    for b in range(layout.n_blocks):
        task = block_task(prepared.spec, layout, b)
        task = dataclasses.replace(task, layout_token=prepared.layout_token)
        rs.write(task, compute_block(task))
    return store


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    """Smoke Figure 2: 3 noise models x 12 replicates in 9 blocks of 4 instances."""
    return _write(tmp_path_factory.mktemp("f2") / "f2.zarr", FIGURE2, 4)


@pytest.fixture(scope="module")
def clean_certified(tmp_path_factory) -> Path:
    """Certified smoke spec with certificate files: 4 instances in 2 blocks."""
    store = tmp_path_factory.mktemp("cert") / "cert.zarr"
    return _write(store, SMOKE / "certified.toml", 2, CERTIFIED)


def _copy(clean: Path, tmp_path: Path) -> Path:
    dst = tmp_path / clean.name
    shutil.copytree(clean, dst)  # its certificate files are inside it
    return dst


def _certificate_file(store: Path, block: int) -> Path:
    _, layout = store_layout(store)
    region = layout.block_region(block)
    coords = [c[s] for c, s in zip(layout.coords, region, strict=True)]
    _, folder = certificates_folder(str(store), None)
    return Path(folder) / block_file_name(layout.dims, coords)


# ---- the damage kinds: each damages a copy and returns {variable: damaged blocks} ------------


def _swap(store):
    a, b = chunk_file(store, "lam_hat", 1), chunk_file(store, "lam_hat", 4)
    data = a.read_bytes()
    a.write_bytes(b.read_bytes())
    b.write_bytes(data)
    return {"lam_hat": [1, 4]}


def _delete(store):
    chunk_file(store, "lam_err", 2).unlink()
    return {"lam_err": [2]}


def _garbage(store):
    path = chunk_file(store, "vec_err", 3)
    rng = np.random.default_rng(0)
    path.write_bytes(rng.integers(0, 256, path.stat().st_size, np.uint8).tobytes())
    return {"vec_err": [3]}


def _truncate(store):
    chunk_file(store, "lam_hat", 5).write_bytes(b"")
    return {"lam_hat": [5]}


def _zarr_write(store):
    arr = zarr.open_group(str(store), mode="r+")["lam_hat"]
    arr[0, 0, 0] = arr[0, 0, 0] + 1e-3  # a valid chunk, checksummed by zarr itself
    return {"lam_hat": [0]}


def _certificate_deleted(store):
    _certificate_file(store, 1).unlink()
    return {"certificates": [1]}


def _certificate_rewritten(store):
    path = _certificate_file(store, 0)
    with np.load(path) as z:
        members = {k: z[k] for k in z.files}
    key = next(k for k in members if k.endswith("_lam"))
    members[key] = members[key] + 1e-9
    buf = io.BytesIO()
    np.savez_compressed(buf, **members)
    path.write_bytes(buf.getvalue())
    return {"certificates": [0]}


DAMAGE = {
    "swap": ("clean", _swap),
    "delete": ("clean", _delete),
    "garbage": ("clean", _garbage),
    "truncate": ("clean", _truncate),
    "zarr_write": ("clean", _zarr_write),
    "certificate_deleted": ("clean_certified", _certificate_deleted),
    "certificate_rewritten": ("clean_certified", _certificate_rewritten),
}


@pytest.fixture(params=sorted(DAMAGE))
def damaged(request, tmp_path):
    """(damaged copy, its clean store, {variable: damaged blocks})."""
    which, damage = DAMAGE[request.param]
    clean = request.getfixturevalue(which)
    store = _copy(clean, tmp_path)
    return store, clean, damage(store)


def _blocks(expected: dict[str, list[int]]) -> list[int]:
    return sorted({b for bs in expected.values() for b in bs})


def _named(text: str, expected: dict[str, list[int]]) -> None:
    for var, blocks in expected.items():
        word = "blocks" if len(blocks) > 1 else "block"
        assert f"{var} ({word} {', '.join(map(str, blocks))})" in text, text


# ---- open_results -------------------------------------------------------------------------


def test_open_results_refuses_a_damaged_block_in_one_line(damaged):
    store, _, expected = damaged
    with pytest.raises(DamagedStoreError) as info:
        open_results(store)
    text = str(info.value)
    assert "\n" not in text and str(store) in text, text
    _named(text, expected)
    assert "checksum" not in text  # zarr's own words stay out of it
    assert "sroa-dist check" in info.value.hint and 'damaged="mask"' in info.value.hint


def test_a_masked_read_returns_every_other_block_and_records_the_mask(damaged):
    store, clean, expected = damaged
    ds = open_results(store, damaged="mask").load()
    ref = open_results(clean).load()
    bad = _blocks(expected)
    assert np.flatnonzero(ds["damaged"].values).tolist() == bad
    assert sorted(map(int, json.loads(ds.attrs["damaged_blocks"]))) == bad
    assert not ds["done"].values[bad].any()
    assert ds["done"].values.sum() == ds.sizes["block"] - len(bad)
    _, layout = store_layout(store)
    inside = np.zeros(layout.shape, dtype=bool)
    for b in bad:
        inside[layout.block_region(b)] = True
    for name in ("lam_hat", "vec_err", "lam_err", "eps_upper", "certified"):
        got, want = ds[name].values, ref[name].values
        mask = inside.reshape(inside.shape + (1,) * (got.ndim - inside.ndim))
        mask = np.broadcast_to(mask, got.shape)
        if got.dtype.kind == "f":
            assert np.isnan(got[mask]).all(), name  # never returned as data
            assert np.array_equal(got[~mask], want[~mask], equal_nan=True), name
        else:
            assert not got[mask].any() and np.array_equal(got[~mask], want[~mask]), name


def test_a_clean_store_reads_whole_and_unfinished_blocks_read_as_missing(clean, tmp_path):
    ds = open_results(clean)
    assert bool(ds["done"].all()) and not bool(ds["damaged"].any())
    assert "damaged_blocks" not in ds.attrs and ds["lam_hat"].chunks is not None
    store = _copy(clean, tmp_path)
    zarr.open_group(str(store), mode="r+")["done"][6] = False  # data kept, no done flag
    part = open_results(store)
    _, layout = store_layout(store)
    region = layout.block_region(6)
    assert np.isnan(part["lam_hat"].values[region]).all()  # nobody vouched for it
    assert int(part["done"].sum()) == layout.n_blocks - 1


def test_an_unknown_damaged_mode_is_refused(clean):
    with pytest.raises(ValueError, match=r"damaged: expected one of \('raise', 'mask'\)"):
        open_results(clean, damaged="ignore")


def test_check_and_status_deep_name_every_damaged_block(damaged, capsys):
    from sroa_dist.cli import main

    store, _, expected = damaged
    assert main(["check", str(store)]) == 1
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.startswith("block ")]
    for var, blocks in expected.items():
        for b in blocks:
            assert any(ln.startswith(f"block {b}:") and var in ln for ln in lines), out
    assert len(lines) == len(_blocks(expected)), out
    assert "Stored and computed checksum" not in out  # zarr's words, naming nothing
    assert main(["status", "--deep", str(store)]) == 1  # the same check
    deep = capsys.readouterr().out
    assert [ln for ln in deep.splitlines() if ln.startswith("block ")] == lines, deep


# ---- a cube beyond the memory budget: lazy, each block checked as it is read ---------------


def test_a_cube_beyond_the_memory_budget_checks_each_block_as_it_is_read(
    clean, tmp_path, monkeypatch
):
    monkeypatch.setattr(verified_read, "VERIFIED_IN_MEMORY_BYTES", 0)
    store = _copy(clean, tmp_path)
    lazy = open_results(store)
    assert_same_bits(
        {k: lazy[k].values for k in ("lam_hat", "v_hat", "certified")},
        {k: open_results(clean)[k].values for k in ("lam_hat", "v_hat", "certified")},
    )
    _zarr_write(store)  # changed after the open: the task reading block 0 refuses it
    with pytest.raises(DamagedStoreError, match=r"lam_hat \(block 0: content differs"):
        lazy["lam_hat"].load()
    assert np.isfinite(lazy["lam_err"].values).all()  # other variables are untouched


@pytest.mark.slow
def test_lazy_blocks_are_read_and_checked_on_dask_workers(clean, client, monkeypatch):
    monkeypatch.setattr(verified_read, "VERIFIED_IN_MEMORY_BYTES", 0)
    lazy = open_results(clean)
    assert float(lazy["lam_err"].mean().compute()) == float(open_results(clean)["lam_err"].mean())


# ---- report, report --strict, plot --------------------------------------------------------


@pytest.mark.slow
def test_report_and_plot_refuse_a_damaged_store_and_mask_it_on_request(damaged, tmp_path, capsys):
    from sroa_dist.cli import main

    store, _, expected = damaged
    for argv in (
        ["report", str(store), "--out", str(tmp_path / "r"), "--format", "md"],
        ["report", str(store), "--out", str(tmp_path / "r"), "--format", "md", "--strict"],
        ["plot", str(store), "--out", str(tmp_path / "p")],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert len(lines) == 2 and lines[1].startswith("hint: "), err
        assert "error:" in lines[0] and str(store) in lines[0], err
        _named(lines[0], expected)
    assert not (tmp_path / "r.md").exists() and not (tmp_path / "p").exists()
    # Opt in: the rest is reported, the damage said in the output, and the exit is 1.
    argv = ["report", str(store), "--out", str(tmp_path / "m"), "--format", "md"]
    assert main([*argv, "--damaged", "mask"]) == 1
    err = capsys.readouterr().err
    n_bad, n = len(_blocks(expected)), store_layout(store)[1].n_blocks
    assert f"{n_bad} damaged block(s) masked on read" in err, err
    assert f"{n - n_bad}/{n} blocks done, {n_bad} damaged (masked)" in err, err
    md = (tmp_path / "m.md").read_text()
    assert f"{n_bad} DAMAGED BLOCK(S) MASKED" in md
    for b in _blocks(expected):
        assert f"| {b} |" in md


@pytest.mark.slow
def test_a_real_process_prints_one_line_and_a_hint_for_garbage_bytes(clean, tmp_path):
    store = _copy(clean, tmp_path)
    _garbage(store)
    for cmd in ("report", "plot", "info"):
        proc = run_cli(cmd, str(store), *(["--out", str(tmp_path / cmd)] * (cmd != "info")),
                       check=False)  # fmt: skip
        assert proc.returncode == (1 if cmd == "info" else 2), proc.stderr
        assert "Traceback" not in proc.stderr and "checksum" not in proc.stderr.split("\n")[0]
        assert "vec_err (block 3)" in proc.stderr or "block 3: vec_err" in proc.stderr


# ---- rerun ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_rerunning_the_sweep_repairs_every_damage_kind_bit_for_bit(damaged, cluster, capsys):
    from distributed import Client

    from sroa_dist.cli import main
    from sroa_dist.sweep import run_sweep

    store, clean, expected = damaged
    certified = clean.name == "cert.zarr"
    spec = load_spec(*((SMOKE / "certified.toml", CERTIFIED) if certified else (FIGURE2,)))
    with Client(cluster) as c, pytest.warns(UserWarning, match="damaged block"):
        res = run_sweep(spec, store, client=c, block_size=2 if certified else 4)
    assert res.blocks_computed == len(_blocks(expected))  # exactly the damaged blocks
    assert_same_bits(cube_values(store), cube_values(clean))
    for b in range(store_layout(store)[1].n_blocks if certified else 0):
        got, want = _certificate_file(store, b), _certificate_file(clean, b)
        assert got.read_bytes() == want.read_bytes()  # the certificate files byte for byte
    assert main(["check", str(store)]) == 0, capsys.readouterr().out
    assert open_results(store)["done"].all()


@pytest.mark.slow
def test_an_extension_keeps_blocks_with_their_certificate_files(clean_certified, tmp_path, client):
    """Extending replicates copies every finished block whose certificate file is stored under
    its name (same coordinates), recording the file's digest: the extended store checks and
    verifies whole, and only the new blocks were computed."""
    from sroa_dist.sweep import run_sweep
    from sroa_dist.sweep.store.verify import verify_store

    store = _copy(clean_certified, tmp_path)
    spec = load_spec(SMOKE / "certified.toml", {**CERTIFIED, "replicates": 6})
    res = run_sweep(spec, store, client=client, block_size=2)
    assert res.action == "extended" and res.blocks_reused == 2 and res.blocks_computed == 1
    assert ResultStore(store).check().ok
    ds = open_results(store)
    assert bool(ds["done"].all()) and ds.sizes["replicate"] == 6
    rep = verify_store(str(store))
    assert rep.ok and rep.instances == 6, (rep.failed, rep.missing, rep.damaged)
