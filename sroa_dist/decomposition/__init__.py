"""Algorithm 1 of the paper (successive rank-one approximation, SROA) and what it is made of:
the algorithm and its result (:mod:`.algorithm`), the deflation engines (:mod:`.engines`), the
global check of a decomposition's steps (:mod:`.global_check`), the step checkpoints of a
long SROA (:mod:`.checkpoint`) and the adjoint of SROA's
steps used by the worst-case searches (:mod:`.adjoint`)."""

from .adjoint import sroa_vjp
from .algorithm import SROAResult, sroa, sroa_batch
from .checkpoint import DEFAULT_INTERVAL_S, FileCheckpoint, StepCheckpoint, checkpoint_header

__all__ = [
    "DEFAULT_INTERVAL_S",
    "FileCheckpoint",
    "SROAResult",
    "StepCheckpoint",
    "checkpoint_header",
    "sroa",
    "sroa_batch",
    "sroa_vjp",
]
