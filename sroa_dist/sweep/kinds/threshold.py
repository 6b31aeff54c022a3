"""The threshold sweep kind: one adaptive first-crossing search per instance.

Each instance is one :func:`sroa_dist.find_threshold` call (a scan ×1.25 upward, a continued
scan past the first failure, a bisection to ``rtol``): its threshold ε*, bracket, number of
SROA evaluations, whether a pass was seen above a failure, and the whole trace. Searches take
from a few to a few dozen SROA runs, so a block is one instance by default: the runner's
window of futures (``as_completed``) hands the next search to whichever worker finishes,
and no worker idles while another refines.

Grammar (marker table ``[threshold]``)::

    name, seed, replicates, description
    [tensor]    n, p, lambdas | weights, lambda_min, basis
                                         (full rank; basis random by default, as
                                         find_threshold draws it, or identity)
    [noise]     model, params            (ε is searched, so no noise level)
    [solver]    method, options          (options: the rank-one method's, as any sweep's)
    [threshold] criterion, c, radius, eps_range, rtol,
                global_check, redo, scan_phases, certify_ends, k_section, matrix_free,
                revision

``tensor.n``, ``tensor.p``, ``noise.model`` and ``solver.method`` may be axes (a list or a
range table). ``c`` is the level of ``criterion = "value"`` (max |λ̂ − λ| ≤ c·ε), ``radius``
that of ``"recovery"`` (max ‖v̂ − v‖ ≤ radius); ``"theorem"`` takes both (value bound c·ε,
default 2; vector bound radius, default Theorem 3.1's 20ε/λ_j). ``global_check``, ``redo`` and
``scan_phases`` default to the search revision's (:data:`sroa_dist.studies.threshold.
SEARCH_REVISION`: the check on, redo on, two scan phases); ``revision`` is pinned by the store
(a store made before revisions were recorded ran revision 1 and keeps it).

Weights: ``lambdas`` as for any tensor sweep (one number, a list of n numbers, or a
distribution), or, for studies of the smallest weight over several n, ``weights`` and
``lambda_min``: ``"last"`` gives every weight 1 but the last, which is ``lambda_min`` (default
0.95: find_threshold's default weights), ``"linear"`` spreads the weights evenly from 1 down to
``lambda_min``. The weights are not in the seed, so specs that differ only in them search the
same draws (basis, direction, starts).

``matrix_free`` (default None: find_threshold's rule, matrix-free once one dense tensor would
exceed its cap) forces the structured build on (``true``: only families with a factored form,
the coherent tilt) or off; it changes the bits of a search, so it is an instance setting.

``[solver.options]`` (plain keys for every method, a sub-table per method) reach the rank-one
method of every SROA step of the search, checked as any sweep checks them and naming the key
that gave a bad one; an option an older method revision fixes (a pinned ``[solver.revisions]``)
is refused. They change the bits of a search, so they are part of the spec's instance settings
(a store refuses to resume with other options) and are recorded in ``setting_solver_options``
where the spec gives any; they are not in the seed (the same draws and starts, as for the
method axis). The norm of ``E`` takes its method's defaults.

``k_section`` (default 1, the sequential search) is how many ε a search evaluates per round:
on a Dask cluster the block hands each round's points to free workers as tasks
(:mod:`..run.cluster_pool`), so a cluster shortens one search, not only many. The points of a
round depend on ``k_section`` and the search's state only, so a store's values are the same on
any number of workers; ``k_section`` is one of the spec's instance settings (a store refuses
to resume with another) and is recorded in ``setting_search`` where the spec states it.

Seeding: instance ``(settings, replicate)`` searches with ``rng = SeedSequence(seed,
spawn_key=(h("noise=…"), h("n=…"), h("p=…"), replicate))`` (``h`` is
:func:`~..layout.stable_hash32`); the method is not in the key, so a method axis compares
methods on the same instances. The search's trace is stored over the cube's ``step`` dim,
which here counts evaluations (k = 1, 2, ... in the order made), not SROA steps.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from sroa_dist.errors import InputError, with_hint
from sroa_dist.methods import (
    LARGE_N,
    aghkt_budget,
    memory_estimate,
    resolve_method,
    resolve_norm_method,
    revision_options,
    solve_cost,
)
from sroa_dist.problems import NOISE_MODELS, PERTURBATIONS, check_model, model_params
from sroa_dist.studies import (
    DEFAULT_C,
    K_SECTION,
    RUN_CRITERIA,
    SCAN_FACTOR,
    SCAN_PHASES,
    SEARCH_LEGACY,
    SEARCH_REVISION,
    SMALLEST_WEIGHT,
    ThresholdResult,
    check_criterion_option,
    check_range,
    criterion_option_expected,
    expected_evals,
    find_threshold,
    max_evals,
    search_options,
    uses_matrix_free,
)

from ..cube import SHARED_AXES, STEP, Dim, Variable, by_name
from ..inner_pool import current_pool
from ..layout import WORKER_BASE_BYTES, BlockResult, BlockTask, Layout
from ..spec import (
    COMMON_SCHEMA,
    SpecError,
    SweepSpec,
    build_axes,
    check_method_options,
    check_methods,
    check_replicates,
    check_tensor_size,
    key_meanings,
    options_given,
    prune_model_params,
    replicate_advice,
    validate_table,
)
from .base import GridPoint, KindBase, grid_points, timed_block, worker_limit

__all__ = [
    "THRESHOLD",
    "THRESHOLD_SCHEMA",
    "ThresholdKind",
    "ThresholdProblem",
    "ThresholdSettings",
    "ThresholdSweepSpec",
]

#: The schema of a threshold spec: ``(vtype, default, required)`` per key (see
#: :mod:`..spec.fields`).
THRESHOLD_SCHEMA: dict[str, Any] = {
    **COMMON_SCHEMA,
    "tensor": {
        "n": ("int_axis", None, True),
        "p": ("int_axis", 3, False),
        # None: find_threshold's default weights (one distinct smallest weight).
        "lambdas": ("lambdas", None, False),
        # A weight profile over n (exclusive with lambdas): see the module docstring.
        "weights": ("str", None, False),
        "lambda_min": ("float", None, False),
        # None: random (Haar, drawn per instance); dropped from the spec when not given.
        "basis": ("str", None, False),
    },
    "noise": {
        "model": ("str_axis", "coherent-tilt", False),
        "params": ("table", {}, False),
    },
    "threshold": {
        "criterion": ("str", "value", False),
        "c": ("float", None, False),
        "radius": ("float", None, False),
        # Checked as a pair below; "float_axis" only type-checks the two numbers.
        "eps_range": ("float_axis", [0.02, 1.5], False),
        "rtol": ("float", 0.01, False),
        # None: the search revision's own (find_threshold's defaults, or its legacy values).
        "global_check": ("bool", None, False),
        "redo": ("bool", None, False),
        "scan_phases": ("int", None, False),
        # None: K_SECTION (the sequential search); not part of the search revision.
        "k_section": ("int", None, False),
        "certify_ends": ("bool", False, False),
        # None: find_threshold's rule (matrix-free above its dense-size cap, tilt only).
        "matrix_free": ("bool", None, False),
        # Pinned by the store (ThresholdSweepSpec.pinned): None in a spec as written.
        "revision": ("int", None, False),
    },
}

#: Dotted spec key -> axis (dimension) name, for keys that may be swept.
AXIS_KEYS: dict[str, str] = {
    "noise.model": "noise",
    "tensor.n": "n",
    "tensor.p": "p",
    "solver.method": "method",
}
#: Sweep dims of threshold sweeps, in cube order.
THRESHOLD_DIMS: Mapping[str, Dim] = by_name(*(SHARED_AXES[d] for d in AXIS_KEYS.values()))

_S = (STEP,)
_EVAL = (
    ("note", "dim 'step' counts the search's evaluations here (k = 1, 2, ... in the order made)"),
    ("past_end", "NaN (False for trace_passed) after the search's n_evals evaluations"),
)
_SEARCH = (("paper", "first crossing of the criterion in epsilon = ||E||"),)

#: Variables of a threshold sweep (``[threshold]`` spec): one first-crossing search per
#: instance (``sroa_dist.find_threshold``), in documented order.
THRESHOLD_VARIABLES: Mapping[str, Variable] = by_name(
    Variable(
        "eps_star",
        (),
        "f8",
        "threshold: upper end of the final bracket, the first ||E|| seen to fail below which "
        "every ||E|| evaluated passed",
        extra=(*_SEARCH, ("note", "inf when no ||E|| in eps_range failed (reached false)")),
    ),
    Variable(
        "eps_lo",
        (),
        "f8",
        "lower end of the final bracket (passed); 0 when eps_range's start already failed",
    ),
    Variable("eps_hi", (), "f8", "upper end of the final bracket (failed); equals eps_star"),
    Variable("n_evals", (), "f8", "number of SROA runs the search made"),
    Variable("reached", (), "bool", "a failure was seen within eps_range"),
    Variable(
        "non_monotone",
        (),
        "bool",
        "some ||E|| passed above one that failed (continued scan or bisection)",
        extra=(
            (
                "note",
                "since search revision 2: only passes and failures whose SROA steps were all "
                "global (no step's global gap above its tolerance); the others count in "
                "artefacts",
            ),
        ),
    ),
    Variable(
        "artefacts",
        (),
        "f8",
        "evaluations whose verdict came from an SROA with a non-global step (passes above a "
        "failure, and failures)",
        extra=(("note", "NaN in stores made before the global check (search revision 1)"),),
    ),
    Variable(
        "scan_resolution",
        (),
        "f8",
        "ratio between consecutive scanned ||E|| below the first failure: narrower failure "
        "windows can be missed",
    ),
    Variable(
        "certified_ends",
        (),
        "f8",
        "1 where the bracket stands with certified steps at both ends, 0 where it does not",
        extra=(("note", "NaN where certify_ends did not run or a step was not certified"),),
    ),
    Variable(
        "certified_fraction",
        (),
        "f8",
        "fraction of all SROA steps of the search certified globally optimal",
    ),
    Variable("trace_eps", _S, "f8", "||E|| of evaluation k of the search", extra=_EVAL),
    Variable(
        "trace_metric",
        _S,
        "f8",
        "the criterion's metric at evaluation k (value: max |lam_hat - lam| / eps; recovery: "
        "max ||v_hat - v||; theorem: largest error / its bound)",
        extra=_EVAL,
    ),
    Variable("trace_passed", _S, "bool", "evaluation k met the criterion", extra=_EVAL),
    Variable(
        "trace_global_gap",
        _S,
        "f8",
        "largest global gap of evaluation k's SROA steps: best value of the check starts "
        "minus the step's (tensor units; NaN where no step was checked)",
        extra=_EVAL,
    ),
    Variable(
        "trace_non_global",
        _S,
        "bool",
        "evaluation k's SROA kept a step whose global gap exceeds 1e-6 ||T_j||_F",
        extra=_EVAL,
    ),
    Variable(
        "trace_redone",
        _S,
        "f8",
        "steps of evaluation k's SROA redone from a higher point of their global check",
        extra=_EVAL,
    ),
    Variable(
        "trace_lam_err",
        _S,
        "f8",
        "max |lam_hat - lam| of evaluation k (any fixed-level criterion can judge it again)",
        extra=_EVAL,
    ),
    Variable("trace_vec_err", _S, "f8", "max ||v_hat - v|| of evaluation k", extra=_EVAL),
    Variable("solve_time", (), "f8", "wall seconds of the instance's whole search", units="s"),
)


@dataclass(frozen=True)
class ThresholdSection:
    """``[threshold]``: the success criterion, the search's range and precision, and how its
    SROA steps are checked."""

    criterion: str
    c: float | None
    radius: float | None
    eps_range: tuple[float, float]
    rtol: float
    global_check: bool | None = None
    redo: bool | None = None
    scan_phases: int | None = None
    certify_ends: bool = False
    k_section: int | None = None
    matrix_free: bool | None = None
    revision: int | None = None

    @property
    def level(self) -> float | None:
        """The criterion's level (``c`` for value, ``radius`` for recovery, None for theorem)."""
        name = RUN_CRITERIA[self.criterion].level_name
        return None if name is None else {"c": self.c, "radius": self.radius}[name]

    @property
    def search(self) -> dict[str, Any]:
        """:func:`sroa_dist.find_threshold`'s check and scan keywords: the search revision's
        (the current one where none is pinned), under the keys the spec sets."""
        out = {"global_check": True, "redo": True, "scan_phases": SCAN_PHASES}
        out.update(search_options(self.revision))
        for key in ("global_check", "redo", "scan_phases"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out["certify_ends"] = bool(self.certify_ends)
        # Only when the spec states it: a store made before k_section records no such key,
        # and its searches ran with K_SECTION.
        if self.k_section is not None:
            out["k_section"] = int(self.k_section)
        # Likewise only when stated (a store made before the key searched by the default rule).
        if self.matrix_free is not None:
            out["matrix_free"] = bool(self.matrix_free)
        return out


@dataclass(frozen=True)
class ThresholdSweepSpec(SweepSpec):
    """A validated threshold sweep spec: :class:`~..spec.base.SweepSpec` with ``[tensor]``,
    ``[noise]`` and ``[threshold]``."""

    kind: ClassVar[str] = "threshold"
    axis_keys: ClassVar[Mapping[str, str]] = AXIS_KEYS

    @functools.cached_property
    def threshold(self) -> ThresholdSection:
        """The ``[threshold]`` section."""
        t = dict(self.data["threshold"])
        t["eps_range"] = tuple(t["eps_range"])
        return ThresholdSection(**t)

    @property
    def lambdas(self) -> Any:
        """``[tensor] lambdas`` as written (None: find_threshold's default weights, or the
        profile of ``weights`` where the spec gives one: :meth:`lambdas_at`)."""
        return self.data["tensor"]["lambdas"]

    @property
    def weight_profile(self) -> tuple[str, float] | None:
        """``(weights, lambda_min)`` where the spec gives a weight profile, else None."""
        t = self.data["tensor"]
        if t["weights"] is None:
            return None
        lam = SMALLEST_WEIGHT if t["lambda_min"] is None else t["lambda_min"]
        return str(t["weights"]), float(lam)

    def lambdas_at(self, n: int) -> Any:
        """The weights of a search at size ``n``: :attr:`lambdas`, or the profile's n weights."""
        profile = self.weight_profile
        if profile is None:
            return self.lambdas
        shape, lam = profile
        if shape == "last":  # default_lambdas' shape with another smallest weight
            return [1.0] * (n - 1) + [lam]
        return [float(x) for x in np.linspace(1.0, lam, n)]

    @property
    def matrix_free(self) -> bool | None:
        """``threshold.matrix_free`` (None: find_threshold's rule)."""
        return self.data["threshold"]["matrix_free"]

    @property
    def params(self) -> Mapping[str, Any]:
        """``[noise.params]`` (sub-tables per model)."""
        return self.data["noise"]["params"]

    def own_options(self, method: str) -> dict[str, Any]:
        """``[solver.options]`` for ``method`` as the spec gives them (plain keys, then the
        method's sub-table), without the option values of a pinned revision:
        :func:`sroa_dist.find_threshold` adds those itself from ``revisions``."""
        return self.solver.own_options(method)

    @property
    def ranks(self) -> tuple[int, ...]:
        """Every search runs full-rank SROA: the n values."""
        return tuple(int(n) for n in self.axes["tensor.n"].values)

    @property
    def n_steps(self) -> int:
        """Length of the ``step`` dim: here the longest possible trace
        (:func:`sroa_dist.studies.first_crossing.max_evals`)."""
        t = self.threshold
        return max_evals(
            t.eps_range, t.rtol, t.search["scan_phases"], t.search.get("k_section", K_SECTION)
        )

    def instance_settings(self) -> dict[str, Any]:
        """:meth:`SweepSpec.instance_settings` without the search revision, which the store
        pins (like the method revisions)."""
        d = super().instance_settings()
        d["threshold"].pop("revision", None)
        return d

    def pin_own(self, old: SweepSpec | None) -> ThresholdSweepSpec:
        """This spec with ``threshold.revision`` stated: its own, else the store's (a store
        whose spec has none ran revision 1), else the current one (a new store). ``ValueError``
        naming the key where the spec's own differs from the store's."""
        own = self.data["threshold"].get("revision")
        if old is None:
            base = SEARCH_REVISION
        else:
            base = int(old.data["threshold"].get("revision") or 1)
            if own is not None and own != base:
                raise InputError(
                    f"threshold.revision: the store was made with search revision {base}; "
                    f"received {own}",
                    "drop threshold.revision from the spec to resume with the store's revision",
                )
        data = self.to_dict()
        data["threshold"]["revision"] = base if own is None else own
        _check_option_revisions(data, self.axes["solver.method"].values, self.source)
        return replace(self, data=data)

    def settings_at(self, coords: Mapping[str, Any]) -> ThresholdSettings:
        """The :class:`ThresholdSettings` of a grid point."""
        return ThresholdSettings.at(self, coords)


@dataclass(frozen=True)
class ThresholdSettings(GridPoint):
    """One grid point (searches are not batched); the method is not seeded (paired searches)."""

    seed_fields = ("noise", "n", "p")

    noise: str
    n: int
    p: int
    method: str


@dataclass(frozen=True)
class ThresholdProblem:
    """One instance's search, as its block runs it: :meth:`run` is the stored result."""

    n: int
    p: int
    family: str
    method: str
    lambdas: Any
    params: Mapping[str, Any]
    criterion: str
    c: float | None
    eps_range: tuple[float, float]
    rtol: float
    seed: int
    spawn_key: tuple[int, ...]
    revisions: Mapping[str, int] = field(default_factory=dict)
    radius: float | None = None
    search: Mapping[str, Any] = field(default_factory=dict)
    #: The rank-one method's options from ``[solver.options]`` (the spec's own, not those of
    #: a pinned revision, which ``revisions`` brings).
    options: Mapping[str, Any] = field(default_factory=dict)
    #: ``[tensor] basis`` where the spec names one (None: find_threshold's random basis).
    basis: str | None = None

    def run(self, executor: Any = None) -> ThresholdResult:
        """:func:`sroa_dist.find_threshold` on this instance; ``executor`` runs the rounds'
        evaluations (the same result on any)."""
        kwargs: dict[str, Any] = {} if self.c is None else {"c": self.c}
        if self.options:  # only when given: a search without options calls as before
            kwargs["options"] = dict(self.options)
        if self.basis is not None:
            kwargs["V"] = self.basis
        if self.radius is not None and self.criterion == "theorem":
            kwargs["radius"] = self.radius
        return find_threshold(
            self.n,
            self.p,
            family=self.family,
            lambdas=self.lambdas,
            criterion=self.criterion,
            method=self.method,
            eps_range=self.eps_range,
            rtol=self.rtol,
            params=self.params,
            rng=np.random.SeedSequence(self.seed, spawn_key=self.spawn_key),
            revisions=self.revisions,
            executor=executor,
            **self.search,
            **kwargs,
        )


def problem_of(
    spec: ThresholdSweepSpec, settings: ThresholdSettings, replicate: int
) -> ThresholdProblem:
    """The search of instance ``(settings, replicate)``."""
    t = spec.threshold
    return ThresholdProblem(
        n=settings.n,
        p=settings.p,
        family=settings.noise,
        method=settings.method,
        lambdas=spec.lambdas_at(settings.n),
        params=model_params(spec.params, settings.noise),
        criterion=t.criterion,
        c=t.level if t.criterion != "theorem" else t.c,
        eps_range=t.eps_range,
        rtol=t.rtol,
        seed=spec.seed,
        spawn_key=settings.spawn_key(replicate),
        revisions=dict(spec.solver.revisions),
        radius=t.radius if t.criterion == "theorem" else None,
        search=t.search,
        options=spec.own_options(settings.method),
        basis=spec.data["tensor"].get("basis"),
    )


# --------------------------------------------------------------------------------------------
# Validation


def threshold_spec_from_dict(raw: Mapping[str, Any], source: str = "<dict>") -> ThresholdSweepSpec:
    """Validate a threshold spec given as a (TOML-like) dict and resolve defaults."""
    data = validate_table(raw, THRESHOLD_SCHEMA, "", source)
    axes = build_axes(data, THRESHOLD_SCHEMA, AXIS_KEYS, source)
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
        raise SpecError(source, "tensor.p", "tensor order p >= 3", min(ps))
    check_tensor_size(ns, ps, source)
    _check_weights(data["tensor"], source)
    _check_basis(data["tensor"], source)
    _check_threshold(data["threshold"], source)
    _check_solver(data, axes["solver.method"].values, ns, ps, source)
    models = axes["noise.model"].values
    data["noise"]["params"] = prune_model_params(data["noise"]["params"], models, source)
    for name in models:
        try:
            check_model(name, model_params(data["noise"]["params"], name))
        except ValueError as exc:
            known = sorted(PERTURBATIONS)
            raise SpecError(
                source, "noise.model", f"a perturbation model (e.g. {known})", name, with_hint(exc)
            ) from None
        if data["threshold"]["matrix_free"]:
            try:
                uses_matrix_free(
                    min(ns), min(ps), name, model_params(data["noise"]["params"], name), True
                )
            except InputError as exc:
                raise SpecError(
                    source,
                    "threshold.matrix_free",
                    "families with a factored form (the coherent tilt)",
                    f"true with noise.model {name!r}",
                    "drop matrix_free (or set false) for i.i.d. noise and mixtures with it",
                ) from exc
    return ThresholdSweepSpec(data=data, source=source, axes=axes)


#: The bases ``[tensor] basis`` may name: the components' basis of every instance.
THRESHOLD_BASES = ("random", "identity")


def _check_basis(t: dict[str, Any], source: str) -> None:
    """``tensor.basis`` checked; when not given it is dropped, so that a spec that does not
    name it (every store written before it existed) keeps its settings and its bits."""
    basis = t.pop("basis")
    if basis is None:
        return
    if basis not in THRESHOLD_BASES:
        raise SpecError(
            source,
            "tensor.basis",
            f"one of {list(THRESHOLD_BASES)}",
            basis,
            'e.g. basis = "identity" (the coherent tilt\'s crossing does not depend on it)',
        )
    t["basis"] = basis


#: The shapes ``[tensor] weights`` may give (see the module docstring).
WEIGHT_PROFILES = ("last", "linear")


def _check_weights(t: dict[str, Any], source: str) -> None:
    if t["weights"] is None:
        if t["lambda_min"] is not None:
            raise SpecError(
                source,
                "tensor.lambda_min",
                "no lambda_min without tensor.weights",
                t["lambda_min"],
                'say how the other weights go: weights = "last" or "linear"',
            )
        return
    if t["weights"] not in WEIGHT_PROFILES:
        raise SpecError(source, "tensor.weights", f"one of {list(WEIGHT_PROFILES)}", t["weights"])
    if t["lambdas"] is not None:
        raise SpecError(
            source,
            "tensor.weights",
            "either lambdas or a weight profile (weights, lambda_min), not both",
            t["weights"],
            "drop tensor.lambdas, or drop tensor.weights and tensor.lambda_min",
        )
    lam = t["lambda_min"]
    if lam is not None and not 0 < lam <= 1:
        raise SpecError(
            source,
            "tensor.lambda_min",
            "the smallest weight, in (0, 1] (the others are at most 1)",
            lam,
            "e.g. lambda_min = 0.5",
        )


def _check_threshold(t: dict[str, Any], source: str) -> None:
    crit = t["criterion"]
    if crit not in RUN_CRITERIA:
        raise SpecError(source, "threshold.criterion", f"one of {list(RUN_CRITERIA)}", crit)
    level_name = RUN_CRITERIA[crit].level_name
    takes = ("c", "radius") if level_name is None else (level_name,)
    for key in ("c", "radius"):
        if key not in takes and t[key] is not None:
            raise SpecError(
                source,
                f"threshold.{key}",
                f"no {key} with criterion {crit!r}",
                t[key],
                "c is the level of 'value', radius that of 'recovery'; 'theorem' takes both",
            )
    if level_name is not None and t[level_name] is None:  # find_threshold's own default
        t[level_name] = float(DEFAULT_C)
    for key in takes:
        if t[key] is not None:
            try:
                check_criterion_option(key, t[key])
            except InputError:
                raise SpecError(
                    source, f"threshold.{key}", criterion_option_expected(key), t[key]
                ) from None
    if t["k_section"] is not None and t["k_section"] < 1:
        raise SpecError(
            source,
            "threshold.k_section",
            "an integer >= 1 (points evaluated per search round)",
            t["k_section"],
            "1 searches sequentially; e.g. 4 evaluates four points a round on free workers",
        )
    if t["scan_phases"] is not None and t["scan_phases"] not in (1, 2):
        raise SpecError(source, "threshold.scan_phases", "1 or 2", t["scan_phases"])
    if t["redo"] and t["global_check"] is False:
        raise SpecError(
            source,
            "threshold.redo",
            "no redo without the global check",
            t["redo"],
            "a step is redone from its check's point: set global_check = true too",
        )
    known = sorted({*SEARCH_LEGACY, SEARCH_REVISION})
    if t["revision"] is not None and t["revision"] not in known:
        raise SpecError(
            source,
            "threshold.revision",
            f"a search revision this code runs: one of {known}",
            t["revision"],
        )
    rng = t["eps_range"]
    if not (isinstance(rng, list) and len(rng) == 2 and 0 < rng[0] < rng[1]):
        raise SpecError(
            source, "threshold.eps_range", "a list [start, stop] with 0 < start < stop", rng
        )
    try:  # the search's own check of the range (one that overflows its scan grid)
        check_range(rng, 0.5 * (SCAN_FACTOR - 1))
    except InputError as exc:
        raise SpecError(
            source, "threshold.eps_range", "a range the search can scan", rng, with_hint(exc)
        ) from None
    if not 0 < t["rtol"] < SCAN_FACTOR - 1:
        raise SpecError(
            source,
            "threshold.rtol",
            f"a relative bracket width in (0, {SCAN_FACTOR - 1:g})",
            t["rtol"],
            f"the scan factor is {SCAN_FACTOR}; bisection narrows below it",
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
                "no value in a threshold sweep",
                solver[key],
                "find_threshold runs full-rank SROA and bounds ||E|| with the method's default",
            )
    if solver["norm_options"]:
        raise SpecError(
            src,
            "solver.norm_options",
            "an empty table in a threshold sweep",
            solver["norm_options"],
            "find_threshold bounds ||E|| with its method's default options",
        )
    check_methods(solver, methods, src, table_keys=("options",))
    for m in methods:
        for n in ns:
            for p in ps:
                check_method_options(data, m, n, p, False, src)
    _check_option_revisions(data, methods, src)


def _check_option_revisions(data: dict[str, Any], methods: Sequence[str], src: str) -> None:
    """An option of ``[solver.options]`` that a stated method revision fixes is refused, naming
    its key (:func:`sroa_dist.find_threshold` would refuse it in the block)."""
    solver = data["solver"]
    for m in methods:
        given = options_given(solver["options"], m)
        fixed = revision_options(m, solver["revisions"].get(m))
        clash = sorted(set(given) & set(fixed))
        if clash:
            sub = solver["options"].get(m)
            in_sub = isinstance(sub, Mapping) and clash[0] in sub
            raise SpecError(
                src,
                "solver.options." + (f"{m}." if in_sub else "") + clash[0],
                f"an option that {m!r} revision {solver['revisions'][m]} does not fix "
                f"(it fixes {sorted(fixed)})",
                given[clash[0]],
                "drop the option, or compute with the method's current revision (a new store)",
            )


# --------------------------------------------------------------------------------------------
# Cost, memory, layout


def _combos(spec: ThresholdSweepSpec):
    for m in spec.axes["solver.method"].values:
        for n in spec.axes["tensor.n"].values:
            for p in spec.axes["tensor.p"].values:
                yield str(m), int(n), int(p)


#: Least CPU seconds of one SROA step inside a search (Python and per-step overhead, which the
#: core's cost model leaves out; it dominates at small n): SS-HOPM at n = 8, p = 3.
STEP_FLOOR = 0.015


#: CPU seconds of one full matrix-free SROA (rank n) of the coherent tilt at p = 5, n = 200; it
#: grows about as n^4 (an n × n eigenproblem, the polish Hessian and the deflation terms per
#: step, n steps). Calibrated: docs/results/benchmarks.md, Matrix-free full SROA
#: (benchmarks/bench_structured.py).
MATRIX_FREE_SROA_SECONDS = 8.3
MATRIX_FREE_REFERENCE_N = 200

#: ``power``'s iterations on a matrix-free operator: seconds per flop of the deflated products
#: (four per start, coordinate and deflation term) and per start and coordinate of the
#: operator's own product. One power iteration of 4 728 starts (the AGHKT budget at n = 512)
#: on the attractor operator at n = 512 against 256 deflation terms took 0.15 s, 0.07 s of it
#: in the deflation products and 0.08 s in the operator (cProfile, one BLAS thread, load 3,
#: 2026-11-29).
POWER_OPERATOR_SECONDS = (2.8e-11, 3.3e-8)

#: CPU seconds of one threshold-study evaluation on the large-n engine that a method with
#: spectral starts runs from ``LARGE_N`` on: one global-checked matrix-free SROA (rank n, check
#: and redo) of the p = 3 coherent tilt drawn on a random orthonormal basis, as the studies draw
#: it, at n = 512; and its growth exponent in n. A least-squares line in log-log (refitted
#: 2026-11-29) through the study evaluations measured: n = 256, 15 CPU-s (store
#: docs/data/studies/asymptote-p3-c0.5-n256.zarr, about 5 CPU-min for its 20 evaluations,
#: docs/results/thresholds.md); n = 512, 64 CPU-s (asymptote-p3-c0.5-n512.zarr: 3974 s wall on 2
#: workers at load 8-18, scaled to CPU by CPUs / load, over its 19 evaluations); n = 1024,
#: 7 CPU-min (6-8 CPU-min each in the n = 1024 run of 2026-11-29, docs/results/thresholds.md).
#: Residuals -7 %, +15 %, -7 %. Data and fit: docs/data/cost/study-estimates.json.
#: This is 2.6-3.2x the identity-basis benchmark floor at n = 512 (23-29 s, Global SROA at
#: large n in docs/results/benchmarks.md) and 3.5-5x at n = 1024 (84-160 s): the random-basis
#: penalty (the basis' gather and scatter: 8.1 against 5.7 CPU-s at n = 256 in
#: bench_global_large_n.py's ``3:N:tilt-basis`` case) and evaluations sharing two cores' caches,
#: fitted in. The benchmark's floor alone (28.8 s at n = 512, n^3) priced a study's n = 1024
#: search at 56 CPU-min against about 3 CPU-h measured.
LARGE_N_CHECKED_SECONDS = 73.9
LARGE_N_REFERENCE_N = 512
#: ×5.3 per doubling (the floor benchmark: ×4.8-6.4 from n = 512 to 1024).
LARGE_N_EXPONENT = 2.4
#: Per order above 3: p = 4 measured 1.29× p = 3 at n = 512 (p >= 5 not measured: the same
#: factor per order).
LARGE_N_ORDER_FACTOR = 1.3
#: The steps' share of a checked SROA (the check and redo the rest): 0.76 in the n = 512
#: profile of ``sshopm`` revision 7.
LARGE_N_UNCHECKED_SHARE = 0.8


#: Measured CPU seconds of an evaluation over :func:`search_cost`'s per-evaluation model (the
#: core's records, the step floor and the check factor), where the large-n law (fitted
#: directly, :data:`LARGE_N_CHECKED_SECONDS`) does not price it; refitted 2026-11-29. Dense
#: p = 3: 0.8, the geometric mean of the four dense p = 3 study runs that recorded their CPU
#: (docs/data/cost/study-estimates.json: lambda-min-linear, lambda-min-target, theorem-p3-c0.5 at
#: n = 128, theorem-p3-c2; measured / model 0.82, 0.69, 0.86, 1.32), the smoke threshold sweep
#: (docs/data/cost/estimate-check.json, 0.54) and two single searches (n = 8 and 32: 0.53,
#: 1.08; docs/data/cost/eval-cost-2026-11-29.json).
SEARCH_COST_SCALE = 0.8
#: Dense p >= 4: 1.6, the geometric mean of five single searches at p = 4, n = 8-64 (1.36,
#: 2.86, 1.07, 1.50, 1.44; eval-cost-2026-11-29.json) and of the theorem-p4-c0.5 store's
#: idle run (1.85 on its busy worker-seconds).
DENSE_HIGH_ORDER_SCALE = 1.6
#: Matrix-free where the large-n law does not price it (below ``LARGE_N``; the structured
#: tilt's contractions, not the dense n^p tensor the core's records price): 0.5, the geometric
#: mean of four single searches at p = 4-6, n = 32-96 (0.40, 0.75, 0.49, 0.43;
#: eval-cost-2026-11-29.json). ``power``'s own iterations on an operator take
#: :data:`POWER_OPERATOR_SCALE` instead.
MATRIX_FREE_SCALE = 0.5
#: ``power``'s own iterations on an operator, measured over :func:`power_operator_sroa_seconds`
#: (whose constants were profiled on one iteration at n = 512 against 256 deflation terms):
#: 1.28, the one whole run measured (asymptote-attractor-power-n512.zarr, 2026-11-29: 4093 CPU-s
#: recorded for its two AGHKT SROAs at n = 512, against 3192 s from the profile; a whole SROA's
#: later steps see up to 512 deflation terms). Fitted on that run alone, so it prices that run
#: exactly and no other run tests it yet. Until 2026-11-29 power took :data:`MATRIX_FREE_SCALE`
#: (fitted to SS-HOPM searches below ``LARGE_N``), which priced that run at 0.39x its CPU.
POWER_OPERATOR_SCALE = 1.28
#: ``sshopm`` revision 9 (spectral starts accepted at a Lanczos residual of 1e-3, their products
#: against single-precision deflation terms) over revision 8, on the large-n engine: the large-n
#: law was fitted to study runs of revisions 6-8. Measured in one run on the same SROA
#: (docs/data/bench/global-large-n-2026-11-29-rev9.json): 0.62 on the identity-basis tilt at
#: n = 512, 0.61 at n = 1024, 0.66 on the studies' random basis at n = 512.
FAST_STARTS_SCALE = 0.63
#: ``sshopm`` revision 10 (whole powers above the square as products, not the C library's
#: ``pow``) over revision 9, on the large-n engine at p >= 4: 0.57 in one benchmark run on the
#: same SROA (docs/data/bench/global-large-n-2026-11-29-rev10.json and -rev10-p56.json: 15.7 s
#: against 27.5 s at p = 4, n = 512; 8.9 s against 18.5 s at p = 6), and 0.585 in the first
#: study run on it (the p = 4 theorem search at n = 1024: 3393 CPU-s against 5803 priced by
#: revision 9's scale). p = 3 takes no factor: its one benchmark pair (13.7 s against 15.8 s)
#: ran with the DGEMM yardstick 1.5x slower and shows no reliable change.
INTEGER_PRODUCTS_SCALE = 0.57


def evaluation_scale(
    method: str,
    n: int,
    p: int,
    model: str,
    matrix_free: bool | None,
    options: Mapping[str, Any] | None = None,
) -> float:
    """The measured-over-model factor of one evaluation at ``(method, n, p)`` of ``model`` with
    the method's ``options`` (a pinned revision's included; ``None``: the current revision's):
    1 on the large-n engine (:data:`FAST_STARTS_SCALE` where its spectral starts run in single
    precision, ``sshopm`` revision 9 on; times :data:`INTEGER_PRODUCTS_SCALE` at p >= 4 where
    whole powers are products, revision 10 on), :data:`POWER_OPERATOR_SCALE` for ``power``'s
    own iterations on an operator, :data:`MATRIX_FREE_SCALE` for other methods on an operator
    below it, else :data:`SEARCH_COST_SCALE` (p = 3) or :data:`DENSE_HIGH_ORDER_SCALE` (p >= 4)."""
    if uses_matrix_free(n, p, model, None, matrix_free):
        if method == "power":
            return POWER_OPERATOR_SCALE
        if not _large_engine_steps(method, n):
            return MATRIX_FREE_SCALE
        opts = resolve_method(method).with_defaults(dict(options or {}))
        scale = FAST_STARTS_SCALE if opts.get("spectral_precision") == "single" else 1.0
        if p >= 4 and opts.get("integer_powers") == "products":
            scale *= INTEGER_PRODUCTS_SCALE
        return scale
    return SEARCH_COST_SCALE if p <= 3 else DENSE_HIGH_ORDER_SCALE


#: What the global check (with redo) multiplies an SROA's seconds by, at most: 1.3-1.8 on
#: formed p = 3 tensors at n = 16-64, about 2 matrix-free (benchmarks/bench_global_check.py).
CHECK_COST_FACTOR = 2.0


def search_cost(
    method: str,
    n: int,
    p: int,
    evals: float,
    model: str = "gaussian",
    checked: bool = False,
    matrix_free: bool | None = None,
    options: Mapping[str, Any] | None = None,
) -> float:
    """Seconds of a search of ``evals`` SROA runs (n steps each) at ``(method, n, p)`` of
    ``model``, plus one norm bound (families without a closed form): the core's cost model, or
    the measured matrix-free cost where the search builds the tensor matrix-free (from
    ``LARGE_N`` on, the large-n engine's measured cost, :func:`large_n_sroa_seconds`);
    ``checked``: every step globally checked (:data:`CHECK_COST_FACTOR`, measured into the
    large-n engine's cost); ``matrix_free`` as the spec's; ``options`` the method's (``power``'s
    budget sets its cost: :func:`power_operator_sroa_seconds` on an operator)."""
    factor = CHECK_COST_FACTOR if checked else 1.0
    if uses_matrix_free(n, p, model, None, matrix_free) and _large_engine_steps(method, n):
        sroa = large_n_sroa_seconds(n, p, checked)
        return evals * max(sroa, n * STEP_FLOOR)
    if uses_matrix_free(n, p, model, None, matrix_free):
        if method == "power":
            sroa = power_operator_sroa_seconds(n, options)
        else:
            sroa = MATRIX_FREE_SROA_SECONDS * (n / MATRIX_FREE_REFERENCE_N) ** 4
        return factor * evals * max(sroa, n * STEP_FLOOR)
    norm = solve_cost(resolve_norm_method(method, n, p, None), n, p)
    return factor * evals * n * max(solve_cost(method, n, p, options), STEP_FLOOR) + norm


def power_operator_sroa_seconds(n: int, options: Mapping[str, Any] | None = None) -> float:
    """CPU seconds of one ``power`` SROA (rank n) on a matrix-free operator with ``options``
    (its budget): every step iterates its L starts N times against the operator and the
    step's deflation terms, about ``N·L·n²·(2n·a + b)`` over the n steps with
    ``(a, b) =`` :data:`POWER_OPERATOR_SECONDS`."""
    opts = resolve_method("power").with_defaults(dict(options or {}))
    starts, iters = int(opts["n_starts"]), int(opts["n_iter"])
    if opts["budget"] == "aghkt":
        starts, iters = aghkt_budget(n, opts["noise_level"])
    a, b = POWER_OPERATOR_SECONDS
    return iters * starts * float(n) ** 2 * (2.0 * n * a + b)


def large_n_sroa_seconds(n: int, p: int, checked: bool) -> float:
    """CPU seconds of one matrix-free SROA (rank n) on the large-n engine (n >= ``LARGE_N``),
    globally checked or not: :data:`LARGE_N_CHECKED_SECONDS` grown as n^:data:`LARGE_N_EXPONENT`,
    :data:`LARGE_N_ORDER_FACTOR` per order above 3."""
    seconds = LARGE_N_CHECKED_SECONDS * (n / LARGE_N_REFERENCE_N) ** LARGE_N_EXPONENT
    seconds *= LARGE_N_ORDER_FACTOR ** max(p - 3, 0)
    return seconds if checked else LARGE_N_UNCHECKED_SHARE * seconds


def _large_engine_steps(method: str, n: int) -> bool:
    """Whether ``method``'s own steps run the large-n engine at ``n`` on an operator (spectral
    starts by Lanczos: a method with the ``engine`` and ``n_spectral`` options, from
    ``LARGE_N`` on); ``power``'s run only its check there, its iterations priced as before."""
    opts = resolve_method(method).with_defaults({})
    return n >= LARGE_N and "n_spectral" in opts and opts.get("engine") in ("auto", "krylov")


def threshold_mean_cost(spec: ThresholdSweepSpec) -> float:
    """Estimated seconds per instance, averaged over the grid (every search priced by
    :func:`search_seconds`, at the evaluations :func:`search_evals` expects)."""
    costs = [search_seconds(spec, settings) for settings in grid_points(spec)]
    return sum(costs) / len(costs)


def _has_iid_part(model: str) -> bool:
    """Whether drawing ``model`` draws an i.i.d. tensor (alone or as a mixture's background)."""
    return model in NOISE_MODELS or "+" in model


def search_memory(
    method: str,
    n: int,
    p: int,
    n_evals: int,
    iid: bool = True,
    options: Mapping[str, Any] | None = None,
) -> float:
    """Estimated peak bytes of one search: the worker process, the instance (``T``, ``E``,
    the rescaled ``E`` and ``T̂``), the SROA call (:func:`sroa_dist.methods.memory_estimate`)
    or, for a model with an i.i.d. part (``iid``), drawing ``E`` (which sorts index arrays of
    ``p`` times the tensor's size), whichever is larger, and the trace. Structured families
    (the coherent tilt) are built from the basis and need no sort."""
    tensor = 8.0 * float(n) ** p
    solve = float(memory_estimate(method, n, p, 1, dict(options or {})))
    draw = (2 * p + 2) * tensor if iid else 0.0
    return WORKER_BASE_BYTES + 4 * tensor + max(solve, draw) + 24.0 * n_evals


#: Bytes per n² of a matrix-free search: the basis and deflation vectors (n × n each), the
#: starts and their gradients, and the n × n eigenproblems of the spectral starts.
MATRIX_FREE_BYTES_PER_N2 = 8.0 * 16


def _worst_memory(spec: ThresholdSweepSpec) -> tuple[float, tuple[str, int, int]]:
    worst: tuple[float, tuple[str, int, int]] = (0.0, ("", 0, 0))
    for model in spec.axes["noise.model"].values:
        for m, n, p in _combos(spec):
            if uses_matrix_free(n, p, str(model), None, spec.matrix_free):
                need = WORKER_BASE_BYTES + MATRIX_FREE_BYTES_PER_N2 * n * n
            else:
                need = search_memory(
                    m, n, p, spec.n_steps, _has_iid_part(str(model)), spec.own_options(m)
                )
            worst = max(worst, (need, (m, n, p)))
    return worst


def _gib(x: float) -> str:
    return f"{x / 2**30:,.2f} GiB" if x < 2**50 else f"{x:.2g} bytes"


def search_evals(spec: ThresholdSweepSpec) -> float:
    """Evaluations one search of ``spec`` is expected to make: :func:`expected_evals` of its
    own range, ``rtol``, scan phases and ``k_section`` (a first crossing anywhere in the range)."""
    t = spec.threshold
    return expected_evals(
        tuple(t.eps_range),
        t.rtol,
        t.search["scan_phases"],
        t.search.get("k_section", K_SECTION),
    )


#: A search on the identity basis (``tensor.basis = "identity"``) over the large-n law, which
#: was fitted to the studies' random basis: the matrix-free operator then skips the basis'
#: products with every vector. Measured 2026-11-29 on the p = 3 value spec (c = 0.5) run with
#: the identity at n = 256 and 512 (41 and 130 CPU-s, one worker beside two others, load about
#: 3) against the law's 176 and 927 s: 0.23 and 0.14; their geometric mean. The same searches
#: on the random basis (the committed stores) gave the same brackets bit for bit.
IDENTITY_BASIS_SCALE = 0.18
#: The same for ``power``'s own iterations on an operator (its AGHKT budget's starts, which the
#: basis multiplies at every iteration), over :data:`POWER_OPERATOR_SCALE`'s random-basis
#: price: the attractor's power search at n = 512 on the identity at the global bracket's two
#: ends (docs/data/studies/asymptote-attractor-power-n512-identity.zarr, 2026-11-29, 2 workers,
#: load about 2) took about 1 940 CPU-s against the 4 092 s printed (0.47); the random-basis
#: run of the same two SROAs took 4 093 CPU-s. One run: the same verdicts and bracket on both.
IDENTITY_BASIS_POWER_SCALE = 0.47


def search_seconds(spec: ThresholdSweepSpec, settings: ThresholdSettings) -> float:
    """Expected CPU seconds of one search at ``settings``: :func:`search_cost` at the
    evaluations the search's own parameters make on average (:func:`search_evals`), scaled to
    measured evaluations (:func:`evaluation_scale`; on the identity basis
    :data:`IDENTITY_BASIS_SCALE` where the steps run the large-n engine,
    :data:`IDENTITY_BASIS_POWER_SCALE` for ``power`` on an operator)."""
    checked = bool(spec.threshold.search["global_check"])
    identity = spec.data["tensor"].get("basis") == "identity" and uses_matrix_free(
        settings.n, settings.p, settings.noise, None, spec.matrix_free
    )
    scale = 1.0
    if identity and _large_engine_steps(settings.method, settings.n):
        scale = IDENTITY_BASIS_SCALE
    elif identity and settings.method == "power":
        scale = IDENTITY_BASIS_POWER_SCALE
    scale *= evaluation_scale(
        settings.method,
        settings.n,
        settings.p,
        settings.noise,
        spec.matrix_free,
        spec.options_for(settings.method),
    )
    return scale * search_cost(
        settings.method,
        settings.n,
        settings.p,
        search_evals(spec),
        settings.noise,
        checked,
        spec.matrix_free,
        spec.options_for(settings.method),
    )


def worker_memory(spec: ThresholdSweepSpec, layout: Layout) -> float:
    """Peak bytes of a worker at the largest search of the grid, with its block's traces."""
    return _worst_memory(spec)[0] + math.prod(layout.chunks) * 24.0 * spec.n_steps


# --------------------------------------------------------------------------------------------
# Block kernel


#: Cube variable -> the :class:`~sroa_dist.studies.first_crossing.Evaluation` field it stores.
_TRACE_FIELDS = {
    "trace_eps": "eps",
    "trace_metric": "metric",
    "trace_passed": "passed",
    "trace_global_gap": "global_gap",
    "trace_non_global": "non_global",
    "trace_redone": "redone",
    "trace_lam_err": "lam_err",
    "trace_vec_err": "vec_err",
}


def compute_threshold_block(task: BlockTask, spec: ThresholdSweepSpec) -> BlockResult:
    """Every search of one block (a pure function of the task, timings aside)."""

    def solve(settings: ThresholdSettings, replicate: int) -> ThresholdResult:
        return problem_of(spec, settings, replicate).run(current_pool())

    return timed_block(task, spec, THRESHOLD_VARIABLES, solve, _store_search)


def _store_search(
    out: dict[str, np.ndarray],
    idx: tuple[int, ...],
    settings: ThresholdSettings,
    replicate: int,
    res: ThresholdResult,
) -> None:
    """One search's values at ``idx`` of a block's arrays."""
    n_steps = out["trace_eps"].shape[-1]
    if res.n_evals > n_steps:  # max_evals is a bound; a breach is a bug, say so
        raise RuntimeError(f"search made {res.n_evals} evaluations, more than {n_steps}")
    out["eps_star"][idx] = res.eps_star
    out["eps_lo"][idx], out["eps_hi"][idx] = res.bracket
    out["n_evals"][idx] = res.n_evals
    out["reached"][idx] = res.reached
    out["non_monotone"][idx] = res.non_monotone
    out["certified_fraction"][idx] = res.certified_fraction
    out["artefacts"][idx] = res.artefacts
    out["scan_resolution"][idx] = res.scan_resolution
    ends = res.certified_ends
    out["certified_ends"][idx] = np.nan if ends is None else float(ends)
    k = res.n_evals
    for var, field_name in _TRACE_FIELDS.items():
        out[var][idx][:k] = [getattr(e, field_name) for e in res.trace]


#: What each key of a threshold spec means (docs/reference/spec.md): the keys this kind reads
#: its own way; the common and shared keys' meanings come from :mod:`..spec.meanings`.
THRESHOLD_KEY_MEANINGS: Mapping[str, str] = key_meanings(
    THRESHOLD_SCHEMA,
    {
        "tensor.lambdas": "the planted weights; default: `find_threshold`'s (one distinct "
        "smallest weight)",
        "tensor.weights": "a weight profile over n instead of lambdas: `last` (every weight 1 but "
        "the last, lambda_min) or `linear` (evenly from 1 down to lambda_min)",
        "tensor.lambda_min": "the profile's smallest weight, in (0, 1]; default 0.95",
        "tensor.basis": "the components' basis: `random` (default: Haar, drawn per instance) "
        "or `identity` (nothing drawn; a matrix-free search skips the basis' products; the "
        "coherent tilt's crossing does not depend on the basis)",
        "noise.model": "perturbation family or model whose threshold is searched (as "
        "`noise.model` of a tensor sweep)",
        "solver.options": "keyword options of the rank-one method of every SROA step of the "
        "search; a sub-table per method applies to that method only (the norm of E takes its "
        "method's defaults)",
        "threshold.criterion": "success criterion: `value`, `recovery` or `theorem`",
        "threshold.c": "the value criterion's level: max |λ̂ − λ| <= c·ε (theorem: its value "
        "bound, default 2)",
        "threshold.radius": "the recovery criterion's level: max ‖v̂ − v‖ <= radius (theorem: its "
        "vector bound, default 20ε/λ_j)",
        "threshold.eps_range": "[start, stop] of the ‖E‖ searched",
        "threshold.rtol": "relative width at which the bisection stops",
        "threshold.global_check": "check every local SROA step against check starts; default: the "
        "search revision's",
        "threshold.redo": "redo a non-global step from its check's point; default: the search "
        "revision's",
        "threshold.scan_phases": "phases of the upward scan; default: the search revision's",
        "threshold.k_section": "points evaluated per search round (scan and refinement), run at "
        "once on free workers; default 1 (sequential)",
        "threshold.certify_ends": "rerun the SROA at both bracket ends with certified steps",
        "threshold.matrix_free": "build the instance as a structured operator: true (the tilt "
        "only), false, or unset (find_threshold's rule: above its dense-size cap)",
        "threshold.revision": "search revision; pinned by the store, not written in a spec",
    },
)


class ThresholdKind(KindBase):
    """The ``threshold`` kind (marker table ``[threshold]``): first-crossing searches, one per
    block unless ``block_size`` or ``chunks`` say otherwise (a search is seconds to minutes, far
    above the per-task overhead, and small blocks keep every worker busy)."""

    name = "threshold"
    marker = "threshold"
    all_variables: Mapping[str, Variable] = THRESHOLD_VARIABLES
    dims: Mapping[str, Dim] = THRESHOLD_DIMS
    #: The spec grammar and its sweepable keys (docs/reference/spec.md lists them).
    schema: Mapping[str, Any] = THRESHOLD_SCHEMA
    axis_keys: Mapping[str, str] = AXIS_KEYS
    key_meanings: Mapping[str, str] = THRESHOLD_KEY_MEANINGS
    #: Report and figures (:class:`sroa_dist.analysis.KindAnalysis`; a path: analysis is a
    #: layer above): the rate of ε* in n from the first-crossing brackets.
    analysis = "sroa_dist.analysis.threshold_figures:THRESHOLD_ANALYSIS"
    #: What the cube's ``step`` dim counts (``sroa-dist validate`` says it).
    step_meaning = (
        "search evaluations, each one SROA run at one eps: the trace of a first-crossing "
        "search, not SROA steps"
    )

    one_per_block = True
    parse = staticmethod(threshold_spec_from_dict)
    mean_cost = staticmethod(threshold_mean_cost)
    compute_block = staticmethod(compute_threshold_block)
    instance = staticmethod(problem_of)
    #: CPU seconds of one search on one idle core.
    instance_cost = staticmethod(search_seconds)
    worker_memory = staticmethod(worker_memory)

    def check_memory(
        self, spec: ThresholdSweepSpec, layout: Layout, memory_limit: float | None
    ) -> None:
        """``SpecError`` naming ``tensor.n`` if a search would not fit in a worker's memory."""
        limit, origin = worker_limit(memory_limit)
        need = worker_memory(spec, layout)
        if need > limit:
            m, n, p = _worst_memory(spec)[1]
            raise spec.error(
                "tensor.n",
                f"searches that fit in a worker's memory limit of {_gib(limit)} ({origin})",
                f"<n = {n}, p = {p}, method {m!r}: about {_gib(need)}; one dense tensor of n^p "
                f"entries is {_gib(8.0 * float(n) ** p)}>",
                "use a smaller n or p, or workers with more memory",
            )

    def provenance(self, spec: ThresholdSweepSpec) -> dict[str, Any]:
        """Root attrs of the settings that are not axes: criterion, level, range, rtol, and
        the search's check and scan settings."""
        t = spec.threshold
        search = {**t.search, "revision": t.revision, "c": t.c, "radius": t.radius}
        return {
            "setting_criterion": t.criterion,
            "setting_level": "none" if t.level is None else t.level,
            "setting_eps_range": json.dumps(list(t.eps_range)),
            "setting_rtol": t.rtol,
            "setting_lambdas": json.dumps(spec.lambdas),
            # Only where the spec gives a profile: older stores' attrs stay as they were.
            **(
                {}
                if spec.weight_profile is None
                else {"setting_weights": json.dumps(list(spec.weight_profile))}
            ),
            "setting_search": json.dumps(search, sort_keys=True),
            # Only where the spec gives options: older stores' attrs stay as they were.
            **(
                {}
                if not spec.solver.options
                else {"setting_solver_options": json.dumps(spec.solver.options, sort_keys=True)}
            ),
        }

    def advice(self, spec: ThresholdSweepSpec) -> list[str]:
        """See :func:`..spec.base.replicate_advice` (weights drawn from a distribution differ)."""
        return replicate_advice(spec, isinstance(spec.lambdas, Mapping))


#: The registered threshold kind.
THRESHOLD = ThresholdKind()
