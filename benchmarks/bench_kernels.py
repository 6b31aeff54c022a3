"""Kernel efficiency: GFLOP/s of the batched contraction T x^{p-1} (the inner loop of every power
method here) next to this machine's large-matmul GFLOP/s, both on one core."""

from __future__ import annotations

import _common  # noqa: F401  (pins BLAS threads before numpy loads)
import numpy as np

from sroa_dist.tensors import contract


def best_of(fn, repeat=5):
    return min(_common.timed(fn)[1] for _ in range(repeat))


def main() -> None:
    rng = np.random.default_rng(0)
    m = 1024
    A, B = rng.standard_normal((m, m)), rng.standard_normal((m, m))
    peak = 2 * m**3 / best_of(lambda: A @ B) / 1e9
    rows = {"matmul_gflops_n1024": peak}
    print(f"matmul n={m}: {peak:.1f} GFLOP/s (one core)")
    for n, p, S, Bsz in [(10, 3, 16, 250), (10, 4, 16, 100), (20, 3, 16, 100)]:
        Ts = rng.standard_normal((Bsz,) + (n,) * p)
        X = rng.standard_normal((Bsz, S, n))
        flops = 2 * Bsz * S * n**p  # one multiply-add per tensor entry and vector
        g = flops / best_of(lambda Ts=Ts, X=X, p=p: contract(Ts, X, p - 1)) / 1e9
        rows[f"contract_n{n}_p{p}_S{S}_B{Bsz}_gflops"] = g
        print(
            f"contract T x^(p-1), n={n} p={p} {S} vectors x {Bsz} tensors: {g:.1f} GFLOP/s "
            f"({100 * g / peak:.0f}% of matmul)"
        )
    print(_common.write("kernels", rows))


if __name__ == "__main__":
    main()
