"""The result of a relaxation solve, and the bookkeeping of one solve in progress."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..certificate import Certificate

__all__ = ["RelaxationResult"]


@dataclass(frozen=True)
class RelaxationResult:
    """Outcome of a moment-relaxation solve of ``max_{||x|| = 1} sign * T x^p``.

    Attributes
    ----------
    value : float
        The relaxation's estimate of ``max sign * f``: when the certificate closes the gap
        (``gap <= gap_tol * ||T||_F``) the rank-one moment vector of ``x`` is optimal for the
        relaxation and ``value = fx``; otherwise the driver's primal objective, raised to
        ``fx`` if below (the moment vector of ``x`` is feasible, so the relaxation's optimum
        is ``>= fx``).
    upper_bound : float
        Validated upper bound of ``max_{||x||=1} sign * f(x)``. It holds whatever the driver
        returned (early stops included); rounding is covered by an explicit margin.
    x : ndarray, shape ``(n,)``
        Unit-norm maximiser candidate (from the moments, polished).
    fx : float
        ``sign * f(x)``, a lower bound of the maximum.
    sign : int
        ``+1`` or ``-1``.
    rank_ratio : float
        Second over first eigenvalue of the driver's (last) moment matrix.
    flat : bool
        The relaxation is numerically tight with a rank-one optimal moment matrix: either
        ``rank_ratio < flat_tol``, or the certificate closed the gap with a dual matrix whose
        kernel is one-dimensional (``dual_margin > 0``), which makes every optimal moment
        matrix rank one.
    status : str
        The driver's status word for its last iterate.
    iterations : int
        Total driver (SDP solver) iterations.
    solve_time : float
        Wall-clock seconds for the whole solve (driver, extraction, polish, certificate).
    certificate : str
        Which dual produced ``upper_bound``: ``"face"`` (projected on the optimal face at ``x``),
        ``"repaired"`` (the driver's dual with its equality residual moved into ``Z``),
        ``"driver"`` (the driver's dual as returned; called ``"scs"`` before the driver seam), or
        ``"flattening"`` (even ``p``, the losing sign settled by the symmetric-unfolding dual
        without an SDP solve; ``x`` and ``fx`` are then only a point and its value).
    dual_margin : float
        Second-smallest eigenvalue of the certificate's dual matrix (``> 0``: the rank-one
        optimum is unique); ``nan`` when the certificate is not a face certificate.
    sdp_value : float
        The driver's primal objective of its last iterate, as ``max sign * f`` (SCS: ``-pobj``);
        also readable as ``scs_value``, its name before the driver seam.
    sos_certificate : Certificate or None
        With ``with_certificate=True``: the dual that gave ``upper_bound`` as an auditable SOS
        identity (:class:`sroa_dist.certificate.Certificate`; ``verify(T)`` re-derives the bound
        without the solver); ``None`` otherwise or when the driver returned no finite dual.
    """

    value: float
    upper_bound: float
    x: np.ndarray
    fx: float
    sign: int
    rank_ratio: float
    flat: bool
    status: str
    iterations: int
    solve_time: float
    certificate: str = "driver"
    dual_margin: float = float("nan")
    sdp_value: float = float("nan")
    sos_certificate: Certificate | None = None

    @property
    def scs_value(self) -> float:
        """:attr:`sdp_value` under its name from before the driver seam."""
        return self.sdp_value

    @property
    def gap(self) -> float:
        """``upper_bound - fx`` (``>= 0`` up to rounding): the certified optimality gap."""
        return self.upper_bound - self.fx


class Best:
    """Mutable bookkeeping of one solve: best candidate and best validated bound."""

    def __init__(self) -> None:
        self.x: np.ndarray | None = None
        self.fx = -np.inf
        self.bound = np.inf
        self.which = "none"
        self.margin = float("nan")
        self.dual: tuple[np.ndarray, np.ndarray] | None = None
        #: The fixed pseudo-random starts were polished already (they are the same on every
        #: call, so once is enough).
        self.random_starts_done = False

    def offer_bound(
        self,
        bound: float,
        which: str,
        margin: float = float("nan"),
        dual: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        if bound < self.bound:
            self.bound, self.which, self.margin, self.dual = bound, which, margin, dual

    def done(self, target: float, stop_below: float) -> bool:
        return self.bound - self.fx <= target or self.bound <= stop_below
