"""The noise-structure diagnostics (sroa_dist.moments.noise_structure) on cases with a known
answer: no perturbation at all, the attractor (whose best direction, overlaps and escape
probability are known), and a model's own sampling noise (reproducible from one seed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sroa_dist import PERTURBATIONS, InputError, random_orthonormal_basis, sod_tensor
from sroa_dist.moments import (
    NoiseStructure,
    make_model,
    noise_structure,
    perturbation_structure,
)
from sroa_dist.studies import escape_probability, start_escapes


def test_the_population_tensor_has_no_noise():
    """At the population moments T̂ = T: ‖E‖ = 0 up to rounding (certified), and q on T + E
    is q on T."""
    model = make_model("gmm", 4, 6, rng=3)
    W = model.whitening()
    lam, V = model.sod(W)
    E = model.whitened_tensor(W) - sod_tensor(lam, V, 3)
    res = perturbation_structure(E, lam, V, rng=1, n_starts=200)
    assert res.eps < 1e-12
    assert res.certified
    assert res.q.hits == res.q_clean.hits
    assert res.q_attractor.q == 1.0  # an attractor of norm ~1e-15 captures nothing
    zero = perturbation_structure(np.zeros_like(E), lam, V, rng=1, n_starts=200)
    assert zero.eps == 0 and zero.q_attractor is None  # no norm to match


def test_the_attractor_is_recognised():
    """E = ε·attractor in a random basis: its best direction is u = Σ v_i/√n (attractor
    overlap 1, every component overlap 1/√n), ‖E‖ = ε, and q on T + E agrees with the escape
    study's q of the same family (other starts) within the binomial spread."""
    n, eps = 12, 0.8
    V = random_orthonormal_basis(n, rng=4)
    E, norm = PERTURBATIONS["attractor"].draw(n, 3, V, np.ones(n), None)
    res = perturbation_structure(eps * E, np.ones(n), V, rng=2, n_starts=600)
    assert res.eps == pytest.approx(eps * norm, rel=1e-6)
    assert res.attractor_overlap == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(res.overlaps, 1 / math.sqrt(n), atol=1e-6)
    assert res.attractor_overlap_random < 0.5  # a random direction is far from u
    assert 0.05 < res.q.q < 0.95  # this ε captures some starts, not all
    assert res.q_clean.q > 0.95
    ref = res.q_attractor
    assert abs(res.q.q - ref.q) < 4 * math.sqrt(ref.q * (1 - ref.q) / 600) + 0.01


def test_isotropic_noise_is_not_attractor_like():
    """A Gaussian symmetric perturbation's best direction overlaps the components about as a
    random direction does, far from the attractor's 1."""
    n = 8
    rng = np.random.default_rng(7)
    G = rng.standard_normal((n, n, n))
    V = random_orthonormal_basis(n, rng=5)
    res = perturbation_structure(0.05 * G, np.full(n, 2.0), V, rng=3, n_starts=200)
    assert res.attractor_overlap < 0.8
    assert res.component_overlap < 0.9
    assert res.q.q > 0.9  # small noise: the starts still reach components


def test_the_shared_escape_count_is_the_escape_study_s():
    """start_escapes on the formed tensor counts what escape_probability counts on the
    attractor's factored form (identity basis, same seed)."""
    n, eps, iters = 10, 0.7, 12
    V = np.eye(n)
    E, _ = PERTURBATIONS["attractor"].draw(n, 3, V, np.ones(n), None)
    T = sod_tensor(np.ones(n), V, 3) + eps * E
    hits = start_escapes(T[None], V, 3, 300, iters, rng=11)
    assert hits == escape_probability(n, eps, n_starts=300, n_iter=iters, rng=11).hits


@pytest.mark.parametrize("kind, d", [("topics", 30), ("ica", 4)])
def test_a_model_s_sampling_noise_is_measured_reproducibly(kind, d):
    model = make_model(kind, 4, d, rng=1)
    a = noise_structure(model, 3000, rng=9, n_starts=100)
    b = noise_structure(model, 3000, rng=9, n_starts=100)
    assert isinstance(a, NoiseStructure)
    assert a.to_dict() == b.to_dict()
    assert (a.kind, a.n_samples, a.p) == (kind, 3000, model.order)
    assert a.eps > 0 and a.certified
    assert a.global_ratio == pytest.approx(a.eps / (a.lambda_min * 4 ** (-1 / (model.order - 1))))
    assert a.power_ratio == pytest.approx(a.eps * 4 / a.lambda_min)
    pop = noise_structure(model, 3000, rng=9, n_starts=100, whitening="population")
    assert pop.eps != a.eps  # the estimated whitening adds its own error


def test_bad_input_is_refused():
    model = make_model("gmm", 3, 5, rng=1)
    with pytest.raises(InputError, match="whitening"):
        noise_structure(model, 100, whitening="sample")
    with pytest.raises(InputError, match="orthonormal"):
        perturbation_structure(np.zeros((3, 3, 3)), np.ones(3), np.ones((3, 3)))
    with pytest.raises(InputError, match="lambdas, V"):
        perturbation_structure(np.zeros((3, 3, 3)), np.ones(2), np.eye(3))
