"""Success criteria of one SROA run as plain numpy: the pure part of the analysis registry.

The analysis layer (``sroa_dist.analysis.CRITERIA``) judges whole result cubes with xarray; the
threshold search judges one decomposition at a time and must not import xarray. Both use the
same names (``recovery``, ``value``, ``theorem``), the same defaults (owned here) and the same
comparisons: a step fails only when its error *exceeds* the allowed level by more than ``rtol``
relative, so rounding never turns a pass into a failure.

Each criterion reduces a run to one number, its *metric* (the worst step), and passes when the
metric is at most the criterion's *level*:

* ``value``: metric ``max_j |λ̂_j − λ_j| / ε``, level ``c`` (the multiple of ε allowed);
* ``recovery``: metric ``max_j ‖v̂_j − v_j‖``, level the radius;
* ``theorem``: metric ``max_j max(|λ̂_j − λ_j| / 2ε, ‖v̂_j − v_j‖ / (20ε/λ_j))``, level 1
  (Theorem 3.1's bounds, :func:`sroa_dist.metrics.theorem_3_1_bounds`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType

import numpy as np
from numpy.typing import ArrayLike

from .errors import InputError
from .metrics import theorem_3_1_bounds

__all__ = [
    "DEFAULT_RADIUS",
    "DEFAULT_VALUE_C",
    "RUN_CRITERIA",
    "RunCriterion",
    "get_run_criterion",
]

#: Default recovery radius on the vector error (criterion ``recovery``).
DEFAULT_RADIUS = 0.3
#: Default multiple of ε allowed on |λ̂ − λ| (criterion ``value``): Theorem 2.2's step-1 bound.
DEFAULT_VALUE_C = 1.0
#: Relative slack of every comparison (a pass stays a pass under rounding).
DEFAULT_RTOL = 1e-9


def _value_metric(lam_err: np.ndarray, vec_err: np.ndarray, eps: float, lam: np.ndarray) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.nanmax(lam_err) / eps) if eps > 0 else float("inf")


def _recovery_metric(
    lam_err: np.ndarray, vec_err: np.ndarray, eps: float, lam: np.ndarray
) -> float:
    return float(np.nanmax(vec_err))


def _theorem_metric(lam_err: np.ndarray, vec_err: np.ndarray, eps: float, lam: np.ndarray) -> float:
    lam_bound, vec_bound = theorem_3_1_bounds(eps, lam)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.maximum(lam_err / lam_bound, vec_err / vec_bound)
    return float(np.nanmax(ratios))


@dataclasses.dataclass(frozen=True)
class RunCriterion:
    """A success test of one SROA run (see the module docstring).

    Attributes
    ----------
    name : str
        Registry key, the same as in ``sroa_dist.analysis.CRITERIA``.
    level_name : str or None
        What the level means (``"c"``, ``"radius"``); ``None`` when the level is fixed.
    default_level : float
        The level used when none is given.
    metric : callable
        ``metric(lam_err, vec_err, eps, lam_true) -> float``: per-step errors after matching
        (shape ``(r,)``), the operator norm ``ε`` of the perturbation, the matched true weights.
    """

    name: str
    level_name: str | None
    default_level: float
    metric: Callable[[np.ndarray, np.ndarray, float, np.ndarray], float] = dataclasses.field(
        repr=False
    )

    def evaluate(
        self,
        lam_err: ArrayLike,
        vec_err: ArrayLike,
        eps: float,
        lam_true: ArrayLike,
        level: float | None = None,
        rtol: float = DEFAULT_RTOL,
    ) -> tuple[float, bool]:
        """``(metric, passed)`` of one run; ``level`` defaults to :attr:`default_level`."""
        level = self.default_level if level is None else float(level)
        m = self.metric(
            np.asarray(lam_err, dtype=float),
            np.asarray(vec_err, dtype=float),
            float(eps),
            np.asarray(lam_true, dtype=float),
        )
        # NaN (no data) is no evidence of failure, as in the analysis layer.
        return m, not bool(m > level * (1.0 + rtol))


#: Criteria of one run by name (read-only).
RUN_CRITERIA: Mapping[str, RunCriterion] = MappingProxyType(
    {
        "recovery": RunCriterion("recovery", "radius", DEFAULT_RADIUS, _recovery_metric),
        "value": RunCriterion("value", "c", DEFAULT_VALUE_C, _value_metric),
        "theorem": RunCriterion("theorem", None, 1.0, _theorem_metric),
    }
)


def get_run_criterion(name: str) -> RunCriterion:
    """The :class:`RunCriterion` called ``name``; an unknown name lists the valid ones."""
    if name not in RUN_CRITERIA:
        raise InputError(
            f"criterion: expected one of {tuple(RUN_CRITERIA)}, received {name!r}",
            "'value' = max |λ̂ − λ| ≤ c·ε, 'recovery' = max ‖v̂ − v‖ ≤ radius, "
            "'theorem' = the Theorem 3.1 bounds",
        )
    return RUN_CRITERIA[name]
