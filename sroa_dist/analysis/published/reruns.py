"""Where each published first-crossing study comes back as a sweep: the study spec under
``sweeps/studies`` whose store (``docs/data/studies/<study>.zarr``) reproduces a JSON file of
``docs/data/nscaling`` or ``docs/data/rate``, and which of the store's instances are the
published rows.

One spec may hold several published files (``nscaling-value-p3`` sweeps three families and two
methods: four files), and one file may come back from several specs (``lambda-min.json``'s
three weight profiles are three specs). A published row the sweep service cannot express says
why instead of naming a store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["LABEL_KEYS", "RERUNS", "Rerun", "labelled_reruns", "rerun_of"]


@dataclasses.dataclass(frozen=True)
class Rerun:
    """The instances of study ``study``'s store that rerun published rows: those whose sweep
    coordinates (``noise``, ``method``, ``p``: the spec's value where the spec does not sweep
    it) equal ``where``. ``study`` is empty for rows no spec reruns, and ``why`` says why."""

    study: str
    where: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    why: str = ""
    #: The sizes the rows were published at, where the store holds more (None: all it holds).
    sizes: tuple[int, ...] | None = None

    def selects(self, row: Mapping[str, Any]) -> bool:
        return all(row.get(k) == v for k, v in self.where.items())

    def publishes(self, n: int) -> bool:
        """Whether the published rows include size ``n`` (rebuilding them from the store)."""
        return self.sizes is None or n in self.sizes


def _sweep(study: str, sizes: tuple[int, ...] | None = None, **where: Any) -> Rerun:
    return Rerun(study, MappingProxyType(where), sizes=sizes)


#: Published JSON (relative to the repository root) -> its rerun: one :class:`Rerun` for every
#: row, or a mapping from a row's label (the file's label key, below) to its rerun, in the order
#: the file's table lists the labels (the order a tree without the file rebuilds its rows in).
RERUNS: Mapping[str, Rerun | Mapping[str, Rerun]] = MappingProxyType(
    {
        "docs/data/nscaling/tilt-p3.json": _sweep(
            "nscaling-value-p3", noise="coherent-tilt", method="sshopm"
        ),
        "docs/data/nscaling/power-tilt-p3.json": _sweep(
            "nscaling-value-p3", noise="coherent-tilt", method="power"
        ),
        "docs/data/nscaling/tiltg-p3.json": _sweep(
            "nscaling-value-p3", noise="coherent-tilt+gaussian", method="sshopm"
        ),
        "docs/data/nscaling/gauss-p3.json": _sweep(
            "nscaling-value-p3", noise="gaussian", method="sshopm"
        ),
        "docs/data/nscaling/tilt-p4.json": _sweep("nscaling-tilt-p4", method="sshopm"),
        "docs/data/nscaling/power-tilt-p4.json": _sweep("nscaling-tilt-p4", method="power"),
        "docs/data/nscaling/tilt-p5.json": _sweep("nscaling-tilt-p5"),
        "docs/data/nscaling/tilt-p5-big.json": _sweep("nscaling-tilt-p5"),
        "docs/data/nscaling/tiltg-p4.json": _sweep(
            "nscaling-dense-p4", noise="coherent-tilt+gaussian"
        ),
        "docs/data/nscaling/gauss-p4.json": _sweep("nscaling-dense-p4", noise="gaussian"),
        "docs/data/nscaling/gauss-p3-rec.json": _sweep("nscaling-recovery-p3", method="sshopm"),
        "docs/data/nscaling/power-gauss-p3-rec.json": _sweep(
            "nscaling-recovery-p3", method="power"
        ),
        **{
            f"docs/data/rate/theorem/theorem-p{p}-c{c}.json": _sweep(f"theorem-p{p}-c{c}")
            for p in (3, 4)
            for c in ("0.5", "2")
        },
        "docs/data/rate/tilt-p6.json": _sweep("tilt-p6"),
        # The weights are not in a sweep's seed: the three profiles search the same draws, and
        # the default profile's rows (n <= 64) are theorem-p3-c0.5's (same seed and settings).
        "docs/data/rate/lambda-min.json": MappingProxyType(
            {
                "default (target 0.95)": _sweep("theorem-p3-c0.5", sizes=(8, 16, 32, 64)),
                "linear [0.5, 1]": _sweep("lambda-min-linear"),
                "target 0.5": _sweep("lambda-min-target"),
            }
        ),
        "docs/data/rate/attractor-thresholds.json": MappingProxyType(
            {
                "power L=20": _sweep("attractor-thresholds", method="power"),
                "power AGHKT": _sweep("attractor-thresholds-aghkt"),
                "sshopm random starts": _sweep("attractor-thresholds-random-starts"),
                "sshopm spectral starts": _sweep("attractor-thresholds", method="sshopm"),
                "global (sshopm checked)": _sweep("attractor-thresholds-global"),
                "global (certified)": _sweep("attractor-thresholds-certified"),
            }
        ),
    }
)
#: The key of a row's label in a file whose rows come back from several reruns.
LABEL_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "docs/data/rate/lambda-min.json": "weights",
        "docs/data/rate/attractor-thresholds.json": "solver",
    }
)


def labelled_reruns(rel: str) -> Mapping[str, Rerun]:
    """Label -> rerun of a file whose rows come back from several studies, in the order its
    table lists them (empty for any other file)."""
    found = RERUNS.get(rel)
    return {} if found is None or isinstance(found, Rerun) else found


def rerun_of(rel: str, row: Mapping[str, Any] | None = None) -> Rerun | None:
    """The rerun of published file ``rel`` (of its row ``row`` where the file's rows come back
    from several; None without ``row`` there), or None when no spec reruns it."""
    found = RERUNS.get(rel)
    if found is None or isinstance(found, Rerun):
        return found
    return None if row is None else found.get(str(row[LABEL_KEYS[rel]]))
