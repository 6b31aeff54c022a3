"""A first-crossing search that evaluates several ε per round (``k_section``): the same trace
and bracket on one evaluator or many, the same first crossing as the sequential search, and
``k_section = 1`` the sequential search itself."""

from __future__ import annotations

import dataclasses
import math
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

from sroa_dist import find_threshold
from sroa_dist.studies.first_crossing import (
    SCAN_FACTOR,
    first_crossing,
    max_evals,
    section_points,
)

RANGE = (0.02, 1.5)


def _step(truth: float):
    """Passes exactly up to ``truth`` (inclusive), metric ε / truth."""

    def evaluate(eps: float) -> tuple[float, bool]:
        return eps / truth, eps <= truth

    return evaluate


def _windowed(eps: float) -> tuple[float, bool]:
    """The issue's non-monotone pattern: fails 0.15-0.40, passes again 0.40-0.50."""
    passed = eps < 0.15 or 0.40 <= eps < 0.50
    return (0.4 if passed else 0.6), passed


def _pooled(evaluate, pool):
    """``evaluate_many`` that maps a round over ``pool`` (``None``: in order, here)."""

    def many(points):
        return (
            list(pool.map(evaluate, points)) if pool is not None else [evaluate(e) for e in points]
        )

    return many


def _truths() -> list[float]:
    """Crossings all over the range: log-spaced, on scan points of both phases and just off
    them (where a float could tip a verdict)."""
    out = list(np.geomspace(0.021, 1.49, 97))
    for k in range(20):
        for g in (RANGE[0] * SCAN_FACTOR**k, RANGE[0] * SCAN_FACTOR ** (k + 0.5)):
            if g < RANGE[1]:
                out += [g, g * (1 + 1e-9), g * (1 - 1e-9)]
    return [t for t in out if RANGE[0] <= t < RANGE[1]]


@pytest.mark.parametrize("k", [2, 3, 4, 7])
@pytest.mark.parametrize("rtol", [0.01, 0.1])
@pytest.mark.parametrize("phases", [1, 2])
def test_k_section_reaches_the_sequential_first_crossing(k, rtol, phases):
    """On a monotone criterion both searches bracket the true crossing to rtol, with the same
    scan bracket's crossing, and within max_evals."""
    bound = max_evals(RANGE, rtol, phases, k)
    for truth in _truths():
        seq = first_crossing(_step(truth), eps_range=RANGE, rtol=rtol, scan_phases=phases)
        par = first_crossing(
            _step(truth), eps_range=RANGE, rtol=rtol, scan_phases=phases, k_section=k
        )
        for res in (seq, par):
            lo, hi = res.bracket
            assert res.reached and not res.non_monotone
            assert lo <= truth < hi and hi / lo - 1 <= rtol, (truth, res.bracket)
            assert all(e.passed == (e.eps <= truth) for e in res.trace)
        # The same first crossing: the two brackets overlap (both hold the truth), and the
        # scans found the same first failure.
        assert max(seq.bracket[0], par.bracket[0]) < min(seq.bracket[1], par.bracket[1])
        assert par.n_evals <= bound and par.k_section == k and seq.k_section == 1
        assert par.scan_resolution == seq.scan_resolution


def test_a_truth_above_the_range_and_below_it():
    for k in (1, 3):
        res = first_crossing(_step(2.0), eps_range=RANGE, rtol=0.01, k_section=k)
        assert not res.reached and res.bracket == (1.5, math.inf)
        res = first_crossing(_step(0.01), eps_range=RANGE, rtol=0.01, k_section=k)
        assert res.bracket == (0.0, 0.02)


def test_one_section_point_is_the_bisection_and_k_points_split_the_log_width():
    lo, hi = 0.2, 0.25
    assert section_points(lo, hi, 1, 0.01) == [math.sqrt(lo * hi)]
    pts = section_points(lo, hi, 4, 1e-6)
    steps = np.diff(np.log([lo, *pts, hi]))
    np.testing.assert_allclose(steps, math.log(hi / lo) / 5, rtol=1e-12)
    # The last round takes only the points it needs to reach rtol.
    assert len(section_points(0.2, 0.2 * 1.03, 4, 0.01)) == 2


@pytest.mark.parametrize("k", [1, 3, 4])
def test_non_monotone_criterion_is_handled_as_sequentially(k):
    res = first_crossing(_windowed, eps_range=RANGE, rtol=0.01, k_section=k)
    lo, hi = res.bracket
    assert lo < 0.15 <= hi and hi / lo - 1 <= 0.01
    assert res.non_monotone and res.artefacts == 0
    assert any(e.passed and e.eps > 0.4 for e in res.trace)


@pytest.mark.parametrize("k", [1, 3, 4])
def test_trace_and_bracket_are_the_same_on_1_2_and_4_threads(k):
    """A round's points never depend on the evaluators: the trace (every field, in order) and
    the bracket are equal whether a round runs in order or on 2 or 4 threads."""
    results = []
    for workers in (None, 1, 2, 4):
        pool = None if workers is None else ThreadPoolExecutor(workers)
        try:
            res = first_crossing(
                evaluate_many=_pooled(_windowed, pool), eps_range=RANGE, rtol=0.01, k_section=k
            )
        finally:
            if pool is not None:
                pool.shutdown()
        results.append(res)
    for res in results[1:]:
        assert _bits(res) == _bits(results[0])


def test_k_section_1_is_the_sequential_search_evaluation_for_evaluation():
    """evaluate_many with k = 1 makes the calls evaluate makes, in the same order."""
    seen: list[float] = []

    def evaluate(eps):
        seen.append(eps)
        return _windowed(eps)

    seq = first_crossing(evaluate, eps_range=RANGE, rtol=0.01)
    calls = list(seen)
    seen.clear()
    many = first_crossing(
        evaluate_many=lambda pts: [evaluate(e) for e in pts], eps_range=RANGE, rtol=0.01
    )
    assert seen == calls and _bits(many) == _bits(seq)


def test_bad_k_section_and_evaluators_are_refused():
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="k_section"):
            first_crossing(_step(0.2), k_section=bad)
    with pytest.raises(ValueError, match="evaluate"):
        first_crossing()
    with pytest.raises(ValueError, match="evaluate"):
        first_crossing(_step(0.2), evaluate_many=lambda pts: [])
    with pytest.raises(ValueError, match="k_section"):
        find_threshold(6, 3, k_section=0, rng=0)


@pytest.mark.parametrize("matrix_free", [False, True])
def test_find_threshold_is_the_same_on_1_2_and_4_processes(matrix_free):
    """A real search (n = 8, p = 3, coherent tilt, k = 3, dense and matrix-free): the trace,
    every field, and the bracket from worker processes (which rebuild the instance from the
    seeds) equal those of the search in this process."""
    kwargs = dict(
        c=0.5, eps_range=(0.05, 1.5), rtol=0.03, rng=3, k_section=3, matrix_free=matrix_free
    )
    here = find_threshold(8, 3, **kwargs)
    assert here.k_section == 3 and here.reached
    for workers in (1, 2, 4):
        with ProcessPoolExecutor(workers) as pool:
            there = find_threshold(8, 3, executor=pool, **kwargs)
        assert _bits(there) == _bits(here)


def _bits(res) -> str:
    """Every field of a result, floats to the last bit (repr round-trips; NaN equals NaN)."""
    return repr(dataclasses.astuple(res))


@pytest.mark.slow
def test_find_threshold_on_a_dask_cluster_is_the_same(client):
    """A Dask client as the executor (two worker processes of the shared LocalCluster): the
    same trace and bracket as in this process."""
    kwargs = dict(c=0.5, eps_range=(0.05, 1.5), rtol=0.03, rng=4, k_section=4)
    here = find_threshold(10, 3, **kwargs)
    there = find_threshold(10, 3, executor=client, **kwargs)
    assert _bits(there) == _bits(here)
