"""The worst-case cube's variables, and the found ``E`` packed into it and read back.

The kind's own dims are the cube's ``step`` and ``component``, each with a meaning of its own
here (stated in every variable's ``note``): ``step`` is SROA's step ``j = 1..n`` (per-step errors)
and the component ``j`` of ``T`` (its weight); ``component`` indexes a packed array. ``E`` is
stored as its unique entries (``C(n + p − 1, p)`` of them, the multisets ``i_1 ≤ … ≤ i_p`` in
the lexicographic order of :func:`sroa_dist.monomials.multiset_tuples`): a symmetric tensor
is its unique entries, and the packed form is ``p!`` times smaller than the dense one at every
n, so one format serves every size. ``V`` is stored row-major (``n·n`` entries, never more than
``C(n + p − 1, p)``). :func:`unpack_tensor` and :func:`stored_result` rebuild both, so a
re-check (:func:`sroa_dist.recheck_worst_case`) recomputes the certified norm and the certified
SROA from the store alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from sroa_dist.errors import InputError
from sroa_dist.monomials import multiset_index, multiset_tuples
from sroa_dist.studies import WorstCaseResult

from ...cube import COMPONENT, STEP, Variable, by_name

__all__ = [
    "WORST_CASE_VARIABLES",
    "pack_tensor",
    "packed_size",
    "stored_result",
    "unpack_tensor",
]

_S = (STEP,)
_C = (COMPONENT,)
_PER_STEP = (("note", "dim 'step' is SROA's step j = 1..n here (errors after optimal matching)"),)
_PACKED_E = (
    (
        "note",
        "dim 'component' indexes E's unique entries here: the multisets i1 <= ... <= ip of "
        "{0..n-1} in lexicographic order (sroa_dist.monomials.multiset_tuples); NaN past "
        "C(n + p - 1, p). sroa_dist.sweep.kinds.worst_case.unpack_tensor rebuilds E",
    ),
)
_FLAT_V = (
    (
        "note",
        "dim 'component' indexes V row-major here: entry i * n + j is V[i, j], coordinate i of "
        "component j; NaN past n * n",
    ),
)
_CLAIM = (("paper", "Theorem 3.1: |lambda_hat - lambda| <= 2 ||E||"),)

#: Variables of a worst-case sweep (``[worst_case]`` spec): one search per instance.
WORST_CASE_VARIABLES: Mapping[str, Variable] = by_name(
    Variable(
        "error",
        (),
        "f8",
        "max_j |lambda_hat_j - lambda_pi(j)| of SROA (the steps' method) on T + E",
        extra=_CLAIM,
    ),
    Variable(
        "value",
        (),
        "f8",
        "the metric the search maximised ('lam': error / eps, eps the attained lower "
        "end of ||E||, so an upper bound of error / ||E||)",
    ),
    Variable("norm_lower", (), "f8", "lower end of ||E||'s bracket (attained: eps)"),
    Variable(
        "norm_upper",
        (),
        "f8",
        "upper end of ||E||'s bracket: the relaxation's validated bound where "
        "norm_certified, else the unfolding bound (true, but loose)",
    ),
    Variable("norm_certified", (), "bool", "||E||'s bracket is certified tight"),
    Variable(
        "ratio",
        (),
        "f8",
        "error / norm_upper: the ratio where ratio_certified, else a lower bound on it",
        extra=_CLAIM,
    ),
    Variable(
        "ratio_certified",
        (),
        "bool",
        "ratio is certified (its norm bracket is); False: ratio is a lower bound",
    ),
    Variable(
        "exceeds_c",
        (),
        "bool",
        "ratio > c (worst_case.c): E claims to break error <= c ||E||",
        extra=(("note", "a claim stands once re-checked with certified steps"),),
    ),
    Variable("n_evals", (), "f8", "SROA runs the search made"),
    Variable(
        "tilt_value",
        (),
        "f8",
        "the metric of the coherent-tilt start (the structured family beside the search)",
    ),
    Variable(
        "tilt_cosine",
        (),
        "f8",
        "largest |<E, E_tilt,l>_F| / (||E||_F ||E_tilt,l||_F) over l: 1 = a coherent tilt",
    ),
    Variable("solve_time", (), "f8", "wall seconds of the instance's search", units="s"),
    Variable("lam_err", _S, "f8", "|lambda_hat_j - lambda_pi(j)| on T + E", extra=_PER_STEP),
    Variable("vec_err", _S, "f8", "||v_hat_j - v_pi(j)|| on T + E", extra=_PER_STEP),
    Variable(
        "weights",
        _S,
        "f8",
        "weight lambda_j of T's component j",
        extra=(("note", "dim 'step' indexes T's components j = 1..n here"),),
    ),
    Variable("E_packed", _C, "f8", "the found perturbation E, packed", extra=_PACKED_E),
    Variable("basis_flat", _C, "f8", "T's orthonormal basis V, flattened", extra=_FLAT_V),
)


def packed_size(n: int, p: int) -> int:
    """Unique entries of a symmetric ``(n,)*p`` tensor: ``C(n + p − 1, p)``."""
    return math.comb(int(n) + int(p) - 1, int(p))


def pack_tensor(E: np.ndarray) -> np.ndarray:
    """The unique entries of the symmetric tensor ``E`` (the sorted index of each class)."""
    n, p = E.shape[0], E.ndim
    return np.ascontiguousarray(E[tuple(multiset_tuples(n, p).T)], dtype=float)


def unpack_tensor(packed: np.ndarray, n: int, p: int) -> np.ndarray:
    """The symmetric ``(n,)*p`` tensor whose unique entries are ``packed`` (NaN padding past
    ``C(n + p − 1, p)`` ignored); :class:`~sroa_dist.InputError` when entries are missing."""
    ids, count = multiset_index(int(n), int(p))
    packed = np.asarray(packed, dtype=float)
    if packed.shape[0] < count or not np.all(np.isfinite(packed[:count])):
        raise InputError(
            f"E_packed: expected {count} finite entries for n = {n}, p = {p}; received "
            f"{int(np.isfinite(packed[:count]).sum())}",
            "the instance was not computed, or its block is damaged: `sroa-dist check` the store",
        )
    return packed[:count][ids]


def stored_result(
    values: Mapping[str, Any], n: int, p: int, eps: float, metric: str = "lam"
) -> WorstCaseResult:
    """A :class:`~sroa_dist.WorstCaseResult` of one stored instance (``values``: the cube's
    variables at it, as arrays), with what a re-check uses (``E``, ``λ``, ``V``) and the claim
    (``ratio``, ``ratio_kind``, the bracket); the search's record the cube does not keep (its
    trace, its starts) is empty."""
    n, p = int(n), int(p)
    E = unpack_tensor(values["E_packed"], n, p)
    V = np.asarray(values["basis_flat"], dtype=float)[: n * n].reshape(n, n)
    lam = np.asarray(values["weights"], dtype=float)[:n]
    certified = bool(values["ratio_certified"])
    return WorstCaseResult(
        E=E,
        metric=metric,
        value=float(values["value"]),
        lam_err=np.asarray(values["lam_err"], dtype=float)[:n],
        vec_err=np.asarray(values["vec_err"], dtype=float)[:n],
        trace=np.zeros(0),
        best_trace=np.zeros(0),
        start="",
        start_values={},
        tilt_cosine=float(values["tilt_cosine"]),
        tilt_component=-1,
        norm_bracket=(float(values["norm_lower"]), float(values["norm_upper"])),
        eps=float(eps),
        lambdas=lam,
        V=V,
        seed=None,
        norm_certified=bool(values["norm_certified"]),
        ratio=float(values["ratio"]),
        ratio_kind="certified" if certified else "lower-bound",
    )
