"""``sroa-dist check STORE`` and ``status --deep``: read every chunk and certificate file of a
store and compare each finished block with the digests recorded when it was written
(:mod:`sroa_dist.sweep.store.integrity`); ``check --repair-metadata`` first rebuilds lost top-level
metadata (:mod:`sroa_dist.sweep.store.repair`), ``check --migrate`` first brings a store of an
older format to the current one (:mod:`sroa_dist.sweep.store.migrate`). ``status`` without
``--deep`` says in one line that it checked nothing.
"""

from __future__ import annotations

import argparse
import shlex

from .commands import _cmd_status
from .errors import CLIError


def _deep_check(store: str) -> int:
    """Print the integrity check of ``store``; 0 if no damage, 1 otherwise."""
    from .._registry import names_only
    from ..sweep.store import require_store, scan_store, store_layout

    require_store(store)  # the same one-line answer as status/info for a non-store
    with names_only():  # reading chunks needs none of the spec's user code
        spec, layout = store_layout(store)
    report = scan_store(store, layout, certificates=spec.output.certificates)
    for line in report.lines():
        print(line)
    _format_note(store)
    vouched = report.n_done - len(report.unvouched) - len(report.damaged)
    files = " and certificate file" if spec.output.certificates else ""
    if report.damaged:
        print(
            f"{store}: {len(report.damaged)} damaged block(s) of {report.n_done} finished; "
            "`sroa-dist run` on this store recomputes exactly them"
        )
        return 1
    print(
        f"{store}: integrity ok: every chunk{files} of {report.n_done} finished block(s) "
        f"read; {vouched} match their recorded digests"
    )
    return 0


def _format_note(store: str) -> None:
    """One line when the store has an older format (its certificates beside it)."""
    import zarr

    from ..sweep import STORE_FORMAT, store_format

    found = store_format(zarr.open_group(store, mode="r").attrs)
    if found < STORE_FORMAT:
        print(
            f"{store}: store format {found} (certificate files beside it, in "
            f"{store.rstrip('/')}.certificates): `sroa-dist check --migrate {store}` moves them "
            f"inside and records format {STORE_FORMAT}, so that a copy of the folder is the "
            "whole store"
        )


def _migrate(store: str, argv: list[str]) -> None:
    """Bring the store to the current format under its writer lease, and say what was done."""
    from .._registry import names_only
    from ..sweep.store import StoreLease, migrate_store, require_store, store_layout

    require_store(store)
    with names_only():
        spec, layout = store_layout(store)
    history = "sroa-dist " + " ".join(map(shlex.quote, argv))
    with StoreLease(store, None, command=history):
        result = migrate_store(store, layout, certificates=spec.output.certificates)
    for line in result.lines():
        print(line)


def _repair(store: str, argv: list[str]) -> None:
    """Rebuild the store's lost top-level metadata, or fail naming what cannot be rebuilt."""
    from ..sweep.store import repair_metadata

    result = repair_metadata(store, history="sroa-dist " + " ".join(map(shlex.quote, argv)))
    if result.lost:
        raise CLIError(
            f"{store}: cannot rebuild its metadata: {'; '.join(result.lost)}; nothing written",
            result.hint,
        )
    for line in result.rebuilt or ["nothing: its top-level metadata is whole"]:
        print(f"rebuilt: {line}")


def _cmd_check(args: argparse.Namespace) -> int:
    """``check``: exit 1 naming each damaged variable and block, 0 when none is damaged
    (``--repair-metadata``: rebuild lost metadata first; ``--migrate``: then bring an older
    store to the current format)."""
    if getattr(args, "repair_metadata", False):
        _repair(args.store, getattr(args, "argv", []))
    if getattr(args, "migrate", False):
        _migrate(args.store, getattr(args, "argv", []))
    return _deep_check(args.store)


def _cmd_status_deep(args: argparse.Namespace) -> int:
    """``status`` with ``--deep``: the status, then the integrity check (exit 1 if either
    says the store is incomplete or damaged)."""
    code = _cmd_status(args)
    if not getattr(args, "deep", False):
        print(
            "integrity: not checked (status reads only the done flags); "
            f"`sroa-dist status --deep {args.store}` or `sroa-dist check {args.store}` reads "
            "every chunk and compares its digests"
        )
        return code
    return max(code, _deep_check(args.store))
