"""SROA (Algorithm 1): exact recovery, the paper's theorems on random instances, batching."""

import numpy as np
import pytest

from sroa_dist import (
    identity_basis,
    make_instance,
    match,
    operator_norm,
    random_orthonormal_basis,
    sod_tensor,
    sroa,
    sroa_batch,
    theorem_2_2_bounds,
    theorem_3_1_bounds,
)


@pytest.mark.parametrize("method", ["certified", "sshopm"])
@pytest.mark.parametrize("p", [3, 4, 5])
@pytest.mark.parametrize("basis", ["identity", "random"])
@pytest.mark.parametrize("n,r", [(4, 4), (5, 3)])
def test_exact_recovery_without_noise(method, p, basis, n, r):
    V = identity_basis(n, r) if basis == "identity" else random_orthonormal_basis(n, r, rng=n)
    lam = np.linspace(2.0, 1.0, r)
    if p % 2 == 0:
        lam[::2] *= -1
    res = sroa(sod_tensor(lam, V, p), rank=r, method=method, rng=0)
    m = match(res, lam, V)
    assert np.max(m.lam_err) < 1e-9
    assert np.max(m.vec_err) < 1e-7
    assert sorted(m.perm) == list(range(r))
    if method == "certified" and p < 5:
        assert res.certified.all()


def test_theorem_bounds_hold_on_random_nearly_sod_instances():
    """Theorems 2.2 and 3.1 on instances well inside their regime (ε ≪ λ_min / n^{1/(p-1)})."""
    rng = np.random.default_rng(2015)
    violations = 0
    for k in range(12):
        n = 5
        inst = make_instance(
            n,
            3,
            basis="random",
            lambdas={"dist": "uniform", "low": 1.0, "high": 2.0},
            noise=["binary", "uniform", "gaussian"][k % 3],
            sigma=0.002 * (1 + k % 4),
            rng=rng,
        )
        norm = operator_norm(inst.E, "certified", rng=0)
        assert norm.certified
        eps = norm.upper  # ‖E‖ is certified to within 1e-6·‖E‖_F; the upper end is the safe side
        res = sroa(inst.T_hat, method="certified", rng=k)
        assert res.certified.all()
        m = match(res, inst.lambdas, inst.V)
        lb2, vb2 = theorem_2_2_bounds(eps, m.lam_matched[0])
        violations += int(m.lam_err[0] > lb2) + int(m.vec_err[0] > vb2)
        lb3, vb3 = theorem_3_1_bounds(eps, m.lam_matched)
        violations += int(np.sum(m.lam_err > lb3) + np.sum(m.vec_err > vb3))
    assert violations == 0


def test_batched_sroa_equals_one_at_a_time_and_is_seeded():
    insts = [make_instance(6, 3, noise="gaussian", sigma=0.02, rng=s) for s in range(3)]
    Ts = np.stack([i.T_hat for i in insts])
    batch = sroa_batch(Ts, rank=4, method="sshopm", rng=[7, 8, 9])
    for b, seed in enumerate([7, 8, 9]):
        one = sroa(Ts[b], rank=4, method="sshopm", rng=seed)
        np.testing.assert_array_equal(batch.lambdas[b], one.lambdas)
        np.testing.assert_array_equal(batch.vectors[b], one.vectors)
        assert len(one.steps) == 4 and one.steps[0].lam == one.lambdas[0]
    m = match(batch, np.stack([i.lambdas for i in insts]), np.stack([i.V for i in insts]))
    assert m.vec_err.shape == (3, 4) and np.all(m.vec_err < 0.2)


def test_rank_argument_is_checked():
    T = sod_tensor(np.ones(3), identity_basis(3), 3)
    with pytest.raises(ValueError, match="rank: expected"):
        sroa(T, rank=4, method="sshopm")
