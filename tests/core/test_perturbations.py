"""Perturbation families: symmetry, stated norms against the certified norm, seeds, mixtures,
user families by import path (through a real sweep on real Dask workers) and their errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sroa_dist as core
from sroa_dist.problems import perturbations as pt
from sroa_dist.sweep import SpecError, open_results, run_sweep
from sroa_dist.sweep.kinds import spec_from_dict
from tests.support.helpers import assert_same_bits, cube_values

#: The user families of the tests, by import path (tests/support/perturb_user_family.py).
FAMILY = "tests.support.perturb_user_family"

FAMILIES = ["binary", "uniform", "gaussian", "coherent-tilt", "coherent-tilt+gaussian"]


def _instance(n, p, seed=0):
    V = core.random_orthonormal_basis(n, n, rng=seed)
    lam = np.linspace(1.0, 0.9, n)
    return V, lam


def _assert_exactly_symmetric(E):
    p = E.ndim
    for k in range(p - 1):
        axes = list(range(p))
        axes[k], axes[k + 1] = axes[k + 1], axes[k]
        np.testing.assert_array_equal(E, E.transpose(axes))


@pytest.mark.parametrize("model", FAMILIES)
@pytest.mark.parametrize("p", [3, 4])
def test_every_family_is_symmetric_seeded_and_states_its_norm(model, p):
    n = 5
    V, lam = _instance(n, p)
    a = core.draw_perturbation(model, n, p, V, lam, rng=3, scale=0.7)
    b = core.draw_perturbation(model, n, p, V, lam, rng=3, scale=0.7)
    assert a.E.shape == (n,) * p
    np.testing.assert_array_equal(a.E, b.E)
    _assert_exactly_symmetric(a.E)
    certified = core.operator_norm(a.E, "certified", rng=0)
    assert certified.certified
    if model == "coherent-tilt":
        # Exact closed form (scale 0.7 times the unit norm) against the certified bracket.
        assert a.norm == pytest.approx(0.7, rel=1e-12)
        assert certified.lower <= a.norm * (1 + 1e-9) and a.norm <= certified.upper * (1 + 1e-9)
        assert certified.value == pytest.approx(a.norm, rel=1e-7)
    else:
        assert a.norm is None  # not known in closed form: computed (certified) by callers
    if model in pt.NOISE_MODELS:
        # The i.i.d. models draw exactly what noise_tensor draws (bit for bit).
        np.testing.assert_array_equal(a.E, core.noise_tensor(model, n, p, 0.7, rng=3))


@pytest.mark.parametrize(("p", "n"), [(3, 3), (3, 6), (4, 4), (4, 5), (5, 4)])
def test_tilt_norm_closed_form_matches_certified_norm(p, n):
    V, lam = _instance(n, p, seed=p + n)
    E, norm = pt.coherent_tilt(n, p, V, lam)
    assert norm == 1.0
    # Unnormalised polynomial (Σ_{j≠l} y_j^{p-1}) y_l has norm c_p.
    res = core.operator_norm(E * pt.tilt_norm(p), "certified", rng=1)
    assert res.certified
    assert res.value == pytest.approx(pt.tilt_norm(p), rel=1e-7)
    assert res.lower <= pt.tilt_norm(p) * (1 + 1e-9) <= res.upper * (1 + 2e-9)
    # ... attained at y = sqrt((p-1)/p) e_j + sqrt(1/p) e_l (j ≠ l), as derived.
    ell = int(np.argmin(lam))
    x = math.sqrt((p - 1) / p) * V[:, 0] + math.sqrt(1 / p) * V[:, ell]
    val = E
    for _ in range(p):
        val = val @ x
    assert val == pytest.approx(1.0, rel=1e-12)


def test_tilt_norm_p3_is_2_over_3_sqrt3_and_tilts_toward_the_smallest():
    assert pt.tilt_norm(3) == pytest.approx(2 / (3 * math.sqrt(3)), rel=1e-15)
    n, p = 4, 3
    V = core.identity_basis(n)
    lam = np.array([1.0, 0.95, 1.0, 1.0])
    E, _ = pt.coherent_tilt(n, p, V, lam)
    # E x^3 = (x0² + x2² + x3²) x1 / c_3: zero at every v_j, gradient at v_j points to v_1.
    x = np.array([0.3, -0.2, 0.5, 0.1])
    want = (x[0] ** 2 + x[2] ** 2 + x[3] ** 2) * x[1] / pt.tilt_norm(3)
    assert np.einsum("ijk,i,j,k->", E, x, x, x) == pytest.approx(want, rel=1e-12)
    grad = 3 * np.einsum("ijk,j,k->i", E, V[:, 0], V[:, 0])
    np.testing.assert_allclose(grad, V[:, 1] / pt.tilt_norm(3), atol=1e-12)
    E2, _ = pt.coherent_tilt(n, p, V, lam, component=3)
    assert np.einsum("ijk,i,j,k->", E2, x, x, x) == pytest.approx(
        (x[0] ** 2 + x[1] ** 2 + x[2] ** 2) * x[3] / pt.tilt_norm(3), rel=1e-12
    )
    with pytest.raises(ValueError, match="component"):
        pt.coherent_tilt(n, p, V, lam, component="largest")
    with pytest.raises(ValueError, match="rank r >= 2"):
        pt.coherent_tilt(n, p, V[:, :1], lam[:1])


def test_mixture_weight_and_replicates():
    n, p = 5, 3
    V, lam = _instance(n, p)
    tilt = pt.coherent_tilt(n, p, V, lam)[0]
    pure = core.draw_perturbation("coherent-tilt+gaussian", n, p, V, lam, rng=1, weight=0.0)
    np.testing.assert_allclose(pure.E, tilt, rtol=0, atol=1e-15)
    a = core.draw_perturbation("coherent-tilt+gaussian", n, p, V, lam, rng=1, weight=0.25)
    b = core.draw_perturbation("coherent-tilt+gaussian", n, p, V, lam, rng=2, weight=0.25)
    assert a.norm is None and not np.array_equal(a.E, b.E)  # replicates differ
    # The tilt part keeps weight 0.75: the mixture's projection on the tilt is near 0.75 ‖tilt‖².
    share = np.vdot(a.E, tilt) / np.vdot(tilt, tilt)
    assert 0.6 < share < 0.9
    with pytest.raises(ValueError, match="noise.weight"):
        core.draw_perturbation("coherent-tilt+gaussian", n, p, V, lam, rng=1, weight=1.5)
    with pytest.raises(ValueError, match="background after"):
        core.draw_perturbation("coherent-tilt+cauchy", n, p, V, lam, rng=1)


def test_registry_by_name_and_params(monkeypatch):
    monkeypatch.setattr(pt, "_REGISTRY", dict(pt._REGISTRY))  # no leak into other tests
    fam = pt.register_perturbation(
        "scaled-identity-test",
        lambda n, p, V, lam, rng, *, c=2.0: (c * core.sod_tensor(np.ones(n), V, p), abs(c)),
    )
    assert fam.params == {"c": 2.0}
    V, lam = _instance(4, 3)
    P = core.draw_perturbation("scaled-identity-test", 4, 3, V, lam, rng=0, params={"c": -3.0})
    assert P.norm == 3.0
    with pytest.raises(ValueError, match="has no parameter 'k'.*'c'"):
        core.draw_perturbation("scaled-identity-test", 4, 3, V, lam, rng=0, params={"k": 1})
    with pytest.raises(ValueError, match="already registered"):
        pt.register_perturbation("coherent-tilt", pt.coherent_tilt)
    with pytest.raises(ValueError, match="without '\\+' or ':'"):
        pt.register_perturbation("a+b", pt.coherent_tilt)
    with pytest.raises(ValueError, match="unknown model 'cauchy'.*coherent-tilt"):
        pt.resolve_family("cauchy")


def test_user_family_by_import_path_and_its_errors():
    n, p = 4, 3
    V, lam = _instance(n, p)
    a = core.draw_perturbation(f"{FAMILY}:rank_one", n, p, V, lam, rng=5, scale=0.5)
    assert a.norm == 0.5
    assert core.operator_norm(a.E, "certified", rng=0).value == pytest.approx(0.5, rel=1e-7)
    cases = {
        "no_such_module_xyz:f": "cannot import module 'no_such_module_xyz'",
        f"{FAMILY}:missing": "has no attribute 'missing'",
        f"{FAMILY}:NOT_CALLABLE": "is not callable",
        f"{FAMILY}:not_symmetric": "(?s)not symmetric.*hint: average",
        f"{FAMILY}:wrong_shape": "wrong shape; expected \\(4, 4, 4\\)",
        f"{FAMILY}:norm_missing": "norm missing",
    }
    for model, msg in cases.items():
        with pytest.raises(ValueError, match=msg):
            core.draw_perturbation(model, n, p, V, lam, rng=0)


def _spec(models, **extra):
    spec = {
        "name": "perturb-families",
        "seed": 5,
        "replicates": 2,
        "tensor": {"n": 4, "p": 3, "basis": "random", "lambdas": [1.0, 1.0, 1.0, 0.95]},
        "noise": {"model": models, "eps": [0.1, 0.3]},
        "solver": {"method": "sshopm", "norm_method": "sshopm"},
    }
    for key, value in extra.items():
        spec[key].update(value)
    return spec


def test_spec_validates_families_through_the_registry():
    spec = spec_from_dict(
        _spec(
            ["gaussian", "coherent-tilt", "coherent-tilt+gaussian"],
            noise={"weight": 0.5, "params": {"coherent-tilt": {"component": 2}}},
        )
    )
    assert spec.axes["noise.model"].swept
    bad = {
        f"{FAMILY}:nope": "has no attribute 'nope'",
        "coherent-tilt+cauchy": "background after",
    }
    for model, msg in bad.items():
        with pytest.raises(SpecError, match=f"noise.model.*{msg}"):
            spec_from_dict(_spec([model]))
    with pytest.raises(SpecError, match="has no parameter 'strength'"):
        spec_from_dict(_spec(["coherent-tilt"], noise={"params": {"strength": 2.0}}))
    # A table of a model not on the axis (a typo, or left by `--set noise.model=...`) changes
    # nothing: it is dropped with a one-line warning naming it, not silently.
    with pytest.warns(UserWarning, match=r"ignoring noise.params tables \['gausian'\]"):
        spec_from_dict(_spec(["gaussian"], noise={"params": {"gausian": {"x": 1}}}))
    with pytest.raises(SpecError, match="noise.weight"):
        spec_from_dict(_spec(["coherent-tilt+gaussian"], noise={"weight": [0.1, 0.2]}))


@pytest.mark.slow
def test_user_family_runs_through_a_real_sweep_on_real_workers(tmp_path, client):
    models = ["gaussian", f"{FAMILY}:rank_one", "coherent-tilt"]
    spec = _spec(models, noise={"params": {f"{FAMILY}:rank_one": {"strength": 2.0}}})
    res = run_sweep(spec, tmp_path / "a.zarr", client=client, block_size=2)
    assert res.complete
    ds = open_results(tmp_path / "a.zarr").load()
    assert list(ds["noise"].values) == models
    for name in ("lam_hat", "lam_err", "vec_err", "eps_lower"):
        assert np.isfinite(ds[name].values).all(), name
    eps = ds["eps"].broadcast_like(ds["eps_lower"])
    for model in models[1:]:  # stated norms: the bracket is the target itself, no solver
        sel = {"noise": model}
        # Only the package's own closed forms are certified; a user family's norm is a claim.
        assert bool(ds["eps_certified"].sel(sel).all()) == (model == "coherent-tilt")
        np.testing.assert_allclose(ds["eps_lower"].sel(sel), eps.sel(sel), rtol=1e-15)
        np.testing.assert_allclose(ds["eps_upper"].sel(sel), eps.sel(sel), rtol=1e-15)
    # The user family draws a new w per replicate (seeded): replicates differ.
    lam = ds["lam_hat"].sel(noise=models[1], eps=0.3).values
    assert not np.array_equal(lam[0], lam[1])
    # Same spec, other blocks and one worker: the same bits (E is a pure function of the
    # seed, the coordinates and the replicate).
    again = run_sweep(spec, tmp_path / "b.zarr", workers=1, block_size=5, dashboard_address=":0")
    assert again.complete
    assert_same_bits(cube_values(tmp_path / "a.zarr"), cube_values(tmp_path / "b.zarr"))
    # Adding families to the axis leaves the i.i.d. instances' bits unchanged.
    plain = run_sweep(_spec(["gaussian", "binary"]), tmp_path / "c.zarr", client=client)
    assert plain.complete
    a = open_results(tmp_path / "a.zarr").load().sel(noise="gaussian")
    c = open_results(tmp_path / "c.zarr").load().sel(noise="gaussian")
    for name in ("lam_hat", "vec_err", "eps_lower"):
        assert np.array_equal(a[name].values, c[name].values, equal_nan=True), name


def test_a_lying_user_family_is_never_recorded_as_certified(tmp_path, client):
    """A user family that claims ||E|| = 1e-9 for a norm-1 perturbation: the cube records the
    claim with eps_certified = False, so no Theorem 2.2 "violation" rests on it."""
    spec = _spec(
        [f"{FAMILY}:lying"],
        noise={"model": f"{FAMILY}:lying"},
    )
    spec["noise"].pop("eps")
    spec["noise"]["sigma"] = 1.0
    res = run_sweep(spec, tmp_path / "lie.zarr", client=client)
    assert res.complete
    ds = open_results(tmp_path / "lie.zarr").load()
    assert not ds["eps_certified"].values.any()
    np.testing.assert_allclose(ds["eps_upper"].values, 1e-9)
