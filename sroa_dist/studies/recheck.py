"""Violations anyone can re-check: a worst case saved as a claim
(:meth:`~sroa_dist.WorstCaseResult.save`), re-checked from the file alone.

A worst case that claims to break ``error ≤ c·‖E‖`` (Theorem 3.1's constant, or any ``c``) is
only as good as the norm it was measured with: the claim stands only if the value error of SROA
on ``T + E`` exceeds ``c`` times an *upper* bound of ``‖E‖``. The file holds everything
needed (``E`` dense, ``λ``, ``V``, ``eps``, the claimed ratio and ``c``, the seeds);
:func:`recheck_worst_case` recomputes the certified norm bracket and the certified SROA on
``T + E`` and says whether the claim stands, with the numbers. It trusts nothing in the file
but ``E``, ``λ``, ``V`` and ``c``.

Past the relaxation's reach for ``(n, p)`` a dense ``E`` cannot be re-checked (no certified
norm); a worst case stored by its :class:`~sroa_dist.studies.worst_case_form.ExactForm` can: ``E``
is rebuilt from the form's parameters, its norm recomputed from them (a closed form, or a
certified ``k``-dimensional bracket), and SROA's steps are SS-HOPM steps each checked for
globality and redone on the global branch (``steps_kind = "global-checked"``: global by check,
not by certificate; the verdict says which).
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np

from ..errors import InputError
from ..methods import CERTIFIED_NORM_METHOD, certified_tractable
from ..metrics import match
from ..norms import operator_norm
from ..tensors import check_symmetric_tensor, sod_tensor
from .worst_case_form import sroa_checked
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
        Whether the norm bracket is certified (or exact), and whether every step of SROA is
        global: certified, or checked and redone (``steps_kind``).
    reason : str
        One line: why the claim stands or falls.
    norm_kind : str
        ``"certified"`` (the relaxation on ``E``), ``"exact (closed form)"`` or ``"certified
        (k = …)"`` (a stored form's norm).
    steps_kind : str
        ``"certified"`` or ``"global-checked"`` (past the relaxation's reach, stored forms only).
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
    norm_kind: str = "certified"
    steps_kind: str = "certified"


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
        Seed of the certified norm's local starts (its bracket is validated whatever it is).
        SROA's steps use :data:`~sroa_dist.studies.worst_case_form.CHECK_SEED`.

    Returns
    -------
    RecheckResult
        ``stands`` is true only where the norm bracket's upper end (certified or exact) times
        ``c`` is below the error of SROA with every step global (certified, or past the
        relaxation's reach for a stored form, checked and redone).
    """
    if isinstance(source, WorstCaseResult):
        result, saved_c = source, 2.0
    else:
        result, saved_c = read_claim(source)
    c = saved_c if c is None else float(c)
    if not (math.isfinite(c) and c > 0):
        raise InputError(f"c: expected a finite constant > 0, received {c}", "give c > 0, e.g. 2")
    lam, V = np.asarray(result.lambdas, dtype=float), np.asarray(result.V, dtype=float)
    p = result.E.ndim
    if result.form is not None:  # rebuilt from the parameters: nothing else of E is trusted
        E = result.form.dense(V, lam, p)
        lower, upper, norm_certified, norm_kind = result.form.norm(rng=rng)
    else:
        E = check_symmetric_tensor(result.E, "E")
        n = E.shape[0]
        if not certified_tractable(n, p):
            raise InputError(
                f"E: n = {n}, p = {p} is beyond the certified relaxation's reach on this "
                "machine; a dense E's re-check needs a certified norm",
                "re-check worst cases of n where sroa_dist.methods.cost.certified_tractable "
                "holds, or store E by an exact-norm form (sroa_dist.studies.worst_case_form)",
            )
        nr = operator_norm(E, CERTIFIED_NORM_METHOD, rng=rng)
        lower, upper, norm_certified = float(nr.lower), float(nr.upper), bool(nr.certified)
        norm_kind = "certified"
    res, steps_kind, steps_certified = sroa_checked(sod_tensor(lam, V, p) + E, p)
    error = float(np.max(match(res, lam, V).lam_err))
    ratio = error / upper
    if not norm_certified:
        stands, reason = False, "the norm could not be certified"
    elif not steps_certified:
        stands, reason = False, f"not every SROA step is global ({steps_kind})"
    elif error > c * upper:
        stands, reason = True, f"error {error:.6g} > c * norm_upper = {c:g} * {upper:.6g}"
    else:
        stands, reason = False, f"error {error:.6g} <= c * norm_upper = {c:g} * {upper:.6g}"
    return RecheckResult(
        stands=stands,
        error=error,
        norm_lower=lower,
        norm_upper=upper,
        ratio=ratio,
        c=c,
        claimed_ratio=float(result.ratio),
        norm_certified=norm_certified,
        steps_certified=steps_certified,
        reason=reason,
        norm_kind=norm_kind,
        steps_kind=steps_kind,
    )
