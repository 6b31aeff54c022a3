"""``sroa-dist``: thin command line over the sweep service and the analysis layer.

Subcommands: ``run`` (run / resume / extend a sweep), ``validate`` (check a spec), ``status``
(progress of a store), ``info`` (dims, variables, provenance), ``verify`` (re-check the stored
SOS certificates), and the analysis slots ``plot`` and ``report`` (:mod:`sroa_dist.analysis`).

Users see no tracebacks for bad input or faults: every expected failure is one line saying what
and why, then a hint for that cause (:data:`ERRORS`), exit status 2. SIGINT / SIGTERM end a run
with one line and exit status 130 / 143; ``SROA_DEBUG=1`` shows tracebacks.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["main"]


class CLIError(Exception):
    """A user-facing error: ``message`` (what and why) and ``hint``."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that clusters and leases are closed on the way out."""


def _load_spec(args: argparse.Namespace):
    """``load_spec`` with unreadable files (not UTF-8, a directory, no permission) explained."""
    from .sweep.spec import load_spec

    path = Path(args.spec)
    if path.is_dir():
        examples = sorted(p.name for p in path.glob("*.toml"))[:3]
        raise CLIError(
            f"spec {args.spec}: expected a TOML file; received a directory",
            "give one spec file"
            + (f", e.g. {path / examples[0]}" if examples else ", e.g. sweeps/figure2.toml"),
        )
    try:
        return load_spec(args.spec, args.set or ())
    except UnicodeDecodeError as exc:
        raise CLIError(
            f"spec {args.spec}: expected UTF-8 TOML text; received a byte that is not UTF-8 "
            f"(0x{exc.object[exc.start]:02x} at byte {exc.start})",
            "save the spec as UTF-8 (most editors: 'Save with encoding')",
        ) from None
    except PermissionError:
        raise CLIError(
            f"spec {args.spec}: expected a readable file; received one you may not read",
            "check the file's permissions",
        ) from None


def _cmd_run(args: argparse.Namespace) -> int:
    from .sweep.execute import run_sweep

    spec = _load_spec(args)
    store = args.store or spec.default_store
    args.store_url = store
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
        connect_timeout=args.connect_timeout,
        lease_timeout=args.lease_timeout,
        retries=args.retries,
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
    from .sweep.execute import default_workers
    from .sweep.grid import make_layout
    from .sweep.kinds import kind_of

    spec = _load_spec(args)
    layout = make_layout(spec, block_size=args.block_size)
    dims = ", ".join(f"{d}={s}" for d, s in zip(layout.dims, layout.shape, strict=True))
    print(
        f"{args.spec}: valid sweep '{spec.name}'\n"
        f"dims: {dims}, step={layout.n_steps}\n"
        f"instances: {layout.n_instances} in {layout.n_blocks} blocks of shape {layout.chunks}"
    )
    # A kind may state its cost (time and memory) beside the grid.
    describe = getattr(kind_of(spec), "describe_cost", None)
    if describe is not None:
        print("\n".join(describe(spec, layout, default_workers())))
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
    from .sweep.storage import require_store

    require_store(args.store)  # the same one-line answer as status/info for a non-store
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
    if fmts is not None and args.command == "plot":
        _check_plot_formats(fmts)
    if fmts is not None and args.command == "report":
        from .analysis.report import check_report_formats

        try:
            check_report_formats(fmts)
        except ValueError as exc:
            raise CLIError(f"--format {args.formats}: {exc}", "e.g. --format md,html") from None
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
    if text is None:
        return None
    fmts = tuple(f.strip() for f in text.split(",") if f.strip())
    if not fmts:
        raise CLIError(f"--format: expected a comma-separated list; received {text!r}")
    return fmts


def _check_plot_formats(fmts: tuple[str, ...]) -> None:
    from matplotlib.backend_bases import FigureCanvasBase

    known = FigureCanvasBase.get_supported_filetypes()
    unknown = [f for f in fmts if f.lower() not in known]
    if unknown:
        raise CLIError(
            f"--format: expected figure formats matplotlib can write; received {unknown}",
            f"use one or more of {', '.join(sorted(known))}, e.g. --format png,svg",
        )


# --------------------------------------------------------------------------------------------


def _int_at_least(least: int) -> Callable[[str], int]:
    """An argparse type: an integer ``>= least``, else a message naming what was received."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if value < least:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= {least}; received {text!r}"
            ) from None
        return value

    return parse


_positive_int = _int_at_least(1)
_non_negative_int = _int_at_least(0)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds > 0; received {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds > 0; received {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``sroa-dist`` argument parser."""
    # The run defaults live with the sweep service (light to import: no Dask until a run).
    from .sweep.execute import DEFAULT_DASHBOARD_ADDRESS, DEFAULT_RETRIES
    from .sweep.lease import DEFAULT_LEASE_TIMEOUT

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
    r.add_argument(
        "--workers", type=_positive_int, help="processes of the embedded cluster (default: CPUs)"
    )
    r.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a spec key with a TOML value, e.g. --set replicates=20 (repeatable)",
    )
    r.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing sroa-dist store (never anything else)",
    )
    r.add_argument(
        "--block-size",
        type=_positive_int,
        help="instances per task for a new store (default: ~4 s/task)",
    )
    r.add_argument(
        "--connect-timeout",
        type=_positive_float,
        help="seconds to wait for --scheduler (default: Dask's connect timeout, 30 s)",
    )
    r.add_argument(
        "--lease-timeout",
        type=_positive_float,
        default=DEFAULT_LEASE_TIMEOUT,
        help="seconds without a heartbeat after which another run may take over the store's "
        f"writer lease (default {DEFAULT_LEASE_TIMEOUT:g})",
    )
    r.add_argument(
        "--retries",
        type=_non_negative_int,
        default=DEFAULT_RETRIES,
        help="extra attempts of a block after a fault that may pass (store I/O, memory); "
        f"errors of the numerics are reported at once (default {DEFAULT_RETRIES})",
    )
    r.add_argument(
        "--dashboard-address",
        default=DEFAULT_DASHBOARD_ADDRESS,
        help="dashboard of the embedded cluster (default: loopback only, "
        f"{DEFAULT_DASHBOARD_ADDRESS})",
    )
    r.set_defaults(func=_cmd_run)

    v = sub.add_parser("validate", help="validate a spec and show its grid")
    v.add_argument("spec")
    v.add_argument("--set", action="append", metavar="KEY=VALUE")
    v.add_argument("--block-size", type=_positive_int)
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


# ---- errors ---------------------------------------------------------------------------------


def _hinted(exc: BaseException) -> tuple[str, str | None]:
    return str(exc), getattr(exc, "hint", None)


def _plain(exc: BaseException) -> tuple[str, str | None]:
    return str(exc), None


def _permission(exc: BaseException) -> tuple[str, str | None]:
    where = getattr(exc, "filename", None) or ""
    return (
        f"permission denied: {where or exc}",
        "the store (and its folder) must be writable by you: choose another --store or fix "
        "the permissions",
    )


def _os_error(exc: BaseException) -> tuple[str, str | None]:
    import errno

    if getattr(exc, "errno", None) == errno.EROFS:
        return (
            f"read-only file system: {getattr(exc, 'filename', '') or exc}",
            "write the store to a writable disk (--store PATH)",
        )
    if isinstance(exc, (ConnectionError, TimeoutError)) or "comm" in type(exc).__module__:
        return (
            f"{type(exc).__name__}: {exc}",
            "check the scheduler address, that the scheduler runs, and the TLS settings "
            "(DASK_DISTRIBUTED__COMM__TLS__*)",
        )
    where = getattr(exc, "filename", None)
    return f"{exc.strerror or exc}" + (f": {where}" if where else ""), None


def _value(exc: BaseException) -> tuple[str, str | None]:
    text = str(exc)
    if text.startswith("Protocol not known"):
        proto = text.rsplit(":", 1)[-1].strip()
        import fsspec

        return (
            f"store URL: unknown protocol {proto!r}",
            "give a local path or an fsspec URL such as s3://bucket/name.zarr (known: "
            + ", ".join(sorted(p for p in fsspec.available_protocols() if len(p) <= 5)[:12])
            + ", ...)",
        )
    return text, None


def _import(exc: BaseException) -> tuple[str, str | None]:
    return f"missing package: {exc}", "install it into this environment (pip install NAME)"


def _credentials(exc: BaseException) -> tuple[str, str | None]:
    return (
        f"object store: no credentials ({exc})",
        "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), and "
        "AWS_ENDPOINT_URL for a non-AWS server",
    )


def _error_types() -> list[tuple[tuple[type[BaseException], ...], Callable]]:
    """Expected failures, most specific first: (exception types, explain)."""
    from .sweep.execute import ClusterConnectError
    from .sweep.lease import LeaseLostError, StoreLockedError
    from .sweep.spec import SpecError
    from .sweep.storage import StaleLayoutError, StoreIncompatibleError

    table: list[tuple[tuple[type[BaseException], ...], Callable]] = [
        ((CLIError, ClusterConnectError, StoreLockedError), _hinted),
        ((SpecError, StoreIncompatibleError, LeaseLostError, StaleLayoutError), _hinted),
        ((FileNotFoundError,), _plain),
        ((PermissionError,), _permission),
    ]
    try:
        from botocore.exceptions import BotoCoreError, NoCredentialsError

        table.append(((NoCredentialsError,), _credentials))
        table.append(((BotoCoreError,), _plain))
    except ImportError:  # no S3 support installed
        pass
    table += [((OSError,), _os_error), ((ValueError,), _value), ((ImportError,), _import)]
    return table


#: How ``main`` answers each expected failure (built on first use; see :func:`_error_types`).
ERRORS: list[tuple[tuple[type[BaseException], ...], Callable]] = []


def _explain(exc: BaseException) -> tuple[str, str | None] | None:
    if not ERRORS:
        ERRORS.extend(_error_types())
    for types, explain in ERRORS:
        if isinstance(exc, types):
            return explain(exc)
    return None


# ---- logging and signals --------------------------------------------------------------------

_NOISY = ("distributed", "bokeh", "tornado", "asyncio")
_CLOSED_SOCKET = ("WebSocketClosedError", "StreamClosedError")


class _NoiseFilter(logging.Filter):
    """Drop records a closed dashboard websocket causes (browser tab closed early)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and type(exc).__name__ in _CLOSED_SOCKET:
            return False
        text = record.getMessage()
        return not any(name in text for name in _CLOSED_SOCKET)


def _route_logs() -> None:
    """Keep Dask/bokeh/tornado records below WARNING, and closed-websocket noise, off stderr.

    The progress line shares stderr with these loggers; the embedded cluster's worker
    processes read the same setting from the environment.
    """
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")
    noise = _NoiseFilter()
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter("sroa-dist: %(name)s: %(message)s"))
        root.addHandler(handler)
    for h in root.handlers:
        h.addFilter(noise)
    for name in _NOISY:
        logger = logging.getLogger(name)
        logger.setLevel(max(logger.level, logging.WARNING))
        logger.addFilter(noise)
        for h in logger.handlers:
            h.addFilter(noise)


def _silence_shutdown() -> None:
    """After an interrupt, shutdown chatter (closing comms, killed workers) is expected."""
    for name in _NOISY:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    for h in logging.getLogger("distributed").handlers:
        h.setLevel(logging.CRITICAL + 1)


def _on_signal(signum: int, frame) -> None:
    _silence_shutdown()
    if signum == signal.SIGTERM:
        raise _Terminated
    raise KeyboardInterrupt


def _blocks_done(args: argparse.Namespace) -> str:
    url = getattr(args, "store_url", None)
    if url is None:
        return ""
    try:
        from .sweep.storage import read_done

        return f"; {int(read_done(url).sum())} blocks done"
    except Exception:
        return "; 0 blocks done"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sroa-dist`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = argv
    debug = bool(os.environ.get("SROA_DEBUG"))
    _route_logs()
    from threading import current_thread, main_thread

    handlers = {}
    if current_thread() is main_thread():
        handlers = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _main(args, debug)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def _main(args: argparse.Namespace, debug: bool) -> int:
    try:
        return int(args.func(args))
    except (KeyboardInterrupt, _Terminated) as exc:
        tail = "; run the same command to resume" if args.command == "run" else ""
        print(f"sroa-dist {args.command}: interrupted{_blocks_done(args)}{tail}", file=sys.stderr)
        return 143 if isinstance(exc, _Terminated) else 130
    except BrokenPipeError:
        # The reader left (`sroa-dist info STORE | head`): stop quietly, and keep Python from
        # complaining while it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as exc:
        explained = None if debug else _explain(exc)
        if explained is None:
            raise
        message, hint = explained
        print(f"sroa-dist {args.command}: error: {message}", file=sys.stderr)
        if hint:
            print(f"hint: {hint}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
