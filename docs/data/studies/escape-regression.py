"""Regression of the escape kind against the published JSON of benchmarks/power_vs_global.py.

Inputs: stores of a cheap slice of sweeps/studies/attractor-escape.toml (n = 16, 32, 64) and of
sweeps/studies/attractor-confirm.toml (fewer runs), made with ``sroa-dist run`` (commands in the
output's ``setup``). Writes docs/data/studies/escape-regression.json:

- ``escape_same_seeds``: the kind's numerics (escape_probability) with the script's own seeds
  ``SeedSequence([20261127, n, r, k])`` and its unrounded ε, for every published row at n = 16:
  how many q are the same bits;
- ``escape_kind``: the kind's q (its own seeds) beside the published q at every common row,
  with the two-proportion z score (independent starts: the seeds differ);
- ``confirm_kind``: the first step's success and whole-SROA success of the kind's runs beside
  the published counts.

Usage: ``python docs/data/studies/escape-regression.py ESCAPE_STORE CONFIRM_STORE``
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from sroa_dist.studies.start_escape import escape_probability, wilson_interval
from sroa_dist.sweep import open_results

ROOT = Path(__file__).resolve().parents[3]
OLD = ROOT / "docs" / "data" / "rate"
OUT = Path(__file__).with_name("escape-regression.json")
MASTER_SEED = 20261127
ESCAPE_EPS = [float(e) for e in np.geomspace(0.1, 1.2, 28)]


def _z(k1: int, m1: int, k2: int, m2: int) -> float:
    p = (k1 + k2) / (m1 + m2)
    se = math.sqrt(p * (1 - p) * (1 / m1 + 1 / m2))
    return 0.0 if se == 0 else (k1 / m1 - k2 / m2) / se


def same_seeds(rows: list[dict], n: int) -> dict:
    same, total = 0, 0
    for row in (r for r in rows if r["n"] == n):
        k = ESCAPE_EPS.index(row["eps"])
        res = escape_probability(
            n,
            row["eps"],
            remaining=row["r"],
            n_iter=row["n_iter"],
            rng=np.random.SeedSequence([MASTER_SEED, n, row["r"], k]),
        )
        total += 1
        same += np.float64(res.q).tobytes() == np.float64(row["q"]).tobytes()
    return {"n": n, "rows": total, "same_bits": same}


def escape_kind(rows: list[dict], store: str) -> dict:
    ds = open_results(store).load()
    old = {(r["n"], r["r"], round(r["eps"], 9), r["n_iter"]): r for r in rows}
    out = []
    for n in ds.n.values:
        for m in ds.method.values:
            for e in ds.eps.values:
                sel = ds.sel({"n": n, "method": m, "eps": e, "replicate": 0})
                N = int(sel.budget_iter)
                starts = int(sel.escape_starts)
                for j in np.flatnonzero(np.isfinite(sel.escape_hits.values)):
                    r = int(n) - int(j)
                    hits = int(sel.escape_hits.values[j])
                    ref = old.get((int(n), r, round(float(e), 9), N))
                    if ref is None:
                        continue
                    k_old = round(ref["q"] * ref["n_starts"])
                    out.append(
                        {
                            "n": int(n),
                            "r": r,
                            "eps": float(e),
                            "n_iter": N,
                            "q_kind": hits / starts,
                            "q_published": ref["q"],
                            "z": _z(hits, starts, k_old, ref["n_starts"]),
                        }
                    )
    z = np.array([abs(x["z"]) for x in out])
    dq = np.array([abs(x["q_kind"] - x["q_published"]) for x in out])
    return {
        "rows": len(out),
        "identical_q": int(np.sum(dq == 0)),
        "max_abs_dq": float(dq.max()),
        "mean_abs_dq": float(dq.mean()),
        "abs_z_over_1.96": int(np.sum(z > 1.96)),
        "abs_z_over_3": int(np.sum(z > 3)),
        "expected_over_1.96_if_same_q": round(0.05 * len(out), 1),
        "table": out,
    }


def confirm_kind(store: str) -> list[dict]:
    old = json.loads((OLD / "attractor-confirm.json").read_text())["rows"]
    ds = open_results(store).load()
    out = []
    for m in ds.method.values:
        sel = ds.sel({"method": m})
        L = int(sel.budget_starts.values[0])
        ref = next(r for r in old if r["n"] == int(ds.attrs["setting_n"]) and r["L"] == L)
        n = int(ds.attrs["setting_n"])
        starts = int(np.nansum(sel.escape_starts.values))
        hits = int(np.nansum(sel.escape_hits.values[:, 0]))
        first = sel.step_found.values[:, 0]
        k1, m1 = int(np.sum(first == 1)), int(np.sum(np.isfinite(first)))
        whole = sel.sroa_success.values
        first_old = ref["stages"][0]
        out.append(
            {
                "n": n,
                "eps": float(ds.attrs.get("setting_eps", np.nan)),
                "L": L,
                "q_kind": [hits, starts],
                "q_published": [round(first_old["q"] * 1000), 1000],
                "first_step_kind": [k1, m1, list(wilson_interval(k1, m1))],
                "first_step_published": [first_old["passed"], first_old["reached"]],
                "first_step_z": _z(k1, m1, first_old["passed"], first_old["reached"]),
                "predicted_first_kind": 1 - (1 - hits / starts) ** L,
                "predicted_first_published": first_old["predicted"],
                "whole_kind": [int(np.sum(whole == 1)), int(np.sum(np.isfinite(whole)))],
                "whole_published": [ref["whole"], ref["runs"]],
            }
        )
    return out


def main() -> None:
    escape_store, confirm_store = sys.argv[1:3]
    rows = json.loads((OLD / "attractor-escape.json").read_text())["rows"]
    data = {
        "setup": {
            "escape_store": "sroa-dist run sweeps/studies/attractor-escape.toml "
            "--set 'tensor.n=[16, 32, 64]' --workers 2",
            "confirm_store": "sroa-dist run sweeps/studies/attractor-confirm.toml "
            "--set replicates=50 --set escape.starts=20 --workers 2",
            "seeds": "the kind seeds SeedSequence(20261127, spawn_key=(h(noise), h(n), h(p), "
            "h(eps), replicate, part, ...)); the script seeded SeedSequence([20261127, n, r, k]) "
            "(escape) and SeedSequence([20261127, n, k, L, m]) (confirm): different starts, so "
            "the kind's q are compared as independent estimates (z scores), and the script's "
            "own seeds are run through the kind's numerics for the bit check",
            "eps": "the kind's eps are the grid's values rounded to 12 significant digits",
        },
        "escape_same_seeds": same_seeds(rows, 16),
        "escape_kind": escape_kind(rows, escape_store),
        "confirm_kind": confirm_kind(confirm_store),
    }
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    e = data["escape_kind"]
    print(json.dumps(data["escape_same_seeds"]))
    print({k: v for k, v in e.items() if k != "table"})
    for row in data["confirm_kind"]:
        print(row)


if __name__ == "__main__":
    main()
