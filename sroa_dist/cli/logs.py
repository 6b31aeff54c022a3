"""Logging of the ``sroa-dist`` CLI: Dask/bokeh/tornado chatter kept off the progress line."""

from __future__ import annotations

import logging
import os
import sys

_NOISY = ("distributed", "bokeh", "tornado", "asyncio")
_CLOSED_SOCKET = ("WebSocketClosedError", "StreamClosedError")


#: Shutdown chatter of the embedded cluster: on a busy machine a worker may take longer than the
#: nanny's few seconds to close after the run ended, and is then killed -- nothing is lost.
_SHUTDOWN = ("Worker process still alive after",)


class _NoiseFilter(logging.Filter):
    """Drop records a closed dashboard websocket causes (browser tab closed early), and the
    nanny's note that it killed a worker slow to close (:data:`_SHUTDOWN`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and type(exc).__name__ in _CLOSED_SOCKET:
            return False
        text = record.getMessage()
        return not any(name in text for name in (*_CLOSED_SOCKET, *_SHUTDOWN))


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
