"""``verify`` means it: every stored certified value is checked against its certificate, on
real sweep stores that are then damaged one way at a time (real zarr writes, real files)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import zarr

from sroa_dist.sweep import run_sweep
from sroa_dist.sweep.store.integrity import DIGEST, DIGEST_VARIABLES, block_digests
from sroa_dist.sweep.store.prepare import store_layout
from sroa_dist.sweep.store.verify import verify_store
from tests.support.helpers import run_cli

SPEC = """
name = "verify-smoke"
seed = 5
replicates = 2

[tensor]
n = 3
p = 3

[noise]
model = "gaussian"
eps = [0.02, 0.05]

[solver]
method = "certified"

[output]
certificates = true
"""


@pytest.fixture(scope="module")
def clean(tmp_path_factory, cluster):
    """A finished certified sweep: 4 instances x 3 steps, 2 certificate files."""
    from distributed import Client

    d = tmp_path_factory.mktemp("verify")
    (d / "spec.toml").write_text(SPEC)
    with Client(cluster) as c:
        res = run_sweep(d / "spec.toml", d / "v.zarr", client=c, block_size=2)
    assert res.complete
    return d / "v.zarr"


@pytest.fixture
def store(clean, tmp_path):
    """A private copy of the clean store (its certificates folder inside it) to damage."""
    target = tmp_path / "v.zarr"
    shutil.copytree(clean, target)
    return target


def _change(store, name, change, forge=True):
    """Rewrite the first instance's first step of variable ``name`` in the zarr store; with
    ``forge``, rewrite block 0's digest row to match (a forgery the digests cannot see, so
    that verify's own comparison with the certificates is what must catch it)."""
    g = zarr.open_group(str(store), mode="r+")
    arr = g[name]
    idx = (0,) * arr.ndim
    arr[idx] = change(arr[idx])
    if forge:
        layout = store_layout(store)[1]
        region = tuple(layout.block_region(0))
        names = list(g[DIGEST].attrs[DIGEST_VARIABLES])
        data = {k: g[k][region + (slice(None),) * (g[k].ndim - len(region))] for k in names}
        g[DIGEST][0, :] = block_digests(names, data, {k: g[k].dtype for k in names})
    return idx


@pytest.mark.slow
def test_a_clean_store_passes_and_says_what_it_checked(clean):
    rep = verify_store(str(clean))
    assert rep.ok and len(rep.checks) == 4 * 3 and rep.instances == 4 and rep.files == 2
    out = run_cli("verify", str(clean))
    assert "checked 12 certified steps of 4 instances in 2 certificate files" in out.stdout
    for what in ("lam_hat equal to the certified value", "upper_bound equal to the "
                 "certificate's U", "certified consistent with the gap"):  # fmt: skip
        assert what in out.stdout
    assert "12 certificates checked, 0 failed" in out.stdout


@pytest.mark.parametrize(
    "name, change, expect",
    [
        ("lam_hat", lambda v: v + 0.3, "stored lam_hat"),
        ("lam_hat", lambda v: np.nextafter(v, np.inf), "differs from the certified step"),
        ("upper_bound", lambda v: v * (1 + 1e-9), "differs from the certificate's U"),
        ("upper_bound", lambda v: v + 1.0, "stored upper_bound"),
        ("certified", lambda v: not v, "stored certified = False"),
    ],
    ids=["lam+0.3", "lam-1ulp", "U-rel1e-9", "U+1", "certified-flipped"],
)
@pytest.mark.slow
def test_a_changed_stored_value_fails(store, name, change, expect):
    """A value changed in the cube (not in the certificate) is a FAIL naming the step, exit 1."""
    _change(store, name, change)
    rep = verify_store(str(store))
    assert len(rep.failed) == 1, [c.reason for c in rep.failed]
    assert expect in rep.failed[0].reason and rep.failed[0].step == 0
    out = run_cli("verify", str(store), check=False)
    assert out.returncode == 1 and "FAIL" in out.stdout and "1 failed" in out.stdout, out


@pytest.mark.slow
def test_a_changed_stored_value_without_its_digest_is_a_damaged_block(store):
    """Changed through zarr without touching the digests: the read refuses the block, and
    verify names it damaged (exit 1) while still re-checking its certificates."""
    _change(store, "lam_hat", lambda v: v + 0.3, forge=False)
    rep = verify_store(str(store))
    assert not rep.ok and list(rep.damaged) == [0] and "lam_hat" in rep.damaged[0][0]
    assert not rep.failed and len(rep.checks) == 12  # every certificate still re-verified
    out = run_cli("verify", str(store), check=False)
    assert out.returncode == 1 and "DAMAGED block 0" in out.stdout, out


@pytest.mark.slow
def test_a_garbage_certificate_file_fails_by_name_and_the_rest_are_checked(store):
    files = sorted((store / "certificates").glob("*.npz"))
    files[0].write_bytes(b"this is not an npz file")
    rep = verify_store(str(store))
    assert len(rep.failed) == 1 and rep.failed[0].file.endswith(files[0].name)
    assert rep.failed[0].reason.startswith("unreadable certificate file")
    assert sum(c.ok for c in rep.checks) == 6  # the other file's 2 instances x 3 steps
    out = run_cli("verify", str(store), check=False)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "FAIL unreadable certificate file" in out.stdout and files[0].name in out.stdout


@pytest.mark.slow
def test_no_certificates_is_exit_2_not_a_pass(tmp_path, client):
    (tmp_path / "spec.toml").write_text(SPEC.replace("certificates = true", "vectors = false"))
    assert run_sweep(tmp_path / "spec.toml", tmp_path / "n.zarr", client=client).complete
    out = run_cli("verify", str(tmp_path / "n.zarr"), check=False)
    assert out.returncode == 2, out
    assert "no certificates stored; nothing verified" in out.stderr
    assert "Traceback" not in out.stderr
