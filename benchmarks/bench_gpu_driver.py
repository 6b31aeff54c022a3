"""Certified steps on a GPU: SCS on the host's CPU cores, the ADMM driver on the CPU and the
ADMM driver on a CUDA GPU, side by side in one run, on deflated coherent-tilt steps.

Instances: ``T = sum_i lambda_i e_i^p + E`` with ``lambda = 1`` except ``lambda_n = 0.95``
and ``E`` the coherent tilt scaled to ``||E|| = 0.2`` (every component tilted toward the one
SROA deflates last: the n-scaling study's hard case), deflated once by a local (SS-HOPM) first
step; the step timed is the second one. Sizes: p = 3 at n = 24, 32, 48, 64 and p = 4 at
n = 24, 32 (moment matrices of side 324 to 2,144).

Each row times the relaxation of the step as the ``certified`` method runs it: the SS-HOPM
candidate (computed once, untimed) is offered to ``MomentRelaxation.solve_abs`` with the
method's stopping gap (0.9e-6 of ``||T||_F``), and the step counts as certified when the
validated bound is within 1e-6 of ``||T||_F`` of the value (the ``certified`` method's test).
Building the relaxation and moving its maps to the device happen once per size, before the
timed solves, and are reported apart. Every bound is validated on the host in float64
whichever driver proposed the dual.

SCS and the CPU driver use every core of the host (BLAS threads are left at their default).
SCS took 123 s at n = 48 and over 3 minutes at n = 64 on a 16-core H200 host, so by default it
runs up to n = 32 (``--scs-max-n``) and the CPU driver up to n = 48 (``--cpu-max-n``); skipped
rows are printed as skipped, with the reason. The ADMM rows stop after ``--max-iters``
iterations.

Run:
    python benchmarks/bench_gpu_driver.py                      # every size, scs/cpu/cuda
    python benchmarks/bench_gpu_driver.py --sizes 3:24,3:32 --devices cpu --out out.json
    python benchmarks/bench_gpu_driver.py --smoke              # quick check of the CuPy path
    python benchmarks/bench_gpu_driver.py --sizes '' --devices scs,cpu --figure2 5

``--batch K`` adds, for each ADMM device, a row of K successive deflated steps solved in one
batch (the relaxations stepped together, each dropped as its certificate closes).

``--figure2 K`` also runs K full Figure 2 SROAs per noise model (n = 10, p = 3, sigma =
0.01) and times every step's relaxation with each driver on the same step tensor: the CPU
target is that the NumPy ADMM certifies every step SCS certifies, within 3x SCS's time.

``--smoke`` solves tiny relaxations on the CPU and the GPU and checks that the GPU's maps,
duals and bounds agree with the CPU's (exit status 1 if not). Needs nothing beyond the
project's own dependencies and, for ``cuda``, CuPy.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

# After numpy: this benchmark keeps the machine's BLAS threads (_common pins them only for
# what loads numpy after it).
import _common  # noqa: E402
import numpy as np

from sroa_dist import make_instance, rank_one
from sroa_dist.methods.builtin import GAP_TOL, RELAXATION_STOP_FRACTION
from sroa_dist.methods.finishing import certifies
from sroa_dist.relaxation import get_relaxation
from sroa_dist.relaxation.backend import get_backend
from sroa_dist.relaxation.device_maps import device_maps
from sroa_dist.relaxation.drivers import get_driver
from sroa_dist.tensors import rank_one_tensor

SIZES = [(3, 24), (3, 32), (3, 48), (3, 64), (4, 24), (4, 32)]
DEVICES = ("scs", "cpu", "cuda")
#: The issue's targets on one H200 (seconds for a certified step, ADMM on the GPU).
TARGETS = {(3, 32): 1.5, (3, 64): 6.0, (4, 32): 3.0}


def tilt_step(n: int, p: int) -> np.ndarray:
    """The deflated coherent-tilt step: the instance minus a local first step."""
    lam = np.ones(n)
    lam[-1] = 0.95
    T = make_instance(n, p, rank=n, lambdas=lam, noise="coherent-tilt", eps=0.2, rng=0).T_hat
    first = rank_one(T, "sshopm", rng=0)
    return T - rank_one_tensor(first.lam, first.x, p)


def versions() -> dict:
    import scipy
    import scs

    out = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scs": scs.__version__,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
    }
    try:
        import cupy

        out["cupy"] = cupy.__version__
        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        out["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
        out["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
    except Exception as exc:  # no CuPy or no GPU: the cuda rows say so
        out["gpu"] = f"none ({type(exc).__name__})"
    return out


def _driver(device: str):
    return get_driver("scs") if device == "scs" else get_driver("admm", device)


def solve_row(rel, T, cand, device: str, max_iters: int, scs_iters: int) -> dict:
    """Time one certified step's relaxation on ``device`` (``"x"``: its maximiser, for the
    caller; not written out)."""
    settings = {"max_iters": scs_iters if device == "scs" else max_iters}
    gap_tol = RELAXATION_STOP_FRACTION * GAP_TOL
    t0 = time.perf_counter()
    r = rel.solve_abs(T, gap_tol=gap_tol, candidates=cand, driver=_driver(device), **settings)
    seconds = time.perf_counter() - t0
    fro = float(np.linalg.norm(T))
    lam = r.sign * r.fx
    return {
        "seconds": seconds,
        "iterations": int(r.iterations),
        "certified": bool(certifies(r.upper_bound, lam, fro, GAP_TOL, rel.p)),
        "gap_rel": float(r.gap / fro),
        "upper_bound": float(r.upper_bound),
        "value": float(lam),
        "certificate": r.certificate,
        "status": r.status,
        "x": r.x,
    }


def prepare(device: str, rel) -> float:
    """Move the relaxation's maps to the device (untimed in the rows); seconds it took."""
    if device == "scs":
        return 0.0
    t0 = time.perf_counter()
    maps = device_maps(rel.problem, get_backend(device))
    maps._face_parts()
    return time.perf_counter() - t0


def warm_up(devices: list[str]) -> None:
    """One tiny solve per device and order: loads libraries and (CuPy) compiles kernels."""
    for p, n in ((3, 5), (4, 4)):
        T = tilt_step(n, p)
        rel = get_relaxation(n, p)
        for device in devices:
            rel.solve_abs(T, gap_tol=1e-7, driver=_driver(device))


#: Where :func:`save` writes (set by ``--out``), after every row: a run cut short by a time
#: limit keeps what it measured.
_OUT: dict = {"path": None, "head": {}}


def save(rows: list[dict]) -> None:
    if _OUT["path"] is not None:
        _common.write(_OUT["path"], {**_OUT["head"], "rows": rows})


def bench(args) -> list[dict]:
    devices = [d for d in args.devices if not (args.skip_scs and d == "scs")]
    usable = []
    for device in devices:
        try:
            _driver(device)
            usable.append(device)
        except ValueError as exc:
            print(f"device {device}: skipped ({exc})", flush=True)
    warm_up(usable)
    rows = []
    header = (
        f"{'p':>2} {'n':>3} {'m':>5} {'driver':>10} {'seconds':>8} {'iters':>6} "
        f"{'certified':>9} {'gap/|T|':>9} {'setup s':>8}"
    )
    print(header, flush=True)
    for p, n in args.sizes:
        t0 = time.perf_counter()
        T = tilt_step(n, p)
        rel = get_relaxation(n, p)
        cand = rank_one(T, "sshopm", rng=1).x[None, :]
        build = time.perf_counter() - t0
        print(f"# p = {p}, n = {n}: instance and relaxation built in {build:.1f} s", flush=True)
        for device in devices:
            base = {"p": p, "n": n, "m": rel.m, "driver": _label(device), "build_seconds": build}
            limit = {"scs": args.scs_max_n, "cpu": args.cpu_max_n}.get(device)
            reason = None
            if device not in usable:
                reason = f"device {device} unavailable here"
            elif limit is not None and n > limit:
                reason = f"n > --{device}-max-n {limit} (budget; see the module docstring)"
            if reason:
                rows.append({**base, "skipped": reason})
                print(f"{p:>2} {n:>3} {rel.m:>5} {_label(device):>10}   skipped: {reason}")
                continue
            try:
                setup = prepare(device, rel)
                row = {**base, "setup_seconds": setup}
                if device == "cuda":
                    # The first solve of a size also pays one-time device costs (cuSOLVER
                    # workspaces and kernels for its shapes: 6.5 s against 1.0 s at n = 32 on
                    # an H200); it is reported apart, like the set-up, and the next is timed.
                    first = solve_row(rel, T, cand, device, args.max_iters, args.scs_iters)
                    row["first_solve_seconds"] = first["seconds"]
                row.update(solve_row(rel, T, cand, device, args.max_iters, args.scs_iters))
                row.pop("x")
            except Exception as exc:  # one broken row must not cost the others
                row = {**base, "error": f"{type(exc).__name__}: {exc}"}
                rows.append(row)
                print(f"{p:>2} {n:>3} {rel.m:>5} {_label(device):>10}   ERROR {row['error']}")
                save(rows)
                continue
            rows.append(row)
            save(rows)
            print(
                f"{p:>2} {n:>3} {rel.m:>5} {row['driver']:>10} {row['seconds']:>8.2f} "
                f"{row['iterations']:>6} {str(row['certified']):>9} {row['gap_rel']:>9.1e} "
                f"{setup:>8.1f}"
                + (
                    f"  (first solve {row['first_solve_seconds']:.2f} s)"
                    if "first_solve_seconds" in row
                    else ""
                ),
                flush=True,
            )
            if args.batch > 1 and device != "scs":
                row = {**base, **batch_row(rel, T, device, args.batch, args.max_iters)}
                row["driver"] += f" x{args.batch}"
                rows.append(row)
                save(rows)
                print(
                    f"{p:>2} {n:>3} {rel.m:>5} {row['driver']:>10} {row['seconds']:>8.2f} "
                    f"{row['iterations']:>6} {row['certified']:>9} "
                    f"({row['seconds'] / args.batch:.2f} s per step)",
                    flush=True,
                )
    summary(rows)
    return rows


def batch_row(rel, T, device: str, k: int, max_iters: int) -> dict:
    """``k`` successive deflated steps (``T`` and the tensors after it, deflated by local
    steps) solved in one batch: every tensor's relaxation stepped together on ``device``."""
    Ts, cands = [], []
    for j in range(k):
        local = rank_one(T, "sshopm", rng=1 + j)
        Ts.append(T)
        cands.append(local.x[None, :])
        T = T - rank_one_tensor(local.lam, local.x, rel.p)
    gap_tol = RELAXATION_STOP_FRACTION * GAP_TOL
    t0 = time.perf_counter()
    out = rel.solve_abs_batch(
        np.stack(Ts), candidates=cands, driver=_driver(device), gap_tol=gap_tol, max_iters=max_iters
    )
    seconds = time.perf_counter() - t0
    ok = [
        bool(certifies(r.upper_bound, r.sign * r.fx, float(np.linalg.norm(Tj)), GAP_TOL, rel.p))
        for r, Tj in zip(out, Ts, strict=True)
    ]
    return {
        "seconds": seconds,
        "batch": k,
        "iterations": int(max(r.iterations for r in out)),
        "certified": f"{sum(ok)}/{k}",
    }


def _label(device: str) -> str:
    return "SCS" if device == "scs" else f"ADMM-{device}"


def summary(rows: list[dict]) -> None:
    """The issue's targets: ADMM on the GPU against its time target and against SCS measured
    in the same run (where SCS ran)."""
    by = {(r["p"], r["n"], r["driver"]): r for r in rows if "seconds" in r}
    print("\ntargets (ADMM-cuda):")
    for (p, n), target in TARGETS.items():
        gpu = by.get((p, n, "ADMM-cuda"))
        scs = by.get((p, n, "SCS"))
        if gpu is None:
            print(f"  p = {p}, n = {n}: not measured (no cuda row)")
            continue
        line = (
            f"  p = {p}, n = {n}: {gpu['seconds']:.2f} s (target <= {target:g} s: "
            f"{'met' if gpu['seconds'] <= target and gpu['certified'] else 'NOT met'}"
            f"{'' if gpu['certified'] else ', not certified'})"
        )
        if scs is not None:
            speedup = scs["seconds"] / gpu["seconds"]
            line += f"; SCS {scs['seconds']:.1f} s, {speedup:.1f}x (target >= 10x)"
        else:
            line += "; SCS not measured at this size in this run"
        print(line)


# ---- Figure 2-sized steps ---------------------------------------------------------------------


def figure2(instances: int, devices: list[str]) -> dict:
    """Every SROA step of ``instances`` Figure 2 tensors per noise model (n = 10, p = 3,
    sigma = 0.01, unit weights): each step's relaxation timed with each driver on the same
    step tensor and candidate (the steps deflate by SCS's answer, so every driver sees the
    same tensors). Counts certified steps, steps only SCS certified, and total seconds."""
    n, p = 10, 3
    rel = get_relaxation(n, p)
    drivers = [d for d in devices if d != "cuda" or _usable("cuda")]
    warm_up(drivers)
    total = {d: 0.0 for d in drivers}
    certified = {d: 0 for d in drivers}
    scs_only = {d: 0 for d in drivers}
    worst = {d: 0.0 for d in drivers}
    steps = 0
    for noise in ("binary", "uniform", "gaussian"):
        for r in range(instances):
            T = make_instance(n, p, noise=noise, sigma=0.01, rng=7000 + r).T_hat
            for j in range(n):
                cand = rank_one(T, "sshopm", rng=j).x[None, :]
                rows = {d: solve_row(rel, T, cand, d, 2000, 5000) for d in drivers}
                steps += 1
                for d, row in rows.items():
                    total[d] += row["seconds"]
                    certified[d] += row["certified"]
                    if "scs" in rows and rows["scs"]["certified"] and not row["certified"]:
                        scs_only[d] += 1
                    if "scs" in rows:
                        worst[d] = max(worst[d], row["seconds"] / rows["scs"]["seconds"])
                ref = rows.get("scs", next(iter(rows.values())))
                T = T - rank_one_tensor(ref["value"], ref["x"], p)
    out = {"instances": 3 * instances, "steps": steps, "drivers": {}}
    print(f"\nFigure 2-sized steps (n = 10, p = 3, sigma = 0.01): {steps} steps")
    for d in drivers:
        ratio = total[d] / total["scs"] if "scs" in total else float("nan")
        out["drivers"][_label(d)] = {
            "seconds": total[d],
            "certified": certified[d],
            "certified_by_scs_only": scs_only[d],
            "time_vs_scs": ratio,
            "worst_step_vs_scs": worst[d],
        }
        print(
            f"  {_label(d):>10}: {total[d]:7.2f} s, certified {certified[d]}/{steps}, "
            f"SCS-only {scs_only[d]}, time {ratio:.2f}x SCS (worst step {worst[d]:.1f}x)"
        )
    return out


def _usable(device: str) -> bool:
    try:
        _driver(device)
    except ValueError:
        return False
    return True


# ---- the smoke check of the CuPy path -----------------------------------------------------


def smoke() -> int:
    """Tiny relaxations on the CPU and the GPU: the maps, a fixed number of plain ADMM
    iterations, and a certified solve must agree. Returns the number of failed checks."""
    failures = 0

    def check(name: str, ok: bool, detail: str) -> None:
        nonlocal failures
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)

    try:
        gpu = get_backend("cuda")
    except ValueError as exc:
        print(f"FAIL  cuda backend: {exc}")
        return 1
    cpu = get_backend("cpu")
    for p, n in ((3, 6), (3, 22), (4, 6)):  # n = 22, p = 3: the sparse Woodbury branch
        T = tilt_step(n, p)
        rel = get_relaxation(n, p)
        mc, mg = device_maps(rel.problem, cpu), device_maps(rel.problem, gpu)
        rng = np.random.default_rng(0)
        Y = rng.standard_normal((2, rel.n_vars))
        W = rng.standard_normal((2, rel.m, rel.m))
        W = W + W.transpose(0, 2, 1)
        q = rng.standard_normal(rel.m)
        q /= np.linalg.norm(q)
        pairs = {
            "moment_matrix": (mc.moment_matrix(Y), mg.moment_matrix(gpu.asarray(Y))),
            "adjoint": (mc.adjoint(W), mg.adjoint(gpu.asarray(W))),
            "solve_gram": (mc.solve_gram(Y), mg.solve_gram(gpu.asarray(Y))),
            "face_system": (mc.face_system(q)[0], mg.face_system(gpu.asarray(q))[0]),
        }
        for name, (a, b) in pairs.items():
            err = float(np.abs(gpu.to_host(b) - a).max() / max(np.abs(a).max(), 1e-300))
            check(f"p={p} n={n} {name}", err <= 1e-11, f"relative difference {err:.1e}")
        # Plain ADMM (no extrapolation: the same steps on both devices) for 40 iterations.
        c = rel.objective(T / np.linalg.norm(T), 1)
        from sroa_dist.relaxation.driver import Schedule

        sched = Schedule(warmup_iters=40, warmup_chunks=1, fallback=False, fallback_chunk=40)
        its = []
        for device in ("cpu", "cuda"):
            drv = get_driver("admm", device)
            cfg = drv.configure({"anderson": 0})
            its.append(next(iter(drv.runs(rel.problem, c, cfg, sched))))
        scale = max(float(np.abs(its[0].Z).max()), 1e-300)
        dz = float(np.abs(its[0].Z - its[1].Z).max()) / scale
        dzeta = float(abs(its[0].z_zero[0] - its[1].z_zero[0]))
        check(f"p={p} n={n} dual after 40 steps", dz <= 1e-8 and dzeta <= 1e-8, f"{dz:.1e}")
        # Certified solves with certificates: same maximiser, bounds within the gap.
        fro = float(np.linalg.norm(T))
        res = {
            d: rel.solve_abs(T, gap_tol=0.9e-6, driver=get_driver("admm", d), with_certificate=True)
            for d in ("cpu", "cuda")
        }
        a, b = res["cpu"], res["cuda"]
        again = rel.solve_abs(T, gap_tol=0.9e-6, driver=get_driver("admm", "cuda"))
        same = again.x.tobytes() == b.x.tobytes() and again.upper_bound == b.upper_bound
        print(f"INFO  p={p} n={n} cuda rerun gives the same bits: {same}", flush=True)
        verified = b.sos_certificate.verify(T)
        ok = (
            abs(a.fx - b.fx) <= 1e-10 * fro
            and abs(a.upper_bound - b.upper_bound) <= 1e-6 * fro
            and b.gap <= 1e-6 * fro
            and b.fx - 1e-12 * fro <= verified <= b.upper_bound + 1e-9 * fro
        )
        check(
            f"p={p} n={n} certified solve",
            ok,
            f"cpu {a.iterations} it gap {a.gap / fro:.1e}, cuda {b.iterations} it gap "
            f"{b.gap / fro:.1e}, verify - bound {(verified - b.upper_bound) / fro:.1e}",
        )
    return failures


def parse_sizes(text: str) -> list[tuple[int, int]]:
    out = []
    for item in filter(None, text.split(",")):
        p, _, n = item.partition(":")
        if not (p.isdigit() and n.isdigit()):
            raise argparse.ArgumentTypeError(f"--sizes: expected P:N[,P:N...], received {text!r}")
        out.append((int(p), int(n)))
    return out


def parse_devices(text: str) -> list[str]:
    out = [d.strip() for d in text.split(",") if d.strip()]
    bad = [d for d in out if d not in DEVICES]
    if bad:
        raise argparse.ArgumentTypeError(f"--devices: expected some of {DEVICES}, received {bad}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = _common.parser(__doc__, None)
    ap.add_argument("--sizes", type=parse_sizes, default=SIZES, help="P:N,... (default all)")
    ap.add_argument("--devices", type=parse_devices, default=list(DEVICES), help="scs,cpu,cuda")
    ap.add_argument("--skip-scs", action="store_true", help="no SCS rows")
    ap.add_argument("--scs-max-n", type=int, default=32, help="SCS only up to this n")
    ap.add_argument("--cpu-max-n", type=int, default=48, help="ADMM on the CPU up to this n")
    ap.add_argument("--max-iters", type=int, default=800, help="ADMM iterations at most")
    ap.add_argument("--scs-iters", type=int, default=1000, help="SCS full-solve iterations")
    ap.add_argument(
        "--batch", type=int, default=0, metavar="K", help="also K successive steps in one batch"
    )
    ap.add_argument("--smoke", action="store_true", help="check the CuPy path, then exit")
    ap.add_argument(
        "--figure2", type=int, default=0, metavar="K", help="then K Figure 2 SROAs per model"
    )
    args = ap.parse_args(argv)
    info = versions()
    print("versions: " + ", ".join(f"{k} {v}" for k, v in info.items()), flush=True)
    if args.smoke:
        failed = smoke()
        print(f"smoke: {'all checks passed' if not failed else f'{failed} check(s) FAILED'}")
        return 1 if failed else 0
    _OUT["path"] = args.out
    _OUT["head"] = {
        "versions": info,
        "argv": sys.argv[1:],
    }
    t0 = time.perf_counter()
    rows = bench(args) if args.sizes else []
    if args.figure2:
        devices = [d for d in args.devices if not (args.skip_scs and d == "scs")]
        _OUT["head"]["figure2"] = figure2(args.figure2, devices)
    total = time.perf_counter() - t0
    _OUT["head"]["total_seconds"] = total
    save(rows)
    print(f"\ntotal {total:.0f} s ({time.strftime('%Y-%m-%d %H:%M')})")
    if args.out:
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
