"""Worst cases stored by an exact-norm form: the file keeps the parameters, not n^p entries; the
re-check rebuilds E from them, recomputes the norm (closed form, or certified in k dimensions)
and, past the relaxation's reach, runs SROA with every step checked and redone."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

import sroa_dist as core
from sroa_dist.studies import worst_case_form as wf
from sroa_dist.studies.worst_case_family import evaluate_form
from sroa_dist.studies.worst_case_form import ExactForm
from tests.support.helpers import run_cli

CLAIM = Path(__file__).parents[2] / "docs/data/rate/worst-case-claims/tilt-p3-n128.npz"


@pytest.fixture
def beyond_reach(monkeypatch):
    """As past the relaxation's reach: steps are global-checked SS-HOPM (fast at n = 16)."""
    monkeypatch.setattr(wf, "certified_tractable", lambda n, p: False)


def _tilt(n: int, eps: float, theta: float = 0.0) -> ExactForm:
    return ExactForm("tilt-shrink", eps, {"theta": theta, "component": n - 1})


def test_a_tilt_violation_is_saved_by_its_form_and_confirmed(tmp_path, beyond_reach):
    # The tilt at n = 16, eps = 0.3 breaks the value bound 0.5 eps (published c = 0.5
    # crossing at n = 16: (0.2452, 0.2486]) but not Theorem 3.1's 2 eps.
    n = 16
    lam, V = np.r_[np.ones(n - 1), 0.95], core.identity_basis(n)
    res, steps, all_global = evaluate_form(_tilt(n, 0.3), lam, V, 3)
    assert steps == "global-checked" and all_global
    assert res.ratio_kind == "exact" and res.norm_bracket[0] == 0.3
    assert res.ratio == pytest.approx(float(np.max(res.lam_err)) / 0.3, rel=1e-11)
    assert 0.5 < res.ratio < 2
    path = res.save(tmp_path / "tilt.npz", c=0.5)
    with np.load(path) as z:
        assert "E" not in z.files  # stored by its form
        assert json.loads(str(z["meta"][()]))["format"] == "sroa-dist worst case 2"
    back = core.load_worst_case(path)
    np.testing.assert_array_equal(back.E, res.E)
    assert back.form.to_json() == res.form.to_json()
    out = core.recheck_worst_case(path)
    assert out.stands and out.norm_kind == "exact (closed form)"
    assert out.steps_kind == "global-checked" and out.steps_certified
    assert out.error == pytest.approx(float(np.max(res.lam_err)), rel=1e-9)
    assert not core.recheck_worst_case(path, c=2).stands


def test_a_form_claim_with_an_inflated_ratio_is_refuted(tmp_path, beyond_reach):
    n = 16
    lam, V = np.r_[np.ones(n - 1), 0.95], core.identity_basis(n)
    res, _, _ = evaluate_form(_tilt(n, 0.2, theta=0.7), lam, V, 3)
    fake = dataclasses.replace(res, ratio=2.5)  # claimed, not measured
    out = core.recheck_worst_case(fake.save(tmp_path / "fake.npz", c=2))
    assert not out.stands and out.claimed_ratio == 2.5 and out.ratio < 2
    assert "<=" in out.reason


def test_subspace_form_has_a_certified_k_dimensional_norm(tmp_path):
    n, k = 6, 2
    lam, V = np.r_[np.ones(n - 1), 0.95], core.identity_basis(n)
    C = -0.3 * np.einsum("i,j,k->ijk", *[np.array([0.0, 1.0])] * 3)  # shrink of v_n
    form = ExactForm("subspace", arrays={"U": V[:, [0, n - 1]], "C": C})
    res, steps, ok = evaluate_form(form, lam, V, 3)
    assert steps == "certified" and ok and res.ratio_kind == "exact"
    assert res.norm_bracket[0] == pytest.approx(0.3, rel=1e-9)
    assert float(np.max(res.lam_err)) == pytest.approx(0.3, rel=1e-7)  # lambda_n lowered by 0.3
    out = core.recheck_worst_case(res.save(tmp_path / "sub.npz", c=0.5))
    assert out.stands and out.norm_kind == f"certified (k = {k})"
    with pytest.raises(core.InputError, match="needs arrays"):
        ExactForm("subspace", arrays={"U": V[:, :2]})
    with pytest.raises(core.InputError, match="kind"):
        ExactForm("dense")
    assert math.isfinite(out.ratio)


@pytest.mark.slow
def test_the_stored_tilt_at_n128_is_confirmed_by_the_cli():
    # The c0(3) < 2.12 claim: the p = 3 tilt at n = 128, eps = 0.1778876, exact norm, every
    # step global-checked; re-checked from the committed file in a real subprocess.
    ok = run_cli("recheck", str(CLAIM))
    assert "the claim STANDS" in ok.stdout and "exact (closed form)" in ok.stdout
    assert "all global (global-checked)" in ok.stdout
