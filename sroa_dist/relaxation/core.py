"""The order-``d`` moment relaxation of ``max_{||x||=1} sign * T x^p``: built once per
``(n, p, d)``, then solved and certified per tensor."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..certificate import Certificate
from ..tensors import kron_power
from ..threads import one_blas_thread
from . import bound
from .device_maps import device_maps
from .driver import (
    FLAG,
    NONNEG,
    Rule,
    Schedule,
    SdpDriver,
    check_setting_names,
    int_at_least,
    is_int,
)
from .drivers import DEFAULT_DRIVER, SELECTION_RULES, default_driver, driver_entry
from .export import export_certificate
from .polish import check_sign, check_tensor, fro, polish_many, value, values
from .result import Best, RelaxationResult
from .structure import MomentStructure
from .tensor_solve import TensorSolve

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


def option_rules(driver: SdpDriver | str = DEFAULT_DRIVER) -> dict[str, Rule | None]:
    """Every option a ``relaxation`` table may set for ``driver`` (an :class:`SdpDriver` or a
    registered name or import path, :func:`~.drivers.driver_entry`): the solve options
    (:data:`SOLVE_OPTION_RULES`), the selection keys ``driver`` and ``device``
    (:data:`~.drivers.SELECTION_RULES`) and the driver's settings, with their value rules
    (``None``: checked by name only). The one place callers (option checks, sweep specs) read
    them; by name it needs no device."""
    rules = driver_entry(driver).setting_rules if isinstance(driver, str) else driver.setting_rules
    return {**SOLVE_OPTION_RULES, **SELECTION_RULES, **rules}


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

    @one_blas_thread
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
        driver: SdpDriver | None = None,
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
            :func:`~.drivers.default_driver` (SCS). Bounds never depend on trusting it.
        **settings
            The driver's settings of the full solve (SCS: overriding
            :data:`~.scs_driver.DEFAULT_SCS_SETTINGS`).

        Returns
        -------
        RelaxationResult
            A pure function of ``(T, sign, options)``: no state is carried between calls.
        """
        options = {
            "warmup_iters": warmup_iters,
            "warmup_chunks": warmup_chunks,
            "refine_iters": refine_iters,
            "fallback_chunk": fallback_chunk,
            "gap_tol": gap_tol,
            "fallback": fallback,
            "polish_steps": polish_steps,
            "flat_tol": flat_tol,
            "with_certificate": with_certificate,
        }
        t0 = time.perf_counter()
        driver = default_driver() if driver is None else driver
        run = self._start(T, sign, stop_below, candidates, options, driver, settings)
        if isinstance(run, RelaxationResult):
            return run
        for it in driver.runs(self.problem, run.c, run.config, run.schedule):
            if run.take(it):
                break
        else:
            run.exhausted()
        return run.result(lambda: time.perf_counter() - t0)

    @one_blas_thread
    def solve_batch(
        self,
        Ts: np.ndarray,
        signs: Sequence[int] | None = None,
        *,
        candidates: Sequence[np.ndarray | None] | None = None,
        stop_below: Sequence[float] | None = None,
        driver: SdpDriver | None = None,
        **options: Any,
    ) -> list[RelaxationResult]:
        """:meth:`solve` of each tensor of the stack ``Ts`` (``signs``, ``candidates`` and
        ``stop_below`` per tensor; the other options shared).

        A driver that solves several relaxations at once (one with ``runs_batch``: the ADMM
        driver) steps them together and drops each as soon as its certificate closes; each
        result equals that tensor's :meth:`solve` with the same driver. Other drivers solve
        the tensors one by one. With ``runs_batch``, ``solve_time`` is the batch's wall time
        shared equally.
        """
        B = len(Ts)
        signs = [1] * B if signs is None else list(signs)
        cands = [None] * B if candidates is None else list(candidates)
        below = [-np.inf] * B if stop_below is None else list(stop_below)
        driver = default_driver() if driver is None else driver
        if not hasattr(driver, "runs_batch"):
            return [
                self.solve(T, s, candidates=cd, stop_below=sb, driver=driver, **options)
                for T, s, cd, sb in zip(Ts, signs, cands, below, strict=True)
            ]
        t0 = time.perf_counter()
        defaults = _solve_defaults()
        settings = {k: v for k, v in options.items() if k not in defaults}
        solve_opts = {**defaults, **{k: v for k, v in options.items() if k in defaults}}
        out: list[RelaxationResult | None] = [None] * B
        runs: list[tuple[int, TensorSolve]] = []
        for b in range(B):
            run = self._start(Ts[b], signs[b], below[b], cands[b], solve_opts, driver, settings)
            if isinstance(run, RelaxationResult):
                out[b] = run
            else:
                runs.append((b, run))
        if runs:
            first = runs[0][1]
            C = np.stack([run.c for _, run in runs])
            retired: set[int] = set()
            for chunk in driver.runs_batch(self.problem, C, first.config, first.schedule, retired):
                for row, it, last in chunk:
                    run = runs[row][1]
                    if run.take(it):
                        retired.add(row)
                    elif last:
                        run.exhausted()
                        retired.add(row)
            for row, (_, run) in enumerate(runs):
                if row not in retired:  # the driver ended without saying so
                    run.exhausted()
            share = (time.perf_counter() - t0) / B
            for b, run in runs:
                out[b] = run.result(lambda: share)
        return [r for r in out if r is not None]

    def _start(
        self,
        T: np.ndarray,
        sign: int,
        stop_below: float,
        candidates: np.ndarray | None,
        options: dict[str, Any],
        driver: SdpDriver,
        settings: dict[str, Any],
    ) -> TensorSolve | RelaxationResult:
        """A solve ready for the driver's iterates, or the result itself where none is needed
        (a zero tensor)."""
        s = check_sign(sign)
        T = check_tensor(T, self.n, self.p)
        check_setting_names(driver, settings, f"solve options: {', '.join(SOLVE_OPTIONS)}")
        config = driver.configure(settings)
        scale = fro(T)
        if scale == 0.0:  # f = 0: every unit vector is optimal
            zc = None
            if options["with_certificate"]:
                zc = self.export_certificate(T, s, np.zeros(self.n_zero), np.zeros((self.m,) * 2))
            x0 = np.eye(self.n)[0]
            return RelaxationResult(
                0.0, 0.0, x0, 0.0, s, 0.0, True, "not run", 0, 0.0, "zero", sos_certificate=zc
            )
        warmup_chunks, fallback_chunk = options["warmup_chunks"], options["fallback_chunk"]
        if warmup_chunks is None:
            warmup_chunks = LARGE_WARMUP_CHUNKS if self.m > LARGE_GRAM else 2
        if fallback_chunk is None:
            fallback_chunk = LARGE_FALLBACK_CHUNK if self.m > SHORT_CHUNK_GRAM else FALLBACK_CHUNK
        warmup_iters = options["warmup_iters"]
        schedule = Schedule(
            warmup_iters=None if warmup_iters is None else int(warmup_iters),
            warmup_chunks=warmup_chunks,
            fallback=options["fallback"],
            fallback_chunk=fallback_chunk,
        )
        backend = getattr(driver, "backend", None)
        ops = (
            None if backend is None else bound.DeviceFace(self, device_maps(self.problem, backend))
        )
        return TensorSolve(
            self, T, s, scale, stop_below, candidates, options, config, schedule, ops
        )

    def _bound_at_scale(self, c: np.ndarray, ub: float, scale: float) -> float:
        """A validated bound ``ub`` of the polynomial with coefficients ``c`` (those of
        ``T / scale``, rounded) as a bound at ``T``'s scale: rounding in ``c`` and in
        ``T / scale`` changes ``f`` by at most the margin added here."""
        n_terms = float(self._objmap.getnnz(axis=1).max())
        margin = 4 * (n_terms + 2) * _U * float(np.abs(c) @ self._ymax) + 4 * _U
        return scale * (ub + margin) * (1 + 4 * _U)

    @one_blas_thread
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
        candidates = options.pop("candidates", None)
        return self.solve_abs_batch(np.asarray(T)[None], candidates=[candidates], **options)[0]

    @one_blas_thread
    def solve_abs_batch(
        self,
        Ts: np.ndarray,
        *,
        candidates: Sequence[np.ndarray | None] | None = None,
        **options: Any,
    ) -> list[RelaxationResult]:
        """:meth:`solve_abs` of each tensor of the stack ``Ts`` (``candidates`` per tensor),
        through :meth:`solve_batch`: a driver that solves several relaxations at once gets
        every tensor's first sign together, then the second signs still needed."""
        B = len(Ts)
        cands = [None] * B if candidates is None else list(candidates)
        options.pop("stop_below", None)
        if self.p % 2:
            return self.solve_batch(Ts, [1] * B, candidates=cands, **options)
        t0 = time.perf_counter()
        Ts = [check_tensor(T, self.n, self.p) for T in Ts]
        firsts = []
        for T in Ts:
            fv = values(T, self._jennrich_starts(T))
            firsts.append(1 if fv.max() >= -fv.min() else -1)
        R1 = self.solve_batch(Ts, firsts, candidates=cands, **options)
        certify = bool(options.get("with_certificate"))
        R2 = [
            self._flattening_result(T, -s, r1.fx, certify)
            for T, s, r1 in zip(Ts, firsts, R1, strict=True)
        ]
        todo = [b for b in range(B) if R2[b] is None]
        if todo:
            more = self.solve_batch(
                [Ts[b] for b in todo],
                [-firsts[b] for b in todo],
                candidates=[cands[b] for b in todo],
                stop_below=[R1[b].fx for b in todo],
                **options,
            )
            for b, r in zip(todo, more, strict=True):
                R2[b] = r
        share = (time.perf_counter() - t0) / B
        out = []
        for r1, r2 in zip(R1, R2, strict=True):
            best = r1 if r1.fx >= r2.fx else r2
            both = r1.sos_certificate is not None and r2.sos_certificate is not None
            out.append(
                dataclasses.replace(
                    best,
                    upper_bound=max(r1.upper_bound, r2.upper_bound),
                    iterations=r1.iterations + r2.iterations,
                    solve_time=share,
                    sos_certificate=(
                        Certificate.combine(r1.sos_certificate, r2.sos_certificate)
                        if both
                        else None
                    ),
                )
            )
        return out


@functools.cache
def _solve_defaults() -> dict[str, Any]:
    """The keyword options of :meth:`MomentRelaxation.solve` shared by a batch, with their
    defaults (read from its signature: one home)."""
    per_tensor = {"candidates", "stop_below", "driver"}
    return {
        k: v.default
        for k, v in inspect.signature(MomentRelaxation.solve).parameters.items()
        if v.kind is inspect.Parameter.KEYWORD_ONLY and k not in per_tensor
    }
