"""find_threshold against an independent dense ε-scan on coherent-tilt instances.

Usage: ``python benchmarks/threshold_reference.py [--configs 3:8 3:16 ... ] [--c 0.5]``

For each (p, n) one instance: a random orthonormal basis drawn here (QR of a Gaussian matrix),
weights 1 except 0.95 for the last component, and the coherent tilt built here from its
formula, ``E x^p = (Σ_{j≠l} (v_j·x)^{p-1}) (v_l·x) / c_p`` with ``c_p = ((p-1)/p)^{(p-1)/2}
p^{-1/2}`` (so ``‖E‖ = 1``) and ``l`` the last component. The reference scans ε on its own grid
(×1.1 from the start to the first failure, then 1 % steps between the last coarse pass and
that failure), runs ``sroa_dist.sroa`` (SS-HOPM, the solver-start seed being child 1 of the
instance seed, as find_threshold documents), matches components itself and takes the value
criterion ``max_j |λ̂_j − λ_j| ≤ c·ε``. Its threshold is the first failing point of the 1 %
grid. find_threshold gets the same basis (``V=``) and seed. Both are upper ends of brackets of
relative width about 1 %, so the "Done when" target is |relative difference| ≤ 3 %.

Prints one line per configuration as it finishes and writes
``benchmarks/out/threshold_reference.json``.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math
import sys
import time

import _common
import numpy as np
from scipy.optimize import linear_sum_assignment

import sroa_dist

CONFIGS = ["3:8", "3:16", "3:32", "4:8", "4:16", "3:64", "4:32", "4:64"]


def outer(vectors) -> np.ndarray:
    """v_1 ⊗ v_2 ⊗ ... ⊗ v_p."""
    return functools.reduce(np.multiply.outer, vectors)


def tilt_tensor(V: np.ndarray, p: int) -> np.ndarray:
    """The coherent tilt toward the last column of V, from its polynomial, ‖E‖ = 1."""
    n, r = V.shape
    c_p = ((p - 1) / p) ** ((p - 1) / 2) / math.sqrt(p)
    vl = V[:, -1]
    E = np.zeros((n,) * p)
    for j in range(r - 1):
        for k in range(p):  # v_l in slot k, v_j in the others: the symmetrisation
            E += outer([vl if s == k else V[:, j] for s in range(p)])
    return E / (p * c_p)


def sod(lam: np.ndarray, V: np.ndarray, p: int) -> np.ndarray:
    """Σ_i λ_i v_i^{⊗p}."""
    return sum(lam[i] * outer([V[:, i]] * p) for i in range(V.shape[1]))


def value_ratio(res, lam: np.ndarray, V: np.ndarray, p: int, eps: float) -> float:
    """max_j |λ̂_j − λ_π(j)| / ε after an optimal matching of the vectors (own code)."""
    lh = np.asarray(res.lambdas, dtype=float).copy()
    Vh = np.asarray(res.vectors, dtype=float).copy()
    if p % 2 == 1:  # λ v^{⊗p} = (−λ)(−v)^{⊗p}: compare with λ̂ ≥ 0
        s = np.where(lh < 0, -1.0, 1.0)
        lh, Vh = lh * s, Vh * s
    d = np.linalg.norm(Vh[:, :, None] - V[:, None, :], axis=0)
    if p % 2 == 0:
        d = np.minimum(d, np.linalg.norm(Vh[:, :, None] + V[:, None, :], axis=0))
    rows, cols = linear_sum_assignment(d)
    return float(np.max(np.abs(lh[rows] - lam[cols])) / eps)


def reference(T, E, lam, V, p, c, solve_seed, start, stop):
    """First failing ε on a ×1.1 then 1 % grid; returns (eps, evaluations)."""
    n = V.shape[0]
    count = 0

    def passes(eps):
        nonlocal count
        count += 1
        ss = np.random.SeedSequence(solve_seed.entropy, spawn_key=solve_seed.spawn_key)
        res = sroa_dist.sroa(T + eps * E, rank=n, method="sshopm", rng=ss)
        return value_ratio(res, lam, V, p, eps) <= c

    last_pass, first_fail = 0.0, None
    for k in itertools.count():
        eps = start * 1.1**k
        if eps > stop:
            return math.inf, count
        if passes(eps):
            last_pass = eps
        else:
            first_fail = eps
            break
    if last_pass == 0.0:
        return first_fail, count
    k = 1
    while last_pass * 1.01**k < first_fail:
        if not passes(last_pass * 1.01**k):
            return last_pass * 1.01**k, count
        k += 1
    return first_fail, count


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="+", default=CONFIGS, help="p:n pairs")
    ap.add_argument("--c", type=float, default=0.5)
    ap.add_argument("--start", type=float, default=0.05)
    ap.add_argument("--stop", type=float, default=1.5)
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args(argv)
    rows = []
    print(f"value criterion c = {args.c}, eps from {args.start}, seed {args.seed}", flush=True)
    for cfg in args.configs:
        p, n = (int(x) for x in cfg.split(":"))
        seed = np.random.SeedSequence([args.seed, p, n])
        V, _ = np.linalg.qr(np.random.default_rng([args.seed, p, n, 7]).standard_normal((n, n)))
        lam = np.r_[np.ones(n - 1), 0.95]
        T, E = sod(lam, V, p), tilt_tensor(V, p)
        solve_seed = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key).spawn(3)[1]
        t0 = time.perf_counter()
        ref, ref_evals = reference(T, E, lam, V, p, args.c, solve_seed, args.start, args.stop)
        t1 = time.perf_counter()
        fr = sroa_dist.find_threshold(
            n, p, V=V, c=args.c, eps_range=(args.start, args.stop), rng=seed
        )
        t2 = time.perf_counter()
        rel = (fr.eps_star - ref) / ref
        row = {
            "p": p,
            "n": n,
            "reference_eps": ref,
            "find_threshold_eps": fr.eps_star,
            "bracket": list(fr.bracket),
            "relative_difference": rel,
            "non_monotone": fr.non_monotone,
            "reference_evals": ref_evals,
            "find_threshold_evals": fr.n_evals,
            "reference_seconds": t1 - t0,
            "find_threshold_seconds": t2 - t1,
        }
        rows.append(row)
        print(
            f"p={p} n={n:3d}: reference {ref:.4f} ({ref_evals} evals, {t1 - t0:.0f} s)  "
            f"find_threshold {fr.eps_star:.4f} [{fr.bracket[0]:.4f}, {fr.bracket[1]:.4f}] "
            f"({fr.n_evals} evals, {t2 - t1:.0f} s, non-monotone {fr.non_monotone})  "
            f"rel. diff {100 * rel:+.2f} %",
            flush=True,
        )
        _common.write("threshold_reference", {"c": args.c, "seed": args.seed, "rows": rows})
    worst = max(abs(r["relative_difference"]) for r in rows)
    print(f"largest |relative difference|: {100 * worst:.2f} % (target 3 %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
