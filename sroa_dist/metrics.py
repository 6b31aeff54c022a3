"""Recovery errors after optimal matching, and the paper's perturbation bounds."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .decomposition import SROAResult
from .errors import InputError

__all__ = ["MatchResult", "match", "theorem_2_2_bounds", "theorem_3_1_bounds"]


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """Estimated components matched one-to-one to true ones (fields batched like the input).

    ``perm[j]`` is the true component assigned to step ``j``; ``lam_err[j] = |λ̂_j − λ_perm(j)|``
    and ``vec_err[j] = ‖v̂_j − v_perm(j)‖`` (for even p the smaller of ``‖v̂_j ∓ v_perm(j)‖``),
    the paper's error measures; ``lam_matched[j] = λ_perm(j)``.
    """

    perm: Any
    lam_err: Any
    vec_err: Any
    lam_matched: Any


def _canonical(lambdas: np.ndarray, V: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """For odd p, write every component with λ > 0 (λ v^{⊗p} = (−λ)(−v)^{⊗p}), as the paper does."""
    if p % 2 == 0:
        return lambdas, V
    s = np.where(lambdas < 0, -1.0, 1.0)
    return lambdas * s, V * s[..., None, :]


#: Elements of one block of the differences :func:`_pairwise_distances` forms (16 MB of
#: doubles): the whole (n, r_hat, r) array is n³ doubles, 8.6 GB at n = 1024.
_DISTANCE_BLOCK = 1 << 21


def _pairwise_distances(A: np.ndarray, B: np.ndarray, sign: float) -> np.ndarray:
    """``D[i, j] = ‖A[:, i] + sign·B[:, j]‖`` for (n, a) and (n, b) arrays, in memory
    O(n·(a + b)) plus one bounded block.

    Formed block by block over the columns of ``A``, each entry as the same sequential sum over
    the n coordinates that one (n, a, b) array would give, so the bits do not depend on the
    block size (the matching of stored results keeps its bits); the norm through ``AᵀB`` would
    be cheaper but round differently."""
    n, a = A.shape
    b = B.shape[1]
    out = np.empty((a, b))
    step = max(1, _DISTANCE_BLOCK // max(1, n * b))
    for i in range(0, a, step):
        block = A[:, i : i + step, None] + sign * B[:, None, :]
        out[i : i + step] = np.linalg.norm(block, axis=0)
    return out


def _match_one(lam_hat, V_hat, lam_true, V_true, p):
    lam_hat, V_hat = _canonical(lam_hat, V_hat, p)
    lam_true, V_true = _canonical(lam_true, V_true, p)
    diff = _pairwise_distances(V_hat, V_true, -1.0)  # (r_hat, r)
    if p % 2 == 0:
        diff = np.minimum(diff, _pairwise_distances(V_hat, V_true, 1.0))
    lam_diff = np.abs(lam_hat[:, None] - lam_true[None, :])
    # Vector error first; the relative λ error breaks ties between equal-weight components.
    cost = diff + lam_diff / np.maximum(np.abs(lam_true[None, :]), np.finfo(float).tiny)
    from scipy.optimize import linear_sum_assignment  # on use: 0.5 s to import

    rows, cols = linear_sum_assignment(cost)
    perm = np.empty(len(lam_hat), dtype=np.int64)
    perm[rows] = cols
    idx = np.arange(len(lam_hat))
    return perm, lam_diff[idx, perm], diff[idx, perm], lam_true[perm]


def match(result: SROAResult, lambdas_true: ArrayLike, V_true: ArrayLike) -> MatchResult:
    """Optimal one-to-one assignment of SROA's components to the true ones (Hungarian method).

    Parameters
    ----------
    result : SROAResult
        Single or batched output of :func:`sroa` / :func:`sroa_batch` (``r_hat`` steps).
    lambdas_true : (r,) or (B, r) array_like
        True weights, ``r ≥ r_hat``.
    V_true : (n, r) or (B, n, r) array_like
        True orthonormal components.

    The assignment minimises the summed vector error (plus the relative λ error, which only
    decides between otherwise equal choices); for odd p components are compared in the paper's
    λ > 0 convention, for even p vectors are compared up to sign (Section 3.3).
    """
    lam_hat = np.asarray(result.lambdas, dtype=float)
    V_hat = np.asarray(result.vectors, dtype=float)
    lam_true = np.asarray(lambdas_true, dtype=float)
    V_true = np.asarray(V_true, dtype=float)
    batched = lam_hat.ndim == 2
    if not batched:
        lam_hat, V_hat = lam_hat[None], V_hat[None]
    B, n, r_hat = V_hat.shape
    if lam_true.ndim == 1:
        lam_true = np.broadcast_to(lam_true, (B,) + lam_true.shape)
    if V_true.ndim == 2:
        V_true = np.broadcast_to(V_true, (B,) + V_true.shape)
    if V_true.shape[:2] != (B, n) or lam_true.shape != (B, V_true.shape[2]):
        raise InputError(
            f"lambdas_true/V_true: expected shapes (r,)/(n, r) with n = {n} (or with a batch axis "
            f"of {B}), received {np.shape(lambdas_true)} and {np.shape(V_true)}",
            "pass the instance's own lambdas and V (e.g. inst.lambdas, inst.V)",
        )
    if V_true.shape[2] < r_hat:
        raise InputError(
            f"V_true: {V_true.shape[2]} true components cannot be matched to {r_hat} estimates",
            "run SROA with at least as many steps as true components (rank=r)",
        )
    out = [_match_one(lam_hat[b], V_hat[b], lam_true[b], V_true[b], result.p) for b in range(B)]
    perm, lam_err, vec_err, lam_m = (np.stack(a) for a in zip(*out, strict=True))
    if not batched:
        perm, lam_err, vec_err, lam_m = perm[0], lam_err[0], vec_err[0], lam_m[0]
    return MatchResult(perm=perm, lam_err=lam_err, vec_err=vec_err, lam_matched=lam_m)


def _check_eps(eps: ArrayLike) -> np.ndarray:
    """ε as floats; NaN (no instance) passes, a negative norm does not."""
    eps = np.asarray(eps, dtype=float)
    if np.any(eps < 0):
        raise InputError(
            f"eps: expected operator norms >= 0; received {eps[eps < 0].ravel()[:3].tolist()}",
            "pass ‖E‖ (e.g. a cube's eps, or operator_norm(E).value)",
        )
    return eps


def theorem_2_2_bounds(eps: ArrayLike, lam: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 2.2 (first SROA step, odd p): ``|λ̂ − λ_j| ≤ ε`` and
    ``‖x̂ − v_j‖ ≤ 10 (ε/λ_j + (ε/λ_j)²)``. Returns ``(lam_bound, vec_bound)``, broadcast."""
    eps = _check_eps(eps)
    with np.errstate(over="ignore", divide="ignore"):  # a huge ratio's bound is just +inf
        ratio = eps / np.abs(np.asarray(lam, dtype=float))
        return np.broadcast_to(eps, ratio.shape).copy(), 10.0 * (ratio + ratio**2)


def theorem_3_1_bounds(eps: ArrayLike, lam: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 3.1 (every SROA step, for ε ≤ c₀ λ_min / n^{1/(p−1)}): ``|λ_π(j) − λ̂_j| ≤ 2ε`` and
    ``‖v_π(j) − v̂_j‖ ≤ 20 ε/λ_π(j)``. Returns ``(lam_bound, vec_bound)``, broadcast."""
    eps = _check_eps(eps)
    with np.errstate(over="ignore", divide="ignore"):  # a huge ratio's bound is just +inf
        ratio = eps / np.abs(np.asarray(lam, dtype=float))
        return np.broadcast_to(2.0 * eps, ratio.shape).copy(), 20.0 * ratio
