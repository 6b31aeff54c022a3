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
