"""Operator (spectral) norm of symmetric tensors, ``‖E‖ = max_{‖x‖=1} |E x^p|``, with a certified
bracket."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .solvers import GAP_TOL, RngLike, rank_one_batch
from .tensors import check_symmetric_tensor

__all__ = ["OperatorNormResult", "operator_norm", "operator_norm_batch", "scale_to_opnorm"]


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


def scale_to_opnorm(
    E: ArrayLike, eps: float, *, method: str = "certified", rng: RngLike = None, **options: Any
) -> np.ndarray:
    """Rescale a symmetric perturbation so that ``‖E‖ = eps`` (within the norm's bracket)."""
    if not (np.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps: expected a finite target norm >= 0, received {eps}")
    E = check_symmetric_tensor(E, "E")
    norm = operator_norm(E, method, rng=rng, **options).value
    if norm == 0:
        if eps == 0:
            return E.copy()
        raise ValueError("E: cannot scale a zero perturbation to a positive operator norm")
    factor = eps / norm
    if np.isfinite(factor) and (factor > 0 or eps == 0):
        return E * factor
    # eps / norm over- or underflows (a subnormal or huge norm): divide first.
    return (E / norm) * eps
