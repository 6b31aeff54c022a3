"""Studies built on SROA: first-crossing threshold searches (:mod:`.threshold`,
:mod:`.first_crossing`), success criteria (:mod:`.criteria`) and worst-case perturbation
searches (:mod:`.worst_case`, :mod:`.worst_case_search`, the norm they rescale by
:mod:`.search_norm`, and saved claims re-checked by :mod:`.recheck`). The public names are
exported by :mod:`sroa_dist`."""

from .criteria import (
    CRITERION_OPTIONS,
    DEFAULT_RADIUS,
    DEFAULT_THEOREM_C,
    DEFAULT_VALUE_C,
    RUN_CRITERIA,
    check_criterion_option,
    criterion_option_expected,
)
from .first_crossing import (
    K_SECTION,
    SCAN_FACTOR,
    SCAN_PHASES,
    ThresholdResult,
    check_range,
    max_evals,
)
from .recheck import recheck_worst_case
from .threshold import (
    DEFAULT_C,
    SEARCH_LEGACY,
    SEARCH_REVISION,
    find_threshold,
    search_options,
    uses_matrix_free,
)
from .worst_case import worst_case
from .worst_case_result import WorstCaseResult, load_worst_case

__all__ = [
    "CRITERION_OPTIONS",
    "DEFAULT_C",
    "DEFAULT_RADIUS",
    "DEFAULT_THEOREM_C",
    "DEFAULT_VALUE_C",
    "K_SECTION",
    "RUN_CRITERIA",
    "SCAN_FACTOR",
    "SCAN_PHASES",
    "SEARCH_LEGACY",
    "SEARCH_REVISION",
    "ThresholdResult",
    "WorstCaseResult",
    "check_criterion_option",
    "check_range",
    "criterion_option_expected",
    "find_threshold",
    "load_worst_case",
    "max_evals",
    "recheck_worst_case",
    "search_options",
    "uses_matrix_free",
    "worst_case",
]
