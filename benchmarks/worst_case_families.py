"""Worst cases with exact norms at any n: the coherent tilt and the tilt-shrink family
``E(θ) = ε (cos θ E_tilt − sin θ v_l^{⊗p}) / N_p(θ)`` (``‖E‖ = ε`` in closed form,
:func:`sroa_dist.tilt_shrink_norm`), searched for the smallest normalised crossing
``x = ε·(n − 1)^{1/(p−1)}`` at which SROA with global steps breaks Theorem 3.1's value bound,
``max_j |λ̂_j − λ_j| > 2‖E‖``.

Every SROA takes global steps (:func:`sroa_dist.studies.worst_case_form.sroa_checked`: certified
where the relaxation is tractable, else SS-HOPM steps each checked for globality and redone on
the global branch). Weights 1 except 0.95 for the target (deflated last), basis the identity.
A crossing found is saved as a claim (``docs/data/rate/worst-case-claims/*.npz``, ``E`` stored by
its form: ``θ``, the target and ``ε``, a few bytes at any n) that ``sroa-dist recheck FILE``
re-checks from the file alone (norm recomputed from the closed form, SROA rerun).

Parts:

- ``tilt``: the coherent tilt (``θ = 0``) at p = 3, n = 128, ε = 0.1778876 (the upper end of the
  published theorem bracket, ``docs/data/rate/theorem/theorem-p3-c2.json``), saved as a claim.
- ``scan``: for each n and each θ of a grid, x ascending on a ×1.05 grid from ``--x0`` until
  the first break; the rows (every evaluation) go to ``worst-case-families.json`` as they are
  measured; the smallest breaking x over θ per n is saved as a claim.

Usage: ``python benchmarks/worst_case_families.py --part tilt|scan [--p 3] [--n 32 64]
[--theta 0.2 0.4 ...] [--x0 0.7]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

import numpy as np

import sroa_dist as sd
from sroa_dist.studies.worst_case_family import evaluate_form
from sroa_dist.studies.worst_case_form import ExactForm

OUT = Path("docs/data/rate")
CLAIMS = OUT / "worst-case-claims"
BOUND = 2.0
TILT_EPS = 0.1778876112718566  # hi of the published p = 3, c = 2, n = 128 tilt bracket


def _instance(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.r_[np.ones(n - 1), 0.95], sd.identity_basis(n)


def _evaluate(n: int, p: int, eps: float, theta: float) -> tuple[sd.WorstCaseResult, dict]:
    lam, V = _instance(n)
    form = ExactForm("tilt-shrink", eps, {"theta": float(theta), "component": n - 1})
    t0 = time.process_time()
    res, steps, all_global = evaluate_form(form, lam, V, p, seed=None)
    row = {
        "p": p,
        "n": n,
        "theta": float(theta),
        "eps": float(eps),
        "x": float(eps * (n - 1) ** (1 / (p - 1))),
        "error_over_eps": float(np.max(res.lam_err) / eps),
        "ratio": float(res.ratio),
        "ratio_kind": res.ratio_kind,
        "broken": bool(res.ratio > BOUND and all_global),
        "steps": steps,
        "all_global": all_global,
        "target_vec_err": float(res.vec_err[-1]) if len(res.vec_err) else math.nan,
        "cpu_seconds": time.process_time() - t0,
        "load": os.getloadavg()[0],
    }
    return res, row


def _save_claim(res: sd.WorstCaseResult, name: str) -> Path:
    CLAIMS.mkdir(parents=True, exist_ok=True)
    path = CLAIMS / f"{name}.npz"
    if path.exists():
        print(f"{path} exists (kept)")
        return path
    return res.save(path, c=BOUND)


def part_tilt() -> None:
    res, row = _evaluate(128, 3, TILT_EPS, 0.0)
    print(json.dumps(row))
    if row["broken"]:
        print(_save_claim(res, "tilt-p3-n128"))


def part_scan(p: int, sizes: list[int], thetas: list[float], x0: float, x_max: float) -> None:
    path = OUT / f"worst-case-families{'' if p == 3 else f'-p{p}'}.json"
    data = json.loads(path.read_text()) if path.exists() else {"rows": []}
    data["setup"] = {
        "family": "tilt-shrink: eps (cos theta E_tilt - sin theta v_l^p) / N_p(theta), "
        "norm exact (closed form)",
        "p": p,
        "lambdas": "1, ..., 1, 0.95 (target last)",
        "basis": "identity",
        "steps": "certified where tractable, else sshopm with global_check and redo (seed 7)",
        "x grid": f"x = eps (n-1)^(1/(p-1)) from {x0}, x1.05, to {x_max}",
        "bound": "max_j |lam_hat_j - lam_j| > 2 * upper(||E||)",
    }
    results: dict[tuple[float, float], sd.WorstCaseResult] = {}
    for n in sizes:
        best = None
        for theta in thetas:
            done = [r for r in data["rows"] if r["n"] == n and r["theta"] == theta]
            k = 0
            while True:
                x = round(x0 * 1.05**k, 6)
                if x > x_max:
                    break
                k += 1
                old = [r for r in done if r["x_grid"] == x]
                if old:
                    row = old[0]
                else:
                    eps = x / (n - 1) ** (1 / (p - 1))
                    res, row = _evaluate(n, p, eps, theta)
                    results[(theta, x)] = res
                    row["x_grid"] = x
                    data["rows"].append(row)
                    path.write_text(json.dumps(data, indent=1))
                    print(
                        f"n={n} theta={theta} x={x}: {row['error_over_eps']:.4f} "
                        f"({row['cpu_seconds']:.1f} cpu s)",
                        flush=True,
                    )
                if row["broken"]:
                    if best is None or row["x"] < best["x"]:
                        best = row
                    break
        if best is not None:
            res = results.get((best["theta"], best["x_grid"]))
            if res is None:  # measured by an earlier run: evaluate it again to store it
                res, row = _evaluate(n, p, best["eps"], best["theta"])
                assert row["broken"], row
            print(_save_claim(res, f"tilt-shrink-p{p}-n{n}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("tilt", "scan"), required=True)
    ap.add_argument("--p", type=int, default=3)
    ap.add_argument("--n", type=int, nargs="+", default=[32, 64])
    ap.add_argument("--theta", type=float, nargs="+", default=[0.3, 0.5, 0.7, 0.9])
    ap.add_argument("--x0", type=float, default=0.7)
    ap.add_argument("--x-max", type=float, default=2.2)
    args = ap.parse_args()
    if args.part == "tilt":
        part_tilt()
    else:
        part_scan(args.p, args.n, args.theta, args.x0, args.x_max)


if __name__ == "__main__":
    main()
