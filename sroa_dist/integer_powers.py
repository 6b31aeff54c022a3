"""Integer powers of arrays, ``c**k``, under a rule that a method revision pins.

The contractions of a tensor of order ``p`` raise coordinates ``c = a·x`` to the powers
``p - 2``, ``p - 1`` and ``p``. NumPy computes ``c**2`` as a product but any larger whole power
through the C library's ``pow``, about 45 times slower per entry than two products on this
machine (a ``(20, 512)`` block: 830 µs against 18 µs); at ``p = 4`` it was about a third of a
global SROA's time. Products give other bits (up to about two units in the last place instead
of the library's correctly rounded result), so the rule is a method option that a revision pins
(``sshopm``'s ``integer_powers``, ``"products"`` from revision 10): results stored under an
earlier revision keep their bits.

:func:`integer_power_rule` sets the rule for everything computed inside it, in this thread
(a context variable: each Dask worker thread and each SROA keeps its own);
:func:`ipow` is ``c**k`` under the rule in force. Outside any rule it is ``c**k``.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

from .errors import InputError

__all__ = ["INTEGER_POWER_RULES", "integer_power_rule", "ipow"]

#: ``"pow"``: NumPy's ``c**k`` (the C library's ``pow`` for ``k > 2``), the bits of every
#: result computed before the rule existed; ``"products"``: ``k - 1`` products, left to right.
INTEGER_POWER_RULES = ("pow", "products")

_RULE: contextvars.ContextVar[str] = contextvars.ContextVar("sroa_integer_powers", default="pow")


@contextlib.contextmanager
def integer_power_rule(rule: str) -> Iterator[None]:
    """Compute :func:`ipow` under ``rule`` (one of :data:`INTEGER_POWER_RULES`) inside the
    block, in this thread; the previous rule comes back after it, also on an exception."""
    if rule not in INTEGER_POWER_RULES:
        raise InputError(
            f"integer_powers: expected one of {list(INTEGER_POWER_RULES)}, received {rule!r}",
            "'products' (sshopm revision 10 on) or 'pow' (NumPy's c**k)",
        )
    token = _RULE.set(rule)
    try:
        yield
    finally:
        _RULE.reset(token)


def ipow(c: Any, k: int) -> Any:
    """``c**k`` for a whole ``k >= 0`` under the rule in force. Powers 0-2 are the same bits
    under both rules (NumPy computes ``c**2`` as ``c*c``)."""
    if k <= 2 or _RULE.get() == "pow":
        return c**k
    out = c * c
    for _ in range(k - 2):
        out = out * c
    return out
