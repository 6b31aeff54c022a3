"""Analysis of sroa-dist result cubes: aggregation and thresholds.

Every function takes the xarray Dataset returned by ``open_results`` (or any Dataset following
the RESULT CUBE contract of docs/architecture.md, with any subset of the sweep axes) and relies
on dimension and variable names only, never on attrs.  Aggregations stay lazy on dask-backed
cubes; thresholds compute what they need.
"""

from .aggregate import (
    count_violations,
    error_growth,
    list_violations,
    step_stats,
    success,
    success_probability,
    violation_mask,
)
from .threshold import estimate_thresholds, fit_exponent

__all__ = [
    "count_violations",
    "error_growth",
    "estimate_thresholds",
    "fit_exponent",
    "list_violations",
    "step_stats",
    "success",
    "success_probability",
    "violation_mask",
]
