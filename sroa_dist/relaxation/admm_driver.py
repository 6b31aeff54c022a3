"""An ADMM behind the driver seam (:class:`~.driver.SdpDriver`), written once against an array
namespace: NumPy and SciPy on the CPU, CuPy on a CUDA GPU (``device="cuda"``).

The relaxation ``min c^T y  s.t.  A0 y = b0,  M(y) = X,  X PSD`` is split between ``y`` (an
equality-constrained least-squares step) and ``X`` (a projection on the PSD cone). With the
penalty ``rho`` and ``Z`` the multiplier of ``M(y) = X``, one step maps the single symmetric
matrix ``V = X - Z / rho`` to

    X = P+(V),  Z = -rho P-(V)           one eigendecomposition: V's PSD and NSD parts
    y = argmin c^T y + rho/2 ||M(y) - X - Z/rho||^2  s.t.  A0 y = b0
                                         a gather M^*, a Woodbury solve with M^* M, one row
    V <- M(y) - Z / rho                  a scatter

so the state is one matrix and every map runs where the arrays live (the maps of
:mod:`.device_maps`). This is Douglas-Rachford splitting; its fixed-point map is accelerated
with Anderson's type-II extrapolation over the last ``anderson`` steps, safeguarded: an
extrapolated point is kept only if its fixed-point residual is at most ``safeguard`` times the
last accepted one, else the plain step is taken and the memory cleared.

Each step gives a dual ``(z_zero, Z)`` with ``Z`` positive semidefinite by construction; the
relaxation validates every bound on the host in float64, so nothing this driver says is
trusted. :meth:`AdmmDriver.runs_batch` steps the relaxations of several tensors of the same
``(n, p)`` together, one stack of matrices; each tensor's arithmetic does not depend on what it
is batched with, so on the host batched results equal one-by-one results bit for bit.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, MutableSet
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from .backend import DEVICES, ArrayBackend, get_backend
from .device_maps import DeviceMaps, device_maps
from .driver import (
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
    "ADMM_SETTING_RULES",
    "DEFAULT_ADMM_SETTINGS",
    "AdmmDriver",
    "admm_driver",
]

#: The ADMM settings a caller may pass, with their value rules.
ADMM_SETTING_RULES: dict[str, Rule | None] = {
    "rho": (
        lambda v: v is None or (is_real(v) and v > 0),
        "a finite number > 0 (or none: the default for the size and parity of p)",
    ),
    "max_iters": int_at_least(1),
    "anderson": int_at_least(0),
    "safeguard": POSITIVE,
    "eps": NONNEG,
}

#: Defaults. ``rho`` ``None``: :func:`default_rho` (by the size and parity); ``anderson``: steps
#: of memory (0: plain ADMM); ``eps``: the driver stops by itself once the relative
#: fixed-point residual and duality gap are below it (the relaxation usually stops it earlier,
#: as soon as a certificate closes the gap).
DEFAULT_ADMM_SETTINGS: dict[str, Any] = {
    "rho": None,
    "max_iters": 2000,
    "anderson": 10,
    "safeguard": 1.0,
    "eps": 1e-10,
}

#: The default penalty is ``max(floor, c * sqrt(m))`` (``m`` the moment matrix's side) with
#: ``(floor, c)`` by the parity of ``p``, for ``||T||_F = 1`` (the relaxation normalises).
#: Measured in iterations to a closed certificate on nearly SOD tensors (Figure 2's included)
#: and deflated coherent-tilt steps: the best penalty grows with the size (odd p: about 1 at
#: n = 8-16, 1-2 at n = 24, 2-3 at n = 32; even p: 0.1-0.5 at n = 8, about 1 at n = 24-32), and
#: a penalty off by 4x can cost 3-8x the iterations.
DEFAULT_RHO = {"odd": (1.0, 0.1), "even": (0.0, 0.07)}


def default_rho(p: int, m: int) -> float:
    """The default penalty of a relaxation with moment matrix side ``m`` (:data:`DEFAULT_RHO`)."""
    floor, c = DEFAULT_RHO["odd" if p % 2 else "even"]
    return max(floor, c * float(np.sqrt(m)))


#: Iterations before the first iterate is handed back (the warm-up chunk), by parity of p.
WARMUP_ITERS = {"odd": 20, "even": 30}
#: Tikhonov weight of Anderson's least-squares problem, relative to its largest entry.
ANDERSON_REG = 1e-10
#: Most entries of the dense (rows x variables) Schur-complement factor of the equality rows.
MAX_DENSE_ROWS = 50_000_000


@dataclass
class _Tensor:
    """One relaxation's bookkeeping in a batched run (host scalars; the Anderson memory is
    a ring of ``anderson`` slots of map-value and residual differences)."""

    rho: float
    #: Ring buffers (device arrays, ``(memory, m, m)``), allocated on first use, and the Gram
    #: matrix of the residual differences (host).
    dF: Any = None
    dG: Any = None
    H: Any = None
    count: int = 0
    slot: int = 0
    #: The last step was an extrapolation (so the safeguard applies to it).
    extrapolated: bool = False
    #: Residual norm at the accepted point.
    res: float = np.inf
    done: bool = False
    status: str = "running"

    def forget(self) -> None:
        self.count = self.slot = 0


class AdmmDriver:
    """The ADMM as an :class:`~.driver.SdpDriver` on one device (see the module docstring).

    Attributes
    ----------
    device : str
        ``"cpu"`` or ``"cuda"``; the arrays and every map live there.
    backend : ArrayBackend
        The array namespace of ``device`` (given: used instead, e.g. by tests that run the
        device's code paths on the host); the relaxation runs its face certificates there too
        and validates the resulting bounds on the host.
    """

    setting_rules: Mapping[str, Rule | None] = ADMM_SETTING_RULES

    def __init__(self, device: str = "cpu", backend: ArrayBackend | None = None):
        self.backend: ArrayBackend = get_backend(device) if backend is None else backend
        self.device = device
        self.name = f"ADMM ({device})"

    def configure(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """:data:`DEFAULT_ADMM_SETTINGS` updated by ``settings``; unknown names are an error."""
        unknown = set(settings) - set(ADMM_SETTING_RULES)
        if unknown:
            raise InputError(
                f"unknown option(s) {sorted(unknown)} for the {self.name} driver",
                f"valid settings: {sorted(ADMM_SETTING_RULES)}",
            )
        return {**DEFAULT_ADMM_SETTINGS, **settings}

    def warmup_iters(self, p: int) -> int:
        """Iterations before the first iterate (:data:`WARMUP_ITERS`)."""
        return WARMUP_ITERS["odd" if p % 2 else "even"]

    def runs(
        self, problem: SdpProblem, c: np.ndarray, config: Mapping[str, Any], schedule: Schedule
    ) -> Iterator[SdpIterate]:
        """Iterates of one relaxation: :meth:`runs_batch` with a batch of one."""
        for chunk in self.runs_batch(problem, np.asarray(c)[None, :], config, schedule, set()):
            for _, it, _ in chunk:
                yield it

    def runs_batch(
        self,
        problem: SdpProblem,
        C: np.ndarray,
        config: Mapping[str, Any],
        schedule: Schedule,
        retired: MutableSet[int],
    ) -> Iterator[list[tuple[int, SdpIterate, bool]]]:
        """Iterates of the relaxations with costs ``C`` (one row per tensor), all stepped
        together: after each chunk, a list of ``(row, iterate, last)`` for the rows still
        running (``last``: this row gets no further iterate). Rows the caller adds to
        ``retired`` between chunks are dropped from the batch.

        Chunks follow ``schedule``: ``warmup_chunks`` chunks of ``warmup_iters`` iterations
        (default :data:`WARMUP_ITERS`), then, if ``fallback``, chunks of ``fallback_chunk``
        up to ``max_iters`` in all. A row stops by itself once converged (``eps``).
        """
        run = _Run(device_maps(problem, self.backend), np.asarray(C, float), config)
        first = schedule.warmup_iters
        first = self.warmup_iters(problem.p) if first is None else int(first)
        budget = int(config["max_iters"])
        chunks = [first] * (max(int(schedule.warmup_chunks), 1) if first > 0 else 0)
        if schedule.fallback or not chunks:
            step = max(1, int(schedule.fallback_chunk))
            left = budget - sum(chunks)
            chunks += [step] * max(0, -(-left // step))
        done_iters = 0
        for k, length in enumerate(chunks):
            length = min(length, budget - done_iters)
            if length <= 0:
                break
            run.retire(retired)
            if not run.active:
                return
            run.steps(length)
            done_iters += length
            final = k == len(chunks) - 1 or done_iters >= budget
            yield run.iterates(length, final)


class _Run:
    """A batched ADMM run: the stacked state and the per-tensor bookkeeping."""

    def __init__(self, maps: DeviceMaps, C: np.ndarray, config: Mapping[str, Any]):
        self.maps, self.be = maps, maps.backend
        xp = self.be.xp
        self.config = config
        self.mem = int(config["anderson"])
        self.eps = float(config["eps"])
        self.safeguard = float(config["safeguard"])
        B, m = C.shape[0], maps.m
        rho = config["rho"]
        rho = default_rho(maps.problem.p, maps.m) if rho is None else rho
        self.tensors = [_Tensor(float(rho)) for _ in range(B)]
        self.active = list(range(B))
        self.C = self.be.asarray(C)
        # Equality rows: A0 y = b0 through the Schur complement of the Gram solve (dense in
        # the rows: one for the homogeneous relaxation, a few hundred for small full ones).
        A0 = maps.problem.A0
        if A0.shape[0] * A0.shape[1] > MAX_DENSE_ROWS:
            raise InputError(
                f"the ADMM driver solves with {A0.shape[0]} equality rows densely over "
                f"{A0.shape[1]} variables, too many",
                "use the homogeneous formulation (the default, one row) or driver 'scs'",
            )
        GA = maps.solve_gram(self.be.asarray(A0.toarray()))  # (k, N): rows (M^*M)^-1 a_i
        S0 = self.be.to_host(maps.A0 @ GA.T)  # (k, k)
        self.GA_T = GA.T.copy()  # (N, k)
        self.S0inv = self.be.asarray(np.linalg.inv(0.5 * (S0 + S0.T)))
        # State: V per tensor; the accepted point's map value and by-products.
        self.V = xp.zeros((B, m, m))
        self.F = self.G = None
        self.out: dict[str, Any] = {}
        self.prop = self.V  # the points evaluated next (the first step is plain)

    # ---- the fixed-point map ---------------------------------------------------------------

    def _map(self, P: Any, rows: list[int]) -> dict[str, Any]:
        """The ADMM step at the stack ``P`` of the tensors ``rows``: the map's value ``F``, and
        the step's primal ``y``, dual ``(zeta, Z)`` and ``X``'s largest eigenvalues."""
        be, xp, maps = self.be, self.be.xp, self.maps
        rho = xp.asarray(np.array([self.tensors[b].rho for b in rows]))
        ev, Q = be.eigh(P)
        Xp = xp.empty_like(P)
        for i in range(len(rows)):
            # Reconstruct the smaller of the two parts (near an optimum X has rank one).
            # Eigenvalues are ascending: the first n_neg are the negative ones.
            n_neg = int((ev[i] <= 0).sum())
            if n_neg >= P.shape[1] - n_neg:
                Qp, w = Q[i][:, n_neg:], ev[i][n_neg:]
                Xp[i] = (Qp * w) @ Qp.T
            else:
                Qn, w = Q[i][:, :n_neg], ev[i][:n_neg]
                Xp[i] = P[i] - (Qn * w) @ Qn.T
        Xm = P - Xp  # = -Z / rho
        rhs = maps.adjoint(Xp - Xm) - self.C[rows] / rho[:, None]
        y0 = maps.solve_gram(rhs)
        viol = (maps.A0 @ y0.T).T - maps.b0  # (B, k)
        zeta = xp.matmul(self.S0inv, viol[:, :, None])[:, :, 0] * rho[:, None]
        y = y0 - xp.matmul(self.GA_T, (zeta / rho[:, None])[:, :, None])[:, :, 0]
        return {
            "F": maps.moment_matrix(y) + Xm,  # the map's value
            "y": y,
            "zeta": zeta,
            "Z": -rho[:, None, None] * Xm,
            # The two largest eigenvalues of X = P+(V) (for the rank ratio; X ~ M(y)).
            "top": xp.maximum(ev[:, -2:], 0.0),
        }

    # ---- iterations ------------------------------------------------------------------------

    def retire(self, retired: MutableSet[int]) -> None:
        """Drop the tensors the caller retired and those that converged."""
        keep = [
            i for i, b in enumerate(self.active) if b not in retired and not self.tensors[b].done
        ]
        if len(keep) == len(self.active):
            return
        self.active = [self.active[i] for i in keep]
        for name in ("V", "F", "G", "prop"):
            arr = getattr(self, name)
            if arr is not None:
                setattr(self, name, arr[keep])
        self.out = {k: v[keep] for k, v in self.out.items()}

    def steps(self, count: int) -> None:
        for _ in range(count):
            if not self.active:
                return
            self._step()

    def _norms(self, A: Any) -> np.ndarray:
        """Frobenius norm of each matrix of a stack (one reduction per row: the same
        arithmetic whatever the batch)."""
        A = A.reshape(A.shape[0], -1)
        return np.sqrt(self.be.to_host((A * A).sum(axis=1)))

    def _step(self) -> None:
        """Evaluate the map at every running tensor's proposal; keep each result unless it
        was an extrapolation that raised the fixed-point residual (the safeguard)."""
        rows = self.active
        out = self._map(self.prop, rows)
        F = out.pop("F")
        G = F - self.prop
        res = self._norms(G)
        accept = np.array(
            [
                not (
                    self.tensors[b].extrapolated
                    and not res[i] <= self.safeguard * self.tensors[b].res
                )
                for i, b in enumerate(rows)
            ]
        )
        self._accept(F, G, out, res, accept)
        self._propose()

    def _accept(self, F: Any, G: Any, out: dict, res: np.ndarray, accept: np.ndarray) -> None:
        """Take the evaluated points where ``accept`` (pushing Anderson's memory); elsewhere
        keep the last accepted point and clear the memory (the next step is plain)."""
        if self.F is not None:
            for i, b in enumerate(self.active):
                t = self.tensors[b]
                if accept[i] and self.mem:
                    self._remember(t, F[i] - self.F[i], G[i] - self.G[i])
                elif not accept[i]:
                    t.forget()
        if self.F is None or accept.all():
            self.V, self.F, self.G, self.out = self.prop, F, G, out
        elif accept.any():
            idx = self.be.xp.asarray(np.nonzero(accept)[0])
            self.V[idx] = self.prop[idx]
            self.F[idx] = F[idx]
            self.G[idx] = G[idx]
            for k in self.out:
                self.out[k][idx] = out[k][idx]
        for i, b in enumerate(self.active):
            t = self.tensors[b]
            if accept[i]:
                t.res = float(res[i])
            t.extrapolated = False

    def _remember(self, t: _Tensor, dF: Any, dG: Any) -> None:
        """Add one step's differences to ``t``'s ring and its residual Gram matrix."""
        xp = self.be.xp
        if t.dF is None:
            t.dF = xp.empty((self.mem,) + dF.shape)
            t.dG = xp.empty((self.mem,) + dG.shape)
            t.H = np.zeros((self.mem, self.mem))
        s = t.slot
        t.dF[s], t.dG[s] = dF, dG
        t.count = min(t.count + 1, self.mem)
        t.slot = (s + 1) % self.mem
        k = t.count
        row = self.be.to_host(t.dG[:k].reshape(k, -1) @ dG.reshape(-1))
        t.H[s, :k] = row
        t.H[:k, s] = row

    def _propose(self) -> None:
        """Next points: Anderson's extrapolation where there is memory, else the plain step."""
        be = self.be
        P = self.F.copy()
        for i, b in enumerate(self.active):
            t = self.tensors[b]
            k = t.count
            if not k:
                continue
            r = be.to_host(t.dG[:k].reshape(k, -1) @ self.G[i].reshape(-1))
            H = t.H[:k, :k].copy()
            H[np.diag_indices(k)] += ANDERSON_REG * max(float(np.abs(H).max()), 1e-300)
            try:
                gamma = np.linalg.solve(H, r)
            except np.linalg.LinAlgError:
                gamma = np.full(k, np.nan)
            if not np.all(np.isfinite(gamma)):
                t.forget()
                continue
            step = (be.asarray(gamma) @ t.dF[:k].reshape(k, -1)).reshape(P.shape[1:])
            P[i] = self.F[i] - step
            t.extrapolated = True
        self.prop = P

    # ---- what is handed back ---------------------------------------------------------------

    def iterates(self, iterations: int, final: bool) -> list[tuple[int, SdpIterate, bool]]:
        """The accepted point of each running tensor as an iterate (on the host), with
        whether it is that tensor's last (converged, or ``final``)."""
        be = self.be
        o = self.out
        y = be.to_host(o["y"])
        zeta = be.to_host(o["zeta"])
        Z = be.to_host(o["Z"])
        obj = be.to_host((o["y"] * self.C[self.active]).sum(axis=1))
        top = be.to_host(o["top"])
        V_norm = self._norms(self.V)
        out = []
        for i, b in enumerate(self.active):
            t = self.tensors[b]
            gap = abs(obj[i] + float(zeta[i] @ be.to_host(self.maps.b0))) / (
                1.0 + abs(obj[i]) + abs(float(zeta[i][0]))
            )
            fixed = t.res / (1.0 + V_norm[i])
            if max(gap, fixed) <= self.eps:
                t.done, t.status = True, "solved"
            elif final:
                t.status = "max_iters"
            rank = float(abs(top[i, 0]) / top[i, 1]) if top[i, 1] > 0 else float("nan")
            it = SdpIterate(
                z_zero=zeta[i].copy(),
                Z=Z[i],
                iterations=iterations,
                status=t.status,
                y=y[i],
                primal_objective=float(obj[i]),
                rank_ratio=rank,
            )
            out.append((b, it, t.done or final))
        return out


_DRIVERS: dict[str, AdmmDriver] = {}
_DRIVERS_LOCK = threading.Lock()


def admm_driver(device: str = "cpu") -> AdmmDriver:
    """The ADMM driver on ``device`` (one per device; a device that cannot be used here is a
    one-line ``ValueError`` with a hint)."""
    if device not in DEVICES:
        get_backend(device)  # the one error for an unknown device
    with _DRIVERS_LOCK:
        drv = _DRIVERS.get(device)
        if drv is None:
            drv = _DRIVERS[device] = AdmmDriver(device)
        return drv
