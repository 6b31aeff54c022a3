"""User-defined rank-one methods for the tests, referred to by import path
(``"tests.support.user_method:first_axis"``) as a spec would; also malformed ones for the error
tests."""

from __future__ import annotations

import numpy as np

from sroa_dist.methods import MethodOutput, resolve_method
from sroa_dist.methods.ascent import power_iterations, random_starts


def first_axis(Ts, rngs, *, scale: float = 1.0):
    """A trivial method: x = e_1 for every tensor (its option ``scale`` is ignored)."""
    B, n = Ts.shape[0], Ts.shape[1]
    x = np.zeros((B, n))
    x[:, 0] = 1.0
    none = np.zeros(B, dtype=np.int64)
    return MethodOutput(x=x, n_starts=none, n_iter=none, notes="user method")


def routed(Ts, rngs, *, relaxation=None):
    """:func:`first_axis` that appends the name of the Dask worker running it to the file
    ``$SROA_TEST_ROUTING_LOG``: a sweep routes it by its ``relaxation.device`` option like a
    certified step (the test checks where it ran, no GPU needed)."""
    import os

    from distributed import get_worker

    with open(os.environ["SROA_TEST_ROUTING_LOG"], "a", encoding="utf-8") as f:
        f.write(f"{get_worker().name} {(relaxation or {}).get('device', 'cpu')}\n")
    return first_axis(Ts, rngs)


def local_power(Ts, rngs, deflation=None, *, n_starts: int = 8):
    """Unshifted power iterations from ``n_starts`` random starts, best start kept; takes a
    deflation, so SROA may deflate implicitly."""
    B, n = Ts.shape[0], Ts.shape[1]
    X = power_iterations(Ts, random_starts(rngs, n_starts, n), 50, deflation)
    G = power_iterations(Ts, X, 1, deflation)
    F = np.sum(G * X, axis=-1)  # a monotone proxy of T x^p at a fixed point
    x = X[np.arange(B), np.argmax(F, axis=1)]
    return MethodOutput(x=x, n_starts=np.full(B, n_starts), n_iter=np.full(B, 51))


#: A full record given by import path: the certified method under another name.
CERTIFIED_RECORD = resolve_method("certified")

NOT_CALLABLE = 3
