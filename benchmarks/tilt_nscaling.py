"""Fitted n-scaling exponents per perturbation family from a `nscaling-tilt-p*` result cube.

Usage: ``python benchmarks/tilt_nscaling.py results/nscaling-tilt-p3.zarr [--c 0.5 1.0]``

Criteria (success = every step of the instance passes):

- ``radius``: ``vec_err <= 0.3`` (the analysis default);
- ``value c``: ``|lam_hat - lam| <= c * eps`` with eps the instance's ``‖E‖`` (``eps_lower``),
  computed here as the radius criterion on the derived per-step variable ``lam_err / eps``,
  so the thresholds and exponent fits are `sroa_dist.analysis`'s own.

Prints a Markdown table (exponent with its 95 % bootstrap CI next to -1/(p-1), thresholds per n)
and writes the numbers to ``benchmarks/out/tilt_nscaling_p<p>.json``.
"""

from __future__ import annotations

import argparse
import sys

import _common
import numpy as np

import sroa_dist.analysis as sa
from sroa_dist.sweep import open_results


def _criteria(cs):
    yield "radius (vec_err <= 0.3)", {"variable": "vec_err", "radius": 0.3}
    for c in cs:
        yield f"value (lam_err <= {c:g} eps)", {"variable": "lam_err_rel", "radius": c}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--c", type=float, nargs="+", default=[0.5, 1.0])
    ap.add_argument("--n-boot", type=int, default=400)
    ap.add_argument("--n-min", type=int, default=0, help="fit only n >= N_MIN")
    args = ap.parse_args(argv)
    ds = open_results(args.store).load()
    ds = ds.sel(n=ds["n"] >= args.n_min)
    ds["lam_err_rel"] = ds["lam_err"] / ds["eps_lower"]
    # p is a coordinate when swept, else a setting recorded in the cube's attrs.
    p = int(ds["p"].values) if "p" in ds.coords and ds["p"].size == 1 else None
    p = int(ds.attrs["setting_p"]) if p is None and "setting_p" in ds.attrs else p
    ref = -1.0 / (p - 1) if p else float("nan")
    out: dict = {"store": args.store, "p": p, "reference_sroa": ref, "criteria": {}}
    done = ds["done"].values.mean() if "done" in ds else float("nan")
    print(
        f"store {args.store}: p = {p}, done fraction {done:.3f}, "
        f"replicates {ds.sizes['replicate']}, n = {list(ds['n'].values)}"
    )
    cert = ds["certified"].where(np.isfinite(ds["lam_hat"])).mean(["replicate", "step", "eps"])
    print(
        "certified fraction of steps per n:",
        {
            int(n): round(float(v), 3)
            for n, v in zip(ds["n"].values, cert.mean("noise").values, strict=True)
        },
    )
    for label, opts in _criteria(args.c):
        thr = sa.estimate_thresholds(ds, "radius", n_boot=args.n_boot, rng=0, **opts)
        fit = sa.fit_exponent(thr, p=p)
        print(f"\n### {label}\n")
        print("| family | exponent [95 % CI] | -1/(p-1) | points | thresholds θ(n) |")
        print("|---|---|---|---|---|")
        rows = {}
        for fam in ds["noise"].values:
            f = fit.sel(noise=fam)
            t = thr.sel(noise=fam)
            ths = {
                int(n): (
                    None
                    if not bool(t["in_range"].sel(n=n))
                    else round(float(t["threshold"].sel(n=n)), 4)
                )
                for n in ds["n"].values
            }
            rows[str(fam)] = {
                "exponent": float(f["exponent"]),
                "lo": float(f["exponent_lo"]),
                "hi": float(f["exponent_hi"]),
                "n_points": int(f["n_points"]),
                "thresholds": ths,
                "threshold_ci": {
                    int(n): [float(t["threshold_lo"].sel(n=n)), float(t["threshold_hi"].sel(n=n))]
                    for n in ds["n"].values
                },
            }
            th_txt = ", ".join(f"{n}: {v if v is not None else 'out'}" for n, v in ths.items())
            print(
                f"| {fam} | {float(f['exponent']):+.3f} [{float(f['exponent_lo']):+.3f}, "
                f"{float(f['exponent_hi']):+.3f}] | {ref:+.3f} | {int(f['n_points'])} | "
                f"{th_txt} |"
            )
        out["criteria"][label] = rows
    # The tilt's accumulated value error against 0.65 (n - 1) eps^3 (p = 3 prediction).
    if "coherent-tilt" in ds["noise"].values:
        sub = ds.sel(noise="coherent-tilt")
        eps0 = float(sub["eps"].sel(eps=0.2, method="nearest"))
        worst = sub["lam_err"].sel(eps=eps0).max("step").median("replicate")
        print(f"\ncoherent tilt, eps = {eps0:.4g}: median over replicates of max_j |lam_hat - lam|")
        acc = {int(n): float(v) for n, v in zip(sub["n"].values, worst.values, strict=True)}
        for n, v in acc.items():
            pred = 0.65 * (n - 1) * eps0**3 if p == 3 else float("nan")
            print(f"  n = {n:3d}: {v:.4f}  (0.65 (n-1) eps^3 = {pred:.4f})")
        out["tilt_value_error_at_eps"] = {"eps": eps0, "median_max_lam_err": acc}
    suffix = f"_nmin{args.n_min}" if args.n_min else ""
    path = _common.write(f"tilt_nscaling_p{p}{suffix}", out)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
