"""Sweep kinds: the registry (:mod:`.registry`) and one module or package per kind
(:mod:`.tensor`, :mod:`.model`, :mod:`.threshold`, ...); a kind outside the package is named
by a spec's ``kind = "package.module:NAME"``."""

from .registry import (
    BUILTIN,
    KIND_KEY,
    KINDS,
    SweepKind,
    advice,
    cube_dims,
    default_block_size,
    estimate,
    kind_for_raw,
    kind_of,
    load_spec,
    make_layout,
    parse_as,
    parse_spec,
    recorded_kind,
    register_kind,
    resolve_kind,
    spec_from_dict,
    spec_of_task,
    variable_order,
)

__all__ = [
    "BUILTIN",
    "KIND_KEY",
    "KINDS",
    "SweepKind",
    "advice",
    "cube_dims",
    "default_block_size",
    "estimate",
    "kind_for_raw",
    "kind_of",
    "load_spec",
    "make_layout",
    "parse_as",
    "parse_spec",
    "recorded_kind",
    "register_kind",
    "resolve_kind",
    "spec_from_dict",
    "spec_of_task",
    "variable_order",
]
