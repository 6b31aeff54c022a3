"""Sweep kinds: the registry (:mod:`.registry`) and one module or package per kind
(:mod:`.tensor`, :mod:`.model`, :mod:`.threshold`)."""

from .registry import (
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
    parse_spec,
    recorded_kind,
    register_kind,
    spec_from_dict,
    spec_of_task,
    variable_order,
)

__all__ = [
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
    "parse_spec",
    "recorded_kind",
    "register_kind",
    "spec_from_dict",
    "spec_of_task",
    "variable_order",
]
