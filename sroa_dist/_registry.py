"""The one rule for the package's registries (noise models, perturbation families, rank-one
methods): a name is a non-empty string, an entry is callable, and an existing name is replaced
only with ``overwrite=True``. Each registry is exposed as a read-only ``MappingProxyType``.
Entries that are not registered can be named by import path (:func:`import_entry`)."""

from __future__ import annotations

import contextlib
import contextvars
import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .errors import InputError


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
        raise InputError(
            f"name: expected a non-empty string, received {name!r}",
            "give the name it is registered and looked up under, e.g. 'my-method'",
        )
    if not callable(fn):
        raise InputError(
            f"{kind} {name!r}: expected a callable {expected}, received {fn!r}",
            "pass the function itself (not its result or its name)",
        )
    if name in registry and not overwrite:
        raise InputError(
            f"{kind} {name!r}: expected a new name; received one already registered",
            "pass overwrite=True to replace it, or choose another name",
        )


def import_entry(
    path: str, key: str, kind: str, expected: str, *, accept: tuple[type, ...] = ()
) -> Any:
    """The object an import path ``"package.module:attribute"`` names, imported here (so on a
    sweep worker, where the block runs).

    ``key`` names the argument or spec key in messages (e.g. ``"noise.model"``), ``kind`` the
    entry (e.g. ``"family"``) and ``expected`` what it must be; objects of the ``accept`` types
    are returned as they are, anything else must be callable. Raises ``ValueError``.
    """
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise InputError(
            f"{key}: expected an import path 'package.module:attribute', received {path!r}",
            "e.g. 'mypkg.families:my_family' (module path, a colon, then the name)",
        )
    if _NAMES_ONLY.get():
        return _not_imported(path)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(
            f"{key}: cannot import module {module_name!r} of {kind} {path!r} ({exc})",
            "the module must be importable on every worker (install it or add its directory "
            "to PYTHONPATH)",
        ) from None
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise InputError(
            f"{key}: module {module_name!r} has no attribute {attr!r} ({kind} {path!r})",
            "check the attribute's spelling after the colon",
        ) from None
    if not isinstance(obj, accept) and not callable(obj):
        raise InputError(
            f"{key}: {path!r} is not callable; expected {expected}, received {type(obj).__name__}",
            "the path must name a function or a callable object",
        )
    return obj


_NAMES_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("names_only", default=False)


@contextlib.contextmanager
def names_only() -> Iterator[None]:
    """Within it, import paths are taken as names and not imported: reading a stored spec,
    which was validated when its store was made, needs none of the user's code (``status``
    opens a store made with a user family where that module is not installed)."""
    token = _NAMES_ONLY.set(True)
    try:
        yield
    finally:
        _NAMES_ONLY.reset(token)


def is_names_only() -> bool:
    """Whether import paths are being read as names only (inside :func:`names_only`)."""
    return _NAMES_ONLY.get()


def _not_imported(path: str) -> Callable[..., Any]:
    def entry(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"{path!r} was read as a name only (a stored spec) and cannot run here: install "
            "its module to compute with it"
        )

    entry.__name__ = path
    return entry
