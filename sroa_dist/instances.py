"""Random nearly-SOD instances ``T̂ = Σ λ_i v_i^{⊗p} + E``, a pure function of the generator."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .norms import operator_norm
from .perturbations import DEFAULT_WEIGHT, draw_perturbation
from .tensors import identity_basis, random_orthonormal_basis, sod_tensor

__all__ = ["Instance", "make_instance", "draw_lambdas"]


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


def draw_lambdas(spec: Any, r: int, rng: np.random.Generator) -> np.ndarray:
    """Component weights from a scalar, a list of ``r`` values, or ``{"dist": "uniform",
    "low": a, "high": b}`` (drawn from ``rng``)."""
    if isinstance(spec, Mapping):
        dist = spec.get("dist")
        if dist != "uniform":
            raise ValueError(f"lambdas.dist: expected 'uniform', received {dist!r}")
        low, high = float(spec["low"]), float(spec["high"])
        if not low < high:
            raise ValueError(f"lambdas: expected low < high, received low={low}, high={high}")
        return rng.uniform(low, high, size=r)
    lam = np.asarray(spec, dtype=float)
    if lam.ndim == 0:
        return np.full(r, float(lam))
    if lam.shape != (r,):
        raise ValueError(f"lambdas: expected a scalar or {r} values, received {lam.shape}")
    return lam.copy()


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
) -> Instance:
    """Draw one nearly-SOD instance: the paper's experimental setup, generalised.

    Draw order from ``rng`` (fixed, so instances are reproducible): the basis (when
    ``basis="random"``), the weights (when drawn), the noise entries, then the starts of the
    norm computation (only when ``eps`` asks to rescale ``E`` to ``‖E‖ = eps``).
    Exactly one of ``sigma`` (entry scale, as in the paper) or ``eps`` (target operator norm;
    the noise is drawn with σ = 1 and rescaled) must be given.

    ``noise`` may be any model of :func:`sroa_dist.perturbations.draw_perturbation` (i.i.d.,
    structured family, import path, mixture) with ``noise_params`` and ``noise_weight``;
    ``noise_eps`` (a number or a function of the drawn weights) tells families whose draw
    depends on the target norm (``adversarial``) what ``‖E‖`` will be; it defaults to ``eps``.
    """
    gen = np.random.default_rng(rng)
    r = n if rank is None else rank
    if (sigma is None) == (eps is None):
        raise ValueError("sigma/eps: give exactly one of sigma (entry scale) or eps (target ‖E‖)")
    if basis == "identity":
        V = identity_basis(n, r)
    elif basis == "random":
        V = random_orthonormal_basis(n, r, gen)
    else:
        raise ValueError(f"basis: expected 'identity' or 'random', received {basis!r}")
    lam = draw_lambdas(lambdas, r, gen)
    T = sod_tensor(lam, V, p)
    target = noise_eps if noise_eps is not None else eps
    pert = draw_perturbation(
        noise,
        n,
        p,
        V,
        lam,
        gen,
        scale=1.0 if eps is not None else sigma,
        params=noise_params,
        weight=noise_weight,
        eps=target(lam) if callable(target) else target,
    )
    E, E_norm = pert.E, pert.norm
    if eps is not None:
        if not (np.isfinite(eps) and eps >= 0):
            raise ValueError(f"eps: expected a finite target norm >= 0, received {eps}")
        norm = E_norm if E_norm is not None else operator_norm(E, norm_method, rng=gen).value
        E = E * (float(eps) / norm)
        E_norm = float(eps)
    return Instance(T_hat=T + E, T=T, E=E, lambdas=lam, V=V, eps_target=eps, E_norm=E_norm)
