"""A second toy study kind, defined outside the package: the spiked Wigner matrix.

It is the proof of issue 34's constraint that a new study is one kind module plus one spec
(tests/sweep/toy_spike.toml), with no edit anywhere under ``sroa_dist/``: the spec names this
module's :data:`TOY_SPIKE` by import path (``kind = "tests.sweep.toy_study_kind:TOY_SPIKE"``),
and everything the package needs to know about the study -- its spec grammar and the meaning
of each key, its dims and cube variables, its seeds, cost model and layout, its block kernel,
its provenance, its report section and its figure -- is declared here.

The study: ``M = strength · e₁e₁ᵀ + level · W/√n`` with ``W`` a symmetric Gaussian matrix
(GOE, off-diagonal variance 1), and the overlap ``|⟨u, e₁⟩|`` of ``M``'s top eigenvector ``u``
with the spike. Above ``level = strength`` (the BBP transition) the overlap vanishes as n
grows; below it tends to ``sqrt(1 - (level/strength)²)``. One ``eigh`` per instance: cheap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from matplotlib.figure import Figure

from sroa_dist.analysis import KindAnalysis
from sroa_dist.sweep import SHARED_AXES
from sroa_dist.sweep.cube import Dim, Variable, by_name
from sroa_dist.sweep.layout import (
    BlockResult,
    BlockTask,
    Layout,
    allocate,
    default_block_size,
    grid_layout,
    stable_hash32,
)
from sroa_dist.sweep.spec import (
    COMMON_SCHEMA,
    SpecError,
    SweepSpec,
    build_axes,
    key_meanings,
    validate_table,
)

#: The spec's ``kind`` key for this kind (what tests/sweep/toy_spike.toml says).
PATH = "tests.sweep.toy_study_kind:TOY_SPIKE"

SCHEMA: dict[str, Any] = {
    **COMMON_SCHEMA,
    "toy_spike": {
        "n": ("int_axis", None, True),
        "level": ("float_axis", None, True),
        "strength": ("float", 1.0, False),
    },
}
AXIS_KEYS: Mapping[str, str] = {"toy_spike.n": "n", "toy_spike.level": "level"}
#: The toy's own dim (declared here, not in sroa_dist/sweep/cube.py); ``n`` is a shared one.
LEVEL = Dim("level", "f8", "noise level of the Wigner part, relative to the spike")
DIMS: Mapping[str, Dim] = by_name(SHARED_AXES["n"], LEVEL)
VARIABLES: Mapping[str, Variable] = by_name(
    Variable("overlap", (), "f8", "|<u, e_1>| of the top eigenvector u with the spike"),
    Variable("top_eig", (), "f8", "largest eigenvalue of the spiked matrix"),
)
MEANINGS: Mapping[str, str] = key_meanings(
    SCHEMA,
    {
        "toy_spike.n": "matrix size n",
        "toy_spike.level": "noise level of the Wigner part (the BBP transition is at strength)",
        "toy_spike.strength": "the spike's eigenvalue",
    },
)
#: Seconds of one instance per n³ (one symmetric eigendecomposition), measured loosely.
SECONDS_PER_N3 = 2e-8


@dataclass(frozen=True)
class SpikeSettings:
    n: int
    level: float

    def seed_key(self) -> tuple[int, ...]:
        return (stable_hash32("n", self.n), stable_hash32("level", self.level))

    def group_key(self) -> tuple[Any, ...]:
        return (self.n, self.level)

    def cost(self) -> float:
        return 1e-4 + SECONDS_PER_N3 * self.n**3


@dataclass(frozen=True)
class SpikeSpec(SweepSpec):
    kind: ClassVar[str] = "toy_spike"
    axis_keys: ClassVar[Mapping[str, str]] = AXIS_KEYS

    @property
    def strength(self) -> float:
        return float(self.data["toy_spike"]["strength"])

    @property
    def ranks(self) -> tuple[int, ...]:
        return (1,)

    def settings_at(self, coords: Mapping[str, Any]) -> SpikeSettings:
        return SpikeSettings(
            int(self.setting("toy_spike.n", coords)), float(self.setting("toy_spike.level", coords))
        )


@dataclass(frozen=True)
class SpikeProblem:
    """One instance: its matrix is drawn from its own seed, so it is rebuilt exactly."""

    n: int
    level: float
    strength: float
    seed: int
    spawn_key: tuple[int, ...]

    def matrix(self) -> np.ndarray:
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=self.spawn_key))
        g = rng.standard_normal((self.n, self.n))
        w = (g + g.T) / np.sqrt(2.0)
        m = self.level * w / np.sqrt(self.n)
        m[0, 0] += self.strength
        return m

    def run(self) -> tuple[float, float]:
        values, vectors = np.linalg.eigh(self.matrix())
        return float(abs(vectors[0, -1])), float(values[-1])


def _spike_section(doc: Any, ds: Any, fig_dir: Path, *, n_boot: int, rng: int) -> list[Path]:
    """The report section: the mean overlap at each (n, level), and the overlap figure."""
    doc.heading("Spike overlap")
    mean = ds["overlap"].mean("replicate")
    rows = [
        [int(n), float(lv), f"{float(mean.sel(n=n, level=lv)):.6f}"]
        for n in ds["n"].values
        for lv in ds["level"].values
    ]
    doc.table(["n", "level", "mean overlap"], rows)
    path = Path(fig_dir) / "spike_overlap.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    _draw_overlap(ds).savefig(path)
    return [path]


def _draw_overlap(ds: Any, *, status: Any = None) -> Figure:
    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    for n in ds["n"].values:
        ax.plot(ds["level"].values, ds["overlap"].sel(n=n).mean("replicate").values, label=f"n={n}")
    ax.set_xlabel("level")
    ax.set_ylabel("mean overlap")
    ax.legend()
    return fig


ANALYSIS = KindAnalysis(
    instances=False,
    report_section=_spike_section,
    figures=lambda ds: [],
    drawings={"spike_overlap": _draw_overlap},
)


class ToySpikeKind:
    """The toy study kind: marker table ``[toy_spike]``; named by path, never registered."""

    name = "toy_spike"
    marker = "toy_spike"
    all_variables: Mapping[str, Variable] = VARIABLES
    dims: Mapping[str, Dim] = DIMS
    schema: Mapping[str, Any] = SCHEMA
    axis_keys: Mapping[str, str] = AXIS_KEYS
    key_meanings: Mapping[str, str] = MEANINGS
    analysis = ANALYSIS
    step_meaning = "none: one eigendecomposition per instance"

    def parse(self, raw: Mapping[str, Any], source: str) -> SpikeSpec:
        data = validate_table(raw, SCHEMA, "", source)
        axes = build_axes(data, SCHEMA, AXIS_KEYS, source)
        if min(axes["toy_spike.n"].values) < 2:
            raise SpecError(source, "toy_spike.n", "sizes n >= 2", min(axes["toy_spike.n"].values))
        if data["toy_spike"]["strength"] <= 0:
            raise SpecError(
                source, "toy_spike.strength", "a spike > 0", data["toy_spike"]["strength"]
            )
        return SpikeSpec(data=data, source=source, axes=axes)

    def mean_cost(self, spec: SpikeSpec) -> float:
        return float(
            np.mean([SpikeSettings(int(n), 0.0).cost() for n in spec.axes["toy_spike.n"].values])
        )

    def instance_cost(self, spec: SpikeSpec, settings: SpikeSettings) -> float:
        return settings.cost()

    def layout(
        self,
        spec: SpikeSpec,
        block_size: int | None = None,
        chunks: Sequence[int] | None = None,
        *,
        memory_limit: int | None = None,
    ) -> Layout:
        cost = self.mean_cost(spec)
        return grid_layout(spec, block_size, chunks, lambda: default_block_size(spec, cost), 1, 1)

    def compute_block(self, task: BlockTask, spec: SpikeSpec) -> BlockResult:
        out = allocate(task, VARIABLES)
        for idx, settings, replicate in task.instances(spec):
            out["overlap"][idx], out["top_eig"][idx] = self.instance(
                spec, settings, replicate
            ).run()
        return BlockResult(task.index, out, 0.0, 0.0, int(np.prod(task.shape)))

    def variables(self, spec: SpikeSpec) -> Mapping[str, Variable]:
        return VARIABLES

    def provenance(self, spec: SpikeSpec) -> dict[str, Any]:
        return {"setting_strength": spec.strength}

    def instance(self, spec: SpikeSpec, settings: SpikeSettings, replicate: int) -> SpikeProblem:
        return SpikeProblem(
            settings.n,
            settings.level,
            spec.strength,
            spec.seed,
            (*settings.seed_key(), int(replicate)),
        )


#: The kind object the spec's ``kind`` key names.
TOY_SPIKE = ToySpikeKind()
