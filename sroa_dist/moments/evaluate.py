"""Ground truth for moment studies: the perturbation ``E = T̂ − T`` and recovery errors.

Two views of the perturbation SROA sees:

- **population whitening** ``W``: ``E = M̂3(W, W, W) − M3(W, W, W)``, where the second term is
  exactly SOD. This is the paper's model ``T̂ = T + E`` with the statistical noise only.
- **estimated whitening** ``Ŵ`` (the full pipeline): ``E = M̂3(Ŵ, Ŵ, Ŵ) − Σ λ_i u_i^{⊗3}``,
  where ``u_i = √w_i W'ᵀ μ_i`` and ``W' = Ŵ (Ŵᵀ M2 Ŵ)^{-1/2}`` is ``Ŵ`` corrected to whiten
  the population M2 exactly: the true components seen in the coordinates SROA works in.
  ``E`` then also carries the whitening error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..methods import RngLike, relaxation_tractable
from ..norms import OperatorNormResult, operator_norm
from ..tensors import FloatArray, sod_tensor, symmetrize
from .estimators import CHUNK_SIZE, WhitenedMoments, whitened_moments
from .fit import MomentFit, fit_whitened
from .models import _MomentModel

__all__ = [
    "DEFAULT_TOLERANCES",
    "MomentStudy",
    "RecoveryErrors",
    "Tolerances",
    "perturbations",
    "recovery_errors",
    "run_study",
]


@dataclasses.dataclass(frozen=True)
class Tolerances:
    """Success thresholds: every matched component error ``<= component`` (total variation
    for topics, ℓ2 distance for means, relative ℓ2 distance up to sign for ICA's mixing
    columns) and every weight error ``<= weight`` (ICA: absolute error of the kurtosis)."""

    component: float
    weight: float


#: Default tolerances by model kind (means are in the data's units; σ = 1 in the shipped priors;
#: ICA: mixing columns within 20 % of their length, kurtoses within 0.5, a sixth of Laplace's).
DEFAULT_TOLERANCES = {
    "topics": Tolerances(0.1, 0.05),
    "gmm": Tolerances(0.5, 0.05),
    "ica": Tolerances(0.2, 0.5),
}


#: Elements of one block of column differences that :func:`_columnwise` forms (16 MB of
#: doubles): the whole (d, k, k) array is 320 MB at k = 200 topics over d = 1000 words.
_DIFFERENCE_BLOCK = 1 << 21


def _columnwise(
    A: FloatArray, B: FloatArray, reduce: Callable[[FloatArray], FloatArray]
) -> FloatArray:
    """``reduce(A[:, i, None] − B[:, None, :])`` for every column ``i`` of ``A``, in blocks of
    columns: each entry is the same sequential sum over the d rows that one (d, a, b) array
    would give, so the bits do not depend on the block size."""
    d, a = A.shape
    b = B.shape[1]
    out = np.empty((a, b))
    step = max(1, _DIFFERENCE_BLOCK // max(1, d * b))
    for i in range(0, a, step):
        out[i : i + step] = reduce(A[:, i : i + step, None] - B[:, None, :])
    return out


def _tv(A: FloatArray, B: FloatArray) -> FloatArray:
    """Pairwise total variation ``½‖a_i − b_j‖₁`` between columns."""
    return 0.5 * _columnwise(A, B, lambda D: np.abs(D).sum(axis=0))


def _l2(A: FloatArray, B: FloatArray) -> FloatArray:
    return _columnwise(A, B, lambda D: np.linalg.norm(D, axis=0))


def _l2_up_to_sign(A: FloatArray, B: FloatArray) -> FloatArray:
    """``min(‖a_i − b_j‖, ‖a_i + b_j‖) / ‖b_j‖``: a source's sign is not identifiable."""
    return np.minimum(_l2(A, B), _l2(A, -B)) / np.linalg.norm(B, axis=0)[None, :]


#: Component distance by model kind: total variation between topics, ℓ2 between means,
#: relative ℓ2 up to sign between mixing columns.
COMPONENT_DISTANCE = {"topics": _tv, "gmm": _l2, "ica": _l2_up_to_sign}


@dataclasses.dataclass(frozen=True)
class RecoveryErrors:
    """Errors after the optimal one-to-one matching (Hungarian method on component distances).

    ``perm[j]`` is the true component matched to recovered component ``j``;
    ``component_error[j]`` is the total variation (topics; ℓ1 is twice that) or ℓ2 distance
    (means); ``weight_error[j] = |ŵ_j − w_perm(j)|``; ``success`` when every error is within
    ``tolerances``.
    """

    perm: NDArray[np.int64]
    component_error: FloatArray
    weight_error: FloatArray
    tolerances: Tolerances
    success: bool

    @property
    def max_component_error(self) -> float:
        return float(np.max(self.component_error))

    @property
    def max_weight_error(self) -> float:
        return float(np.max(self.weight_error))


def recovery_errors(
    fit: MomentFit, model: _MomentModel, tolerances: Tolerances | None = None
) -> RecoveryErrors:
    """Match a fit's components to a model's and measure the errors users care about."""
    if fit.components.shape != model.components.shape:
        raise InputError(
            f"fit: expected components of shape {model.components.shape} (the model's), "
            f"received {fit.components.shape}",
            "compare a fit with the model it was fitted to",
        )
    tol = DEFAULT_TOLERANCES[fit.kind] if tolerances is None else tolerances
    dist = COMPONENT_DISTANCE[fit.kind](fit.components, model.components)
    finite = np.where(np.isfinite(dist), dist, np.finfo(float).max / 4)
    from scipy.optimize import linear_sum_assignment  # on use: 0.5 s to import

    rows, cols = linear_sum_assignment(finite)
    perm = np.empty(fit.k, dtype=np.int64)
    perm[rows] = cols
    idx = np.arange(fit.k)
    comp_err = dist[idx, perm]
    w_err = np.abs(fit.weights - model.weights[perm])
    success = bool(np.all(comp_err <= tol.component) and np.all(w_err <= tol.weight))
    return RecoveryErrors(perm, comp_err, w_err, tol, success)


def _norm(
    E: FloatArray, rng: RngLike, options: Mapping[str, Mapping[str, Any]] | None = None
) -> OperatorNormResult:
    # The certified bracket where the moment relaxation is small enough, else a multi-start
    # local lower bound (reported as not certified). ``options``: per method, the options it
    # runs with (a pinned method revision's).
    method = "certified" if relaxation_tractable(E.shape[0], E.ndim) else "sshopm"
    return operator_norm(symmetrize(E), method, rng=rng, **dict((options or {}).get(method, {})))


def perturbations(
    model: _MomentModel, wm: WhitenedMoments, *, chunk_size: int = CHUNK_SIZE
) -> tuple[FloatArray, FloatArray]:
    """``(E_pop, E_full)``: ``T̂ − T`` with the population whitening and with the estimated one.

    ``wm`` is the estimate from a sample of ``model`` (:func:`whitened_moments`); its estimator
    still holds the data, which is streamed once more for ``M̂3(W, W, W)``.
    """
    p = model.order
    W = model.whitening()
    lam, V = model.sod(W)
    E_pop = wm.estimator.whitened_tensor(W, chunk_size=chunk_size) - sod_tensor(lam, V, p)
    lam_hat, U = model.sod(wm.whitening)
    E_full = wm.tensor - sod_tensor(lam_hat, U, p)
    return symmetrize(E_pop), symmetrize(E_full)


@dataclasses.dataclass(frozen=True)
class MomentStudy:
    """One Monte Carlo instance of a moment study: sample, fit, compare with the truth.

    Attributes
    ----------
    fit : MomentFit
    errors : RecoveryErrors
    eps_population, eps_full : OperatorNormResult or None
        ``‖E‖`` with the population and with the estimated whitening (``None`` when not
        asked for); certified brackets where ``k`` allows.
    lambda_min : float
        Smallest true ``|λ_i|`` (``w_i^{-1/2}``; ICA: ``|κ_i|``), the scale ``‖E‖`` is
        compared with.
    """

    fit: MomentFit
    errors: RecoveryErrors
    eps_population: OperatorNormResult | None
    eps_full: OperatorNormResult | None
    lambda_min: float

    @property
    def success(self) -> bool:
        return self.errors.success


def run_study(
    model: _MomentModel,
    n_samples: int,
    method: str = "certified",
    *,
    rng: RngLike = None,
    tolerances: Tolerances | None = None,
    norms: bool = True,
    chunk_size: int = CHUNK_SIZE,
    estimator: dict[str, Any] | None = None,
    norm_options: Mapping[str, Mapping[str, Any]] | None = None,
    **sroa_options: Any,
) -> MomentStudy:
    """Sample ``n_samples`` observations of ``model``, fit it, and measure the errors.

    ``rng`` is split into independent streams for the sample, SROA's starts and the norm
    solver, so a study is reproducible from one seed; ``norms=False`` skips ``‖E‖``.
    ``norm_options``: per norm method (``certified``, ``sshopm``), the options it solves
    ``‖E‖`` with (a pinned method revision's; none: the current revisions).
    """
    seq = rng if isinstance(rng, np.random.SeedSequence) else None
    if seq is None:
        gen = np.random.default_rng(rng)
        seq = np.random.SeedSequence(int(gen.integers(2**63)))
    s_sample, s_sroa, s_norm = seq.spawn(3)
    data = model.sample(n_samples, rng=np.random.default_rng(s_sample)).data
    wm = whitened_moments(model.kind, data, model.k, chunk_size=chunk_size, **(estimator or {}))
    fit = fit_whitened(wm, model.kind, method, rng=np.random.default_rng(s_sroa), **sroa_options)
    errors = recovery_errors(fit, model, tolerances)
    eps_pop = eps_full = None
    if norms:
        E_pop, E_full = perturbations(model, wm, chunk_size=chunk_size)
        g1, g2 = np.random.default_rng(s_norm).spawn(2)
        eps_pop = _norm(E_pop, g1, norm_options)
        eps_full = _norm(E_full, g2, norm_options)
    lambda_min = float(np.min(np.abs(model.sod()[0])))
    return MomentStudy(fit, errors, eps_pop, eps_full, lambda_min)
