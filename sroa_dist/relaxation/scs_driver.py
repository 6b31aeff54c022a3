"""SCS behind the driver seam (:class:`~.driver.SdpDriver`): its settings with their value rules,
its form of the problem, the deterministic warm-up, then chunks of the full solve, each handed
back as a dual iterate. Every SCS name (settings, data dict, result dict) lives here only."""

from __future__ import annotations

import signal
import threading
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import scs

from ..errors import InputError
from .driver import (
    FLAG,
    NONNEG,
    POSITIVE,
    Rule,
    Schedule,
    SdpIterate,
    SdpProblem,
    int_at_least,
    is_real,
)

__all__ = [
    "DEFAULT_SCS_SETTINGS",
    "SCS",
    "SCS_SETTING_NAMES",
    "SCS_SETTING_RULES",
    "WARMUP_SCS_SETTINGS",
    "ScsDriver",
    "scs_data",
]

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

#: SCS settings of the fallback full solve, overridden by ``**settings`` of ``solve``.
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

#: The SCS settings a caller may pass, with their value rules (``None``: checked by name only).
SCS_SETTING_RULES: dict[str, Rule | None] = {
    "normalize": FLAG,
    "scale": POSITIVE,
    "adaptive_scale": FLAG,
    "rho_x": POSITIVE,
    "max_iters": int_at_least(1),
    "eps_abs": NONNEG,
    "eps_rel": NONNEG,
    "eps_infeas": NONNEG,
    "alpha": (lambda v: is_real(v) and 0 < v < 2, "a number in (0, 2)"),
    "time_limit_secs": NONNEG,
    "verbose": FLAG,
    "acceleration_lookback": None,
    "acceleration_interval": int_at_least(1),
    "write_data_filename": None,
    "log_csv_filename": None,
    "linear_solver": None,
}

#: Names of :data:`SCS_SETTING_RULES`.
SCS_SETTING_NAMES = frozenset(SCS_SETTING_RULES)


def parity(p: int) -> str:
    return "odd" if p % 2 else "even"


def scs_data(problem: SdpProblem) -> tuple[sp.csc_matrix, np.ndarray, dict[str, Any]]:
    """``(A, b, cone)`` of ``problem`` in SCS form: ``A y + s = b``, ``s`` in (zero cone) x
    (PSD cone of ``M(y)`` in SCS's ``svec``: lower triangle, column-major, off-diagonals
    times sqrt 2). Dual vector ``z = (z_zero, svec(Z))``."""
    return _workspace(problem).data


def _svec_order(problem: SdpProblem) -> np.ndarray | None:
    """Positions of the problem's entries in SCS's ``svec`` order, or ``None`` when they are
    in that order already (the relaxation's builder lists them so)."""
    m, I, J = problem.m, np.asarray(problem.rows), np.asarray(problem.cols)  # noqa: E741
    if len(I) != m * (m + 1) // 2 or np.any(I < J):
        raise InputError(
            f"expected the {m * (m + 1) // 2} lower-triangle entries of the {m} x {m} moment "
            f"matrix (rows >= cols), received {len(I)} entries",
            "pass each lower-triangle entry (rows >= cols) exactly once",
        )
    pos = J * m - J * (J - 1) // 2 + (I - J)  # column-major lower triangle
    if np.array_equal(pos, np.arange(len(pos))):
        return None
    order = np.argsort(pos)
    if not np.array_equal(pos[order], np.arange(len(pos))):
        raise InputError(
            "expected each lower-triangle entry of the moment matrix exactly once",
            "pass each lower-triangle entry (rows >= cols) exactly once",
        )
    return order


@dataclass
class _Workspace:
    """SCS data of one problem and its per-thread warm-up solvers (one SCS workspace must not
    be shared between threads, so each thread builds its own on first use, about as expensive
    as one solve)."""

    data: tuple[sp.csc_matrix, np.ndarray, dict[str, Any]]
    svec_scale: np.ndarray
    order: np.ndarray | None
    local: threading.local


_WORKSPACES: weakref.WeakKeyDictionary[SdpProblem, _Workspace] = weakref.WeakKeyDictionary()
_WORKSPACES_LOCK = threading.Lock()


def _workspace(problem: SdpProblem) -> _Workspace:
    with _WORKSPACES_LOCK:
        ws = _WORKSPACES.get(problem)
        if ws is None:
            order = _svec_order(problem)
            entries = problem.entries if order is None else problem.entries[order]
            I = problem.rows if order is None else problem.rows[order]  # noqa: E741
            J = problem.cols if order is None else problem.cols[order]
            scale = np.sqrt(np.where(I == J, 1.0, 2.0))
            A = sp.vstack([problem.A0, -sp.diags(scale) @ entries]).tocsc()
            A.sort_indices()
            b = np.concatenate([problem.b0, np.zeros(entries.shape[0])])
            cone = {"z": problem.n_zero, "s": [problem.m]}
            ws = _WORKSPACES[problem] = _Workspace((A, b, cone), scale, order, threading.local())
        return ws


class ScsDriver:
    """SCS as an :class:`~.driver.SdpDriver`: a short deterministic warm-up (cached solver,
    per thread), then the full solve (Anderson acceleration, adaptive scale) in chunks, each
    continuing from the previous iterate."""

    name = "SCS"
    setting_rules: Mapping[str, Rule | None] = SCS_SETTING_RULES

    def configure(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """:data:`DEFAULT_SCS_SETTINGS` updated by ``settings``; unknown names are an error."""
        unknown = set(settings) - SCS_SETTING_NAMES
        if unknown:
            raise InputError(
                f"unknown option(s) {sorted(unknown)}; valid SCS settings: "
                f"{sorted(SCS_SETTING_NAMES)}",
                "pass only the listed SCS settings",
            )
        st = dict(DEFAULT_SCS_SETTINGS)
        st.update(settings)
        return st

    def warmup_iters(self, p: int) -> int:
        """Default iterations per warm-up chunk (:data:`WARMUP_SCS_SETTINGS`)."""
        return int(WARMUP_SCS_SETTINGS[parity(p)]["max_iters"])

    def runs(
        self,
        problem: SdpProblem,
        c: np.ndarray,
        config: dict[str, Any],
        schedule: Schedule,
    ) -> Iterator[SdpIterate]:
        """An iterate after each SCS chunk: warm-up chunks first, then chunks of the full
        solve of at most ``fallback_chunk`` iterations (``max_iters`` in all).

        Each chunk continues from the previous one's iterate (explicit state, so the result is
        still a pure function of ``c``). The caller stops early by leaving the loop; the full
        solve stops by itself once SCS reports it solved (more chunks would not move).
        """
        ws = _workspace(problem)
        A, b, cone = ws.data
        settings = dict(config)
        iters = schedule.warmup_iters
        iters = self.warmup_iters(problem.p) if iters is None else int(iters)
        runs = ["warmup"] * (max(int(schedule.warmup_chunks), 1) if iters > 0 else 0)
        if schedule.fallback or not runs:
            # The full solve, in chunks so the certificate is tried along the way. Its SCS
            # object is built per call (it carries Anderson and scale state between chunks).
            budget = int(settings["max_iters"])
            chunk = max(1, min(int(schedule.fallback_chunk), budget))
            settings["max_iters"] = chunk
            runs += ["full"] * -(-budget // chunk)
        full: scs.SCS | None = None  # the full solve's SCS object, once built
        # Where its first chunk started, and its chunks so far (a replay's whole input: each
        # later chunk starts where the one before ended).
        full_start: dict[str, Any] | None = None
        full_chunks = 0
        sol = None
        for run in runs:
            start = sol
            if run == "warmup":
                solver = self._warmup_solver(ws, problem.p, iters)
                solver.update(c=c)
                sol = _solve(solver, start)
                while _interrupted(sol):  # the warm-up solver keeps no state: solve again
                    sol = _solve(solver, start)
            else:
                if full is None:
                    full = scs.SCS({"A": A, "b": b, "c": c}, cone, **settings)
                    full_start = start
                full_chunks += 1
                sol = _solve(full, start)
                while _interrupted(sol):
                    # The interrupted chunk moved the object's Anderson memory and scale: a
                    # new object replays the chunks before this one (the same bits, they are
                    # a pure function of their start), then solves this one again.
                    full = scs.SCS({"A": A, "b": b, "c": c}, cone, **settings)
                    sol = _replay(full, full_start, full_chunks)
            yield self._iterate(problem, ws, sol)
            if run == "full" and sol["info"]["status_val"] == scs.SOLVED:
                return

    @staticmethod
    def _warmup_solver(ws: _Workspace, p: int, iters: int) -> scs.SCS:
        cache = getattr(ws.local, "solvers", None)
        if cache is None:
            cache = ws.local.solvers = {}
        solver = cache.get(iters)
        if solver is None:
            A, b, cone = ws.data
            st = dict(WARMUP_SCS_SETTINGS[parity(p)], max_iters=iters)
            solver = scs.SCS({"A": A, "b": b, "c": np.zeros(A.shape[1])}, cone, **st)
            cache[iters] = solver
        return solver

    @staticmethod
    def _iterate(problem: SdpProblem, ws: _Workspace, sol: dict[str, Any]) -> SdpIterate:
        """SCS's result dict as an :class:`SdpIterate` (``svec`` undone)."""
        info, z = sol["info"], sol["y"]
        e = z[problem.n_zero :] / ws.svec_scale
        if ws.order is not None:  # back to the problem's entry order
            back = np.empty_like(e)
            back[ws.order] = e
            e = back
        return SdpIterate(
            z_zero=z[: problem.n_zero],
            Z=problem.matrix(e),
            iterations=int(info["iter"]),
            status=str(info["status"]),
            y=sol["x"],
            primal_objective=float(info["pobj"]),
        )


def _solve(solver: scs.SCS, start: dict[str, Any] | None) -> dict[str, Any]:
    """One SCS solve from ``start`` (a previous result dict), or cold."""
    if start is None:
        return solver.solve(warm_start=False)
    return solver.solve(warm_start=True, x=start["x"], y=start["y"], s=start["s"])


def _replay(solver: scs.SCS, start: dict[str, Any] | None, chunks: int) -> dict[str, Any]:
    """The full solve's first ``chunks`` chunks again on a new ``solver``, the first from
    ``start``, each later one from the result before it; the last chunk's result."""
    sol = start
    for _ in range(chunks):
        sol = _solve(solver, sol)
        if _interrupted(sol):
            return sol  # the caller starts the replay over
    return sol


def _interrupted(sol: dict[str, Any]) -> bool:
    """Whether SIGINT cut this solve short, and if so, hand the signal to the process.

    SCS installs its own SIGINT handler for the length of every solve, in whatever thread it
    runs (the handler is process-wide), and stops early with status ``interrupted``. So a
    Ctrl-C meant for someone else ended a solve that was never to be stopped: a sweep worker
    ignores SIGINT (the client answers the terminal's Ctrl-C and closes the workers), but
    during a solve SCS's handler replaced that ``SIG_IGN``, and the block in flight finished
    on the cut-short iterate, with a valid bound whose last bits were not the uninterrupted
    run's, and was written with a digest of them (issue 32). An interrupted result is never
    used: where the process ignores SIGINT the caller solves again (``True``); otherwise the
    signal is delivered again, now to the process's own handler, and ``KeyboardInterrupt``
    ends the solve (a ``BaseException``: no caller records it as the task's result).
    """
    if sol["info"]["status_val"] != scs.SIGINT:
        return False
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return True
    signal.raise_signal(signal.SIGINT)
    raise KeyboardInterrupt("SIGINT interrupted an SCS solve")


#: The production driver.
SCS = ScsDriver()
