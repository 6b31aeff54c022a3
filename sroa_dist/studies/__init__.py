"""Studies built on SROA: first-crossing threshold searches (:mod:`.threshold`,
:mod:`.first_crossing`), success criteria (:mod:`.criteria`) and worst-case perturbation
searches (:mod:`.worst_case`, :mod:`.worst_case_search`, the norm they rescale by
:mod:`.search_norm`, worst cases stored by an exact-norm form :mod:`.worst_case_form` and
evaluated as such by :mod:`.worst_case_family`, and saved claims re-checked by :mod:`.recheck`).
The public names are exported by :mod:`sroa_dist`."""

from .accumulation import TILTED_WEIGHT, AccumulationErrors, accumulation_errors, coefficients
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
    expected_evals,
    max_evals,
)
from .recheck import recheck_worst_case
from .sample_complexity import (
    SampleSizeResult,
    SizeEvaluation,
    max_size_evals,
    sample_size_search,
)
from .start_escape import (
    ESCAPE_FAMILIES,
    EscapeResult,
    escape_probability,
    start_escapes,
    step_success,
    whole_sroa,
    wilson_interval,
)
from .threshold import (
    DEFAULT_C,
    SEARCH_LEGACY,
    SEARCH_REVISION,
    SMALLEST_WEIGHT,
    find_threshold,
    search_options,
    uses_matrix_free,
)
from .worst_case import SEARCH_METHODS, worst_case
from .worst_case_result import WorstCaseResult, load_worst_case
from .worst_case_search import METRICS, SMOOTH_METRICS

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
    "SampleSizeResult",
    "SizeEvaluation",
    "ThresholdResult",
    "WorstCaseResult",
    "check_criterion_option",
    "check_range",
    "criterion_option_expected",
    "find_threshold",
    "load_worst_case",
    "expected_evals",
    "max_evals",
    "max_size_evals",
    "sample_size_search",
    "recheck_worst_case",
    "search_options",
    "uses_matrix_free",
    "worst_case",
    "AccumulationErrors",
    "ESCAPE_FAMILIES",
    "EscapeResult",
    "METRICS",
    "SEARCH_METHODS",
    "SMOOTH_METRICS",
    "TILTED_WEIGHT",
    "accumulation_errors",
    "coefficients",
    "escape_probability",
    "start_escapes",
    "step_success",
    "whole_sroa",
    "wilson_interval",
    "SMALLEST_WEIGHT",
]
