"""Sweep specifications: TOML files validated on load into a frozen, pure-data spec.

A spec says *what* to compute; the grid turns it into axes and blocks, the execution layer
says *where and how*. This module reads TOML, applies ``--set`` overrides and hands the
result to its kind (:mod:`.kinds`: a ``[model]`` table makes a model sweep, anything else a
tensor sweep), whose rules validate it. Validation is hand-written rather than delegated to
pydantic so that every error names the file, the dotted key, what was expected, what was
received and a hint, without the noise of union-branch error lists.

The keys are a contract (``docs/sweeps.md``); each kind's grammar is in its module
(:mod:`.tensor_spec`, :mod:`.model_sweep`).
"""

from __future__ import annotations

import copy
import dataclasses
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .common import (
    RESULTS_DIR,
    OutputSection,
    SolverSection,
    SweepSpec,
    check_method,
    check_method_options,
    check_methods,
    default_store,
    override_for,
    override_items,
    solver_options,
)
from .fields import (
    MAX_AXIS_LEN,
    Axis,
    SpecError,
    build_axes,
    check_replicates,
    expand_range,
    range_length,
    round_sig,
)
from .kinds import parse_spec
from .schema import AXIS_ORDER
from .tensor_spec import AXIS_KEYS, NoiseSection, TensorSection, TensorSweepSpec

__all__ = [
    "AXIS_KEYS",
    "AXIS_ORDER",
    "MAX_AXIS_LEN",
    "RESULTS_DIR",
    "Axis",
    "NoiseSection",
    "OutputSection",
    "SolverSection",
    "SpecError",
    "SweepSpec",
    "TensorSection",
    "TensorSweepSpec",
    "apply_overrides",
    "build_axes",
    "check_method",
    "check_method_options",
    "check_methods",
    "check_replicates",
    "default_store",
    "expand_range",
    "load_spec",
    "parse_override",
    "range_length",
    "round_sig",
    "solver_options",
    "spec_from_dict",
]


def load_spec(path: str | Path, overrides: Sequence[str] | Mapping[str, Any] = ()) -> SweepSpec:
    """Read, override and validate a TOML sweep spec.

    Parameters
    ----------
    path
        The TOML file.
    overrides
        ``KEY=VALUE`` strings as given to ``sroa-dist run --set`` (VALUE is a TOML value; a bare
        word is taken as a string), or a mapping of dotted keys to Python values.

    Raises
    ------
    SpecError
        Naming the file (or the ``--set`` option), the key and the reason.
    """
    path = Path(path)
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(
            source,
            "",
            "an existing TOML spec file",
            "<a path that does not exist>",
            "check the path; the shipped specs are in sweeps/ (e.g. sweeps/figure2.toml)",
        ) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(
            source,
            "",
            "valid TOML",
            f"<a parse error: {exc}>",
            "fix the TOML syntax at that line (strings in quotes, tables as [name])",
        ) from None
    if not raw:
        raise SpecError(
            source,
            "",
            "a sweep spec (at least name and a [tensor] table)",
            "<an empty file>" if not text.strip() else "<a file with no keys, only comments>",
            "start from a shipped spec, e.g. copy sweeps/smoke/figure2.toml",
        )
    raw = apply_overrides(raw, overrides, source)
    try:
        spec = spec_from_dict(raw, source=source)
    except SpecError as exc:
        setting = override_for(exc.key, overrides)
        if setting is None:
            raise
        # The bad value came from the command line: say so, not the file.
        raise SpecError(
            f"--set {setting}", exc.key, exc.expected, exc.received, exc.given_hint
        ) from None
    return dataclasses.replace(spec, overrides=override_items(overrides))


def parse_override(item: str) -> tuple[str, Any]:
    """Parse one ``KEY=VALUE`` override; VALUE is TOML (a bare word becomes a string)."""
    if "=" not in item:
        raise SpecError(
            "--set", item, "KEY=VALUE", item, "e.g. --set replicates=20 or --set noise.sigma=0.01"
        )
    key, value = item.split("=", 1)
    key, value = key.strip(), value.strip()
    try:
        parsed = tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value  # bare word such as gaussian or certified
    return key, parsed


def apply_overrides(
    raw: Mapping[str, Any], overrides: Sequence[str] | Mapping[str, Any], source: str = "<dict>"
) -> dict[str, Any]:
    """Return a copy of ``raw`` with dotted-key overrides applied (unknown keys are kept and
    reported by validation, naming the ``--set`` option)."""
    out = copy.deepcopy(dict(raw))
    items = (
        list(overrides.items())
        if isinstance(overrides, Mapping)
        else [parse_override(o) for o in overrides]
    )
    for key, value in items:
        key = key.replace("__", ".")
        parts = key.split(".")
        node = out
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise SpecError(
                    f"{source} (--set)", key, "a key inside a table", f"<{part} is not a table>"
                )
            node = nxt
        node[parts[-1]] = value
    return out


def spec_from_dict(raw: Mapping[str, Any], source: str = "<dict>") -> SweepSpec:
    """Validate a spec given as a (TOML-like) dict with its kind's rules and resolve defaults."""
    return parse_spec(raw, source)
