"""BLAS threads: set explicitly, one per solver thread, in workers and in a plain process.

The solves are many small matrix products (n = 10: 10 × 10 contractions, a 65 × 65
eigendecomposition). A second BLAS thread finds no work to share and spins: one process
without a limit burns about twice the CPU for the same wall time (docs/benchmarks.md,
"BLAS threads"). So every numerical front door (:func:`sroa_dist.rank_one`, ``sroa``,
``operator_norm``, ``find_threshold``, ``worst_case``, ``make_instance``,
``Certificate.verify``) runs under :func:`blas_threads`, sweep workers limit their whole
process at start-up (:mod:`sroa_dist.sweep.run.plugin`), and processes started for a sweep get
:func:`blas_thread_env` before numpy loads. ``$SROA_BLAS_THREADS`` changes the count (for
very large n, where one contraction is a big matrix product); the default is one.

Limits act on the BLAS libraries loaded in this process through ``threadpoolctl`` (also the
ones numpy and scipy loaded before), so they hold however the process was started.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = [
    "BLAS_THREADS_ENV",
    "BLAS_THREAD_VARIABLES",
    "blas_thread_env",
    "blas_threads",
    "configured_blas_threads",
    "current_blas_threads",
    "limit_blas_threads",
    "single_blas",
]

#: Environment variables that set BLAS and OpenMP threads when a process loads its BLAS.
BLAS_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: Threads per BLAS call in this package's solves (default 1).
BLAS_THREADS_ENV = "SROA_BLAS_THREADS"

_F = TypeVar("_F", bound=Callable[..., Any])
_lock = threading.Lock()
_controller: Any = None


def configured_blas_threads() -> int:
    """Threads per BLAS call: ``$SROA_BLAS_THREADS`` (an integer >= 1), else 1."""
    text = os.environ.get(BLAS_THREADS_ENV, "").strip()
    if not text:
        return 1
    if not text.isdigit() or int(text) < 1:
        from .errors import InputError

        raise InputError(
            f"${BLAS_THREADS_ENV}: expected an integer >= 1; received {text!r}",
            f"unset {BLAS_THREADS_ENV} (one BLAS thread per solve) or set it to e.g. 1",
        )
    return int(text)


def blas_thread_env(threads: int | None = None) -> dict[str, str]:
    """The environment that gives a process about to start ``threads`` BLAS threads (default
    :func:`configured_blas_threads`): for Dask nannies (``pre-spawn-environ``), containers and
    job scripts, where the variables must be set before numpy loads."""
    n = configured_blas_threads() if threads is None else int(threads)
    return {var: str(n) for var in BLAS_THREAD_VARIABLES}


def _get_controller() -> Any:
    """One ``ThreadpoolController`` per process, made after numpy and scipy loaded their BLAS
    (making one costs milliseconds; using it microseconds)."""
    global _controller
    if _controller is None:
        with _lock:
            if _controller is None:
                import numpy  # noqa: F401
                import scipy.linalg  # noqa: F401  (scipy ships its own OpenBLAS)
                from threadpoolctl import ThreadpoolController

                _controller = ThreadpoolController()
    return _controller


def limit_blas_threads(threads: int | None = None) -> dict[str, int]:
    """Limit every BLAS library of this process to ``threads`` threads from now on (default
    :func:`configured_blas_threads`); returns each library's file and its setting."""
    n = configured_blas_threads() if threads is None else int(threads)
    ctl = _get_controller()
    ctl.limit(limits=n, user_api="blas")
    return current_blas_threads()


def current_blas_threads() -> dict[str, int]:
    """Each loaded BLAS library's file and its current thread count."""
    return {
        lib.filepath: int(lib.num_threads)
        for lib in _get_controller().lib_controllers
        if lib.user_api == "blas"
    }


@contextlib.contextmanager
def blas_threads(threads: int | None = None) -> Iterator[None]:
    """BLAS limited to ``threads`` threads (default :func:`configured_blas_threads`) inside the
    block; the previous settings come back after it."""
    n = configured_blas_threads() if threads is None else int(threads)
    with _get_controller().limit(limits=n, user_api="blas"):
        yield


def _under_blas(fn: _F, threads: int | None) -> _F:
    """``fn`` run under :func:`blas_threads` with ``threads``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with blas_threads(threads):
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def single_blas(fn: _F) -> _F:
    """Run the decorated numerical front door under :func:`blas_threads`."""
    return _under_blas(fn, None)


def one_blas_thread(fn: _F) -> _F:
    """Run ``fn`` with one BLAS thread, whatever ``$SROA_BLAS_THREADS`` asks for.

    For computations whose bits must not depend on the thread count: OpenBLAS splits a
    product's work by its thread count and rounds differently. Measured (issue 32): the
    ``(90 x 78) @ (78 x 90)`` product of the relaxation's face system at n = 12, p = 3 differs
    in its last bits between one and two threads, and so did the certified ``upper_bound``
    (1.1766578530914358 against ...434). More threads per process would speed up only the
    large relaxations; bits come first, and more worker processes give the speed instead.
    """
    return _under_blas(fn, 1)
