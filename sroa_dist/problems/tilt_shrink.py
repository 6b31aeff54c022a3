"""The tilt-shrink family: the coherent tilt combined with a shrink of its target component,
``E(θ) = (cos θ·E_tilt − sin θ·v_l^{⊗p}) / N_p(θ)``, with its operator norm ``N_p(θ)`` in
closed form at any ``n`` (so ``‖E(θ)‖ = 1`` exactly).

Why this family: the coherent tilt (:func:`~sroa_dist.problems.perturbations.coherent_tilt`)
makes the ``n − 1`` deflation residuals on the target ``v_l`` add up, and the shrink lowers the
target's weight by the same sign, so the two errors add, while the norm of the sum is far
below ``cos θ + sin θ`` (the tilt's maximiser is off the target, the shrink's is on it). Its
norm is a one-dimensional maximum whatever ``n``: with ``y = Vᵀx``, ``t = y_l`` and
``s = Σ_{j≠l} y_j²`` (``s + t² ≤ 1`` on the unit sphere), ``a = cos θ / c_p``, ``b = sin θ``:

* ``p = 3``: ``E x³ ∝ a·s·t − b·t³`` is linear in ``s``, so ``|E x³|`` is largest at ``s = 0``
  (``|b t³| ≤ |b|``) or ``s = 1 − t²`` (``f(t) = a t − (a + b) t³``); ``f`` is odd, so
  ``N_3 = max(|b|, |f(t*)|)`` with ``t*² = a / (3(a + b))`` where that lies in ``(0, 1]``,
  ``|f(t*)| = (2|a|/3)·t*``.
* even ``p``: for fixed ``(s, t)``, ``Σ_{j≠l} y_j^{p−1}`` (an odd power) sweeps
  ``[−s^{(p−1)/2}, s^{(p−1)/2}]`` (one non-zero ``y_j``), so the largest ``|E x^p|`` is
  ``|a| s^{(p−1)/2} |t| + |b| t^p``, increasing in ``s``: ``N_p = max_{t∈[0,1]} g(t)`` with
  ``g(t) = |a| t (1 − t²)^{(p−1)/2} + |b| t^p``. With ``u = t²``, ``g′ = 0`` squared is the
  polynomial ``a²(1 − u)^{p−3}(1 − p u)² − p² b² u^{p−1} = 0``: its real roots in ``[0, 1]``
  and the ends are the candidates (exact up to rounding).

Odd ``p ≥ 5`` is refused: there ``Σ y_j^{p−1}`` ranges over ``[s^{(p−1)/2}/(r−1)^{(p−3)/2},
s^{(p−1)/2}]``, which depends on the rank, and no study needs it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.polynomial import Polynomial
from numpy.typing import ArrayLike, NDArray

from ..errors import InputError
from .perturbations import (
    _exactly_symmetric,
    _tilt_basis,
    coherent_tilt,
    register_perturbation,
    tilt_norm,
)

__all__ = ["tilt_shrink", "tilt_shrink_norm"]


def _check(p: Any, theta: Any) -> tuple[int, float]:
    if isinstance(p, bool) or int(p) != p or int(p) < 3 or (int(p) % 2 == 1 and int(p) != 3):
        raise InputError(
            f"p: the tilt-shrink norm is derived for p = 3 and even p >= 4, received {p!r}",
            "use p = 3 or an even p",
        )
    if isinstance(theta, bool) or not isinstance(theta, (int, float, np.floating, np.integer)):
        raise InputError(
            f"theta: expected an angle in radians, received {theta!r}", "give a float theta"
        )
    theta = float(theta)
    if not math.isfinite(theta):
        raise InputError(f"theta: expected a finite angle, received {theta}", "give a finite theta")
    return int(p), theta


def tilt_shrink_norm(p: int, theta: float) -> float:
    """``‖cos θ·E_tilt − sin θ·v_l^{⊗p}‖`` (``E_tilt`` the unit-norm coherent tilt), exact up to
    rounding, for ``p = 3`` and even ``p``, any ``n`` and any rank ``r ≥ 2`` (module docstring).
    """
    p, theta = _check(p, theta)
    a, b = math.cos(theta) / tilt_norm(p), math.sin(theta)
    best = abs(b)  # t = 1 (the target itself): E v_l^p = −b
    if p == 3:
        if a + b != 0:
            u = a / (3 * (a + b))
            if 0 < u <= 1:
                best = max(best, 2 * abs(a) / 3 * math.sqrt(u))
        return best
    m = (p - 1) / 2

    def g(u: float) -> float:
        return abs(a) * math.sqrt(u) * (1 - u) ** m + abs(b) * u ** (p / 2)

    P = a * a * Polynomial([1, -1]) ** (p - 3) * Polynomial([1, -p]) ** 2 - Polynomial(
        [0] * (p - 1) + [p * p * b * b]
    )
    for root in P.roots():
        if abs(root.imag) <= 1e-9 * max(1.0, abs(root.real)):
            u = min(max(float(root.real), 0.0), 1.0)
            best = max(best, g(u))
    return best


def tilt_shrink(
    n: int,
    p: int,
    V: ArrayLike,
    lambdas: ArrayLike,
    rng: np.random.Generator | None = None,  # noqa: ARG001  (deterministic)
    *,
    theta: float = 0.5,
    component: int | str = "smallest",
) -> tuple[NDArray[np.float64], float]:
    """``E = (cos θ·E_tilt − sin θ·v_l^{⊗p}) / N_p(θ)``, ``‖E‖ = 1`` exactly
    (:func:`tilt_shrink_norm`).

    ``E_tilt`` is :func:`~sroa_dist.problems.perturbations.coherent_tilt` toward ``v_l``
    (``component``, by default the one of smallest ``|λ|``, which SROA deflates last); the
    second term lowers ``λ_l``. ``θ = 0`` is the tilt, ``θ = π/2`` the shrink of ``v_l`` alone.
    Deterministic (``rng`` unused). Returns ``(E, 1.0)``, ``E`` exactly symmetric.
    """
    p, theta = _check(p, theta)
    Vf, ell = _tilt_basis(int(n), p, V, lambdas, component)
    tilt, _ = coherent_tilt(n, p, Vf, lambdas, component=ell)
    v = Vf[:, ell]
    target = v
    for _ in range(p - 1):
        target = np.multiply.outer(target, v)
    E = (math.cos(theta) * tilt - math.sin(theta) * target) / tilt_shrink_norm(p, theta)
    return _exactly_symmetric(E), 1.0


register_perturbation(
    "tilt-shrink",
    tilt_shrink,
    params={"theta": 0.5, "component": "smallest"},
    description="coherent tilt combined with a shrink of its target, cos(theta) tilt - "
    "sin(theta) v_l^p (exact norm; p = 3 and even p)",
    deterministic=True,
)
