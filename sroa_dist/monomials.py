"""Monomials, index multisets and their ranks: the one indexer of symmetric-tensor entries.

A monomial ``x^a`` of degree ``d`` in ``n`` variables, a symmetric-tensor entry class and a
multiset ``i_1 <= ... <= i_d`` of ``{0, ..., n-1}`` are the same object. The noise draws (one
value per multiset), the moment relaxation (one variable per monomial) and the auditable SOS
certificates (exact polynomial arithmetic on index tuples) all index them through this module,
in the lexicographic order of :func:`itertools.combinations_with_replacement`.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from numpy.typing import NDArray

from .errors import InputError

__all__ = [
    "MonomialKeys",
    "exponent_tuples",
    "monomial_exponents",
    "multinomial",
    "multiset_index",
    "multiset_rank",
    "multiset_tuples",
    "polynomial_coefficients",
]


@functools.lru_cache(maxsize=64)
def multiset_tuples(n: int, d: int) -> NDArray[np.int64]:
    """Sorted index tuples ``i_1 <= ... <= i_d`` of ``{0..n-1}`` in lexicographic order.

    Read-only, shape ``(C(n + d - 1, d), d)``; row ``k`` is the multiset of rank ``k``
    (:func:`multiset_rank`).
    """
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


@functools.lru_cache(maxsize=32)
def multiset_index(n: int, p: int) -> tuple[NDArray[np.intp], int]:
    """Map every index tuple of an ``(n,)*p`` tensor to the rank of its sorted multiset.

    Returns ``(ids, count)`` with ``ids`` of shape ``(n,)*p`` and ``count = C(n+p-1, p)``.
    """
    combos = multiset_tuples(n, p).astype(np.intp)
    lookup = np.zeros((n,) * p, dtype=np.intp)
    lookup[tuple(combos.T)] = np.arange(len(combos))
    grids = np.sort(np.indices((n,) * p).reshape(p, -1), axis=0)
    ids = lookup[tuple(grids)].reshape((n,) * p)
    ids.setflags(write=False)
    return ids, len(combos)


@functools.lru_cache(maxsize=64)
def _rank_table(n: int, p: int) -> NDArray[np.intp]:
    """``table[m, c]``: multisets of size ``m + 1`` over ``{0..n-1}`` whose first element is
    ``< c`` (lexicographic order), so ranks are sums of table differences."""
    table = np.zeros((p, n + 1), dtype=np.intp)
    for m in range(p):
        # Non-decreasing sequences of length m + 1 starting with c': C(n - c' + m - 1, m).
        counts = [math.comb(n - c + m - 1, m) for c in range(n)]
        table[m, 1:] = np.cumsum(counts)
    return table


def multiset_rank(sorted_idx: NDArray[np.integer], n: int) -> NDArray[np.intp]:
    """Lexicographic rank of sorted index tuples among all multisets ``i1 ≤ … ≤ ip`` of
    ``{0..n-1}`` (the order of :func:`multiset_tuples`), a bijection onto
    ``[0, C(n + p - 1, p))``.

    ``sorted_idx`` has shape ``(p, ...)``, sorted along axis 0.
    """
    p = sorted_idx.shape[0]
    table = _rank_table(int(n), int(p))
    rank = np.zeros(sorted_idx.shape[1:], dtype=np.intp)
    prev = np.zeros(sorted_idx.shape[1:], dtype=np.intp)
    for k in range(p):
        row = table[p - 1 - k]  # the remaining sequence (this element on) has p - k elements
        cur = sorted_idx[k]
        rank += row[cur] - row[prev]
        prev = cur
    return rank


def exponent_tuples(E: NDArray[np.integer], width: int, pad: int) -> NDArray[np.int32]:
    """Sorted index tuples of the exponent rows of ``E``, padded with ``pad`` to ``width``.

    ``x^a`` becomes ``a_0`` copies of 0, ``a_1`` copies of 1, ..., then ``pad`` (use ``n``, which
    sorts last, so a product of monomials is the sorted concatenation of their tuples).
    """
    E = np.asarray(E, dtype=np.int64)
    deg = E.sum(axis=1)
    if deg.max(initial=0) > width:
        raise InputError(
            f"E: expected monomials of degree <= {width}, received degree {int(deg.max())}",
            "keep the exponents within the relaxation's degree",
        )
    out = np.full((E.shape[0], width), pad, dtype=np.int32)
    r, c = np.nonzero(E)
    reps = E[r, c]
    rows, idx = np.repeat(r, reps), np.repeat(c, reps)
    out[rows, np.arange(len(rows)) - (np.cumsum(deg) - deg)[rows]] = idx
    return out


@functools.lru_cache(maxsize=64)
def monomial_exponents(n: int, d: int) -> NDArray[np.int64]:
    """Exponent vectors of the monomials of degree exactly ``d`` in ``n`` variables.

    Returns a read-only ``(C(n + d - 1, d), n)`` integer array in the lexicographic order of the
    sorted index tuples (``x_0^d, x_0^{d-1} x_1, ...``), as in :func:`polynomial_coefficients`.
    """
    idx = multiset_tuples(n, d)
    K = idx.shape[0]
    E = np.zeros((K, n), dtype=np.int64)
    if d:
        np.add.at(E, (np.repeat(np.arange(K), d), idx.ravel()), 1)
    E.setflags(write=False)
    return E


def multinomial(E: NDArray[np.integer]) -> NDArray[np.float64]:
    """Multinomial coefficients ``|a|! / prod(a_i!)`` of the exponent rows of ``E`` (exact)."""
    E = np.asarray(E)
    d = int(E.sum(axis=1).max()) if E.size else 0
    fact = np.array([math.factorial(k) for k in range(d + 1)], dtype=float)
    return fact[E.sum(axis=1)] / np.prod(fact[E], axis=1)


def polynomial_coefficients(T: np.ndarray, p: int | None = None) -> NDArray[np.float64]:
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
        raise InputError(
            f"expected a tensor with at least p = {p} axes, received shape {T.shape}",
            "pass a tensor with at least p axes",
        )
    n = T.shape[-1]
    if T.shape[T.ndim - p :] != (n,) * p:
        raise InputError(
            f"expected the last {p} axes to have equal length, received {T.shape}",
            "pass a tensor whose last p axes have one length n",
        )
    idx = multiset_tuples(n, p)
    flat = T.reshape(T.shape[: T.ndim - p] + (n**p,))
    lin = np.ravel_multi_index(tuple(idx.T), (n,) * p)
    return flat[..., lin] * multinomial(monomial_exponents(n, p))


class MonomialKeys:
    """Exact int64 keys of the monomials of degree ``<= D`` in ``n`` variables, for any ``n``.

    A monomial is its sorted index tuple ``i_1 <= ... <= i_D``, padded with the sentinel ``n``
    (so lower degrees fit); its key is the tuple's :func:`multiset_rank` among the multisets of
    size ``D`` of ``{0, ..., n}``, a bijection onto ``[0, C(n + D, D))``. Products are merged
    tuples, so no key arithmetic can overflow or carry (positional base-``(2d + 1)`` keys would
    refuse ``n * log2(2d + 1) > 62``, e.g. n >= 27 at d = 2).
    """

    def __init__(self, n: int, D: int) -> None:
        if math.comb(n + D, D) >= 2**62:
            raise InputError(
                f"expected fewer than 2^62 monomials of degree <= {D} in n = {n} variables for "
                f"the moment index, received C(n + {D}, {D}) = {math.comb(n + D, D)}",
                "use a local method (sshopm) at this size: such a relaxation would not fit in "
                "memory anyway",
            )
        self.n, self.D = n, D

    def tuples(self, E: np.ndarray) -> NDArray[np.int32]:
        """Padded sorted index tuples ``(K, D)`` of the exponent rows of ``E``."""
        return exponent_tuples(E, self.D, self.n)

    def rank(self, t: np.ndarray) -> NDArray[np.int64]:
        """Keys of (possibly merged, unsorted) index tuples with at most ``D`` real indices."""
        t = np.sort(t, axis=1)
        if t.shape[1] > self.D:
            if np.any(t[:, self.D :] != self.n):
                raise AssertionError("internal error: monomial product above the key's degree")
            t = t[:, : self.D]
        return multiset_rank(t.T.astype(np.intp), self.n + 1).astype(np.int64)

    def of(self, E: np.ndarray) -> NDArray[np.int64]:
        """Keys of the exponent rows of ``E``."""
        return self.rank(self.tuples(E))

    def product(self, ta: np.ndarray, tb: np.ndarray) -> NDArray[np.int64]:
        """Keys of the products of the monomials of tuple rows ``ta`` and ``tb`` (row by row)."""
        return self.rank(np.concatenate([ta, tb], axis=1))

    def times_square(self, ta: np.ndarray, k: int) -> NDArray[np.int64]:
        """Keys of ``x^a * x_k^2`` for the tuple rows ``ta``."""
        return self.product(ta, np.full((ta.shape[0], 2), k, dtype=ta.dtype))
