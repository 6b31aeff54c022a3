"""Wall time of one threshold search on 1, 2 and 4 worker processes (issue 34: every study a
sweep, a cluster shortens one search), and that its bracket does not depend on them.

The search: ``find_threshold`` at p = 3 with the shipped threshold settings
(``sweeps/threshold-tilt-p3.toml``: coherent tilt toward the smallest component, value
criterion c = 0.5, ε in [0.02, 1.5], rtol = 1 %, SS-HOPM, the global check and redo, default
weights), one seed. Runs: the sequential search (``k_section = 1``) in this process, then
``k_section = K`` with its rounds mapped over a ``ProcessPoolExecutor`` of 1, 2 and 4
processes. The bracket and the whole trace must be the same on every pool (the script fails
otherwise); the load average is recorded before and after each run (the machine is shared).
``rounds`` is the search's critical path in SROA runs (replayed from its trace): the wall time
it needs on at least ``k_section`` free cores, whatever this machine's load.

Run:  python benchmarks/bench_threshold_workers.py [--n 128] [--k 4] [--workers 1 2 4]
Writes benchmarks/out/threshold_workers.json.
"""

from __future__ import annotations

import dataclasses
import os
import time
from concurrent.futures import ProcessPoolExecutor

import _common

from sroa_dist import find_threshold
from sroa_dist.studies.first_crossing import first_crossing


def search(n: int, k: int, pool, seed: int):
    return find_threshold(
        n,
        3,
        family="coherent-tilt",
        params={"component": "smallest"},
        criterion="value",
        c=0.5,
        eps_range=(0.02, 1.5),
        rtol=0.01,
        method="sshopm",
        rng=seed,
        k_section=k,
        executor=pool,
    )


def rounds(res) -> int:
    """Rounds the search made: its critical path in SROA runs, the wall time on at least
    ``k_section`` free workers. Replayed from the trace (each ε's recorded verdict), which is
    exact because a round's points are a pure function of the verdicts before it."""
    seen = {e.eps: e for e in res.trace}
    count = [0]

    def many(points):
        count[0] += 1
        return [seen[e] for e in points]

    replay = first_crossing(
        evaluate_many=many,
        eps_range=(0.02, 1.5),
        rtol=0.01,
        scan_phases=2,
        k_section=res.k_section,
    )
    assert replay.trace == res.trace
    return count[0]


def main() -> None:
    ap = _common.parser(__doc__, "threshold_workers")
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--k", type=int, default=4, help="k_section of the parallel runs")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rows = []
    runs = [(1, None), *((args.k, w) for w in args.workers)]
    reference = None
    for k, workers in runs:
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        if workers is None:
            res = search(args.n, k, None, args.seed)
        else:
            with ProcessPoolExecutor(workers) as pool:
                res = search(args.n, k, pool, args.seed)
        wall = time.perf_counter() - t0
        load1 = os.getloadavg()[0]
        bits = repr(dataclasses.astuple(res))
        if workers is not None:
            reference = reference or bits
            if bits != reference:
                raise SystemExit(f"k_section={k} on {workers} workers: another result")
        row = {
            "k_section": k,
            "workers": workers or 0,
            "wall_s": round(wall, 1),
            "n_evals": res.n_evals,
            "rounds": rounds(res),
            "bracket": list(res.bracket),
            "non_monotone": res.non_monotone,
            "load_before": load0,
            "load_after": load1,
        }
        rows.append(row)
        print(row, flush=True)
    _common.write(args.out, {"n": args.n, "p": 3, "seed": args.seed, "rows": rows})


if __name__ == "__main__":
    main()
