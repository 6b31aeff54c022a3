"""Spec names are safe file names, so the default store never leaves ``results/`` (issue 20,
item 5): an escaping, hidden, empty or odd name is a SpecError naming the key, for every kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from sroa_dist.sweep.kinds import spec_from_dict
from sroa_dist.sweep.spec.base import default_store
from sroa_dist.sweep.spec.fields import SpecError
from tests.support.helpers import run_cli

TENSOR = {"seed": 1, "tensor": {"n": 3, "p": 3}, "noise": {"sigma": 0.01}}
MODEL = {"seed": 1, "model": {"name": "gmm", "N": 500, "k": 3, "d": 8, "sigma2": 1.0}}

BAD = ["../../../x", "", ".hidden", "a/b", "a\\b", "x" * 101, "spa ce", "ü", "/abs", 3]


@pytest.mark.parametrize("name", BAD)
def test_unsafe_names_are_refused_naming_the_key(name):
    with pytest.raises(SpecError) as err:
        spec_from_dict({**TENSOR, "name": name})
    assert err.value.key == "name"
    assert "letters, digits" in str(err.value)


@pytest.mark.parametrize("name", ["a", "smoke-figure1", "run_2.v3", "A" * 100, "-x"])
def test_safe_names_stay_inside_results(name):
    spec = spec_from_dict({**TENSOR, "name": name})
    path = Path(spec.default_store)
    assert path.parent == Path("results") and path.name == f"{name}.zarr"


def test_model_specs_check_names_too():
    with pytest.raises(SpecError) as err:
        spec_from_dict({**MODEL, "name": "../up"})
    assert err.value.key == "name"


def test_default_store_refuses_an_escaping_name_even_unchecked():
    for name in ("../x", "", ".x", "a/../../b"):
        with pytest.raises(ValueError, match="results/"):
            default_store(name)


@pytest.mark.slow
def test_cli_validate_refuses_an_escaping_name(tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text('name = "../../../x"\n[tensor]\nn = 3\np = 3\n[noise]\nsigma = 0.01\n')
    proc = run_cli("validate", str(spec), check=False)
    assert proc.returncode != 0
    assert "'name'" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path.parent.parent / "x.zarr").exists()
