"""The tilt-shrink family's closed-form norm, against the certified relaxation at small n (on a
random basis with r < n) and against an exhaustive grid over the sphere at n = 3."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sroa_dist as core
from sroa_dist.problems.perturbations import PROVEN_NORMS, tilt_norm
from sroa_dist.problems.tilt_shrink import tilt_shrink


@pytest.mark.parametrize(("p", "theta"), [(3, 0.7), (3, 2.5), (4, 0.7), (4, -0.4)])
def test_norm_is_the_certified_norm(p, theta):
    n, r = 5, 4
    V = core.random_orthonormal_basis(n, r, rng=1)
    lam = np.r_[np.ones(r - 1), 0.95]
    E, norm = tilt_shrink(n, p, V, lam, theta=theta)
    assert norm == 1.0
    nr = core.operator_norm(E, "certified", rng=0)
    assert nr.certified
    assert nr.lower <= 1 + 1e-9 and nr.upper >= 1 - 1e-12
    assert nr.lower == pytest.approx(1.0, abs=1e-8)  # the closed form is attained


def _sphere_grid(m: int) -> np.ndarray:
    """Unit vectors of R^3 on an (m, 2m) grid of spherical angles (exhaustive to O(1/m))."""
    phi, psi = np.meshgrid(np.linspace(0, math.pi, m), np.linspace(0, 2 * math.pi, 2 * m))
    return np.stack([np.sin(phi) * np.cos(psi), np.sin(phi) * np.sin(psi), np.cos(phi)], -1)


@pytest.mark.parametrize("p", [3, 4])
@pytest.mark.parametrize("theta", [0.0, 0.35, 0.9, math.pi / 2])
def test_norm_matches_an_exhaustive_grid(p, theta):
    n = 3
    E, _ = tilt_shrink(n, p, core.identity_basis(n), [1.0, 1.0, 0.95], theta=theta)
    X = _sphere_grid(400).reshape(-1, n)
    Ex = np.einsum("i...,ni->n...", E, X)
    for _ in range(p - 1):
        Ex = np.einsum("ni...,ni->n...", Ex, X)
    grid_max = float(np.max(np.abs(Ex)))
    # E has norm 1 by the closed form: the grid stays below it and comes within its spacing.
    assert grid_max <= 1 + 1e-12
    assert grid_max >= 1 - 5e-4


def test_limits_and_scaling():
    for p in (3, 4, 6):
        assert core.tilt_shrink_norm(p, 0.0) == pytest.approx(1.0, rel=1e-12)  # the tilt
        assert core.tilt_shrink_norm(p, math.pi / 2) == pytest.approx(1.0, rel=1e-12)
    # p = 3, theta = 0.7: the closed form of the module docstring by hand.
    a, b = math.cos(0.7) / tilt_norm(3), math.sin(0.7)
    u = a / (3 * (a + b))
    assert core.tilt_shrink_norm(3, 0.7) == pytest.approx(2 * a / 3 * math.sqrt(u), rel=1e-14)
    # The combination is far below cos + sin: the two maximisers are apart.
    assert core.tilt_shrink_norm(3, 0.7) < 0.67 < math.cos(0.7) + math.sin(0.7)


def test_registered_family_with_a_proven_norm():
    assert "tilt-shrink" in core.PERTURBATIONS and "tilt-shrink" in PROVEN_NORMS
    lam = np.r_[np.ones(3), 0.95]
    pert = core.draw_perturbation(
        "tilt-shrink", 4, 3, core.identity_basis(4), lam, rng=0, scale=0.2, params={"theta": 0.6}
    )
    assert pert.norm == pytest.approx(0.2)
    E, _ = tilt_shrink(4, 3, core.identity_basis(4), lam, theta=0.6)
    np.testing.assert_array_equal(pert.E, 0.2 * E)


@pytest.mark.parametrize(
    ("p", "theta", "match"),
    [(5, 0.1, "p = 3 and even"), (3, float("nan"), "finite"), (3, "x", "radians")],
)
def test_bad_arguments_are_refused(p, theta, match):
    with pytest.raises(core.InputError, match=match) as exc:
        core.tilt_shrink_norm(p, theta)
    assert exc.value.hint
