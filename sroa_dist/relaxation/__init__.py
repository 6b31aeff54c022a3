"""Lasserre moment relaxation of ``max T x^p`` on the unit sphere: SCS, cached, validated bounds.

The relaxation (order ``d = ceil(p/2)`` by default, as solved with GloptiPoly 3 in the paper) is
built once per ``(n, p, d)`` and cached; only the cost vector changes between tensors. Each solve

1. runs a short, deterministic SCS warm-up (a few tens of iterations),
2. extracts maximiser candidates from the moments and polishes them (:func:`polish`),
3. builds a dual certificate on the optimal face at the best candidate ``x``: an orthogonal
   projection of SCS's dual onto ``{Z : dual equalities hold exactly, Z m(x) = 0}``, refined by
   alternating projections with the PSD cone,
4. falls back to a full SCS solve (warm-started from step 1) when that does not close the gap.

Every reported ``upper_bound`` is *validated*: it is computed from the dual vector by a bound
that holds for any dual guess (:func:`sroa_dist.relaxation.bound.validated_bound`), so it does
not rely on the solver's tolerance or on the relaxation being tight.

Modules: :mod:`.builders` (problem construction), :mod:`.scs_driver` (SCS settings, warm-up,
chunked solve), :mod:`.bound` (validated bound, repair, face certificate: the paper-critical
part), :mod:`.export` (SOS certificate export), :mod:`.polish` (candidate polish and input
checks), :mod:`.core` (:class:`MomentRelaxation`); monomials and index multisets come from
:mod:`sroa_dist.monomials`, shared with the noise draws and the certificate checker.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..monomials import monomial_exponents, polynomial_coefficients
from .builders import FORMULATIONS
from .core import MomentRelaxation
from .export import export_certificate
from .polish import polish
from .result import RelaxationResult
from .scs_driver import (
    DEFAULT_SCS_SETTINGS,
    SCS_SETTING_NAMES,
    SOLVE_OPTIONS,
    WARMUP_SCS_SETTINGS,
)

__all__ = [
    "DEFAULT_SCS_SETTINGS",
    "FORMULATIONS",
    "MomentRelaxation",
    "RelaxationResult",
    "SCS_SETTING_NAMES",
    "SOLVE_OPTIONS",
    "WARMUP_SCS_SETTINGS",
    "clear_cache",
    "export_certificate",
    "get_relaxation",
    "monomial_exponents",
    "polish",
    "polynomial_coefficients",
    "solve",
    "solve_abs",
]

# Former private names, kept for callers that imported them.
_SCS_SETTING_NAMES = SCS_SETTING_NAMES
_SOLVE_OPTIONS = SOLVE_OPTIONS

_CACHE: dict[tuple[int, int, int, str], MomentRelaxation] = {}
_CACHE_LOCK = threading.Lock()


def get_relaxation(
    n: int, p: int, order: int | None = None, formulation: str = "homogeneous"
) -> MomentRelaxation:
    """The cached :class:`MomentRelaxation` of ``(n, p, order, formulation)`` (built on demand)."""
    d = (int(p) + 1) // 2 if order is None else int(order)
    key = (int(n), int(p), d, str(formulation))
    with _CACHE_LOCK:
        rel = _CACHE.get(key)
        if rel is None:
            rel = _CACHE[key] = MomentRelaxation(n, p, d, formulation)
        return rel


def clear_cache() -> None:
    """Drop all cached relaxations (and their SCS workspaces)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def solve(
    T: np.ndarray,
    sign: int = 1,
    *,
    order: int | None = None,
    formulation: str = "homogeneous",
    **options: Any,
) -> RelaxationResult:
    """:meth:`MomentRelaxation.solve` with the cached relaxation for ``T``'s ``(n, p)``."""
    T = np.asarray(T, dtype=float)
    return get_relaxation(T.shape[0], T.ndim, order, formulation).solve(T, sign, **options)


def solve_abs(
    T: np.ndarray, *, order: int | None = None, formulation: str = "homogeneous", **options: Any
) -> RelaxationResult:
    """:meth:`MomentRelaxation.solve_abs` with the cached relaxation for ``T``'s ``(n, p)``."""
    T = np.asarray(T, dtype=float)
    return get_relaxation(T.shape[0], T.ndim, order, formulation).solve_abs(T, **options)
