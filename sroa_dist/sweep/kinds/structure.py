"""The structure sweep kind: is a latent variable model's sampling noise attractor-like or
isotropic? (issue 36, "Does a global step buy samples?", item 3)

Global rank-one steps tolerate ``‖E‖`` of order ``λ_min·k^{−1/(p−1)}``, the power method's
analysis only ``λ_min/k``; the rate study found the two apart only where the perturbation
captures random starts (the ``attractor`` family). An instance of this kind samples a model at
a sample size ``N`` and measures its perturbation ``E = T̂ − T`` with the attractor study's
diagnostics (:func:`sroa_dist.moments.noise_structure`): ``‖E‖`` (certified where the moment
relaxation is tractable, else a multi-start lower bound) beside both scales; the overlaps of
E's best rank-one direction with one component and with the attractor's direction, each beside
its value for a uniform random direction; the per-start escape probability ``q`` of the power
method (AGHKT iterations) on ``T + E``, on ``T`` alone (the same starts) and on the attractor
family at the same ``k`` and relative norm.

Where the sample size comes from (the ``target`` dim): ``"global"`` and ``"power"`` calibrate
``N`` from a pilot sample of ``pilot_per_k·k`` observations, assuming ``‖E‖ ∝ N^{−1/2}``, to put
``‖E‖`` at ``λ_min·k^{−1/(p−1)}`` or at ``λ_min/k``, capped at ``N·k^p <= cost_cap`` (the
estimator's cost) and ``N <= n_cap``; ``"N=<size>"`` takes that size as it is (e.g. a measured
N*). The realised ratios are stored, so a calibration that misses says so.

Grammar (marker table ``[structure]``)::

    name, seed, replicates, description
    [structure]  model, k, d, d_per_k, L (topics), sigma2 (gmm), weights, zipf_exponent
                 (the model keys of :mod:`.moment_model`), target, pilot_per_k, cost_cap,
                 n_cap, starts, whitening, attractor_reference
    [structure.prior]     as a model sweep's [model.prior]

``structure.k``, ``structure.weights`` and ``structure.target`` may be axes (dims ``k``,
``weights``, ``target``).

Seeding: a grid point's model is drawn from ``SeedSequence(seed, spawn_key=(h(model), h(k),
h(d), h(weights), 0, 0))`` and its pilot sample from ``(..., 0, 1)``; replicate ``r`` at target
``t`` samples and measures from ``(..., r, 2, h(target=t))`` (``h`` is
:func:`~..layout.stable_hash32`). Every replicate resamples the same model (the noise of one
model, as the samples kind's search follows one model per draw), and every target of a point
is calibrated from the same pilot: a result is a pure function of (seed, coordinates,
replicate).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from sroa_dist.errors import InputError
from sroa_dist.methods import relaxation_tractable, solve_cost
from sroa_dist.moments import WHITENINGS, NoiseStructure, noise_structure

from ..cube import COMPONENT, Dim, Variable, by_name
from ..layout import WORKER_BASE_BYTES, BlockResult, BlockTask, Layout, stable_hash32
from ..spec import (
    COMMON_SCHEMA,
    SpecError,
    SweepSpec,
    build_axes,
    check_replicates,
    key_meanings,
    validate_table,
)
from .base import GridPoint, KindBase, grid_points, timed_block
from .moment_model import (
    MODEL_DIMS,
    MODEL_SCHEMA,
    MomentModelPoint,
    check_model_keys,
    model_fields,
    model_meanings,
    model_order,
    norm_revision_options,
)

__all__ = [
    "STRUCTURE",
    "STRUCTURE_SCHEMA",
    "STRUCTURE_VARIABLES",
    "StructureKind",
    "StructureSettings",
    "StructureSweepSpec",
    "parse_target",
]

#: The schema of a structure spec: ``(vtype, default, required)`` per key (:mod:`..spec.fields`).
STRUCTURE_SCHEMA: dict[str, Any] = {
    **{k: COMMON_SCHEMA[k] for k in ("name", "description", "seed", "replicates")},
    "structure": {
        **MODEL_SCHEMA,
        "target": ("str_axis", ["global", "power"], False),
        "pilot_per_k": ("int", 200, False),
        "cost_cap": ("float", 4e10, False),
        "n_cap": ("int", 2_000_000, False),
        "starts": ("int", 400, False),
        "whitening": ("str", "estimated", False),
        "attractor_reference": ("bool", True, False),
    },
    # The common [solver] and [output] tables: the store pins [solver.revisions] (the norm's
    # methods, certified and sshopm, run at the pinned revisions); nothing else is set.
    "solver": COMMON_SCHEMA["solver"],
    "output": COMMON_SCHEMA["output"],
}

#: Dotted spec key -> axis (dimension) name, for keys that may be swept.
AXIS_KEYS: dict[str, str] = {
    "structure.k": "k",
    "structure.weights": "weights",
    "structure.target": "target",
}
#: The ``[structure]`` keys that may be axes (their values are the cube's coordinates).
AXIS_LEAVES = ("k", "weights", "target")

#: Sweep dims of structure sweeps, in cube order.
STRUCTURE_DIMS: Mapping[str, Dim] = by_name(
    MODEL_DIMS["k"],
    MODEL_DIMS["weights"],
    Dim(
        "target",
        "str",
        "what the sample size is set by: global (||E|| calibrated to lambda_min*k^(-1/(p-1))), "
        "power (to lambda_min/k), or N=<size>",
    ),
)

_TARGET = re.compile(r"^(global|power)$|^N=(\d+)$")
_TARGET_HINT = 'targets: "global", "power" or "N=<sample size>", e.g. target = ["global", "power"]'


def parse_target(label: Any) -> tuple[str, int | None]:
    """``("global" | "power", None)`` or ``("N", size)`` for a target label; ``InputError``
    outside the grammar."""
    m = _TARGET.match(label) if isinstance(label, str) else None
    if m is None or (m.group(2) is not None and int(m.group(2)) < 2):
        raise InputError(f"target: expected a target label; received {label!r}", _TARGET_HINT)
    return (m.group(1), None) if m.group(1) else ("N", int(m.group(2)))


_Q = (("note", "hits of `starts` uniform starts after the AGHKT number of power iterations"),)

#: Variables of a structure sweep, in documented order.
STRUCTURE_VARIABLES: Mapping[str, Variable] = by_name(
    Variable("n_samples", (), "f8", "sample size N of the measured sample"),
    Variable(
        "n_wanted",
        (),
        "f8",
        "sample size the pilot's calibration asked for (before the caps; NaN for N=<size>)",
    ),
    Variable("capped", (), "bool", "N was capped (cost_cap on N*k^p, or n_cap) below n_wanted"),
    Variable("pilot_n", (), "f8", "pilot sample size (NaN for N=<size>)"),
    Variable("pilot_eps", (), "f8", "||E|| of the pilot sample (NaN for N=<size>)"),
    Variable(
        "eps",
        (),
        "f8",
        "||E|| at N: its attained lower end (E = T_hat - T, T in T_hat's whitened coordinates)",
        extra=(("paper", "epsilon = ||E||"),),
    ),
    Variable("eps_upper", (), "f8", "certified upper bound of ||E|| (inf where not certified)"),
    Variable("eps_certified", (), "bool", "||E|| is bracketed by a certificate"),
    Variable("lambda_min", (), "f8", "smallest |lambda_i| of T"),
    Variable("lambda_max", (), "f8", "largest |lambda_i| of T"),
    Variable(
        "scale_global",
        (),
        "f8",
        "lambda_min * k^(-1/(p-1)): the ||E|| global steps tolerate (the paper's O(n^(-1/(p-1))))",
    ),
    Variable(
        "scale_power", (), "f8", "lambda_min / k: the ||E|| the power method's analysis tolerates"
    ),
    Variable("component_overlap", (), "f8", "max_i |v_i . x_E|, x_E: E's best rank-one direction"),
    Variable("component_overlap_random", (), "f8", "mean of max_i |v_i . x| over uniform random x"),
    Variable(
        "attractor_overlap",
        (),
        "f8",
        "|sum_i s_i v_i . x_E| / sqrt(k): x_E against the attractor's direction (s_i = 1 for odd "
        "p; sign(v_i . x_E) for even p, whose components have no sign)",
    ),
    Variable(
        "attractor_overlap_random", (), "f8", "mean attractor overlap of uniform random directions"
    ),
    Variable("overlaps", (COMPONENT,), "f8", "|v_i . x_E| per component i (NaN past k)"),
    Variable(
        "q_hits", (), "f8", "starts ending within the radius of a component on T + E", extra=_Q
    ),
    Variable("q_clean_hits", (), "f8", "the same starts' hits on T alone (no noise)", extra=_Q),
    Variable(
        "q_attractor_hits",
        (),
        "f8",
        "hits on the attractor family at the same k and ||E||/lambda_max (NaN: not measured)",
        extra=_Q,
    ),
    Variable("starts", (), "f8", "uniform starts behind each q"),
    Variable("n_iter", (), "f8", "power iterations per start (the AGHKT budget's at ||E||)"),
    Variable("solve_time", (), "f8", "wall seconds of the instance (pilot included)", units="s"),
)


# --------------------------------------------------------------------------------------------
# Spec and settings


@dataclass(frozen=True)
class StructureSweepSpec(SweepSpec):
    """A validated structure sweep spec: the ``[structure]`` table."""

    kind: ClassVar[str] = "structure"
    axis_keys: ClassVar[Mapping[str, str]] = AXIS_KEYS

    @property
    def structure(self) -> Mapping[str, Any]:
        """The ``[structure]`` table (resolved)."""
        return self.data["structure"]

    @property
    def order(self) -> int:
        """Order p of the model's moment tensor."""
        return model_order(self.structure["model"])

    @property
    def ranks(self) -> tuple[int, ...]:
        """The whitened dimensions k (the ``component`` dim holds per-component overlaps)."""
        return tuple(int(k) for k in self.axes["structure.k"].values)

    def settings_at(self, coords: Mapping[str, Any]) -> StructureSettings:
        """The :class:`StructureSettings` of a grid point."""
        s = self.structure
        k, weights = self.setting("structure.k", coords), self.setting("structure.weights", coords)
        return StructureSettings(
            **model_fields(s, k, weights),
            target=str(self.setting("structure.target", coords)),
            pilot_per_k=int(s["pilot_per_k"]),
            cost_cap=float(s["cost_cap"]),
            n_cap=int(s["n_cap"]),
            starts=int(s["starts"]),
            whitening=str(s["whitening"]),
            attractor_reference=bool(s["attractor_reference"]),
        )


@dataclass(frozen=True)
class StructureSettings(GridPoint, MomentModelPoint):
    """One grid point: the model (seeded by its coordinates but the target), the target and
    the measurement's settings (not seeded)."""

    seed_fields = ("model", "k", "d", "weights")

    model: str
    k: int
    d: int
    L: int | None
    sigma2: float | None
    weights: str
    zipf_exponent: float
    target: str
    prior: tuple[tuple[str, Any], ...] = ()
    pilot_per_k: int = 200
    cost_cap: float = 4e10
    n_cap: int = 2_000_000
    starts: int = 400
    whitening: str = "estimated"
    attractor_reference: bool = True

    @property
    def pilot_n(self) -> int:
        """The pilot's sample size."""
        return self.pilot_per_k * self.k

    @property
    def cap(self) -> int:
        """Largest sample size measured: ``min(n_cap, cost_cap / k^p)``, at least ``4k``."""
        return max(4 * self.k, int(min(self.n_cap, self.cost_cap / self.k**self.order)))

    def pilot_seed(self, seed: int) -> np.random.SeedSequence:
        """Seed of the pilot sample (shared by the point's targets and replicates)."""
        return self.seed(seed, 0, 1)

    def measure_seed(self, seed: int, replicate: int) -> np.random.SeedSequence:
        """Seed of replicate ``replicate``'s sample and measurement at this point's target."""
        return self.seed(seed, replicate, 2, stable_hash32("target", self.target))

    def draw(self, seed: int) -> Any:
        """The point's model, drawn from its seeded prior."""
        return self.model_from(np.random.default_rng(self.seed(seed, 0, 0)))


@dataclass(frozen=True)
class Calibration:
    """How an instance's sample size was chosen: the pilot (NaN for a fixed size), the size
    asked for and the size measured."""

    n_samples: int
    n_wanted: float = math.nan
    pilot_n: float = math.nan
    pilot_eps: float = math.nan

    @property
    def capped(self) -> bool:
        return bool(math.isfinite(self.n_wanted) and self.n_wanted > self.n_samples)


@dataclass(frozen=True)
class StructureInstance:
    """One instance as its block computes it: :meth:`run` gives the calibration and the
    measured structure."""

    settings: StructureSettings
    seed: int
    replicate: int
    #: Per norm method, the options of the revision the store pins (empty at the current ones).
    norm_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def calibrate(self, model: Any) -> Calibration:
        """The sample size: fixed, or from the pilot's ``‖E‖`` (``‖E‖ ∝ N^{−1/2}``)."""
        s = self.settings
        kind, size = parse_target(s.target)
        if kind == "N":
            return Calibration(int(size or 0))
        pilot = noise_structure(
            model,
            s.pilot_n,
            rng=s.pilot_seed(self.seed),
            whitening=s.whitening,
            n_starts=1,
            attractor_reference=False,
            norm_options=self.norm_options,
        )
        scale = pilot.global_scale if kind == "global" else pilot.power_scale
        want = float(round(s.pilot_n * (pilot.eps / scale) ** 2))
        n = max(4 * s.k, int(min(want, s.cap)))
        return Calibration(n, want, float(s.pilot_n), pilot.eps)

    def run(self) -> tuple[Calibration, NoiseStructure]:
        """The calibration and the structure of ``E`` at its sample size."""
        s = self.settings
        model = s.draw(self.seed)
        cal = self.calibrate(model)
        res = noise_structure(
            model,
            cal.n_samples,
            rng=s.measure_seed(self.seed, self.replicate),
            whitening=s.whitening,
            n_starts=s.starts,
            attractor_reference=s.attractor_reference,
            norm_options=self.norm_options,
        )
        return cal, res


def structure_instance(
    spec: StructureSweepSpec, settings: StructureSettings, replicate: int
) -> StructureInstance:
    """Instance ``(settings, replicate)`` as its block computes it."""
    options = norm_revision_options(spec.solver.revisions)
    return StructureInstance(settings, int(spec.seed), int(replicate), options)


# --------------------------------------------------------------------------------------------
# Validation


def structure_spec_from_dict(raw: Mapping[str, Any], source: str = "<dict>") -> StructureSweepSpec:
    """Validate a structure spec given as a (TOML-like) dict and resolve defaults; ``SpecError``
    naming the source and key otherwise."""
    data = validate_table(raw, STRUCTURE_SCHEMA, "", source)
    axes = build_axes(data, STRUCTURE_SCHEMA, AXIS_KEYS, source)
    check_replicates(data["replicates"], source)
    s = data["structure"]
    check_model_keys(
        s, axes["structure.k"].values, axes["structure.weights"].values, "structure", source
    )
    kmax = max(axes["structure.k"].values)
    for label in axes["structure.target"].values:
        try:
            kind, size = parse_target(label)
        except InputError:
            raise SpecError(
                source, "structure.target", "a target label", label, _TARGET_HINT
            ) from None
        if kind == "N" and (size or 0) < 4 * kmax:
            raise SpecError(
                source,
                "structure.target",
                f"a fixed sample size N >= 4k ({4 * kmax} at the largest k)",
                label,
                "the moment estimators need a few samples per class",
            )
    for key, least in (("pilot_per_k", 2), ("n_cap", 8), ("starts", 1)):
        if s[key] < least:
            raise SpecError(source, f"structure.{key}", f"an integer >= {least}", s[key])
    if not s["cost_cap"] > 0:
        raise SpecError(source, "structure.cost_cap", "a number > 0 (largest N*k^p)", s["cost_cap"])
    if s["whitening"] not in WHITENINGS:
        raise SpecError(
            source,
            "structure.whitening",
            f"one of {list(WHITENINGS)}",
            s["whitening"],
            "estimated: the perturbation SROA sees; population: the moment noise alone",
        )
    solver = data["solver"]
    if solver["method"] != COMMON_SCHEMA["solver"]["method"][1]:
        raise SpecError(
            source,
            "solver.method",
            "no method in a structure sweep",
            solver["method"],
            "the norm's method follows the relaxation's reach (certified, else sshopm); drop "
            "the key",
        )
    for key in ("steps", "norm_method", "options", "norm_options"):
        if solver[key]:
            raise SpecError(
                source,
                f"solver.{key}",
                "nothing in a structure sweep",
                solver[key],
                "a structure sweep runs no SROA; ||E|| is certified where the relaxation fits",
            )
    for key, val in data["output"].items():
        if val:
            raise SpecError(
                source, f"output.{key}", "false in a structure sweep", val, "nothing to store"
            )
    if s["model"] == "ica" and s["pilot_per_k"] * min(axes["structure.k"].values) < 4:
        raise SpecError(
            source, "structure.pilot_per_k", "a pilot of N >= 4 for ica", s["pilot_per_k"]
        )
    return StructureSweepSpec(data=data, source=source, axes=axes)


# --------------------------------------------------------------------------------------------
# Cost, memory


#: Seconds per sample and moment entry (``width·k`` for the whitening, ``k^p/p!`` for the
#: symmetric moment tensor), per start-iteration and tensor entry of the escape counts (three
#: sets of starts: T + E, T and the attractor reference), and of an instance's fixed part
#: (model, pilot set-up, the isotropic reference directions). Fitted to the committed
#: noise-structure stores (78 instances, k = 5-100): their instances' wall times, scaled by
#: their runs' CPU / wall (0.23 topics, 0.27 GMM: one nice-10 worker beside two other runs): the
#: model prices the instances past 1 s at 0.7-4.8x (those at k >= 50 at 0.8-1.3x) and the topics
#: and GMM runs at 1.25x their recorded CPU. The first constants (the samples kind's 5e-9 per
#: entry, two passes, no fixed part) were fitted to nothing here and priced those runs 8.7x over.
SECONDS_PER_SAMPLE_ENTRY = 1.3e-9
SECONDS_PER_START_ENTRY = 5e-11
INSTANCE_FIXED_SECONDS = 0.04
ESCAPE_SETS = 3
#: The sample size the cost model assumes for a calibrated target, in units of the pilot's:
#: the published run's global targets came out at 0.2-6x the pilot, its power targets at
#: 5-130x (most of them capped).
GLOBAL_N_PILOTS = 6.0
POWER_N_PILOTS = 130.0
#: Power iterations the cost model assumes per start (the AGHKT budget's, 6-16 measured).
ESCAPE_ITERATIONS = 16


def instance_seconds(spec: StructureSweepSpec, settings: StructureSettings) -> float:
    """Expected CPU seconds of one instance on one idle core: the pilot and the measured
    sample (their estimates), ``‖E‖`` (a certified or local rank-one solve) and the escape
    counts. A rough model, high rather than low (it sizes the block deadline)."""
    s = settings
    k, p = s.k, s.order
    kind, size = parse_target(s.target)
    if kind == "N":
        n, pilot = float(size or 0), 0.0
    else:
        pilot = float(s.pilot_n)
        many = GLOBAL_N_PILOTS if kind == "global" else POWER_N_PILOTS
        n = min(many * pilot, float(s.cap))
    width = s.d if s.model != "topics" else (s.L or 3)
    entries = width * k + k**p / math.factorial(p)
    sample = SECONDS_PER_SAMPLE_ENTRY * (n + pilot) * entries
    method = "certified" if relaxation_tractable(k, p) else "sshopm"
    norm = solve_cost(method, k, p) * (2 if pilot else 1)
    sets = ESCAPE_SETS if s.attractor_reference else 2
    escape = SECONDS_PER_START_ENTRY * sets * s.starts * ESCAPE_ITERATIONS * float(k) ** p
    return INSTANCE_FIXED_SECONDS + sample + norm + escape


def structure_mean_cost(spec: StructureSweepSpec) -> float:
    """Seconds per instance averaged over the grid (:func:`instance_seconds`)."""
    costs = [instance_seconds(spec, s) for s in grid_points(spec)]
    return sum(costs) / len(costs)


def worker_memory(spec: StructureSweepSpec, layout: Layout) -> float:
    """Peak bytes of a worker: the largest sample (dense ``N × d``, or the topics' ``N × L``
    word indices) and a few ``k^p`` tensors."""
    worst = 0.0
    for s in grid_points(spec):
        kind, size = parse_target(s.target)
        n = float(size) if kind == "N" else float(s.cap)
        width = (s.L or 3) * 6 if s.model == "topics" else s.d * 3
        worst = max(worst, 8.0 * n * width + 8 * 8.0 * float(s.k) ** s.order)
    return WORKER_BASE_BYTES + worst


# --------------------------------------------------------------------------------------------
# Block kernel


def compute_structure_block(task: BlockTask, spec: StructureSweepSpec) -> BlockResult:
    """Every instance of one block (a pure function of the task, timings aside)."""

    def solve(settings: StructureSettings, replicate: int) -> tuple[Calibration, NoiseStructure]:
        return structure_instance(spec, settings, replicate).run()

    def store(
        out: dict[str, np.ndarray],
        idx: tuple[int, ...],
        settings: StructureSettings,
        replicate: int,
        result: tuple[Calibration, NoiseStructure],
    ) -> None:
        write_structure(out, idx, *result)

    return timed_block(task, spec, STRUCTURE_VARIABLES, solve, store)


def write_structure(
    out: dict[str, np.ndarray], idx: tuple[int, ...], cal: Calibration, res: NoiseStructure
) -> None:
    """Store one instance's calibration and structure at ``idx`` of a block's arrays."""
    out["n_samples"][idx] = cal.n_samples
    out["n_wanted"][idx] = cal.n_wanted
    out["capped"][idx] = cal.capped
    out["pilot_n"][idx] = cal.pilot_n
    out["pilot_eps"][idx] = cal.pilot_eps
    out["eps"][idx] = res.eps
    out["eps_upper"][idx] = float(res.norm.upper) if res.certified else math.inf
    out["eps_certified"][idx] = res.certified
    out["lambda_min"][idx], out["lambda_max"][idx] = res.lambda_min, res.lambda_max
    out["scale_global"][idx], out["scale_power"][idx] = res.global_scale, res.power_scale
    out["component_overlap"][idx] = res.component_overlap
    out["component_overlap_random"][idx] = res.component_overlap_random
    out["attractor_overlap"][idx] = res.attractor_overlap
    out["attractor_overlap_random"][idx] = res.attractor_overlap_random
    out["overlaps"][idx][: res.k] = res.overlaps
    out["q_hits"][idx] = res.q.hits
    out["q_clean_hits"][idx] = res.q_clean.hits
    if res.q_attractor is not None:
        out["q_attractor_hits"][idx] = res.q_attractor.hits
    out["starts"][idx] = res.q.n_starts
    out["n_iter"][idx] = res.q.n_iter


#: What each key of a structure spec means (docs/reference/spec.md): the keys this kind reads
#: its own way; the common keys' meanings come from :mod:`..spec.meanings`.
STRUCTURE_KEY_MEANINGS: Mapping[str, str] = key_meanings(
    STRUCTURE_SCHEMA,
    {
        **model_meanings("structure"),
        "structure.target": "what sets N: `global` (‖E‖ calibrated to λ_min·k^(−1/(p−1))), "
        "`power` (to λ_min/k) or `N=<size>`",
        "structure.pilot_per_k": "pilot sample size per class (N0 = pilot_per_k·k) that "
        "calibrates the global and power targets",
        "structure.cost_cap": "largest N·k^p measured (the estimator's cost)",
        "structure.n_cap": "largest N measured",
        "structure.starts": "uniform power-method starts behind each escape probability q",
        "structure.whitening": "`estimated` (T̂ whitened by the sample's own Ŵ: what SROA sees) "
        "or `population` (the moment noise alone)",
        "structure.attractor_reference": "also measure q on the attractor family at the same "
        "k and relative ‖E‖",
        "solver.method": "refused: ‖E‖ is certified where the relaxation fits, else sshopm",
        "solver.steps": "refused: no SROA runs",
        "solver.options": "refused",
        "solver.norm_method": "refused",
        "solver.norm_options": "refused",
        "output.vectors": "refused: per-component overlaps are stored instead",
        "output.certificates": "refused",
    },
)


class StructureKind(KindBase):
    """The ``structure`` kind (marker table ``[structure]``): the sampling noise's structure
    per model, k, weights and target, in blocks sized by the cost model."""

    name = "structure"
    marker = "structure"
    all_variables: Mapping[str, Variable] = STRUCTURE_VARIABLES
    dims: Mapping[str, Dim] = STRUCTURE_DIMS
    #: The spec grammar and its sweepable keys (docs/reference/spec.md lists them).
    schema: Mapping[str, Any] = STRUCTURE_SCHEMA
    axis_keys: Mapping[str, str] = AXIS_KEYS
    key_meanings: Mapping[str, str] = STRUCTURE_KEY_MEANINGS
    #: Report and figure (:class:`sroa_dist.analysis.KindAnalysis`; a path: analysis is a
    #: layer above): overlaps and escape probabilities per model, k and target.
    analysis = "sroa_dist.analysis.structure:STRUCTURE_ANALYSIS"
    #: What the cube's ``step`` dim counts (``sroa-dist validate`` says it).
    step_meaning = "nothing: one measurement per instance (the step dim has length 1)"

    parse = staticmethod(structure_spec_from_dict)
    mean_cost = staticmethod(structure_mean_cost)
    compute_block = staticmethod(compute_structure_block)
    #: Instance ``(settings, replicate)``; its ``run()`` gives the stored values.
    instance = staticmethod(structure_instance)
    #: CPU seconds of one instance on one idle core.
    instance_cost = staticmethod(instance_seconds)
    worker_memory = staticmethod(worker_memory)

    def extents(self, spec: StructureSweepSpec) -> tuple[int, int]:
        """No ``step`` data; ``component``: the largest k (per-component overlaps)."""
        return 1, max(spec.ranks)

    def provenance(self, spec: StructureSweepSpec) -> dict[str, Any]:
        """Root attrs of the settings that are not axes: the model and the measurement."""
        s = spec.structure
        return {
            "setting_model": s["model"],
            "setting_order": spec.order,
            "setting_model_prior": json.dumps(dict(s["prior"]), sort_keys=True),
            "setting_structure": json.dumps(
                {k: v for k, v in s.items() if k not in AXIS_LEAVES}, sort_keys=True
            ),
        }


#: The registered structure kind.
STRUCTURE = StructureKind()
