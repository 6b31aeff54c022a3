"""A perturbation planted against a fixed-seed norm estimate (shared by the worst-case tests)."""

from __future__ import annotations

import numpy as np

import sroa_dist as core
from sroa_dist.methods.ascent import random_starts

#: One start, no spectral starts, no confirmation: a fixed-seed SS-HOPM small enough that a
#: plant can sit outside its one basin (the mechanism of issue 33, where a search learned to
#: hide from a larger start set).
ONE_START = {"n_starts": 1, "n_spectral": 0, "max_starts": 1}


def _cube(x: np.ndarray) -> np.ndarray:
    return np.einsum("i,j,k->ijk", x, x, x)


def planted(n: int = 6, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """``(E, V)``: ``E = 0.8 w^{⊗3} + v_n^{⊗3}`` with ``w`` the one start of a ``ONE_START``
    SS-HOPM seeded ``seed``, projected off the component ``v_n`` (``V`` the identity). ``E``
    is odeco, so ``‖E‖ = 1`` exactly, attained at ``v_n``; the seeded ascent stays at ``w``
    and reports 0.8."""
    V = core.identity_basis(n)
    x0 = random_starts([np.random.default_rng(seed)], 1, n)[0, 0]
    u = V[:, -1]
    w = x0 - (x0 @ u) * u
    w /= np.linalg.norm(w)
    return 0.8 * _cube(w) + _cube(u), V
