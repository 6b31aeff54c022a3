"""Model sweeps: method-of-moments studies (a ``[model]`` spec table) as sweep instances.

A model sweep replaces the planted tensor and synthetic noise of ``[tensor]``/``[noise]`` by a
latent variable model of :mod:`sroa_dist.moments`: every instance draws the model's parameters
from its seeded prior, samples ``N`` observations, estimates the whitened third moment (ICA: the
whitened fourth cumulant) ``T̂ = T + E`` and runs SROA on it
(:func:`sroa_dist.moments.run_study`). This module holds everything specific to that kind of
sweep -- schema and checks, grid-point settings and seeds, cost model, block kernel, cube
variables, provenance -- and the kind object :data:`MODEL`
registered in :mod:`.registry`, through which spec loading, layouts, the worker and the store reach
it.

Grammar (see ``docs/sweeps.md``)::

    name, seed, replicates, description
    [model]   name, N, k, d, L (topics), sigma2 (gmm), weights, norms, global_check
    [model.prior]       concentration (topics) | mean_scale (gmm) | sources, mixing_scale (ica)
    [model.tolerances]  component, weight
    [solver]  method, options

``global_check`` (a method name or a list of them; default none): those methods' SROA steps that
are not certified are checked for global optimality and redone from the check's point where it
finds a higher value (``sroa(global_check=True, redo=True)``): the "global-checked" SS-HOPM of the
sample studies, beside the power method left as the paper's local baseline.

``model.N``, ``model.k``, ``model.d``, ``model.L``, ``model.weights`` and ``solver.method`` may be
axes (a list or a range table), with dimensions ``N``, ``k``, ``d``, ``L``, ``weight_ratio`` and
``method``.

Seeding: the model's parameters come from ``SeedSequence(seed, spawn_key=(h("model=…"),
h("k=…"), h("d=…"), h("weight_ratio=…"), replicate))`` and the study (sample, SROA starts, norm
solver) from the same key extended by ``(h("N=…"), h("L=…"))``. Neither contains the method, so
methods are compared on the same samples; and replicate ``r`` keeps the same topics or means
along the ``N`` and ``L`` axes, so an error-vs-``N`` curve is one model seen with more data.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from sroa_dist.moments import (
    DEFAULT_TOLERANCES,
    ICA_SOURCES,
    MODELS,
    MomentStudy,
    Tolerances,
    make_model,
    run_study,
)

from ..cube import SHARED_AXES, STEP, Dim, Variable, by_name
from ..layout import WORKER_BASE_BYTES, BlockResult, BlockTask, Layout
from ..spec import (
    COMMON_SCHEMA,
    Axis,
    SpecError,
    SweepSpec,
    build_axes,
    check_method_options,
    check_methods,
    check_replicates,
    key_meanings,
    validate_table,
)
from .base import GridPoint, KindBase, grid_points, timed_block
from .moment_model import norm_revision_options

__all__ = [
    "MODEL",
    "MODEL_AXIS_KEYS",
    "MODEL_VARIABLES",
    "ModelInstanceSettings",
    "ModelKind",
    "ModelSection",
    "ModelSweepSpec",
    "compute_model_block",
    "model_spec_from_dict",
    "model_weights",
]

#: Dotted spec key -> dimension name, for the keys of a model sweep that may be swept.
MODEL_AXIS_KEYS: dict[str, str] = {
    "model.k": "k",
    "model.d": "d",
    "model.L": "L",
    "model.weights": "weight_ratio",
    "solver.method": "method",
    "model.N": "N",
}

#: Sweep dims of model sweeps, in cube order: the model's size axes, the method, then the
#: sample size N.
MODEL_DIMS: Mapping[str, Dim] = by_name(
    Dim("k", "i8", "number of latent classes k (topics or mixture components)"),
    Dim("d", "i8", "observation dimension d (vocabulary size or ambient dim)"),
    Dim("L", "i8", "words per document L (single-topic model)"),
    Dim(
        "weight_ratio",
        "f8",
        "mixing-weight imbalance max(w)/min(w); weights geometric in the class index, 1 = uniform",
    ),
    SHARED_AXES["method"],
    Dim("N", "i8", "sample size N (documents or points) per instance"),
)

_S = (STEP,)
_ALG1 = (("paper", "Algorithm 1, line 3"),)
_EPS = (("paper", "epsilon = ||E||"),)
_STEP_NOTE = (
    ("note", "SROA step j recovers one component; errors after optimal (Hungarian) matching"),
)

#: Variables of a model sweep (``[model]`` spec), in documented order.
MODEL_VARIABLES: Mapping[str, Variable] = by_name(
    Variable(
        "lam_hat",
        _S,
        "f8",
        "lambda_hat_j of SROA step j on the whitened T_hat (sign fixed > 0); "
        "the recovered weight is 1/lambda_hat_j^2",
        extra=_ALG1,
    ),
    Variable("certified", _S, "bool", "global optimality of SROA step j certified by the solver"),
    Variable("upper_bound", _S, "f8", "valid upper bound of step j's objective max T_{j-1} x^3"),
    Variable(
        "component_error",
        _S,
        "f8",
        "error of the component recovered at step j: total variation "
        "(1/2 l1) to the matched topic, or l2 distance to the matched mean",
        units="1 (topics, probability); data units (gmm)",
        extra=_STEP_NOTE,
    ),
    Variable(
        "weight_error",
        _S,
        "f8",
        "|w_hat_j - w_pi(j)|: error of the mixing weight recovered at step j",
        extra=_STEP_NOTE,
    ),
    Variable(
        "eps",
        (),
        "f8",
        "||E|| with the population whitening W: E = M3_hat(W,W,W) - M3(W,W,W), "
        "the paper's perturbation (best value found)",
        units="1 (whitened space)",
        extra=_EPS,
    ),
    Variable("eps_lower", (), "f8", "certified lower bound of ||E|| (population W)"),
    Variable("eps_upper", (), "f8", "certified upper bound of ||E|| (population W)"),
    Variable("eps_certified", (), "bool", "||E|| bracket (population W) certified tight"),
    Variable(
        "eps_full",
        (),
        "f8",
        "||E|| with the estimated whitening W_hat: M3_hat(W_hat,W_hat,W_hat) "
        "minus the true SOD tensor in W_hat's coordinates (whole pipeline; best value found)",
        units="1 (whitened space)",
    ),
    Variable("eps_full_upper", (), "f8", "certified upper bound of eps_full"),
    Variable(
        "lambda_min",
        (),
        "f8",
        "smallest true lambda_i = w_i^(-1/2), the scale eps compares with",
    ),
    Variable(
        "success",
        (),
        "bool",
        "every component_error and weight_error within the tolerances",
        extra=(("note", "False also for instances not computed yet (see component_error)"),),
    ),
    Variable(
        "sigma2_hat",
        (),
        "f8",
        "variance used by the mixture's corrections (NaN for topics)",
        units="data units^2",
    ),
    Variable(
        "solve_time",
        (),
        "f8",
        "wall seconds of the whole instance: sampling, moment estimation, SROA and both norms",
        units="s",
    ),
)

#: Largest estimated memory of one instance (the sample is held whole by the estimators).
MAX_INSTANCE_BYTES = 4 * 2**30
#: Largest estimated time of one instance: beyond it a block cannot be retried cheaply.
MAX_INSTANCE_SECONDS = 3600.0

# The keys shared with other kinds (name, seed, replicates, [solver], [output] vectors) come
# from the common schema, so the kinds cannot disagree on them.
_SCHEMA: dict[str, Any] = {
    **{k: COMMON_SCHEMA[k] for k in ("name", "description", "seed", "replicates")},
    "model": {
        "name": ("str", None, True),
        "N": ("int_axis", None, True),
        "k": ("int_axis", None, True),
        "d": ("int_axis", None, True),
        "L": ("int_axis", None, False),
        "sigma2": ("float", None, False),
        "weights": ("float_axis", 1.0, False),
        "norms": ("bool", True, False),
        # Methods (one name or a list) whose uncertified SROA steps are checked for global
        # optimality and redone from the check's point where it finds a higher value
        # (sroa(global_check=True, redo=True)); a string list, never an axis.
        "global_check": ("str_axis", None, False),
        "prior": ("table", {}, False),
        "tolerances": ("table", {}, False),
    },
    "solver": COMMON_SCHEMA["solver"],
    "output": {"vectors": COMMON_SCHEMA["output"]["vectors"]},
}

#: Prior parameters of each registered model (keywords of its ``from_prior``).
_PRIOR_KEYS = {
    "topics": ("concentration",),
    "gmm": ("mean_scale",),
    "ica": ("sources", "mixing_scale"),
}
#: Prior parameters that name a law instead of a positive number, with their allowed values.
_PRIOR_NAMES = {("ica", "sources"): ("mixed", *sorted(ICA_SOURCES))}


@dataclass(frozen=True)
class ModelSection:
    """``[model]``: the latent variable model, its sample size and what is measured.

    Keys that may be swept hold their value as written; their values are in the spec's axes.
    """

    name: str
    N: Any
    k: Any
    d: Any
    L: Any
    sigma2: float | None
    weights: Any
    norms: bool
    prior: Mapping[str, float | str]
    tolerances: Mapping[str, float]
    global_check: Any = None

    @property
    def checked_methods(self) -> tuple[str, ...]:
        """The methods whose steps are globally checked (``global_check``; none by default)."""
        g = self.global_check
        return () if g is None else (g,) if isinstance(g, str) else tuple(g)


@dataclass(frozen=True)
class ModelSweepSpec(SweepSpec):
    """A validated model sweep spec; as :class:`SweepSpec`, with the model's axes."""

    kind: ClassVar[str] = "model"
    axis_keys: ClassVar[Mapping[str, str]] = MODEL_AXIS_KEYS

    @functools.cached_property
    def model(self) -> ModelSection:
        """The ``[model]`` section."""
        return ModelSection(**self.data["model"])

    @property
    def model_name(self) -> str:
        """Registered model name (``"topics"``, ``"gmm"`` or ``"ica"``)."""
        return self.model.name

    @property
    def ranks(self) -> tuple[int, ...]:
        """SROA recovers every latent class: the rank is k."""
        return tuple(int(k) for k in self.axes["model.k"].values)

    def settings_at(self, coords: Mapping[str, Any]) -> ModelInstanceSettings:
        """The :class:`ModelInstanceSettings` of a grid point."""
        return settings_from_coords(self, coords)


# --------------------------------------------------------------------------------------------
# Validation


def model_spec_from_dict(raw: Mapping[str, Any], source: str = "<dict>") -> ModelSweepSpec:
    """Validate a spec with a ``[model]`` table and resolve defaults."""
    for other in ("tensor", "noise"):
        if other in raw:
            raise SpecError(
                source,
                other,
                "no [tensor] or [noise] table in a spec with a [model] table",
                f"<[{other}] given>",
                "a sweep either plants a tensor with synthetic noise ([tensor], [noise]) or "
                "samples a latent variable model ([model]); split it into two specs",
            )
    raw = dict(raw)
    model_raw = raw.get("model")
    if isinstance(model_raw, Mapping):
        model_raw = dict(model_raw)
        w = model_raw.get("weights")
        if w == "uniform" or (isinstance(w, list) and "uniform" in w):
            model_raw["weights"] = (
                [1.0 if x == "uniform" else x for x in w] if isinstance(w, list) else 1.0
            )
        raw["model"] = model_raw
    data = validate_table(raw, _SCHEMA, "", source)
    axes = build_axes(data, _SCHEMA, MODEL_AXIS_KEYS, source)
    _check_model_semantics(data, axes, source)
    return ModelSweepSpec(data=data, source=source, axes=axes)


def _check_model_semantics(data: dict[str, Any], axes: dict[str, Axis], source: str) -> None:
    """Cross-key rules: registry names, 2 <= k <= d, L >= 3, steps = k, memory and time."""
    model = data["model"]
    name = model["name"]
    if name not in MODELS:
        raise SpecError(source, "model.name", f"one of {sorted(MODELS)}", name, "unknown model")
    check_replicates(data["replicates"], source)
    Ns, ks, ds = (axes[f"model.{x}"].values for x in ("N", "k", "d"))
    if min(Ns) < 2:
        raise SpecError(source, "model.N", "sample sizes N >= 2", min(Ns))
    if min(ks) < 2:
        raise SpecError(source, "model.k", "k >= 2 latent classes", min(ks))
    if max(ks) > min(ds):
        raise SpecError(
            source,
            "model.k",
            f"k <= d (smallest d is {min(ds)})",
            max(ks),
            "the k components must be linearly independent in R^d",
        )
    if name == "topics":
        if "model.L" not in axes:
            raise SpecError(source, "model.L", "words per document L >= 3 (topics)", "<missing>")
        if min(axes["model.L"].values) < 3:
            raise SpecError(
                source,
                "model.L",
                "L >= 3",
                min(axes["model.L"].values),
                "three distinct words per document estimate M3",
            )
        if model["sigma2"] is not None:
            raise SpecError(
                source, "model.sigma2", "no sigma2 for topics", model["sigma2"], "sigma2 is gmm's"
            )
    elif name == "ica":
        for key, why in (("L", "L is the topics' one"), ("sigma2", "sigma2 is gmm's")):
            if model[key] is not None:
                raise SpecError(source, f"model.{key}", f"no {key} for ica", model[key], why)
        if max(axes["model.weights"].values) != 1:
            raise SpecError(
                source,
                "model.weights",
                '"uniform" (ica has no class weights)',
                max(axes["model.weights"].values),
                "the sources' kurtoses are the SOD weights; choose them with model.prior.sources",
            )
        if min(axes["model.N"].values) < 4:
            raise SpecError(source, "model.N", "N >= 4 for ica (the fourth k-statistic)", min(Ns))
    else:
        if "model.L" in axes:
            raise SpecError(
                source, "model.L", f"no L for model {name!r}", model["L"], "L is the topics' one"
            )
        if model["sigma2"] is None:
            model["sigma2"] = 1.0
        if not model["sigma2"] > 0:
            raise SpecError(source, "model.sigma2", "a variance > 0", model["sigma2"])
    if min(axes["model.weights"].values) < 1:
        raise SpecError(
            source,
            "model.weights",
            '"uniform" or imbalance ratios max(w)/min(w) >= 1',
            min(axes["model.weights"].values),
        )
    valid_prior = _PRIOR_KEYS[name]
    for key, val in model["prior"].items():
        if key not in valid_prior:
            raise SpecError(
                source, f"model.prior.{key}", f"one of {list(valid_prior)}", "<unknown key>"
            )
        names = _PRIOR_NAMES.get((name, key))
        if names is not None:
            if val not in names:
                raise SpecError(source, f"model.prior.{key}", f"one of {list(names)}", val)
        elif isinstance(val, bool) or not isinstance(val, int | float) or not val > 0:
            raise SpecError(source, f"model.prior.{key}", "a positive number", val)
    default_tol = DEFAULT_TOLERANCES[name]
    for key, val in model["tolerances"].items():
        if key not in ("component", "weight"):
            raise SpecError(
                source, f"model.tolerances.{key}", "one of ['component', 'weight']", "<unknown key>"
            )
        if isinstance(val, bool) or not isinstance(val, int | float) or not val > 0:
            raise SpecError(source, f"model.tolerances.{key}", "a positive number", val)
    model["tolerances"] = {
        "component": float(model["tolerances"].get("component", default_tol.component)),
        "weight": float(model["tolerances"].get("weight", default_tol.weight)),
    }
    solver = data["solver"]
    for key in ("norm_method", "norm_options"):
        if solver[key]:
            raise SpecError(
                source,
                f"solver.{key}",
                "nothing (model sweeps choose the norm solver)",
                solver[key],
                "||E|| is certified where the moment relaxation fits (k <= 14), else a "
                "multi-start lower bound",
            )
    check_methods(solver, axes["solver.method"].values, source, ("options",))
    checked = model["global_check"]
    for m in [] if checked is None else [checked] if isinstance(checked, str) else checked:
        if m not in axes["solver.method"].values:
            raise SpecError(
                source,
                "model.global_check",
                f"methods of solver.method ({list(axes['solver.method'].values)})",
                m,
                'name the methods whose steps are checked, e.g. global_check = ["sshopm"]',
            )
    # The core's own dry bind of option names and values, at every SROA size (k x k x k).
    order = MODEL_ORDER[name]
    for m in axes["solver.method"].values:
        for k in sorted(set(ks)):
            check_method_options(data, m, int(k), order, False, source)
    if solver["steps"] is not None and set(ks) != {solver["steps"]}:
        raise SpecError(
            source,
            "solver.steps",
            f"steps = k ({sorted(ks)}) or no steps",
            solver["steps"],
            "a model sweep recovers every component, so SROA runs k steps; omit steps",
        )
    if data["output"]["vectors"]:
        raise SpecError(
            source,
            "output.vectors",
            "false for a model sweep",
            True,
            "recovered components are summarised by component_error; use "
            "sroa_dist.moments.run_study to inspect them",
        )
    _check_budget(data, axes, source)


def _check_budget(data: dict[str, Any], axes: dict[str, Axis], source: str) -> None:
    """Refuse grid corners whose one instance would not fit in memory or in an hour."""
    N, k, d = (max(axes[f"model.{x}"].values) for x in ("N", "k", "d"))
    L = max(axes["model.L"].values) if "model.L" in axes else None
    s = ModelInstanceSettings(data["model"]["name"], N, k, d, L, 1.0, "certified")
    mem, cost = s.memory_bytes(), s.cost()
    if mem > MAX_INSTANCE_BYTES:
        raise SpecError(
            source,
            "model.N",
            f"instances within {MAX_INSTANCE_BYTES / 2**30:.0f} GiB",
            f"<about {mem / 2**30:.1f} GiB at N = {N}, d = {d}>",
            "the sample is held in memory; lower N or d",
        )
    if cost > MAX_INSTANCE_SECONDS:
        raise SpecError(
            source,
            "model.N",
            f"instances within {MAX_INSTANCE_SECONDS:.0f} s",
            f"<about {cost:.0f} s at N = {N}, k = {k}, d = {d}>",
            "lower N, k or d",
        )


# --------------------------------------------------------------------------------------------
# Grid points, seeds, cost


#: Order of the tensor each model's SROA decomposes (ICA: the fourth cumulant).
MODEL_ORDER = {"topics": 3, "gmm": 3, "ica": 4}


def model_weights(k: int, ratio: float) -> np.ndarray:
    """Mixing weights ``w_i ∝ ratio^{-i/(k-1)}`` (``max/min = ratio``; 1 is uniform)."""
    w = float(ratio) ** (-np.arange(k) / (k - 1))
    return w / w.sum()


@dataclass(frozen=True)
class ModelInstanceSettings(GridPoint):
    """Everything that defines one grid point of a model sweep (instances differ by replicate).

    The model's parameters are seeded by ``model``, ``k``, ``d`` and ``weight_ratio`` (never N,
    L or the method), and instances sharing those share them, per replicate (the group key).
    """

    seed_fields = ("model", "k", "d", "weight_ratio")
    group_fields = seed_fields

    model: str
    N: int
    k: int
    d: int
    L: int | None
    weight_ratio: float
    method: str
    sigma2: float | None = None
    prior: tuple[tuple[str, float | str], ...] = ()

    def study_seed(self, master_seed: int, replicate: int) -> np.random.SeedSequence:
        """Seed of the study (sample, SROA starts, norm solver) for ``replicate``: the model's
        seed extended by N and L, never the method."""
        return self.seed(master_seed, replicate, *self.hashed("N", "L"))

    def build_model(self, master_seed: int, replicate: int):
        """The instance's model, parameters drawn from the seeded prior."""
        params: dict[str, Any] = dict(self.prior)
        if self.model == "topics":
            params["doc_length"] = int(self.L)
        elif self.model == "gmm":
            params["sigma2"] = float(self.sigma2)
        weights = model_weights(self.k, self.weight_ratio)
        return make_model(
            self.model,
            self.k,
            self.d,
            rng=np.random.default_rng(self.seed(master_seed, replicate)),
            weights=weights,
            **params,
        )

    def memory_bytes(self) -> float:
        """Rough peak bytes of one instance (the sample dominates)."""
        if self.model == "topics":
            return 48.0 * self.N * self.L + 64.0 * self.d * self.k + 8.0 * min(self.d, 400) ** 2
        return 24.0 * self.N * self.d + 8.0 * min(self.d, 400) ** 2

    def cost(self) -> float:
        """Rough seconds of one instance on one core; only used to size blocks.

        Orders of magnitude measured on one core: a fixed part growing with d² (the whitening's
        eigensolver), the streamed moments ``N·(nnz/N·k + k³)`` (topics) or ``N·d·k`` plus the
        eigensolver's passes over the dense sample (gmm); SROA and the two norm solves on
        ``k × k × k`` tensors do not depend on ``N`` or ``d``.
        """
        k, N, d = self.k, self.N, self.d
        fixed = 0.1 + 0.02 * (k / 5) ** 3 + 1e-7 * d**2
        if self.model == "topics":
            return fixed + 2e-8 * N * (self.L * k + k**3)
        if self.model == "ica":
            # The fourth k-statistic is one (k², N) @ (N, k²) product; p = 4 SROA steps.
            return fixed + 0.04 * (k / 5) ** 4 + 5e-9 * N * d * (k + 50) + 4e-10 * N * k**4
        return fixed + 5e-9 * N * d * (k + 50)


def settings_from_coords(spec: ModelSweepSpec, values: Mapping[str, Any]) -> ModelInstanceSettings:
    """Settings of the grid point whose swept coordinates are ``values`` (scalars from spec)."""
    model = spec.model
    L = spec.setting("model.L", values)
    return ModelInstanceSettings(
        model=model.name,
        N=int(spec.setting("model.N", values)),
        k=int(spec.setting("model.k", values)),
        d=int(spec.setting("model.d", values)),
        L=None if L is None else int(L),
        weight_ratio=float(spec.setting("model.weights", values)),
        method=str(spec.setting("solver.method", values)),
        sigma2=model.sigma2,
        prior=tuple(
            sorted((k, v if isinstance(v, str) else float(v)) for k, v in model.prior.items())
        ),
    )


def model_mean_cost(spec: ModelSweepSpec) -> float:
    """Mean cost of one instance over the grid points (model grids are a few hundred points:
    the sample-size and model axes, not the replicates)."""
    costs = [s.cost() for s in grid_points(spec)]
    return sum(costs) / len(costs)


# --------------------------------------------------------------------------------------------
# Block kernel


def compute_model_block(task: BlockTask, spec: ModelSweepSpec) -> BlockResult:
    """Compute every instance of a model-sweep block (pure: depends only on the task)."""
    tol = Tolerances(**spec.model.tolerances)
    norms = bool(spec.model.norms)
    checked = spec.model.checked_methods
    # ‖E‖ by the norm methods at the revisions the store pins, as the SROA's method.
    norm_options = norm_revision_options(spec.solver.revisions)

    def solve(s: ModelInstanceSettings, rep: int) -> MomentStudy:
        return run_study(
            s.build_model(spec.seed, rep),
            s.N,
            s.method,
            rng=s.study_seed(spec.seed, rep),
            tolerances=tol,
            norms=norms,
            norm_options=norm_options,
            **spec.options_for(s.method),
            **({"global_check": True, "redo": True} if s.method in checked else {}),
        )

    return timed_block(
        task, spec, MODEL_VARIABLES, solve, lambda out, idx, s, rep, st: write_study(out, idx, st)
    )


def write_study(out: dict[str, np.ndarray], idx: tuple[int, ...], st: MomentStudy) -> None:
    """Store one :class:`~sroa_dist.moments.MomentStudy` at ``idx`` of a block's arrays."""
    fit, err = st.fit, st.errors
    k = fit.k
    out["lam_hat"][idx][:k] = fit.lambdas
    out["certified"][idx][:k] = fit.certified
    out["upper_bound"][idx][:k] = fit.upper_bounds
    out["component_error"][idx][:k] = err.component_error
    out["weight_error"][idx][:k] = err.weight_error
    if st.eps_population is not None:
        e = st.eps_population
        out["eps"][idx], out["eps_lower"][idx], out["eps_upper"][idx] = e.value, e.lower, e.upper
        out["eps_certified"][idx] = e.certified
    if st.eps_full is not None:
        out["eps_full"][idx], out["eps_full_upper"][idx] = st.eps_full.value, st.eps_full.upper
    out["lambda_min"][idx] = st.lambda_min
    out["success"][idx] = st.success
    out["sigma2_hat"][idx] = fit.sigma2


#: What each key of a model spec means (docs/reference/spec.md): the keys this kind reads
#: its own way; the common and shared keys' meanings come from :mod:`..spec.meanings`.
MODEL_KEY_MEANINGS: Mapping[str, str] = key_meanings(
    _SCHEMA,
    {
        "model.name": "latent variable model: `topics`, `gmm` or `ica`",
        "model.N": "sample size N (documents or points) per instance",
        "model.k": "number of latent classes k",
        "model.d": "observation dimension d",
        "model.L": "words per document (topics)",
        "model.sigma2": "noise variance of the mixture (gmm)",
        "model.weights": "mixing-weight imbalance max(w)/min(w); 1 = uniform",
        "model.norms": "compute ‖E‖ and its bracket for every instance",
        "model.prior": "prior of the model's parameters: `concentration` (topics), `mean_scale` "
        "(gmm), `sources` and `mixing_scale` (ica)",
        "model.tolerances": "success tolerances: `component`, `weight`",
        "model.global_check": "methods (a name or a list) whose uncertified SROA steps are "
        "checked for global optimality and redone from the check's point; default none",
    },
)


class ModelKind(KindBase):
    """The ``model`` kind (marker table ``[model]``): method-of-moments studies, in blocks
    sized by the cost model (instance memory is bounded by validation instead)."""

    name = "model"
    marker = "model"
    all_variables: Mapping[str, Variable] = MODEL_VARIABLES
    dims: Mapping[str, Dim] = MODEL_DIMS
    #: The spec grammar and its sweepable keys (docs/reference/spec.md lists them).
    schema: Mapping[str, Any] = _SCHEMA
    axis_keys: Mapping[str, str] = MODEL_AXIS_KEYS
    key_meanings: Mapping[str, str] = MODEL_KEY_MEANINGS
    #: Report and figures (:class:`sroa_dist.analysis.KindAnalysis`; a path: analysis is a
    #: layer above): SROA's per-step results, then error vs N and the N needed for success.
    analysis = "sroa_dist.analysis.moments:MODEL_ANALYSIS"

    parse = staticmethod(model_spec_from_dict)
    mean_cost = staticmethod(model_mean_cost)
    compute_block = staticmethod(compute_model_block)

    def instance_cost(self, spec: ModelSweepSpec, settings: ModelInstanceSettings) -> float:
        """Seconds of one instance on one core (:meth:`ModelInstanceSettings.cost`)."""
        return settings.cost()

    def worker_memory(self, spec: ModelSweepSpec, layout: Layout) -> float:
        """Peak bytes of a worker: the process and the grid's largest instance (a block's
        instances run one after the other; :meth:`ModelInstanceSettings.memory_bytes`)."""
        return WORKER_BASE_BYTES + max(s.memory_bytes() for s in grid_points(spec))

    def extents(self, spec: ModelSweepSpec) -> tuple[int, int]:
        """``step`` has length max k (SROA runs k steps); ``component`` holds no data."""
        return int(spec.n_steps), int(spec.n_steps)

    def provenance(self, spec: ModelSweepSpec) -> dict[str, Any]:
        """Root attrs of the settings that are not axes: the model, prior, tolerances."""
        model = spec.model
        return {
            "setting_model": model.name,
            "setting_model_prior": json.dumps(model.prior, sort_keys=True),
            "setting_model_tolerances": json.dumps(model.tolerances, sort_keys=True),
            "setting_model_norms": int(model.norms),
            # Only where set: stores made before the key keep their attrs.
            **(
                {"setting_model_global_check": json.dumps(list(model.checked_methods))}
                if model.checked_methods
                else {}
            ),
            **({"setting_sigma2": model.sigma2} if model.sigma2 is not None else {}),
        }

    def instance(self, spec: ModelSweepSpec, settings: ModelInstanceSettings, replicate: int):
        """The instance's latent variable model, parameters drawn from its seeded prior (the
        sample is drawn inside the study from :meth:`ModelInstanceSettings.study_seed`)."""
        return settings.build_model(spec.seed, replicate)


#: The registered model kind.
MODEL = ModelKind()
