"""Solver policy: which method bounds ``||E||`` by default, and what a rank-one solve costs.

Choices made *for* a caller (a sweep, the CLI) from the problem size alone, in one place so
that spec validation, block sizing and the kernels agree. What a method is (global or local,
its cost) comes from its record (:func:`sroa_dist.methods.resolve_method`), never from its
name. Core module: numpy/math and the numerical core only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .builtin import relaxation_tractable
from .records import resolve_method

__all__ = ["certified_tractable", "resolve_norm_method", "solve_cost"]

#: The default ``||E||`` methods: the certified one where its relaxation is affordable, the
#: local one elsewhere.
CERTIFIED_NORM_METHOD = "certified"
LOCAL_NORM_METHOD = "sshopm"


def certified_tractable(n: int, p: int) -> bool:
    """Whether the certified (moment relaxation) solver is affordable per instance.

    Delegates to :func:`sroa_dist.methods.builtin.relaxation_tractable` (predicted step time within
    the default time budget); used to choose the default norm method.
    """
    return bool(relaxation_tractable(n, p))


def resolve_norm_method(method: str, n: int, p: int, norm_method: str | None) -> str:
    """The method bounding ``||E||``: ``norm_method`` if given, else the method itself if its
    steps can be global (its record's ``global_steps``), else certified when tractable, else
    sshopm."""
    if norm_method is not None:
        return norm_method
    if resolve_method(method).global_steps:
        return method
    return CERTIFIED_NORM_METHOD if certified_tractable(n, p) else LOCAL_NORM_METHOD


def solve_cost(method: str, n: int, p: int, options: Mapping[str, Any] | None = None) -> float:
    """Rough seconds per rank-one solve on one core, from the method's record (its cost model
    at ``options``, default the method's defaults); used to size blocks of work and to set
    their deadlines.

    Local methods scale with the tensor size ``n^p`` (and above
    :data:`~sroa_dist.methods.builtin.IMPLICIT_BYTES` per tensor, where SROA deflates implicitly,
    with the method's own per-entry cost); the relaxation methods add the certified-step model
    :func:`~sroa_dist.methods.builtin.relaxation_cost` where they solve the relaxation.
    """
    return float(resolve_method(method).cost(int(n), int(p), dict(options or {})))
