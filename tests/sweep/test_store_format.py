"""Same bits on every path (issue 32): a store's integrity cannot be switched off, and a copy
of the store folder is the whole store.

Real stores written by the real CLI (``sroa-dist run`` of a certified spec with
``[output] certificates = true``, 4 blocks), damaged or rearranged on copies:

* a lost digest chunk with an edited value is damage in a store of format 2: refused on read,
  masked on request, flagged by ``check`` (exit 1), not "complete" for ``report --strict``,
  repaired bit for bit by rerunning;
* the certificate files live inside the store: a ``shutil.copytree`` of the folder opens,
  verifies, checks and resumes (extends) with nothing beside it;
* a store of the old layout (format 1: certificates in ``<store>.certificates``, no recorded
  format) opens and verifies as before, and ``check --migrate`` or the next ``run`` moves its
  certificates inside; a migration killed half-way is finished by the next one, and a file
  beside the store whose copy inside differs is never deleted;
* only blocks written before digests existed are "cannot vouch", and a read says so in one
  warning line;
* the certificate folder of a store in S3 (moto) is inside the store too, and migrates there.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import uuid
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

from sroa_dist.errors import SroaWarning
from sroa_dist.sweep.cube import ATTR_FORMAT, STORE_FORMAT
from sroa_dist.sweep.store.certificate_files import CERTIFICATE_DIGEST, FOLDER
from sroa_dist.sweep.store.integrity import DIGEST, STORE_ATTRS, UNVOUCHED, DamagedStoreError
from sroa_dist.sweep.store.read import open_results
from tests.support.helpers import assert_same_bits, chunk_file, cube_values, run_cli

SPEC_TOML = """
name = "store-format"
seed = 11
replicates = 4

[tensor]
n = 3
p = 3

[noise]
model = "gaussian"
sigma = 0.05

[solver]
method = "certified"
steps = 1

[output]
certificates = true
"""
RUN = ["--workers", "1", "--dashboard-address", ":0"]


def _run(spec: Path, store: Path, *extra: str, check: bool = True):
    return run_cli("run", str(spec), "--store", str(store), *RUN, *extra, check=check)


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("spec") / "format.toml"
    path.write_text(SPEC_TOML)
    return path


@pytest.fixture(scope="module")
def clean(tmp_path_factory, spec) -> Path:
    """One clean store written by `sroa-dist run` (4 blocks of 1 instance)."""
    store = tmp_path_factory.mktemp("clean") / "clean.zarr"
    proc = _run(spec, store, "--block-size", "1")
    assert "4 computed" in proc.stdout, proc.stdout
    return store


def _copy(clean: Path, tmp_path: Path, name: str = "s.zarr") -> Path:
    dst = tmp_path / name
    shutil.copytree(clean, dst)
    return dst


def _certificate_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.npz"))


def _make_format_1(store: Path) -> None:
    """Turn a store into one of the old layout: certificates beside it, no recorded format."""
    inside = store / FOLDER
    beside = Path(f"{store}.certificates")
    beside.mkdir()
    for f in _certificate_files(inside):
        f.rename(beside / f.name)
    shutil.rmtree(inside)
    g = zarr.open_group(store, mode="r+")
    del g.attrs[ATTR_FORMAT]
    copy = dict(g[DIGEST].attrs[STORE_ATTRS])
    copy.pop(ATTR_FORMAT)
    g[DIGEST].attrs[STORE_ATTRS] = copy


def _format(store: Path) -> int:
    return int(zarr.open_group(store, mode="r").attrs.get(ATTR_FORMAT, 1))


# ---- a lost digest is damage ----------------------------------------------------------------


@pytest.mark.slow
def test_a_lost_digest_and_an_edited_value_are_refused_flagged_and_repaired(clean, spec, tmp_path):
    store = _copy(clean, tmp_path)
    chunk_file(store, DIGEST, 1).unlink()
    g = zarr.open_group(store, mode="r+")
    edited = np.asarray(g["lam_hat"][1, ...])
    edited[..., 0] += 1.0
    g["lam_hat"][1, ...] = edited  # blocks are single instances: block 1 is replicate 1
    with pytest.raises(DamagedStoreError, match=r"block_digest \(block 1\)"):
        open_results(store)
    masked = open_results(store, damaged="mask")
    assert masked["damaged"].values.tolist() == [False, True, False, False]
    assert np.isnan(masked["lam_hat"].values[1]).all()
    check = run_cli("check", str(store), check=False)
    assert check.returncode == 1, check.stdout
    assert "block 1: block_digest: digest missing" in check.stdout, check.stdout
    assert "cannot vouch" not in check.stdout and "integrity ok" not in check.stdout
    out = str(tmp_path / "r")
    strict = run_cli("report", str(store), "--out", out, "--format", "md", "--strict", check=False)
    assert strict.returncode == 2 and "complete" not in strict.stdout, strict.stdout
    assert "damaged block" in strict.stderr, strict.stderr
    rerun = _run(spec, store)
    assert "1 computed" in rerun.stdout, rerun.stdout
    assert_same_bits(cube_values(store), cube_values(clean))
    assert run_cli("check", str(store)).returncode == 0


@pytest.mark.slow
def test_a_lost_certificate_digest_is_damage(clean, spec, tmp_path):
    store = _copy(clean, tmp_path)
    chunk_file(store, CERTIFICATE_DIGEST, 2).unlink()
    check = run_cli("check", str(store), check=False)
    assert check.returncode == 1, check.stdout
    assert "block 2: certificate_digest: digest missing" in check.stdout, check.stdout
    with pytest.raises(DamagedStoreError, match="certificate_digest"):
        open_results(store)
    assert "1 computed" in _run(spec, store).stdout
    assert run_cli("check", str(store)).returncode == 0
    assert run_cli("verify", str(store)).returncode == 0


# ---- a copy of the store folder is the whole store -------------------------------------------


@pytest.mark.slow
def test_a_copy_of_the_store_folder_opens_verifies_and_resumes(clean, spec, tmp_path):
    assert not Path(f"{clean}.certificates").exists()
    files = _certificate_files(clean / FOLDER)
    assert len(files) == 4
    store = _copy(clean, tmp_path / "elsewhere", "copy.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # zarr and xarray see the folder as a valid member
        ds = xr.open_zarr(store, consolidated=False)
        assert FOLDER not in ds.variables
        cube = open_results(store)
    assert_same_bits(cube_values(store), cube_values(clean))
    assert int(cube["done"].sum()) == 4
    assert run_cli("verify", str(store)).returncode == 0
    assert "integrity ok" in run_cli("check", str(store)).stdout
    # Resumed with more replicates (an extension: a new layout swapped in): the certificate
    # folder stays, the old blocks keep their files, the new ones write theirs beside them.
    extended = _run(spec, store, "--set", "replicates=6")
    assert "(extended)" in extended.stdout and "2 computed" in extended.stdout, extended.stdout
    assert len(_certificate_files(store / FOLDER)) == 6
    assert run_cli("verify", str(store)).returncode == 0
    assert run_cli("check", str(store)).returncode == 0


# ---- stores of the old layout ----------------------------------------------------------------


@pytest.mark.slow
def test_an_old_layout_store_opens_verifies_and_migrates_with_check(clean, tmp_path):
    store = _copy(clean, tmp_path)
    _make_format_1(store)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SroaWarning)  # every block has its digests
        assert_same_bits(cube_values(store), cube_values(clean))
    assert run_cli("verify", str(store)).returncode == 0
    check = run_cli("check", str(store))
    assert "store format 1" in check.stdout and "check --migrate" in check.stdout, check.stdout
    migrate = run_cli("check", "--migrate", str(store))
    assert "4 certificate file(s) moved inside" in migrate.stdout, migrate.stdout
    assert "integrity ok" in migrate.stdout and "store format 1" not in migrate.stdout
    assert not Path(f"{store}.certificates").exists()
    assert len(_certificate_files(store / FOLDER)) == 4
    assert _format(store) == STORE_FORMAT
    assert zarr.open_group(store, mode="r")[DIGEST].attrs[UNVOUCHED] == []
    assert run_cli("verify", str(store)).returncode == 0
    again = run_cli("check", "--migrate", str(store))
    assert "nothing to migrate" in again.stdout, again.stdout


@pytest.mark.slow
def test_an_old_layout_store_migrates_with_the_next_run(clean, spec, tmp_path):
    store = _copy(clean, tmp_path)
    _make_format_1(store)
    proc = _run(spec, store)
    assert "0 computed" in proc.stdout, proc.stdout
    assert not Path(f"{store}.certificates").exists() and _format(store) == STORE_FORMAT
    assert len(_certificate_files(store / FOLDER)) == 4
    assert run_cli("verify", str(store)).returncode == 0
    assert run_cli("check", str(store)).returncode == 0


@pytest.mark.slow
def test_a_migration_killed_half_way_is_finished_and_keeps_what_differs(clean, spec, tmp_path):
    # Killed while copying: format 1, one file inside, all four still beside.
    store = _copy(clean, tmp_path)
    _make_format_1(store)
    beside = Path(f"{store}.certificates")
    first = _certificate_files(beside)[0]
    (store / FOLDER).mkdir()
    shutil.copyfile(first, store / FOLDER / first.name)
    assert run_cli("verify", str(store)).returncode == 0  # still read beside the store
    assert "0 computed" in _run(spec, store).stdout
    assert not beside.exists() and len(_certificate_files(store / FOLDER)) == 4
    # Killed after the format was recorded: every file inside, copies still beside, and one
    # file beside that is not the one inside (never deleted, named).
    store = _copy(clean, tmp_path, "t.zarr")
    beside = Path(f"{store}.certificates")
    shutil.copytree(store / FOLDER, beside)
    odd = _certificate_files(beside)[1]
    odd.write_bytes(b"not the file inside")
    proc = run_cli("check", "--migrate", str(store))
    assert f"kept beside the store (no identical copy inside): {odd}" in proc.stdout, proc.stdout
    assert [p.name for p in beside.iterdir()] == [odd.name]
    assert odd.read_bytes() == b"not the file inside"
    assert run_cli("verify", str(store)).returncode == 0


@pytest.mark.slow
def test_only_blocks_written_before_digests_are_not_vouched_for(clean, spec, tmp_path):
    """A format-1 store without digests (made before them): `check` cannot vouch for its
    blocks (exit 0), and neither after the migration, which lists them; a read says so in one
    warning. A block recomputed after damage has digests again."""
    store = _copy(clean, tmp_path)
    _make_format_1(store)
    shutil.rmtree(store / DIGEST)
    shutil.rmtree(store / CERTIFICATE_DIGEST)
    check = run_cli("check", str(store))
    assert "cannot vouch for 4 finished block(s)" in check.stdout, check.stdout
    migrate = run_cli("check", "--migrate", str(store))
    assert "4 finished block(s) written before digests" in migrate.stdout, migrate.stdout
    assert "cannot vouch for 4 finished block(s)" in migrate.stdout
    assert zarr.open_group(store, mode="r")[DIGEST].attrs[UNVOUCHED] == [0, 1, 2, 3]
    with pytest.warns(SroaWarning, match="4 finished block") as caught:
        open_results(store)
    assert len([w for w in caught if issubclass(w.category, SroaWarning)]) == 1
    chunk_file(store, "lam_hat", 3).write_bytes(b"garbage")
    assert run_cli("check", str(store), check=False).returncode == 1
    assert "1 computed" in _run(spec, store).stdout
    assert zarr.open_group(store, mode="r")[DIGEST].attrs[UNVOUCHED] == [0, 1, 2]
    assert_same_bits(cube_values(store), cube_values(clean))


# ---- status and resume -----------------------------------------------------------------------


@pytest.mark.slow
def test_status_says_that_it_checked_nothing(clean, tmp_path):
    store = _copy(clean, tmp_path)
    chunk_file(store, "lam_hat", 0).write_bytes(b"garbage")
    shallow = run_cli("status", str(store))
    assert "100.0% done" in shallow.stdout
    said = [ln for ln in shallow.stdout.splitlines() if ln.startswith("integrity:")]
    assert len(said) == 1 and "not checked" in said[0], shallow.stdout
    assert "--deep" in said[0] and "sroa-dist check" in said[0]
    deep = run_cli("status", "--deep", str(store), check=False)
    assert deep.returncode == 1 and "not checked" not in deep.stdout, deep.stdout


@pytest.mark.slow
def test_resume_warns_about_the_block_shape_only_when_one_was_requested(clean, spec, tmp_path):
    store = _copy(clean, tmp_path)
    plain = _run(spec, store)  # the default block size would be (4,): nothing was asked
    assert "block shape" not in plain.stderr, plain.stderr
    same = _run(spec, store, "--block-size", "1")
    assert "block shape" not in same.stderr, same.stderr
    other = _run(spec, store, "--block-size", "2")
    assert "keeping its block shape (1,) (requested (2,))" in other.stderr, other.stderr


# ---- S3 -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3():
    """moto's S3 server on loopback and a bucket; yields (storage_options, bucket)."""
    pytest.importorskip("flask", reason="moto's server mode needs moto[server]")
    import logging
    import socket

    import s3fs
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    opts = {
        "endpoint_url": f"http://127.0.0.1:{port}",
        "key": "sroa-test",
        "secret": uuid.uuid4().hex,
        "client_kwargs": {"region_name": "us-east-1"},
    }
    bucket = "sroa-format-test"
    s3fs.S3FileSystem(skip_instance_cache=True, **opts).call_s3("create_bucket", Bucket=bucket)
    try:
        yield opts, bucket
    finally:
        server.stop()


@pytest.mark.slow
def test_certificates_of_an_s3_store_live_inside_it_and_migrate_there(s3, spec):
    import s3fs

    from sroa_dist.sweep import load_spec
    from sroa_dist.sweep.kinds import make_layout
    from sroa_dist.sweep.layout import block_task
    from sroa_dist.sweep.run.worker import compute_block
    from sroa_dist.sweep.store import ResultStore
    from sroa_dist.sweep.store.lease import StoreLease
    from sroa_dist.sweep.store.migrate import migrate_store

    opts, bucket = s3
    url = f"s3://{bucket}/{uuid.uuid4().hex[:8]}.zarr"
    sweep = load_spec(spec)
    layout = make_layout(sweep, block_size=2)
    rs = ResultStore(url, opts)
    prepared = rs.prepare(sweep, layout)
    for b in range(layout.n_blocks):
        task = dataclasses.replace(
            block_task(prepared.spec, layout, b), layout_token=prepared.layout_token
        )
        rs.write(task, compute_block(task))
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **opts)
    key = url.removeprefix("s3://")
    inside = sorted(p for p in fs.find(f"{key}/{FOLDER}") if p.endswith(".npz"))
    assert len(inside) == 2 and not fs.exists(f"{key}.certificates")
    assert rs.check().ok and rs.verify_certificates().ok
    # The old layout in S3: files beside the store, no recorded format; read there, migrated.
    for p in inside:
        fs.mv(p, f"{key}.certificates/{p.rsplit('/', 1)[-1]}")
    g = zarr.open_group(url, mode="r+", storage_options=opts)
    del g.attrs[ATTR_FORMAT]
    assert rs.check().ok and rs.verify_certificates().ok
    with StoreLease(url, opts):
        done = migrate_store(url, layout, opts, certificates=True)
    assert done.migrated and done.moved == 2 and not done.kept
    assert not fs.find(f"{key}.certificates")
    assert len([p for p in fs.find(f"{key}/{FOLDER}") if p.endswith(".npz")]) == 2
    assert json.loads(fs.cat_file(f"{key}/zarr.json"))["attributes"][ATTR_FORMAT] == 2
    assert rs.check().ok and rs.verify_certificates().ok


class _Doubled:
    """A pure evaluation with a journal key (as a threshold search's evaluator has)."""

    calls = 0

    def journal_key(self, x: float) -> str:
        return f"{float(x).hex()}".replace(".", "_").replace("+", "p").replace("-", "m")

    def __call__(self, x: float) -> tuple:
        type(self).calls += 1
        return (2.0 * x, x > 1, {"gap": float("nan")}, 3, 4)


@pytest.mark.slow
def test_the_evaluation_journal_of_an_s3_store_lives_inside_it(s3):
    """The journal on an object store (moto's S3): entries are written inside the store,
    replayed whole (every float by its bits) by a later map, a damaged one is refused and
    evaluated again, and clearing removes the block's folder."""
    import s3fs

    from sroa_dist.sweep.store import EvaluationJournal

    opts, bucket = s3
    url = f"s3://{bucket}/{uuid.uuid4().hex[:8]}.zarr"
    points = [0.1, 1.5, 1 / 3]
    fn = _Doubled()
    first = EvaluationJournal(url, opts, ["n"], [[4]])
    outs = first.map(fn, points)
    assert _Doubled.calls == 3 and first.evaluated == 3
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **opts)
    key = url.removeprefix("s3://")
    entries = sorted(p for p in fs.find(f"{key}/journal") if "/block-" in p)
    assert len(entries) == 3 and fs.exists(f"{key}/journal/zarr.json")
    fs.pipe_file(entries[0], fs.cat_file(entries[0])[:-3] + b"}}}")  # damaged
    again = EvaluationJournal(url, opts, ["n"], [[4]])
    with pytest.warns(SroaWarning, match="damaged"):
        replayed = again.map(fn, points)
    assert again.replayed == 2 and again.evaluated == 1 and _Doubled.calls == 4
    assert repr(replayed) == repr(outs)  # same values, same types, NaN included
    again.clear()
    assert not [p for p in fs.find(f"{key}/journal") if "/block-" in p]
