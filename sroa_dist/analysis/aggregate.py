"""Lazy, xarray-native aggregation of result cubes: per-step statistics, bound checks, success."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..errors import InputError
from ..studies import (
    CRITERION_OPTIONS,
    DEFAULT_RADIUS,
    DEFAULT_THEOREM_C,
    DEFAULT_VALUE_C,
    check_criterion_option,
)
from ..sweep import REPLICATE, STEP
from ._cube import (
    CATEGORICAL_AXES,
    as_tuple,
    measured_eps,
    require,
    require_dim,
    step_one,
    sweep_axes,
    theorem_bounds,
)

#: Theorems whose bounds :func:`violation_mask` checks.
THEOREMS = ("2.2", "3.1")


def step_stats(
    ds: xr.Dataset,
    variables: Sequence[str] = ("lam_err", "vec_err"),
    *,
    dim: str | Sequence[str] = REPLICATE,
    quantiles: Sequence[float] = (0.05, 0.5, 0.95),
    ddof: int = 1,
) -> xr.Dataset:
    """Per-step mean, standard deviation, quantiles and count over replicates.

    The numbers behind Figure 2 of the paper (mean ± 2 std of the errors per SROA iteration).
    NaNs (steps past an instance's rank, unfinished instances) are skipped, and ``<var>_count``
    says how many values each statistic rests on.  Dask-backed inputs give dask-backed outputs:
    nothing is computed here.

    Parameters
    ----------
    ds : xarray.Dataset
        A result cube (``open_results``) or any subset of it.
    variables : sequence of str
        Variables to summarise; default the λ and vector errors.
    dim : str or sequence of str
        Dimension(s) to reduce over; default ``replicate``.  Add sweep axes (e.g.
        ``("replicate", "sigma")``) to pool them.
    quantiles : sequence of float
        Quantile levels in [0, 1], reported along a ``quantile`` dimension (none if empty).
    ddof : int
        Delta degrees of freedom of the standard deviation (1: sample std).

    Returns
    -------
    xarray.Dataset
        ``<var>_mean``, ``<var>_std``, ``<var>_quantile`` (extra ``quantile`` dim; absent when
        ``quantiles`` is empty) and
        ``<var>_count`` for each variable, over the remaining dims.
    """
    require(ds, variables, "step_stats")
    dims = as_tuple(dim)
    for d in dims:
        require_dim(ds, d, "step_stats(dim=...)")
    out: dict[str, xr.DataArray] = {}
    for name in variables:
        da = ds[name]
        reduce_dims = [d for d in dims if d in da.dims]
        mean, std, count = _moments(da, reduce_dims, ddof)
        out[f"{name}_mean"], out[f"{name}_std"] = mean, std
        if len(quantiles):  # dask's quantile fails on an empty list
            with warnings.catch_warnings():
                # all-NaN slices (steps past every instance's rank) are expected: they give NaN.
                warnings.simplefilter("ignore", RuntimeWarning)
                out[f"{name}_quantile"] = da.quantile(list(quantiles), dim=reduce_dims)
        out[f"{name}_count"] = count
    return xr.Dataset(out, attrs={"reduced_over": list(dims), "ddof": ddof})


def _moments(
    da: xr.DataArray, dims: Sequence[str], ddof: int = 1
) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray]:
    """NaN-skipping mean, std and count over ``dims``, NaN where too few values.

    Written with sums so that empty slices give NaN without 0/0 RuntimeWarnings when a lazy
    result is computed later (where no warning filter of ours is active).
    """
    count = da.notnull().sum(dims)
    mean = da.sum(dims, skipna=True) / count.where(count > 0)
    sq = ((da - mean) ** 2).sum(dims, skipna=True)
    std = np.sqrt(sq / (count - ddof).where(count > ddof))
    return mean, std, count


def violation_mask(
    ds: xr.Dataset, theorem: str = "2.2", *, rtol: float = 1e-9, atol: float = 0.0
) -> xr.Dataset:
    """Boolean masks of the instances (and steps) whose errors exceed a theorem's bounds.

    Theorem 2.2 bounds the first SROA step: ``lam_err ≤ thm22_lam_bound`` and
    ``vec_err ≤ thm22_vec_bound`` at step 1.  Theorem 3.1 bounds every step with
    ``thm31_lam_bound`` / ``thm31_vec_bound``; its hypothesis ε ≤ c₀ λ_min n^{-1/(p-1)} has an
    unknown constant, so a "violation" there means the bound is exceeded, not that the theorem
    is contradicted.  Missing values (NaN) never count as violations.

    Parameters
    ----------
    ds : xarray.Dataset
        Result cube.
    theorem : {"2.2", "3.1"}
        Which bounds to check.
    rtol, atol : float
        A value counts as a violation only if ``err > bound * (1 + rtol) + atol``, so that
        rounding in the solver does not produce spurious violations.

    Returns
    -------
    xarray.Dataset
        Boolean ``lam``, ``vec`` and ``any`` (either one), lazily if the cube is dask-backed;
        dims axes + replicate (+ step for Theorem 3.1).
    """
    if theorem not in THEOREMS:
        raise InputError(
            f"unknown theorem {theorem!r}: expected one of {THEOREMS}",
            "use one of the listed theorems",
        )
    require(ds, ["lam_err", "vec_err"], f"checking the Theorem {theorem} bounds")
    lam_bound, vec_bound = theorem_bounds(ds, theorem)
    lam_err, vec_err = ds["lam_err"], ds["vec_err"]
    if theorem == "2.2":
        lam_err, vec_err = step_one(lam_err), step_one(vec_err)
    lam = lam_err > lam_bound * (1.0 + rtol) + atol
    vec = vec_err > vec_bound * (1.0 + rtol) + atol
    out = xr.Dataset({"lam": lam, "vec": vec, "any": lam | vec})
    out.attrs = {"theorem": theorem, "rtol": rtol, "atol": atol}
    return out


def count_violations(
    ds: xr.Dataset,
    theorem: str = "2.2",
    *,
    dim: str | Sequence[str] | None = (REPLICATE, STEP),
    rtol: float = 1e-9,
    atol: float = 0.0,
) -> xr.Dataset:
    """Count theorem-bound violations, per grid point by default.

    Parameters
    ----------
    ds : xarray.Dataset
        Result cube.
    theorem : {"2.2", "3.1"}
        Which bounds; see :func:`violation_mask`.
    dim : str, sequence of str or None
        Dims summed over; default replicate and step (counts per sweep grid point).  ``None``
        sums over everything (one total).
    rtol, atol : float
        Tolerances of :func:`violation_mask`.

    Returns
    -------
    xarray.Dataset
        Integer ``lam``, ``vec``, ``any`` violation counts and ``n_checked`` (number of
        comparisons made, i.e. non-missing errors).  Lazy when the cube is.
    """
    mask = violation_mask(ds, theorem, rtol=rtol, atol=atol)
    checked = ds["vec_err"].notnull()
    if theorem == "2.2":
        checked = step_one(checked)
    dims = None if dim is None else [d for d in as_tuple(dim) if d in mask["any"].dims]
    out = mask.sum(dims)
    out["n_checked"] = checked.sum(dims)
    out.attrs = dict(mask.attrs)
    return out


def list_violations(
    ds: xr.Dataset, theorem: str = "2.2", *, rtol: float = 1e-9, atol: float = 0.0
) -> pd.DataFrame:
    """The offending instances of :func:`violation_mask`, one row per violation.

    Computes the (small) mask, then reads only the offending entries, so it stays cheap on a
    large dask-backed cube.

    Returns
    -------
    pandas.DataFrame
        Coordinates (sweep axes, ``replicate``, and ``step`` for Theorem 3.1) followed by
        ``lam_err``, ``lam_bound``, ``vec_err``, ``vec_bound``, ``lam_violated``,
        ``vec_violated`` and, when present, ``eps`` (measured ‖E‖), ``certified`` (the step)
        and ``eps_certified``: an uncertified step or norm may explain a violation.
    """
    mask = violation_mask(ds, theorem, rtol=rtol, atol=atol)
    anyv = mask["any"].compute()
    hits = np.nonzero(np.asarray(anyv.values))
    index = {d: xr.DataArray(i, dims="violation") for d, i in zip(anyv.dims, hits, strict=True)}
    columns: dict[str, np.ndarray] = {
        str(d): np.asarray(anyv[d].values)[i] for d, i in zip(anyv.dims, hits, strict=True)
    }
    lam_bound, vec_bound = theorem_bounds(ds, theorem)
    lam_err, vec_err = ds["lam_err"], ds["vec_err"]
    certified = ds["certified"] if "certified" in ds.data_vars else None
    if theorem == "2.2":
        lam_err, vec_err = step_one(lam_err), step_one(vec_err)
        certified = step_one(certified) if certified is not None else None
    values = {
        "lam_err": lam_err,
        "lam_bound": lam_bound,
        "vec_err": vec_err,
        "vec_bound": vec_bound,
        "lam_violated": mask["lam"],
        "vec_violated": mask["vec"],
    }
    if "eps" in ds.data_vars:
        values["eps"] = ds["eps"]
    if certified is not None:
        values["certified"] = certified
    if "eps_certified" in ds.data_vars:
        values["eps_certified"] = ds["eps_certified"]
    for name, da in values.items():
        da = da.broadcast_like(anyv)
        columns[name] = np.asarray(da.isel({d: index[d] for d in anyv.dims}).values)
    return pd.DataFrame(columns)


def _recovery(ds: xr.Dataset, *, radius: float, variable: str) -> tuple[xr.DataArray, xr.DataArray]:
    require(ds, [variable], f"success with criterion='recovery' on `{variable}`")
    err = ds[variable]
    return (err <= radius) | err.isnull(), err.notnull()


def _value(ds: xr.Dataset, *, c: float, rtol: float) -> tuple[xr.DataArray, xr.DataArray]:
    require(ds, ["lam_err"], "success with criterion='value' (|λ̂ − λ| ≤ c·ε)")
    eps = measured_eps(ds)
    err = ds["lam_err"]
    present = err.notnull() & eps.notnull()
    return (err <= c * eps * (1.0 + rtol)) | ~present, present


def _theorem(
    ds: xr.Dataset, *, c: float, radius: float | None, rtol: float
) -> tuple[xr.DataArray, xr.DataArray]:
    require(ds, ["lam_err", "vec_err"], "success with criterion='theorem'")
    present = ds["vec_err"].notnull() & ds["lam_err"].notnull()
    if c == DEFAULT_THEOREM_C and radius is None:  # Theorem 3.1's own bounds, as stored
        mask = violation_mask(ds, "3.1", rtol=rtol)
        return ~mask["any"], present
    lam_bound, vec_bound = theorem_bounds(ds, "3.1")
    lam_bound = lam_bound * (c / DEFAULT_THEOREM_C)  # the stored bound is 2ε
    if radius is not None:
        vec_bound = xr.full_like(vec_bound, float(radius))
    bad = (ds["lam_err"] > lam_bound * (1.0 + rtol)) | (ds["vec_err"] > vec_bound * (1.0 + rtol))
    return ~bad, present


@dataclass(frozen=True)
class SuccessCriterion:
    """A per-step success test, looked up by name in :data:`CRITERIA`.

    Attributes
    ----------
    name : str
        Registry key.
    template : str
        Human-readable statement, formatted with the options (``{radius}``, ``{c}``).
    options : Mapping[str, Any]
        The options the test accepts, with their defaults.
    step_ok : callable
        ``step_ok(ds, **options) -> (ok, present)``: boolean DataArrays per instance and step;
        ``ok`` is True where the step passes (or has no data), ``present`` where it has data.
    """

    name: str
    template: str
    options: Mapping[str, Any]
    step_ok: Callable[..., tuple[xr.DataArray, xr.DataArray]] = field(repr=False)

    def resolve(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """Defaults updated by ``options``; an option this criterion does not take is an error."""
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            accepted = ", ".join(self.options) or "none"
            raise InputError(
                f"success criterion {self.name!r} takes no option(s) {unknown} "
                f"(accepted: {accepted})",
                "pass only the accepted options",
            )
        resolved = {**self.options, **options}
        for key, value in resolved.items():
            # None where the default is None: the theorem's own vector bound 20ε/λ_j.
            if key in CRITERION_OPTIONS and not (value is None and self.options[key] is None):
                resolved[key] = check_criterion_option(key, value)
        return resolved

    def label(self, **options: Any) -> str:
        """The statement with its options filled in, e.g. ``every step's vec_err ≤ 0.3``."""
        # An option left at None takes the theorem's own bound (theorem's radius: 20ε/λ).
        values = {
            k: f"{v:g}" if isinstance(v, float) else ("20ε/λ" if v is None else v)
            for k, v in self.resolve(options).items()
        }
        return self.template.format(**values)


_CRITERIA = {
    "recovery": SuccessCriterion(
        "recovery",
        "every step's {variable} ≤ {radius}",
        MappingProxyType({"radius": DEFAULT_RADIUS, "variable": "vec_err"}),
        _recovery,
    ),
    "value": SuccessCriterion(
        "value",
        "every step's |λ̂ − λ| ≤ {c}·ε",
        MappingProxyType({"c": DEFAULT_VALUE_C, "rtol": 1e-9}),
        _value,
    ),
    "theorem": SuccessCriterion(
        "theorem",
        "every step with |λ̂ − λ| ≤ {c}·ε and ‖v̂ − v‖ ≤ {radius}",
        MappingProxyType({"c": DEFAULT_THEOREM_C, "radius": None, "rtol": 1e-9}),
        _theorem,
    ),
}
#: Success criteria by name (read-only): ``recovery`` (default), ``value`` and ``theorem``.
CRITERIA: Mapping[str, SuccessCriterion] = MappingProxyType(_CRITERIA)


def get_criterion(name: str | SuccessCriterion) -> SuccessCriterion:
    """The :class:`SuccessCriterion` registered as ``name``; unknown names list the valid ones."""
    if isinstance(name, SuccessCriterion):
        return name
    if not isinstance(name, str) or name not in CRITERIA:
        raise InputError(
            f"criterion: expected one of {tuple(CRITERIA)}; received {name!r}",
            "'recovery' = vector error within a radius, 'value' = |λ̂ − λ| ≤ c·ε, "
            "'theorem' = the Theorem 3.1 bounds",
        )
    return CRITERIA[name]


def criterion_options(name: str | SuccessCriterion, **pool: Any) -> dict[str, Any]:
    """The subset of ``pool`` (e.g. ``radius=…, c=…, rtol=…``) that criterion ``name`` takes.

    Lets reports and figures pass one set of knobs to every criterion. Every knob of
    ``pool`` is checked (:func:`~sroa_dist.studies.criteria.check_criterion_option`), also
    those criterion ``name`` does not take: an ``InputError`` names the first bad one.
    """
    crit = get_criterion(name)
    for key, value in pool.items():
        # Every knob is checked, also those this criterion ignores: `report --c -1` with the
        # recovery criterion is still a mistake, and the other criteria's tables use it.
        if key in CRITERION_OPTIONS and not (value is None and crit.options.get(key, 0) is None):
            check_criterion_option(key, value)
    return {k: v for k, v in pool.items() if k in crit.options}


def success(
    ds: xr.Dataset,
    criterion: str | SuccessCriterion = "recovery",
    *,
    steps: Sequence[int] | None = None,
    **options: Any,
) -> xr.DataArray:
    """Per-instance success of the full decomposition: 1.0, 0.0, or NaN when there is no data.

    Success means every step passes the criterion (see :data:`CRITERIA`):

    * ``"recovery"`` (default; options ``radius=0.3``, ``variable="vec_err"``): every step's
      vector error is ≤ the radius, i.e. every component was recovered.
    * ``"value"`` (options ``c=1``, ``rtol=1e-9``): every step's |λ̂ − λ| ≤ c·ε, with ε the
      measured ‖E‖ of the instance (variable ``eps``; the ``eps`` coordinate when ε is swept).
      It sees value errors that add up over deflation, which the recovery radius does not.
      c = 1 is Theorem 2.2's step-1 bound applied at every step; c = 2 is Theorem 3.1's.
    * ``"theorem"`` (option ``rtol``): every step meets both Theorem 3.1 bounds.  The vector
      bound 20ε/λ is vacuous once it reaches √2 (every unit-vector error passes), so this
      criterion rarely fails at large ε and often has no threshold.

    Steps that are NaN (past the instance's rank) are ignored; an instance with no non-NaN
    step (not run yet) is NaN, so it drops out of probabilities instead of counting as success.

    Parameters
    ----------
    ds : xarray.Dataset
        Result cube.
    criterion : str or SuccessCriterion
        Name in :data:`CRITERIA`.
    steps : sequence of int, optional
        Restrict to these (1-based) steps; default all steps.
    **options
        The criterion's options (above); others raise ``ValueError``.

    Returns
    -------
    xarray.DataArray
        Float (1/0/NaN) over the sweep axes and ``replicate``; lazy when the cube is.
    """
    crit = get_criterion(criterion)
    opts = crit.resolve(options)
    ok, present = crit.step_ok(ds, **opts)
    if STEP in ok.dims:
        if steps is not None:
            ok, present = ok.sel({STEP: list(steps)}), present.sel({STEP: list(steps)})
        ok, present = ok.all(STEP), present.any(STEP)
    out = ok.astype(float).where(present)
    out.name = "success"
    out.attrs = {
        "criterion": crit.name,
        "long_name": crit.label(**opts),
        **opts,
    }
    return out


def success_probability(
    ds: xr.Dataset,
    criterion: str | SuccessCriterion = "recovery",
    *,
    dim: str | Sequence[str] = REPLICATE,
    steps: Sequence[int] | None = None,
    **options: Any,
) -> xr.Dataset:
    """Fraction of successful instances per grid point (see :func:`success`).

    Returns
    -------
    xarray.Dataset
        ``p_success`` (float in [0, 1], NaN where no instance has data), ``n_success`` and
        ``n_instances`` over the dims left after reducing ``dim``; lazy when the cube is.
    """
    s = success(ds, criterion, steps=steps, **options)
    dims = as_tuple(dim)
    for d in dims:
        require_dim(s, d, "success_probability(dim=...)")
    n_success = s.sum(dims, skipna=True).astype(int)
    n_instances = s.notnull().sum(dims)
    # where() before dividing: no 0/0 at grid points without data (no RuntimeWarning).
    p = n_success / n_instances.where(n_instances > 0)
    return xr.Dataset(
        {"p_success": p, "n_success": n_success, "n_instances": n_instances}, attrs=s.attrs
    )


def error_growth(
    ds: xr.Dataset,
    variables: Sequence[str] = ("lam_err", "vec_err"),
    *,
    by: str | Sequence[str] | None = None,
) -> xr.Dataset:
    """Mean error per step and its ratio to step 1: do errors accumulate over deflation?

    Theorem 3.1 says the errors do not accumulate when ε is small; ratios near 1 for every
    step r corroborate it (Figure 2 of the paper).

    Parameters
    ----------
    ds : xarray.Dataset
        Result cube with a ``step`` dimension.
    variables : sequence of str
        Per-step errors, default ``lam_err`` and ``vec_err``.
    by : str or sequence of str, optional
        Sweep axes kept apart; every other axis and ``replicate`` is pooled.  Default: the
        categorical axes present (``noise``, ``method``).  When ``n`` is pooled, late steps
        only average the instances with large enough n.

    Returns
    -------
    xarray.Dataset
        ``<var>_mean`` and ``<var>_growth`` (mean at step r / mean at step 1) over the ``by``
        dims and ``step``; lazy when the cube is.
    """
    require(ds, variables, "error_growth")
    axes = sweep_axes(ds)
    keep = [a for a in CATEGORICAL_AXES if a in axes] if by is None else list(as_tuple(by))
    for d in keep:
        require_dim(ds, d, "error_growth(by=...)")
    out = xr.Dataset()
    for name in variables:
        require_dim(ds[name], STEP, "error_growth")
        pooled = [d for d in ds[name].dims if d not in (*keep, STEP)]
        mean = _moments(ds[name], pooled)[0]
        out[f"{name}_mean"] = mean
        first = mean.sel({STEP: 1}, drop=True)
        # NaN, not inf or a 0/0 RuntimeWarning, where step 1 has no error to grow from.
        out[f"{name}_growth"] = mean / first.where(first > 0)
        out[f"{name}_growth"].attrs = {"long_name": f"mean {name} at step r / at step 1"}
    out.attrs = {"kept": keep}
    return out
