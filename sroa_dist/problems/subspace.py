"""Perturbations supported on a ``k``-dimensional subspace: ``E x^p = C (Uᵀx)^p`` with ``U``
an ``(n, k)`` orthonormal basis and ``C`` a symmetric ``(k,)*p`` core, whose operator norm is a
``k``-dimensional problem whatever ``n`` is.

``‖E‖ = ‖C‖`` exactly: on the unit sphere ``y = Uᵀx`` has ``‖y‖ ≤ 1``, and every unit ``y`` is
reached (``x = U y``), so ``max_x |C (Uᵀx)^p| = max_{‖y‖≤1} |C y^p| = max_{‖y‖=1} |C y^p|``
(homogeneity). The ``k``-dimensional norm is certified by the moment relaxation where
``(k, p)`` is tractable (every ``k`` a search would use), so such an ``E`` carries a certified
norm at ``n`` far past the relaxation's reach for ``(n, p)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InputError
from ..methods import CERTIFIED_NORM_METHOD
from ..norms import OperatorNormResult, operator_norm
from ..tensors import check_symmetric_tensor, symmetrize
from .structured import ORTHONORMAL_TOL

__all__ = ["subspace_core", "subspace_norm", "subspace_tensor"]


def _basis(U: ArrayLike) -> NDArray[np.float64]:
    U = np.asarray(U, dtype=float)
    if U.ndim != 2 or not 1 <= U.shape[1] <= U.shape[0] or not np.all(np.isfinite(U)):
        raise InputError(
            f"U: expected a finite (n, k) basis with 1 <= k <= n, received shape {U.shape}",
            "pass U as an (n, k) matrix with orthonormal columns",
        )
    dev = float(np.max(np.abs(U.T @ U - np.eye(U.shape[1]))))
    if dev > ORTHONORMAL_TOL:
        raise InputError(
            f"U: expected orthonormal columns (max |UᵀU − I| <= {ORTHONORMAL_TOL:g}), "
            f"received {dev:.3g}; ‖E‖ = ‖C‖ needs them",
            "orthonormalise U first, e.g. with numpy.linalg.qr",
        )
    return U


def _multiply(A: NDArray[np.float64], M: NDArray[np.float64]) -> NDArray[np.float64]:
    """``A ×_1 M ×_2 M … ×_p M`` (``M`` of shape ``(m, k)`` on every mode of ``A``)."""
    for _ in range(A.ndim):
        A = np.tensordot(A, M, axes=([0], [1]))  # mode 0 out, new mode appended last
    return A


def subspace_tensor(C: ArrayLike, U: ArrayLike) -> NDArray[np.float64]:
    """The dense ``E = C ×_1 U … ×_p U`` (shape ``(n,)*p``), exactly symmetric up to rounding
    of the products (symmetrized to remove it)."""
    C = check_symmetric_tensor(C, "C")
    U = _basis(U)
    if C.shape[0] != U.shape[1]:
        raise InputError(
            f"C: expected a core of dimension k = {U.shape[1]} (U's columns), received "
            f"{C.shape[0]}",
            "give a core whose dimension is the number of columns of U",
        )
    return symmetrize(_multiply(C, U))


def subspace_core(E: ArrayLike, U: ArrayLike) -> NDArray[np.float64]:
    """``C = E ×_1 Uᵀ … ×_p Uᵀ``: the core of ``E``'s projection onto the subspace (``E``
    itself where it is supported there)."""
    E = check_symmetric_tensor(E, "E")
    U = _basis(U)
    if E.shape[0] != U.shape[0]:
        raise InputError(
            f"U: expected {E.shape[0]} rows (E's dimension), received {U.shape[0]}",
            "give U with one row per dimension of E",
        )
    return _multiply(E, U.T)


def subspace_norm(C: ArrayLike, *, rng: int = 0) -> OperatorNormResult:
    """``‖E‖`` for every ``E = C ×_i U`` with orthonormal ``U``: the certified bracket of the
    ``k``-dimensional ``‖C‖`` (module docstring)."""
    return operator_norm(check_symmetric_tensor(C, "C"), CERTIFIED_NORM_METHOD, rng=rng)
