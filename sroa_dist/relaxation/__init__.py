"""Lasserre moment relaxation of ``max T x^p`` on the unit sphere: cached, driver-solved
(SCS by default), validated bounds.

The relaxation (order ``d = ceil(p/2)`` by default, as solved with GloptiPoly 3 in the paper) is
built once per ``(n, p, d)`` and cached; only the cost vector changes between tensors. An SDP
driver (:class:`~.driver.SdpDriver`; SCS, :data:`~.scs_driver.SCS`, unless ``driver=`` says
otherwise) yields dual iterates, and after each the solve

1. extracts maximiser candidates from the moments and polishes them (:func:`polish`),
2. builds a dual certificate on the optimal face at the best candidate ``x``: an orthogonal
   projection of the driver's dual onto ``{Z : dual equalities hold exactly, Z m(x) = 0}``,
   refined by alternating projections with the PSD cone,
3. stops the driver as soon as that closes the gap. SCS first runs a short deterministic
   warm-up (a few tens of iterations), then its full solve in chunks, warm-started.

Every reported ``upper_bound`` is *validated*: it is computed from the dual vector by a bound
that holds for any dual guess (:func:`sroa_dist.relaxation.bound.validated_bound`), so it does
not rely on the solver's tolerance or on the relaxation being tight.

Modules: :mod:`.builders` (problem construction), :mod:`.structure` (the fixed maps and the
conic problem of one ``(n, p, d)``), :mod:`.driver` (the driver protocol: problem, iterate,
schedule), :mod:`.scs_driver` (SCS: settings, warm-up, chunked solve; every SCS name lives
there), :mod:`.clarabel_driver` (a second, interior-point driver for small ``n``; optional),
:mod:`.admm_driver` (an ADMM on NumPy or, ``device="cuda"``, CuPy; batched),
:mod:`.backend` and :mod:`.device_maps` (the array namespace and the problem's maps on it),
:mod:`.drivers` (the drivers by name for a ``relaxation`` table), :mod:`.bound` (validated
bound, repair, face certificate: the paper-critical part), :mod:`.export` (SOS certificate
export), :mod:`.polish` (candidate polish and input checks), :mod:`.tensor_solve` (one
tensor's solve between iterates), :mod:`.core` (:class:`MomentRelaxation`: the solve). Imports
go one way: builders, driver, backend <- structure, device_maps, drivers <- bound, export,
tensor_solve <- core. Monomials and index multisets come from :mod:`sroa_dist.monomials`,
shared with the noise draws and the certificate checker.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..monomials import monomial_exponents, polynomial_coefficients
from .backend import DeviceUnavailableError, get_backend
from .builders import FORMULATIONS
from .core import SOLVE_OPTION_RULES, SOLVE_OPTIONS, MomentRelaxation, option_rules
from .driver import Schedule, SdpDriver, SdpIterate, SdpProblem
from .drivers import (
    DEFAULT_DRIVER,
    DRIVERS,
    DriverEntry,
    RelaxationTable,
    default_driver,
    driver_entry,
    driver_label,
    get_driver,
    register_driver,
    relaxation_device,
    selection,
)
from .export import export_certificate
from .polish import polish
from .result import RelaxationResult
from .scs_driver import (
    DEFAULT_SCS_SETTINGS,
    SCS,
    SCS_SETTING_NAMES,
    WARMUP_SCS_SETTINGS,
    ScsDriver,
)
from .structure import MomentStructure

__all__ = [
    "DEFAULT_SCS_SETTINGS",
    "DRIVERS",
    "DriverEntry",
    "FORMULATIONS",
    "SCS",
    "SCS_SETTING_NAMES",
    "SOLVE_OPTIONS",
    "SOLVE_OPTION_RULES",
    "WARMUP_SCS_SETTINGS",
    "MomentRelaxation",
    "MomentStructure",
    "RelaxationResult",
    "Schedule",
    "ScsDriver",
    "SdpDriver",
    "SdpIterate",
    "SdpProblem",
    "clear_cache",
    "export_certificate",
    "get_relaxation",
    "monomial_exponents",
    "option_rules",
    "polish",
    "polynomial_coefficients",
    "register_driver",
    "solve",
    "solve_abs",
    "DeviceUnavailableError",
    "DEFAULT_DRIVER",
    "RelaxationTable",
    "default_driver",
    "driver_entry",
    "driver_label",
    "get_backend",
    "get_driver",
    "relaxation_device",
    "selection",
]

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
    """Drop all cached relaxations (and with them the drivers' per-problem workspaces)."""
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
