"""The sweep-kind registry (``sroa_dist.sweep.kinds``): dispatch by marker table, the rules of
registration, and that a new kind -- one module (here: this file's ``EchoKind``) and one
registration -- runs through spec loading, the grid, the worker and a real store without any
other change."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest
import zarr

from sroa_dist.analysis import KindAnalysis, supported_figures, write_report
from sroa_dist.sweep import load_spec
from sroa_dist.sweep.cube import Dim, Variable, by_name
from sroa_dist.sweep.kinds import (
    KINDS,
    SweepKind,
    kind_for_raw,
    kind_of,
    make_layout,
    register_kind,
    registry,
    spec_from_dict,
)
from sroa_dist.sweep.layout import (
    BlockResult,
    BlockTask,
    Layout,
    allocate,
    block_task,
    default_block_size,
    grid_layout,
    stable_hash32,
)
from sroa_dist.sweep.run.worker import compute_block
from sroa_dist.sweep.spec.base import COMMON_SCHEMA, SweepSpec
from sroa_dist.sweep.spec.fields import SpecError, build_axes, validate_table
from sroa_dist.sweep.store.block_write import write_block
from sroa_dist.sweep.store.prepare import prepare_store, store_layout
from sroa_dist.sweep.store.read import open_results
from tests.support.helpers import ROOT

SMOKE = sorted((ROOT / "sweeps" / "smoke").glob("*.toml"))


def test_builtin_kinds_are_registered_and_implement_the_protocol():
    assert set(KINDS) >= {"tensor", "model"}
    for name, kind in KINDS.items():
        assert isinstance(kind, SweepKind) and kind.name == name
    assert [k.name for k in KINDS.values() if k.marker is None] == ["tensor"]
    with pytest.raises(TypeError):
        KINDS["x"] = KINDS["tensor"]  # read-only view


@pytest.mark.parametrize("path", SMOKE, ids=[p.stem for p in SMOKE])
def test_every_smoke_spec_is_dispatched_to_its_kind(path):
    raw = tomllib.loads(path.read_text())
    kind = kind_for_raw(raw)
    assert kind.name == next((k for k in ("model", "threshold") if k in raw), "tensor")
    spec = load_spec(path)
    assert kind_of(spec) is kind and spec.kind == kind.name
    layout = make_layout(spec)
    assert layout == kind.layout(spec)
    dims, coords = layout.dims[:-1], layout.coords[:-1]
    point = {d: c[0] for d, c in zip(dims, coords, strict=True)}
    settings = spec.settings_at(point)
    assert callable(settings.seed_key) and callable(settings.group_key)


def test_registration_rules():
    with pytest.raises(ValueError, match="implementing SweepKind"):
        register_kind(object())
    with pytest.raises(ValueError, match="already registered"):
        register_kind(KINDS["model"])

    class Other(EchoKind):
        name = "other"

    with pytest.raises(ValueError, match=r"table \[echo\] is already kind 'echo'"):
        with _registered(EchoKind()):
            register_kind(Other())
    assert "echo" not in KINDS and "other" not in KINDS

    @dataclass(frozen=True)
    class Stray(SweepSpec):
        kind: ClassVar[str] = "stray"

    with pytest.raises(ValueError, match="spec kind: expected one of"):
        kind_of(Stray(data={}))


def test_a_spec_with_two_kinds_tables_is_refused():
    with _registered(EchoKind()):
        raw = {"name": "x", "echo": {"x": 1.0}, "model": {"name": "topics"}}
        with pytest.raises(SpecError, match="one kind of sweep"):
            spec_from_dict(raw)


# ---- a new kind: one module, one registration ------------------------------------------------

ECHO_VALUE = Variable("echo_value", (), "f8", "x * (replicate + 1) + u, u ~ U(0, 1) seeded")
#: The toy's own sweep dim, declared here like any kind's (not in sroa_dist/sweep/cube.py).
ECHO_X = Dim("x", "f8", "the toy's x", units="echo units")
ECHO_SCHEMA: dict[str, Any] = {
    **COMMON_SCHEMA,
    "echo": {"x": ("float_axis", None, True)},
}


@dataclass(frozen=True)
class EchoSettings:
    x: float

    def seed_key(self) -> tuple[int, ...]:
        return (stable_hash32("x", self.x),)

    def group_key(self) -> tuple[Any, ...]:
        return (self.x,)


@dataclass(frozen=True)
class EchoSpec(SweepSpec):
    kind: ClassVar[str] = "echo"
    axis_keys: ClassVar[Mapping[str, str]] = {"echo.x": ECHO_X.name}

    @property
    def ranks(self) -> tuple[int, ...]:
        return (1,)

    def settings_at(self, coords: Mapping[str, Any]) -> EchoSettings:
        return EchoSettings(float(self.setting("echo.x", coords)))


class EchoKind:
    name = "echo"
    marker = "echo"
    all_variables: Mapping[str, Variable] = {ECHO_VALUE.name: ECHO_VALUE}
    dims: Mapping[str, Dim] = by_name(ECHO_X)

    def parse(self, raw: Mapping[str, Any], source: str) -> EchoSpec:
        data = validate_table(raw, ECHO_SCHEMA, "", source)
        return EchoSpec(
            data=data, source=source, axes=build_axes(data, ECHO_SCHEMA, EchoSpec.axis_keys, source)
        )

    def mean_cost(self, spec: EchoSpec) -> float:
        return 1e-3

    def layout(
        self,
        spec: EchoSpec,
        block_size: int | None = None,
        chunks: Sequence[int] | None = None,
        *,
        memory_limit: int | None = None,
    ) -> Layout:
        return grid_layout(spec, block_size, chunks, lambda: default_block_size(spec, 1e-3), 1, 1)

    def compute_block(self, task: BlockTask, spec: EchoSpec) -> BlockResult:
        out = allocate(task, self.variables(spec))
        for idx, s, rep in task.instances(spec):
            out["echo_value"][idx] = s.x * (rep + 1) + self.instance(spec, s, rep)
        return BlockResult(task.index, out, 0.0, 0.0, int(np.prod(task.shape)))

    def variables(self, spec: EchoSpec) -> Mapping[str, Variable]:
        return self.all_variables

    def provenance(self, spec: EchoSpec) -> dict[str, Any]:
        return {"setting_echo": "toy"}

    def instance(self, spec: EchoSpec, settings: EchoSettings, replicate: int) -> float:
        ss = np.random.SeedSequence(spec.seed, spawn_key=(*settings.seed_key(), replicate))
        return float(np.random.default_rng(ss).random())


class _registered:
    """Register a kind for the duration of a ``with`` block."""

    def __init__(self, kind: Any):
        self.kind = kind

    def __enter__(self) -> Any:
        register_kind(self.kind)
        return self.kind

    def __exit__(self, *exc: Any) -> None:
        registry._KINDS.pop(self.kind.name, None)


def test_a_new_kind_runs_end_to_end_on_a_real_store(tmp_path):
    """Spec loading, grid, worker and storage reach the new kind through the registry only."""
    raw = {"name": "echo", "seed": 3, "replicates": 4, "echo": {"x": [0.5, 1.0, 2.0]}}
    with _registered(EchoKind()):
        spec = spec_from_dict(raw)
        assert isinstance(spec, EchoSpec)
        layout = make_layout(spec, block_size=2)
        assert layout.dims == ("x", "replicate") and layout.n_blocks == 6
        url = str(tmp_path / "echo.zarr")
        prepare_store(url, spec, layout)
        for b in range(layout.n_blocks):
            task = block_task(spec, layout, b)
            write_block(url, b, compute_block(task))
        stored_spec, stored_layout = store_layout(url)
        assert stored_spec.to_json() == spec.pinned().to_json()
        assert stored_layout.coords == layout.coords
        ds = open_results(url)
        assert ds.attrs["setting_echo"] == "toy" and bool(ds["done"].all())
        # The coordinate of the kind's own dim is stored as the kind declared it.
        assert ds["x"].dtype == np.float64 and ds["x"].attrs["units"] == "echo units"
        assert ds["x"].attrs["long_name"] == "the toy's x"
        # The store records its kind, and the cube names it: analysis asks the registry.
        assert zarr.open_group(url, mode="r").attrs["sroa_kind"] == "echo"
        assert ds.attrs["sroa_kind"] == "echo" and kind_of(ds) is KINDS["echo"]
        got = ds["echo_value"].values
        kind = KINDS["echo"]
        for i, x in enumerate(layout.coord("x")):
            for r in range(4):
                u = kind.instance(spec, spec.settings_at({"x": x}), r)
                assert got[i, r] == x * (r + 1) + u
    assert "echo" not in KINDS


def _echo_section(doc: Any, ds: Any, fig_dir: Any, *, n_boot: int, rng: int) -> list[Any]:
    """The toy kind's report section: the mean of its one variable."""
    doc.heading("Echo values")
    doc.para(f"mean echo_value: {float(ds['echo_value'].mean()):.6f}")
    return []


class EchoWithReport(EchoKind):
    """The toy kind with its own report section and no figures, in this module only."""

    analysis = KindAnalysis(instances=False, report_section=_echo_section, figures=lambda ds: [])


def test_a_new_kind_gets_its_own_report_section(tmp_path):
    """``sroa-dist report`` (write_report on the store's cube) reaches the new kind's report
    hook through the registry: the store names the kind, nothing else was edited."""
    raw = {"name": "echo", "seed": 3, "replicates": 2, "echo": {"x": [0.5, 1.0]}}
    with _registered(EchoWithReport()):
        spec = spec_from_dict(raw)
        layout = make_layout(spec, block_size=2)
        url = str(tmp_path / "echo.zarr")
        prepare_store(url, spec, layout)
        for b in range(layout.n_blocks):
            write_block(url, b, compute_block(block_task(spec, layout, b)))
        ds = open_results(url)
        assert supported_figures(ds) == []
        md = write_report(ds, tmp_path / "r.md", formats=("md",), n_boot=0)[0].read_text()
    mean = float(ds["echo_value"].mean())
    assert "## Echo values" in md and f"mean echo_value: {mean:.6f}" in md
    assert "## Instances" not in md  # the kind said it has no per-step SROA results


def test_a_store_is_read_as_the_kind_it_records(tmp_path):
    """``sroa_kind`` decides how the stored spec is read: a store naming a kind that is not
    registered is refused, naming the registered ones, and a cube without the attr has no kind
    (nothing looks at its variables to guess one)."""
    raw = {"name": "echo", "seed": 3, "replicates": 2, "echo": {"x": [0.5, 1.0]}}
    with _registered(EchoKind()):
        spec = spec_from_dict(raw)
        url = str(tmp_path / "echo.zarr")
        prepare_store(url, spec, make_layout(spec, block_size=2))
        assert store_layout(url)[0].kind == "echo"
    with pytest.raises(
        ValueError, match=r"sroa_kind: expected one of \[[^\]]*'model'[^\]]*'tensor'"
    ):
        store_layout(url)  # the toy kind is gone: the store says what it is, and it is refused
    cube = open_results_like(url)
    with pytest.raises(ValueError, match="cube kind: expected a parsed spec or a cube"):
        kind_of(cube)


def open_results_like(url: str) -> Any:
    """A cube opened past :func:`open_results` (xarray directly), its kind attr dropped."""
    import xarray as xr

    ds = xr.open_zarr(url, consolidated=False)
    del ds.attrs["sroa_kind"]
    return ds


def test_verify_rebuilds_tensors_through_the_kind():
    """``verify`` asks the store's kind for the tensors its certificates speak of: the tensor
    kind's block draws them, and a kind without the hook is named, not guessed at."""
    from sroa_dist.sweep.store.verify import _instance_tensors

    spec = load_spec(ROOT / "sweeps" / "smoke" / "certified.toml", ["replicates=2"])
    layout = make_layout(spec, block_size=2)
    members = [(st, rep) for _, st, rep in block_task(spec, layout, 0).instances(spec)]
    got = _instance_tensors(spec, members[:1])
    want = KINDS["tensor"].instance(spec, *members[0]).T_hat
    assert np.array_equal(got[0], want)
    with _registered(EchoKind()):
        echo = spec_from_dict({"name": "e", "echo": {"x": [1.0]}})
        with pytest.raises(ValueError, match="'echo': expected a certificate_tensors hook"):
            _instance_tensors(echo, [])
