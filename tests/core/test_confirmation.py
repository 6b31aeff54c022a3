"""sshopm's confirmation (sroa_dist/methods/confirmation.py): the exploration finds a basin the
first start set missed, and on held-out small instances ``confirmed`` is never true where a
certified step on the same tensor is higher (issue 24). The instances the rule was developed on
(NOTES: ``make_instance(6, 3, "gaussian", sigma=0.01, rng=0..29)``) are not among the held-out
ones."""

from __future__ import annotations

import numpy as np
import pytest

import sroa_dist as sd
from sroa_dist.methods.ascent import shifted_ascent
from sroa_dist.methods.confirmation import (
    ROUND_COMPLEMENT,
    ROUND_UNIFORM,
    complement_starts,
    explore,
    relevant_points,
)
from sroa_dist.methods.records import METHODS
from sroa_dist.studies.threshold import default_lambdas
from sroa_dist.tensors import identity_basis, rank_one_tensor, sod_tensor

#: A miss: the certified value exceeds the local one by more than this fraction of ‖T_j‖_F.
MISS_RTOL = 1e-6


def test_complement_starts_leave_the_span_of_what_was_found():
    rng = np.random.default_rng(0)
    found = np.zeros((2, 5, 6))
    found[0, :3] = np.eye(6)[:3]  # three axes found
    found[1, :1] = np.ones(6) / np.sqrt(6)
    G = rng.standard_normal((2, 4, 6))
    X = complement_starts(G, found)
    np.testing.assert_allclose(np.linalg.norm(X, axis=-1), 1.0)
    # Up to the 1 % trace kept inside the span, the starts lie in its complement.
    assert np.abs(X[0, :, :3]).max() < 0.03 and np.abs(X[0, :, 3:]).max() > 0.1
    assert np.abs(X[1] @ found[1, 0]).max() < 0.03
    # Nothing found, or everything: uniform starts (the draws themselves, normalised).
    for F in (np.zeros((1, 2, 6)), np.eye(6)[None]):
        np.testing.assert_allclose(
            complement_starts(G[:1], F), G[:1] / np.linalg.norm(G[:1], axis=-1, keepdims=True)
        )


def test_relevant_points_keep_one_point_per_maximum():
    e = np.eye(4)
    X = np.stack([e[0], e[0] * (1 - 1e-9), e[1], e[2], -e[0]])[None]
    F = np.array([[1.0, 1.0, 0.9, 0.2, -1.0]])
    kept = relevant_points(X, F, np.array([1.0]), 0.5)[0]
    rows = kept[np.any(kept != 0, axis=1)]
    np.testing.assert_array_equal(rows, [e[0], e[1]])  # e_2 is far below the best
    new = relevant_points(X, F, np.array([1.0]), np.inf, known=e[None, :1])[0]
    assert np.count_nonzero(np.any(new != 0, axis=1)) == 2  # e_1 and e_2; ±e_0 known


def test_exploration_finds_the_basin_the_first_set_missed():
    """Σ λ_i e_i^{⊗3} with the best component e_5: a first set that reached only e_0..e_4
    (each twice: revision 3's rule would confirm it) is overturned by one complement round,
    and the next round, finding nothing new, confirms the better value."""
    lam = np.array([1.0, 0.99, 0.98, 0.97, 0.96, 1.01])
    T = sod_tensor(lam, identity_basis(6), 3)[None]
    Xs = np.repeat(np.eye(6)[:5], 2, axis=0)[None]
    Fs = np.repeat(lam[:5], 2)[None]

    def ascend(X0, rows):
        X, F, it = shifted_ascent(T[rows], X0, max_iter=100, tol=1e-8)
        return X, F, it

    X, F, confirmed, used, _ = explore(
        ascend, [np.random.default_rng(1)], Xs, Fs, budget=3, relevance=0.5
    )
    assert F.max() == pytest.approx(1.01, abs=1e-9)
    np.testing.assert_allclose(np.abs(X[0, np.argmax(F[0])]), np.eye(6)[5], atol=1e-5)
    assert confirmed[0] and used[0] == 2 * (ROUND_COMPLEMENT + ROUND_UNIFORM)
    # No budget: nothing is confirmed.
    assert not explore(ascend, [np.random.default_rng(1)], Xs, Fs, budget=0, relevance=0.5)[2][0]


def _steps(T: np.ndarray, seed: int, steps: int, **options):
    """Each step of an SROA with sshopm (``options``) and a certified step on the same
    deflated tensor: ``[(local, certified, ‖T_j‖_F)]``."""
    out, R = [], T.copy()
    for j in range(steps):
        local = sd.rank_one(R, "sshopm", rng=seed + j, **options)
        star = sd.rank_one(R, "certified", rng=seed + j, max_gram_size=10**4)
        out.append((local, star, float(np.linalg.norm(R))))
        R = R - rank_one_tensor(local.lam, local.x, 3)
    return out


def _false_confirmations(cases) -> tuple[int, int, int]:
    """``(steps checked, misses, misses marked confirmed)`` over certified steps."""
    checked = missed = false = 0
    for local, star, fro in cases:
        if not star.certified:
            continue
        checked += 1
        miss = star.lam > local.lam + MISS_RTOL * fro
        missed += miss
        false += miss and bool(local.confirmed)
    return checked, missed, false


def test_revision_3_confirmed_steps_that_missed_the_global_one():
    """Not vacuous: on the instances the issue reported, revision 3's 'confirmed' is wrong."""
    rev3 = METHODS["sshopm"].options_at(3)
    cases = []
    for s in (3, 13, 21):  # the first step misses with these solver seeds (measured)
        T = sd.make_instance(6, 3, noise="gaussian", sigma=0.01, rng=s).T_hat
        cases += _steps(T, {3: 1002, 13: 1002, 21: 1009}[s], 1, **rev3)
    checked, missed, false = _false_confirmations(cases)
    assert checked == 3 and missed == 3 and false == 3


def test_confirmed_is_never_true_where_a_certified_step_is_higher_first_steps():
    """Held-out first steps: n = 6-8, λ = 1 and σ = 0.01 (maxima 1 % apart, the hard case),
    two solver seeds each. The set can fail a rule: revision 3's confirms each of its misses
    here (3 of 60 steps, measured)."""
    for options, allowed in ((METHODS["sshopm"].options_at(3), None), ({}, 0)):
        cases = []
        for n in (6, 7, 8):
            for s in range(100, 110):
                T = sd.make_instance(n, 3, noise="gaussian", sigma=0.01, rng=s).T_hat
                for seed in (7, 8):
                    cases += _steps(T, 1000 * s + seed, 1, **options)
        checked, missed, false = _false_confirmations(cases)
        assert checked == len(cases) == 60
        if allowed is None:
            assert false > 0  # revision 3
        else:
            assert false == allowed, f"{false} of {missed} misses confirmed"


def _instance(family: str, n: int, seed: int, eps: float = 0.2) -> tuple[np.ndarray, int]:
    """``(T̂, steps)`` of the families of benchmarks/bench_miss_rate.py, built with
    make_instance: Figure 1 (first step, n = 10, σ up to 0.2), Figure 2 (n = 10, σ = 0.01),
    λ = 1 with σ = 0.01 at size n, and the n-scaling families at ‖E‖ = ε."""
    models = ("binary", "uniform", "gaussian")
    if family == "figure1":
        sigma = (0.02, 0.05, 0.1, 0.2)[seed % 4]
        return sd.make_instance(10, 3, noise=models[seed % 3], sigma=sigma, rng=seed).T_hat, 1
    if family == "figure2":
        return sd.make_instance(10, 3, noise=models[seed % 3], sigma=0.01, rng=seed).T_hat, 10
    if family == "close":
        return sd.make_instance(n, 3, noise="gaussian", sigma=0.01, rng=seed).T_hat, n
    lam = default_lambdas(n)
    kw = {"eps": eps, "rng": seed, "norm_method": "sshopm"}
    if family == "tilt":
        inst = sd.make_instance(n, 3, lambdas=lam, noise="coherent-tilt", **kw)
    elif family == "tiltg":
        inst = sd.make_instance(
            n, 3, basis="random", lambdas=lam, noise="coherent-tilt+gaussian", **kw
        )
    else:
        inst = sd.make_instance(n, 3, noise="gaussian", **kw)
    return inst.T_hat, n


@pytest.mark.slow
@pytest.mark.parametrize("family", ["figure1", "figure2", "close", "tilt", "tiltg", "gauss"])
def test_confirmed_is_never_true_where_a_certified_step_is_higher(family):
    """Held-out whole SROAs (seeds 200-203, not those of benchmarks/bench_miss_rate.py's
    measurement) of the Figure 1/2 instances and the n-scaling families at n = 6-12."""
    cases = []
    for n in (6, 9, 12):
        for s in range(200, 204):
            T, steps = _instance(family, n, s)
            cases += _steps(T, 100 * s, steps)
    checked, missed, false = _false_confirmations(cases)
    assert checked >= 0.9 * len(cases)
    assert false == 0, f"{family}: {false} of {missed} misses confirmed"
