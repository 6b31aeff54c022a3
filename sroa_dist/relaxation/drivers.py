"""The SDP drivers by name, so a ``relaxation`` table (``rank_one(..., relaxation={...})``, a
sweep spec's ``[solver.options.certified.relaxation]``) can choose one: ``driver`` (``"scs"``,
the default; ``"clarabel"``; ``"admm"``; a driver added with :func:`register_driver`; or an
import path ``"package.module:DRIVER"`` to an object implementing
:class:`~.driver.SdpDriver`) and ``device`` (``"cpu"``, the default; ``"cuda"``, the ADMM
driver only).

A new driver is one module implementing :class:`~.driver.SdpDriver`: registered, or named by
its import path (imported where the relaxation runs, e.g. on a sweep worker), it needs no edit
elsewhere. The names and their option rules are static: a spec that asks for ``device =
"cuda"`` is checked on a machine without a GPU (the client of a GPU cluster), and refused only
where a relaxation actually runs without one (:func:`get_driver`, one line with a hint).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .._registry import check_entry, import_entry, is_names_only
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
    "RelaxationTable",
    "default_driver",
    "driver_entry",
    "driver_label",
    "get_driver",
    "register_driver",
    "relaxation_device",
    "selection",
]


@dataclass(frozen=True)
class DriverEntry:
    """A driver by name: its settings' rules, the devices it runs on, and how to get it."""

    setting_rules: Mapping[str, Rule | None]
    devices: tuple[str, ...]
    make: Callable[[str], SdpDriver]


_DRIVERS: dict[str, DriverEntry] = {
    "scs": DriverEntry(SCS_SETTING_RULES, ("cpu",), lambda device: SCS),
    "clarabel": DriverEntry(CLARABEL_SETTING_RULES, ("cpu",), lambda device: CLARABEL),
    "admm": DriverEntry(ADMM_SETTING_RULES, DEVICES, admm_driver),
}
#: The drivers a ``relaxation`` table may name (read-only; :func:`register_driver` adds one).
DRIVERS: Mapping[str, DriverEntry] = MappingProxyType(_DRIVERS)
#: The driver a relaxation runs on when nothing names one (its one home).
DEFAULT_DRIVER = "scs"
_BUILTIN = tuple(_DRIVERS)
#: The members an object needs to be taken for an :class:`~.driver.SdpDriver`.
_DRIVER_MEMBERS = ("name", "setting_rules", "configure", "runs")


def _is_driver_name(v: Any) -> bool:
    return isinstance(v, str) and (v in _DRIVERS or ":" in v)


#: Value rules of the two selection keys of a ``relaxation`` table.
SELECTION_RULES: dict[str, Rule] = {
    "driver": (
        _is_driver_name,
        f"one of {sorted(_BUILTIN)}, a driver added with register_driver, or an import path "
        "'package.module:DRIVER'",
    ),
    "device": (lambda v: isinstance(v, str) and v in DEVICES, f"one of {list(DEVICES)}"),
}


def _entry_of(obj: Any, what: str) -> DriverEntry:
    """``obj`` as a :class:`DriverEntry`: itself, or a driver object that runs on the CPU."""
    if isinstance(obj, DriverEntry):
        return obj
    missing = [m for m in _DRIVER_MEMBERS if not hasattr(obj, m)]
    if missing:
        raise InputError(
            f"{what}: expected an SdpDriver (members {list(_DRIVER_MEMBERS)}) or a "
            f"DriverEntry; received {obj!r}, which lacks {missing}",
            "implement sroa_dist.relaxation.driver.SdpDriver (docs/explanation/certificates.md)",
        )
    return DriverEntry(obj.setting_rules, ("cpu",), lambda device: obj)


def register_driver(
    name: str, driver: Any, *, devices: tuple[str, ...] = ("cpu",), overwrite: bool = False
) -> DriverEntry:
    """Add an SDP driver under ``name``, so a ``relaxation`` table may name it.

    ``driver`` implements :class:`~.driver.SdpDriver` (it then runs on the ``devices`` given)
    or is a :class:`DriverEntry`. An existing name is replaced only with ``overwrite=True``;
    the built-in drivers stay. Unregistered drivers can be named by import path too.
    """
    entry = _entry_of(driver, f"driver {name!r}")
    if not isinstance(driver, DriverEntry):
        entry = DriverEntry(entry.setting_rules, tuple(devices), entry.make)
    if name in _BUILTIN:
        raise InputError(
            f"driver {name!r} is built in and cannot be replaced",
            "register yours under another name",
        )
    check_entry(
        _DRIVERS, "SDP driver", name, entry.make, overwrite=overwrite, expected="(device) -> driver"
    )
    _DRIVERS[name] = entry
    return entry


def unregister_driver(name: str) -> None:
    """Remove a driver added with :func:`register_driver` (the built-in ones stay)."""
    if name not in _BUILTIN:
        _DRIVERS.pop(name, None)


def driver_entry(name: str) -> DriverEntry:
    """The entry of a registered driver name, or of the driver an import path
    ``"package.module:DRIVER"`` names (imported here, so on the worker where it runs)."""
    if name in _DRIVERS:
        return _DRIVERS[name]
    obj = import_entry(
        name,
        "relaxation.driver",
        "SDP driver",
        "an SdpDriver or a DriverEntry",
        accept=(object,),
    )
    return _entry_of(obj, f"relaxation.driver {name!r}")


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
                f"see the {name} driver's settings in docs/explanation/certificates.md",
            )
    if is_names_only() and name not in _DRIVERS:
        return name, device  # a stored spec's import path: read, not imported
    devices = driver_entry(name).devices
    if device not in devices:
        raise InputError(
            f"relaxation.device: driver {name!r} runs on {' or '.join(devices)}, received "
            f"{device!r}",
            "use driver 'admm' for device 'cuda'",
        )
    return name, device


class RelaxationTable(Mapping[str, Any]):
    """A ``relaxation`` table that was parsed and checked once (by the option check of the
    method it belongs to, :func:`sroa_dist.methods.check_options`): still the table as given
    (a read-only mapping, so specs, routing and provenance read it as before), plus the
    ``driver`` and ``device`` it names (defaults filled in) and its other keys, the solve
    options and the driver's settings (:attr:`solve_options`). What runs the relaxation reads
    these instead of parsing the table again."""

    def __init__(self, table: Mapping[str, Any] | None, driver: str, device: str):
        self._table = dict(table or {})
        self.driver = driver
        self.device = device

    def __getitem__(self, key: str) -> Any:
        return self._table[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return repr(self._table)

    @property
    def solve_options(self) -> dict[str, Any]:
        """The table without its selection keys (``driver``, ``device``)."""
        return {k: v for k, v in self._table.items() if k not in SELECTION_RULES}


def default_driver() -> SdpDriver:
    """The driver a relaxation runs on when none is given: :data:`DEFAULT_DRIVER` on the CPU."""
    return driver_entry(DEFAULT_DRIVER).make("cpu")


def get_driver(name: str = DEFAULT_DRIVER, device: str = "cpu") -> SdpDriver:
    """The driver ``name`` on ``device``: a one-line ``ValueError`` with a hint where it
    cannot run here (e.g. ``device="cuda"`` without CuPy or without a GPU)."""
    name, device = selection({"driver": name, "device": device})
    return driver_entry(name).make(device)


def driver_label(name: str, device: str) -> str:
    """How a result records the driver that bounded it, e.g. ``"admm/cuda"``."""
    return f"{name}/{device}"


def relaxation_device(options: Mapping[str, Any]) -> str:
    """The device a rank-one method's options run its relaxation on (``"cpu"`` unless their
    ``relaxation`` table says otherwise), e.g. for routing the work to a worker with a GPU."""
    table = options.get("relaxation") or {}
    return str(table.get("device", "cpu")) if isinstance(table, Mapping) else "cpu"
