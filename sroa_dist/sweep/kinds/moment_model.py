"""The latent variable model a moment kind samples, as spec keys: one home for what the kinds
that draw topics, Gaussian mixture or ICA models from a seeded prior share (``samples``: N*
searches; ``structure``: the structure of the sampling noise).

A kind puts these keys in its own marker table (``[samples]``, ``[structure]``):

    model, k, d, d_per_k, L (topics), sigma2 (gmm), prior, weights, zipf_exponent

``k`` and ``weights`` may be axes. ``d`` is the table's ``d`` where given, else
``max(k, ⌈d_per_k·k⌉)``. ``weights``: ``"uniform"`` or ``"zipf"`` (``w_i ∝ i^{−zipf_exponent}``,
the spread ``λ_i = w_i^{−1/2}``); ICA has no class weights (its SOD weights are the sources'
kurtoses), so an ICA spec is uniform. Here: the keys' schema and meanings, their checks (a
``SpecError`` naming the table's key), the dimension rule, the class weights and the model a
grid point draws. A kind keeps its own seeds: the model is drawn from the generator it passes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sroa_dist.methods import revision_options
from sroa_dist.moments import ICA_SOURCES, MODELS, make_model

from ..cube import Dim, by_name
from ..spec import SpecError

__all__ = [
    "MODEL_DIMS",
    "MODEL_SCHEMA",
    "NORM_METHODS",
    "WEIGHT_SHAPES",
    "MomentModelPoint",
    "check_model_keys",
    "class_weights",
    "dimension",
    "model_fields",
    "model_meanings",
    "model_order",
    "norm_revision_options",
    "zipf_weights",
]

#: The model keys' schema, ``(vtype, default, required)`` per key (:mod:`..spec.fields`),
#: placed by a kind inside its own marker table.
MODEL_SCHEMA: dict[str, Any] = {
    "model": ("str", None, True),
    "k": ("int_axis", None, True),
    "d": ("int", None, False),
    "d_per_k": ("float", 2.0, False),
    "L": ("int", None, False),
    "sigma2": ("float", None, False),
    "prior": ("table", {}, False),
    "weights": ("str_axis", "uniform", False),
    "zipf_exponent": ("float", 1.0, False),
}

#: The dims of the model keys that may be swept (``k``, ``weights``), for a kind's ``dims``.
MODEL_DIMS: Mapping[str, Dim] = by_name(
    Dim("k", "i8", "number of latent classes k (the whitened dimension SROA works in)"),
    Dim("weights", "str", "class weights: uniform, or zipf (w_i proportional to i^-s)"),
)

#: The methods that solve ``‖E‖`` (certified where the relaxation is tractable, else sshopm).
NORM_METHODS = ("certified", "sshopm")

#: The weight shapes of the ``weights`` key.
WEIGHT_SHAPES = ("uniform", "zipf")

#: The prior keys each model reads (``[<table>.prior]``).
PRIOR_KEYS = {
    "topics": ("concentration",),
    "gmm": ("mean_scale",),
    "ica": ("sources", "mixing_scale"),
}


def model_meanings(table: str) -> dict[str, str]:
    """What each model key means, under the kind's table name (docs/reference/spec.md)."""
    return {
        f"{table}.model": "latent variable model: `topics`, `gmm` or `ica`",
        f"{table}.k": "number of latent classes k (the whitened dimension)",
        f"{table}.d": "observation dimension d at every k; default max(k, ⌈d_per_k·k⌉)",
        f"{table}.d_per_k": "d / k where `d` is not given",
        f"{table}.L": "words per document (topics)",
        f"{table}.sigma2": "noise variance of the mixture (gmm)",
        f"{table}.prior": "prior of the model's parameters, as a model sweep's `[model.prior]`",
        f"{table}.weights": "class weights: `uniform` or `zipf` (w_i ∝ i^-zipf_exponent; ica: "
        "uniform only)",
        f"{table}.zipf_exponent": "exponent s of the Zipf weights",
    }


def model_order(name: str) -> int:
    """Order of the tensor model ``name``'s SROA decomposes (its class's ``order``)."""
    ctor = MODELS[name]
    return int(getattr(ctor, "__self__", ctor).order)


def zipf_weights(k: int, exponent: float = 1.0) -> np.ndarray:
    """Zipf-like mixing weights ``w_i ∝ i^{−exponent}``, ``i = 1..k``, summing to 1."""
    w = np.arange(1, k + 1, dtype=np.float64) ** (-float(exponent))
    return w / w.sum()


def dimension(table: Mapping[str, Any], k: int) -> int:
    """The observation dimension d at ``k`` classes: the table's ``d``, else
    ``max(k, ⌈d_per_k·k⌉)``."""
    d = table["d"]
    return int(d) if d is not None else max(int(k), math.ceil(table["d_per_k"] * k))


def class_weights(model: str, k: int, weights: str, exponent: float) -> np.ndarray | None:
    """The mixing weights of a ``weights`` shape (None for ICA, whose SOD weights are the
    kurtoses)."""
    if model == "ica":
        return None
    if weights == "zipf":
        return zipf_weights(k, exponent)
    return np.full(k, 1.0 / k)


def model_fields(table: Mapping[str, Any], k: int, weights: str) -> dict[str, Any]:
    """The model fields of a grid point (``model, k, d, L, sigma2, weights, zipf_exponent,
    prior``) from a validated table, at ``k`` classes and weight shape ``weights``: what a
    :class:`MomentModelPoint` holds."""
    return {
        "model": str(table["model"]),
        "k": int(k),
        "d": dimension(table, k),
        "L": None if table["L"] is None else int(table["L"]),
        "sigma2": None if table["sigma2"] is None else float(table["sigma2"]),
        "weights": str(weights),
        "zipf_exponent": float(table["zipf_exponent"]),
        "prior": tuple(sorted(table["prior"].items())),
    }


class MomentModelPoint:
    """What a moment kind's grid point (a frozen dataclass with the fields of
    :func:`model_fields`) knows of its model: its order, its class weights, and the model drawn
    from the seeded prior. A mixin without fields, so each kind keeps its own field order and
    seeds."""

    model: str
    k: int
    d: int
    L: int | None
    sigma2: float | None
    weights: str
    zipf_exponent: float
    prior: tuple[tuple[str, Any], ...]

    @property
    def order(self) -> int:
        """Order p of the model's moment tensor."""
        return model_order(self.model)

    def class_weights(self) -> np.ndarray | None:
        """The mixing weights (None for ICA, whose SOD weights are the kurtoses)."""
        return class_weights(self.model, self.k, self.weights, self.zipf_exponent)

    def model_from(self, rng: np.random.Generator) -> Any:
        """The point's model, its parameters drawn from the prior by ``rng``."""
        params: dict[str, Any] = dict(self.prior)
        if self.model == "topics":
            params["doc_length"] = int(self.L or 3)
        elif self.model == "gmm":
            params["sigma2"] = float(1.0 if self.sigma2 is None else self.sigma2)
        w = self.class_weights()
        if w is not None:
            params["weights"] = w
        return make_model(self.model, self.k, self.d, rng=rng, **params)


def norm_revision_options(revisions: Mapping[str, int]) -> dict[str, dict[str, Any]]:
    """Per norm method (:data:`NORM_METHODS`), the options that reproduce the revision a store
    pins (``revisions``: its ``[solver.revisions]``), for the methods whose pinned revision is
    not the current one: a store keeps solving ``‖E‖`` as it did when it was made, and a
    store at the current revisions gets an empty mapping."""
    out = {m: dict(revision_options(m, revisions.get(m))) for m in NORM_METHODS}
    return {m: o for m, o in out.items() if o}


def check_model_keys(
    table: Mapping[str, Any],
    ks: Sequence[int],
    weights: Sequence[str],
    prefix: str,
    source: str,
) -> None:
    """``SpecError`` naming ``<prefix>.<key>`` where the model keys of a validated table do not
    describe a model: an unknown model, ``k < 2``, ``d < k``, ``d_per_k < 1``, a topics model
    without ``L >= 3`` (or another model with one), ``sigma2`` outside a mixture, an unknown or
    non-positive prior key, an unknown weight shape, Zipf weights for ICA, a Zipf exponent
    ``<= 0``. ``ks`` and ``weights`` are the axes' values."""
    name = table["model"]
    if name not in MODELS:
        raise SpecError(source, f"{prefix}.model", f"one of {sorted(MODELS)}", name)
    if min(ks) < 2:
        raise SpecError(source, f"{prefix}.k", "k >= 2 latent classes", min(ks))
    if table["d"] is not None and table["d"] < max(ks):
        raise SpecError(
            source,
            f"{prefix}.d",
            f"d >= k (largest k is {max(ks)})",
            table["d"],
            f"drop {prefix}.d to take d = max(k, d_per_k * k) at each k",
        )
    if not table["d_per_k"] >= 1:
        raise SpecError(source, f"{prefix}.d_per_k", "a ratio d / k >= 1", table["d_per_k"])
    if name == "topics":
        if table["L"] is None or table["L"] < 3:
            raise SpecError(
                source,
                f"{prefix}.L",
                "words per document L >= 3 (topics)",
                "<missing>" if table["L"] is None else table["L"],
            )
    elif table["L"] is not None:
        raise SpecError(
            source, f"{prefix}.L", f"no L for model {name!r}", table["L"], "L is the topics'"
        )
    if table["sigma2"] is not None and (name != "gmm" or not table["sigma2"] > 0):
        raise SpecError(source, f"{prefix}.sigma2", "a variance > 0, for gmm only", table["sigma2"])
    keys = PRIOR_KEYS[name]
    for key, val in table["prior"].items():
        if key not in keys:
            raise SpecError(
                source, f"{prefix}.prior.{key}", f"one of {list(keys)}", "<unknown key>"
            )
        if name == "ica" and key == "sources":
            allowed = ("mixed", *sorted(ICA_SOURCES))
            if val not in allowed:
                raise SpecError(source, f"{prefix}.prior.{key}", f"one of {list(allowed)}", val)
        elif isinstance(val, bool) or not isinstance(val, int | float) or not val > 0:
            raise SpecError(source, f"{prefix}.prior.{key}", "a positive number", val)
    for w in weights:
        if w not in WEIGHT_SHAPES:
            raise SpecError(source, f"{prefix}.weights", f"one of {list(WEIGHT_SHAPES)}", w)
        if name == "ica" and w != "uniform":
            raise SpecError(
                source,
                f"{prefix}.weights",
                '"uniform" for ica',
                w,
                "ICA has no class weights: its SOD weights are the sources' kurtoses "
                f"({prefix}.prior.sources)",
            )
    if not table["zipf_exponent"] > 0:
        raise SpecError(
            source, f"{prefix}.zipf_exponent", "an exponent > 0", table["zipf_exponent"]
        )
