"""The worst-case sweep kind: one gradient (or ES) adversary per instance, its ``E`` stored.

Each instance is one :func:`sroa_dist.worst_case` search on ``T = Σ λ_i v_i^{⊗p}`` (weights 1,
..., 1, ``lambda_min``) at ``‖E‖ = eps``, with the spec's steps' method inside the search and a
norm the search cannot fool (certified where the relaxation is tractable, else a local estimate
with fresh starts at every evaluation; the returned ``E`` certified where tractable). The cube
keeps the error, ``‖E‖``'s bracket, the ratio and whether it is certified or a lower bound,
and ``E`` itself with ``λ`` and ``V`` (:mod:`.variables`): a claimed violation is re-checked
from the store alone (:func:`sroa_dist.analysis.recheck_worst_cases`).

A search is seconds to minutes, so a block is one instance by default (as for thresholds): the
runner hands the next search to whichever worker is free.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sroa_dist.methods import (
    CERTIFIED_NORM_METHOD,
    certified_tractable,
    memory_estimate,
    solve_cost,
)
from sroa_dist.problems import BASES
from sroa_dist.studies import WorstCaseResult, worst_case

from ...cube import SHARED_AXES, Dim, Variable, by_name
from ...layout import (
    WORKER_BASE_BYTES,
    BlockResult,
    BlockTask,
    Layout,
)
from ...spec import key_meanings
from ..base import KindBase, grid_points, timed_block, worker_limit
from .spec import (
    AXIS_KEYS,
    BASIS_PART,
    SEARCH_PART,
    WORST_CASE_SCHEMA,
    WorstCaseSettings,
    WorstCaseSweepSpec,
    worst_case_spec_from_dict,
)
from .variables import WORST_CASE_VARIABLES, pack_tensor, packed_size

__all__ = [
    "WORST_CASE",
    "WorstCaseKind",
    "WorstCaseProblem",
    "problem_of",
    "search_seconds",
]


def _weights(n: int, lambda_min: float) -> np.ndarray:
    lam = np.ones(n)
    lam[-1] = lambda_min
    return lam


@dataclass(frozen=True)
class WorstCaseProblem:
    """One instance's search, as its block runs it: :meth:`run` is the stored result."""

    n: int
    p: int
    eps: float
    step_method: str
    norm_method: str | None
    lambda_min: float
    basis: str
    search: str
    metric: str
    budget: int
    n_random_starts: int
    step: float
    radius: float
    seed: int
    spawn_key: tuple[int, ...]
    basis_key: tuple[int, ...]
    step_options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def lambdas(self) -> np.ndarray:
        """The weights of ``T``: 1, ..., 1, ``lambda_min``."""
        return _weights(self.n, self.lambda_min)

    @property
    def V(self) -> np.ndarray:
        """The basis of ``T`` (a random one is drawn from its own seed)."""
        gen = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=self.basis_key))
        return np.asarray(BASES[self.basis](self.n, self.n, rng=gen), dtype=float)

    def run(self) -> WorstCaseResult:
        """:func:`sroa_dist.worst_case` on this instance."""
        return worst_case(
            self.n,
            self.p,
            self.eps,
            metric=self.metric,
            budget=self.budget,
            rng=np.random.SeedSequence(self.seed, spawn_key=self.spawn_key),
            lambdas=self.lambdas,
            V=self.V,
            n_random_starts=self.n_random_starts,
            step=self.step,
            radius=self.radius,
            method=self.search,
            step_method=self.step_method,
            norm_method=self.norm_method,
            step_options=dict(self.step_options),
        )


def problem_of(
    spec: WorstCaseSweepSpec, settings: WorstCaseSettings, replicate: int
) -> WorstCaseProblem:
    """The search of instance ``(settings, replicate)``."""
    w = spec.worst_case
    return WorstCaseProblem(
        n=settings.n,
        p=settings.p,
        eps=settings.eps,
        step_method=settings.method,
        norm_method=spec.norm_method,
        lambda_min=spec.lambda_min,
        basis=spec.basis,
        search=w.search,
        metric=w.metric,
        budget=w.budget,
        n_random_starts=w.n_random_starts,
        step=w.step,
        radius=w.radius,
        seed=spec.seed,
        spawn_key=settings.spawn_key(replicate, SEARCH_PART),
        basis_key=settings.spawn_key(replicate, BASIS_PART),
        step_options=spec.options_for(settings.method),
    )


# --------------------------------------------------------------------------------------------
# Cost, memory, layout

#: Least CPU seconds of one SROA step inside a search (Python and per-step overhead, which the
#: core's cost model leaves out; it dominates at small n).
STEP_FLOOR = 0.015

#: Measured CPU seconds of searches over :func:`search_cost`'s model (the model counts the
#: SROA runs and norms of ``budget`` evaluations; the gradient's vjp, the active-set power
#: iterations and the final certification come on top, and the step floor overstates SS-HOPM at
#: p = 3). The three smoke grids' 18 searches, run serially (docs/data/studies/
#: worst-case-cost.json, 2026-11-28, shared 2-core machine at load 21-28: CPU time, inflated by
#: the load): 31.5 CPU s against 30.6 model s in all, but 0.65x the model for SS-HOPM steps at
#: p = 3, 2.2x at p = 4 and 1.45x with certified steps (0.35-3.7x per search).
SEARCH_COST_SCALE = 1.0


def norm_method_at(spec: WorstCaseSweepSpec, settings: WorstCaseSettings) -> str:
    """The norm the search rescales by at ``settings`` (worst_case's default where the spec
    names none: certified where the relaxation is tractable, else SS-HOPM with fresh starts)."""
    if spec.norm_method is not None:
        return spec.norm_method
    es = spec.worst_case.search == "es"
    return CERTIFIED_NORM_METHOD if es or certified_tractable(settings.n, settings.p) else "sshopm"


def search_cost(step_method: str, norm_method: str, n: int, p: int, budget: int) -> float:
    """Model seconds of a search of ``budget`` evaluations: each one full SROA (``n`` steps of
    ``step_method``) and one norm (``norm_method``), plus a certified norm and SROA for the
    returned ``E`` where the relaxation is tractable and the search's norm was not certified."""
    sroa = n * max(solve_cost(step_method, n, p), STEP_FLOOR)
    norm = solve_cost(norm_method, n, p)
    final = 0.0
    if norm_method != CERTIFIED_NORM_METHOD and certified_tractable(n, p):
        final = solve_cost(CERTIFIED_NORM_METHOD, n, p) + sroa
    return budget * (sroa + norm) + final


def search_seconds(spec: WorstCaseSweepSpec, settings: WorstCaseSettings) -> float:
    """Expected CPU seconds of one search at ``settings`` on an idle core."""
    norm = norm_method_at(spec, settings)
    model = search_cost(settings.method, norm, settings.n, settings.p, spec.worst_case.budget)
    return SEARCH_COST_SCALE * model


def mean_cost(spec: WorstCaseSweepSpec) -> float:
    """Seconds per instance, averaged over the grid."""
    costs = [search_seconds(spec, s) for s in grid_points(spec)]
    return sum(costs) / len(costs)


def search_memory(method: str, n: int, p: int) -> float:
    """Peak bytes of one search: the worker, a dozen dense tensors (``T``, ``E``, the candidate,
    ``T + E``, SROA's deflated tensors, the gradient and its pieces) and the steps' solver."""
    tensor = 8.0 * float(n) ** p
    return WORKER_BASE_BYTES + 12 * tensor + float(memory_estimate(method, n, p, 1, {}))


def _worst_memory(spec: WorstCaseSweepSpec) -> tuple[float, WorstCaseSettings]:
    return max(
        ((search_memory(s.method, s.n, s.p), s) for s in grid_points(spec)), key=lambda t: t[0]
    )


def _extents(spec: WorstCaseSweepSpec) -> tuple[int, int]:
    """(``step``, ``component``) lengths: the largest n, and the largest packed ``E``."""
    ns, ps = spec.axes["tensor.n"].values, spec.axes["tensor.p"].values
    n_max = max(int(n) for n in ns)
    packed = max(packed_size(int(n), int(p)) for n in ns for p in ps)
    return n_max, max(packed, n_max * n_max)


def worker_memory(spec: WorstCaseSweepSpec, layout: Layout) -> float:
    """Peak bytes of a worker at the largest search of the grid, with its block's arrays."""
    per_instance = 8.0 * (len(WORST_CASE_VARIABLES) + 3 * layout.n_steps + 2 * layout.n_component)
    return _worst_memory(spec)[0] + math.prod(layout.chunks) * per_instance


# --------------------------------------------------------------------------------------------
# Block kernel


def store_instance(
    out: Mapping[str, np.ndarray], idx: tuple[int, ...], res: WorstCaseResult, c: float
) -> None:
    """Write one search's result into the block's arrays at ``idx``."""
    n = res.E.shape[0]
    error = float(np.max(res.lam_err))
    out["error"][idx] = error
    out["value"][idx] = res.value
    out["norm_lower"][idx], out["norm_upper"][idx] = res.norm_bracket
    out["norm_certified"][idx] = res.norm_certified
    out["ratio"][idx] = res.ratio
    out["ratio_certified"][idx] = res.ratio_kind == "certified"
    out["exceeds_c"][idx] = res.ratio > c
    out["n_evals"][idx] = res.n_evals
    out["tilt_value"][idx] = res.start_values.get("coherent-tilt", math.nan)
    out["tilt_cosine"][idx] = res.tilt_cosine
    out["lam_err"][idx][:n] = res.lam_err
    out["vec_err"][idx][:n] = res.vec_err
    out["weights"][idx][:n] = res.lambdas
    packed = pack_tensor(res.E)
    out["E_packed"][idx][: packed.size] = packed
    out["basis_flat"][idx][: n * n] = np.asarray(res.V, dtype=float).ravel()


def compute_block(task: BlockTask, spec: WorstCaseSweepSpec) -> BlockResult:
    """Every search of one block (a pure function of the task, timings aside)."""
    c = spec.worst_case.c
    return timed_block(
        task,
        spec,
        WORST_CASE_VARIABLES,
        lambda settings, replicate: problem_of(spec, settings, replicate).run(),
        lambda out, idx, settings, replicate, res: store_instance(out, idx, res, c),
    )


#: What each key of a worst_case spec means (docs/reference/spec.md): the keys this kind reads
#: its own way; the common and shared keys' meanings come from :mod:`..spec.meanings`.
WORST_CASE_KEY_MEANINGS: Mapping[str, str] = key_meanings(
    WORST_CASE_SCHEMA,
    {
        "solver.method": "rank-one method of SROA's steps inside the search: `certified` (global) "
        "or a local one (`sshopm`, ...)",
        "solver.steps": "refused: the search runs full-rank SROA",
        "solver.norm_method": "the norm the search rescales its candidates by; default: "
        "`certified` where the relaxation is tractable, else `sshopm` with fresh starts at "
        "every evaluation",
        "solver.norm_options": "refused: the search's norm takes its method's defaults (a seed "
        "here would be a fixed-seed norm)",
        "tensor.lambda_min": "the last weight; the others are 1 (`worst_case`'s default: 0.95)",
        "worst_case.eps": "the operator norm ‖E‖ = eps the adversary searches at",
        "worst_case.search": "`gradient` (Riemannian ascent through SROA's adjoint) or `es`",
        "worst_case.metric": "the error maximised: `lam` (max |λ̂ − λ| / eps), `vec`, or "
        "`first_failure` (es only)",
        "worst_case.budget": "SROA evaluations per search",
        "worst_case.n_random_starts": "Gaussian starts beside the coherent tilt and the shrink",
        "worst_case.step": "the search's first step, relative to ‖E‖_F",
        "worst_case.radius": "recovery radius of the `first_failure` metric",
        "worst_case.c": "the claim's constant: a violation is error > c · upper(‖E‖)",
        "worst_case.norm_seeds": "`fresh` only: a fixed-seed norm estimate is refused (the search "
        "learns to hide E's maximum from it)",
    },
)


class WorstCaseKind(KindBase):
    """The ``worst_case`` kind (marker table ``[worst_case]``): adversarial searches, one per
    block unless ``block_size`` or ``chunks`` say otherwise."""

    name = "worst_case"
    #: Its spec grammar and swept dims (in cube order; the cube's shared vocabulary).
    schema: Mapping[str, Any] = WORST_CASE_SCHEMA
    axis_keys: Mapping[str, str] = AXIS_KEYS
    key_meanings: Mapping[str, str] = WORST_CASE_KEY_MEANINGS
    dims: Mapping[str, Dim] = by_name(*(SHARED_AXES[d] for d in AXIS_KEYS.values()))
    marker = "worst_case"
    all_variables: Mapping[str, Variable] = WORST_CASE_VARIABLES
    #: Report section and figure (:class:`sroa_dist.analysis.KindAnalysis`; a path: analysis
    #: is a layer above): the ratio against n, certified or a lower bound.
    analysis = "sroa_dist.analysis.worst_case:WORST_CASE_ANALYSIS"
    #: What the cube's ``step`` dim counts (``sroa-dist validate`` says it).
    step_meaning = "SROA steps j = 1..n of the search's final SROA on T + E (and T's components)"

    one_per_block = True
    parse = staticmethod(worst_case_spec_from_dict)
    mean_cost = staticmethod(mean_cost)
    compute_block = staticmethod(compute_block)
    instance = staticmethod(problem_of)
    #: CPU seconds of one search on one idle core.
    instance_cost = staticmethod(search_seconds)
    worker_memory = staticmethod(worker_memory)

    def extents(self, spec: WorstCaseSweepSpec) -> tuple[int, int]:
        """``step``: the largest n; ``component``: the largest packed ``E`` (or ``V``)."""
        return _extents(spec)

    def check_memory(
        self, spec: WorstCaseSweepSpec, layout: Layout, memory_limit: float | None
    ) -> None:
        """``SpecError`` naming ``tensor.n`` if a search would not fit a worker's memory."""
        limit, origin = worker_limit(memory_limit)
        need = worker_memory(spec, layout)
        if need > limit:
            s = _worst_memory(spec)[1]
            raise spec.error(
                "tensor.n",
                f"searches that fit in a worker's memory limit of {limit / 2**30:,.2f} GiB "
                f"({origin})",
                f"<n = {s.n}, p = {s.p}, method {s.method!r}: about {need / 2**30:,.2f} GiB>",
                "use a smaller n or p, or workers with more memory",
            )

    def provenance(self, spec: WorstCaseSweepSpec) -> dict[str, Any]:
        """Root attrs of the settings that are not axes: the search, the weights, the basis,
        the norm and the claim's constant."""
        w = spec.worst_case
        return {
            "setting_search": json.dumps(
                {
                    "search": w.search,
                    "metric": w.metric,
                    "budget": w.budget,
                    "n_random_starts": w.n_random_starts,
                    "step": w.step,
                    "radius": w.radius,
                    "norm_seeds": w.norm_seeds,
                },
                sort_keys=True,
            ),
            "setting_c": w.c,
            "setting_lambda_min": spec.lambda_min,
            "setting_basis": spec.basis,
            "setting_norm_method": spec.norm_method or "default",
        }


#: The registered worst-case kind.
WORST_CASE = WorstCaseKind()
