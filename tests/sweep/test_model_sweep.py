"""Model sweeps ([model] specs): validation, seeding, layout, and end to end on real Dask
workers with real zarr stores -- resume, extension, bitwise determinism across block sizes, and
the cube equal to serial ``run_study`` calls."""

from __future__ import annotations

import copy
import json
import tomllib

import numpy as np
import pytest

from sroa_dist.analysis import write_report
from sroa_dist.moments import Tolerances, run_study
from sroa_dist.sweep import load_spec, open_results, run_sweep
from sroa_dist.sweep.kinds import make_layout, spec_from_dict
from sroa_dist.sweep.kinds.model import (
    MODEL_VARIABLES,
    ModelSweepSpec,
    model_weights,
    settings_from_coords,
)
from sroa_dist.sweep.layout import block_task
from sroa_dist.sweep.run.worker import compute_block
from sroa_dist.sweep.spec.fields import SpecError
from tests.support.helpers import ROOT, assert_same_bits, cube_values

SMOKE = ROOT / "sweeps" / "smoke"


def _raw(name: str = "topics.toml") -> dict:
    return tomllib.loads((SMOKE / name).read_text())


def _bad(change: dict, key: str, name: str = "topics.toml") -> SpecError:
    raw = _raw(name)
    for dotted, value in change.items():
        node = raw
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        if value is None:
            node.pop(leaf)
        else:
            node[leaf] = value
    with pytest.raises(SpecError) as info:
        spec_from_dict(raw, source="t.toml")
    assert info.value.key == key, str(info.value)
    assert "t.toml" in str(info.value)
    return info.value


def test_model_spec_loads_and_round_trips():
    spec = load_spec(SMOKE / "topics.toml")
    assert isinstance(spec, ModelSweepSpec)
    assert spec.sweep_dims() == ["method", "N"]
    assert spec.data["model"]["weights"] == 1.0  # "uniform"
    assert spec.data["model"]["tolerances"] == {"component": 0.1, "weight": 0.05}
    again = spec_from_dict(json.loads(spec.to_json()))
    assert again.to_json() == spec.to_json() and isinstance(again, ModelSweepSpec)
    swept = _raw()
    swept["model"].update(k=[2, 3], d={"start": 30, "stop": 60, "step": 30}, L=[3, 5])
    swept["model"]["weights"] = ["uniform", 4.0]
    spec = spec_from_dict(swept)
    assert spec.sweep_dims() == ["k", "d", "L", "weight_ratio", "method", "N"]


def test_model_spec_errors_name_the_key():
    err = _bad({"tensor": {"n": 3}}, "tensor")
    assert "[model]" in str(err)
    _bad({"model.k": [3, 40]}, "model.k")  # k > d
    _bad({"model.k": 1}, "model.k")
    _bad({"model.L": 2}, "model.L")
    _bad({"model.L": None}, "model.L")  # topics need L
    _bad({"model.sigma2": 1.0}, "model.sigma2")  # gmm only
    _bad({"model.L": 5}, "model.L", "gmm.toml")  # topics only
    _bad({"model.name": "lda"}, "model.name")
    _bad({"model.weights": 0.5}, "model.weights")
    _bad({"model.prior.mean_scale": 1.0}, "model.prior.mean_scale")
    _bad({"model.tolerances.tv": 0.1}, "model.tolerances.tv")
    _bad({"model.N": 1}, "model.N")
    _bad({"solver.steps": 2}, "solver.steps")
    _bad({"solver.method": "newton"}, "solver.method")
    _bad({"solver.options.bogus": 1}, "solver.options.bogus")
    _bad({"solver.norm_method": "power"}, "solver.norm_method")
    _bad({"output.vectors": True}, "output.vectors")
    err = _bad({"model.N": 10**9}, "model.N")  # ~45 GiB of documents
    assert "GiB" in str(err)
    err = _bad({"model.d": 4000, "model.N": 60_000_000}, "model.N", "gmm.toml")
    assert "GiB" in str(err)
    # ICA (fourth order): no L, no sigma2, no class weights, a named source law
    _bad({"model.L": 5}, "model.L", "ica.toml")
    _bad({"model.sigma2": 1.0}, "model.sigma2", "ica.toml")
    _bad({"model.weights": 2.0}, "model.weights", "ica.toml")
    _bad({"model.N": 3}, "model.N", "ica.toml")
    _bad({"model.prior.sources": "cauchy"}, "model.prior.sources", "ica.toml")
    _bad({"model.prior.mixing_scale": -1.0}, "model.prior.mixing_scale", "ica.toml")
    _bad({"model.prior.mean_scale": 1.0}, "model.prior.mean_scale", "ica.toml")


def test_seeds_pair_methods_and_keep_the_model_along_n():
    spec = load_spec(SMOKE / "topics.toml")
    a = settings_from_coords(spec, {"method": "certified", "N": 300})
    b = settings_from_coords(spec, {"method": "power", "N": 300})
    c = settings_from_coords(spec, {"method": "certified", "N": 3000})
    assert a.study_seed(5, 1).spawn_key == b.study_seed(5, 1).spawn_key
    assert a.study_seed(5, 1).spawn_key != c.study_seed(5, 1).spawn_key
    assert a.study_seed(5, 1).spawn_key != a.study_seed(5, 2).spawn_key
    # the same topics at every N of a replicate, different topics across replicates
    assert np.array_equal(a.build_model(5, 1).components, c.build_model(5, 1).components)
    assert not np.array_equal(a.build_model(5, 1).components, a.build_model(5, 2).components)
    w = model_weights(4, 8.0)
    assert np.isclose(w.sum(), 1.0) and np.isclose(w.max() / w.min(), 8.0)
    assert np.allclose(model_weights(3, 1.0), 1 / 3)


def test_layout_and_serial_block_pair_methods():
    spec = load_spec(SMOKE / "topics.toml")
    layout = make_layout(spec, block_size=3)
    assert layout.dims == ("method", "N", "replicate") and layout.n_steps == 3
    assert layout.n_blocks == 4
    res = [compute_block(block_task(spec, layout, b)) for b in range(layout.n_blocks)]
    cert = np.concatenate([r.data["eps"] for r in res[:2]], axis=1)
    power = np.concatenate([r.data["eps"] for r in res[2:]], axis=1)
    # ||E|| depends only on the sample: both methods saw the same documents
    assert np.array_equal(cert, power) and np.isfinite(cert).all()
    assert set(res[0].data) == set(MODEL_VARIABLES)


@pytest.mark.slow
def test_model_sweep_end_to_end_on_workers(tmp_path, client):
    spec_path = SMOKE / "topics.toml"
    store = tmp_path / "topics.zarr"
    res = run_sweep(spec_path, store, client=client, block_size=3)
    assert res.complete and res.action == "created" and res.instances_computed == 12
    ds = open_results(store).load()
    assert dict(ds["component_error"].sizes) == {"method": 2, "N": 2, "replicate": 3, "step": 3}
    assert ds["N"].attrs["long_name"].startswith("sample size")
    assert ds.attrs["setting_model"] == "topics" and ds.attrs["setting_k"] == 3
    assert "setting_basis" not in ds.attrs
    for name in ("lam_hat", "component_error", "weight_error", "eps", "eps_full", "lambda_min"):
        assert np.isfinite(ds[name].values).all(), name
    assert (ds["eps_lower"] <= ds["eps_upper"] * (1 + 1e-9)).all()
    # near SOD (N = 3000) every certified step is proven globally optimal
    assert ds["certified"].sel({"method": "certified", "N": 3000}).all()
    # more documents, smaller perturbation and errors (mean over the paired replicates)
    eps = ds["eps"].mean("replicate")
    assert (eps.sel(N=3000) < eps.sel(N=300)).all()
    # the cube holds exactly what a serial run_study call computes
    spec = load_spec(spec_path)
    for method in ("certified", "power"):
        s = settings_from_coords(spec, {"method": method, "N": 3000})
        st = run_study(
            s.build_model(spec.seed, 2),
            s.N,
            method,
            rng=s.study_seed(spec.seed, 2),
            tolerances=Tolerances(0.1, 0.05),
        )
        cell = ds.sel({"method": method, "N": 3000, "replicate": 2})
        assert np.array_equal(cell["lam_hat"].values, st.fit.lambdas)
        assert np.array_equal(cell["component_error"].values, st.errors.component_error)
        assert float(cell["eps"]) == st.eps_population.value
        assert float(cell["eps_full"]) == st.eps_full.value
        assert bool(cell["success"]) == st.success
    # the report shows the sample-size analysis with its figures
    written = write_report(open_results(store), tmp_path / "rep.md", n_boot=20)
    text = written[0].read_text()
    assert "## Sample size" in text and "n_needed" in text and "exponent" in text
    assert {p.name for p in written[2:]} == {"sample_error.png", "sample_success.png"}
    # resume: nothing to do; the same spec with other blocks and workers: the same bits
    again = run_sweep(spec_path, store, client=client, block_size=3)
    assert again.action == "resumed" and again.blocks_computed == 0
    other = tmp_path / "other.zarr"
    run_sweep(spec_path, other, workers=1, block_size=5, dashboard_address=":0")
    assert_same_bits(cube_values(store), cube_values(other))


def test_ica_sweep_on_workers_equals_serial_studies(tmp_path, client):
    """An ICA sweep (p = 4, signed weights) through real workers into a real store: every cell
    is the serial run_study of its seeds, and a rerun with other blocks gives the same bits."""
    raw = _raw("ica.toml")
    raw["model"]["N"] = [400, 20000]
    raw["replicates"] = 2
    spec = spec_from_dict(raw, source="ica.toml")
    store = tmp_path / "ica.zarr"
    res = run_sweep(spec, store, client=client, block_size=2)
    assert res.complete and res.instances_computed == 4
    ds = open_results(store).load()
    assert ds.attrs["setting_model"] == "ica"
    assert dict(ds["lam_hat"].sizes) == {"N": 2, "replicate": 2, "step": 3}
    # the kurtosis signs come back: Laplace +, uniform and Rademacher -
    lam = ds["lam_hat"].sel(N=20000).values
    assert (np.sort(np.sign(lam), axis=1) == [-1, -1, 1]).all()
    assert ds["success"].sel(N=20000).all() and ds["certified"].sel(N=20000).all()
    assert float(ds["lambda_min"].max()) == pytest.approx(1.2)
    s = settings_from_coords(spec, {"N": 20000})
    st = run_study(
        s.build_model(spec.seed, 1),
        s.N,
        "certified",
        rng=s.study_seed(spec.seed, 1),
        tolerances=Tolerances(0.2, 0.5),
    )
    cell = ds.sel({"N": 20000, "replicate": 1})
    assert np.array_equal(cell["lam_hat"].values, st.fit.lambdas)
    assert float(cell["eps"]) == st.eps_population.value
    other = tmp_path / "other.zarr"
    run_sweep(spec, other, client=client, block_size=1)
    assert_same_bits(cube_values(store), cube_values(other))


@pytest.mark.slow
def test_model_sweep_extends_n_and_replicates(tmp_path, client):
    spec_path = SMOKE / "gmm.toml"
    store = tmp_path / "gmm.zarr"
    first = run_sweep(spec_path, store, client=client, block_size=2, replicates=2)
    assert first.complete
    ext = run_sweep(spec_path, store, client=client, replicates=4, **{"model.N": [200, 500, 5000]})
    assert ext.action == "extended" and ext.complete and ext.blocks_reused == 2
    fresh = tmp_path / "fresh.zarr"
    run_sweep(
        spec_path, fresh, client=client, block_size=4, replicates=4, **{"model.N": [200, 500, 5000]}
    )
    assert_same_bits(cube_values(store), cube_values(fresh))
    ds = open_results(store)
    assert ds.attrs["setting_model"] == "gmm" and ds.attrs["setting_sigma2"] == 1.0
    assert np.isfinite(ds["sigma2_hat"].values).all()


def test_tensor_spec_unaffected_by_model_keys():
    raw = tomllib.loads((SMOKE / "figure2.toml").read_text())
    spec = spec_from_dict(copy.deepcopy(raw))
    assert not isinstance(spec, ModelSweepSpec)
    raw["model"] = {"name": "topics"}
    with pytest.raises(SpecError) as info:
        spec_from_dict(raw, source="t.toml")
    assert info.value.key == "tensor"


def test_fractional_weight_ratios_are_stored_and_resumed(tmp_path):
    """The weight_ratio coordinate is a float: 2.5 stays 2.5, and the store resumes."""
    from sroa_dist.sweep.store.prepare import prepare_store

    raw = _raw()
    raw["model"]["weights"] = [1, 2.5]
    spec = spec_from_dict(raw)
    layout = make_layout(spec)
    url = str(tmp_path / "w.zarr")
    assert prepare_store(url, spec, layout).action == "created"
    assert open_results(url)["weight_ratio"].values.tolist() == [1.0, 2.5]
    assert prepare_store(url, spec, layout).action == "resumed"


def test_global_check_names_methods_of_the_sweep_and_checks_only_their_steps():
    """model.global_check = ["sshopm"]: sshopm's instances are run_study with
    global_check=True, redo=True (bit for bit), power's are unchecked, the store's attrs say so;
    a method outside solver.method is refused naming the key."""
    _bad({"model.global_check": ["sshopm"]}, "model.global_check", "gmm.toml")
    raw = _raw("gmm.toml")
    raw["model"].update({"N": 500, "global_check": ["sshopm"]})
    raw["replicates"] = 1
    raw["solver"]["method"] = ["sshopm", "power"]
    spec = spec_from_dict(raw)
    assert spec.model.checked_methods == ("sshopm",)
    layout = make_layout(spec, block_size=1)
    from sroa_dist.sweep.kinds import kind_of

    assert json.loads(kind_of(spec).provenance(spec)["setting_model_global_check"]) == ["sshopm"]
    tol = Tolerances(**spec.model.tolerances)
    for b, (method, checked) in enumerate((("sshopm", True), ("power", False))):
        got = compute_block(block_task(spec, layout, b)).data
        s = spec.settings_at({"method": method})
        st = run_study(
            s.build_model(spec.seed, 0),
            s.N,
            method,
            rng=s.study_seed(spec.seed, 0),
            tolerances=tol,
            **({"global_check": True, "redo": True} if checked else {}),
        )
        assert got["lam_hat"].ravel()[:3].tobytes() == st.fit.lambdas.tobytes()
        checked_gaps = np.isfinite(np.asarray(st.fit.sroa.global_gap, dtype=float))
        assert checked_gaps.any() == checked


def test_norms_are_solved_at_the_revisions_the_store_pins(monkeypatch):
    """A block solves ‖E‖ with the options of the norm methods' pinned revisions (none at the
    current ones), as it runs the SROA's method at its own."""
    import sroa_dist.sweep.kinds.model as model_kind

    seen = []

    def spy(*args, **kwargs):
        seen.append(kwargs.get("norm_options"))
        return run_study(*args, **kwargs)

    monkeypatch.setattr(model_kind, "run_study", spy)
    for revisions, want in (({}, {}), ({"sshopm": 9}, {"sshopm": {"integer_powers": "pow"}})):
        raw = _raw()
        raw.setdefault("solver", {})["revisions"] = revisions
        spec = spec_from_dict(raw)
        layout = make_layout(spec, block_size=3)
        seen.clear()
        compute_block(block_task(spec, layout, 0))
        assert seen and all(options == want for options in seen)
