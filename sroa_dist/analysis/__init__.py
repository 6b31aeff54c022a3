"""Analysis of sroa-dist result cubes: aggregation, thresholds, figures and reports.

Every function takes the xarray Dataset returned by ``open_results`` (or any Dataset following
the RESULT CUBE contract of docs/architecture.md, with any subset of the sweep axes) and relies
on dimension and variable names, never on attrs, with one exception: the report and the set of
figures are the cube's kind's (the ``sroa_kind`` attr that ``open_results`` sets, looked up in
the kind registry: :mod:`.kinds`), never guessed from its variables.  Aggregations stay lazy
on dask-backed cubes; thresholds, figures and reports compute what they need.  Success is
judged by a criterion from the :data:`CRITERIA` registry (``recovery``, ``value``,
``theorem``), and every report and figure states the cube's :func:`completeness`.
"""

from ._completeness import Completeness, IncompleteCubeWarning, completeness
from .accumulation import (
    Accumulation,
    PredictedThreshold,
    accumulation,
    accumulation_limit,
    predict_threshold,
)
from .accumulation_report import accumulation_curves
from .aggregate import (
    CRITERIA,
    SuccessCriterion,
    count_violations,
    error_growth,
    get_criterion,
    list_violations,
    step_stats,
    success,
    success_probability,
    violation_mask,
)
from .asymptote import GDecay, asymptote_predictions, corrected_crossing, fit_g_decay
from .figures import (
    FIGURES,
    build_figures,
    figure1,
    figure_success_heatmap,
    figure_threshold_scaling,
    plot_cube,
    supported_figures,
)
from .kinds import KindAnalysis
from .moments import fit_sample_exponent, plot_sample_scaling, sample_size_needed
from .prediction import PredictionComparison, compare_prediction, figure_prediction
from .report import check_report_formats, summarize, write_report
from .step_figures import figure2, figure_step_accumulation
from .threshold import (
    RateFit,
    SizeMedians,
    estimate_thresholds,
    fit_exponent,
    fit_rate,
    size_medians,
)

__all__ = [
    "Accumulation",
    "PredictedThreshold",
    "accumulation",
    "accumulation_curves",
    "asymptote_predictions",
    "corrected_crossing",
    "fit_g_decay",
    "GDecay",
    "accumulation_limit",
    "predict_threshold",
    "PredictionComparison",
    "compare_prediction",
    "figure_prediction",
    "CRITERIA",
    "FIGURES",
    "Completeness",
    "IncompleteCubeWarning",
    "KindAnalysis",
    "SuccessCriterion",
    "build_figures",
    "completeness",
    "count_violations",
    "error_growth",
    "estimate_thresholds",
    "figure1",
    "figure2",
    "figure_step_accumulation",
    "figure_success_heatmap",
    "figure_threshold_scaling",
    "fit_exponent",
    "fit_rate",
    "RateFit",
    "SizeMedians",
    "size_medians",
    "get_criterion",
    "list_violations",
    "plot_cube",
    "step_stats",
    "success",
    "success_probability",
    "summarize",
    "supported_figures",
    "violation_mask",
    "write_report",
    "fit_sample_exponent",
    "plot_sample_scaling",
    "sample_size_needed",
    "check_report_formats",
]
