"""``sroa-dist``: thin command line over the sweep service and the analysis layer.

Subcommands: ``run`` (run / resume / extend a sweep), ``validate`` (check a spec), ``status``
(progress of a store), ``check`` (every chunk and certificate file against its digest;
``--repair-metadata`` rebuilds lost top-level metadata), ``info`` (dims, variables,
provenance), ``verify`` (re-check the stored SOS certificates and the stored values against
them), and the analysis slots ``plot`` and ``report`` (:mod:`sroa_dist.analysis`), which read
through the checked ``open_results``.

Users see no tracebacks for bad input or faults: every expected failure, the parser's included, is
one line ``error: ...`` saying what and why, then one line ``hint: ...`` for that cause
(:data:`.errors.ERRORS`), exit status 2; every warning is one line ``warning: ...``.
SIGINT / SIGTERM end a run with one line and exit status 130 / 143 from the moment ``main``
starts (the handlers are installed before anything else); ``SROA_DEBUG=1`` shows tracebacks.

Layout: :mod:`.parser` (arguments), :mod:`.commands` (subcommand bodies), :mod:`.errors` (what
each expected failure prints), :mod:`.logs` (log routing).
"""

from __future__ import annotations

# First of all: the `sroa-dist` command answers Ctrl-C / SIGTERM with one line from here on,
# however long the sweep service and the analysis take to load (Dask, zarr, matplotlib).
from . import _early_signals  # noqa: F401  # isort: skip

import argparse
import os
import signal
import sys
import warnings
from collections.abc import Sequence
from threading import current_thread, main_thread

from ..errors import SroaWarning, one_line
from .errors import ERRORS, FALLBACK_HINT, CLIError, explain
from .logs import _route_logs, _silence_shutdown
from .parser import ArgumentsError, build_parser

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
        from ..sweep.store import read_done

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
            args, extra = build_parser().parse_known_args(argv)
            if extra:  # named with the command they were given to
                prog = f"sroa-dist {args.command}"
                raise ArgumentsError(
                    prog,
                    f"expected the arguments of {prog}; received unknown {' '.join(extra)}",
                    f"`{prog} --help` lists the arguments and what they take",
                )
            args.argv = argv
        except (KeyboardInterrupt, _Terminated) as exc:
            print("sroa-dist: interrupted", file=sys.stderr)
            return 143 if isinstance(exc, _Terminated) else 130
        except ArgumentsError as exc:
            _print_error(exc.prog, str(exc), exc.hint)
            return 2
        _route_logs()
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warning(args.command)
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
        _print_error(f"sroa-dist {args.command}", message, hint or FALLBACK_HINT)
        return 2


def _print_error(prog: str, message: str, hint: str) -> None:
    """The one error grammar: ``PROG: error: MESSAGE`` and ``hint: HINT``, a line each."""
    print(f"{prog}: error: {one_line(message)}", file=sys.stderr)
    print(f"hint: {one_line(hint)}", file=sys.stderr)


def _one_line_warning(command: str):
    """``warnings.showwarning`` for the command line: ``sroa-dist CMD: warning: ...``, one
    line, whichever package warns (never a file name and a source line)."""

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = one_line(str(message))
        if not issubclass(category, SroaWarning):
            text = f"{category.__name__}: {text}"
        print(f"sroa-dist {command}: warning: {text}", file=sys.stderr)

    return show
