"""The template of a result store: coordinates, every variable's metadata and chunks (= the
layout's blocks), and the root attrs (spec, provenance, layout token), written with
``compute=False`` so that tasks fill the data by region writes (see :mod:`.prepare`).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from ..cube import (
    ATTR_FORMAT,
    ATTR_KIND,
    ATTR_LAYOUT_TOKEN,
    ATTR_SPEC,
    ATTR_SWEEP_NAME,
    BLOCK,
    BOOKKEEPING,
    COMPONENT,
    SETTING_PREFIX,
    STEP,
    STORE_FORMAT,
    Dim,
)
from ..kinds import cube_dims, kind_of
from ..layout import Layout
from ..spec import SweepSpec
from .integrity import compressors, ensure_digest_array
from .target import git_commit, now_iso, software_versions, storage_options_for

__all__ = ["template", "write_template"]


def _coord_array(dim: Dim, values: Sequence[Any]) -> np.ndarray:
    dtype = dim.dtype
    if dtype == "str":
        return np.array(list(values), dtype=object)  # stored as zarr v3 vlen string
    return np.asarray(values, dtype=dtype)


def template(
    spec: SweepSpec, layout: Layout, history: str, layout_token: str = ""
) -> tuple[xr.Dataset, dict]:
    vectors = spec.output.vectors
    dims = layout.dims
    described = cube_dims(spec)
    coords: dict[str, Any] = {
        d: (d, _coord_array(described[d], c)) for d, c in zip(dims, layout.coords, strict=True)
    }
    coords[STEP] = (STEP, np.arange(1, layout.n_steps + 1, dtype=np.int64))
    coords[BLOCK] = (BLOCK, np.arange(layout.n_blocks, dtype=np.int64))
    if vectors:
        coords[COMPONENT] = (COMPONENT, np.arange(layout.n_component, dtype=np.int64))
    extent = {STEP: layout.n_steps, COMPONENT: layout.n_component}
    data_vars: dict[str, Any] = {}
    encoding: dict[str, dict[str, Any]] = {}
    for name, var in kind_of(spec).variables(spec).items():
        if name in dims:
            continue  # 'eps' as an axis: the coordinate is ||E|| (E scaled to it)
        # One dask chunk per variable: the template is never computed, and a graph of one task
        # per block would take seconds to build for 10^4 blocks. The zarr chunks (= blocks)
        # come from the encoding.
        shape = layout.shape + tuple(extent[d] for d in var.dims)
        arr = da.full(shape, var.fill, dtype=var.dtype, chunks=-1)
        data_vars[name] = (dims + var.dims, arr, var.attrs)
        chunks = layout.chunks + tuple(extent[d] for d in var.dims)
        encoding[name] = {"chunks": chunks, "fill_value": var.fill, "compressors": compressors()}
    # Bookkeeping: one chunk per block, so each task writes only its own element.
    for name, var in BOOKKEEPING.items():
        arr = da.full(layout.n_blocks, var.fill, dtype=var.dtype, chunks=-1)
        data_vars[name] = (var.dims, arr, var.attrs)
        encoding[name] = {"chunks": (1,), "fill_value": var.fill, "compressors": compressors()}
    ds = xr.Dataset(data_vars, coords=coords)
    for name in coords:  # coordinates are checksummed too
        encoding[name] = {"compressors": compressors()}
    for d in ds.dims:
        if d in ds.coords:
            ds[d].attrs.update(described[d].attrs if d in described else {})
    scalars = {
        f"{SETTING_PREFIX}{spec.axis_keys[k].replace('noise', 'noise_model')}": ax.scalar
        for k, ax in spec.axes.items()
        if not ax.swept
    }
    ds.attrs.update(
        {
            "title": f"sroa-dist sweep '{spec.name}'",
            "description": spec.description,
            "source": "sroa-dist (certified SROA of nearly SOD tensors), Monte Carlo sweep",
            ATTR_SWEEP_NAME: spec.name,
            ATTR_KIND: kind_of(spec).name,
            ATTR_SPEC: spec.to_json(),
            "spec_source": spec.source,
            "block_shape": json.dumps(dict(zip(layout.dims, layout.chunks, strict=True))),
            **{k: (v if not isinstance(v, bool) else int(v)) for k, v in scalars.items()},
            **kind_of(spec).provenance(spec),
            "git_commit": git_commit(),
            **software_versions(),
            "created": now_iso(),
            "history": history,
            # Identifies this layout: tasks planned for another one are refused by write_block.
            ATTR_LAYOUT_TOKEN: layout_token,
            ATTR_FORMAT: STORE_FORMAT,
        }
    )
    return ds, encoding


def write_template(
    url: str,
    spec: SweepSpec,
    layout: Layout,
    history: str,
    so: Mapping[str, Any] | None,
    layout_token: str = "",
    mode: str = "w",
) -> None:
    """Write the store's template for ``layout`` (metadata and coordinates only)."""
    # mode "a" into the store itself: "w" would delete the folder, writer lease included.
    ds, encoding = template(spec, layout, history, layout_token)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Cc]onsolidated metadata.*")
        ds.to_zarr(
            url,
            mode=mode,
            compute=False,
            encoding=encoding,
            consolidated=False,
            storage_options=storage_options_for(url, so),
            zarr_format=3,
        )
    ensure_digest_array(url, so, layout, certificates=spec.output.certificates)
