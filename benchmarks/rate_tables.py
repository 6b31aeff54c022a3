"""The tables of the rate study (docs/results/thresholds.md), printed as Markdown from the data
in docs/data, so every number on that page can be regenerated: ``python benchmarks/rate_tables.py``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data"
VALUE_STUDIES = {3: ["tilt-p3"], 4: ["tilt-p4"], 5: ["tilt-p5", "tilt-p5-big"]}


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def per_size(rows: list[dict]) -> dict[int, tuple[float, float]]:
    """n -> median (lo, hi) over replicates of the closed brackets."""
    out: dict[int, list] = {}
    for r in rows:
        if r["lo"] > 0 and math.isfinite(r["hi"]):
            out.setdefault(r["n"], []).append((r["lo"], r["hi"]))
    return {
        n: (float(np.median([a for a, _ in v])), float(np.median([b for _, b in v])))
        for n, v in sorted(out.items())
    }


def accumulation_table() -> None:
    acc = _json(DATA / "rate" / "accumulation.json")
    eps = np.array(acc["setup"]["eps"])
    rows = {(r["p"], r["n"]): r for r in acc["rows"]}
    print(
        "| p | g_p(0) = (p c_p)^-p | g_p(0.02), n = 8 | n = 16 | g_p(0.02)/g_p(0) − 1 | "
        "n = 8 vs 16, ε ≤ 0.1 | n = 8 vs 16, ε ≤ 0.6 | g_p(0.1)/g_p(0) | g_p(0.5)/g_p(0) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for p in (3, 4, 5, 6):
        a, b = np.array(rows[(p, 8)]["g"]), np.array(rows[(p, 16)]["g"])
        g0 = rows[(p, 16)]["g0"]
        rel = np.abs(a / b - 1)
        at = lambda e, b=b: float(np.exp(np.interp(np.log(e), np.log(eps), np.log(b))))  # noqa: E731
        print(
            f"| {p} | {g0:.4f} | {a[0]:.4f} | {b[0]:.4f} | {100 * (b[0] / g0 - 1):+.1f} % | "
            f"{100 * rel[eps <= 0.1].max():.2f} % | {100 * rel.max():.1f} % | "
            f"{at(0.1) / g0:.3f} | {at(0.5) / g0:.3f} |"
        )


def prediction(p: int, label: str) -> dict:
    return next(
        r
        for r in _json(DATA / "rate" / "predictions.json")["rows"]
        if r["p"] == p and r["criterion"] == label
    )


def predicted_at(pr: dict, n: int) -> float:
    ns, es = np.array(pr["n"], float), np.array(pr["eps_star"], float)
    if n in pr["n"]:
        return float(es[pr["n"].index(n)])
    return float(np.exp(np.interp(np.log(n), np.log(ns), np.log(es))))


def g0_of(p: int) -> float:
    return next(r["g0"] for r in _json(DATA / "rate" / "accumulation.json")["rows"] if r["p"] == p)


def value_table() -> None:
    print(
        "| p | n | measured bracket (lo, hi] | predicted from n = 16 | measured/predicted − 1 | "
        "normalised ε*·(n−1)^{1/(p−1)} | asymptote (c/g_p(0))^{1/(p−1)} | model local slope |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for p, names in VALUE_STUDIES.items():
        rows = sum((_json(DATA / "nscaling" / f"{s}.json")["results"] for s in names), [])
        pr = prediction(p, "value c=0.5")
        asym = (0.5 / g0_of(p)) ** (1 / (p - 1))
        for n, (lo, hi) in per_size(rows).items():
            mid = math.sqrt(lo * hi)
            pred = predicted_at(pr, n)
            slope = pr["local_slope"][pr["n"].index(n)] if n in pr["n"] else float("nan")
            print(
                f"| {p} | {n} | ({lo:.4f}, {hi:.4f}] | {pred:.4f} | "
                f"{100 * (mid / pred - 1):+.1f} % | "
                f"{mid * (n - 1) ** (1 / (p - 1)):.3f} | {asym:.3f} | {slope:+.3f} |"
            )


def slopes_table() -> None:
    """Local slopes between consecutive measured sizes, with the range the brackets allow."""
    print(
        "| p | sizes | local slope of the bracket centres | range the brackets allow | "
        "model slope at the larger size | limit −1/(p−1) |"
    )
    print("|---|---|---|---|---|---|")
    for p, names in VALUE_STUDIES.items():
        rows = sum((_json(DATA / "nscaling" / f"{s}.json")["results"] for s in names), [])
        pr = prediction(p, "value c=0.5")
        sizes = per_size(rows)
        ns = list(sizes)
        for a, b in zip(ns, ns[1:], strict=False):
            (lo1, hi1), (lo2, hi2) = sizes[a], sizes[b]
            dx = math.log((b - 1) / (a - 1))
            s = math.log(math.sqrt(lo2 * hi2) / math.sqrt(lo1 * hi1)) / dx
            smin, smax = math.log(lo2 / hi1) / dx, math.log(hi2 / lo1) / dx
            model = pr["local_slope"][pr["n"].index(b)] if b in pr["n"] else float("nan")
            if b >= pr["onset_n"]:
                print(
                    f"| {p} | {a}→{b} | {s:+.3f} | [{smin:+.3f}, {smax:+.3f}] | {model:+.3f} | "
                    f"{-1 / (p - 1):+.3f} |"
                )


def onset_table() -> None:
    acc = _json(DATA / "rate" / "accumulation.json")
    eps = np.array(acc["setup"]["eps"])
    print(
        "| p | plateau ε_pl (n = 16 model) | g_p(ε_pl) | 1 + c/(g_p(ε_pl)·ε_pl^{p−1}) | "
        "predicted onset (model) | 1 + c/(g_p(0)·ε_pl^{p−1}) |"
    )
    print("|---|---|---|---|---|---|")
    for p in (3, 4, 5, 6):
        pr = prediction(p, "value c=0.5")
        row = next(r for r in acc["rows"] if r["p"] == p and r["n"] == 16)
        e = pr["plateau"]
        g = float(np.exp(np.interp(np.log(e), np.log(eps), np.log(row["g"]))))
        print(
            f"| {p} | {e:.4f} | {g:.4f} | {1 + 0.5 / (g * e ** (p - 1)):.0f} | {pr['onset_n']} | "
            f"{1 + 0.5 / (row['g0'] * e ** (p - 1)):.0f} |"
        )


def p6_table() -> None:
    path = DATA / "rate" / "tilt-p6.json"
    if not path.exists():
        return
    pr = prediction(6, "value c=0.5")
    print("| n | measured bracket (lo, hi] | predicted from n = 16 | measured/predicted − 1 |")
    print("|---|---|---|---|")
    for r in sorted(_json(path)["rows"], key=lambda r: r["n"]):
        mid, pred = math.sqrt(r["lo"] * r["hi"]), predicted_at(pr, r["n"])
        print(
            f"| {r['n']} | ({r['lo']:.4f}, {r['hi']:.4f}] | {pred:.4f} | "
            f"{100 * (mid / pred - 1):+.1f} % |"
        )


def theorem_table() -> None:
    folder = DATA / "rate" / "theorem"
    print(
        "| p | criterion | n | measured (lo, hi] | predicted from n = 16 | "
        "measured/predicted − 1 | asymptote | evaluations with a redone step |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for path in sorted(folder.glob("theorem-p*.json")):
        d = _json(path)
        p, c, radius = d["study"]["p"], d["study"]["c"], d["study"]["radius"]
        label = f"theorem c={c:g} r={radius:g}" if radius else f"value c={c:g}"
        pr = prediction(p, label)
        crit = f"c = {c:g}, " + (f"radius {radius:g}" if radius else "radius 20ε/λ_j")
        for r in sorted(d["results"], key=lambda r: r["n"]):
            n = r["n"]
            asym = (c / g0_of(p)) ** (1 / (p - 1)) * (n - 1) ** (-1 / (p - 1))
            pred = predicted_at(pr, n)
            redone = sum(1 for e in r["trace"] if e[5])
            if math.isfinite(r["hi"]):
                mid = math.sqrt(r["lo"] * r["hi"])
                cmp = f"{100 * (mid / pred - 1):+.1f} %" if math.isfinite(pred) else "—"
                meas = f"({r['lo']:.4f}, {r['hi']:.4f}]"
            else:
                cmp, meas = ("agrees (none)" if not math.isfinite(pred) else "—"), "none up to 1.5"
            pred_s = f"{pred:.4f}" if math.isfinite(pred) else "none in range"
            print(
                f"| {p} | {crit} | {n} | {meas} | {pred_s} | {cmp} | {asym:.4f} | "
                f"{redone} of {len(r['trace'])} |"
            )


#: Worst-case studies (file, order, steps) in docs/data/rate.
WORST_CASE_STUDIES = [
    ("worst-case.json", 3, "sshopm, re-evaluated with the global check"),
    ("worst-case-certified.json", 3, "certified"),
    ("worst-case-p4.json", 4, "sshopm, re-evaluated with the global check"),
]


def worst_case_rows(name: str = "worst-case.json") -> dict[int, tuple[float, float, dict]]:
    """n -> (last grid ε below the bound, first grid ε past it, that row) of a worst-case
    study (``hi = inf`` when no grid ε broke the bound)."""
    rows = _json(DATA / "rate" / name)["rows"]
    out = {}
    for n in sorted({r["n"] for r in rows}):
        mine = sorted((r for r in rows if r["n"] == n), key=lambda r: r["eps"])
        past = [r for r in mine if r["worst"] > 2.0]
        if past:
            below = [r["eps"] for r in mine if r["eps"] < past[0]["eps"]]
            out[n] = (max(below) if below else 0.0, past[0]["eps"], past[0])
        else:
            out[n] = (mine[-1]["eps"], math.inf, mine[-1])
    return out


def worst_case_table() -> None:
    print(
        "| p | steps | n | first grid ε with a found max_j \\|λ̂_j − λ_j\\|/ε > 2 (bracket) | "
        "found value there (re-evaluated) | the tilt's value there | ε·(n−1)^{1/(p−1)} at the "
        "crossing | every step certified |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, p, steps in WORST_CASE_STUDIES:
        if not (DATA / "rate" / name).exists():
            continue
        for n, (lo, hi, row) in worst_case_rows(name).items():
            cert = "—"
            if "all_certified" in row:
                rows = [r for r in _json(DATA / "rate" / name)["rows"] if r["n"] == n]
                cert = f"{sum(r['all_certified'] for r in rows)} of {len(rows)} grid points"
            if math.isfinite(hi):
                print(
                    f"| {p} | {steps} | {n} | ({lo:.4f}, {hi:.4f}] | {row['worst']:.3f} | "
                    f"{row['tilt']:.3f} | {hi * (n - 1) ** (1 / (p - 1)):.3f} | {cert} |"
                )
            else:
                print(
                    f"| {p} | {steps} | {n} | none up to {lo:.3f} | {row['worst']:.3f} (at "
                    f"{lo:.3f}) | {row['tilt']:.3f} | — | {cert} |"
                )


def confirm_table() -> None:
    """The first step of whole SROAs against 1 − (1 − q)^L (later steps: see the JSON; at
    these ε every run has lost a component before them)."""
    path = DATA / "rate" / "attractor-confirm.json"
    if not path.exists():
        return
    from sroa_dist.studies.start_escape import _wilson

    glob = {
        r["n"]: r
        for r in _json(DATA / "rate" / "attractor-thresholds.json")["rows"]
        if r["solver"].startswith("global (sshopm")
    }
    print(
        "| n | ε | L | q of the first step (1000 single starts) | 1 − (1 − q)^L | first step "
        "found a component, whole SROAs (95 % interval) | whole SROAs that found every "
        "component | global steps' first crossing at this n |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for row in _json(path)["rows"]:
        first = row["stages"][0]
        a, b = _wilson(first["passed"], first["reached"])
        g = glob.get(row["n"])
        cross = f"({g['lo']:.4f}, {g['hi']:.4f}]" if g else "—"
        print(
            f"| {row['n']} | {row['eps']:.3f} | {row['L']} | {first['q']:.3f} | "
            f"{first['predicted']:.3f} | {first['passed']} of {first['reached']}: "
            f"{first['passed'] / first['reached']:.3f} ({a:.3f}, {b:.3f}) | "
            f"{row['whole']} of {row['runs']} | {cross} |"
        )


def lambda_table() -> None:
    path = DATA / "rate" / "lambda-min.json"
    rows = _json(path)["rows"]
    print("| n | default (target 0.95) | target 0.5 | linear [0.5, 1] | linear / default |")
    print("|---|---|---|---|---|")
    for n in sorted({r["n"] for r in rows}):
        got = {r["weights"]: r for r in rows if r["n"] == n}
        cells = []
        for w in ("default (target 0.95)", "target 0.5", "linear [0.5, 1]"):
            r = got.get(w)
            cells.append(f"({r['lo']:.4f}, {r['hi']:.4f}]" if r else "—")
        ratio = "—"
        if "linear [0.5, 1]" in got and "default (target 0.95)" in got:
            a, b = got["linear [0.5, 1]"], got["default (target 0.95)"]
            ratio = f"{math.sqrt(a['lo'] * a['hi'] / (b['lo'] * b['hi'])):.3f}"
        print(f"| {n} | " + " | ".join(cells) + f" | {ratio} |")


def power_table() -> None:
    path = DATA / "rate" / "attractor-thresholds.json"
    if not path.exists():
        return
    rows = _json(path)["rows"]
    solvers = list(dict.fromkeys(r["solver"] for r in rows))
    sizes = sorted({r["n"] for r in rows})
    print("| solver | " + " | ".join(f"n = {n}" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for s in solvers:
        cells = []
        for n in sizes:
            r = next((r for r in rows if r["solver"] == s and r["n"] == n), None)
            cells.append("—" if r is None else f"({r['lo']:.4f}, {r['hi']:.4f}]")
        print(f"| {s} | " + " | ".join(cells) + " |")


def escape_table() -> None:
    rows = _json(DATA / "rate" / "attractor-escape.json")["rows"]
    print(
        "| n | AGHKT budget at ε = 0.5 (L, N) | least q over steps, N = 30, ε ≈ 0.5 / 0.69 | "
        "least q, AGHKT N, ε ≈ 0.5 / 0.69 | first ε with a step success < 1/2, L = 20 | AGHKT L |"
    )
    print("|---|---|---|---|---|---|")
    from rate_figures import aghkt, hardest_stage, success_edge
    from rate_figures import escape_table as table_of

    table = table_of()
    for n in sorted({r["n"] for r in rows}):
        out = []
        for budget in ("fixed", "aghkt"):
            e, q = hardest_stage(table, n, budget)
            pick = lambda x, e=e, q=q: q[np.argmin(np.abs(e - x))]  # noqa: E731
            out.append(f"{pick(0.5):.3f} / {pick(0.69):.3f}")
        print(
            f"| {n} | {aghkt(n, 0.5)} | {out[0]} | {out[1]} | "
            f"{success_edge(table, n, 'fixed'):.3f} | {success_edge(table, n, 'aghkt'):.3f} |"
        )


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    for title, table in [
        ("accumulation", accumulation_table),
        ("value criterion against the model", value_table),
        ("local slopes past the onset", slopes_table),
        ("onset", onset_table),
        ("p6", p6_table),
        ("theorem criterion", theorem_table),
        ("lambda_min", lambda_table),
        ("worst case", worst_case_table),
        ("attractor escape", escape_table),
        ("attractor thresholds", power_table),
        ("attractor confirmation", confirm_table),
    ]:
        print(f"\n### {title}\n")
        table()
