"""A worst case stored by its factored form, with a norm that needs no relaxation at size ``n``:
a member of an exact-norm family (:mod:`sroa_dist.problems.tilt_shrink`,
:mod:`sroa_dist.problems.subspace`).

Where the moment relaxation is out of reach for ``(n, p)`` a dense ``E`` has no certified norm,
so no claim about Theorem 3.1's constant can rest on it. A member of an exact-norm family can:
its norm is a closed form (the tilt-shrink) or a certified ``k``-dimensional problem (a
perturbation on a ``k``-dimensional subspace), whatever ``n``. :class:`ExactForm` is such a
member, stored by its parameters (a few numbers, or ``U`` and ``C``: ``n·k + k^p`` numbers
instead of ``n^p``); :meth:`ExactForm.dense` rebuilds ``E`` and :meth:`ExactForm.norm` recomputes
its norm from the parameters alone; :func:`sroa_checked` is SROA with global steps at any n
(certified where tractable, else SS-HOPM steps each checked for globality and redone on the
global branch). :func:`sroa_dist.studies.worst_case_family.evaluate_form` turns a form into the
:class:`~sroa_dist.WorstCaseResult` that ``sroa-dist recheck`` re-checks.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..decomposition import SROAResult, sroa
from ..errors import InputError
from ..methods import CERTIFIED_NORM_METHOD, certified_tractable
from ..problems import subspace_norm, subspace_tensor, tilt_shrink

__all__ = ["FORM_KINDS", "ExactForm", "sroa_checked"]

#: Kinds of :class:`ExactForm`.
FORM_KINDS = ("tilt-shrink", "subspace")
#: Relative slack on a closed-form norm's upper end: the formula and ``E``'s entries are
#: computed in floating point (a few roundings of relative size 1e-16 each).
CLOSED_FORM_RTOL = 1e-12
#: Seed of the global check's starts in :func:`sroa_checked` (fixed: a re-check is a pure
#: function of the file).
CHECK_SEED = 7


@dataclasses.dataclass(frozen=True)
class ExactForm:
    """``E`` as a member of an exact-norm family.

    Attributes
    ----------
    kind : str
        ``"tilt-shrink"``: ``E = scale · (cos θ E_tilt − sin θ v_l^{⊗p}) / N_p(θ)`` on the
        instance's own basis (``params``: ``theta``, ``component``), ``‖E‖ = scale`` exactly;
        ``"subspace"``: ``E = C ×_i U`` (``arrays``: ``U`` ``(n, k)`` orthonormal, ``C``
        ``(k,)*p``), ``‖E‖ = ‖C‖`` certified in ``k`` dimensions (``scale`` unused, 1).
    scale : float
    params : dict
    arrays : dict of ndarray
    """

    kind: str
    scale: float = 1.0
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    arrays: dict[str, NDArray[np.float64]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in FORM_KINDS:
            raise InputError(
                f"form: expected a kind in {list(FORM_KINDS)}, received {self.kind!r}",
                "use one of the listed exact-norm families",
            )
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise InputError(
                f"form: expected a finite scale > 0, received {self.scale}", "give scale > 0"
            )
        need = {"tilt-shrink": (), "subspace": ("U", "C")}[self.kind]
        missing = [k for k in need if k not in self.arrays]
        if missing:
            raise InputError(
                f"form: a {self.kind} form needs arrays {list(need)}, missing {missing}",
                "give every array of the form",
            )

    def dense(self, V: ArrayLike, lambdas: ArrayLike, p: int) -> NDArray[np.float64]:
        """``E`` as a dense ``(n,)*p`` tensor for the instance ``(V, lambdas)``."""
        V = np.asarray(V, dtype=float)
        if self.kind == "tilt-shrink":
            E, _ = tilt_shrink(
                V.shape[0],
                p,
                V,
                lambdas,
                theta=float(self.params["theta"]),
                component=int(self.params["component"]),
            )
            return self.scale * E
        E = subspace_tensor(self.arrays["C"], self.arrays["U"])
        if E.ndim != p or E.shape[0] != V.shape[0]:
            raise InputError(
                f"form: the subspace form gives shape {E.shape}, expected ({V.shape[0]},)*{p}",
                "give U with n rows and a core C of order p",
            )
        return E

    def norm(self, *, rng: int = 0) -> tuple[float, float, bool, str]:
        """``(lower, upper, exact, how)`` of ``‖E‖`` from the parameters alone: the closed form
        (``exact`` always; ``upper`` carries :data:`CLOSED_FORM_RTOL`), or the certified
        ``k``-dimensional bracket (``exact`` where it is certified)."""
        if self.kind == "tilt-shrink":
            s = float(self.scale)
            return s, s * (1 + CLOSED_FORM_RTOL), True, "exact (closed form)"
        nr = subspace_norm(self.arrays["C"], rng=rng)
        k = self.arrays["C"].shape[0]
        return float(nr.lower), float(nr.upper), bool(nr.certified), f"certified (k = {k})"

    def to_json(self) -> dict[str, Any]:
        """The form's metadata (its arrays are saved beside it)."""
        return {"kind": self.kind, "scale": float(self.scale), "params": dict(self.params)}


def sroa_checked(T: NDArray[np.float64], p: int) -> tuple[SROAResult, str, bool]:
    """SROA on ``T`` with global steps: ``(result, steps, all_global)``.

    Certified steps where the relaxation is tractable for ``(n, p)`` (``steps =
    "certified"``); else SS-HOPM steps, each checked for globality and redone on the global
    branch (``"global-checked"``; ``all_global``: no step left non-global after the redo).
    """
    n = T.shape[0]
    if certified_tractable(n, p):
        res = sroa(T, method=CERTIFIED_NORM_METHOD, rng=CHECK_SEED)
        return res, "certified", bool(np.all(res.certified))
    res = sroa(T, method="sshopm", global_check=True, redo=True, rng=CHECK_SEED)
    return res, "global-checked", not bool(np.any(res.non_global))
