"""What is decomposed: planted nearly SOD instances (:mod:`.instances`), random noise models
(:mod:`.noise`), perturbation families (:mod:`.perturbations`; with exact norms at any n:
:mod:`.tilt_shrink`, :mod:`.subspace`) and matrix-free structured tensors (:mod:`.structured`).
The public names are exported by :mod:`sroa_dist`."""

from .instances import (
    BASES,
    MAX_SCALE,
    Instance,
    check_lambdas,
    check_level,
    draw_lambdas,
    make_instance,
)
from .noise import NOISE_MODELS, noise_tensor, register_noise
from .perturbations import (
    DEFAULT_WEIGHT,
    PERTURBATIONS,
    PROVEN_NORMS,
    Family,
    Perturbation,
    attractor_factored,
    check_model,
    coherent_tilt,
    draw_perturbation,
    is_deterministic,
    model_params,
    register_perturbation,
    resolve_family,
    tilt_norm,
)
from .structured import structured_tensor
from .subspace import subspace_core, subspace_norm, subspace_tensor
from .tilt_shrink import tilt_shrink, tilt_shrink_norm

__all__ = [
    "BASES",
    "DEFAULT_WEIGHT",
    "Family",
    "Instance",
    "MAX_SCALE",
    "NOISE_MODELS",
    "PERTURBATIONS",
    "PROVEN_NORMS",
    "Perturbation",
    "attractor_factored",
    "check_lambdas",
    "check_level",
    "check_model",
    "coherent_tilt",
    "draw_lambdas",
    "draw_perturbation",
    "is_deterministic",
    "make_instance",
    "model_params",
    "noise_tensor",
    "register_noise",
    "register_perturbation",
    "structured_tensor",
    "subspace_core",
    "subspace_norm",
    "subspace_tensor",
    "tilt_norm",
    "tilt_shrink",
    "tilt_shrink_norm",
    "resolve_family",
]
