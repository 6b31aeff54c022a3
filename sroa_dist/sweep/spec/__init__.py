"""What every sweep spec shares: typed fields and axes (:mod:`.fields`), the spec base class
and the ``[solver]`` / ``[output]`` sections (:mod:`.base`), reading a TOML file with its
``--set`` overrides (:mod:`.load`), and what the shared keys mean (:mod:`.meanings`). A kind's
own grammar and key meanings are in its module (:mod:`sroa_dist.sweep.kinds`), which chooses
the kind and validates (``load_spec``)."""

from .base import (
    COMMON_SCHEMA,
    OutputSection,
    SweepSpec,
    check_method_options,
    check_methods,
    options_given,
    override_for,
    override_items,
    replicate_advice,
    resumable_as,
)
from .fields import (
    Axis,
    SpecError,
    build_axes,
    check_replicates,
    check_tensor_size,
    prune_model_params,
    round_sig,
    validate_table,
)
from .load import apply_overrides, read_spec_file
from .meanings import COMMON_MEANINGS, SHARED_MEANINGS, key_meanings, schema_keys

__all__ = [
    "Axis",
    "COMMON_MEANINGS",
    "COMMON_SCHEMA",
    "SHARED_MEANINGS",
    "SpecError",
    "SweepSpec",
    "apply_overrides",
    "build_axes",
    "check_method_options",
    "check_methods",
    "check_replicates",
    "check_tensor_size",
    "key_meanings",
    "options_given",
    "override_for",
    "override_items",
    "prune_model_params",
    "read_spec_file",
    "replicate_advice",
    "resumable_as",
    "round_sig",
    "schema_keys",
    "validate_table",
    "OutputSection",
]
