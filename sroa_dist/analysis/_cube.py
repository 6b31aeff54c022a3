"""Helpers reading the RESULT CUBE contract (docs/architecture.md) for the analysis layer."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import numpy as np
import xarray as xr

from ..errors import InputError
from ..metrics import theorem_2_2_bounds, theorem_3_1_bounds
from ..sweep import ATTR_KIND, BLOCK, COMPONENT, REPLICATE, SHARED_AXES, STEP
from ..sweep.kinds import kind_of

#: Axes whose values are labels, not magnitudes: pooled analyses keep them apart by default.
CATEGORICAL_AXES = tuple(d for d, dim in SHARED_AXES.items() if dim.dtype == "str")
_NON_AXIS_DIMS = (REPLICATE, STEP, COMPONENT, "quantile", BLOCK)
_REFERENCE_VARS = ("vec_err", "lam_err", "lam_hat", "eps", "eps_upper", "solve_time")


def require(ds: xr.Dataset, names: Iterable[str], purpose: str) -> None:
    """Raise a ValueError naming every missing variable and what it was needed for."""
    missing = [name for name in names if name not in ds.variables]
    if missing:
        listed = ", ".join(f"`{m}`" for m in missing)
        have = ", ".join(sorted(str(v) for v in ds.data_vars)) or "none"
        raise InputError(
            f"cube has no {listed} variable: {purpose} needs it "
            f"(data variables present: {have}; see docs/reference/cube.md)",
            "use a cube of a sweep that stores it (docs/reference/cube.md)",
        )


def require_dim(ds: xr.Dataset | xr.DataArray, dim: str, purpose: str) -> None:
    """Raise a ValueError if ``dim`` is not a dimension of ``ds``."""
    if dim not in ds.dims:
        have = ", ".join(str(d) for d in ds.dims) or "none"
        raise InputError(
            f"cube has no `{dim}` dimension: {purpose} needs it (dims present: {have})",
            "use a cube whose sweep has that axis",
        )


def kind_variables(ds: xr.Dataset) -> tuple[str, ...]:
    """The variables the cube's kind writes (``sroa_kind``, through the kind registry), in
    its documented order; none for a cube that names no kind. After the built-in names a
    lookup tries, they let any registered kind's cube be read."""
    return tuple(kind_of(ds).all_variables) if ATTR_KIND in ds.attrs else ()


def sweep_axes(ds: xr.Dataset) -> list[str]:
    """Sweep axes of the cube: dims of the per-instance variables except replicate/step.

    Taken from the data variables rather than ``ds.dims`` so that storage-only dims (the
    ``done`` block grid) are never mistaken for sweep axes.
    """
    dims: list[str] = []
    for name in (*_REFERENCE_VARS, *kind_variables(ds)):
        if name in ds.data_vars:
            dims = [str(d) for d in ds[name].dims if d not in _NON_AXIS_DIMS]
            break
    else:
        raise InputError(
            "cube has none of the variables "
            + ", ".join(f"`{v}`" for v in _REFERENCE_VARS)
            + ": cannot tell its sweep axes (is this a sroa-dist result cube?)",
            "open a store written by sroa-dist run (open_results(store))",
        )
    # The dims several kinds sweep first, in their shared order; any other dim (a tensor
    # sweep's noise level, a model sweep's size axes, a future axis) after them in the order
    # the variable stores it, so a new axis does not break the analysis and a model sweep's
    # dims other than ``method`` sort after it.
    order = {name: i for i, name in enumerate(SHARED_AXES)}
    return sorted(dims, key=lambda d: order.get(d, len(order)))


#: Perturbation-size axes, in order of preference, and how to label them.
PERTURBATION_AXES = {
    "eps": "ε = ‖E‖  (target operator norm)",
    "eps_scaled": "ε n^(1/(p−1)) / λ_min  (Theorem 3.1 scale)",
    "sigma": "σ  (noise entry scale)",
}


def noise_axis(ds: xr.Dataset) -> str | None:
    """Name of the perturbation-size axis (``eps``, ``eps_scaled`` or ``sigma``), or None."""
    for name in PERTURBATION_AXES:
        if name in ds.dims:
            return name
    return None


def measured_eps(ds: xr.Dataset) -> xr.DataArray:
    """The measured operator norm ‖E‖ per instance.

    The contract names it ``eps``.  When ``eps`` is itself a swept axis the store writes no
    such variable (xarray forbids a variable and a coordinate of the same name): E was scaled to
    the coordinate value, which is then used (equal up to solver tolerance).
    """
    if "eps" in ds.data_vars:
        return ds["eps"]
    if "eps" in ds.coords:
        return ds["eps"].astype(float)
    raise InputError(
        "cube has no `eps` variable or axis: this needs the measured operator norm ‖E‖ per "
        "instance",
        "run the sweep with the norm computed (the default), or use a cube with an eps axis",
    )


def step_one(da: xr.DataArray) -> xr.DataArray:
    """Select step 1 (the first SROA iteration) of a per-step variable."""
    if STEP not in da.dims:
        return da
    steps = np.asarray(da[STEP].values)
    if 1 not in steps:
        raise InputError(
            f"`{da.name}` has no step 1 (steps present: {steps.tolist()})",
            "use a cube with per-step variables from step 1",
        )
    return da.sel({STEP: 1}, drop=True)


def theorem_bounds(ds: xr.Dataset, theorem: str) -> tuple[xr.DataArray, xr.DataArray]:
    """(λ bound, vector bound) of Theorem 2.2 (step 1) or 3.1 (every step).

    Uses the cube's stored bound variables; when they are absent, recomputes them from the
    measured ‖E‖ and ``lam_true`` with the core's :func:`sroa_dist.theorem_2_2_bounds` /
    :func:`sroa_dist.theorem_3_1_bounds` (lazily on dask-backed cubes).
    """
    if theorem not in _BOUNDS:
        raise InputError(
            f"unknown theorem {theorem!r}: expected one of {tuple(_BOUNDS)}",
            "use one of the listed theorems",
        )
    names, formula = _BOUNDS[theorem]
    if all(n in ds.data_vars for n in names):
        return ds[names[0]], ds[names[1]]
    require(ds, ["lam_true"], f"the Theorem {theorem} bounds (no `{names[0]}` stored)")
    lam = step_one(ds["lam_true"]) if theorem == "2.2" else ds["lam_true"]
    lam_bound, vec_bound = xr.apply_ufunc(
        formula,
        measured_eps(ds),
        lam,
        dask="parallelized",
        output_core_dims=[[], []],
        output_dtypes=[float, float],
    )
    return lam_bound, vec_bound


_BOUNDS = {
    "2.2": (("thm22_lam_bound", "thm22_vec_bound"), theorem_2_2_bounds),
    "3.1": (("thm31_lam_bound", "thm31_vec_bound"), theorem_3_1_bounds),
}


def as_tuple(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """Normalise a dim argument (one name, several, or None) to a tuple."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def group_label(coords: dict[str, object]) -> str:
    """Compact legend/title label such as ``noise=gaussian, p=3`` (empty string for no coords)."""
    return ", ".join(f"{k}={_fmt(v)}" for k, v in coords.items())


def _fmt(value: object) -> str:
    if isinstance(value, float | np.floating):
        return f"{float(value):g}"
    if isinstance(value, np.generic):
        return str(value.item())
    return str(value)


def combinations(da: xr.DataArray | xr.Dataset, dims: Sequence[str]) -> list[dict[str, object]]:
    """All coordinate combinations of ``dims`` (one empty dict when there are none)."""
    dims = [d for d in dims if d in da.dims]
    values = [da[d].values.tolist() for d in dims]
    return [dict(zip(dims, combo, strict=True)) for combo in itertools.product(*values)]


def scalar_p(ds: xr.Dataset) -> int | None:
    """Tensor order for labelling reference slopes only (attrs never drive the analysis).

    A one-valued ``p`` coordinate, else the store's ``setting_p`` attr (or ``p``) if it is an int.
    """
    if "p" in ds.coords and ds["p"].size == 1:
        return int(ds["p"].values.item())
    for key in ("setting_p", "p"):
        value = ds.attrs.get(key)
        if isinstance(value, int | np.integer):
            return int(value)
    return None
