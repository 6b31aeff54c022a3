"""Matrix-free nearly SOD tensors ``T = Σ λ_i v_i^{⊗p} + E`` with a factored perturbation,
for SROA at sizes where ``n^p`` entries do not fit (p = 5 at n = 200 would need 2.6 TB)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InputError
from ..operators import StructuredTensor, SymmetricProducts
from ..tensors import identity_basis
from .instances import check_lambdas, check_level
from .perturbations import factored_perturbation

__all__ = ["ORTHONORMAL_TOL", "structured_tensor"]

#: Largest ``max |VᵀV − I|`` accepted for the basis: the families' exact norms (the coherent
#: tilt's ``c_p``) assume orthonormal components.
ORTHONORMAL_TOL = 1e-10


def structured_tensor(
    p: int,
    lambdas: ArrayLike,
    *,
    V: ArrayLike | None = None,
    family: str = "coherent-tilt",
    eps: float,
    params: Mapping[str, Any] | None = None,
) -> StructuredTensor:
    """The nearly SOD tensor ``T = Σ_i λ_i v_i^{⊗p} + E`` as a matrix-free operator.

    ``E`` is family ``family``'s perturbation scaled to operator norm ``‖E‖ = eps``, built from
    the family's factored form (:attr:`sroa_dist.Family.factored`) with the same polynomial and
    the same scaling as the dense tensor ``make_instance(..., noise=family, eps=eps)`` draws,
    so both are the same tensor up to rounding. Contractions ``T x^{p-1}`` and values
    ``T x^p`` cost ``O(n·r)`` per vector (``T x^{p-2}``: ``O(n²·r)``); nothing of size
    ``n^p`` is formed. :func:`sroa_dist.sroa` and :func:`sroa_dist.rank_one` accept it with
    the local methods (``sshopm``, ``power``; implicit deflation); their steps are local
    optima, never certified (``upper_bound = inf``). ``sshopm`` there follows its implicit
    deflation policy (16 uniform starts per step plus the previous step's other local maxima
    as warm starts, lazy stopping) plus its spectral starts, 4 per step
    (:data:`sroa_dist.methods.ascent.DEFAULT_N_SPECTRAL`: at large n uniform starts drift to a
    coherent perturbation's sink); ``benchmarks/bench_structured.py --policies`` compares it
    with other policies.

    Parameters
    ----------
    p : int
        Order, ``>= 3``.
    lambdas : (r,) array_like, or a number when ``V`` is given
        Component weights (non-zero).
    V : (n, r) array_like, optional
        Orthonormal components as columns (checked to :data:`ORTHONORMAL_TOL`); default the
        identity basis with ``n = r``.
    family : str
        A perturbation family with a factored form (``"coherent-tilt"``). i.i.d. noise and
        mixtures with an i.i.d. background are refused: they have no factored form.
    eps : float
        Operator norm of ``E``, ``>= 0``.
    params : Mapping, optional
        The family's parameters (e.g. ``{"component": 3}`` for the tilt).

    Returns
    -------
    StructuredTensor
        Unbatched: ``shape == (n,)*p``.
    """
    if isinstance(p, bool) or int(p) != p or int(p) < 3:
        raise InputError(
            f"p: expected an integer tensor order >= 3, received {p!r}", "give an integer p >= 3"
        )
    p = int(p)
    lam_in = np.asarray(lambdas, dtype=float)
    if V is None:
        if lam_in.ndim != 1:
            raise InputError(
                "lambdas: without V expected a list of r weights (the basis is then the "
                f"identity, n = r), received shape {lam_in.shape}",
                "pass V=... as well, or a flat list of r weights",
            )
        V = identity_basis(lam_in.shape[0])
    V = np.asarray(V, dtype=float)
    if V.ndim != 2 or not 1 <= V.shape[1] <= V.shape[0]:
        raise InputError(
            f"V: expected an (n, r) basis with 1 <= r <= n, received {V.shape}",
            "pass V as an (n, r) matrix with 1 <= r <= n",
        )
    if not np.all(np.isfinite(V)):
        raise InputError("V: expected finite entries", "replace the non-finite entries of V")
    n, r = V.shape
    dev = float(np.max(np.abs(V.T @ V - np.eye(r))))
    if dev > ORTHONORMAL_TOL:
        raise InputError(
            f"V: expected orthonormal columns (max |VᵀV − I| <= {ORTHONORMAL_TOL:g}), "
            f"received {dev:.3g}; the family's exact norm assumes them",
            "orthonormalise V first, e.g. with numpy.linalg.qr",
        )
    spec = check_lambdas(lam_in.tolist() if lam_in.ndim else float(lam_in), r)
    lam = np.array(spec, dtype=float) if isinstance(spec, list) else np.full(r, spec)
    eps = check_level(eps, "eps")
    form, norm = factored_perturbation(family, n, p, V, lam, params=params)
    if norm is None:
        raise InputError(
            f"family: {family!r} states no closed-form norm, which scaling E to eps = {eps:g} "
            "without its entries needs",
            "use a family with a closed-form norm (e.g. 'coherent-tilt'), or a dense tensor",
        )
    if norm == 0 and eps > 0:
        raise InputError(
            f"family: {family!r} gave E = 0, which cannot be scaled to eps = {eps:g}",
            "use a family whose E is nonzero for this instance",
        )
    # The dense path scales the unit-norm draw by eps / norm; so does this, term by term.
    E = form.scaled(eps / norm if norm > 0 else 0.0)
    sod = SymmetricProducts((V,), (p,), lam)
    return StructuredTensor(((sod, E),), batched=False)
