"""Perturbation families: symmetric ``E`` drawn from the instance's basis and weights, with its
operator norm stated exactly where a closed form is known.

A *family* generalises the i.i.d. noise models of :mod:`sroa_dist.problems.noise`: it sees the
instance (``n``, ``p``, basis ``V``, weights ``lambdas``) and can therefore build structured
perturbations such as the coherent tilt, which makes SROA's deflation residuals add up and so
probes the ``n^{-1/(p-1)}`` rate of Theorem 3.1 (i.i.d. noise cannot: its threshold is flat in
n). A model name, as used by :func:`draw_perturbation` and by a sweep's ``noise.model`` axis, is

- a registered family (``"coherent-tilt"``, see :data:`PERTURBATIONS`),
- an i.i.d. noise model (``"binary"``, ``"uniform"``, ``"gaussian"`` or one added with
  :func:`sroa_dist.register_noise`), drawn exactly as :func:`sroa_dist.noise_tensor` draws it,
- an import path ``"package.module:attribute"`` of a user family (a :class:`Family` or a plain
  callable with the family signature), imported where the instance is drawn (on workers too),
- a mixture ``"FAMILY+BACKGROUND"`` (e.g. ``"coherent-tilt+gaussian"``): the family plus an
  i.i.d. background with weight ``w``, so replicates differ even when the family is fixed.

A family's ``draw(n, p, V, lambdas, rng, **params)`` returns ``(E, norm)``: a symmetric
``(n,)*p`` array and its operator norm ``max_{‖x‖=1} |E x^p|`` when known in closed form, or
``None`` when it is not (callers then compute it, certified where the moment relaxation is
tractable, with :func:`sroa_dist.operator_norm`).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._registry import check_entry, import_entry
from ..errors import InputError
from ..methods import revision_options
from ..monomials import multiset_rank
from ..norms import operator_norm
from ..operators import SymmetricProducts
from ..tensors import check_symmetric_tensor
from .noise import NOISE_MODELS, noise_tensor, symmetric_from_multisets

#: The ``sshopm`` revision that estimates a mixture's norms while its ``E`` is drawn. Drawing is
#: part of the instance, so it must not follow the method's current revision (a stored
#: instance is redrawn when a store resumes): every mixture instance has been drawn with
#: revision 3's starts (revisions 1 and 2 differ from it only by rounding).
DRAW_NORM_REVISION = 3

__all__ = [
    "PERTURBATIONS",
    "Family",
    "Perturbation",
    "check_model",
    "coherent_tilt",
    "draw_perturbation",
    "factored_perturbation",
    "is_deterministic",
    "model_params",
    "attractor",
    "attractor_factored",
    "register_perturbation",
    "resolve_family",
    "tilt_norm",
]

#: Default background weight of a mixture ``"FAMILY+BACKGROUND"``.
DEFAULT_WEIGHT = 0.25

#: ``draw(n, p, V, lambdas, rng, **params) -> (E, norm or None)``.
DrawFn = Callable[..., Any]
#: ``factored(n, p, V, lambdas, **params) -> (SymmetricProducts, norm or None)``: the same
#: ``E`` as ``draw`` (same scaling), as a sum of symmetrized products.
FactoredFn = Callable[..., Any]


@dataclasses.dataclass(frozen=True)
class Family:
    """A perturbation family: a draw function and the keyword parameters it accepts.

    Attributes
    ----------
    name : str
        Registry name (or import path) of the family.
    draw : callable
        ``draw(n, p, V, lambdas, rng, **params) -> (E, norm)``; ``V`` is the ``(n, r)`` basis
        of the instance, ``lambdas`` its ``r`` weights, ``rng`` a ``numpy.random.Generator``
        (the only source of randomness), ``norm`` the operator norm of ``E`` if known in
        closed form, else ``None``.
    params : Mapping
        Accepted keyword parameters and their defaults; ``None`` accepts any keyword (a plain
        callable with ``**kwargs``).
    description : str
        One line for people (docs, error messages).
    needs_eps : bool
        Whether ``draw`` takes the target operator norm as keyword ``eps`` (a family whose
        shape depends on the size of ``E``, such as ``adversarial``).
    factored : callable, optional
        ``factored(n, p, V, lambdas, **params) -> (SymmetricProducts, norm)``: the same ``E``
        as ``draw`` with the same norm, as a sum of symmetrized products, so it can be
        contracted in ``O(n·R)`` without forming ``n^p`` entries (matrix-free tensors,
        :func:`sroa_dist.structured_tensor`). ``None``: the family has no such form.
    deterministic : bool
        ``draw`` never uses ``rng``: ``E`` is a function of the instance's basis and weights,
        and turns with the basis. Instances that differ only in a random basis are then
        rotations of one another and SROA's errors repeat up to its own random starts, so
        replicates of such a family add nothing (sweeps warn once; see :func:`is_deterministic`).
    """

    name: str
    draw: DrawFn
    params: Mapping[str, Any] | None = dataclasses.field(default_factory=dict)
    description: str = ""
    needs_eps: bool = False
    factored: FactoredFn | None = None
    deterministic: bool = False

    def check_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Defaults completed with ``params``; unknown keys raise a ``ValueError``."""
        if self.params is None:
            return dict(params)
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            raise InputError(
                f"noise.params: family {self.name!r} has no parameter {unknown[0]!r}; "
                f"expected one of {sorted(self.params)}",
                "use one of the listed parameters",
            )
        return {**self.params, **params}


@dataclasses.dataclass(frozen=True)
class Perturbation:
    """A drawn perturbation: ``E`` (shape ``(n,)*p``, exactly symmetric) and its operator norm
    ``norm`` when known in closed form (``None`` when it must be computed)."""

    E: NDArray[np.float64]
    norm: float | None
    model: str


_REGISTRY: dict[str, Family] = {}
#: Read-only view of the registered structured families, by name (the i.i.d. noise models of
#: ``NOISE_MODELS`` are families too; :func:`resolve_family` finds both).
PERTURBATIONS: Mapping[str, Family] = MappingProxyType(_REGISTRY)


def register_perturbation(
    name: str,
    draw: DrawFn,
    *,
    params: Mapping[str, Any] | None = None,
    description: str = "",
    needs_eps: bool = False,
    overwrite: bool = False,
    factored: FactoredFn | None = None,
    deterministic: bool = False,
) -> Family:
    """Register a family under ``name`` so sweeps and :func:`draw_perturbation` find it.

    ``params`` lists the accepted keyword parameters with their defaults (``None``: read them
    from ``draw``'s signature). ``factored`` declares a matrix-free form of the same ``E``
    and ``deterministic`` that ``draw`` never uses its ``rng`` (see :class:`Family`).
    """
    check_entry(
        _REGISTRY,
        "perturbation family",
        name,
        draw,
        overwrite=overwrite,
        expected="(n, p, V, lambdas, rng, **params) -> (E, norm)",
    )
    if "+" in name or ":" in name:
        raise InputError(
            f"name: expected a name without '+' or ':' (they mark mixtures and import paths), "
            f"received {name!r}",
            "register the family under a plain name, e.g. 'my-family'",
        )
    if name in NOISE_MODELS:
        raise InputError(
            f"name: {name!r} is an i.i.d. noise model (sroa_dist.NOISE_MODELS)",
            "choose another name for the family",
        )
    fam = Family(
        name,
        draw,
        _signature_params(draw) if params is None else dict(params),
        description,
        needs_eps,
        factored,
        deterministic,
    )
    _REGISTRY[name] = fam
    return fam


def _signature_params(draw: DrawFn) -> dict[str, Any] | None:
    """Keyword parameters (with defaults) of a draw function beyond the five positional ones."""
    try:
        sig = inspect.signature(draw)
    except (TypeError, ValueError):
        return None
    out: dict[str, Any] = {}
    for i, (name, prm) in enumerate(sig.parameters.items()):
        if prm.kind is prm.VAR_KEYWORD:
            return None
        if i < 5 or prm.kind is prm.VAR_POSITIONAL:
            continue
        out[name] = None if prm.default is prm.empty else prm.default
    return out


# --------------------------------------------------------------------------------------------
# The coherent tilt


def tilt_norm(p: int) -> float:
    """Operator norm of ``x ↦ (Σ_{j≠l} y_j^{p-1}) y_l`` with ``y = Vᵀx`` (V orthonormal).

    ``c_p = ((p-1)/p)^{(p-1)/2} p^{-1/2}``; ``c_3 = 2/(3√3)``. Derivation: for ``p-1 ≥ 2``,
    ``|Σ_j y_j^{p-1}| ≤ Σ_j |y_j|^{p-1} ≤ s^{(p-1)/2}`` with ``s = Σ_{j≠l} y_j²`` (the
    ℓ_{p-1} norm is at most the ℓ_2 norm), with equality when a single ``y_j`` is non-zero;
    then ``s + y_l² ≤ 1`` leaves ``max_{s∈[0,1]} s^{(p-1)/2} (1-s)^{1/2}``, attained at
    ``s = (p-1)/p``.
    """
    p = int(p)
    return ((p - 1) / p) ** ((p - 1) / 2) / math.sqrt(p)


def _tilted_index(lambdas: NDArray[np.float64], component: Any) -> int:
    r = len(lambdas)
    if isinstance(component, str):
        if component != "smallest":
            raise InputError(
                f"noise.params.component: expected 'smallest' or an index, received {component!r}",
                "give component = 'smallest' or a component index",
            )
        mags = np.abs(lambdas)
        # The last index among ties: with equal weights SROA deflates it last as well.
        return int(r - 1 - np.argmin(mags[::-1]))
    if isinstance(component, bool) or not isinstance(component, (int, np.integer)):
        raise InputError(
            f"noise.params.component: expected 'smallest' or an integer, received {component!r}",
            "give component = 'smallest' or a component index",
        )
    if not -r <= component < r:
        raise InputError(
            f"noise.params.component: expected an index < r = {r}, received {component}",
            "give an index between 0 and r - 1",
        )
    return int(component) % r


def coherent_tilt(
    n: int,
    p: int,
    V: ArrayLike,
    lambdas: ArrayLike,
    rng: np.random.Generator | None = None,
    *,
    component: int | str = "smallest",
) -> tuple[NDArray[np.float64], float]:
    """The coherent tilt, ``E x^p = (Σ_{j≠l} (v_j·x)^{p-1})(v_l·x) / c_p`` with ``‖E‖ = 1``.

    Every component other than ``v_l`` (by default the one of smallest ``|λ|``, which SROA
    deflates last) is tilted toward ``v_l``: the gradient of ``E x^p`` at ``v_j`` is
    ``v_l / c_p``, so each ``v̂_j`` leans toward ``v_l`` by ``O(ε/λ_j)`` and each deflation
    leaves a residual ``-λ̂_j (v̂_j·v_l)^p`` at ``v_l``. These residuals have the same sign for
    every ``j`` (the leaning is toward ``+v_l``; for even ``p`` the power is even), so they add
    up over ``r - 1`` steps, which is the accumulation Theorem 3.1's ``n^{-1/(p-1)}`` guards
    against. The same polynomial serves even ``p`` (no ``|·|`` is needed, and
    ``|y_j|^{p-1}`` would not be a polynomial for odd ``p - 1``). The norm is exact
    (:func:`tilt_norm`); ``rng`` is unused (the tilt is a function of the instance).

    Returns
    -------
    E : ndarray, shape (n,)*p
        Exactly symmetric.
    norm : float
        ``1.0`` (exact).
    """
    n, p = int(n), int(p)
    V, ell = _tilt_basis(n, p, V, lambdas, component)
    others = np.delete(V, ell, axis=1)  # (n, r-1)
    # W = Σ_{j≠l} v_j^{⊗(p-1)} as the product of a (p-2)-fold Khatri-Rao with the basis.
    kr = others
    for _ in range(p - 3):
        kr = (kr[:, None, :] * others[None, :, :]).reshape(-1, others.shape[1])
    W = (kr @ others.T).reshape((n,) * (p - 1))
    F = W[..., None] * V[:, ell]  # W ⊗ v_l; W is symmetric, so averaging over where v_l sits
    E = F.copy()  # plus v_l moved to each other position: the symmetrisation (up to rounding)
    for k in range(p - 1):
        E += np.moveaxis(F, p - 1, k)
    E /= p * tilt_norm(p)
    return _exactly_symmetric(E), 1.0


def _tilt_basis(
    n: int, p: int, V: ArrayLike, lambdas: ArrayLike, component: Any
) -> tuple[NDArray[np.float64], int]:
    """The basis as floats and the tilted index, checked (both forms of the tilt)."""
    V = np.asarray(V, dtype=float)
    lam = np.asarray(lambdas, dtype=float)
    if V.ndim != 2 or V.shape[0] != int(n) or V.shape[1] != lam.shape[0]:
        raise InputError(
            f"V: expected an (n, r) basis matching {lam.shape[0]} weights, received {V.shape}",
            "pass V with one column per weight",
        )
    if V.shape[1] < 2:
        raise InputError(
            "coherent-tilt: expected rank r >= 2 (one component tilts the others)",
            "use rank r >= 2 with the coherent tilt",
        )
    return V, _tilted_index(lam, component)


def coherent_tilt_factored(
    n: int,
    p: int,
    V: ArrayLike,
    lambdas: ArrayLike,
    *,
    component: int | str = "smallest",
) -> tuple[SymmetricProducts, float]:
    """:func:`coherent_tilt`'s tensor factored, ``E = (1/c_p) Σ_{j≠l} sym(v_j^{⊗(p-1)} ⊗ v_l)``.

    Same polynomial and same scaling (``E x^p = (Σ_{j≠l} (v_j·x)^{p-1})(v_l·x) / c_p``,
    ``‖E‖ = 1`` exactly), contracted in ``O(n·r)`` per vector.
    """
    V, ell = _tilt_basis(n, p, V, lambdas, component)
    others = np.delete(V, ell, axis=1)
    weights = np.full(others.shape[1], 1.0 / tilt_norm(int(p)))
    return SymmetricProducts((others, V[:, [ell]]), (int(p) - 1, 1), weights), 1.0


def _exactly_symmetric(E: NDArray[np.float64]) -> NDArray[np.float64]:
    """Copy each multiset's sorted-index entry to all its permutations (removes the last-bit
    asymmetry that floating-point averaging leaves)."""
    n, p = E.shape[0], E.ndim
    count = math.comb(n + p - 1, p)
    values = np.empty(count)
    # Sorted index tuples are those with i1 <= ... <= ip; walk them by blocks of the first index.
    flat = E.reshape(n, -1)
    tail = np.indices((n,) * (p - 1), dtype=np.intp).reshape(p - 1, -1)
    ok = np.all(np.diff(tail, axis=0) >= 0, axis=0) if p > 2 else np.ones(tail.shape[1], bool)
    for i0 in range(n):
        cols = np.flatnonzero(ok & (tail[0] >= i0))
        idx = np.concatenate([np.full((1, len(cols)), i0, dtype=np.intp), tail[:, cols]])
        values[multiset_rank(idx, n)] = flat[i0, cols]
    return symmetric_from_multisets(values, n, p)


register_perturbation(
    "coherent-tilt",
    coherent_tilt,
    params={"component": "smallest"},
    description="every component tilted toward the one of smallest |lambda| (exact norm)",
    factored=coherent_tilt_factored,
    deterministic=True,  # E turns with the basis: replicates are rotations of one instance
)

# --------------------------------------------------------------------------------------------
# The attractor


def attractor(
    n: int, p: int, V: ArrayLike, lambdas: ArrayLike, rng: np.random.Generator | None = None
) -> tuple[NDArray[np.float64], float]:
    """The attractor, ``E x^p = ‖x‖²·(u·x)^{p-2}`` with ``u = Σ_i v_i/√r``, ``‖E‖ = 1``.

    A perturbation that separates random-start local steps from global ones (p = 3, 4). Its
    maximum over the sphere is 1, at ``x = u``, where the components give only
    ``Σ λ_i (v_i·u)^p = O(r^{1-p/2})``; at a component ``T̂ v_i^p = λ_i + ε r^{-(p-2)/2}``,
    so for ``ε`` below about ``λ_min`` the global maximum is always at a component and global
    SROA recovers every one. But the gradient ``E x^{p-1}`` is ``O(ε)`` toward ``u`` everywhere,
    while a uniform start feels the components only through ``O(n^{-1/2})`` overlaps: once
    ``ε ≳ 4√(ln n/n)`` power iterations from random starts are captured by ``u``. Exact norm:
    ``‖x‖² = 1`` and ``|u·x| ≤ 1`` on the sphere, equality at ``±u``. Deterministic (``rng``
    unused). Only ``p = 3, 4`` (the orders of the studies).

    Returns
    -------
    E : ndarray, shape (n,)*p
        Exactly symmetric.
    norm : float
        ``1.0`` (exact).
    """
    n, p = int(n), int(p)
    u = _attractor_direction(n, p, V, lambdas)
    # sym(I ⊗ u^{⊗(p-2)}): average of I placed on each pair of the p axes, u on the others.
    E = np.zeros((n,) * p)
    pairs = [(a, b) for a in range(p) for b in range(a + 1, p)]
    for a, b in pairs:
        term = np.ones((1,) * p)
        for axis in range(p):
            if axis not in (a, b):
                term = term * u.reshape([n if k == axis else 1 for k in range(p)])
        eye = np.eye(n).reshape([n if k in (a, b) else 1 for k in range(p)])
        E += eye * term
    E /= len(pairs)
    return _exactly_symmetric(E), 1.0


def attractor_factored(
    n: int, p: int, V: ArrayLike, lambdas: ArrayLike
) -> tuple[SymmetricProducts, float]:
    """:func:`attractor`'s tensor factored: ``Σ_i sym(e_i ⊗ e_i ⊗ u^{⊗(p-2)})`` (``‖x‖² =
    Σ_i (e_i·x)²``), contracted in ``O(n²)`` per vector, the order of the components' own
    ``O(n·r)`` at ``r = n``; ``‖E‖ = 1`` exactly."""
    n, p = int(n), int(p)
    u = _attractor_direction(n, p, V, lambdas)
    return SymmetricProducts((np.eye(n), u[:, None]), (2, p - 2), np.ones(n)), 1.0


def _attractor_direction(n: int, p: int, V: ArrayLike, lambdas: ArrayLike) -> NDArray:
    V = np.asarray(V, dtype=float)
    lam = np.asarray(lambdas, dtype=float)
    if p not in (3, 4):
        raise InputError(
            f"attractor: defined for p = 3 and 4 (‖x‖²(u·x) and ‖x‖²(u·x)²), received p = {p}",
            "use p = 3 or 4",
        )
    if V.ndim != 2 or V.shape[0] != n or V.shape[1] != lam.shape[0]:
        raise InputError(
            f"V: expected an (n, r) basis matching {lam.shape[0]} weights, received {V.shape}",
            "pass the instance's basis and weights",
        )
    u = V.sum(axis=1)
    return u / np.linalg.norm(u)


register_perturbation(
    "attractor",
    attractor,
    params={},
    description="||x||^2 (u.x)^(p-2) with u the normalised sum of the components (exact norm; "
    "captures random starts, never the global maximum)",
    factored=attractor_factored,
    deterministic=True,
)

#: Families whose stated operator norm the package proves (a closed form derived and tested
#: here). Any other family's stated norm (a user's family, by import path or registered at run
#: time) is a claim: sweeps record it, but never as certified.
PROVEN_NORMS: frozenset[str] = frozenset({"coherent-tilt", "attractor", "tilt-shrink"})


# --------------------------------------------------------------------------------------------
# Resolution of model names


def _import_family(path: str) -> Family:
    obj = import_entry(
        path,
        "noise.model",
        "family",
        "a sroa_dist.problems.perturbations.Family or a function "
        "(n, p, V, lambdas, rng, **params) -> (E, norm)",
        accept=(Family,),
    )
    if isinstance(obj, Family):
        return dataclasses.replace(obj, name=path)
    try:
        inspect.signature(obj).bind(*(None,) * 5)
    except TypeError as exc:  # e.g. 'math:sqrt': importable and callable, but no draw function
        raise InputError(
            f"noise.model: expected a family function (n, p, V, lambdas, rng, **params) -> "
            f"(E, norm) at {path!r}; received a callable that cannot take those five "
            f"arguments ({exc})",
            "point noise.model at a Family or a draw function with that signature",
        ) from None
    except ValueError:  # no signature to read (some builtins): checked when it draws
        pass
    return Family(path, obj, _signature_params(obj), getattr(obj, "__doc__", "") or "")


def _iid_family(model: str) -> Family:
    def draw(n, p, V, lambdas, rng):  # noqa: ARG001  (i.i.d.: the instance is not used)
        return noise_tensor(model, n, p, 1.0, rng=rng), None

    return Family(model, draw, {}, "i.i.d. entries (sroa_dist.problems.noise)")


def resolve_family(model: str) -> Family:
    """The family a (non-mixture) model name refers to; see the module docstring."""
    if not isinstance(model, str) or not model:
        raise InputError(
            f"noise.model: expected a non-empty string, received {model!r}",
            "give a model name such as 'gaussian' or 'coherent-tilt'",
        )
    if model in _REGISTRY:
        return _REGISTRY[model]
    if model in NOISE_MODELS:
        return _iid_family(model)
    if ":" in model:
        return _import_family(model)
    raise InputError(
        f"noise.model: unknown model {model!r}; expected one of "
        f"{sorted(set(_REGISTRY) | set(NOISE_MODELS))}, an import path 'package.module:family', "
        "or a mixture 'FAMILY+BACKGROUND' (e.g. 'coherent-tilt+gaussian')",
        "use a listed model, an import path 'package.module:family' or a mixture such as "
        "'coherent-tilt+gaussian'",
    )


def _split(model: str) -> tuple[str, str | None]:
    if isinstance(model, str) and "+" in model:
        family, _, background = model.rpartition("+")
        if background not in NOISE_MODELS:
            raise InputError(
                f"noise.model: mixture {model!r} needs an i.i.d. background after '+', one of "
                f"{sorted(NOISE_MODELS)}; received {background!r}",
                "write FAMILY+BACKGROUND with an i.i.d. background, e.g. 'coherent-tilt+gaussian'",
            )
        return family, background
    return model, None


def model_params(table: Mapping[str, Any] | None, model: str) -> dict[str, Any]:
    """Parameters of ``model`` from a ``[noise.params]`` table.

    Plain keys apply to every family on the axis that is not i.i.d.; a sub-table named after a
    model (``[noise.params.coherent-tilt]``, or the full mixture name) applies to that model
    only, so one sweep can tune each family of its ``noise.model`` axis.
    """
    table = dict(table or {})
    family, _ = _split(model)
    out = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
    if family in NOISE_MODELS:
        out = {}
    for key in (family, model):
        sub = table.get(key)
        if isinstance(sub, Mapping):
            out.update(sub)
    return out


def is_deterministic(model: str) -> bool:
    """Whether ``model`` draws no randomness (its family is :attr:`Family.deterministic` and
    it has no i.i.d. background): its replicates repeat one result."""
    family_name, background = _split(model)
    return background is None and resolve_family(family_name).deterministic


def check_model(
    model: str, params: Mapping[str, Any] | None = None, weight: float = DEFAULT_WEIGHT
) -> Family:
    """Validate a model name with its parameters (imports user families); raises
    ``ValueError`` with the reason and a hint. Returns the (family part's) :class:`Family`."""
    family_name, _ = _split(model)
    fam = resolve_family(family_name)
    fam.check_params(params or {})
    w = weight
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0.0 <= float(w) <= 1.0:
        raise InputError(
            f"noise.weight: expected a number in [0, 1], received {w!r}",
            "give a weight between 0 and 1, e.g. noise.weight = 0.25",
        )
    return fam


def _checked(model: str, out: Any, n: int, p: int) -> tuple[NDArray[np.float64], float | None]:
    if isinstance(out, np.ndarray) or not isinstance(out, tuple) or len(out) != 2:
        raise InputError(
            f"noise.model {model!r}: norm missing; a family must return (E, norm) with norm its "
            "exact operator norm or None (then it is computed), received "
            f"{type(out).__name__}",
            "return (E, norm) from the family, norm None when not known in closed form",
        )
    E, norm = out
    E = np.asarray(E, dtype=float)
    if E.shape != (n,) * p:
        raise InputError(
            f"noise.model {model!r}: E has the wrong shape; expected {(n,) * p}, received "
            f"{E.shape}",
            "return E of shape (n,)*p for the instance's n and p",
        )
    try:
        E = check_symmetric_tensor(E, f"noise.model {model!r}: E")
    except ValueError as exc:
        raise InputError(
            str(exc), "average E over index permutations (sroa_dist.symmetrize)"
        ) from None
    if norm is not None:
        if isinstance(norm, bool) or not isinstance(norm, (int, float, np.floating)):
            raise InputError(
                f"noise.model {model!r}: norm must be a number or None, received {norm!r}",
                "return a number or None as the norm",
            )
        norm = float(norm)
        if not (math.isfinite(norm) and norm >= 0):
            raise InputError(
                f"noise.model {model!r}: norm must be finite and >= 0, got {norm}",
                "return a finite norm >= 0, or None to have it computed",
            )
    return E, norm


def draw_perturbation(
    model: str,
    n: int,
    p: int,
    V: ArrayLike,
    lambdas: ArrayLike,
    *,
    rng: np.random.Generator | int | None,
    scale: float = 1.0,
    params: Mapping[str, Any] | None = None,
    weight: float = DEFAULT_WEIGHT,
    eps: float | None = None,
) -> Perturbation:
    """Draw ``E`` of family ``model`` for an instance with basis ``V`` and weights ``lambdas``.

    Parameters
    ----------
    model : str
        A family, an i.i.d. model, an import path or a mixture (module docstring).
    n, p : int
        Dimension and order.
    V : (n, r) array_like
        Orthonormal basis of the instance (structured families align with it).
    lambdas : (r,) array_like
        Weights of the instance.
    rng : Generator or seed
        The only source of randomness. An i.i.d. model consumes exactly the draws of
        :func:`sroa_dist.noise_tensor` (so instances stay bit-identical to earlier versions).
    scale : float
        Multiplies the family's draw: the entry scale σ for i.i.d. models; structured
        families are drawn with ``‖E‖ = 1`` (``coherent-tilt``) and scaled to ``‖E‖ = scale``.
    params : Mapping, optional
        The family's keyword parameters.
    weight : float
        Background weight ``w`` of a mixture: ``E = (1-w) F/‖F‖ + w B/‖B‖`` with ``F`` the
        family's draw and ``B`` the i.i.d. background; ``‖B‖`` (and ``‖F‖`` when not exact)
        comes from an SS-HOPM multi-start (a lower bound, so ``w`` is the background's share
        up to that estimate; ``sshopm`` revision :data:`DRAW_NORM_REVISION`, whatever the
        current one). The mixture's own norm is not known in closed form.
    eps : float, optional
        The operator norm ``E`` will be scaled to, for families that need it
        (``Family.needs_eps``); their draw is then divided by ``eps`` so ``scale`` applies.

    Returns
    -------
    Perturbation
    """
    gen = np.random.default_rng(rng)
    n, p = int(n), int(p)
    V = np.asarray(V, dtype=float)
    lam = np.asarray(lambdas, dtype=float)
    family_name, background = _split(model)
    fam = check_model(model, params, weight)
    full = fam.check_params(params or {})
    if family_name in NOISE_MODELS and background is None:
        # The original path, draw for draw (bit-identical cubes for binary/uniform/gaussian).
        return Perturbation(noise_tensor(family_name, n, p, float(scale), rng=gen), None, model)
    if fam.needs_eps:
        if eps is None or not eps > 0:
            raise InputError(
                f"noise.model {model!r}: this family needs the target operator norm eps > 0, "
                f"received {eps!r}",
                "use noise.eps or noise.eps_scaled, not noise.sigma",
            )
        E, norm = _checked(model, fam.draw(n, p, V, lam, gen, eps=float(eps), **full), n, p)
        E, norm = E / float(eps), (None if norm is None else norm / float(eps))
    else:
        E, norm = _checked(model, fam.draw(n, p, V, lam, gen, **full), n, p)
    if background is not None:
        pinned = revision_options("sshopm", DRAW_NORM_REVISION)
        if norm is None:
            norm = operator_norm(E, "sshopm", rng=gen, **pinned).value
        B = noise_tensor(background, n, p, 1.0, rng=gen)
        b_norm = operator_norm(B, "sshopm", rng=gen, **pinned).value
        w = float(weight)
        E = (1.0 - w) * (E / norm if norm > 0 else E) + w * (B / b_norm)
        norm = None
    if norm is not None:
        norm = norm * abs(float(scale))
    return Perturbation(E * float(scale), norm, model)


def factored_perturbation(
    model: str,
    n: int,
    p: int,
    V: ArrayLike,
    lambdas: ArrayLike,
    *,
    params: Mapping[str, Any] | None = None,
) -> tuple[SymmetricProducts, float | None]:
    """The factored form of family ``model``'s ``E`` (see :class:`Family`), with its norm.

    It equals ``draw_perturbation(model, ...)``'s ``E`` before ``scale`` (same polynomial,
    same norm). Refused with the reason (``ValueError``) for i.i.d. noise, mixtures with an
    i.i.d. background, and families that declare no factored form or whose shape depends on
    the target norm (``needs_eps``): their ``E`` exists only as entries.
    """
    family_name, background = _split(model)
    fam = check_model(model, params)
    why = (
        f"its i.i.d. background {background!r} has no factored form (n^p independent entries)"
        if background is not None
        else "i.i.d. noise has no factored form (n^p independent entries)"
        if family_name in NOISE_MODELS
        else "the family declares no factored form (Family.factored)"
        if fam.factored is None or fam.needs_eps
        else ""
    )
    if why:
        raise InputError(
            f"noise.model {model!r}: {why}, so it cannot be matrix-free; use a family that "
            "declares one (e.g. 'coherent-tilt') or a dense tensor",
            "use a family that declares a factored form (e.g. 'coherent-tilt') or a dense tensor",
        )
    lam = np.asarray(lambdas, dtype=float)
    out = fam.factored(
        int(n), int(p), np.asarray(V, dtype=float), lam, **fam.check_params(params or {})
    )
    if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], SymmetricProducts)):
        raise InputError(
            f"noise.model {model!r}: Family.factored must return (SymmetricProducts, norm), "
            f"received {type(out).__name__}",
            "return (SymmetricProducts, norm) from Family.factored",
        )
    form, norm = out
    if (form.n, form.p) != (int(n), int(p)):
        raise InputError(
            f"noise.model {model!r}: the factored form has n = {form.n}, p = {form.p}; "
            f"expected n = {n}, p = {p}",
            "build the factored form for the instance's n and p",
        )
    if norm is not None and not (math.isfinite(float(norm)) and float(norm) >= 0):
        raise InputError(
            f"noise.model {model!r}: norm must be finite and >= 0, got {norm}",
            "return a finite norm >= 0, or None to have it computed",
        )
    return form, None if norm is None else float(norm)
