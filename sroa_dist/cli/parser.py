"""The ``sroa-dist`` argument parser: subcommands, their options and argument types."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

from ..studies import (
    DEFAULT_RADIUS,
    RUN_CRITERIA,
    check_criterion_option,
    criterion_option_expected,
)
from .check import _cmd_check, _cmd_status_deep
from .commands import (
    _cmd_info,
    _cmd_plot,
    _cmd_recheck,
    _cmd_report,
    _cmd_run,
    _cmd_validate,
    _cmd_verify,
)
from .errors import CLIError

_STRICT_HELP = "exit 1 if the cube is incomplete (blocks failed or not run); outputs are written"


class ArgumentsError(CLIError):
    """Bad command-line arguments, found by the parser; ``prog`` is the (sub)command."""

    def __init__(self, prog: str, message: str, hint: str):
        super().__init__(message, hint)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and a hint (``error: ...``, ``hint: ...``,
    exit 2) instead of the usage block: raised as :class:`ArgumentsError` for ``main``."""

    def error(self, message: str):  # type: ignore[override]
        choice = re.search(r"^(.*): invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice and "COMMAND" in message:
            names = choice.group(3).replace("'", "")
            raise ArgumentsError(
                self.prog,
                f"expected a command ({names}); received {choice.group(2)!r}",
                f"`{self.prog} --help` says what each command does",
            )
        if choice:
            names = choice.group(3).replace("'", "")
            raise ArgumentsError(
                self.prog,
                f"{choice.group(1)}: expected one of {names}; received {choice.group(2)!r}",
                f"`{self.prog} --help` says what each choice means",
            )
        if "required: COMMAND" in message:
            raise ArgumentsError(
                self.prog,
                "expected a command, e.g. `sroa-dist run SPEC`; received none",
                f"`{self.prog} --help` lists the commands",
            )
        raise ArgumentsError(
            self.prog, message, f"`{self.prog} --help` lists the arguments and what they take"
        )


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


def _criterion_option(name: str) -> Callable[[str], float]:
    """An argparse type: a value of criterion option ``name`` (finite and > 0 for ``c`` and
    ``radius``: :data:`~sroa_dist.studies.criteria.CRITERION_OPTIONS`), else a message naming
    what was received. (``float`` alone took ``-1``, ``0`` and ``nan``, and the report then
    dropped the criterion's lines without a word.)"""

    def parse(text: str) -> float:
        try:
            return check_criterion_option(name, float(text))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {criterion_option_expected(name)}; received {text!r}"
            ) from None

    parse.__name__ = name  # argparse names the type in some messages
    return parse


def build_parser() -> argparse.ArgumentParser:
    """The ``sroa-dist`` argument parser."""
    # The run defaults live with the sweep service (light to import: no Dask until a run).
    from ..sweep.run import (
        DEFAULT_DASHBOARD_ADDRESS,
        DEFAULT_RETRIES,
        TASK_DEADLINE_FACTOR,
        TASK_DEADLINE_FLOOR,
    )
    from ..sweep.store import DEFAULT_LEASE_TIMEOUT

    p = _Parser(
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
        "--workers",
        type=_positive_int,
        help="processes of the embedded cluster (default and most: the CPUs available)",
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
        help="extra attempts of a block after a fault that may pass (store I/O, memory, a "
        "worker restarted past --task-timeout, embedded cluster); errors of the numerics are "
        f"reported at once (default {DEFAULT_RETRIES})",
    )
    r.add_argument(
        "--task-timeout",
        type=_positive_float,
        help="seconds a block task may run before its worker is restarted and the block "
        f"retried (default: {TASK_DEADLINE_FACTOR:g} x the cost model's estimate, at least "
        f"{TASK_DEADLINE_FLOOR:g} s)",
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
    v.add_argument(
        "--workers",
        type=_positive_int,
        help="workers the wall-time estimate is for (default: the CPUs available, as run)",
    )
    v.set_defaults(func=_cmd_validate)

    s = sub.add_parser("status", help="done fraction and failed blocks of a store")
    s.add_argument("store")
    s.add_argument(
        "--deep", action="store_true", help="also read every chunk and compare digests (check)"
    )
    s.set_defaults(func=_cmd_status_deep)

    ck = sub.add_parser(
        "check",
        help="read every chunk and certificate file of a store, compare digests; exit 1 "
        "naming damage",
    )
    ck.add_argument("store")
    ck.add_argument(
        "--repair-metadata",
        action="store_true",
        help="first rebuild lost top-level metadata (zarr.json, spec and provenance "
        "attributes, coordinates) from the copy the store keeps; never deletes anything",
    )
    ck.add_argument(
        "--migrate",
        action="store_true",
        help="first bring a store of an older format to the current one: its certificate "
        "files move from STORE.certificates into the store (the old folder goes only once "
        "every file is copied and verified; a `run` on the store does the same)",
    )
    ck.set_defaults(func=_cmd_check)

    i = sub.add_parser("info", help="dims, variables and provenance of a store")
    i.add_argument("store")
    i.add_argument("--full", action="store_true", help="do not shorten long attributes")
    i.set_defaults(func=_cmd_info)

    ve = sub.add_parser(
        "verify", help="re-check the SOS certificates of a store ([output] certificates = true)"
    )
    ve.add_argument("store")
    ve.set_defaults(func=_cmd_verify)

    rc = sub.add_parser(
        "recheck",
        help="re-check a saved worst case's claim error > c·||E|| with a certified (or exact) "
        "norm and global SROA steps (sroa_dist.WorstCaseResult.save); exit 1 if it does not "
        "stand",
    )
    rc.add_argument("file", help="a .npz file written by WorstCaseResult.save")
    rc.add_argument(
        "--c", type=float, default=None, help="the constant to check (default: the file's claim)"
    )
    rc.set_defaults(func=_cmd_recheck)

    pl = sub.add_parser("plot", help="figures of a result cube (sroa_dist.analysis)")
    pl.add_argument("store")
    pl.add_argument("--out", default="figures", help="output directory (default: figures)")
    pl.add_argument("--format", "--formats", dest="formats", help="comma-separated, e.g. png,svg")
    pl.add_argument("--strict", action="store_true", help=_STRICT_HELP)
    _damaged_argument(pl)
    _criterion_arguments(pl)
    pl.set_defaults(func=_cmd_plot)

    rp = sub.add_parser("report", help="report of a result cube (sroa_dist.analysis)")
    rp.add_argument("store")
    rp.add_argument("--out", default="report", help="output path without extension")
    rp.add_argument("--format", "--formats", dest="formats", help="comma-separated, e.g. md,html")
    rp.add_argument("--strict", action="store_true", help=_STRICT_HELP)
    _damaged_argument(rp)
    _criterion_arguments(rp)
    rp.set_defaults(func=_cmd_report)
    return p


def _damaged_argument(sub: argparse.ArgumentParser) -> None:
    """What ``plot`` and ``report`` do with a damaged store (``open_results(damaged=...)``)."""
    from ..sweep import DAMAGED_MODES

    sub.add_argument(
        "--damaged",
        choices=DAMAGED_MODES,
        default=DAMAGED_MODES[0],
        help="a store with damaged blocks: raise (default: refuse, naming them) or mask (read "
        "them as missing, say so in the outputs, exit 1)",
    )


#: Default c of the value criterion on the command line: where the tilt's accumulation shows.
VALUE_C = 0.5


def _criterion_arguments(sub: argparse.ArgumentParser) -> None:
    """The success criterion of the n-scaling figures and tables (``plot`` and ``report``)."""
    sub.add_argument(
        "--criterion",
        choices=tuple(RUN_CRITERIA),
        default="recovery",
        help="success criterion: recovery (every ||v_hat - v|| <= --radius), value (every "
        "|lam_hat - lam| <= --c * eps) or theorem (Theorem 3.1's bounds); default recovery",
    )
    sub.add_argument(
        "--c",
        type=_criterion_option("c"),
        default=VALUE_C,
        help=f"the value criterion's multiple of eps (default {VALUE_C}; at c = 1 the value "
        "criterion almost never fails, c = 2 is Theorem 3.1's bound)",
    )
    sub.add_argument(
        "--radius",
        type=_criterion_option("radius"),
        default=DEFAULT_RADIUS,
        help=f"the recovery criterion's radius on the vector error (default {DEFAULT_RADIUS})",
    )
