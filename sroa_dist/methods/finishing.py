"""Finishing a rank-one step: the one rule that turns a method's candidate ``x`` into a result.

Every path that solves a rank-one step (the front door :func:`sroa_dist.rank_one_batch`,
explicit and implicit SROA, and anything new) runs the method on a tensor scaled by a power of
two (:func:`normalize`) and then calls :func:`finish_step`, which

1. recomputes ``lam = T x^p`` from ``x`` (a method is never trusted for its values),
2. takes the smaller of the method's bound and the unfolding bound, padded for subnormals,
3. applies the certification test (:func:`certifies`: ``upper_bound − |lam| <= gap_tol·‖T‖_F``,
   and ``lam >= 0`` for odd ``p``),
4. scales value and bound back by ``2^k`` (the bound rounded upwards),
5. enforces the invariant that a certified step never has ``upper_bound < |lam|`` (such a step
   is reported as not certified), and
6. writes the per-instance message.

Stored certificates are re-checked by the sweep with the same :func:`certifies`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..operators import TensorOperator
from ..tensors import (
    FloatArray,
    normalized_unfolding_norm,
    normalizing_exponents,
    scale_up_bound,
)
from .ascent import Deflation, deflated_values
from .builtin import MethodOutput, _object_array

__all__ = ["Normalized", "RankOneResult", "certifies", "finish_step", "normalize"]

#: Tensors with ``2^-64 <= ‖T‖_F < 2^64`` are solved as given: dividing by a power of two this
#: close to 1 changes no bit of any result (nothing under- or overflows either way), so the
#: copy is skipped and results of earlier runs keep their bits.
UNSCALED_EXPONENT = 64
#: Half the smallest subnormal: how far an entry of ``T / 2^k`` (``k > 0``) may have moved.
_SUBNORMAL_HALF_STEP = 2.0**-1074


@dataclasses.dataclass(frozen=True)
class RankOneResult:
    """Result of a best rank-one approximation (fields gain a leading batch axis when batched).

    Attributes
    ----------
    lam : float
        ``T x^p`` at the returned ``x`` (signed; for even p the sign of the extremum found).
    x : (n,) ndarray
        Unit-norm maximiser of ``T x^p`` (odd p) or ``|T x^p|`` (even p).
    upper_bound : float
        A valid upper bound of ``max T x^p`` (odd p) or ``max |T x^p|`` (even p): from the
        moment relaxation's validated dual where it was solved, otherwise the spectral norm
        of the ``n × n^{p-1}`` unfolding.
    certified : bool
        ``upper_bound − |lam| ≤ gap_tol · ‖T‖_F`` (and ``lam >= 0`` for odd p): ``x`` is a
        proven global optimum. Never true with ``upper_bound < |lam|``.
    method, n_starts, n_iter, message, solve_time
        Method name, random starts used, iterations of the local phase, a human-readable
        status, and seconds spent (batched local phases are shared equally by the instances).
    certificate : Certificate or None
        With ``certificate=True``: the auditable SOS certificate of the relaxation's bound
        (:class:`sroa_dist.certificate.Certificate`; both signs for even p), ``None`` where no
        relaxation ran (local methods, or ``certified`` above its size cap). Batched: an
        object array. Its ``verify(T)`` re-derives a bound ``>= upper_bound`` in plain numpy
        (equal up to rounding unless the unfolding bound was the smaller one).
    n_best : int or None
        How many local starts reached the best value (within ``BEST_RTOL``): one lone start is
        a warning sign that the global maximiser's basin is small. ``None`` for methods
        without starts.
    confirmed : bool or None
        Whether the method's confirmation upheld the best value (``sshopm`` with room in
        ``max_starts``: since its revision 4, starts independent of the first set and aimed
        at the directions it did not explore found no higher value, see
        :mod:`sroa_dist.methods.confirmation`; revisions 1–3: two agreeing start sets). A
        confirmation is evidence, measured against certified steps, not a proof: only
        ``certified`` is.
    relaxation : str or None
        Which SDP driver and device produced the relaxation's bound (provenance), e.g.
        ``"scs/cpu"`` or ``"admm/cuda"``; ``None`` where no relaxation ran. The bound itself
        was validated on the host whatever produced it.
    """

    lam: Any
    x: Any
    upper_bound: Any
    certified: Any
    method: str
    n_starts: Any
    n_iter: Any
    message: Any
    solve_time: Any
    certificate: Any = None
    n_best: Any = None
    confirmed: Any = None
    relaxation: str | None = None

    @property
    def gap(self) -> Any:
        """Certification gap ``upper_bound − |lam|`` (≥ 0 up to rounding)."""
        return np.asarray(self.upper_bound) - np.abs(np.asarray(self.lam))

    def __getitem__(self, i: int) -> RankOneResult:
        """The ``i``-th instance of a batched result."""
        return RankOneResult(
            lam=float(self.lam[i]),
            x=self.x[i],
            upper_bound=float(self.upper_bound[i]),
            certified=bool(self.certified[i]),
            method=self.method,
            n_starts=int(self.n_starts[i]),
            n_iter=int(self.n_iter[i]),
            message=str(self.message[i]),
            solve_time=float(self.solve_time[i]),
            certificate=None if self.certificate is None else self.certificate[i],
            n_best=None if self.n_best is None else int(self.n_best[i]),
            confirmed=None if self.confirmed is None else bool(self.confirmed[i]),
            relaxation=self.relaxation,
        )


@dataclasses.dataclass(frozen=True)
class Normalized:
    """A stack ``(B, n, ..., n)`` scaled to ``‖T / 2^k‖_F`` in ``[1/2, 1)``.

    Attributes
    ----------
    T : (B, n, ..., n) ndarray
        ``T / 2^k`` (the input itself where every ``|k| <= UNSCALED_EXPONENT``).
    k : (B,) int64 ndarray
        The exponents (all 0 where the input was kept).
    zero : (B,) bool ndarray
        Zero tensors (their exact answer is ``lam = upper_bound = 0``, certified).
    """

    T: FloatArray
    k: NDArray[np.int64]
    zero: NDArray[np.bool_]

    @property
    def inexact(self) -> NDArray[np.bool_]:
        """Where dividing by ``2^k`` may have rounded entries (``k > 0``: subnormals)."""
        return self.k > 0


def normalize(Ts: FloatArray) -> Normalized:
    """``Ts / 2^k`` with ``‖Ts / 2^k‖_F`` in ``[1/2, 1)`` per tensor
    (:func:`~sroa_dist.tensors.normalizing_exponents`), so that a method run on it neither
    underflows nor overflows between 1e-300 and 1e300; skipped (``k = 0``) when every
    ``|k| <= UNSCALED_EXPONENT``, where it would change no bit."""
    B, p = Ts.shape[0], Ts.ndim - 1
    if isinstance(Ts, TensorOperator):
        # An operator's weights are capped at 1e150 when it is built (no entry is formed to
        # divide): it runs as given.
        return Normalized(Ts, np.zeros(B, np.int64), Ts.fro2() == 0)
    k, zero = normalizing_exponents(Ts)
    if np.all(np.abs(k) <= UNSCALED_EXPONENT):
        k = np.zeros_like(k)
    Tn = np.ldexp(Ts, -k.reshape((B,) + (1,) * p)) if np.any(k) else Ts
    return Normalized(Tn, k, zero)


def certifies(
    upper: Any, lam: Any, fro: Any, gap_tol: float, p: int, *, slack: float = 0.0
) -> NDArray[np.bool_]:
    """The certification test: ``upper − |lam| <= (gap_tol + slack)·fro``, and for odd ``p``
    also ``lam >= 0`` (there ``max T x^p = max |T x^p|``, so a bound on ``|·|`` bounds the
    objective only at a non-negative value).

    ``upper`` is a valid bound of the step's objective, ``lam = T x^p`` and ``fro = ‖T‖_F``, all
    in the same units; ``slack`` (relative to ``fro``) is for re-checks that recompute the bound
    and must allow for its rounding.
    """
    upper, lam, fro = np.asarray(upper), np.asarray(lam), np.asarray(fro)
    tol = gap_tol * fro if not slack else (gap_tol + slack) * fro
    ok = upper - np.abs(lam) <= tol
    if p % 2 == 1:
        ok &= lam >= 0
    return ok


@dataclasses.dataclass(frozen=True)
class FinishedStep:
    """What :func:`finish_step` returns: the step's :class:`RankOneResult` (in the units of the
    tensor as given) and, in the units of the normalised tensor, ``lam_n = T_n x^p`` and the
    (deflated) gradient ``grad_n = T_n x^{p-1}`` ``(B, n)``, which implicit SROA carries on."""

    result: RankOneResult
    lam_n: FloatArray
    grad_n: FloatArray


def _scaled_certificates(out: MethodOutput, k: NDArray[np.int64], B: int) -> Any:
    """The methods' certificates (of ``T / 2^k``) turned into certificates of ``T``."""
    certs = out.certificate
    if certs is None:
        return _object_array([None] * B)
    return _object_array(
        [None if c is None else c.scaled(int(kb)) for c, kb in zip(certs, k, strict=True)]
    )


def finish_step(
    norm: Normalized,
    out: MethodOutput,
    method: str,
    *,
    gap_tol: float,
    elapsed: float,
    deflation: Deflation | None = None,
    unfolding_bound: FloatArray | None = None,
    certificate: bool = False,
    notes: str = "",
) -> FinishedStep:
    """Finish one rank-one step of every tensor in ``norm`` from the method's output ``out``.

    Parameters
    ----------
    norm : Normalized
        The scaled stack the method ran on (:func:`normalize`).
    out : MethodOutput
        The method's output on ``norm.T`` (with ``deflation``: on the deflated tensors).
    method : str
        The method's name (for the result).
    gap_tol : float
        Certification tolerance relative to the step tensor's ``‖·‖_F``.
    elapsed : float
        Wall seconds of the whole batch (shared equally unless ``out.solve_time`` is given).
    deflation : Deflation, optional
        Implicit SROA: the step tensor is ``norm.T − Σ λ̂_j v̂_j^{⊗p}`` (normalised units);
        its ``fro`` is the step tensor's Frobenius norm.
    unfolding_bound : (B,) ndarray, optional
        The step tensor's unfolding bound in normalised units; required with ``deflation``
        (implicit SROA updates it from a Gram matrix), computed from ``norm.T`` otherwise.
    certificate : bool
        Attach the method's certificates, scaled back to the tensors as given.
    notes : str
        Appended to every message, after the method's own ``out.notes``.
    """
    Tn = norm.T
    B, n, p = Tn.shape[0], Tn.shape[1], Tn.ndim - 1
    x = out.x
    G, f = deflated_values(Tn, x[:, None, :], deflation)
    lam_n = f[:, 0]
    if deflation is None:
        fro_n = np.linalg.norm(Tn.reshape(B, -1), axis=1)
        cheap = normalized_unfolding_norm(Tn)
    else:
        if unfolding_bound is None:
            raise RuntimeError("unfolding_bound: required with a deflation (no tensor is formed)")
        fro_n, cheap = deflation.fro, unfolding_bound
    upper_n = cheap if out.upper_bound is None else np.minimum(out.upper_bound, cheap)
    # Dividing by 2^k (k > 0) is exact unless an entry became subnormal; then it moved by at
    # most half the smallest subnormal, which moves T x^p by at most that times n^{p/2}. The
    # bound is padded by that always (far below an ulp of it, so no bits change).
    upper_n = upper_n + np.where(norm.inexact, _SUBNORMAL_HALF_STEP * n ** (p / 2), 0.0)
    certified = certifies(upper_n, lam_n, fro_n, gap_tol, p)
    k, zero = norm.k, norm.zero
    with np.errstate(over="ignore"):
        lam = np.ldexp(lam_n, k)
    if not np.all(np.isfinite(lam)):
        b = int(np.flatnonzero(~np.isfinite(lam))[0])
        # Named as the tensor, not as an argument: every entry point (rank_one's T,
        # operator_norm's E, a batch's Ts, SROA's residuals) comes here.
        which = "the tensor" if B == 1 else f"the tensor at index {b} of the stack"
        raise InputError(
            f"{which}: its best rank-one value {float(lam_n[b]):.6g} · 2^{int(k[b])} is beyond "
            "the float64 range (about 1.8e308)",
            "divide the tensor by a power of two and scale the result back",
        )
    upper = scale_up_bound(upper_n, k)
    lam = np.where(zero, 0.0, lam)
    upper = np.where(zero, 0.0, upper)
    # Invariant: a certificate is a proof, so it never comes with a bound below the value.
    # Rounding (or a broken method's bound) could break it; then the step is not certified.
    sound = (upper_n >= np.abs(lam_n)) & (upper >= np.abs(lam))
    anomaly = certified & ~sound
    certified = (certified & sound) | zero
    extra = "; ".join(s for s in (out.notes, notes) if s)
    message = np.array(
        [
            (
                "certified global optimum"
                if c
                else "not certified (bound below value by rounding)"
                if a
                else "not certified (local optimum)"
            )
            + (f"; {extra}" if extra else "")
            for c, a in zip(certified, anomaly, strict=True)
        ],
        dtype=object,
    )
    solve_time = np.full(B, elapsed / B) if out.solve_time is None else out.solve_time
    result = RankOneResult(
        lam=lam,
        x=x,
        upper_bound=upper,
        certified=certified,
        method=method,
        n_starts=np.asarray(out.n_starts),
        n_iter=np.asarray(out.n_iter),
        message=message,
        solve_time=np.asarray(solve_time, dtype=float),
        certificate=_scaled_certificates(out, k, B) if certificate else None,
        n_best=None if out.n_best is None else np.asarray(out.n_best),
        confirmed=None if out.confirmed is None else np.asarray(out.confirmed),
        relaxation=out.relaxation,
    )
    return FinishedStep(result, lam_n, G[:, 0])
