"""What spec keys mean: one line per dotted key, the text the spec reference page
(docs/reference/spec.md) and ``sroa-dist validate`` show.

A kind declares the meanings of its own keys in its own module (its ``key_meanings``, built
with :func:`key_meanings`); this module holds only the meanings every kind shares: the keys of
:data:`~.base.COMMON_SCHEMA` (:data:`COMMON_MEANINGS`) and a few keys several kinds read alike
(:data:`SHARED_MEANINGS`, as :data:`~..cube.SHARED_AXES` holds shared dims). A kind that reads a
shared key differently states its own meaning, which wins. Pure data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sroa_dist.errors import InputError

__all__ = ["COMMON_MEANINGS", "SHARED_MEANINGS", "key_meanings", "schema_keys"]

#: The meaning of every key of :data:`~.base.COMMON_SCHEMA`.
COMMON_MEANINGS: Mapping[str, str] = {
    "name": "the sweep's name; the default store is `results/<name>.zarr`",
    "description": "free text, copied to the cube's attrs",
    "seed": "master seed of every instance's random streams",
    "replicates": "instances per grid point",
    "solver.method": "rank-one method of every SROA step (`sroa_dist.METHODS`)",
    "solver.steps": "SROA iterations; default: the rank",
    "solver.options": "keyword options for every method; a sub-table per method applies to "
    "that method only (`[solver.options.certified]`, its `relaxation` table included)",
    "solver.norm_method": "method bounding ‖E‖; default: the solver's own if certified or sos, "
    "else `certified` where the relaxation is tractable and `sshopm` beyond",
    "solver.norm_options": "options of the ‖E‖ computation; default: `solver.options` when the "
    "norm method is one of the solver's",
    "solver.revisions": "method -> algorithm revision to compute with; a store keeps the "
    "revisions it was made with",
    "output.vectors": "store the estimated vectors `v_hat`",
    "output.certificates": "store each step's SOS certificate (checked by `sroa-dist verify`)",
}

#: Keys several kinds read alike (a planted tensor and its noise).
SHARED_MEANINGS: Mapping[str, str] = {
    "tensor.n": "tensor dimension n",
    "tensor.p": "tensor order p (>= 3)",
    "tensor.basis": "`identity` or `random` (Haar orthonormal, drawn per instance)",
    "tensor.lambdas": "the planted weights",
    "noise.params": "family parameters: a sub-table per model on the noise axis",
}


def schema_keys(schema: Mapping[str, Any], prefix: str = "") -> list[tuple[str, tuple]]:
    """``(dotted key, (vtype, default, required))`` of every key of a schema, in its order."""
    out = []
    for key, entry in schema.items():
        if isinstance(entry, Mapping):
            out += schema_keys(entry, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", entry))
    return out


def key_meanings(schema: Mapping[str, Any], own: Mapping[str, str]) -> dict[str, str]:
    """The meaning of every key of ``schema``, in its order: the kind's ``own`` text, else the
    shared one (:data:`SHARED_MEANINGS`, :data:`COMMON_MEANINGS`); a key none describes is left
    out (the reference test names it). ``InputError`` for an ``own`` key the schema lacks: a
    meaning of a key no spec can have is a stale one."""
    keys = [key for key, _ in schema_keys(schema)]
    stale = sorted(set(own) - set(keys))
    if stale:
        raise InputError(
            f"key meanings: expected keys of the kind's schema; received {stale}",
            "drop those meanings, or add the keys to the schema",
        )
    shared = {**COMMON_MEANINGS, **SHARED_MEANINGS}
    return {k: own.get(k, shared.get(k)) for k in keys if k in own or k in shared}
