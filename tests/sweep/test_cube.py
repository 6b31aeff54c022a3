"""The cube's vocabulary (sweep/cube.py) and the on-disk format it describes.

``tests/data/cube_format.json`` was written by the code of main before the schema module
existed (``tests/support/cube_format.py``); the format of every kind of cube must stay that one. One
deliberate change since: the ``weight_ratio`` coordinate of model sweeps is float64 (main
stored it as int64, truncating ratios such as 2.5 and refusing to resume such a store); and
tensor cubes gained the per-step ``n_best`` and ``confirmed`` (how a local step's best value
was found), which a store made before them does without when it is resumed. And (issue 20)
every array carries a CRC32C codec after zstd, and stores hold ``block_digest`` (per-block
content digests, :mod:`sroa_dist.sweep.store.integrity`), which is storage bookkeeping, not cube
vocabulary. And (issue 18) the stored spec states the method revisions the store computes with
(``solver.revisions``); a store without them ran revision 1 of every method and keeps it
(tests/core/test_method_revisions.py). The manifest states that every method's revision is pinned,
not which numbers (a new revision of a method is not a format change). And (issue 24) the
``confirmed`` variable's long_name says what ``sshopm`` revision 4 confirms (no start of an
independent confirmation rose above the step), not "found again". And (issue 25) a threshold
cube joined the manifest when search revision 2 added its variables (the global check's trace,
artefacts, scan resolution, certified ends); a store made before them is resumed in its own
format (tests/sweep/test_threshold_sweep.py). And (issue 24) the
``block_digest`` array keeps a copy of the root attributes (``store_attrs``, from which lost
metadata is rebuilt), and stores with ``[output] certificates`` hold ``certificate_digest``
(per-block digests of the certificate files): storage bookkeeping too.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr

from sroa_dist.analysis import _cube
from sroa_dist.sweep import cube as schema
from sroa_dist.sweep.kinds import KINDS, cube_dims, kind_of, make_layout, spec_from_dict
from sroa_dist.sweep.kinds.model import MODEL_AXIS_KEYS
from sroa_dist.sweep.kinds.tensor.block import draw_group
from sroa_dist.sweep.kinds.tensor.spec import AXIS_KEYS
from sroa_dist.sweep.kinds.tensor.variables import V_HAT, eps_scaled_target
from sroa_dist.sweep.layout import block_task
from sroa_dist.sweep.run.worker import compute_block
from sroa_dist.sweep.store.certificate_files import CERTIFICATE_DIGEST
from sroa_dist.sweep.store.integrity import DIGEST
from sroa_dist.sweep.store.prepare import prepare_store
from tests.support.cube_format import SPECS, build
from tests.support.helpers import DATA

FORMAT = json.loads((DATA / "cube_format.json").read_text())


@pytest.mark.parametrize("which", sorted(SPECS))
def test_cube_format_is_unchanged(tmp_path, which):
    assert build(tmp_path, which) == FORMAT[which]


_ZARR_DTYPE = {"f8": "float64", "i8": "int64", "bool": "bool", "str": "string"}


@pytest.mark.parametrize("which", sorted(SPECS))
def test_every_stored_array_is_described_by_the_schema(tmp_path, which):
    """Each array of a store is a schema variable (dims, dtype, attrs as described) or a
    coordinate of a schema dim (dtype, attrs); each described variable is stored."""
    spec = spec_from_dict(SPECS[which])
    layout = make_layout(spec, block_size=4)
    url = str(tmp_path / "cube.zarr")
    prepare_store(url, spec, layout)
    g = zarr.open_group(url, mode="r")
    described = {**kind_of(spec).variables(spec), **schema.BOOKKEEPING}
    stored = set()
    for name, arr in g.arrays():
        if name in (DIGEST, CERTIFICATE_DIGEST):  # integrity bookkeeping, not cube variables
            continue
        dims = tuple(arr.metadata.dimension_names)
        dtype = json.loads((Path(url) / name / "zarr.json").read_text())["data_type"]
        # xarray adds its CF encoding of the fill value (_FillValue) to float arrays.
        attrs = {k: v for k, v in arr.attrs.items() if k != "_FillValue"}
        if name in cube_dims(spec) and dims == (name,):  # a coordinate
            dim = cube_dims(spec)[name]
            assert (dtype, attrs) == (_ZARR_DTYPE[dim.dtype], dim.attrs), name
            continue
        var = described[name]
        stored.add(name)
        lead = layout.dims if var.over_grid else ()
        assert dims == lead + var.dims, name
        assert dtype == _ZARR_DTYPE[var.dtype], name
        assert attrs == var.attrs, name
    # Only 'eps' is left out, and only where it is an axis (the coordinate is ||E||).
    assert set(described) - stored == ({"eps"} if "eps" in layout.dims else set())
    assert g.attrs[schema.ATTR_SPEC] == spec.pinned().to_json()
    assert {k for k in g.attrs if k.startswith(schema.SETTING_PREFIX)}


@pytest.mark.parametrize("which", ["tensor_sigma_vectors", "tensor_eps_methods", "model_topics"])
def test_every_variable_the_kernel_computes_is_described(which):
    spec = spec_from_dict(SPECS[which])
    layout = make_layout(spec, block_size=4)
    task = block_task(spec, layout, layout.n_blocks - 1)
    result = compute_block(task)
    described = kind_of(spec).variables(spec)
    assert list(result.data) == list(described)
    extent = {schema.STEP: task.n_steps, schema.COMPONENT: task.n_component}
    for name, arr in result.data.items():
        var = described[name]
        assert arr.dtype == np.dtype(var.dtype), name
        assert arr.shape == task.shape + tuple(extent[d] for d in var.dims), name


def test_dims_and_variables_are_consistent():
    """Each kind declares its own sweep dims (in cube order) and variables in its own module;
    they agree with its spec's axes, with the dims every cube has and with each other."""
    for kind in KINDS.values():
        # A kind's spec axes name its dims, in its dims' order (the cube's axis order).
        if hasattr(kind, "axis_keys"):
            assert list(kind.axis_keys.values()) == list(kind.dims), kind.name
        for name, dim in kind.dims.items():
            assert dim.name == name and dim.dtype in ("str", "f8", "i8"), (kind.name, name)
            assert name not in schema.DIMS, (kind.name, name)
            # A dim several kinds sweep is one record, the shared one.
            assert name not in schema.SHARED_AXES or dim is schema.SHARED_AXES[name]
        for name, var in kind.all_variables.items():
            assert var.name == name and var.dtype in ("f8", "bool")
            assert all(d in schema.DIMS for d in var.dims)
            assert var.attrs["long_name"] == var.long_name and var.attrs["units"]
            assert (var.fill is False) if var.dtype == "bool" else math.isnan(var.fill)
    assert list(AXIS_KEYS.values()) == list(KINDS["tensor"].dims)
    assert list(MODEL_AXIS_KEYS.values()) == list(KINDS["model"].dims)
    assert _cube.CATEGORICAL_AXES == ("noise", "method")
    for name, var in schema.BOOKKEEPING.items():
        assert var.name == name and var.dims == (schema.BLOCK,) and not var.over_grid
    assert V_HAT.dims == (schema.STEP, schema.COMPONENT)


def test_schema_is_plain_data():
    """The vocabulary imports nothing heavy: no numpy, Dask, zarr or xarray."""
    code = (
        "import sys, importlib.util;"
        "spec = importlib.util.spec_from_file_location('s', sys.argv[1]);"
        "mod = importlib.util.module_from_spec(spec); sys.modules['s'] = mod;"
        "spec.loader.exec_module(mod);"
        "top = {m.split('.')[0] for m in sys.modules};"
        "print(','.join(sorted(top & {'numpy', 'dask', 'distributed', 'zarr', 'xarray'})))"
    )
    path = Path(schema.__file__)
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


def test_eps_scaled_target_is_theorem_3_1s_scale():
    # ||E|| = eps_scaled * lambda_min * n^(-1/(p-1)): n = 16, p = 3 gives a factor 1/4.
    assert eps_scaled_target(2.0, 0.5, 16, 3) == 0.25
    assert eps_scaled_target(1.0, 1.0, 8, 4) == 0.5


def test_the_worker_scales_eps_scaled_instances_to_the_schema_target():
    spec = spec_from_dict(SPECS["tensor_eps_scaled"])
    layout = make_layout(spec, block_size=4)
    for b in range(layout.n_blocks):
        task = block_task(spec, layout, b)
        members = [(s, rep) for _, s, rep in task.instances(spec)]
        drawn = draw_group(spec, members)
        for (s, _), eps, lam in zip(members, drawn.eps, drawn.lambdas, strict=True):
            want = eps_scaled_target(s.level, float(np.abs(lam).min()), s.n, s.p)
            assert eps == pytest.approx(want, rel=1e-12)


def test_steps_record_how_their_best_value_was_found(tmp_path):
    """n_best (starts that reached the best value) and confirmed (an independent confirmation
    upheld the best value) are stored per step; NaN / False past an instance's last step."""
    spec = spec_from_dict(SPECS["tensor_eps_methods"])
    layout = make_layout(spec, block_size=4)
    task = block_task(spec, layout, 0)
    data = compute_block(task).data
    steps = np.isfinite(data["lam_hat"])
    assert steps.any() and not steps.all()  # rank 1 and 2 share the step dim
    assert (data["n_best"][steps] >= 1).all() and np.isnan(data["n_best"][~steps]).all()
    assert not data["confirmed"][~steps].any()
    # sshopm's confirmation closes on these tiny problems; power never confirms.
    where = layout.dims.index("method")
    methods = np.array(layout.coord("method"))[layout.block_region(0)[where]]
    for m, want in (("sshopm", True), ("power", False)):
        sel = np.take(data["confirmed"], np.flatnonzero(methods == m), axis=where)
        ok = np.take(steps, np.flatnonzero(methods == m), axis=where)
        assert sel[ok].all() if want else not sel[ok].any(), m


def test_a_store_made_before_n_best_is_resumed_in_its_own_format(tmp_path):
    from sroa_dist.sweep.store.block_write import write_block

    spec = spec_from_dict(SPECS["tensor_sigma_vectors"])
    layout = make_layout(spec, block_size=4)
    url = str(tmp_path / "old.zarr")
    prepare_store(url, spec, layout)
    g = zarr.open_group(url, mode="r+")
    for name in ("n_best", "confirmed"):  # the format of a store from before they existed
        del g[name]
    task = block_task(spec, layout, 0)
    write_block(url, 0, compute_block(task))
    g = zarr.open_group(url, mode="r")
    assert "n_best" not in g and "confirmed" not in g
    assert np.isfinite(g["lam_hat"][layout.block_region(0)]).any()
