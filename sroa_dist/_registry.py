"""The one rule for the package's registries (noise models, perturbation families, rank-one
methods): a name is a non-empty string, an entry is callable, and an existing name is replaced
only with ``overwrite=True``. Each registry is exposed as a read-only ``MappingProxyType``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def check_entry(
    registry: Mapping[str, Any],
    kind: str,
    name: Any,
    fn: Any,
    *,
    overwrite: bool,
    expected: str,
) -> None:
    """Raise a ``ValueError`` unless ``fn`` may be registered under ``name`` in ``registry``.

    ``kind`` names the registry in messages (e.g. ``"noise model"``) and ``expected`` describes
    the callable it takes (e.g. ``"(rng, size, sigma) -> array"``).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a non-empty string, received {name!r}")
    if not callable(fn):
        raise ValueError(f"{kind} {name!r}: expected a callable {expected}, received {fn!r}")
    if name in registry and not overwrite:
        raise ValueError(
            f"{kind} {name!r} is already registered; hint: pass overwrite=True to replace it"
        )
