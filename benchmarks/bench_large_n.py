"""Large-n local engine: full SROA time and peak memory per instance, and the batched
contraction kernel's GFLOP/s next to a one-core matmul measured in the same run.

Cases (default): p = 3, n = 256 and p = 4, n = 64, full SROA (rank n) with ``sshopm`` at its
default options; the engine is chosen by ``deflation="auto"`` (implicit at these sizes).
Instances: T̂ = Σ_i e_i^{⊗p} + E, E Gaussian symmetrised (averaged over axis permutations) and
scaled so that its entries have standard deviation ``--noise / n^{(p-1)/2}``. Each instance is
built in one child process and saved to a temporary .npy file; a fresh child loads it and runs
SROA, so its peak RSS (``VmHWM``) is the solver's (plus the interpreter and the loaded
tensor), not instance generation's. Times are wall clock and CPU seconds of that child with
BLAS on one thread; on a shared machine CPU time is the fairer number and the load average is
recorded. Recovery (all components matched within 0.1) is checked so speed is not bought with
wrong answers.

Memory is reported three ways: peak RSS over the tensor's bytes (interpreter, numpy and scipy
included, about 0.1 GB), the same without the RSS reached after the imports, and the solver's
own growth beyond the loaded tensor.

Run:  python benchmarks/bench_large_n.py [--cases 3:256 4:64] [--instances 1]
Writes benchmarks/out/large_n.json.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common
import numpy as np

HERE = Path(__file__).resolve().parent

_MAKE = """
import itertools, math, sys
import numpy as np
n, p, seed = map(int, sys.argv[1:4])
noise, path = float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(seed)
G = rng.standard_normal((n,) * p)
T = np.zeros_like(G)
for perm in itertools.permutations(range(p)):
    T += G.transpose(perm)
del G
T *= noise / n ** ((p - 1) / 2) / math.sqrt(math.factorial(p))
idx = np.arange(n)
T[(idx,) * p] += 1.0
np.save(path, T)
"""

_SOLVE = """
import json, sys, time
import numpy as np
from sroa_dist import sroa

def hwm():
    # Peak RSS of this process image (VmHWM); ru_maxrss would include the parent's peak.
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

path, seed = sys.argv[1], int(sys.argv[2])
rss_imports = hwm()
with open(path, "rb") as f:  # read straight into the array: np.load may stage a copy
    np.lib.format.read_magic(f)
    shape, _, dtype = np.lib.format.read_array_header_1_0(f)
    T = np.empty(shape, dtype=dtype)
    f.readinto(memoryview(T).cast("B"))
n, p = T.shape[0], T.ndim
rss_loaded = hwm()
c0, t0 = time.process_time(), time.perf_counter()
res = sroa(T, method="sshopm", rng=seed)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = hwm()
V = np.abs(res.vectors)
order = np.argmax(V, axis=0)
vec_err = np.sqrt(np.maximum(0.0, 2 - 2 * V.max(axis=0)))
print(json.dumps({
    "n": n, "p": p, "wall_s": wall, "cpu_s": cpu, "wall_per_step_s": wall / res.rank,
    "peak_rss_bytes": peak, "rss_after_imports_bytes": rss_imports,
    "rss_after_load_bytes": rss_loaded, "tensor_bytes": T.nbytes,
    "peak_rss_over_tensor": peak / T.nbytes,
    "solver_extra_over_tensor": (peak - rss_loaded) / T.nbytes,
    "peak_without_interpreter_over_tensor": (peak - rss_imports) / T.nbytes,
    "recovered_all": bool(sorted(order.tolist()) == list(range(n)) and vec_err.max() < 0.1),
    "max_vec_err": float(vec_err.max()),
    "mean_iterations_per_step": float(np.mean([s.n_iter for s in res.steps])),
    "engine": res.steps[0].message,
}))
"""


def _run(code: str, *args: object) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return out.stdout


def kernel_rows(repeat: int = 7) -> dict:
    """GFLOP/s of the large-n engine's ``T x^{p-1}`` for S starts at once (``engine``: the
    implicitly deflated contraction with n/2 deflation terms; ``contract``: the plain
    trailing-axes GEMM of the small-n path) vs a one-core matmul.

    CPU seconds (``process_time``), best of ``repeat``, with the kernel and its matmul peer
    interleaved, so that a shared machine slows both alike instead of skewing the ratio.
    """
    from sroa_dist.methods import Deflation, deflated_contract
    from sroa_dist.tensors import contract

    def cpu(fn):
        c0 = time.process_time()
        fn()
        return time.process_time() - c0

    rng = np.random.default_rng(0)
    m = 1024
    A, B = rng.standard_normal((m, m)), rng.standard_normal((m, m))
    rows: dict = {}
    for n, p, S in [
        (64, 3, 32),
        (64, 3, 64),
        (128, 3, 64),
        (256, 3, 32),
        (256, 3, 64),
        (64, 4, 64),
    ]:
        T = rng.standard_normal((1,) + (n,) * p)
        X = rng.standard_normal((1, S, n))
        U = np.linalg.qr(rng.standard_normal((n, n // 2)))[0][None]
        d = Deflation(U, np.ones((1, n // 2)), np.ones(1))
        t_mm, t_e, t_c = [], [], []
        for _ in range(repeat):
            t_mm.append(cpu(lambda: A @ B))
            t_e.append(cpu(lambda T=T, X=X, p=p, d=d: deflated_contract(T, X, p - 1, d)))
            t_c.append(cpu(lambda T=T, X=X, p=p: contract(T, X, p - 1)))
        peak = 2 * m**3 / min(t_mm) / 1e9
        g, c = (2 * S * n**p / min(t) / 1e9 for t in (t_e, t_c))
        rows[f"n{n}_p{p}_S{S}"] = {
            "gflops": g,
            "contract_gflops": c,
            "matmul_gflops": peak,
            "ratio": g / peak,
        }
        print(
            f"n={n} p={p} S={S}: engine {g:.1f} GFLOP/s ({g / peak:.0%} of matmul "
            f"{peak:.1f}), plain contract {c:.1f} ({c / peak:.0%})"
        )
    return rows


def main() -> None:
    ap = _common.parser(__doc__, "large_n")
    ap.add_argument("--cases", nargs="+", default=["3:256", "4:64"], help="p:n pairs")
    ap.add_argument("--instances", type=int, default=1)
    ap.add_argument("--noise", type=float, default=0.3)
    ap.add_argument("--no-kernel", action="store_true")
    args = ap.parse_args()
    payload: dict = {"load_average_start": os.getloadavg(), "noise": args.noise}
    if not args.no_kernel:
        payload["kernel"] = kernel_rows()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, seed in itertools.product(args.cases, range(args.instances)):
            p, n = map(int, case.split(":"))
            path = Path(tmp) / f"T_{p}_{n}_{seed}.npy"
            t0 = time.perf_counter()
            _run(_MAKE, n, p, seed, args.noise, path)
            made = time.perf_counter() - t0
            row = json.loads(_run(_SOLVE, path, seed))
            row.update(seed=seed, make_s=made, load_average=os.getloadavg())
            path.unlink()
            runs.append(row)
            print(
                f"p={p} n={n} seed={seed}: {row['wall_s']:.1f} s wall ({row['cpu_s']:.1f} s CPU, "
                f"{row['wall_per_step_s']:.3f} s/step), peak RSS "
                f"{row['peak_rss_bytes'] / 1e9:.2f} GB = {row['peak_rss_over_tensor']:.2f}x "
                f"the tensor, recovered {row['recovered_all']}",
                flush=True,
            )
            payload["runs"] = runs
            _common.write(args.out, payload)
    payload["load_average_end"] = os.getloadavg()
    print(_common.write(args.out, payload))
    assert math.isfinite(sum(r["wall_s"] for r in runs))


if __name__ == "__main__":
    main()
