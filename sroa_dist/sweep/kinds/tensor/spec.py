"""Tensor sweeps (the default kind): a planted nearly-SOD tensor plus a perturbation.

The spec's tensor-specific half -- schema, sections, cross-key rules -- and the grid-point
settings and per-instance seeds of this kind. Its layout, provenance and kind object are in
:mod:`.kind`, its block kernel in :mod:`.block`.

Grammar (the keys are a contract, see ``docs/sweeps.md``)::

    name, seed, replicates, description
    [tensor]  n, p, rank, basis, lambdas
    [noise]   model, sigma | eps | eps_scaled, scale, params, weight
    [solver]  method, steps, options, norm_method, norm_options
    [output]  vectors, certificates

Any of ``tensor.n``, ``tensor.p``, ``tensor.rank``, ``noise.model``, ``noise.sigma``,
``noise.eps``, ``noise.eps_scaled`` and ``solver.method`` given as a list or a range table
(``{start, stop, step}`` or ``{start, stop, factor}``) becomes an axis of the sweep.

Seeding (the reproducibility contract): instance ``(settings, replicate)`` draws from
``SeedSequence(seed, spawn_key=(h("noise=…"), h("n=…"), h("p=…"), h("rank=…"), h("<level>=…"),
replicate))`` where ``h`` is :func:`~sroa_dist.sweep.layout.stable_hash32`. The solver method is
deliberately
*not* part of the key: every method sees the same tensor, so a ``method`` axis compares
methods on paired instances.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from sroa_dist.errors import with_hint
from sroa_dist.methods import resolve_norm_method, solve_cost
from sroa_dist.problems import (
    BASES,
    DEFAULT_WEIGHT,
    MAX_SCALE,
    NOISE_MODELS,
    PERTURBATIONS,
    check_lambdas,
    check_level,
    check_model,
    model_params,
)
from sroa_dist.sweep.layout import stable_hash32
from sroa_dist.sweep.spec import (
    COMMON_SCHEMA,
    Axis,
    SpecError,
    SweepSpec,
    build_axes,
    check_method_options,
    check_methods,
    check_replicates,
    check_tensor_size,
    prune_model_params,
    validate_table,
)

from ..base import GridPoint
from .variables import NOISE_LEVELS

__all__ = [
    "AXIS_KEYS",
    "TENSOR_SCHEMA",
    "InstanceSettings",
    "NoiseSection",
    "TensorSection",
    "TensorSweepSpec",
    "settings_from_coords",
    "tensor_spec_from_dict",
]

#: The schema of a tensor spec: ``(vtype, default, required)`` per key (see
#: :mod:`sroa_dist.sweep.spec.fields`).
TENSOR_SCHEMA: dict[str, Any] = {
    **COMMON_SCHEMA,
    "tensor": {
        "n": ("int_axis", None, True),
        "p": ("int_axis", 3, False),
        "rank": ("int_axis", None, False),
        "basis": ("str", "identity", False),
        "lambdas": ("lambdas", 1.0, False),
    },
    "noise": {
        "model": ("str_axis", "gaussian", False),
        **{level: ("float_axis", None, False) for level in NOISE_LEVELS},
        "scale": ("str", None, False),
        # Perturbation families (sroa_dist.problems.perturbations): parameters, mixture weight.
        "params": ("table", {}, False),
        "weight": ("float_axis", None, False),
    },
}

#: Dotted spec key -> axis (dimension) name, for keys that may be swept.
AXIS_KEYS: dict[str, str] = {
    "noise.model": "noise",
    "tensor.n": "n",
    "tensor.p": "p",
    "tensor.rank": "rank",
    "solver.method": "method",
    **{f"noise.{level}": level for level in NOISE_LEVELS},
}

_SCALES = ("sigma", "opnorm")


@dataclass(frozen=True)
class TensorSection:
    """``[tensor]``: the planted tensor."""

    n: Any
    p: Any
    rank: Any
    basis: str
    lambdas: Any


@dataclass(frozen=True)
class NoiseSection:
    """``[noise]``: the perturbation E and its size."""

    model: Any
    sigma: Any
    eps: Any
    eps_scaled: Any
    scale: str
    params: Mapping[str, Any]
    weight: Any

    @property
    def level_name(self) -> str:
        """The noise level in use: ``"sigma"``, ``"eps"`` or ``"eps_scaled"``."""
        for level in NOISE_LEVELS:
            if getattr(self, level) is not None:
                return level
        raise AssertionError("validated spec without a noise level")  # pragma: no cover


@dataclass(frozen=True)
class TensorSweepSpec(SweepSpec):
    """A validated tensor sweep spec: :class:`~sroa_dist.sweep.spec.base.SweepSpec` with
    ``[tensor]`` and ``[noise]``."""

    kind: ClassVar[str] = "tensor"
    axis_keys: ClassVar[Mapping[str, str]] = AXIS_KEYS

    @functools.cached_property
    def tensor(self) -> TensorSection:
        """The ``[tensor]`` section."""
        return TensorSection(**self.data["tensor"])

    @functools.cached_property
    def noise(self) -> NoiseSection:
        """The ``[noise]`` section."""
        return NoiseSection(**self.data["noise"])

    @property
    def scale(self) -> str:
        """``"sigma"`` (entries of scale σ) or ``"opnorm"`` (E rescaled to ‖E‖ = eps)."""
        return self.noise.scale

    @property
    def noise_level_key(self) -> str:
        """The noise-level key in use: ``noise.sigma``, ``noise.eps`` or ``noise.eps_scaled``."""
        return f"noise.{self.noise.level_name}"

    @property
    def ranks(self) -> tuple[int, ...]:
        """Ranks on the grid: the ``tensor.rank`` values, or (full rank, the default) the n
        values."""
        key = "tensor.rank" if "tensor.rank" in self.axes else "tensor.n"
        return tuple(int(r) for r in self.axes[key].values)

    def norm_method_for(self, method: str, n: int, p: int) -> str:
        """The method bounding ``||E||`` for instances solved by ``method`` at size (n, p)."""
        return resolve_norm_method(method, n, p, self.solver.norm_method)

    def settings_at(self, coords: Mapping[str, Any]) -> InstanceSettings:
        """The :class:`InstanceSettings` of a grid point (see :func:`settings_from_coords`)."""
        return settings_from_coords(self, coords)


@dataclass(frozen=True)
class InstanceSettings(GridPoint):
    """Everything that defines one grid point (all instances at it differ only by replicate).

    The method is not seeded (paired runs); instances sharing the group key can go through one
    batched core call. An instance's seed (:meth:`~..base.GridPoint.seed`) spawns children
    0/1/2: the instance's draws, the solver's starts, the norm's starts.
    """

    seed_fields = ("noise", "n", "p", "rank")
    group_fields = ("noise", "n", "p", "rank", "method", "steps", "norm_method")

    noise: str
    n: int
    p: int
    rank: int
    method: str
    level_name: str  # "sigma", "eps" or "eps_scaled"
    level: float
    steps: int
    norm_method: str

    def seed_key(self) -> tuple[int, ...]:
        """The seeded fields, then the noise level under its own name (``sigma``, ``eps`` or
        ``eps_scaled``)."""
        return (*super().seed_key(), stable_hash32(self.level_name, self.level))

    def cost(self) -> float:
        """Estimated seconds of one instance on one core (SROA's steps plus the norm)."""
        return self.steps * solve_cost(self.method, self.n, self.p) + solve_cost(
            self.norm_method, self.n, self.p
        )


def settings_from_coords(spec: TensorSweepSpec, values: Mapping[str, Any]) -> InstanceSettings:
    """Settings of the grid point whose swept coordinates are ``values`` (scalars from spec)."""
    n, p = int(spec.setting("tensor.n", values)), int(spec.setting("tensor.p", values))
    rank = spec.setting("tensor.rank", values)
    rank = n if rank is None else int(rank)  # full rank by default
    level_key = spec.noise_level_key
    method = spec.setting("solver.method", values)
    return InstanceSettings(
        noise=spec.setting("noise.model", values),
        n=n,
        p=p,
        rank=rank,
        method=method,
        level_name=spec.noise.level_name,
        level=float(spec.setting(level_key, values)),
        steps=spec.steps_for(rank),
        norm_method=spec.norm_method_for(method, n, p),
    )


# --------------------------------------------------------------------------------------------
# Validation


def tensor_spec_from_dict(raw: Mapping[str, Any], source: str = "<dict>") -> TensorSweepSpec:
    """Validate a tensor spec given as a (TOML-like) dict and resolve defaults."""
    data = validate_table(raw, TENSOR_SCHEMA, "", source)
    models = (*NOISE_MODELS, *_perturbation_models(data, source))
    axes = build_axes(data, TENSOR_SCHEMA, AXIS_KEYS, source)
    _check_semantics(data, axes, source, models)
    return TensorSweepSpec(data=data, source=source, axes=axes)


def _check_semantics(
    data: dict[str, Any], axes: dict[str, Axis], source: str, models: tuple[str, ...]
) -> None:
    """Cross-key rules: p >= 3, rank <= n, registry names, one noise level, steps <= rank."""
    check_replicates(data["replicates"], source)
    ns, ps = axes["tensor.n"].values, axes["tensor.p"].values
    if min(ns) < 2:
        raise SpecError(
            source,
            "tensor.n",
            "dimensions n >= 2",
            min(ns),
            "give integers >= 2, e.g. tensor.n = [8, 16, 32]",
        )
    if min(ps) < 3:
        raise SpecError(
            source,
            "tensor.p",
            "tensor order p >= 3",
            min(ps),
            "p = 2 is the matrix case (use an eigendecomposition); SROA theory needs p >= 3",
        )
    check_tensor_size(ns, ps, source)
    if "tensor.rank" in axes:
        ranks = axes["tensor.rank"].values
        if min(ranks) < 1:
            raise SpecError(source, "tensor.rank", "rank >= 1", min(ranks))
        if max(ranks) > min(ns):
            raise SpecError(
                source,
                "tensor.rank",
                f"rank <= n (smallest n is {min(ns)})",
                max(ranks),
                "an orthogonal decomposition has at most n components",
            )
    basis = data["tensor"]["basis"]
    if basis not in BASES:
        raise SpecError(source, "tensor.basis", f"one of {sorted(BASES)}", basis)
    lambdas = data["tensor"]["lambdas"]
    rank_ax = axes.get("tensor.rank")
    ranks = rank_ax.values if rank_ax else ns  # full rank by default
    for r in ranks:  # the core's own check of the weights against each rank
        try:
            check_lambdas(lambdas, r)
        except ValueError as exc:
            raise SpecError(
                source,
                "tensor.lambdas",
                f"a list of rank = {list(ranks)} values",
                lambdas,
                f"{exc}; a list of lambdas needs a single rank (or n) of the same length",
            ) from None
    for m in axes["noise.model"].values:
        if m not in models:
            raise SpecError(
                source, "noise.model", f"one of {sorted(models)}", m, "unknown noise model"
            )
    check_methods(data["solver"], axes["solver.method"].values, source)
    nm = data["solver"]["norm_method"]
    levels = [k for k in NOISE_LEVELS if f"noise.{k}" in axes]
    if len(levels) != 1:
        raise SpecError(
            source,
            "noise",
            "exactly one of sigma, eps, eps_scaled",
            levels or "<none>",
            "sigma sets the entry scale; eps / eps_scaled set the operator norm of E",
        )
    level = levels[0]
    scale = data["noise"]["scale"]
    inferred = "sigma" if level == "sigma" else "opnorm"
    if scale is None:
        data["noise"]["scale"] = scale = inferred
    if scale not in _SCALES:
        raise SpecError(source, "noise.scale", f"one of {list(_SCALES)}", scale)
    if scale != inferred:
        raise SpecError(
            source,
            "noise.scale",
            f'"{inferred}" with noise.{level}',
            scale,
            'scale = "sigma" goes with noise.sigma; scale = "opnorm" with noise.eps or eps_scaled',
        )
    level_values = axes[f"noise.{level}"].values
    for value in (min(level_values), max(level_values)):  # the range is an interval: O(1)
        try:
            check_level(value, level)
        except ValueError:
            raise SpecError(
                source, f"noise.{level}", f"values between 0 and {MAX_SCALE:g}", value
            ) from None
    # Option names, values and types go through the core's own dry bind (check_options), for
    # every (method, n, p) the sweep will solve, and for the norm method each one resolves to.
    checked: set[tuple[str, str, int, int]] = set()
    for m in axes["solver.method"].values:
        for n in ns:
            for p in ps:
                for norm, method in ((False, m), (True, resolve_norm_method(m, n, p, nm))):
                    if (str(norm), method, n, p) not in checked:
                        checked.add((str(norm), method, n, p))
                        check_method_options(data, method, n, p, norm, source)
    steps = data["solver"]["steps"]
    if steps is not None:
        min_rank = min(axes["tensor.rank"].values) if "tensor.rank" in axes else min(ns)
        if not 1 <= steps <= min_rank:
            raise SpecError(
                source,
                "solver.steps",
                f"1 <= steps <= rank (smallest rank is {min_rank})",
                steps,
                "SROA extracts one component per step; omit steps to run all rank steps",
            )


def _perturbation_models(data: dict[str, Any], source: str) -> tuple[str, ...]:
    """Models on the ``noise.model`` axis that the perturbation registry accepts (families,
    import paths, mixtures), validated with their ``noise.params`` and ``noise.weight`` by the
    registry's own rules; i.i.d. models are left to the noise registry check."""
    noise = data["noise"]
    given = noise["model"]
    names = [given] if isinstance(given, str) else list(given) if isinstance(given, list) else []
    weight = noise.get("weight")
    if weight is not None and not isinstance(weight, float):
        raise SpecError(source, "noise.weight", "a number in [0, 1]", weight, "it is not an axis")
    # Tables of models not on the axis (left by --set noise.model=...) are dropped with a note.
    noise["params"] = prune_model_params(noise["params"], names, source)
    out = []
    for name in names:
        if name in NOISE_MODELS or not (name in PERTURBATIONS or ":" in name or "+" in name):
            continue  # i.i.d. or unknown: the noise-model check below names it
        try:
            check_model(
                name,
                model_params(noise["params"], name),
                DEFAULT_WEIGHT if weight is None else weight,
            )
        except ValueError as exc:
            raise SpecError(
                source, "noise.model", "a valid perturbation model", name, with_hint(exc)
            ) from None
        out.append(name)
    return tuple(out)
