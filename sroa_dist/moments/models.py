"""Latent variable models whose whitened moment tensor is orthogonally decomposable.

Third order (topics, spherical Gaussian mixture): both models share the moment structure of
Anandkumar, Ge, Hsu, Kakade & Telgarsky (JMLR 2014, Theorems 3.1 and 3.2): with weights ``w``
and components ``μ_i`` (columns of a ``(d, k)`` matrix),

    M2 = Σ_i w_i μ_i μ_iᵀ,    M3 = Σ_i w_i μ_i^{⊗3}.

Whitening with any ``W`` such that ``Wᵀ M2 W = I`` makes ``M3(W, W, W) = Σ_i λ_i v_i^{⊗3}``
with ``λ_i = w_i^{-1/2}`` and orthonormal ``v_i = √w_i Wᵀ μ_i``: the paper's SOD tensor.
What differs between models is the sampler and how M2, M3 are estimated from samples
(see :mod:`sroa_dist.moments.estimators`).

Fourth order (independent component analysis, :class:`IndependentComponents`): ``x = A s`` with
independent zero-mean, unit-variance sources of excess kurtosis ``κ_i``. Then ``M2 = A Aᵀ`` and
the fourth cumulant is ``K4 = Σ_i κ_i a_i^{⊗4}``; whitening gives ``K4(W, W, W, W) = Σ_i κ_i
v_i^{⊗4}`` with orthonormal ``v_i = Wᵀ a_i``: the paper's even-order SOD tensor (Section 3.3),
whose weights keep the kurtosis sign (sub-Gaussian sources give ``λ_i < 0``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from ..errors import InputError
from ..tensors import FloatArray

__all__ = [
    "ICA_SOURCES",
    "MODELS",
    "IndependentComponents",
    "Sample",
    "SingleTopicModel",
    "SphericalGaussianMixture",
    "make_model",
    "whitening_from_m2",
]

RngLike = np.random.Generator | int | np.random.SeedSequence | None

#: Relative tolerance for "sums to one" and "non-negative" checks on given parameters.
PARAM_RTOL = 1e-9


@dataclasses.dataclass(frozen=True)
class Sample:
    """``N`` draws from a model: ``data`` (counts ``(N, d)`` as ``scipy.sparse.csr_array``
    for topics, points ``(N, d)`` for the mixture and for ICA) and the latent variables:
    ``labels`` ``(N,)`` (the class of each draw; ``None`` for ICA, which has no classes) and,
    for ICA, the ``sources`` ``(N, k)``."""

    data: Any
    labels: NDArray[np.int64] | None
    sources: FloatArray | None = None


def _check_weights(weights: ArrayLike | None, k: int) -> FloatArray:
    if weights is None:
        return np.full(k, 1.0 / k)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (k,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise InputError(
            f"weights: expected {k} positive finite mixing weights, "
            f"received {np.asarray(weights)!r}",
            "give k positive finite weights",
        )
    if abs(w.sum() - 1.0) > PARAM_RTOL * k:
        raise InputError(
            f"weights: expected weights summing to 1, received sum {w.sum()!r}",
            "divide them by their sum",
        )
    return w


def _check_components(M: ArrayLike, name: str) -> FloatArray:
    arr = np.asarray(M, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] < 2 or arr.shape[0] < arr.shape[1]:
        raise InputError(
            f"{name}: expected a (d, k) matrix with 2 <= k <= d (one component per column), "
            f"received shape {arr.shape}",
            "pass a (d, k) matrix with one component per column",
        )
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name}: expected finite entries", "replace the non-finite entries")
    if np.linalg.matrix_rank(arr) < arr.shape[1]:
        raise InputError(
            f"{name}: the {arr.shape[1]} components must be linearly independent (M2 of rank "
            "k), received a rank-deficient matrix",
            "use linearly independent components",
        )
    return arr


def whitening_from_m2(M2: ArrayLike, k: int) -> FloatArray:
    """``W = U_k diag(s_k)^{-1/2}`` from the top ``k`` eigenpairs of a symmetric ``M2``.

    Eigenvector signs are fixed (largest-magnitude entry positive) so that the result does not
    depend on the eigensolver. Raises when one of the top ``k`` eigenvalues is not positive.
    """
    M2 = np.asarray(M2, dtype=np.float64)
    s, U = np.linalg.eigh(M2)
    s, U = s[::-1][:k], U[:, ::-1][:, :k]
    return _whiten(s, U)


def _whiten(s: FloatArray, U: FloatArray) -> FloatArray:
    if np.any(s <= 0):
        raise InputError(
            f"M2: expected {len(s)} positive top eigenvalues to whiten with, received "
            f"{np.array2string(s, precision=3)}",
            "use more samples or a smaller k",
        )
    idx = np.argmax(np.abs(U), axis=0)
    U = U * np.sign(U[idx, np.arange(U.shape[1])])
    return U / np.sqrt(s)


@dataclasses.dataclass(frozen=True)
class _MomentModel:
    """Shared population-moment algebra of the third-order models."""

    weights: FloatArray
    components: FloatArray

    #: Order of the whitened tensor SROA decomposes.
    order = 3

    @property
    def k(self) -> int:
        """Number of latent classes."""
        return int(self.components.shape[1])

    @property
    def d(self) -> int:
        """Observation dimension (vocabulary size or ambient dimension)."""
        return int(self.components.shape[0])

    def m1(self) -> FloatArray:
        """``M1 = Σ_i w_i μ_i``, shape ``(d,)``."""
        return self.components @ self.weights

    def m2(self) -> FloatArray:
        """``M2 = Σ_i w_i μ_i μ_iᵀ``, shape ``(d, d)``."""
        return (self.components * self.weights) @ self.components.T

    def m3(self) -> FloatArray:
        """``M3 = Σ_i w_i μ_i^{⊗3}``, shape ``(d, d, d)`` (small ``d`` only: tests, baselines)."""
        M = self.components
        return np.einsum("i,ai,bi,ci->abc", self.weights, M, M, M)

    def whitening(self) -> FloatArray:
        """Population whitening ``W`` (``(d, k)``, ``Wᵀ M2 W = I``) from the top-k eigenpairs.

        M2 has rank k, so its eigenpairs come from a k × k problem: with ``M = QR``,
        ``M2 = Q (R diag(w) Rᵀ) Qᵀ`` (``O(d k²)`` instead of the ``O(d³)`` of a dense ``d × d``
        eigensolve, which dominated whole studies at large d).
        """
        Q, R = np.linalg.qr(self.components)
        s, U = np.linalg.eigh((R * self.weights) @ R.T)
        return _whiten(s[::-1], Q @ U[:, ::-1])

    def whitened_m3(self, W: ArrayLike) -> FloatArray:
        """``M3(W, W, W) = Σ_i w_i (Wᵀμ_i)^{⊗3}``, shape ``(m, m, m)`` for ``W`` of shape
        ``(d, m)``, computed without forming M3."""
        A = np.asarray(W, dtype=np.float64).T @ self.components
        return np.einsum("i,ai,bi,ci->abc", self.weights, A, A, A)

    def whitened_tensor(self, W: ArrayLike) -> FloatArray:
        """The population tensor SROA decomposes, seen through ``W``: here ``M3(W, W, W)``."""
        return self.whitened_m3(W)

    def sod(self, W: ArrayLike | None = None) -> tuple[FloatArray, FloatArray]:
        """The SOD components ``(λ, V)`` of ``M3(W', W', W')`` with ``λ_i = w_i^{-1/2}``.

        ``W'`` is ``W`` corrected to whiten M2 exactly, ``W' = W (Wᵀ M2 W)^{-1/2}`` (so the
        reference for an estimated whitening ``Ŵ`` is the true model seen in Ŵ's coordinates);
        ``W`` defaults to the population whitening. ``V`` is ``(k, k)`` with orthonormal columns
        ``v_i = √w_i W'ᵀ μ_i``.
        """
        W = self.whitening() if W is None else np.asarray(W, dtype=np.float64)
        A = W.T @ self.components
        G = (A * self.weights) @ A.T  # Wᵀ M2 W
        s, U = np.linalg.eigh(G)
        if np.any(s <= 0):
            raise InputError(
                "W: Wᵀ M2 W is singular; W does not see every component",
                "estimate W from this model's M2 (or more samples)",
            )
        A = (U / np.sqrt(s)) @ U.T @ A
        return 1.0 / np.sqrt(self.weights), A * np.sqrt(self.weights)


@dataclasses.dataclass(frozen=True)
class SingleTopicModel(_MomentModel):
    """Single-topic model (exchangeable bag of words, AGHKT Section 3.1).

    Each document draws one topic ``h ~ w``, then ``L`` words i.i.d. from the topic's word
    distribution ``μ_h`` (a column of ``components``, on the simplex). Then
    ``E[x_1 ⊗ x_2] = M2`` and ``E[x_1 ⊗ x_2 ⊗ x_3] = M3`` for three distinct word slots.

    Attributes
    ----------
    weights : (k,) ndarray
        Topic probabilities.
    components : (d, k) ndarray
        Topic-word distributions as columns.
    doc_length : int
        Words per document ``L >= 3``.
    """

    doc_length: int = 3

    kind = "topics"

    def __post_init__(self) -> None:
        object.__setattr__(self, "components", _check_components(self.components, "topics"))
        object.__setattr__(self, "weights", _check_weights(self.weights, self.k))
        if np.any(self.components < -PARAM_RTOL) or np.any(
            np.abs(self.components.sum(axis=0) - 1.0) > PARAM_RTOL * self.d
        ):
            raise InputError(
                "topics: expected each column to be a word distribution (non-negative, summing "
                "to 1)",
                "normalise each column: non-negative entries summing to 1",
            )
        if isinstance(self.doc_length, bool) or int(self.doc_length) != self.doc_length:
            raise InputError(
                f"doc_length: expected an integer >= 3, received {self.doc_length!r}",
                "give an integer doc_length >= 3",
            )
        if self.doc_length < 3:
            raise InputError(
                f"doc_length: expected L >= 3 (three distinct words estimate M3), received "
                f"{self.doc_length}",
                "give doc_length >= 3",
            )

    @classmethod
    def from_prior(
        cls,
        k: int,
        d: int,
        doc_length: int = 3,
        *,
        weights: ArrayLike | None = None,
        concentration: float = 0.1,
        rng: RngLike = None,
    ) -> SingleTopicModel:
        """Topics drawn i.i.d. from a symmetric ``Dirichlet(concentration · 1_d)``.

        Small concentrations give sparse, well-separated topics; ``weights`` default to uniform.
        """
        _check_kd(k, d)
        if not (np.isfinite(concentration) and concentration > 0):
            raise InputError(
                f"concentration: expected a positive number, received {concentration}",
                "give a positive concentration, e.g. 1.0",
            )
        gen = np.random.default_rng(rng)
        topics = gen.dirichlet(np.full(d, float(concentration)), size=k).T
        return cls(_check_weights(weights, k), topics, int(doc_length))

    @classmethod
    def given(
        cls, topics: ArrayLike, weights: ArrayLike | None = None, doc_length: int = 3
    ) -> SingleTopicModel:
        """A model with explicit topic-word distributions ``(d, k)``."""
        topics = _check_components(topics, "topics")
        return cls(_check_weights(weights, topics.shape[1]), topics, int(doc_length))

    def sample(self, n_samples: int, *, rng: RngLike = None) -> Sample:
        """``n_samples`` documents as a sparse ``(N, d)`` count matrix (rows sum to ``L``)."""
        N = _check_n(n_samples)
        gen = np.random.default_rng(rng)
        labels = gen.choice(self.k, size=N, p=self.weights)
        L = int(self.doc_length)
        words = np.empty((N, L), dtype=np.int64)
        # Topic by topic: O(N·L) draws, never an (N, d) probability matrix.
        for i in range(self.k):
            rows = np.flatnonzero(labels == i)
            words[rows] = gen.choice(self.d, size=(len(rows), L), p=self.components[:, i])
        counts = sp.csr_array(
            (np.ones(N * L, dtype=np.int64), (np.repeat(np.arange(N), L), words.ravel())),
            shape=(N, self.d),
        )
        counts.sum_duplicates()
        return Sample(counts, labels)


@dataclasses.dataclass(frozen=True)
class SphericalGaussianMixture(_MomentModel):
    """Mixture of spherical Gaussians with a common variance (Hsu & Kakade 2013).

    ``x = μ_h + z`` with ``h ~ w`` and ``z ~ N(0, σ² I_d)``. The raw moments carry σ² terms:
    ``E[x xᵀ] = M2 + σ² I`` and ``E[x^{⊗3}] = M3 + σ² Σ_j sym(M1 ⊗ e_j ⊗ e_j)``; σ² is the
    smallest eigenvalue of ``Cov(x)`` when ``k <= d`` (Hsu & Kakade, Theorem 1).

    Attributes
    ----------
    weights : (k,) ndarray
    components : (d, k) ndarray
        Means as columns (linearly independent).
    sigma2 : float
        Common variance σ².
    """

    sigma2: float = 1.0

    kind = "gmm"

    def __post_init__(self) -> None:
        object.__setattr__(self, "components", _check_components(self.components, "means"))
        object.__setattr__(self, "weights", _check_weights(self.weights, self.k))
        if not (np.isfinite(self.sigma2) and self.sigma2 >= 0):
            raise InputError(
                f"sigma2: expected a finite variance >= 0, received {self.sigma2!r}",
                "give a finite variance >= 0",
            )

    @classmethod
    def from_prior(
        cls,
        k: int,
        d: int,
        sigma2: float = 1.0,
        *,
        weights: ArrayLike | None = None,
        mean_scale: float = 1.0,
        rng: RngLike = None,
    ) -> SphericalGaussianMixture:
        """Means drawn i.i.d. from ``N(0, mean_scale² I_d)`` (pairwise distances about
        ``√(2d)·mean_scale``)."""
        _check_kd(k, d)
        if not (np.isfinite(mean_scale) and mean_scale > 0):
            raise InputError(
                f"mean_scale: expected a positive number, received {mean_scale}",
                "give a positive mean_scale",
            )
        gen = np.random.default_rng(rng)
        means = float(mean_scale) * gen.standard_normal((d, k))
        return cls(_check_weights(weights, k), means, float(sigma2))

    @classmethod
    def given(
        cls, means: ArrayLike, weights: ArrayLike | None = None, sigma2: float = 1.0
    ) -> SphericalGaussianMixture:
        """A mixture with explicit means ``(d, k)``."""
        means = _check_components(means, "means")
        return cls(_check_weights(weights, means.shape[1]), means, float(sigma2))

    def raw_m2(self) -> FloatArray:
        """``E[x xᵀ] = M2 + σ² I``."""
        return self.m2() + self.sigma2 * np.eye(self.d)

    def raw_m3(self) -> FloatArray:
        """``E[x^{⊗3}]`` (small ``d`` only)."""
        return self.m3() + self.sigma2 * sym_outer_identity(self.m1(), np.eye(self.d))

    def sample(self, n_samples: int, *, rng: RngLike = None) -> Sample:
        """``n_samples`` points as a dense ``(N, d)`` array."""
        N = _check_n(n_samples)
        gen = np.random.default_rng(rng)
        labels = gen.choice(self.k, size=N, p=self.weights)
        X = self.components.T[labels] + np.sqrt(self.sigma2) * gen.standard_normal((N, self.d))
        return Sample(X, labels)


def _laplace(gen: np.random.Generator, size: int) -> FloatArray:
    return gen.laplace(0.0, 1.0 / np.sqrt(2.0), size)


def _uniform(gen: np.random.Generator, size: int) -> FloatArray:
    return gen.uniform(-np.sqrt(3.0), np.sqrt(3.0), size)


def _rademacher(gen: np.random.Generator, size: int) -> FloatArray:
    return 2.0 * gen.integers(0, 2, size).astype(np.float64) - 1.0


#: Source laws of ICA, each with zero mean and unit variance: name -> (excess kurtosis, sampler).
#: Laplace is super-Gaussian (κ = 3); uniform (κ = −6/5) and Rademacher (±1, κ = −2, the most
#: sub-Gaussian law there is) are sub-Gaussian.
ICA_SOURCES: MappingProxyType[str, tuple[float, Callable[..., FloatArray]]] = MappingProxyType(
    {
        "laplace": (3.0, _laplace),
        "uniform": (-1.2, _uniform),
        "rademacher": (-2.0, _rademacher),
    }
)
#: ``sources="mixed"`` cycles through these laws, so a model has both kurtosis signs.
_MIXED = ("laplace", "uniform", "rademacher")


@dataclasses.dataclass(frozen=True)
class IndependentComponents(_MomentModel):
    """Independent component analysis: ``x = A s`` with independent non-Gaussian sources.

    Each source ``s_i`` has zero mean, unit variance and excess kurtosis ``κ_i ≠ 0`` (its law is
    one of :data:`ICA_SOURCES`). The whitened fourth cumulant is ``Σ_i κ_i v_i^{⊗4}`` with
    orthonormal ``v_i``: an even-order SOD tensor whose weights keep their sign. The mixing
    columns ``a_i`` come back up to sign (``s_i`` and ``−s_i`` give the same data law).

    Attributes
    ----------
    weights : (k,) ndarray
        The sources' excess kurtoses ``κ_i``: the (signed) SOD weights ``λ_i``.
    components : (d, k) ndarray
        The mixing matrix ``A`` (linearly independent columns ``a_i``).
    sources : tuple of str
        The law of each source (keys of :data:`ICA_SOURCES`).
    """

    sources: tuple[str, ...] = ()

    kind = "ica"
    order = 4

    def __post_init__(self) -> None:
        object.__setattr__(self, "components", _check_components(self.components, "mixing"))
        sources = tuple(self.sources)
        unknown = sorted(set(sources) - set(ICA_SOURCES))
        if len(sources) != self.k or unknown:
            raise InputError(
                f"sources: expected {self.k} source laws from {sorted(ICA_SOURCES)}, received "
                f"{list(sources)!r}",
                "name one law per column of the mixing matrix",
            )
        object.__setattr__(self, "sources", sources)
        object.__setattr__(
            self, "weights", np.array([ICA_SOURCES[s][0] for s in sources], dtype=np.float64)
        )

    @classmethod
    def from_prior(
        cls,
        k: int,
        d: int,
        *,
        sources: str = "mixed",
        weights: ArrayLike | None = None,
        mixing_scale: float = 1.0,
        rng: RngLike = None,
    ) -> IndependentComponents:
        """A mixing matrix with i.i.d. ``N(0, mixing_scale²)`` entries and ``k`` sources.

        ``sources`` is one law of :data:`ICA_SOURCES` for every source, or ``"mixed"`` (the
        laws in turn: Laplace, uniform, Rademacher). ``weights`` is accepted only when uniform
        (a sweep passes its weight axis to every model): ICA has no class weights.
        """
        _check_kd(k, d)
        if weights is not None:
            w = np.asarray(weights, dtype=np.float64)
            if w.shape != (k,) or np.ptp(w) > PARAM_RTOL * np.max(np.abs(w)):
                raise InputError(
                    f"weights: ICA has no class weights; expected none or uniform ones, received "
                    f"{np.array2string(w, precision=3)}",
                    "drop the weights (the sources' kurtoses set the SOD weights)",
                )
        if not (np.isfinite(mixing_scale) and mixing_scale > 0):
            raise InputError(
                f"mixing_scale: expected a positive number, received {mixing_scale}",
                "give a positive mixing_scale",
            )
        if sources == "mixed":
            laws = tuple(_MIXED[i % len(_MIXED)] for i in range(int(k)))
        elif sources in ICA_SOURCES:
            laws = (str(sources),) * int(k)
        else:
            raise InputError(
                f"sources: expected 'mixed' or one of {sorted(ICA_SOURCES)}, received {sources!r}",
                "use one of the listed source laws",
            )
        gen = np.random.default_rng(rng)
        mixing = float(mixing_scale) * gen.standard_normal((d, k))
        return cls(np.zeros(k), mixing, laws)

    @classmethod
    def given(
        cls, mixing: ArrayLike, sources: tuple[str, ...] | list[str]
    ) -> IndependentComponents:
        """A model with an explicit mixing matrix ``(d, k)`` and one law per source."""
        mixing = _check_components(mixing, "mixing")
        return cls(np.zeros(mixing.shape[1]), mixing, tuple(sources))

    def m1(self) -> FloatArray:
        """``E[x] = 0``."""
        return np.zeros(self.d)

    def m2(self) -> FloatArray:
        """``Cov(x) = A Aᵀ``, shape ``(d, d)``."""
        return self.components @ self.components.T

    def m3(self) -> FloatArray:
        """Refused: ICA's information is in the fourth cumulant (:meth:`cumulant4`)."""
        raise InputError(
            "m3: ICA is a fourth-order model (symmetric sources have no third cumulant)",
            "use cumulant4() or whitened_tensor(W)",
        )

    def whitened_m3(self, W: ArrayLike) -> FloatArray:
        """Refused, as :meth:`m3`."""
        return self.m3()

    def cumulant4(self) -> FloatArray:
        """``K4 = Σ_i κ_i a_i^{⊗4}``, shape ``(d, d, d, d)`` (small ``d`` only: tests)."""
        A = self.components
        return np.einsum("i,ai,bi,ci,ei->abce", self.weights, A, A, A, A)

    def whitened_tensor(self, W: ArrayLike) -> FloatArray:
        """``K4(W, W, W, W) = Σ_i κ_i (Wᵀa_i)^{⊗4}``, shape ``(m,) * 4`` for ``W`` ``(d, m)``."""
        A = np.asarray(W, dtype=np.float64).T @ self.components
        return np.einsum("i,ai,bi,ci,ei->abce", self.weights, A, A, A, A)

    def whitening(self) -> FloatArray:
        """Population whitening ``W`` (``(d, k)``, ``Wᵀ A Aᵀ W = I``), from a k × k problem."""
        Q, R = np.linalg.qr(self.components)
        s, U = np.linalg.eigh(R @ R.T)
        return _whiten(s[::-1], Q @ U[:, ::-1])

    def sod(self, W: ArrayLike | None = None) -> tuple[FloatArray, FloatArray]:
        """The SOD components ``(κ, V)`` of the whitened cumulant, ``v_i = W'ᵀ a_i``.

        ``W'`` is ``W`` corrected to whiten ``A Aᵀ`` exactly (as for the third-order models),
        so the reference for an estimated whitening is the true model in its coordinates.
        """
        W = self.whitening() if W is None else np.asarray(W, dtype=np.float64)
        A = W.T @ self.components
        s, U = np.linalg.eigh(A @ A.T)
        if np.any(s <= 0):
            raise InputError(
                "W: Wᵀ M2 W is singular; W does not see every source",
                "estimate W from this model's covariance (or more samples)",
            )
        return self.weights.copy(), (U / np.sqrt(s)) @ U.T @ A

    def sample(self, n_samples: int, *, rng: RngLike = None) -> Sample:
        """``n_samples`` mixtures ``x = A s`` as a dense ``(N, d)`` array, with the sources."""
        N = _check_n(n_samples)
        gen = np.random.default_rng(rng)
        S = np.empty((N, self.k))
        for i, law in enumerate(self.sources):
            S[:, i] = ICA_SOURCES[law][1](gen, N)
        return Sample(S @ self.components.T, None, S)


def sym_outer_identity(a: FloatArray, G: FloatArray) -> FloatArray:
    """``a_i G_jk + a_j G_ik + a_k G_ij``: the σ² correction of the third moment in the
    coordinates where the identity reads ``G`` (``G = WᵀW`` after whitening)."""
    return (
        a[:, None, None] * G[None, :, :]
        + a[None, :, None] * G[:, None, :]
        + a[None, None, :] * G[:, :, None]
    )


def _check_kd(k: int, d: int) -> None:
    for name, v in (("k", k), ("d", d)):
        if isinstance(v, bool) or int(v) != v:
            raise InputError(f"{name}: expected an integer, received {v!r}", "give an integer")
    if not 2 <= int(k) <= int(d):
        raise InputError(
            f"k, d: expected 2 <= k <= d, received k = {k}, d = {d}", "give 2 <= k <= d"
        )


def _check_n(n: int) -> int:
    if isinstance(n, bool) or int(n) != n or int(n) < 1:
        raise InputError(
            f"n_samples: expected a positive integer, received {n!r}",
            "give a positive integer number of samples",
        )
    return int(n)


_MODELS: dict[str, Callable[..., _MomentModel]] = {
    "topics": SingleTopicModel.from_prior,
    "gmm": SphericalGaussianMixture.from_prior,
    "ica": IndependentComponents.from_prior,
}
#: Read-only registry: model name -> constructor drawing parameters from a seeded prior.
MODELS = MappingProxyType(_MODELS)


def make_model(name: str, k: int, d: int, *, rng: RngLike = None, **params: Any) -> _MomentModel:
    """A model from the registry with parameters drawn from its seeded prior.

    Parameters
    ----------
    name : {"topics", "gmm", "ica"}
        ``"topics"``: :meth:`SingleTopicModel.from_prior` (params ``doc_length``, ``weights``,
        ``concentration``); ``"gmm"``: :meth:`SphericalGaussianMixture.from_prior` (params
        ``sigma2``, ``weights``, ``mean_scale``); ``"ica"``:
        :meth:`IndependentComponents.from_prior` (params ``sources``, ``mixing_scale``).
    k, d : int
        Latent classes and observation dimension, ``2 <= k <= d``.
    rng : Generator, int or SeedSequence
        Source of the prior draw.
    """
    try:
        ctor = MODELS[name]
    except (KeyError, TypeError):
        raise InputError(
            f"model: unknown model {name!r}; expected one of {sorted(MODELS)}",
            "use one of the listed models",
        ) from None
    try:
        return ctor(k, d, rng=rng, **params)
    except TypeError as exc:
        raise InputError(
            f"model {name!r}: bad parameters {sorted(params)} ({exc})",
            "pass the model's own parameters (see its docstring)",
        ) from None
