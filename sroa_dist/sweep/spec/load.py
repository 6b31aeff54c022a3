"""Reading a spec file and applying ``--set`` overrides: the raw, TOML-like table a sweep kind
validates (:func:`sroa_dist.sweep.kinds.load_spec` chooses the kind and validates it).

Validation is hand-written rather than delegated to pydantic so that every error names the
file, the dotted key, what was expected, what was received and a hint, without the noise of
union-branch error lists. The keys are a contract (``docs/reference/spec.md``).
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .fields import SpecError

__all__ = ["apply_overrides", "parse_override", "read_spec_file"]


def read_spec_file(path: str | Path) -> dict[str, Any]:
    """The raw table of a TOML spec file; ``SpecError`` naming the file for a missing file,
    a TOML syntax error or a file without keys."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
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
    return raw


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
