"""Violations anyone can re-check: a worst case saved as a claim
(:meth:`~sroa_dist.WorstCaseResult.save`), re-checked from the file alone.

A worst case that claims to break ``error ≤ c·‖E‖`` (Theorem 3.1's constant, or any ``c``) is
only as good as the norm it was measured with: the claim stands only if the value error of SROA
on ``T + E`` exceeds ``c`` times an *upper* bound of ``‖E‖``. The file holds everything
needed (``E`` dense, ``λ``, ``V``, ``eps``, the claimed ratio and ``c``, the seeds);
:func:`recheck_worst_case` recomputes the certified norm bracket and the certified SROA on
``T + E`` and says whether the claim stands, with the numbers. It trusts nothing in the file
but ``E``, ``λ``, ``V`` and ``c``.
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np

from ..decomposition import sroa
from ..errors import InputError
from ..methods import CERTIFIED_NORM_METHOD, certified_tractable
from ..metrics import match
from ..norms import operator_norm
from ..tensors import check_symmetric_tensor, sod_tensor
from .worst_case_result import WorstCaseResult, read_claim

__all__ = ["RecheckResult", "recheck_worst_case"]


@dataclasses.dataclass(frozen=True)
class RecheckResult:
    """Whether a saved worst case's claim ``error > c·‖E‖`` stands, recomputed.

    Attributes
    ----------
    stands : bool
        ``error > c · norm_upper`` with the norm and every SROA step certified.
    error : float
        ``max_j |λ̂_j − λ_π(j)|`` of certified SROA on ``T + E``.
    norm_lower, norm_upper : float
        The certified bracket of ``‖E‖``.
    ratio : float
        ``error / norm_upper`` (a lower bound on ``error / ‖E‖``, tight to the bracket).
    c : float
        The constant checked against.
    claimed_ratio : float
        The ratio the saved worst case stated.
    norm_certified, steps_certified : bool
        Whether the norm bracket, and every step of SROA, is certified.
    reason : str
        One line: why the claim stands or falls.
    """

    stands: bool
    error: float
    norm_lower: float
    norm_upper: float
    ratio: float
    c: float
    claimed_ratio: float
    norm_certified: bool
    steps_certified: bool
    reason: str


def recheck_worst_case(
    source: WorstCaseResult | str | os.PathLike[str],
    c: float | None = None,
    *,
    rng: int = 0,
) -> RecheckResult:
    """Re-check a worst case's claim ``error > c·‖E‖`` with certified numbers only.

    Parameters
    ----------
    source : WorstCaseResult or path
        A result, or a file written by :meth:`WorstCaseResult.save`. Only ``E``, ``λ`` and
        ``V`` (and the file's ``c``) are used: the norm and SROA are recomputed.
    c : float, optional
        The constant; default the file's (a result: 2, Theorem 3.1's).
    rng : int
        Seed of the certified solvers' local starts (their brackets are validated whatever
        it is).

    Returns
    -------
    RecheckResult
        ``stands`` is true only where the certified norm bracket's upper end times ``c`` is
        below the error of SROA with every step certified.
    """
    if isinstance(source, WorstCaseResult):
        result, saved_c = source, 2.0
    else:
        result, saved_c = read_claim(source)
    c = saved_c if c is None else float(c)
    if not (math.isfinite(c) and c > 0):
        raise InputError(f"c: expected a finite constant > 0, received {c}", "give c > 0, e.g. 2")
    E = check_symmetric_tensor(result.E, "E")
    n, p = E.shape[0], E.ndim
    if not certified_tractable(n, p):
        raise InputError(
            f"E: n = {n}, p = {p} is beyond the certified relaxation's reach on this machine; "
            "a re-check needs a certified norm and certified steps",
            "re-check worst cases of n where sroa_dist.methods.cost.certified_tractable holds",
        )
    lam, V = np.asarray(result.lambdas, dtype=float), np.asarray(result.V, dtype=float)
    nr = operator_norm(E, CERTIFIED_NORM_METHOD, rng=rng)
    res = sroa(sod_tensor(lam, V, p) + E, method=CERTIFIED_NORM_METHOD, rng=rng)
    error = float(np.max(match(res, lam, V).lam_err))
    norm_certified = bool(nr.certified)
    steps_certified = bool(np.all(res.certified))
    upper = float(nr.upper)
    ratio = error / upper
    if not norm_certified:
        stands, reason = False, "the norm could not be certified"
    elif not steps_certified:
        stands, reason = False, "not every SROA step could be certified"
    elif error > c * upper:
        stands, reason = True, f"error {error:.6g} > c * norm_upper = {c:g} * {upper:.6g}"
    else:
        stands, reason = False, f"error {error:.6g} <= c * norm_upper = {c:g} * {upper:.6g}"
    return RecheckResult(
        stands=stands,
        error=error,
        norm_lower=float(nr.lower),
        norm_upper=upper,
        ratio=ratio,
        c=c,
        claimed_ratio=float(result.ratio),
        norm_certified=norm_certified,
        steps_certified=steps_certified,
        reason=reason,
    )
