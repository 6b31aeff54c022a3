"""The tables and figures of docs/results, generated from the published studies' data.

``python3 dev.py results`` regenerates every marked block of the results pages
(``<!-- results:NAME -->`` … ``<!-- /results:NAME -->``: :mod:`.blocks`) and the figures they
show; ``python3 dev.py results --check`` exits 1 naming each page whose blocks drifted from
their data, and writes nothing. Prose outside the blocks stays hand-written.

Data: the study stores under ``docs/data/studies/<study>.zarr``, read through
``open_results`` (every block digest-checked), and committed JSON inputs such as the
predictions (:mod:`.sources`). Every block names the sources it used and their fingerprints.
Pages and blocks: :mod:`.pages`; the rate study's data, tables and figures: :mod:`.rate_data`,
:mod:`.rate_tables`, :mod:`.rate_figures`. The regression table of the first-published numbers
against the stores (docs/results/regression.md) was generated until the first-published files
were retired, and is kept as it was last generated.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .pages import GENERATOR, PAGES, render, stale, write

__all__ = ["GENERATOR", "PAGES", "main", "render", "stale", "write"]


def main(argv: list[str] | None = None) -> int:
    """``python -m sroa_dist.analysis.published [ROOT] [--check] [--figures]``."""
    args = argparse.ArgumentParser(
        prog="results", description="regenerate the tables and figures of docs/results"
    )
    args.add_argument("root", nargs="?", default=".", help="the repository root (default: .)")
    args.add_argument("--check", action="store_true", help="name drifted pages, write nothing")
    args.add_argument("--figures", action="store_true", help="redraw every figure")
    ns = args.parse_args(argv)
    if ns.check:
        drifted = stale(ns.root)
        for page, names in drifted.items():
            print(f"stale: {page} (blocks: {', '.join(names)}); run {GENERATOR}", file=sys.stderr)
        return 1 if drifted else 0
    for path in write(ns.root, figures=ns.figures):
        print(f"wrote {Path(path)}")
    return 0
