"""The worst-case sweep kind (marker table ``[worst_case]``): the gradient adversary of
:func:`sroa_dist.worst_case` fanned out over n, p, ε and the steps' method, with ``‖E‖``'s
certified bracket, the ratio and its kind, and the found ``E`` stored for a re-check.
:mod:`.spec` (schema, grid points, seeds), :mod:`.variables` (cube variables, ``E`` packed),
:mod:`.kind` (cost, layout, block kernel, the kind object)."""

from .kind import WORST_CASE, WorstCaseKind, WorstCaseProblem, problem_of, search_seconds
from .spec import (
    WORST_CASE_SCHEMA,
    WorstCaseSettings,
    WorstCaseSweepSpec,
    worst_case_spec_from_dict,
)
from .variables import (
    WORST_CASE_VARIABLES,
    pack_tensor,
    packed_size,
    stored_result,
    unpack_tensor,
)

__all__ = [
    "WORST_CASE",
    "WORST_CASE_SCHEMA",
    "WORST_CASE_VARIABLES",
    "WorstCaseKind",
    "WorstCaseProblem",
    "WorstCaseSettings",
    "WorstCaseSweepSpec",
    "pack_tensor",
    "packed_size",
    "problem_of",
    "search_seconds",
    "stored_result",
    "unpack_tensor",
    "worst_case_spec_from_dict",
]
