"""Method-of-moments learning of latent variable models through SROA.

The whitened third moment of a single-topic model or of a spherical Gaussian mixture is an
orthogonally decomposable tensor (Anandkumar, Ge, Hsu, Kakade & Telgarsky, JMLR 2014; Hsu &
Kakade 2013), and so is the whitened fourth cumulant of independent component analysis (an
even-order tensor with signed weights, the sources' kurtoses); estimated from ``N`` samples each
is nearly SOD, ``T̂ = T + E``, the setting of the paper. This subpackage provides the models
(seeded samplers, exact population moments and cumulants), unbiased streamed estimators of
``T̂``, the fits (:func:`fit_topics`, :func:`fit_gmm`, :func:`fit_ica`), the ground truth of a
Monte Carlo study (:func:`run_study`) and the structure of the sampling noise
(:func:`noise_structure`: attractor-like or isotropic). Pure numpy/scipy, like the rest of the core.
"""

from __future__ import annotations

from .estimators import (
    ESTIMATORS,
    SIGMA2_ESTIMATORS,
    IcaMoments,
    MixtureMoments,
    TopicMoments,
    WhitenedMoments,
    whitened_moments,
)
from .evaluate import (
    DEFAULT_TOLERANCES,
    MomentStudy,
    RecoveryErrors,
    Tolerances,
    perturbations,
    recovery_errors,
    run_study,
)
from .fit import MomentFit, fit_gmm, fit_ica, fit_moments, fit_topics, project_simplex, recover
from .models import (
    ICA_SOURCES,
    MODELS,
    IndependentComponents,
    Sample,
    SingleTopicModel,
    SphericalGaussianMixture,
    make_model,
    whitening_from_m2,
)
from .noise_structure import (
    WHITENINGS,
    NoiseStructure,
    noise_structure,
    perturbation_structure,
)

__all__ = [
    "DEFAULT_TOLERANCES",
    "ESTIMATORS",
    "ICA_SOURCES",
    "MODELS",
    "SIGMA2_ESTIMATORS",
    "IcaMoments",
    "IndependentComponents",
    "MixtureMoments",
    "MomentFit",
    "MomentStudy",
    "NoiseStructure",
    "RecoveryErrors",
    "Sample",
    "SingleTopicModel",
    "SphericalGaussianMixture",
    "Tolerances",
    "TopicMoments",
    "WHITENINGS",
    "WhitenedMoments",
    "fit_gmm",
    "fit_ica",
    "fit_moments",
    "fit_topics",
    "make_model",
    "noise_structure",
    "perturbation_structure",
    "perturbations",
    "project_simplex",
    "recover",
    "recovery_errors",
    "run_study",
    "whitened_moments",
    "whitening_from_m2",
]
