"""A user's rank-one method named by import path runs through a sweep on real workers."""

from __future__ import annotations

import os

import numpy as np
import pytest

from sroa_dist.errors import with_hint
from sroa_dist.sweep import open_results, run_sweep
from sroa_dist.sweep.kinds import spec_from_dict
from sroa_dist.sweep.spec.fields import SpecError
from tests.support.helpers import assert_same_bits, cube_values


def _spec(method: str) -> dict:
    return {
        "name": "user-method",
        "seed": 3,
        "replicates": 3,
        "tensor": {"n": 4, "p": 3, "basis": "random"},
        "noise": {"model": "gaussian", "sigma": [0.01, 0.05]},
        "solver": {
            "method": ["sshopm", method],
            "norm_method": "sshopm",
            "options": {method: {"n_starts": 6}},
        },
    }


@pytest.mark.slow
def test_import_path_method_runs_on_workers_in_another_folder(tmp_path, client, monkeypatch):
    workers_cwd = set(client.run(os.getcwd).values())
    monkeypatch.chdir(tmp_path)
    assert str(tmp_path) not in workers_cwd  # the workers import it from their own folder
    spec = _spec("tests.support.user_method:local_power")
    res = run_sweep(spec, tmp_path / "a.zarr", client=client, block_size=2)
    assert res.complete and not res.failed
    ds = open_results(tmp_path / "a.zarr").load()
    assert list(ds["method"].values) == ["sshopm", "tests.support.user_method:local_power"]
    user = ds.sel({"method": "tests.support.user_method:local_power"})
    assert np.isfinite(user["lam_hat"].values).all()
    assert not user["certified"].values.any()  # a local user method is never called global
    assert float(user["vec_err"].max()) < 0.2  # it does recover the planted components
    again = run_sweep(spec, tmp_path / "b.zarr", workers=1, block_size=5, dashboard_address=":0")
    assert again.complete
    assert_same_bits(cube_values(tmp_path / "a.zarr"), cube_values(tmp_path / "b.zarr"))


@pytest.mark.parametrize(
    ("method", "reason"),
    [
        ("tests.support.user_method:nope", "has no attribute 'nope'"),
        ("no_such_module_xyz:fn", "No module named 'no_such_module_xyz'"),
        ("not-a-method", "not-a-method"),
    ],
)
def test_bad_method_paths_are_spec_errors_naming_the_key(method, reason):
    with pytest.raises(SpecError, match="solver.method") as info:
        spec_from_dict(_spec(method))
    assert reason in with_hint(info.value)
