"""Matrix-free SROA (sroa_dist.structured_tensor): full SROA (rank n) time and peak memory on
coherent-tilt instances at orders where the dense tensor cannot exist (p = 5, n = 200 would
be 2.6 TB; p = 6, n = 100 is 8 TB).

Instance: ``T = Σ_i λ_i v_i^{⊗p} + E``, V a random orthonormal basis (seeded), λ = 1 except
λ_n = 0.95 (the tilted component), E the coherent tilt at ``‖E‖ = eps``. Method ``sshopm`` at
the operator's defaults (below; both signs for even p). Each case runs in a fresh
child process with BLAS on one thread, so its peak RSS (``ru_maxrss``, interpreter and
imports included) is that case's alone. Targets (issue 17): <= 60 s and <= 1 GiB each.
Correctness is reported beside speed: the largest |λ̂ − λ| after matching components, the
tilted component's value error and step, and that no step claims a certificate.

The operator's default start policy is sshopm's implicit-deflation one (16 uniform starts per
step, the previous step's other local maxima as warm starts, lazy stopping) plus 4 spectral
starts per step. ``--policies`` reruns each case without the spectral starts and with 64
uniform starts without lazy stopping, and reports their CPU time, the step at which the tilted
component was deflated (n when every step was global) and the largest difference of their λ̂
from the default's.

Run:  python benchmarks/bench_structured.py [--cases 5:200 6:100] [--eps 0.2] [--policies]
Writes benchmarks/out/structured.json (``--out`` to change).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import _common
import numpy as np

HERE = Path(__file__).resolve().parent
TARGET_SECONDS, TARGET_BYTES = 60.0, 2**30

_CHILD = """
import json, resource, sys, time
import numpy as np
from sroa_dist import match, random_orthonormal_basis, sroa, structured_tensor
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # interpreter + imports
p, n, seed = map(int, sys.argv[1:4])
eps, options = float(sys.argv[4]), json.loads(sys.argv[5])
rng = np.random.default_rng(seed)
V = random_orthonormal_basis(n, n, rng=rng)
lam = np.ones(n)
lam[-1] = 0.95
t0, c0 = time.perf_counter(), time.process_time()
op = structured_tensor(p, lam, V=V, eps=eps)
res = sroa(op, method="sshopm", rng=rng, **options)
wall = time.perf_counter() - t0
cpu = time.process_time() - c0
# Before the check below: match's Hungarian cost builds (n, n, n) differences (64 MB at n = 200).
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
m = match(res, lam, V)
print(json.dumps({
    "p": p, "n": n, "eps": eps, "options": options, "wall_s": wall, "cpu_s": cpu,
    "lambdas": res.lambdas.tolist(),
    "peak_rss_bytes": peak,
    "rss_after_imports_bytes": base,
    "max_value_error": float(np.max(m.lam_err)),
    "tilted_value_error": float(m.lam_err[m.perm == n - 1][0]),
    "tilted_step": int(np.flatnonzero(m.perm == n - 1)[0]) + 1,
    "max_vector_error": float(np.max(m.vec_err)),
    "certified_steps": int(np.sum(res.certified)),
    "finite_bounds": int(np.sum(np.isfinite(res.upper_bounds))),
    "mean_starts_per_step": float(np.mean([np.mean(s.n_starts) for s in res.steps])),
    "mean_iters_per_step": float(np.mean([np.mean(s.n_iter) for s in res.steps])),
}))
"""


#: Costlier start policies to compare the default against (``--policies``).
POLICIES = [{"n_spectral": 0}, {"n_starts": 64, "lazy": False}]


def _run(p: int, n: int, seed: int, eps: float, options: dict) -> dict:
    """One full SROA in a fresh child process (its own peak RSS)."""
    cmd = [sys.executable, "-c", _CHILD, str(p), str(n), str(seed), str(eps), json.dumps(options)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = _common.parser(__doc__, "structured")
    ap.add_argument("--cases", nargs="+", default=["5:200", "6:100"], help="p:n pairs")
    ap.add_argument("--eps", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--policies", action="store_true", help="also run other start policies")
    args = ap.parse_args()
    rows = []
    for case in args.cases:
        p, n = (int(v) for v in case.split(":"))
        row = _run(p, n, args.seed, args.eps, {})
        row["meets_target"] = (
            row["wall_s"] <= TARGET_SECONDS and row["peak_rss_bytes"] <= TARGET_BYTES
        )
        print(
            f"p = {p}, n = {n}: {row['wall_s']:.1f} s wall ({row['cpu_s']:.1f} s CPU), "
            f"peak RSS {row['peak_rss_bytes'] / 2**20:.0f} MiB "
            f"({row['rss_after_imports_bytes'] / 2**20:.0f} after imports); max |λ̂−λ| "
            f"{row['max_value_error']:.3g} (tilted {row['tilted_value_error']:.3g} at step "
            f"{row['tilted_step']}), max "
            f"vector error {row['max_vector_error']:.3g}; {row['certified_steps']} certified; "
            f"{row['mean_starts_per_step']:.1f} starts, {row['mean_iters_per_step']:.1f} "
            f"iterations per step; target {'met' if row['meets_target'] else 'MISSED'}",
            flush=True,
        )
        if args.policies:
            row["policies"] = []
            for options in POLICIES:
                alt = _run(p, n, args.seed, args.eps, options)
                diff = float(np.max(np.abs(np.subtract(alt["lambdas"], row["lambdas"]))))
                alt.pop("lambdas")
                row["policies"].append({**alt, "max_diff": diff})
                print(
                    f"  p = {p}, n = {n}, sshopm {options}: {alt['cpu_s']:.1f} s CPU, tilted "
                    f"component deflated at step {alt['tilted_step']} (error "
                    f"{alt['tilted_value_error']:.3g}), max |λ̂ − λ̂_default| = {diff:.2g}",
                    flush=True,
                )
        rows.append(row)
    # A shared machine: CPU seconds are the fairer number; the load says how shared it was.
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} (1 min)")
    payload = {"eps": args.eps, "seed": args.seed, "load_average": load, "cases": rows}
    path = _common.write(args.out, payload)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
