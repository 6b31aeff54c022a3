"""The global check of local SROA steps (sroa_dist/decomposition/global_check.py,
``sroa(global_check=True, redo=True)``): a planted case whose global maximum is known (a positive
gap for a local step, none for a global one), redoing a step on the global branch, certified steps,
matrix-free operators, and the issue's non-global step at p = 3, n = 128."""

from __future__ import annotations

import numpy as np
import pytest

import sroa_dist as sd
from sroa_dist.decomposition.global_check import (
    CHECK_ESTIMATES,
    GLOBAL_RTOL,
    check_step,
    estimate_values,
    remaining_estimates,
)
from sroa_dist.methods.ascent import Deflation
from sroa_dist.methods.records import METHODS
from sroa_dist.studies.threshold import default_lambdas
from sroa_dist.tensors import identity_basis, sod_tensor

#: A planted SOD tensor: its global maximum over the sphere is λ_1 = 1 at e_1 (the others are
#: local maxima), so a step that takes e_2 misses it by exactly 0.4.
LAM = np.array([1.0, 0.6, 0.5, 0.3, 0.2])


def _planted():
    return sod_tensor(LAM, identity_basis(5), 3)


def test_the_check_reports_the_known_gap_of_a_local_step_and_none_for_a_global_one():
    T = _planted()[None]
    E = np.eye(5)
    base = estimate_values(T, E)
    np.testing.assert_allclose(base, LAM, atol=1e-15)
    empty = Deflation(np.zeros((1, 5, 0)), np.zeros((1, 0)), np.array([np.linalg.norm(T)]))
    # A local step: e_2 (value 0.6). The remaining estimates, best first, begin with e_1.
    est, obj = remaining_estimates(E, base, np.zeros((5, 0)), np.zeros(0), E[1], 3)
    assert np.array_equal(est[0], E[0]) and not np.any(np.all(est == E[1], axis=1))
    assert np.all(np.diff(obj) <= 0) and len(est) == 4
    point = check_step(T, empty, est, np.random.default_rng(0), against=0.6, own=E[1])
    assert point.objective - 0.6 == pytest.approx(0.4, abs=1e-12)
    np.testing.assert_allclose(np.abs(point.x), E[0], atol=1e-8)
    # The global step e_1: nothing the check reaches is higher.
    est, _ = remaining_estimates(E, base, np.zeros((5, 0)), np.zeros(0), E[0], 3)
    point = check_step(T, empty, est, np.random.default_rng(0), against=1.0, own=E[0])
    assert point.objective - 1.0 <= 1e-12
    # After deflating e_1 the step tensor's values drop by λ_1 (u·e)^3 at each estimate.
    U, lam = E[:, :1], np.array([1.0])
    est, obj = remaining_estimates(E, base, U, lam, E[1], 3)
    assert len(est) == 3 and obj[0] == pytest.approx(0.5)  # e_1 is taken, e_2 is the step


def _local_first_step(seed_range=range(40)):
    """A seed for which sshopm with one uniform start and no confirmation takes a component
    other than e_1 at step 1 of the planted tensor."""
    T = _planted()
    for seed in seed_range:
        res = sd.sroa(T, method="sshopm", rng=seed, n_starts=1, max_starts=0, n_spectral=0)
        if res.lambdas[0] < 0.99:
            return seed, res
    raise AssertionError("no seed with a local first step")


OPTS = {"n_starts": 1, "max_starts": 0, "n_spectral": 0}


def test_sroa_records_the_gap_and_redoes_the_step_on_the_global_branch():
    T = _planted()
    seed, plain = _local_first_step()
    checked = sd.sroa(T, method="sshopm", rng=seed, global_check=True, **OPTS)
    # The check changes nothing, it reports: the first step missed the global value 1.
    np.testing.assert_array_equal(checked.lambdas, plain.lambdas)
    assert checked.global_gap[0] == pytest.approx(1.0 - plain.lambdas[0], abs=1e-12)
    assert checked.non_global[0] and not checked.redone.any()
    # Unchecked: NaN, except where a step is certified (the unfolding bound can prove a step
    # of an exact SOD tensor global).
    assert np.all(np.isnan(plain.global_gap[~plain.certified])) and not plain.non_global.any()
    assert np.all(plain.global_gap[plain.certified] == 0.0)
    np.testing.assert_allclose(checked.step_norms[0], np.linalg.norm(T), rtol=1e-12)
    # With redo the step is taken at the check's point and SROA goes on from there: the
    # planted components in the order of their weights, every step global.
    redone = sd.sroa(T, method="sshopm", rng=seed, global_check=True, redo=True, **OPTS)
    assert redone.redone[0] and "redone" in redone.steps[0].message
    np.testing.assert_allclose(redone.lambdas, LAM, atol=1e-10)
    assert not redone.non_global.any()
    assert np.all(redone.global_gap <= GLOBAL_RTOL * redone.step_norms)
    m = sd.match(redone, LAM, identity_basis(5))
    np.testing.assert_array_equal(m.perm, np.arange(5))


@pytest.mark.parametrize("deflation", ["explicit", "implicit"])
def test_redo_works_on_both_engines_and_in_a_batch(deflation):
    T = _planted()
    seed, _ = _local_first_step()
    Ts = np.stack([T, T])
    res = sd.sroa_batch(
        Ts,
        method="sshopm",
        rng=[seed, seed],
        deflation=deflation,
        global_check=True,
        redo=True,
        **OPTS,
    )
    for b in range(2):  # one instance at a time, the same answer
        np.testing.assert_allclose(res.lambdas[b], LAM, atol=1e-10)
        assert res.redone[b, 0] and not res.non_global[b].any()
    assert res.global_gap.shape == res.redone.shape == res.step_norms.shape == (2, 5)


def test_certified_steps_carry_their_certificate_instead():
    res = sd.sroa(_planted(), method="certified", rng=0, global_check=True)
    assert res.certified.all() and np.all(res.global_gap == 0.0)
    plain = sd.sroa(_planted(), method="certified", rng=0)
    assert np.all(plain.global_gap == 0.0)  # a certificate is a check
    with pytest.raises(ValueError, match="redo"):
        sd.sroa(_planted(), method="sshopm", redo=True)
    with pytest.raises(ValueError, match="global_check"):
        sd.sroa(_planted(), method="sshopm", global_check="yes")


def test_the_check_runs_on_matrix_free_operators():
    """The same planted tensor as a structured operator: the check flags the local step and
    the redo recovers the components, with no entry formed."""
    seed, plain = _local_first_step()
    op = sd.structured_tensor(3, LAM, V=identity_basis(5), family="coherent-tilt", eps=0.0)
    res = sd.sroa(op, method="sshopm", rng=seed, global_check=True, redo=True, **OPTS)
    np.testing.assert_allclose(res.lambdas, LAM, atol=1e-10)
    assert res.redone.any() and not res.non_global.any()
    assert np.all(np.isinf(res.upper_bounds))  # an operator step is never certified
    assert CHECK_ESTIMATES >= 1


@pytest.mark.slow
def test_the_non_global_step_at_n128_is_flagged_and_redone():
    """Issue 25: coherent tilt, p = 3, n = 128, ε = 0.15 (above the threshold), dense. With the
    starts of sshopm revision 3 (no spectral starts on formed tensors) SROA deflates the tilted
    component (λ = 0.95) first while a higher local maximum remains near an undeflated
    component; the check flags it and the redo takes the tilted component last, as global
    SROA does (and as revision 4's spectral starts do on their own)."""
    n, eps = 128, 0.15
    lam = default_lambdas(n)
    inst = sd.make_instance(
        n, 3, basis="identity", lambdas=lam, noise="coherent-tilt", eps=eps, rng=0
    )
    rev3 = METHODS["sshopm"].options_at(3)
    checked = sd.sroa(inst.T_hat, method="sshopm", rng=1, global_check=True, **rev3)
    tilted = int(np.argmin(np.abs(sd.match(checked, lam, inst.V).lam_matched - 0.95)))
    assert tilted < 10 and checked.non_global[tilted] and checked.global_gap[tilted] > 0.05
    redone = sd.sroa(inst.T_hat, method="sshopm", rng=1, global_check=True, redo=True, **rev3)
    m = sd.match(redone, lam, inst.V)
    assert np.argmin(np.abs(m.lam_matched - 0.95)) == n - 1  # the tilted component last
    assert redone.redone.any() and not redone.non_global.any()
    assert np.max(m.lam_err) / eps > 0.5  # and the value criterion at c = 0.5 fails there
