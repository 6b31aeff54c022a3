"""sroa-dist: certified successive rank-one approximation of nearly orthogonally decomposable
symmetric tensors, and distributed Monte Carlo sweeps of it.

The numerical core (everything importable from here except the sweep helpers) is pure
numpy/scipy; ``run_sweep``, ``load_spec`` and ``open_results`` load Dask/zarr lazily.
"""

from __future__ import annotations

from importlib import metadata as _metadata
from typing import Any

from .certificate import Certificate
from .decomposition import FileCheckpoint, SROAResult, StepCheckpoint, sroa, sroa_batch
from .errors import InputError, SroaWarning, install_warning_format
from .methods import (
    METHODS,
    MethodOutput,
    RankOneResult,
    rank_one,
    rank_one_batch,
    register_method,
    resolve_method,
)
from .metrics import MatchResult, match, theorem_2_2_bounds, theorem_3_1_bounds
from .norms import OperatorNormResult, operator_norm, operator_norm_batch, scale_to_opnorm
from .problems import (
    NOISE_MODELS,
    PERTURBATIONS,
    Family,
    Instance,
    Perturbation,
    draw_perturbation,
    make_instance,
    noise_tensor,
    register_noise,
    register_perturbation,
    structured_tensor,
    tilt_shrink_norm,
)
from .studies import (
    ThresholdResult,
    WorstCaseResult,
    find_threshold,
    load_worst_case,
    recheck_worst_case,
    worst_case,
)
from .tensors import identity_basis, random_orthonormal_basis, sod_tensor, symmetrize

install_warning_format()  # the package's warnings are one line, never a source line

try:  # the version is written once, in pyproject.toml
    __version__ = _metadata.version("sroa-dist")
except _metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "Certificate",
    "METHODS",
    "MethodOutput",
    "NOISE_MODELS",
    "PERTURBATIONS",
    "Family",
    "FileCheckpoint",
    "Perturbation",
    "draw_perturbation",
    "register_perturbation",
    "WorstCaseResult",
    "worst_case",
    "load_worst_case",
    "recheck_worst_case",
    "tilt_shrink_norm",
    "Instance",
    "InputError",
    "SroaWarning",
    "ThresholdResult",
    "find_threshold",
    "MatchResult",
    "OperatorNormResult",
    "RankOneResult",
    "SROAResult",
    "StepCheckpoint",
    "identity_basis",
    "load_spec",
    "make_instance",
    "match",
    "noise_tensor",
    "open_results",
    "operator_norm",
    "operator_norm_batch",
    "random_orthonormal_basis",
    "rank_one",
    "rank_one_batch",
    "register_method",
    "register_noise",
    "resolve_method",
    "run_sweep",
    "scale_to_opnorm",
    "sod_tensor",
    "sroa",
    "sroa_batch",
    "structured_tensor",
    "symmetrize",
    "theorem_2_2_bounds",
    "theorem_3_1_bounds",
]

_SWEEP_NAMES = {"run_sweep", "load_spec", "open_results"}


def __getattr__(name: str) -> Any:
    # The sweep service pulls in Dask and zarr; import it only when asked for.
    if name in _SWEEP_NAMES:
        from . import sweep

        return getattr(sweep, name)
    raise AttributeError(f"module 'sroa_dist' has no attribute {name!r}")
