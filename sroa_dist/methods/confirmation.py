"""Confirmation of a local rank-one step: whether starts independent of the ones that found the
best value, aimed at what those did not explore, still find a higher value.

A multi-start ascent returns the best local maximum its starts reached. The global maximiser of
a nearly SOD tensor sits at one of the components, and each component has its own basin; a
start set can miss a whole basin while every basin it did reach was reached twice (at n = 6,
16 uniform starts miss one of six basins about a third of the time). Counting how often the
reached points repeat (a Good–Turing estimate of the unseen mass, :func:`first_set_settles`,
the rule of ``sshopm`` revisions 1–3) therefore called such misses confirmed: measured with
benchmarks/bench_miss_rate.py, every miss of the first step at n = 6 was "confirmed".

:func:`explore` (revision 4) confirms only what a search aimed at the unexplored part of the
sphere upholds. Each round draws, from a stream spawned off the instance's own (so the first
set and later SROA steps keep their draws), :data:`ROUND_COMPLEMENT` starts uniform in the
orthogonal complement of the distinct relevant maxima found so far (where an unseen
component's basin lies: the components are nearly orthogonal) and :data:`ROUND_UNIFORM`
uniform starts. A round that finds a higher value replaces the answer and another round runs;
a round that finds neither a higher value nor a new relevant maximum closes the exploration:
the step is ``confirmed``. A step whose exploration does not close within ``max_starts`` is
not confirmed. This is evidence, measured against certified steps, never a certificate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..tensors import FloatArray
from .ascent import BEST_RTOL, random_starts

__all__ = [
    "CONFIRM_RULES",
    "ROUND_COMPLEMENT",
    "ROUND_UNIFORM",
    "SAME_POINT_COS",
    "complement_starts",
    "explore",
    "first_set_settles",
    "relevant_points",
    "settle",
]

#: ``sshopm``'s ``confirm`` rules: ``"explore"`` (revision 4, :func:`explore`) and ``"settle"``
#: (revisions 1–3: :func:`first_set_settles`, then start sets doubled until two agree).
CONFIRM_RULES = ("explore", "settle")
#: Two local maxima are the same point when ``|cos| >= SAME_POINT_COS``.
SAME_POINT_COS = 0.999
#: Starts per exploration round in the orthogonal complement of the maxima found so far.
ROUND_COMPLEMENT = 4
#: Uniform starts per exploration round (landscapes whose maxima are not orthogonal).
ROUND_UNIFORM = 4
#: Directions of the found maxima whose Gram eigenvalue is below this fraction of the largest
#: do not count towards their span (they are rounding, not a direction).
_SPAN_RTOL = 1e-8


def first_set_settles(
    Xs: FloatArray,
    Fs: FloatArray,
    first: NDArray[np.intp],
    margin: float,
    abandon_margin: float = math.inf,
) -> NDArray[np.bool_]:
    """The confirmation rule of ``sshopm`` revisions 1–3 (``confirm="settle"``): instances
    whose first start set already gives the evidence two agreeing sets would give, ``(B,)``.

    True where at least two starts reached the best value (within :data:`BEST_RTOL`), every
    point the set ended at within ``abandon_margin`` of the best value (relative; all with
    ``inf``) was reached by at least two starts (``|cos| >= SAME_POINT_COS``), and no start
    away from the best point is within ``margin`` of it (relative). Measured to be unsound
    where a whole basin is missed (see the module docstring); kept to reproduce those
    revisions.
    """
    rows = np.arange(Fs.shape[0])
    top = Fs[rows, first]
    n_best = np.sum(Fs >= (top - BEST_RTOL * np.abs(top))[:, None], axis=1)
    cos = np.abs(np.matmul(Xs, Xs.transpose(0, 2, 1)))
    away = cos[rows, first] < SAME_POINT_COS
    rival = np.max(np.where(away, Fs, -np.inf), axis=1)
    # Padding rows of later sets carry -inf values and never reach this (first set only).
    seen_twice = np.sum(cos >= SAME_POINT_COS, axis=2) >= 2
    if abandon_margin < math.inf:
        seen_twice |= Fs < (top - abandon_margin * np.abs(top))[:, None]
    with np.errstate(invalid="ignore"):  # margin = inf: every instance is confirmed
        rival_ok = rival < top - margin * np.abs(top)
    return (n_best >= 2) & np.all(seen_twice, axis=1) & rival_ok


def relevant_points(
    X: FloatArray, F: FloatArray, top: FloatArray, margin: float, known: FloatArray | None = None
) -> FloatArray:
    """The distinct points among ``X (B, S, n)`` (values ``F (B, S)``) within ``margin`` of
    ``top (B,)`` (relative; every finite one with ``inf``) that are not already in
    ``known (B, K, n)`` (zero rows are padding): ``(B, S, n)``, zero where a point is not
    kept. A point is kept when it is relevant and no better point of ``X`` and no point of
    ``known`` is the same point (``|cos| >= SAME_POINT_COS``)."""
    B, S, _ = X.shape
    order = np.argsort(-F, axis=1, kind="stable")
    Xo = np.take_along_axis(X, order[..., None], axis=1)
    Fo = np.take_along_axis(F, order, axis=1)
    floor = np.full(B, -np.inf) if math.isinf(margin) else top - margin * np.abs(top)
    keep = np.isfinite(Fo) & (Fo >= floor[:, None])
    same = np.abs(np.matmul(Xo, Xo.transpose(0, 2, 1))) >= SAME_POINT_COS
    keep &= ~np.any(np.tril(same, k=-1), axis=2)  # a better point is the same point
    if known is not None and known.shape[1]:
        keep &= ~np.any(np.abs(np.matmul(Xo, known.transpose(0, 2, 1))) >= SAME_POINT_COS, axis=2)
    return np.where(keep[..., None], Xo, 0.0)


#: Share of its own draw a complement start keeps inside the span (see complement_starts).
_LEAK = 1e-2


def complement_starts(G: FloatArray, found: FloatArray) -> FloatArray:
    """Gaussian draws ``G (B, C, n)`` turned into starts uniform on the unit sphere of the
    orthogonal complement of the span of ``found (B, K, n)`` (zero rows are padding; uniform
    on the whole sphere where that complement is empty), up to a 1 % trace of the draw inside
    the span: ``(B, C, n)``."""
    n = G.shape[-1]
    if found.shape[1]:
        # The span's basis: eigenvectors of Σ_k f_k f_kᵀ with a non-negligible eigenvalue.
        w, V = np.linalg.eigh(np.matmul(found.transpose(0, 2, 1), found))  # (B, n), (B, n, n)
        span = w > _SPAN_RTOL * np.maximum(w[:, -1:], np.finfo(float).tiny)
        P = V * span[:, None, :]
        inside = np.matmul(np.matmul(G, P), P.transpose(0, 2, 1))
        full = np.sum(span, axis=1) >= n  # nothing left outside: uniform starts
        # A trace of the draw itself stays in: where the tensor vanishes on the complement
        # (rank below n) a start exactly in it would have no gradient to climb.
        G = np.where(full[:, None, None], G, G - (1.0 - _LEAK) * inside)
    return G / np.linalg.norm(G, axis=-1, keepdims=True)


#: ``ascend(X0 (R, S, n), rows) -> (X (R, S', n), F (R, S'), iterations (R,))``: the method's
#: own ascent on the instances ``rows`` (every start of an instance along axis 1, both signs
#: for even p).
Ascend = Callable[[FloatArray, NDArray[np.intp]], tuple[FloatArray, FloatArray, Any]]


def explore(
    ascend: Ascend,
    rngs: Sequence[np.random.Generator],
    Xs: FloatArray,
    Fs: FloatArray,
    *,
    budget: int,
    relevance: float,
) -> tuple[FloatArray, FloatArray, NDArray[np.bool_], NDArray[np.int64], NDArray[np.int64]]:
    """The confirmation rule of ``sshopm`` revision 4 (``confirm="explore"``; see the module
    docstring).

    Parameters
    ----------
    ascend : callable
        Runs the method's ascent on the instances ``rows`` from starts ``(R, S, n)``.
    rngs : sequence of Generator
        One per instance; each round spawns a fresh stream from it.
    Xs, Fs : (B, S, n), (B, S) ndarrays
        The first start set's final points and values (every start of an instance along
        axis 1).
    budget : int
        Exploration rounds of :data:`ROUND_COMPLEMENT` + :data:`ROUND_UNIFORM` starts that fit
        in ``max_starts`` (0: none, nothing is confirmed).
    relevance : float
        Maxima more than this fraction of the best value below it are not relevant: they
        neither need exploring nor count as new.

    Returns
    -------
    Xs, Fs : ndarrays
        Every start's final point and value, the rounds' appended (``-inf`` padding where an
        instance had finished exploring).
    confirmed : (B,) bool ndarray
    used : (B,) int ndarray
        Starts the rounds added per instance.
    iterations : (B,) int ndarray
        Largest iteration count of the rounds per instance.
    """
    B, _, n = Xs.shape
    per_round = ROUND_COMPLEMENT + ROUND_UNIFORM
    best = Fs.max(axis=1)
    found = relevant_points(Xs, Fs, best, relevance)
    confirmed = np.zeros(B, dtype=bool)
    open_ = np.ones(B, dtype=bool)
    used = np.zeros(B, dtype=np.int64)
    iterations = np.zeros(B, dtype=np.int64)
    for _ in range(budget):
        rows = np.flatnonzero(open_)
        if rows.size == 0:
            break
        G = np.stack([rngs[b].spawn(1)[0].standard_normal((per_round, n)) for b in rows])
        X0 = np.concatenate(
            [
                complement_starts(G[:, :ROUND_COMPLEMENT], found[rows]),
                G[:, ROUND_COMPLEMENT:]
                / np.linalg.norm(G[:, ROUND_COMPLEMENT:], axis=-1)[..., None],
            ],
            axis=1,
        )
        Xn, Fn, it = ascend(X0, rows)
        used[rows] += per_round
        iterations[rows] = np.maximum(iterations[rows], np.asarray(it))
        top = Fn.max(axis=1)
        higher = top > best[rows] + BEST_RTOL * np.abs(best[rows])
        new = relevant_points(Xn, Fn, np.maximum(best[rows], top), relevance, found[rows])
        has_new = np.any(new != 0.0, axis=(1, 2))
        # A higher value changes the answer: explore again around it. Maxima found earlier
        # stay in the span even if no longer relevant: they are known, not unexplored.
        closed = ~higher & ~has_new
        confirmed[rows[closed]] = True
        open_[rows[closed]] = False
        best[rows] = np.maximum(best[rows], top)
        grow = np.zeros((B,) + new.shape[1:])
        grow[rows] = new
        found = np.concatenate([found, grow], axis=1)
        pad_X = np.zeros((B,) + Xn.shape[1:])
        pad_F = np.full((B, Xn.shape[1]), -np.inf)
        pad_X[rows], pad_F[rows] = Xn, Fn
        Xs, Fs = np.concatenate([Xs, pad_X], axis=1), np.concatenate([Fs, pad_F], axis=1)
    return Xs, Fs, confirmed, used, iterations


def settle(
    again: Ascend,
    rngs: Sequence[np.random.Generator],
    Ts: FloatArray,
    Xs: FloatArray,
    Fs: FloatArray,
    first: NDArray[np.intp],
    used: NDArray[np.int64],
    n_iter: NDArray[np.int64],
    n_starts: int,
    max_starts: int,
    n: int,
    confirm_margin: float,
    margin: float,
) -> tuple[FloatArray, FloatArray, NDArray[np.bool_], NDArray[np.int64], NDArray[np.int64]]:
    """``confirm="settle"``, the rule of ``sshopm`` revisions 1–3: the first set's own
    evidence (:func:`first_set_settles`), else independent start sets of ``n_starts`` uniform
    starts, doubled until two agree on the best value or ``max_starts`` would be exceeded.
    ``again`` is the method's ascent (:data:`Ascend`); returns the merged ``(Xs, Fs)``,
    ``confirmed``, ``used`` and ``n_iter``."""
    B = Ts.shape[0]
    confirmed = np.zeros(B, dtype=bool)
    size = n_starts
    if 2 * size <= max_starts:
        # A second start set can only change the answer where the first set's best is in
        # doubt: pay for it there only.
        confirmed = first_set_settles(Xs, Fs, first, confirm_margin, margin)
    while 2 * size <= max_starts:
        rows = np.flatnonzero(~confirmed)
        if rows.size == 0:
            break
        fresh = random_starts([rngs[b].spawn(1)[0] for b in rows], size, n)
        Xn, Fn, itn = again(fresh, rows)
        old, new = Fs[rows].max(axis=1), Fn.max(axis=1)
        scale = np.maximum(np.abs(old), np.abs(new)) + np.finfo(float).tiny
        confirmed[rows] = np.abs(new - old) <= BEST_RTOL * scale
        n_iter[rows] = np.maximum(n_iter[rows], itn)
        used[rows] += Xn.shape[1]
        # Merge; instances not in `rows` get padding at -inf, which no statistic counts.
        pad_X = np.zeros((B,) + Xn.shape[1:])
        pad_F = np.full((B, Xn.shape[1]), -np.inf)
        pad_X[rows], pad_F[rows] = Xn, Fn
        Xs, Fs = np.concatenate([Xs, pad_X], axis=1), np.concatenate([Fs, pad_F], axis=1)
        size *= 2
    return Xs, Fs, confirmed, used, n_iter
