"""Symmetric random perturbations from a registry of entry laws (binary, uniform, Gaussian)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

from .._registry import check_entry
from ..errors import InputError
from ..monomials import multiset_index, multiset_rank

__all__ = [
    "NOISE_MODELS",
    "multiset_index",
    "multiset_rank",
    "noise_tensor",
    "register_noise",
    "symmetric_from_multisets",
]

#: ``sampler(rng, size, sigma) -> ndarray(size)``: i.i.d. entries of scale ``sigma``.
Sampler = Callable[[np.random.Generator, int, float], NDArray[np.float64]]

_REGISTRY: dict[str, Sampler] = {}
#: Read-only view of the registered noise models, by name.
NOISE_MODELS: Mapping[str, Sampler] = MappingProxyType(_REGISTRY)


def register_noise(name: str, sampler: Sampler, *, overwrite: bool = False) -> None:
    """Register an entry law under ``name`` so sweeps can refer to it by name.

    ``sampler(rng, size, sigma)`` must return ``size`` i.i.d. draws with scale ``sigma``.
    """
    check_entry(
        _REGISTRY,
        "noise model",
        name,
        sampler,
        overwrite=overwrite,
        expected="(rng, size, sigma) -> array",
    )
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


def noise_tensor(
    model: str, n: int, p: int, sigma: float, *, rng: np.random.Generator | int | None
) -> NDArray[np.float64]:
    """A symmetric perturbation ``E`` of order ``p`` and dimension ``n``.

    One value is drawn per index multiset ``i1 ≤ … ≤ ip`` (in lexicographic order) and copied
    to every permutation of it. Each entry therefore has exactly the law stated in the paper
    (binary ±σ, uniform on [−2σ, 2σ], Gaussian N(0, σ²)) while ``E`` is symmetric, as the
    theory requires; entries are independent up to symmetry. ``rng`` (a Generator, a seed or
    ``None``) is keyword-only and required.
    """
    if model not in _REGISTRY:
        raise InputError(
            f"noise: unknown model {model!r}; expected one of {sorted(_REGISTRY)} "
            "(add one with sroa_dist.register_noise)",
            "use one of the listed models, or add one with sroa_dist.register_noise",
        )
    sigma = float(sigma)
    if not np.isfinite(sigma) or sigma < 0:
        raise InputError(
            f"sigma: expected a finite value >= 0, received {sigma}",
            "give a finite sigma >= 0, e.g. sigma=0.01",
        )
    if int(p) < 3:
        raise InputError(
            f"p: expected an integer tensor order >= 3, received {p}",
            "give the tensor order p >= 3, e.g. p=3",
        )
    if int(n) < 2:
        raise InputError(f"n: expected an integer >= 2, received {n}", "give the dimension n >= 2")
    n, p = int(n), int(p)
    count = math.comb(n + p - 1, p)
    values = np.asarray(_REGISTRY[model](np.random.default_rng(rng), count, sigma), dtype=float)
    if values.shape != (count,):
        raise InputError(
            f"noise model {model!r} returned shape {values.shape}, expected ({count},)",
            "a registered sampler(rng, size, sigma) must return exactly size values",
        )
    return symmetric_from_multisets(values, n, p)


#: Entries of ``E`` filled per block; bounds the index arrays to about this many elements
#: (times p) instead of n^p, so n = 256, p = 3 needs no 134 MB int array per tensor.
_BLOCK_ELEMENTS = 2**20


def symmetric_from_multisets(values: NDArray[np.float64], n: int, p: int) -> NDArray[np.float64]:
    """The symmetric ``(n,)*p`` tensor whose entry at every permutation of the multiset of
    lexicographic rank ``k`` is ``values[k]``.

    Filled by blocks of leading indices, so the index arrays stay near ``_BLOCK_ELEMENTS``
    elements whatever ``n**p`` is; the result is exactly symmetric (entries are copies).
    """
    n, p = int(n), int(p)
    out = np.empty((n,) * p, dtype=float)
    flat = out.reshape(n, -1)
    tail = np.indices((n,) * (p - 1), dtype=np.intp).reshape(p - 1, -1)
    rows = max(1, _BLOCK_ELEMENTS // tail.shape[1])
    for start in range(0, n, rows):
        lead = np.arange(start, min(n, start + rows), dtype=np.intp)
        idx = np.empty((p, len(lead), tail.shape[1]), dtype=np.intp)
        idx[0] = lead[:, None]
        idx[1:] = tail[:, None, :]
        idx.sort(axis=0)
        flat[lead] = values[multiset_rank(idx, n)]
    return out
