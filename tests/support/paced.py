"""A rank-one method that is ``sshopm`` plus a fixed wait per call, referred to by import path
(``"tests.support.paced:sshopm"``) in the tests that must kill or race a run in mid-flight.

Those tests need a run that lasts several seconds. Making it last by solving harder problems
(thousands of starts) spent minutes of CPU per test and grew with the machine's load; a wait
costs no CPU, gives every block the same wall time, and leaves the answers equal to
``sshopm``'s bit for bit (same starts, same streams), so a paced run and a paced reference
still compare exactly.
"""

from __future__ import annotations

import time

from sroa_dist.methods import resolve_method

#: Seconds waited per call (one SROA step of one block; the smoke specs take one step per
#: instance, so this is the wall time of a block).
PACE = 0.5

_SSHOPM = resolve_method("sshopm").fn


def sshopm(Ts, rngs, deflation=None):
    """``sshopm`` with its defaults, after waiting :data:`PACE` seconds."""
    time.sleep(PACE)
    return _SSHOPM(Ts, rngs, deflation)
