"""The asymptote runs' predictions (sroa_dist.analysis.asymptote): the fitted decay of g_p with
n, the crossing it corrects, and the record, on synthetic curves whose answers are closed forms
(the model's own curves cost 48 global SROAs per order; docs/data/rate/asymptote-predictions.py
runs them)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from sroa_dist.analysis import (
    Accumulation,
    accumulation_limit,
    asymptote_predictions,
    corrected_crossing,
    fit_g_decay,
    predict_threshold,
)
from sroa_dist.errors import InputError

EPS = np.geomspace(0.01, 1.5, 48)


def _flat_model(p: int) -> Accumulation:
    """Curves with g_p = g_p(0) at every ε and negligible other errors: the model's crossing is
    then the asymptote (c/((n − 1)·g_p(0)))^{1/(p−1)} exactly."""
    g0 = accumulation_limit(p)
    tiny = 1e-6 * EPS
    return Accumulation(
        p=p,
        n=16,
        eps=EPS,
        g=np.full_like(EPS, g0),
        h=tiny,
        value_other=tiny,
        vector_other=tiny,
        last=np.ones(EPS.shape, bool),
        global_gap=np.zeros_like(EPS),
        g0=g0,
    )


def _g_cube(a: float, k: float, *, p: int = 3, last_from: float = 9.0) -> xr.Dataset:
    """An accumulation cube whose g_p decays as exp(−a·ε^k·(n − 16)); the target is not
    deflated last at ε ≥ ``last_from``."""
    ns = np.array([16, 64, 128, 256])
    eps = np.array([0.1, 0.18, 0.3, 0.4])
    g0 = 0.6 * (1 - eps)
    g = g0[None, :] * np.exp(-a * eps[None, :] ** k * (ns[:, None] - 16))
    last = np.broadcast_to(eps[None, :] < last_from, g.shape)
    return xr.Dataset(
        {
            "g_p": (("n", "p", "eps"), g[:, None, :]),
            "last": (("n", "p", "eps"), last[:, None, :]),
        },
        coords={"n": ns, "p": [p], "eps": eps},
    )


def test_the_decay_law_is_recovered_from_a_cube_that_follows_it():
    decay = fit_g_decay(_g_cube(0.5, 4.0), 3)
    assert decay.a == pytest.approx(0.5, rel=1e-9) and decay.k == pytest.approx(4.0, rel=1e-9)
    assert decay.worst_residual < 1e-9 and decay.n_max == 256
    assert decay.where(0.2, 128) == "interpolated"
    assert decay.where(0.05, 512) == "extrapolated in n and eps"
    # saturated (g below 47 %) and unresolved points are left out of the fit
    assert all(1e-3 <= -math.log(pt["measured"]) <= 0.75 for pt in decay.points)


def test_points_whose_target_was_not_deflated_last_are_not_fitted():
    decay = fit_g_decay(_g_cube(0.5, 4.0, last_from=0.3), 3)
    assert max(pt["eps"] for pt in decay.points) < 0.3


def test_a_cube_without_the_order_or_enough_points_is_refused():
    with pytest.raises(InputError, match="p = 4"):
        fit_g_decay(_g_cube(0.5, 4.0), 4)
    with pytest.raises(InputError, match="resolved point"):
        fit_g_decay(_g_cube(1e-9, 4.0), 3)


def test_the_corrected_crossing_solves_the_decayed_model():
    p, c, n = 3, 2.0, 512
    model = _flat_model(p)
    pr = predict_threshold(p, [n], c=c, model=model)
    g0 = accumulation_limit(p)
    assert pr.eps_star[0] == pytest.approx((c / ((n - 1) * g0)) ** 0.5, rel=1e-6)
    decay = fit_g_decay(_g_cube(0.5, 4.0), 3)
    e = corrected_crossing(pr, decay, n)
    # (n − 1)·g0·exp(−a ε^k (n − 16))·ε^{p−1} = c at the corrected root, and g fell: ε* rose
    assert (n - 1) * g0 * decay.ratio(e, n) * e ** (p - 1) == pytest.approx(c, rel=1e-6)
    assert e > pr.eps_star[0]


def test_the_record_on_flat_curves_is_the_asymptote_and_says_what_is_not_corrected():
    models = {p: _flat_model(p) for p in (3, 4)}
    rec = asymptote_predictions(
        _g_cube(0.5, 4.0), sizes={3: (256, 512), 4: (512,)}, p6_sizes=None, models=models
    )
    entries = {(e["p"], e["criterion"]): e for e in rec["predictions"]}
    assert set(entries) == {(p, crit) for p in (3, 4) for crit in ("value c=0.5", "theorem c=2")}
    for (p, _), e in entries.items():
        for row in e["rows"]:
            # flat g: the normalised threshold is the asymptote's prefactor at every n
            assert row["normalised"] == pytest.approx(e["asymptote_prefactor"], rel=1e-6)
            assert row["local_slope"] == pytest.approx(-1 / (p - 1), rel=1e-3)
        if p == 3:
            assert e["rows"][1]["doubling_slope"] == pytest.approx(-0.5, rel=1e-6)
    c2 = entries[(3, "theorem c=2")]
    assert c2["corrected"]["p"] == 3
    assert all(r["eps_star_corrected"] > r["eps_star"] for r in c2["rows"])
    assert all(r["vector_ratio"] < 1 for r in c2["rows"])
    assert entries[(4, "theorem c=2")]["corrected"] is None
    assert "p = 4" in entries[(4, "theorem c=2")]["not_corrected_because"]
