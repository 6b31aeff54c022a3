"""Ctrl-C and SIGTERM for the ``sroa-dist`` command before its ``main`` runs.

Loading the numerical core takes about a second (several on a busy machine). A signal in that
time would end the command with a ``KeyboardInterrupt`` traceback; nothing has been touched
yet, so the handler installed here ends the process with one line and the usual status (130 /
143). It is installed only when this process is the ``sroa-dist`` command (never for a
library user), and :func:`sroa_dist.cli.main` replaces it at once with the run's handlers.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

__all__ = ["install_if_command"]


def _is_command(orig_argv: list[str]) -> bool:
    """Whether the interpreter's own command line runs ``sroa-dist`` (or ``-m sroa_dist.cli``).

    ``sys.orig_argv``, not ``sys.argv``: the worker processes of the embedded cluster are
    started by multiprocessing, which copies the parent's ``sys.argv`` into them.
    """
    args = iter(orig_argv[1:])
    for arg in args:
        if arg == "-m":
            return next(args, "") == "sroa_dist.cli"
        if arg == "-c":
            return False
        if arg in ("-X", "-W"):  # options with a separate value
            next(args, None)
        elif not arg.startswith("-"):
            return os.path.basename(arg) in ("sroa-dist", "sroa-dist.exe")
    return False


def _exit(signum: int, frame) -> None:
    os.write(2, b"sroa-dist: interrupted\n")
    os._exit(143 if signum == signal.SIGTERM else 130)


def install_if_command() -> None:
    """Install the early handlers when this process is the ``sroa-dist`` command."""
    command = _is_command(list(getattr(sys, "orig_argv", [])))
    if command and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _exit)


install_if_command()  # on import: the CLI imports this module before anything heavy
