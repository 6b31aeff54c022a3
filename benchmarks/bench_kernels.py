"""Kernel efficiency: GFLOP/s of the batched contraction T x^{p-1} (the inner loop of every power
method here) next to this machine's large-matmul GFLOP/s, both on one core.

Small n batch many tensors into one call (sweep blocks); large n batch many starts (the
multi-start GEMM of the large-n engine). CPU seconds, best of several runs, kernel and matmul
interleaved so that a shared machine slows both alike.
"""

from __future__ import annotations

import time

import _common  # (first: pins BLAS threads before numpy loads)
import numpy as np

from sroa_dist.tensors import contract


def cpu_best(fn, repeat=5):
    out = []
    for _ in range(repeat):
        c0 = time.process_time()
        fn()
        out.append(time.process_time() - c0)
    return min(out)


def main() -> None:
    args = _common.parser(__doc__, "kernels").parse_args()
    rng = np.random.default_rng(0)
    m = 1024
    A, B = rng.standard_normal((m, m)), rng.standard_normal((m, m))
    rows = {}
    cases = [(10, 3, 16, 250), (10, 4, 16, 100), (20, 3, 16, 100), (64, 3, 64, 1), (256, 3, 64, 1)]
    for n, p, S, Bsz in cases:
        Ts = rng.standard_normal((Bsz,) + (n,) * p)
        X = rng.standard_normal((Bsz, S, n))
        flops = 2 * Bsz * S * n**p  # one multiply-add per tensor entry and vector
        peak = 2 * m**3 / cpu_best(lambda: A @ B) / 1e9
        g = flops / cpu_best(lambda Ts=Ts, X=X, p=p: contract(Ts, X, p - 1)) / 1e9
        rows[f"contract_n{n}_p{p}_S{S}_B{Bsz}_gflops"] = g
        rows[f"matmul_gflops_next_to_n{n}_p{p}_S{S}_B{Bsz}"] = peak
        print(
            f"contract T x^(p-1), n={n} p={p} {S} vectors x {Bsz} tensors: {g:.1f} GFLOP/s "
            f"({100 * g / peak:.0f}% of matmul n={m}, {peak:.1f} GFLOP/s)"
        )
    print(_common.write(args.out, rows))


if __name__ == "__main__":
    main()
