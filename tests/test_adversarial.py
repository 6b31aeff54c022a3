"""Worst-case search: it climbs above its start, keeps ‖E‖ = eps exactly, is reproducible, and
runs as the ``adversarial`` family of a real sweep."""

from __future__ import annotations

import numpy as np
import pytest

import sroa_dist as core
from sroa_dist import perturbations as pt
from sroa_dist.adversarial import tilt_alignment
from sroa_dist.sweep import open_results, run_sweep


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
    V, lam = core.identity_basis(3), np.ones(3)
    with pytest.raises(ValueError, match="needs the target operator norm"):
        core.draw_perturbation("adversarial", 3, 3, V, lam, rng=0)


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
