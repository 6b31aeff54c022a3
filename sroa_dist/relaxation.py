"""Lasserre moment relaxation of ``max T x^p`` on the unit sphere: SCS, cached, validated bounds.

The relaxation (order ``d = ceil(p/2)`` by default, as solved with GloptiPoly 3 in the paper) is
built once per ``(n, p, d)`` and cached; only the cost vector changes between tensors. Each solve

1. runs a short, deterministic SCS warm-up (a few tens of iterations),
2. extracts maximiser candidates from the moments and polishes them (:func:`polish`),
3. builds a dual certificate on the optimal face at the best candidate ``x``: an orthogonal
   projection of SCS's dual onto ``{Z : dual equalities hold exactly, Z m(x) = 0}``, refined by
   alternating projections with the PSD cone,
4. falls back to a full SCS solve (warm-started from step 1) when that does not close the gap.

Every reported ``upper_bound`` is *validated*: it is computed from the dual vector by a bound
that holds for any dual guess (see :meth:`MomentRelaxation.validated_bound`), so it does not
rely on the solver's tolerance or on the relaxation being tight.
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scs

from .certificate import Certificate
from .tensors import normalizing_exponents

__all__ = [
    "DEFAULT_SCS_SETTINGS",
    "FORMULATIONS",
    "MomentRelaxation",
    "RelaxationResult",
    "WARMUP_SCS_SETTINGS",
    "clear_cache",
    "get_relaxation",
    "monomial_exponents",
    "polish",
    "polynomial_coefficients",
    "solve",
    "solve_abs",
]

_U = float(np.finfo(float).eps)

#: Formulations of the order-``d`` relaxation; both have the same optimal value.
#: ``"full"`` is the textbook (GloptiPoly) form: all moments of degree ``<= 2d``, ``y_0 = 1`` and
#: the sphere's localising equalities ``sum_k y_{a+2e_k} = y_a`` (``|a| <= 2d-2``), moment matrix
#: on the monomials of degree ``<= d``. ``"homogeneous"`` eliminates the lower-degree moments
#: through those equalities (its variables are the moments of degree ``2d-1`` and ``2d``, with the
#: single row ``<(sum_k x_k^2)^d, y> = 1``); the rows of the moment matrix indexed by monomials of
#: degree ``< d-1`` are then combinations of the others and are dropped, and for even ``p`` the
#: odd block is dropped too (the ``x -> -x`` symmetry makes it redundant). For ``n = 10, p = 3``:
#: a 65 x 65 moment matrix and 935 variables instead of 66 x 66 and 1001.
FORMULATIONS = ("homogeneous", "full")

#: SCS settings of the warm-up (step 1), by parity of ``p``. No adaptive scale and no Anderson
#: acceleration, so the cached solver object keeps no state between solves and results depend on
#: ``T`` only. ``scale`` and ``max_iters`` (iterations per warm-up chunk) were tuned on nearly SOD
#: tensors, n = 10, with unit Frobenius norm (``solve`` normalises): with these the face
#: certificate closes the gap after the warm-up for ~96 % of p = 3 instances (287 of 300) and
#: for the dominant sign of most p = 4 instances.
WARMUP_SCS_SETTINGS: dict[str, dict[str, Any]] = {
    parity: {
        "scale": scale,
        "max_iters": iters,
        "adaptive_scale": False,
        "acceleration_lookback": 0,
        "eps_abs": 1e-9,
        "eps_rel": 1e-9,
        "linear_solver": "qdldl",
        "verbose": False,
    }
    for parity, scale, iters in (("odd", 1.5, 14), ("even", 0.5, 40))
}

#: SCS settings of the fallback full solve (step 4), overridden by ``**scs_settings`` of ``solve``.
#: Anderson acceleration and adaptive scale are on (SCS defaults); the solver object is built per
#: call, so no state leaks between calls. On the ~4 % of nearly SOD n = 10, p = 3 instances that
#: need it, the first 250-iteration chunk closes the certificate (~0.2 s).
DEFAULT_SCS_SETTINGS: dict[str, Any] = {
    "eps_abs": 1e-7,
    "eps_rel": 1e-7,
    "max_iters": 5000,
    "scale": 1.0,
    "linear_solver": "qdldl",
    "verbose": False,
}

_SOLVE_OPTIONS = (
    "warmup_iters",
    "warmup_chunks",
    "refine_iters",
    "fallback_chunk",
    "gap_tol",
    "fallback",
    "stop_below",
    "polish_steps",
    "flat_tol",
)

_SCS_SETTING_NAMES = frozenset(
    {
        "normalize",
        "scale",
        "adaptive_scale",
        "rho_x",
        "max_iters",
        "eps_abs",
        "eps_rel",
        "eps_infeas",
        "alpha",
        "time_limit_secs",
        "verbose",
        "acceleration_lookback",
        "acceleration_interval",
        "write_data_filename",
        "log_csv_filename",
        "linear_solver",
    }
)


# --------------------------------------------------------------------------------------------
# Monomials and polynomial coefficients
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _index_tuples(n: int, d: int) -> np.ndarray:
    """Sorted index tuples ``i1 <= ... <= id`` of the degree-``d`` monomials, shape ``(K, d)``."""
    if d == 0:
        out = np.zeros((1, 0), dtype=np.int64)
    else:
        flat = np.fromiter(
            itertools.chain.from_iterable(itertools.combinations_with_replacement(range(n), d)),
            dtype=np.int64,
        )
        out = flat.reshape(-1, d)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=64)
def monomial_exponents(n: int, d: int) -> np.ndarray:
    """Exponent vectors of the monomials of degree exactly ``d`` in ``n`` variables.

    Returns a read-only ``(C(n + d - 1, d), n)`` integer array in the lexicographic order of the
    sorted index tuples (``x_0^d, x_0^{d-1} x_1, ...``), as in :func:`polynomial_coefficients`.
    """
    idx = _index_tuples(n, d)
    K = idx.shape[0]
    E = np.zeros((K, n), dtype=np.int64)
    if d:
        np.add.at(E, (np.repeat(np.arange(K), d), idx.ravel()), 1)
    E.setflags(write=False)
    return E


def _multinomial(E: np.ndarray) -> np.ndarray:
    """Multinomial coefficients ``|a|! / prod(a_i!)`` of the exponent rows of ``E`` (exact)."""
    E = np.asarray(E)
    d = int(E.sum(axis=1).max()) if E.size else 0
    fact = np.array([math.factorial(k) for k in range(d + 1)], dtype=float)
    return fact[E.sum(axis=1)] / np.prod(fact[E], axis=1)


def polynomial_coefficients(T: np.ndarray, p: int | None = None) -> np.ndarray:
    """Coefficients of ``f(x) = T x^p`` in the monomial basis ``monomial_exponents(n, p)``.

    Parameters
    ----------
    T : ndarray, shape ``(..., n, ..., n)``
        Symmetric tensor(s); the last ``p`` axes are tensor axes, leading axes are a batch.
    p : int, optional
        Tensor order; defaults to ``T.ndim`` (a single tensor).

    Returns
    -------
    ndarray, shape ``(..., C(n + p - 1, p))``
        ``coef[a] = (p! / prod_i a_i!) * T[i_1, ..., i_p]`` with ``i_1 <= ... <= i_p`` the sorted
        index tuple of ``a``, so that ``f(x) = sum_a coef[a] x^a`` when ``T`` is symmetric.
    """
    T = np.asarray(T, dtype=float)
    p = T.ndim if p is None else int(p)
    if p < 1 or T.ndim < p:
        raise ValueError(f"expected a tensor with at least p = {p} axes, received shape {T.shape}")
    n = T.shape[-1]
    if T.shape[T.ndim - p :] != (n,) * p:
        raise ValueError(f"expected the last {p} axes to have equal length, received {T.shape}")
    idx = _index_tuples(n, p)
    flat = T.reshape(T.shape[: T.ndim - p] + (n**p,))
    lin = np.ravel_multi_index(tuple(idx.T), (n,) * p)
    return flat[..., lin] * _multinomial(monomial_exponents(n, p))


# --------------------------------------------------------------------------------------------
# Private contractions and checks (single tensor)
# --------------------------------------------------------------------------------------------


def _contract(T: np.ndarray, x: np.ndarray, k: int) -> np.ndarray:
    """``T x^k``: contract the last ``k`` axes of ``T`` with ``x``."""
    out = T
    for _ in range(k):
        out = out @ x
    return out


def _value(T: np.ndarray, x: np.ndarray) -> float:
    """``T x^p``."""
    return float(_contract(T, x, T.ndim))


def _fro(T: np.ndarray) -> float:
    """``‖T‖_F`` without underflow or overflow of the squares (same bits at ordinary scales)."""
    k = int(normalizing_exponents(T[None])[0][0])
    return float(np.ldexp(np.linalg.norm(np.ldexp(T, -k)), k))


def _check_sign(sign: int) -> int:
    if sign not in (1, -1):
        raise ValueError(f"expected sign +1 or -1, received {sign!r}")
    return int(sign)


def _check_tensor(T: Any, n: int | None = None, p: int | None = None) -> np.ndarray:
    T = np.asarray(T, dtype=float)
    if T.ndim < 2 or len(set(T.shape)) != 1:
        raise ValueError(
            f"expected a symmetric tensor of shape (n,)*p with p >= 2, received shape {T.shape}"
        )
    if (n is not None and T.shape[0] != n) or (p is not None and T.ndim != p):
        raise ValueError(
            f"expected a tensor of shape {(n,) * p} for this relaxation, received {T.shape}; "
            "hint: use get_relaxation(n, p) with the tensor's own n and p"
        )
    if not np.all(np.isfinite(T)):
        raise ValueError("expected finite tensor entries, received NaN or inf")
    # Adjacent transpositions generate the symmetric group: p - 1 checks suffice.
    tol = 1e-12 * max(float(np.abs(T).max(initial=0.0)), 1e-300)
    for ax in range(T.ndim - 1):
        if np.abs(T - np.swapaxes(T, ax, ax + 1)).max(initial=0.0) > tol:
            raise ValueError(
                f"expected a symmetric tensor, but T changes when axes {ax} and {ax + 1} are "
                "swapped; hint: symmetrise it first (average over all axis permutations)"
            )
    return T


# --------------------------------------------------------------------------------------------
# Polish: shifted power iterations, then Riemannian Newton on the sphere
# --------------------------------------------------------------------------------------------


def _kron_powers(X: np.ndarray, k: int) -> np.ndarray:
    """Rows ``x^{(x) k}`` (Kronecker powers) of the rows of ``X``, shape ``(B, n**k)``."""
    if k == 0:
        return np.ones((X.shape[0], 1))
    out = X
    for _ in range(k - 1):
        out = (out[:, :, None] * X[:, None, :]).reshape(X.shape[0], -1)
    return out


def _polish_many(
    T: np.ndarray, X: np.ndarray, s: int, power_steps: int, newton_steps: int, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """Batched :func:`polish` of the unit rows of ``X``; returns ``(X, sign * T x^p per row)``."""
    n, p = T.shape[0], T.ndim
    B = X.shape[0]
    Tm1 = s * T.reshape(n, n ** (p - 1))  # rows of sign * T x^{p-1}
    Tm2 = s * T.reshape(n * n, n ** (p - 2))
    tol = 8 * _U * float(np.linalg.norm(T))

    def grad_and_value(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        G = _kron_powers(X, p - 1) @ Tm1.T  # (B, n): sign * T x^{p-1}
        return G, np.einsum("bi,bi->b", G, X)

    def power(X: np.ndarray) -> np.ndarray:
        G = grad_and_value(X)[0] + alpha * X
        nrm = np.linalg.norm(G, axis=1, keepdims=True)
        return np.where(nrm > 0, G / np.where(nrm > 0, nrm, 1.0), X)

    for _ in range(power_steps):
        X = power(X)
    G, f = grad_and_value(X)
    active = np.ones(B, dtype=bool)
    eye = np.eye(n)
    for _ in range(newton_steps):
        grad = G - f[:, None] * X
        active &= np.linalg.norm(grad, axis=1) > tol
        if not active.any():
            break
        a = np.nonzero(active)[0]
        x, gr, fa = X[a], grad[a], f[a]
        H = (_kron_powers(x, p - 2) @ Tm2.T).reshape(len(a), n, n) * (p - 1)
        H -= fa[:, None, None] * eye
        # Orthonormal tangent bases: Householder reflectors mapping x to -/+ e_0.
        v = x.copy()
        v[:, 0] += np.where(x[:, 0] >= 0, 1.0, -1.0)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        U = (eye - 2.0 * v[:, :, None] * v[:, None, :])[:, :, 1:]
        Ut = U.transpose(0, 2, 1)
        Hr = Ut @ H @ U
        rhs = -(Ut @ gr[:, :, None])[:, :, 0]
        try:
            d = np.linalg.solve(Hr, rhs[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            d = np.einsum("bij,bj->bi", np.linalg.pinv(Hr), rhs)
        xn = x + np.einsum("bij,bj->bi", U, d)
        xn /= np.linalg.norm(xn, axis=1, keepdims=True)
        Gn, fn = grad_and_value(xn)
        bad = np.nonzero(~(fn >= fa))[0]  # objective would decrease (or NaN)
        if len(bad):  # take a (monotone) shifted power step instead; stop rows where it stalls
            xp = power(x[bad])
            Gp, fp = grad_and_value(xp)
            ok = fp > fa[bad]
            xn[bad] = np.where(ok[:, None], xp, x[bad])
            Gn[bad] = np.where(ok[:, None], Gp, G[a[bad]])
            fn[bad] = np.where(ok, fp, fa[bad])
            active[a[bad[~ok]]] = False
        X[a], G[a], f[a] = xn, Gn, fn
    return X, f


def polish(
    T: np.ndarray,
    x: np.ndarray,
    sign: int = 1,
    *,
    power_steps: int = 5,
    newton_steps: int = 10,
    shift: float | None = None,
) -> np.ndarray:
    """Refine ``x`` to a nearby KKT point of ``sign * T x^p`` on the unit sphere.

    ``power_steps`` shifted power iterations ``x <- normalize(sign T x^{p-1} + shift x)``
    (monotone for ``shift >= (p - 1) ||T||_F``: SS-HOPM, Kolda & Mayo 2011) are followed by
    Riemannian Newton steps with gradient ``p (sign T x^{p-1} - lam x)`` and Hessian
    ``p (p-1) sign T x^{p-2} - p lam I`` on the tangent space, ``lam = sign T x^p``. A Newton step
    is accepted only if the objective does not decrease (otherwise a shifted power step is taken
    instead), so a candidate near a maximiser is never moved to a saddle. Converges
    quadratically to non-degenerate KKT points (Z-eigenvectors).

    Parameters
    ----------
    T : ndarray, shape ``(n,)*p``
        Symmetric tensor.
    x : ndarray, shape ``(n,)``
        Starting point (normalised here; must be nonzero).
    sign : {+1, -1}
        Maximise ``sign * T x^p``.
    power_steps : int
        Shifted power iterations before the Newton steps.
    newton_steps : int
        Maximum number of Newton steps.
    shift : float, optional
        Power-iteration shift; default ``(p - 1) * ||T||_F``.

    Returns
    -------
    ndarray, shape ``(n,)``
        A unit vector.
    """
    T = np.asarray(T, dtype=float)
    p = T.ndim
    s = _check_sign(sign)
    x = np.array(x, dtype=float).reshape(-1)
    nx = float(np.linalg.norm(x))
    if x.shape[0] != T.shape[0] or not np.isfinite(nx) or nx == 0:
        raise ValueError(
            f"expected a nonzero finite starting vector of length {T.shape[0]}, received "
            f"shape {x.shape} with norm {nx}"
        )
    fro = _fro(T)
    if fro == 0:
        return x / nx
    alpha = (p - 1) * fro if shift is None else float(shift)
    return _polish_many(T, (x / nx)[None, :], s, power_steps, newton_steps, alpha)[0][0]


# --------------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RelaxationResult:
    """Outcome of a moment-relaxation solve of ``max_{||x|| = 1} sign * T x^p``.

    Attributes
    ----------
    value : float
        The relaxation's estimate of ``max sign * f``: when the certificate closes the gap
        (``gap <= gap_tol * ||T||_F``) the rank-one moment vector of ``x`` is optimal for the
        relaxation and ``value = fx``; otherwise SCS's primal objective, raised to ``fx`` if
        below (the moment vector of ``x`` is feasible, so the relaxation's optimum is ``>= fx``).
    upper_bound : float
        Validated upper bound of ``max_{||x||=1} sign * f(x)``. It holds whatever SCS returned
        (early stops included); rounding is covered by an explicit margin.
    x : ndarray, shape ``(n,)``
        Unit-norm maximiser candidate (from the moments, polished).
    fx : float
        ``sign * f(x)``, a lower bound of the maximum.
    sign : int
        ``+1`` or ``-1``.
    rank_ratio : float
        Second over first eigenvalue of SCS's (last) moment matrix.
    flat : bool
        The relaxation is numerically tight with a rank-one optimal moment matrix: either
        ``rank_ratio < flat_tol``, or the certificate closed the gap with a dual matrix whose
        kernel is one-dimensional (``dual_margin > 0``), which makes every optimal moment
        matrix rank one.
    status : str
        SCS status of the last SCS run.
    iterations : int
        Total SCS iterations.
    solve_time : float
        Wall-clock seconds for the whole solve (SCS, extraction, polish, certificate).
    certificate : str
        Which dual produced ``upper_bound``: ``"face"`` (projected on the optimal face at ``x``),
        ``"repaired"`` (SCS dual with its equality residual moved into ``Z``) or ``"scs"``.
    dual_margin : float
        Second-smallest eigenvalue of the certificate's dual matrix (``> 0``: the rank-one
        optimum is unique); ``nan`` when the certificate is not a face certificate.
    scs_value : float
        SCS's primal objective of the last SCS run (``-pobj``).
    sos_certificate : Certificate or None
        With ``with_certificate=True``: the dual that gave ``upper_bound`` as an auditable SOS
        identity (:class:`sroa_dist.certificate.Certificate`; ``verify(T)`` re-derives the bound
        without SCS); ``None`` otherwise or when SCS returned no finite dual.
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
    certificate: str = "scs"
    dual_margin: float = float("nan")
    scs_value: float = float("nan")
    sos_certificate: Certificate | None = None

    @property
    def gap(self) -> float:
        """``upper_bound - fx`` (``>= 0`` up to rounding): the certified optimality gap."""
        return self.upper_bound - self.fx


# --------------------------------------------------------------------------------------------
# The relaxation
# --------------------------------------------------------------------------------------------


class _MonomialKeys:
    """Exact int64 keys of the monomials of degree ``<= D`` in ``n`` variables, for any ``n``.

    A monomial is its sorted index tuple ``i_1 <= ... <= i_D``, padded with the sentinel ``n``
    (so lower degrees fit); its key is the tuple's colex rank among the multisets of size ``D``
    of ``{0, ..., n}``, ``sum_t C(i_t + t, t + 1)``, a bijection onto ``[0, C(n + D, D))``.
    Products are merged tuples, so no key arithmetic can overflow or carry (the former
    positional base-``(2d + 1)`` keys refused ``n * log2(2d + 1) > 62``, e.g. n >= 27 at d = 2).
    """

    def __init__(self, n: int, D: int) -> None:
        if math.comb(n + D, D) >= 2**62:
            raise ValueError(
                f"expected fewer than 2^62 monomials of degree <= {D} in n = {n} variables for "
                f"the moment index, received C(n + {D}, {D}) = {math.comb(n + D, D)}; hint: "
                "such a relaxation would not fit in memory anyway"
            )
        self.n, self.D = n, D
        self._tab = np.array(
            [[math.comb(v + t, t + 1) for v in range(n + 1)] for t in range(D)], dtype=np.int64
        )

    def tuples(self, E: np.ndarray) -> np.ndarray:
        """Padded sorted index tuples ``(K, D)`` of the exponent rows of ``E``."""
        E = np.asarray(E, dtype=np.int64)
        deg = E.sum(axis=1)
        if deg.max(initial=0) > self.D:
            raise AssertionError("internal error: monomial degree above the key's capacity")
        out = np.full((E.shape[0], self.D), self.n, dtype=np.int32)
        r, c = np.nonzero(E)
        reps = E[r, c]
        rows, idx = np.repeat(r, reps), np.repeat(c, reps)
        pos = np.arange(len(rows)) - (np.cumsum(deg) - deg)[rows]
        out[rows, pos] = idx
        return out

    def rank(self, t: np.ndarray) -> np.ndarray:
        """Keys of (possibly merged, unsorted) index tuples with at most ``D`` real indices."""
        t = np.sort(t, axis=1)
        if t.shape[1] > self.D:
            if np.any(t[:, self.D :] != self.n):
                raise AssertionError("internal error: monomial product above the key's degree")
            t = t[:, : self.D]
        out = np.zeros(t.shape[0], dtype=np.int64)
        for j in range(self.D):
            out += self._tab[j][t[:, j]]
        return out

    def of(self, E: np.ndarray) -> np.ndarray:
        """Keys of the exponent rows of ``E``."""
        return self.rank(self.tuples(E))

    def product(self, ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
        """Keys of the products of the monomials of tuple rows ``ta`` and ``tb`` (row by row)."""
        return self.rank(np.concatenate([ta, tb], axis=1))

    def times_square(self, ta: np.ndarray, k: int) -> np.ndarray:
        """Keys of ``x^a * x_k^2`` for the tuple rows ``ta``."""
        return self.product(ta, np.full((ta.shape[0], 2), k, dtype=ta.dtype))


def _lookup(sorted_keys: np.ndarray, order: np.ndarray, keys: np.ndarray) -> np.ndarray:
    pos = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    if not np.array_equal(sorted_keys[pos], keys):
        raise AssertionError("internal error: monomial lookup failed")
    return order[pos]


class _Best:
    """Mutable bookkeeping of one solve: best candidate and best validated bound."""

    def __init__(self) -> None:
        self.x: np.ndarray | None = None
        self.fx = -np.inf
        self.bound = np.inf
        self.which = "none"
        self.margin = float("nan")
        self.dual: tuple[np.ndarray, np.ndarray] | None = None

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
        n, p = int(n), int(p)
        if n < 1 or p < 2:
            raise ValueError(f"expected n >= 1 and p >= 2, received n = {n}, p = {p}")
        dmin = (p + 1) // 2
        d = dmin if order is None else int(order)
        if d < dmin:
            raise ValueError(f"expected order >= ceil(p/2) = {dmin}, received order = {order}")
        if formulation not in FORMULATIONS:
            raise ValueError(
                f"unknown formulation {formulation!r}; valid: {', '.join(FORMULATIONS)}"
            )
        t0 = time.perf_counter()
        self.n, self.p, self.order, self.formulation = n, p, d, formulation
        kx = _MonomialKeys(n, 2 * d)  # every moment used has degree <= 2d

        if formulation == "full":
            var_degrees = list(range(2 * d + 1))
            basis_degrees = list(range(d + 1))
        elif p % 2:
            var_degrees, basis_degrees = [2 * d - 1, 2 * d], [d - 1, d]
        else:
            var_degrees, basis_degrees = [2 * d], [d]

        # Moment variables, looked up by additive integer keys.
        E = np.vstack([monomial_exponents(n, k) for k in var_degrees])
        keys = kx.of(E)
        korder = np.argsort(keys, kind="stable")
        look = functools.partial(_lookup, keys[korder], korder)
        N = E.shape[0]
        self.exponents = E
        self.degrees = E.sum(axis=1)

        # Moment-matrix basis and its lower-triangle entries in SCS order (column-major).
        B = np.vstack([monomial_exponents(n, k) for k in basis_degrees])
        m = B.shape[0]
        btup, bdeg = kx.tuples(B), B.sum(axis=1)
        J, I = np.triu_indices(m)  # I >= J, sorted by column J then row I
        edeg = bdeg[I] + bdeg[J]
        self.basis, self.m = B, m
        self._I, self._J = I, J
        n_ent = len(I)
        direct = np.isin(edeg, var_degrees)  # entry is a single moment variable
        dvar = look(kx.product(btup[I[direct]], btup[J[direct]]))
        rows, cols = [np.nonzero(direct)[0]], [dvar]
        nd = np.nonzero(~direct)[0]  # homogeneous odd p: degree-(2d-2) entries, sum_k y_{a+2e_k}
        nd_tup = np.concatenate([btup[I[nd]], btup[J[nd]]], axis=1)
        for k in range(n if len(nd) else 0):
            rows.append(nd)
            cols.append(look(kx.times_square(nd_tup, k)))
        r_all, c_all = np.concatenate(rows), np.concatenate(cols)
        self._mmap = sp.csr_matrix((np.ones(len(r_all)), (r_all, c_all)), shape=(n_ent, N))
        self._mmap_T = self._mmap.T.tocsr()
        self._mult = np.where(I == J, 1.0, 2.0)  # ordered entries per lower-triangle entry
        self._svec_scale = np.sqrt(self._mult)
        self._direct = direct
        self._direct_var = np.full(n_ent, -1, dtype=np.int64)
        self._direct_var[direct] = dvar
        # D_a = number of ordered direct entries holding variable a (>= 1 for every a).
        self._D = np.bincount(dvar, weights=self._mult[direct], minlength=N)
        if np.any(self._D == 0):
            raise AssertionError("internal error: a moment variable has no direct entry")
        # Ordered (row, col, var, coefficient) lists of all entries, for the face operators.
        coo = self._mmap.tocoo()
        ei, ej = I[coo.row], J[coo.row]
        off = ei != ej
        self._ord_row = np.concatenate([ei, ej[off]])
        self._ord_col = np.concatenate([ej, ei[off]])
        self._ord_var = np.concatenate([coo.col, coo.col[off]])
        self._ord_val = np.concatenate([coo.data, coo.data[off]])
        # M^* M = diag(D) + K^T diag(mult) K with K the non-direct rows of the entry map; its
        # inverse by Woodbury: D^-1 - U C^-1 U^T, U = D^-1 K^T mult^(1/2), C = I + ... (small).
        self._gram_U = self._gram_V = self._K = None
        if len(nd):
            K = self._mmap[nd].tocsr()
            sw = np.sqrt(self._mult[nd])
            KD = K.multiply(1.0 / self._D[None, :]).tocsr()
            C = np.eye(len(nd)) + sw[:, None] * (KD @ K.T).toarray() * sw[None, :]
            if N * len(nd) <= 4_000_000:  # dense factors (n = 10, p = 3: 935 x 55)
                U = (KD.T.toarray()) * sw[None, :]
                self._gram_U = U
                self._gram_V = sla.cho_solve(sla.cho_factor(C), U.T).T
            else:
                self._K, self._Kw = K, sw
                self._inner = sla.cho_factor(C)

        # Zero-cone rows.
        if formulation == "full":
            loc = np.nonzero(self.degrees <= 2 * d - 2)[0]
            nl = len(loc)
            zr = [np.zeros(1, np.int64), np.arange(1, nl + 1)]
            zc = [look(kx.of(np.zeros((1, n), np.int64))), loc]
            zv = [np.ones(1), -np.ones(nl)]
            loc_tup = kx.tuples(E[loc])
            for k in range(n):
                zr.append(np.arange(1, nl + 1))
                zc.append(look(kx.times_square(loc_tup, k)))
                zv.append(np.ones(nl))
            n_zero = 1 + nl
            A0 = sp.csr_matrix(
                (np.concatenate(zv), (np.concatenate(zr), np.concatenate(zc))), shape=(n_zero, N)
            )
        else:
            half = monomial_exponents(n, d)  # <(sum_k x_k^2)^d, y> = 1
            A0 = sp.csr_matrix(
                (_multinomial(half), (np.zeros(len(half), np.int64), look(kx.of(2 * half)))),
                shape=(1, N),
            )
            n_zero = 1
        self.n_zero = n_zero
        self._A0_T = A0.T.tocsr()
        self._A0_T_abs = abs(self._A0_T)
        self.A = sp.vstack([A0, -sp.diags(self._svec_scale) @ self._mmap]).tocsc()
        self.A.sort_indices()
        self.b = np.zeros(self.A.shape[0])
        self.b[0] = 1.0
        self.cone = {"z": n_zero, "s": [m]}

        # Objective map: degree-p coefficients -> variables (times (sum x_k^2)^k to reach the
        # variables' degree of the same parity).
        self._objmap = self._homogenizer(look, kx, monomial_exponents(n, p), var_degrees).T.tocsr()
        # Maps to first- and second-order moments (for extracting x).
        self._first = None
        if p % 2 or formulation == "full":
            self._first = self._homogenizer(look, kx, monomial_exponents(n, 1), var_degrees)
        iu, ju = np.triu_indices(n)
        E2 = np.zeros((len(iu), n), np.int64)
        np.add.at(E2, (np.arange(len(iu)), iu), 1)
        np.add.at(E2, (np.arange(len(iu)), ju), 1)
        self._second = self._homogenizer(look, kx, E2, var_degrees)
        self._second_idx = (iu, ju)

        # Validated-bound constants: max over the sphere of |x^a| (at x_i^2 = a_i/|a|), the
        # bound of trace M(y(x)) on the sphere (each degree block: sum_{|b|=k} x^{2b} <= 1), and
        # the number of terms in each residual entry (for the rounding margin).
        deg = np.maximum(self.degrees, 1).astype(float)
        self._ymax = np.prod((E / deg[:, None]) ** (E / 2.0), axis=1)
        self.trace_bound = float(len(basis_degrees))
        self._n_terms = (np.diff(self._mmap_T.indptr) + np.diff(self._A0_T.indptr) + 1).astype(
            float
        )
        # Fixed pseudo-random direction for the candidate search (a pure function of n).
        rs = np.random.default_rng(20240917).standard_normal((n + 1, n))
        rs /= np.linalg.norm(rs, axis=1, keepdims=True)
        self._w, self._random_starts = rs[0], rs[1:]
        self._local = threading.local()
        self.build_time = time.perf_counter() - t0

    # ---- maps and small helpers -------------------------------------------------------------

    def _homogenizer(self, look, kx, Elow: np.ndarray, var_degrees: list[int]) -> sp.csr_matrix:
        """Rows: moments ``y_a`` (``a`` in ``Elow``) as combinations of the variables, using
        ``y_a = <(sum_k x_k^2)^j x^a, y>`` up to the lowest variable degree of the same parity."""
        d0 = int(Elow[0].sum())
        target = min(k for k in var_degrees if k >= d0 and (k - d0) % 2 == 0)
        Hj = monomial_exponents(self.n, (target - d0) // 2)
        tl, th = kx.tuples(Elow), kx.tuples(2 * Hj)
        keys = kx.product(np.repeat(tl, len(Hj), axis=0), np.tile(th, (len(Elow), 1)))
        return sp.csr_matrix(
            (
                np.tile(_multinomial(Hj), len(Elow)),
                (np.repeat(np.arange(len(Elow)), len(Hj)), look(keys)),
            ),
            shape=(len(Elow), self.n_vars),
        )

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

    # ---- certificates -----------------------------------------------------------------------

    def validated_bound(
        self, c: np.ndarray, z_zero: np.ndarray, Z: np.ndarray, lam_min: float | None = None
    ) -> float:
        """Upper bound of ``max_{||x||=1} -c^T y(x)`` from ANY dual guess ``(z_zero, Z)``.

        For unit ``x`` the moment vector ``y(x)`` is feasible (``A_0 y(x) = b_0`` and
        ``M(y(x)) = m(x) m(x)^T``), so with ``r = c + A_0^T z_zero - M^*(Z)`` (the SCS dual
        residual ``c + A^T z``)::

            c^T y(x) = r^T y(x) - b^T z + <Z, M(y(x))>
                     >= -z_zero[0] - sum_a |r_a| max_sphere |x^a| - K max(0, -lambda_min(Z)),

        since ``trace M(y(x)) <= K`` (:attr:`trace_bound`). Rounding in ``r`` and in
        ``lambda_min`` is covered by explicit margins. ``lam_min`` may be passed if known.
        """
        z_zero = np.asarray(z_zero, dtype=float)
        r = c + self._A0_T @ z_zero - self._adjoint(Z)
        r_err = (
            2
            * _U
            * self._n_terms
            * (np.abs(c) + self._A0_T_abs @ np.abs(z_zero) + self._adjoint(np.abs(Z)))
        )
        if lam_min is None:
            lam_min = float(np.linalg.eigvalsh(Z)[0])
        fro = float(np.sqrt(np.einsum("ij,ij->", Z, Z)))
        mu = max(0.0, -lam_min) + 4 * self.m * _U * fro
        res = float(np.sum((np.abs(r) + r_err) * self._ymax))
        ub = float(z_zero[0]) + self.trace_bound * mu + res
        return ub + 8 * _U * (abs(float(z_zero[0])) + self.trace_bound * mu + res)

    def repair(self, c: np.ndarray, z_zero: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """``Z`` plus the least change on direct entries that makes ``r = 0`` (same ``z_zero``)."""
        lam = (c + self._A0_T @ z_zero - self._adjoint(Z)) / self._D
        e = np.where(self._direct, lam[np.maximum(self._direct_var, 0)], 0.0)
        return Z + self._sym(e)

    def face_projector(self, c: np.ndarray, z_zero: np.ndarray, x: np.ndarray):
        """Orthogonal projector onto the optimal face at a candidate ``x``.

        If the relaxation is tight with maximiser ``x``, some optimal dual has
        ``z_zero[0] = -c^T y(x)`` and ``Z q = 0`` (``q = m(x)/||m(x)||``, complementary
        slackness). Returns ``(z_face, project)`` where ``z_face`` is ``z_zero`` with that first
        entry and ``project(Z0)`` is the Frobenius-nearest symmetric ``Z`` with
        ``M^*(Z) = c + A_0^T z_face`` and ``Z q = 0`` (other zero-cone duals kept fixed).
        """
        zf = np.array(z_zero, dtype=float)
        zf[0] = -float(c @ self.moments_of(x))
        g = c + self._A0_T @ zf
        q = self.basis_vector(x)
        q = q / np.linalg.norm(q)
        m, N = self.m, self.n_vars
        D = self._D
        # F v = M^*(v q^T + q v^T): a sparse (N, m) matrix; the adjoint of lam -> M(lam) q is F^T/2.
        F = sp.csr_matrix(
            (2.0 * self._ord_val * q[self._ord_col], (self._ord_var, self._ord_row)), shape=(N, m)
        )
        FD = sp.diags(1.0 / D) @ F
        FtAF = (F.T @ FD).toarray()  # F^T (M^*M)^{-1} F, with the Woodbury term below
        if self._gram_U is not None:
            UtF = (F.T @ self._gram_U).T  # (k, m)
            VtF = (F.T @ self._gram_V).T
            FtAF -= VtF.T @ UtF

            def gram_F(v: np.ndarray) -> np.ndarray:  # (M^*M)^{-1} F v
                return FD @ v - self._gram_V @ (UtF @ v)
        elif self._K is not None:
            AF = self._solve_gram(F.toarray())
            FtAF = F.T @ AF

            def gram_F(v: np.ndarray) -> np.ndarray:
                return AF @ v
        else:

            def gram_F(v: np.ndarray) -> np.ndarray:
                return FD @ v

        S = np.eye(m) + np.outer(q, q) - 0.5 * FtAF
        S = 0.5 * (S + S.T)
        # S is singular along the one consistency condition <M^*(Z), y(x)> ~ q^T Z q.
        ev, EV = np.linalg.eigh(S)
        keep = np.abs(ev) > 1e-12 * max(1.0, float(np.abs(ev).max()))
        S_pinv = (EV[:, keep] / ev[keep]) @ EV[:, keep].T
        Ft = F.T.tocsr()

        def project(Z0: np.ndarray) -> np.ndarray:
            e1 = g - self._adjoint(Z0)
            a1 = self._solve_gram(e1)
            v = S_pinv @ (-(Z0 @ q) - 0.5 * (Ft @ a1))
            lam = a1 - gram_F(v)
            return Z0 + self.moment_matrix(lam) + np.outer(v, q) + np.outer(q, v)

        return zf, project

    def _certify(
        self,
        c: np.ndarray,
        z_zero: np.ndarray,
        Z0: np.ndarray,
        x: np.ndarray,
        fx: float,
        target: float,
        stop_below: float,
        max_iters: int,
        best: _Best,
    ) -> None:
        """Face certificate at ``x``: project ``Z0``, then alternate PSD / face projections."""
        zf, project = self.face_projector(c, z_zero, x)
        Z = project(Z0)
        prev_gap = np.inf
        for it in range(max_iters + 1):
            ev, V = np.linalg.eigh(Z)
            bound = self.validated_bound(c, zf, Z, lam_min=float(ev[0]))
            margin = float(ev[1]) if len(ev) > 1 else float("nan")
            best.offer_bound(bound, "face", margin, (zf, Z))
            gap = bound - fx
            # Linear convergence is fast (about 50x per step) when x is the global maximiser
            # and Z0 is near the face; stop early when it is not.
            if gap <= target or bound <= stop_below or it == max_iters or gap > 0.5 * prev_gap:
                break
            prev_gap = gap
            Z = project((V * np.maximum(ev, 0.0)) @ V.T)

    # ---- solving ----------------------------------------------------------------------------

    def _warmup_solver(self, iters: int) -> scs.SCS:
        cache = getattr(self._local, "solvers", None)
        if cache is None:
            cache = self._local.solvers = {}
        solver = cache.get(iters)
        if solver is None:
            data = {"A": self.A, "b": self.b, "c": np.zeros(self.n_vars)}
            st = dict(WARMUP_SCS_SETTINGS["odd" if self.p % 2 else "even"], max_iters=iters)
            solver = scs.SCS(data, self.cone, **st)
            cache[iters] = solver
        return solver

    def _settings(self, options: dict[str, Any]) -> dict[str, Any]:
        unknown = set(options) - _SCS_SETTING_NAMES
        if unknown:
            raise ValueError(
                f"unknown option(s) {sorted(unknown)}; valid SCS settings: "
                f"{sorted(_SCS_SETTING_NAMES)}; solve options: {', '.join(_SOLVE_OPTIONS)}"
            )
        st = dict(DEFAULT_SCS_SETTINGS)
        st.update(options)
        return st

    def _candidates(
        self,
        T: np.ndarray,
        s: int,
        y: np.ndarray,
        steps: int,
        best: _Best,
        first: bool,
        extra: np.ndarray | None = None,
    ) -> None:
        """Polish maximiser candidates and keep the best in ``best``.

        Starts: the first-order moments (odd ``p``), the leading eigenvector (both signs) of the
        second-order moment matrix ``[y_{e_i + e_j}]`` (all its eigenvectors on later calls);
        on the first call also the eigenvectors of
        ``T w^{p-2}`` for a fixed pseudo-random unit ``w`` (Jennrich's simultaneous
        diagonalisation: for a nearly SOD tensor they are close to the components even when all
        weights are equal), on later calls (the first certificate failed) ``n`` fixed
        pseudo-random starts and the current best instead. ``extra`` starts are added as given.
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
            W = (T.reshape(n * n, -1) @ _kron_powers(self._w[None, :], p - 2)[0]).reshape(n, n)
            starts.append(np.linalg.eigh(0.5 * (W + W.T))[1].T)
        else:
            starts.append(self._random_starts)
            if best.x is not None:
                starts.append(best.x[None, :])
        S = np.vstack(starts)
        nrm = np.linalg.norm(S, axis=1)
        S = S[np.isfinite(nrm) & (nrm > 0)]
        if not len(S):
            return
        S = S / np.linalg.norm(S, axis=1, keepdims=True)
        if p % 2:  # orient so that sign * f >= 0 (f is odd)
            f0 = s * (_kron_powers(S, p) @ T.reshape(-1))
            S = np.where((f0 < 0)[:, None], -S, S)
        alpha = (p - 1) * float(np.linalg.norm(T))
        Xp, f = _polish_many(T, S, s, 3 if first else 10, steps if first else 2 * steps, alpha)
        i = int(np.argmax(f))
        # Finish the winner with Newton steps alone (it may have stopped in the batch).
        x = _polish_many(T, Xp[i : i + 1].copy(), s, 0, steps, alpha)[0][0]
        fx = float(s * _value(T, x))
        if fx > best.fx:
            best.x, best.fx = x, fx

    def solve(
        self,
        T: np.ndarray,
        sign: int = 1,
        *,
        warmup_iters: int | None = None,
        warmup_chunks: int = 2,
        refine_iters: int = 12,
        fallback_chunk: int = 30,
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
        warmup_chunks : int
            Maximum number of warm-up chunks; each continues from the previous one and is
            followed by candidate extraction and a face certificate.
        refine_iters : int
            Maximum alternating-projection steps of each face certificate.
        gap_tol : float
            Target ``upper_bound - fx``, relative to ``||T||_F``. Refinement stops there; if the
            warm-up's certificate does not reach it, the full SCS solve runs.
        fallback : bool
            Whether to run the full SCS solve when the warm-up does not reach ``gap_tol``.
        fallback_chunk : int
            The full solve runs in chunks of this many iterations (up to ``max_iters`` in all),
            each followed by candidate extraction and a face certificate. Short chunks let the
            certificate close early: on Figure 2's binary-noise instances, which mostly need
            the full solve, 30 instead of 250 cut the mean solve from 270 to 147 ms.
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
        s = _check_sign(sign)
        T = _check_tensor(T, self.n, self.p)
        settings = self._settings(scs_settings)
        if warmup_iters is None:
            warmup_iters = WARMUP_SCS_SETTINGS["odd" if self.p % 2 else "even"]["max_iters"]
        fro = _fro(T)
        if fro == 0.0:  # f = 0: every unit vector is optimal
            x0 = np.eye(self.n)[0]
            zc = None
            if with_certificate:
                zc = self.export_certificate(T, s, np.zeros(self.n_zero), np.zeros((self.m,) * 2))
            return RelaxationResult(
                0.0, 0.0, x0, 0.0, s, 0.0, True, "not run", 0, 0.0, "zero", sos_certificate=zc
            )
        # Work with ||T||_F = 1 so that SCS's scale setting means the same for every tensor.
        T_in, T = T, T / fro
        stop_below = stop_below / fro
        c = self.objective(T, s)
        target = gap_tol
        best = _Best()
        iters, status, sol = 0, "not run", None
        rank_ratio, scs_value = float("nan"), float("nan")
        runs = ["warmup"] * (max(int(warmup_chunks), 1) if warmup_iters > 0 else 0)
        if fallback or not runs:
            # The full solve, in chunks so the certificate is tried along the way. Its SCS
            # object is built per call (it carries Anderson and scale state between chunks).
            budget = int(settings["max_iters"])
            chunk = max(1, min(int(fallback_chunk), budget))
            settings["max_iters"] = chunk
            runs += ["full"] * -(-budget // chunk)
        full = None
        for run in runs:
            if best.done(target, stop_below):
                break
            if run == "warmup":
                solver = self._warmup_solver(int(warmup_iters))
                solver.update(c=c)
            else:
                if full is None:
                    full = scs.SCS({"A": self.A, "b": self.b, "c": c}, self.cone, **settings)
                solver = full
            if sol is None:
                sol = solver.solve(warm_start=False)
            else:  # continue from the previous chunk's iterate (explicit state: still pure)
                sol = solver.solve(warm_start=True, x=sol["x"], y=sol["y"], s=sol["s"])
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
            if not np.all(np.isfinite(z)):
                continue
            z_zero, Z = z[: self.n_zero], self.dual_matrix(z)
            if best.x is not None:
                self._certify(c, z_zero, Z, best.x, best.fx, target, stop_below, refine_iters, best)
            if not best.done(target, stop_below):
                best.offer_bound(self.validated_bound(c, z_zero, Z), "scs", dual=(z_zero, Z))
                Zr = self.repair(c, z_zero, Z)
                best.offer_bound(self.validated_bound(c, z_zero, Zr), "repaired", dual=(z_zero, Zr))
            if run == "full" and info["status_val"] == scs.SOLVED:
                break  # converged to SCS's tolerance: more chunks would not move
        if best.x is None:  # SCS returned nothing usable: a unit vector still gives fx
            best.x = polish(T, np.eye(self.n)[0], s, newton_steps=polish_steps)
            best.fx = s * _value(T, best.x)
        tight = best.bound - best.fx <= target
        face = best.which == "face"
        # Back to T's scale. The bound is for the polynomial with the (rounded) coefficients c
        # of T / ||T||_F; rounding in c and in T / ||T||_F changes f by at most the margin.
        n_terms = float(self._objmap.getnnz(axis=1).max())
        margin = 4 * (n_terms + 2) * _U * float(np.abs(c) @ self._ymax) + 4 * _U
        upper = fro * (best.bound + margin) * (1 + 4 * _U)
        fx = float(s * _value(T_in, best.x))
        return RelaxationResult(
            value=fx if tight else fro * max(scs_value, float(best.fx)),
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
            dual_margin=fro * best.margin if face else float("nan"),
            scs_value=fro * scs_value,
            sos_certificate=(
                self.export_certificate(T_in, s, *best.dual, scale=fro)
                if with_certificate and best.dual is not None
                else None
            ),
        )

    def export_certificate(
        self, T: np.ndarray, sign: int, z_zero: np.ndarray, Z: np.ndarray, scale: float = 1.0
    ) -> Certificate:
        """The SOS identity behind a dual ``(z_zero, Z)`` of the relaxation of ``T / scale``.

        With ``r`` the dual residual (as in :meth:`validated_bound`) and ``U = scale *
        z_zero[0]``, ``Q = scale * Z``, the dual equalities read, as polynomials in ``x``,
        ``U - sign T x^p = m^T Q m + h (||x||^2 - 1) + scale r^T y(x)``, where ``m`` is the
        moment-matrix basis and

        * homogeneous formulation: ``h = sum over the (degree 2d-2) entries of M that stand
          for sum_k y_{a + 2e_k}`` of ``Q_ij m_i m_j``, ``- U sum_{t<d} ||x||^{2t}``, plus
          ``sign T x^p sum_{t<j} ||x||^{2t}`` when the objective was multiplied by
          ``||x||^{2j}`` (orders above ``ceil(p/2)``);
        * full formulation: ``h = -scale sum_l z_zero[l] x^{a_l}`` over the localising rows.

        The residual is not exported: :meth:`Certificate.verify` recomputes it from ``T``.
        """
        s = _check_sign(sign)
        n, p, d = self.n, self.p, self.order
        T = np.asarray(T, dtype=float)
        z = scale * np.asarray(z_zero, dtype=float)
        Q = scale * np.asarray(Z, dtype=float)
        Q = 0.5 * (Q + Q.T)
        B = self.basis
        rows: list[np.ndarray] = []
        coefs: list[np.ndarray] = []
        if self.formulation == "full":
            loc = np.nonzero(self.degrees <= 2 * d - 2)[0]
            rows.append(self.exponents[loc])
            coefs.append(-z[1:])
        else:
            nd = ~self._direct
            I, J = self._I[nd], self._J[nd]
            rows.append(B[I] + B[J])
            coefs.append(self._mult[nd] * Q[I, J])
            for t in range(d):
                H = monomial_exponents(n, t)
                rows.append(2 * H)
                coefs.append(-z[0] * _multinomial(H))
            var_degrees = [2 * d - 1, 2 * d] if p % 2 else [2 * d]
            target = min(k for k in var_degrees if k >= p and (k - p) % 2 == 0)
            if target > p:
                Ef, cf = monomial_exponents(n, p), polynomial_coefficients(T, p)
                for t in range((target - p) // 2):
                    H = monomial_exponents(n, t)
                    rows.append((Ef[:, None, :] + 2 * H[None, :, :]).reshape(-1, n))
                    coefs.append(s * np.outer(cf, _multinomial(H)).ravel())
        hx, inv = np.unique(np.vstack(rows), axis=0, return_inverse=True)
        hc = np.bincount(inv.ravel(), weights=np.concatenate(coefs), minlength=len(hx))
        return Certificate(
            n=n,
            p=p,
            signs=np.array([s]),
            bounds=np.array([float(z[0])]),
            exponents=np.array(B, dtype=np.int64),
            gram=Q[None],
            h_exponents=hx.astype(np.int64),
            h_coefs=hc[None],
        )

    def solve_abs(self, T: np.ndarray, **options: Any) -> RelaxationResult:
        """Relaxation of ``max |T x^p|``.

        Odd ``p``: one solve (``f(-x) = -f(x)``, so ``max |f| = max f``). Even ``p``: solves both
        signs, the one that looks dominant first (``f`` at the eigenvectors of ``T w^{p-2}``),
        then the other only until its validated bound falls below the first's ``fx``. Returns
        the sign with the larger ``fx`` (``x`` keeps its ``sign``); ``upper_bound`` is the larger
        of the two bounds (a bound of ``max |f|``); ``iterations`` and ``solve_time`` are totals.
        """
        if self.p % 2:
            return self.solve(T, 1, **options)
        t0 = time.perf_counter()
        T = _check_tensor(T, self.n, self.p)
        n, p = self.n, self.p
        W = (T.reshape(n * n, -1) @ _kron_powers(self._w[None, :], p - 2)[0]).reshape(n, n)
        V = np.linalg.eigh(0.5 * (W + W.T))[1].T
        fv = _kron_powers(V, p) @ T.reshape(-1)
        first = 1 if fv.max() >= -fv.min() else -1
        options.pop("stop_below", None)
        r1 = self.solve(T, first, **options)
        r2 = self.solve(T, -first, stop_below=r1.fx, **options)
        best = r1 if r1.fx >= r2.fx else r2
        return RelaxationResult(
            value=best.value,
            upper_bound=max(r1.upper_bound, r2.upper_bound),
            x=best.x,
            fx=best.fx,
            sign=best.sign,
            rank_ratio=best.rank_ratio,
            flat=best.flat,
            status=best.status,
            iterations=r1.iterations + r2.iterations,
            solve_time=time.perf_counter() - t0,
            certificate=best.certificate,
            dual_margin=best.dual_margin,
            scs_value=best.scs_value,
            sos_certificate=(
                Certificate.combine(r1.sos_certificate, r2.sos_certificate)
                if r1.sos_certificate is not None and r2.sos_certificate is not None
                else None
            ),
        )


# --------------------------------------------------------------------------------------------
# Cache and front doors
# --------------------------------------------------------------------------------------------

_CACHE: dict[tuple[int, int, int, str], MomentRelaxation] = {}
_CACHE_LOCK = threading.Lock()


def get_relaxation(
    n: int, p: int, order: int | None = None, formulation: str = "homogeneous"
) -> MomentRelaxation:
    """The cached :class:`MomentRelaxation` of ``(n, p, order, formulation)`` (built on demand)."""
    d = (int(p) + 1) // 2 if order is None else int(order)
    key = (int(n), int(p), d, str(formulation))
    with _CACHE_LOCK:
        rel = _CACHE.get(key)
        if rel is None:
            rel = _CACHE[key] = MomentRelaxation(n, p, d, formulation)
        return rel


def clear_cache() -> None:
    """Drop all cached relaxations (and their SCS workspaces)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def solve(
    T: np.ndarray,
    sign: int = 1,
    *,
    order: int | None = None,
    formulation: str = "homogeneous",
    **options: Any,
) -> RelaxationResult:
    """:meth:`MomentRelaxation.solve` with the cached relaxation for ``T``'s ``(n, p)``."""
    T = np.asarray(T, dtype=float)
    return get_relaxation(T.shape[0], T.ndim, order, formulation).solve(T, sign, **options)


def solve_abs(
    T: np.ndarray, *, order: int | None = None, formulation: str = "homogeneous", **options: Any
) -> RelaxationResult:
    """:meth:`MomentRelaxation.solve_abs` with the cached relaxation for ``T``'s ``(n, p)``."""
    T = np.asarray(T, dtype=float)
    return get_relaxation(T.shape[0], T.ndim, order, formulation).solve_abs(T, **options)
