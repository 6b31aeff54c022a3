"""Linear regression of bracketed thresholds with a size effect and known bracket errors.

Model, for the ``j``-th threshold at size ``i`` (log units): its bracket centre is
``m_ij = a + b·x_i + u_i + e_ij + δ_ij`` with ``u_i ~ N(0, τ²)`` (the size's deviation from
the line, shared by its replicates), ``e_ij ~ N(0, σ²)`` (replicate spread) and ``δ_ij`` the
unknown position of the threshold inside its bracket of log width ``w_ij``: uniform, so of
known variance ``w_ij²/12``. ``(τ, σ)`` are estimated by restricted maximum likelihood (REML),
``(a, b)`` by generalised least squares, and the slope's interval is Wald with Student's t.

Pure numpy/scipy (no xarray), and closed-form per evaluation, so a whole coverage study runs
in seconds.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.optimize import minimize
from scipy.stats import t as student_t

#: Range of the spreads σ and τ searched (log units: 1e-6 up to a factor e^5 ≈ 150).
_LOG_SD = (math.log(1e-6), math.log(5.0))


@dataclasses.dataclass(frozen=True)
class Estimate:
    """GLS coefficients ``(a, b)``, their covariance, the spreads and the REML optimum."""

    coef: np.ndarray
    cov: np.ndarray
    tau: float
    sigma: float
    converged: bool


def _reml(log_sd: np.ndarray, g: _Groups) -> tuple[float, np.ndarray, np.ndarray]:
    """Minus the restricted log-likelihood (up to a constant), GLS coefficients, covariance.

    The covariance is block diagonal by size, ``diag(σ² + w²/12) + τ² 1 1ᵀ`` per block, so
    every quadratic form follows from per-size sums (Sherman–Morrison) in O(observations).
    """
    tau2, sig2 = np.exp(2.0 * np.clip(log_sd, *_LOG_SD))
    inv_d = 1.0 / (sig2 + g.meas)
    a0 = np.bincount(g.size, inv_d, g.n_sizes)
    am = np.bincount(g.size, inv_d * g.m, g.n_sizes)
    amm = np.bincount(g.size, inv_d * g.m**2, g.n_sizes)
    shrink = 1.0 + tau2 * a0
    q, qm = a0 / shrink, am / shrink  # 1ᵀΣ⁻¹1 and 1ᵀΣ⁻¹m per size
    XtSiX = np.array([[q.sum(), q @ g.x], [q @ g.x, q @ g.x**2]])
    XtSim = np.array([qm.sum(), qm @ g.x])
    coef = np.linalg.solve(XtSiX, XtSim)
    mSim = float(np.sum(amm - tau2 * am**2 / shrink))
    quad = mSim - 2.0 * coef @ XtSim + coef @ XtSiX @ coef
    logdet = float(np.sum(np.log(sig2 + g.meas)) + np.sum(np.log(shrink)))
    logdet_x = math.log(XtSiX[0, 0] * XtSiX[1, 1] - XtSiX[0, 1] ** 2)
    return 0.5 * (logdet + logdet_x + quad), coef, np.linalg.inv(XtSiX)


@dataclasses.dataclass(frozen=True)
class _Groups:
    x: np.ndarray  # per size
    size: np.ndarray  # size index per observation
    m: np.ndarray  # bracket centres
    meas: np.ndarray  # w²/12
    n_sizes: int


def estimate(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Estimate:
    """Fit the model to closed brackets ``(lo, hi]`` in log units at ``x``."""
    xs, size = np.unique(x, return_inverse=True)
    g = _Groups(xs, size, 0.5 * (lo + hi), (hi - lo) ** 2 / 12.0, xs.size)
    X = np.column_stack([np.ones_like(x), x])
    resid = g.m - X @ np.linalg.lstsq(X, g.m, rcond=None)[0]
    s0 = math.log(max(float(np.std(resid)), 1e-3))
    best = None
    # Two starts (all scatter between sizes, or all within): REML can have two local optima.
    # Nelder-Mead: two parameters, cheap evaluations, no finite-difference gradients.
    for start in ((s0, math.log(1e-3)), (math.log(1e-3), s0)):
        r = minimize(
            lambda v: _reml(v, g)[0],
            np.array(start),
            method="Nelder-Mead",
            options={"xatol": 1e-3, "fatol": 1e-6},
        )
        if best is None or r.fun < best.fun:
            best = r
    _, coef, cov = _reml(best.x, g)
    tau, sigma = (float(v) for v in np.exp(np.clip(best.x, *_LOG_SD)))
    return Estimate(coef, cov, tau, sigma, bool(best.success))


def slope_interval(est: Estimate, level: float, df: int) -> tuple[float, float]:
    """``b̂ ± t_df((1 + level)/2) · se(b̂)``."""
    half = float(student_t.ppf(0.5 + level / 2, max(df, 1))) * math.sqrt(est.cov[1, 1])
    return float(est.coef[1] - half), float(est.coef[1] + half)
