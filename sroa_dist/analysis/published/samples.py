"""The blocks of docs/results/samples.md ("Does a global step buy samples?", issue 36).

- ``samples-nstar``: N*(k) per model, weights and method from the sample-complexity study's
  stores ``docs/data/studies/samples-*.zarr`` (read through ``open_results``, every block
  digest-checked; a model's sizes may lie in several stores, e.g. ``samples-topics-k5-10`` and
  ``samples-topics-k20``, and are joined by the store's model), with the exponent of N* in k
  fitted by least squares on log N* over every replicate and its 95 % interval, and where
  the methods' brackets differ; "not yet measured" while there is no such store;
- ``samples-noise``: the structure of the sampling noise ``E = T̂ − T``
  (:func:`sroa_dist.moments.noise_structure`) from the structure kind's stores
  ``docs/data/studies/noise-structure-<model>.zarr``;
- ``samples-real-data``: power against global steps on shipped real datasets, from
  ``docs/data/samples/real-data.json``;
- ``figure-samples-noise``: the overlaps and escape probabilities against k.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from scipy import stats

from ..structure import figure_structure, span_text, structure_rows, structure_table
from .rate_figures import RateFigure
from .sources import STUDIES, Data, Source, fingerprint

__all__ = [
    "NOISE_STUDIES",
    "REAL_DATA",
    "SAMPLES_BLOCKS",
    "SAMPLES_FIGURES",
    "cost_table",
    "method_differences",
    "nstar_rows",
    "nstar_table",
    "noise_rows",
    "noise_table",
    "norm_table",
    "real_data_table",
    "slope_interval",
    "slope_range",
]

SAMPLES = "docs/data/samples"
#: The noise-structure study's stores (the ``structure`` kind), in page order: per model its
#: spec's store, and for topics and GMM k = 200 run into its own store (``--set
#: 'structure.k=[200]' --set 'structure.target=["global"]' --set structure.cost_cap=4e11``).
NOISE_STUDIES = (
    "noise-structure-topics",
    "noise-structure-topics-k200",
    "noise-structure-gmm",
    "noise-structure-gmm-k200",
    "noise-structure-ica",
)
REAL_DATA = f"{SAMPLES}/real-data.json"
#: Measured costs: per-draw rows (``rows``) and the study stores' runs (``searches``).
COST = f"{STUDIES}/samples-cost.json"
#: The sample-complexity study's stores: one per model (or per part), named samples-*.zarr.
NSTAR_GLOB = "samples-*.zarr"
#: The cube variable holding N* (the sample size where recovery succeeds with probability
#: 1/2) and the dimension the exponent is fitted over.
NSTAR_VAR, K_DIM = "n_star", "k"
#: The bracket's lower end: N* lies in (n_lo, n_star].
LO_VAR = "n_lo"
#: A search's evaluated sizes and its draws per size (their product: the search's draws).
COUNT_VARS = ("n_evals", "draws")
#: N* resolved by every evaluated size: the largest size below N* whose 95 % Wilson interval of
#: the success fraction lies below 1/2 (0: none) and the smallest above whose interval lies above
#: it (inf: none). Wider than the bracket: ten draws a size resolve 1/2 only far from it.
INTERVAL_VARS = ("n_star_low", "n_star_high")
#: ‖E‖ at N* (median of the norm draws, population whitening) and the two scales it is set
#: against: λ_min·k^(−1/(p−1)) (global steps) and λ_min/k (the power method's analysis).
NORM_VARS = ("eps_at_star", "scale_global", "scale_power")
#: A search's evaluated sizes and the successes at each (over the cube's ``step`` dim).
TRACE_VARS = ("trace_N", "trace_successes")
MODEL_ORDER = ("topics", "gmm", "ica")


def _table(head: list[str], rows: list[str]) -> str:
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *rows]) + "\n"


def slope_interval(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Least-squares slope of ``log y`` on ``log x`` and its 95 % t interval (NaN ends with
    fewer than three points or a single x)."""
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    if len(lx) < 2 or np.ptp(lx) == 0:
        return math.nan, math.nan, math.nan
    fit = stats.linregress(lx, ly)
    if len(lx) < 3:
        return float(fit.slope), math.nan, math.nan
    half = stats.t.ppf(0.975, len(lx) - 2) * fit.stderr
    return float(fit.slope), float(fit.slope - half), float(fit.slope + half)


def slope_range(x, lo, hi) -> tuple[float, float]:
    """Smallest and largest least-squares slope of ``log y`` on ``log x`` over every ``y_i`` in
    ``[lo_i, hi_i]`` (the slope is linear in ``log y``, so the ends take each ``y_i`` at one
    end); NaN where an interval is open (``lo <= 0`` or ``hi = inf``) or x has one value."""
    lx = np.log(np.asarray(x, float))
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    if np.ptp(lx) == 0 or np.any(lo <= 0) or not np.all(np.isfinite(hi)):
        return math.nan, math.nan
    w = (lx - lx.mean()) / np.sum((lx - lx.mean()) ** 2)
    llo, lhi = np.log(lo), np.log(hi)
    return float(np.sum(np.where(w > 0, w * llo, w * lhi))), float(
        np.sum(np.where(w > 0, w * lhi, w * llo))
    )


def nstar_rows(path: Path) -> list[dict[str, Any]]:
    """One row per finished N* of a samples store: its coordinates (every dimension of
    ``n_star``), the store's model (its ``setting_model``), ``n_star`` and the bracket's lower
    end ``n_lo``."""
    from sroa_dist.sweep import open_results  # storage: imported only when a store exists

    ds = open_results(path).compute()
    if NSTAR_VAR not in ds:
        return []
    model = str(ds.attrs.get("setting_model", path.stem))
    da = ds[NSTAR_VAR]
    sub = ds[[NSTAR_VAR, LO_VAR, *COUNT_VARS, *INTERVAL_VARS, *NORM_VARS, *TRACE_VARS]]
    flat = sub.stack(instance=list(da.dims)) if da.dims else sub.expand_dims("instance")
    rows = []
    for i in range(flat.sizes["instance"]):
        one = flat.isel(instance=i)
        value = float(one[NSTAR_VAR])
        if not math.isfinite(value):
            continue
        coords = {str(c): one[c].item() for c in da.dims}
        counts = {v: int(one[v]) for v in COUNT_VARS}
        counts |= {v: float(one[v]) for v in (*INTERVAL_VARS, *NORM_VARS)}
        rows.append({"model": model, **coords, NSTAR_VAR: value, LO_VAR: float(one[LO_VAR])})
        sizes, wins = (one[v].values for v in TRACE_VARS)
        trace = [(int(n), int(w)) for n, w in zip(sizes, wins, strict=True) if math.isfinite(n)]
        rows[-1].update(counts, store=path.name, trace=trace)
    return rows


def _group_keys(rows: list[dict[str, Any]]) -> list[str]:
    """The columns a row of the N* table is keyed by: model, weights, method, then any other
    coordinate (never k, the replicate or the measured values)."""
    measured = {NSTAR_VAR, LO_VAR, *COUNT_VARS, *INTERVAL_VARS, *NORM_VARS, "store", "trace"}
    rest = {c for r in rows for c in r} - measured - {K_DIM, "replicate"}
    first = [c for c in ("model", "weights", "method") if c in rest]
    return first + sorted(rest - set(first))


def _model_first(key: tuple[str, ...]) -> tuple:
    order = {m: i for i, m in enumerate(MODEL_ORDER)}
    return (order.get(key[0], len(order)), key)


def _all_nstar_rows(data: Data) -> list[dict[str, Any]]:
    """Every samples store's rows (:func:`nstar_rows`), each store recorded as a source."""
    stores = sorted((data.root / STUDIES).glob(NSTAR_GLOB))
    rows: list[dict[str, Any]] = []
    for path in stores:
        # Three blocks read these rows: each store is opened once per render (a copy each,
        # so that no block sees another's edits).
        mine = copy.deepcopy(data.cached(f"samples:{path.name}", lambda p=path: nstar_rows(p)))
        data.note(Source(f"{STUDIES}/{path.name}", "store", fingerprint(mine)))
        rows += mine
    if not stores:  # the block still names where it looks
        data.note(Source(f"{STUDIES}/{NSTAR_GLOB}", "store", "absent", "none yet"))
    return rows


def nstar_table(data: Data) -> str:
    """N*(k) per (model, weights, method) over every samples store, with the fitted exponent
    (three or more sizes), or a line saying that the study has not been measured yet; then
    where the methods' brackets differ (:func:`method_differences`)."""
    rows = _all_nstar_rows(data)
    if not rows:
        return (
            f"N\\* not yet measured: no store `{STUDIES}/{NSTAR_GLOB}` holds a finished "
            f"`{NSTAR_VAR}`.\n"
        )
    keys = _group_keys(rows)
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(str(r.get(c, "—")) for c in keys), []).append(r)
    ks = sorted({r[K_DIM] for r in rows})
    out = []
    for key, grp in sorted(groups.items(), key=lambda kv: _model_first(kv[0])):
        cells = []
        for k in ks:
            at = [r for r in grp if r[K_DIM] == k]
            if not at:
                cells.append("—")
                continue
            mean = math.exp(np.mean(np.log([r[NSTAR_VAR] for r in at])))
            low, high = min(r["n_star_low"] for r in at), max(r["n_star_high"] for r in at)
            cells.append(f"{mean:.3g} [{low:.3g}, {high:.3g}]")
        sizes = len({r[K_DIM] for r in grp})
        if sizes < 3:  # two brackets 25 % wide say nothing about an exponent
            fit = [f"— ({sizes} sizes: not fitted)", "—"]
        else:
            x = [r[K_DIM] for r in grp]
            slope, lo, hi = slope_interval(x, [r[NSTAR_VAR] for r in grp])
            if not math.isfinite(lo):
                fit = [f"{slope:.2f}"]
            elif hi - lo < 0.005:  # N* on the lattice 100·2^(j/4) can fit a line exactly
                fit = [f"{slope:.2f} (exact fit on the size lattice: no t interval)"]
            else:
                fit = [f"{slope:.2f} [{lo:.2f}, {hi:.2f}]"]
            a, b = slope_range(x, [r["n_star_low"] for r in grp], [r["n_star_high"] for r in grp])
            if not math.isfinite(a):  # an interval open: the brackets alone still bound it
                c, d = slope_range(x, [r[LO_VAR] for r in grp], [r[NSTAR_VAR] for r in grp])
                fit.append(f"open (an N* unresolved; the brackets alone: {c:.2f} to {d:.2f})")
            else:
                fit.append(f"{a:.2f} to {b:.2f}")
        out.append("| " + " | ".join([*key, *cells, *fit]) + " |")
    head = [
        *keys,
        *(f"k = {k}: N* [interval]" for k in ks),
        "exponent [95 % t]",
        "exponent over the N* intervals",
    ]
    return _table(head, out) + "\n" + method_differences(rows) + "\n"


def norm_table(data: Data) -> str:
    """Per (model, weights, k): ‖E‖ at N* against λ_min/k and λ_min·k^(−1/(p−1)), from the
    samples stores. The methods share their draws, so where their brackets coincide so do
    these norms; a range shows where they do not."""
    rows = _all_nstar_rows(data)
    if not rows:
        return f"‖E‖ at N\\* not yet measured: no store `{STUDIES}/{NSTAR_GLOB}`.\n"
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if math.isfinite(r["eps_at_star"]):
            groups.setdefault((r["model"], str(r.get("weights", "—")), r[K_DIM]), []).append(r)
    out = []
    for (model, weights, k), grp in sorted(groups.items(), key=lambda kv: _model_first(kv[0])):
        eps = [r["eps_at_star"] for r in grp]
        power = [r["eps_at_star"] / r["scale_power"] for r in grp]
        glob = [r["eps_at_star"] / r["scale_global"] for r in grp]
        n = span_text([r[NSTAR_VAR] for r in grp], ",.0f")
        out.append(
            f"| {model} | {weights} | {k} | {n} | {span_text(eps, '.3g')} | {span_text(power)} | "
            f"{span_text(glob)} |"
        )
    head = ["model", "weights", "k", "N*", "‖E‖ at N*", "‖E‖ / (λ_min/k)",
            "‖E‖ / (λ_min k^−1/(p−1))"]  # fmt: skip
    return _table(head, out)


def method_differences(rows: list[dict[str, Any]]) -> str:
    """One line: at how many (model, weights, k, replicate) points two or more methods were
    searched, and at which of them their brackets ``(n_lo, n_star]`` differ (each method's
    bracket listed), or that they coincide at every one (and at how many the whole traces,
    sizes and success counts, are the same)."""
    points: dict[tuple, dict[str, tuple[float, float]]] = {}
    traces: dict[tuple, set] = {}
    for r in rows:
        where = (r.get("model", "—"), r.get("weights", "—"), r[K_DIM], r.get("replicate", 0))
        points.setdefault(where, {})[str(r.get("method", "—"))] = (r[LO_VAR], r[NSTAR_VAR])
        traces.setdefault(where, set()).add(tuple(map(tuple, r.get("trace", ()))))
    shared = {w: m for w, m in points.items() if len(m) > 1}
    if not shared:
        return "No point has two methods searched: nothing to compare.\n"
    differ = {w: m for w, m in shared.items() if len(set(m.values())) > 1}
    ks = sorted({w[2] for w in shared})
    if not differ:
        same = sum(1 for w in shared if len(traces[w]) == 1)
        return (
            f"**The methods' brackets coincide at every one of the {len(shared)} (model, "
            f"weights, k) points searched by two or more methods (k = "
            f"{', '.join(map(str, ks))}).** At {same} of them the methods also count the same "
            f"successes at every evaluated size.\n"
        )
    lines = [
        f"**The methods' brackets differ at {len(differ)} of the {len(shared)} (model, weights, "
        f"k) points searched by two or more methods:**\n"
    ]

    def where(kv: tuple) -> tuple:
        model, weights, k, replicate = kv[0]
        return (_model_first((model,)), str(weights), k, replicate)

    for (model, weights, k, _), methods in sorted(differ.items(), key=where):
        spans = ", ".join(f"{m} ({lo:,.0f}, {hi:,.0f}]" for m, (lo, hi) in sorted(methods.items()))
        lines.append(f"- {model}, {weights}, k = {k}: {spans}")
    return "\n".join(lines) + "\n"


def search_sizes(n_star: float, lo: float = 100.0, factor: float = 2.0, refine: int = 2) -> list:
    """The sizes a search with N* = ``n_star`` evaluates, as the samples kind's defaults make
    them: ``lo·factor^j`` up to the first at or above ``n_star``, one continued size past it,
    and ``refine`` refinement sizes inside the last bracket (two narrow a factor 2 to 25 %)."""
    sizes = [lo]
    while sizes[-1] < n_star:
        sizes.append(sizes[-1] * factor)
    sizes.append(sizes[-1] * factor)  # the continued point
    return sizes + [n_star] * refine


def draw_cost_exponent(rows: list[dict], model: str, method: str, n: int) -> tuple | None:
    """``(k0, c0, k1, c1, a)``: the per-draw CPU seconds at sample size ``n`` measured at the
    two largest k for (model, method) (the smaller k pay mostly fixed costs), and the exponent
    ``a`` of c ∝ k^a between them; None unless two k are measured."""
    at = {
        r["k"]: r["cpu_s"] for r in rows if (r["model"], r["method"], r["N"]) == (model, method, n)
    }
    if len(at) < 2:
        return None
    k0, k1 = sorted(at)[-2:]
    return k0, at[k0], k1, at[k1], math.log(at[k1] / at[k0]) / math.log(k1 / k0)


#: Where the cost is extrapolated to, the issue's largest k.
K_TARGET = 200
#: The sample size of samples-cost.json's per-draw rows measured at every k.
COST_N = 16000


def cost_table(data: Data) -> str:
    """Two tables. The measured runs of the samples stores (samples-cost.json's ``searches``:
    wall and CPU seconds, load, the estimate ``sroa-dist validate`` gave). Then, per model and
    method, a lower bound on one N* search at k = 200: N*(200) from the exponent fitted to the
    uniform-weight stores, the per-draw CPU seconds at N = 16000 extrapolated from k = 20 and
    50 as a power of k, times the draws a search makes at sizes of 16000 or more (each such
    draw costs at least that: the sample and moment cost grows with N)."""
    doc = data.json(COST)
    rows = _all_nstar_rows(data)
    runs = []
    for r in doc.get("searches", []):
        mine = [x for x in rows if x["store"] == r["store"]]
        draws = sum(x["n_evals"] * x["draws"] for x in mine)
        methods = sorted({str(x.get("method", "—")) for x in mine})
        runs.append(
            f"| {r['store']} | {mine[0]['model'] if mine else '—'} | "
            f"{', '.join(str(k) for k in sorted({x[K_DIM] for x in mine}))} | "
            f"{', '.join(methods)} | "
            f"{draws:,} | {r['wall_s']:.0f} | {r['cpu_s']:.0f} | "
            f"{r['cpu_s'] / max(draws, 1):.2f} | "
            f"{r['load'][0]:.1f}–{r['load'][1]:.1f} | {r['estimate_cpu_s']:.0f} | "
            f"{r.get('estimate_cpu_s_refit', r['estimate_cpu_s']):.0f} |"
        )
    head = ["store", "model", "k", "methods", "draws", "wall s", "CPU s", "CPU s / draw",
            "load", "validate's estimate, CPU s", "refitted cost model, CPU s"]  # fmt: skip
    text = _table(head, runs) if runs else "No measured run of a samples store yet.\n"
    out = []
    for model in MODEL_ORDER:
        for method in ("power@aghkt", "sshopm@global"):
            grp = [r for r in rows if (r["model"], r.get("weights", "uniform"), r.get("method"))
                   == (model, "uniform", method)]  # fmt: skip
            measured = draw_cost_exponent(doc["rows"], model, method, COST_N)
            if len({r[K_DIM] for r in grp}) < 3 or measured is None:
                continue
            slope, lo, hi = slope_interval([r[K_DIM] for r in grp], [r[NSTAR_VAR] for r in grp])
            k_max = max(r[K_DIM] for r in grp)
            n_max = math.exp(np.mean([math.log(r[NSTAR_VAR]) for r in grp if r[K_DIM] == k_max]))
            n_200 = n_max * (K_TARGET / k_max) ** slope
            k0, c0, k1, c1, a = measured
            c_200 = c1 * (K_TARGET / k1) ** a
            draws = int(np.median([r["draws"] for r in grp]))
            big = sum(1 for n in search_sizes(n_200) if n >= COST_N) * draws
            out.append(
                f"| {model} | {method} | {slope:.2f} | {n_200:.2g} | {c0:.2f} (k = {k0}) → "
                f"{c1:.2f} (k = {k1}): k^{a:.1f} | {c_200:.3g} | {big} | "
                f"≥ {big * c_200 / 3600:.3g} |"
            )
    head = ["model", "method", "N* exponent", "N*(200), extrapolated",
            f"CPU s a draw at N = {COST_N}", "at k = 200", "draws at N ≥ 16000",
            "CPU-h a search, k = 200"]  # fmt: skip
    if out:
        text += "\n" + _table(head, out)
    else:
        text += "\nNo model has three sizes and two measured per-draw costs: no extrapolation.\n"
    return text


def noise_rows(data: Data) -> list[dict[str, Any]]:
    """The rows of every noise-structure store (:func:`~sroa_dist.analysis.structure.
    structure_rows`: one per model, k, weights and target), models in page order; each store
    is recorded as a source."""
    rows: list[dict[str, Any]] = []
    for study in NOISE_STUDIES:
        ds = data.store(study)
        if ds is None:
            continue
        mine = data.cached(f"structure-rows:{study}", lambda ds=ds: structure_rows(ds))
        data.note_store(study, mine)
        rows += mine
    return rows


def noise_table(data: Data) -> str:
    """Per (model, k, weights, calibration target): N, the norm ratios, the overlaps against
    their isotropic values and the three escape probabilities (pooled over replicates, with
    their Wilson intervals), from the noise-structure stores; a line saying the study is not
    measured while none exists."""
    rows = noise_rows(data)
    if not rows:
        stores = ", ".join(f"`{STUDIES}/{s}.zarr`" for s in NOISE_STUDIES)
        return f"Noise structure not yet measured: none of {stores} exists.\n"
    head, body = structure_table(rows)
    reps = sorted({r["replicates"] for r in rows})
    seconds = sum(sum(r["seconds"]) for r in rows)
    note = (
        f"\n{'–'.join(map(str, reps))} replicates per row (each resamples the point's one model), "
        f"{'–'.join(map(str, sorted({r['starts'] for r in rows})))} starts per q; "
        "norms certified where k allows (a ≥ marks rows with multi-start lower bounds); "
        f"the instances' wall time summed: {seconds / 60:.1f} min.\n"
    )
    return _table(head, ["| " + " | ".join(cells) + " |" for cells in body]) + note


def real_data_table(data: Data) -> str:
    """Per shipped dataset and method: the error against the truth, certified steps and the
    largest angle to the certified decomposition."""
    doc = data.json(REAL_DATA)
    err_key = {"gmm": "mean_error", "topics": "topic_tv", "ica": "mixing_1_minus_cos"}
    out = []
    for ds in doc["datasets"]:
        key = err_key[ds["model"]]
        for label, m in ds["methods"].items():
            errs = m[key]
            out.append(
                f"| {ds['dataset']} | {ds['model']} | {ds['N']:,} | {ds['k']} | {label} | "
                f"{np.median(errs):.3g} / {max(errs):.3g} | {m['certified_steps']}/{ds['k']} | "
                f"{m['redone_steps']} | {m['angle_to_certified_deg']:.2g}° | "
                f"{m['seconds']:.1f} |"
            )
    head = [
        "dataset",
        "model",
        "N",
        "k",
        "method",
        "error median / max",
        "certified steps",
        "redone steps",
        "largest angle to certified",
        "s",
    ]
    return _table(head, out)


def figure_noise(data: Data) -> Figure:
    """Left: E's best direction's overlaps (largest with one component, with the attractor's
    direction) over their isotropic values, against k. Right: q on T + E and on the attractor
    at the same norm, against ‖E‖/(λ_min k^{−1/(p−1)}) (:func:`~sroa_dist.analysis.structure.
    figure_structure` over every noise-structure store)."""
    return figure_structure(noise_rows(data))


#: Block name -> text generator, in page order (the figure is registered separately).
SAMPLES_BLOCKS = {
    "samples-nstar": nstar_table,
    "samples-noise": noise_table,
    "samples-real-data": real_data_table,
    "samples-norm": norm_table,
    "samples-cost": cost_table,
}
SAMPLES_FIGURES = {
    "figure-samples-noise": RateFigure("samples_noise.png", "noise structure", 110, figure_noise)
}
