"""Where each published first-crossing study lives as a sweep: the study spec under
``sweeps/studies`` whose store (``docs/data/studies/<study>.zarr``) holds the study's rows,
and which of the store's instances they are. A study is named as it was first published (the
JSON of ``docs/data/nscaling`` or ``docs/data/rate`` its script wrote: ``tilt-p3``,
``theorem-p4-c2``, ``lambda-min``; the files were retired once every row came back from a
store, docs/results/regression.md).

One spec may hold several studies (``nscaling-value-p3`` sweeps three families and two
methods: four studies), and one study may come back from several specs (``lambda-min``'s
three weight profiles are three specs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["LABEL_KEYS", "RERUNS", "Rerun", "labelled_reruns", "rerun_of"]


@dataclasses.dataclass(frozen=True)
class Rerun:
    """The instances of study ``study``'s store that hold published rows: those whose sweep
    coordinates (``noise``, ``method``, ``p``: the spec's value where the spec does not sweep
    it) equal ``where``, at the published ``sizes``."""

    study: str
    where: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: The sizes the rows were published at, where the store holds more (None: all it holds).
    sizes: tuple[int, ...] | None = None

    def selects(self, row: Mapping[str, Any]) -> bool:
        return all(row.get(k) == v for k, v in self.where.items())

    def publishes(self, n: int) -> bool:
        """Whether the published rows include size ``n``."""
        return self.sizes is None or n in self.sizes


def _sweep(study: str, sizes: tuple[int, ...] | None = None, **where: Any) -> Rerun:
    return Rerun(study, MappingProxyType(where), sizes=sizes)


#: Published study -> its rerun: one :class:`Rerun` for every row, or a mapping from a row's
#: label (the study's label key, below) to its rerun, in the order its table lists the labels.
RERUNS: Mapping[str, Rerun | Mapping[str, Rerun]] = MappingProxyType(
    {
        "tilt-p3": _sweep("nscaling-value-p3", noise="coherent-tilt", method="sshopm"),
        "power-tilt-p3": _sweep("nscaling-value-p3", noise="coherent-tilt", method="power"),
        "tiltg-p3": _sweep("nscaling-value-p3", noise="coherent-tilt+gaussian", method="sshopm"),
        "gauss-p3": _sweep("nscaling-value-p3", noise="gaussian", method="sshopm"),
        "tilt-p4": _sweep("nscaling-tilt-p4", method="sshopm"),
        "power-tilt-p4": _sweep("nscaling-tilt-p4", method="power"),
        "tilt-p5": _sweep("nscaling-tilt-p5"),
        "tilt-p5-big": _sweep("nscaling-tilt-p5"),
        "tiltg-p4": _sweep("nscaling-dense-p4", noise="coherent-tilt+gaussian"),
        "gauss-p4": _sweep("nscaling-dense-p4", noise="gaussian"),
        "gauss-p3-rec": _sweep("nscaling-recovery-p3", method="sshopm"),
        "power-gauss-p3-rec": _sweep("nscaling-recovery-p3", method="power"),
        **{
            f"theorem-p{p}-c{c}": _sweep(f"theorem-p{p}-c{c}") for p in (3, 4) for c in ("0.5", "2")
        },
        "tilt-p6": _sweep("tilt-p6"),
        # The weights are not in a sweep's seed: the three profiles search the same draws, and
        # the default profile's rows (n <= 64) are theorem-p3-c0.5's (same seed and settings).
        "lambda-min": MappingProxyType(
            {
                "default (target 0.95)": _sweep("theorem-p3-c0.5", sizes=(8, 16, 32, 64)),
                "linear [0.5, 1]": _sweep("lambda-min-linear"),
                "target 0.5": _sweep("lambda-min-target"),
            }
        ),
        "attractor-thresholds": MappingProxyType(
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
#: The key of a row's label in a study whose rows come back from several reruns.
LABEL_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "lambda-min": "weights",
        "attractor-thresholds": "solver",
    }
)


def labelled_reruns(name: str) -> Mapping[str, Rerun]:
    """Label -> rerun of study ``name`` whose rows come back from several specs, in the order
    its table lists them (empty for any other study)."""
    found = RERUNS.get(name)
    return {} if found is None or isinstance(found, Rerun) else found


def rerun_of(name: str) -> Rerun:
    """The rerun of every row of published study ``name`` (one whose rows come from a single
    spec)."""
    found = RERUNS.get(name)
    if not isinstance(found, Rerun):
        known = ", ".join(k for k, v in RERUNS.items() if isinstance(v, Rerun))
        raise KeyError(f"published study {name!r}: not a single-spec study (known: {known})")
    return found
