"""The accumulation model's predictions for the asymptote runs (issue 35), made before them.

For the coherent tilt (weights 1, …, 1, 0.95, the tilted component deflated last) the model
of :mod:`~sroa_dist.analysis.accumulation` predicts the first crossing ``ε*(n)`` at every ``n``
from SROA errors measured at ``n = 16`` only. This module evaluates it where the asymptote runs
go (p = 3 to n = 2048, p = 4 and 5 to n = 1024, p = 6 at its onset), for the value criterion
(``c = 0.5``) and Theorem 3.1's criterion (``c = 2``, radius ``20ε/λ_j``), and sets beside
each: the normalised threshold ``ε*·(n − 1)^{1/(p−1)}``, the model's local slope and the
asymptote ``(c/g_p(0))^{1/(p−1)}``.

The model assumes ``g_p`` independent of ``n``. Where the ``c = 2`` crossings lie that is not
so (``docs/data/studies/accumulation-large-n.zarr``: ``g_3`` 25 % below its n = 16 value at
n = 128, ε = 0.18). :func:`fit_g_decay` fits that decay, ``g_p(ε, n) = g_p(ε, 16)·exp(−A·ε^k·
(n − 16))`` (linear in ``n`` at fixed ε, as measured), and :func:`corrected_crossing` solves the
model with the decayed ``g_p``: an interpolation up to the largest size measured, an
extrapolation past it. Orders with no measured decay are not corrected, and say so.

Numerics only; the cube of measured ``g_p`` is passed in.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr
from scipy.optimize import brentq

from ..errors import InputError
from ..studies import TILTED_WEIGHT
from .accumulation import MODEL_N, Accumulation, PredictedThreshold, _Curves, predict_threshold

__all__ = [
    "ASYMPTOTE_CRITERIA",
    "ASYMPTOTE_SIZES",
    "GDecay",
    "asymptote_predictions",
    "corrected_crossing",
    "fit_g_decay",
]

#: Sizes the asymptote runs measure, per order (issue 35, item 3).
ASYMPTOTE_SIZES: Mapping[int, tuple[int, ...]] = {
    3: (256, 512, 1024, 2048),
    4: (256, 512, 1024),
    5: (256, 512, 1024),
}
#: Sizes at which p = 6 is predicted (its onset lies among them).
P6_SIZES = (256, 512, 1024, 2048, 4096)
#: (label, criterion, c): the value criterion of the published studies and Theorem 3.1's.
ASYMPTOTE_CRITERIA: tuple[tuple[str, str, float], ...] = (
    ("value c=0.5", "value", 0.5),
    ("theorem c=2", "theorem", 2.0),
)
#: Theorem 3.1's vector radius is ``THEOREM_RADIUS·ε/λ_j``.
THEOREM_RADIUS = 20.0
#: A decay ``−ln(g(n)/g(16))`` below this is within the store's rounding of g: not fitted.
_RESOLVED = 1e-3
#: Above this (g below 47 % of its n = 16 value) the decay saturates and leaves the law.
_SATURATED = 0.75


@dataclasses.dataclass(frozen=True)
class GDecay:
    """``g_p(ε, n) = g_p(ε, n_ref)·exp(−A·ε^k·(n − n_ref))``, fitted to a measured cube.

    Attributes
    ----------
    p : int
        Order.
    a, k : float
        The fit's prefactor and ε-exponent.
    n_ref : int
        The size the decay is measured from (the model's).
    n_max : int
        The largest size measured: past it the law is an extrapolation.
    eps_fitted : tuple of float
        The smallest and largest ε fitted: outside them the law is an extrapolation in ε.
    points : list of dict
        Every point fitted: ``eps``, ``n``, measured and fitted ``g(n)/g(n_ref)``.
    worst_residual : float
        The largest ``|fitted/measured − 1|`` of ``g(n)/g(n_ref)`` over the points.
    """

    p: int
    a: float
    k: float
    n_ref: int
    n_max: int
    eps_fitted: tuple[float, float]
    points: list[dict[str, float]]
    worst_residual: float

    def ratio(self, eps: float, n: int) -> float:
        """``g_p(ε, n)/g_p(ε, n_ref)`` by the fitted law."""
        return math.exp(-self.a * eps**self.k * (n - self.n_ref))

    def where(self, eps: float, n: int) -> str:
        """How far the law is trusted at ``(ε, n)``: interpolated, or extrapolated in n, ε."""
        lo, hi = self.eps_fitted
        out = [w for w, bad in (("n", n > self.n_max), ("eps", not lo <= eps <= hi)) if bad]
        return "interpolated" if not out else "extrapolated in " + " and ".join(out)

    def as_record(self) -> dict[str, object]:
        return {
            "law": "g_p(eps, n) = g_p(eps, n_ref) * exp(-a * eps**k * (n - n_ref))",
            "p": self.p,
            "a": self.a,
            "k": self.k,
            "n_ref": self.n_ref,
            "n_max_measured": self.n_max,
            "eps_fitted": list(self.eps_fitted),
            "points": self.points,
            "worst_residual": self.worst_residual,
        }


def _check_g_cube(ds: xr.Dataset) -> None:
    """An accumulation cube: ``g_p`` and ``last`` over ``n``, ``p`` and ``eps``."""
    missing = [v for v in ("g_p", "last") if v not in ds.data_vars]
    missing += [d for d in ("n", "p", "eps") if d not in ds.dims]
    if missing:
        raise InputError(
            f"g cube: an accumulation cube over n, p and eps needs {missing}",
            "pass the accumulation-large-n store (docs/data/studies/accumulation-large-n.zarr)",
        )


def fit_g_decay(ds: xr.Dataset, p: int, *, n_ref: int = MODEL_N) -> GDecay:
    """Fit :class:`GDecay` to an accumulation cube's ``g_p`` at order ``p``.

    Points fitted: every ``(ε, n > n_ref)`` whose target was deflated last at both ``n`` and
    ``n_ref`` (otherwise ``g_p`` is not accumulation) with a decay ``−ln(g(n)/g(n_ref))``
    between 1e-3 (resolved) and 0.75 (before it saturates). Least squares in
    ``ln(−ln ratio) = ln A + k·ln ε + ln(n − n_ref)``.
    """
    _check_g_cube(ds)
    if p not in ds["p"].values or n_ref not in ds["n"].values:
        raise InputError(
            f"g cube: no g_p measured at p = {p} and n = {n_ref}",
            "pass the accumulation-large-n store (p = 3, 4 from n = 16)",
        )
    sub = ds[["g_p", "last"]].sel(p=p).compute()
    if "replicate" in sub.dims:
        sub = sub.isel(replicate=0)
    g, last = sub["g_p"], sub["last"]
    rows: list[tuple[float, int, float]] = []
    for n in (int(x) for x in sub["n"].values if x > n_ref):
        for eps in (float(e) for e in sub["eps"].values):
            ok = bool(last.sel(n=n, eps=eps)) and bool(last.sel(n=n_ref, eps=eps))
            ratio = float(g.sel(n=n, eps=eps) / g.sel(n=n_ref, eps=eps))
            decay = -math.log(ratio) if ratio > 0 else math.inf
            if ok and _RESOLVED <= decay <= _SATURATED:
                rows.append((eps, n, ratio))
    if len(rows) < 3 or len({r[0] for r in rows}) < 2:
        raise InputError(
            f"g cube: {len(rows)} resolved point(s) at p = {p}, need 3 at two ε at least",
            "measure g_p at more ε or sizes",
        )
    eps_a = np.array([r[0] for r in rows])
    n_a = np.array([r[1] for r in rows], dtype=float)
    ratio_a = np.array([r[2] for r in rows])
    X = np.column_stack([np.ones_like(eps_a), np.log(eps_a)])
    y = np.log(-np.log(ratio_a)) - np.log(n_a - n_ref)
    (ln_a, k), *_ = np.linalg.lstsq(X, y, rcond=None)
    a = float(math.exp(ln_a))
    fitted = np.exp(-a * eps_a**k * (n_a - n_ref))
    points = [
        {"eps": float(e), "n": int(n), "measured": float(r), "fitted": float(f)}
        for e, n, r, f in zip(eps_a, n_a, ratio_a, fitted, strict=True)
    ]
    worst = float(np.max(np.abs(fitted / ratio_a - 1)))
    span = (float(eps_a.min()), float(eps_a.max()))
    return GDecay(p, a, float(k), n_ref, int(sub["n"].values.max()), span, points, worst)


def corrected_crossing(pr: PredictedThreshold, decay: GDecay, n: int) -> float:
    """The value-criterion crossing at ``n`` with ``g_p`` decayed by ``decay``: the first ε at
    which the other components' error reaches ``c·ε`` or ``(n − 1)·g_p(ε, n)·ε^p`` does."""
    if pr.model is None:
        raise InputError("prediction: its curves are needed", "predict with predict_threshold")
    curves, c, p = _Curves(pr.model), pr.c, pr.p

    def excess(eps: float) -> float:
        x = math.log(eps)
        other = math.exp(curves.k(x)) / (c * eps)
        g = math.exp(curves.g(x)) * decay.ratio(eps, n)
        return max(other, (n - 1) * g * eps ** (p - 1) / c) - 1.0

    grid = np.geomspace(pr.model.eps[0], pr.model.eps[-1], 4000)
    vals = np.array([excess(float(e)) for e in grid])
    above = np.flatnonzero(vals >= 0)
    if not above.size:
        return math.inf
    i = int(above[0])
    return float(grid[0]) if i == 0 else float(brentq(excess, grid[i - 1], grid[i]))


def _vector_ratio(pr: PredictedThreshold, n: int, eps: float) -> float:
    """The largest vector error over Theorem 3.1's radius ``20ε/λ_j`` at ``ε`` (the tilted
    component's ``√(n − 1)·h(ε)`` against ``20ε/0.95``, the others' against ``20ε``)."""
    assert pr.model is not None
    curves = _Curves(pr.model)
    x = math.log(eps)
    last = math.sqrt(n - 1) * math.exp(curves.h(x)) / (THEOREM_RADIUS * eps / TILTED_WEIGHT)
    other = math.exp(curves.kv(x)) / (THEOREM_RADIUS * eps)
    return max(last, other)


def _rows(pr: PredictedThreshold) -> list[dict[str, float | int | None]]:
    p = pr.p
    out = []
    for k, n in enumerate(int(x) for x in pr.n):
        eps = float(pr.eps_star[k])
        out.append(
            {
                "n": n,
                "eps_star": eps,
                "normalised": eps * (n - 1) ** (1 / (p - 1)),
                "local_slope": float(pr.local_slope[k]),
                "asymptote_eps": float(pr.asymptote[k]),
                "past_onset": bool(n >= pr.onset_n),
            }
        )
    _doubling_slopes(out, "eps_star", "doubling_slope")
    return out


def _doubling_slopes(rows: list[dict], key: str, into: str) -> None:
    """``log(ε*(n)/ε*(n/2)) / log((n − 1)/(n/2 − 1))`` where ``n/2`` is a row too: the slope a
    measurement of the last doubling is compared with."""
    by_n = {int(r["n"]): float(r[key]) for r in rows}
    for r in rows:
        n, half = int(r["n"]), int(r["n"]) // 2
        a, b = by_n.get(half), by_n.get(n)
        ok = a is not None and b is not None and math.isfinite(a) and math.isfinite(b)
        r[into] = math.log(b / a) / math.log((n - 1) / (half - 1)) if ok else None


def asymptote_predictions(
    g_cube: xr.Dataset | None,
    *,
    sizes: Mapping[int, Sequence[int]] = ASYMPTOTE_SIZES,
    p6_sizes: Sequence[int] | None = P6_SIZES,
    models: Mapping[int, Accumulation] | None = None,
) -> dict[str, object]:
    """Every prediction of the asymptote runs as one JSON-ready record.

    Per order in ``sizes`` and per criterion of :data:`ASYMPTOTE_CRITERIA`: the model's
    ``ε*``, normalised ``ε*·(n − 1)^{1/(p−1)}``, local slope, the asymptote's prefactor
    ``(c/g_p(0))^{1/(p−1)}``, plateau and onset; for ``c = 2``, the margin of Theorem 3.1's
    vector radius at the prediction and the crossing with ``g_p``'s measured decay
    (:func:`fit_g_decay` on ``g_cube``), or why it is not corrected. For p = 6: both criteria
    at ``p6_sizes``, with the onset (None: no p = 6).

    ``models``: the curves per order measured already (``predict_threshold``'s ``model=``);
    an order not in it is measured at n = 16 here (48 global SROAs).
    """
    if g_cube is not None:
        _check_g_cube(g_cube)
    orders: list[dict[str, object]] = []
    plan = {int(p): tuple(int(n) for n in ns) for p, ns in sizes.items()}
    if p6_sizes is not None:
        plan[6] = tuple(int(n) for n in p6_sizes)
    models = dict(models or {})
    for p, ns in sorted(plan.items()):
        decay: GDecay | None = None
        why_not = None
        if g_cube is None:
            why_not = "no cube of g_p at large n was given"
        elif p not in g_cube["p"].values:
            why_not = (
                f"g_p's n-dependence is not measured at p = {p} (the accumulation-large-n "
                f"store holds p = {[int(x) for x in g_cube['p'].values]})"
            )
        else:
            decay = fit_g_decay(g_cube, p)
        for label, criterion, c in ASYMPTOTE_CRITERIA:
            # Theorem 3.1's radius 20ε/λ_j depends on ε: the model predicts the value part
            # and the record states the vector part's margin at the prediction.
            pr = predict_threshold(p, list(ns), c=c, criterion="value", model=models.get(p))
            rows = _rows(pr)
            entry: dict[str, object] = {
                "p": p,
                "criterion": label,
                "c": c,
                "radius": "20 eps / lambda_j" if criterion == "theorem" else None,
                "asymptote_prefactor": (c / pr.model.g0) ** (1 / (p - 1)),  # type: ignore[union-attr]
                "g0": pr.model.g0,  # type: ignore[union-attr]
                "plateau": pr.plateau,
                "onset_n": pr.onset_n,
                "rows": rows,
            }
            if criterion == "theorem":
                for row in rows:
                    e = float(row["eps_star"])  # type: ignore[arg-type]
                    row["vector_ratio"] = (
                        _vector_ratio(pr, int(row["n"]), e)  # type: ignore[arg-type]
                        if math.isfinite(e)
                        else math.nan
                    )
                if decay is None:
                    entry["corrected"] = None
                    entry["not_corrected_because"] = why_not
                else:
                    for row in rows:
                        n = int(row["n"])  # type: ignore[arg-type]
                        e = corrected_crossing(pr, decay, n)
                        row["eps_star_corrected"] = e
                        row["normalised_corrected"] = e * (n - 1) ** (1 / (p - 1))
                        row["corrected_is"] = decay.where(e, n)
                    _doubling_slopes(rows, "eps_star_corrected", "doubling_slope_corrected")
                    entry["corrected"] = decay.as_record()
            orders.append(entry)
    return {"predictions": orders}
