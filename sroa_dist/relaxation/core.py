"""The order-``d`` moment relaxation of ``max_{||x||=1} sign * T x^p``: built once per
``(n, p, d)``, then solved and certified per tensor."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..certificate import Certificate
from ..monomials import MonomialKeys, monomial_exponents, polynomial_coefficients
from ..tensors import kron_power
from . import bound, builders
from .export import export_certificate
from .polish import check_sign, check_tensor, fro, polish, polish_many, value, values
from .result import Best, RelaxationResult
from .scs_driver import WARMUP_SCS_SETTINGS, ScsProblem, full_settings, parity

__all__ = ["MomentRelaxation"]

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


class MomentRelaxation:
    """Order-``d`` Lasserre relaxation of ``max_{||x||=1} T x^p`` in SCS form, built per (n, p, d).

    SCS form: ``min c^T y`` s.t. ``A y + s = b``, ``s`` in (zero cone) x (PSD cone of the moment
    matrix ``M(y)`` in SCS's ``svec``: lower triangle, column-major, off-diagonals times sqrt 2).
    Only ``c`` depends on the tensor: ``c = -sign * coef`` (:func:`polynomial_coefficients`,
    mapped to the variables). Dual vector ``z = (z_zero, svec(Z))``.

    Parameters
    ----------
    n, p : int
        Dimension and tensor order (``p >= 2``).
    order : int, optional
        Relaxation order ``d >= ceil(p / 2)``; default ``ceil(p / 2)``.
    formulation : {"homogeneous", "full"}
        See :data:`FORMULATIONS`.

    Notes
    -----
    Not safe to share one SCS workspace between threads, so each thread gets its own (built on
    first use, about as expensive as one solve).
    """

    def __init__(self, n: int, p: int, order: int | None = None, formulation: str = "homogeneous"):
        n, p, d = builders.check_arguments(n, p, order, formulation)
        self.n, self.p, self.order, self.formulation = n, p, d, formulation
        kx = MonomialKeys(n, 2 * d)  # every moment used has degree <= 2d
        var_degrees, basis_degrees = builders.degree_layout(p, d, formulation)

        # Moment variables, looked up by their exact monomial keys.
        E, look = builders.moment_variables(n, var_degrees, kx)
        N = E.shape[0]
        self.exponents, self.degrees = E, E.sum(axis=1)

        # Moment-matrix basis and the matrix as a map of the variables.
        self.basis = np.vstack([monomial_exponents(n, k) for k in basis_degrees])
        self.m = self.basis.shape[0]
        mm = builders.moment_map(n, self.basis, var_degrees, kx, look, N)
        self._I, self._J, self._mmap, self._mult = mm.I, mm.J, mm.mmap, mm.mult
        self._mmap_T = mm.mmap.T.tocsr()
        self._svec_scale = np.sqrt(mm.mult)
        self._direct, self._direct_var, self._D = mm.direct, mm.direct_var, mm.D
        self._ord_row, self._ord_col = mm.ord_row, mm.ord_col
        self._ord_var, self._ord_val = mm.ord_var, mm.ord_val
        gi = builders.gram_inverse(mm, N)
        self._gram_U, self._gram_V = gi.U, gi.V
        self._K, self._Kw, self._inner = gi.K, gi.Kw, gi.inner

        # SCS data: zero-cone rows, then the PSD cone of svec(M(y)).
        A0 = builders.zero_rows(n, d, formulation, E, self.degrees, kx, look, N)
        self.n_zero = A0.shape[0]
        self._A0_T = A0.T.tocsr()
        self._A0_T_abs = abs(self._A0_T)
        self.A = sp.vstack([A0, -sp.diags(self._svec_scale) @ self._mmap]).tocsc()
        self.A.sort_indices()
        self.b = np.zeros(self.A.shape[0])
        self.b[0] = 1.0
        self.cone = {"z": self.n_zero, "s": [self.m]}
        self._scs = ScsProblem(self.A, self.b, self.cone, p)

        # Objective map: degree-p coefficients -> variables (times (sum x_k^2)^k to reach the
        # variables' degree of the same parity); maps to first- and second-order moments.
        def homogenizer(Elow: np.ndarray) -> sp.csr_matrix:
            return builders.homogenizer(n, kx, look, Elow, var_degrees, N)

        self._objmap = homogenizer(monomial_exponents(n, p)).T.tocsr()
        self._first = None
        if p % 2 or formulation == "full":
            self._first = homogenizer(monomial_exponents(n, 1))
        E2, self._second_idx = builders.second_moment_exponents(n)
        self._second = homogenizer(E2)

        # Validated-bound constants: max over the sphere of |x^a|, the bound of trace M(y(x))
        # on the sphere (each degree block: sum_{|b|=k} x^{2b} <= 1), and the number of terms
        # in each residual entry (for the rounding margin).
        self._ymax = builders.sphere_maxima(E, self.degrees)
        self.trace_bound = float(len(basis_degrees))
        self._n_terms = (np.diff(self._mmap_T.indptr) + np.diff(self._A0_T.indptr) + 1).astype(
            float
        )
        # Fixed pseudo-random directions for the candidate search (a pure function of n).
        self._w, self._random_starts = builders.fixed_directions(n)

    # ---- maps and small helpers -------------------------------------------------------------

    @property
    def n_vars(self) -> int:
        """Number of moment variables."""
        return self.exponents.shape[0]

    def objective(self, T: np.ndarray, sign: int = 1) -> np.ndarray:
        """SCS cost vector ``c`` for ``max sign * T x^p`` (``min c^T y``), length :attr:`n_vars`."""
        return -float(sign) * (self._objmap @ polynomial_coefficients(T, self.p))

    def moments_of(self, x: np.ndarray) -> np.ndarray:
        """Moment vector ``y(x) = (x^a)_a`` of a point; feasible when ``||x|| = 1``."""
        x = np.asarray(x, dtype=float)
        return np.prod(x[None, :] ** self.exponents, axis=1)

    def basis_vector(self, x: np.ndarray) -> np.ndarray:
        """Monomial vector ``m(x)`` of the moment matrix: ``M(y(x)) = m m^T`` on the sphere."""
        x = np.asarray(x, dtype=float)
        return np.prod(x[None, :] ** self.basis, axis=1)

    def moment_matrix(self, y: np.ndarray) -> np.ndarray:
        """Symmetric moment matrix ``M(y)``, shape ``(m, m)``."""
        return self._sym(self._mmap @ y)

    def dual_matrix(self, z: np.ndarray) -> np.ndarray:
        """Symmetric ``Z`` from the PSD part of an SCS dual vector (undoes ``svec``)."""
        return self._sym(z[self.n_zero :] / self._svec_scale)

    def _sym(self, e: np.ndarray) -> np.ndarray:
        M = np.empty((self.m, self.m))
        M[self._I, self._J] = e
        M[self._J, self._I] = e
        return M

    def _adjoint(self, Z: np.ndarray) -> np.ndarray:
        """``M^*(Z)_a = <E_a, Z>``: sum of ``Z`` over the ordered entries holding variable ``a``."""
        return self._mmap_T @ (Z[self._I, self._J] * self._mult)

    def _solve_gram(self, R: np.ndarray) -> np.ndarray:
        """``(M^* M)^{-1} R`` with ``M^* M = D + K^T W K`` (Woodbury on the small fixed ``K``)."""
        RD = R / (self._D if R.ndim == 1 else self._D[:, None])
        if self._gram_U is not None:
            return RD - self._gram_V @ (self._gram_U.T @ R)
        if self._K is None:
            return RD
        sw = self._Kw if R.ndim == 1 else self._Kw[:, None]
        t = self._K.T @ (sla.cho_solve(self._inner, sw * (self._K @ RD)) * sw)
        return RD - t / (self._D if R.ndim == 1 else self._D[:, None])

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
        y: np.ndarray,
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
        are added as given.
        """
        n, p = self.n, self.p
        starts = [] if extra is None else [np.atleast_2d(np.asarray(extra, dtype=float))]
        if self._first is not None:
            starts.append((self._first @ y)[None, :])
        X = np.zeros((n, n))
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
        **scs_settings: Any,
    ) -> RelaxationResult:
        """Solve the relaxation of ``max_{||x||=1} sign * T x^p`` and certify a maximiser.

        Parameters
        ----------
        T : ndarray, shape ``(n,)*p``
            Symmetric tensor.
        sign : {+1, -1}
            Maximise ``sign * T x^p``.
        warmup_iters : int, optional
            SCS iterations per chunk of the deterministic warm-up; default from
            :data:`WARMUP_SCS_SETTINGS` (14 for odd ``p``, 40 for even ``p``). 0 skips the
            warm-up and goes straight to the full SCS solve.
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
            warm-up's certificate does not reach it, the full SCS solve runs.
        fallback : bool
            Whether to run the full SCS solve when the warm-up does not reach ``gap_tol``.
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
        **scs_settings
            SCS settings of the full solve, overriding :data:`DEFAULT_SCS_SETTINGS`.

        Returns
        -------
        RelaxationResult
            A pure function of ``(T, sign, options)``: no state is carried between calls.
        """
        t0 = time.perf_counter()
        s = check_sign(sign)
        T = check_tensor(T, self.n, self.p)
        settings = full_settings(scs_settings)
        if warmup_iters is None:
            warmup_iters = WARMUP_SCS_SETTINGS[parity(self.p)]["max_iters"]
        scale = fro(T)
        if scale == 0.0:  # f = 0: every unit vector is optimal
            zc = None
            if with_certificate:
                zc = self.export_certificate(T, s, np.zeros(self.n_zero), np.zeros((self.m,) * 2))
            x0 = np.eye(self.n)[0]
            return RelaxationResult(
                0.0, 0.0, x0, 0.0, s, 0.0, True, "not run", 0, 0.0, "zero", sos_certificate=zc
            )
        # Work with ||T||_F = 1 so that SCS's scale setting means the same for every tensor.
        T_in, T = T, T / scale
        stop_below = stop_below / scale
        c = self.objective(T, s)
        best = Best()
        iters, status = 0, "not run"
        rank_ratio, scs_value = float("nan"), float("nan")
        if warmup_chunks is None:
            warmup_chunks = LARGE_WARMUP_CHUNKS if self.m > LARGE_GRAM else 2
        if fallback_chunk is None:
            fallback_chunk = LARGE_FALLBACK_CHUNK if self.m > SHORT_CHUNK_GRAM else FALLBACK_CHUNK
        chunks = self._scs.runs(
            c,
            settings,
            warmup_iters=int(warmup_iters),
            warmup_chunks=warmup_chunks,
            fallback=fallback,
            fallback_chunk=fallback_chunk,
        )
        for _run, sol in chunks:
            info = sol["info"]
            iters += int(info["iter"])
            status = str(info["status"])
            scs_value = float(-info["pobj"])
            y, z = sol["x"], sol["y"]
            if np.all(np.isfinite(y)):
                ev = np.linalg.eigvalsh(self.moment_matrix(y))
                rank_ratio = float(abs(ev[-2]) / ev[-1]) if ev[-1] > 0 else float("nan")
                first = best.x is None
                extra = candidates if first else None
                self._candidates(T, s, y, polish_steps, best, first=first, extra=extra)
            if np.all(np.isfinite(z)):
                self._offer_duals(c, z, best, gap_tol, stop_below, refine_iters)
            if best.done(gap_tol, stop_below):
                break
        if best.x is None:  # SCS returned nothing usable: a unit vector still gives fx
            best.x = polish(T, np.eye(self.n)[0], s, newton_steps=polish_steps)
            best.fx = s * value(T, best.x)
        tight = best.bound - best.fx <= gap_tol
        face = best.which == "face"
        upper = self._bound_at_scale(c, best.bound, scale)
        fx = float(s * value(T_in, best.x))
        return RelaxationResult(
            value=fx if tight else scale * max(scs_value, float(best.fx)),
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
            scs_value=scale * scs_value,
            sos_certificate=(
                self.export_certificate(T_in, s, *best.dual, scale=scale)
                if with_certificate and best.dual is not None
                else None
            ),
        )

    def _offer_duals(
        self,
        c: np.ndarray,
        z: np.ndarray,
        best: Best,
        target: float,
        stop_below: float,
        refine_iters: int,
    ) -> None:
        """Offer ``best`` the validated bounds of an SCS dual ``z``: the face certificate at the
        best candidate first, then (if that does not close the gap) the dual as is and
        repaired."""
        z_zero, Z = z[: self.n_zero], self.dual_matrix(z)
        if best.x is not None:
            bound.refine_face(
                self, c, z_zero, Z, best.x, best.fx, target, stop_below, refine_iters, best
            )
        if not best.done(target, stop_below):
            best.offer_bound(self.validated_bound(c, z_zero, Z), "scs", dual=(z_zero, Z))
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
        """The losing sign of an even-order form settled without SCS: a result whose
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
            scs_value=float("nan"),
            sos_certificate=(
                self.export_certificate(T, sign, *dual, scale=scale) if with_certificate else None
            ),
        )

    def solve_abs(self, T: np.ndarray, **options: Any) -> RelaxationResult:
        """Relaxation of ``max |T x^p|``.

        Odd ``p``: one solve (``f(-x) = -f(x)``, so ``max |f| = max f``). Even ``p``: solves both
        signs, the one that looks dominant first (``f`` at the eigenvectors of ``T w^{p-2}``),
        then the other only until its validated bound falls below the first's ``fx`` (without SCS
        when the symmetric-unfolding dual, :func:`~sroa_dist.relaxation.bound.flattening_dual`,
        already shows it). Returns
        the sign with the larger ``fx`` (``x`` keeps its ``sign``); ``upper_bound`` is the larger
        of the two bounds (a bound of ``max |f|``); ``iterations`` and ``solve_time`` are totals.
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
