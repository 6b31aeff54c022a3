"""Running a sweep on Dask: the cluster (:mod:`.cluster`), the run itself (:mod:`.execute`),
the block kernel's entry (:mod:`.worker`), per-worker set-up (:mod:`.plugin`), task deadlines
(:mod:`.watchdog`) and GPU routing (:mod:`.routing`).

The door loads nothing until a name is asked for: the cluster and the run import Dask, and
the block kernel (:mod:`.worker`) computes a block without it.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "ClusterConnectError",
    "DEFAULT_DASHBOARD_ADDRESS",
    "DEFAULT_RETRIES",
    "DiskFullError",
    "SweepResult",
    "TASK_DEADLINE_FACTOR",
    "TASK_DEADLINE_FLOOR",
    "default_workers",
    "disk_full",
    "run_sweep",
]

#: The module of this wing that defines each public name.
_HOMES = {
    "ClusterConnectError": "cluster",
    "DEFAULT_DASHBOARD_ADDRESS": "cluster",
    "default_workers": "cluster",
    "DEFAULT_RETRIES": "execute",
    "DiskFullError": "execute",
    "SweepResult": "execute",
    "TASK_DEADLINE_FACTOR": "execute",
    "TASK_DEADLINE_FLOOR": "execute",
    "disk_full": "execute",
    "run_sweep": "execute",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
