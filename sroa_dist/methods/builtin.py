"""The built-in rank-one methods (power, sshopm, sos, certified) and their result contract,
:class:`MethodOutput`. :mod:`sroa_dist.methods` registers them and is their front door."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError, InputTypeError
from ..operators import TensorOperator
from ..tensors import FloatArray, check_symmetry, symmetrize
from .ascent import (
    BEST_RTOL,
    DEFAULT_MAX_STARTS,
    DEFAULT_N_SPECTRAL,
    DEFAULT_N_STARTS,
    DEFLATION_BLOCK,
    LANCZOS_VARIANTS,
    LOW_END_DIM,
    POLISH_RTOL,
    SPECTRAL_PRECISIONS,
    SPECTRAL_TOL,
    Deflation,
    _signed_problems,
    ascent_deflated,
    deflated_values,
    newton_polish,
    power_iterations,
    random_starts,
    shared_spectral_starts,
    shifted_ascent,
    spectral_starts,
)
from .confirmation import CONFIRM_RULES, ROUND_COMPLEMENT, ROUND_UNIFORM, explore, settle

#: Default seconds per step ``certified`` may spend on the moment relaxation (``time_budget``):
#: the relaxation runs where :func:`relaxation_cost` predicts at most this.
DEFAULT_TIME_BUDGET = 1.0
#: Default gap ``upper_bound − |lam|`` (relative to ‖T‖_F) under which a solution is certified.
GAP_TOL = 1e-6
#: Fraction of the certification tolerance at which the relaxation stops: the rest (1e-7 of
#: ‖T‖_F at the default) covers the rounding margins added to its bound (about 1e-14 of ‖T‖_F),
#: so a step it stops on is certified.
RELAXATION_STOP_FRACTION = 0.9
#: Cost model ``seconds ~ a * (m / 100) ** b`` of one certified step (SS-HOPM candidate plus
#: relaxation; both signs for even p) with moment-matrix side ``m``, one BLAS thread, by ``p``
#: (larger p use the largest calibrated p of the same parity). Least-squares fits in log-log
#: to the per-step medians (m >= 100) of benchmarks/bench_certified_scaling.py with the
#: relaxation stopping at the certification tolerance: p = 3 over the fresh nearly SOD and the
#: deflated coherent-tilt families together, p = 4 and 5 on fresh nearly SOD tensors and their
#: deflations. SCS's full eigendecomposition of the m x m matrix per iteration dominates.
#: Calibrated: docs/results/benchmarks.md, Certified step scaling.
COST_MODEL: dict[int, tuple[float, float]] = {3: (0.14, 1.86), 4: (0.099, 2.26), 5: (0.039, 3.11)}
#: Under ``confirm="settle"`` (``sshopm`` revisions 1–3) the confirming start set runs where
#: fewer than two starts reached the best value, where a point near the best (within
#: ``abandon_margin``) was reached by one start only, or where a start away from the best point
#: is within this relative distance of it
#: (:func:`~sroa_dist.methods.confirmation.first_set_settles`). Its false-confirmation rate against
#: certified steps: benchmarks/bench_miss_rate.py.
CONFIRM_MARGIN = 1e-5
#: On a formed tensor, ``sshopm`` treats a start that ends more than this fraction of the best
#: value below it as irrelevant (``abandon_margin``): an instance's ascent stops once every
#: start still climbing is that far below its best converged start (see
#: :func:`~sroa_dist.methods.ascent.shifted_ascent`), and such points are not counted as maxima seen
#: once (:func:`~sroa_dist.methods.confirmation.first_set_settles`), nor explored
#: (:func:`~sroa_dist.methods.confirmation.explore`). They wander the flat region between
#: components, in late SROA steps for up to ``max_iter`` iterations. Calibrated with
#: bench_sroa_local.py and a side-by-side run on the Figure-2 workload and Gaussian n = 16-32: no
#: step's best value changed on 500 Figure-2 SROAs and 864 Gaussian steps; a margin of 0 (stop
#: once the best converged start leads) lost up to 2 % of the value on 1 % of Figure-2 steps.
ABANDON_MARGIN = 0.5
#: Cost model of a local solve on a formed tensor, ``seconds ~ a + b·n^p`` (one core; orders of
#: magnitude measured for block sizing, see docs/sweeps.md, Block sizing).
LOCAL_COST = (1e-4, 2.5e-7)
#: Fixed seconds of a local step under implicit deflation; per entry it costs the method's own
#: ``implicit_per_entry`` (``sshopm`` restarts warm from the previous step's local maxima, about
#: ten times cheaper per entry than ``power``'s cold iterations).
IMPLICIT_COST = 0.01
#: Per tensor (never per stack, so results do not depend on how instances are batched): above
#: this size (n > 50 for p = 3, n > 19 for p = 4) SROA's implicit engine is faster and holds no
#: residual copy; below it explicit deflation keeps the results of earlier sweeps bit for bit.
IMPLICIT_BYTES = 2**20


@dataclasses.dataclass(frozen=True)
class MethodOutput:
    """What a rank-one method returns for a stack of ``B`` tensors: the method contract.

    A method is ``fn(Ts, rngs, **options) -> MethodOutput`` with ``Ts`` the ``(B, n, ..., n)``
    stack (already scaled to ``‖T‖_F`` in ``[1/2, 1)``), ``rngs`` one Generator per tensor and
    ``options`` keyword-only parameters (what :func:`method_options` lists). A local method
    may also take a positional ``deflation`` (:class:`Deflation`) after ``rngs``, which lets
    SROA deflate implicitly. :func:`rank_one_batch` recomputes ``lam`` from ``x`` and takes
    the smaller of ``upper_bound`` and the unfolding bound, so a method never has to be
    trusted for its values.

    Attributes
    ----------
    x : (B, n) ndarray
        Unit-norm maximiser candidates of ``T x^p`` (odd p) or ``|T x^p|`` (even p).
    n_starts, n_iter : (B,) int ndarrays
        Starts used and iterations of the local phase (0 where there is none).
    upper_bound : (B,) ndarray, optional
        Valid upper bounds of ``max T x^p`` (odd p) / ``max |T x^p|`` (even p) of the tensors
        as given; ``None``: only the unfolding bound is known.
    solve_time : (B,) ndarray, optional
        Seconds per instance; ``None``: the call's wall time is shared equally.
    certificate : (B,) object ndarray, optional
        Auditable SOS certificates of ``upper_bound`` (or ``None`` entries).
    n_best : (B,) int ndarray, optional
        Starts that reached the best value (see :class:`RankOneResult`).
    confirmed : (B,) bool ndarray, optional
        Whether two independent starts reached the best value (see :class:`RankOneResult`).
    notes : str
        Appended to every instance's ``message`` (e.g. why a relaxation was skipped).
    final_starts, final_values, final_grads : ndarrays, optional
        The local phase's final iterates ``(B, S, n)``, their values ``(B, S)`` and (under a
        deflation) unsigned gradients ``(B, S, n)``: SROA continues from them as warm starts.
    relaxation : str, optional
        Which SDP driver and device bounded the step, e.g. ``"scs/cpu"`` or ``"admm/cuda"``
        (``None``: no relaxation ran).
    check_starts : (B, 2C, n) ndarray, optional
        The spectral starts of the step's global check, computed in the same run as the
        method's own from the deflation's ``check_theta`` (``sshopm``'s ``shared_check``).
    """

    x: FloatArray
    n_starts: Any
    n_iter: Any
    upper_bound: Any = None
    solve_time: Any = None
    certificate: Any = None
    n_best: Any = None
    confirmed: Any = None
    notes: str = ""
    final_starts: Any = None
    final_values: Any = None
    final_grads: Any = None
    relaxation: str | None = None
    check_starts: Any = None

    @classmethod
    def coerce(cls, out: Any, method: str) -> MethodOutput:
        """``out`` itself; anything else a method returns is refused."""
        if isinstance(out, cls):
            return out
        raise InputTypeError(
            f"method {method!r}: expected it to return a MethodOutput, received "
            f"{type(out).__name__}",
            "return sroa_dist.methods.MethodOutput(x=..., n_starts=..., n_iter=...)",
        )


# ---------------------------------------------------------------------------------------------
# Methods. Each takes (Ts (B, n..n), rngs) plus keyword options and returns a MethodOutput.
# Local methods also take an optional positional Deflation (SROA's implicit deflation); being
# positional, it is not a user option (method_options lists keyword-only parameters).


#: Constants of the AGHKT budget (:func:`aghkt_budget`).
AGHKT_ITER_FACTOR = 3.0
AGHKT_ETA = 0.05


def aghkt_budget(n: int, eps: float | None = None, eta: float = AGHKT_ETA) -> tuple[int, int]:
    """Starts and iterations ``(L, N)`` of the robust tensor power method as Anandkumar, Ge,
    Hsu, Kakade and Telgarsky's analysis (JMLR 2014, Theorem 5.1) sizes them for rank ``k = n``:
    ``L = ⌈n ln(n/η)⌉`` starts (so that, with probability ``1 − η``, some start lies in the
    basin of every component the analysis guarantees) and
    ``N = ⌈3 (ln n + ln max(1, ln(1/ε)))⌉`` iterations (``ln k + ln ln(λ_max/ε)`` with
    ``λ_max = 1``; the constant 3 for the theorem's unspecified ``C₂``, and the double
    logarithm floored at 0 where ``ε > 1/e`` makes it negative). ``eps`` is the noise level the
    analysis assumes known; ``None`` drops that term. ``η`` defaults to
    :data:`AGHKT_ETA`."""
    n = int(n)
    if n < 1 or not (0 < eta < 1):
        raise InputError(
            f"aghkt_budget: expected n >= 1 and 0 < eta < 1, received n = {n}, eta = {eta!r}",
            "e.g. aghkt_budget(64, 0.1)",
        )
    if eps is not None and not eps > 0:
        raise InputError(f"eps: expected a noise level > 0, received {eps!r}", "e.g. eps=0.1")
    loglog = 0.0 if eps is None else math.log(max(1.0, math.log(1.0 / eps)))
    starts = math.ceil(n * math.log(n / eta)) if n > 1 else 1
    iters = math.ceil(AGHKT_ITER_FACTOR * (math.log(n) + loglog)) if n > 1 else 1
    return max(starts, 1), max(iters, 1)


def _method_power(
    Ts: FloatArray,
    rngs: Sequence[np.random.Generator],
    deflation: Deflation | None = None,
    *,
    n_starts: int = 20,
    n_iter: int = 30,
    budget: str = "fixed",
    noise_level: float | None = None,
    engine: str = "auto",
    spectral_low_dim: int | None = LOW_END_DIM,
) -> MethodOutput:
    """Randomized robust tensor power method (Anandkumar et al., JMLR 2014, Algorithm 1).

    Options: ``n_starts`` (L) random starts uniform on the sphere, ``n_iter`` (N) unshifted power
    iterations each; the start with the largest ``T x^p`` (``|T x^p|`` for even p) is iterated
    ``N`` more times. No convergence test and no shift: the paper's local baseline.
    ``budget="aghkt"`` replaces ``L`` and ``N`` by the sizes of the method's analysis for this
    ``n`` (:func:`aghkt_budget`, with ``noise_level`` its assumed ``ε``); ``"fixed"`` keeps them.
    ``engine`` (:data:`~sroa_dist.methods.ascent.ENGINES`): the engine of the global check of
    its SROA steps on matrix-free operators (``sroa(global_check=True)``); the iterations
    themselves are the same on every engine. Revision 1, which stores made with it keep, is
    ``engine="dense"``; ``spectral_low_dim`` (:data:`~sroa_dist.methods.ascent.LOW_END_DIM`):
    where that check's Lanczos run accepts an even order's clustered lower end (revision 3;
    ``None``, converged, in revision 2).
    """
    B, n = Ts.shape[0], Ts.shape[1]
    p = Ts.ndim - 1
    if budget == "aghkt":
        n_starts, n_iter = aghkt_budget(n, noise_level)
    X = power_iterations(Ts, random_starts(rngs, n_starts, n), n_iter, deflation)
    _, F = deflated_values(Ts, X, deflation)
    score = np.abs(F) if p % 2 == 0 else F
    x = X[np.arange(B), np.argmax(score, axis=1)]
    x = power_iterations(Ts, x[:, None, :], n_iter, deflation)[:, 0]
    return MethodOutput(x=x, n_starts=np.full(B, n_starts), n_iter=np.full(B, 2 * n_iter))


def _ascend(
    Ts: FloatArray, X0: FloatArray, deflation: Deflation | None, **kw: Any
) -> tuple[FloatArray, FloatArray, NDArray[np.int64], FloatArray | None]:
    """:func:`shifted_ascent` over both signs for even p: ``(k·B, S, n)``, ``(k·B, S)``,
    ``(k·B,)`` with ``k = 2`` for even p (sign-major), 1 for odd p; with a deflation also the
    unsigned gradients at the final iterates ``(k·B, S, n)``."""
    p = Ts.ndim - 1
    if deflation is None:
        signed, k = _signed_problems(Ts)
        X0 = np.concatenate([X0] * k) if k > 1 else X0
        return (*shifted_ascent(signed, X0, **kw), None)
    lazy = kw.pop("lazy", False)
    args = (kw["max_iter"], kw["tol"], kw["shift"])
    parts = [ascent_deflated(Ts, X0, *args, deflation, lazy)]
    if p % 2 == 0:
        # The larger |T x^p| wins: once the + sign has a value, a lazy − sign stops as soon as
        # its climbing starts are below it.
        floor = parts[0][1].max(axis=1) if lazy else None
        parts.append(ascent_deflated(Ts, X0, *args, deflation.negated(), lazy, floor))
    return tuple(np.concatenate(a) for a in zip(*parts, strict=True))  # type: ignore[return-value]


def _by_instance(A: FloatArray, B: int) -> FloatArray:
    """``(k·B, S, ...)`` sign-major → ``(B, k·S, ...)``: every start of an instance, both signs,
    along axis 1 (so its best start is one argmax)."""
    k, S = A.shape[0] // B, A.shape[1]
    rest = A.shape[2:]
    A = A.reshape((k, B, S) + rest)
    return np.moveaxis(A, 0, 1).reshape((B, k * S) + rest)


def _method_sshopm(
    Ts: FloatArray,
    rngs: Sequence[np.random.Generator],
    deflation: Deflation | None = None,
    *,
    n_starts: int | None = None,
    max_iter: int = 100,
    tol: float = 1e-5,
    shift: str | float = "monotone",
    polish: bool = True,
    max_starts: int | None = None,
    n_spectral: int | str = DEFAULT_N_SPECTRAL,
    warm: bool = True,
    lazy: bool = True,
    confirm: str = "explore",
    confirm_margin: float = CONFIRM_MARGIN,
    abandon_margin: float = ABANDON_MARGIN,
    kernel: str = "packed",
    engine: str = "auto",
    spectral_low_dim: int | None = LOW_END_DIM,
    shared_check: bool = True,
    polish_rtol: float = POLISH_RTOL,
    deflation_block: int | None = DEFLATION_BLOCK,
    lanczos: str = "own",
    spectral_tol: float = SPECTRAL_TOL,
    spectral_precision: str = "single",
    integer_powers: str = "products",
) -> MethodOutput:
    """Multi-start shifted symmetric higher-order power method with adaptive shift.

    Options: ``n_starts`` random starts (per sign for even p; default: ``n`` clipped to
    [16, 64] on a formed tensor, 16 under implicit deflation), ``max_iter`` and step tolerance
    ``tol`` of the ascent (the Newton polish, not the ascent, delivers the final accuracy, so
    the ascent only has to reach the right basin), ``shift`` (``"monotone"``: eigenvalue-free
    adaptive shift; ``"adaptive"``: Kolda–Mayo's Hessian-based shift; a float: fixed shift),
    ``polish``: Newton steps on the sphere from the best start to machine precision;
    ``n_spectral``: extra starts at the extreme eigenvectors of random contractions
    ``T(I, I, θ, …)`` (see :func:`spectral_starts`; default :data:`DEFAULT_N_SPECTRAL` on
    every path; ``"operators"``: that many on matrix-free operators and none on formed
    tensors, the rule of revisions 1–3); ``warm``: in an implicitly deflated SROA, also start
    from the previous step's other local maxima; ``lazy``: there, stop a step once its best
    converged start beats every unconverged one and carry those on as warm starts (see
    :func:`shifted_ascent`).

    ``max_starts`` bounds the starts per sign a step may use, confirmation included
    (default ``max(DEFAULT_MAX_STARTS, 4 n_starts)`` on a formed tensor, 0 under implicit
    deflation, where a cold confirmation would cost several times the warm-started step; pass
    it there to confirm). ``confirm`` chooses what ``confirmed`` means:

    * ``"explore"`` (default): rounds of starts from streams spawned off the instance's (so
      the first set and later SROA steps keep their draws), aimed at the orthogonal
      complement of the relevant maxima found so far plus uniform ones, run until a round
      finds neither a higher value nor a new relevant maximum (``confirmed``) or the budget is
      spent (see :func:`sroa_dist.methods.confirmation.explore`);
    * ``"settle"`` (revisions 1–3): where the first set has two starts at the best value,
      every relevant point it reached reached twice and no rival within ``confirm_margin``
      (``inf`` confirms every instance), it is confirmed at no cost; elsewhere a second,
      independent set is run and the starts doubled until two sets agree. Measured to confirm
      steps that missed a whole basin (benchmarks/bench_miss_rate.py).

    Either way the first set's pick stands unless a later start found a clearly higher value.
    ``abandon_margin`` (formed tensors): starts more than this fraction of the best value
    below it are irrelevant: an instance's ascent ends once every start still climbing is that
    far below its best converged start, and their points are neither explored nor count as
    maxima seen once (default :data:`ABANDON_MARGIN`; ``inf`` runs every start to convergence
    and counts every point). ``kernel`` (formed tensors): ``"packed"`` contracts p = 3 tensors
    over their distinct index pairs with the iterates held coordinates first, ``"symmetric"``
    over the same pairs instance by instance, ``"dense"`` over all of them (see
    :func:`~sroa_dist.methods.ascent.shifted_ascent`); the three agree up to rounding. ``engine``
    (matrix-free operators, :data:`~sroa_dist.methods.ascent.ENGINES`): ``"auto"`` runs the
    spectral starts by Lanczos and the Newton polish by MINRES on Hessian-vector products from
    ``n >= LARGE_N`` on (revision 5), ``"dense"`` by dense eigensolves at every n (revisions
    1–4); the same steps up to rounding, in the steps and in their global check.
    ``spectral_low_dim``: the Krylov dimension from which the large-n engine's Lanczos run
    accepts the lower end of an even order's ``T(I, I, θ, …, θ)`` unconverged (revision 6,
    :data:`~sroa_dist.methods.ascent.LOW_END_DIM`: that end is a cluster at 0 on tensors of
    positive weights; ``None``, revision 5: converged to the tolerance). ``shared_check``
    (revision 7; ``False`` before): in an implicitly deflated SROA with ``global_check``, each
    step's global check gets its spectral starts from the step's own eigensolve (the check's
    contractions, :attr:`~sroa_dist.methods.ascent.Deflation.check_theta`, eigensolved in the
    same Lanczos run as the step's: one run per step instead of two); ``False``: the check
    runs its own. ``polish_rtol`` (revision 7; 1e-14 before): the relative residual of the
    large-n engine's MINRES solves in the Newton polish, of the steps and of their global
    check (:data:`~sroa_dist.methods.ascent.POLISH_RTOL`). ``deflation_block`` (revision 8;
    ``None`` before): an implicit deflation's products of 2-8 vectors run in blocks of this
    many bytes of the deflation terms, each block read once from memory for both of its
    products (:data:`~sroa_dist.methods.ascent.DEFLATION_BLOCK`; ``None``: two whole matrix
    products). ``lanczos`` (revision 8 ``"own"``; ``"lockstep"`` before): the large-n engine's
    Lanczos variant (:data:`~sroa_dist.methods.ascent.LANCZOS_VARIANTS`): a matrix whose pairs
    have converged leaves the lockstep block, so each stops where a run of its own would, and
    each new Krylov vector is reorthogonalised once (twice where the Kahan–Parlett test asks)
    instead of twice. Both give
    the same steps up to rounding. ``spectral_tol`` (revision 9; 1e-10 before,
    :data:`~sroa_dist.methods.ascent.CONVERGED_SPECTRAL`): the residual, relative to the
    largest Ritz value, at which the large-n engine's Lanczos run accepts a spectral start
    (:data:`~sroa_dist.methods.ascent.SPECTRAL_TOL`: a start only has to lie in its basin).
    ``spectral_precision`` (revision 9 ``"single"``; ``"double"`` before): the precision of
    the deflation terms in those Lanczos products
    (:data:`~sroa_dist.methods.ascent.SPECTRAL_PRECISIONS`). ``integer_powers`` (revision 10
    ``"products"``; ``"pow"`` before): how the contractions raise coordinates to whole powers
    above the square (:mod:`sroa_dist.integer_powers`; the rule holds for the whole call, and
    :func:`~sroa_dist.sroa` runs every part of an SROA with this method under it).
    Revisions 1 to 9 of this method,
    which stores made with them keep using, are reproduced by the option values in its
    record's ``legacy`` table. Converges to local maxima: fast, with no bound of its own (a
    step is certified only where its value meets the unfolding bound that
    :func:`~sroa_dist.methods.finishing.finish_step` checks every step against). Besides
    ``x`` it reports how many starts reached the best value (``n_best``) and whether the
    confirmation upheld it (``confirmed``; always false where ``max_starts`` leaves no room for it).
    Evidence, not a proof.
    """
    B, n = Ts.shape[0], Ts.shape[1]
    if n_starts is None:
        n_starts = DEFAULT_N_STARTS if deflation is not None else min(max(DEFAULT_N_STARTS, n), 64)
    if max_starts is None:
        max_starts = max(DEFAULT_MAX_STARTS, 4 * n_starts) if deflation is None else 0
    if spectral_precision not in SPECTRAL_PRECISIONS:
        raise InputError(
            f"spectral_precision: expected one of {list(SPECTRAL_PRECISIONS)}, "
            f"received {spectral_precision!r}",
            "leave it unset for the current revision's precision",
        )
    if lanczos not in LANCZOS_VARIANTS:
        raise InputError(
            f"lanczos: expected one of {list(LANCZOS_VARIANTS)}, received {lanczos!r}",
            "leave it unset for the current revision's variant",
        )
    if confirm not in CONFIRM_RULES:
        raise InputError(
            f"confirm: expected one of {list(CONFIRM_RULES)}, received {confirm!r}",
            "leave it unset for the current revision's rule",
        )
    if n_spectral == "operators":  # revisions 1-3: spectral starts on operators only
        n_spectral = DEFAULT_N_SPECTRAL if isinstance(Ts, TensorOperator) else 0
    kw: dict[str, Any] = {"max_iter": max_iter, "tol": tol, "shift": shift}
    if deflation is not None:
        kw["lazy"] = warm and lazy
    else:
        kw.update(abandon_margin=abandon_margin, kernel=kernel)
    if deflation is not None:
        deflation = dataclasses.replace(
            deflation, block=deflation_block, single=spectral_precision == "single"
        )
    X0 = random_starts(rngs, n_starts, n)
    check_starts = None
    shared = shared_check and deflation is not None and deflation.check_theta is not None
    if n_spectral and shared:
        Xs0, check_starts = shared_spectral_starts(
            Ts,
            rngs,
            n_spectral,
            deflation.check_theta,
            deflation,
            engine,
            spectral_low_dim,
            lanczos == "own",
            spectral_tol,
        )
        X0 = np.concatenate([X0, Xs0], axis=1)
    elif n_spectral:
        X0 = np.concatenate(
            [
                X0,
                spectral_starts(
                    Ts,
                    rngs,
                    n_spectral,
                    deflation,
                    engine,
                    spectral_low_dim,
                    lanczos == "own",
                    spectral_tol,
                ),
            ],
            axis=1,
        )
    if warm and deflation is not None and deflation.warm is not None:
        X0 = np.concatenate([X0, deflation.warm], axis=1)
    elif deflation is not None:
        deflation = deflation.cold()
    X, F, it, grads = _ascend(Ts, X0, deflation, **kw)
    Xs, Fs = _by_instance(X, B), _by_instance(F, B)
    first = np.argmax(Fs, axis=1)
    used = np.full(B, Xs.shape[1])
    n_iter = it.reshape(-1, B).max(axis=0)

    def again(X0: FloatArray, rows: NDArray[np.intp]) -> tuple[FloatArray, FloatArray, Any]:
        """The same ascent, cold and not lazy, on the instances ``rows`` from ``X0``."""
        sub = Ts if rows.size == B else Ts[rows]
        d = None if deflation is None else deflation.take(rows).cold()
        Xn, Fn, itn, _ = _ascend(sub, X0, d, **{**kw, "lazy": False})
        k = rows.size
        return _by_instance(Xn, k), _by_instance(Fn, k), itn.reshape(-1, k).max(axis=0)

    if confirm == "explore":
        rounds = max(0, (max_starts - n_starts - n_spectral) // (ROUND_COMPLEMENT + ROUND_UNIFORM))
        Xs, Fs, confirmed, extra, it_c = explore(
            again, rngs, Xs, Fs, budget=rounds, relevance=abandon_margin
        )
        used += extra * _signs(Ts)
        n_iter = np.maximum(n_iter, it_c)
    else:
        Xs, Fs, confirmed, used, n_iter = settle(
            again,
            rngs,
            Ts,
            Xs,
            Fs,
            first,
            used,
            n_iter,
            n_starts,
            max_starts,
            n,
            confirm_margin,
            abandon_margin if deflation is None else math.inf,
        )
    rows_b = np.arange(B)
    top1, best = Fs[rows_b, first], np.argmax(Fs, axis=1)
    # Keep the first set's pick (and its bits) unless a later set found a clearly higher value.
    best = np.where(Fs[rows_b, best] > top1 + BEST_RTOL * np.abs(top1), best, first)
    x = Xs[rows_b, best]
    top = Fs[rows_b, best]
    n_best = np.sum(Fs >= (top - BEST_RTOL * np.abs(top))[:, None], axis=1)
    if polish:
        x = newton_polish(Ts, x, deflation=deflation, engine=engine, rtol=polish_rtol)
    return MethodOutput(
        x=x,
        n_starts=used,
        n_iter=n_iter,
        n_best=n_best,
        confirmed=confirmed,
        final_starts=_by_instance(X, B),
        final_values=_by_instance(F, B),
        final_grads=None if grads is None else _by_instance(grads, B),
        check_starts=check_starts,
    )


def _signs(Ts: FloatArray) -> int:
    """Problems per start: 2 for even p (``T x^p`` and ``−T x^p``), 1 for odd p."""
    return 2 if (Ts.ndim - 1) % 2 == 0 else 1


def moment_side(n: int, p: int, order: int | None = None, *, full: bool = False) -> int:
    """Side of the order-``d`` moment matrix (``d = ⌈p/2⌉`` by default): the one size formula.

    The relaxation solved is homogeneous (:mod:`sroa_dist.relaxation`): its basis is the
    monomials of degree ``d`` (and ``d − 1`` for odd p). ``full=True`` gives the textbook basis
    of all monomials of degree ``<= d``, ``C(n + d, d)``, which ``max_gram_size`` caps.
    """
    d = (p + 1) // 2 if order is None else int(order)
    if full:
        return math.comb(n + d, d)
    degrees = (d - 1, d) if p % 2 else (d,)
    return sum(math.comb(n + k - 1, k) for k in degrees)


def relaxation_cost(n: int, p: int) -> float:
    """Predicted seconds of one certified step at ``(n, p)`` (:data:`COST_MODEL`)."""
    known = [q for q in COST_MODEL if q <= p and q % 2 == p % 2]
    a, b = COST_MODEL[max(known)] if known else COST_MODEL[min(COST_MODEL)]
    return a * (moment_side(n, p) / 100.0) ** b


def relaxation_tractable(
    n: int,
    p: int,
    max_gram_size: int | None = None,
    time_budget: float = DEFAULT_TIME_BUDGET,
) -> bool:
    """Whether ``certified`` runs the relaxation at ``(n, p)``.

    With ``max_gram_size`` the full order-⌈p/2⌉ basis ``C(n + ⌈p/2⌉, ⌈p/2⌉)`` must not exceed
    it (the former fixed cap, 120, meant n <= 14 for p = 3, 4); otherwise the predicted step time
    (:func:`relaxation_cost`) must fit ``time_budget`` seconds.
    """
    if max_gram_size is not None:
        return moment_side(n, p, full=True) <= max_gram_size
    return relaxation_cost(n, p) <= time_budget


def local_cost(n: int, p: int, implicit_per_entry: float | None) -> float:
    """Predicted seconds of one local solve (:data:`LOCAL_COST`): ``a + b·n^p`` on a formed
    tensor; for a method that SROA deflates implicitly above :data:`IMPLICIT_BYTES` per tensor
    (``implicit_per_entry`` given), ``IMPLICIT_COST + implicit_per_entry·n^p`` there."""
    size = float(n) ** p
    if implicit_per_entry is not None and 8.0 * size > IMPLICIT_BYTES:
        return IMPLICIT_COST + implicit_per_entry * size
    return LOCAL_COST[0] + LOCAL_COST[1] * size


def local_memory(n: int, p: int, batch: int, starts: int) -> float:
    """Rough peak bytes of a local phase on ``batch`` tensors: the stack and the copies the
    front door and the ascent make (normalised stack, ``±T`` for even p, the active subset),
    and the Kronecker powers of ``2·starts`` starts."""
    tensor = 8.0 * batch * float(n) ** p
    return 5 * tensor + 8.0 * batch * 2 * starts * (3 * float(n) ** (p - 1) + 2 * n * n)


def relaxation_memory(n: int, p: int, order: int | None = None) -> float:
    """Rough peak bytes of one relaxation solve: the moment map (side² nonzeros), SCS's KKT
    factorisation and per-thread workspaces (full basis: an upper estimate)."""
    d = (p + 1) // 2 if order is None else int(order)
    side = float(moment_side(n, p, order, full=True))
    moments = float(math.comb(n + 2 * d, 2 * d))
    return 400.0 * side * side + 200.0 * moments


def _symmetric_part_of_rounding(Ts: FloatArray) -> FloatArray:
    """``Ts`` with each tensor that is not symmetric replaced by its symmetric part.

    Every tensor reaching a method passed the front door's symmetry test or is one of SROA's
    residuals ``T̂ − λ̂ x^{⊗p}``, symmetric but for the rounding of ``x^{⊗p}``. Where a step
    took out all that was left (a tensor of lower rank than the steps), the residual *is* that
    rounding, and is no longer symmetric to ``SYMMETRY_RTOL`` of its own largest entry: the
    relaxation refused it (an ``InputError`` from ``sroa(T, method="certified")`` on a valid
    ``T``). Its polynomial ``R x^p`` is exactly that of its symmetric part, which is what the
    relaxation bounds; a tensor that passes the test is passed on untouched (same bits).
    """
    try:
        check_symmetry(Ts, "Ts", batched=True)
        return Ts
    except InputError:
        pass
    out = Ts.copy()
    for b in range(len(Ts)):
        try:
            check_symmetry(Ts[b], "T")
        except InputError:
            out[b] = symmetrize(Ts[b])
    return out


def _relax(
    Ts: FloatArray,
    order: int | None,
    options: tuple[dict[str, Any], str, str],
    candidates: FloatArray | None = None,
) -> tuple[list[Any], str]:
    """Solve the moment relaxation of ``max |T x^p|`` (odd p: ``max T x^p``) of every tensor,
    optionally seeding each with a candidate maximiser ``candidates[b]``, with the solve
    options, SDP driver and device of :func:`_relaxation_options`. Returns the results and
    the driver's label (:func:`~sroa_dist.relaxation.drivers.driver_label`). A driver that
    solves several relaxations at once gets the whole stack."""
    from ..relaxation import driver_entry, driver_label, get_relaxation

    n, p = Ts.shape[1], Ts.ndim - 1
    options, name, device = options
    driver = driver_entry(name).make(device)  # named and checked by the table's one parse
    relax = get_relaxation(n, p, order=order)
    Ts = _symmetric_part_of_rounding(Ts)
    cands = None if candidates is None else [c[None, :] for c in candidates]
    return relax.solve_abs_batch(Ts, candidates=cands, driver=driver, **options), driver_label(
        name, device
    )


def _relaxation_options(
    options: dict[str, Any] | None, certificate: bool, gap_tol: float
) -> tuple[dict[str, Any], str, str]:
    """Keyword options of ``MomentRelaxation.solve`` and the driver and device to run it on:
    the user's ``relaxation`` table (parsed once, by :func:`~.records.check_options`; a
    method function called directly, past that check, has its driver and device selected
    here), the certificate export, and
    (unless the table sets it) a stopping gap that certification accepts,
    :data:`RELAXATION_STOP_FRACTION` of ``gap_tol``."""
    from ..relaxation import RelaxationTable, selection

    table = options
    if not isinstance(table, RelaxationTable):
        table = RelaxationTable(options, *selection(options))
    if not (isinstance(gap_tol, (int, float)) and gap_tol >= 0):
        raise InputError(
            f"gap_tol: expected a number >= 0, received {gap_tol!r}",
            "give a tolerance >= 0, e.g. gap_tol=1e-6",
        )
    out = {"gap_tol": RELAXATION_STOP_FRACTION * float(gap_tol), **table.solve_options}
    if certificate:
        out["with_certificate"] = True
    return out, table.driver, table.device


def _method_sos(
    Ts: FloatArray,
    rngs: Sequence[np.random.Generator],
    *,
    order: int | None = None,
    relaxation: dict[str, Any] | None = None,
    certificate: bool = False,
    gap_tol: float = GAP_TOL,
) -> MethodOutput:
    """Lasserre moment relaxation (order ⌈p/2⌉ by default), solved by an SDP driver (SCS
    unless the ``relaxation`` table names another).

    Maximiser candidates are extracted from the moments and polished; a validated dual bound
    is the certificate (see :mod:`sroa_dist.relaxation`). Options: ``order`` (relaxation
    order), ``relaxation`` (keyword options of ``MomentRelaxation.solve``, the SDP ``driver``
    and ``device`` — e.g. ``{"driver": "admm", "device": "cuda"}`` — and the driver's settings),
    ``certificate`` (export the SOS certificate; also set by ``rank_one(certificate=True)``),
    ``gap_tol`` (the certification tolerance, passed by ``rank_one``: the solve stops once its
    validated bound is within 0.9 of it).
    """
    options = _relaxation_options(relaxation, certificate, gap_tol)
    return _sos_result(*_relax(Ts, order, options))


def _sos_result(rel: list[Any], label: str) -> MethodOutput:
    return MethodOutput(
        x=np.stack([r.x for r in rel]),
        upper_bound=np.array([r.upper_bound for r in rel]),
        n_starts=np.zeros(len(rel), dtype=np.int64),
        n_iter=np.array([r.iterations for r in rel]),
        solve_time=np.array([r.solve_time for r in rel]),
        certificate=_object_array([r.sos_certificate for r in rel]),
        relaxation=label,
    )


def _object_array(items: list[Any]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _method_certified(
    Ts: FloatArray,
    rngs: Sequence[np.random.Generator],
    *,
    n_starts: int = 8,
    max_iter: int = 100,
    tol: float = 1e-5,
    shift: str | float = "monotone",
    order: int | None = None,
    max_gram_size: int | None = None,
    time_budget: float = DEFAULT_TIME_BUDGET,
    relaxation: dict[str, Any] | None = None,
    certificate: bool = False,
    gap_tol: float = GAP_TOL,
) -> MethodOutput:
    """Fast local candidate plus a certified global upper bound from the moment relaxation.

    A multi-start SS-HOPM gives a candidate; the relaxation, seeded with it, adds candidates
    extracted from its moments and returns the best one with a validated upper bound (certified
    when they meet). Where the moment matrix would exceed ``max_gram_size`` the relaxation is
    skipped and the unfolding bound is used (so ``certified`` is then rare). By default the cap
    follows from ``time_budget`` (seconds per step, :func:`relaxation_cost`); an explicit
    ``max_gram_size`` overrides it. Options: those of ``sshopm`` and ``sos`` (``certificate``
    included), ``time_budget``, ``max_gram_size`` and ``gap_tol`` (the certification
    tolerance, passed by ``rank_one``: the relaxation stops once its validated bound is within
    0.9 of it).
    """
    n, p = Ts.shape[1], Ts.ndim - 1
    t0 = time.perf_counter()
    # Every start runs to convergence: the candidate seeds the relaxation, whose cost
    # dominates, and certified results keep their bits across sshopm revisions.
    local = _method_sshopm(
        Ts,
        rngs,
        n_starts=n_starts,
        max_iter=max_iter,
        tol=tol,
        shift=shift,
        max_starts=0,
        n_spectral=0,
        abandon_margin=math.inf,
        kernel="dense",
    )
    if not time_budget >= 0:
        raise InputError(
            f"time_budget: expected seconds >= 0, received {time_budget!r}",
            "give seconds >= 0, e.g. time_budget=5",
        )
    if not relaxation_tractable(n, p, max_gram_size, time_budget):
        notes = (
            f"relaxation skipped (moment matrix larger than {max_gram_size})"
            if max_gram_size is not None
            else f"relaxation skipped (predicted {relaxation_cost(n, p):.3g} s per step > "
            f"time_budget = {time_budget:g} s; raise time_budget to certify)"
        )
        return dataclasses.replace(local, notes=notes)
    local_share = (time.perf_counter() - t0) / len(Ts)
    options = _relaxation_options(relaxation, certificate, gap_tol)
    sos = _sos_result(*_relax(Ts, order, options, local.x))
    return dataclasses.replace(
        sos,
        solve_time=sos.solve_time + local_share,
        n_starts=local.n_starts,
        n_iter=local.n_iter,
    )
