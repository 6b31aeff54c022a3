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
* ``theorem``: metric ``max_j max(|λ̂_j − λ_j| / (c·ε), ‖v̂_j − v_j‖ / radius_j)``, level 1:
  value and vector together. Its defaults are Theorem 3.1's bounds (``c = 2``, ``radius_j =
  20ε/λ_j``, :func:`sroa_dist.metrics.theorem_3_1_bounds`); that vector bound cannot bind for
  ε ≥ 0.1 (unit vectors differ by at most 2), so threshold studies also use ``c = 0.5,
  radius = 0.3`` (:data:`STUDY_THEOREM`), under which a step whose value passes but whose
  vector is wrong fails.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Mapping
from types import MappingProxyType

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InputError
from ..metrics import theorem_3_1_bounds

__all__ = [
    "DEFAULT_RADIUS",
    "DEFAULT_THEOREM_C",
    "DEFAULT_VALUE_C",
    "RUN_CRITERIA",
    "STUDY_THEOREM",
    "CRITERION_OPTIONS",
    "RunCriterion",
    "check_criterion_option",
    "criterion_option_expected",
    "get_run_criterion",
]

#: Default recovery radius on the vector error (criterion ``recovery``).
DEFAULT_RADIUS = 0.3
#: Default multiple of ε allowed on |λ̂ − λ| (criterion ``value``): Theorem 2.2's step-1 bound.
DEFAULT_VALUE_C = 1.0
#: Default multiple of ε allowed on |λ̂ − λ| by criterion ``theorem``: Theorem 3.1's 2ε.
DEFAULT_THEOREM_C = 2.0
#: The theorem criterion's levels that threshold studies report beside ``value``: a value
#: bound ``c·ε`` and a vector radius that can bind at the ε where the thresholds lie.
STUDY_THEOREM: Mapping[str, float] = MappingProxyType({"c": 0.5, "radius": 0.3})
#: Relative slack of every comparison (a pass stays a pass under rounding).
DEFAULT_RTOL = 1e-9

#: What each numeric option of a criterion must be, wherever it is given (a function's
#: keyword, ``sroa-dist report --c``, a spec key): ``name -> (least, least allowed, what it
#: means, an example)``. Every one is a finite number; ``c``, ``radius`` and a level must be
#: above 0 (at 0 nothing passes, below it the comparison means nothing), ``rtol`` at least 0.
CRITERION_OPTIONS: Mapping[str, tuple[float, bool, str, str]] = MappingProxyType(
    {
        "c": (0.0, False, "the multiple of ε allowed on |λ̂ − λ|", "0.5"),
        "radius": (0.0, False, "the bound on the vector error ‖v̂ − v‖", "0.3"),
        "level": (0.0, False, "the level the criterion's metric must not exceed", "1"),
        "rtol": (0.0, True, "the relative slack of every comparison", "1e-9"),
    }
)


def criterion_option_expected(name: str) -> str:
    """``"a finite number > 0"`` (or ``>= 0``): what option ``name`` must be."""
    least, inclusive, _, _ = CRITERION_OPTIONS[name]
    return f"a finite number {'>=' if inclusive else '>'} {least:g}"


def check_criterion_option(name: str, value: object, where: str = "") -> float:
    """``value`` as a float when it is a valid value of criterion option ``name``
    (:data:`CRITERION_OPTIONS`); else an :class:`~sroa_dist.errors.InputError` naming it
    (``where``, e.g. ``"--c"``, replaces the name in the message).

    NaN and infinity are refused: a NaN bound makes every comparison false, so a criterion
    given one would silently pass or drop every run.
    """
    least, inclusive, meaning, example = CRITERION_OPTIONS[name]
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    number = float(value) if ok else math.nan  # type: ignore[arg-type]
    if not (math.isfinite(number) and (number >= least if inclusive else number > least)):
        raise InputError(
            f"{where or name}: expected {criterion_option_expected(name)} ({meaning}); "
            f"received {value!r}",
            f"give e.g. {where or name}={example}"
            if not where.startswith("-")
            else f"give e.g. {where} {example}",
        )
    return number


def _value_metric(
    lam_err: np.ndarray, vec_err: np.ndarray, eps: float, lam: np.ndarray, **_: object
) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.nanmax(lam_err) / eps) if eps > 0 else float("inf")


def _recovery_metric(
    lam_err: np.ndarray, vec_err: np.ndarray, eps: float, lam: np.ndarray, **_: object
) -> float:
    return float(np.nanmax(vec_err))


def _theorem_metric(
    lam_err: np.ndarray,
    vec_err: np.ndarray,
    eps: float,
    lam: np.ndarray,
    c: float = DEFAULT_THEOREM_C,
    radius: float | None = None,
) -> float:
    lam_bound, vec_bound = theorem_3_1_bounds(eps, lam)
    lam_bound = c * eps
    if radius is not None:
        vec_bound = np.full(np.shape(vec_err), float(radius))
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
        ``metric(lam_err, vec_err, eps, lam_true, **params) -> float``: per-step errors after
        matching (shape ``(r,)``), the operator norm ``ε`` of the perturbation, the matched
        true weights.
    params : mapping
        Parameters of the metric itself (``theorem``: ``c`` and ``radius``) with their
        defaults; empty for a criterion whose only parameter is its level.
    """

    name: str
    level_name: str | None
    default_level: float
    metric: Callable[..., float] = dataclasses.field(repr=False)
    params: Mapping[str, float | None] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )

    def evaluate(
        self,
        lam_err: ArrayLike,
        vec_err: ArrayLike,
        eps: float,
        lam_true: ArrayLike,
        level: float | None = None,
        rtol: float = DEFAULT_RTOL,
        **params: float | None,
    ) -> tuple[float, bool]:
        """``(metric, passed)`` of one run; ``level`` defaults to :attr:`default_level`,
        ``params`` (those of :attr:`params`, ``None`` for a default) to theirs."""
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            raise InputError(
                f"criterion {self.name!r}: takes no parameter(s) {unknown} (accepted: "
                f"{sorted(self.params) or 'none'})",
                "drop the parameters this criterion does not take",
            )
        level = self.default_level if level is None else check_criterion_option("level", level)
        given = {k: check_criterion_option(k, v) for k, v in params.items() if v is not None}
        m = self.metric(
            np.asarray(lam_err, dtype=float),
            np.asarray(vec_err, dtype=float),
            float(eps),
            np.asarray(lam_true, dtype=float),
            **{**self.params, **given},
        )
        # NaN (no data) is no evidence of failure, as in the analysis layer.
        return m, not bool(m > level * (1.0 + rtol))


#: Criteria of one run by name (read-only).
RUN_CRITERIA: Mapping[str, RunCriterion] = MappingProxyType(
    {
        "recovery": RunCriterion("recovery", "radius", DEFAULT_RADIUS, _recovery_metric),
        "value": RunCriterion("value", "c", DEFAULT_VALUE_C, _value_metric),
        "theorem": RunCriterion(
            "theorem",
            None,
            1.0,
            _theorem_metric,
            MappingProxyType({"c": DEFAULT_THEOREM_C, "radius": None}),
        ),
    }
)


def get_run_criterion(name: str) -> RunCriterion:
    """The :class:`RunCriterion` called ``name``; an unknown name lists the valid ones."""
    if name not in RUN_CRITERIA:
        raise InputError(
            f"criterion: expected one of {tuple(RUN_CRITERIA)}, received {name!r}",
            "'value' = max |λ̂ − λ| ≤ c·ε, 'recovery' = max ‖v̂ − v‖ ≤ radius, "
            "'theorem' = value and vector together (Theorem 3.1's bounds by default)",
        )
    return RUN_CRITERIA[name]
