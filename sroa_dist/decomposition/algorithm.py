"""Successive rank-one approximation (SROA, the paper's Algorithm 1) of symmetric tensors."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InputError, InputTypeError
from ..integer_powers import ipow
from ..methods import (
    CONVERGED_SPECTRAL,
    GAP_TOL,
    IMPLICIT_BYTES,
    Deflation,
    RankOneResult,
    RngLike,
    check_local_method,
    large_engine,
    normalize,
    resolve_method,
)
from ..operators import TensorOperator
from ..tensors import as_rng_list, check_symmetric_tensor
from ..threads import single_blas
from .checkpoint import StepCheckpoint, StepRecorder, fingerprint, generator_state
from .engines import make_engine
from .global_check import (
    GLOBAL_RTOL,
    CheckDraws,
    check_step,
    estimate_values,
    remaining_estimates,
)

__all__ = ["SROAResult", "sroa", "sroa_batch", "DEFLATION_MODES"]

#: ``deflation=`` choices of :func:`sroa`: ``"explicit"`` forms each deflated tensor (needed by
#: the relaxation-based methods), ``"implicit"`` keeps only the deflation terms (local methods),
#: ``"auto"`` is implicit for local methods once one tensor is larger than ``IMPLICIT_BYTES``.
DEFLATION_MODES = ("auto", "explicit", "implicit")


@dataclasses.dataclass(frozen=True)
class SROAResult:
    """Output of Algorithm 1: one ``(λ̂_j, v̂_j)`` per deflation step ``j``.

    Attributes (a leading batch axis is added when batched)
    ----------
    lambdas : (r,) ndarray
        ``λ̂_j = T̂_{j-1} v̂_j^p`` (signed).
    vectors : (n, r) ndarray
        ``v̂_j`` as columns.
    certified : (r,) bool ndarray
        Whether step ``j`` was solved to proven global optimality.
    upper_bounds : (r,) ndarray
        Valid upper bound of each step's objective.
    solve_time : (r,) ndarray
        Seconds spent per step.
    p, method
        Tensor order and rank-one method.
    steps : list of RankOneResult
        Per-step solver results (batched results when the SROA result is batched).
    n_best : (r,) int ndarray
        Starts that reached each step's best value (``-1`` for methods without starts).
    confirmed : (r,) bool ndarray
        Whether the method's confirmation upheld each step's best value (see
        :class:`RankOneResult`); evidence against a missed global step, not a certificate.
    global_gap : (r,) ndarray
        The global check of each step (``sroa(..., global_check=True)``,
        :mod:`sroa_dist.decomposition.global_check`): the best value ``T̂_{j-1} x^p`` (``|·|`` for
        even p) its check starts reached, minus the step's, in the tensor's units. NaN where no
        check ran; 0 for certified steps (their certificate bounds it by proof) and for redone steps
        (their value is the best the check reached).
    redone : (r,) bool ndarray
        Steps redone from the check's better point (``redo=True``); the steps after a redone
        one are computed again on the new branch.
    step_norms : (r,) ndarray
        ``‖T̂_{j-1}‖_F`` of each step's tensor, the scale of :attr:`non_global` (NaN where no
        check ran).
    """

    lambdas: np.ndarray
    vectors: np.ndarray
    certified: np.ndarray
    upper_bounds: np.ndarray
    solve_time: np.ndarray
    p: int
    method: str
    steps: list[RankOneResult] = dataclasses.field(default_factory=list)
    n_best: np.ndarray | None = None
    confirmed: np.ndarray | None = None
    global_gap: np.ndarray | None = None
    redone: np.ndarray | None = None
    step_norms: np.ndarray | None = None

    @property
    def non_global(self) -> np.ndarray:
        """Steps whose check found a value above theirs by more than
        :data:`~sroa_dist.decomposition.global_check.GLOBAL_RTOL` · ``‖T̂_{j-1}‖_F`` (False where
        unchecked)."""
        if self.global_gap is None or self.step_norms is None:
            return np.zeros(self.lambdas.shape, dtype=bool)
        with np.errstate(invalid="ignore"):
            return np.asarray(self.global_gap > GLOBAL_RTOL * self.step_norms)

    @property
    def rank(self) -> int:
        """Number of deflation steps performed."""
        return int(self.lambdas.shape[-1])

    @property
    def gaps(self) -> np.ndarray:
        """Per-step gap ``upper_bound − |λ̂_j|``: how much better a global step could be."""
        return self.upper_bounds - np.abs(self.lambdas)

    def __getitem__(self, i: int) -> SROAResult:
        """The ``i``-th instance of a batched result."""
        return SROAResult(
            self.lambdas[i],
            self.vectors[i],
            self.certified[i],
            self.upper_bounds[i],
            self.solve_time[i],
            self.p,
            self.method,
            [step[i] for step in self.steps],
            None if self.n_best is None else self.n_best[i],
            None if self.confirmed is None else self.confirmed[i],
            None if self.global_gap is None else self.global_gap[i],
            None if self.redone is None else self.redone[i],
            None if self.step_norms is None else self.step_norms[i],
        )


@single_blas
def sroa_batch(
    Ts: ArrayLike,
    rank: int | None = None,
    method: str = "certified",
    *,
    rng: RngLike | Sequence[RngLike] = None,
    gap_tol: float = GAP_TOL,
    deflation: str = "auto",
    global_check: bool = False,
    redo: bool = False,
    checkpoint: StepCheckpoint | None = None,
    **options: Any,
) -> SROAResult:
    """Algorithm 1 on every tensor of a stack ``(B, n, ..., n)``, all steps batched.

    Each instance draws from its own stream in ``rng`` (one seed-like spawned into B, or B
    seed-likes), so results match one-at-a-time :func:`sroa` calls bit for bit.
    ``deflation``, ``global_check``, ``redo`` and ``checkpoint``: see :func:`sroa`.
    """
    if not isinstance(Ts, TensorOperator):  # an operator was checked when it was built
        Ts = check_symmetric_tensor(Ts, "Ts", batched=True)
    B, n, p = Ts.shape[0], Ts.shape[1], Ts.ndim - 1
    r = n if rank is None else rank
    # A whole number (3 or 3.0); NaN, inf, text and lists are refused here, not by int().
    whole = isinstance(r, (int, np.integer)) or (
        isinstance(r, (float, np.floating)) and math.isfinite(r) and r == int(r)
    )
    if isinstance(r, bool) or not whole or not 1 <= int(r) <= n:
        raise InputError(
            f"rank: expected an integer number of steps 1 <= rank <= n = {n}, got {rank!r}",
            "give rank=None for n steps, or an integer between 1 and n",
        )
    for name, flag in (("global_check", global_check), ("redo", redo)):
        if not isinstance(flag, (bool, np.bool_)):
            raise InputTypeError(
                f"{name}: expected true or false, received {flag!r}", f"pass {name}=True or False"
            )
    if redo and not global_check:
        raise InputError(
            "redo: redoing a step needs its global check",
            "pass global_check=True too, or redo=False",
        )
    r = int(r)
    rngs = as_rng_list(rng, B)
    mode = _deflation_mode(deflation, method, Ts)
    draws = None
    if global_check and mode == "implicit" and _shared_check(method, options):
        # The check's stream, spawned before the steps (revisions <= 6 spawned it after
        # them: the same stream wherever the steps spawn none, as under implicit deflation
        # by default), so each step can eigensolve its check's contractions with its own.
        draws = [CheckDraws(g.spawn(1)[0], n) for g in rngs]
    # Every part of the SROA (steps, deflation terms, global check) raises coordinates to
    # whole powers under the rule the method's options pin (sshopm revision 10: products).
    with resolve_method(method).power_rule(options):
        engine = make_engine(mode, Ts, method, rngs, gap_tol, options, draws)
        steps: list[RankOneResult] = []
        recorder = None
        if checkpoint is not None:
            if not isinstance(checkpoint, StepCheckpoint):
                raise InputTypeError(
                    f"checkpoint: expected a step checkpoint (load, save, rejected, interval_s), "
                    f"received {type(checkpoint).__name__}",
                    "pass checkpoint=sroa_dist.FileCheckpoint(path), or None",
                )
            settings = {
                "method": method,
                "rank": r,
                "gap_tol": float(gap_tol).hex(),
                "mode": mode,
                "global_check": bool(global_check),
                "redo": bool(redo),
                "options": options,
                "shared_check": draws is not None,
                "engine": [type(engine).__name__, engine.STATE_VERSION],
                # the generators as the steps find them (another seed: another SROA)
                "rngs": [generator_state(g) for g in rngs],
            }
            recorder = StepRecorder(checkpoint, fingerprint(Ts, settings), r, engine, rngs, draws)
            steps = recorder.resume()
        while len(steps) < r:
            steps.append(engine.propose())
            engine.commit()
            if recorder is not None:
                recorder.after_step(steps)
        res = _assemble(steps, p, method)
        if global_check:
            shared = None if draws is None else (draws, engine.check_starts)
            res = _checked(res, Ts, mode, method, rngs, gap_tol, options, redo, shared)
    return res


def _shared_check(method: str, options: dict[str, Any]) -> bool:
    """Whether ``method``'s steps eigensolve their global check's contractions with their own
    (its ``shared_check`` option, ``sshopm`` revision 7 on; methods without it never do)."""
    return bool(resolve_method(method).with_defaults(options).get("shared_check", False))


def sroa(
    T: ArrayLike,
    rank: int | None = None,
    method: str = "certified",
    *,
    rng: RngLike = None,
    gap_tol: float = GAP_TOL,
    deflation: str = "auto",
    global_check: bool = False,
    redo: bool = False,
    checkpoint: StepCheckpoint | None = None,
    **options: Any,
) -> SROAResult:
    """Successive rank-one approximation of a symmetric tensor (Algorithm 1).

    Parameters
    ----------
    T : (n,)*p array_like
        Symmetric tensor (e.g. a nearly SOD ``T̂ = Σ λ_i v_i^{⊗p} + E``).
        Or a matrix-free operator (:func:`sroa_dist.structured_tensor`): local methods only,
        implicit deflation, no step certified.
    rank : int, optional
        Number of deflation steps ``r ≤ n`` (default ``n``).
    method : str
        Rank-one method for every step (see :func:`sroa_dist.rank_one`).
    rng : Generator, int or SeedSequence, optional
        Source of the local solvers' random starts. ``None`` is the fixed default seed 0,
        so a call that names no seed gives the same bits every time.
    gap_tol, **options
        Passed to the rank-one method.
    deflation : {"auto", "explicit", "implicit"}
        ``"explicit"`` forms each deflated tensor ``T̂_j = T̂_{j-1} − λ̂_j v̂_j^{⊗p}`` (any
        method). ``"implicit"`` (local methods ``sshopm`` and ``power``) never forms it: every
        contraction of ``T̂_j`` is one of ``T̂`` minus ``Σ_{i≤j} λ̂_i (v̂_i·x)^{p-1} v̂_i``, so
        memory stays at one tensor; each step's unfolding bound comes from an updated Gram
        matrix, and ``sshopm`` also restarts from the previous step's other local maxima
        (leftovers). Equal to explicit deflation up to rounding (about ``1e-12`` relative on
        the values in tests; the iterates can then take different but equivalent paths).
        ``"auto"``: implicit for local methods when one tensor exceeds ``IMPLICIT_BYTES``
        (1 MiB), else explicit (which keeps small-n results bit for bit).
    global_check : bool
        Check every step that is not certified (:mod:`sroa_dist.decomposition.global_check`): ascend
        a set of check starts (the components not yet deflated, as an SROA of the same tensor
        estimates them, spectral and random starts) on the step's tensor and record in
        ``global_gap`` how far the best of them rises above the step. Works on formed tensors and
        matrix-free operators alike.
    redo : bool
        With ``global_check``: where a check finds a value higher than the step's by more
        than ``GLOBAL_RTOL·‖T̂_{j-1}‖_F``, take its point as the step instead (``redone``) and
        compute the later steps again from there, so SROA continues on the global branch.
    checkpoint : StepCheckpoint, optional
        Save the steps as they go (at most every ``checkpoint.interval_s`` seconds) and, where
        the checkpoint already holds this call's steps, continue from them: a call killed and
        made again with the same arguments returns the uninterrupted result bit for bit
        (:mod:`sroa_dist.decomposition.checkpoint`; :class:`FileCheckpoint` for a local file).
        The global check after the last step is not saved: after a kill it runs again.

    Returns
    -------
    SROAResult
        With per-step :class:`RankOneResult` in ``steps``.
    """
    T = T.as_batch() if isinstance(T, TensorOperator) else check_symmetric_tensor(T, "T")[None]
    res = sroa_batch(
        T,
        rank,
        method,
        rng=[rng],
        gap_tol=gap_tol,
        deflation=deflation,
        global_check=global_check,
        redo=redo,
        checkpoint=checkpoint,
        **options,
    )
    return res[0]


def _deflation_mode(deflation: str, method: str, Ts: np.ndarray) -> str:
    if deflation not in DEFLATION_MODES:
        raise InputError(
            f"deflation: expected one of {DEFLATION_MODES}, received {deflation!r}",
            "'auto' chooses; 'implicit' saves memory at large n for local methods",
        )
    local = resolve_method(method).implicit
    if isinstance(Ts, TensorOperator):
        check_local_method(method, resolve_method(method))
        if deflation == "explicit":
            raise InputError(
                "deflation: 'explicit' forms each deflated tensor, which a matrix-free operator "
                "never does; use 'implicit' or 'auto'",
                "use deflation='implicit' or 'auto' with a matrix-free operator",
            )
        return "implicit"
    if deflation == "implicit" and not local:
        raise InputError(
            f"deflation: method {method!r} needs the deflated tensor itself (its relaxation "
            "reads every entry); use deflation='explicit' or a local method (sshopm, power)",
            "use deflation='explicit' (or 'auto'), or a local method such as 'sshopm'",
        )
    if deflation == "auto":
        return "implicit" if local and Ts[0].nbytes > IMPLICIT_BYTES else "explicit"
    return deflation


def _assemble(steps: list[RankOneResult], p: int, method: str) -> SROAResult:
    """The :class:`SROAResult` of batched per-step results (no check run)."""
    lambdas = np.stack([s.lam for s in steps], axis=1)
    vectors = np.stack([s.x for s in steps], axis=2)
    certified = np.stack([s.certified for s in steps], axis=1).astype(bool)
    upper = np.stack([s.upper_bound for s in steps], axis=1).astype(float)
    times = np.stack([s.solve_time for s in steps], axis=1).astype(float)
    gap = np.where(certified, 0.0, np.nan)
    return SROAResult(
        lambdas,
        vectors,
        certified,
        upper,
        times,
        p,
        method,
        steps,
        *_start_stats(steps),
        global_gap=gap,
        redone=np.zeros(certified.shape, dtype=bool),
        step_norms=np.full(certified.shape, np.nan),
    )


def _start_stats(steps: list[RankOneResult]) -> tuple[np.ndarray, np.ndarray]:
    """``(B, r)`` arrays of ``n_best`` (``-1`` when unknown) and ``confirmed``."""
    B = len(steps[0].lam)
    n_best = np.stack(
        [np.full(B, -1) if s.n_best is None else np.asarray(s.n_best) for s in steps], axis=1
    )
    conf = np.stack(
        [np.zeros(B, bool) if s.confirmed is None else np.asarray(s.confirmed) for s in steps],
        axis=1,
    )
    return n_best.astype(np.int64), conf.astype(bool)


def _row(Ts: Any, b: int) -> Any:
    """Instance ``b`` of a stack (array or operator) as a stack of one."""
    return Ts[b : b + 1] if not isinstance(Ts, TensorOperator) else Ts.take([b])


def _set_row(step: RankOneResult, b: int, new: RankOneResult) -> RankOneResult:
    """``step`` (batched) with instance ``b`` replaced by ``new`` (a batch of one)."""
    fields = {}
    for f in dataclasses.fields(step):
        old, val = getattr(step, f.name), getattr(new, f.name)
        if isinstance(old, np.ndarray):
            arr = old.copy()
            if val is None:
                arr[b] = None if arr.dtype == object else (False if arr.dtype == bool else -1)
            else:
                arr[b] = np.asarray(val)[0]
            fields[f.name] = arr
        else:
            fields[f.name] = old
    return RankOneResult(**fields)


def _checked(
    res: SROAResult,
    Ts: Any,
    mode: str,
    method: str,
    rngs: list[np.random.Generator],
    gap_tol: float,
    options: dict[str, Any],
    redo: bool,
    shared: tuple[list[CheckDraws], dict[int, np.ndarray]] | None = None,
) -> SROAResult:
    """``res`` with every uncertified step checked (``global_gap``) and, with ``redo``, the
    non-global ones redone from the check's point, the later steps computed again.
    ``shared``: each instance's check draws and the check spectral starts the steps computed
    (``shared_check``); ``None``: each check draws and eigensolves its own."""
    B, r, p = res.lambdas.shape[0], res.rank, res.p
    # The check runs on the method's engine (its revision's); a method without that option
    # keeps the dense engine, the check's only one before the large-n engine.
    settings = resolve_method(method).with_defaults(options)
    check_engine = settings.get("engine", "dense")
    low_dim = settings.get("spectral_low_dim")
    spectral_tol = settings.get("spectral_tol", CONVERGED_SPECTRAL)  # power's check: converged
    polish_rtol = settings.get("polish_rtol", 1e-14)  # power's check: exact solves
    block = settings.get("deflation_block")  # sshopm revision 8 on: fused products
    single = settings.get("spectral_precision") == "single"  # sshopm revision 9 on
    steps = list(res.steps)
    gap = res.global_gap.copy()
    redone = res.redone.copy()
    norms = res.step_norms.copy()
    for b in range(B):
        T1 = _row(Ts, b)
        norm = normalize(T1)
        Tn, k = norm.T, int(norm.k[0])
        fro2_0 = float(Tn.fro2()[0] if isinstance(Tn, TensorOperator) else np.sum(Tn * Tn))
        # The remaining component estimates: the components this SROA found.
        E = res.vectors[b].T.copy()
        base = estimate_values(Tn, E)
        draws = None if shared is None else shared[0][b]
        check_rng = rngs[b].spawn(1)[0] if draws is None else None
        lam_n = np.ldexp(res.lambdas[b], -k)
        X = res.vectors[b].T.copy()  # (r, n): the steps' vectors as they stand
        # The large-n engine keeps E·Xᵀ, a column per changed step, instead of E·U per step.
        EX = E @ X.T if large_engine(Tn, check_engine) else None
        EXp = None if EX is None else ipow(EX, p)
        engine = None  # a one-instance engine from the first redo on
        # The check spectral starts the steps computed (step -> (B, 2C, n)) and this
        # instance's row there: the first SROA's, from a redo on the one-instance engine's.
        source, row = (None, b) if shared is None else (shared[1], b)
        j = 0
        while j < r:
            t0 = time.perf_counter()
            if engine is not None:  # after a redo: the later steps are computed again
                new = engine.propose()
                source, row = (None, 0) if draws is None else (engine.check_starts, 0)
                steps[j] = _set_row(steps[j], b, new)
                lam_n[j], X[j] = np.ldexp(new.lam[0], -k), new.x[0]
                if EX is not None:
                    EX[:, j] = E @ X[j]
                    EXp[:, j] = ipow(EX[:, j], p)
            fro_j = math.sqrt(max(fro2_0 - float(np.sum(lam_n[:j] ** 2)), 0.0))
            norms[b, j] = math.ldexp(fro_j, k)
            if steps[j].certified[b]:
                gap[b, j] = 0.0
            else:
                U = X[:j].T
                C, Cp = (None, None) if EX is None else (EX[:, :j], EXp[:, :j])
                est, _ = remaining_estimates(E, base, U, lam_n[:j], X[j], p, C, Cp)
                defl = Deflation(
                    U[None], lam_n[None, :j], np.array([fro_j]), block=block, single=single
                )
                own = lam_n[j] if p % 2 else abs(lam_n[j])
                point = check_step(
                    Tn,
                    defl,
                    est,
                    check_rng,
                    against=own,
                    own=X[j],
                    engine=check_engine,
                    spectral_low_dim=low_dim,
                    spectral_tol=spectral_tol,
                    drawn=None if draws is None else draws.at(j),
                    spectral=None if source is None else _row_of(source, j, row),
                    polish_rtol=polish_rtol,
                )
                gap_n = point.objective - own
                if redo and gap_n > GLOBAL_RTOL * fro_j:
                    if engine is None:
                        engine = make_engine(
                            mode, T1, method, [rngs[b]], gap_tol, options,
                            None if draws is None else [draws],
                        )  # fmt: skip
                        for i in range(j):
                            engine.replay(np.ldexp(lam_n[i : i + 1], k), X[i : i + 1])
                    new = engine.propose(forced=point.x[None])
                    steps[j] = _set_row(steps[j], b, new)
                    lam_n[j], X[j] = np.ldexp(new.lam[0], -k), new.x[0]
                    if EX is not None:
                        EX[:, j] = E @ X[j]
                        EXp[:, j] = ipow(EX[:, j], p)
                    redone[b, j] = True
                    gap_n = 0.0
                gap[b, j] = math.ldexp(gap_n, k)
            if engine is not None:
                engine.commit()
            dt = time.perf_counter() - t0
            steps[j] = dataclasses.replace(steps[j], solve_time=_add_at(steps[j].solve_time, b, dt))
            j += 1
    out = _assemble(steps, p, method)
    return dataclasses.replace(out, global_gap=gap, redone=redone, step_norms=norms)


def _row_of(starts: dict[int, np.ndarray], j: int, b: int) -> np.ndarray | None:
    """Instance ``b``'s check spectral starts of step ``j``, where the step computed them."""
    out = starts.get(j)
    return None if out is None else out[b]


def _add_at(times: np.ndarray, b: int, dt: float) -> np.ndarray:
    out = np.array(times, dtype=float)
    out[b] += dt
    return out
