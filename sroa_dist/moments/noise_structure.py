"""Is a latent-variable model's sampling noise attractor-like or isotropic?

The paper's promised benefit of global rank-one steps (a tolerable ``‖E‖`` of order
``λ_min·k^{−1/(p−1)}`` instead of the power method's ``λ_min/k``) shows only where the
perturbation captures random starts: on the ``attractor`` family, whose best rank-one direction
``u = Σ_i v_i/√k`` is coherent with every component and pulls every start toward itself. This
module measures the same things on ``E = T̂ − T``, the perturbation a model's whitened moment
tensor carries at a sample size ``N``:

- ``‖E‖`` (a certified bracket where the moment relaxation is tractable, else a multi-start
  value that is only a lower bound), beside ``λ_min/k`` and ``λ_min·k^{−1/(p−1)}``;
- the overlaps ``a_i = v_i·x_E`` of E's best rank-one direction ``x_E`` (the maximiser of
  ``E x^p``; of ``|E x^p|`` for even ``p``) with the components SROA's first step may find: the
  largest ``|a_i|`` (1: the noise leans on one component) and the attractor overlap
  ``|Σ_i s_i a_i|/√k`` (1: ``x_E`` is the attractor's direction; ``s_i = 1`` for odd ``p``,
  where components have a sign, ``sign(a_i)`` for even ``p``, where they have none), each beside
  its value for a uniform random direction (what isotropic noise gives);
- the per-start escape probability ``q``: the fraction of uniform starts that end within the
  recovery radius of a component after the AGHKT number of power iterations on ``T̂ = T + E``
  (the count of :func:`sroa_dist.studies.start_escapes`, which the escape study uses), beside
  ``q`` on ``T`` alone (the same starts, no noise) and ``q`` on the attractor family at the
  same relative ``‖E‖/λ_max`` and ``k`` (what an attractor-like noise of that size would do,
  :func:`sroa_dist.studies.escape_probability`).

:func:`perturbation_structure` measures a given ``(E, λ, V)``; :func:`noise_structure` samples a
model at ``N`` and measures its ``E``. Pure numerics.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InputError
from ..methods import RngLike, aghkt_budget
from ..norms import OperatorNormResult
from ..studies import (
    DEFAULT_RADIUS,
    EscapeResult,
    escape_probability,
    start_escapes,
    wilson_interval,
)
from ..tensors import FloatArray, check_symmetric_tensor, sod_tensor, symmetrize
from .estimators import CHUNK_SIZE, whitened_moments
from .evaluate import _norm
from .models import _MomentModel

__all__ = ["WHITENINGS", "NoiseStructure", "noise_structure", "perturbation_structure"]

#: Which perturbation :func:`noise_structure` measures: ``"estimated"`` (``T̂`` with the
#: whitening estimated from the same sample, against the truth in its coordinates: what SROA
#: sees) or ``"population"`` (the population whitening: the moment noise alone).
WHITENINGS = ("estimated", "population")
#: Uniform random directions drawn for the isotropic reference of the overlaps.
RANDOM_DIRECTIONS = 2000
#: Default number of uniform starts behind each ``q``.
DEFAULT_STARTS = 500


@dataclasses.dataclass(frozen=True)
class NoiseStructure:
    """The structure of one perturbation ``E`` of an SOD tensor ``Σ λ_i v_i^{⊗p}``.

    Attributes
    ----------
    k, p : int
        Dimension (= rank) and order.
    norm : OperatorNormResult
        ``‖E‖``: ``norm.lower`` is attained at ``norm.x``; ``norm.certified`` says whether
        ``norm.upper`` brackets it (else ``‖E‖ ≥ norm.lower`` is all that is known).
    lambda_min, lambda_max : float
        Smallest and largest ``|λ_i|``.
    direction : (k,) ndarray
        E's best rank-one direction ``x_E`` (``norm.x``).
    overlaps : (k,) ndarray
        ``|v_i·x_E|``.
    component_overlap, attractor_overlap : float
        ``max_i |v_i·x_E|`` and ``|Σ_i s_i v_i·x_E|/√k`` (module docstring).
    component_overlap_random, attractor_overlap_random : float
        The same statistics averaged over uniform random directions (isotropic noise).
    q, q_clean, q_attractor : EscapeResult
        Per-start escape probability on ``T + E``, on ``T`` (same starts) and on the attractor
        family at the same ``k`` and relative norm ``‖E‖/λ_max`` (unit weights).
    kind : str
        The model (``""`` for a bare perturbation).
    n_samples : int
        Its sample size (0 for a bare perturbation).
    whitening : str
        Which perturbation (:data:`WHITENINGS`; ``""`` for a bare perturbation).
    """

    k: int
    p: int
    norm: OperatorNormResult
    lambda_min: float
    lambda_max: float
    direction: FloatArray
    overlaps: FloatArray
    component_overlap: float
    attractor_overlap: float
    component_overlap_random: float
    attractor_overlap_random: float
    q: EscapeResult
    q_clean: EscapeResult
    q_attractor: EscapeResult | None
    kind: str = ""
    n_samples: int = 0
    whitening: str = ""

    @property
    def eps(self) -> float:
        """``‖E‖`` (its attained lower end)."""
        return float(self.norm.lower)

    @property
    def certified(self) -> bool:
        return bool(self.norm.certified)

    @property
    def power_scale(self) -> float:
        """``λ_min/k``: the power method's tolerable ``‖E‖`` (up to a constant)."""
        return self.lambda_min / self.k

    @property
    def global_scale(self) -> float:
        """``λ_min·k^{−1/(p−1)}``: global steps' tolerable ``‖E‖`` (up to a constant)."""
        return self.lambda_min * self.k ** (-1.0 / (self.p - 1))

    @property
    def power_ratio(self) -> float:
        """``‖E‖/(λ_min/k)``."""
        return self.eps / self.power_scale

    @property
    def global_ratio(self) -> float:
        """``‖E‖/(λ_min·k^{−1/(p−1)})``."""
        return self.eps / self.global_scale

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (no arrays but the overlaps)."""

        def esc(e: EscapeResult | None) -> dict[str, Any] | None:
            if e is None:
                return None
            return {
                "q": e.q,
                "lo": e.interval[0],
                "hi": e.interval[1],
                "hits": e.hits,
                "n_starts": e.n_starts,
                "n_iter": e.n_iter,
            }

        return {
            "kind": self.kind,
            "k": self.k,
            "p": self.p,
            "n_samples": self.n_samples,
            "whitening": self.whitening,
            "eps": self.eps,
            "eps_upper": float(self.norm.upper),
            "certified": self.certified,
            "lambda_min": self.lambda_min,
            "lambda_max": self.lambda_max,
            "power_ratio": self.power_ratio,
            "global_ratio": self.global_ratio,
            "component_overlap": self.component_overlap,
            "attractor_overlap": self.attractor_overlap,
            "component_overlap_random": self.component_overlap_random,
            "attractor_overlap_random": self.attractor_overlap_random,
            "q": esc(self.q),
            "q_clean": esc(self.q_clean),
            "q_attractor": esc(self.q_attractor),
        }


def _overlap_stats(A: FloatArray, p: int) -> tuple[FloatArray, FloatArray]:
    """Per row of ``A`` (overlaps ``v_i·x``): ``max_i |a_i|`` and the attractor overlap."""
    k = A.shape[-1]
    coherent = np.abs(A.sum(axis=-1)) if p % 2 else np.abs(A).sum(axis=-1)
    return np.abs(A).max(axis=-1), coherent / math.sqrt(k)


def _escape(hits: int, n_starts: int, k: int, p: int, eps: float, n_iter: int) -> EscapeResult:
    return EscapeResult(
        q=hits / n_starts,
        interval=wilson_interval(hits, n_starts),
        n=k,
        p=p,
        r=k,
        eps=eps,
        n_starts=n_starts,
        n_iter=n_iter,
        hits=hits,
    )


def perturbation_structure(
    E: ArrayLike,
    lambdas: ArrayLike,
    V: ArrayLike,
    *,
    rng: RngLike = None,
    n_starts: int = DEFAULT_STARTS,
    n_iter: int | None = None,
    radius: float = DEFAULT_RADIUS,
    attractor_reference: bool = True,
    norm: OperatorNormResult | None = None,
    norm_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> NoiseStructure:
    """Measure the structure of a perturbation ``E`` of ``T = Σ_i λ_i v_i^{⊗p}``.

    Parameters
    ----------
    E : (k,)*p array_like
        The perturbation (symmetrised here).
    lambdas : (k,) array_like
        The SOD weights (positive for odd ``p``; signed for even ``p``).
    V : (k, k) array_like
        The components as orthonormal columns, in E's coordinates.
    rng : Generator, int or SeedSequence
        Split into streams for the norm's starts, the power iterations' starts (the same for
        ``T + E`` and ``T``), the random directions and the attractor reference.
    n_starts : int
        Uniform starts behind each ``q``.
    n_iter : int, optional
        Power iterations per start; default the AGHKT budget's for ``(k, ‖E‖/λ_max)``.
    radius : float
        Recovery radius of a start.
    attractor_reference : bool
        Also measure ``q`` on the attractor family at the same ``k`` and ``‖E‖/λ_max``.
    norm : OperatorNormResult, optional
        ``‖E‖`` when already known (its ``x`` is taken as E's best rank-one direction).
    norm_options : mapping, optional
        Per method (``"certified"`` where the relaxation is tractable, else ``"sshopm"``), the
        options ``‖E‖`` is solved with: a pinned method revision's, so a stored result is
        recomputed with the same bits.
    """
    E = check_symmetric_tensor(symmetrize(np.asarray(E, dtype=np.float64)), "E")
    k, p = E.shape[0], E.ndim
    lam = np.asarray(lambdas, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    if lam.shape != (k,) or V.shape != (k, k) or not np.all(np.isfinite(lam)) or np.any(lam == 0):
        raise InputError(
            f"lambdas, V: expected {k} nonzero weights and a ({k}, {k}) basis matching E, "
            f"received {lam.shape} and {V.shape}",
            "pass the SOD components of the tensor E perturbs",
        )
    if not np.allclose(V.T @ V, np.eye(k), atol=1e-8):
        raise InputError(
            "V: expected orthonormal columns (an SOD tensor's components)",
            "orthonormalise the components, e.g. the model's sod()",
        )
    if not (isinstance(n_starts, int) and n_starts >= 1):
        raise InputError(f"n_starts: expected an integer >= 1, received {n_starts!r}", "500")
    seq = _seed(rng)
    s_norm, s_starts, s_dirs, s_attr = seq.spawn(4)
    if norm is None:
        norm = _norm(E, np.random.default_rng(s_norm), norm_options)
    x = np.asarray(norm.x, dtype=np.float64)
    a = V.T @ x
    comp, coh = _overlap_stats(a, p)
    dirs = np.random.default_rng(s_dirs).standard_normal((RANDOM_DIRECTIONS, k))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    comp_r, coh_r = _overlap_stats(dirs @ V, p)
    lam_abs = np.abs(lam)
    eps = float(norm.lower)
    rel = eps / float(lam_abs.max())
    iters = aghkt_budget(k, rel)[1] if n_iter is None and rel > 0 else int(n_iter or 1)
    if n_iter is None and rel == 0:
        iters = aghkt_budget(k)[1]
    T = sod_tensor(lam, V, p)
    hits = start_escapes((T + E)[None], V, p, n_starts, iters, radius, s_starts)
    clean = start_escapes(T[None], V, p, n_starts, iters, radius, s_starts)
    attractor = None
    if attractor_reference and rel > 0:
        attractor = escape_probability(
            k, rel, p=p, n_starts=n_starts, n_iter=iters, radius=radius, rng=s_attr
        )
    return NoiseStructure(
        k=k,
        p=p,
        norm=norm,
        lambda_min=float(lam_abs.min()),
        lambda_max=float(lam_abs.max()),
        direction=x,
        overlaps=np.abs(a),
        component_overlap=float(comp),
        attractor_overlap=float(coh),
        component_overlap_random=float(comp_r.mean()),
        attractor_overlap_random=float(coh_r.mean()),
        q=_escape(hits, n_starts, k, p, rel, iters),
        q_clean=_escape(clean, n_starts, k, p, 0.0, iters),
        q_attractor=attractor,
    )


def _seed(rng: RngLike) -> np.random.SeedSequence:
    if isinstance(rng, np.random.SeedSequence):
        return rng
    return np.random.SeedSequence(int(np.random.default_rng(rng).integers(2**63)))


def noise_structure(
    model: _MomentModel,
    n_samples: int,
    *,
    rng: RngLike = None,
    whitening: str = "estimated",
    n_starts: int = DEFAULT_STARTS,
    attractor_reference: bool = True,
    chunk_size: int = CHUNK_SIZE,
    estimator: dict[str, Any] | None = None,
    norm_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> NoiseStructure:
    """Sample ``n_samples`` observations of ``model`` and measure the structure of
    ``E = T̂ − T`` (:func:`perturbation_structure`).

    ``whitening`` (:data:`WHITENINGS`): ``"estimated"`` measures the perturbation SROA sees
    (``T̂`` whitened by ``Ŵ`` from the same sample, the truth in Ŵ's coordinates);
    ``"population"`` the moment noise alone. ``rng`` is split into the sample's stream and the
    measurement's, so a result is reproducible from one seed. ``norm_options``: as
    :func:`perturbation_structure`'s.
    """
    if whitening not in WHITENINGS:
        raise InputError(
            f"whitening: expected one of {list(WHITENINGS)}, received {whitening!r}",
            "use 'estimated' (what SROA sees) or 'population'",
        )
    s_sample, s_measure = _seed(rng).spawn(2)
    data = model.sample(n_samples, rng=np.random.default_rng(s_sample)).data
    wm = whitened_moments(model.kind, data, model.k, chunk_size=chunk_size, **(estimator or {}))
    if whitening == "estimated":
        lam, V = model.sod(wm.whitening)
        That = wm.tensor
    else:
        W = model.whitening()
        lam, V = model.sod(W)
        That = wm.estimator.whitened_tensor(W, chunk_size=chunk_size)
    E = symmetrize(That) - sod_tensor(lam, V, model.order)
    res = perturbation_structure(
        E,
        lam,
        V,
        rng=s_measure,
        n_starts=n_starts,
        attractor_reference=attractor_reference,
        norm_options=norm_options,
    )
    return dataclasses.replace(res, kind=model.kind, n_samples=int(n_samples), whitening=whitening)
