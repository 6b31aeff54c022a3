"""The norm a worst-case search rescales by cannot be fooled the way a fixed-seed estimate can: a
planted spike hidden at a component direction from a fixed seed's start is caught by the
certified bracket, by the fresh-seed estimate's component starts, and ``worst_case`` rescales
it to its certified norm; where the norm is only an estimate the result says so."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import sroa_dist as core
from sroa_dist.studies.search_norm import SearchNorm
from tests.support.planted import ONE_START, planted

# The module (the studies door's ``worst_case`` is the function of the same name).
wc = importlib.import_module("sroa_dist.studies.worst_case")


def test_a_planted_spike_fools_a_fixed_seed_but_not_the_certified_bracket():
    E, V = planted()
    fooled = core.operator_norm(E, "sshopm", rng=3, **ONE_START)
    assert fooled.value == pytest.approx(0.8, rel=1e-9)  # the fixed seed misses the spike
    cert = core.operator_norm(E, "certified", rng=0)
    assert cert.certified and cert.lower == pytest.approx(1.0, rel=1e-9)
    assert cert.lower > 1.2 * fooled.value  # a rescale by the estimate: ‖E‖ 25 % above eps
    # The search's local norm, restricted to the same single start per evaluation, still finds
    # it: the component starts ±v_i climb to the spike.
    norm = SearchNorm("sshopm", 3, V, ONE_START)
    nr = norm(E, 0, [])
    assert nr.value == pytest.approx(1.0, rel=1e-9) and abs(nr.x @ V[:, -1]) > 1 - 1e-6
    assert nr.upper >= nr.value


def test_worst_case_rescales_a_planted_start_to_its_certified_norm():
    E, _ = planted()
    eps = 0.1
    for norm_method in (None, "sshopm"):  # default (certified) and the fresh-seed estimate
        res = core.worst_case(6, 3, eps, starts=[E], budget=1, rng=0, norm_method=norm_method)
        assert res.start == "given-0" and res.norm_certified and res.ratio_kind == "certified"
        lo, hi = res.norm_bracket
        assert lo == pytest.approx(eps, rel=1e-12) and hi - lo <= 1e-6 * np.linalg.norm(res.E)
        # E = eps·E_planted/‖E_planted‖ with the certified norm (1), not the fooled one (0.8).
        np.testing.assert_allclose(res.E, eps * E, rtol=1e-9, atol=1e-15)
        assert core.operator_norm(res.E, "certified", rng=1).value == pytest.approx(eps, rel=1e-9)


def test_a_certified_worst_case_reports_error_over_the_certified_upper_bound():
    eps = 0.2
    res = core.worst_case(4, 3, eps, budget=3, rng=2, starts=("coherent-tilt", "gaussian"))
    assert res.norm_certified and res.ratio_kind == "certified"
    assert res.ratio == np.max(res.lam_err) / res.norm_bracket[1]
    # Recomputed independently: certified SROA on T + E and the certified norm.
    T = core.sod_tensor(res.lambdas, res.V, 3)
    m = core.match(core.sroa(T + res.E, method="certified", rng=5), res.lambdas, res.V)
    nr = core.operator_norm(res.E, "certified", rng=5)
    assert nr.certified
    assert res.ratio == pytest.approx(np.max(m.lam_err) / nr.upper, rel=1e-6)
    # value (error over the attained eps) bounds the ratio from above, ratio from below.
    assert res.ratio <= res.value <= res.ratio * (1 + 1e-6)


def test_an_uncertified_norm_labels_the_ratio_a_lower_bound(monkeypatch):
    # Where the relaxation is out of reach (pretended here at n = 4, to keep the test small)
    # the search's norm is the fresh-seed estimate and the final E cannot be certified.
    monkeypatch.setattr(wc, "certified_tractable", lambda n, p: False)
    eps = 0.3
    kw = dict(budget=2, rng=1, starts=("gaussian",), n_random_starts=2, method="gradient")
    res = core.worst_case(4, 3, eps, **kw)
    assert (res.step_method, res.norm_method) == ("sshopm", "sshopm")
    assert not res.norm_certified and res.ratio_kind == "lower-bound"
    lo, hi = res.norm_bracket
    assert lo == pytest.approx(eps, rel=1e-12) and hi > lo * (1 + 1e-3)  # the unfolding bound
    assert res.ratio == np.max(res.lam_err) / hi < res.value


def test_fresh_streams_are_a_pure_function_of_seed_and_index():
    E = core.noise_tensor("gaussian", 5, 3, 1.0, rng=0)
    V = core.identity_basis(5)
    norm = SearchNorm("sshopm", 11, V, {"n_starts": 2, "n_spectral": 0, "max_starts": 2})
    a, b = norm(E, 4, []), SearchNorm("sshopm", 11, V, norm.options)(E, 4, [])
    assert a.value == b.value and np.array_equal(a.x, b.x)  # same (seed, k): same bits
    # Each evaluation draws its own starts: the streams of k = 0 and k = 1 differ.
    s0 = np.random.default_rng(np.random.SeedSequence([11, 0])).standard_normal(3)
    s1 = np.random.default_rng(np.random.SeedSequence([11, 1])).standard_normal(3)
    assert not np.array_equal(s0, s1)


def test_a_given_start_must_be_a_nonzero_tensor_of_the_searched_shape():
    for bad in (np.zeros((4, 4, 4)), np.ones((5, 5, 5))):
        with pytest.raises(core.InputError, match=r"starts\[1\]: expected a nonzero") as exc:
            core.worst_case(4, 3, 0.1, starts=["sod-shrink", bad], rng=0)
        assert exc.value.hint


def test_a_search_with_fresh_norm_seeds_is_a_pure_function_of_its_inputs():
    kw = dict(method="gradient", norm_method="sshopm", budget=5, rng=4, starts=("gaussian",))
    a, b = core.worst_case(4, 3, 0.3, **kw), core.worst_case(4, 3, 0.3, **kw)
    np.testing.assert_array_equal(a.trace, b.trace)
    np.testing.assert_array_equal(a.E, b.E)
    assert a.norm_bracket == b.norm_bracket and a.ratio == b.ratio
