"""status, check, info and report open a store made with a user family without its module."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import ROOT

SPEC = """
name = "read-only"
seed = 1
replicates = 2
[tensor]
n = 4
p = 3
[noise]
model = "perturb_user_family:rank_one"
eps = 0.1
[noise.params."perturb_user_family:rank_one"]
strength = 2.0
[solver]
method = "sshopm"
norm_method = "sshopm"
"""


#: The user's module lives outside the package and outside the tests' package, in a folder
#: of its own: a command run without that folder on its path cannot import it.
USER_MODULE = ROOT / "tests" / "support" / "perturb_user_family.py"


def _cli(args, cwd, *, with_tests: bool) -> subprocess.CompletedProcess:
    mods = Path(cwd) / "user_modules"
    if with_tests and not mods.exists():
        mods.mkdir()
        shutil.copy(USER_MODULE, mods / USER_MODULE.name)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([str(mods)] if with_tests else [])])
    return subprocess.run(
        [sys.executable, "-m", "sroa_dist.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def user_store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("ro")
    (tmp / "spec.toml").write_text(SPEC)
    proc = _cli(["run", "spec.toml", "--store", "u.zarr", "--workers", "1"], tmp, with_tests=True)
    assert proc.returncode == 0, proc.stderr
    return tmp / "u.zarr"


@pytest.mark.parametrize(
    "args",
    [["status"], ["status", "--deep"], ["check"], ["info"], ["report", "--format", "md"]],
    ids=lambda a: " ".join(a),
)
@pytest.mark.slow
def test_reading_commands_need_no_user_code(user_store, args):
    out = [] if args[0] != "report" else ["--out", str(user_store.parent / "rep")]
    proc = _cli([args[0], str(user_store), *args[1:], *out], user_store.parent, with_tests=False)
    assert proc.returncode == 0, proc.stderr
    assert "perturb_user_family" not in proc.stderr


@pytest.mark.slow
def test_computing_still_needs_the_module(user_store):
    """A name read from a stored spec never runs: verify rebuilds instances, so it says why."""
    args = ["run", "spec.toml", "--store", "v.zarr", "--workers", "1"]
    proc = _cli(args, user_store.parent, with_tests=False)
    assert proc.returncode == 2
    assert "cannot import module 'perturb_user_family'" in proc.stderr


@pytest.mark.parametrize(
    ("family", "reason"),
    [("not_symmetric", "not symmetric"), ("not_finite", "finite"), ("wrong_shape", "shape")],
)
@pytest.mark.slow
def test_validate_draws_each_user_family_once(tmp_path, family, reason):
    (tmp_path / "s.toml").write_text(
        SPEC.replace("rank_one", family).split("[noise.params")[0]
        + '[solver]\nmethod = "sshopm"\nnorm_method = "sshopm"\n'
    )
    proc = _cli(["validate", "s.toml"], tmp_path, with_tests=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    first = proc.stderr.splitlines()[0]
    assert "noise.model" in first and reason in first and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_validate_reports_the_trial_draw_of_a_good_family(tmp_path):
    (tmp_path / "s.toml").write_text(SPEC)
    proc = _cli(["validate", "s.toml"], tmp_path, with_tests=True)
    assert proc.returncode == 0, proc.stderr
    assert "user family 'perturb_user_family:rank_one': one draw at n = 4 checked" in proc.stdout
