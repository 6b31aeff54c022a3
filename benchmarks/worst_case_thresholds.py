"""The worst case against n: the first ε, on a grid, at which the gradient adversary breaks
Theorem 3.1's value bound |λ̂ − λ| ≤ 2ε (p = 3 or 4), beside the coherent tilt at the same ε.

For each n and each ε of the grid (ascending), :func:`sroa_dist.worst_case` (``method=
"gradient"``, metric ``"lam"`` = max_j |λ̂_j − λ_j|/ε, weights 1 except 0.95, SS-HOPM steps and
norm estimates, ``budget`` SROA evaluations) searches the sphere ‖E‖ = ε from the coherent tilt,
the uniform shrink and Gaussian starts; the first grid ε whose worst case exceeds 2 closes the
bracket. The steps are local (SS-HOPM), so a found value is a lower bound on the worst case of
global SROA only up to the steps' own globality (re-checked by the search with more starts).

With ``--steps certified`` every SROA of the search takes certified global steps (moment
relaxation with a checkable certificate; n ≤ 16 here), and the found ``E`` is re-evaluated by a
certified SROA whose certificates are recorded: a crossing found so is one of global SROA, not a
bound up to local steps.

Usage: ``python benchmarks/worst_case_thresholds.py --out docs/data/rate [--p 4] [--steps
certified]`` (writes ``worst-case[-p4][-certified].json``)
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import sroa_dist as sd

MASTER_SEED = 20261127
SIZES = {3: (8, 12, 16, 24, 32, 48, 64), 4: (8, 12, 16, 24)}
#: Sizes with certified steps.
CERTIFIED_SIZES = (8, 12)
#: The next size of a study, started and stopped for its cost (recorded in the JSON's setup).
NOT_RUN = {
    (4, "sshopm"): "n = 32: grid points took 77-132 s with three studies sharing the 2 cores "
    "(about 45 min for the grid); stopped after 3 points, rows dropped",
    (3, "certified"): "n = 16: its first grid point took 661 s with five studies sharing the "
    "2 cores; stopped, row dropped",
}
#: ×1.1 from 0.1: the first grid point past the bound closes a bracket of that width. The
#: seed of a point follows its index, so a longer grid leaves the earlier rows unchanged.
GRID = tuple(round(0.1 * 1.1**k, 4) for k in range(30))
BOUND = 2.0


def _search(n: int, p: int, k: int, steps: str, budget: int) -> sd.WorstCaseResult:
    """The gradient search at the k-th grid ε (its seed follows (n, k), and p when p ≠ 3)."""
    return sd.worst_case(
        n,
        p,
        GRID[k],
        metric="lam",
        budget=budget,
        method="gradient",
        lambdas=np.r_[np.ones(n - 1), 0.95],
        step_method=steps,
        norm_method="sshopm",
        rng=np.random.SeedSequence([MASTER_SEED, n, k] if p == 3 else [MASTER_SEED, p, n, k]),
    )


def recheck(path: Path, p: int, budget: int) -> None:
    """Certified search: the E found at each size's crossing, evaluated again by SS-HOPM with
    every step checked and redone on the global branch (two independent routes to a global
    SROA must give the same weights)."""
    data = json.loads(path.read_text())
    for n in sorted({r["n"] for r in data["rows"]}):
        past = sorted(
            (r for r in data["rows"] if r["n"] == n and r["worst"] > BOUND), key=lambda r: r["eps"]
        )
        if not past or "worst_checked" in past[0]:
            continue
        row = past[0]
        res = _search(n, p, GRID.index(row["eps"]), "certified", budget)
        T = sd.sod_tensor(res.lambdas, res.V, p)
        cert = sd.sroa(T + res.E, method="certified", rng=7)
        checked = sd.sroa(T + res.E, method="sshopm", global_check=True, redo=True, rng=7)
        m = sd.match(checked, res.lambdas, res.V)
        row["worst_checked"] = float(np.max(m.lam_err) / row["eps"])
        gap = np.abs(np.sort(cert.lambdas) - np.sort(checked.lambdas))
        row["weights_differ_by"] = float(np.max(gap))
        path.write_text(json.dumps(data, indent=1, default=float))
        print(
            f"recheck n={n} eps={row['eps']}: certified {row['worst']:.4f}, checked "
            f"{row['worst_checked']:.4f}, weights differ by {row['weights_differ_by']:.1e}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/data/rate"))
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--p", type=int, choices=(3, 4), default=3)
    ap.add_argument("--steps", choices=("sshopm", "certified"), default="sshopm")
    ap.add_argument(
        "--recheck",
        action="store_true",
        help="certified: evaluate each crossing's E again with global-checked SS-HOPM steps",
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    p, steps = args.p, args.steps
    name = "worst-case" + ("" if p == 3 else f"-p{p}") + ("" if steps == "sshopm" else "-certified")
    path = args.out / f"{name}.json"
    if args.recheck:
        recheck(path, p, args.budget)
        return
    data = json.loads(path.read_text()) if path.exists() else {"rows": []}
    data["setup"] = {
        "p": p,
        "metric": "lam (max |lam_hat - lam| / eps)",
        "bound": BOUND,
        "grid": list(GRID),
        "budget": args.budget,
        "method": "gradient",
        "steps": steps,
        "re-evaluation": "sroa(T + E) with "
        + ("certified steps" if steps == "certified" else "sshopm, global_check, redo"),
        "lambdas": "1, ..., 1, 0.95",
        "seed": f"[{MASTER_SEED}, n, k]" if p == 3 else f"[{MASTER_SEED}, {p}, n, k]",
    }
    if (p, steps) in NOT_RUN:
        data["setup"]["not_run"] = NOT_RUN[(p, steps)]
    for n in SIZES[p] if steps == "sshopm" else CERTIFIED_SIZES:
        rows = [r for r in data["rows"] if r["n"] == n]
        if any(r["worst"] > BOUND for r in rows):
            continue
        for k, eps in enumerate(GRID):
            if any(r["eps"] == eps for r in rows):
                continue
            t0 = time.perf_counter()
            res = _search(n, p, k, steps, args.budget)
            T = sd.sod_tensor(res.lambdas, res.V, p)
            if steps == "certified":
                again = sd.sroa(T + res.E, method="certified", rng=7)
            else:
                again = sd.sroa(T + res.E, method="sshopm", global_check=True, redo=True, rng=7)
            m = sd.match(again, res.lambdas, res.V)
            row = {
                "n": n,
                "eps": eps,
                "worst_search": float(res.value),
                "worst": float(np.max(m.lam_err) / eps),
                "tilt": float(res.start_values.get("coherent-tilt", float("nan"))),
                "shrink": float(res.start_values.get("sod-shrink", float("nan"))),
                "tilt_cosine": float(res.tilt_cosine),
                "n_evals": int(res.n_evals),
                "seconds": time.perf_counter() - t0,
            }
            if steps == "certified":
                row["all_certified"] = bool(np.all(again.certified))
                row["max_gap"] = float(np.max(again.gaps))
            data["rows"].append(row)
            path.write_text(json.dumps(data, indent=1, default=float))
            print(
                f"n={n} eps={eps}: worst {row['worst']:.3f} tilt {row['tilt']:.3f} "
                f"{row['seconds']:.0f} s",
                flush=True,
            )
            if row["worst"] > BOUND:
                break


if __name__ == "__main__":
    main()
