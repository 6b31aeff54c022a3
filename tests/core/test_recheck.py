"""Violations anyone can re-check: a worst case saved to a real file loads back whole; the re-check,
from the file alone, confirms a true violation and refutes one whose norm was underestimated;
damaged files, overwrites and out-of-reach sizes are refused in the error grammar."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import sroa_dist as core
from sroa_dist.studies import recheck as rc
from tests.support.planted import ONE_START, planted


@pytest.fixture(scope="module")
def shrink() -> core.WorstCaseResult:
    """A true violation of ``error <= 0.5·‖E‖`` with an exact norm: ``E = −ε Σ v_i^{⊗3}``
    (odeco, ``‖E‖ = ε``) lowers every weight by exactly ``ε``, so SROA's value error is ``ε``
    (ratio 1; Theorem 3.1's ``c = 2`` is not broken at this size)."""
    return core.worst_case(4, 3, 0.2, starts=("sod-shrink",), budget=1, rng=0)


def test_save_load_round_trip(tmp_path, shrink):
    path = shrink.save(tmp_path / "shrink.npz", c=0.5)
    back = core.load_worst_case(path)
    for f in dataclasses.fields(core.WorstCaseResult):
        a, b = getattr(shrink, f.name), getattr(back, f.name)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b, f.name
    with pytest.raises(core.InputError, match="never overwritten") as exc:
        shrink.save(path, c=0.5)
    assert exc.value.hint
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shrink.npz"]  # no temporary left


def test_recheck_confirms_a_true_violation(tmp_path, shrink):
    assert shrink.ratio_kind == "certified" and shrink.ratio == pytest.approx(1.0, rel=1e-9)
    path = shrink.save(tmp_path / "true.npz", c=0.5)
    out = core.recheck_worst_case(path)
    assert out.stands and out.c == 0.5
    assert out.norm_certified and out.steps_certified
    assert out.error == pytest.approx(0.2, rel=1e-9)
    assert out.norm_lower <= 0.2 * (1 + 1e-12) and out.norm_upper == pytest.approx(0.2, rel=1e-7)
    assert out.error > 0.5 * out.norm_upper and out.ratio == out.error / out.norm_upper
    # The same worst case does not break Theorem 3.1's constant.
    assert not core.recheck_worst_case(shrink, c=2).stands


def test_recheck_refutes_a_claim_made_with_an_underestimated_norm(tmp_path):
    # A worst case as a fixed-seed search reported it: E rescaled by an estimate (0.8) of its
    # norm (1), so ‖E‖ = 0.125, not eps = 0.1, and the claimed ratio 1.25 breaks c = 1.1.
    E, V = planted()
    eps = 0.1
    genuine = core.worst_case(6, 3, eps, starts=[E], budget=1, rng=0)
    fooled = core.operator_norm(E, "sshopm", rng=3, **ONE_START)
    E_bad = eps * E / fooled.value
    T = core.sod_tensor(genuine.lambdas, V, 3)
    m = core.match(core.sroa(T + E_bad, method="certified", rng=0), genuine.lambdas, V)
    claimed = float(np.max(m.lam_err)) / eps
    assert claimed > 1.2
    claim = dataclasses.replace(
        genuine, E=E_bad, lam_err=np.asarray(m.lam_err), ratio=claimed, norm_certified=False
    )
    out = core.recheck_worst_case(claim.save(tmp_path / "false.npz", c=1.1))
    assert not out.stands and out.claimed_ratio == claimed
    assert out.norm_certified and out.steps_certified  # refuted on certified numbers
    assert out.norm_upper == pytest.approx(0.125, rel=1e-7)
    assert out.ratio < 1.1 < claimed


def test_bad_files_and_arguments_are_refused(tmp_path, shrink, monkeypatch):
    with pytest.raises(core.InputError, match="no such file"):
        core.load_worst_case(tmp_path / "missing.npz")
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file")
    with pytest.raises(core.InputError, match="not a saved worst case"):
        core.recheck_worst_case(junk)
    other = tmp_path / "other.npz"
    np.savez(other, meta=np.array('{"format": "something else"}'))
    with pytest.raises(core.InputError, match="format"):
        core.load_worst_case(other)
    with pytest.raises(core.InputError, match=r"\.npz"):
        shrink.save(tmp_path / "shrink.txt")
    with pytest.raises(core.InputError, match="c: expected"):
        shrink.save(tmp_path / "c.npz", c=-1)
    monkeypatch.setattr(rc, "certified_tractable", lambda n, p: False)
    with pytest.raises(core.InputError, match="beyond the certified relaxation") as exc:
        core.recheck_worst_case(shrink)
    assert exc.value.hint
