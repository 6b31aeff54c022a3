"""Random nearly-SOD instances ``T̂ = Σ λ_i v_i^{⊗p} + E``, a pure function of the generator."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InputError
from ..norms import scale_to_opnorm
from ..tensors import identity_basis, random_orthonormal_basis, sod_tensor
from ..threads import single_blas
from .perturbations import DEFAULT_WEIGHT, draw_perturbation

__all__ = [
    "BASES",
    "LAMBDA_DISTRIBUTIONS",
    "Instance",
    "check_lambdas",
    "draw_lambdas",
    "make_instance",
]


@dataclasses.dataclass(frozen=True)
class Instance:
    """One nearly-SOD test tensor and its ground truth.

    ``T_hat = T + E``, ``T = Σ_i lambdas[i] V[:, i]^{⊗p}``; ``eps_target`` is the requested
    operator norm of ``E`` when the perturbation was scaled to one, else ``None``;
    ``E_norm`` is the operator norm of ``E`` when its family knows it in closed form (or it was
    scaled to ``eps``), else ``None``.
    """

    T_hat: np.ndarray
    T: np.ndarray
    E: np.ndarray
    lambdas: np.ndarray
    V: np.ndarray
    eps_target: float | None
    E_norm: float | None = None


#: Largest weight |λ| and noise level (σ or ε) an instance may have: a value x^p of a tensor
#: with entries of this size still fits in float64 with room for sums over n^p terms and for
#: the theorems' ratios (ε/λ)², which would otherwise overflow and fail every instance.
MAX_SCALE = 1e150


def check_level(value: Any, name: str = "sigma") -> float:
    """Validate a noise level (``sigma`` entry scale or ``eps`` target norm): a finite number
    in ``[0, MAX_SCALE]``. Returns it as a float; raises ``ValueError`` naming ``name``."""
    if not _is_real(value) or not 0 <= value <= MAX_SCALE:
        raise InputError(
            f"{name}: expected a finite number between 0 and {MAX_SCALE:g}, received {value!r}",
            "give a finite number >= 0, e.g. sigma=0.01 or eps=0.1",
        )
    return float(value)


def _is_real(v: Any) -> bool:
    return (
        isinstance(v, (int, float, np.integer, np.floating))
        and not isinstance(v, (bool, np.bool_))
        and bool(np.isfinite(v))
    )


def _check_uniform(params: Mapping[str, Any]) -> dict[str, Any]:
    low, high = params["low"], params["high"]
    if not (_is_real(low) and _is_real(high)):
        raise InputError(
            f"lambdas: uniform low and high must be finite numbers, received low={low!r}, "
            f"high={high!r}",
            "e.g. lambdas={'dist': 'uniform', 'low': 1, 'high': 2}",
        )
    if max(abs(low), abs(high)) > MAX_SCALE:
        raise InputError(
            f"lambdas: uniform bounds must be at most {MAX_SCALE:g} in magnitude",
            "rescale the weights: results are scale-free",
        )
    if not low < high:
        raise InputError(
            f"lambdas: uniform needs low < high, received low={low}, high={high} (for equal "
            "weights give the number itself, e.g. lambdas = 1.0)",
            "give low < high, or a single number for equal weights",
        )
    return {"low": float(low), "high": float(high)}


def _draw_uniform(params: Mapping[str, Any], r: int, *, rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(params["low"], params["high"], size=r)


#: λ distributions by name: ``(parameter names, check(params) -> params, draw(params, r, rng))``.
#: Spec validation and :func:`make_instance` both go through :func:`check_lambdas`.
LAMBDA_DISTRIBUTIONS: Mapping[str, tuple[tuple[str, ...], Any, Any]] = MappingProxyType(
    {"uniform": (("low", "high"), _check_uniform, _draw_uniform)}
)


def check_lambdas(spec: Any, r: int | None = None) -> float | list[float] | dict[str, Any]:
    """Validate component weights without drawing them; returns them normalised.

    ``spec`` is a non-zero number (every weight), a list of ``r`` non-zero numbers, or a
    distribution table ``{"dist": name, **params}`` from :data:`LAMBDA_DISTRIBUTIONS` (e.g.
    ``{"dist": "uniform", "low": a, "high": b}`` with ``a < b``). Weights must be non-zero
    because ``λ_i v_i^{⊗p}`` with ``λ_i = 0`` is not a component. ``r`` (the rank), when
    given, is checked against the length of a list. Raises ``ValueError`` naming ``lambdas``.
    """
    if isinstance(spec, np.ndarray) and spec.ndim == 0:
        spec = spec.item()
    if isinstance(spec, np.ndarray) and spec.ndim != 1:
        raise InputError(
            f"lambdas: expected a scalar or a 1-d list, received shape {spec.shape}",
            "give one number (equal weights) or a flat list of r numbers",
        )
    if isinstance(spec, Mapping):
        dist = spec.get("dist")
        if dist not in LAMBDA_DISTRIBUTIONS:
            raise InputError(
                f"lambdas.dist: expected one of {sorted(LAMBDA_DISTRIBUTIONS)}, received {dist!r}",
                "use one of the listed distributions, e.g. "
                "{'dist': 'uniform', 'low': 1, 'high': 2}",
            )
        names, check, _ = LAMBDA_DISTRIBUTIONS[dist]
        given = set(spec) - {"dist"}
        if given != set(names):
            raise InputError(
                f"lambdas: distribution {dist!r} takes exactly the parameters {list(names)}, "
                f"received {sorted(given)}",
                "give exactly the listed parameters",
            )
        return {"dist": dist, **check(spec)}
    if isinstance(spec, (list, tuple, np.ndarray)):
        values = list(spec)
        if not values or not all(_is_real(v) for v in values):
            raise InputError(
                f"lambdas: expected a non-empty list of finite numbers, got {spec!r}",
                "give a non-empty list of finite numbers",
            )
        if any(abs(v) > MAX_SCALE for v in values):
            raise InputError(
                f"lambdas: weights must be at most {MAX_SCALE:g} in magnitude",
                "rescale the weights: results are scale-free",
            )
        if any(v == 0 for v in values):
            raise InputError(
                f"lambdas: every component weight must be non-zero, got {spec!r}",
                "drop the zero weights and lower the rank",
            )
        if r is not None and len(values) != r:
            raise InputError(
                f"lambdas: expected a scalar or {r} values, received {len(values)}",
                "give one number for equal weights, or one weight per component",
            )
        return [float(v) for v in values]
    if not _is_real(spec):
        raise InputError(
            "lambdas: expected a number, a list of r numbers or a distribution table such as "
            f"{{dist = 'uniform', low = 1, high = 2}}, received {spec!r} ({type(spec).__name__})",
            "e.g. lambdas=1.0, lambdas=[1, 0.9, 0.8] or {'dist': 'uniform', 'low': 1, 'high': 2}",
        )
    if abs(spec) > MAX_SCALE:
        raise InputError(
            f"lambdas: weights must be at most {MAX_SCALE:g} in magnitude",
            "rescale the weights: results are scale-free",
        )
    if spec == 0:
        raise InputError(
            "lambdas: every component weight must be non-zero, received 0 (a zero weight is no "
            "component: use a smaller rank instead)",
            "use a smaller rank instead of a zero weight",
        )
    return float(spec)


def draw_lambdas(spec: Any, r: int, *, rng: np.random.Generator) -> np.ndarray:
    """Component weights from a scalar, a list of ``r`` values, or a distribution table such as
    ``{"dist": "uniform", "low": a, "high": b}`` (drawn from ``rng``); see :func:`check_lambdas`."""
    spec = check_lambdas(spec, r)
    if isinstance(spec, dict):
        return np.asarray(LAMBDA_DISTRIBUTIONS[spec["dist"]][2](spec, r, rng=rng), dtype=float)
    if isinstance(spec, list):
        return np.array(spec, dtype=float)
    return np.full(r, spec)


def _identity(n: int, r: int, *, rng: np.random.Generator) -> np.ndarray:
    return identity_basis(n, r)


#: Bases of the components by name: ``basis(n, r, rng) -> (n, r)`` orthonormal columns.
BASES: Mapping[str, Any] = MappingProxyType(
    {"identity": _identity, "random": random_orthonormal_basis}
)


def _check_basis(V: ArrayLike, n: int, r: int) -> np.ndarray:
    V = np.asarray(V, dtype=float)
    if V.shape != (n, r) or not np.allclose(V.T @ V, np.eye(r), atol=1e-10):
        raise InputError(
            f"V: expected an ({n}, {r}) matrix with orthonormal columns, got {V.shape}",
            "pass V with n rows and r orthonormal columns, or basis='random' / 'identity'",
        )
    return V


@single_blas
def make_instance(
    n: int,
    p: int,
    *,
    rank: int | None = None,
    basis: str = "identity",
    lambdas: ArrayLike | Mapping[str, Any] = 1.0,
    noise: str = "gaussian",
    sigma: float | None = None,
    eps: float | None = None,
    rng: np.random.Generator | int | None = None,
    norm_method: str = "certified",
    noise_params: Mapping[str, Any] | None = None,
    noise_weight: float = DEFAULT_WEIGHT,
    noise_eps: float | Callable[[np.ndarray], float] | None = None,
    V: ArrayLike | None = None,
) -> Instance:
    """Draw one nearly-SOD instance: the paper's experimental setup, generalised.

    Draw order from ``rng`` (fixed, so instances are reproducible): the basis (when
    ``basis="random"``), the weights (when drawn), the noise entries, then the starts of the
    norm computation (only when ``eps`` asks to rescale ``E`` to ``‖E‖ = eps``).
    Exactly one of ``sigma`` (entry scale, as in the paper) or ``eps`` (target operator norm;
    the noise is drawn with σ = 1 and rescaled) must be given.

    ``noise`` may be any model of :func:`sroa_dist.problems.perturbations.draw_perturbation`
    (i.i.d., structured family, import path, mixture) with ``noise_params`` and ``noise_weight``;
    ``noise_eps`` (a number or a function of the drawn weights) tells families whose draw depends on
    the target norm (``adversarial``) what ``‖E‖`` will be; it defaults to ``eps``. ``V`` (``(n,
    r)``, orthonormal columns), when given, is the basis instead of ``basis`` (nothing is drawn for
    it).
    """
    gen = np.random.default_rng(rng)
    r = n if rank is None else rank
    if (sigma is None) == (eps is None):
        raise InputError(
            "sigma/eps: give exactly one of sigma (entry scale) or eps (target ‖E‖)",
            "pass sigma=... (entry scale) or eps=... (operator norm), not both and not neither",
        )
    if sigma is not None:
        check_level(sigma, "sigma")
    else:
        check_level(eps, "eps")
    if basis not in BASES:
        raise InputError(
            f"basis: expected one of {sorted(BASES)}, received {basis!r}",
            "use one of the listed bases, or pass V=... directly",
        )
    V = BASES[basis](n, r, rng=gen) if V is None else _check_basis(V, n, r)
    lam = draw_lambdas(lambdas, r, rng=gen)
    T = sod_tensor(lam, V, p)
    target = noise_eps if noise_eps is not None else eps
    pert = draw_perturbation(
        noise,
        n,
        p,
        V,
        lam,
        rng=gen,
        scale=1.0 if eps is not None else sigma,
        params=noise_params,
        weight=noise_weight,
        eps=target(lam) if callable(target) else target,
    )
    E, E_norm = pert.E, pert.norm
    if eps is not None:
        E = scale_to_opnorm(E, float(eps), norm=E_norm, method=norm_method, rng=gen)
        E_norm = float(eps)
    return Instance(T_hat=T + E, T=T, E=E, lambdas=lam, V=V, eps_target=eps, E_norm=E_norm)
