"""Method-of-moments fits: whiten, decompose ``T̂`` with SROA, map components back.

With ``T̂ ≈ Σ_i λ_i v_i^{⊗3}`` in the whitened space (``λ_i = w_i^{-1/2}``,
``v_i = √w_i Wᵀ μ_i``), AGHKT (JMLR 2014, Section 4.3) recover ``w_i = 1/λ_i²`` and
``μ_i = λ_i (Wᵀ)⁺ v_i``. For ICA (``T̂ ≈ Σ_i κ_i v_i^{⊗4}``, ``v_i = Wᵀ a_i``) the kurtoses are
the signed ``λ_i`` and the mixing columns ``a_i = (Wᵀ)⁺ v_i``, up to sign.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..decomposition import SROAResult, sroa
from ..methods import RngLike
from ..tensors import FloatArray, symmetrize
from .estimators import CHUNK_SIZE, WhitenedMoments, whitened_moments

__all__ = [
    "MomentFit",
    "fit_gmm",
    "fit_ica",
    "fit_moments",
    "fit_topics",
    "fit_whitened",
    "project_simplex",
    "recover",
]


@dataclasses.dataclass(frozen=True)
class MomentFit:
    """Parameters recovered by the method of moments, with SROA's per-step certificates.

    Attributes
    ----------
    kind : {"topics", "gmm", "ica"}
    weights : (k,) ndarray
        ``w_i = 1/λ_i²`` (not renormalised; their sum is a diagnostic that should be near 1);
        for ICA the sources' excess kurtoses ``κ_i = λ_i`` (signed).
    components : (d, k) ndarray
        Topic-word distributions (projected onto the simplex), mixture means, or ICA's mixing
        columns (each with its largest-magnitude entry positive), as columns.
    sigma2 : float
        Variance used by the mixture's corrections (``nan`` for topics and ICA).
    lambdas, vectors : (k,), (k, k) ndarray
        SROA's components of ``T̂``, with ``λ > 0`` for the third-order models and the sign of
        the kurtosis for ICA (vectors as columns, whitened space).
    certified, upper_bounds, gaps : (k,) ndarray
        Per SROA step: proven global optimum, valid upper bound of the step's objective, and
        ``upper_bound − |λ|``.
    whitening : (d, k) ndarray
        ``Ŵ`` with ``Ŵᵀ M̂2 Ŵ = I``.
    tensor : (k, k, k) or (k, k, k, k) ndarray
        ``T̂ = M̂3(Ŵ, Ŵ, Ŵ)`` (ICA: ``K̂4(Ŵ, Ŵ, Ŵ, Ŵ)``), symmetrised.
    m2_eigenvalues : (k,) ndarray
        Top eigenvalues of ``M̂2`` (a small last one means a hard, ill-conditioned instance).
    method : str
        Rank-one method of every SROA step.
    n_samples : int
    sroa : SROAResult
        The full decomposition result.
    """

    kind: str
    weights: FloatArray
    components: FloatArray
    sigma2: float
    lambdas: FloatArray
    vectors: FloatArray
    certified: NDArray[np.bool_]
    upper_bounds: FloatArray
    gaps: FloatArray
    whitening: FloatArray
    tensor: FloatArray
    m2_eigenvalues: FloatArray
    method: str
    n_samples: int
    sroa: SROAResult

    @property
    def k(self) -> int:
        return int(self.weights.shape[0])

    @property
    def all_certified(self) -> bool:
        """Whether every SROA step was solved to proven global optimality."""
        return bool(np.all(self.certified))


def project_simplex(V: ArrayLike) -> FloatArray:
    """Euclidean projection of each column onto the probability simplex (Duchi et al. 2008)."""
    V = np.asarray(V, dtype=np.float64)
    d = V.shape[0]
    U = -np.sort(-V, axis=0)
    css = np.cumsum(U, axis=0) - 1.0
    ind = np.arange(1, d + 1)[:, None]
    rho = np.count_nonzero(U - css / ind > 0, axis=0)
    theta = css[rho - 1, np.arange(V.shape[1])] / rho
    return np.maximum(V - theta, 0.0)


#: How each model's recovered components are brought back into its parameter space.
_CONSTRAIN = {"topics": project_simplex, "gmm": lambda M: M}


def recover(
    lambdas: ArrayLike, vectors: ArrayLike, W: ArrayLike, kind: str
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Model parameters from whitened components: ``w_i = 1/λ_i²``, ``μ_i = λ_i (Wᵀ)⁺ v_i``.

    Each ``(λ_i, v_i)`` is first written with ``λ_i > 0`` (``λ v^{⊗3} = (−λ)(−v)^{⊗3}``); topics
    are then projected onto the simplex. Returns ``(weights, components, lambdas, vectors)``
    with the sign-fixed ``lambdas`` and ``vectors``. For ``kind="ica"`` the weights are the
    signed kurtoses ``λ_i`` and the components the mixing columns ``(Wᵀ)⁺ v_i``, each ``v_i``
    signed so that its column's largest-magnitude entry is positive (a source's sign is not
    identifiable).
    """
    lam = np.asarray(lambdas, dtype=np.float64)
    V = np.asarray(vectors, dtype=np.float64)
    if kind == "ica":
        A = np.linalg.pinv(np.asarray(W, dtype=np.float64).T) @ V
        idx = np.argmax(np.abs(A), axis=0)
        sign = np.where(A[idx, np.arange(A.shape[1])] < 0, -1.0, 1.0)
        return lam.copy(), A * sign, lam.copy(), V * sign
    sign = np.where(lam < 0, -1.0, 1.0)
    lam, V = lam * sign, V * sign
    with np.errstate(divide="ignore"):
        weights = 1.0 / lam**2
    comps = np.linalg.pinv(np.asarray(W, dtype=np.float64).T) @ (V * lam)
    comps = _CONSTRAIN[kind](comps)
    return weights, comps, lam, V


def fit_moments(
    kind: str,
    data: Any,
    k: int,
    method: str = "certified",
    *,
    rng: RngLike = None,
    chunk_size: int = CHUNK_SIZE,
    estimator: dict[str, Any] | None = None,
    **sroa_options: Any,
) -> MomentFit:
    """Fit a model of the given kind (see :func:`fit_topics`, :func:`fit_gmm`, :func:`fit_ica`)."""
    wm = whitened_moments(kind, data, k, chunk_size=chunk_size, **(estimator or {}))
    return fit_whitened(wm, kind, method, rng=rng, **sroa_options)


def fit_whitened(
    wm: WhitenedMoments, kind: str, method: str = "certified", *, rng: RngLike = None, **options
) -> MomentFit:
    """SROA on an already estimated ``T̂`` and recovery of the parameters."""
    T = symmetrize(wm.tensor)
    k = T.shape[0]
    res = sroa(T, rank=k, method=method, rng=rng, **options)
    weights, comps, lam, V = recover(res.lambdas, res.vectors, wm.whitening, kind)
    return MomentFit(
        kind=kind,
        weights=weights,
        components=comps,
        sigma2=float(getattr(wm.estimator, "sigma2", np.nan)),
        lambdas=lam,
        vectors=V,
        certified=np.asarray(res.certified, dtype=bool),
        upper_bounds=np.asarray(res.upper_bounds, dtype=float),
        gaps=np.asarray(res.upper_bounds) - np.abs(res.lambdas),
        whitening=wm.whitening,
        tensor=T,
        m2_eigenvalues=wm.m2_eigenvalues,
        method=method,
        n_samples=wm.estimator.n_samples,
        sroa=res,
    )


def fit_topics(
    counts: Any,
    k: int,
    method: str = "certified",
    *,
    rng: RngLike = None,
    chunk_size: int = CHUNK_SIZE,
    **sroa_options: Any,
) -> MomentFit:
    """Recover ``k`` topics from a document-term count matrix (single-topic model).

    Parameters
    ----------
    counts : (N, d) array_like or scipy.sparse matrix
        Non-negative integer word counts, one row per document with at least 3 words
        (documents may have different lengths).
    k : int
        Number of topics, ``2 <= k <= d``.
    method : str
        Rank-one method of every SROA step (:data:`sroa_dist.METHODS`: ``"certified"``,
        ``"sshopm"``, ``"power"``, ``"sos"``).
    rng : Generator, int or SeedSequence
        Source of the SROA solvers' random starts.
    chunk_size : int
        Documents per streamed chunk when forming ``T̂``.
    **sroa_options
        Passed to the rank-one method (e.g. ``n_starts``).

    Returns
    -------
    MomentFit
        Topics in ``components`` (columns on the simplex), weights, and every SROA step's
        certificate flag, upper bound and gap.
    """
    return fit_moments("topics", counts, k, method, rng=rng, chunk_size=chunk_size, **sroa_options)


def fit_gmm(
    X: ArrayLike,
    k: int,
    method: str = "certified",
    *,
    sigma2: float | str = "hsu-kakade",
    rng: RngLike = None,
    chunk_size: int = CHUNK_SIZE,
    **sroa_options: Any,
) -> MomentFit:
    """Recover ``k`` means and weights of a spherical Gaussian mixture (Hsu & Kakade 2013).

    Parameters
    ----------
    X : (N, d) array_like
        Points, ``d >= k``.
    k : int
        Number of components.
    method : str
        Rank-one method of every SROA step.
    sigma2 : float or str
        The common variance if known, else the name of an estimator in
        :data:`sroa_dist.moments.SIGMA2_ESTIMATORS` (``"hsu-kakade"``: smallest eigenvalue of
        the sample covariance, their Theorem 1; ``"tail-mean"``: mean of its ``d − k + 1``
        smallest eigenvalues).
    rng, chunk_size, **sroa_options
        As in :func:`fit_topics`.

    Returns
    -------
    MomentFit
        Means in ``components``, weights, the σ² used, and the per-step certificates.
    """
    return fit_moments(
        "gmm",
        X,
        k,
        method,
        rng=rng,
        chunk_size=chunk_size,
        estimator={"sigma2": sigma2},
        **sroa_options,
    )


def fit_ica(
    X: ArrayLike,
    k: int,
    method: str = "certified",
    *,
    rng: RngLike = None,
    chunk_size: int = CHUNK_SIZE,
    **sroa_options: Any,
) -> MomentFit:
    """Recover the mixing matrix and the sources' kurtoses of ``x = A s`` (ICA) from mixtures.

    The sample covariance whitens the data, SROA decomposes the whitened fourth cumulant
    (the k-statistic, an unbiased estimator) as an even-order tensor, signs kept:
    super-Gaussian sources come back with ``κ̂ > 0``, sub-Gaussian ones with ``κ̂ < 0``.

    Parameters
    ----------
    X : (N, d) array_like
        Observed mixtures, ``N >= 4``, ``d >= k``.
    k : int
        Number of sources.
    method, rng, chunk_size, **sroa_options
        As in :func:`fit_topics`.

    Returns
    -------
    MomentFit
        Mixing columns in ``components`` (up to sign), kurtoses in ``weights``, and the
        per-step certificates.
    """
    return fit_moments("ica", X, k, method, rng=rng, chunk_size=chunk_size, **sroa_options)
