"""The tensor sweep kind: grid cost, worker memory, layout, provenance and the kind object
registered in :mod:`sroa_dist.sweep.kinds.registry`.

Its spec and grid-point settings are in :mod:`.spec`, its block kernel in
:mod:`.block`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from sroa_dist.errors import InputError
from sroa_dist.methods import memory_estimate, solve_cost
from sroa_dist.problems import Instance
from sroa_dist.sweep.cost import sroa_seconds
from sroa_dist.sweep.cube import Dim, Variable
from sroa_dist.sweep.layout import (
    WORKER_BASE_BYTES,
    Layout,
)
from sroa_dist.sweep.spec import SpecError, key_meanings, replicate_advice

from ..base import KindBase, worker_limit
from .block import (
    batch_instances,
    compute_tensor_block,
    draw_group,
    target_eps,
    tensor_variables,
)
from .spec import (
    AXIS_KEYS,
    TENSOR_SCHEMA,
    InstanceSettings,
    TensorSweepSpec,
    tensor_spec_from_dict,
)
from .variables import TENSOR_DIMS, TENSOR_VARIABLES, V_HAT

__all__ = [
    "TENSOR",
    "TensorKind",
    "check_memory",
    "task_memory",
    "worst_task_memory",
]


def _solver_combos(spec: TensorSweepSpec) -> Iterator[tuple[str, int, int, str]]:
    """Every ``(method, n, p, norm method)`` of the grid: the only axes solver cost and memory
    depend on (the noise axes and replicates do not change them)."""
    for m in spec.axes["solver.method"].values:
        for n in spec.axes["tensor.n"].values:
            for p in spec.axes["tensor.p"].values:
                yield m, int(n), int(p), spec.norm_method_for(m, int(n), int(p))


def tensor_mean_cost(spec: TensorSweepSpec) -> float:
    """Mean of the per-instance cost over the grid. Every grid point weighs the same and the
    cost is linear in the steps, so averaging the steps over the rank axis separately is exact.
    """
    fixed = spec.solver.steps
    ranks = spec.axes["tensor.rank"].values if "tensor.rank" in spec.axes else None
    costs = []
    for m, n, p, norm in _solver_combos(spec):
        steps = fixed or (sum(ranks) / len(ranks) if ranks else n)
        costs.append(steps * solve_cost(m, n, p) + solve_cost(norm, n, p))
    return sum(costs) / len(costs)


def task_memory(
    spec: TensorSweepSpec, block: int, method: str, n: int, p: int, norm_method: str, n_steps: int
) -> dict[str, float]:
    """Estimated peak bytes of one task of ``block`` instances at one ``(method, n, p)``, by part.

    ``instances``: per batched instance ``T``, ``E``, ``T̂`` and the two stacks, plus the cached
    noise index table; ``solver``: the core's :func:`sroa_dist.methods.memory_estimate` of the
    larger of the SROA and norm calls; ``generation``: what drawing an instance needs beyond
    that (:func:`sroa_dist.noise_tensor` sorts index arrays of ``p`` times the tensor's size);
    ``outputs``: the block's result arrays; ``base``: the worker process. Calibrated with
    tracemalloc on n = 200, p = 3 and n = 40, p = 4 (peaks of 11 and 14 tensor sizes for one
    instance; this gives 12 and 13.4).
    """
    batch = min(block, batch_instances(n, p))
    tensor = 8.0 * float(n) ** p
    solve = memory_estimate(method, n, p, batch, spec.options_for(method))
    norm = memory_estimate(norm_method, n, p, batch, spec.options_for(norm_method, norm=True))
    held = (5 * batch + 1) * tensor
    solver = float(max(solve, norm))
    generation = max(0.0, ((2 * p + 2) + 3 * (batch - 1)) * tensor - held - solver)
    per_instance = 8.0 * (8 * n_steps + 8)
    if spec.output.vectors:
        per_instance += 8.0 * n_steps * n
    return {
        "base": float(WORKER_BASE_BYTES),
        "instances": held,
        "solver": solver,
        "generation": generation,
        "outputs": block * per_instance,
    }


def _gib(x: float) -> str:
    return f"{x / 2**30:,.1f} GiB" if x < 2**50 else f"{x:.2g} bytes"


def worst_task_memory(
    spec: TensorSweepSpec, layout: Layout
) -> tuple[dict[str, float], tuple[str, int, int]]:
    """:func:`task_memory` of the grid's most demanding ``(method, n, p)`` at the layout's
    block size, and that ``(method, n, p)``."""
    block = math.prod(layout.chunks)
    worst, where = None, None
    for m, n, p, norm in _solver_combos(spec):
        parts = task_memory(spec, block, m, n, p, norm, layout.n_steps)
        if worst is None or sum(parts.values()) > sum(worst.values()):
            worst, where = parts, (m, n, p)
    assert worst is not None and where is not None
    return worst, where


def check_memory(spec: TensorSweepSpec, layout: Layout, memory_limit: float | None) -> None:
    """Refuse a sweep whose tasks would not fit in a worker's memory (a ``SpecError`` naming
    the key to change), before any store is created or any worker runs out of memory.

    ``memory_limit`` as :func:`~..base.worker_limit` reads it. Costs O(axes).
    """
    limit, origin = worker_limit(memory_limit)
    block = math.prod(layout.chunks)
    worst, (m, n, p) = worst_task_memory(spec, layout)
    total = sum(worst.values())
    if total <= limit:
        return
    if worst["outputs"] >= max(worst["instances"], worst["solver"]):
        raise spec.error(
            "replicates",
            f"result blocks that fit in a worker's memory limit of {_gib(limit)} ({origin})",
            f"<{block:,} instances per task: about {_gib(total)} per task, of which results "
            f"{_gib(worst['outputs'])}>",
            "use a smaller --block-size, or fewer replicates or axis values",
        )
    raise spec.error(
        "tensor.n",
        f"instances that fit in a worker's memory limit of {_gib(limit)} ({origin})",
        f"<n = {n}, p = {p}, method {m!r}: about {_gib(total)} per task; one tensor of "
        f"n^p entries is {_gib(8.0 * float(n) ** p)}>",
        "use a smaller n or p, or workers with more memory",
    )


#: What each key of a tensor spec means (docs/reference/spec.md): the keys this kind reads
#: its own way; the common and shared keys' meanings come from :mod:`..spec.meanings`.
TENSOR_KEY_MEANINGS: Mapping[str, str] = key_meanings(
    TENSOR_SCHEMA,
    {
        "tensor.rank": "number of planted components r (<= n); default: n",
        "noise.model": "i.i.d. noise model (`NOISE_MODELS`), perturbation family "
        "(`PERTURBATIONS`), mixture `family+model`, or import path `pkg.mod:fn`",
        "noise.sigma": "entry scale σ of the noise (the paper's level)",
        "noise.eps": "instead of sigma: E rescaled to operator norm ‖E‖ = eps",
        "noise.eps_scaled": "instead of sigma: ‖E‖ = eps_scaled · λ_min · n^(-1/(p-1)) (Theorem "
        "3.1's scale)",
        "noise.scale": "`sigma` with noise.sigma, `opnorm` with eps / eps_scaled (inferred)",
        "noise.weight": "background weight w of a mixture: (1-w) F/‖F‖ + w B/‖B‖",
    },
)


class TensorKind(KindBase):
    """The ``tensor`` kind (no marker table: the default): a planted tensor plus noise, in
    blocks sized by the cost model; ``component`` (for ``v_hat``) as long as the largest n."""

    name = "tensor"
    marker = None
    all_variables: Mapping[str, Variable] = {**TENSOR_VARIABLES, V_HAT.name: V_HAT}
    dims: Mapping[str, Dim] = TENSOR_DIMS
    #: The spec grammar and its sweepable keys (docs/reference/spec.md lists them).
    schema: Mapping[str, Any] = TENSOR_SCHEMA
    axis_keys: Mapping[str, str] = AXIS_KEYS
    key_meanings: Mapping[str, str] = TENSOR_KEY_MEANINGS

    parse = staticmethod(tensor_spec_from_dict)
    mean_cost = staticmethod(tensor_mean_cost)
    compute_block = staticmethod(compute_tensor_block)
    #: Refuse tasks that would not fit a worker's memory (:func:`check_memory`).
    check_memory = staticmethod(check_memory)

    def instance_cost(self, spec: TensorSweepSpec, settings: InstanceSettings) -> float:
        """CPU seconds of one instance at ``settings`` on one idle core: the calibrated sweep
        cost model (:func:`sroa_dist.sweep.cost.sroa_seconds`) of its steps and norm bound."""
        return sroa_seconds(
            settings.method, settings.norm_method, settings.n, settings.p, settings.steps
        )

    def worker_memory(self, spec: TensorSweepSpec, layout: Layout) -> float:
        """Peak bytes of a worker at the sweep's most demanding task (:func:`task_memory`)."""
        return sum(worst_task_memory(spec, layout)[0].values())

    def extents(self, spec: TensorSweepSpec) -> tuple[int, int]:
        """``step``: the most SROA steps; ``component``: the largest n."""
        return spec.n_steps, int(max(spec.axes["tensor.n"].values))

    def variables(self, spec: TensorSweepSpec) -> Mapping[str, Variable]:
        """The cube's variables; ``v_hat`` with ``[output] vectors``."""
        return tensor_variables(spec.output.vectors)

    def provenance(self, spec: TensorSweepSpec) -> dict[str, Any]:
        """Root attrs of the settings that are not axes: the tensor family and noise scale."""
        return {
            "setting_basis": spec.tensor.basis,
            "setting_lambdas": json.dumps(spec.tensor.lambdas),
            "setting_noise_scale": spec.scale,
        }

    def advice(self, spec: TensorSweepSpec) -> list[str]:
        """See :func:`~sroa_dist.sweep.spec.base.replicate_advice` (weights drawn from a
        distribution differ)."""
        return replicate_advice(spec, isinstance(spec.tensor.lambdas, Mapping))

    def trial_draws(self, spec: TensorSweepSpec) -> list[str]:
        """Draw each user family of the ``noise.model`` axis (an import path) once, at the
        grid's smallest n, as a block would: its shape, symmetry and finiteness are checked
        before any worker runs it. Raises ``SpecError`` naming ``noise.model``."""
        dims, coords = spec.instance_grid()
        first = {d: values[0] for d, values in zip(dims, coords, strict=True)}
        if "n" in first:
            first["n"] = min(coords[dims.index("n")])
        lines = []
        for model in spec.axes["noise.model"].values:
            if ":" not in str(model):
                continue
            point = {**first, **({"noise": model} if "noise" in first else {})}
            try:
                inst = self.instance(spec, spec.settings_at(point), 0)
                if not np.all(np.isfinite(inst.T_hat)):
                    raise InputError(
                        "E has non-finite entries", "make the noise family return a finite E"
                    )
            except (ValueError, TypeError) as exc:
                raise SpecError(
                    spec.source,
                    "noise.model",
                    "a family whose draw is a symmetric, finite tensor of shape (n,)*p (its "
                    f"trial draw at n = {point.get('n', '?')}: {exc})",
                    model,
                    getattr(exc, "hint", "") or "fix the family's draw function",
                ) from None
            lines.append(f"user family {model!r}: one draw at n = {inst.T_hat.shape[0]} checked")
        return lines

    def certificate_tensors(
        self, spec: TensorSweepSpec, members: Sequence[tuple[InstanceSettings, int]]
    ) -> list[np.ndarray]:
        """``T_hat`` of instances sharing a group key, drawn by the block's own
        :func:`~.block.draw_group` (so verify and the block cannot drift apart): the tensors
        ``sroa-dist verify`` checks the stored certificates against."""
        return list(draw_group(spec, members).T_hat)

    def instance(
        self, spec: TensorSweepSpec, settings: InstanceSettings, replicate: int
    ) -> Instance:
        """The instance ``(settings, replicate)`` exactly as the block kernel solved it: ``T``,
        ``E`` (rescaled to its target norm), ``T_hat``, the weights and basis."""
        drawn = draw_group(spec, [(settings, replicate)])
        inst = drawn.instances[0]
        opnorm = settings.level_name != "sigma"
        return Instance(
            T_hat=drawn.T_hat[0],
            T=inst.T,
            E=drawn.E[0],
            lambdas=inst.lambdas,
            V=inst.V,
            eps_target=target_eps(settings, settings.level, inst.lambdas) if opnorm else None,
            E_norm=float(drawn.eps[0]) if opnorm else inst.E_norm,
        )


#: The registered tensor kind.
TENSOR = TensorKind()
