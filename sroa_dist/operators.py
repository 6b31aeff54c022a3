"""Matrix-free symmetric tensors: sums of symmetrized products of a few factor vectors, known
only through their contractions ``T x^{p-1}``, ``T x^p`` and ``T x^{p-2}``, each costing
``O(n·R)`` per vector (``O(n²·R)`` for the matrix), never the ``n^p`` entries.

:class:`SymmetricProducts` is one such sum, ``Σ_t w_t · sym(a_{1,t}^{⊗k_1} ⊗ … ⊗ a_{m,t}^{⊗k_m})``;
:class:`TensorOperator` is what the local solvers (SS-HOPM, the power method) and SROA's
implicit deflation accept in place of a ``(B, n, …, n)`` array; :class:`StructuredTensor` is the
stack of sums of products that :func:`sroa_dist.structured_tensor` builds. This module imports
nothing else of the package, so the solvers can test for an operator without an import cycle.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .errors import InputError, InputTypeError
from .integer_powers import ipow
from .tensors import FloatArray

__all__ = ["StructuredTensor", "SymmetricProducts", "TensorOperator"]


# eq=False: equality of array fields is ambiguous, and identity is what a cache would want.
@dataclasses.dataclass(frozen=True, eq=False)
class SymmetricProducts:
    """``E = Σ_t w_t · sym(a_{1,t}^{⊗k_1} ⊗ … ⊗ a_{m,t}^{⊗k_m})`` of order ``p = Σ_m k_m``.

    ``sym`` averages over the ``p!`` index permutations, so
    ``E x^p = Σ_t w_t Π_m (a_{m,t}·x)^{k_m}`` and ``E x^{p-1} = ∇(E x^p)/p``. A symmetric CP
    tensor ``Σ λ_i v_i^{⊗p}`` is the case ``m = 1``; the coherent tilt has ``m = 2``,
    ``k = (p-1, 1)``.

    Attributes
    ----------
    factors : tuple of (n, R) or (n, 1) ndarrays
        ``a_{m,t}`` as columns; a single column is shared by every term ``t`` (it is
        broadcast, which keeps a factor common to all terms at ``O(n)`` cost).
    powers : tuple of int
        ``k_m >= 1``.
    weights : (R,) ndarray
        ``w_t``.
    """

    factors: tuple[FloatArray, ...]
    powers: tuple[int, ...]
    weights: FloatArray

    def __post_init__(self) -> None:
        if len(self.factors) != len(self.powers) or not self.factors:
            raise InputError(
                f"factors/powers: expected one power per factor, received {len(self.factors)} "
                f"factors and {len(self.powers)} powers",
                "give one power per factor",
            )
        if self.weights.ndim != 1:
            raise InputError(
                f"weights: expected a 1-d array (R,), received {self.weights.shape}",
                "give one weight per column of the factors",
            )
        n, R = self.factors[0].shape[0], self.weights.shape[-1]
        for A in self.factors:
            if A.ndim != 2 or A.shape[0] != n or A.shape[1] not in (1, R):
                raise InputError(
                    f"factors: expected (n, R) or (n, 1) matrices with n = {n}, R = {R}, "
                    f"received {A.shape}",
                    "give factors with n rows and R (or 1) columns",
                )
        if any(isinstance(k, bool) or int(k) != k or k < 1 for k in self.powers):
            raise InputError(
                f"powers: expected integers >= 1, received {self.powers}",
                "give integer powers >= 1",
            )
        # Factors made of coordinate vectors (the identity basis, the tilt's other components)
        # are applied by indexing, O(S·R) instead of an O(S·n·R) product: the same numbers
        # bit for bit (a product with 0/1 entries adds only exact zeros).
        object.__setattr__(self, "_cols", tuple(_coordinate_columns(A) for A in self.factors))
        # The identity itself (coordinate i in column i): its gather and scatter are copies,
        # skipped (the same numbers; a Krylov product of the tilt spent a third of its time
        # there at n = 512).
        object.__setattr__(
            self,
            "_ident",
            tuple(c is not None and np.array_equal(c, np.arange(n)) for c in self._cols),
        )
        # Coordinates that run consecutively (the tilt's other components: every coordinate
        # but the tilted one's) are gathered and scattered through a slice: the same numbers,
        # a copy instead of an indexed gather (about 20 µs against 3 at n = 1024, several per
        # product of the large-n engine's Krylov runs).
        object.__setattr__(self, "_span", tuple(_span(c) for c in self._cols))

    @property
    def p(self) -> int:
        """Order ``Σ_m k_m``."""
        return int(sum(self.powers))

    @property
    def n(self) -> int:
        """Dimension."""
        return int(self.factors[0].shape[0])

    def scaled(self, c: float) -> SymmetricProducts:
        """``c · E``."""
        return dataclasses.replace(self, weights=self.weights * float(c))

    def _dots(self, X: FloatArray) -> list[FloatArray]:
        # (S, R_m) each
        return [
            X @ A if c is None else np.ascontiguousarray(X if i else X[:, c])
            for A, c, i in zip(self.factors, self._span, self._ident, strict=True)
        ]

    def values(self, X: FloatArray) -> FloatArray:
        """``E x^p`` for the rows of ``X (S, n)``: ``(S,)``."""
        prod = self.weights
        for C, k in zip(self._dots(X), self.powers, strict=True):
            prod = prod * ipow(C, k)
        return np.sum(prod, axis=-1)

    def gradient(self, X: FloatArray) -> FloatArray:
        """``E x^{p-1} = ∇(E x^p)/p`` for the rows of ``X (S, n)``: ``(S, n)``."""
        C = self._dots(X)
        # The other factors' powers (none for a one-factor term, the SOD part: its C**p, a
        # pow per entry, was 8 % of an n = 512 global SROA and never read).
        P = [ipow(c, k) for c, k in zip(C, self.powers, strict=True)] if len(C) > 1 else []
        out: Any = None
        for m, (A, k) in enumerate(zip(self.factors, self.powers, strict=True)):
            # ∂/∂c_m of w Π c^k, without dividing by c_m (which may be 0).
            coef = (k / self.p) * self.weights * ipow(C[m], k - 1)
            for j, Pj in enumerate(P):
                if j != m:
                    coef = coef * Pj
            if A.shape[1] == 1:
                coef = coef.sum(axis=-1, keepdims=True)
            if self._cols[m] is not None and not self._ident[m]:
                if out is None:
                    out = np.zeros(X.shape)
                out[:, self._span[m]] += coef
            else:
                out = _accumulate(out, coef if self._ident[m] else coef @ A.T, X.shape)
        return out

    def hessian(self, X: FloatArray) -> FloatArray:
        """``E x^{p-2} = ∇²(E x^p)/(p(p-1))`` for the rows of ``X (S, n)``: ``(S, n, n)``."""
        C = self._dots(X)
        S, n, R = X.shape[0], self.n, self.weights.shape[-1]
        out = np.zeros((S, n, n))
        ks = self.powers
        for m in range(len(ks)):
            for q in range(len(ks)):
                if m == q and ks[m] < 2:
                    continue
                coef = self.weights / (self.p * (self.p - 1))
                for j, (c, k) in enumerate(zip(C, ks, strict=True)):
                    e = k - (j == m) - (j == q)
                    coef = coef * (k if j in (m, q) else 1) * ipow(c, e)
                    if j == m == q:
                        coef = coef * (k - 1)
                coef = np.broadcast_to(coef, (S, R))
                Am, Aq = self.factors[m], self.factors[q]
                # A factor shared by every term makes the sum over t a rank-one update per
                # start, O(n·R + n²) instead of O(n²·R) (the tilt's v_l: 3 of its 4 pairs).
                cm, cq = self._cols[m], self._cols[q]
                if Am.shape[1] == 1:
                    out += Am[:, 0][None, :, None] * _combine(coef, Aq, cq)[:, None, :]
                elif Aq.shape[1] == 1:
                    out += _combine(coef, Am, cm)[:, :, None] * Aq[:, 0][None, None, :]
                elif cm is not None and cq is not None:
                    out[:, cm, cq] += coef  # A_m diag(coef) A_qᵀ: one entry per term
                else:
                    out += np.matmul(Am[None] * coef[:, None, :], Aq.T[None])
        return out

    def hessian_apply(self, X: FloatArray, Y: FloatArray) -> FloatArray:
        """``(E x^{p-2}) y`` for the rows of ``X`` and ``Y (S, n)``: ``(S, n)`` in ``O(S·n·R)``,
        the matrix :meth:`hessian` forms in ``O(S·n²·R)`` never formed (what an iterative
        eigensolver or a Krylov Newton solve on a large operator multiplies by)."""
        return self.hessian_at(X)(Y)

    def hessian_at(self, X: FloatArray) -> Callable[[FloatArray], FloatArray]:
        """``Y ↦ (E x^{p-2}) y`` for the rows of ``X``: the coefficients, which depend on ``X``
        only, computed once for the many products of a Krylov solver."""
        C = self._dots(X)
        ks = self.powers
        pairs = [
            (m, q, self._pair_coef(C, m, q))
            for m in range(len(ks))
            for q in range(len(ks))
            if not (m == q and ks[m] < 2)
        ]

        def apply(Y: FloatArray) -> FloatArray:
            D = self._dots(Y)
            acc: list[Any] = [None] * len(ks)
            # H = Σ_{m,q} A_m diag(coef_mq) A_qᵀ, so H y = Σ_m A_m (Σ_q coef_mq · A_qᵀ y).
            for m, q, coef in pairs:
                acc[m] = coef * D[q] if acc[m] is None else acc[m] + coef * D[q]
            out: Any = None
            for m, A in enumerate(self.factors):
                if acc[m] is not None:
                    term = acc[m] if self._ident[m] else _combine(acc[m], A, self._span[m])
                    out = _accumulate(out, term, Y.shape)  # broadcasts over starts
            return np.zeros(Y.shape) if out is None else out

        return apply

    def _pair_coef(self, C: list[FloatArray], m: int, q: int) -> FloatArray:
        """``∂²(w Π c^k)/∂c_m∂c_q / (p(p-1))`` per start and term: ``(S, R)`` or broadcastable."""
        ks = self.powers
        coef = self.weights / (self.p * (self.p - 1))
        for j, (c, k) in enumerate(zip(C, ks, strict=True)):
            e = k - (j == m) - (j == q)
            coef = coef * (k if j in (m, q) else 1) * ipow(c, e)
            if j == m == q:
                coef = coef * (k - 1)
        return coef

    def inner(self, other: SymmetricProducts) -> float:
        """Frobenius inner product ``⟨E, F⟩`` in ``O(R·R')`` per pairing pattern.

        ``⟨sym(⊗a), sym(⊗b)⟩ = (1/p!) Σ_σ Π_i a_i·b_{σ(i)}``; the permutations that send
        ``N_{mq}`` copies of factor ``m`` onto factor ``q`` number
        ``Π k_m! Π k'_q! / Π N_{mq}!``, so the sum runs over the contingency tables ``N`` with
        row sums ``k`` and column sums ``k'`` (a handful for two or three factors).
        """
        if other.p != self.p:
            raise InputError(
                f"inner: orders differ ({self.p} and {other.p})",
                "take inner products of operators of one order p",
            )
        R, Rq = self.weights.shape[-1], other.weights.shape[-1]
        G = [[A.T @ B for B in other.factors] for A in self.factors]
        base = math.prod(math.factorial(k) for k in self.powers + other.powers)
        total = 0.0
        for N in _tables(self.powers, other.powers):
            coef = base / math.prod(math.factorial(v) for row in N for v in row)
            M = np.ones((1, 1))
            for i, row in enumerate(N):
                for j, v in enumerate(row):
                    if v:
                        M = M * G[i][j] ** v
            M = np.broadcast_to(M, (R, Rq))
            total += coef / math.factorial(self.p) * float(self.weights @ M @ other.weights)
        return total


def _accumulate(out: Any, term: FloatArray, shape: tuple[int, ...]) -> FloatArray:
    """``out + term`` into ``out`` (``None``: nothing yet), as ``zeros(shape)`` summed term by
    term would give, without the zeros: the first term of the full shape is taken as it is
    (``0 + t = t``; each term here is a fresh array, never an input), which saves an
    allocation and a pass per product of the large-n engine's Krylov runs (a tilt's product
    at n = 512 is a few vector operations, so these counted)."""
    if out is None:
        if term.shape == shape:
            return term
        out = np.zeros(shape)
    out += term
    return out


def _combine(coef: FloatArray, A: FloatArray, cols: Any = None) -> FloatArray:
    """``Σ_t coef[s, t] a_t`` for each start ``s``, ``A`` with R columns or one shared: (S, n).
    ``cols``: ``A``'s coordinates when its columns are distinct coordinate vectors."""
    if A.shape[1] == 1:
        return coef.sum(axis=-1, keepdims=True) * A[:, 0]
    if isinstance(cols, slice):  # consecutive coordinates: zeros only outside them
        out = np.empty((coef.shape[0], A.shape[0]))
        out[:, : cols.start] = 0.0
        out[:, cols.stop :] = 0.0
        out[:, cols] = coef
        return out
    if cols is not None:
        out = np.zeros((coef.shape[0], A.shape[0]))
        out[:, cols] = coef
        return out
    return coef @ A.T


def _span(cols: Any) -> Any:
    """``cols`` as a slice where they are consecutive increasing coordinates, else as given."""
    if cols is None or cols.size == 0 or not np.array_equal(np.diff(cols), np.ones(cols.size - 1)):
        return cols
    return slice(int(cols[0]), int(cols[-1]) + 1)


def _coordinate_columns(A: FloatArray) -> NDArray[np.intp] | None:
    """The coordinates ``i_t`` where ``A``'s columns are distinct coordinate vectors
    ``e_{i_t}`` (more than one column), else ``None``."""
    if A.shape[1] < 2:
        return None
    nonzero = A != 0
    if not (np.all(nonzero.sum(axis=0) == 1) and np.all(A[nonzero] == 1.0)):
        return None
    cols = np.argmax(nonzero, axis=0)
    return cols if np.unique(cols).size == cols.size else None


def _tables(rows: Sequence[int], cols: Sequence[int]) -> Iterator[list[list[int]]]:
    """Non-negative integer matrices with the given row and column sums."""
    if not rows:
        if not any(cols):
            yield []
        return
    for first in _compositions(rows[0], cols):
        rest = [c - f for c, f in zip(cols, first, strict=True)]
        for tail in _tables(rows[1:], rest):
            yield [list(first), *tail]


def _compositions(total: int, caps: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Tuples ``0 <= c_j <= caps[j]`` summing to ``total``."""
    if not caps:
        if total == 0:
            yield ()
        return
    for c in range(min(total, caps[0]) + 1):
        for tail in _compositions(total - c, caps[1:]):
            yield (c, *tail)


class TensorOperator(abc.ABC):
    """A stack of ``B`` symmetric order-``p`` tensors known only through contractions.

    It quacks like the ``(B, n, …, n)`` array the local methods read (``shape``, ``ndim``,
    row selection ``T[rows]``), and :meth:`contract` replaces
    :func:`sroa_dist.tensors.contract`. A method whose relaxation reads every entry
    (``certified``, ``sos``) is refused on it
    (:func:`sroa_dist.methods.operator_step.check_local_method`), and no bound is claimed for it:
    steps on an operator are local, never certified.
    """

    @property
    @abc.abstractmethod
    def shape(self) -> tuple[int, ...]:
        """``(B, n, …, n)``."""

    @property
    def ndim(self) -> int:
        """``p + 1`` (the batch axis first)."""
        return len(self.shape)

    @abc.abstractmethod
    def contract(self, X: FloatArray, times: int) -> FloatArray:
        """``T x^{times}`` for ``X (B, S, n)``, ``times`` in ``{p-2, p-1, p}``: ``(B, S, n, n)``,
        ``(B, S, n)`` or ``(B, S)``, as :func:`sroa_dist.tensors.contract`."""

    @abc.abstractmethod
    def fro2(self) -> FloatArray:
        """Squared Frobenius norms ``(B,)``."""

    def hessian_apply(self, X: FloatArray, Y: FloatArray) -> FloatArray:
        """``(T x^{p-2}) y`` for ``X``, ``Y (B, S, n)``: ``(B, S, n)``. This default forms the
        matrices; an operator that can apply them for less overrides it."""
        return self.hessian_at(X)(Y)

    def hessian_at(self, X: FloatArray) -> Callable[[FloatArray], FloatArray]:
        """``Y ↦ (T x^{p-2}) y`` for ``X (B, S, n)``. This default forms the matrices once; an
        operator that can apply them for less overrides it."""
        H = self.contract(X, len(self.shape) - 3)
        return lambda Y: np.matmul(H, Y[..., None])[..., 0]

    @abc.abstractmethod
    def take(self, rows: Any) -> TensorOperator:
        """The tensors ``rows`` (an index array or slice)."""

    def __getitem__(self, rows: Any) -> TensorOperator:
        return self.take(rows)


@dataclasses.dataclass(frozen=True, eq=False)
class StructuredTensor(TensorOperator):
    """``T_b = Σ_s terms[b][s]``: a stack of sums of :class:`SymmetricProducts`.

    ``batched=False`` (what :func:`sroa_dist.structured_tensor` returns) stands for one tensor
    of shape ``(n,)*p``; :meth:`as_batch` gives the one-element stack the solvers read.
    """

    terms: tuple[tuple[SymmetricProducts, ...], ...]
    batched: bool = True

    def __post_init__(self) -> None:
        if not self.terms or not all(self.terms):
            raise InputError(
                "terms: expected at least one tensor with at least one term",
                "give at least one tensor with at least one term",
            )
        first = self.terms[0][0]
        for t in (t for ts in self.terms for t in ts):
            if (t.n, t.p) != (first.n, first.p):
                raise InputError(
                    f"terms: every term needs n = {first.n}, p = {first.p}; received "
                    f"n = {t.n}, p = {t.p}",
                    "stack only operators of one n and p",
                )
        if not self.batched and len(self.terms) != 1:
            raise InputError(
                "batched: an unbatched operator holds exactly one tensor",
                "give one tensor, or batched=True for a stack",
            )

    @property
    def n(self) -> int:
        """Dimension."""
        return self.terms[0][0].n

    @property
    def p(self) -> int:
        """Order."""
        return self.terms[0][0].p

    @property
    def shape(self) -> tuple[int, ...]:
        lead = (len(self.terms),) if self.batched else ()
        return lead + (self.n,) * self.p

    def as_batch(self) -> StructuredTensor:
        """The same tensor(s) as a stack (a one-element stack when unbatched)."""
        return dataclasses.replace(self, batched=True)

    @classmethod
    def stack(cls, ops: Sequence[StructuredTensor]) -> StructuredTensor:
        """One stack of the tensors of several operators (for :func:`sroa_dist.sroa_batch`)."""
        return cls(tuple(ts for op in ops for ts in op.terms), batched=True)

    def take(self, rows: Any) -> StructuredTensor:
        if not self.batched:
            raise InputTypeError(
                "an unbatched operator has no rows; use as_batch() first", "call .as_batch() first"
            )
        idx = np.arange(len(self.terms))[rows]
        return StructuredTensor(tuple(self.terms[i] for i in np.atleast_1d(idx)), True)

    def contract(self, X: FloatArray, times: int) -> FloatArray:
        if not self.batched:
            raise InputTypeError(
                "contract reads a stack (B, S, n); use as_batch() first", "call .as_batch() first"
            )
        B, S, n = X.shape
        if B != len(self.terms) or n != self.n:
            raise InputError(
                f"X: expected ({len(self.terms)}, S, {self.n}) vectors, received {X.shape}",
                "pass one (S, n) block of vectors per tensor",
            )
        p = self.p
        if times == p - 1:
            parts = [sum(t.gradient(X[b]) for t in ts) for b, ts in enumerate(self.terms)]
        elif times == p:
            parts = [sum(t.values(X[b]) for t in ts) for b, ts in enumerate(self.terms)]
        elif times == p - 2:
            parts = [sum(t.hessian(X[b]) for t in ts) for b, ts in enumerate(self.terms)]
        else:
            raise InputError(
                f"times: a matrix-free operator contracts p - 2, p - 1 or p = {p} times, "
                f"received {times}",
                "contract p - 2, p - 1 or p times",
            )
        return np.stack(parts)

    def hessian_apply(self, X: FloatArray, Y: FloatArray) -> FloatArray:
        """``(T x^{p-2}) y`` for ``X``, ``Y (B, S, n)``: ``(B, S, n)``, without forming the
        ``n × n`` matrices (``O(S·n·R)`` per tensor)."""
        return self.hessian_at(X)(Y)

    def hessian_at(self, X: FloatArray) -> Callable[[FloatArray], FloatArray]:
        """``Y ↦ (T x^{p-2}) y`` for ``X (B, S, n)``, coefficients prepared once."""
        fs = [[t.hessian_at(X[b]) for t in ts] for b, ts in enumerate(self.terms)]
        if len(fs) == 1 and len(fs[0]) == 2:  # one tensor, SOD part and perturbation
            f0, f1 = fs[0]
            return lambda Y: (f0(Y[0]) + f1(Y[0]))[None]
        return lambda Y: np.stack([sum(f(Y[b]) for f in row) for b, row in enumerate(fs)])

    def fro2(self) -> FloatArray:
        # ⟨T, T⟩ = Σ_{s,s'} ⟨term_s, term_s'⟩ in closed form (exact up to rounding).
        return np.array([sum(a.inner(b) for a in ts for b in ts) for ts in self.terms])
