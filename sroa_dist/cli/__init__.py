"""``sroa-dist``: thin command line over the sweep service and the analysis layer.

Subcommands: ``run`` (run / resume / extend a sweep), ``validate`` (check a spec), ``status``
(progress of a store), ``check`` (every chunk and certificate file against its digest;
``--repair-metadata`` rebuilds lost top-level metadata), ``info`` (dims, variables,
provenance), ``verify`` (re-check the stored SOS certificates and the stored values against
them), and the analysis slots ``plot`` and ``report`` (:mod:`sroa_dist.analysis`), which read
through the checked ``open_results``.

Users see no tracebacks for bad input or faults: every expected failure is one line saying what
and why, then a hint for that cause (:data:`.errors.ERRORS`), exit status 2. SIGINT / SIGTERM
end a run with one line and exit status 130 / 143 from the moment ``main`` starts (the handlers
are installed before anything else); ``SROA_DEBUG=1`` shows tracebacks.

Layout: :mod:`.parser` (arguments), :mod:`.commands` (subcommand bodies), :mod:`.errors` (what
each expected failure prints), :mod:`.logs` (log routing).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from threading import current_thread, main_thread

from .errors import ERRORS, CLIError, explain
from .logs import _route_logs, _silence_shutdown
from .parser import build_parser

__all__ = ["ERRORS", "CLIError", "build_parser", "main"]


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that clusters and leases are closed on the way out."""


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
        from ..sweep.storage import read_done

        return f"; {int(read_done(url).sum())} blocks done"
    except Exception:
        return "; 0 blocks done"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sroa-dist`` console script; returns the exit status."""
    handlers = {}
    if current_thread() is main_thread():  # first: a signal during parsing counts too
        handlers = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            argv = list(sys.argv[1:] if argv is None else argv)
            args = build_parser().parse_args(argv)
            args.argv = argv
        except (KeyboardInterrupt, _Terminated) as exc:
            print("sroa-dist: interrupted", file=sys.stderr)
            return 143 if isinstance(exc, _Terminated) else 130
        _route_logs()
        return _main(args, bool(os.environ.get("SROA_DEBUG")))
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
        explained = None if debug else explain(exc)
        if explained is None:
            raise
        message, hint = explained
        print(f"sroa-dist {args.command}: error: {message}", file=sys.stderr)
        if hint:
            print(f"hint: {hint}", file=sys.stderr)
        return 2
