"""The searches behind :func:`sroa_dist.worst_case`: the objective (SROA's error on ``T + E`` with
``‖E‖ = ε``), its Riemannian gradient, a (1+1) evolution strategy and a gradient ascent.

Both searches count one *evaluation* per SROA run (each also costs one operator norm); the
gradient is free in those units: it reuses the evaluation's SROA output and costs one
:func:`~sroa_dist.decomposition.adjoint.sroa_vjp` pass, ``O(r (n^p + n³))``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..decomposition import SROAResult, sroa, sroa_vjp
from ..metrics import match
from ..norms import OperatorNormResult, operator_norm
from ..problems import noise_tensor
from ..tensors import FloatArray, contract
from .search_norm import SearchNorm, ascend_maximisers

__all__ = ["METRICS", "SEARCHES", "Objective", "Point"]


#: Metrics :func:`sroa_dist.worst_case` can maximise.
METRICS = ("lam", "vec", "first_failure")
#: Metrics with a gradient (``first_failure`` is integer-valued: piecewise constant in ``E``).
SMOOTH_METRICS = ("lam", "vec")


@dataclasses.dataclass(frozen=True)
class Point:
    """One evaluated perturbation: ``E`` (rescaled to ``‖E‖ = ε``), SROA's errors on ``T + E``,
    and what the gradient needs (SROA's output, the matching, the norm's maximiser)."""

    E: FloatArray
    value: float
    score: tuple[float, ...]
    lam_err: FloatArray
    vec_err: FloatArray
    bracket: tuple[float, float]
    certified: bool
    result: SROAResult
    perm: NDArray[np.int64]
    norm_x: FloatArray


def _metric(kind: str, lam_err: np.ndarray, vec_err: np.ndarray, eps: float, radius: float):
    """(metric value, search score); the score breaks ties of the integer first-failure metric
    by the largest vector error so the search can climb plateaus."""
    if kind == "lam":
        v = float(np.max(lam_err)) / eps
        return v, (v,)
    if kind == "vec":
        v = float(np.max(vec_err))
        return v, (v,)
    failed = np.flatnonzero(vec_err > radius)
    v = float(len(vec_err) - failed[0]) if len(failed) else 0.0
    return v, (v, float(np.max(vec_err)))


class Objective:
    """``D ↦`` SROA's error on ``T + ε D/‖D‖``, counted, with every value kept in ``trace``.

    ``step_method`` solves SROA's rank-one steps (``step_options`` passed on) with one fixed
    seed, so nearby ``D`` follow the same branch of local maxima. ``‖D‖`` comes from
    :class:`~sroa_dist.studies.search_norm.SearchNorm` (``norm_method``, ``norm_seed``): a
    certified bracket for a global method, else an estimate with fresh starts at every
    evaluation (never one fixed seed: the search would learn to hide ``D``'s maximum from it).
    """

    def __init__(
        self,
        T: FloatArray,
        lam: FloatArray,
        V: FloatArray,
        eps: float,
        metric: str,
        radius: float,
        step_method: str,
        norm_method: str,
        solve_seed: int,
        norm_seed: int,
        step_options: dict[str, Any],
    ):
        self.T, self.lam, self.V, self.eps = T, lam, V, eps
        self.metric, self.radius = metric, radius
        self.step_method, self.norm_method = step_method, norm_method
        self.solve_seed, self.norm_seed = solve_seed, norm_seed
        self.norm = SearchNorm(norm_method, norm_seed, V)
        self.step_options = step_options
        self.trace: list[float] = []
        self._seen: list[FloatArray] = []  # norm maximisers of earlier gradients (warm starts)
        self._warm: list[FloatArray] = []  # norm maximisers of earlier evaluations

    def __call__(self, D: FloatArray) -> Point:
        k = len(self.trace)
        nr = self.norm(D, k, self._warm)
        self._warm = [*self._warm[-(WARM_STARTS - 1) :], np.asarray(nr.x, dtype=float)]
        pt = self.evaluate(D, nr)
        self.trace.append(pt.value)
        return pt

    def evaluate(self, D: FloatArray, nr: OperatorNormResult) -> Point:
        """SROA on ``T + E``, ``E = ε D / ‖D‖`` with ``‖D‖`` bracketed by ``nr`` (not counted).

        ``E`` is rescaled by the attained value, so ``‖E‖ ≥ ε`` (the bracket's lower end) and
        the value error over ``ε`` is an upper bound of the ratio ``error / ‖E‖``; it is the
        search's objective (smooth in ``D``, unlike the bracket's upper end, which moves with
        the relaxation's tolerance). The ratio over the upper end, the number a claim needs, is
        :attr:`WorstCaseResult.ratio`.
        """
        f = self.eps / nr.value
        E = D * f
        res = sroa(self.T + E, method=self.step_method, rng=self.solve_seed, **self.step_options)
        m = match(res, self.lam, self.V)
        lam_err, vec_err = np.asarray(m.lam_err), np.asarray(m.vec_err)
        value, score = _metric(self.metric, lam_err, vec_err, self.eps, self.radius)
        return Point(
            E=E,
            value=value,
            score=score,
            lam_err=lam_err,
            vec_err=vec_err,
            bracket=(float(nr.lower) * f, float(nr.upper) * f),
            certified=bool(nr.certified),
            result=res,
            perm=np.asarray(m.perm),
            norm_x=np.asarray(nr.x, dtype=float),
        )

    def certify(self, pt: Point, method: str) -> Point:
        """``pt`` with its norm bracketed by the global ``method`` (e.g. ``"certified"``); where
        that bracket is certified, ``E`` is rescaled to it and SROA rerun (not counted in the
        trace); otherwise ``pt`` unchanged."""
        if pt.certified:
            return pt
        nr = operator_norm(pt.E, method, rng=np.random.default_rng([self.norm_seed, 2**32]))
        if not nr.certified:
            return pt
        return self.evaluate(pt.E, nr)

    @property
    def n_evals(self) -> int:
        return len(self.trace)

    def metric_grad(self, pt: Point) -> tuple[FloatArray, FloatArray]:
        """``(∂m/∂λ̂, ∂m/∂V̂)`` of the metric's active term (the step with the largest error),
        in the matching :func:`sroa_dist.match` chose (fixed under small changes of ``E``)."""
        p = self.T.ndim
        lam_hat, V_hat = pt.result.lambdas, pt.result.vectors
        a, b = np.zeros_like(lam_hat), np.zeros_like(V_hat)
        errs = pt.lam_err if self.metric == "lam" else pt.vec_err
        j = int(np.argmax(errs))
        i = int(pt.perm[j])
        # match compares odd-p components with λ > 0 (λ v^{⊗p} = (−λ)(−v)^{⊗p}).
        s = -1.0 if (p % 2 == 1 and lam_hat[j] < 0) else 1.0
        t = -1.0 if (p % 2 == 1 and self.lam[i] < 0) else 1.0
        if self.metric == "lam":
            a[j] = np.sign(s * lam_hat[j] - t * self.lam[i]) * s / self.eps
        else:
            v_true = t * self.V[:, i]
            if p % 2 == 0 and np.linalg.norm(V_hat[:, j] + v_true) < np.linalg.norm(
                V_hat[:, j] - v_true
            ):
                v_true = -v_true  # even p: the sign of v̂ is free, match took the nearer one
            d = s * V_hat[:, j] - v_true
            b[:, j] = s * d / max(float(np.linalg.norm(d)), 1e-300)
        return a, b

    def gradient(self, pt: Point) -> FloatArray:
        """Steepest-ascent direction of the metric on the sphere ``{‖E‖ = ε}`` at ``pt``.

        The search evaluates ``f(R(D))`` with the retraction ``R(D) = ε D / ‖D‖``, so this is
        the gradient of that composite (Frobenius metric). The Euclidean gradient ``G`` of the
        metric comes from :func:`sroa_vjp`. Where ``|E x^p|`` has one maximiser ``x*`` the
        norm's gradient is ``N = s x*^{⊗p}`` (``s`` the sign of ``E x*^p``; ``⟨N, E⟩ = ε``,
        ``‖N‖_F = 1``) and the composite's gradient is ``G − c N`` with ``c = ⟨G, E⟩ / ε``:
        orthogonal to ``E`` (the composite is scale-invariant), and on the tangent space
        ``N^⊥`` equal to the Riemannian gradient ``G − ⟨G, N⟩ N``. Worst cases tend to sit
        where several local maximisers ``x_k`` of ``|E x^p|`` tie (a corner of the sphere:
        pushing one up shrinks everything after the rescale), where the norm's directional
        derivative is ``max_k ⟨N_k, Δ⟩``. For ``c > 0`` the steepest ascent direction is then
        the least-norm point of ``G − c·conv{N_k}`` (a small QP on the simplex), whose
        directional derivative is its squared norm. ``x_k`` are the local maximisers within
        ``ACTIVE_TOL`` of ``ε`` (an ε-active set, as in bundle methods), found by shifted
        power iterations from the maximisers of earlier evaluations and random starts.
        """
        p = self.T.ndim
        a, b = self.metric_grad(pt)
        G = sroa_vjp(self.T + pt.E, pt.result.lambdas, pt.result.vectors, a, b)
        xs = self._active_maximisers(pt)
        N = np.stack([s * _outer_power(x, p).ravel() for s, x in xs], axis=1)  # (n^p, K)
        c = float(np.vdot(G, pt.E)) / self.eps
        if c <= 0 or N.shape[1] == 1:
            # c <= 0: the norm's growth only helps, any one maximiser gives an ascent direction.
            return G - c * N[:, 0].reshape(G.shape)
        lam = _simplex_least_norm(c * N, G.ravel())
        return G - (c * N @ lam).reshape(G.shape)

    def _active_maximisers(self, pt: Point) -> list[tuple[float, FloatArray]]:
        """``(s_k, x_k)``: local maximisers of ``|E x^p|`` with value ``≥ (1 − ACTIVE_TOL) ε``,
        the norm's own maximiser first; earlier maximisers are kept as starts."""
        E, p, n = pt.E, self.T.ndim, self.T.shape[0]
        self._seen.append(pt.norm_x)
        self._seen = self._seen[-32:]
        gen = np.random.default_rng(self.norm_seed)
        X = np.concatenate([np.stack(self._seen), gen.standard_normal((min(4 * n, 64), n))])
        # Shifted power iterations on s·E x^p (SS-HOPM): (p − 1) ε bounds the curvature.
        s, X, vals = ascend_maximisers(E, X, (p - 1) * self.eps, POWER_ITERS)
        x0 = pt.norm_x
        out = [(1.0 if float(contract(E[None], x0[None, None], p)[0, 0]) >= 0 else -1.0, x0)]
        for k in np.argsort(-vals):
            if vals[k] < (1 - ACTIVE_TOL) * self.eps:
                break
            # For odd p, x and −x are the same maximiser of |E x^p| (the sign s absorbs it).
            if all(abs(float(X[k] @ y)) < 1 - 1e-4 for _, y in out):
                out.append((float(s[k]), X[k]))
        return out


#: Local maximisers of ``|E x^p|`` within this fraction of ``ε`` count as active (see
#: :meth:`Objective.gradient`).
ACTIVE_TOL = 0.02
#: Shifted power iterations that locate them (from warm starts, so few are needed).
POWER_ITERS = 100
#: Norm maximisers of the latest evaluations that start every local norm estimate.
WARM_STARTS = 16


def _outer_power(x: FloatArray, p: int) -> FloatArray:
    out = x
    for _ in range(p - 1):
        out = np.multiply.outer(out, x)
    return out


def _simplex_least_norm(M: FloatArray, g: FloatArray) -> FloatArray:
    """``argmin_{λ ≥ 0, Σλ = 1} ‖g − M λ‖`` (``M`` is ``(m, K)``): the least-norm point of
    ``g − conv(columns)``, by NNLS with the sum constraint as a heavily weighted row."""
    w = 1e3 * max(float(np.linalg.norm(M)), float(np.linalg.norm(g)), 1.0)
    A = np.vstack([M, np.full((1, M.shape[1]), w)])
    from scipy.optimize import nnls  # on use: scipy.optimize costs 0.5 s to import

    lam = nnls(A, np.append(g, w))[0]
    return lam / lam.sum()


Search = Callable[..., Point]


def search_es(
    obj: Objective,
    start: Point,
    pool: list[FloatArray],
    budget: int,
    gen: np.random.Generator,
    step: float,
    **_: Any,
) -> Point:
    """(1+1) evolution strategy with the one-fifth success rule from ``start``.

    Mutations are random symmetric directions and, with probability 1/3, a structured start
    from ``pool``, so the search can combine structures (e.g. shrink every weight *and* tilt)
    that a random direction in ``C(n+p-1, p)`` dimensions would rarely hit.
    """
    n, p = obj.T.shape[0], obj.T.ndim
    best, sigma = start, float(step)
    while obj.n_evals < budget:
        G = noise_tensor("gaussian", n, p, 1.0, rng=gen)
        if pool and gen.random() < 1 / 3:
            G = pool[int(gen.integers(len(pool)))]
        D = best.E / np.linalg.norm(best.E) + sigma * G / np.linalg.norm(G)
        out = obj(D)
        if out.score > best.score:
            best = out
            sigma *= 1.5
        else:
            sigma = max(sigma * 0.9, 1e-3)
    return best


def search_gradient(
    obj: Objective,
    start: Point,
    pool: list[FloatArray],  # noqa: ARG001  (the ES's mutation pool; ascent needs none)
    budget: int,
    gen: np.random.Generator,
    step: float,
    restarts: list[Point],
    min_step: float = 1e-2,
    max_step: float = 1.0,
) -> Point:
    """Riemannian gradient ascent with backtracking, restarted when it stalls.

    From the current point ``E`` (unit Frobenius direction ``Ê``) a trial is
    ``Ê + α ĝ`` (``ĝ`` the unit ascent direction of :meth:`Objective.gradient`) retracted
    onto ``{‖E‖ = ε}`` by rescaling with its operator norm. A trial is accepted when it raises
    the metric; otherwise ``α`` halves and the same direction is tried again. The next
    iteration starts from the accepted ``α``, doubled (up to ``max_step``) when it was
    accepted at the first try. Below ``min_step``, or where the gradient does not exist (a
    degenerate step), the ascent restarts from the next start in ``restarts`` (best first),
    then from fresh Gaussian draws. Returns the best point seen.
    """
    n, p = obj.T.shape[0], obj.T.ndim
    best, step0 = start, float(step)
    queue = [pt for pt in restarts if pt is not start]
    cur: Point | None = start
    while obj.n_evals < budget:
        if cur is None:
            cur = queue.pop(0) if queue else obj(noise_tensor("gaussian", n, p, 1.0, rng=gen))
            if cur.score > best.score:
                best = cur
            continue
        try:
            g = obj.gradient(cur)
        except np.linalg.LinAlgError:
            cur = None
            continue
        gn = float(np.linalg.norm(g))
        if not np.isfinite(gn) or gn == 0:
            cur = None
            continue
        alpha = step
        base = cur.E / np.linalg.norm(cur.E)
        while obj.n_evals < budget:
            trial = obj(base + alpha * g / gn)
            if trial.score > cur.score:
                cur = trial
                # Grow only after a first-try success: after a backtrack the accepted step is
                # about right, and growing it again would cost a failed trial per iteration.
                step = min(2 * alpha, max_step) if alpha == step else alpha
                break
            alpha *= 0.5
            if alpha < min_step:
                cur, step = None, step0
                break
        if cur is not None and cur.score > best.score:
            best = cur
    return best


#: Search methods by name (``worst_case(method=...)``).
SEARCHES: dict[str, Search] = {"es": search_es, "gradient": search_gradient}
