"""The SDP drivers by name, so a ``relaxation`` table (``rank_one(..., relaxation={...})``, a
sweep spec's ``[solver.options.certified.relaxation]``) can choose one: ``driver`` (``"scs"``,
the default; ``"clarabel"``; ``"admm"``) and ``device`` (``"cpu"``, the default; ``"cuda"``,
the ADMM driver only).

The names and their option rules are static: a spec that asks for ``device = "cuda"`` is
checked on a machine without a GPU (the client of a GPU cluster), and refused only where a
relaxation actually runs without one (:func:`get_driver`, one line with a hint).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from .admm_driver import ADMM_SETTING_RULES, admm_driver
from .backend import DEVICES
from .clarabel_driver import CLARABEL, CLARABEL_SETTING_RULES
from .driver import Rule, SdpDriver
from .scs_driver import SCS, SCS_SETTING_RULES

__all__ = [
    "DEFAULT_DRIVER",
    "DRIVERS",
    "SELECTION_RULES",
    "DriverEntry",
    "driver_label",
    "get_driver",
    "relaxation_device",
    "selection",
    "split_selection",
]


@dataclass(frozen=True)
class DriverEntry:
    """A driver by name: its settings' rules, the devices it runs on, and how to get it."""

    setting_rules: Mapping[str, Rule | None]
    devices: tuple[str, ...]
    make: Callable[[str], SdpDriver]


#: The drivers a ``relaxation`` table may name.
DRIVERS: Mapping[str, DriverEntry] = {
    "scs": DriverEntry(SCS_SETTING_RULES, ("cpu",), lambda device: SCS),
    "clarabel": DriverEntry(CLARABEL_SETTING_RULES, ("cpu",), lambda device: CLARABEL),
    "admm": DriverEntry(ADMM_SETTING_RULES, DEVICES, admm_driver),
}
DEFAULT_DRIVER = "scs"

#: Value rules of the two selection keys of a ``relaxation`` table.
SELECTION_RULES: dict[str, Rule] = {
    "driver": (lambda v: isinstance(v, str) and v in DRIVERS, f"one of {sorted(DRIVERS)}"),
    "device": (lambda v: isinstance(v, str) and v in DEVICES, f"one of {list(DEVICES)}"),
}


def selection(table: Mapping[str, Any] | None) -> tuple[str, str]:
    """``(driver, device)`` named by a ``relaxation`` table (defaults filled in), checked
    against each other: a ``ValueError`` of one line for an unknown name or a device the
    driver does not run on. Imports nothing device-specific."""
    table = table or {}
    name = table.get("driver", DEFAULT_DRIVER)
    device = table.get("device", "cpu")
    for key, value in (("driver", name), ("device", device)):
        ok, expected = SELECTION_RULES[key]
        if not ok(value):
            raise InputError(
                f"relaxation.{key}: expected {expected}, received {value!r}",
                f"see the {name} driver's settings in docs/certificates.md",
            )
    devices = DRIVERS[name].devices
    if device not in devices:
        raise InputError(
            f"relaxation.device: driver {name!r} runs on {' or '.join(devices)}, received "
            f"{device!r}",
            "use driver 'admm' for device 'cuda'",
        )
    return name, device


def split_selection(table: Mapping[str, Any] | None) -> tuple[dict[str, Any], str, str]:
    """A ``relaxation`` table without its selection keys, and the ``(driver, device)`` it
    names (see :func:`selection`)."""
    name, device = selection(table)
    rest = {k: v for k, v in (table or {}).items() if k not in SELECTION_RULES}
    return rest, name, device


def get_driver(name: str = DEFAULT_DRIVER, device: str = "cpu") -> SdpDriver:
    """The driver ``name`` on ``device``: a one-line ``ValueError`` with a hint where it
    cannot run here (e.g. ``device="cuda"`` without CuPy or without a GPU)."""
    name, device = selection({"driver": name, "device": device})
    return DRIVERS[name].make(device)


def driver_label(name: str, device: str) -> str:
    """How a result records the driver that bounded it, e.g. ``"admm/cuda"``."""
    return f"{name}/{device}"


def relaxation_device(options: Mapping[str, Any]) -> str:
    """The device a rank-one method's options run its relaxation on (``"cpu"`` unless their
    ``relaxation`` table says otherwise), e.g. for routing the work to a worker with a GPU."""
    table = options.get("relaxation") or {}
    return str(table.get("device", "cpu")) if isinstance(table, Mapping) else "cpu"
