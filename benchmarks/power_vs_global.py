"""Power method against global steps on the attractor family (p = 3): does an O(1/n) show?

Anandkumar et al.'s analysis of the robust tensor power method asks ``ε = O(λ_min/n)`` with
``L = ⌈n ln(n/η)⌉`` starts; SROA with global steps (Theorem 3.1) tolerates
``ε = O(λ_min n^{-1/(p-1)})``. The coherent tilt cannot separate them (it fails through
deflation residuals, which every method shares). The attractor ``E x³ = ε‖x‖²(u·x)``,
``u = Σ v_i/√n``, can: its global maximum is always at a component, but it pulls uniform
starts toward ``u``.

Two parts, each written to ``--out`` as it finishes (JSON):

- ``attractor-escape.json``: the per-start escape probability ``q(n, ε, r)``
  (:func:`sroa_dist.studies.start_escape.escape_probability`, 1000 starts) at n = 16 … 1024, on the
  step with ``r`` components still to be found (r = n: the first step; r = 1: the last), with
  N = 30 iterations (the fixed budget's) and with the AGHKT N(n, ε). Any budget's success of
  one step follows as ``1 − (1 − q)^L``.
- ``attractor-thresholds.json``: first-crossing thresholds of whole SROAs
  (:func:`sroa_dist.find_threshold`, theorem criterion c = 0.5, radius 0.3, rtol 0.02) for
  the power method with L = 20 (N = 30) and with the AGHKT budget (noise level ε = 0.05, the
  scan's lower end: the largest N any evaluation gets), SS-HOPM with random starts only,
  SS-HOPM with its spectral starts, and the global reference (SS-HOPM checked and redone on
  the global branch, certified steps at n = 16); the sizes each can afford on 2 cores.

- ``attractor-confirm.json``: ``1 − (1 − q)^L`` checked by whole SROAs with the power method
  (L starts, N = 30, ``M`` runs, each its own starts: the family turns with the basis and the
  starts are uniform, so new starts are a new instance). At each escape stage ``r`` the runs
  whose earlier steps all found a new component are counted, and the fraction of them whose
  step ``n − r + 1`` found one too is set beside ``1 − (1 − q_r)^L``; the whole run's success
  beside the product over the measured stages (an upper bound when steps are independent:
  the other stages' factors are at most 1).

- ``attractor-capture.json``: where the power method's whole SROA at n = 256 lost a component
  that global steps found (the ε of its search's trace between the two first crossings): per
  run, the first step that found no new component, its overlap with ``u`` and its weight; the
  search's own instance and starts, then ``CAPTURE_RUNS`` runs with other starts.

Usage: ``python benchmarks/power_vs_global.py --out docs/data/rate [--part PART]`` (PART: escape,
thresholds, confirm, capture or all)
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import sroa_dist as sd
from sroa_dist.decomposition.algorithm import sroa_batch
from sroa_dist.methods.builtin import aghkt_budget
from sroa_dist.problems.instances import BASES, draw_lambdas
from sroa_dist.studies.start_escape import escape_probability, step_success

# find_threshold's own instance and seed draw, to rerun its search's SROA (capture part)
from sroa_dist.studies.threshold import _copy, _seed, default_lambdas

MASTER_SEED = 20261127
ESCAPE_SIZES = [16, 32, 64, 128, 256, 512, 1024]
ESCAPE_EPS = [float(e) for e in np.geomspace(0.1, 1.2, 28)]
FIXED = {"n_starts": 20, "n_iter": 30}
#: (label, method, options, global check, largest n): the power method and the global
#: reference first within each size (the comparison the study is for), then the others.
SOLVERS = [
    ("power L=20", "power", {}, False, 256),
    ("global (sshopm checked)", "sshopm", {}, True, 256),
    ("power AGHKT", "power", {"budget": "aghkt", "noise_level": 0.05}, False, 64),
    ("sshopm random starts", "sshopm", {"n_spectral": 0}, False, 256),
    ("sshopm spectral starts", "sshopm", {}, False, 256),
    ("global (certified)", "certified", {}, False, 16),
]
THRESHOLD_SIZES = [16, 32, 64, 128, 256]
#: (n, index into ESCAPE_EPS, starts L, runs M): points where the first step's q is between
#: 0.1 and 0.3, so 1 − (1 − q)^L spans (0, 1) over the budgets. (n = 512 at ε = 0.478, L = 5,
#: 100 runs would take about an hour here: not run.)
CONFIRM = [
    (128, 22, 1, 200),
    (128, 22, 4, 200),
    (256, 20, 5, 200),
    (256, 20, 20, 200),
]
SEARCH = {"criterion": "theorem", "c": 0.5, "radius": 0.3, "eps_range": (0.05, 1.5), "rtol": 0.02}


def _stages(n: int) -> list[int]:
    return sorted({n, max(1, n // 8), min(4, n), 1}, reverse=True)


def escape(out: Path, sizes: list[int] | None = None, min_eps: float = 0.0) -> None:
    path = out / "attractor-escape.json"
    data = json.loads(path.read_text()) if path.exists() else {"rows": []}
    seen = {(r["n"], r["r"], r["eps"], r["n_iter"]) for r in data["rows"]}
    data["setup"] = {
        "p": 3,
        "family": "attractor",
        "n_starts": 1000,
        "radius": 0.3,
        "fixed_n_iter": FIXED["n_iter"],
        "aghkt": "L = ceil(n ln(n/0.05)), N = ceil(3 (ln n + ln max(1, ln 1/eps)))",
        "seed": f"SeedSequence([{MASTER_SEED}, n, r, k]) for the k-th eps of the grid",
    }
    for n in sizes or ESCAPE_SIZES:
        t0 = time.perf_counter()
        for r in _stages(n):
            for k, eps in enumerate(ESCAPE_EPS):
                if eps < min_eps:  # seeds follow k, so a partial grid gives the same rows
                    continue
                for iters in sorted({FIXED["n_iter"], aghkt_budget(n, eps)[1]}):
                    if (n, r, eps, iters) in seen:
                        continue
                    res = escape_probability(
                        n,
                        eps,
                        remaining=r,
                        n_iter=iters,
                        rng=np.random.SeedSequence([MASTER_SEED, n, r, k]),
                    )
                    data["rows"].append(
                        {
                            "n": n,
                            "r": r,
                            "eps": eps,
                            "n_iter": iters,
                            "q": res.q,
                            "interval": list(res.interval),
                            "n_starts": res.n_starts,
                        }
                    )
        path.write_text(json.dumps(data, indent=1))
        print(f"escape n={n}: {time.perf_counter() - t0:.0f} s", flush=True)


def _step_successes(vectors: np.ndarray, radius: float = 0.3) -> np.ndarray:
    """Per step: did it end within ``radius`` of a component not found before? ``vectors``
    holds the steps' vectors (columns) in the components' coordinates."""
    found: set[int] = set()
    ok = np.zeros(vectors.shape[1], dtype=bool)
    for j in range(vectors.shape[1]):
        i = int(np.argmax(vectors[:, j]))
        if i not in found and vectors[i, j] >= 1 - radius**2 / 2:
            ok[j] = True
            found.add(i)
    return ok


def confirm(out: Path) -> None:
    escape_rows = json.loads((out / "attractor-escape.json").read_text())["rows"]
    path = out / "attractor-confirm.json"
    data = json.loads(path.read_text()) if path.exists() else {"rows": []}
    seen = {(r["n"], r["eps"], r["L"]) for r in data["rows"]}
    data["setup"] = {
        "p": 3,
        "family": "attractor",
        "method": "power",
        "n_iter": FIXED["n_iter"],
        "radius": 0.3,
        "stage": "step n - r + 1 counted over runs whose earlier steps all found a new component",
        "seed": f"SeedSequence([{MASTER_SEED}, n, k, L, m]) for run m at the k-th eps",
    }
    for n, k, starts, runs in CONFIRM:
        eps = ESCAPE_EPS[k]
        if (n, eps, starts) in seen:
            continue
        t0 = time.perf_counter()
        T = sd.structured_tensor(3, np.ones(n), family="attractor", eps=eps)
        stages = _stages(n)
        q = {
            r: next(
                x["q"]
                for x in escape_rows
                if (x["n"], x["r"], x["eps"], x["n_iter"]) == (n, r, eps, FIXED["n_iter"])
            )
            for r in stages
        }
        reached = dict.fromkeys(stages, 0)
        passed = dict.fromkeys(stages, 0)
        whole = 0
        for m in range(runs):
            res = sd.sroa(
                T,
                method="power",
                n_starts=starts,
                n_iter=FIXED["n_iter"],
                rng=np.random.SeedSequence([MASTER_SEED, n, k, starts, m]),
            )
            ok = _step_successes(np.asarray(res.vectors))
            whole += bool(ok.all())
            for r in stages:
                j = n - r
                if ok[:j].all():
                    reached[r] += 1
                    passed[r] += bool(ok[j])
        data["rows"].append(
            {
                "n": n,
                "eps": eps,
                "L": starts,
                "runs": runs,
                "stages": [
                    {
                        "r": r,
                        "q": q[r],
                        "predicted": float(step_success(q[r], starts)),
                        "reached": reached[r],
                        "passed": passed[r],
                    }
                    for r in stages
                ],
                "whole": whole,
                "whole_bound": float(np.prod([step_success(q[r], starts) for r in stages])),
                "seconds": time.perf_counter() - t0,
            }
        )
        path.write_text(json.dumps(data, indent=1, default=float))
        first = data["rows"][-1]["stages"][0]
        print(
            f"confirm n={n} eps={eps:.3f} L={starts}: first step {first['passed']}/"
            f"{first['reached']} vs {first['predicted']:.3f}; whole {whole}/{runs} "
            f"{time.perf_counter() - t0:.0f} s",
            flush=True,
        )


CAPTURE_N = 256
CAPTURE_RUNS = 20


def _first_lost(vectors: np.ndarray, basis: np.ndarray) -> int:
    """1-based index of the first step that found no new component (0: none)."""
    ok = _step_successes(basis.T @ vectors)
    return 0 if ok.all() else int(np.argmin(ok)) + 1


def capture(out: Path) -> None:
    rows = json.loads((out / "attractor-thresholds.json").read_text())["rows"]
    n = CAPTURE_N
    power = next(r for r in rows if r["solver"] == "power L=20" and r["n"] == n)
    glob = next(r for r in rows if r["solver"].startswith("global (sshopm") and r["n"] == n)
    between = sorted(t[0] for t in power["trace"] if power["hi"] <= t[0] <= glob["lo"])
    # the search's own instance and starts, drawn as find_threshold draws them
    inst_ss, solve_ss, _ = _seed(np.random.SeedSequence([MASTER_SEED, n])).spawn(3)
    gen = np.random.default_rng(_copy(inst_ss))
    basis = BASES["random"](n, n, rng=gen)
    lam = draw_lambdas(default_lambdas(n), n, rng=gen)
    u = basis.sum(axis=1) / np.sqrt(n)
    data = {
        "setup": {
            "n": n,
            "method": "power",
            **FIXED,
            "runs": "the search's own starts (seed 'search'), then seeds 0..CAPTURE_RUNS-1",
            "radius": 0.3,
        },
        "rows": [],
    }
    for eps in between:
        T = sd.structured_tensor(3, lam, V=basis, family="attractor", eps=eps)
        seeds = [("search", [_copy(solve_ss)])] + [(k, k) for k in range(CAPTURE_RUNS)]
        for label, rng in seeds:
            if label == "search":
                res = sroa_batch(T.as_batch(), rank=n, method="power", rng=rng, **FIXED)[0]
            else:
                res = sd.sroa(T, method="power", rng=rng, **FIXED)
            V = np.asarray(res.vectors)
            lost = _first_lost(V, basis)
            row = {"eps": eps, "seed": label, "first_lost_step": lost}
            if lost:
                row["u_overlap"] = float(V[:, lost - 1] @ u)
                row["weight"] = float(res.lambdas[lost - 1])
            data["rows"].append(row)
            print(row, flush=True)
        (out / "attractor-capture.json").write_text(json.dumps(data, indent=1))


def thresholds(out: Path, max_n: int | None = None) -> None:
    path = out / "attractor-thresholds.json"
    data = json.loads(path.read_text()) if path.exists() else {"rows": []}
    seen = {(r["solver"], r["n"]) for r in data["rows"]}
    data["setup"] = {"p": 3, "family": "attractor", **SEARCH, "seed": f"[{MASTER_SEED}, n]"}
    for n in THRESHOLD_SIZES:
        if max_n is not None and n > max_n:
            break
        for label, method, options, check, largest in SOLVERS:
            if n > largest or (label, n) in seen:
                continue
            t0 = time.perf_counter()
            res = sd.find_threshold(
                n,
                3,
                family="attractor",
                method=method,
                options=options,
                rng=np.random.SeedSequence([MASTER_SEED, n]),
                global_check=check,
                redo=check,
                matrix_free=False if method == "certified" else n >= 64,
                **SEARCH,
            )
            row = {
                "solver": label,
                "method": method,
                "options": options,
                "global_check": check,
                "n": n,
                "eps_star": res.eps_star,
                "lo": res.bracket[0],
                "hi": res.bracket[1],
                "reached": res.reached,
                "n_evals": res.n_evals,
                "non_monotone": res.non_monotone,
                "artefacts": res.artefacts,
                "seconds": time.perf_counter() - t0,
                "trace": [
                    [e.eps, e.metric, e.passed, e.global_gap, e.lam_err, e.vec_err]
                    for e in res.trace
                ],
            }
            if method == "power" and options.get("budget") == "aghkt":
                row["aghkt_budget"] = list(aghkt_budget(n, 0.05))
            data["rows"].append(row)
            path.write_text(json.dumps(data, indent=1, default=float))
            print(
                f"{label:26s} n={n:4d} eps*={res.eps_star:.4f} ({res.bracket[0]:.4f}, "
                f"{res.bracket[1]:.4f}] {row['seconds']:.0f} s",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/data/rate"))
    ap.add_argument(
        "--part", choices=["escape", "thresholds", "confirm", "capture", "all"], default="all"
    )
    ap.add_argument("--max-n", type=int, help="thresholds only up to this n")
    ap.add_argument("--ns", type=int, nargs="*", help="escape: only these sizes")
    ap.add_argument("--min-eps", type=float, default=0.0, help="escape: only eps >= this")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.part in ("escape", "all"):
        escape(args.out, args.ns, args.min_eps)
    if args.part in ("thresholds", "all"):
        thresholds(args.out, args.max_n)
    if args.part in ("confirm", "all"):
        confirm(args.out)
    if args.part in ("capture", "all"):
        capture(args.out)


if __name__ == "__main__":
    main()
