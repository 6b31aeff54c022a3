"""The tensor kind's block kernel: draw each instance, solve it with batched core calls and
fill the block's arrays. Numpy in, numpy out; no Dask, no storage.

Instances of a block that share a grid point's solver settings go through one batched core call
(``sroa_batch`` / ``operator_norm_batch``); per-instance seed sequences make the result of each
instance independent of how the block was cut or batched. :func:`draw_group` is the one home
of instance construction, used by the kernel, by ``sroa-dist verify`` and by
:func:`~sroa_dist.sweep.store.instance_of`.
"""

from __future__ import annotations

import functools
import math
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sroa_dist.decomposition import sroa_batch
from sroa_dist.metrics import match, theorem_2_2_bounds, theorem_3_1_bounds
from sroa_dist.norms import OperatorNormResult, operator_norm_batch, scale_factors
from sroa_dist.problems import DEFAULT_WEIGHT, PROVEN_NORMS, make_instance, model_params
from sroa_dist.sweep.cube import Variable
from sroa_dist.sweep.layout import BlockResult, BlockTask, allocate

from .spec import InstanceSettings, TensorSweepSpec
from .variables import TENSOR_VARIABLES, V_HAT, eps_scaled_target

__all__ = [
    "MAX_BATCH_BYTES",
    "DrawnGroup",
    "batch_instances",
    "collect",
    "compute_tensor_block",
    "draw_group",
    "target_eps",
    "tensor_variables",
]

#: Largest tensor stack (bytes of T̂) handed to one core call; bounds worker memory, does not
#: change results (batched calls equal one-at-a-time calls bit for bit).
MAX_BATCH_BYTES = 64 * 2**20


def batch_instances(n: int, p: int) -> int:
    """Instances of one grid point per core call: as many as fit in MAX_BATCH_BYTES (>= 1)."""
    return max(1, MAX_BATCH_BYTES // (8 * int(n) ** int(p)))


def tensor_variables(vectors: bool = False) -> Mapping[str, Variable]:
    """The variables a tensor sweep writes, in documented order; ``v_hat`` with ``vectors``."""
    return {**TENSOR_VARIABLES, V_HAT.name: V_HAT} if vectors else TENSOR_VARIABLES


def compute_tensor_block(task: BlockTask, spec: TensorSweepSpec) -> BlockResult:
    """Compute every instance of ``task`` (pure: the result depends only on the task)."""
    t_start = time.perf_counter()
    vectors = spec.output.vectors
    out = allocate(task, tensor_variables(vectors))
    groups: dict[tuple[Any, ...], list[tuple[tuple[int, ...], InstanceSettings, int]]] = (
        defaultdict(list)
    )
    for idx, settings, rep in task.instances(spec):
        groups[settings.group_key()].append((idx, settings, rep))
    kernel = 0.0
    certs: dict[str, np.ndarray] | None = {} if spec.output.certificates else None
    for members in groups.values():
        s = members[0][1]
        per_batch = batch_instances(s.n, s.p)
        for start in range(0, len(members), per_batch):
            chunk = members[start : start + per_batch]
            kernel += _compute_group(spec, chunk, out, vectors, certs, task.shape)
    n = math.prod(task.shape)
    return BlockResult(task.index, out, kernel, time.perf_counter() - t_start, n, certs)


def target_eps(s: InstanceSettings, level: float, lambdas: np.ndarray) -> float:
    """The operator norm E is scaled to: ``eps``, or for ``noise.eps_scaled`` the norm that
    value means (:func:`~sroa_dist.sweep.cube.eps_scaled_target`)."""
    if s.level_name == "eps_scaled":
        return eps_scaled_target(level, float(np.abs(lambdas).min()), s.n, s.p)
    return level


@dataclass(frozen=True)
class DrawnGroup:
    """The instances of one group as the worker solves them: tensors, ‖E‖ and seeds."""

    instances: list[Any]
    T_hat: np.ndarray
    #: The perturbations as added to ``T`` (rescaled to their target norm where asked).
    E: np.ndarray
    norm: Any  # OperatorNormResult (exact where the family states its norm)
    eps: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    lambdas: np.ndarray
    solve_seeds: tuple[np.random.SeedSequence, ...]


def draw_group(
    spec: TensorSweepSpec, members: Sequence[tuple[InstanceSettings, int]]
) -> DrawnGroup:
    """Draw the instances ``(settings, replicate)`` sharing a group key, as a sweep solves them.

    The one home of instance construction (seed children 0/1/2: instance draws, SROA starts,
    norm starts; rescaling E to its target norm), used by the block kernel and by
    ``sroa-dist verify``, which rebuilds the tensors a stored certificate speaks of.
    """
    s = members[0][0]
    tensor, noise = spec.tensor, spec.noise
    seeds = [st.seed(spec.seed, rep) for st, rep in members]
    # Children 0/1/2: instance draws, SROA starts, norm starts (independent, fixed roles).
    inst_ss, solve_ss, norm_ss = zip(*(ss.spawn(3) for ss in seeds), strict=True)
    opnorm = s.level_name != "sigma"
    params = model_params(noise.params, s.noise)
    weight = DEFAULT_WEIGHT if noise.weight is None else noise.weight
    insts = [
        make_instance(
            s.n,
            s.p,
            rank=s.rank,
            basis=tensor.basis,
            lambdas=tensor.lambdas,
            noise=s.noise,
            sigma=1.0 if opnorm else st.level,
            rng=np.random.default_rng(ss),
            noise_params=params,
            noise_weight=weight,
            noise_eps=functools.partial(target_eps, s, st.level) if opnorm else st.level,
        )
        for (st, _), ss in zip(members, inst_ss, strict=True)
    ]
    Es = np.stack([inst.E for inst in insts])
    exact = [inst.E_norm for inst in insts]
    if all(x is not None for x in exact):
        # The family states ||E|| in closed form: no solver. The bracket is the stated value;
        # it is certified only where the package proves that closed form (a user's family
        # only claims it, and a false claim must not make Theorem 2.2 "violations").
        value = np.array(exact, dtype=float)
        proven = s.noise in PROVEN_NORMS
        nr = OperatorNormResult(
            value=value,
            lower=value.copy(),
            upper=value.copy(),
            certified=np.full(len(value), proven, dtype=bool),
            x=None,
            method="exact" if proven else "claimed",
            solve_time=np.zeros(len(value)),
        )
    else:
        nr = operator_norm_batch(
            Es, s.norm_method, rng=list(norm_ss), **spec.options_for(s.norm_method, norm=True)
        )
    eps, lower, upper = (np.asarray(a, dtype=float) for a in (nr.value, nr.lower, nr.upper))
    lams = np.stack([inst.lambdas for inst in insts])
    if opnorm:
        # Rescale E to the target operator norm (homogeneous: the bracket scales with it).
        target = np.array(
            [target_eps(s, st.level, lam) for (st, _), lam in zip(members, lams, strict=True)]
        )
        factor = scale_factors(eps, target)  # the package's one rescaling rule
        Es = Es * factor.reshape((-1,) + (1,) * s.p)
        eps, lower, upper = eps * factor, lower * factor, upper * factor
        T_hat = np.stack([inst.T for inst in insts]) + Es
    else:
        T_hat = np.stack([inst.T_hat for inst in insts])
    return DrawnGroup(insts, T_hat, Es, nr, eps, lower, upper, lams, tuple(solve_ss))


def _start_counts(n_best: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    """Starts that reached each step's best value as floats, NaN where unknown (``-1``)."""
    if n_best is None:
        return np.full(shape, np.nan)
    counts = np.asarray(n_best, dtype=float)
    return np.where(counts < 0, np.nan, counts)


def _compute_group(
    spec: TensorSweepSpec,
    members: list[tuple[tuple[int, ...], InstanceSettings, int]],
    out: dict[str, np.ndarray],
    vectors: bool,
    certs: dict[str, np.ndarray] | None = None,
    block_shape: tuple[int, ...] = (),
) -> float:
    """Instances sharing (noise, n, p, rank, method, steps, norm method): batched core calls."""
    s = members[0][1]
    t0 = time.perf_counter()
    drawn = draw_group(spec, [(st, rep) for _, st, rep in members])
    insts, T_hat, nr, solve_ss = drawn.instances, drawn.T_hat, drawn.norm, drawn.solve_seeds
    eps, lower, upper, lams = drawn.eps, drawn.lower, drawn.upper, drawn.lambdas
    res = sroa_batch(
        T_hat,
        rank=s.steps,
        method=s.method,
        rng=list(solve_ss),
        **({"certificate": True} if certs is not None else {}),
        **spec.options_for(s.method),
    )
    Vs = np.stack([inst.V for inst in insts])
    m = match(res, lams, Vs)
    kernel = time.perf_counter() - t0

    lam_matched = np.asarray(m.lam_matched, dtype=float)
    t22_lam, t22_vec = theorem_2_2_bounds(eps, lam_matched[:, 0])
    t31_lam, t31_vec = theorem_3_1_bounds(eps[:, None], lam_matched)
    steps = s.steps
    solve_time = np.asarray(res.solve_time, dtype=float).sum(axis=1) + np.asarray(
        nr.solve_time, dtype=float
    )
    per_step = {
        "lam_hat": res.lambdas,
        "lam_true": lam_matched,
        "lam_err": m.lam_err,
        "vec_err": m.vec_err,
        "certified": res.certified,
        "upper_bound": res.upper_bounds,
        "n_best": _start_counts(res.n_best, res.lambdas.shape),
        "confirmed": np.zeros(res.lambdas.shape, bool) if res.confirmed is None else res.confirmed,
        "thm31_lam_bound": t31_lam,
        "thm31_vec_bound": t31_vec,
    }
    per_inst = {
        "eps": eps,
        "eps_lower": lower,
        "eps_upper": upper,
        "eps_certified": nr.certified,
        "thm22_lam_bound": t22_lam,
        "thm22_vec_bound": t22_vec,
        "solve_time": solve_time,
    }
    for b, (idx, _, _) in enumerate(members):
        for name, arr in per_step.items():
            out[name][idx][:steps] = arr[b]
        for name, arr in per_inst.items():
            out[name][idx] = arr[b]
        if vectors:
            out["v_hat"][idx][:steps, : s.n] = np.asarray(res.vectors[b]).T
    if certs is not None:
        collect(certs, [idx for idx, _, _ in members], block_shape, res)
    return kernel


def collect(
    records: dict[str, np.ndarray],
    indices: Sequence[tuple[int, ...]],
    block_shape: tuple[int, ...],
    res: Any,
) -> None:
    """Add the certificates of a batched SROA result (instances at ``indices`` of the block)
    to a block's certificate records (written beside the store, see
    :mod:`sroa_dist.sweep.store.verify`)."""
    for b, idx in enumerate(indices):
        key = f"i{int(np.ravel_multi_index(idx, block_shape))}_"
        records[key + "lam"] = np.asarray(res.lambdas[b], dtype=float)
        records[key + "x"] = np.asarray(res.vectors[b], dtype=float).T
        records[key + "upper"] = np.asarray(res.upper_bounds[b], dtype=float)
        records[key + "certified"] = np.asarray(res.certified[b], dtype=bool)
        for j, step in enumerate(res.steps):
            cert = None if step.certificate is None else step.certificate[b]
            if cert is not None:
                for name, arr in cert.to_arrays().items():
                    records[f"{key}s{j}_{name}"] = arr
