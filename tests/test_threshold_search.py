"""First-crossing threshold search: synthetic metrics with known ε*, and real SROA searches."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sroa_dist
from sroa_dist.criteria import DEFAULT_RADIUS, DEFAULT_VALUE_C, RUN_CRITERIA
from sroa_dist.threshold_search import (
    CONTINUE_POINTS,
    SCAN_FACTOR,
    _Draw,
    _seed,
    default_lambdas,
    find_threshold,
    first_crossing,
)


def _step(truth: float):
    """Metric ε / ε*: passes (metric ≤ 1) exactly below ε* (inclusive)."""

    def evaluate(eps: float) -> tuple[float, bool]:
        return eps / truth, eps <= truth

    return evaluate


@pytest.mark.parametrize("truth", [0.0313, 0.2, 0.4444, 1.2])
@pytest.mark.parametrize("rtol", [0.001, 0.01, 0.1])
def test_monotone_bracket_holds_truth_to_rtol(truth, rtol):
    res = first_crossing(_step(truth), eps_range=(0.02, 1.5), rtol=rtol)
    lo, hi = res.bracket
    assert res.reached and not res.non_monotone
    assert lo <= truth < hi  # lo passed, hi failed: the crossing lies in (lo, hi]
    assert hi / lo - 1 <= rtol
    assert res.eps_star == hi
    assert res.n_evals == len(res.trace)
    # Every recorded verdict is the metric's own, and the scan went upward from the start.
    assert all(ok == (e <= truth) for e, _, ok in res.trace)
    assert res.trace[0][0] == 0.02


def test_scan_then_continue_then_bisect_evaluation_count():
    truth = 0.2
    res = first_crossing(_step(truth), eps_range=(0.02, 1.5), rtol=0.01)
    scan = [0.02 * SCAN_FACTOR**k for k in range(20)]
    first_fail = next(k for k, e in enumerate(scan) if e > truth)
    evals = [e for e, _, _ in res.trace]
    np.testing.assert_allclose(evals[: first_fail + 1 + CONTINUE_POINTS], scan[: first_fail + 7])
    # Bisection halves log(hi/lo) each time: ceil(log2(log 1.25 / log 1.01)) = 5 steps.
    n_bisect = math.ceil(math.log2(math.log(SCAN_FACTOR) / math.log(1.01)))
    assert res.n_evals == first_fail + 1 + CONTINUE_POINTS + n_bisect


def test_non_monotone_first_crossing_and_flag():
    # The example (p = 3, n = 32, c = 0.5): passes up to 0.14, fails 0.16-0.37,
    # passes at 0.43, fails again from 0.50. The first crossing (0.15) is the answer.
    def evaluate(eps):
        passed = eps < 0.15 or 0.40 <= eps < 0.50
        return (0.4 if passed else 0.6), passed

    res = first_crossing(evaluate, eps_range=(0.02, 1.5), rtol=0.01)
    lo, hi = res.bracket
    assert lo < 0.15 <= hi and hi / lo - 1 <= 0.01
    assert res.non_monotone
    assert any(ok and e > 0.4 for e, _, ok in res.trace)


def test_monotone_is_not_flagged_even_with_continued_scan():
    res = first_crossing(_step(0.5), eps_range=(0.02, 1.5), rtol=0.01)
    assert not res.non_monotone


def test_flat_metric_is_not_reached():
    res = first_crossing(lambda eps: (0.0, True), eps_range=(0.02, 1.5), rtol=0.01)
    assert not res.reached
    assert res.eps_star == math.inf
    assert res.bracket == (1.5, math.inf)
    assert res.trace[-1][0] == 1.5  # the range's end is evaluated
    assert not res.non_monotone


def test_failure_at_the_start_is_a_crossing_below_the_range():
    res = first_crossing(_step(0.01), eps_range=(0.02, 1.5), rtol=0.01)
    assert res.reached and res.bracket == (0.0, 0.02) and res.eps_star == 0.02


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"eps_range": (0.5, 0.1)}, "eps_range"),
        ({"eps_range": (0.0, 1.0)}, "eps_range"),
        ({"eps_range": "wide"}, "eps_range"),
        ({"rtol": 0.0}, "rtol"),
        ({"rtol": 0.5}, "rtol"),
    ],
)
def test_bad_search_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        first_crossing(_step(0.2), **kwargs)


def test_criteria_match_the_analysis_registry():
    from sroa_dist.analysis import CRITERIA

    assert set(RUN_CRITERIA) == set(CRITERIA)
    assert CRITERIA["recovery"].options["radius"] == DEFAULT_RADIUS
    assert CRITERIA["value"].options["c"] == DEFAULT_VALUE_C


def test_run_criteria_metrics():
    lam_err, vec_err, lam = np.array([0.01, 0.05]), np.array([0.2, 0.1]), np.array([1.0, 0.5])
    value = RUN_CRITERIA["value"]
    assert value.evaluate(lam_err, vec_err, 0.1, lam, 0.5) == (pytest.approx(0.5), True)
    assert value.evaluate(lam_err, vec_err, 0.1, lam, 0.49)[1] is False
    assert RUN_CRITERIA["recovery"].evaluate(lam_err, vec_err, 0.1, lam, 0.2)[1] is True
    # Theorem 3.1: |λ̂ − λ| ≤ 2ε and ‖v̂ − v‖ ≤ 20ε/λ; worst ratio 0.2 / (20·0.01/1) = 1.
    m, ok = RUN_CRITERIA["theorem"].evaluate(lam_err, vec_err, 0.01, lam)
    assert m == pytest.approx(2.5) and not ok  # 0.05 / 0.02 on the λ bound


def test_find_threshold_argument_errors():
    with pytest.raises(ValueError, match="criterion"):
        find_threshold(6, 3, criterion="bogus")
    with pytest.raises(ValueError, match="c:"):
        find_threshold(6, 3, c=-1.0)
    with pytest.raises(ValueError, match="eps_range"):
        find_threshold(6, 3, eps_range=(1.0, 0.5))
    with pytest.raises(ValueError, match="rng"):
        find_threshold(6, 3, rng="seed")
    with pytest.raises(ValueError, match="noise"):
        find_threshold(6, 3, family="no-such-family")


def test_instance_is_the_sweeps_instance():
    """At a given ε, the search's tensor is bit for bit the one a tensor sweep solves."""
    from sroa_dist.sweep.grid import block_task, instance_seed, make_layout
    from sroa_dist.sweep.spec import spec_from_dict
    from sroa_dist.sweep.worker import draw_group

    n, p, eps = 6, 3, 0.3
    lam = default_lambdas(n)
    spec = spec_from_dict(
        {
            "name": "thr",
            "seed": 11,
            "replicates": 2,
            "tensor": {"n": n, "p": p, "basis": "random", "lambdas": lam.tolist()},
            "noise": {"model": "coherent-tilt", "eps": eps},
            "solver": {"method": "sshopm"},
        }
    )
    task = block_task(spec, make_layout(spec), 0)
    members = [(st, rep) for _, st, rep in task.instances(spec)]
    drawn = draw_group(spec, members)
    for b, (st, rep) in enumerate(members):
        inst_ss, _, norm_ss = _seed(instance_seed(spec.seed, st, rep)).spawn(3)
        draw = _Draw(n, p, "coherent-tilt", lam, None, None, inst_ss, norm_ss, "sshopm", {})
        T, E, lam_b, V = draw.scaled(eps)
        np.testing.assert_array_equal(T + E, drawn.T_hat[b])
        np.testing.assert_array_equal(V, drawn.instances[b].V)


@pytest.mark.slow
def test_find_threshold_matches_an_independent_fine_scan():
    """p = 3, n = 8 coherent tilt, value criterion c = 0.5: the bracket agrees with a scan on
    its own grid (×1.05, then 0.5 % steps) over tensors built through ``make_instance(eps=)``
    (E scaled inside make_instance, not by the search's rule) and matched with ``match``."""
    n, p, c, seed = 8, 3, 0.5, 5
    res = find_threshold(n, p, c=c, eps_range=(0.2, 1.5), rng=seed)
    assert res.reached and res.criterion == "value" and res.c == c
    assert res.certified_fraction == 0.0  # sshopm certifies nothing
    assert res.bracket[1] / res.bracket[0] - 1 <= 0.01
    inst_ss, solve_ss, _ = np.random.SeedSequence(seed).spawn(3)

    def passes(eps):
        inst = sroa_dist.make_instance(
            n,
            p,
            basis="random",
            lambdas=default_lambdas(n),
            noise="coherent-tilt",
            eps=eps,
            rng=np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[0]),
        )
        out = sroa_dist.sroa(
            inst.T_hat, method="sshopm", rng=np.random.SeedSequence(seed).spawn(3)[1]
        )
        m = sroa_dist.match(out, inst.lambdas, inst.V)
        return float(np.max(m.lam_err)) <= c * eps

    eps, last_pass = 0.2, None
    while passes(eps):
        last_pass, eps = eps, eps * 1.05
    assert last_pass is not None
    fine = last_pass
    while fine * 1.005 < eps and passes(fine * 1.005):
        fine *= 1.005
    reference = min(fine * 1.005, eps)  # first failing point of the fine grid
    assert res.eps_star == pytest.approx(reference, rel=0.015)


def test_given_basis_is_used_and_checked():
    V, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((5, 5)))
    inst = sroa_dist.make_instance(5, 3, V=V, noise="coherent-tilt", eps=0.1, rng=1)
    np.testing.assert_array_equal(inst.V, V)
    with pytest.raises(ValueError, match="orthonormal"):
        sroa_dist.make_instance(5, 3, V=2 * V, noise="coherent-tilt", eps=0.1, rng=1)
