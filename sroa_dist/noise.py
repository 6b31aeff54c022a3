"""Symmetric random perturbations from a registry of entry laws (binary, uniform, Gaussian)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

__all__ = ["NOISE_MODELS", "register_noise", "noise_tensor", "multiset_index"]

#: ``sampler(rng, size, sigma) -> ndarray(size)``: i.i.d. entries of scale ``sigma``.
Sampler = Callable[[np.random.Generator, int, float], NDArray[np.float64]]

_REGISTRY: dict[str, Sampler] = {}
#: Read-only view of the registered noise models, by name.
NOISE_MODELS: Mapping[str, Sampler] = MappingProxyType(_REGISTRY)


def register_noise(name: str, sampler: Sampler, *, overwrite: bool = False) -> None:
    """Register an entry law under ``name`` so sweeps can refer to it by name.

    ``sampler(rng, size, sigma)`` must return ``size`` i.i.d. draws with scale ``sigma``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a non-empty string, received {name!r}")
    if not callable(sampler):
        raise ValueError(
            f"sampler: expected a callable (rng, size, sigma) -> array, got {sampler!r}"
        )
    if name in _REGISTRY and not overwrite:
        raise ValueError(f"noise model {name!r} is already registered (pass overwrite=True)")
    _REGISTRY[name] = sampler


def _binary(rng: np.random.Generator, size: int, sigma: float) -> NDArray[np.float64]:
    return sigma * (2.0 * rng.integers(0, 2, size=size) - 1.0)


def _uniform(rng: np.random.Generator, size: int, sigma: float) -> NDArray[np.float64]:
    return rng.uniform(-2.0 * sigma, 2.0 * sigma, size=size)


def _gaussian(rng: np.random.Generator, size: int, sigma: float) -> NDArray[np.float64]:
    return sigma * rng.standard_normal(size)


register_noise("binary", _binary)  # entries ±σ with probability 1/2 each
register_noise("uniform", _uniform)  # entries uniform on [−2σ, 2σ]
register_noise("gaussian", _gaussian)  # entries N(0, σ²)


@functools.lru_cache(maxsize=32)
def multiset_index(n: int, p: int) -> tuple[NDArray[np.intp], int]:
    """Map every index tuple of an ``(n,)*p`` tensor to the id of its sorted multiset.

    Returns ``(ids, count)`` with ``ids`` of shape ``(n,)*p`` and ``count = C(n+p-1, p)``.
    """
    combos = np.array(list(itertools.combinations_with_replacement(range(n), p)), dtype=np.intp)
    lookup = np.zeros((n,) * p, dtype=np.intp)
    lookup[tuple(combos.T)] = np.arange(len(combos))
    grids = np.sort(np.indices((n,) * p).reshape(p, -1), axis=0)
    ids = lookup[tuple(grids)].reshape((n,) * p)
    ids.setflags(write=False)
    return ids, len(combos)


def noise_tensor(
    model: str, n: int, p: int, sigma: float, rng: np.random.Generator | int | None
) -> NDArray[np.float64]:
    """A symmetric perturbation ``E`` of order ``p`` and dimension ``n``.

    One value is drawn per index multiset ``i1 ≤ … ≤ ip`` (in lexicographic order) and copied
    to every permutation of it. Each entry therefore has exactly the law stated in the paper
    (binary ±σ, uniform on [−2σ, 2σ], Gaussian N(0, σ²)) while ``E`` is symmetric, as the
    theory requires; entries are independent up to symmetry.
    """
    if model not in _REGISTRY:
        raise ValueError(
            f"noise: unknown model {model!r}; expected one of {sorted(_REGISTRY)} "
            "(add one with sroa_dist.register_noise)"
        )
    sigma = float(sigma)
    if not np.isfinite(sigma) or sigma < 0:
        raise ValueError(f"sigma: expected a finite value >= 0, received {sigma}")
    if int(p) < 3:
        raise ValueError(f"p: expected an integer tensor order >= 3, received {p}")
    if int(n) < 2:
        raise ValueError(f"n: expected an integer >= 2, received {n}")
    ids, count = multiset_index(int(n), int(p))
    values = np.asarray(_REGISTRY[model](np.random.default_rng(rng), count, sigma), dtype=float)
    if values.shape != (count,):
        raise ValueError(
            f"noise model {model!r} returned shape {values.shape}, expected ({count},)"
        )
    return values[ids]
