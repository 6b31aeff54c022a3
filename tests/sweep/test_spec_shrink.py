"""Shipped specs shrink from the command line (issue 17, item 7): ``--set noise.model=ONE``,
the smallest n and one replicate validate on every spec under sweeps/ and sweeps/smoke/;
parameter tables of models dropped from the axis are ignored with a one-line warning."""

from __future__ import annotations

import tomllib
import warnings
from pathlib import Path

import pytest

from sroa_dist.sweep import load_spec, open_results
from sroa_dist.sweep.kinds import make_layout
from sroa_dist.sweep.spec.fields import SpecError, prune_model_params
from tests.support.helpers import ROOT, run_cli

SPECS = sorted((ROOT / "sweeps").glob("*.toml")) + sorted(
    (ROOT / "sweeps" / "smoke").glob("*.toml")
)


def _as_list(v):
    return v if isinstance(v, list) else [v]


def shrink(path: Path) -> list[str]:
    """``--set`` items shrinking a spec: its last noise model, its smallest n, one replicate."""
    raw = tomllib.loads(path.read_text())
    items = ["replicates=1"]
    model = raw.get("noise", {}).get("model")
    if model is not None:
        items.append(f'noise.model="{_as_list(model)[-1]}"')
    n = raw.get("tensor", {}).get("n")
    if isinstance(n, list):
        items.append(f"tensor.n={min(n)}")
    elif isinstance(n, dict):
        items.append(f"tensor.n={n['start']}")
    return items


@pytest.mark.parametrize("path", SPECS, ids=[f"{p.parent.name}/{p.stem}" for p in SPECS])
def test_every_shipped_spec_shrunk_with_set_validates(path):
    items = shrink(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the note on dropped params tables
        spec = load_spec(path, items)
    layout = make_layout(spec)
    assert spec.replicates == 1 and layout.n_instances >= 1
    if "noise.model" in spec.axes:
        assert not spec.axes["noise.model"].swept


@pytest.mark.parametrize("path", [p for p in SPECS if p.stem.startswith("nscaling-tilt")])
def test_dropped_model_tables_are_ignored_with_a_one_line_note(path):
    """The issue's example: --set noise.model="coherent-tilt" on the n-scaling tilt specs,
    which keep a [noise.params."coherent-tilt+gaussian"] table."""
    with pytest.warns(UserWarning) as record:
        spec = load_spec(path, ['noise.model="coherent-tilt"'])
    msgs = [str(w.message) for w in record if "ignoring noise.params" in str(w.message)]
    assert len(msgs) == 1 and "\n" not in msgs[0] and "coherent-tilt+gaussian" in msgs[0]
    assert "coherent-tilt+gaussian" not in spec.data["noise"]["params"]
    assert spec.data["noise"]["params"]["coherent-tilt"] == {"component": "smallest"}


def test_tables_of_models_on_the_axis_are_kept():
    params = {"coherent-tilt": {"component": "smallest"}, "scale": 2.0}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing dropped: no note
        # the mixture uses its family part's table
        assert prune_model_params(params, ["coherent-tilt+gaussian"], "s") == params
        assert prune_model_params(params, "coherent-tilt", "s") == params
    with pytest.warns(UserWarning, match=r"ignoring noise.params tables \['coherent-tilt'\]"):
        assert prune_model_params(params, ["gaussian"], "s") == {"scale": 2.0}


def test_a_bad_model_on_the_command_line_is_still_refused():
    with pytest.raises(SpecError) as info:
        load_spec(ROOT / "sweeps" / "nscaling-tilt-p3.toml", ['noise.model="no-such"'])
    assert info.value.key == "noise.model" and "--set" in str(info.value)


@pytest.mark.slow
def test_a_shrunk_shipped_spec_runs_from_the_cli(tmp_path):
    spec = ROOT / "sweeps" / "nscaling-tilt-p3.toml"
    store = tmp_path / "s.zarr"
    args = [
        *("run", str(spec), "--store", str(store), "--workers", "1"),
        *("--set", 'noise.model="coherent-tilt"', "--set", "tensor.n=4"),
        *("--set", "replicates=1", "--set", "noise.eps={start=0.1, stop=0.2, factor=2.0}"),
        *("--set", 'solver.method="sshopm"'),
    ]
    proc = run_cli(*args)
    assert "ignoring noise.params tables" in proc.stderr
    assert len([ln for ln in proc.stderr.splitlines() if "ignoring noise.params" in ln]) == 1
    ds = open_results(store)
    # a single n is a setting (root attr), not a dim
    assert ds.sizes["replicate"] == 1 and "n" not in ds.dims and ds.attrs["setting_n"] == 4
    assert ds["lam_err"].notnull().any()
