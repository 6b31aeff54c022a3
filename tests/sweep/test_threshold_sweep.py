"""The threshold sweep kind (``sroa_dist.sweep.kinds.threshold``): spec errors name their key,
a sweep on real worker processes equals serial ``find_threshold`` bit for bit, a run resumes
bit for bit after SIGKILL of the runner or of a worker, and every shipped threshold spec
validates (with a cost estimate) and runs shrunk."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import threading
import time

import numpy as np
import pytest

from sroa_dist import find_threshold
from sroa_dist.studies.first_crossing import max_evals
from sroa_dist.sweep import load_spec, open_results, run_sweep
from sroa_dist.sweep.kinds import KINDS, kind_for_raw, make_layout, spec_from_dict
from sroa_dist.sweep.kinds.threshold import THRESHOLD
from sroa_dist.sweep.layout import stable_hash32
from sroa_dist.sweep.run.cluster import connect
from sroa_dist.sweep.spec.fields import SpecError
from sroa_dist.sweep.store.prepare import read_done
from tests.support.helpers import (
    ROOT,
    assert_same_bits,
    cube_values,
    run_cli,
    sigkill_run_mid_sweep,
    with_dotted,
)

SWEEPS = ROOT / "sweeps"
SHIPPED = sorted(SWEEPS.glob("threshold-*.toml"))


def _small(**over):
    """A threshold spec of a few cheap searches (p = 3, n = 4-5, two families)."""
    raw = {
        "name": "thr-small",
        "seed": 5,
        "replicates": 2,
        "tensor": {"n": [4, 5], "p": 3},
        "noise": {
            "model": ["coherent-tilt", "gaussian"],
            "params": {"coherent-tilt": {"component": "smallest"}},
        },
        "solver": {"method": "sshopm"},
        "threshold": {"criterion": "value", "c": 0.5, "eps_range": [0.05, 1.5], "rtol": 0.03},
    }
    return with_dotted(raw, over)


def test_the_kind_is_registered_and_marked_by_its_table():
    assert "threshold" in KINDS
    assert kind_for_raw(_small()).name == "threshold"
    spec = spec_from_dict(_small())
    assert spec.kind == "threshold" and spec.sweep_dims() == ["noise", "n"]
    assert spec.threshold.level == 0.5


@pytest.mark.parametrize(
    ("key", "value", "blamed"),
    [
        ("threshold.criterion", "nope", "threshold.criterion"),
        ("threshold.radius", 0.3, "threshold.radius"),  # radius belongs to 'recovery'
        ("threshold.c", -1.0, "threshold.c"),
        ("threshold.eps_range", [1.0, 0.5], "threshold.eps_range"),
        ("threshold.eps_range", [0.1, 0.5, 1.0], "threshold.eps_range"),
        ("threshold.rtol", 0.5, "threshold.rtol"),
        ("threshold.k_section", 0, "threshold.k_section"),
        ("threshold.bogus", 1, "threshold.bogus"),
        ("solver.options", {"nope": 4}, "solver.options.nope"),
        ("solver.options", {"sshopm": {"n_starts": 0}}, "solver.options.sshopm.n_starts"),
        ("solver.norm_options", {"n_starts": 4}, "solver.norm_options"),
        ("solver.steps", 2, "solver.steps"),
        ("solver.method", "nope", "solver.method"),
        ("noise.model", "nope", "noise.model"),
        ("tensor.n", 1, "tensor.n"),
        ("tensor.p", 2, "tensor.p"),
        ("tensor.basis", "haar", "tensor.basis"),  # random or identity
        ("tensor.weights", "spread", "tensor.weights"),
        ("tensor.lambda_min", 0.5, "tensor.lambda_min"),  # a level without a profile
        ("threshold.matrix_free", True, "threshold.matrix_free"),  # the gaussian has no form
    ],
)
def test_spec_errors_name_their_key(key, value, blamed):
    with pytest.raises(SpecError) as info:
        spec_from_dict(_small(**{key: value}), source="s.toml")
    assert info.value.key == blamed and "s.toml" in str(info.value)


def test_method_options_reach_the_search_and_are_an_instance_setting():
    """``[solver.options.power] budget = "aghkt"`` (issue 35: power with the AGHKT budget
    against global steps): the instance's search is find_threshold(options=...)'s bit for bit,
    another method of the axis gets none, and a store refuses a spec with other options."""
    raw = _small(
        **{"noise.model": "attractor", "tensor.n": [4], "solver.method": ["power", "sshopm"]}
    )
    raw["replicates"] = 1
    raw["noise"].pop("params")
    raw["threshold"].update({"global_check": False, "redo": False, "rtol": 0.1})
    plain = spec_from_dict(raw)
    spec = spec_from_dict(
        {**raw, "solver": {**raw["solver"], "options": {"power": {"budget": "aghkt"}}}}
    )
    assert plain.instance_settings() != spec.instance_settings()
    at = {"noise": "attractor", "n": 4}
    power = THRESHOLD.instance(spec, spec.settings_at({**at, "method": "power"}), 0)
    sshopm = THRESHOLD.instance(spec, spec.settings_at({**at, "method": "sshopm"}), 0)
    assert dict(power.options) == {"budget": "aghkt"} and dict(sshopm.options) == {}
    got = power.run()
    want = find_threshold(
        4,
        3,
        family="attractor",
        method="power",
        options={"budget": "aghkt"},
        c=0.5,
        eps_range=(0.05, 1.5),
        rtol=0.1,
        global_check=False,
        redo=False,
        rng=np.random.SeedSequence(power.seed, spawn_key=power.spawn_key),
    )
    assert got.bracket == want.bracket and got.n_evals == want.n_evals
    assert [e.metric for e in got.trace] == [e.metric for e in want.trace]


def test_solver_options_reach_every_search_step_and_are_part_of_the_instance(tmp_path, client):
    """``[solver.options]`` pass through to the rank-one method of the search (a sweep on
    workers equals find_threshold called with them), are recorded in the store's attrs, and a
    store refuses to resume with other options; an option a stated older revision fixes is
    refused naming its key."""
    raw = _small(
        **{
            "tensor.n": 4,
            "noise.model": "coherent-tilt",
            "replicates": 1,
            "solver.options": {"sshopm": {"n_starts": 3, "max_iter": 200}},
        }
    )
    spec = spec_from_dict(raw)
    assert spec.own_options("sshopm") == {"n_starts": 3, "max_iter": 200}
    res = run_sweep(raw, tmp_path / "o.zarr", client=client)
    assert res.complete
    ds = open_results(tmp_path / "o.zarr").load()
    assert json.loads(ds.attrs["setting_solver_options"]) == {
        "sshopm": {"max_iter": 200, "n_starts": 3}
    }
    key = (stable_hash32("noise", "coherent-tilt"), stable_hash32("n", 4), stable_hash32("p", 3), 0)
    want = find_threshold(
        4,
        3,
        family="coherent-tilt",
        criterion="value",
        c=0.5,
        method="sshopm",
        options={"n_starts": 3, "max_iter": 200},
        eps_range=(0.05, 1.5),
        rtol=0.03,
        params={"component": "smallest"},
        rng=np.random.SeedSequence(5, spawn_key=key),
    )
    got = ds.sel(replicate=0)  # one search: no swept axis
    assert np.float64(got["eps_star"]).tobytes() == np.float64(want.eps_star).tobytes()
    k = want.n_evals
    metric = np.array([e.metric for e in want.trace], dtype=float)
    assert got["trace_metric"].values[:k].tobytes() == metric.tobytes()
    # Another option value is another instance: resuming the store with it is refused.
    other = json.loads(json.dumps(raw))
    other["solver"]["options"]["sshopm"]["n_starts"] = 4
    with pytest.raises(ValueError, match=r"solver\.options"):
        run_sweep(other, tmp_path / "o.zarr", client=client)
    # Without options the attrs have no such key (stores made before stay as they were).
    plain = KINDS["threshold"].provenance(spec_from_dict(_small()))
    assert "setting_solver_options" not in plain


def test_an_option_a_stated_revision_fixes_is_refused_naming_its_key():
    raw = _small(**{"solver.revisions": {"sshopm": 4}, "solver.options": {"engine": "dense"}})
    with pytest.raises(SpecError, match="revision 4") as info:
        spec_from_dict(raw, source="s.toml")
    assert info.value.key == "solver.options.engine"


def test_theorem_takes_c_and_radius_and_recovery_takes_a_radius():
    spec = spec_from_dict(_small(**{"threshold.criterion": "theorem", "threshold.radius": 0.3}))
    assert spec.threshold.level is None
    assert (spec.threshold.c, spec.threshold.radius) == (0.5, 0.3)
    problem = THRESHOLD.instance(spec, spec.settings_at({"noise": "gaussian", "n": 4}), 0)
    assert (problem.criterion, problem.c, problem.radius) == ("theorem", 0.5, 0.3)
    bare = spec_from_dict(
        _small(**{"threshold.criterion": "theorem", "threshold.c": None}), source="x"
    )
    assert (bare.threshold.c, bare.threshold.radius) == (None, None)  # Theorem 3.1's own
    with pytest.raises(SpecError, match="threshold.radius"):
        spec_from_dict(_small(**{"threshold.criterion": "theorem", "threshold.radius": -1.0}))
    rec = _small(**{"threshold.criterion": "recovery", "threshold.radius": 0.3})
    del rec["threshold"]["c"]
    assert spec_from_dict(rec).threshold.level == 0.3
    with pytest.raises(SpecError, match="threshold.c"):
        spec_from_dict(_small(**{"threshold.criterion": "recovery", "threshold.radius": 0.3}))


def test_a_weight_profile_is_exclusive_with_lambdas_and_its_level_is_checked():
    for over, blamed in (
        ({"tensor.weights": "last", "tensor.lambdas": 1.0}, "tensor.weights"),
        ({"tensor.weights": "linear", "tensor.lambda_min": 1.5}, "tensor.lambda_min"),
        ({"tensor.weights": "linear", "tensor.lambda_min": 0.0}, "tensor.lambda_min"),
    ):
        with pytest.raises(SpecError) as info:
            spec_from_dict(_small(**over), source="s.toml")
        assert info.value.key == blamed


def test_weight_profiles_give_the_weights_of_the_lambda_min_study():
    """``last``: every weight 1 but the last (lambda_min; 0.95 by default, find_threshold's
    default weights); ``linear``: evenly from 1 down to lambda_min. The weights are not in the
    seed, so every profile searches the same draws, and the default profile's search is the
    one of a spec without weights, bit for bit."""
    from sroa_dist.studies.threshold import default_lambdas

    tilt = {"noise.model": "coherent-tilt", "tensor.n": [5], "replicates": 1}
    plain = spec_from_dict(_small(**tilt))
    last = spec_from_dict(_small(**tilt, **{"tensor.weights": "last"}))
    target = spec_from_dict(_small(**tilt, **{"tensor.weights": "last", "tensor.lambda_min": 0.5}))
    linear = spec_from_dict(
        _small(**tilt, **{"tensor.weights": "linear", "tensor.lambda_min": 0.5})
    )
    assert last.lambdas_at(5) == list(default_lambdas(5))
    assert target.lambdas_at(5) == [1.0, 1.0, 1.0, 1.0, 0.5]
    assert linear.lambdas_at(5) == [1.0, 0.875, 0.75, 0.625, 0.5]
    assert plain.weight_profile is None and linear.weight_profile == ("linear", 0.5)
    at = {"noise": "coherent-tilt", "n": 5}
    problems = [THRESHOLD.instance(s, s.settings_at(at), 0) for s in (plain, last, linear)]
    assert len({(p.seed, p.spawn_key) for p in problems}) == 1  # the same draws
    a, b, c = (p.run() for p in problems)
    assert (a.bracket, a.n_evals) == (b.bracket, b.n_evals)
    assert [e.metric for e in a.trace] == [e.metric for e in b.trace]
    want = find_threshold(
        5,
        3,
        lambdas=[1.0, 0.875, 0.75, 0.625, 0.5],
        c=0.5,
        eps_range=(0.05, 1.5),
        rtol=0.03,
        params={"component": "smallest"},
        rng=np.random.SeedSequence(problems[2].seed, spawn_key=problems[2].spawn_key),
    )
    assert c.bracket == want.bracket and c.bracket != a.bracket
    assert json.loads(THRESHOLD.provenance(linear)["setting_weights"]) == ["linear", 0.5]
    assert "setting_weights" not in THRESHOLD.provenance(plain)


def test_solver_options_reach_the_search_and_are_an_instance_setting():
    """``[solver.options]`` is find_threshold's ``options=`` for the method it names (the
    attractor study's power method with the AGHKT budget): the
    search is find_threshold's with those options bit for bit, it differs from the defaults',
    and a store made with other options refuses to resume (options are instance settings)."""
    aghkt = {"budget": "aghkt", "noise_level": 0.05}
    raw = _small(**{"noise.model": "attractor", "tensor.n": [5], "solver.method": "power"})
    raw["replicates"] = 1
    raw["noise"] = {"model": "attractor"}
    plain = spec_from_dict(raw)
    tuned = spec_from_dict({**raw, "solver": {"method": "power", "options": {"power": aghkt}}})
    assert plain.instance_settings() != tuned.instance_settings()
    at = {"noise": "attractor", "n": 5}
    problem = THRESHOLD.instance(tuned, tuned.settings_at(at), 0)
    assert dict(problem.options) == aghkt
    assert dict(THRESHOLD.instance(plain, plain.settings_at(at), 0).options) == {}
    got = problem.run()
    want = find_threshold(
        5,
        3,
        family="attractor",
        method="power",
        options=aghkt,
        c=0.5,
        eps_range=(0.05, 1.5),
        rtol=0.03,
        rng=np.random.SeedSequence(problem.seed, spawn_key=problem.spawn_key),
    )
    assert got.bracket == want.bracket and got.n_evals == want.n_evals
    assert [e.metric for e in got.trace] == [e.metric for e in want.trace]
    default = THRESHOLD.instance(plain, plain.settings_at(at), 0).run()
    assert [e.metric for e in default.trace] != [e.metric for e in got.trace]


def test_the_cost_of_a_large_n_search_is_the_engines_measured_growth():
    """From LARGE_N on, a matrix-free search by a method whose steps run the large-n engine is
    priced by the study evaluations' fitted law (n^LARGE_N_EXPONENT per SROA, not the dense
    eigensolves' n^4): the p = 3 asymptote spec (n = 512-2048) is hours, not the 791 h of the
    n^4 model; n below LARGE_N keeps the old model; power's steps (its own iterations, whose
    cost its budget sets) are priced per start, iteration and coordinate."""
    from sroa_dist.methods import LARGE_N, aghkt_budget
    from sroa_dist.sweep.kinds.threshold import (
        LARGE_N_CHECKED_SECONDS,
        LARGE_N_EXPONENT,
        MATRIX_FREE_SROA_SECONDS,
        POWER_OPERATOR_SECONDS,
        STEP_FLOOR,
        large_n_sroa_seconds,
        power_operator_sroa_seconds,
        search_cost,
        threshold_mean_cost,
    )

    def cost(method, n, p=3, checked=True):
        return search_cost(method, n, p, 10, "coherent-tilt", checked, matrix_free=True)

    assert cost("sshopm", 512) == pytest.approx(10 * LARGE_N_CHECKED_SECONDS)
    per_doubling = 2**LARGE_N_EXPONENT
    assert cost("sshopm", 1024) == pytest.approx(per_doubling * cost("sshopm", 512))
    assert cost("sshopm", 1024, 4) == pytest.approx(1.3 * cost("sshopm", 1024))
    assert cost("sshopm", 512, checked=False) < cost("sshopm", 512)
    assert large_n_sroa_seconds(2048, 3, True) == pytest.approx(
        per_doubling**2 * LARGE_N_CHECKED_SECONDS
    )
    # power: its own iterations priced per start, iteration and coordinate, at its budget
    a, b = POWER_OPERATOR_SECONDS
    at_defaults = 20 * 30 * 1024**2 * (2 * 1024 * a + b)
    assert cost("power", 1024) == pytest.approx(10 * 2.0 * at_defaults)
    assert power_operator_sroa_seconds(1024) == pytest.approx(at_defaults)
    L, N = aghkt_budget(1024, 0.12)
    aghkt = {"budget": "aghkt", "noise_level": 0.12}
    assert power_operator_sroa_seconds(1024, aghkt) == pytest.approx(at_defaults * L * N / 600)
    priced = search_cost("power", 1024, 3, 10, "attractor", False, True, aghkt)
    assert priced == pytest.approx(10 * at_defaults * L * N / 600)
    small = LARGE_N // 2  # the dense engine's model, or the per-step floor
    dense = max(MATRIX_FREE_SROA_SECONDS * (small / 200) ** 4, small * STEP_FLOOR)
    assert cost("sshopm", small) == pytest.approx(10 * 2.0 * dense)
    spec = load_spec(ROOT / "sweeps" / "studies" / "asymptote-p3-c0.5.toml")
    assert 3600 < threshold_mean_cost(spec) < 24 * 3600  # per search; the n^4 model: ~10^6 s


def test_power_on_an_operator_is_priced_by_its_own_measured_scale():
    """``power``'s own iterations on an operator take the scale measured on its whole AGHKT
    SROAs at n = 512 (POWER_OPERATOR_SCALE), not the SS-HOPM searches' MATRIX_FREE_SCALE, which
    priced that run at 0.39x its CPU: the committed run's spec (its scan range the global
    bracket, two evaluations in one round) is priced within 1.5x of the 4093 CPU-s it recorded."""
    from sroa_dist.sweep.kinds.threshold import (
        MATRIX_FREE_SCALE,
        POWER_OPERATOR_SCALE,
        evaluation_scale,
        threshold_mean_cost,
    )

    aghkt = {"budget": "aghkt", "noise_level": 0.05}
    assert evaluation_scale("power", 512, 3, "attractor", None, aghkt) == POWER_OPERATOR_SCALE
    assert evaluation_scale("sshopm", 64, 4, "coherent-tilt", True) == MATRIX_FREE_SCALE
    spec = load_spec(
        ROOT / "sweeps" / "studies" / "asymptote-attractor-power.toml",
        overrides={
            "tensor.n": [512],
            "threshold.eps_range": [0.30294082237329056, 0.30633971267322463],
            "threshold.k_section": 2,
        },
    )
    assert 4093 / 1.5 < threshold_mean_cost(spec) < 4093 * 1.5


def test_matrix_free_is_an_instance_setting_the_search_and_the_estimates_follow():
    """``threshold.matrix_free = true`` builds the tilt as a structured operator even where
    find_threshold's rule would build it densely (n = 5, p = 6 here): the search is
    find_threshold(matrix_free=True)'s, setting_search records it, and the memory estimate is
    the matrix-free one (no dense n^p tensor)."""
    from sroa_dist.sweep.kinds.threshold import search_cost

    raw = _small(**{"noise.model": "coherent-tilt", "tensor.n": [5], "tensor.p": 6})
    raw["replicates"] = 1
    dense = spec_from_dict(raw)
    free = spec_from_dict({**raw, "threshold": {**raw["threshold"], "matrix_free": True}})
    assert dense.matrix_free is None and free.matrix_free is True
    assert json.loads(THRESHOLD.provenance(free)["setting_search"])["matrix_free"] is True
    assert "matrix_free" not in json.loads(THRESHOLD.provenance(dense)["setting_search"])
    assert dense.instance_settings() != free.instance_settings()  # a store refuses the other
    mf = search_cost("sshopm", 64, 6, 10, "coherent-tilt", matrix_free=True)
    assert mf < search_cost("sshopm", 64, 6, 10, "coherent-tilt", matrix_free=False)
    at = {"noise": "coherent-tilt", "n": 5}
    problem = THRESHOLD.instance(free, free.settings_at(at), 0)
    got = problem.run()
    want = find_threshold(
        5,
        6,
        c=0.5,
        eps_range=(0.05, 1.5),
        rtol=0.03,
        params={"component": "smallest"},
        matrix_free=True,
        rng=np.random.SeedSequence(problem.seed, spawn_key=problem.spawn_key),
    )
    assert got.bracket == want.bracket and got.n_evals == want.n_evals
    assert [e.metric for e in got.trace] == [e.metric for e in want.trace]


def test_trace_length_bounds_every_search():
    """max_evals is the cube's trace length: a search at the range's worst case fits it."""
    rng, rtol = (0.02, 1.5), 0.01
    bound = max_evals(rng, rtol)
    # every scan point passes but the last, then the longest bisection: the worst case
    k = math.floor(math.log(1.5 / 0.02) / math.log(1.25)) + 2
    assert bound >= k + 6 + math.ceil(math.log2(math.log(1.25) / math.log(1.01)))


def test_a_search_that_cannot_fit_in_memory_is_refused_naming_tensor_n():
    spec = spec_from_dict(_small(**{"tensor.n": [4, 200], "tensor.p": 5}))
    with pytest.raises(SpecError) as info:
        make_layout(spec, memory_limit=8 * 2**30)
    assert info.value.key == "tensor.n" and "n = 200" in str(info.value)


def _serial(spec_raw, coords):
    """find_threshold called directly, seeded by the documented contract."""
    t = spec_raw["threshold"]
    noise, n, rep = coords
    key = (stable_hash32("noise", noise), stable_hash32("n", n), stable_hash32("p", 3), rep)
    params = spec_raw["noise"]["params"].get(noise, {})
    return find_threshold(
        n,
        3,
        family=noise,
        criterion=t["criterion"],
        c=t["c"],
        method="sshopm",
        eps_range=tuple(t["eps_range"]),
        rtol=t["rtol"],
        params=params,
        rng=np.random.SeedSequence(spec_raw["seed"], spawn_key=key),
    )


@pytest.mark.slow
def test_cluster_sweep_equals_serial_find_threshold_bit_for_bit(tmp_path, client):
    raw = _small()
    res = run_sweep(raw, tmp_path / "t.zarr", client=client)
    assert res.complete and res.n_blocks == res.n_instances == 8  # one search per task
    ds = open_results(tmp_path / "t.zarr").load()
    for noise in ds.noise.values:
        for n in ds.n.values:
            for rep in ds.replicate.values:
                want = _serial(raw, (str(noise), int(n), int(rep)))
                got = ds.sel(noise=noise, n=n, replicate=rep)
                k = want.n_evals
                assert float(got.n_evals) == k
                for name, value in (
                    ("eps_star", want.eps_star),
                    ("eps_lo", want.bracket[0]),
                    ("eps_hi", want.bracket[1]),
                    ("certified_fraction", want.certified_fraction),
                    ("artefacts", want.artefacts),
                    ("scan_resolution", want.scan_resolution),
                ):
                    assert np.float64(got[name]).tobytes() == np.float64(value).tobytes(), name
                assert bool(got.reached) == want.reached
                assert bool(got.non_monotone) == want.non_monotone
                assert np.isnan(got.certified_ends)  # certify_ends was not asked for
                for var, field_name in (
                    ("trace_eps", "eps"),
                    ("trace_metric", "metric"),
                    ("trace_global_gap", "global_gap"),
                    ("trace_redone", "redone"),
                    ("trace_lam_err", "lam_err"),
                    ("trace_vec_err", "vec_err"),
                ):
                    want_k = np.array([getattr(e, field_name) for e in want.trace], dtype=float)
                    assert got[var].values[:k].tobytes() == want_k.tobytes(), var
                passed = np.array([e.passed for e in want.trace])
                assert (got.trace_passed.values[:k] == passed).all()
                non_global = np.array([e.non_global for e in want.trace])
                assert (got.trace_non_global.values[:k] == non_global).all()
                assert np.isnan(got.trace_eps.values[k:]).all()
    assert ds.reached.any()  # the searches found a crossing: the test compares real brackets
    assert np.isfinite(ds.trace_global_gap).any()  # every local step was checked


#: The variables search revision 2 added to the cube (a store made before has none of them).
NEW_VARIABLES = (
    "artefacts",
    "scan_resolution",
    "certified_ends",
    "trace_global_gap",
    "trace_non_global",
    "trace_redone",
    "trace_lam_err",
    "trace_vec_err",
)


def _as_made_before_search_revisions(store) -> None:
    """Turn a store into the format of one made before search revisions were recorded: no
    new variables, no [threshold] keys for them, no digests (recreated on resume)."""
    import json

    import zarr

    from sroa_dist.sweep.store.integrity import DIGEST

    g = zarr.open_group(str(store), mode="r+")
    for name in (*NEW_VARIABLES, DIGEST):
        del g[name]
    raw = json.loads(g.attrs["spec"])
    for key in ("revision", "global_check", "redo", "scan_phases", "certify_ends"):
        del raw["threshold"][key]
    g.attrs["spec"] = json.dumps(raw, sort_keys=True, separators=(",", ":"))
    attrs = dict(g.attrs)
    attrs.pop("setting_search")
    g.attrs.clear()
    g.attrs.update(attrs)


@pytest.mark.slow
def test_a_store_made_before_search_revisions_resumes_with_revision_1(tmp_path, client):
    """A threshold store from before the global check keeps computing the search it was made
    with (revision 1: no check, one scan phase), in its own format; a new store records
    revision 2, and a spec naming another revision than its store's is refused."""
    import zarr

    from sroa_dist.sweep.store.integrity import forget_blocks
    from sroa_dist.sweep.store.target import StoreIncompatibleError

    old = _small(**{"solver.revisions": {"sshopm": 3}})
    rev1 = {**old, "threshold": {**old["threshold"], "revision": 1}}
    ref = tmp_path / "ref.zarr"
    run_sweep(rev1, ref, client=client)
    legacy = tmp_path / "legacy.zarr"
    shutil.copytree(ref, legacy)  # a copy of a store is the store (one sweep fewer to run)
    _as_made_before_search_revisions(legacy)
    n_blocks = len(read_done(str(legacy)))
    forget_blocks(str(legacy), list(range(n_blocks)))  # every block is computed again
    res = run_sweep(old, legacy, client=client)  # names no search revision
    assert res.action == "resumed" and res.blocks_computed == n_blocks
    want = {k: v for k, v in cube_values(ref).items() if k not in NEW_VARIABLES}
    assert_same_bits(cube_values(legacy), want)
    g = zarr.open_group(str(legacy), mode="r")
    assert not any(name in g for name in NEW_VARIABLES)
    assert "revision" not in json.loads(g.attrs["spec"])["threshold"]  # read as revision 1
    # A new store: revision 2, the check's variables filled in.
    new = tmp_path / "new.zarr"
    run_sweep(old, new, client=client)
    assert (
        json.loads(zarr.open_group(str(new), mode="r").attrs["spec"])["threshold"]["revision"] == 2
    )
    assert np.isfinite(cube_values(new)["trace_global_gap"]).any()
    with pytest.raises(StoreIncompatibleError, match=r"threshold\.revision"):
        run_sweep(rev1, new, client=client)


#: Searches of a few seconds each (p = 3, n = 8 and 9, rtol = 0.005), one per block by default:
#: four blocks on two workers, so that a kill once two are done lands while the other two run.
#: One file for the CLI and the in-process runs alike.
SLOW_SPEC = """\
name = "thr-slow"
seed = 5
replicates = 1
[tensor]
n = [8, 9]
p = 3
[noise]
model = ["coherent-tilt", "gaussian"]
[noise.params.coherent-tilt]
component = "smallest"
[solver]
method = "sshopm"
[threshold]
criterion = "value"
c = 0.5
eps_range = [0.05, 1.5]
rtol = 0.005
"""


@pytest.fixture(scope="module")
def slow_reference(cluster, tmp_path_factory):
    """The cube of an uninterrupted run of SLOW_SPEC, in blocks of two searches (not the
    killed runs' one): computed once per test process for both kill tests to compare with
    (each paid a full run of its own for it before)."""
    from distributed import Client

    spec = tmp_path_factory.mktemp("thr-slow") / "slow.toml"
    spec.write_text(SLOW_SPEC)
    with Client(cluster) as c:
        ref = run_sweep(spec, spec.with_name("ref.zarr"), client=c, block_size=2)
    assert ref.complete and ref.n_blocks == 2
    return cube_values(spec.with_name("ref.zarr"))


@pytest.mark.slow
def test_sigkill_of_a_worker_loses_nothing(tmp_path, slow_reference):
    spec = tmp_path / "slow.toml"
    spec.write_text(SLOW_SPEC)
    store = tmp_path / "k.zarr"
    with connect(workers=2, dashboard_address=":0") as c:
        box = {}
        t = threading.Thread(target=lambda: box.setdefault("res", run_sweep(spec, store, client=c)))
        t.start()
        deadline = time.time() + 120
        while time.time() < deadline:
            if (store / "done" / "zarr.json").exists() and read_done(store).sum() >= 2:
                break
            time.sleep(0.05)
        done_at_kill = int(read_done(store).sum())
        victim = sorted(c.run(os.getpid).values())[0]
        os.kill(victim, signal.SIGKILL)
        t.join(300)
        res = box["res"]
    assert res.complete, res.failed
    assert 2 <= done_at_kill < res.n_blocks  # the kill landed mid-run
    assert_same_bits(cube_values(store), slow_reference)


@pytest.mark.slow
def test_sigkill_of_the_runner_then_resume_equals_uninterrupted(tmp_path, slow_reference):
    spec_path = tmp_path / "slow.toml"
    spec_path.write_text(SLOW_SPEC)
    store = tmp_path / "killed.zarr"
    args = ["run", str(spec_path), "--store", str(store), "--workers", "2"]
    sigkill_run_mid_sweep(args, store)
    done = read_done(store)
    assert 2 <= done.sum() < done.size
    again = run_cli(*args, timeout=1200)
    assert "already done" in again.stdout and read_done(store).all()
    assert_same_bits(cube_values(store), slow_reference)


@pytest.mark.slow
def test_progress_is_shown(tmp_path, client):
    import io

    stream = io.StringIO()
    raw = _small(**{"tensor.n": 4, "replicates": 1})
    assert run_sweep(raw, tmp_path / "p.zarr", client=client, progress=stream).complete
    assert "2/2" in stream.getvalue()


@pytest.mark.slow
def test_theorem_default_radius_certified_ends_one_unchecked_phase_equal_find_threshold(
    tmp_path, client
):
    """The search settings a study may state, through a sweep on worker processes: the
    theorem criterion with a stated c and Theorem 3.1's own radius 20ε/λ_j (the default),
    certify_ends, one scan phase, no global check: the cube equals find_threshold's result
    bit for bit, the bracket ends are certified (1/0, not NaN) and no step was checked."""
    raw = _small(
        **{
            "noise.model": "coherent-tilt",
            "tensor.n": [4],
            "replicates": 1,
            "threshold.criterion": "theorem",
            "threshold.certify_ends": True,
            "threshold.scan_phases": 1,
            "threshold.global_check": False,
            "threshold.redo": False,
        }
    )
    res = run_sweep(raw, tmp_path / "t.zarr", client=client)
    assert res.complete, res.failed
    got = open_results(tmp_path / "t.zarr").load().sel(n=4, replicate=0)
    key = (
        stable_hash32("noise", "coherent-tilt"),
        stable_hash32("n", 4),
        stable_hash32("p", 3),
        0,
    )
    want = find_threshold(
        4,
        3,
        criterion="theorem",
        c=0.5,
        eps_range=(0.05, 1.5),
        rtol=0.03,
        params={"component": "smallest"},
        rng=np.random.SeedSequence(5, spawn_key=key),
        certify_ends=True,
        scan_phases=1,
        global_check=False,
        redo=False,
    )
    assert want.reached, "the search found no crossing: the test would compare nothing"
    assert (float(got.eps_lo), float(got.eps_hi)) == want.bracket
    assert int(got.n_evals) == want.n_evals
    assert want.certified_ends is not None
    assert float(got.certified_ends) == float(want.certified_ends)
    k = want.n_evals
    assert np.isnan(got.trace_global_gap.values[:k]).all()  # no step was checked
    np.testing.assert_array_equal(got.trace_metric.values[:k], [e.metric for e in want.trace])


# --------------------------------------------------------------------------------------------
# Shipped specs


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
@pytest.mark.slow
def test_shipped_threshold_specs_validate_with_an_estimate(path):
    out = run_cli("validate", str(path)).stdout
    assert "valid sweep" in out and "CPU (" in out and "GiB per worker" in out


@pytest.mark.slow
def test_the_p4_n128_run_its_header_documents_validates(monkeypatch):
    """n = 128 dense (p = 4): the tilt alone, one worker of 22 GiB, as the header says."""
    monkeypatch.setenv("SROA_DIST_WORKER_MEMORY", "22GiB")
    path = SWEEPS / "threshold-tilt-p4.toml"
    assert "tensor.n=[128]" in path.read_text()
    over = ("--set", "tensor.n=[128]", "--set", "noise.model=coherent-tilt")
    out = run_cli("validate", str(path), *over).stdout
    assert "valid sweep" in out and "estimate: 8 instances" in out and "GiB per worker" in out
    # the i.i.d. families at n = 128 need more than the machine: refused, naming tensor.n
    proc = run_cli("validate", str(path), "--set", "tensor.n=[128]", check=False)
    assert proc.returncode != 0 and "'tensor.n'" in proc.stderr


def test_shipped_threshold_specs_cover_the_issue():
    specs = {p.stem: load_spec(p, ["tensor.n=[8]"]) for p in SHIPPED}
    assert set(specs) == {
        "threshold-tilt-p3",
        "threshold-tilt-p4",
        "threshold-tilt-p5",
        "threshold-power-vs-sroa",
    }
    assert max(load_spec(SWEEPS / "threshold-tilt-p4.toml").axes["tensor.n"].values) >= 96
    assert max(load_spec(SWEEPS / "threshold-tilt-p5.toml").axes["tensor.n"].values) >= 256
    pvs = specs["threshold-power-vs-sroa"]
    assert set(pvs.axes["solver.method"].values) == {"power", "sshopm", "certified"}
    assert set(pvs.axes["tensor.p"].values) == {3, 4}
    for name in ("threshold-tilt-p3", "threshold-tilt-p4"):
        fams = set(specs[name].axes["noise.model"].values)
        assert fams == {"coherent-tilt", "coherent-tilt+gaussian", "gaussian"}
    # p = 5 to n = 256 runs matrix-free, which only a family with a factored form allows; its
    # header gives the dense command for all three families at small n.
    assert set(specs["threshold-tilt-p5"].axes["noise.model"].values) == {"coherent-tilt"}
    assert '"coherent-tilt+gaussian", "gaussian"' in (SWEEPS / "threshold-tilt-p5.toml").read_text()


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
@pytest.mark.slow
def test_shipped_threshold_specs_run_shrunk(tmp_path, path, client):
    """Each spec on its own grid shrunk to n = 5, one replicate, the tilt and a coarse rtol."""
    over = {
        "tensor.n": 5,
        "replicates": 1,
        "noise.model": "coherent-tilt",
        "threshold.rtol": 0.05,
    }
    res = run_sweep(path, tmp_path / "s.zarr", client=client, **over)
    assert res.complete, res.failed
    ds = open_results(tmp_path / "s.zarr").load()
    assert (ds.n_evals > 0).all() and (ds.eps_lo < ds.eps_hi).all()


def test_replicates_of_a_deterministic_family_are_flagged_once():
    """The pure coherent tilt turns with the basis: its replicates repeat one threshold (the
    README suggested replicates = 2 for it). `advice` says so; `run` warns with it."""
    from sroa_dist.problems.perturbations import is_deterministic
    from sroa_dist.sweep.kinds import advice

    assert is_deterministic("coherent-tilt")
    assert not is_deterministic("coherent-tilt+gaussian") and not is_deterministic("gaussian")
    alone = advice(spec_from_dict(_small(**{"noise.model": "coherent-tilt"}), source="s.toml"))
    assert len(alone) == 1 and "set replicates = 1" in alone[0] and "\n" not in alone[0]
    mixed = advice(spec_from_dict(_small(), source="s.toml"))
    assert len(mixed) == 1 and "they spread only ['gaussian']" in mixed[0]
    iid = _small(**{"noise.model": "gaussian"})
    del iid["noise"]["params"]
    assert advice(spec_from_dict(iid)) == []
    one = _small(**{"noise.model": "coherent-tilt", "replicates": 1})
    assert advice(spec_from_dict(one)) == []


def test_the_readme_does_not_suggest_replicates_for_the_pure_tilt():
    readme = (ROOT / "README.md").read_text()
    for line in readme.splitlines():
        if '"coherent-tilt"' in line and "--set replicates=" in line:
            assert "--set replicates=1" in line, line


def test_random_weights_make_deterministic_family_replicates_differ():
    from sroa_dist.sweep.kinds import advice

    raw = _small(**{"noise.model": "coherent-tilt"})
    raw["tensor"]["lambdas"] = {"dist": "uniform", "low": 0.9, "high": 1.0}
    assert advice(spec_from_dict(raw)) == []


@pytest.mark.slow
def test_k_section_sweep_is_the_same_on_one_two_and_four_workers_and_serial(tmp_path, client):
    """threshold.k_section = 3: each block hands its rounds' evaluations to the cluster as tasks
    (seen in the task stream); the cube (bracket and trace) is the same bit for bit on a
    cluster of two worker processes, of one, of four, and as find_threshold computes it in
    one process."""
    from distributed import Client, LocalCluster, get_task_stream

    raw = _small(
        **{
            "threshold.k_section": 3,
            "tensor.n": [8],
            "noise.model": ["coherent-tilt"],
            "replicates": 1,
        }
    )
    spec = spec_from_dict(raw)
    assert spec.n_steps == max_evals((0.05, 1.5), 0.03, 2, 3)
    with get_task_stream(client) as stream:
        run_sweep(raw, tmp_path / "two.zarr", client=client)
    evaluations = [t for t in stream.data if "evaluator" in str(t["key"]).lower()]
    assert evaluations, "no evaluation ran as a task of its own"
    for workers in (1, 4):
        with (
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
            ) as cluster,
            Client(cluster) as other,
        ):
            run_sweep(raw, tmp_path / f"{workers}.zarr", client=other)
    two = open_results(tmp_path / "two.zarr")
    for workers in (1, 4):
        assert_same_bits(
            cube_values(tmp_path / "two.zarr"), cube_values(tmp_path / f"{workers}.zarr")
        )
    want = find_threshold(
        8,
        3,
        family="coherent-tilt",
        c=0.5,
        eps_range=(0.05, 1.5),
        rtol=0.03,
        params={"component": "smallest"},
        rng=np.random.SeedSequence(
            5,
            spawn_key=(
                stable_hash32("noise", "coherent-tilt"),
                stable_hash32("n", 8),
                stable_hash32("p", 3),
                0,
            ),
        ),
        k_section=3,
    )
    got = two.sel(noise="coherent-tilt", n=8, replicate=0)
    assert float(got.eps_lo) == want.bracket[0] and float(got.eps_hi) == want.bracket[1]
    k = want.n_evals
    assert int(got.n_evals) == k
    np.testing.assert_array_equal(got.trace_eps.values[:k], [e.eps for e in want.trace])
    np.testing.assert_array_equal(got.trace_metric.values[:k], [e.metric for e in want.trace])
    assert json.loads(two.attrs["setting_search"])["k_section"] == 3


def test_the_basis_is_an_instance_setting_and_the_tilts_crossing_does_not_depend_on_it():
    """``tensor.basis``: not given, the spec's data are as before it existed (so every older
    store keeps its settings); a name outside random/identity is refused naming the key; an
    identity-basis search runs find_threshold(V="identity"), whose instance is V = I, and on
    the coherent tilt gives the random basis' bracket bit for bit (dense at n = 5,
    matrix-free at n = 24); a store refuses to resume with another basis."""
    from sroa_dist.sweep.kinds.threshold import problem_of
    from sroa_dist.sweep.spec import resumable_as

    plain = spec_from_dict(_small(**{"noise.model": "coherent-tilt"}))
    assert "basis" not in plain.data["tensor"]
    with pytest.raises(SpecError, match=r"tensor\.basis"):
        spec_from_dict(_small(**{"tensor.basis": "haar"}))
    ident = spec_from_dict(_small(**{"noise.model": "coherent-tilt", "tensor.basis": "identity"}))
    assert resumable_as(plain, ident)[1] == "tensor.basis: None -> 'identity'"
    explicit = spec_from_dict(_small(**{"noise.model": "coherent-tilt", "tensor.basis": "random"}))
    assert explicit.data["tensor"]["basis"] == "random"
    for n, matrix_free in ((5, False), (24, True)):
        over = {"noise.model": "coherent-tilt", "tensor.n": [n]}
        over["threshold.matrix_free"] = matrix_free
        results = {}
        for basis in (None, "identity"):
            spec = spec_from_dict(_small(**over, **({"tensor.basis": basis} if basis else {})))
            problem = problem_of(spec, spec.settings_at({"noise": "coherent-tilt", "n": n}), 0)
            assert problem.basis == basis
            results[basis] = problem.run()
        assert results[None].bracket == results["identity"].bracket, n
    kw = dict(criterion="value", c=0.5, eps_range=(0.05, 1.5), rtol=0.03)
    by_name = find_threshold(5, 3, V="identity", rng=np.random.SeedSequence(1), **kw)
    by_array = find_threshold(5, 3, V=np.eye(5), rng=np.random.SeedSequence(1), **kw)
    assert by_name.trace == by_array.trace
    with pytest.raises(ValueError, match="basis name"):
        find_threshold(5, 3, V="haar", **kw)


def test_an_identity_basis_search_on_the_large_n_engine_is_priced_as_measured():
    """The large-n law was fitted to the studies' random basis; on the identity a search on the
    large-n engine is priced IDENTITY_BASIS_SCALE of it (measured at n = 256 and 512), and
    below the engine (dense or small n) the basis changes no price."""
    from sroa_dist.sweep.kinds.threshold import (
        IDENTITY_BASIS_POWER_SCALE,
        IDENTITY_BASIS_SCALE,
        search_seconds,
    )

    tilt = ROOT / "sweeps" / "studies" / "asymptote-p3-c0.5.toml"
    power = ROOT / "sweeps" / "studies" / "asymptote-attractor-power.toml"
    for path, n, scale in (
        (tilt, 512, IDENTITY_BASIS_SCALE),
        (tilt, 64, 1.0),
        (power, 512, IDENTITY_BASIS_POWER_SCALE),  # power's own iterations, measured once
    ):
        over = [f"tensor.n=[{n}]"]
        plain = load_spec(path, over)
        ident = load_spec(path, [*over, 'tensor.basis="identity"'])
        point = {"n": n}
        a = search_seconds(plain, plain.settings_at(point))
        b = search_seconds(ident, ident.settings_at(point))
        assert b == pytest.approx(scale * a), (path.name, n)
