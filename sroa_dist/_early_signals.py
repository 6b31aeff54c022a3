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

# On import: sroa_dist imports this module before anything heavy.


def _is_command() -> bool:
    argv0 = os.path.basename(sys.argv[0]) if sys.argv else ""
    orig = list(getattr(sys, "orig_argv", []))
    return argv0 in {"sroa-dist", "sroa-dist.exe"} or orig[1:3] == ["-m", "sroa_dist.cli"]


def _exit(signum: int, frame) -> None:
    os.write(2, b"sroa-dist: interrupted\n")
    os._exit(143 if signum == signal.SIGTERM else 130)


def install_if_command() -> None:
    """Install the early handlers when this process is the ``sroa-dist`` command."""
    if _is_command() and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _exit)


install_if_command()
