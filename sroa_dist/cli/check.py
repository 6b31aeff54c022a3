"""``sroa-dist check STORE`` and ``status --deep``: read every chunk of a store and compare
each finished block with the digests recorded when it was written (:mod:`..sweep.integrity`).
"""

from __future__ import annotations

import argparse

from .commands import _cmd_status


def _deep_check(store: str) -> int:
    """Print the integrity check of ``store``; 0 if no damage, 1 otherwise."""
    from .._registry import names_only
    from ..sweep.integrity import scan_store
    from ..sweep.storage import require_store, store_layout

    require_store(store)  # the same one-line answer as status/info for a non-store
    with names_only():  # reading chunks needs none of the spec's user code
        _, layout = store_layout(store)
    report = scan_store(store, layout)
    for line in report.lines():
        print(line)
    vouched = report.n_done - len(report.unvouched) - len(report.damaged)
    if report.damaged:
        print(
            f"{store}: {len(report.damaged)} damaged block(s) of {report.n_done} finished; "
            "`sroa-dist run` on this store recomputes exactly them"
        )
        return 1
    print(
        f"{store}: integrity ok: every chunk of {report.n_done} finished block(s) read; "
        f"{vouched} match their recorded digests"
    )
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    """``check``: exit 1 naming each damaged variable and block, 0 when none is damaged."""
    return _deep_check(args.store)


def _cmd_status_deep(args: argparse.Namespace) -> int:
    """``status`` with ``--deep``: the status, then the integrity check (exit 1 if either
    says the store is incomplete or damaged)."""
    code = _cmd_status(args)
    if not getattr(args, "deep", False):
        return code
    return max(code, _deep_check(args.store))
