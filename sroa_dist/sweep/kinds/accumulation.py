"""The accumulation sweep kind: SROA's error curves on a structured perturbation over a grid of
ε × n × p, one global SROA run per instance.

Under the coherent tilt every SROA step's deflation leaves a residual of one sign at the
component deflated last, so that component's value error grows as ``(n − 1)·g_p(ε)·ε^p`` with
``g_p`` independent of ``n`` (:mod:`sroa_dist.analysis.accumulation` has the closed form
``g_p(0)`` and the thresholds the curves predict). Each instance is one run of
:func:`sroa_dist.studies.accumulation.accumulation_errors`: ``T = Σ_i λ_i e_i^{⊗p} + E`` with
``λ = (1, …, 1, weight)``, ``E`` of a structured family (matrix-free) scaled to ``‖E‖ = ε``,
every step checked against the global branch and redone where it was not global. It stores
each step's value and vector error, the target component's (the one of weight ``weight``) and
the largest of the others', ``g_p = value_last/((n − 1)·ε^p)`` and ``h_p = vector_last/√(n − 1)``.

Grammar (marker table ``[accumulation]``)::

    name, seed, replicates, description
    [tensor]       n, p, weight              (λ = 1 except the target's weight, default 0.95)
    [noise]        model, eps, params        (a structured family: it has a factored form)
    [solver]       method, options, revisions  (a local method: the tensor is matrix-free)
    [accumulation] global_check, redo        (default true, true: global steps)

``tensor.n``, ``tensor.p``, ``noise.model``, ``noise.eps`` and ``solver.method`` may be axes
(dims ``n``, ``p``, ``noise``, ``eps``, ``method``: the cube's own vocabulary). ``noise.eps``
takes a list, a range table ``{start, stop, step}`` / ``{start, stop, factor}`` as every kind
does, or ``{start, stop, points}``: ``numpy.geomspace(start, stop, points)`` unrounded, the grid
the published study used (a list or a range is rounded to 12 significant digits).

Seeding: instance ``(settings, replicate)`` seeds the solver's starts with
``SeedSequence(seed, spawn_key=(h("noise=…"), h("n=…"), h("p=…"), replicate))`` (``h`` is
:func:`~..layout.stable_hash32`). Neither ε nor the method is in the key, on purpose: one curve
over ε is made with one stream of starts (as the published study made every run with seed 0),
and a method axis compares methods on the same starts.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from sroa_dist.methods import resolve_method
from sroa_dist.problems import check_model, model_params, resolve_family
from sroa_dist.studies import (
    TILTED_WEIGHT,
    AccumulationErrors,
    accumulation_errors,
    coefficients,
)

from ..cube import SHARED_AXES, STEP, Dim, Variable, by_name
from ..layout import WORKER_BASE_BYTES, BlockResult, BlockTask, Layout
from ..spec import (
    COMMON_SCHEMA,
    Axis,
    OutputSection,
    SpecError,
    SweepSpec,
    build_axes,
    check_method_options,
    check_methods,
    check_replicates,
    key_meanings,
    prune_model_params,
    validate_table,
)
from .base import GridPoint, KindBase, timed_block

__all__ = [
    "ACCUMULATION",
    "ACCUMULATION_SCHEMA",
    "ACCUMULATION_VARIABLES",
    "AccumulationKind",
    "AccumulationProblem",
    "AccumulationSettings",
    "AccumulationSweepSpec",
    "instance_seconds",
]

#: The schema of an accumulation spec: ``(vtype, default, required)`` per key (see
#: :mod:`..spec.fields`).
ACCUMULATION_SCHEMA: dict[str, Any] = {
    **{k: COMMON_SCHEMA[k] for k in ("name", "description", "seed", "replicates")},
    "tensor": {
        "n": ("int_axis", None, True),
        "p": ("int_axis", 3, False),
        "weight": ("float", TILTED_WEIGHT, False),
    },
    "noise": {
        "model": ("str_axis", "coherent-tilt", False),
        # A ``{start, stop, points}`` table is taken out before the common checks (_eps_axis).
        "eps": ("float_axis", None, True),
        "params": ("table", {}, False),
    },
    "solver": {
        **COMMON_SCHEMA["solver"],
        "method": ("str_axis", "sshopm", False),
    },
    "accumulation": {
        "global_check": ("bool", True, False),
        "redo": ("bool", True, False),
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

_S = (STEP,)
_MATCH = (("note", "after optimal (Hungarian) matching; NaN past the instance's n steps"),)
_TARGET = (("note", "target: the component of weight tensor.weight, the one tilted toward"),)


#: Variables of an accumulation sweep, in documented order.
ACCUMULATION_VARIABLES: Mapping[str, Variable] = by_name(
    Variable("lam_err", _S, "f8", "|lambda_hat_j - lambda_pi(j)| of SROA step j", extra=_MATCH),
    Variable("vec_err", _S, "f8", "||v_hat_j - v_pi(j)|| of SROA step j", extra=_MATCH),
    Variable("value_last", (), "f8", "the target component's value error", extra=_TARGET),
    Variable("vector_last", (), "f8", "the target component's vector error", extra=_TARGET),
    Variable(
        "g_p",
        (),
        "f8",
        "accumulation coefficient g_p(eps) = value_last / ((n - 1) eps^p)",
        extra=(("note", "coherent tilt: tends to (p c_p)^-p as eps -> 0, whatever n"),),
    ),
    Variable("h_p", (), "f8", "vector_last / sqrt(n - 1)"),
    Variable("value_other", (), "f8", "largest value error of the other components"),
    Variable("vector_other", (), "f8", "largest vector error of the other components"),
    Variable("last", (), "bool", "the target component was deflated last (SROA's last step)"),
    Variable(
        "global_gap",
        (),
        "f8",
        "largest global gap left over the run's steps",
        extra=(("note", "NaN without accumulation.global_check"),),
    ),
    Variable("solve_time", (), "f8", "seconds of the instance's SROA run", units="s"),
)


@dataclass(frozen=True)
class AccumulationSection:
    """``[accumulation]``: how every SROA step is checked."""

    global_check: bool = True
    redo: bool = True


@dataclass(frozen=True)
class AccumulationSweepSpec(SweepSpec):
    """A validated accumulation sweep spec: :class:`~..spec.base.SweepSpec` with ``[tensor]``,
    ``[noise]`` and ``[accumulation]``."""

    kind: ClassVar[str] = "accumulation"
    axis_keys: ClassVar[Mapping[str, str]] = AXIS_KEYS

    @functools.cached_property
    def accumulation(self) -> AccumulationSection:
        """The ``[accumulation]`` section."""
        return AccumulationSection(**self.data["accumulation"])

    @functools.cached_property
    def output(self) -> OutputSection:
        """No ``[output]`` table: the cube stores no vectors and no certificates."""
        return OutputSection()

    @property
    def weight(self) -> float:
        """The target component's weight (the others are 1)."""
        return float(self.data["tensor"]["weight"])

    @property
    def params(self) -> Mapping[str, Any]:
        """``[noise.params]`` (sub-tables per model)."""
        return self.data["noise"]["params"]

    @property
    def ranks(self) -> tuple[int, ...]:
        """Every run is full-rank SROA: the n values."""
        return tuple(int(n) for n in self.axes["tensor.n"].values)

    def settings_at(self, coords: Mapping[str, Any]) -> AccumulationSettings:
        """The :class:`AccumulationSettings` of a grid point."""
        return AccumulationSettings.at(self, coords)


@dataclass(frozen=True)
class AccumulationSettings(GridPoint):
    """One grid point (runs are not batched); ε and the method are not seeded, on purpose
    (one stream of starts per curve over ε, methods compared on the same starts)."""

    seed_fields = ("noise", "n", "p")

    noise: str
    n: int
    p: int
    method: str
    eps: float


@dataclass(frozen=True)
class AccumulationProblem:
    """One instance's run, as its block makes it: :meth:`run` is the stored result."""

    p: int
    n: int
    eps: float
    family: str
    params: Mapping[str, Any]
    weight: float
    method: str
    options: Mapping[str, Any]
    global_check: bool
    redo: bool
    seed: int
    spawn_key: tuple[int, ...]

    @property
    def rng(self) -> np.random.SeedSequence:
        """The seed of the solver's starts."""
        return np.random.SeedSequence(self.seed, spawn_key=self.spawn_key)

    def run(self) -> AccumulationErrors:
        """:func:`~sroa_dist.studies.accumulation.accumulation_errors` on this instance."""
        return accumulation_errors(
            self.p,
            self.n,
            self.eps,
            family=self.family,
            params=self.params,
            weight=self.weight,
            method=self.method,
            rng=self.rng,
            global_check=self.global_check,
            redo=self.redo,
            options=self.options,
        )


def problem_of(
    spec: AccumulationSweepSpec, settings: AccumulationSettings, replicate: int
) -> AccumulationProblem:
    """The run of instance ``(settings, replicate)``."""
    a = spec.accumulation
    return AccumulationProblem(
        p=settings.p,
        n=settings.n,
        eps=settings.eps,
        family=settings.noise,
        params=model_params(spec.params, settings.noise),
        weight=spec.weight,
        method=settings.method,
        options=spec.options_for(settings.method),
        global_check=a.global_check,
        redo=a.redo,
        seed=spec.seed,
        spawn_key=settings.spawn_key(replicate),
    )


# --------------------------------------------------------------------------------------------
# Validation


def _eps_axis(raw_eps: Any, source: str) -> Axis | None:
    """The ``noise.eps`` axis of a ``{start, stop, points}`` table (``None`` for any other
    value, which the common range grammar reads): ``numpy.geomspace`` unrounded."""
    if not (isinstance(raw_eps, Mapping) and "points" in raw_eps):
        return None
    extra = sorted(set(raw_eps) - {"start", "stop", "points"})
    if extra:
        raise SpecError(
            source,
            f"noise.eps.{extra[0]}",
            "one of start, stop, points in a {start, stop, points} table",
            "<unknown key>",
            "points gives a geometric grid of that many values; step and factor are the "
            "other range tables",
        )
    for key in ("start", "stop"):
        v = raw_eps.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
            raise SpecError(source, f"noise.eps.{key}", "a finite number > 0", v)
    points = raw_eps["points"]
    if isinstance(points, bool) or not isinstance(points, int) or not 2 <= points <= 10_000:
        raise SpecError(source, "noise.eps.points", "an integer from 2 to 10000", points)
    if not raw_eps["start"] < raw_eps["stop"]:
        raise SpecError(
            source, "noise.eps", "start < stop", dict(raw_eps), "e.g. {start = 0.02, stop = 0.6}"
        )
    values = tuple(float(x) for x in np.geomspace(raw_eps["start"], raw_eps["stop"], points))
    return Axis("noise.eps", values, True, dict(raw_eps))


def accumulation_spec_from_dict(
    raw: Mapping[str, Any], source: str = "<dict>"
) -> AccumulationSweepSpec:
    """Validate an accumulation spec given as a (TOML-like) dict and resolve defaults."""
    if not isinstance(raw, Mapping):
        raise SpecError(source, "<root>", "a table", raw)
    noise = raw.get("noise")
    geo = _eps_axis(noise.get("eps"), source) if isinstance(noise, Mapping) else None
    checked = dict(raw)
    if geo is not None:  # the common grammar has no points table: check the rest without it
        checked["noise"] = {k: v for k, v in noise.items() if k != "eps"}  # type: ignore[union-attr]
        checked["noise"]["eps"] = 1.0
    data = validate_table(checked, ACCUMULATION_SCHEMA, "", source)
    keys = {k: d for k, d in AXIS_KEYS.items() if geo is None or k != "noise.eps"}
    axes = build_axes(data, ACCUMULATION_SCHEMA, keys, source)
    if geo is not None:
        data["noise"]["eps"] = dict(geo.given)
        axes["noise.eps"] = geo
    check_replicates(data["replicates"], source)
    ns, ps = axes["tensor.n"].values, axes["tensor.p"].values
    if min(ns) < 3:
        raise SpecError(source, "tensor.n", "dimensions n >= 3", min(ns), "e.g. tensor.n = [8, 16]")
    if min(ps) < 3:
        raise SpecError(source, "tensor.p", "tensor order p >= 3", min(ps), "e.g. tensor.p = 3")
    w = data["tensor"]["weight"]
    if not 0 < w < 1:
        raise SpecError(
            source,
            "tensor.weight",
            "a weight in (0, 1): the target's, below the others' 1 so SROA deflates it last",
            w,
        )
    eps = axes["noise.eps"].values
    if min(eps) <= 0:
        raise SpecError(source, "noise.eps", "perturbation norms eps > 0", min(eps))
    _check_solver(data, axes["solver.method"].values, ns, ps, source)
    models = axes["noise.model"].values
    data["noise"]["params"] = prune_model_params(data["noise"]["params"], models, source)
    for name in models:
        _check_family(str(name), data["noise"]["params"], source)
    return AccumulationSweepSpec(data=data, source=source, axes=axes)


def _check_family(name: str, params: Mapping[str, Any], source: str) -> None:
    """A family with a factored (matrix-free) form and valid parameters."""
    try:
        check_model(name, model_params(params, name))
        family = resolve_family(name)
    except ValueError as exc:
        raise SpecError(
            source, "noise.model", "a structured perturbation family", name, str(exc)
        ) from None
    if getattr(family, "factored", None) is None:
        raise SpecError(
            source,
            "noise.model",
            "a structured family with a factored (matrix-free) form, e.g. 'coherent-tilt'",
            name,
            "the accumulation study runs SROA matrix-free; i.i.d. families have no such form "
            "(study them with a [tensor] sweep)",
        )


def _check_solver(
    data: dict[str, Any], methods: Sequence[str], ns: Sequence[int], ps: Sequence[int], src: str
) -> None:
    solver = data["solver"]
    for key in ("steps", "norm_method"):
        if solver[key] is not None:
            raise SpecError(
                src,
                f"solver.{key}",
                "no value in an accumulation sweep",
                solver[key],
                "every run is full-rank SROA, and eps is the exact norm of the structured E",
            )
    if solver["norm_options"]:
        raise SpecError(
            src,
            "solver.norm_options",
            "an empty table in an accumulation sweep",
            solver["norm_options"],
            "eps is the exact norm of the structured E: no norm is solved",
        )
    check_methods(solver, methods, src, table_keys=("options",))
    for m in methods:
        if not resolve_method(m).implicit:
            raise SpecError(
                src,
                "solver.method",
                "a local method that runs on a matrix-free tensor ('sshopm' or 'power')",
                m,
                "the structured tensor is never formed; a relaxation needs every entry",
            )
        for n in ns:
            for p in ps:
                check_method_options(data, m, n, p, False, src)


# --------------------------------------------------------------------------------------------
# Cost, memory, layout

#: Measured CPU seconds (process time) of one run at :data:`COST_REFERENCE_N` as ε → 0 (n
#: global steps, the check and redo included), the exponent of its growth in n, and its growth
#: in ε (``1 + COST_EPS_SLOPE·ε``: larger ε, more redone steps). Measured 2026-11-28, one BLAS
#: thread, a shared 2-core machine (load 18-24: process time, not wall time, which the load
#: inflated ~10x): at n = 16 0.09-0.15 s for ε ≤ 0.1, 0.17-0.19 s at 0.5, 0.21-0.39 s at 1-1.5;
#: at ε = 0.05-0.3 0.22-0.24 s at n = 32 and 0.96-1.08 s at n = 64; alike for p = 3-6 (the
#: matrix-free contractions cost O(n) per component whatever p).
COST_SECONDS = 0.11
COST_REFERENCE_N = 16
COST_EXPONENT = 1.5
COST_EPS_SLOPE = 1.5
#: Seconds of a run without the global check (and redo) over one with: 0.5-0.65 measured at
#: n = 32.
UNCHECKED_FACTOR = 0.6
#: Bytes per n² of a matrix-free run: the basis and deflation vectors (n × n each), the
#: starts and their gradients, and the n × n eigenproblems of the spectral starts.
BYTES_PER_N2 = 8.0 * 16


def _seconds(n: float, eps: float, checked: bool) -> float:
    factor = 1.0 if checked else UNCHECKED_FACTOR
    n_part = (n / COST_REFERENCE_N) ** COST_EXPONENT
    return factor * COST_SECONDS * n_part * (1.0 + COST_EPS_SLOPE * eps)


def instance_seconds(settings: AccumulationSettings, checked: bool = True) -> float:
    """Expected CPU seconds of one run at ``settings`` on one idle core: the measured
    :data:`COST_SECONDS` grown as ``(n / COST_REFERENCE_N)^COST_EXPONENT`` and by
    ``1 + COST_EPS_SLOPE·ε``, times :data:`UNCHECKED_FACTOR` without the global check."""
    return _seconds(settings.n, settings.eps, checked)


def _mean_cost(spec: AccumulationSweepSpec) -> float:
    """Mean of :func:`instance_seconds` over the grid (separable in n and ε: O(axes))."""
    ns = [float(n) for n in spec.axes["tensor.n"].values]
    eps = [float(e) for e in spec.axes["noise.eps"].values]
    n_mean = sum(_seconds(n, 0.0, spec.accumulation.global_check) for n in ns) / len(ns)
    return n_mean * (1.0 + COST_EPS_SLOPE * sum(eps) / len(eps))


def worker_memory(spec: AccumulationSweepSpec, layout: Layout) -> float:
    """Peak bytes of a worker at the largest n (matrix-free: O(n²)), with its block's
    per-step errors."""
    n = max(spec.ranks)
    return WORKER_BASE_BYTES + BYTES_PER_N2 * n * n + math.prod(layout.chunks) * 16.0 * n


# --------------------------------------------------------------------------------------------
# Block kernel


def compute_accumulation_block(task: BlockTask, spec: AccumulationSweepSpec) -> BlockResult:
    """Every run of one block (a pure function of the task, timings aside)."""

    def solve(settings: AccumulationSettings, replicate: int) -> AccumulationErrors:
        return problem_of(spec, settings, replicate).run()

    return timed_block(task, spec, ACCUMULATION_VARIABLES, solve, _store_run)


def _store_run(
    out: dict[str, np.ndarray],
    idx: tuple[int, ...],
    settings: AccumulationSettings,
    replicate: int,
    e: AccumulationErrors,
) -> None:
    """One run's errors and coefficients at ``idx`` of a block's arrays."""
    n, eps, p = settings.n, settings.eps, settings.p
    out["lam_err"][idx][:n] = e.lam_err
    out["vec_err"][idx][:n] = e.vec_err
    out["value_last"][idx] = e.value_last
    out["vector_last"][idx] = e.vector_last
    g, h = coefficients([e.value_last], [e.vector_last], n, [eps], p)
    out["g_p"][idx], out["h_p"][idx] = g[0], h[0]
    out["value_other"][idx] = e.value_other
    out["vector_other"][idx] = e.vector_other
    out["last"][idx] = e.last
    out["global_gap"][idx] = e.global_gap


#: What each key of a accumulation spec means (docs/reference/spec.md): the keys this kind reads
#: its own way; the common and shared keys' meanings come from :mod:`..spec.meanings`.
ACCUMULATION_KEY_MEANINGS: Mapping[str, str] = key_meanings(
    ACCUMULATION_SCHEMA,
    {
        "tensor.weight": "the target component's weight (the others 1), deflated last",
        "noise.model": "structured perturbation family (a factored form: `coherent-tilt`, "
        "`attractor`)",
        "noise.eps": "operator norm ‖E‖ = eps; also `{start, stop, points}`: `numpy.geomspace`, "
        "unrounded",
        "solver.method": "local rank-one method of every step (`sshopm`, `power`): the tensor is "
        "matrix-free",
        "solver.steps": "refused: every run is full-rank SROA (n steps)",
        "solver.norm_method": "refused: eps is the exact norm of the structured E",
        "solver.norm_options": "refused: no norm is solved",
        "accumulation.global_check": "check every SROA step against the global branch",
        "accumulation.redo": "redo a non-global step from its check's point",
    },
)


class AccumulationKind(KindBase):
    """The ``accumulation`` kind (marker table ``[accumulation]``): error curves over ε, in
    blocks of about the runner's target task time (a run is matrix-free: O(n²) bytes, no
    memory check binds)."""

    name = "accumulation"
    #: Its spec grammar and swept dims (in cube order; the cube's shared vocabulary).
    schema: Mapping[str, Any] = ACCUMULATION_SCHEMA
    axis_keys: Mapping[str, str] = AXIS_KEYS
    key_meanings: Mapping[str, str] = ACCUMULATION_KEY_MEANINGS
    dims: Mapping[str, Dim] = by_name(*(SHARED_AXES[d] for d in AXIS_KEYS.values()))
    marker = "accumulation"
    all_variables: Mapping[str, Variable] = ACCUMULATION_VARIABLES
    #: Report section and figure (:class:`sroa_dist.analysis.KindAnalysis`; a path: analysis
    #: is a layer above): g_p(ε) against its closed form, per p and n.
    analysis = "sroa_dist.analysis.accumulation_report:ACCUMULATION_ANALYSIS"
    #: What the cube's ``step`` dim counts (``sroa-dist validate`` says it).
    step_meaning = "SROA steps j = 1..n of each run (errors after optimal matching)"

    parse = staticmethod(accumulation_spec_from_dict)
    #: Seconds per instance averaged over the (n, p) grid (:func:`instance_seconds`).
    mean_cost = staticmethod(_mean_cost)
    compute_block = staticmethod(compute_accumulation_block)
    instance = staticmethod(problem_of)
    worker_memory = staticmethod(worker_memory)

    def provenance(self, spec: AccumulationSweepSpec) -> dict[str, Any]:
        """Root attrs of the settings that are not axes: the target's weight, the step
        checks, and the family parameters."""
        a = spec.accumulation
        return {
            "setting_weight": spec.weight,
            "setting_global_check": int(a.global_check),
            "setting_redo": int(a.redo),
            "setting_params": json.dumps(spec.params, sort_keys=True),
        }

    def advice(self, spec: AccumulationSweepSpec) -> list[str]:
        """Replicates differ only by SROA's starts (the families here draw no randomness)."""
        if spec.replicates > 1:
            return [
                f"{spec.source}: the structured families draw no randomness, so the "
                f"{spec.replicates} replicates differ only by SROA's starts (global steps "
                "agree to the solver's tolerance); set replicates = 1 unless the starts are "
                "what you study"
            ]
        return []

    def instance_cost(self, spec: AccumulationSweepSpec, settings: AccumulationSettings) -> float:
        """CPU seconds of one run on one idle core (:func:`instance_seconds`)."""
        return instance_seconds(settings, spec.accumulation.global_check)


#: The registered accumulation kind.
ACCUMULATION = AccumulationKind()
