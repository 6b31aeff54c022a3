"""Sweep spec loading and validation: every error names the file, the key and the reason."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from sroa_dist.errors import with_hint
from sroa_dist.sweep import load_spec
from sroa_dist.sweep.kinds import spec_from_dict
from sroa_dist.sweep.spec.fields import SpecError, expand_range, round_sig
from sroa_dist.sweep.spec.load import parse_override
from tests.support.helpers import ROOT

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
        (('method = "sshopm"', 'method = "newton"'), "solver.method", "or an import path"),
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
    assert reason in with_hint(info.value)  # the reason is the message's or the hint's
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
    from sroa_dist.sweep.spec.base import solver_options

    assert solver_options(spec.data, "sshopm") == {"n_starts": 4}
    assert solver_options(spec.data, "power") == {}


def test_typed_sections_and_derived_properties(tmp_path):
    """The package reads a spec through typed, frozen sections; each is the resolved dict."""
    import dataclasses

    from sroa_dist.methods.cost import resolve_norm_method
    from sroa_dist.sweep.spec.base import default_store

    text = BASE.replace('method = "sshopm"', 'method = ["power", "sshopm"]\nsteps = 2')
    text = text.replace("n = 4", "n = [4, 6]\nrank = [2, 3]").replace("sigma = 0.01", "eps = 0.1")
    spec = load_spec(write(tmp_path, text), ["solver.options.n_starts=5"])
    for section in ("tensor", "noise", "solver", "output"):
        view = getattr(spec, section)
        assert dataclasses.asdict(view) == spec.data[section]
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(view, section, None)
    assert spec.kind == "tensor" and spec.noise.level_name == "eps"
    assert spec.noise_level_key == "noise.eps" and spec.scale == "opnorm"
    assert spec.solver.methods == ("power", "sshopm") and spec.output.vectors is False
    assert spec.ranks == (2, 3) and spec.n_steps == 2 and spec.steps_for(3) == 2
    assert spec.options_for("power") == {"n_starts": 5}
    assert spec.options_for("sshopm", norm=True) == {"n_starts": 5}  # norm: the solver's own
    assert spec.options_for("certified", norm=True) == {}
    assert spec.norm_method_for("power", 6, 3) == resolve_norm_method("power", 6, 3, None)
    assert spec.setting("tensor.n", {"n": 6}) == 6 and spec.setting("tensor.p", {}) == 3
    assert spec.setting("noise.sigma", {}) is None
    dims, coords = spec.instance_grid()
    assert dims == ("n", "rank", "method", "replicate")
    assert coords == ((4, 6), (2, 3), ("power", "sshopm"), (0, 1))
    assert spec.default_store == default_store("t") == str(Path("results") / "t.zarr")
    # Full rank by default: the ranks are the n values.
    full = load_spec(write(tmp_path, BASE.replace("n = 4", "n = [4, 5]")))
    assert full.ranks == (4, 5) and full.n_steps == 5 and full.steps_for(4) == 4


def test_json_round_trip_is_identity():
    spec = load_spec(ROOT / "sweeps/smoke/nscaling.toml")
    import json

    again = spec_from_dict(json.loads(spec.to_json()))
    assert again.data == spec.data
    assert again.instance_settings() == spec.instance_settings()


# ---- issue 8: everything validate accepts runs ---------------------------------------------


@pytest.mark.parametrize(
    ("setting", "key", "reason"),
    [
        ('tensor.lambdas={dist="uniform", low=1, high=1}', "tensor.lambdas", "low < high"),
        ("tensor.lambdas=0", "tensor.lambdas", "non-zero"),
        ("tensor.lambdas=[1, 0, 1, 1]", "tensor.lambdas", "non-zero"),
        ('tensor.lambdas={dist="cauchy", low=1, high=2}', "tensor.lambdas", "uniform"),
        ("solver.options.n_starts=0", "solver.options.n_starts", "an integer >= 1"),
        ("solver.options.n_starts=2.5", "solver.options.n_starts", "an integer >= 1"),
        ("solver.options.shift=bogus", "solver.options.shift", "'adaptive', 'monotone'"),
        ("solver.options.gap_tol=-1", "solver.options.gap_tol", "a finite number >= 0"),
        ("solver.options.sshopm.tol=-1", "solver.options.sshopm.tol", "a finite number >= 0"),
        ("solver.norm_options.n_starts=0", "solver.norm_options.n_starts", "an integer >= 1"),
        ("solver.options.polish=1", "solver.options.polish", "true or false"),
        ("replicates=1000000000", "replicates", "<= 1,000,000"),
        ("noise.sigma={start=1e-300, stop=1e300, factor=1.0000001}", "noise.sigma", "at most"),
        ("noise.sigma={start=0.0, stop=1e300, step=1e-300}", "noise.sigma", "at most"),
        ("noise.sigma={start=0.0, stop=1.0, step=1e-8}", "noise.sigma", "at most"),
        ("tensor.n={start=2, stop=9000000000, step=1}", "tensor.n", "at most"),
        ("noise.sigma=1e300", "noise.sigma", "between 0 and 1e+150"),
        ("noise.sigma=-0.1", "noise.sigma", "between 0 and 1e+150"),
        ("tensor.lambdas=1e300", "tensor.lambdas", "at most 1e+150"),
        ("tensor.lambdas=[1, 0.5]", "tensor.lambdas", "expected a scalar or 4 values"),
    ],
)
def test_settings_that_would_fail_every_block_are_refused(tmp_path, setting, key, reason):
    """The issue's table: each of these validated, then every block failed (or validation
    raised a traceback). Now each is a SpecError naming --set and the key."""
    path = write(tmp_path, BASE)
    with pytest.raises(SpecError) as info:
        load_spec(path, [setting])
    msg = str(info.value)
    assert info.value.key == key
    assert msg.startswith(f"--set {setting}: key '{key}'")
    assert reason in with_hint(info.value)


def test_a_list_of_lambdas_needs_one_rank_of_its_length(tmp_path):
    text = BASE.replace("n = 4", "n = 4\nlambdas = [1, 0.5]")
    assert load_spec(write(tmp_path, text), ["tensor.rank=2"]).ranks == (2,)
    for rank in ("[1, 2]", "[2, 3]", "3"):
        with pytest.raises(SpecError, match="(?s)'tensor.lambdas'.*single rank") as info:
            load_spec(write(tmp_path, text), [f"tensor.rank={rank}"])
        assert "expected a scalar or" in with_hint(info.value)  # the core's own message


def test_options_are_checked_for_every_method_and_its_norm_method(tmp_path):
    text = BASE.replace('method = "sshopm"', 'method = ["power", "sos"]\nnorm_method = "sos"')
    with pytest.raises(SpecError, match="'solver.options.sos.order'.*ceil"):
        load_spec(write(tmp_path, text + "[solver.options.sos]\norder = 1\n"))
    # sos cannot index the moments of n = 30; certified falls back and is accepted
    with pytest.raises(SpecError, match="(?s)'solver.method'.*cannot index n = 30"):
        load_spec(write(tmp_path, BASE.replace('"sshopm"', '"sos"')), ["tensor.n=30"])


def test_range_length_is_shared_capped_and_overflow_safe():
    from sroa_dist.sweep.spec.fields import MAX_AXIS_LEN, range_length

    assert range_length({"start": 0.0001, "stop": 0.2, "step": 0.0001}) == 2000
    assert range_length({"start": 1.0, "stop": 1000.0, "factor": 10.0}) == 4
    assert range_length({"start": 1e-300, "stop": 1e300, "factor": 10.0}) == 601
    assert range_length({"start": 0, "stop": MAX_AXIS_LEN - 1, "step": 1}) == MAX_AXIS_LEN
    for table in (
        {"start": 0, "stop": MAX_AXIS_LEN, "step": 1},
        {"start": -1.7e308, "stop": 1.7e308, "step": 1.0},  # stop - start overflows
        {"start": 5e-324, "stop": 1.7e308, "factor": 1.0000000000000002},
    ):
        with pytest.raises(ValueError, match="more than the cap"):
            range_length(table)


@pytest.mark.slow
def test_validation_never_materialises_the_grid(tmp_path):
    """A 10^12-instance grid (10^5 σ values × 10 sizes × 10^6 replicates) validates or is refused
    without enumerating instances: validation allocates O(axes) memory, not O(instances). (The
    σ axis was 10^6 values, whose per-value expansion under tracemalloc was most of the test's
    time; the grid is as large.)"""
    import tracemalloc

    from sroa_dist.sweep.kinds import make_layout

    path = write(tmp_path, BASE)
    tracemalloc.start()
    try:
        spec = load_spec(
            path,
            [
                "noise.sigma={start=1e-5, stop=1.0, step=1e-5}",
                "tensor.n=[4, 5, 6, 7, 8, 9, 10, 11, 12, 13]",
                "replicates=1000000",
            ],
        )
        with pytest.raises(SpecError, match="'replicates'.*result blocks"):
            make_layout(spec)
        layout = make_layout(spec, memory_limit=float("inf"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert layout.n_instances == 10**12 and layout.n_blocks <= 10_000
    assert peak < 1_000 * 2**20  # axes of 10^5, 10 and 10^6 coordinates, not 10^12 of anything


# A small but real spec space for the property below: mostly valid values, with invalid
# corners (about one in six per key) so that refusals are exercised too.
_LAMBDAS = st.one_of(
    st.sampled_from([1.0, 1.0, -2.0, 0.5, [1.0, 2.0], 0.0]),
    st.builds(
        lambda a, b: {"dist": "uniform", "low": a, "high": b},
        st.sampled_from([0.5, 1.0]),
        st.sampled_from([1.0, 2.0, 3.0]),
    ),
)
_OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "n_starts": st.sampled_from([1, 2, 3, 4, 8, 0, 2.5, True]),
        "shift": st.sampled_from(["monotone", "adaptive", 0.5, 0.0, 2.0, "bogus"]),
        "gap_tol": st.sampled_from([0.0, 1e-6, 1e-3, 1.0, -1.0]),
        "max_iter": st.sampled_from([0, 1, 5, 50, -1]),
        "tol": st.sampled_from([0.0, 1e-5, 1e-3, 1e-8, float("nan")]),
        "polish": st.sampled_from([True, False, True, False, 0]),
        "n_iter": st.sampled_from([0, 1, 3, 10, -2]),
    },
)
_SPEC = st.fixed_dictionaries(
    {
        "name": st.just("prop"),
        "seed": st.integers(0, 3),
        "replicates": st.integers(1, 2),
        "tensor": st.fixed_dictionaries(
            {"n": st.integers(2, 5), "p": st.sampled_from([3, 4])},
            optional={
                "rank": st.integers(1, 3),
                "basis": st.sampled_from(["identity", "random", "random", "hadamard"]),
                "lambdas": _LAMBDAS,
            },
        ),
        "noise": st.one_of(
            st.fixed_dictionaries(
                {
                    "model": st.sampled_from(["gaussian", "binary", "uniform", "cauchy"]),
                    "sigma": st.sampled_from([0.0, 0.01, 0.3, 0.05, 1.0, -0.1]),
                }
            ),
            st.fixed_dictionaries(
                {
                    "model": st.sampled_from(["gaussian", "binary"]),
                    "eps_scaled": st.sampled_from([0.0, 0.2, 1.0]),
                }
            ),
            st.fixed_dictionaries(
                {"model": st.just("uniform"), "eps": st.sampled_from([0.0, 0.1, 2.0])}
            ),
        ),
        "solver": st.fixed_dictionaries(
            {"method": st.sampled_from(["certified", "sos", "sshopm", "power", "newton"])},
            optional={
                "options": _OPTIONS,
                "steps": st.integers(1, 3),
                "norm_method": st.sampled_from(["certified", "sshopm", "power", "sos"]),
            },
        ),
    }
)


def _issue_case(**edits):
    """The issue's failing settings on a small valid spec, as explicit examples."""
    raw = {
        "name": "prop",
        "tensor": {"n": 3, "p": 3},
        "noise": {"model": "gaussian", "sigma": 0.01},
        "solver": {"method": "sshopm"},
    }
    for key, value in edits.items():
        sect, leaf = key.split("__")
        raw[sect][leaf] = value
    return raw


@settings(max_examples=150, deadline=None)
@given(raw=_SPEC)
@example(raw=_issue_case(tensor__lambdas={"dist": "uniform", "low": 1, "high": 1}))
@example(raw=_issue_case(tensor__lambdas=0))
@example(raw=_issue_case(solver__options={"n_starts": 0}))
@example(raw=_issue_case(solver__options={"n_starts": 2.5}))
@example(raw=_issue_case(solver__options={"shift": "bogus"}))
@example(raw=_issue_case(solver__options={"gap_tol": -1}))
@example(raw=_issue_case(solver__method="sos", tensor__n=30))
@example(raw=_issue_case(tensor__n=2000))
@pytest.mark.slow
def test_every_spec_that_validates_runs_one_instance(raw):
    """The contract of ``validate``: a spec it accepts computes, here one instance of the first
    block through the worker kernel, without error."""
    from sroa_dist.sweep.kinds import make_layout
    from sroa_dist.sweep.layout import block_task
    from sroa_dist.sweep.run.worker import compute_block

    try:
        spec = spec_from_dict(raw)
        layout = make_layout(spec, block_size=1)
    except SpecError as exc:
        event(f"refused: {exc.key}")
        return  # refused with a named key: fine
    event("accepted")
    out = compute_block(block_task(spec, layout, 0))
    assert out.n_instances == 1
    assert np.all(np.isfinite(out.data["lam_hat"][..., : spec.data["solver"]["steps"] or 1]))


@pytest.mark.slow
def test_a_run_without_store_writes_the_specs_default_store(tmp_path):
    """``sroa-dist run`` without ``--store`` writes ``spec.default_store`` (relative to the
    current folder; its embedded cluster's workers share that folder)."""
    import subprocess
    import sys

    from sroa_dist.sweep import open_results
    from tests.support.helpers import cli_env

    spec_path = write(tmp_path, BASE)
    spec = load_spec(spec_path, ["replicates=1"])
    args = ["run", str(spec_path), "--set", "replicates=1", "--workers", "1"]
    subprocess.run(
        [sys.executable, "-m", "sroa_dist.cli", *args],
        cwd=tmp_path,
        env=cli_env(),
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert spec.default_store == str(Path("results") / "t.zarr")
    ds = open_results(tmp_path / spec.default_store)
    assert bool(ds["done"].all()) and ds.sizes["replicate"] == 1
