"""Generated blocks inside hand-written pages.

A page of ``docs/results`` keeps its prose by hand and marks each generated part::

    <!-- results:NAME -->
    ...generated text...
    <!-- /results:NAME -->

:func:`splice` replaces the text between the markers of every named block with what the
generator made of it and leaves everything outside them untouched; :func:`blocks` reads the
blocks a page holds. A page whose markers are missing, repeated or unclosed is refused: a
generator that cannot find its place must not guess one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ...errors import InputError

__all__ = ["blocks", "close", "open_", "splice"]

_MARK = re.compile(r"^<!-- (/?)results:([a-z0-9][a-z0-9-]*) -->$", re.MULTILINE)


def open_(name: str) -> str:
    """The line that opens block ``name``."""
    return f"<!-- results:{name} -->"


def close(name: str) -> str:
    """The line that closes block ``name``."""
    return f"<!-- /results:{name} -->"


def _spans(text: str, page: str) -> dict[str, tuple[int, int]]:
    """``name -> (start, end)`` of each block's inner text (after its opening line's newline,
    up to its closing line)."""
    spans: dict[str, tuple[int, int]] = {}
    current: tuple[str, int] | None = None
    for m in _MARK.finditer(text):
        closing, name = m.group(1) == "/", m.group(2)
        if not closing:
            if current is not None:
                raise InputError(
                    f"{page}: block {name!r} opens inside block {current[0]!r}",
                    f"close it first with {close(current[0])}",
                )
            if name in spans:
                raise InputError(
                    f"{page}: block {name!r} appears twice", "keep one pair of its markers"
                )
            current = (name, m.end() + 1)
        else:
            if current is None or current[0] != name:
                raise InputError(
                    f"{page}: {close(name)} closes no open block",
                    f"open it first with {open_(name)}",
                )
            spans[name] = (current[1], m.start())
            current = None
    if current is not None:
        raise InputError(
            f"{page}: block {current[0]!r} is never closed", f"end it with {close(current[0])}"
        )
    return spans


def blocks(text: str, page: str = "<page>") -> dict[str, str]:
    """The inner text of every block of a page, by name."""
    return {name: text[a:b] for name, (a, b) in _spans(text, page).items()}


def splice(text: str, new: Mapping[str, str], page: str = "<page>") -> str:
    """``text`` with the inner text of each block in ``new`` replaced (each ends in a newline).
    Every block in ``new`` must be marked in ``text``; blocks not in ``new`` stay as they are."""
    spans = _spans(text, page)
    missing = sorted(set(new) - set(spans))
    if missing:
        raise InputError(
            f"{page}: no marked block for {', '.join(missing)}",
            f"mark where it goes with {open_(missing[0])} ... {close(missing[0])}",
        )
    out, at = [], 0
    for name, (a, b) in sorted(spans.items(), key=lambda kv: kv[1]):
        if name in new:
            body = new[name] if new[name].endswith("\n") else new[name] + "\n"
            out += [text[at:a], body]
            at = b
    out.append(text[at:])
    return "".join(out)
