"""Algorithm 1 one step at a time: the engines behind :func:`sroa_dist.sroa`.

An engine holds the deflated tensor of the steps so far, :meth:`propose` solves the next step
(or finishes it at a given point, when a global check redoes it) and :meth:`commit` deflates
it, so a step can be checked before the decomposition moves on. :class:`ExplicitSteps` forms
each deflated tensor; :class:`ImplicitSteps` keeps only the deflation terms (local methods,
large n, matrix-free operators).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..integer_powers import ipow
from ..methods import (
    DEFAULT_N_STARTS,
    Deflation,
    MethodOutput,
    RankOneResult,
    check_options,
    deflated_contract,
    finish_step,
    normalize,
    rank_one_of_checked,
    resolve_method,
)
from ..operators import TensorOperator
from ..tensors import rank_one_tensor

__all__ = ["REDONE_NOTE", "ExplicitSteps", "ImplicitSteps", "make_engine"]


def make_engine(
    mode: str,
    Ts: Any,
    method: str,
    rngs: list[np.random.Generator],
    gap_tol: float,
    options: dict[str, Any],
    check_draws: list[Any] | None = None,
) -> ExplicitSteps | ImplicitSteps:
    """The engine of a deflation mode (``"explicit"`` or ``"implicit"``); ``check_draws``
    (implicit only): each instance's :class:`~sroa_dist.decomposition.global_check.CheckDraws`,
    whose contractions the steps eigensolve with their own (``shared_check``)."""
    if mode == "implicit":
        return ImplicitSteps(Ts, method, rngs, gap_tol, options, check_draws)
    return ExplicitSteps(Ts, method, rngs, gap_tol, options)


#: The note of a step redone from its global check's point.
REDONE_NOTE = "redone from the global check's higher point"


class ExplicitSteps:
    """Algorithm 1 step by step with each deflated tensor formed: :meth:`propose` solves the
    next step (or finishes it at a given point), :meth:`commit` deflates it (line 4)."""

    def __init__(
        self,
        Ts: np.ndarray,
        method: str,
        rngs: list[np.random.Generator],
        gap_tol: float,
        options: dict[str, Any],
    ) -> None:
        self.residual = Ts.copy()
        self.method, self.rngs, self.gap_tol, self.options = method, rngs, gap_tol, options
        self.pending: RankOneResult | None = None

    def propose(self, forced: np.ndarray | None = None) -> RankOneResult:
        """The next step: the method's, or (``forced (B, n)``) the one at that point."""
        if forced is None:
            self.pending = rank_one_of_checked(
                self.residual, self.method, rng=self.rngs, gap_tol=self.gap_tol, **self.options
            )
        else:
            t0 = time.perf_counter()
            out = _forced_output(forced)
            self.pending = finish_step(
                normalize(self.residual),
                out,
                self.method,
                gap_tol=self.gap_tol,
                elapsed=time.perf_counter() - t0,
                notes=REDONE_NOTE,
            ).result
        return self.pending

    def commit(self) -> None:
        """Deflation, Algorithm 1 line 4: ``T̂_j = T̂_{j-1} − λ̂_j v̂_j^{⊗p}``."""
        step, p = self.pending, self.residual.ndim - 1
        self.residual -= rank_one_tensor(step.lam, step.x, p)
        self.pending = None

    def replay(self, lam: np.ndarray, x: np.ndarray) -> None:
        """Deflate a step taken elsewhere (``lam (B,)``, ``x (B, n)``)."""
        self.residual -= rank_one_tensor(lam, x, self.residual.ndim - 1)

    #: Version of :meth:`snapshot`'s layout (a step checkpoint's fingerprint holds it).
    STATE_VERSION = 1

    def snapshot(self) -> dict[str, Any]:
        """What the next steps read besides the generators: the deflated tensors (between
        steps: nothing is pending)."""
        return {"residual": self.residual}

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from a :meth:`snapshot` of an engine built with the same arguments."""
        self.residual = np.array(state["residual"], dtype=float)
        self.pending = None


def _forced_output(x: np.ndarray) -> MethodOutput:
    B = x.shape[0]
    zero = np.zeros(B, dtype=np.int64)
    return MethodOutput(x=x, n_starts=zero, n_iter=zero)


class ImplicitSteps:
    """Algorithm 1 step by step with implicit deflation (see :func:`sroa`,
    ``deflation="implicit"``): the deflated tensors are represented by their terms. With
    ``check_draws`` each step also eigensolves its global check's contractions, kept in
    :attr:`check_starts` (step index -> ``(B, 2C, n)``) for the check."""

    def __init__(
        self,
        Ts: np.ndarray,
        method: str,
        rngs: list[np.random.Generator],
        gap_tol: float,
        options: dict[str, Any],
        check_draws: list[Any] | None = None,
    ) -> None:
        self.fn = resolve_method(method)
        B, n, p = Ts.shape[0], Ts.shape[1], Ts.ndim - 1
        check_options(method, {**options, "gap_tol": gap_tol}, n=n, p=p)
        self.method, self.rngs, self.gap_tol, self.options = method, rngs, gap_tol, options
        self.B, self.n, self.p = B, n, p
        # Every step runs on T̂ / 2^k, as the front door's steps do (one k per instance, from
        # T̂: the deflated tensors are no larger), so the Gram matrix and the deflation terms
        # neither underflow nor overflow; finish_step scales the answers back.
        self.norm = normalize(Ts)
        Tn = self.norm.T
        if isinstance(Tn, TensorOperator):
            # Matrix-free: no unfolding to bound the steps with (upper_bound = inf, never
            # certified); the Frobenius norm, which scales the shift and tolerances, is exact.
            self.gram0, self.fro2 = None, Tn.fro2()
        else:
            M = Tn.reshape(B, n, -1)
            self.gram0 = np.matmul(M, M.transpose(0, 2, 1))
            self.fro2 = np.array([np.dot(m, m) for m in Tn.reshape(B, -1)])  # no n^p temporary
        # Worst-case rounding of the Gram entries (inner dimension n^{p-1}) and of the update.
        self.gamma = (n ** (p - 1) + 8 * n) * np.finfo(float).eps
        # sshopm's deflation_block (revision 8): the terms kept as rows of a buffer of Uᵀ,
        # grown by doubling (each fused block contiguous, no copy of U per step); U is its
        # transposed view. Earlier revisions keep U itself, concatenated per step (their bits).
        self.block = resolve_method(method).with_defaults(options).get("deflation_block")
        self._Ut = np.zeros((B, 0 if self.block is None else min(16, n), n))
        self.U = np.zeros((B, n, 0))
        self.W = np.zeros((B, n, 0))
        self.lams = np.zeros((B, 0))
        self.abs_sum = np.zeros(B)
        self.keep = int(options.get("n_starts", DEFAULT_N_STARTS))
        self.warm: tuple[np.ndarray, np.ndarray] | None = None
        self.pending: tuple[Any, ...] | None = None
        self.check_draws = check_draws
        self.check_starts: dict[int, np.ndarray] = {}

    def propose(self, forced: np.ndarray | None = None) -> RankOneResult:
        """The next step: the method's, or (``forced (B, n)``) the one at that point."""
        t0 = time.perf_counter()
        B, p, fro2 = self.B, self.p, self.fro2
        fro = np.sqrt(np.maximum(fro2, 0.0))
        warm = None if forced is not None else self.warm
        theta = None
        if self.check_draws is not None and forced is None:
            j = self.U.shape[2]  # this step's index
            theta = np.stack([d.at(j)[0] for d in self.check_draws])
        defl = Deflation(
            self.U, self.lams, fro, 1.0, *(warm or (None, None)), theta, block=self.block
        )
        abs_sum = self.abs_sum
        slack = self.gamma * (fro2 + 2 * abs_sum * np.sqrt(np.maximum(fro2, 0)) + abs_sum**2)
        bound = (
            np.full(B, np.inf)
            if self.gram0 is None
            else _gram_bound(self.gram0, self.W, self.U, self.lams, p, slack)
        )
        if forced is None:
            out = MethodOutput.coerce(
                self.fn(self.norm.T, self.rngs, defl, **self.options), self.method
            )
            if theta is not None and out.check_starts is not None:
                self.check_starts[self.U.shape[2]] = out.check_starts
        else:
            out = _forced_output(forced)
        done = finish_step(
            self.norm,
            out,
            self.method,
            gap_tol=self.gap_tol,
            elapsed=time.perf_counter() - t0,
            deflation=defl,
            unfolding_bound=bound,
            notes="implicit deflation" + ("" if forced is None else f"; {REDONE_NOTE}"),
        )
        self.pending = (out, done)
        return done.result

    def commit(self) -> None:
        """Add the proposed step to the deflation terms (Algorithm 1, line 4)."""
        out, done = self.pending
        p, U, lams = self.p, self.U, self.lams
        x, lam = out.x, done.lam_n
        # T̂ x^{p-1} (undeflated) = deflated gradient + the deflation terms at x.
        w = done.grad_n + np.einsum(
            "bk,bik->bi", lams * ipow(np.einsum("bi,bik->bk", x, U), p - 1), U
        )
        self._append(x, lam, w)
        self.warm = None
        if out.final_grads is not None and self.options.get("warm", True):
            Xw, Gw = _leftovers(out.final_starts, out.final_values, out.final_grads, x, self.keep)
            # Their gradients under the next deflated tensor: subtract λ̂ (x·w)^{p-1} x.
            Gw -= (lam[:, None] * ipow(np.einsum("bsi,bi->bs", Xw, x), p - 1))[..., None] * x[
                :, None, :
            ]
            self.warm = (Xw, Gw)
        self.pending = None

    #: Version of :meth:`snapshot`'s layout (a step checkpoint's fingerprint holds it).
    STATE_VERSION = 1

    def snapshot(self) -> dict[str, Any]:
        """What the next steps read besides the generators and the check draws (between
        steps: nothing is pending): the deflation terms as they are laid out in memory, the
        running sums, the warm starts and the shared check starts."""
        return {
            "Ut": self._Ut,
            "U": self.U if self.block is None else None,
            "W": self.W,
            "lams": self.lams,
            "abs_sum": self.abs_sum,
            "fro2": self.fro2,
            "warm": None if self.warm is None else list(self.warm),
            "check_starts": {str(j): v for j, v in self.check_starts.items()},
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from a :meth:`snapshot` of an engine built with the same arguments."""
        self._Ut = np.array(state["Ut"], dtype=float)
        self.lams = np.array(state["lams"], dtype=float)
        k = self.lams.shape[1]
        if self.block is None:
            self.U = np.array(state["U"], dtype=float)
        else:  # the view the steps read: the first k rows of the buffer of Uᵀ, transposed
            self.U = self._Ut[:, :k].transpose(0, 2, 1)
        self.W = np.array(state["W"], dtype=float)
        self.abs_sum = np.array(state["abs_sum"], dtype=float)
        self.fro2 = np.array(state["fro2"], dtype=float)
        warm = state["warm"]
        self.warm = None if warm is None else (np.array(warm[0]), np.array(warm[1]))
        self.check_starts = {int(j): np.asarray(v) for j, v in state["check_starts"].items()}
        self.pending = None

    def replay(self, lam: np.ndarray, x: np.ndarray) -> None:
        """Add a step taken elsewhere (``lam (B,)`` in the tensor's units, ``x (B, n)``)."""
        lam_n = np.ldexp(lam, -self.norm.k)
        w = deflated_contract(self.norm.T, x[:, None, :], self.p - 1)[:, 0]
        self._append(x, lam_n, w)
        self.warm = None

    def _append(self, x: np.ndarray, lam: np.ndarray, w: np.ndarray) -> None:
        if self.block is None:
            self.U = np.concatenate([self.U, x[:, :, None]], axis=2)
        else:
            k = self.U.shape[2]
            if k == self._Ut.shape[1]:
                grown = np.zeros((self.B, max(2 * k, 16), self.n))
                grown[:, :k] = self._Ut[:, :k]
                self._Ut = grown
            self._Ut[:, k] = x
            self.U = self._Ut[:, : k + 1].transpose(0, 2, 1)
        self.W = np.concatenate([self.W, w[:, :, None]], axis=2)
        self.lams = np.concatenate([self.lams, lam[:, None]], axis=1)
        self.abs_sum = self.abs_sum + np.abs(lam)
        # ‖R − λ x^{⊗p}‖² = ‖R‖² − λ² exactly when λ = R x^p, ‖x‖ = 1
        self.fro2 = self.fro2 - lam**2


def _gram_bound(
    gram0: np.ndarray, W: np.ndarray, U: np.ndarray, lam: np.ndarray, p: int, slack: np.ndarray
) -> np.ndarray:
    """Spectral norm of the unfolding of ``T̂ − Σ_j λ_j u_j^{⊗p}`` from ``gram0 = M Mᵀ``.

    With ``k_j = u_j^{⊗(p-1)}`` and ``w_j = M k_j = T̂ u_j^{p-1}``, the residual unfolding is
    ``M − U Λ Kᵀ`` and its Gram matrix ``M Mᵀ − W Λ Uᵀ − U Λ Wᵀ + U Λ C Λ Uᵀ`` with
    ``C = (UᵀU)^{∘(p-1)}``: n × n work per step instead of a pass over the tensor. ``slack``
    (B,) is a worst-case rounding allowance on the Gram matrix, added before the square root
    so the result stays an upper bound.
    """
    WL = W * lam[:, None, :]
    C = ipow(np.matmul(U.transpose(0, 2, 1), U), p - 1)
    G = gram0 - np.matmul(WL, U.transpose(0, 2, 1))
    G = G - np.matmul(U, WL.transpose(0, 2, 1))
    UL = U * lam[:, None, :]
    G = G + np.matmul(UL, np.matmul(C, UL.transpose(0, 2, 1)))
    top = np.linalg.eigvalsh(0.5 * (G + G.transpose(0, 2, 1)))[:, -1]
    return np.sqrt(np.maximum(top + slack, 0.0))


def _leftovers(
    X: np.ndarray, F: np.ndarray, G: np.ndarray, x: np.ndarray, keep: int
) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``keep`` distinct final iterates per instance away from the chosen ``x``, with their
    gradients: the other local maxima a step found (or is still climbing to), which stay near
    local maxima after ``x`` is deflated and so are nearly converged starts for the next step.
    ``(B, keep, n)`` twice, padded by repetition."""
    B, S, n = X.shape
    out, grad = np.empty((B, keep, n)), np.empty((B, keep, n))
    for b in range(B):
        chosen: list[int] = []
        cos = np.abs(X[b] @ X[b].T)
        for s in np.argsort(-F[b], kind="stable"):
            if abs(X[b, s] @ x[b]) >= 0.5 or (chosen and cos[s, chosen].max() > 0.99):
                continue
            chosen.append(int(s))
            if len(chosen) == keep:
                break
        rows = np.array(chosen or [int(np.argmax(F[b]))])[np.arange(keep) % max(1, len(chosen))]
        out[b], grad[b] = X[b, rows], G[b, rows]
    return out, grad
