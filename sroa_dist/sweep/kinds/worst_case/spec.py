"""The worst-case spec: its schema, its checks, its grid points and their seeds.

Grammar (marker table ``[worst_case]``)::

    name, seed, replicates, description
    [tensor]     n, p, lambda_min, basis     (weights 1, ..., 1, lambda_min; basis identity/random)
    [solver]     method (the steps' method: an axis), options, norm_method
    [worst_case] eps, search, metric, budget, n_random_starts, step, radius, c, norm_seeds

``tensor.n``, ``tensor.p``, ``worst_case.eps`` and ``solver.method`` may be axes (a list or a
range table). Each instance is one :func:`sroa_dist.worst_case` search at ``ε = eps`` with
``budget`` SROA evaluations; ``solver.method`` is the method of SROA's steps inside the search
(``"certified"``: global steps, ``"sshopm"``: local ones), ``solver.norm_method`` the norm the
search rescales its candidates by (default: :func:`sroa_dist.worst_case`'s, certified where the
relaxation is tractable). A norm estimate is never a fixed-seed one (issue 33: a search learns
to hide ``E``'s maximum from fixed starts), so ``norm_seeds = "fixed"``, or a seed in
``[solver.norm_options]``, is refused.

Seeding: instance ``(settings, replicate)`` searches with ``rng = SeedSequence(seed,
spawn_key=(h("n=…"), h("p=…"), h("eps=…"), replicate, 0))`` and draws a random basis from the
same key ending in 1 (``h`` is :func:`~...layout.stable_hash32`): a pure function of the master
seed, the coordinates and the replicate. The steps' method is not in the key, so a method axis
compares local with certified steps on the same searches.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from sroa_dist.methods import resolve_method
from sroa_dist.problems import BASES
from sroa_dist.studies import METRICS, SEARCH_METHODS, SMOOTH_METRICS

from ...spec import (
    COMMON_SCHEMA,
    SpecError,
    SweepSpec,
    build_axes,
    check_method_options,
    check_methods,
    check_replicates,
    check_tensor_size,
    validate_table,
)
from ..base import GridPoint

__all__ = [
    "AXIS_KEYS",
    "BASIS_PART",
    "NORM_SEEDS",
    "SEARCH_PART",
    "WORST_CASE_SCHEMA",
    "WorstCaseSection",
    "WorstCaseSettings",
    "WorstCaseSweepSpec",
    "worst_case_spec_from_dict",
]

#: The one way a search's norm estimate is seeded: a fresh stream at every evaluation.
NORM_SEEDS = "fresh"

#: The schema of a worst-case spec: ``(vtype, default, required)`` per key.
WORST_CASE_SCHEMA: dict[str, Any] = {
    **COMMON_SCHEMA,
    "tensor": {
        "n": ("int_axis", None, True),
        "p": ("int_axis", 3, False),
        # Weights 1, ..., 1, lambda_min (worst_case's default: the deflation order is defined).
        "lambda_min": ("float", 0.95, False),
        "basis": ("str", "identity", False),
    },
    "worst_case": {
        "eps": ("float_axis", None, True),
        "search": ("str", "gradient", False),
        "metric": ("str", "lam", False),
        "budget": ("int", 40, False),
        "n_random_starts": ("int", 2, False),
        "step": ("float", 0.3, False),
        "radius": ("float", 0.3, False),
        # The constant a claim is about: a violation is error > c * upper(||E||).
        "c": ("float", 2.0, False),
        "norm_seeds": ("str", NORM_SEEDS, False),
    },
}

#: Dotted spec key -> axis (dimension) name, for keys that may be swept.
AXIS_KEYS: dict[str, str] = {
    "tensor.n": "n",
    "tensor.p": "p",
    "solver.method": "method",
    "worst_case.eps": "eps",
}


@dataclass(frozen=True)
class WorstCaseSection:
    """``[worst_case]`` without its axis: the search and the claim's constant."""

    search: str
    metric: str
    budget: int
    n_random_starts: int
    step: float
    radius: float
    c: float
    norm_seeds: str = NORM_SEEDS


@dataclass(frozen=True)
class WorstCaseSweepSpec(SweepSpec):
    """A validated worst-case sweep spec: ``[tensor]``, ``[solver]`` and ``[worst_case]``."""

    kind: ClassVar[str] = "worst_case"
    axis_keys: ClassVar[Mapping[str, str]] = AXIS_KEYS

    @functools.cached_property
    def worst_case(self) -> WorstCaseSection:
        """The ``[worst_case]`` section (``eps`` is an axis: :meth:`settings_at`)."""
        w = {k: v for k, v in self.data["worst_case"].items() if k != "eps"}
        return WorstCaseSection(**w)

    @property
    def lambda_min(self) -> float:
        """The last component's weight (the others are 1)."""
        return float(self.data["tensor"]["lambda_min"])

    @property
    def basis(self) -> str:
        """``"identity"`` or ``"random"`` (drawn per instance)."""
        return str(self.data["tensor"]["basis"])

    @property
    def norm_method(self) -> str | None:
        """``[solver] norm_method`` (None: worst_case's default at each size)."""
        return self.solver.norm_method

    @property
    def ranks(self) -> tuple[int, ...]:
        """Every search runs full-rank SROA: the n values."""
        return tuple(int(n) for n in self.axes["tensor.n"].values)

    def settings_at(self, coords: Mapping[str, Any]) -> WorstCaseSettings:
        """The :class:`WorstCaseSettings` of a grid point."""
        return WorstCaseSettings.at(self, coords)


@dataclass(frozen=True)
class WorstCaseSettings(GridPoint):
    """One grid point (searches are not batched); the steps' method is not seeded (paired
    searches). Part 0 of an instance's seed is its search's ``rng``
    (:data:`SEARCH_PART`), part 1 its random basis (:data:`BASIS_PART`)."""

    seed_fields = ("n", "p", "eps")

    n: int
    p: int
    eps: float
    method: str


#: The parts of an instance's seed (:meth:`~..base.GridPoint.seed`): the search, the basis.
SEARCH_PART, BASIS_PART = 0, 1


# --------------------------------------------------------------------------------------------
# Validation


def worst_case_spec_from_dict(raw: Mapping[str, Any], source: str = "<dict>") -> WorstCaseSweepSpec:
    """Validate a worst-case spec given as a (TOML-like) dict and resolve its defaults;
    :class:`SpecError` naming the source and the key otherwise."""
    data = validate_table(raw, WORST_CASE_SCHEMA, "", source)
    axes = build_axes(data, WORST_CASE_SCHEMA, AXIS_KEYS, source)
    check_replicates(data["replicates"], source)
    ns, ps = axes["tensor.n"].values, axes["tensor.p"].values
    if min(ns) < 2:
        raise SpecError(
            source, "tensor.n", "dimensions n >= 2", min(ns), "e.g. tensor.n = [8, 12, 16]"
        )
    if min(ps) < 3:
        raise SpecError(source, "tensor.p", "tensor order p >= 3", min(ps))
    check_tensor_size(ns, ps, source)
    _check_tensor(data["tensor"], source)
    for key, why in (
        ("vectors", "the cube stores E, the weights and the basis; SROA's vectors are not kept"),
        ("certificates", "re-check a claim from the stored E instead (recheck_worst_cases)"),
    ):
        if data["output"][key]:
            raise SpecError(
                source, f"output.{key}", "false in a worst-case sweep", data["output"][key], why
            )
    _check_search(data["worst_case"], axes["worst_case.eps"].values, source)
    _check_solver(data, axes["solver.method"].values, ns, ps, source)
    return WorstCaseSweepSpec(data=data, source=source, axes=axes)


def _check_tensor(t: Mapping[str, Any], source: str) -> None:
    if not 0 < t["lambda_min"] <= 1:
        raise SpecError(
            source,
            "tensor.lambda_min",
            "the last weight in (0, 1] (the others are 1)",
            t["lambda_min"],
            "the default 0.95 defines the deflation order, as the published studies use",
        )
    if t["basis"] not in BASES:
        raise SpecError(source, "tensor.basis", f"one of {sorted(BASES)}", t["basis"])


def _check_search(w: Mapping[str, Any], eps: Sequence[float], source: str) -> None:
    if w["norm_seeds"] != NORM_SEEDS:
        raise SpecError(
            source,
            "worst_case.norm_seeds",
            f"{NORM_SEEDS!r}: a new, independent stream of starts at every norm evaluation",
            w["norm_seeds"],
            "a search that rescales by a fixed-seed local norm estimate learns to hide E's "
            "maximum from those starts (at n = 12 one reported 0.2358 for a certified norm of "
            "0.38927); drop the key, or set solver.norm_method = 'certified'",
        )
    if min(eps) <= 0 or not all(np.isfinite(eps)):
        raise SpecError(
            source, "worst_case.eps", "operator norms eps > 0", min(eps), "e.g. eps = [0.2, 0.3]"
        )
    if w["search"] not in SEARCH_METHODS:
        raise SpecError(source, "worst_case.search", f"one of {list(SEARCH_METHODS)}", w["search"])
    if w["metric"] not in METRICS:
        raise SpecError(source, "worst_case.metric", f"one of {list(METRICS)}", w["metric"])
    if w["search"] == "gradient" and w["metric"] not in SMOOTH_METRICS:
        raise SpecError(
            source,
            "worst_case.metric",
            f"a metric with a gradient, one of {list(SMOOTH_METRICS)}, for search 'gradient'",
            w["metric"],
            "use search = 'es' for an integer-valued metric",
        )
    for key, least in (("budget", 1), ("n_random_starts", 0)):
        if w[key] < least:
            raise SpecError(source, f"worst_case.{key}", f"an integer >= {least}", w[key])
    for key in ("step", "radius", "c"):
        if not (np.isfinite(w[key]) and w[key] > 0):
            raise SpecError(source, f"worst_case.{key}", "a finite number > 0", w[key])


def _check_solver(
    data: dict[str, Any], methods: Sequence[str], ns: Sequence[int], ps: Sequence[int], src: str
) -> None:
    solver = data["solver"]
    if solver["steps"] is not None:
        raise SpecError(
            src,
            "solver.steps",
            "no value in a worst-case sweep",
            solver["steps"],
            "the search runs full-rank SROA (r = n steps)",
        )
    norm_options = solver["norm_options"]
    if norm_options:
        fixed = sorted(k for k in norm_options if k in ("seed", "rng"))
        local = (
            solver["norm_method"] is None or not resolve_method(solver["norm_method"]).global_steps
        )
        if fixed and local:
            raise SpecError(
                src,
                f"solver.norm_options.{fixed[0]}",
                "no fixed seed for the search's norm estimate",
                norm_options[fixed[0]],
                "a search that rescales by a fixed-seed local norm estimate learns to hide E's "
                "maximum from those starts; the search draws fresh starts at every evaluation",
            )
        raise SpecError(
            src,
            "solver.norm_options",
            "an empty table in a worst-case sweep",
            norm_options,
            "the search's norm takes its method's defaults (sroa_dist.worst_case)",
        )
    check_methods(solver, methods, src, table_keys=("options",))
    for m in methods:
        for n in ns:
            for p in ps:
                check_method_options(data, m, n, p, False, src)
