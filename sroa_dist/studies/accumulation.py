"""One run of the accumulation study: SROA's errors on a structured perturbation at one
``(p, n, ε)``, split into the target component's and the others'.

The target is the component of smallest weight (the last one here, weight ``weight``, the
others 1): the one the coherent tilt tilts toward and SROA deflates last, so every step's
deflation residual lands on it. Its value error over ``(n − 1)·ε^p`` is the accumulation
coefficient ``g_p(ε)`` (:mod:`sroa_dist.analysis.accumulation` derives the closed form and
the thresholds it predicts; the accumulation sweep kind fans these runs out). Numerics only:
the sweep kind and the analysis both call :func:`accumulation_errors`, so one run is one
computation wherever it is made.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..decomposition import sroa
from ..metrics import match
from ..problems import structured_tensor

__all__ = ["TILTED_WEIGHT", "AccumulationErrors", "accumulation_errors", "coefficients"]

#: Weight of the target component (the others are 1), as in the threshold studies: distinct,
#: so SROA deflates it last.
TILTED_WEIGHT = 0.95


@dataclasses.dataclass(frozen=True)
class AccumulationErrors:
    """SROA's errors at one ``(p, n, ε)`` (errors after optimal matching).

    Attributes
    ----------
    lam_err, vec_err : (n,) ndarray
        Value and vector error of each SROA step's component.
    value_last, vector_last : float
        The target component's value and vector error.
    value_other, vector_other : float
        The largest value and vector error of the other components.
    last : bool
        Whether the target was deflated last (what the closed form assumes).
    global_gap : float
        The largest global gap left over the run's steps.
    """

    lam_err: np.ndarray
    vec_err: np.ndarray
    value_last: float
    vector_last: float
    value_other: float
    vector_other: float
    last: bool
    global_gap: float


def coefficients(
    value_last: ArrayLike, vector_last: ArrayLike, n: int, eps: ArrayLike, p: int
) -> tuple[np.ndarray, np.ndarray]:
    """``g_p = value_last / ((n − 1)·ε^p)`` and ``h_p = vector_last / √(n − 1)``, elementwise
    over arrays of ε (numpy's power, so a curve and its points one by one agree bit for bit)."""
    eps_p = np.asarray(eps, dtype=float) ** p
    g = np.asarray(value_last, dtype=float) / ((n - 1) * eps_p)
    h = np.asarray(vector_last, dtype=float) / math.sqrt(n - 1)
    return g, h


def accumulation_errors(
    p: int,
    n: int,
    eps: float,
    *,
    family: str = "coherent-tilt",
    params: Mapping[str, Any] | None = None,
    weight: float = TILTED_WEIGHT,
    method: str = "sshopm",
    rng: Any = 0,
    global_check: bool = True,
    redo: bool = True,
    options: Mapping[str, Any] | None = None,
) -> AccumulationErrors:
    """One SROA of ``Σ_i λ_i e_i^{⊗p} + E`` with ``λ = (1, …, 1, weight)``, ``E`` of the
    structured family ``family`` (matrix-free, :func:`sroa_dist.structured_tensor`) scaled to
    ``‖E‖ = eps``, in the identity basis (a structured family turns with the basis, so the
    basis changes nothing but rounding).

    ``rng`` seeds the solver's starts; ``global_check``/``redo`` as in :func:`sroa_dist.sroa`
    (the study's default: every step checked and redone on the global branch); ``options``
    go to the rank-one method.
    """
    lam = np.ones(n)
    lam[-1] = weight
    T = structured_tensor(p, lam, family=family, eps=eps, params=dict(params or {}))
    res = sroa(
        T, method=method, rng=rng, global_check=global_check, redo=redo, **dict(options or {})
    )
    m = match(res, lam, np.eye(n))
    target = np.asarray(m.perm) == n - 1
    lam_err, vec_err = np.asarray(m.lam_err, float), np.asarray(m.vec_err, float)
    return AccumulationErrors(
        lam_err=lam_err,
        vec_err=vec_err,
        value_last=float(lam_err[target][0]),
        vector_last=float(vec_err[target][0]),
        value_other=float(lam_err[~target].max()),
        vector_other=float(vec_err[~target].max()),
        last=bool(target[-1]),
        global_gap=_largest(res.global_gap),
    )


def _largest(gaps: Any) -> float:
    """The largest recorded gap; NaN where no step was checked (``global_check=False``)."""
    g = np.asarray(gaps, dtype=float)
    return float(np.nanmax(g)) if np.isfinite(g).any() else math.nan
