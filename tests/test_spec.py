"""Sweep spec loading and validation: every error names the file, the key and the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sroa_dist.sweep.spec import (
    SpecError,
    expand_range,
    load_spec,
    parse_override,
    round_sig,
    spec_from_dict,
)

ROOT = Path(__file__).resolve().parents[1]
SPECS = sorted((ROOT / "sweeps").rglob("*.toml"))

BASE = """
name = "t"
seed = 1
replicates = 2
[tensor]
n = 4
p = 3
[noise]
model = "gaussian"
sigma = 0.01
[solver]
method = "sshopm"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("path", SPECS, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_specs_validate(path):
    spec = load_spec(path)
    assert spec.name and spec.replicates >= 1


def test_figure_specs_match_the_paper():
    f1 = load_spec(ROOT / "sweeps/figure1.toml")
    sigma = f1.axes["noise.sigma"].values
    assert len(sigma) == 2000 and sigma[0] == 0.0001 and sigma[-1] == 0.2
    assert f1.axes["noise.model"].values == ("binary", "uniform", "gaussian")
    assert f1.data["solver"]["steps"] == 1 and f1.axes["tensor.n"].scalar == 10
    f2 = load_spec(ROOT / "sweeps/figure2.toml")
    assert f2.replicates == 500 and f2.axes["noise.sigma"].scalar == 0.01
    assert f2.data["solver"]["steps"] is None  # full SROA: rank = n = 10 steps


@pytest.mark.parametrize(
    ("edit", "key", "reason"),
    [
        ("\n[output]\nvectorz = true\n", "output.vectorz", "unknown key"),
        (('name = "t"', 'name = "t"\nfoo = 1'), "foo", "unknown key"),
        (("n = 4", 'n = "four"'), "tensor.n", "expected an integer"),
        (("sigma = 0.01", 'sigma = "small"'), "noise.sigma", "expected a finite number"),
        (("sigma = 0.01", "sigma = []"), "noise.sigma", "non-empty"),
        (
            ("sigma = 0.01", "sigma = {start = 0.2, stop = 0.1, step = 0.01}"),
            "noise.sigma",
            "stop >= start",
        ),
        (
            ("sigma = 0.01", "sigma = {start = 0.1, stop = 0.2, step = -0.01}"),
            "noise.sigma.step",
            "positive step",
        ),
        (("p = 3", "p = 2"), "tensor.p", "p >= 3"),
        (("n = 4", "n = 4\nrank = 5"), "tensor.rank", "rank <= n"),
        (('model = "gaussian"', 'model = "cauchy"'), "noise.model", "unknown noise model"),
        (('method = "sshopm"', 'method = "newton"'), "solver.method", "unknown method"),
        (
            ('method = "sshopm"', 'method = "sshopm"\noptions = {n_startz = 3}'),
            "solver.options.n_startz",
            "unknown option",
        ),
        (("seed = 1", "seed = 1.5"), "seed", "expected an integer"),
        (("replicates = 2", "replicates = 0"), "replicates", ">= 1"),
        (('method = "sshopm"', 'method = "sshopm"\nsteps = 9'), "solver.steps", "steps <= rank"),
        (("sigma = 0.01", "sigma = 0.01\neps = 0.1"), "noise", "exactly one of"),
        (("sigma = 0.01", "sigma = [0.1, 0.1]"), "noise.sigma", "distinct"),
    ],
)
def test_errors_name_file_key_and_reason(tmp_path, edit, key, reason):
    if isinstance(edit, tuple):
        text = BASE.replace(*edit, 1)
    else:
        text = BASE + edit
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    msg = str(info.value)
    assert str(path) in msg
    assert f"'{key}'" in msg
    assert reason in msg
    assert info.value.key == key


def test_missing_file_and_bad_toml(tmp_path):
    with pytest.raises(SpecError, match="does-not-exist.toml"):
        load_spec(tmp_path / "does-not-exist.toml")
    with pytest.raises(SpecError, match="valid TOML"):
        load_spec(write(tmp_path, "name = "))


def test_range_table_has_exactly_2000_values():
    vals = expand_range({"start": 0.0001, "stop": 0.2, "step": 0.0001})
    assert len(vals) == 2000
    assert vals[0] == 0.0001 and vals[1] == 0.0002 and vals[-1] == 0.2
    assert vals[2] == 0.0003  # not 0.00030000000000000003
    assert expand_range({"start": 4, "stop": 32, "factor": 2}, integer=True) == (4, 8, 16, 32)
    assert expand_range({"start": 2, "stop": 10, "step": 4}, integer=True) == (2, 6, 10)


@given(
    start=st.integers(0, 1000),
    step=st.integers(1, 100),
    k=st.integers(1, 500),
    scale=st.sampled_from([1e-4, 1e-3, 0.01, 0.1, 1.0]),
)
def test_range_length_is_robust(start, step, k, scale):
    """k values whenever stop = start + (k-1) step, whatever the float representation."""
    table = {"start": start * scale, "stop": (start + (k - 1) * step) * scale, "step": step * scale}
    vals = expand_range(table)
    assert len(vals) == k
    assert vals[-1] == round_sig((start + (k - 1) * step) * scale)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_round_sig_is_idempotent(x):
    assert round_sig(round_sig(x)) == round_sig(x)


def test_lists_and_ranges_become_axes_scalars_do_not():
    spec = load_spec(
        ROOT / "sweeps/figure1.toml", ["replicates=3", "tensor.n=[4, 5]", "solver.method=sshopm"]
    )
    assert spec.sweep_dims() == ["noise", "n", "sigma"]
    assert not spec.axes["solver.method"].swept
    assert spec.get("replicates") == 3


def test_set_overrides_parse_toml_values():
    assert parse_override("replicates=20") == ("replicates", 20)
    assert parse_override("noise.sigma={start=0.001, stop=0.2, step=0.01}") == (
        "noise.sigma",
        {"start": 0.001, "stop": 0.2, "step": 0.01},
    )
    assert parse_override("noise.model=gaussian") == ("noise.model", "gaussian")
    assert parse_override('solver.method=["power", "sshopm"]') == (
        "solver.method",
        ["power", "sshopm"],
    )
    with pytest.raises(SpecError, match="KEY=VALUE"):
        parse_override("replicates")


def test_override_errors_name_the_set_option_and_key(tmp_path):
    """A bad value given with --set is reported as --set's, not the file's."""
    path = write(tmp_path, BASE)
    for item, key in [
        ("tensor.rank=9", "tensor.rank"),
        ("solver.options.n_starts=0", "solver.options.n_starts"),
        ('tensor.lambdas={dist="uniform", low=1, high=1}', "tensor.lambdas"),
    ]:
        with pytest.raises(SpecError) as info:
            load_spec(path, [item])
        msg = str(info.value)
        assert msg.startswith(f"--set {item}: key '{key}'")
        assert str(path) not in msg
    # A file error stays the file's even when unrelated --set items are given.
    bad = write(tmp_path, BASE.replace("p = 3", "p = 2"))
    with pytest.raises(SpecError, match=str(bad)):
        load_spec(bad, ["replicates=3"])


def test_defaults_and_norm_scale_inference(tmp_path):
    spec = load_spec(write(tmp_path, BASE.replace("sigma = 0.01", "eps_scaled = [0.5, 1.0]")))
    assert spec.scale == "opnorm" and spec.sweep_dims() == ["eps_scaled"]
    assert spec.axes["tensor.p"].scalar == 3
    assert spec.data["tensor"]["basis"] == "identity"
    bad = BASE.replace("sigma = 0.01", 'eps = 0.1\nscale = "sigma"')
    with pytest.raises(SpecError, match="'noise.scale'"):
        load_spec(write(tmp_path, bad))


def test_method_specific_options(tmp_path):
    text = BASE.replace(
        'method = "sshopm"',
        'method = ["power", "sshopm"]\n[solver.options.sshopm]\nn_starts = 4',
    )
    spec = load_spec(write(tmp_path, text))
    from sroa_dist.sweep.spec import solver_options

    assert solver_options(spec.data, "sshopm") == {"n_starts": 4}
    assert solver_options(spec.data, "power") == {}


def test_json_round_trip_is_identity():
    spec = load_spec(ROOT / "sweeps/smoke/nscaling.toml")
    import json

    again = spec_from_dict(json.loads(spec.to_json()))
    assert again.data == spec.data
    assert again.instance_settings() == spec.instance_settings()
