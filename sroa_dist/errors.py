"""The error of bad input: one line that says what was expected and received, and a hint.

Every check of what a user gives -- a public function's arguments, a spec, a store path, a
command-line option -- raises :class:`InputError` or a subclass (``SpecError``,
``StoreIncompatibleError``, ...). ``str(exc)`` is one line naming the argument, file or key,
what was expected and what was received; ``exc.hint`` is one line saying what to do. Python
shows the hint under the message (an exception note); the ``sroa-dist`` command prints the
two as ``error: ...`` and ``hint: ...`` and exits with status 2, and IPython and Jupyter show
the same two lines in place of a traceback (``SROA_DEBUG=1``: the traceback). ``InputError`` is a
``ValueError``, so ``except ValueError`` keeps working. ``tests/test_error_grammar.py`` holds
every raise site of the package to this.

Warnings of the package are :class:`SroaWarning`: they
print as one line, ``SroaWarning: ...``, never with a file name and a source line
(:func:`install_warning_format`, called when ``sroa_dist`` is imported, in workers too).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable

__all__ = [
    "InputError",
    "InputTypeError",
    "SroaWarning",
    "install_warning_format",
    "one_line",
    "with_hint",
]


def one_line(text: str) -> str:
    """``text`` with its line breaks and runs of spaces folded into single spaces."""
    return " ".join(str(text).split())


def with_hint(exc: BaseException) -> str:
    """``"message; hint"`` of an error, in one line: for an error that wraps another and passes
    its whole advice on (a spec key whose value the core refused)."""
    hint = getattr(exc, "hint", "")
    return one_line(f"{exc}; {hint}" if hint else str(exc))


class InputError(ValueError):
    """Bad input: ``str(exc)`` says what was expected and received, ``hint`` what to do.

    Parameters
    ----------
    message
        One line: the argument, file or key, what was expected, what was received.
    hint
        One line: what to do about it (a valid value, an option, a command).
    """

    def __init__(self, message: str, hint: str):
        message, hint = one_line(message), one_line(hint)
        super().__init__(message)
        self.hint = hint
        if hint:
            self.add_note(f"hint: {hint}")

    @property
    def _render_traceback_(self) -> Callable[[], list[str]]:
        """IPython's hook for an exception's own traceback text: a notebook that hands the
        package bad input (a missing or damaged store, say) shows ``error: ...`` and ``hint:
        ...`` as the command line does, not a traceback through the package's internals.
        With ``SROA_DEBUG`` set the hook is absent, so IPython shows the traceback."""
        if os.environ.get("SROA_DEBUG"):
            raise AttributeError("_render_traceback_")  # hasattr() is False: the traceback
        lines = [f"error: {self}"] + ([f"hint: {self.hint}"] if self.hint else [])
        return lambda: lines

    def __reduce__(self):  # pickled by Dask between processes: keep the hint
        return (_rebuild, (type(self), str(self), self.hint, dict(self.__dict__)))


class InputTypeError(InputError, TypeError):
    """Bad input of the wrong kind (an argument passed positionally, an object of another type):
    a ``TypeError`` too, as Python raises for such calls."""


def _blank(cls: type) -> InputError:
    """An uninitialised ``cls``; an error that is also an ``OSError`` needs OSError's
    ``__new__`` (the first builtin one that accepts the class)."""
    for base in cls.__mro__:
        if base.__module__ == "builtins" and "__new__" in base.__dict__:
            try:
                return base.__new__(cls)
            except TypeError:
                continue
    raise RuntimeError(f"cannot rebuild {cls.__name__}")  # pragma: no cover


def _rebuild(cls: type, message: str, hint: str, state: dict) -> InputError:
    exc = _blank(cls)
    InputError.__init__(exc, message, hint)
    exc.__dict__.update({k: v for k, v in state.items() if k != "__notes__"})
    return exc


class SroaWarning(UserWarning):
    """A warning of this package: one line that says what happened and what it means."""


_ORIGINAL_FORMAT = warnings.formatwarning


def _format_warning(message, category, filename, lineno, line=None) -> str:
    if isinstance(category, type) and issubclass(category, SroaWarning):
        return f"{category.__name__}: {one_line(str(message))}\n"
    return _ORIGINAL_FORMAT(message, category, filename, lineno, line)


def install_warning_format() -> None:
    """Print :class:`SroaWarning` as one line (other warnings keep Python's format)."""
    global _ORIGINAL_FORMAT
    if warnings.formatwarning is not _format_warning:
        _ORIGINAL_FORMAT = warnings.formatwarning
        warnings.formatwarning = _format_warning
