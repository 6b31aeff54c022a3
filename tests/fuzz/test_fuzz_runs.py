"""Fuzz campaign, real processes: a few ``sroa-dist`` commands from the campaign's inputs in
real subprocesses (the in-process campaign stops a run before its cluster): a valid spec of the
tensor grammar runs to a whole store, a refused one prints its two lines and leaves nothing."""

from __future__ import annotations

import pytest

from tests.support.fuzz import ERROR_LINE, HINT_LINE, TRACEBACK, snapshot, toml_text
from tests.support.helpers import run_cli

SPEC = {
    "name": "fuzz-run",
    "seed": 3,
    "replicates": 2,
    "tensor": {"n": [2, 3], "p": 3, "basis": "random"},
    "noise": {"model": ["gaussian", "binary"], "eps": 0.1},
    "solver": {"method": "sshopm", "options": {"n_starts": 4}},
}


def _cli(tmp_path, *args):
    return run_cli(*args, check=False, timeout=600, cwd=tmp_path)


@pytest.mark.slow
def test_a_valid_spec_runs_and_a_refused_one_leaves_nothing(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(toml_text(SPEC))
    before = snapshot(tmp_path)
    bad = _cli(tmp_path, "run", str(spec), "--set", "tensor.n=[3, 3]", "--workers", "1")
    lines = bad.stderr.splitlines()
    assert bad.returncode == 2 and len(lines) == 2, bad.stderr
    assert ERROR_LINE.match(lines[0]) and HINT_LINE.match(lines[1]) and "tensor.n" in lines[0]
    assert snapshot(tmp_path) == before
    good = _cli(tmp_path, "run", str(spec), "--workers", "1")
    assert good.returncode == 0, good.stderr
    assert not TRACEBACK.search(good.stderr), good.stderr
    from sroa_dist.sweep import open_results

    ds = open_results(tmp_path / "results" / "fuzz-run.zarr")
    assert bool(ds["done"].all()) and ds.sizes["replicate"] == 2
