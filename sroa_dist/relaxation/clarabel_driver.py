"""Clarabel (an interior-point conic solver) behind the driver seam: the second
:class:`~.driver.SdpDriver`, for small relaxations (``n`` up to about 8 at ``p = 3, 4``).

It exists to show that the relaxation needs nothing of SCS: the same validated bound and the
same certificate export work from Clarabel's dual. An interior-point method cannot resume from
an earlier iterate, so it ignores the chunking of the :class:`~.driver.Schedule` and yields
once, at its solution. Clarabel is optional (``pip install clarabel``; in the ``test`` and
``bench`` extras).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from .driver import FLAG, NONNEG, Rule, Schedule, SdpIterate, SdpProblem, int_at_least

try:
    import clarabel
except ImportError:  # optional: the error is raised when the driver is used
    clarabel = None

__all__ = ["CLARABEL", "CLARABEL_SETTING_RULES", "ClarabelDriver"]

#: Clarabel settings a caller may pass, with their value rules.
CLARABEL_SETTING_RULES: dict[str, Rule | None] = {
    "max_iter": int_at_least(1),
    "tol_gap_abs": NONNEG,
    "tol_gap_rel": NONNEG,
    "tol_feas": NONNEG,
    "verbose": FLAG,
}

#: Tighter than Clarabel's defaults (1e-8): the face certificate starts from this dual, and a
#: closer one needs fewer alternating projections.
DEFAULT_CLARABEL_SETTINGS: dict[str, Any] = {
    "tol_gap_abs": 1e-10,
    "tol_gap_rel": 1e-10,
    "tol_feas": 1e-10,
    "verbose": False,
}


class ClarabelDriver:
    """Clarabel as an :class:`~.driver.SdpDriver` (one interior-point solve per call)."""

    name = "Clarabel"
    setting_rules: Mapping[str, Rule | None] = CLARABEL_SETTING_RULES

    def configure(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """:data:`DEFAULT_CLARABEL_SETTINGS` updated by ``settings``; unknown names are an
        error."""
        unknown = set(settings) - set(CLARABEL_SETTING_RULES)
        if unknown:
            raise InputError(
                f"unknown option(s) {sorted(unknown)}; valid Clarabel settings: "
                f"{sorted(CLARABEL_SETTING_RULES)}",
                "pass only the listed Clarabel settings",
            )
        return {**DEFAULT_CLARABEL_SETTINGS, **settings}

    def runs(
        self, problem: SdpProblem, c: np.ndarray, config: dict[str, Any], schedule: Schedule
    ) -> Iterator[SdpIterate]:
        """One iterate: Clarabel's solution of ``min c^T y`` over ``problem``."""
        if clarabel is None:
            # The CLI's answer to a missing package names it and says how to install it.
            raise ImportError(
                "the Clarabel driver needs the clarabel package (pip install clarabel)"
            )
        m, I, J = problem.m, problem.rows, problem.cols  # noqa: E741
        # Clarabel's PSD triangle: the upper triangle, column-major, off-diagonals times
        # sqrt 2. Entry (I, J) of the lower triangle is (J, I) of the upper one.
        pos = I * (I + 1) // 2 + J
        scale = np.sqrt(np.where(I == J, 1.0, 2.0))
        rows = sp.diags(-scale) @ problem.entries  # in the problem's entry order
        perm = np.empty(len(pos), dtype=np.int64)
        perm[pos] = np.arange(len(pos))  # Clarabel position -> problem entry
        A = sp.vstack([problem.A0, rows[perm]]).tocsc()
        b = np.concatenate([problem.b0, np.zeros(len(pos))])
        N = problem.n_vars
        settings = clarabel.DefaultSettings()
        for k, v in config.items():
            setattr(settings, k, v)
        solver = clarabel.DefaultSolver(
            sp.csc_matrix((N, N)),
            np.asarray(c, dtype=float),
            A,
            b,
            [clarabel.ZeroConeT(problem.n_zero), clarabel.PSDTriangleConeT(m)],
            settings,
        )
        sol = solver.solve()
        z = np.asarray(sol.z, dtype=float)
        e = z[problem.n_zero :][pos] / scale  # back to the problem's entry order, unscaled
        yield SdpIterate(
            z_zero=z[: problem.n_zero].copy(),
            Z=problem.matrix(e),
            iterations=int(sol.iterations),
            status=str(sol.status),
            y=np.asarray(sol.x, dtype=float),
            primal_objective=float(sol.obj_val),
        )


#: The Clarabel driver.
CLARABEL = ClarabelDriver()
