"""A member of an exact-norm family (:class:`~sroa_dist.studies.worst_case_form.ExactForm`)
evaluated as a worst case: SROA with global steps on ``T + E``, its value error over the exact
norm, as the :class:`~sroa_dist.WorstCaseResult` that :meth:`~sroa_dist.WorstCaseResult.save`
writes (by its form) and ``sroa-dist recheck`` re-checks."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..metrics import match
from ..problems import coherent_tilt
from ..tensors import sod_tensor
from .worst_case import tilt_alignment
from .worst_case_form import ExactForm, sroa_checked
from .worst_case_result import WorstCaseResult

__all__ = ["evaluate_form"]


def evaluate_form(
    form: ExactForm,
    lambdas: ArrayLike,
    V: ArrayLike,
    p: int,
    *,
    seed: Any = None,
) -> tuple[WorstCaseResult, str, bool]:
    """SROA with global steps on ``T + E`` (``E`` from ``form``), as a worst case.

    Returns ``(result, steps, all_global)``: a :class:`~sroa_dist.WorstCaseResult` with
    ``form`` set (a tilt-shrink's ``tilt_cosine`` is taken against its own target's tilt),
    ``ratio`` the value error over the norm's upper end and ``ratio_kind`` ``"exact"`` (a
    closed-form or certified norm), and how the steps were made global (:func:`sroa_checked`).
    """
    lam, V = np.asarray(lambdas, dtype=float), np.asarray(V, dtype=float)
    E = form.dense(V, lam, p)
    lower, upper, exact, how = form.norm()
    res, steps, all_global = sroa_checked(sod_tensor(lam, V, p) + E, p)
    m = match(res, lam, V)
    lam_err, vec_err = np.asarray(m.lam_err), np.asarray(m.vec_err)
    if form.kind == "tilt-shrink":  # aligned with its own target's tilt (r dense tilts cost)
        ell = int(form.params["component"])
        tilt = coherent_tilt(V.shape[0], p, V, lam, component=ell)[0]
        cos = abs(float(np.vdot(E, tilt))) / float(np.linalg.norm(E) * np.linalg.norm(tilt))
    else:
        cos, ell = tilt_alignment(E, V, lam)
    value = float(np.max(lam_err)) / lower
    result = WorstCaseResult(
        E=E,
        metric="lam",
        value=value,
        lam_err=lam_err,
        vec_err=vec_err,
        trace=np.array([value]),
        best_trace=np.array([value]),
        start=form.kind,
        start_values={form.kind: value},
        tilt_cosine=cos,
        tilt_component=ell,
        norm_bracket=(lower, upper),
        eps=lower,
        lambdas=lam,
        V=V,
        seed=seed,
        method="family",
        step_method=steps,
        norm_method=how,
        norm_certified=exact,
        ratio=float(np.max(lam_err)) / upper,
        ratio_kind="exact" if exact else "lower-bound",
        form=form,
    )
    return result, steps, all_global
