"""The sample-complexity sweep kind: per grid point, the sample size ``N*`` at which a method
recovers a latent variable model with probability 1/2 (issue 36, "Does a global step buy
samples?").

Each instance is one adaptive search in ``N`` (:func:`sroa_dist.studies.sample_complexity.
sample_size_search`: the first-crossing machinery of the threshold kind, in ``N`` instead of
ε): a geometric scan upward in ``N``, ``samples.draws`` independent draws at each size (each a
model from the seeded prior, ``N`` samples, the whitened moment tensor, SROA, the matched
errors against the tolerances), the first size whose success fraction reaches 1/2, and a
refinement of the bracket ``(N_lo, N_hi]`` to ``rtol``. Beside the bracket the cube holds the
Wilson intervals of the fractions at its ends, an interval for ``N*`` from every evaluated size,
and ``‖E‖`` at ``N_hi`` (``E`` = the estimated whitened moment minus the population one, population
whitening) beside the two scales it is compared with, ``λ_min·k^{−1/(p−1)}`` (global steps) and
``λ_min/k`` (the power method's analysis).

Grammar (marker table ``[samples]``)::

    name, seed, replicates, description
    [samples]  model, k, d, d_per_k, L (topics), sigma2 (gmm),
               weights, zipf_exponent, draws, N_range, rtol, scan_factor, scan_phases,
               continue_points, k_section, norm_draws, certified_max_k
    [samples.prior]       as a model sweep's [model.prior]
    [samples.tolerances]  component, weight
    [solver]   method (labels below)

The model's keys live in ``[samples]`` (a ``[model]`` table marks a model sweep).
``samples.k``, ``samples.weights`` and ``solver.method`` may be axes (dims ``k``, ``weights``,
``method``). ``d`` is ``samples.d`` where given, else ``max(k, ⌈d_per_k·k⌉)``. ``weights``:
``"uniform"`` or ``"zipf"`` (``w_i ∝ i^{−zipf_exponent}``: the spread λ_i = w_i^{−1/2}); ICA
has no class weights (its SOD weights are the sources' kurtoses), so an ICA spec is uniform.

Method labels: ``power@aghkt`` (the randomized power method at the AGHKT budget,
:func:`sroa_dist.methods.aghkt_budget` at ``n = k`` with the noise level unknown),
``power@aghkt*F`` (``⌈F·L⌉`` starts, the same iterations), ``sshopm@global`` (SS-HOPM with
every step globally checked and redone from the check's point, ``sroa(global_check=True,
redo=True)``), ``sshopm`` and ``certified``. ``certified`` runs where the moment relaxation is
tractable at ``(k, p)`` and ``k <= certified_max_k`` (24); elsewhere its instances are skipped
(``searched`` False, NaN results).

Seeding: draw ``r`` of search replicate ``i`` at size ``N`` has its model from
``SeedSequence(seed, spawn_key=(h("model=…"), h("k=…"), h("d=…"), h("weights=…"), i, r))``
and its sample and SROA starts from that key extended by ``h("N=…")`` (``h`` is
:func:`~..layout.stable_hash32`): every draw is a pure function of (seed, coordinates,
replicate, draw, N), never of the method (methods are compared on the same samples) or of the
order or place the draws ran. A draw's model is the same at every ``N``, so a search follows one
set of models with more data. The search's trace is stored over the cube's ``step`` dim, which
here counts evaluated sizes.

A search's rounds (``k_section`` sizes each) are handed, draw by draw, to the inner pool where
the block runs on a cluster (:mod:`..inner_pool`); the sizes of a round depend on the spec and
the outcomes only, so the bracket is the same bits on any number of workers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from sroa_dist.errors import InputError, with_hint
from sroa_dist.methods import aghkt_budget, relaxation_tractable, revision_options, solve_cost
from sroa_dist.moments import DEFAULT_TOLERANCES, Tolerances, run_study
from sroa_dist.studies import SampleSizeResult, max_size_evals, sample_size_search

from ..cube import SHARED_AXES, STEP, Dim, Variable, by_name
from ..inner_pool import current_pool
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
    dimension,
    model_fields,
    model_meanings,
    model_order,
    norm_revision_options,
    zipf_weights,
)

__all__ = [
    "SAMPLES",
    "SAMPLES_DIMS",
    "SAMPLES_SCHEMA",
    "SAMPLES_VARIABLES",
    "SampleMethod",
    "SamplesKind",
    "SamplesSettings",
    "SamplesSweepSpec",
    "parse_method",
    "zipf_weights",
]

#: Largest k at which ``certified`` runs (beside the relaxation's own tractability).
CERTIFIED_MAX_K = 24

#: The schema of a samples spec: ``(vtype, default, required)`` per key (:mod:`..spec.fields`).
SAMPLES_SCHEMA: dict[str, Any] = {
    **{k: COMMON_SCHEMA[k] for k in ("name", "description", "seed", "replicates")},
    # One table: the model's keys (a [model] table would make the spec a model sweep's).
    "samples": {
        **{key: MODEL_SCHEMA[key] for key in ("model", "k", "d", "d_per_k", "L", "sigma2")},
        "prior": MODEL_SCHEMA["prior"],
        "tolerances": ("table", {}, False),
        "weights": MODEL_SCHEMA["weights"],
        "zipf_exponent": MODEL_SCHEMA["zipf_exponent"],
        "draws": ("int", 20, False),
        # Checked as a pair below; "float_axis" only type-checks the numbers.
        "N_range": ("float_axis", [100, 1_000_000], False),
        "rtol": ("float", 0.1, False),
        "scan_factor": ("float", 2.0, False),
        "scan_phases": ("int", 1, False),
        "continue_points": ("int", 1, False),
        "k_section": ("int", 1, False),
        "norm_draws": ("int", 2, False),
        "certified_max_k": ("int", CERTIFIED_MAX_K, False),
    },
    # The common [solver] and [output] tables (the store pins [solver.revisions]: the search's
    # method and the norm's, certified and sshopm, run at the pinned revisions); a samples
    # sweep names its methods by label and sets no other solver or output key.
    "solver": COMMON_SCHEMA["solver"],
    "output": COMMON_SCHEMA["output"],
}

#: Dotted spec key -> axis (dimension) name, for keys that may be swept.
AXIS_KEYS: dict[str, str] = {
    "samples.k": "k",
    "samples.weights": "weights",
    "solver.method": "method",
}
#: The ``[samples]`` keys that may be axes (their values are the cube's coordinates).
AXIS_LEAVES = ("k", "weights")
#: Sweep dims of samples sweeps, in cube order.
SAMPLES_DIMS: Mapping[str, Dim] = by_name(
    MODEL_DIMS["k"], MODEL_DIMS["weights"], SHARED_AXES["method"]
)

_S = (STEP,)
_EVAL = (
    ("note", "dim 'step' counts the search's evaluated sample sizes (in the order made)"),
    ("past_end", "NaN after the search's n_evals evaluations"),
)
_NSTAR = (("paper", "sample size at which recovery succeeds with probability 1/2"),)

#: Variables of a samples sweep, in documented order.
SAMPLES_VARIABLES: Mapping[str, Variable] = by_name(
    Variable(
        "n_star",
        (),
        "f8",
        "N*: the first evaluated sample size whose success fraction reached 1/2, below which "
        "every evaluated size stayed under it (the bracket's upper end)",
        extra=(*_NSTAR, ("note", "inf when no size in N_range reached 1/2; NaN: not searched")),
    ),
    Variable("n_lo", (), "f8", "lower end of the bracket (fraction < 1/2); 0 below N_range"),
    Variable("n_hi", (), "f8", "upper end of the bracket (fraction >= 1/2); equals n_star"),
    Variable("frac_lo", (), "f8", "success fraction at n_lo"),
    Variable("frac_hi", (), "f8", "success fraction at n_hi"),
    Variable("frac_lo_low", (), "f8", "95 % Wilson lower bound of frac_lo"),
    Variable("frac_lo_high", (), "f8", "95 % Wilson upper bound of frac_lo"),
    Variable("frac_hi_low", (), "f8", "95 % Wilson lower bound of frac_hi"),
    Variable("frac_hi_high", (), "f8", "95 % Wilson upper bound of frac_hi"),
    Variable(
        "n_star_low",
        (),
        "f8",
        "largest evaluated size below n_hi whose Wilson interval lies below 1/2 (0: none)",
    ),
    Variable(
        "n_star_high",
        (),
        "f8",
        "smallest evaluated size above n_lo whose Wilson interval lies above 1/2 (inf: none)",
    ),
    Variable("reached", (), "bool", "some size in N_range reached a success fraction of 1/2"),
    Variable(
        "searched",
        (),
        "bool",
        "the search ran (False: certified beyond its tractable k, or not computed yet)",
    ),
    Variable(
        "non_monotone", (), "bool", "some size failed (fraction < 1/2) above one that succeeded"
    ),
    Variable("n_evals", (), "f8", "number of sample sizes the search evaluated"),
    Variable("draws", (), "f8", "draws (sample, fit, match) per evaluated size"),
    Variable(
        "eps_at_star",
        (),
        "f8",
        "||E|| at N = n_hi, E = whitened moment estimate minus the population one (population "
        "whitening): median over the first norm_draws draws",
        extra=(
            ("paper", "epsilon = ||E||"),
            ("note", "certified where eps_certified; else a multi-start estimate (lower bound)"),
        ),
    ),
    Variable("eps_at_star_upper", (), "f8", "median certified upper bound of ||E|| at n_hi"),
    Variable("eps_certified", (), "bool", "every ||E|| at n_hi certified (a tight bracket)"),
    Variable("lambda_min", (), "f8", "smallest true |lambda_i| (w_i^(-1/2); ICA: |kurtosis|)"),
    Variable(
        "scale_global",
        (),
        "f8",
        "lambda_min * k^(-1/(p-1)): the ||E|| global steps tolerate (the paper's O(n^(-1/(p-1))))",
    ),
    Variable(
        "scale_power",
        (),
        "f8",
        "lambda_min / k: the ||E|| the power method's analysis tolerates (O(1/n))",
    ),
    Variable("trace_N", _S, "f8", "sample size of evaluation j of the search", extra=_EVAL),
    Variable(
        "trace_successes",
        _S,
        "f8",
        "draws of evaluation j that recovered every component",
        extra=_EVAL,
    ),
    Variable("solve_time", (), "f8", "wall seconds of the instance's whole search", units="s"),
)


# --------------------------------------------------------------------------------------------
# Method labels


_LABEL = re.compile(r"^power@aghkt(?:\*(\d+(?:\.\d+)?))?$|^(sshopm)(@global)?$|^(certified)$")
_LABEL_HINT = "method labels: power@aghkt, power@aghkt*4, sshopm, sshopm@global, certified"


@dataclass(frozen=True)
class SampleMethod:
    """A parsed method label: the rank-one method, its start budget and its global check."""

    label: str
    method: str
    #: Multiple of the AGHKT budget's starts (power only).
    factor: float = 1.0
    global_check: bool = False

    def options(self, k: int) -> dict[str, Any]:
        """SROA's keyword options at rank ``k``."""
        if self.method == "power":
            L, n_iter = aghkt_budget(k)
            return {"n_starts": max(1, math.ceil(self.factor * L)), "n_iter": n_iter}
        if self.global_check:
            return {"global_check": True, "redo": True}
        return {}


def parse_method(label: Any) -> SampleMethod:
    """The :class:`SampleMethod` a label names; ``InputError`` outside the grammar."""
    m = _LABEL.match(label) if isinstance(label, str) else None
    if m is None:
        raise InputError(
            f"method label: expected a label of the grammar; received {label!r}", _LABEL_HINT
        )
    if m.group(4):
        return SampleMethod(label, "certified")
    if m.group(2):
        return SampleMethod(label, "sshopm", global_check=bool(m.group(3)))
    factor = float(m.group(1)) if m.group(1) else 1.0
    if not factor > 0:
        raise InputError(f"method label {label!r}: expected a factor > 0", _LABEL_HINT)
    return SampleMethod(label, "power", factor=factor)


# --------------------------------------------------------------------------------------------
# Spec


@dataclass(frozen=True)
class SamplesSweepSpec(SweepSpec):
    """A validated samples sweep spec: ``[model]``, ``[samples]`` and a method-label axis."""

    kind: ClassVar[str] = "samples"
    axis_keys: ClassVar[Mapping[str, str]] = AXIS_KEYS

    @property
    def samples(self) -> Mapping[str, Any]:
        """The ``[samples]`` table (resolved)."""
        return self.data["samples"]

    @property
    def order(self) -> int:
        """Order p of the model's moment tensor."""
        return model_order(self.samples["model"])

    @property
    def ranks(self) -> tuple[int, ...]:
        """SROA recovers every class: the rank is k."""
        return tuple(int(k) for k in self.axes["samples.k"].values)

    @property
    def n_steps(self) -> int:
        """Length of the ``step`` dim: the most sizes one search can evaluate."""
        s = self.samples
        return max_size_evals(
            s["N_range"],
            s["rtol"],
            s["scan_phases"],
            s["k_section"],
            s["scan_factor"],
            s["continue_points"],
        )

    def dimension(self, k: int) -> int:
        """The observation dimension d at ``k`` classes."""
        return dimension(self.samples, k)

    def settings_at(self, coords: Mapping[str, Any]) -> SamplesSettings:
        """The :class:`SamplesSettings` of a grid point."""
        m = self.samples
        k, weights = self.setting("samples.k", coords), self.setting("samples.weights", coords)
        return SamplesSettings(
            **model_fields(m, k, weights),
            method=str(self.setting("solver.method", coords)),
            draws=int(m["draws"]),
            n_range=(int(m["N_range"][0]), int(m["N_range"][1])),
            norm_draws=int(m["norm_draws"]),
            certified_max_k=int(m["certified_max_k"]),
        )


@dataclass(frozen=True)
class SamplesSettings(GridPoint, MomentModelPoint):
    """One grid point (searches are not batched). A draw's model is seeded by the coordinates
    but the method (methods compared on the same samples), and its draw index."""

    seed_fields = ("model", "k", "d", "weights")
    group_fields = ("model", "k", "weights", "method")

    model: str
    k: int
    d: int
    L: int | None
    sigma2: float | None
    weights: str
    zipf_exponent: float
    method: str
    prior: tuple[tuple[str, Any], ...] = ()
    #: The search's size (not in any seed): what :meth:`cost` prices.
    draws: int = 1
    n_range: tuple[int, int] = (100, 1_000_000)
    norm_draws: int = 0
    certified_max_k: int = CERTIFIED_MAX_K

    def cost(self) -> float:
        """Rough seconds of this point's search on one idle core (:func:`search_seconds`):
        what sizes a block's deadline, so it must not come out low."""
        return search_seconds(self)

    def build_model(self, seed: int, replicate: int, draw: int):
        """Draw ``draw``'s model of search ``replicate``, from the seeded prior."""
        return self.model_from(np.random.default_rng(self.seed(seed, replicate, draw)))

    def study_seed(self, seed: int, replicate: int, draw: int, n: int) -> np.random.SeedSequence:
        """Seed of draw ``draw``'s sample and SROA at size ``n``."""
        return self.seed(seed, replicate, draw, stable_hash32("N", int(n)))

    def runs(self, certified_max_k: int) -> bool:
        """Whether the search runs here (``certified`` only where it fits)."""
        if parse_method(self.method).method != "certified":
            return True
        return self.k <= certified_max_k and relaxation_tractable(self.k, self.order)


def draw_outcome(
    settings: SamplesSettings,
    seed: int,
    replicate: int,
    draw: int,
    n: int,
    tolerances: Mapping[str, float],
    revisions: Mapping[str, Any],
    norms: bool = False,
    norm_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[bool, float, float, bool, float]:
    """One draw: ``(success, ‖E‖, its certified upper bound, certified, λ_min)`` of
    recovering draw ``draw``'s model from ``n`` samples (NaN norms without ``norms``); a pure
    function of its arguments. ``revisions``: the search method's options of its pinned
    revision; ``norm_options``: per norm method, those of its pinned revision."""
    sm = parse_method(settings.method)
    model = settings.build_model(seed, replicate, draw)
    options = {**sm.options(settings.k), **revisions}
    st = run_study(
        model,
        int(n),
        sm.method,
        rng=settings.study_seed(seed, replicate, draw, n),
        tolerances=Tolerances(**tolerances),
        norms=norms,
        norm_options=norm_options,
        **options,
    )
    e = st.eps_population
    if e is None:
        return bool(st.success), math.nan, math.nan, False, float(st.lambda_min)
    return bool(st.success), float(e.value), float(e.upper), bool(e.certified), st.lambda_min


def _map(pool: Any, fn: Any, items: list[Any]) -> list[Any]:
    """``fn`` over ``items`` in order: on the inner pool where one is set (a Dask client's
    futures, or any ``map``: the sweep's gets every call, one item included, and replays the
    draws its store journalled), else here, one after the other."""
    if pool is not None and len(items) > 1 and hasattr(pool, "gather"):
        return list(pool.gather(pool.map(fn, items, pure=False)))
    if pool is not None and not hasattr(pool, "gather"):
        return list(pool.map(fn, items))
    return [fn(x) for x in items]


@dataclass(frozen=True)
class _Draw:
    """A picklable draw evaluation (the pool ships it to a worker)."""

    settings: SamplesSettings
    seed: int
    replicate: int
    tolerances: tuple[tuple[str, float], ...]
    revisions: tuple[tuple[str, Any], ...]
    norms: bool = False
    #: Per norm method, the options of its pinned revision, where that is not the current one.
    norm_options: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()

    def journal_key(self, item: tuple[int, int]) -> str:
        """A digest naming this draw at ``item = (N, draw)`` and nothing else: the grid point's
        settings, the seed, the replicate, the tolerances, the method revision's options,
        whether the norms are drawn, the norm methods' revision options where the norms are
        drawn at other than the current revisions (absent otherwise, so the keys journalled
        before they were named stay valid), and the item (:mod:`..store.journal` keeps its
        outcome under it)."""
        draw: list[Any] = [
            dataclasses.asdict(self.settings),
            self.seed,
            self.replicate,
            self.tolerances,
            self.revisions,
            self.norms,
        ]
        if self.norms and self.norm_options:
            draw.append(self.norm_options)
        text = json.dumps(
            {
                "format": 1,
                "kind": "samples",
                "draw": draw,
                "item": [int(x) for x in item],
            },
            sort_keys=True,
            default=repr,  # floats are exact as JSON writes them (repr round-trips)
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def __call__(self, item: tuple[int, int]) -> tuple[bool, float, float, bool, float]:
        n, draw = item
        return draw_outcome(
            self.settings,
            self.seed,
            self.replicate,
            draw,
            n,
            dict(self.tolerances),
            dict(self.revisions),
            self.norms,
            {m: dict(o) for m, o in self.norm_options},
        )


def _revision_options(spec: SamplesSweepSpec, method: str) -> dict[str, Any]:
    """The options that reproduce the method revision the store pinned."""
    return dict(revision_options(method, spec.solver.revisions.get(method)))


@dataclass(frozen=True)
class SamplesProblem:
    """One instance's search, as its block runs it: :meth:`run` gives the stored values."""

    settings: SamplesSettings
    seed: int
    replicate: int
    samples: Mapping[str, Any]
    tolerances: Mapping[str, float]
    revisions: Mapping[str, Any]
    #: Per norm method, the options of the revision the store pins (only those not current).
    norm_options: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)

    def draw(self, norms: bool = False) -> _Draw:
        """The draw evaluation of this search (``norms``: with ``‖E‖``)."""
        return _Draw(
            self.settings,
            self.seed,
            self.replicate,
            tuple(sorted(self.tolerances.items())),
            tuple(sorted(self.revisions.items())),
            norms,
            tuple((m, tuple(sorted(o.items()))) for m, o in sorted(self.norm_options.items())),
        )

    def run(self, pool: Any = None) -> tuple[SampleSizeResult, list[tuple]]:
        """The search and the norm draws at its ``N_hi`` (empty where not reached)."""
        s = self.samples
        draws = int(s["draws"])
        ev = self.draw()

        def successes(sizes: list[int]) -> list[int]:
            items = [(n, r) for n in sizes for r in range(draws)]
            outs = _map(pool, ev, items)
            return [
                sum(int(o[0]) for o in outs[i * draws : (i + 1) * draws]) for i in range(len(sizes))
            ]

        res = sample_size_search(
            successes,
            draws=draws,
            n_range=tuple(s["N_range"]),
            rtol=float(s["rtol"]),
            scan_factor=float(s["scan_factor"]),
            scan_phases=int(s["scan_phases"]),
            continue_points=int(s["continue_points"]),
            k_section=int(s["k_section"]),
        )
        norm_draws = min(int(s["norm_draws"]), draws)
        if not res.reached or norm_draws == 0:
            return res, []
        items = [(int(res.bracket[1]), r) for r in range(norm_draws)]
        return res, _map(pool, self.draw(norms=True), items)


def problem_of(spec: SamplesSweepSpec, settings: SamplesSettings, replicate: int) -> SamplesProblem:
    """The search of instance ``(settings, replicate)``."""
    method = parse_method(settings.method).method
    return SamplesProblem(
        settings=settings,
        seed=spec.seed,
        replicate=int(replicate),
        samples=spec.samples,
        tolerances=spec.samples["tolerances"],
        revisions=_revision_options(spec, method),
        norm_options=norm_revision_options(spec.solver.revisions),
    )


# --------------------------------------------------------------------------------------------
# Validation


def samples_spec_from_dict(raw: Mapping[str, Any], source: str = "<dict>") -> SamplesSweepSpec:
    """Validate a samples spec given as a (TOML-like) dict and resolve defaults."""
    data = validate_table(raw, SAMPLES_SCHEMA, "", source)
    axes = build_axes(data, SAMPLES_SCHEMA, AXIS_KEYS, source)
    check_replicates(data["replicates"], source)
    m = s = data["samples"]
    check_model_keys(m, axes["samples.k"].values, axes["samples.weights"].values, "samples", source)
    name = m["model"]
    default = DEFAULT_TOLERANCES[name]
    for key, val in m["tolerances"].items():
        if key not in ("component", "weight"):
            raise SpecError(
                source,
                f"samples.tolerances.{key}",
                "one of ['component', 'weight']",
                "<unknown key>",
            )
        if isinstance(val, bool) or not isinstance(val, int | float) or not val > 0:
            raise SpecError(source, f"samples.tolerances.{key}", "a positive number", val)
    m["tolerances"] = {
        "component": float(m["tolerances"].get("component", default.component)),
        "weight": float(m["tolerances"].get("weight", default.weight)),
    }
    for key, least in (
        ("draws", 1),
        ("k_section", 1),
        ("continue_points", 0),
        ("norm_draws", 0),
        ("certified_max_k", 2),
    ):
        if s[key] < least:
            raise SpecError(source, f"samples.{key}", f"an integer >= {least}", s[key])
    if s["scan_phases"] not in (1, 2):
        raise SpecError(source, "samples.scan_phases", "1 or 2", s["scan_phases"])
    rng = s["N_range"]
    if not (
        isinstance(rng, list)
        and len(rng) == 2
        and all(float(x).is_integer() for x in rng)
        and 2 <= rng[0] < rng[1]
    ):
        raise SpecError(
            source,
            "samples.N_range",
            "a list [smallest, largest] of sample sizes, 2 <= smallest < largest",
            rng,
        )
    s["N_range"] = [int(rng[0]), int(rng[1])]
    if name == "ica" and s["N_range"][0] < 4:
        raise SpecError(source, "samples.N_range", "N >= 4 for ica (the fourth k-statistic)", rng)
    try:
        max_size_evals(
            s["N_range"],
            s["rtol"],
            s["scan_phases"],
            s["k_section"],
            s["scan_factor"],
            s["continue_points"],
        )
    except InputError as exc:
        raise SpecError(
            source,
            "samples",
            "a search the first-crossing machinery can run",
            f"<{exc}>",
            with_hint(exc),
        ) from None
    solver = data["solver"]
    for key in ("steps", "norm_method", "options", "norm_options"):
        if solver[key]:
            raise SpecError(
                source,
                f"solver.{key}",
                "nothing in a samples sweep",
                solver[key],
                "a method label carries its options (power@aghkt*4, sshopm@global); SROA runs "
                "k steps and ||E|| is certified where the relaxation fits",
            )
    for key, val in data["output"].items():
        if val:
            raise SpecError(
                source,
                f"output.{key}",
                "false in a samples sweep",
                val,
                "a search stores its bracket and trace, not vectors",
            )
    for label in axes["solver.method"].values:
        try:
            parse_method(label)
        except InputError as exc:
            raise SpecError(
                source, "solver.method", "a method label", label, with_hint(exc)
            ) from None
    return SamplesSweepSpec(data=data, source=source, axes=axes)


# --------------------------------------------------------------------------------------------
# Cost, memory, layout


#: Seconds of one draw's fixed part (model, whitening, matching) and of the sample part per
#: sample and per moment entry (``width·k`` for the whitening, ``k^p/p!`` for the symmetric
#: moment tensor); least squares (relative error) on docs/data/studies/samples-cost.json's 34
#: per-draw rows (k = 5-50, N = 1000 and 16000, all models), with :data:`LOCAL_STEP_FACTOR`.
DRAW_FIXED_SECONDS = 0.03
DRAW_SECONDS_PER_SAMPLE_ENTRY = 5e-9
#: The local methods' (power, SS-HOPM) record prices a rank-one solve for a general tensor;
#: on the samples kind's whitened k ≤ 50 tensors a measured step costs about 0.15 of it (the
#: same fit). Certified steps keep their relaxation's own price (within 1-2.4x of the rows).
LOCAL_STEP_FACTOR = 0.15
#: A norm draw costs a draw and two ‖E‖ solves (population and estimated whitening).
NORM_DRAW_FACTOR = 3
#: The sizes a search evaluates, summed, in units of its N*: the scan up to the first success
#: (up to 2 N*, a geometric series: up to 4 N*), the continued point (up to 4 N*) and the
#: refinement (about 2 N*); the k = 20 topics and GMM searches summed to 8.9 N*.
SEARCH_SIZE_MULTIPLE = 9.0
#: Evaluations a search makes, typically (scan, continue, refinement).
SEARCH_EVALS = 14
#: The N* the cost model assumes where none is measured: ``N_GUESS · k^1.5``, with uniform
#: weights N*/k^1.5 measured 170-340 at k = 5-30 for topics, GMM and ICA; Zipf weights
#: (λ_min = w_min^(-1/2) spread by about √k) √k times that: the Zipf N* measured 2.0-5.7x
#: the uniform one at k = 5-20 (√k: 2.2-4.5).
N_GUESS = 300.0
N_GUESS_EXPONENT = 1.5


def draw_seconds(settings: SamplesSettings, n: float) -> float:
    """Rough seconds of one draw (sample of ``n``, moments, SROA of k steps) on one core."""
    sm = parse_method(settings.method)
    k, p = settings.k, settings.order
    width = settings.d if settings.model != "topics" else (settings.L or 3)
    sample = DRAW_SECONDS_PER_SAMPLE_ENTRY * n * (width * k + k**p / math.factorial(p))
    step = solve_cost(sm.method, k, p)
    if sm.method == "power":
        step *= sm.options(k)["n_starts"] / 20.0
    if sm.method in ("power", "sshopm"):
        step *= LOCAL_STEP_FACTOR
    factor = 2.0 if sm.global_check else 1.0
    return DRAW_FIXED_SECONDS + sample + factor * k * step


def search_seconds(settings: SamplesSettings) -> float:
    """Rough seconds of one search: its draws at :data:`SEARCH_EVALS` sizes, their samples
    summing to :data:`SEARCH_SIZE_MULTIPLE` times an assumed N* (``N_GUESS·k^1.5``, √k more
    for Zipf weights, clipped to N_range), plus the norm draws (:data:`NORM_DRAW_FACTOR` draws
    each)."""
    if not settings.runs(settings.certified_max_k):
        return 0.0
    lo, hi = settings.n_range
    guess = N_GUESS * settings.k**N_GUESS_EXPONENT
    if settings.weights == "zipf":
        guess *= math.sqrt(settings.k)
    n_star = min(max(guess, lo), hi)
    per_size = draw_seconds(settings, 0.0)
    sample_part = draw_seconds(settings, n_star) - per_size
    total = settings.draws * (SEARCH_EVALS * per_size + SEARCH_SIZE_MULTIPLE * sample_part)
    return total + NORM_DRAW_FACTOR * settings.norm_draws * draw_seconds(settings, n_star)


def samples_mean_cost(spec: SamplesSweepSpec) -> float:
    """Estimated seconds per instance, averaged over the grid."""
    costs = [search_seconds(s) for s in grid_points(spec)]
    return sum(costs) / len(costs)


def worker_memory(spec: SamplesSweepSpec, layout: Layout) -> float:
    """Peak bytes of a worker: the largest draw's sample (dense ``N × d``, or the topics'
    ``N × L`` word indices) and its k^p tensors, at N_range's top."""
    hi = spec.samples["N_range"][1]
    worst = 0.0
    for s in grid_points(spec):
        width = (s.L or 3) * 6 if s.model == "topics" else s.d * 3
        worst = max(worst, 8.0 * hi * width + 6 * 8.0 * float(s.k) ** s.order)
    return WORKER_BASE_BYTES + worst


# --------------------------------------------------------------------------------------------
# Block kernel


def compute_samples_block(task: BlockTask, spec: SamplesSweepSpec) -> BlockResult:
    """Every search of one block (a pure function of the task, timings aside); a point where
    the search does not run (``certified`` beyond its k) is left NaN."""
    cmax = int(spec.samples["certified_max_k"])

    def solve(settings: SamplesSettings, replicate: int) -> tuple | None:
        if not settings.runs(cmax):
            return None
        return problem_of(spec, settings, replicate).run(current_pool())

    def store(
        out: dict[str, np.ndarray],
        idx: tuple[int, ...],
        settings: SamplesSettings,
        replicate: int,
        result: tuple[SampleSizeResult, list[tuple]],
    ) -> None:
        write_search(out, idx, *result, settings, spec.seed, replicate)

    return timed_block(task, spec, SAMPLES_VARIABLES, solve, store)


def write_search(
    out: dict[str, np.ndarray],
    idx: tuple[int, ...],
    res: SampleSizeResult,
    norms: list[tuple],
    settings: SamplesSettings,
    seed: int,
    replicate: int,
) -> None:
    """Store one search (and its norm draws) at ``idx`` of a block's arrays."""
    n_steps = out["trace_N"].shape[-1]
    if res.n_evals > n_steps:  # max_size_evals is a bound; a breach is a bug, say so
        raise RuntimeError(f"search made {res.n_evals} evaluations, more than {n_steps}")
    p, k = settings.order, settings.k
    by_n = {e.n: e for e in res.trace}
    lo, hi = res.bracket
    out["searched"][idx] = True
    out["n_star"][idx] = res.n_star
    out["n_lo"][idx], out["n_hi"][idx] = lo, hi
    for end, n in (("lo", lo), ("hi", hi)):
        e = by_n.get(n) if math.isfinite(n) else None
        if e is not None:
            out[f"frac_{end}"][idx] = e.fraction
            out[f"frac_{end}_low"][idx], out[f"frac_{end}_high"][idx] = e.wilson
    out["n_star_low"][idx], out["n_star_high"][idx] = res.interval
    out["reached"][idx] = res.reached
    out["non_monotone"][idx] = res.non_monotone
    out["n_evals"][idx] = res.n_evals
    out["draws"][idx] = res.draws
    out["trace_N"][idx][: res.n_evals] = [e.n for e in res.trace]
    out["trace_successes"][idx][: res.n_evals] = [e.successes for e in res.trace]
    if norms:
        out["eps_at_star"][idx] = float(np.median([o[1] for o in norms]))
        out["eps_at_star_upper"][idx] = float(np.median([o[2] for o in norms]))
        out["eps_certified"][idx] = all(o[3] for o in norms)
        lam = float(norms[0][4])
    else:  # the population lambdas of draw 0's model (no sample needed)
        lam = float(np.min(np.abs(settings.build_model(seed, replicate, 0).sod()[0])))
    out["lambda_min"][idx] = lam
    out["scale_global"][idx] = lam * k ** (-1.0 / (p - 1))
    out["scale_power"][idx] = lam / k


#: What each key of a samples spec means (docs/reference/spec.md): the keys this kind reads its
#: own way; the common and shared keys' meanings come from :mod:`..spec.meanings`.
SAMPLES_KEY_MEANINGS: Mapping[str, str] = key_meanings(
    SAMPLES_SCHEMA,
    {
        **model_meanings("samples"),
        "samples.tolerances": "success tolerances: `component`, `weight`",
        "samples.draws": "independent draws (model, sample, fit) per evaluated sample size",
        "samples.N_range": "`[smallest, largest]` sample size the search scans",
        "samples.rtol": "relative width N_hi / N_lo − 1 the bracket is refined to",
        "samples.scan_factor": "ratio between consecutive scanned sample sizes",
        "samples.scan_phases": "1, or 2 to scan the midpoints (in log N) below the first success",
        "samples.continue_points": "sizes evaluated past the first success",
        "samples.k_section": "sizes evaluated per refinement round (their draws run as tasks)",
        "samples.norm_draws": "draws at N_hi whose ‖E‖ is measured",
        "samples.certified_max_k": "largest k at which `certified` runs (beside its tractability)",
        "solver.method": "method label: `power@aghkt`, `power@aghkt*F`, `sshopm`, "
        "`sshopm@global` or `certified`",
        "solver.steps": "refused: SROA runs k steps",
        "solver.options": "refused: a label carries its options",
        "solver.norm_method": "refused: ‖E‖ is certified where the relaxation fits",
        "solver.norm_options": "refused",
        "output.vectors": "refused: a search stores its bracket and trace",
        "output.certificates": "refused",
    },
)


class SamplesKind(KindBase):
    """The ``samples`` kind (marker table ``[samples]``): N* searches of moment models, one
    per block unless told otherwise (a search is many draws)."""

    name = "samples"
    marker = "samples"
    all_variables: Mapping[str, Variable] = SAMPLES_VARIABLES
    dims: Mapping[str, Dim] = SAMPLES_DIMS
    #: The spec grammar and its sweepable keys (docs/reference/spec.md lists them).
    schema: Mapping[str, Any] = SAMPLES_SCHEMA
    axis_keys: Mapping[str, str] = AXIS_KEYS
    key_meanings: Mapping[str, str] = SAMPLES_KEY_MEANINGS
    #: Report and figures (:class:`sroa_dist.analysis.KindAnalysis`; a path: analysis is a
    #: layer above): N*(k) per method with intervals and fitted exponents, ‖E‖ at N*.
    analysis = "sroa_dist.analysis.samples:SAMPLES_ANALYSIS"
    #: What the cube's ``step`` dim counts (``sroa-dist validate`` says it).
    step_meaning = (
        "evaluated sample sizes, each draws recoveries at one N: the trace of a search for N*, "
        "not SROA steps"
    )

    one_per_block = True
    parse = staticmethod(samples_spec_from_dict)
    mean_cost = staticmethod(samples_mean_cost)
    compute_block = staticmethod(compute_samples_block)
    instance = staticmethod(problem_of)
    worker_memory = staticmethod(worker_memory)

    def instance_cost(self, spec: SamplesSweepSpec, settings: SamplesSettings) -> float:
        """CPU seconds of one search on one idle core (:func:`search_seconds`)."""
        return search_seconds(settings)

    def extents(self, spec: SamplesSweepSpec) -> tuple[int, int]:
        """``step``: the most sizes a search evaluates; no ``component`` data."""
        return spec.n_steps, 1

    def provenance(self, spec: SamplesSweepSpec) -> dict[str, Any]:
        """Root attrs of the settings that are not axes: the model and the search."""
        m = spec.samples
        return {
            "setting_model": m["model"],
            "setting_order": spec.order,
            "setting_model_prior": json.dumps(dict(m["prior"]), sort_keys=True),
            "setting_model_tolerances": json.dumps(dict(m["tolerances"]), sort_keys=True),
            "setting_samples": json.dumps(
                {k: v for k, v in m.items() if k not in AXIS_LEAVES}, sort_keys=True
            ),
        }

    def advice(self, spec: SamplesSweepSpec) -> list[str]:
        """Grid points the search skips (certified beyond its tractable k)."""
        cmax = int(spec.samples["certified_max_k"])
        skipped = sorted({(s.method, s.k) for s in grid_points(spec) if not s.runs(cmax)})
        if not skipped:
            return []
        return [
            f"certified is skipped at k = {sorted({k for _, k in skipped})} (beyond "
            f"certified_max_k = {cmax} or the relaxation's tractable size): NaN there"
        ]


#: The registered samples kind.
SAMPLES = SamplesKind()
