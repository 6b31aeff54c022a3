"""``sroa-dist``: thin command line over the sweep service and the analysis layer.

Subcommands: ``run`` (run / resume / extend a sweep), ``validate`` (check a spec), ``status``
(progress of a store), ``info`` (dims, variables, provenance), ``verify`` (re-check the stored
SOS certificates), and the analysis slots ``plot`` and ``report`` (:mod:`sroa_dist.analysis`).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]


def _cmd_run(args: argparse.Namespace) -> int:
    from .sweep.execute import run_sweep
    from .sweep.spec import load_spec

    spec = load_spec(args.spec, args.set or ())
    store = args.store or str(Path("results") / f"{spec.name}.zarr")
    history = "sroa-dist " + " ".join(shlex.quote(a) for a in args.argv)
    res = run_sweep(
        spec,
        store,
        scheduler=args.scheduler,
        scheduler_file=args.scheduler_file,
        workers=args.workers,
        block_size=args.block_size,
        overwrite=args.overwrite,
        dashboard_address=args.dashboard_address,
        progress=sys.stderr,
        history=history,
    )
    print(
        f"store: {res.store} ({res.action})\n"
        f"blocks: {res.n_blocks} total, {res.blocks_done_before} already done, "
        f"{res.blocks_reused} reused, {res.blocks_computed} computed, {len(res.failed)} failed\n"
        f"instances: {res.n_instances} total, {res.instances_computed} computed\n"
        f"wall time: {res.wall_time:.1f} s (tasks {res.task_time:.1f} s, "
        f"of which numerical core {res.kernel_time:.1f} s)"
    )
    for b, msg in sorted(res.failed.items())[:10]:
        print(f"failed block {b}: {msg}", file=sys.stderr)
    return 0 if res.complete else 1


def _cmd_validate(args: argparse.Namespace) -> int:
    from .sweep.grid import make_layout
    from .sweep.spec import load_spec

    spec = load_spec(args.spec, args.set or ())
    layout = make_layout(spec, block_size=args.block_size)
    dims = ", ".join(f"{d}={s}" for d, s in zip(layout.dims, layout.shape, strict=True))
    print(
        f"{args.spec}: valid sweep '{spec.name}'\n"
        f"dims: {dims}, step={layout.n_steps}\n"
        f"instances: {layout.n_instances} in {layout.n_blocks} blocks of shape {layout.chunks}"
    )
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    from .sweep.storage import store_status

    st = store_status(args.store)
    print(
        f"{args.store}: {st.done_fraction:.1%} done "
        f"({st.n_instances_done}/{st.n_instances} instances, {st.n_done}/{st.n_blocks} blocks)"
    )
    print(f"failed blocks: {len(st.failed)}")
    for b, msg in sorted(st.failed.items()):
        print(f"  block {b}: {msg}")
    return 0 if st.n_done == st.n_blocks else 1


def _cmd_info(args: argparse.Namespace) -> int:
    from .sweep.storage import open_results

    ds = open_results(args.store)
    print(f"store: {args.store}")
    print("dims: " + ", ".join(f"{d}={n}" for d, n in ds.sizes.items()))
    for name in ds.coords:
        vals = ds[name].values
        shown = ", ".join(map(str, vals[:6])) + (", ..." if len(vals) > 6 else "")
        print(f"  coord {name}: [{shown}]")
    print("variables:")
    for name, var in ds.data_vars.items():
        print(f"  {name}{tuple(var.dims)}: {var.attrs.get('long_name', '')}")
    print("provenance:")
    for key, val in ds.attrs.items():
        text = str(val)
        if key == "spec" and not args.full:
            text = json.dumps(json.loads(text), sort_keys=True)
        if not args.full and len(text) > 160:
            text = text[:157] + "..."
        print(f"  {key}: {text}")
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    """``verify``: re-check every stored certificate against the instances' rebuilt tensors."""
    from .sweep.certificates import verify_store

    rep = verify_store(args.store)
    failed = rep.failed
    for c in failed:
        print(f"FAIL {json.dumps(c.coords)} step {c.step + 1}: {c.reason} ({c.file})")
    for text in rep.missing[:20]:
        print(f"MISSING certificate for finished instance {text}")
    if len(rep.missing) > 20:
        print(f"... and {len(rep.missing) - 20} more finished instances without certificates")
    print(
        f"{args.store}: {len(rep.checks)} certificates checked, {len(failed)} failed, "
        f"{len(rep.missing)} missing, {len(rep.stale_files)} stale files ignored, "
        f"{rep.steps_without} steps without a certificate (no relaxation ran)"
    )
    return 0 if rep.ok else 1


# ---- analysis (sroa_dist.analysis) -----------------------------------------------------------
def _cmd_plot(args: argparse.Namespace) -> int:
    """``plot``: the figures the cube supports, via ``sroa_dist.analysis.plot_cube``."""
    from . import analysis

    return _write_outputs(analysis.plot_cube, args)


def _cmd_report(args: argparse.Namespace) -> int:
    """``report``: Markdown/HTML report of a cube, via ``sroa_dist.analysis.write_report``."""
    from . import analysis

    return _write_outputs(analysis.write_report, args)


def _write_outputs(writer, args: argparse.Namespace) -> int:
    """Open the store, call ``writer(ds, out, formats)`` and list the files it wrote.

    The cube's completeness is printed first (loudly on stderr when blocks are missing or
    failed); with ``--strict`` an incomplete cube exits 1 after writing the outputs.
    """
    import warnings

    from .analysis import IncompleteCubeWarning, completeness
    from .sweep.storage import open_results

    fmts = _formats(args.formats)
    ds = open_results(args.store)
    status = completeness(ds)
    if status.complete:
        print(f"{args.store}: {status.describe()}", file=sys.stderr)
    else:
        bar = "!" * 78
        lines = [bar, f"WARNING: {args.store}: {status.describe()}"]
        lines += [
            f"  block {b}: {msg.splitlines()[0] if msg else ''}"[:160]
            for b, msg in sorted(status.failures.items())[:10]
        ]
        if len(status.failures) > 10:
            lines.append(f"  ... and {len(status.failures) - 10} more failed blocks")
        lines.append(
            "the outputs cover only the instances with results; run the same `sroa-dist run` "
            "command to finish the sweep (failed blocks are retried)"
            + (" (--strict: exit 1)" if args.strict else "")
        )
        print("\n".join([*lines, bar]), file=sys.stderr)
    with warnings.catch_warnings():  # stated above, once
        warnings.simplefilter("ignore", IncompleteCubeWarning)
        paths = writer(ds, args.out, *([fmts] if fmts else []), status=status)
    print("\n".join(map(str, paths)))
    return 1 if args.strict and not status.complete else 0


_STRICT_HELP = "exit 1 if the cube is incomplete (blocks failed or not run); outputs are written"


def _formats(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(f.strip() for f in text.split(",") if f.strip())


# --------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The ``sroa-dist`` argument parser."""
    p = argparse.ArgumentParser(
        prog="sroa-dist",
        description="Certified SROA of nearly SOD tensors: Monte Carlo sweeps on Dask, "
        "xarray/zarr result cubes.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="run, resume or extend a sweep")
    r.add_argument("spec", help="TOML sweep spec, e.g. sweeps/figure2.toml")
    r.add_argument("--store", help="zarr store path or fsspec URL (default results/<name>.zarr)")
    r.add_argument("--scheduler", help="address of a running Dask scheduler")
    r.add_argument("--scheduler-file", help="scheduler file of a running Dask cluster")
    r.add_argument("--workers", type=int, help="processes of the embedded cluster (default: CPUs)")
    r.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a spec key with a TOML value, e.g. --set replicates=20 (repeatable)",
    )
    r.add_argument("--overwrite", action="store_true", help="discard an existing store")
    r.add_argument(
        "--block-size", type=int, help="instances per task for a new store (default: ~4 s/task)"
    )
    r.add_argument(
        "--dashboard-address",
        default="127.0.0.1:8787",
        help="dashboard of the embedded cluster (default: loopback only, 127.0.0.1:8787)",
    )
    r.set_defaults(func=_cmd_run)

    v = sub.add_parser("validate", help="validate a spec and show its grid")
    v.add_argument("spec")
    v.add_argument("--set", action="append", metavar="KEY=VALUE")
    v.add_argument("--block-size", type=int)
    v.set_defaults(func=_cmd_validate)

    s = sub.add_parser("status", help="done fraction and failed blocks of a store")
    s.add_argument("store")
    s.set_defaults(func=_cmd_status)

    i = sub.add_parser("info", help="dims, variables and provenance of a store")
    i.add_argument("store")
    i.add_argument("--full", action="store_true", help="do not shorten long attributes")
    i.set_defaults(func=_cmd_info)

    ve = sub.add_parser(
        "verify", help="re-check the SOS certificates of a store ([output] certificates = true)"
    )
    ve.add_argument("store")
    ve.set_defaults(func=_cmd_verify)

    pl = sub.add_parser("plot", help="figures of a result cube (sroa_dist.analysis)")
    pl.add_argument("store")
    pl.add_argument("--out", default="figures", help="output directory (default: figures)")
    pl.add_argument("--format", "--formats", dest="formats", help="comma-separated, e.g. png,svg")
    pl.add_argument("--strict", action="store_true", help=_STRICT_HELP)
    pl.set_defaults(func=_cmd_plot)

    rp = sub.add_parser("report", help="report of a result cube (sroa_dist.analysis)")
    rp.add_argument("store")
    rp.add_argument("--out", default="report", help="output path without extension")
    rp.add_argument("--format", "--formats", dest="formats", help="comma-separated, e.g. md,html")
    rp.add_argument("--strict", action="store_true", help=_STRICT_HELP)
    rp.set_defaults(func=_cmd_report)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sroa-dist`` console script; returns the exit status."""
    from .sweep.spec import SpecError
    from .sweep.storage import StoreIncompatibleError

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = argv
    try:
        return int(args.func(args))
    except (SpecError, StoreIncompatibleError, FileNotFoundError) as exc:
        print(f"sroa-dist {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # includes distributed's CommClosedError and refused TLS handshakes
        print(
            f"sroa-dist {args.command}: error: {exc}\nhint: check the scheduler address, that "
            "the scheduler runs, and the TLS settings (DASK_DISTRIBUTED__COMM__TLS__*)",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print(
            "sroa-dist: interrupted; finished blocks are kept, run again to resume", file=sys.stderr
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
