"""``ResultStore`` on real zarr stores (serial, no Dask): it writes blocks in the layout's
regions, keeps the done mask and certificate files, and rebuilds any stored instance bit for
bit -- through ``make_instance`` and ``norms.scale_factors``, the same construction the
worker uses."""

from __future__ import annotations

import numpy as np
import pytest

import sroa_dist as core
from sroa_dist.norms import scale_factors
from sroa_dist.problems.perturbations import DEFAULT_WEIGHT, model_params
from sroa_dist.sweep.kinds import make_layout, spec_from_dict
from sroa_dist.sweep.layout import block_task
from sroa_dist.sweep.run.worker import compute_block
from sroa_dist.sweep.store import ResultStore, instance_of

SIGMA = {
    "name": "store-sigma",
    "seed": 11,
    "replicates": 3,
    "tensor": {"n": [3, 4], "p": 3},
    "noise": {"model": ["binary", "gaussian"], "sigma": [0.01, 0.05]},
    "solver": {"method": "sshopm", "options": {"n_starts": 6}, "norm_method": "sshopm"},
}
EPS = {
    "name": "store-eps",
    "seed": 5,
    "replicates": 2,
    "tensor": {"n": 4, "p": [3, 4], "lambdas": {"dist": "uniform", "low": 0.5, "high": 1}},
    "noise": {"eps_scaled": [0.1, 0.3]},
    "solver": {"method": "sshopm", "options": {"n_starts": 6}, "norm_method": "sshopm"},
}


def _filled(tmp_path, raw, block_size=4, name="cube.zarr"):
    """A real store for ``raw``, every block computed and written through ResultStore."""
    spec = spec_from_dict(raw)
    layout = make_layout(spec, block_size=block_size)
    rs = ResultStore(tmp_path / name)
    assert rs.kind == "absent"
    prepared = rs.prepare(spec, layout, history="test")
    assert prepared.action == "created"
    for b in rs.pending():
        task = block_task(spec, prepared.layout, b)
        rs.write(task, compute_block(task))
    return rs


def _all_coords(rs):
    layout = rs.layout
    for idx in np.ndindex(*layout.shape):
        yield {
            d: layout.coords[i][j] for i, (d, j) in enumerate(zip(layout.dims, idx, strict=True))
        }


def _stored(ds, coords):
    return ds.sel({d: v for d, v in coords.items()})


@pytest.mark.slow
def test_result_store_writes_blocks_in_the_layouts_regions(tmp_path):
    rs = _filled(tmp_path, SIGMA, block_size=4)
    assert rs.kind == "sroa"
    assert rs.done().all() and rs.pending() == []
    status = rs.status()
    assert status.n_done == status.n_blocks == rs.layout.n_blocks > 1
    assert status.done_fraction == 1.0
    ds = rs.open()
    assert not np.isnan(ds["lam_hat"].values[..., 0]).any()  # NaN only past n = 3's steps
    # Each block's region (the layout's) holds exactly the instances its task computed.
    spec, layout = rs.spec_and_layout
    for b in range(layout.n_blocks):
        region = rs.region(b)
        assert region == layout.block_region(b)
        got = compute_block(block_task(spec, layout, b)).data["lam_hat"]
        assert np.array_equal(ds["lam_hat"].values[region], got, equal_nan=True)


@pytest.mark.slow
def test_locate_finds_each_instances_block(tmp_path):
    rs = _filled(tmp_path, SIGMA, block_size=4)
    layout = rs.layout
    for coords in _all_coords(rs):
        block, index = rs.locate(coords)
        region = layout.block_region(block)
        pos = tuple(layout.coords[i].index(coords[d]) for i, d in enumerate(layout.dims))
        assert pos == tuple(s.start + k for s, k in zip(region, index, strict=True))
    with pytest.raises(KeyError, match="missing"):
        rs.locate({"n": 3})
    with pytest.raises(KeyError, match="store's values"):
        rs.locate({**next(_all_coords(rs)), "replicate": 99})


def _solve_like_the_worker(spec, stored):
    """SROA on a rebuilt instance with the solver seed of its block (child 1)."""
    s, rep = stored.settings, stored.replicate
    solve_ss = s.seed(spec.seed, rep).spawn(3)[1]
    res = core.sroa_batch(
        stored.instance.T_hat[None],
        rank=s.steps,
        method=s.method,
        rng=[solve_ss],
        **spec.options_for(s.method),
    )
    m = core.match(res, stored.instance.lambdas[None], stored.instance.V[None])
    return res, m


@pytest.mark.parametrize("raw", [SIGMA, EPS], ids=["sigma", "eps_scaled"])
@pytest.mark.slow
def test_every_stored_instance_is_rebuilt_bit_for_bit(tmp_path, raw):
    """instance_of rebuilds T_hat exactly: SROA on it with the instance's solver seed gives
    the stored lam_hat, lam_err and vec_err bit for bit, for every instance of the store."""
    rs = _filled(tmp_path, raw)
    spec = rs.spec
    ds = rs.open().load()
    for coords in _all_coords(rs):
        stored = instance_of(rs.url, coords)
        res, m = _solve_like_the_worker(spec, stored)
        here = _stored(ds, coords)
        steps = stored.settings.steps
        assert np.array_equal(here["lam_hat"].values[:steps], res.lambdas[0])
        assert np.array_equal(here["lam_err"].values[:steps], m.lam_err[0])
        assert np.array_equal(here["vec_err"].values[:steps], m.vec_err[0])


def test_sigma_instances_are_make_instance_itself(tmp_path):
    """A sigma sweep's instance is ``make_instance`` with the instance's draw seed (child 0)."""
    rs = _filled(tmp_path, SIGMA)
    spec = rs.spec
    for coords in list(_all_coords(rs))[::5]:
        stored = instance_of(rs, coords)
        s = stored.settings
        rng = np.random.default_rng(s.seed(spec.seed, stored.replicate).spawn(3)[0])
        inst = core.make_instance(
            s.n,
            s.p,
            rank=s.rank,
            basis=spec.tensor.basis,
            lambdas=spec.tensor.lambdas,
            noise=s.noise,
            sigma=s.level,
            rng=rng,
            noise_params=model_params(spec.noise.params, s.noise),
            noise_weight=DEFAULT_WEIGHT,
            noise_eps=s.level,
        )
        assert np.array_equal(inst.T_hat, stored.instance.T_hat)
        assert np.array_equal(inst.E, stored.instance.E)


@pytest.mark.slow
def test_opnorm_instances_are_make_instance_rescaled_by_scale_factors(tmp_path):
    """An eps sweep draws E with sigma = 1 and rescales it by ``scale_factors(||E||, target)``
    (the norm from the instance's norm seed, child 2): the stored instance is exactly that."""
    rs = _filled(tmp_path, EPS)
    spec = rs.spec
    for coords in list(_all_coords(rs))[::3]:
        stored = instance_of(rs, coords)
        s = stored.settings
        children = s.seed(spec.seed, stored.replicate).spawn(3)
        lambdas = stored.instance.lambdas
        target = s.level * float(np.abs(lambdas).min()) * s.n ** (-1.0 / (s.p - 1))
        raw = core.make_instance(
            s.n,
            s.p,
            rank=s.rank,
            basis=spec.tensor.basis,
            lambdas=spec.tensor.lambdas,
            noise=s.noise,
            sigma=1.0,
            rng=np.random.default_rng(children[0]),
            noise_params=model_params(spec.noise.params, s.noise),
            noise_eps=target,
        )
        norm = core.operator_norm_batch(
            raw.E[None], s.norm_method, rng=[children[2]], **spec.options_for(s.norm_method)
        )
        factor = scale_factors(norm.value, [target])
        assert np.array_equal(stored.instance.E, raw.E * factor[0])
        assert np.array_equal(stored.instance.T_hat, raw.T + raw.E * factor[0])
        assert stored.instance.eps_target == pytest.approx(target, rel=1e-15)
        assert stored.instance.E_norm == pytest.approx(target, rel=1e-12)


@pytest.mark.slow
def test_result_store_writes_certificates_before_the_done_flag(tmp_path):
    """With [output] certificates, write() puts the block's certificate file beside the
    store; verify_certificates re-checks them against rebuilt tensors."""
    raw = {
        "name": "store-certs",
        "replicates": 2,
        "tensor": {"n": 3, "p": 3},
        "noise": {"sigma": 0.01},
        "solver": {"method": "certified", "steps": 1},
        "output": {"certificates": True},
    }
    rs = _filled(tmp_path, raw, block_size=1)
    files = sorted((tmp_path / "cube.zarr" / "certificates").glob("*.npz"))
    assert len(files) == rs.layout.n_blocks == 2
    report = rs.verify_certificates()
    assert report.ok and len(report.checks) == 2 and not report.missing


@pytest.mark.slow
def test_a_stale_task_is_refused_and_writes_nothing(tmp_path):
    import dataclasses

    from sroa_dist.sweep.store.block_write import StaleLayoutError

    rs = _filled(tmp_path, SIGMA)
    spec, layout = rs.spec_and_layout
    before = rs.open()["lam_hat"].values.copy()
    task = dataclasses.replace(block_task(spec, layout, 0), layout_token="not-this-layout")
    result = compute_block(task)
    result.data["lam_hat"][:] = 123.0
    with pytest.raises(StaleLayoutError):
        rs.write(task, result)
    assert np.array_equal(rs.open()["lam_hat"].values, before, equal_nan=True)


def test_a_stored_model_instance_is_rebuilt_bit_for_bit(tmp_path):
    """A model sweep's instance is its seeded model: the study on it (sample and SROA from the
    instance's study seed) gives the stored lam_hat and errors bit for bit."""
    from sroa_dist.moments import Tolerances, run_study

    raw = {
        "name": "store-topics",
        "replicates": 2,
        "model": {"name": "topics", "N": 200, "k": 2, "d": 5, "L": 3},
        "solver": {"method": "sshopm"},
    }
    rs = _filled(tmp_path, raw)
    spec = rs.spec
    ds = rs.open().load()
    for coords in _all_coords(rs):
        stored = instance_of(rs, coords)
        s = stored.settings
        st = run_study(
            stored.instance,
            s.N,
            s.method,
            rng=s.study_seed(spec.seed, stored.replicate),
            tolerances=Tolerances(**spec.model.tolerances),
            norms=bool(spec.model.norms),
            **spec.options_for(s.method),
        )
        here = _stored(ds, coords)
        assert np.array_equal(here["lam_hat"].values[: s.k], st.fit.lambdas)
        assert np.array_equal(here["component_error"].values[: s.k], st.errors.component_error)
