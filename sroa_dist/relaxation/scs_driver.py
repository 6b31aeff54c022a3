"""SCS settings and runs of the moment relaxation: the deterministic warm-up, then chunks of
the full solve, each handed back to the caller to extract candidates and try a certificate."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import scs

__all__ = ["DEFAULT_SCS_SETTINGS", "WARMUP_SCS_SETTINGS"]

#: SCS settings of the warm-up, by parity of ``p``. No adaptive scale and no Anderson
#: acceleration, so the cached solver object keeps no state between solves and results depend on
#: ``T`` only. ``scale`` and ``max_iters`` (iterations per warm-up chunk) were tuned on nearly SOD
#: tensors, n = 10, with unit Frobenius norm (``solve`` normalises): with these the face
#: certificate closes the gap after the warm-up for most p = 3 instances and for the dominant
#: sign of most p = 4 instances (benchmarks/bench_certified.py reports the rates).
WARMUP_SCS_SETTINGS: dict[str, dict[str, Any]] = {
    parity: {
        "scale": scale,
        "max_iters": iters,
        "adaptive_scale": False,
        "acceleration_lookback": 0,
        "eps_abs": 1e-9,
        "eps_rel": 1e-9,
        "linear_solver": "qdldl",
        "verbose": False,
    }
    for parity, scale, iters in (("odd", 1.5, 14), ("even", 0.5, 40))
}

#: SCS settings of the fallback full solve, overridden by ``**scs_settings`` of ``solve``.
#: Anderson acceleration and adaptive scale are on (SCS defaults); the solver object is built per
#: call, so no state leaks between calls.
DEFAULT_SCS_SETTINGS: dict[str, Any] = {
    "eps_abs": 1e-7,
    "eps_rel": 1e-7,
    "max_iters": 5000,
    "scale": 1.0,
    "linear_solver": "qdldl",
    "verbose": False,
}

#: Keyword options of :meth:`MomentRelaxation.solve` that a caller may pass through a table
#: (the ``relaxation`` option of the rank-one methods).
SOLVE_OPTIONS = (
    "warmup_iters",
    "warmup_chunks",
    "refine_iters",
    "fallback_chunk",
    "gap_tol",
    "fallback",
    "stop_below",
    "polish_steps",
    "flat_tol",
)

#: SCS settings accepted as ``**scs_settings``.
SCS_SETTING_NAMES = frozenset(
    {
        "normalize",
        "scale",
        "adaptive_scale",
        "rho_x",
        "max_iters",
        "eps_abs",
        "eps_rel",
        "eps_infeas",
        "alpha",
        "time_limit_secs",
        "verbose",
        "acceleration_lookback",
        "acceleration_interval",
        "write_data_filename",
        "log_csv_filename",
        "linear_solver",
    }
)


def parity(p: int) -> str:
    return "odd" if p % 2 else "even"


def full_settings(options: dict[str, Any]) -> dict[str, Any]:
    """:data:`DEFAULT_SCS_SETTINGS` updated by ``options``; unknown names are an error."""
    unknown = set(options) - SCS_SETTING_NAMES
    if unknown:
        raise ValueError(
            f"unknown option(s) {sorted(unknown)}; valid SCS settings: "
            f"{sorted(SCS_SETTING_NAMES)}; solve options: {', '.join(SOLVE_OPTIONS)}"
        )
    st = dict(DEFAULT_SCS_SETTINGS)
    st.update(options)
    return st


class ScsProblem:
    """The fixed SCS data ``(A, b, cone)`` of one relaxation and its per-thread warm-up solvers.

    One SCS workspace must not be shared between threads, so each thread builds its own on
    first use (about as expensive as one solve).
    """

    def __init__(self, A: Any, b: np.ndarray, cone: dict[str, Any], p: int) -> None:
        self.A, self.b, self.cone, self.p = A, b, cone, p
        self._local = threading.local()

    def warmup_solver(self, iters: int) -> scs.SCS:
        cache = getattr(self._local, "solvers", None)
        if cache is None:
            cache = self._local.solvers = {}
        solver = cache.get(iters)
        if solver is None:
            data = {"A": self.A, "b": self.b, "c": np.zeros(self.A.shape[1])}
            st = dict(WARMUP_SCS_SETTINGS[parity(self.p)], max_iters=iters)
            solver = scs.SCS(data, self.cone, **st)
            cache[iters] = solver
        return solver

    def runs(
        self,
        c: np.ndarray,
        settings: dict[str, Any],
        *,
        warmup_iters: int,
        warmup_chunks: int,
        fallback: bool,
        fallback_chunk: int,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield ``(run, sol)`` after each SCS chunk: ``"warmup"`` chunks first, then
        ``"full"`` chunks of at most ``fallback_chunk`` iterations (``max_iters`` in all).

        Each chunk continues from the previous one's iterate (explicit state, so the result is
        still a pure function of ``c``). The caller stops early by leaving the loop; the full
        solve stops by itself once SCS reports it solved (more chunks would not move).
        """
        settings = dict(settings)
        runs = ["warmup"] * (max(int(warmup_chunks), 1) if warmup_iters > 0 else 0)
        if fallback or not runs:
            # The full solve, in chunks so the certificate is tried along the way. Its SCS
            # object is built per call (it carries Anderson and scale state between chunks).
            budget = int(settings["max_iters"])
            chunk = max(1, min(int(fallback_chunk), budget))
            settings["max_iters"] = chunk
            runs += ["full"] * -(-budget // chunk)
        full = None
        sol = None
        for run in runs:
            if run == "warmup":
                solver = self.warmup_solver(int(warmup_iters))
                solver.update(c=c)
            else:
                if full is None:
                    full = scs.SCS({"A": self.A, "b": self.b, "c": c}, self.cone, **settings)
                solver = full
            if sol is None:
                sol = solver.solve(warm_start=False)
            else:
                sol = solver.solve(warm_start=True, x=sol["x"], y=sol["y"], s=sol["s"])
            yield run, sol
            if run == "full" and sol["info"]["status_val"] == scs.SOLVED:
                return
