"""Construction of the order-``d`` moment relaxation in conic form, one small builder per part:
the degrees in play, the moment variables, the moment matrix as a map of them, the zero-cone
rows, the maps from lower-degree moments to variables, and the constants of the validated
bound. :class:`~sroa_dist.relaxation.core.MomentRelaxation` calls them once per ``(n, p, d)``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..errors import InputError
from ..monomials import MonomialKeys, monomial_exponents, multinomial

__all__ = ["FORMULATIONS"]

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

#: Largest ``N * k`` (moment variables times non-direct moment-matrix entries) for which the
#: Woodbury factors of ``M^* M`` are kept dense; above it they stay sparse (a larger dense
#: ``(N, k)`` factor would cost more memory than the relaxation itself).
DENSE_WOODBURY_MAX = 4_000_000

Lookup = Callable[[np.ndarray], np.ndarray]


def check_arguments(n: int, p: int, order: int | None, formulation: str) -> tuple[int, int, int]:
    """``(n, p, d)`` as integers, with ``d = ceil(p/2)`` by default; bad input is an error."""
    n, p = int(n), int(p)
    if n < 1 or p < 2:
        raise InputError(
            f"expected n >= 1 and p >= 2, received n = {n}, p = {p}", "give n >= 1 and p >= 2"
        )
    dmin = (p + 1) // 2
    d = dmin if order is None else int(order)
    if d < dmin:
        raise InputError(
            f"expected order >= ceil(p/2) = {dmin}, received order = {order}",
            "give order >= ceil(p/2)",
        )
    if formulation not in FORMULATIONS:
        raise InputError(
            f"unknown formulation {formulation!r}; valid: {', '.join(FORMULATIONS)}",
            "use one of the listed formulations",
        )
    return n, p, d


def degree_layout(p: int, d: int, formulation: str) -> tuple[list[int], list[int]]:
    """Degrees of the moment variables and of the moment-matrix basis."""
    if formulation == "full":
        return list(range(2 * d + 1)), list(range(d + 1))
    if p % 2:
        return [2 * d - 1, 2 * d], [d - 1, d]
    return [2 * d], [d]


def _lookup(sorted_keys: np.ndarray, order: np.ndarray, keys: np.ndarray) -> np.ndarray:
    pos = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    if not np.array_equal(sorted_keys[pos], keys):
        raise AssertionError("internal error: monomial lookup failed")
    return order[pos]


def moment_variables(n: int, var_degrees: list[int], kx: MonomialKeys) -> tuple[np.ndarray, Lookup]:
    """Exponent rows of the variables, and the map from monomial keys to variable indices."""
    E = np.vstack([monomial_exponents(n, k) for k in var_degrees])
    keys = kx.of(E)
    korder = np.argsort(keys, kind="stable")
    return E, functools.partial(_lookup, keys[korder], korder)


@dataclass(frozen=True)
class MomentMap:
    """The moment matrix ``M(y)`` as a sparse map of the variables.

    Entries are the lower triangle, column-major (SCS's order, so its driver need not
    permute): ``(I, J)`` with ``I >= J``. ``mmap`` maps variables to entries; an entry is
    *direct* when it is a single variable (``direct_var``), otherwise (homogeneous odd ``p``,
    degree ``2d-2``) it is ``sum_k y_{a+2e_k}``. ``D[a]`` counts the ordered direct entries
    holding variable ``a``; ``ord_*`` list all ordered entries as ``(row, col, var, coefficient)``.
    """

    I: np.ndarray  # noqa: E741
    J: np.ndarray
    mmap: sp.csr_matrix
    mult: np.ndarray
    direct: np.ndarray
    direct_var: np.ndarray
    D: np.ndarray
    ord_row: np.ndarray
    ord_col: np.ndarray
    ord_var: np.ndarray
    ord_val: np.ndarray


def moment_map(
    n: int, B: np.ndarray, var_degrees: list[int], kx: MonomialKeys, look: Lookup, N: int
) -> MomentMap:
    """:class:`MomentMap` of the basis rows ``B`` over ``N`` variables."""
    m = B.shape[0]
    btup, bdeg = kx.tuples(B), B.sum(axis=1)
    J, I = np.triu_indices(m)  # noqa: E741  I >= J, sorted by column J then row I
    edeg = bdeg[I] + bdeg[J]
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
    mmap = sp.csr_matrix((np.ones(len(r_all)), (r_all, c_all)), shape=(n_ent, N))
    mult = np.where(I == J, 1.0, 2.0)  # ordered entries per lower-triangle entry
    direct_var = np.full(n_ent, -1, dtype=np.int64)
    direct_var[direct] = dvar
    D = np.bincount(dvar, weights=mult[direct], minlength=N)
    if np.any(D == 0):
        raise AssertionError("internal error: a moment variable has no direct entry")
    coo = mmap.tocoo()
    ei, ej = I[coo.row], J[coo.row]
    off = ei != ej
    return MomentMap(
        I=I,
        J=J,
        mmap=mmap,
        mult=mult,
        direct=direct,
        direct_var=direct_var,
        D=D,
        ord_row=np.concatenate([ei, ej[off]]),
        ord_col=np.concatenate([ej, ei[off]]),
        ord_var=np.concatenate([coo.col, coo.col[off]]),
        ord_val=np.concatenate([coo.data, coo.data[off]]),
    )


@dataclass(frozen=True)
class GramInverse:
    """Factors of ``(M^* M)^{-1}`` with ``M^* M = diag(D) + K^T diag(mult) K`` (``K``: the
    non-direct rows of the entry map), by Woodbury: ``D^-1 - U C^-1 U^T``. Dense ``(U, V)``
    when small, else the sparse ``K``, its weights and the Cholesky factor of ``C``; all
    ``None`` when every entry is direct (``M^* M`` diagonal)."""

    U: np.ndarray | None = None
    V: np.ndarray | None = None
    K: sp.csr_matrix | None = None
    Kw: np.ndarray | None = None
    inner: tuple[np.ndarray, bool] | None = None


def gram_inverse(mm: MomentMap, N: int) -> GramInverse:
    nd = np.nonzero(~mm.direct)[0]
    if not len(nd):
        return GramInverse()
    K = mm.mmap[nd].tocsr()
    sw = np.sqrt(mm.mult[nd])
    KD = K.multiply(1.0 / mm.D[None, :]).tocsr()
    C = np.eye(len(nd)) + sw[:, None] * (KD @ K.T).toarray() * sw[None, :]
    if N * len(nd) <= DENSE_WOODBURY_MAX:  # dense factors (n = 10, p = 3: 935 x 55)
        U = (KD.T.toarray()) * sw[None, :]
        return GramInverse(U=U, V=sla.cho_solve(sla.cho_factor(C), U.T).T)
    return GramInverse(K=K, Kw=sw, inner=sla.cho_factor(C))


def zero_rows(
    n: int,
    d: int,
    formulation: str,
    E: np.ndarray,
    degrees: np.ndarray,
    kx: MonomialKeys,
    look: Lookup,
    N: int,
) -> sp.csr_matrix:
    """Rows of the zero cone, ``A_0 y = e_0``: ``y_0 = 1`` and the localising equalities
    (full), or the single ``<(sum_k x_k^2)^d, y> = 1`` (homogeneous)."""
    if formulation == "full":
        loc = np.nonzero(degrees <= 2 * d - 2)[0]
        nl = len(loc)
        zr = [np.zeros(1, np.int64), np.arange(1, nl + 1)]
        zc = [look(kx.of(np.zeros((1, n), np.int64))), loc]
        zv = [np.ones(1), -np.ones(nl)]
        loc_tup = kx.tuples(E[loc])
        for k in range(n):
            zr.append(np.arange(1, nl + 1))
            zc.append(look(kx.times_square(loc_tup, k)))
            zv.append(np.ones(nl))
        return sp.csr_matrix(
            (np.concatenate(zv), (np.concatenate(zr), np.concatenate(zc))), shape=(1 + nl, N)
        )
    half = monomial_exponents(n, d)
    return sp.csr_matrix(
        (multinomial(half), (np.zeros(len(half), np.int64), look(kx.of(2 * half)))),
        shape=(1, N),
    )


def homogenizer(
    n: int, kx: MonomialKeys, look: Lookup, Elow: np.ndarray, var_degrees: list[int], N: int
) -> sp.csr_matrix:
    """Rows: moments ``y_a`` (``a`` in ``Elow``) as combinations of the variables, using
    ``y_a = <(sum_k x_k^2)^j x^a, y>`` up to the lowest variable degree of the same parity."""
    d0 = int(Elow[0].sum())
    target = min(k for k in var_degrees if k >= d0 and (k - d0) % 2 == 0)
    Hj = monomial_exponents(n, (target - d0) // 2)
    tl, th = kx.tuples(Elow), kx.tuples(2 * Hj)
    keys = kx.product(np.repeat(tl, len(Hj), axis=0), np.tile(th, (len(Elow), 1)))
    return sp.csr_matrix(
        (
            np.tile(multinomial(Hj), len(Elow)),
            (np.repeat(np.arange(len(Elow)), len(Hj)), look(keys)),
        ),
        shape=(len(Elow), N),
    )


def second_moment_exponents(n: int) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Exponent rows of ``x_i x_j`` (``i <= j``) and the index pairs ``(i, j)``."""
    iu, ju = np.triu_indices(n)
    E2 = np.zeros((len(iu), n), np.int64)
    np.add.at(E2, (np.arange(len(iu)), iu), 1)
    np.add.at(E2, (np.arange(len(iu)), ju), 1)
    return E2, (iu, ju)


def sphere_maxima(E: np.ndarray, degrees: np.ndarray) -> np.ndarray:
    """``max_{||x||=1} |x^a|`` per exponent row (attained at ``x_i^2 = a_i / |a|``)."""
    deg = np.maximum(degrees, 1).astype(float)
    return np.prod((E / deg[:, None]) ** (E / 2.0), axis=1)


def fixed_directions(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A fixed pseudo-random unit ``w`` and ``n`` unit starts: a pure function of ``n``."""
    rs = np.random.default_rng(20240917).standard_normal((n + 1, n))
    rs /= np.linalg.norm(rs, axis=1, keepdims=True)
    return rs[0], rs[1:]
