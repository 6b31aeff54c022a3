"""Rank-one steps on matrix-free operators (:class:`~sroa_dist.operators.TensorOperator`):
which methods may run on one, and the local step the front door returns for it."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from ..operators import TensorOperator
from .ascent import Deflation
from .builtin import MethodOutput
from .finishing import RankOneResult, finish_step, normalize
from .records import Method

__all__ = ["TensorOperator", "check_local_method", "operator_rank_one"]

#: The note every step on an operator carries: no bound is known without the entries.
OPERATOR_NOTE = "matrix-free operator, no global bound"


def check_local_method(method: str, record: Method) -> None:
    """Refuse, with the reason, a rank-one method that cannot run on a :class:`TensorOperator`:
    only local methods (those that run under SROA's implicit deflation) contract without
    reading entries."""
    if not record.implicit:
        raise InputError(
            f"method: {method!r} needs every entry of the tensor (its moment relaxation reads "
            "them) and a matrix-free operator offers only contractions; use a local method "
            "('sshopm' or 'power'), whose steps are local optima, never certified",
            "use a local method ('sshopm' or 'power') on a matrix-free operator",
        )


def operator_rank_one(
    Ts: TensorOperator,
    method: str,
    record: Method,
    rngs: Sequence[np.random.Generator],
    certificate: bool,
    options: dict[str, Any],
    *,
    gap_tol: float,
) -> RankOneResult:
    """:func:`sroa_dist.rank_one_batch` on an operator, finished by the one finishing rule.

    The method runs under an empty implicit deflation (so it only contracts). No bound is known
    without the entries: the unfolding bound is ``inf``, so nothing is certified. The values are
    not rescaled by powers of two as dense tensors are (an operator's weights are at most 1e150,
    see :func:`sroa_dist.structured_tensor`).
    """
    check_local_method(method, record)
    if certificate:
        raise InputError(
            "certificate: a matrix-free operator has no relaxation to certify",
            "pass certificate=False, or a dense tensor to certify",
        )
    if "lazy" in record.options:
        # Lazy stopping hands unfinished starts to a next SROA step; a lone step has none.
        options = {"lazy": False, **options}
    B, n = Ts.shape[0], Ts.shape[1]
    defl = Deflation(np.zeros((B, n, 0)), np.zeros((B, 0)), np.sqrt(Ts.fro2()))
    t0 = time.perf_counter()
    out = MethodOutput.coerce(record(Ts, list(rngs), defl, **options), method)
    done = finish_step(
        normalize(Ts),
        out,
        method,
        gap_tol=gap_tol,
        elapsed=time.perf_counter() - t0,
        deflation=defl,
        unfolding_bound=np.full(B, np.inf),
        notes=OPERATOR_NOTE,
    )
    return done.result
