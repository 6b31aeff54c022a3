"""Adaptive first-crossing search for the largest tolerable perturbation ε* of one instance:
:func:`find_threshold` draws the instance, runs one SROA per ε (with every local step checked
against a set of check starts and redone where it was not global) and hands the verdicts to
the scan and bisection of :mod:`sroa_dist.studies.first_crossing`.

Core module: numpy and the numerical core only (no Dask, xarray or zarr).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import pickle
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..decomposition import SROAResult, StepCheckpoint, sroa_batch
from ..errors import InputError, InputTypeError
from ..methods import check_options, resolve_norm_method, revision_options
from ..metrics import match
from ..norms import operator_norm, scale_factors
from ..problems import (
    BASES,
    DEFAULT_WEIGHT,
    check_model,
    draw_lambdas,
    make_instance,
    structured_tensor,
)
from ..threads import single_blas
from .criteria import RunCriterion, check_criterion_option, get_run_criterion
from .first_crossing import (
    K_SECTION,
    SCAN_PHASES,
    ThresholdResult,
    check_k_section,
    check_range,
    first_crossing,
)

__all__ = [
    "CERTIFY_ENDS_MAX_N",
    "DEFAULT_C",
    "DENSE_BYTES_CAP",
    "SEARCH_REVISION",
    "default_lambdas",
    "find_threshold",
    "search_options",
]

#: Largest dense tensor (bytes of one float64 ``n^p`` array) that :func:`find_threshold` forms
#: when ``matrix_free=None``: above it a family with a factored form (the coherent tilt) runs
#: matrix-free. 256 MiB: the dense search holds about four such arrays (T, E, T + E and the
#: solver's workspace), which is about 1 GiB, and a p = 4, n = 64 tensor (134 MB) still fits.
DENSE_BYTES_CAP = 256 * 2**20
#: Weight of the smallest component in the default weights (:func:`default_lambdas`).
SMALLEST_WEIGHT = 0.95
#: The level of ``value`` (multiple of ε) and ``recovery`` (radius) when ``c`` is not given.
DEFAULT_C = 0.5
#: ``certify_ends=True``'s budget: the largest n per order p at which the SROA at each bracket
#: end is run again with certified steps (the moment relaxation's cost: a certified p = 3 step
#: takes seconds at n = 24-32, so an SROA at each end minutes; p = 4's relaxation is larger).
CERTIFY_ENDS_MAX_N: Mapping[int, int] = MappingProxyType({3: 32, 4: 20})
#: The algorithm revision of :func:`find_threshold`'s defaults, raised when a default changes
#: its results; a threshold sweep store records it and keeps computing with its own.
#: 2: every local step checked and redone from a higher check point, a second
#: scan phase (:mod:`sroa_dist.studies.first_crossing`).
SEARCH_REVISION = 2
#: The layout of :meth:`_Evaluator.journal_key`'s text, raised when it changes (old journal
#: entries are then simply not found, and their evaluations run again).
JOURNAL_KEY_FORMAT = 1
#: Earlier search revisions -> the keyword values that reproduce them.
SEARCH_LEGACY: Mapping[int, Mapping[str, Any]] = MappingProxyType(
    {1: MappingProxyType({"global_check": False, "redo": False, "scan_phases": 1})}
)


def search_options(revision: int | None) -> dict[str, Any]:
    """The keyword values of :func:`find_threshold` that compute search revision ``revision``
    (``None``: the current one, no keywords). ``ValueError`` for a revision this code cannot
    reproduce."""
    if revision is None or revision == SEARCH_REVISION:
        return {}
    if revision not in SEARCH_LEGACY:
        known = sorted({*SEARCH_LEGACY, SEARCH_REVISION})
        raise InputError(
            f"revision: search revision {revision!r} cannot be reproduced by this code (known "
            f"revisions: {known})",
            "use one of the known revisions, or none for the current one",
        )
    return dict(SEARCH_LEGACY[revision])


def default_lambdas(n: int) -> np.ndarray:
    """Weights used when ``lambdas=None``: ``1`` for every component but the last, which gets
    :data:`SMALLEST_WEIGHT` (0.95).

    One distinct smallest weight makes the coherent tilt's target (the component of smallest
    ``|λ|``) unique and the one SROA deflates last, so the deflation residuals add up on it;
    the weights are fixed, so replicates differ only through the basis and the solver's starts.
    The same default serves every family, which keeps thresholds of families comparable.
    """
    if n < 2:
        raise InputError(f"n: expected at least 2 components, received {n}", "give n >= 2")
    return np.r_[np.ones(n - 1), SMALLEST_WEIGHT]


def _seed(rng: Any) -> np.random.SeedSequence:
    """A fresh SeedSequence (no children spawned yet) from a seed-like or a Generator."""
    if isinstance(rng, np.random.SeedSequence):
        return np.random.SeedSequence(rng.entropy, spawn_key=rng.spawn_key, pool_size=rng.pool_size)
    if isinstance(rng, np.random.Generator):
        return np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())
    if rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)):
        return np.random.SeedSequence(None if rng is None else int(rng))
    raise InputError(
        f"rng: expected None, an int, a SeedSequence or a Generator, received {rng!r}",
        "e.g. rng=1 or rng=numpy.random.default_rng(1)",
    )


def _copy(ss: np.random.SeedSequence) -> np.random.SeedSequence:
    # Generators built from one SeedSequence object would advance its spawn counter; a copy
    # per evaluation gives every ε exactly the same streams.
    return np.random.SeedSequence(ss.entropy, spawn_key=ss.spawn_key, pool_size=ss.pool_size)


@single_blas
def find_threshold(
    n: int,
    p: int,
    *,
    family: str = "coherent-tilt",
    lambdas: ArrayLike | Mapping[str, Any] | None = None,
    V: ArrayLike | str | None = None,
    criterion: str = "value",
    c: float | None = None,
    radius: float | None = None,
    method: str = "sshopm",
    options: Mapping[str, Any] | None = None,
    eps_range: tuple[float, float] = (0.02, 1.5),
    rtol: float = 0.01,
    params: Mapping[str, Any] | None = None,
    rng: Any = None,
    matrix_free: bool | None = None,
    revisions: Mapping[str, int] | None = None,
    global_check: bool = True,
    redo: bool = True,
    scan_phases: int = SCAN_PHASES,
    certify_ends: bool = False,
    k_section: int = K_SECTION,
    executor: Any = None,
) -> ThresholdResult:
    """First ε at which SROA on ``T̂ = Σ λ_i v_i^{⊗p} + E``, ``‖E‖ = ε``, fails a criterion.

    One instance (basis, weights, perturbation direction, solver starts) is drawn once; every
    ε evaluated rescales the same ``E`` to ``‖E‖ = ε`` and runs one full SROA (``n`` steps) with
    the same starts, so the threshold is a property of that instance. The search is
    :func:`~sroa_dist.studies.first_crossing.first_crossing` (two scan phases ×1.25 upward, offset
    by half the factor, :data:`~sroa_dist.studies.first_crossing.CONTINUE_POINTS` more points past
    the first failure, then bisection to ``rtol``).

    The paper's SROA takes global steps; a local method's step can be a lower local maximum,
    and then the verdict at that ε says where the local method went, not where SROA fails.
    So every step that is not certified is checked (``global_check``,
    :mod:`sroa_dist.decomposition.global_check`) and, where the check found a higher value, redone
    from it (``redo``), so that the SROA continues on the global branch; the trace records each
    evaluation's largest gap and redone steps, and the result names the verdicts that still rest on
    a non-global step (``artefacts``) apart from true non-monotonicity.

    The instance is built as a tensor sweep builds it: the seed's children 0/1/2 draw the
    instance (:func:`sroa_dist.make_instance` with σ = 1), the SROA starts and the norm's
    starts; ``E`` is scaled by ``ε / ‖E‖`` (``‖E‖`` exact when the family states it, else
    computed once with the sweep's default norm method) and added to ``T``. Passing the
    sweep's per-instance ``SeedSequence`` as ``rng`` (with its basis and weights) gives the
    sweep's tensor at every ε.

    Parameters
    ----------
    n, p : int
        Dimension and order.
    family : str
        Perturbation model (:func:`sroa_dist.draw_perturbation`: a family, an i.i.d. model or a
        mixture ``"FAMILY+BACKGROUND"``), e.g. ``"coherent-tilt"``.
    lambdas : array_like, number, distribution table or None
        Component weights (:func:`sroa_dist.make_instance`); ``None``: :func:`default_lambdas`.
    V : (n, n) array_like or str, optional
        Orthonormal basis, or its name in :data:`sroa_dist.problems.BASES`: ``"identity"``
        (nothing drawn for it) or ``"random"``; ``None`` (as ``"random"``) draws a Haar
        orthonormal one from ``rng``. The coherent tilt's first crossing is a property of the
        family, not of its basis; the identity spares a matrix-free search the basis' products
        with every vector (the cost of up to n more deflation terms per step).
    criterion : {"value", "recovery", "theorem"}
        Success test of a run (:mod:`sroa_dist.studies.criteria`).
    c : float, optional
        ``value``: the multiple of ε allowed on ``max |λ̂ − λ|``; ``recovery``: the radius on
        ``max ‖v̂ − v‖`` (or give ``radius``); both default to :data:`DEFAULT_C`.
        ``theorem``: its value bound ``c·ε`` (default 2, Theorem 3.1's).
    radius : float, optional
        ``theorem``: the vector bound on ``‖v̂_j − v_j‖`` (default Theorem 3.1's ``20ε/λ_j``,
        which cannot bind for ε ≥ 0.1; studies use ``c = 0.5, radius = 0.3``,
        :data:`sroa_dist.studies.criteria.STUDY_THEOREM`). ``recovery``: its radius.
    method : str
        Rank-one method of every SROA step (:data:`sroa_dist.METHODS`).
    options : mapping, optional
        The method's options for every step (e.g. ``{"budget": "aghkt"}`` for ``power``),
        checked as :func:`sroa_dist.rank_one` checks them; an option the method's revision
        pins (``revisions``) is refused.
    eps_range : (float, float)
        Scan range of ``‖E‖``.
    rtol : float
        Relative width of the final bracket.
    params : mapping, optional
        Parameters of the perturbation family (``noise.params`` of a spec).
    rng : None, int, SeedSequence or Generator
        Seed of the instance and the solver starts.
    matrix_free : bool or None
        Run every SROA on :func:`sroa_dist.structured_tensor` instead of the dense tensor
        (only for a family with a factored form, e.g. ``"coherent-tilt"``; local methods
        only, implicit deflation, no step certified). ``None``: matrix-free exactly when the
        family has a factored form and one dense ``n^p`` array would exceed
        :data:`DENSE_BYTES_CAP`. ``V`` and the weights are drawn from the same stream as the
        dense path draws them (the tilt itself draws nothing), so both paths search the same
        tensor; the solver's starts differ (implicit deflation warm-starts each step).
    revisions : mapping, optional
        Method -> algorithm revision to compute with (:attr:`sroa_dist.methods.Method.
        revision`), for the SROA steps and the norm; ``None`` or a method not named: the
        current one. A threshold sweep passes its store's, so a resumed store keeps them.
    global_check, redo : bool
        Check every uncertified step and redo the non-global ones (see above;
        :func:`sroa_dist.sroa`). Both on by default; search revision 1 had neither.
    scan_phases : {1, 2}
        Scan phases (:data:`~sroa_dist.studies.first_crossing.SCAN_PHASES`; revision 1 had one).
    certify_ends : bool
        Where ``n`` is within :data:`CERTIFY_ENDS_MAX_N` of ``p`` (dense tensors), run the
        SROA at both bracket ends again with certified steps and record whether the bracket
        stands (``certified_ends``).
    k_section : int
        Points evaluated per round of the search (:func:`~sroa_dist.studies.first_crossing.
        first_crossing`): ``k`` scan points a round, ``k`` interior points per refinement
        round. 1 (the default) is the sequential search; more shortens a search on ``k``
        evaluators at the cost of some extra evaluations. The trace and bracket depend on
        ``k_section``, never on the executor.
    executor : object with ``map(fn, iterable)``, optional
        Runs a round's evaluations at once, e.g. a :class:`concurrent.futures.
        ProcessPoolExecutor`, a Dask ``distributed.Client`` (its futures gathered) or the
        sweep's pool of cluster tasks; ``None``: one after the other in this thread. An
        executor with ``map`` gets every round, one point included (a sweep's pool replays the
        evaluations its store journalled, :meth:`_Evaluator.journal_key`); a Dask client only
        rounds of two or more. Useful for speed only with ``k_section > 1``.

    Returns
    -------
    ThresholdResult
        ``reached`` False (``eps_star = inf``) when every ε in range passed.
    """
    crit = get_run_criterion(criterion)
    check_range(eps_range, rtol)
    check_k_section(k_section)
    level, crit_params, c_out, radius_out = _criterion_levels(crit, c, radius)
    if isinstance(n, bool) or int(n) != n or n < 2:
        raise InputError(f"n: expected an integer >= 2, received {n!r}", "give an integer n >= 2")
    if isinstance(p, bool) or int(p) != p or p < 3:  # before int(): p=2.5 was told "received 2"
        raise InputError(
            f"p: expected an integer tensor order >= 3, received {p!r}", "give an integer p >= 3"
        )
    for name, flag in (
        ("global_check", global_check),
        ("redo", redo),
        ("certify_ends", certify_ends),
    ):
        if not isinstance(flag, (bool, np.bool_)):
            raise InputTypeError(
                f"{name}: expected true or false, received {flag!r}", f"pass {name}=True or False"
            )
    n, p = int(n), int(p)
    lam_spec = default_lambdas(n) if lambdas is None else lambdas
    revisions = dict(revisions or {})
    pinned = revision_options(method, revisions.get(method))
    given = check_options(method, dict(options or {}))
    given = {k: v for k, v in given.items() if k in (options or {})}
    clash = sorted(set(given) & set(pinned))
    if clash:
        raise InputError(
            f"options: {clash} are fixed by {method!r} revision {revisions.get(method)}",
            "drop them, or compute with the current revision",
        )
    options = {**pinned, **given}
    checks = {"global_check": bool(global_check), "redo": bool(redo and global_check)}
    inst_ss, solve_ss, norm_ss = _seed(rng).spawn(3)
    ev = _Evaluator(
        n=n,
        p=p,
        family=family,
        lam_spec=lam_spec,
        V=_basis_argument(V),
        params=None if params is None else dict(params),
        inst_ss=inst_ss,
        norm_ss=norm_ss,
        solve_ss=solve_ss,
        method=method,
        revisions=revisions,
        options=options,
        checks=checks,
        criterion=crit.name,
        level=level,
        crit_params=crit_params,
        matrix_free=_use_matrix_free(matrix_free, n, p, family, params),
    )
    draw = ev.pin()  # builds (and checks) the instance here, before any evaluation
    steps = [0, 0]  # certified steps, all steps

    def evaluate_many(points: list[float]) -> list[tuple]:
        # The outcomes are in the order of ``points`` however the executor ran them.
        if executor is not None and len(points) > 1 and hasattr(executor, "gather"):
            # A Dask client (duck-typed: the core imports no Dask): map gives futures.
            outs = list(executor.gather(executor.map(ev, points, pure=False)))
        elif executor is not None and not hasattr(executor, "gather"):
            # Every round, one point included: a sweep's pool replays the evaluations its
            # store journalled (ev.journal_key) and runs a single point in this thread.
            outs = list(executor.map(ev, points))
        else:
            outs = [ev(eps) for eps in points]
        for o in outs:
            steps[0] += o[3]
            steps[1] += o[4]
        return [o[:3] for o in outs]

    out = first_crossing(
        evaluate_many=evaluate_many,
        eps_range=eps_range,
        rtol=rtol,
        criterion=crit.name,
        c=c_out,
        radius=radius_out,
        scan_phases=scan_phases,
        k_section=k_section,
    )
    if ev.matrix_free:
        return dataclasses.replace(out, certified_fraction=0.0)
    frac = steps[0] / steps[1] if steps[1] else float("nan")
    out = dataclasses.replace(out, certified_fraction=float(frac))
    if certify_ends and out.reached and n <= CERTIFY_ENDS_MAX_N.get(p, 0):
        verdict = _certified_verdicts(out, draw, n, crit, level, crit_params, solve_ss)
        out = dataclasses.replace(out, certified_ends=verdict)
    return out


@dataclasses.dataclass(frozen=True)
class _Evaluator:
    """One search's evaluation at any ε: ``self(eps) -> (metric, passed, extras, certified
    steps, steps)``, one full SROA of the search's instance at ``‖E‖ = eps``.

    A recipe (sizes, seeds, settings), not the tensors, so that it pickles small and runs on any
    process of a pool or a cluster: each process builds the instance from the seeds once
    (:func:`_instance_of`, cached) and every evaluation is a pure function of the recipe and ε,
    whichever process runs it and however often (a cluster may run a task twice).
    """

    n: int
    p: int
    family: str
    lam_spec: Any
    V: np.ndarray | str | None
    params: Mapping[str, Any] | None
    inst_ss: np.random.SeedSequence
    norm_ss: np.random.SeedSequence
    solve_ss: np.random.SeedSequence
    method: str
    revisions: Mapping[str, int]
    options: Mapping[str, Any]
    checks: Mapping[str, bool]
    criterion: str
    level: float | None
    crit_params: Mapping[str, Any]
    matrix_free: bool

    def pin(self) -> Any:
        """Build the instance in this process and keep it on this object (not pickled): the
        calling process's evaluations use it and it goes with the search."""
        built = _build_instance(self._key())
        object.__setattr__(self, "_local", built)
        return built

    def instance(self) -> Any:
        """The matrix-free ``(lambdas, V)`` or the dense :class:`_Draw`: the pinned one, else
        the one this process built for the search (cached)."""
        local = self.__dict__.get("_local")
        return local if local is not None else _instance_of(self._key())

    def __getstate__(self) -> dict[str, Any]:
        # A pool's process rebuilds the instance from the seeds instead of receiving tensors.
        state = dict(self.__dict__)
        state.pop("_local", None)
        return state

    def journal_key(self, eps: float) -> str:
        """A digest naming this evaluation at ``eps`` and nothing else: every field of the
        recipe (sizes, family, weights, basis, parameters, seeds, method, its revisions and
        options, the check settings, the criterion and its levels, matrix-free or not), ``eps``
        in its exact bits, and :data:`SEARCH_REVISION` and :data:`JOURNAL_KEY_FORMAT`. An
        outcome stored under it (a sweep's evaluation journal) is this call's outcome; a
        journal never meets the same key for another evaluation."""
        recipe = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        text = json.dumps(
            {
                "format": JOURNAL_KEY_FORMAT,
                "search_revision": SEARCH_REVISION,
                "recipe": _canonical(recipe),
                "eps": float(eps).hex(),
            },
            sort_keys=True,
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def _key(self) -> bytes:
        return pickle.dumps(
            (
                self.n,
                self.p,
                self.family,
                self.lam_spec,
                self.V,
                self.params,
                self.inst_ss,
                self.norm_ss,
                self.method,
                self.revisions,
                self.matrix_free,
            )
        )

    def __call__(self, eps: float) -> tuple:
        return self.checkpointed(eps, None)

    @single_blas
    def checkpointed(self, eps: float, checkpoint: StepCheckpoint | None) -> tuple:
        """The evaluation at ``eps`` with its SROA's steps saved to (and, where it holds them,
        continued from) ``checkpoint``: the same outcome as :meth:`__call__`, bit for bit
        (a sweep's evaluation journal gives each evaluation its own)."""
        crit = get_run_criterion(self.criterion)
        opts = {**self.checks, **self.options}
        rng = [_copy(self.solve_ss)]
        if self.matrix_free:
            lam, basis = self.instance()
            op = structured_tensor(
                self.p, lam, V=basis, family=self.family, eps=eps, params=self.params
            )
            res = sroa_batch(
                op.as_batch(), self.n, self.method, rng=rng, checkpoint=checkpoint, **opts
            )
        else:
            T, E, lam, basis = self.instance().scaled(eps)
            res = sroa_batch(
                (T + E)[None], self.n, self.method, rng=rng, checkpoint=checkpoint, **opts
            )
        m = match(res, lam[None], basis[None])
        metric, ok = crit.evaluate(
            m.lam_err[0], m.vec_err[0], eps, m.lam_matched[0], self.level, **self.crit_params
        )
        extras = _extras(res[0], m.lam_err[0], m.vec_err[0])
        return metric, ok, extras, int(np.sum(res.certified)), int(np.size(res.certified))


def _basis_argument(V: ArrayLike | str | None) -> np.ndarray | str | None:
    """``V`` as a search keeps it: None for a random basis (by either spelling, so a search
    on a random basis keeps its journal keys), a basis name, or the array."""
    if V is None or (isinstance(V, str) and V == "random"):
        return None
    if isinstance(V, str):
        if V not in BASES:
            raise InputError(
                f"V: expected an (n, n) orthonormal array or a basis name, one of "
                f"{sorted(BASES)}; received {V!r}",
                'e.g. V="identity"',
            )
        return V
    return np.asarray(V, dtype=float)


def _canonical(value: Any) -> Any:
    """JSON stand-in of a recipe field for :meth:`_Evaluator.journal_key`: floats by their
    exact bits, arrays with their dtype and shape, seeds by what they draw from."""
    if isinstance(value, np.random.SeedSequence):
        return {
            "seed_sequence": [
                value.entropy if isinstance(value.entropy, int) else list(value.entropy),
                list(value.spawn_key),
                value.pool_size,
            ]
        }
    if isinstance(value, np.ndarray):
        arr = np.ascontiguousarray(value)
        return {"array": [arr.dtype.str, list(arr.shape), arr.tobytes().hex()]}
    if isinstance(value, np.generic):
        return _canonical(value.item())
    if isinstance(value, float):
        return {"float": value.hex()}
    if isinstance(value, Mapping):
        return {"mapping": sorted((str(k), _canonical(v)) for k, v in value.items())}
    if isinstance(value, (list, tuple)):
        return {"sequence": [_canonical(v) for v in value]}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return {"repr": repr(value)}


def _build_instance(key: bytes) -> Any:
    """The instance of a pickled :meth:`_Evaluator._key`: ``(lambdas, V)`` matrix-free, else
    the dense :class:`_Draw`."""
    n, p, family, lam_spec, V, params, inst_ss, norm_ss, method, revisions, mf = pickle.loads(key)
    if mf:
        gen = np.random.default_rng(_copy(inst_ss))
        # make_instance's draw order: the basis (unless given), then the weights.
        if V is None or isinstance(V, str):
            basis = BASES[V or "random"](n, n, rng=gen)
        else:
            basis = np.asarray(V, dtype=float)
        return draw_lambdas(lam_spec, n, rng=gen), basis
    return _Draw(n, p, family, lam_spec, V, params, inst_ss, norm_ss, method, revisions)


#: A pool's process draws a search's instance once for all the evaluations it serves; two
#: entries, so that two searches sharing a process (threads of a Dask worker) do not evict
#: each other at every round.
_instance_of = functools.lru_cache(maxsize=2)(_build_instance)


def _criterion_levels(
    crit: RunCriterion, c: float | None, radius: float | None
) -> tuple[float | None, dict[str, Any], float | None, float | None]:
    """``(level, metric parameters, c, radius)`` of a criterion from ``c`` and ``radius``
    (checked; a ``ValueError`` naming the argument)."""
    for name, v in (("c", c), ("radius", radius)):
        if v is not None:
            check_criterion_option(name, v)
    if crit.level_name is None:  # theorem: value bound c·ε and vector bound radius
        c_out = float(c) if c is not None else float(crit.params["c"])
        r_out = None if radius is None else float(radius)
        return None, {"c": c_out, "radius": r_out}, c_out, r_out
    if crit.level_name == "radius":
        if c is not None and radius is not None and float(c) != float(radius):
            raise InputError(
                f"radius: criterion 'recovery' takes one radius; received c={c!r} and "
                f"radius={radius!r}",
                "give radius only",
            )
        level = float(radius if radius is not None else c if c is not None else DEFAULT_C)
        return level, {}, level, level
    if radius is not None:
        raise InputError(
            f"radius: criterion {crit.name!r} takes no radius (only 'recovery' and 'theorem' do)",
            "drop radius, or choose criterion 'recovery' or 'theorem'",
        )
    level = float(DEFAULT_C if c is None else c)
    return level, {}, level, None


def _extras(res: SROAResult, lam_err: np.ndarray, vec_err: np.ndarray) -> dict[str, Any]:
    """The :class:`~sroa_dist.studies.first_crossing.Evaluation` fields of one SROA beyond its
    verdict."""
    gaps = np.asarray(res.global_gap, dtype=float)
    with np.errstate(invalid="ignore"):
        largest = float(np.nanmax(gaps)) if np.any(np.isfinite(gaps)) else math.nan
    return {
        "global_gap": largest,
        "non_global": bool(np.any(res.non_global)),
        "redone": int(np.sum(res.redone)),
        "lam_err": float(np.nanmax(lam_err)),
        "vec_err": float(np.nanmax(vec_err)),
    }


def _certified_verdicts(
    out: ThresholdResult,
    draw: _Draw,
    n: int,
    crit: RunCriterion,
    level: float | None,
    crit_params: Mapping[str, Any],
    solve_ss: np.random.SeedSequence,
) -> bool | None:
    """Whether the bracket stands with certified steps: ``lo`` passes (or is 0) and ``hi``
    fails when the SROA at each is run again with ``certified`` (relaxation at every step);
    ``None`` where a step could not be certified."""
    lo, hi = out.bracket
    verdicts = []
    for eps in (lo, hi):
        if eps <= 0:
            verdicts.append(True)
            continue
        T, E, lam, basis = draw.scaled(eps)
        res = sroa_batch(
            (T + E)[None],
            rank=n,
            method="certified",
            rng=[_copy(solve_ss)],
            max_gram_size=_CERTIFY_GRAM,
        )
        if not np.all(res.certified):
            return None
        m = match(res, lam[None], basis[None])
        _, ok = crit.evaluate(
            m.lam_err[0], m.vec_err[0], eps, m.lam_matched[0], level, **crit_params
        )
        verdicts.append(ok)
    return bool(verdicts[0] and not verdicts[1])


#: The moment-matrix cap certify_ends hands to ``certified`` (every size within
#: :data:`CERTIFY_ENDS_MAX_N` fits: side C(34, 2) = 561 at p = 3, n = 32).
_CERTIFY_GRAM = 10**4


def uses_matrix_free(
    n: int,
    p: int,
    family: str,
    params: Mapping[str, Any] | None = None,
    matrix_free: bool | None = None,
) -> bool:
    """Whether :func:`find_threshold` with this ``matrix_free`` builds the instance matrix-free:
    with None, where the family has a factored form and one dense ``n^p`` array would exceed
    :data:`DENSE_BYTES_CAP` (sweeps size their memory estimate by it). ``InputError`` where
    ``matrix_free=True`` meets a family without a factored form, as find_threshold refuses it."""
    return _use_matrix_free(matrix_free, n, p, family, params)


def _use_matrix_free(
    matrix_free: bool | None, n: int, p: int, family: str, params: Mapping[str, Any] | None
) -> bool:
    if matrix_free is not None and not isinstance(matrix_free, bool):
        raise InputError(
            f"matrix_free: expected True, False or None, received {matrix_free!r}",
            "give matrix_free=True, False or None (decide from the family)",
        )
    if matrix_free is False:
        return False
    fam = check_model(family, params)
    factored = "+" not in family and fam.factored is not None and not fam.needs_eps
    if matrix_free is None:
        return factored and 8 * float(n) ** p > DENSE_BYTES_CAP
    if not factored:
        raise InputError(
            f"matrix_free: family {family!r} declares no factored form (i.i.d. noise or a "
            "mixture with it has n^p independent entries); use matrix_free=False or None",
            "use matrix_free=False or None with this family",
        )
    return True


class _Draw:
    """The instance of one search: drawn once (with σ = 1), rescaled to each ε.

    Families whose draw depends on the target norm (``needs_eps``) are redrawn at each ε from
    the same seed, as the sweep draws them at that ε.
    """

    def __init__(
        self,
        n: int,
        p: int,
        family: str,
        lam_spec: Any,
        V: ArrayLike | str | None,
        params: Mapping[str, Any] | None,
        inst_ss: np.random.SeedSequence,
        norm_ss: np.random.SeedSequence,
        method: str,
        revisions: Mapping[str, int],
    ) -> None:
        self.args = (n, p, family, lam_spec, V, params, inst_ss)
        self.norm_ss, self.method, self.revisions = norm_ss, method, revisions
        # check_model validates the name and parameters (and resolves mixtures and import paths).
        self.per_eps = bool(check_model(family, params).needs_eps)
        self.fixed = None if self.per_eps else self._build(None)

    def _build(
        self, eps: float | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
        """``(T, E, lambdas, V, ‖E‖)`` of the instance drawn with σ = 1."""
        n, p, family, lam_spec, V, params, inst_ss = self.args
        inst = make_instance(
            n,
            p,
            basis=V if isinstance(V, str) else "random",
            lambdas=lam_spec,
            noise=family,
            sigma=1.0,
            rng=np.random.default_rng(_copy(inst_ss)),
            noise_params=params,
            noise_weight=DEFAULT_WEIGHT,
            noise_eps=eps,
            V=None if isinstance(V, str) else V,
        )
        norm = inst.E_norm
        if norm is None:  # no closed form: bound it as the sweep does by default
            nm = resolve_norm_method(self.method, n, p, None)
            norm = operator_norm(
                inst.E,
                nm,
                rng=np.random.default_rng(_copy(self.norm_ss)),
                **revision_options(nm, self.revisions.get(nm)),
            ).value
        return inst.T, inst.E, inst.lambdas, inst.V, float(norm)

    def scaled(self, eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(T, E scaled to ‖E‖ = eps, lambdas, V)``."""
        T, E, lam, V, norm = self.fixed if self.fixed is not None else self._build(eps)
        # The sweep's rule (scale_factors): E · (ε / ‖E‖), then T + E.
        return T, E * float(scale_factors(norm, eps)), lam, V
