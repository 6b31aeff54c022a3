"""Solver policy: which method bounds ``||E||`` by default, and what a rank-one solve costs.

Choices made *for* a caller (a sweep, the CLI) from the problem size alone, in one place so
that spec validation, block sizing and the kernels agree. Core module: numpy/math and the
numerical core only.
"""

from __future__ import annotations

import math

from .decomposition import IMPLICIT_BYTES
from .solvers import relaxation_tractable

__all__ = ["certified_tractable", "resolve_norm_method", "solve_cost"]

#: Methods that solve the rank-one problem globally (and can certify it).
GLOBAL_METHODS = ("certified", "sos")


def certified_tractable(n: int, p: int) -> bool:
    """Whether the certified (moment relaxation) solver is affordable per instance.

    Delegates to :func:`sroa_dist.solvers.relaxation_tractable` (predicted step time within
    the default time budget); used to choose the default norm method and the cost model.
    """
    return bool(relaxation_tractable(n, p))


def resolve_norm_method(method: str, n: int, p: int, norm_method: str | None) -> str:
    """The method bounding ``||E||``: ``norm_method`` if given, else the method itself if it is
    global (certified / sos), else certified when tractable, else sshopm."""
    if norm_method is not None:
        return norm_method
    if method in GLOBAL_METHODS:
        return method
    return "certified" if certified_tractable(n, p) else "sshopm"


def solve_cost(method: str, n: int, p: int) -> float:
    """Rough seconds per rank-one solve on one core; only used to size blocks of work.

    Local methods scale with the tensor size ``n^p``; the moment relaxation with the cube of
    its moment-matrix side ``C(n + d, d)``, ``d = ceil(p / 2)``, and is priced as local where
    it is intractable. Above :data:`~sroa_dist.decomposition.IMPLICIT_BYTES` per tensor SROA
    deflates implicitly and ``sshopm`` steps mostly restart from the previous step's local
    maxima (about ten times cheaper per entry than ``power``'s cold iterations). The
    coefficients are orders of magnitude measured on one core; the measurements and their
    date are in ``docs/sweeps.md`` (Block sizing).
    """
    if method in ("sshopm", "power") and 8.0 * float(n) ** p > IMPLICIT_BYTES:
        return 0.01 + (1e-8 if method == "sshopm" else 1e-7) * float(n) ** p
    local = 1e-4 + 2.5e-7 * float(n) ** p
    if method in GLOBAL_METHODS and certified_tractable(n, p):
        d = (p + 1) // 2
        return local + 0.05 * (math.comb(n + d, d) / 66) ** 3
    return local
