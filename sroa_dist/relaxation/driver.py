"""The seam between the moment relaxation and an SDP solver: the conic problem a driver is
handed, the iterates it hands back, and the protocol every driver implements.

The relaxation does not trust a driver: every bound it reports is computed from a dual iterate
by :func:`~sroa_dist.relaxation.bound.validated_bound`, which holds for any dual guess. So a
driver only has to produce duals, successively better ones, as an iterator: the relaxation
tries a certificate after each iterate and stops the iterator as soon as one closes the gap.
:mod:`.scs_driver` is the production driver; :mod:`.clarabel_driver` (dense, tiny ``n``)
shows the seam carries a second one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp

from ..errors import InputError

__all__ = ["Rule", "Schedule", "SdpDriver", "SdpIterate", "SdpProblem"]

#: A value rule of one option: ``(predicate, what is expected)``; ``None``: checked by name only.
Rule = tuple[Callable[[Any], bool], str]


def is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def is_real(v: Any) -> bool:
    return (is_int(v) or isinstance(v, (float, np.floating))) and bool(np.isfinite(v))


def int_at_least(lo: int) -> Rule:
    return (lambda v: is_int(v) and v >= lo), f"an integer >= {lo}"


FLAG: Rule = (lambda v: isinstance(v, (bool, np.bool_)), "true or false")
NONNEG: Rule = (lambda v: is_real(v) and v >= 0, "a finite number >= 0")
POSITIVE: Rule = (lambda v: is_real(v) and v > 0, "a finite number > 0")


@dataclass(frozen=True, eq=False)
class SdpProblem:
    """The fixed data of one relaxation as a conic program over the moment variables ``y``::

        min c^T y   s.t.   A0 y = b0,   M(y) = sum_a y_a E_a  positive semidefinite,

    where only ``c`` changes between tensors (it is passed to :meth:`SdpDriver.runs`). The
    moment matrix is given entry by entry: entry ``k`` of its lower triangle sits at
    ``(rows[k], cols[k])`` (``rows >= cols``, every lower entry exactly once) and equals
    ``(entries @ y)[k]``. No solver's vectorisation is implied; a driver maps the entries to
    its own (with its own off-diagonal scaling).

    Compared by identity (``eq=False``): drivers may key per-problem workspaces on it.
    """

    A0: sp.csr_matrix
    b0: np.ndarray
    entries: sp.csr_matrix
    rows: np.ndarray
    cols: np.ndarray
    m: int
    #: Tensor order: drivers may tune settings by it (SCS's warm-up does, by parity).
    p: int

    @property
    def n_vars(self) -> int:
        """Number of moment variables (length of ``y`` and ``c``)."""
        return int(self.entries.shape[1])

    @property
    def n_zero(self) -> int:
        """Number of equality rows (length of ``z_zero``)."""
        return int(self.A0.shape[0])

    def matrix(self, e: np.ndarray) -> np.ndarray:
        """The symmetric ``(m, m)`` matrix whose lower-triangle entries are ``e``."""
        M = np.empty((self.m, self.m))
        M[self.rows, self.cols] = e
        M[self.cols, self.rows] = e
        return M


@dataclass(frozen=True)
class SdpIterate:
    """One iterate of a driver: a dual guess, and the primal moments when the driver has them.

    The dual ``(z_zero, Z)`` is in the convention of :func:`~.bound.validated_bound`: at an
    optimum ``c + A0^T z_zero - M^*(Z) = 0`` with ``Z`` positive semidefinite, where
    ``M^*(Z)_a = <E_a, Z>``. Nothing needs to hold exactly (or at all): the bound is valid for
    any guess, and only gets better the closer the guess.
    """

    z_zero: np.ndarray
    Z: np.ndarray
    #: Solver iterations spent on this iterate (since the previous one).
    iterations: int
    #: The solver's own status word for this iterate (reported, never decided on).
    status: str
    #: Primal moment vector, length ``n_vars``; maximiser candidates are extracted from it.
    #: ``None``: the driver has no primal (a dual-only method); candidates then come from the
    #: tensor alone.
    y: np.ndarray | None = None
    #: ``c^T y`` as the solver reports it (the minimised objective); ``nan`` if unknown.
    primal_objective: float = float("nan")
    #: Second over first eigenvalue of the driver's moment matrix, when it has them at hand
    #: (the ADMM driver: of its PSD iterate ``X``, which ``M(y)`` approaches; reported, never
    #: decided on). ``None``: the relaxation computes it from ``M(y)`` on the host.
    rank_ratio: float | None = None


@dataclass(frozen=True)
class Schedule:
    """How a solve spends a driver's iterations, as :meth:`MomentRelaxation.solve` asks.

    A driver that can stop and resume (SCS) runs up to ``warmup_chunks`` short warm-up chunks of
    ``warmup_iters`` iterations (``None``: the driver's default; ``0``: no warm-up), then, if
    ``fallback`` (or there was no warm-up), its full solve in chunks of ``fallback_chunk``
    iterations, yielding an iterate after each chunk. A driver that cannot resume may ignore
    the chunking and yield once.
    """

    warmup_iters: int | None
    warmup_chunks: int
    fallback: bool
    fallback_chunk: int


class SdpDriver(Protocol):
    """An SDP solver behind the relaxation: settings with value rules, and a run that yields
    dual iterates (:class:`SdpIterate`) of an :class:`SdpProblem` with cost ``c``.

    The relaxation calls ``configure`` once per solve and ``runs`` once; it may leave the
    iterator early (a certificate closed the gap), so a driver must not rely on being run to
    its end. Results must be a pure function of ``(problem, c, config, schedule)``: sweeps are
    compared bit for bit after a resume.

    Two members are optional. ``runs_batch(problem, C, config, schedule, retired)`` steps the
    relaxations of several tensors (rows of ``C``) together and yields, after each chunk, a
    list of ``(row, iterate, last)``; rows the caller adds to ``retired`` are dropped
    (:meth:`~.core.MomentRelaxation.solve_batch` uses it, each result equal to that row's
    :meth:`runs`). ``backend`` (an :class:`~.backend.ArrayBackend`) says where the driver's
    arrays live: the relaxation then computes its face certificates there and validates their
    bounds on the host (:class:`~.bound.DeviceFace`).
    """

    #: Short name, used in messages.
    name: str
    #: The settings a caller may pass (``**settings`` of ``solve``), with their value rules.
    setting_rules: Mapping[str, Rule | None]

    def configure(self, settings: Mapping[str, Any]) -> Any:
        """The driver's defaults updated by ``settings``; unknown names are a ``ValueError``."""
        ...

    def runs(
        self, problem: SdpProblem, c: np.ndarray, config: Any, schedule: Schedule
    ) -> Iterator[SdpIterate]:
        """Successively better iterates of ``min c^T y`` over ``problem``."""
        ...


def check_setting_names(driver: SdpDriver, settings: Mapping[str, Any], also: str = "") -> None:
    """Raise ``ValueError`` naming the unknown ``settings`` of ``driver`` and the valid ones
    (``also``: more valid names to list, e.g. the solve options)."""
    unknown = set(settings) - set(driver.setting_rules)
    if unknown:
        raise InputError(
            f"unknown option(s) {sorted(unknown)}; valid {driver.name} settings: "
            f"{sorted(driver.setting_rules)}" + (f"; {also}" if also else ""),
            "pass only the listed settings",
        )
