"""User-defined perturbation families for the tests, referred to by import path
(``"tests.support.perturb_user_family:rank_one"``) as a spec would; also malformed ones for the
error tests."""

from __future__ import annotations

import numpy as np


def rank_one(n, p, V, lambdas, rng, *, strength=1.0):
    """``strength · w^{⊗p}`` with ``w`` uniform on the sphere: operator norm exactly
    ``|strength|`` (``max |(w·x)^p| = 1``), a new ``w`` per replicate."""
    w = rng.standard_normal(n)
    w /= np.linalg.norm(w)
    E = w
    for _ in range(p - 1):
        E = np.multiply.outer(E, w)
    return strength * E, abs(strength)


def not_symmetric(n, p, V, lambdas, rng):
    return rng.standard_normal((n,) * p), 1.0


def wrong_shape(n, p, V, lambdas, rng):
    return np.zeros((n,) * (p - 1)), 1.0


def norm_missing(n, p, V, lambdas, rng):
    return np.zeros((n,) * p)


NOT_CALLABLE = 3


def lying(n, p, V, lambdas, rng):
    """A rank-one ``w^{⊗p}`` (norm 1) that claims a norm of 1e-9: a user's claim, not a proof."""
    E, _ = rank_one(n, p, V, lambdas, rng)
    return E, 1e-9


def not_finite(n, p, V, lambdas, rng):
    """Symmetric but with NaN entries: validate must refuse it before any worker runs it."""
    return np.full((n,) * p, np.nan), 1.0
