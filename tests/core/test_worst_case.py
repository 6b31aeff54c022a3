"""Worst-case search: it climbs above its start, keeps ‖E‖ = eps exactly, is reproducible, and
runs as the ``adversarial`` family of a real sweep; the gradient search's derivative matches
finite differences of SROA's output and it beats the ES at equal SROA evaluations."""

from __future__ import annotations

import numpy as np
import pytest

import sroa_dist as core
from sroa_dist.decomposition.adjoint import eigen_residuals, sroa_vjp
from sroa_dist.problems import perturbations as pt
from sroa_dist.studies.worst_case import tilt_alignment
from sroa_dist.studies.worst_case_search import Objective, _simplex_least_norm
from sroa_dist.sweep import open_results, run_sweep


@pytest.mark.slow
def test_search_raises_the_metric_above_a_random_start():
    kw = dict(metric="lam", budget=16, starts=("gaussian",), n_random_starts=1)
    res = core.worst_case(4, 3, 0.3, rng=7, **kw)
    assert res.n_evals == 16 and res.start == "gaussian-0"
    assert res.value > res.trace[0] * 1.05  # strictly better than the random start
    assert res.value == pytest.approx(res.best_trace[-1]) == pytest.approx(res.trace.max())
    assert np.all(np.diff(res.best_trace) >= 0)
    # The metric is what SROA (certified steps) does on T + E: recompute it independently.
    T = core.sod_tensor(res.lambdas, res.V, 3)
    m = core.match(core.sroa(T + res.E, method="certified", rng=1), res.lambdas, res.V)
    assert np.max(m.lam_err) / 0.3 == pytest.approx(res.value, rel=1e-6)
    # ‖E‖ = eps exactly (certified), E symmetric.
    nr = core.operator_norm(res.E, "certified", rng=0)
    assert nr.certified and nr.value == pytest.approx(0.3, rel=1e-7)
    assert res.norm_bracket[0] == pytest.approx(0.3, rel=1e-12)
    # Reproducible from its seed, bit for bit.
    again = core.worst_case(4, 3, 0.3, rng=7, **kw)
    np.testing.assert_array_equal(res.E, again.E)
    np.testing.assert_array_equal(res.trace, again.trace)


@pytest.mark.parametrize("metric", ["vec", "first_failure"])
def test_other_metrics(metric):
    res = core.worst_case(4, 3, 0.5, metric=metric, budget=6, rng=1)
    assert set(res.start_values) == {"coherent-tilt", "sod-shrink", "gaussian-0", "gaussian-1"}
    if metric == "vec":
        assert res.value == pytest.approx(np.max(res.vec_err))
    else:
        failed = np.flatnonzero(res.vec_err > 0.3)
        assert res.value == (4 - failed[0] if len(failed) else 0)


def test_structured_starts_and_tilt_alignment():
    n, p = 4, 3
    V = core.identity_basis(n)
    lam = np.array([1.0, 1.0, 1.0, 0.95])
    tilt = pt.coherent_tilt(n, p, V, lam)[0]
    assert tilt_alignment(tilt, V, lam) == (pytest.approx(1.0), 3)
    assert tilt_alignment(-core.sod_tensor(np.ones(n), V, p), V, lam)[0] < 1e-12
    # budget = number of starts: no search step, the best start is returned as it is.
    res = core.worst_case(n, p, 0.2, budget=2, starts=("coherent-tilt", "sod-shrink"), rng=0)
    assert res.n_evals == 2
    # -Σ v_i^{⊗3} lowers every weight by eps: |λ̂ - λ| / eps = 1 at first order.
    assert res.start_values["sod-shrink"] == pytest.approx(1.0, abs=0.05)
    assert res.start == "sod-shrink" and res.tilt_cosine < 1e-12


def test_bad_arguments():
    with pytest.raises(ValueError, match="metric: expected one of"):
        core.worst_case(4, 3, 0.1, metric="loss")
    with pytest.raises(ValueError, match="budget"):
        core.worst_case(4, 3, 0.1, budget=0)
    with pytest.raises(ValueError, match="eps"):
        core.worst_case(4, 3, -0.1)
    with pytest.raises(ValueError, match="starts"):
        core.worst_case(4, 3, 0.1, starts=("tilt",))
    with pytest.raises(ValueError, match="method: expected a search method"):
        core.worst_case(4, 3, 0.1, method="newton")
    with pytest.raises(ValueError, match="method: expected a search method"):
        core.worst_case(4, 3, 0.1, method="certified")  # a rank-one method: step_method=
    with pytest.raises(ValueError, match="step_method: expected one of"):
        core.worst_case(4, 3, 0.1, method="gradient", step_method="lbfgs")
    with pytest.raises(ValueError, match="integer-valued"):
        core.worst_case(4, 3, 0.1, method="gradient", metric="first_failure")
    with pytest.raises(ValueError, match="grad_vectors"):
        sroa_vjp(np.zeros((3, 3, 3)), np.ones(3), np.eye(3), np.ones(2), np.eye(3))
    V, lam = core.identity_basis(3), np.ones(3)
    with pytest.raises(ValueError, match="needs the target operator norm"):
        core.draw_perturbation("adversarial", 3, 3, V, lam, rng=0)


@pytest.mark.slow
def test_adversarial_family_in_a_real_sweep(tmp_path, client):
    spec = {
        "name": "adversarial-smoke",
        "seed": 3,
        "replicates": 2,
        "tensor": {"n": 3, "p": 3, "lambdas": [1.0, 1.0, 0.95]},
        "noise": {
            "model": ["coherent-tilt", "adversarial"],
            "eps": [0.3],
            "params": {"adversarial": {"budget": 6, "metric": "lam"}},
        },
        "solver": {"method": "certified"},
    }
    res = run_sweep(spec, tmp_path / "adv.zarr", client=client)
    assert res.complete
    ds = open_results(tmp_path / "adv.zarr").load()
    adv, tilt = ds.sel(noise="adversarial"), ds.sel(noise="coherent-tilt")
    np.testing.assert_allclose(adv["eps_lower"], 0.3, rtol=1e-7)
    assert bool(adv["certified"].all())
    # The search starts from the tilt (among others) and keeps the best: at least as bad.
    worst_adv = (adv["lam_err"].max("step") / 0.3).values
    worst_tilt = (tilt["lam_err"].max("step") / 0.3).values
    assert np.all(worst_adv >= worst_tilt - 1e-6)


def _instance(n, p, seed, eps=0.2):
    """A nearly SOD tensor with distinct weights and a random basis and Gaussian E."""
    gen = np.random.default_rng(seed)
    V = core.random_orthonormal_basis(n, rng=gen)
    lam = np.linspace(1.0, 0.7, n)
    E = core.noise_tensor("gaussian", n, p, 1.0, rng=gen)
    E *= eps / core.operator_norm(E, "certified", rng=0).value
    return core.sod_tensor(lam, V, p) + E, lam, V, gen


# Central differences err by O(h²) plus the solver's own noise / h (the certified steps' polish
# leaves about 1e-10 on λ̂): h = 1e-4 keeps both below the stated 1e-4 relative tolerance.
FD_STEP, FD_RTOL = 1e-4, 1e-4


@pytest.mark.parametrize(
    ("p", "n", "method"), [(3, 4, "certified"), (3, 4, "sshopm"), (4, 3, "sshopm")]
)
def test_sroa_vjp_matches_finite_differences(p, n, method):
    That, _, _, gen = _instance(n, p, seed=11)
    res = core.sroa(That, method=method, rng=1)
    # The derivative assumes each step's first-order conditions: the polish meets them.
    assert np.all(eigen_residuals(That, res.lambdas, res.vectors) < 1e-10)
    a, B = gen.standard_normal(n), gen.standard_normal((n, n))
    G = sroa_vjp(That, res.lambdas, res.vectors, a, B)
    np.testing.assert_allclose(G, core.symmetrize(G), atol=1e-14)

    def f(X):
        r = core.sroa(X, method=method, rng=1)
        if p % 2 == 0:  # even p: v̂ is defined up to sign; follow the base point's signs
            s = np.sign(np.sum(r.vectors * res.vectors, axis=0))
            return a @ r.lambdas + np.sum(B * r.vectors * s)
        return a @ r.lambdas + np.sum(B * r.vectors)

    for _ in range(2):
        D = core.symmetrize(gen.standard_normal((n,) * p))
        fd = (f(That + FD_STEP * D) - f(That - FD_STEP * D)) / (2 * FD_STEP)
        assert np.vdot(G, D) == pytest.approx(fd, rel=FD_RTOL)


def test_ascent_direction_is_the_derivative_on_the_norm_sphere():
    # The search evaluates f(eps D / ||D||); along its direction d (unit d/||d||) that composite
    # rises at rate ||d|| (exactly where |E x^p| has one maximiser, as for this Gaussian E;
    # the least-norm point of the QP keeps it so at a corner), and d is orthogonal to E (the
    # composite is scale-invariant).
    n, p, eps = 4, 3, 0.25
    lam = np.array([1.0, 0.9, 0.8, 0.7])
    V = core.identity_basis(n)
    for metric in ("lam", "vec"):
        obj = Objective(
            core.sod_tensor(lam, V, p), lam, V, eps, metric, 0.3, "sshopm", "certified",
            1, 2, {},
        )  # fmt: skip
        pt = obj(core.noise_tensor("gaussian", n, p, 1.0, rng=5))
        assert pt.certified and pt.bracket[0] == pytest.approx(eps, rel=1e-12)
        assert len(obj._active_maximisers(pt)) == 1
        d = obj.gradient(pt)
        dn = np.linalg.norm(d)
        assert abs(np.vdot(d, pt.E)) < 1e-10 * dn * np.linalg.norm(pt.E)
        h = 1e-4
        fd = (obj(pt.E + h * d / dn).value - obj(pt.E - h * d / dn).value) / (2 * h)
        assert fd == pytest.approx(dn, rel=1e-3)


def test_least_norm_point_at_a_corner():
    # Two maximisers tie: the direction must not raise either (the QP's optimality
    # <d, G - c N_k> >= ||d||^2 for both), unlike the gradient of one of them.
    rng = np.random.default_rng(3)
    G, N = rng.standard_normal(50), rng.standard_normal((50, 2))
    lam = _simplex_least_norm(N, G)
    assert lam.min() >= 0 and lam.sum() == pytest.approx(1.0)
    d = G - N @ lam
    for k in range(2):
        assert np.vdot(d, G - N[:, k]) >= np.vdot(d, d) * (1 - 1e-6)
    # Against a fine grid on the segment, nothing is shorter.
    t = np.linspace(0, 1, 2001)
    grid = np.linalg.norm(G[:, None] - N @ np.stack([t, 1 - t]), axis=0).min()
    assert np.linalg.norm(d) <= grid + 1e-9


@pytest.mark.parametrize(
    ("metric", "starts"),
    [("lam", ("gaussian",)), ("vec", ("coherent-tilt", "sod-shrink", "gaussian"))],
)
@pytest.mark.slow
def test_gradient_beats_the_es_at_equal_evaluations(metric, starts):
    # Tiny n, fixed seed, the same starts and SROA budget (certified steps and norms for both).
    kw = dict(metric=metric, budget=12, rng=0, starts=starts)
    es = core.worst_case(4, 3, 0.3, method="es", **kw)
    gr = core.worst_case(4, 3, 0.3, method="gradient", **kw)
    assert es.n_evals == gr.n_evals == 12
    assert es.start_values == gr.start_values  # same starts, so the searches differ only after
    assert gr.value >= 1.1 * es.value
    assert (gr.method, gr.step_method, gr.norm_method) == ("gradient", "certified", "certified")
    assert gr.norm_certified and gr.norm_bracket[0] == pytest.approx(0.3, rel=1e-12)
    # The reported value is what SROA does on T + E, recomputed independently.
    T = core.sod_tensor(gr.lambdas, gr.V, 3)
    m = core.match(core.sroa(T + gr.E, method="certified", rng=1), gr.lambdas, gr.V)
    got = np.max(m.lam_err) / 0.3 if metric == "lam" else np.max(m.vec_err)
    assert got == pytest.approx(gr.value, rel=1e-6)
    again = core.worst_case(4, 3, 0.3, method="gradient", **kw)
    np.testing.assert_array_equal(gr.trace, again.trace)
