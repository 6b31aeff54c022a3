"""Operator (spectral) norm of symmetric tensors, ``‖E‖ = max_{‖x‖=1} |E x^p|``, with a certified
bracket."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .errors import InputError
from .methods import GAP_TOL, RngLike, rank_one_batch
from .tensors import check_symmetric_tensor
from .threads import single_blas

__all__ = [
    "OperatorNormResult",
    "operator_norm",
    "operator_norm_batch",
    "scale_factors",
    "scale_to_opnorm",
]


@dataclasses.dataclass(frozen=True)
class OperatorNormResult:
    """Operator norm estimate with a bracket ``lower ≤ ‖E‖ ≤ upper``.

    ``value`` is the best value found (equal to ``lower``: it is attained at ``x``); ``upper``
    comes from the moment relaxation's validated bound where it was solved, otherwise from the
    spectral norm of the ``n × n^{p-1}`` unfolding; ``certified`` means the bracket is tighter
    than ``gap_tol · ‖E‖_F``. Fields gain a leading batch axis when batched.
    """

    value: Any
    lower: Any
    upper: Any
    certified: Any
    x: Any
    method: str
    solve_time: Any

    def __getitem__(self, i: int) -> OperatorNormResult:
        return OperatorNormResult(
            value=float(self.value[i]),
            lower=float(self.lower[i]),
            upper=float(self.upper[i]),
            certified=bool(self.certified[i]),
            x=self.x[i],
            method=self.method,
            solve_time=float(self.solve_time[i]),
        )


@single_blas
def operator_norm_batch(
    Es: ArrayLike,
    method: str = "certified",
    *,
    rng: RngLike | Sequence[RngLike] = None,
    gap_tol: float = GAP_TOL,
    **options: Any,
) -> OperatorNormResult:
    """Operator norms of a stack ``(B, n, ..., n)`` of symmetric tensors; see `operator_norm`."""
    Es = check_symmetric_tensor(Es, "E", batched=True)
    zero = np.all(Es.reshape(len(Es), -1) == 0, axis=1)
    # rank_one maximises E x^p for odd p, which equals max |E x^p| (x -> -x flips the sign),
    # and |E x^p| directly for even p.
    res = rank_one_batch(Es, method, rng=rng, gap_tol=gap_tol, **options)
    value = np.abs(res.lam)
    upper = np.maximum(res.upper_bound, value)
    return OperatorNormResult(
        value=value,
        lower=value.copy(),
        upper=upper,
        certified=res.certified | zero,
        x=res.x,
        method=method,
        solve_time=res.solve_time,
    )


def operator_norm(
    E: ArrayLike,
    method: str = "certified",
    *,
    rng: RngLike = None,
    gap_tol: float = GAP_TOL,
    **options: Any,
) -> OperatorNormResult:
    """Operator norm ``‖E‖ = max_{‖x‖=1} |E x^p|`` of a symmetric tensor (the paper's ε).

    Uses the same methods and options as :func:`sroa_dist.rank_one`; ``"certified"`` brackets
    the norm between a value attained at ``x`` and the relaxation's validated upper bound.
    """
    E = check_symmetric_tensor(E, "E")
    return operator_norm_batch(E[None], method, rng=[rng], gap_tol=gap_tol, **options)[0]


def scale_factors(norms: ArrayLike, targets: ArrayLike) -> np.ndarray:
    """Factors ``targets / norms`` that rescale perturbations of operator norm ``norms`` to
    operator norm ``targets`` (the norm is homogeneous, so a bracket scales with it too).

    The one rule of the package for rescaling ``E`` to a target ``‖E‖``
    (:func:`scale_to_opnorm`, :func:`sroa_dist.make_instance`, the sweep worker): a zero
    perturbation gets the factor 0 for a zero target and is an error for a positive one.
    Broadcasts; returns an ndarray (0-d for scalars).
    """
    norms = np.asarray(norms, dtype=float)
    targets = np.asarray(targets, dtype=float)
    if not np.all(np.isfinite(targets) & (targets >= 0)):
        raise InputError(
            f"eps: expected finite target norms >= 0, received {targets}",
            "give finite target norms >= 0",
        )
    if np.any((norms == 0) & (targets > 0)):
        raise InputError(
            "E: cannot scale a zero perturbation to a positive operator norm",
            "draw a nonzero perturbation or use a target norm of 0",
        )
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(norms > 0, targets / np.where(norms > 0, norms, 1.0), 0.0)


def _norm_value(value: Any, name: str, expected: str) -> float:
    """A norm given as an argument: a real finite number >= 0 (text, None, NaN and ints beyond
    the float range reached numpy, which raised its own TypeError or returned NaN)."""
    real = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )
    try:
        x = float(value) if real else math.nan
    except OverflowError:
        x = math.inf
    if not (math.isfinite(x) and x >= 0):
        raise InputError(
            f"{name}: expected {expected}, received {value!r}", f"give a finite {name} >= 0"
        )
    return x


def scale_to_opnorm(
    E: ArrayLike,
    eps: float,
    *,
    norm: float | None = None,
    method: str = "certified",
    rng: RngLike = None,
    **options: Any,
) -> np.ndarray:
    """Rescale a symmetric perturbation so that ``‖E‖ = eps`` (within the norm's bracket).

    ``norm`` is ``‖E‖`` when already known (e.g. stated exactly by a perturbation family);
    otherwise it is computed with :func:`operator_norm` (``method``, ``rng``, ``options``).
    """
    eps = _norm_value(eps, "eps", "a finite target norm >= 0")
    if norm is not None:
        norm = _norm_value(norm, "norm", "the known operator norm: a finite number >= 0")
    E = check_symmetric_tensor(E, "E")
    if norm is None:
        norm = operator_norm(E, method, rng=rng, **options).value
    factor = float(scale_factors(norm, eps))
    if norm == 0:
        return E.copy()
    if np.isfinite(factor) and (factor > 0 or eps == 0):
        return E * factor
    # eps / norm over- or underflows (a subnormal or huge norm): divide first.
    with np.errstate(over="ignore"):
        out = (E / norm) * eps
    if not np.all(np.isfinite(out)):  # was returned with inf entries
        raise InputError(
            f"norm: E rescaled by eps / norm = {eps!r} / {norm!r} exceeds the float64 range",
            "check norm: it must be the operator norm of E (or leave it out to compute it)",
        )
    return out
