"""The order-``d`` moment relaxation of ``max_{||x||=1} sign * T x^p``: built once per
``(n, p, d)``, then solved and certified per tensor."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from ..certificate import Certificate
from ..tensors import kron_power
from . import bound
from .driver import (
    FLAG,
    NONNEG,
    Rule,
    Schedule,
    SdpDriver,
    SdpIterate,
    check_setting_names,
    int_at_least,
    is_int,
)
from .export import export_certificate
from .polish import check_sign, check_tensor, fro, polish, polish_many, value, values
from .result import Best, RelaxationResult
from .scs_driver import SCS
from .structure import MomentStructure

__all__ = ["SOLVE_OPTIONS", "SOLVE_OPTION_RULES", "MomentRelaxation", "option_rules"]

_U = float(np.finfo(float).eps)

#: Moment-matrix side above which the warm-up gets :data:`LARGE_WARMUP_CHUNKS` chunks by
#: default instead of 2 (n >= 44 for p = 3, n >= 45 for p = 4). At n = 64, p = 3 the third
#: warm-up chunk certifies a step that otherwise went to the fallback solve, whose second SCS
#: workspace raised the peak memory by half (benchmarks/bench_certified_scaling.py).
LARGE_GRAM = 1000
LARGE_WARMUP_CHUNKS = 5
#: Iterations per chunk of the full SCS solve. Each chunk ends with candidate extraction and a
#: certificate attempt, worth about five SCS iterations once the eigendecompositions dominate
#: (moment matrix side above :data:`SHORT_CHUNK_GRAM`: n >= 27 for p = 3, n >= 28 for p = 4);
#: there shorter chunks stop closer to the first certifying iterate (p = 4, n = 32 deflated
#: steps: 5.2 s instead of 5.8 s; p = 3 deflated tilt, n = 32: 9.2 s instead of 9.7 s), while
#: at n = 10 (Figure 2) the per-chunk Python work makes 30 the better length (7 % faster).
FALLBACK_CHUNK = 30
LARGE_FALLBACK_CHUNK = 15
SHORT_CHUNK_GRAM = 400

#: Keyword options of :meth:`MomentRelaxation.solve` that a caller may pass through a table
#: (the ``relaxation`` option of the rank-one methods), with their value rules (``None``:
#: checked by name only). The driver's settings come on top (:func:`option_rules`).
SOLVE_OPTION_RULES: dict[str, Rule | None] = {
    "warmup_iters": (lambda v: v is None or (is_int(v) and v >= 0), "an integer >= 0"),
    "warmup_chunks": int_at_least(1),
    "refine_iters": int_at_least(0),
    "fallback_chunk": int_at_least(1),
    "gap_tol": NONNEG,
    "fallback": FLAG,
    "stop_below": None,
    "polish_steps": int_at_least(0),
    "flat_tol": NONNEG,
}
SOLVE_OPTIONS = tuple(SOLVE_OPTION_RULES)


def option_rules(driver: SdpDriver = SCS) -> dict[str, Rule | None]:
    """Every option a ``relaxation`` table may set for ``driver``: the solve options
    (:data:`SOLVE_OPTION_RULES`) and the driver's settings, with their value rules (``None``:
    checked by name only). The one place callers (option checks, sweep specs) read them."""
    return {**SOLVE_OPTION_RULES, **driver.setting_rules}


def _finite(it: SdpIterate) -> bool:
    return bool(np.all(np.isfinite(it.z_zero)) and np.all(np.isfinite(it.Z)))


class MomentRelaxation(MomentStructure):
    """Order-``d`` Lasserre relaxation of ``max_{||x||=1} T x^p``, built per ``(n, p, d)``, and
    its solve: dual iterates from an SDP driver (:class:`~.driver.SdpDriver`, SCS by default)
    turned into validated bounds and a certified maximiser.

    The fixed maps and the conic form (:attr:`problem`) are those of :class:`MomentStructure`;
    see there for the parameters.

    Notes
    -----
    Safe to share between threads: the SCS driver gives each thread its own workspace (built on
    first use, about as expensive as one solve).
    """

    # ---- certificates (see :mod:`.bound` and :mod:`.export`) -------------------------------

    def validated_bound(
        self, c: np.ndarray, z_zero: np.ndarray, Z: np.ndarray, lam_min: float | None = None
    ) -> float:
        """:func:`sroa_dist.relaxation.bound.validated_bound` of this relaxation."""
        return bound.validated_bound(self, c, z_zero, Z, lam_min)

    def repair(self, c: np.ndarray, z_zero: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """:func:`sroa_dist.relaxation.bound.repair` of this relaxation."""
        return bound.repair(self, c, z_zero, Z)

    def face_projector(self, c: np.ndarray, z_zero: np.ndarray, x: np.ndarray):
        """:func:`sroa_dist.relaxation.bound.face_projector` of this relaxation."""
        return bound.face_projector(self, c, z_zero, x)

    def export_certificate(
        self, T: np.ndarray, sign: int, z_zero: np.ndarray, Z: np.ndarray, scale: float = 1.0
    ) -> Certificate:
        """:func:`sroa_dist.relaxation.export.export_certificate` of this relaxation."""
        return export_certificate(self, T, sign, z_zero, Z, scale)

    # ---- solving ----------------------------------------------------------------------------

    def _jennrich_starts(self, T: np.ndarray) -> np.ndarray:
        """Rows: the eigenvectors of ``T w^{p-2}`` for the fixed unit ``w`` (Jennrich's
        simultaneous diagonalisation: for a nearly SOD tensor they are close to the components
        even when all weights are equal)."""
        n = self.n
        W = (T.reshape(n * n, -1) @ kron_power(self._w[None, :], self.p - 2)[0]).reshape(n, n)
        return np.linalg.eigh(0.5 * (W + W.T))[1].T

    def _candidates(
        self,
        T: np.ndarray,
        s: int,
        y: np.ndarray | None,
        steps: int,
        best: Best,
        first: bool,
        extra: np.ndarray | None = None,
    ) -> None:
        """Polish maximiser candidates and keep the best in ``best``.

        Starts: the first-order moments (odd ``p``), the leading eigenvector (both signs) of the
        second-order moment matrix ``[y_{e_i + e_j}]`` (all its eigenvectors on later calls);
        on the first call also the eigenvectors of
        ``T w^{p-2}`` for a fixed pseudo-random unit ``w`` (Jennrich's simultaneous
        diagonalisation: for a nearly SOD tensor they are close to the components even when all
        weights are equal), on later calls (the first certificate failed) the current best
        instead, and on the first of them ``n`` fixed pseudo-random starts. ``extra`` starts
        are added as given. Without moments (``y is None``: a dual-only driver) the starts
        come from ``T`` alone.
        """
        n, p = self.n, self.p
        starts = [] if extra is None else [np.atleast_2d(np.asarray(extra, dtype=float))]
        if self._first is not None and y is not None:
            starts.append((self._first @ y)[None, :])
        X = np.full((n, n), np.nan)
        if y is not None:
            iu, ju = self._second_idx
            X[iu, ju] = X[ju, iu] = self._second @ y
        if np.all(np.isfinite(X)):
            V = np.linalg.eigh(X)[1]
            # After a short warm-up the other eigenvectors are mixtures; later, all may matter.
            starts.append(np.vstack([V[:, -1], -V[:, -1]]) if first else V.T)
        if first:
            starts.append(self._jennrich_starts(T))
        else:
            if not best.random_starts_done:  # fixed starts: their polish never changes
                starts.append(self._random_starts)
                best.random_starts_done = True
            if best.x is not None:
                starts.append(best.x[None, :])
        S = np.vstack(starts)
        nrm = np.linalg.norm(S, axis=1)
        S = S[np.isfinite(nrm) & (nrm > 0)]
        if not len(S):
            return
        S = S / np.linalg.norm(S, axis=1, keepdims=True)
        if p % 2:  # orient so that sign * f >= 0 (f is odd)
            f0 = s * values(T, S)
            S = np.where((f0 < 0)[:, None], -S, S)
        alpha = (p - 1) * float(np.linalg.norm(T))
        Xp, f = polish_many(T, S, s, 3 if first else 10, steps if first else 2 * steps, alpha)
        i = int(np.argmax(f))
        # Finish the winner with Newton steps alone (it may have stopped in the batch).
        x = polish_many(T, Xp[i : i + 1].copy(), s, 0, steps, alpha)[0][0]
        fx = float(s * value(T, x))
        if fx > best.fx:
            best.x, best.fx = x, fx

    def solve(
        self,
        T: np.ndarray,
        sign: int = 1,
        *,
        warmup_iters: int | None = None,
        warmup_chunks: int | None = None,
        refine_iters: int = 12,
        fallback_chunk: int | None = None,
        gap_tol: float = 1e-10,
        fallback: bool = True,
        stop_below: float = -np.inf,
        polish_steps: int = 10,
        flat_tol: float = 1e-3,
        candidates: np.ndarray | None = None,
        with_certificate: bool = False,
        driver: SdpDriver = SCS,
        **settings: Any,
    ) -> RelaxationResult:
        """Solve the relaxation of ``max_{||x||=1} sign * T x^p`` and certify a maximiser.

        Parameters
        ----------
        T : ndarray, shape ``(n,)*p``
            Symmetric tensor.
        sign : {+1, -1}
            Maximise ``sign * T x^p``.
        warmup_iters : int, optional
            Driver iterations per chunk of the deterministic warm-up; default the driver's
            (SCS: :data:`~.scs_driver.WARMUP_SCS_SETTINGS`, 14 for odd ``p``, 40 for even
            ``p``). 0 skips the warm-up and goes straight to the full solve.
        warmup_chunks : int, optional
            Maximum number of warm-up chunks; each continues from the previous one and is
            followed by candidate extraction and a face certificate. Default 2, or
            :data:`LARGE_WARMUP_CHUNKS` when the moment matrix is larger than
            :data:`LARGE_GRAM`: there the fallback's second SCS workspace would cost more
            memory and time than a few more warm-up chunks.
        refine_iters : int
            Maximum alternating-projection steps of each face certificate.
        gap_tol : float
            Target ``upper_bound - fx``, relative to ``||T||_F``. Refinement stops there; if the
            warm-up's certificate does not reach it, the full solve runs.
        fallback : bool
            Whether to run the full solve when the warm-up does not reach ``gap_tol``.
        fallback_chunk : int, optional
            The full solve runs in chunks of this many iterations (up to ``max_iters`` in all),
            each followed by candidate extraction and a face certificate. Short chunks let the
            certificate close early, which matters on instances that mostly need the full
            solve (Figure 2's binary noise); benchmarks/bench_certified.py times the solves.
            Default :data:`FALLBACK_CHUNK`, or :data:`LARGE_FALLBACK_CHUNK` when the moment
            matrix is larger than :data:`SHORT_CHUNK_GRAM`.
        stop_below : float
            Also stop as soon as the validated upper bound is ``<= stop_below`` (used by
            :meth:`solve_abs` for the second sign, which need only be shown not to win).
        polish_steps : int
            Newton steps of :func:`polish` for each extracted candidate.
        flat_tol : float
            Threshold of the rank-one test ``rank_ratio < flat_tol``.
        candidates : ndarray, shape ``(k, n)``, optional
            Maximiser candidates from elsewhere (e.g. a local multi-start), polished and
            offered alongside the ones extracted from the moments, so the certificate is built
            at the better of the two.
        with_certificate : bool
            Attach the dual behind ``upper_bound`` as an auditable SOS certificate
            (``sos_certificate``; see :meth:`export_certificate`).
        driver : SdpDriver
            The SDP solver that produces the dual iterates (:mod:`.driver`); default
            :data:`~.scs_driver.SCS`. Bounds never depend on trusting it.
        **settings
            The driver's settings of the full solve (SCS: overriding
            :data:`~.scs_driver.DEFAULT_SCS_SETTINGS`).

        Returns
        -------
        RelaxationResult
            A pure function of ``(T, sign, options)``: no state is carried between calls.
        """
        t0 = time.perf_counter()
        s = check_sign(sign)
        T = check_tensor(T, self.n, self.p)
        check_setting_names(driver, settings, f"solve options: {', '.join(SOLVE_OPTIONS)}")
        config = driver.configure(settings)
        scale = fro(T)
        if scale == 0.0:  # f = 0: every unit vector is optimal
            zc = None
            if with_certificate:
                zc = self.export_certificate(T, s, np.zeros(self.n_zero), np.zeros((self.m,) * 2))
            x0 = np.eye(self.n)[0]
            return RelaxationResult(
                0.0, 0.0, x0, 0.0, s, 0.0, True, "not run", 0, 0.0, "zero", sos_certificate=zc
            )
        # Work with ||T||_F = 1 so that a solver's scale setting means the same for every
        # tensor (SCS's does).
        T_in, T = T, T / scale
        stop_below = stop_below / scale
        c = self.objective(T, s)
        best = Best()
        iters, status = 0, "not run"
        rank_ratio, sdp_value = float("nan"), float("nan")
        if warmup_chunks is None:
            warmup_chunks = LARGE_WARMUP_CHUNKS if self.m > LARGE_GRAM else 2
        if fallback_chunk is None:
            fallback_chunk = LARGE_FALLBACK_CHUNK if self.m > SHORT_CHUNK_GRAM else FALLBACK_CHUNK
        schedule = Schedule(
            warmup_iters=None if warmup_iters is None else int(warmup_iters),
            warmup_chunks=warmup_chunks,
            fallback=fallback,
            fallback_chunk=fallback_chunk,
        )
        last = None
        for last in driver.runs(self.problem, c, config, schedule):
            iters += last.iterations
            status = last.status
            sdp_value = -last.primal_objective
            y = last.y  # None from a dual-only driver: candidates then come from T alone
            if y is None or np.all(np.isfinite(y)):
                if y is not None:
                    ev = np.linalg.eigvalsh(self.moment_matrix(y))
                    rank_ratio = float(abs(ev[-2]) / ev[-1]) if ev[-1] > 0 else float("nan")
                first = best.x is None
                extra = candidates if first else None
                self._candidates(T, s, y, polish_steps, best, first=first, extra=extra)
            if _finite(last):
                self._offer_duals(c, last.z_zero, last.Z, best, gap_tol, stop_below, refine_iters)
            if best.done(gap_tol, stop_below):
                break
        else:
            if last is not None and best.x is not None and not best.random_starts_done:
                # The driver yielded once (an interior-point solve does) and that did not
                # close the gap: give the candidate search its later round (every
                # second-moment eigenvector, the fixed random starts) before giving up. An
                # optimum with many maximisers has a central, high-rank moment matrix there.
                self._candidates(T, s, last.y, polish_steps, best, first=False)
                if _finite(last):
                    self._offer_duals(
                        c, last.z_zero, last.Z, best, gap_tol, stop_below, refine_iters
                    )
        if best.x is None:  # the driver returned nothing usable: a unit vector still gives fx
            best.x = polish(T, np.eye(self.n)[0], s, newton_steps=polish_steps)
            best.fx = s * value(T, best.x)
        tight = best.bound - best.fx <= gap_tol
        face = best.which == "face"
        upper = self._bound_at_scale(c, best.bound, scale)
        fx = float(s * value(T_in, best.x))
        return RelaxationResult(
            value=fx if tight else scale * max(sdp_value, float(best.fx)),
            upper_bound=float(upper),
            x=best.x,
            fx=fx,
            sign=s,
            rank_ratio=rank_ratio,
            flat=bool(rank_ratio < flat_tol or (tight and face and best.margin > 0)),
            status=status,
            iterations=iters,
            solve_time=time.perf_counter() - t0,
            certificate=best.which,
            dual_margin=scale * best.margin if face else float("nan"),
            sdp_value=scale * sdp_value,
            sos_certificate=(
                self.export_certificate(T_in, s, *best.dual, scale=scale)
                if with_certificate and best.dual is not None
                else None
            ),
        )

    def _offer_duals(
        self,
        c: np.ndarray,
        z_zero: np.ndarray,
        Z: np.ndarray,
        best: Best,
        target: float,
        stop_below: float,
        refine_iters: int,
    ) -> None:
        """Offer ``best`` the validated bounds of a driver's dual ``(z_zero, Z)``: the face
        certificate at the best candidate first, then (if that does not close the gap) the
        dual as is and repaired."""
        if best.x is not None:
            bound.refine_face(
                self, c, z_zero, Z, best.x, best.fx, target, stop_below, refine_iters, best
            )
        if not best.done(target, stop_below):
            best.offer_bound(self.validated_bound(c, z_zero, Z), "driver", dual=(z_zero, Z))
            Zr = self.repair(c, z_zero, Z)
            best.offer_bound(self.validated_bound(c, z_zero, Zr), "repaired", dual=(z_zero, Zr))

    def _bound_at_scale(self, c: np.ndarray, ub: float, scale: float) -> float:
        """A validated bound ``ub`` of the polynomial with coefficients ``c`` (those of
        ``T / scale``, rounded) as a bound at ``T``'s scale: rounding in ``c`` and in
        ``T / scale`` changes ``f`` by at most the margin added here."""
        n_terms = float(self._objmap.getnnz(axis=1).max())
        margin = 4 * (n_terms + 2) * _U * float(np.abs(c) @ self._ymax) + 4 * _U
        return scale * (ub + margin) * (1 + 4 * _U)

    def _flattening_result(
        self, T: np.ndarray, sign: int, below: float, with_certificate: bool
    ) -> RelaxationResult | None:
        """The losing sign of an even-order form settled without an SDP solve: a result whose
        validated bound (:func:`~sroa_dist.relaxation.bound.flattening_dual`) is ``<= below``,
        or ``None`` when that bound is not small enough (or does not apply)."""
        t0 = time.perf_counter()
        scale = fro(T)
        if scale == 0.0:
            return None
        Tn = T / scale
        dual = bound.flattening_dual(self, Tn, sign)
        if dual is None:
            return None
        c = self.objective(Tn, sign)
        upper = self._bound_at_scale(c, self.validated_bound(c, *dual), scale)
        if not upper <= below:
            return None
        x = self._jennrich_starts(T)
        f = sign * values(T, x)
        i = int(np.argmax(f))
        return RelaxationResult(
            value=float("nan"),
            upper_bound=float(upper),
            x=x[i],
            fx=float(f[i]),
            sign=sign,
            rank_ratio=float("nan"),
            flat=False,
            status="not run",
            iterations=0,
            solve_time=time.perf_counter() - t0,
            certificate="flattening",
            dual_margin=float("nan"),
            sdp_value=float("nan"),
            sos_certificate=(
                self.export_certificate(T, sign, *dual, scale=scale) if with_certificate else None
            ),
        )

    def solve_abs(self, T: np.ndarray, **options: Any) -> RelaxationResult:
        """Relaxation of ``max |T x^p|``.

        Odd ``p``: one solve (``f(-x) = -f(x)``, so ``max |f| = max f``). Even ``p``: solves both
        signs, the one that looks dominant first (``f`` at the eigenvectors of ``T w^{p-2}``),
        then the other only until its validated bound falls below the first's ``fx`` (without
        an SDP solve when the symmetric-unfolding dual,
        :func:`~sroa_dist.relaxation.bound.flattening_dual`, already shows it). Returns the sign
        with the larger ``fx`` (``x`` keeps its ``sign``); ``upper_bound`` is the larger of the
        two bounds (a bound of ``max |f|``); ``iterations`` and ``solve_time`` are totals.
        """
        if self.p % 2:
            return self.solve(T, 1, **options)
        t0 = time.perf_counter()
        T = check_tensor(T, self.n, self.p)
        V = self._jennrich_starts(T)
        fv = values(T, V)
        first = 1 if fv.max() >= -fv.min() else -1
        options.pop("stop_below", None)
        r1 = self.solve(T, first, **options)
        r2 = self._flattening_result(T, -first, r1.fx, bool(options.get("with_certificate")))
        if r2 is None:
            r2 = self.solve(T, -first, stop_below=r1.fx, **options)
        best = r1 if r1.fx >= r2.fx else r2
        both = r1.sos_certificate is not None and r2.sos_certificate is not None
        return dataclasses.replace(
            best,
            upper_bound=max(r1.upper_bound, r2.upper_bound),
            iterations=r1.iterations + r2.iterations,
            solve_time=time.perf_counter() - t0,
            sos_certificate=(
                Certificate.combine(r1.sos_certificate, r2.sos_certificate) if both else None
            ),
        )
