"""The fixed part of the order-``d`` moment relaxation of ``max_{||x||=1} sign * T x^p``: its
variables, the moment matrix as a map of them, the equality rows, the objective map and the
constants of the validated bound, built once per ``(n, p, d)``.

The validated bound (:mod:`.bound`) and the certificate export (:mod:`.export`) need exactly
this and nothing of the solve, so they import it from here; :class:`~.core.MomentRelaxation`
adds the solve on top. The conic form handed to an SDP driver is :attr:`MomentStructure.problem`.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..monomials import MonomialKeys, monomial_exponents, polynomial_coefficients
from . import builders
from .driver import SdpProblem

__all__ = ["MomentStructure"]


class MomentStructure:
    """Order-``d`` Lasserre relaxation of ``max_{||x||=1} T x^p``, built per ``(n, p, d)``.

    Conic form (:attr:`problem`): ``min c^T y`` s.t. ``A_0 y = e_0`` (the zero cone) and
    ``M(y)`` positive semidefinite. Only ``c`` depends on the tensor: ``c = -sign * coef``
    (:func:`polynomial_coefficients`, mapped to the variables). A dual is ``(z_zero, Z)``.

    Parameters
    ----------
    n, p : int
        Dimension and tensor order (``p >= 2``).
    order : int, optional
        Relaxation order ``d >= ceil(p / 2)``; default ``ceil(p / 2)``.
    formulation : {"homogeneous", "full"}
        See :data:`~sroa_dist.relaxation.builders.FORMULATIONS`.
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
        self._direct, self._direct_var, self._D = mm.direct, mm.direct_var, mm.D
        self._ord_row, self._ord_col = mm.ord_row, mm.ord_col
        self._ord_var, self._ord_val = mm.ord_var, mm.ord_val
        gi = builders.gram_inverse(mm, N)
        self._gram_U, self._gram_V = gi.U, gi.V
        self._K, self._Kw, self._inner = gi.K, gi.Kw, gi.inner

        # Equality rows (the zero cone); the moment matrix is the PSD cone.
        A0 = builders.zero_rows(n, d, formulation, E, self.degrees, kx, look, N)
        self.n_zero = A0.shape[0]
        self._A0_T = A0.T.tocsr()
        self._A0_T_abs = abs(self._A0_T)
        b0 = np.zeros(self.n_zero)
        b0[0] = 1.0
        self.problem = SdpProblem(
            A0=A0, b0=b0, entries=mm.mmap, rows=mm.I, cols=mm.J, m=self.m, p=p
        )

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

    @property
    def n_vars(self) -> int:
        """Number of moment variables."""
        return self.exponents.shape[0]

    def objective(self, T: np.ndarray, sign: int = 1) -> np.ndarray:
        """Cost vector ``c`` for ``max sign * T x^p`` (``min c^T y``), length :attr:`n_vars`."""
        return -float(sign) * (self._objmap @ polynomial_coefficients(T, self.p))

    def moments_of(self, x: np.ndarray) -> np.ndarray:
        """Moment vector ``y(x) = (x^a)_a`` of a point; feasible when ``||x|| = 1``."""
        return _monomials(x, self._sparse_exponents("exponents"))

    def basis_vector(self, x: np.ndarray) -> np.ndarray:
        """Monomial vector ``m(x)`` of the moment matrix: ``M(y(x)) = m m^T`` on the sphere."""
        return _monomials(x, self._sparse_exponents("basis"))

    @functools.cache  # noqa: B019  (one structure per (n, p, d), cached for the process)
    def _sparse_exponents(self, which: str) -> tuple[np.ndarray, np.ndarray]:
        """The exponent rows ``which`` as (columns, powers) of their non-zero entries, in
        column order, padded with column ``n`` (a 1) and power 0: at most ``2d`` factors per
        monomial instead of ``n`` (a face certificate at n = 64 took 0.6 s per point)."""
        E = getattr(self, which)
        width = max(1, int((E > 0).sum(axis=1).max()))
        cols = np.full((E.shape[0], width), E.shape[1])
        pows = np.zeros((E.shape[0], width))
        rows, at = np.nonzero(E)  # row-major: each row's columns ascending
        slot = np.arange(rows.size) - np.searchsorted(rows, rows)
        cols[rows, slot] = at
        pows[rows, slot] = E[rows, at]
        return cols, pows

    def moment_matrix(self, y: np.ndarray) -> np.ndarray:
        """Symmetric moment matrix ``M(y)``, shape ``(m, m)``."""
        return self._sym(self._mmap @ y)

    def _sym(self, e: np.ndarray) -> np.ndarray:
        return self.problem.matrix(e)

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


def _monomials(x: np.ndarray, sparse: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``x^a`` for every exponent row: the same factors ``x_i^{a_i}`` multiplied in the same
    column order as a product over all ``n`` columns (whose other factors are exact ones),
    so the bits equal ``np.prod(x ** E, axis=1)``."""
    cols, pows = sparse
    xe = np.append(np.asarray(x, dtype=float), 1.0)
    factors = xe[cols] ** pows
    out = factors[:, 0].copy()
    for k in range(1, factors.shape[1]):
        out *= factors[:, k]
    return out
