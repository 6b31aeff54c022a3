"""Perturbations on a k-dimensional subspace: ‖C ×_i U‖ = ‖C‖ (the certified k-dimensional
norm equals the certified n-dimensional one), the core round-trips, bad bases are refused."""

from __future__ import annotations

import numpy as np
import pytest

import sroa_dist as core
from sroa_dist.problems.subspace import subspace_core, subspace_norm, subspace_tensor


def test_norm_is_the_k_dimensional_norm():
    gen = np.random.default_rng(4)
    C = core.symmetrize(gen.standard_normal((3, 3, 3)))
    U = core.random_orthonormal_basis(6, 3, rng=5)
    E = subspace_tensor(C, U)
    assert E.shape == (6, 6, 6)
    small, big = subspace_norm(C), core.operator_norm(E, "certified", rng=0)
    assert small.certified and big.certified
    # Both brackets are validated: they must overlap, and both are tight.
    assert small.lower <= big.upper + 1e-12 and big.lower <= small.upper + 1e-12
    assert small.lower == pytest.approx(big.lower, rel=1e-7)
    np.testing.assert_allclose(subspace_core(E, U), C, atol=1e-12)


def test_bad_bases_are_refused():
    C = core.symmetrize(np.random.default_rng(0).standard_normal((2, 2, 2)))
    with pytest.raises(core.InputError, match="orthonormal") as exc:
        subspace_tensor(C, np.ones((5, 2)))
    assert exc.value.hint
    with pytest.raises(core.InputError, match="dimension"):
        subspace_tensor(C, core.random_orthonormal_basis(5, 3, rng=0))
