"""Optimal matching and the theorem bounds."""

import numpy as np
import pytest

from sroa_dist import SROAResult, match, theorem_2_2_bounds, theorem_3_1_bounds


def fake_result(lam, V, p=3):
    r = len(lam)
    return SROAResult(
        np.asarray(lam), np.asarray(V), np.ones(r, bool), np.ones(r), np.ones(r), p, "test"
    )


def test_match_finds_the_permutation_and_paper_errors():
    V = np.eye(3)
    est = fake_result([0.9, 1.2], V[:, [2, 0]] * 1.0)
    m = match(est, [1.0, 1.0, 1.0], V)
    np.testing.assert_array_equal(m.perm, [2, 0])
    np.testing.assert_allclose(m.lam_err, [0.1, 0.2])
    np.testing.assert_allclose(m.vec_err, [0.0, 0.0])


def test_odd_order_uses_positive_lambda_convention_and_even_order_signs():
    V = np.eye(2)
    odd = match(fake_result([-1.0], -V[:, [0]]), [1.0, 2.0], V)
    assert odd.vec_err[0] == 0 and odd.lam_err[0] == 0
    even = match(fake_result([-1.0], -V[:, [1]], p=4), [2.0, -1.0], V)
    assert even.perm[0] == 1 and even.vec_err[0] == 0 and even.lam_err[0] == 0


def test_match_shapes_are_checked():
    with pytest.raises(ValueError, match="cannot be matched"):
        match(fake_result([1.0, 1.0, 1.0], np.eye(3)), [1.0], np.eye(3, 1))


def test_bounds_are_the_papers_formulas():
    lb, vb = theorem_2_2_bounds(0.1, 2.0)
    assert lb == pytest.approx(0.1) and vb == pytest.approx(10 * (0.05 + 0.0025))
    lb, vb = theorem_3_1_bounds(np.array([0.1, 0.2]), 2.0)
    np.testing.assert_allclose(lb, [0.2, 0.4])
    np.testing.assert_allclose(vb, [1.0, 2.0])


@pytest.mark.parametrize("p", [3, 4])
def test_matching_at_large_n_keeps_its_bits_in_bounded_memory(monkeypatch, p):
    # The distances were one (n, r_hat, r) array: n³ doubles, 8.6 GB at n = 1024, which killed
    # the workers of an n = 1024 threshold sweep. Blocked, they keep the bits of that array's
    # norms (stored results' matching does not move) whatever the block size.
    import sroa_dist.metrics as metrics

    rng = np.random.default_rng(7)
    n = 48
    V = np.linalg.qr(rng.standard_normal((n, n)))[0]
    V_hat = V[:, rng.permutation(n)] + 1e-3 * rng.standard_normal((n, n))
    signs = rng.choice([-1.0, 1.0], n) if p % 2 == 0 else 1.0
    lam = 1 + rng.random(n)
    est = fake_result(lam[::-1].copy(), V_hat * signs, p=p)
    whole = V_hat * signs
    D = np.linalg.norm(whole[:, :, None] - V[:, None, :], axis=0)
    if p % 2 == 0:
        D = np.minimum(D, np.linalg.norm(whole[:, :, None] + V[:, None, :], axis=0))
    results = []
    for block in (1, 5 * n, 1 << 21):
        monkeypatch.setattr(metrics, "_DISTANCE_BLOCK", block)
        m = match(est, lam, V)
        np.testing.assert_array_equal(m.vec_err, D[np.arange(n), m.perm])
        results.append(m)
    for m in results[1:]:
        np.testing.assert_array_equal(m.perm, results[0].perm)
        np.testing.assert_array_equal(m.vec_err, results[0].vec_err)
    # the largest block it forms is bounded, not n³
    seen = []
    real_norm = np.linalg.norm

    def spy(x, *a, **k):
        seen.append(np.size(x))
        return real_norm(x, *a, **k)

    monkeypatch.setattr(metrics, "_DISTANCE_BLOCK", 4 * n * n)
    monkeypatch.setattr(metrics.np.linalg, "norm", spy)
    match(est, lam, V)
    assert seen and max(seen) <= 4 * n * n < n**3
