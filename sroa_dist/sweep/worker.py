"""Compute one block of sweep instances with the numerical core: numpy in, numpy out.

No Dask and no storage here, so a block can be computed (and tested) serially. Instances of a
block that share a grid point's solver settings go through one batched core call
(``sroa_batch`` / ``operator_norm_batch``); per-instance seed sequences make the result of each
instance independent of how the block was cut or batched.
"""

from __future__ import annotations

import functools
import math
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..perturbations import DEFAULT_WEIGHT, model_params
from .grid import MAX_BATCH_BYTES, BlockTask, InstanceSettings, instance_seed
from .spec import SweepSpec, solver_options, spec_from_dict

__all__ = ["BlockResult", "VARIABLES", "compute_block"]

# name -> (per-step?, dtype, fill, attrs). The cube's variables (docs/architecture.md).
VARIABLES: dict[str, tuple[bool, str, Any, dict[str, str]]] = {
    "lam_hat": (
        True,
        "f8",
        np.nan,
        {
            "long_name": "estimated weight lambda_hat_j returned by SROA step j",
            "units": "1",
            "paper": "Algorithm 1, line 3",
        },
    ),
    "lam_true": (
        True,
        "f8",
        np.nan,
        {"long_name": "weight of the true component matched to step j", "units": "1"},
    ),
    "lam_err": (
        True,
        "f8",
        np.nan,
        {
            "long_name": "|lambda_hat_j - lambda_pi(j)| after optimal (Hungarian) matching",
            "units": "1",
        },
    ),
    "vec_err": (
        True,
        "f8",
        np.nan,
        {
            "long_name": "||v_hat_j - v_pi(j)|| after optimal matching (even p: min over sign)",
            "units": "1",
        },
    ),
    "certified": (
        True,
        "bool",
        False,
        {
            "long_name": "global optimality of step j certified by the solver",
            "units": "1",
            "note": "False past the instance's last step",
        },
    ),
    "upper_bound": (
        True,
        "f8",
        np.nan,
        {"long_name": "valid upper bound of step j's objective max T_{j-1} x^p", "units": "1"},
    ),
    "thm31_lam_bound": (
        True,
        "f8",
        np.nan,
        {
            "long_name": "Theorem 3.1 bound on |lambda_hat_j - lambda_pi(j)|: 2 eps",
            "units": "1",
            "paper": "Theorem 3.1",
        },
    ),
    "thm31_vec_bound": (
        True,
        "f8",
        np.nan,
        {
            "long_name": "Theorem 3.1 bound on ||v_hat_j - v_pi(j)||: 20 eps / lambda_pi(j)",
            "units": "1",
            "paper": "Theorem 3.1",
        },
    ),
    "eps": (
        False,
        "f8",
        np.nan,
        {
            "long_name": "operator norm ||E|| of the perturbation (best value found)",
            "units": "1",
            "paper": "epsilon = ||E||",
        },
    ),
    "eps_lower": (
        False,
        "f8",
        np.nan,
        {"long_name": "certified lower bound of ||E||", "units": "1"},
    ),
    "eps_upper": (
        False,
        "f8",
        np.nan,
        {"long_name": "certified upper bound of ||E||", "units": "1"},
    ),
    "eps_certified": (
        False,
        "bool",
        False,
        {"long_name": "||E|| bracket certified tight", "units": "1"},
    ),
    "thm22_lam_bound": (
        False,
        "f8",
        np.nan,
        {
            "long_name": "Theorem 2.2 bound on |lambda_hat_1 - lambda_pi(1)|: eps",
            "units": "1",
            "paper": "Theorem 2.2",
        },
    ),
    "thm22_vec_bound": (
        False,
        "f8",
        np.nan,
        {
            "long_name": "Theorem 2.2 bound on ||v_hat_1 - v_pi(1)||: 10 (eps/lam + (eps/lam)^2)",
            "units": "1",
            "paper": "Theorem 2.2",
        },
    ),
    "solve_time": (
        False,
        "f8",
        np.nan,
        {
            "long_name": "seconds in the solvers for the instance (all SROA steps + ||E||)",
            "units": "s",
        },
    ),
}
V_HAT_ATTRS = {
    "long_name": "estimated component v_hat_j (column of SROA's vectors)",
    "units": "1",
    "note": "NaN past the instance's n and last step",
}


@dataclass
class BlockResult:
    """Arrays of one block (shape: block shape [+ step] [+ component]) and timings."""

    index: int
    data: dict[str, np.ndarray]
    kernel_time: float  # seconds inside numerical-core calls
    wall_time: float  # seconds for the whole block computation
    n_instances: int
    # ``[output] certificates``: each step's SOS certificate and the SROA steps needed to
    # rebuild the deflated tensors (sweep/certificates.py), written beside the store.
    certificates: dict[str, np.ndarray] | None = None


@functools.lru_cache(maxsize=16)
def _spec(spec_json: str) -> SweepSpec:
    import json

    return spec_from_dict(json.loads(spec_json), source="<block task>")


def allocate(task: BlockTask, vectors: bool) -> dict[str, np.ndarray]:
    """Output arrays of a block filled with the variables' fill values."""
    out = {}
    for name, (per_step, dtype, fill, _) in VARIABLES.items():
        shape = task.shape + ((task.n_steps,) if per_step else ())
        out[name] = np.full(shape, fill, dtype=dtype)
    if vectors:
        out["v_hat"] = np.full(task.shape + (task.n_steps, task.n_component), np.nan)
    return out


def compute_block(task: BlockTask) -> BlockResult:
    """Compute every instance of ``task`` (pure: the result depends only on the task)."""
    t_start = time.perf_counter()
    spec = _spec(task.spec_json)
    if "model" in spec.data:  # a model sweep (model_sweep builds on this module)
        from .model_sweep import compute_model_block

        return compute_model_block(task, spec)
    vectors = bool(spec.data["output"]["vectors"])
    out = allocate(task, vectors)
    groups: dict[tuple[Any, ...], list[tuple[tuple[int, ...], InstanceSettings, int]]] = (
        defaultdict(list)
    )
    for idx, settings, rep in task.instances(spec):
        groups[settings.group_key()].append((idx, settings, rep))
    kernel = 0.0
    certs: dict[str, np.ndarray] | None = {} if spec.data["output"]["certificates"] else None
    for members in groups.values():
        s = members[0][1]
        per_batch = max(1, MAX_BATCH_BYTES // (8 * s.n**s.p))
        for start in range(0, len(members), per_batch):
            chunk = members[start : start + per_batch]
            kernel += _compute_group(spec, chunk, out, vectors, certs, task.shape)
    n = math.prod(task.shape)
    return BlockResult(task.index, out, kernel, time.perf_counter() - t_start, n, certs)


def _target_eps(s: InstanceSettings, level: float, lambdas: np.ndarray) -> float:
    """The operator norm E is scaled to: ``eps``, or ``eps_scaled * lambda_min * n^{-1/(p-1)}``
    (Theorem 3.1's scale) for ``noise.eps_scaled``."""
    if s.level_name == "eps_scaled":
        return level * float(np.abs(lambdas).min()) * s.n ** (-1.0 / (s.p - 1))
    return level


@dataclass(frozen=True)
class DrawnGroup:
    """The instances of one group as the worker solves them: tensors, ‖E‖ and seeds."""

    instances: list[Any]
    T_hat: np.ndarray
    norm: Any  # OperatorNormResult (exact where the family states its norm)
    eps: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    lambdas: np.ndarray
    solve_seeds: tuple[np.random.SeedSequence, ...]


def draw_group(spec: SweepSpec, members: Sequence[tuple[InstanceSettings, int]]) -> DrawnGroup:
    """Draw the instances ``(settings, replicate)`` sharing a group key, as a sweep solves them.

    The one home of instance construction (seed children 0/1/2: instance draws, SROA starts,
    norm starts; rescaling E to its target norm), used by the block kernel and by
    ``sroa-dist verify``, which rebuilds the tensors a stored certificate speaks of.
    """
    import sroa_dist as core

    s = members[0][0]
    tensor, data = spec.data["tensor"], spec.data
    seeds = [instance_seed(spec.seed, st, rep) for st, rep in members]
    # Children 0/1/2: instance draws, SROA starts, norm starts (independent, fixed roles).
    inst_ss, solve_ss, norm_ss = zip(*(ss.spawn(3) for ss in seeds), strict=True)
    opnorm = s.level_name != "sigma"
    noise = data["noise"]
    params = model_params(noise.get("params"), s.noise)
    weight = noise.get("weight")
    weight = DEFAULT_WEIGHT if weight is None else weight
    insts = [
        core.make_instance(
            s.n,
            s.p,
            rank=s.rank,
            basis=tensor["basis"],
            lambdas=tensor["lambdas"],
            noise=s.noise,
            sigma=1.0 if opnorm else st.level,
            rng=np.random.default_rng(ss),
            noise_params=params,
            noise_weight=weight,
            noise_eps=functools.partial(_target_eps, s, st.level) if opnorm else st.level,
        )
        for (st, _), ss in zip(members, inst_ss, strict=True)
    ]
    Es = np.stack([inst.E for inst in insts])
    exact = [inst.E_norm for inst in insts]
    if all(x is not None for x in exact):
        # The family states ||E|| in closed form: no solver, an exact (certified) bracket.
        value = np.array(exact, dtype=float)
        nr = core.OperatorNormResult(
            value=value,
            lower=value.copy(),
            upper=value.copy(),
            certified=np.ones(len(value), dtype=bool),
            x=None,
            method="exact",
            solve_time=np.zeros(len(value)),
        )
    else:
        nr = core.operator_norm_batch(
            Es, s.norm_method, rng=list(norm_ss), **solver_options(data, s.norm_method, norm=True)
        )
    eps, lower, upper = (np.asarray(a, dtype=float) for a in (nr.value, nr.lower, nr.upper))
    lams = np.stack([inst.lambdas for inst in insts])
    if opnorm:
        # Rescale E to the target operator norm (homogeneous: the bracket scales with it).
        target = np.array(
            [_target_eps(s, st.level, lam) for (st, _), lam in zip(members, lams, strict=True)]
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(eps > 0, target / eps, 0.0)
        if np.any((eps == 0) & (target > 0)):
            raise ValueError("noise: a zero perturbation cannot be scaled to a positive eps")
        Es = Es * factor.reshape((-1,) + (1,) * s.p)
        eps, lower, upper = eps * factor, lower * factor, upper * factor
        T_hat = np.stack([inst.T for inst in insts]) + Es
    else:
        T_hat = np.stack([inst.T_hat for inst in insts])
    return DrawnGroup(insts, T_hat, nr, eps, lower, upper, lams, tuple(solve_ss))


def _compute_group(
    spec: SweepSpec,
    members: list[tuple[tuple[int, ...], InstanceSettings, int]],
    out: dict[str, np.ndarray],
    vectors: bool,
    certs: dict[str, np.ndarray] | None = None,
    block_shape: tuple[int, ...] = (),
) -> float:
    """Instances sharing (noise, n, p, rank, method, steps, norm method): batched core calls."""
    import sroa_dist as core

    s = members[0][1]
    data = spec.data
    t0 = time.perf_counter()
    drawn = draw_group(spec, [(st, rep) for _, st, rep in members])
    insts, T_hat, nr, solve_ss = drawn.instances, drawn.T_hat, drawn.norm, drawn.solve_seeds
    eps, lower, upper, lams = drawn.eps, drawn.lower, drawn.upper, drawn.lambdas
    res = core.sroa_batch(
        T_hat,
        rank=s.steps,
        method=s.method,
        rng=list(solve_ss),
        **({"certificate": True} if certs is not None else {}),
        **solver_options(data, s.method),
    )
    Vs = np.stack([inst.V for inst in insts])
    m = core.match(res, lams, Vs)
    kernel = time.perf_counter() - t0

    lam_matched = np.asarray(m.lam_matched, dtype=float)
    t22_lam, t22_vec = core.theorem_2_2_bounds(eps, lam_matched[:, 0])
    t31_lam, t31_vec = core.theorem_3_1_bounds(eps[:, None], lam_matched)
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
        from .certificates import collect

        collect(certs, [idx for idx, _, _ in members], block_shape, res)
    return kernel
