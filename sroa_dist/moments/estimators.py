"""Unbiased empirical moments and their whitened moment tensor, streamed over samples.

For each model an estimator object holds the validated data and provides

- ``m2_top(k)``: the top ``k`` eigenpairs of the unbiased ``M̂2`` (matrix-free for large d),
- ``whitened_m3(W)``: ``T̂ = M̂3(W, W, W)`` computed in the ``k``-dimensional whitened space,
  streaming over row chunks in ``O(N·k³ + nnz·k + d·k³)`` time and ``O(chunk·k² + d·k²)``
  memory: never a ``d × d × d`` array,
- ``m2_dense()``, ``m3_dense()``: the same unbiased estimators as dense arrays (small ``d`` only;
  the baseline of ``benchmarks/bench_moments.py`` and the oracle of the tests).

Counts (single-topic model, AGHKT Section 3.1): with ``c`` a document's word counts and
``L = Σ c``, falling-factorial corrections make each document's contribution unbiased,

    E[(c cᵀ − diag c) / (L(L−1))] = M2,
    E[(c^{⊗3} − Σ_i c_i sym3(e_i ⊗ e_i ⊗ c) + 2 Σ_i c_i e_i^{⊗3}) / (L(L−1)(L−2))] = M3,

where ``sym3`` sums the three placements of ``c``; documents may have different lengths
``L >= 3``. Points (spherical mixture, Hsu & Kakade 2013): ``M̂2 = mean(x xᵀ) − σ² I`` and
``M̂3 = mean(x^{⊗3}) − σ² Σ_j sym3(x̄ ⊗ e_j ⊗ e_j)``, unbiased for a known σ²; σ² is otherwise
estimated from the sample covariance (registry :data:`SIGMA2_ESTIMATORS`).

Mixtures of independent sources (ICA, fourth order): the whitened fourth cumulant is estimated
by the fourth k-statistic of the projected points ``y = Wᵀ(x − x̄)``. With the central sample
moments ``m2 = mean(y yᵀ)``, ``m4 = mean(y^{⊗4})`` (divided by N),

    K̂4 = N² [(N+1) m4 − (N−1) (m2 ⊗ m2)[3]] / ((N−1)(N−2)(N−3)),

where ``[3]`` sums the three pairings of the four indices. It is unbiased for every fixed ``W``
(Fisher's k4 in every direction ``u``, so the quartic form, hence the symmetric tensor, is
unbiased); with ``Ŵ`` estimated from the same points the whitening error adds to ``E``, as for
the third-order models.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from scipy.sparse.linalg import LinearOperator, eigsh

from ..errors import InputError
from ..tensors import FloatArray
from .models import _whiten, sym_outer_identity

__all__ = [
    "ESTIMATORS",
    "SIGMA2_ESTIMATORS",
    "IcaMoments",
    "MixtureMoments",
    "TopicMoments",
    "whitened_moments",
]


#: Above this dimension the top eigenpairs of M̂2 come from ARPACK on a matrix-free operator.
DENSE_EIG_MAX = 400
#: Default rows per streamed chunk (memory ~ chunk·k² floats).
CHUNK_SIZE = 65536


def _top_eigs(
    matvec: Callable[[FloatArray], FloatArray],
    dense: Callable[[], FloatArray],
    d: int,
    k: int,
) -> tuple[FloatArray, FloatArray]:
    """Top ``k`` (algebraic) eigenpairs of a symmetric ``d × d`` operator, descending."""
    if d <= DENSE_EIG_MAX or k >= d - 1:
        s, U = np.linalg.eigh(dense())
        return s[::-1][:k].copy(), U[:, ::-1][:, :k].copy()
    op = LinearOperator((d, d), matvec=matvec, dtype=np.float64)
    # A fixed start vector keeps ARPACK deterministic (its default start is random).
    s, U = eigsh(op, k=k, which="LA", v0=np.ones(d), tol=0)
    order = np.argsort(s)[::-1]
    return s[order], U[:, order]


def _chunks(N: int, chunk_size: int):
    if isinstance(chunk_size, bool) or int(chunk_size) != chunk_size or chunk_size < 1:
        raise InputError(
            f"chunk_size: expected a positive integer, received {chunk_size!r}",
            "give a positive integer, e.g. chunk_size=10000",
        )
    for start in range(0, N, int(chunk_size)):
        yield start, min(N, start + int(chunk_size))


def _outer3_sum(Y: FloatArray, g: FloatArray | None = None) -> FloatArray:
    """``Σ_n g_n y_n^{⊗3}`` as one BLAS product ``(k², n) @ (n, k)``."""
    n, k = Y.shape
    YY = (Y[:, :, None] * Y[:, None, :]).reshape(n, k * k)
    if g is not None:
        YY *= g[:, None]
    return (YY.T @ Y).reshape(k, k, k)


def _sym3(X: FloatArray) -> FloatArray:
    """``X_abc + X_acb + X_bca``: the three placements of the last (distinct) index."""
    return X + X.transpose(0, 2, 1) + X.transpose(2, 0, 1)


@dataclasses.dataclass(frozen=True)
class TopicMoments:
    """Unbiased moment estimators of the single-topic model from a document-term count matrix.

    Attributes
    ----------
    counts : (N, d) scipy.sparse.csr_array or ndarray, float64
        Word counts; every document has ``L_n = Σ_i c_ni >= 3`` words.
    lengths : (N,) ndarray
        Document lengths ``L_n``.
    """

    counts: Any
    lengths: FloatArray

    kind = "topics"
    #: Order of the whitened tensor (:meth:`whitened_tensor`).
    order = 3

    @classmethod
    def from_data(cls, counts: Any, k: int) -> TopicMoments:
        """Validate a dense or sparse ``(N, d)`` matrix of non-negative integer counts."""
        if sp.issparse(counts):
            C = sp.csr_array(counts, dtype=np.float64)
            values = C.data
        else:
            try:
                C = np.asarray(counts, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise InputError(
                    f"counts: expected a numeric (N, d) matrix ({exc})",
                    "pass a numeric (N, d) count matrix",
                ) from None
            values = C
        if C.ndim != 2 or C.shape[0] < 1 or C.shape[1] < 2:
            raise InputError(
                f"counts: expected a document-term matrix of shape (N, d) with d >= 2, received "
                f"shape {C.shape}",
                "pass an (N, d) document-term count matrix with d >= 2",
            )
        if not np.all(np.isfinite(values)) or np.any(values < 0) or np.any(values % 1 != 0):
            raise InputError(
                "counts: expected non-negative integer word counts", "pass integer word counts >= 0"
            )
        lengths = np.asarray(C.sum(axis=1), dtype=np.float64).ravel()
        short = int(np.count_nonzero(lengths < 3))
        if short:
            raise InputError(
                f"counts: expected every document to have at least 3 words (M3 needs three "
                f"distinct word slots), received {short} shorter document(s)",
                "drop them, e.g. counts[counts.sum(axis=1) >= 3]",
            )
        return cls(C, lengths)

    @property
    def n_samples(self) -> int:
        return int(self.counts.shape[0])

    @property
    def d(self) -> int:
        return int(self.counts.shape[1])

    def _g(self, order: int) -> FloatArray:
        L = self.lengths
        return 1.0 / (L * (L - 1)) if order == 2 else 1.0 / (L * (L - 1) * (L - 2))

    def m1(self) -> FloatArray:
        """Mean word frequency ``mean(c / L)``."""
        return np.asarray(self.counts.T @ (1.0 / self.lengths)).ravel() / self.n_samples

    def m2_dense(self) -> FloatArray:
        """Unbiased ``M̂2`` as a dense ``(d, d)`` array."""
        C, g2 = self.counts, self._g(2)
        if sp.issparse(C):
            G = (C.T @ C.multiply(g2[:, None]).tocsr()).toarray()
        else:
            G = C.T @ (C * g2[:, None])
        G[np.diag_indices_from(G)] -= C.T @ g2
        return G / self.n_samples

    def m2_top(self, k: int) -> tuple[FloatArray, FloatArray]:
        """Top ``k`` eigenpairs ``(s, U)`` of ``M̂2``, descending."""
        C, g2, N = self.counts, self._g(2), self.n_samples
        s2 = C.T @ g2

        def matvec(v: FloatArray) -> FloatArray:
            v = np.ravel(v)
            return (C.T @ (g2 * (C @ v)) - s2 * v) / N

        return _top_eigs(matvec, self.m2_dense, self.d, k)

    def whitened_m3(self, W: ArrayLike, *, chunk_size: int = CHUNK_SIZE) -> FloatArray:
        """``T̂ = M̂3(W, W, W)`` for ``W`` of shape ``(d, m)``, streamed over row chunks.

        The correction terms are sums over words, so they are accumulated as ``d × m``
        and ``d``-vectors across chunks and contracted once at the end.
        """
        W = _check_w(W, self.d)
        C, g3, m = self.counts, self._g(3), W.shape[1]
        yyy = np.zeros((m, m, m))
        Z = np.zeros((self.d, m))
        for a, b in _chunks(self.n_samples, chunk_size):
            Cc, gc = C[a:b], g3[a:b]
            Y = np.asarray(Cc @ W)
            yyy += _outer3_sum(Y, gc)
            Z += Cc.T @ (Y * gc[:, None])
        s3 = C.T @ g3
        WW = (W[:, :, None] * W[:, None, :]).reshape(self.d, m * m)
        X = (WW.T @ Z).reshape(m, m, m)  # Σ_i a_i ⊗ a_i ⊗ z_i with a_i = Wᵀe_i
        diag = ((WW * s3[:, None]).T @ W).reshape(m, m, m)  # Σ_i s3_i a_i^{⊗3}
        return (yyy - _sym3(X) + 2.0 * diag) / self.n_samples

    def whitened_tensor(self, W: ArrayLike, *, chunk_size: int = CHUNK_SIZE) -> FloatArray:
        """The tensor SROA decomposes: ``M̂3(W, W, W)`` (:meth:`whitened_m3`)."""
        return self.whitened_m3(W, chunk_size=chunk_size)

    def m3_dense(self) -> FloatArray:
        """Unbiased ``M̂3`` as a dense ``(d, d, d)`` array (naive baseline; small ``d`` only)."""
        C, g3, d = self.counts, self._g(3), self.d
        Cd = C.toarray() if sp.issparse(C) else C
        M = np.zeros((d, d, d))
        for a, b in _chunks(self.n_samples, max(1, 2**22 // (d * d))):
            M += _outer3_sum(Cd[a:b], g3[a:b])
        Z = Cd.T @ (Cd * g3[:, None])  # Σ_n g_n c_i c_j
        X = np.zeros((d, d, d))
        idx = np.arange(d)
        X[idx, idx, :] = Z  # Σ_i e_i ⊗ e_i ⊗ z_i
        M -= _sym3(X)
        M[idx, idx, idx] += 2.0 * (Cd.T @ g3)
        return M / self.n_samples


def _check_w(W: ArrayLike, d: int) -> FloatArray:
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != d:
        raise InputError(
            f"W: expected a ({d}, m) whitening matrix, received shape {W.shape}",
            "pass the whitening matrix of this estimator's d",
        )
    return W


def _dense_points(X: ArrayLike, what: str, min_n: int) -> FloatArray:
    """``X`` as a finite dense float ``(N, d)`` array with ``N >= min_n`` rows and ``d >= 2``;
    the error names ``what`` the rows are (points, mixtures)."""
    if sp.issparse(X):
        raise InputError(
            f"X: expected a dense (N, d) array of {what}, received a sparse matrix",
            "densify first, e.g. X.toarray()",
        )
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"X: expected a numeric (N, d) array ({exc})", "pass a numeric (N, d) array"
        ) from None
    if X.ndim != 2 or X.shape[0] < min_n or X.shape[1] < 2:
        sizes = "N, d >= 2" if min_n == 2 else f"N >= {min_n}, d >= 2"
        raise InputError(
            f"X: expected {what} of shape (N, d), {sizes}, received {X.shape}",
            f"pass N >= {min_n} {what} of dimension d >= 2 as an (N, d) array",
        )
    if not np.all(np.isfinite(X)):
        raise InputError(
            "X: expected finite coordinates",
            f"drop or fix the {what} with NaN or infinite coordinates",
        )
    return X


# ---------------------------------------------------------------------------------------------
# Spherical Gaussian mixture


def _sigma2_hsu_kakade(cov: Callable[[], FloatArray], *_: Any) -> float:
    """Hsu & Kakade (2013, Theorem 1): σ² is the smallest eigenvalue of ``Cov(x)``; here of the
    unbiased sample covariance (dense ``d × d``; biased low by sampling spread for large d/N)."""
    return float(np.linalg.eigvalsh(cov())[0])


def _sigma2_tail_mean(
    cov: Callable[[], FloatArray],
    cov_matvec: Callable[[FloatArray], FloatArray],
    trace: float,
    d: int,
    k: int,
) -> float:
    """The same identity averaged: ``Cov(x)`` has σ² with multiplicity ``d − k + 1``, so
    ``σ² = (tr Cov − Σ top k−1 eigenvalues) / (d − k + 1)``. Less biased than the minimum and
    matrix-free for large d."""
    top, _ = _top_eigs(cov_matvec, cov, d, k - 1)
    return float((trace - top.sum()) / (d - k + 1))


_SIGMA2: dict[str, Callable[..., float]] = {
    "hsu-kakade": _sigma2_hsu_kakade,
    "tail-mean": _sigma2_tail_mean,
}
#: Read-only registry of σ² estimators for the spherical mixture, by name.
SIGMA2_ESTIMATORS = MappingProxyType(_SIGMA2)


@dataclasses.dataclass(frozen=True)
class MixtureMoments:
    """Unbiased (for the ``sigma2`` used) moment estimators of a spherical Gaussian mixture.

    Attributes
    ----------
    points : (N, d) ndarray
    mean : (d,) ndarray
        Sample mean ``x̄``.
    sigma2 : float
        Variance used in the corrections (given, or estimated).
    """

    points: FloatArray
    mean: FloatArray
    sigma2: float

    kind = "gmm"
    #: Order of the whitened tensor (:meth:`whitened_tensor`).
    order = 3

    @classmethod
    def from_data(
        cls, X: ArrayLike, k: int, *, sigma2: float | str = "hsu-kakade"
    ) -> MixtureMoments:
        """Validate ``(N, d)`` points and fix σ² (a number, or an estimator's name)."""
        X = _dense_points(X, "points", 2)
        N, d = X.shape
        mean = X.mean(axis=0)
        if isinstance(sigma2, str):
            try:
                est = SIGMA2_ESTIMATORS[sigma2]
            except KeyError:
                raise InputError(
                    f"sigma2: unknown estimator {sigma2!r}; expected a variance >= 0 or one of "
                    f"{sorted(SIGMA2_ESTIMATORS)}",
                    "give a variance >= 0 or one of the listed estimators",
                ) from None
            if not 2 <= k <= d:
                raise InputError(f"k: expected 2 <= k <= d = {d}, received {k}", "give 2 <= k <= d")

            def cov() -> FloatArray:
                return _covariance(X, mean)

            def cov_matvec(v: FloatArray) -> FloatArray:
                return _covariance_matvec(X, mean, v)

            trace = float((np.einsum("nd,nd->", X, X) - N * mean @ mean) / (N - 1))
            value = max(est(cov, cov_matvec, trace, d, k), 0.0)
        else:
            value = float(sigma2)
            if not (np.isfinite(value) and value >= 0):
                raise InputError(
                    f"sigma2: expected a variance >= 0, received {sigma2!r}",
                    "give a variance >= 0, or one of the named estimators",
                )
        return cls(X, mean, value)

    @property
    def n_samples(self) -> int:
        return int(self.points.shape[0])

    @property
    def d(self) -> int:
        return int(self.points.shape[1])

    def m1(self) -> FloatArray:
        """Sample mean."""
        return self.mean

    def m2_dense(self) -> FloatArray:
        """``M̂2 = mean(x xᵀ) − σ² I`` as a dense ``(d, d)`` array."""
        G = _gram(self.points, CHUNK_SIZE) / self.n_samples
        G[np.diag_indices_from(G)] -= self.sigma2
        return G

    def _m2_matvec(self, v: FloatArray) -> FloatArray:
        X = self.points
        return X.T @ (X @ v) / self.n_samples - self.sigma2 * v

    def m2_top(self, k: int) -> tuple[FloatArray, FloatArray]:
        """Top ``k`` eigenpairs ``(s, U)`` of ``M̂2``, descending."""
        return _top_eigs(self._m2_matvec, self.m2_dense, self.d, k)

    def whitened_m3(self, W: ArrayLike, *, chunk_size: int = CHUNK_SIZE) -> FloatArray:
        """``T̂ = M̂3(W, W, W) = mean((Wᵀx)^{⊗3}) − σ² sym3(Wᵀx̄ ⊗ WᵀW)``, streamed over rows."""
        W = _check_w(W, self.d)
        m = W.shape[1]
        yyy = np.zeros((m, m, m))
        for a, b in _chunks(self.n_samples, chunk_size):
            yyy += _outer3_sum(self.points[a:b] @ W)
        corr = sym_outer_identity(W.T @ self.mean, W.T @ W)
        return yyy / self.n_samples - self.sigma2 * corr

    def whitened_tensor(self, W: ArrayLike, *, chunk_size: int = CHUNK_SIZE) -> FloatArray:
        """The tensor SROA decomposes: ``M̂3(W, W, W)`` (:meth:`whitened_m3`)."""
        return self.whitened_m3(W, chunk_size=chunk_size)

    def m3_dense(self) -> FloatArray:
        """``M̂3`` as a dense ``(d, d, d)`` array (naive baseline; small ``d`` only)."""
        d = self.d
        M = np.zeros((d, d, d))
        for a, b in _chunks(self.n_samples, max(1, 2**22 // (d * d))):
            M += _outer3_sum(self.points[a:b])
        M /= self.n_samples
        return M - self.sigma2 * sym_outer_identity(self.mean, np.eye(self.d))


def _covariance(X: FloatArray, mean: FloatArray) -> FloatArray:
    """The unbiased sample covariance of the rows of ``X`` (divided by ``N − 1``), dense."""
    N = X.shape[0]
    return (_gram(X, CHUNK_SIZE) - N * np.outer(mean, mean)) / (N - 1)


def _covariance_matvec(X: FloatArray, mean: FloatArray, v: FloatArray) -> FloatArray:
    """:func:`_covariance` times ``v`` without forming it."""
    N = X.shape[0]
    return (X.T @ (X @ v) - N * mean * (mean @ v)) / (N - 1)


def _gram(X: FloatArray, chunk_size: int) -> FloatArray:
    G = np.zeros((X.shape[1], X.shape[1]))
    for a, b in _chunks(X.shape[0], chunk_size):
        G += X[a:b].T @ X[a:b]
    return G


# ---------------------------------------------------------------------------------------------
# Independent component analysis (fourth cumulant)


def _pairings(m2: FloatArray) -> FloatArray:
    """``(m2 ⊗ m2)[3] = m2_ab m2_ce + m2_ac m2_be + m2_ae m2_bc``."""
    return (
        np.einsum("ab,ce->abce", m2, m2)
        + np.einsum("ac,be->abce", m2, m2)
        + np.einsum("ae,bc->abce", m2, m2)
    )


def k_statistic4(m2: FloatArray, m4: FloatArray, N: int) -> FloatArray:
    """The fourth k-statistic from central sample moments ``m2``, ``m4`` (divided by ``N``):
    the unbiased estimator of the fourth cumulant tensor (module docstring)."""
    return N * N * ((N + 1) * m4 - (N - 1) * _pairings(m2)) / ((N - 1) * (N - 2) * (N - 3))


@dataclasses.dataclass(frozen=True)
class IcaMoments:
    """The unbiased fourth-cumulant estimator of a mixture of independent sources.

    Attributes
    ----------
    points : (N, d) ndarray
        Observed mixtures, ``N >= 4``.
    mean : (d,) ndarray
        Sample mean ``x̄`` (every moment is taken about it).
    """

    points: FloatArray
    mean: FloatArray

    kind = "ica"
    #: Order of the whitened tensor (:meth:`whitened_tensor`).
    order = 4

    @classmethod
    def from_data(cls, X: ArrayLike, k: int) -> IcaMoments:
        """Validate ``(N, d)`` points with ``N >= 4`` (the k-statistic divides by ``N − 3``)."""
        X = _dense_points(X, "mixtures", 4)
        return cls(X, X.mean(axis=0))

    @property
    def n_samples(self) -> int:
        return int(self.points.shape[0])

    @property
    def d(self) -> int:
        return int(self.points.shape[1])

    def m1(self) -> FloatArray:
        """Sample mean."""
        return self.mean

    def m2_dense(self) -> FloatArray:
        """The unbiased sample covariance (divided by ``N − 1``), dense ``(d, d)``."""
        return _covariance(self.points, self.mean)

    def _m2_matvec(self, v: FloatArray) -> FloatArray:
        return _covariance_matvec(self.points, self.mean, v)

    def m2_top(self, k: int) -> tuple[FloatArray, FloatArray]:
        """Top ``k`` eigenpairs ``(s, U)`` of the sample covariance, descending."""
        return _top_eigs(self._m2_matvec, self.m2_dense, self.d, k)

    def whitened_tensor(self, W: ArrayLike, *, chunk_size: int = CHUNK_SIZE) -> FloatArray:
        """``K̂4(W, W, W, W)``: the k-statistic of ``y = Wᵀ(x − x̄)``, streamed over row
        chunks as ``(m², n) @ (n, m²)`` products (``O(N m⁴)`` time, ``O(chunk·m² + m⁴)``
        memory)."""
        W = _check_w(W, self.d)
        m, N = W.shape[1], self.n_samples
        s4 = np.zeros((m * m, m * m))
        s2 = np.zeros((m, m))
        shift = self.mean @ W
        for a, b in _chunks(N, chunk_size):
            Y = self.points[a:b] @ W - shift
            YY = (Y[:, :, None] * Y[:, None, :]).reshape(b - a, m * m)
            s4 += YY.T @ YY
            s2 += Y.T @ Y
        return k_statistic4(s2 / N, s4.reshape(m, m, m, m) / N, N)

    def cumulant4_dense(self) -> FloatArray:
        """``K̂4`` as a dense ``(d, d, d, d)`` array (naive baseline; small ``d`` only)."""
        return self.whitened_tensor(np.eye(self.d))


_ESTIMATORS: dict[str, Callable[..., Any]] = {
    "topics": TopicMoments.from_data,
    "gmm": MixtureMoments.from_data,
    "ica": IcaMoments.from_data,
}
#: Read-only registry: model kind -> constructor of its moment estimator ``(data, k, **options)``.
ESTIMATORS = MappingProxyType(_ESTIMATORS)


@dataclasses.dataclass(frozen=True)
class WhitenedMoments:
    """``T̂ = M̂3(Ŵ, Ŵ, Ŵ)`` (``K̂4(Ŵ, Ŵ, Ŵ, Ŵ)`` for ICA) with the whitening ``Ŵ`` it used
    (``(d, k)``, ``Ŵᵀ M̂2 Ŵ = I``), the top eigenvalues of M̂2, and the estimator (which still
    holds the data)."""

    tensor: FloatArray
    whitening: FloatArray
    m2_eigenvalues: FloatArray
    estimator: Any


def whitened_moments(
    kind: str, data: Any, k: int, *, chunk_size: int = CHUNK_SIZE, **options: Any
) -> WhitenedMoments:
    """Estimate the whitening from M̂2 and the whitened tensor ``T̂`` from samples.

    Parameters
    ----------
    kind : {"topics", "gmm", "ica"}
        Model whose unbiased estimators to use (:data:`ESTIMATORS`): the third moment for
        topics and the mixture, the fourth cumulant for ICA.
    data
        Counts ``(N, d)`` (dense or sparse) for ``"topics"``; points ``(N, d)`` for ``"gmm"``
        and ``"ica"``.
    k : int
        Number of latent classes (whitened dimension).
    chunk_size : int
        Rows per streamed chunk.
    **options
        Estimator options (``sigma2`` for ``"gmm"``: a variance or an estimator name).
    """
    try:
        make = ESTIMATORS[kind]
    except (KeyError, TypeError):
        raise InputError(
            f"kind: unknown model {kind!r}; expected one of {sorted(ESTIMATORS)}",
            "use one of the listed models",
        ) from None
    if isinstance(k, bool) or int(k) != k or k < 2:
        raise InputError(f"k: expected an integer >= 2, received {k!r}", "give an integer k >= 2")
    valid = [
        name
        for name, prm in inspect.signature(make).parameters.items()
        if prm.kind is inspect.Parameter.KEYWORD_ONLY or prm.default is not inspect.Parameter.empty
    ]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise InputError(
            f"options: the {kind!r} estimator does not accept {unknown}; valid options: {valid}",
            "pass only the valid options",
        )
    est = make(data, int(k), **options)
    if k > est.d:
        raise InputError(f"k: expected k <= d = {est.d}, received {k}", "give k <= d")
    s, U = est.m2_top(int(k))
    W = _whiten(s, U)
    T = est.whitened_tensor(W, chunk_size=chunk_size)
    return WhitenedMoments(T, W, s, est)
