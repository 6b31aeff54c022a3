"""The escape sweep kind: start escape and capture of the power method, fanned out.

Anandkumar et al.'s robust tensor power method draws ``L`` uniform starts per step and keeps the
best; where a perturbation pulls every start toward one direction (the ``attractor`` family), a
step succeeds when one start escapes to a component. With per-start escape probability ``q``
that is ``1 − (1 − q)^L`` for any budget ``L``. An instance of this kind measures both sides of
that claim on the same grid point:

- **escape**: ``escape.starts`` single starts at each stage of ``escape.stages`` (the SROA
  step with ``r`` components still to be found), each iterated ``N`` times on the stage's
  tensor (:func:`sroa_dist.studies.start_escape.escape_probability`): the hits, stored over
  the ``step`` dim at step ``j = n − r + 1``. Replicates add starts, so ``q`` is the pooled
  fraction (analysis gives its Wilson interval);
- **whole SROA** (``escape.sroa``): one SROA of the instance's tensor with the solver the
  ``method`` coordinate names (:func:`sroa_dist.studies.start_escape.whole_sroa`): which steps
  found a new component, the first that found none (capture), its overlap with ``u`` and its
  weight. Replicates are runs, so whole-SROA success is a fraction compared with
  ``1 − (1 − q)^L`` and the product over stages.

Grammar (marker table ``[escape]``)::

    name, seed, replicates, description
    [tensor]  n, p                       (axes; identity basis, unit weights)
    [noise]   model, eps                 (axes; model: a family with an escape form, attractor)
    [solver]  method                     (axis of solver labels, below)
    [escape]  starts, stages, n_iter, radius, sroa

Solver labels (the ``method`` dim): ``power@L`` (``L`` starts, ``escape.n_iter`` iterations
each), ``power@aghkt`` (the AGHKT budget ``(L, N)`` of :func:`sroa_dist.methods.aghkt_budget`
at the instance's ``n`` and ``ε``), ``power@aghkt*f`` (``⌈f·L⌉`` starts, the same ``N``),
``sshopm`` (SS-HOPM, its defaults: local steps) and ``sshopm@global`` (SS-HOPM with every step
globally checked and redone on the global branch: global steps). The escape part runs for the
power labels only (``q`` depends on ``N``, not ``L``: labels with the same ``N`` measure the
same starts).

Seeding: instance ``(settings, replicate)`` draws from ``SeedSequence(seed, spawn_key=(h(noise),
h(n), h(p), h(eps), replicate, part, ...))`` (``h`` is :func:`~..layout.stable_hash32`): part 0
and the stage ``r`` for the single starts of stage ``r``, part 1 for the whole SROA. The method
is not in the key, so every solver of a grid point sees the same single starts (paired) and
power budgets share their first starts.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from sroa_dist.errors import InputError
from sroa_dist.methods import LARGE_N, aghkt_budget
from sroa_dist.studies import (
    DEFAULT_RADIUS,
    ESCAPE_FAMILIES,
    escape_probability,
    whole_sroa,
)

from ..cube import SHARED_AXES, STEP, Dim, Variable, by_name
from ..layout import WORKER_BASE_BYTES, BlockResult, BlockTask, Layout
from ..spec import (
    COMMON_SCHEMA,
    SpecError,
    SweepSpec,
    build_axes,
    check_methods,
    check_replicates,
    key_meanings,
    validate_table,
)
from .base import GridPoint, KindBase, grid_points, timed_block
from .threshold import IDENTITY_BASIS_SCALE, large_n_sroa_seconds

__all__ = [
    "ESCAPE",
    "ESCAPE_SCHEMA",
    "ESCAPE_VARIABLES",
    "EscapeKind",
    "EscapeSettings",
    "EscapeSweepSpec",
    "Solver",
    "parse_solver",
]

# --------------------------------------------------------------------------------------------
# Cube variables (this kind's own; the shared dims n, p, noise, method, eps, step)


_STAGE = (
    "note",
    "over the step dim: step j is the stage with r = n - j + 1 components still to be found; "
    "NaN at steps whose stage was not measured",
)

#: The variables an escape sweep writes, in documented order. The first is written for every
#: instance (analysis reads it as "this instance has results"); the others may be NaN where
#: an instance has no such part.
ESCAPE_VARIABLES: Mapping[str, Variable] = by_name(
    Variable("solve_time", (), "f8", "wall seconds of the instance (escape and SROA)", units="s"),
    Variable(
        "escape_hits",
        (STEP,),
        "f8",
        "single power-method starts (of escape_starts) that ended within the radius of a "
        "component still to be found, on the stage tensor of SROA step j",
        extra=(_STAGE,),
    ),
    Variable(
        "escape_starts",
        (),
        "f8",
        "single starts measured per stage by this instance (NaN: no escape part, e.g. sshopm)",
    ),
    Variable("budget_starts", (), "f8", "starts L per SROA step of the solver (NaN: sshopm)"),
    Variable("budget_iter", (), "f8", "power iterations N per start (NaN: sshopm)"),
    Variable(
        "step_found",
        (STEP,),
        "f8",
        "1 where whole-SROA step j ended within the radius of a component not found before, "
        "0 where not; NaN without a whole SROA",
    ),
    Variable(
        "sroa_success",
        (),
        "f8",
        "1 where every step of the whole SROA found a new component, else 0 (NaN: none run)",
    ),
    Variable(
        "first_lost", (), "f8", "first SROA step (1-based) that found no new component; 0: none"
    ),
    Variable(
        "lost_u_overlap",
        (),
        "f8",
        "overlap of the first lost step's vector with the attractor's direction u (capture: "
        "near +-1); NaN when no step was lost",
    ),
    Variable("lost_weight", (), "f8", "weight lambda_hat of the first lost step; NaN: none lost"),
)

# --------------------------------------------------------------------------------------------
# Schema and solver labels

#: The schema of an escape spec: ``(vtype, default, required)`` per key (see :mod:`..spec.fields`).
ESCAPE_SCHEMA: dict[str, Any] = {
    **COMMON_SCHEMA,
    "solver": {**COMMON_SCHEMA["solver"], "method": ("str_axis", "power@20", False)},
    "tensor": {"n": ("int_axis", None, True), "p": ("int_axis", 3, False)},
    "noise": {"model": ("str_axis", "attractor", False), "eps": ("float_axis", None, True)},
    "escape": {
        "starts": ("int", 1000, False),
        "stages": ("str", "n, n/8, 4, 1", False),
        "n_iter": ("int", 30, False),
        "radius": ("float", DEFAULT_RADIUS, False),
        "sroa": ("bool", True, False),
    },
}

#: Dotted spec key -> axis (dimension) name, for keys that may be swept.
AXIS_KEYS: dict[str, str] = {
    "noise.model": "noise",
    "tensor.n": "n",
    "tensor.p": "p",
    "solver.method": "method",
    "noise.eps": "eps",
}

_LABEL = re.compile(r"^(power)@(?:(\d+)|aghkt(?:\*(\d+(?:\.\d+)?))?)$|^(sshopm)(@global)?$")
_STAGES_HINT = 'e.g. stages = "n, n/8, 4, 1"'
_LABEL_HINT = "solver labels: power@20, power@aghkt, power@aghkt*2, sshopm, sshopm@global"


@dataclass(frozen=True)
class Solver:
    """A parsed solver label: the method, its start budget rule and whether steps are global."""

    label: str
    method: str
    #: ``L`` for ``power@L``; None for the AGHKT budget (``factor`` times its L) and sshopm.
    starts: int | None = None
    aghkt: bool = False
    factor: float = 1.0
    global_steps: bool = False

    @property
    def power(self) -> bool:
        """Whether the solver is the power method (with a start budget: the escape part)."""
        return self.method == "power"

    def budget(self, n: int, eps: float, n_iter: int) -> tuple[int, int]:
        """``(L, N)`` at ``(n, ε)``: the label's own, or the AGHKT budget
        (:func:`sroa_dist.methods.aghkt_budget`, the noise level the instance's ``ε``);
        ``(0, 0)`` for sshopm."""
        if not self.power:
            return 0, 0
        if self.aghkt:
            L, N = aghkt_budget(n, eps)
            return max(1, math.ceil(self.factor * L)), N
        return int(self.starts or 1), int(n_iter)


def parse_solver(label: str) -> Solver:
    """The :class:`Solver` a label names; ``InputError`` for a label outside the grammar."""
    m = _LABEL.match(label) if isinstance(label, str) else None
    if m is None:
        raise InputError(
            f"solver label: expected a label of the grammar; received {label!r}", _LABEL_HINT
        )
    if m.group(4):
        return Solver(label, "sshopm", global_steps=bool(m.group(5)))
    if m.group(2):
        if int(m.group(2)) < 1:
            raise InputError(f"solver label {label!r}: expected L >= 1", _LABEL_HINT)
        return Solver(label, "power", starts=int(m.group(2)))
    factor = float(m.group(3)) if m.group(3) else 1.0
    if not factor > 0:
        raise InputError(f"solver label {label!r}: expected a factor > 0", _LABEL_HINT)
    return Solver(label, "power", aghkt=True, factor=factor)


def parse_stages(text: str, n: int) -> tuple[int, ...]:
    """The stages ``r`` (components still to be found) of ``escape.stages`` at dimension ``n``,
    largest first: comma-separated integers, ``n`` or ``n/k``, each clipped to ``[1, n]``."""
    out = set()
    for item in str(text).split(","):
        item = item.strip().replace(" ", "")
        if re.fullmatch(r"\d+", item):
            r = int(item)
        elif item == "n":
            r = n
        elif m := re.fullmatch(r"n/(\d+)", item):
            if int(m.group(1)) < 1:
                raise InputError(f"stage {item!r}: expected n/k with k >= 1", _STAGES_HINT)
            r = n // int(m.group(1))
        else:
            raise InputError(f"stage {item!r}: expected an integer, n or n/k", _STAGES_HINT)
        out.add(min(max(r, 1), n))
    return tuple(sorted(out, reverse=True))


# --------------------------------------------------------------------------------------------
# Spec and settings


@dataclass(frozen=True)
class EscapeSection:
    """``[escape]``: single starts per stage, the stages, ``N`` of ``power@L``, the recovery
    radius, and whether each instance runs a whole SROA."""

    starts: int
    stages: str
    n_iter: int
    radius: float
    sroa: bool


@dataclass(frozen=True)
class EscapeSweepSpec(SweepSpec):
    """A validated escape sweep spec: :class:`~..spec.base.SweepSpec` with ``[tensor]``,
    ``[noise]`` and ``[escape]``."""

    kind: ClassVar[str] = "escape"
    axis_keys: ClassVar[Mapping[str, str]] = AXIS_KEYS

    @functools.cached_property
    def escape(self) -> EscapeSection:
        """The ``[escape]`` section."""
        return EscapeSection(**self.data["escape"])

    @property
    def ranks(self) -> tuple[int, ...]:
        """Every SROA is full rank: the n values."""
        return tuple(int(n) for n in self.axes["tensor.n"].values)

    def settings_at(self, coords: Mapping[str, Any]) -> EscapeSettings:
        """The :class:`EscapeSettings` of a grid point."""
        return EscapeSettings.at(self, coords)


@dataclass(frozen=True)
class EscapeSettings(GridPoint):
    """One grid point (instances are not batched); the method is not seeded (paired solvers).
    An instance's parts draw from ``seed(master, replicate, *part)``: ``part = (0, r)`` for the
    single starts of stage ``r``, ``(1,)`` for the whole SROA."""

    seed_fields = ("noise", "n", "p", "eps")

    noise: str
    n: int
    p: int
    method: str
    eps: float


@dataclass(frozen=True)
class EscapeInstance:
    """One instance as its block computes it: :meth:`run` gives the stored values."""

    settings: EscapeSettings
    replicate: int
    seed: int
    escape: EscapeSection
    #: The whole SROA's method options: those of an older method revision the store pins
    #: (:meth:`~..spec.base.SweepSpec.options_for`); empty at the current revisions.
    options: Mapping[str, Any] = field(default_factory=dict)

    def run(self) -> dict[str, Any]:
        """The instance's values: per-stage hits (step index -> hits) and the whole SROA's."""
        s, e = self.settings, self.escape
        solver = parse_solver(s.method)
        L, N = solver.budget(s.n, s.eps, e.n_iter)
        out: dict[str, Any] = {"hits": {}, "L": L, "N": N, "sroa": None}
        if solver.power and e.starts > 0:
            for r in parse_stages(e.stages, s.n):
                res = escape_probability(
                    s.n,
                    s.eps,
                    p=s.p,
                    remaining=r,
                    n_starts=e.starts,
                    n_iter=N,
                    radius=e.radius,
                    rng=s.seed(self.seed, self.replicate, 0, r),
                )
                out["hits"][s.n - r] = res.hits
        if e.sroa:
            out["sroa"] = whole_sroa(
                s.n,
                s.eps,
                p=s.p,
                method=solver.method,
                n_starts=L or None,
                n_iter=N or None,
                global_check=solver.global_steps,
                radius=e.radius,
                rng=s.seed(self.seed, self.replicate, 1),
                options=self.options,
            )
        return out


# --------------------------------------------------------------------------------------------
# Validation


def escape_spec_from_dict(raw: Mapping[str, Any], source: str = "<dict>") -> EscapeSweepSpec:
    """Validate an escape spec given as a (TOML-like) dict and resolve defaults; ``SpecError``
    naming the source and key otherwise."""
    data = validate_table(raw, ESCAPE_SCHEMA, "", source)
    axes = build_axes(data, ESCAPE_SCHEMA, AXIS_KEYS, source)
    check_replicates(data["replicates"], source)
    ns, ps = axes["tensor.n"].values, axes["tensor.p"].values
    if min(ns) < 2:
        raise SpecError(source, "tensor.n", "dimensions n >= 2", min(ns), "e.g. n = [16, 32]")
    bad_p = [p for p in ps if p not in (3, 4)]
    if bad_p:
        raise SpecError(source, "tensor.p", "3 or 4 (the orders of the attractor family)", bad_p[0])
    for model in axes["noise.model"].values:
        if model not in ESCAPE_FAMILIES:
            raise SpecError(
                source,
                "noise.model",
                f"a family with an escape form: one of {list(ESCAPE_FAMILIES)}",
                model,
                "the escape study measures starts on each stage's factored tensor",
            )
    eps = axes["noise.eps"].values
    if min(eps) <= 0:
        raise SpecError(source, "noise.eps", "norms ||E|| > 0", min(eps), "e.g. eps = [0.3, 0.6]")
    labels = axes["solver.method"].values
    for label in labels:
        try:
            parse_solver(label)
        except InputError as exc:
            raise SpecError(source, "solver.method", "a solver label", label, _LABEL_HINT) from exc
    solver = data["solver"]
    for key in ("steps", "norm_method"):
        if solver[key] is not None:
            raise SpecError(
                source,
                f"solver.{key}",
                "no value in an escape sweep",
                solver[key],
                "every SROA is full rank on a family with a stated norm; drop the key",
            )
    check_methods(solver, sorted({parse_solver(m).method for m in labels}), source, ())
    for key in ("options", "norm_options"):
        if solver[key]:
            raise SpecError(
                source,
                f"solver.{key}",
                "an empty table in an escape sweep",
                solver[key],
                f"the budget is part of the solver label ({_LABEL_HINT})",
            )
    e = data["escape"]
    if e["starts"] < 0:
        raise SpecError(source, "escape.starts", "an integer >= 0", e["starts"], "e.g. 1000")
    if e["n_iter"] < 1:
        raise SpecError(source, "escape.n_iter", "an integer >= 1", e["n_iter"], "e.g. 30")
    if not 0 < e["radius"] < math.sqrt(2):
        raise SpecError(source, "escape.radius", "a number in (0, √2)", e["radius"], "e.g. 0.3")
    try:
        parse_stages(e["stages"], 2)
    except InputError as exc:
        raise SpecError(
            source,
            "escape.stages",
            "comma-separated stages: integers, n or n/k",
            e["stages"],
            f"{exc.args[0]}; {_STAGES_HINT}",
        ) from None
    if e["starts"] == 0 and not e["sroa"]:
        raise SpecError(
            source,
            "escape.sroa",
            "true when escape.starts = 0 (else an instance measures nothing)",
            e["sroa"],
            "set escape.starts > 0 or escape.sroa = true",
        )
    return EscapeSweepSpec(data=data, source=source, axes=axes)


# --------------------------------------------------------------------------------------------
# Cost and layout

#: The cost model's constants (CPU seconds). One start-iteration of the escape part costs
#: ``ESCAPE_ITER + ESCAPE_UNIT·n·(n + r)`` (vectorised over the starts): refitted 2026-11-29
#: (least squares on the relative error) to the 336 instances of the committed store
#: docs/data/studies/attractor-escape.zarr (n = 16-512, power@20 and power@aghkt, 1000 starts,
#: 4 stages; each instance's ``solve_time``, one worker beside another study: wall seconds,
#: an upper bound on CPU): the whole store priced at 144 s against 145 s measured; per (n,
#: budget) 0.49-1.31x, per instance 0.44-1.45x (5-95 %). The constants before (2.0e-5,
#: 3.5e-10), fitted to timings at load 16-40, priced that store at 26.5 CPU-min, 10x over.
#: One power SROA step costs ``SROA_STEP + SROA_UNIT·L·N·n²`` (Python overhead, the deflation
#: and polish, then the starts' iterations against the operator and the deflation terms):
#: refitted 2026-11-29 to the CPU of the three committed whole-SROA stores, each instance's CPU
#: its share of the store's recorded CPU by its ``solve_time`` (docs/data/cost/study-runs.json):
#: attractor-confirm (n = 128, L = 1 and 4: 0.96 and 0.73 CPU-s per SROA), attractor-confirm-256
#: (n = 256, L = 5 and 20: 1.15 and 2.45) and attractor-capture (n = 256, L = 20: 2.28); the
#: step's cost is flat in n over 128-256 at L ≤ 5 and grows with L·N·n² at L = 20. The model
#: before (a cubic term 2.0e-9·n³ and SROA_UNIT 1.0e-9, fitted at n = 16-64 under load 16 on the
#: engine before the large-n one) priced the n = 256 stores 8-14x over.
ESCAPE_ITER_SECONDS = 7.8e-7
ESCAPE_UNIT_SECONDS = 4.9e-11
SROA_STEP_SECONDS = 4.0e-3
SROA_UNIT_SECONDS = 1.6e-10
#: SS-HOPM's start-iterations per step (16 uniform and 4 spectral starts, tens of iterations)
#: and the factor a global check with redo puts on a step (about 2 at n = 16-32, measured), for
#: sizes below the large-n engine's; from ``LARGE_N`` on an SS-HOPM SROA is priced by that
#: engine's law (:func:`~.threshold.large_n_sroa_seconds`) on the identity basis the escape
#: kind's instances have (:data:`~.threshold.IDENTITY_BASIS_SCALE`): 2.5 CPU-s at n = 256
#: against 2.84 measured (attractor-capture's sshopm@global).
SSHOPM_STEP_WORK = 20 * 40
GLOBAL_STEP_FACTOR = 2.0


def instance_seconds(spec: EscapeSweepSpec, settings: EscapeSettings) -> float:
    """Expected CPU seconds of one instance at ``settings`` on one idle core: the escape part
    (``starts × N`` start-iterations per stage) plus the whole SROA (``n`` steps); constants
    above."""
    e = spec.escape
    n = settings.n
    solver = parse_solver(settings.method)
    L, N = solver.budget(n, settings.eps, e.n_iter)
    seconds = 0.0
    if solver.power and e.starts > 0:
        for r in parse_stages(e.stages, n):
            seconds += e.starts * N * (ESCAPE_ITER_SECONDS + ESCAPE_UNIT_SECONDS * n * (n + r))
    if e.sroa and not solver.power and n >= LARGE_N:
        checked = large_n_sroa_seconds(n, settings.p, checked=solver.global_steps)
        seconds += checked * IDENTITY_BASIS_SCALE
    elif e.sroa:
        work = L * N if solver.power else SSHOPM_STEP_WORK
        step = SROA_STEP_SECONDS + SROA_UNIT_SECONDS * work * n * n
        seconds += n * step * (GLOBAL_STEP_FACTOR if solver.global_steps else 1.0)
    return seconds


def escape_mean_cost(spec: EscapeSweepSpec) -> float:
    """Seconds per instance averaged over the grid (:func:`instance_seconds`)."""
    costs = [instance_seconds(spec, s) for s in grid_points(spec)]
    return sum(costs) / len(costs)


# --------------------------------------------------------------------------------------------
# Block kernel


def compute_escape_block(task: BlockTask, spec: EscapeSweepSpec) -> BlockResult:
    """Every instance of one block (a pure function of the task, timings aside)."""

    def solve(settings: EscapeSettings, replicate: int) -> dict[str, Any]:
        return escape_instance(spec, settings, replicate).run()

    def store(
        out: dict[str, np.ndarray],
        idx: tuple[int, ...],
        settings: EscapeSettings,
        replicate: int,
        res: dict[str, Any],
    ) -> None:
        if res["hits"]:
            out["escape_starts"][idx] = spec.escape.starts
            for j, hits in res["hits"].items():
                out["escape_hits"][idx][j] = hits
        if res["L"]:
            out["budget_starts"][idx], out["budget_iter"][idx] = res["L"], res["N"]
        sroa = res["sroa"]
        if sroa is not None:
            out["step_found"][idx][: settings.n] = sroa.found
            out["sroa_success"][idx] = float(sroa.first_lost == 0)
            out["first_lost"][idx] = sroa.first_lost
            out["lost_u_overlap"][idx] = sroa.u_overlap
            out["lost_weight"][idx] = sroa.weight

    return timed_block(task, spec, ESCAPE_VARIABLES, solve, store)


def escape_instance(
    spec: EscapeSweepSpec, settings: EscapeSettings, replicate: int
) -> EscapeInstance:
    """Instance ``(settings, replicate)`` as its block computes it."""
    method = parse_solver(settings.method).method
    return EscapeInstance(
        settings, int(replicate), int(spec.seed), spec.escape, spec.options_for(method)
    )


#: What each key of a escape spec means (docs/reference/spec.md): the keys this kind reads
#: its own way; the common and shared keys' meanings come from :mod:`..spec.meanings`.
ESCAPE_KEY_MEANINGS: Mapping[str, str] = key_meanings(
    ESCAPE_SCHEMA,
    {
        "solver.method": "solver label of the whole SROA: `power@L`, `power@aghkt`, "
        "`power@aghkt*f`, `sshopm` or `sshopm@global`",
        "noise.model": "family whose start escape is measured (`attractor`)",
        "noise.eps": "operator norm ‖E‖ of the perturbation",
        "escape.starts": "single starts per stage per instance (0: whole SROAs only)",
        "escape.stages": "stages r (components still to be found): integers, `n` or `n/k`, "
        "comma-separated",
        "escape.n_iter": "power iterations N per start of `power@L` (AGHKT labels take its N)",
        "escape.radius": "a start or step succeeds within this distance of a component",
        "escape.sroa": "run one whole SROA per instance",
    },
)


class EscapeKind(KindBase):
    """The ``escape`` kind (marker table ``[escape]``): start escape and whole-SROA capture, in
    blocks sized by the cost model (nothing of size ``n^p`` is formed: no memory check)."""

    name = "escape"
    #: Its spec grammar and swept dims (in cube order; the cube's shared vocabulary).
    schema: Mapping[str, Any] = ESCAPE_SCHEMA
    axis_keys: Mapping[str, str] = AXIS_KEYS
    key_meanings: Mapping[str, str] = ESCAPE_KEY_MEANINGS
    dims: Mapping[str, Dim] = by_name(*(SHARED_AXES[d] for d in AXIS_KEYS.values()))
    marker = "escape"
    all_variables: Mapping[str, Variable] = ESCAPE_VARIABLES
    #: Report and figure (:class:`sroa_dist.analysis.KindAnalysis`; a path: analysis is a
    #: layer above): q with its interval against whole-SROA outcomes.
    analysis = "sroa_dist.analysis.escape:ESCAPE_ANALYSIS"
    #: What the cube's ``step`` dim counts (``sroa-dist validate`` says it).
    step_meaning = (
        "SROA steps j = 1..n; the escape part's stage at step j has r = n - j + 1 components "
        "still to be found"
    )

    parse = staticmethod(escape_spec_from_dict)
    mean_cost = staticmethod(escape_mean_cost)
    compute_block = staticmethod(compute_escape_block)
    #: Instance ``(settings, replicate)``; its ``run()`` gives the stored values.
    instance = staticmethod(escape_instance)
    #: CPU seconds of one instance on one idle core.
    instance_cost = staticmethod(instance_seconds)

    def provenance(self, spec: EscapeSweepSpec) -> dict[str, Any]:
        """Root attrs of the settings that are not axes: the ``[escape]`` section."""
        e = spec.escape
        return {
            "setting_escape": json.dumps(
                {
                    "starts": e.starts,
                    "stages": e.stages,
                    "n_iter": e.n_iter,
                    "radius": e.radius,
                    "sroa": e.sroa,
                },
                sort_keys=True,
            ),
            "setting_radius": e.radius,
            "setting_stages": e.stages,
        }

    def worker_memory(self, spec: EscapeSweepSpec, layout: Layout) -> float:
        """Peak bytes of a worker: the process, the starts (``starts × n``, a few copies) and
        the SROA's ``n × n`` vectors and deflation state."""
        n = max(spec.ranks)
        starts = max(spec.escape.starts, 1)
        return WORKER_BASE_BYTES + 8.0 * n * (4 * starts + 16 * n)


#: The registered escape kind.
ESCAPE = EscapeKind()
