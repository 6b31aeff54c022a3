"""Streamed symmetric noise vs the former n^p index-table path: peak memory and time.

Usage: ``python benchmarks/bench_noise.py [--n 128 256] [--p 3]``; writes
``benchmarks/out/bench_noise.json``. Peaks are tracemalloc peaks (numpy allocations) relative to
the output tensor's size; times are one run each, as a ratio to the former path in the same run.
"""

from __future__ import annotations

import functools
import sys
import tracemalloc

import _common
import numpy as np

from sroa_dist.problems import noise


def _former(n: int, p: int, seed: int) -> np.ndarray:
    noise.multiset_index.cache_clear()
    ids, count = noise.multiset_index(n, p)
    values = noise.NOISE_MODELS["gaussian"](np.random.default_rng(seed), count, 1.0)
    out = values[ids]
    noise.multiset_index.cache_clear()
    return out


def _measure(fn, *args):
    tracemalloc.start()
    out, sec = _common.timed(fn, *args)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, sec, peak


def main(argv=None) -> int:
    ap = _common.parser(__doc__, "bench_noise")
    ap.add_argument("--n", type=int, nargs="+", default=[128, 256])
    ap.add_argument("--p", type=int, default=3)
    args = ap.parse_args(argv)
    rows = []
    for n in args.n:
        new, t_new, peak_new = _measure(
            functools.partial(noise.noise_tensor, rng=0), "gaussian", n, args.p, 1.0
        )
        old, t_old, peak_old = _measure(_former, n, args.p, 0)
        same = bool(np.array_equal(new.view(np.int64), old.view(np.int64)))
        row = {
            "n": n,
            "p": args.p,
            "tensor_mb": new.nbytes / 2**20,
            "peak_streamed_x_tensor": peak_new / new.nbytes,
            "peak_former_x_tensor": peak_old / new.nbytes,
            "time_streamed_s": t_new,
            "time_former_s": t_old,
            "time_ratio_streamed_over_former": t_new / t_old,
            "bit_identical": same,
        }
        rows.append(row)
        print(row, flush=True)
        del new, old
    print(f"wrote {_common.write(args.out, {'rows': rows})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
