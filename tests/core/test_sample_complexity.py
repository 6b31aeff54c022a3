"""The search for N* (``sroa_dist.studies.sample_complexity``): on synthetic success curves with
a known N* the bracket holds it and is as narrow as asked, whatever k_section; the rounds'
sizes never depend on how they are evaluated; the first-crossing search keeps its own scan
when the N search passes another factor; bad arguments are refused by name."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sroa_dist.errors import InputError
from sroa_dist.studies import max_size_evals, sample_size_search
from sroa_dist.studies.first_crossing import first_crossing, max_evals


def _step_curve(n_star: int, draws: int, calls: list | None = None):
    """Successes of a monotone curve: every draw fails below ``n_star``, succeeds from it."""

    def successes(sizes):
        if calls is not None:
            calls.append(list(sizes))
        return [draws if n >= n_star else 0 for n in sizes]

    return successes


@pytest.mark.parametrize("n_star", [137, 1000, 4321, 77_777])
@pytest.mark.parametrize("k_section", [1, 3])
def test_a_step_curve_is_bracketed_to_rtol(n_star, k_section):
    res = sample_size_search(
        _step_curve(n_star, 10), draws=10, n_range=(100, 10**6), rtol=0.05, k_section=k_section
    )
    lo, hi = res.bracket
    assert res.reached and lo < n_star <= hi and res.n_star == hi
    assert hi / lo - 1 <= 0.05 + 2 / lo  # rtol, up to the rounding of sizes to integers
    assert not res.non_monotone
    assert res.n_evals <= max_size_evals((100, 10**6), 0.05, 1, k_section)
    # Every evaluation below N* failed, every one from it succeeded; the interval is the
    # evaluated sizes next to the crossing (both fractions resolved: 0/10 and 10/10).
    assert all((e.fraction >= 0.5) == (e.n >= n_star) for e in res.trace)
    assert res.interval == (lo, hi)
    assert res.ends[0][1] < 0.5 < res.ends[1][0]


def test_a_smooth_binomial_curve_lands_near_its_median():
    """P(success | N) = logistic(4 log(N / 3000)); draws seeded by (N, draw) only, so the
    search is a pure function of the curve. With 400 draws per size the crossing lies within
    the bracket widened by the binomial noise (a few per cent in N)."""
    n_half, draws = 3000, 400

    def successes(sizes):
        out = []
        for n in sizes:
            p = 1 / (1 + (n / n_half) ** -4.0)
            rng = np.random.default_rng([n, 11])
            out.append(int((rng.random(draws) < p).sum()))
        return out

    res = sample_size_search(successes, draws=draws, n_range=(100, 10**6), rtol=0.05)
    lo, hi = res.bracket
    assert 0.85 * n_half < hi and lo < 1.15 * n_half
    low, high = res.interval
    assert low < n_half < high
    again = sample_size_search(successes, draws=draws, n_range=(100, 10**6), rtol=0.05)
    assert again == res


def test_sizes_are_integers_evaluated_once_and_rounds_do_not_depend_on_the_evaluator():
    calls: list = []
    res = sample_size_search(
        _step_curve(5000, 4, calls), draws=4, n_range=(100, 10**6), rtol=0.1, k_section=2
    )
    sizes = [n for c in calls for n in c]
    assert len(sizes) == len(set(sizes)) and all(isinstance(n, int) for n in sizes)
    assert all(len(c) <= 2 for c in calls)  # k_section sizes a round, at most
    # The scan: 100 * 2^j upward (factor 2), two sizes a round.
    assert calls[0] == [100, 200]
    assert [e.n for e in res.trace][: len(sizes)] == sizes


def test_a_curve_that_never_reaches_one_half_is_not_reached():
    res = sample_size_search(lambda sizes: [1] * len(sizes), draws=4, n_range=(10, 1000))
    assert not res.reached and res.n_star == math.inf
    assert res.bracket == (1000, math.inf)


def test_a_failure_above_the_first_success_is_non_monotone():
    # Succeeds at 1600 only, fails at its continued point 3200.
    def successes(sizes):
        return [4 if n == 1600 else 0 for n in sizes]

    res = sample_size_search(successes, draws=4, n_range=(100, 10**5), rtol=0.2)
    assert res.non_monotone and res.bracket[1] == 1600


def test_the_default_first_crossing_scan_is_unchanged_by_the_new_keywords():
    """scan_factor and continue_points default to the threshold search's: the same trace."""

    def evaluate(eps):
        return eps, eps < 0.3

    a = first_crossing(evaluate, eps_range=(0.02, 1.5), rtol=0.01)
    b = first_crossing(
        evaluate, eps_range=(0.02, 1.5), rtol=0.01, scan_factor=1.25, continue_points=6
    )
    assert a == b
    assert max_evals((0.02, 1.5), 0.01) == max_evals(
        (0.02, 1.5), 0.01, scan_factor=1.25, continue_points=6
    )
    c = first_crossing(
        evaluate, eps_range=(0.02, 1.5), rtol=0.1, scan_factor=2.0, continue_points=0
    )
    assert [e.eps for e in c.trace][:3] == [0.02, 0.04, 0.08]
    assert c.bracket[0] < 0.3 <= c.bracket[1]


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"draws": 0}, "draws"),
        ({"draws": 4, "n_range": (100, 50)}, "n_range"),
        ({"draws": 4, "n_range": "x"}, "n_range"),
        ({"draws": 4, "scan_factor": 1.0}, "scan_factor"),
        ({"draws": 4, "continue_points": -1}, "continue_points"),
        ({"draws": 4, "rtol": 1.5}, "rtol"),
        ({"draws": 4, "level": 1.0}, "level"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, named):
    with pytest.raises(InputError, match=named):
        sample_size_search(lambda s: [0] * len(s), **kwargs)
