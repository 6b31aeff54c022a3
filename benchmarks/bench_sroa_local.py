"""Full SROA of the paper's Figure 2 workload (n = 10, p = 3, σ = 0.01) with `sshopm`, side by
side with TensorLy's symmetric_parafac_power_iteration, one core, in one run.

Usage: python benchmarks/bench_sroa_local.py [--instances 500] [--tensorly 10] [--repeats 3]
Reports the speed-up in wall seconds and in CPU seconds of this process (the fair measure on
a shared machine: both sides run single-threaded), from interleaved rounds with the fastest of
each side kept, and sshopm's earlier revisions (their legacy options) and the current one
without its spectral starts (``no_spectral``) measured in the same rounds.
"""

from __future__ import annotations

import time

import _common  # noqa: F401  (pins BLAS threads before numpy loads)
import numpy as np

import sroa_dist as sd


def make(count: int, offset: int = 0):
    models = ["binary", "uniform", "gaussian"]
    return [
        sd.make_instance(10, 3, noise=models[s % 3], sigma=0.01, rng=offset + s)
        for s in range(count)
    ]


def cpu_timed(fn, *args, **kwargs):
    """``(result, wall seconds, CPU seconds)``: on a shared machine the CPU seconds of this
    single-threaded process (one BLAS thread) are the fair measure of both sides."""
    c0 = time.process_time()
    out, wall = _common.timed(fn, *args, **kwargs)
    return out, wall, time.process_time() - c0


def errors(result, insts):
    m = sd.match(result, np.stack([i.lambdas for i in insts]), np.stack([i.V for i in insts]))
    return m.lam_err, m.vec_err


def run_ours(insts, Ts, batch: int, options: dict):
    """``(instances/s wall, CPU seconds, lam errors, vector errors, share of steps that ran a
    confirming start set)`` of sshopm SROA in blocks of ``batch``, like a sweep task."""
    total, cpu, results, confirming, steps = 0.0, 0.0, [], 0, 0
    for lo in range(0, len(insts), batch):
        res, dt, dc = cpu_timed(
            sd.sroa_batch,
            Ts[lo : lo + batch],
            method="sshopm",
            rng=list(range(lo, min(lo + batch, len(insts)))),
            **options,
        )
        total += dt
        cpu += dc
        results.append(errors(res, insts[lo : lo + batch]))
        # Steps that paid for a confirming start set: more starts used than the first set's.
        for step in res.steps:
            confirming += int(np.sum(step.n_starts > step.n_starts.min()))
            steps += len(step.n_starts)
    lam = np.concatenate([r[0] for r in results])
    vec = np.concatenate([r[1] for r in results])
    return len(insts) / total, cpu, lam, vec, confirming / max(steps, 1)


def run_tensorly(insts):
    """``(instances/s wall, CPU seconds, lam errors, vector errors)`` of TensorLy's symmetric
    power iteration (its starts drawn from the global RNG, seeded)."""
    from tensorly.decomposition import symmetric_parafac_power_iteration

    np.random.seed(0)  # noqa: NPY002  (TensorLy draws its starts from the global state)
    lam, vec, wall, cpu = [], [], 0.0, 0.0
    for inst in insts:
        (w, f), dt, dc = cpu_timed(
            symmetric_parafac_power_iteration, inst.T_hat, rank=10, n_repeat=20, n_iteration=30
        )
        wall += dt
        cpu += dc
        fake = sd.SROAResult(
            np.asarray(w), np.asarray(f), np.zeros(10, bool), np.zeros(10), np.zeros(10), 3, "tl"
        )
        m = sd.match(fake, inst.lambdas, inst.V)
        lam.append(m.lam_err)
        vec.append(m.vec_err)
    return len(insts) / wall, cpu, lam, vec


def main() -> None:
    ap = _common.parser(__doc__, "sroa_local")
    ap.add_argument("--instances", type=int, default=500)
    ap.add_argument("--tensorly", type=int, default=10, help="instances run through TensorLy")
    ap.add_argument("--batch", type=int, default=250)
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds; fastest kept")
    args = ap.parse_args()

    insts = make(args.instances)
    Ts = np.stack([i.T_hat for i in insts])
    record = sd.METHODS["sshopm"]
    # sshopm's earlier revisions, with the option values that reproduce them
    earlier = {f"revision{r}": record.options_at(r) for r in range(1, record.revision)}
    # The current revision without its spectral starts: what they cost on Figure 2.
    earlier["no_spectral"] = {"n_spectral": 0}
    runs = {"ours": {}, **earlier}
    best: dict[str, tuple] = {}
    # Interleaved repeats, the fastest of each side kept: on a shared machine a slow round
    # is other tenants' load, not the method's cost.
    for _ in range(args.repeats):
        for name in [*runs, "tensorly"]:
            if name == "tensorly":
                out = run_tensorly(insts[: args.tensorly])
            else:
                out = run_ours(insts, Ts, args.batch, runs[name])
            if name not in best or out[1] < best[name][1]:
                best[name] = out
    ours_rate, cpu, ours_lam, ours_vec, confirming = best["ours"]
    tl_rate, tl_cpu, tl_lam, tl_vec = best["tensorly"]
    k = args.tensorly
    # Per instance (same instances): ours is "worse" where its mean vector error exceeds
    # TensorLy's by more than rounding.
    ours_per = ours_vec[:k].reshape(k, -1).mean(axis=1)
    tl_per = np.array([np.mean(v) for v in tl_vec])
    worse = int(np.sum(ours_per > tl_per + 1e-9))
    row = {
        "instances": len(insts),
        "ours_instances_per_s": ours_rate,
        "tensorly_instances_per_s": tl_rate,
        "speedup": ours_rate / tl_rate,
        "speedup_cpu_seconds": (len(insts) / cpu) / (args.tensorly / tl_cpu),
        "ours_mean_vec_err": float(ours_vec.mean()),
        "ours_mean_vec_err_same_instances": float(ours_vec[:k].mean()),
        "tensorly_mean_vec_err": float(np.mean(tl_vec)),
        "ours_max_lam_err_same_instances": float(ours_lam[:k].max()),
        "tensorly_max_lam_err": float(np.max(tl_lam)),
        "instances_where_ours_is_worse": worse,
        "steps_with_a_confirming_set": confirming,
        "revision": int(record.revision),
    }
    for name in earlier:
        rate, rev_cpu, lam, vec, rev_confirming = best[name]
        row |= {
            f"{name}_instances_per_s": rate,
            f"speedup_{name}": rate / tl_rate,
            f"speedup_cpu_seconds_{name}": (len(insts) / rev_cpu) / (args.tensorly / tl_cpu),
            f"{name}_mean_vec_err": float(vec.mean()),
            f"{name}_steps_with_a_confirming_set": rev_confirming,
            f"max_abs_lam_err_change_vs_{name}": float(np.max(np.abs(ours_lam - lam))),
            f"ours_over_{name}": ours_rate / rate,
        }
    print(
        f"sshopm SROA:   {ours_rate:9.1f} instances/s"
        f"  (revision {record.revision}; mean vec err {row['ours_mean_vec_err']:.4g})"
    )
    print(
        f"TensorLy SROA: {tl_rate:9.2f} instances/s"
        f"  (mean vec err {row['tensorly_mean_vec_err']:.4g}"
        f", ours on the same {k}: {row['ours_mean_vec_err_same_instances']:.4g})"
    )
    print(
        f"per instance: ours worse on {worse} of {k}; confirming start sets on "
        f"{confirming:.1%} of steps"
    )
    for name in earlier:
        print(
            f"{name}:    {row[f'{name}_instances_per_s']:9.1f} instances/s"
            f"  (mean vec err {row[f'{name}_mean_vec_err']:.4g};"
            f" {row[f'speedup_{name}']:.0f}x wall, {row[f'speedup_cpu_seconds_{name}']:.0f}x CPU;"
            f" current/{name} {row[f'ours_over_{name}']:.2f};"
            f" max |lam| change {row[f'max_abs_lam_err_change_vs_{name}']:.2g})"
        )
    print(
        f"speed-up: {row['speedup']:.0f}x wall, {row['speedup_cpu_seconds']:.0f}x CPU seconds"
        f"   -> {_common.write(args.out, row)}"
    )


if __name__ == "__main__":
    main()
