"""The result cube's vocabulary: dimensions, coordinate dtypes, variables and bookkeeping names.

What every cube shares (the RESULT CUBE table of ``docs/architecture.md``): the bookkeeping
names and attrs, the dims every cube has (:data:`DIMS`), the sweep dims more than one kind
sweeps (:data:`SHARED_AXES`), and the :class:`Dim` and :class:`Variable` records. A kind
declares its own sweep dims and variables in its own module (:attr:`SweepKind.dims
<sroa_dist.sweep.kinds.SweepKind.dims>`, ``all_variables``; the tensor kind's are in
:mod:`sroa_dist.sweep.kinds.tensor.variables`): storage and analysis read them through the
kind registry, so a new kind adds nothing here. Plain data: no numpy, Dask, zarr or xarray.

A variable over the instance grid has the sweep's dims (its swept axes in its kind's
:attr:`~sroa_dist.sweep.kinds.SweepKind.dims` order, then ``replicate``) followed by its own
:attr:`Variable.dims` (``step``, ``component``); bookkeeping variables have the ``block`` dim
only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = [
    "ATTR_FORMAT",
    "BOOKKEEPING",
    "DIMS",
    "SHARED_AXES",
    "STORE_FORMAT",
    "Dim",
    "Variable",
    "by_name",
    "store_format",
]

# --------------------------------------------------------------------------------------------
# Bookkeeping names

#: Instance index at a grid point (the innermost sweep dim of every cube).
REPLICATE = "replicate"
#: SROA iteration j (1-based): the dim of per-step variables.
STEP = "step"
#: Coordinate index of an estimated component (the last dim of ``v_hat``).
COMPONENT = "component"
#: Block (task) index: the dim of the bookkeeping variables.
BLOCK = "block"
#: Block finished and its data written (the only completion record).
DONE = "done"
#: When a block's data was written (POSIX seconds).
DONE_TIME = "done_time"
#: Last attempt at a block raised; messages in this variable's ``messages`` attr.
FAILED = "failed"
#: Attr of ``failed`` holding the error message per block index.
FAILED_MESSAGES = "messages"
#: Read-time bookkeeping (never stored): the blocks that failed their integrity check on read
#: and read as fill values (``open_results(..., damaged="mask")``), and the Dataset attr that
#: says, for people, what was wrong with each (JSON ``{block: [problem, ...]}``).
DAMAGED, DAMAGED_BLOCKS = "damaged", "damaged_blocks"
#: What a read does with a damaged block: refuse the read (the default), or mask the block.
DAMAGED_MODES = ("raise", "mask")
#: Root attrs that identify a sroa-dist store and its layout.
ATTR_SPEC, ATTR_SWEEP_NAME, ATTR_LAYOUT_TOKEN = "spec", "sweep_name", "layout_token"
#: Root attr naming the store's sweep kind (its registered name); a read sets it on the cube, and
#: analysis and ``verify`` dispatch on it through the kind registry.
ATTR_KIND = "sroa_kind"
#: Root attr recording the store's format (an int; a store without it has format 1).
ATTR_FORMAT = "store_format"
#: The format this code writes. Format 1 (no :data:`ATTR_FORMAT`): stores made before
#: per-block digests or before certificates moved inside the store; a finished block without a
#: recorded digest is "cannot vouch" there, and certificate files live beside the store
#: (``<store>.certificates/``). Format 2: every finished block records its digests (a missing
#: one is damage, except for the blocks a migration from format 1 listed as written before
#: digests), and certificate files live inside the store (``<store>/certificates/``), so a
#: copy of the store folder is the whole store.
STORE_FORMAT = 2
#: Prefix of the root attrs recording a non-swept setting (``setting_n``, ``setting_basis``).
SETTING_PREFIX = "setting_"

# --------------------------------------------------------------------------------------------
# Dimensions


@dataclass(frozen=True)
class Dim:
    """One dimension of the cube: its coordinate dtype and attrs."""

    name: str
    #: Coordinate dtype: ``"str"`` (zarr v3 variable-length string), ``"f8"`` or ``"i8"``.
    dtype: str
    long_name: str
    units: str = "1"

    @property
    def attrs(self) -> dict[str, str]:
        """The coordinate's attrs as stored."""
        return {"long_name": self.long_name, "units": self.units}


#: Sweep dims that more than one kind sweeps, declared once so that the kinds agree on their
#: dtype and meaning; a kind's :attr:`~sroa_dist.sweep.kinds.SweepKind.dims` picks from these.
SHARED_AXES: Mapping[str, Dim] = MappingProxyType(
    {
        d.name: d
        for d in (
            Dim("noise", "str", "noise model of E's entries (paper Section 2.3)"),
            Dim("n", "i8", "tensor dimension n"),
            Dim("p", "i8", "tensor order p"),
            Dim("rank", "i8", "number of SOD components r"),
            Dim("method", "str", "rank-one solver method"),
            Dim("eps", "f8", "operator norm ||E|| the noise was scaled to"),
        )
    }
)
#: The dims every cube has, whatever its kind: the instance index, and the dims of per-step,
#: per-component and bookkeeping variables.
DIMS: Mapping[str, Dim] = MappingProxyType(
    {
        d.name: d
        for d in (
            Dim(REPLICATE, "i8", "instance index at a grid point (0-based)"),
            Dim(STEP, "i8", "SROA iteration j (1-based)"),
            Dim(COMPONENT, "i8", "coordinate index of v_hat_j"),
            Dim(BLOCK, "i8", "block (task) index, C order over the chunk grid"),
        )
    }
)


def store_format(attrs: Mapping[str, object]) -> int:
    """The format of a store with these root attrs (1 when none is recorded)."""
    return int(attrs.get(ATTR_FORMAT, 1))  # type: ignore[call-overload]


# --------------------------------------------------------------------------------------------
# Variables


@dataclass(frozen=True)
class Variable:
    """One variable of the cube.

    ``dims`` are the variable's own dims after the sweep's (``()`` per instance, ``("step",)``
    per SROA step, ``("step", "component")`` for vectors), or ``("block",)`` for bookkeeping
    (``over_grid`` False). The fill value (unwritten instances) follows from the dtype: NaN
    for floats, False for booleans.
    """

    name: str
    dims: tuple[str, ...]
    #: ``"f8"`` or ``"bool"``.
    dtype: str
    #: What the variable means (its ``long_name`` attr).
    long_name: str
    units: str = "1"
    #: Further attrs, in stored order: a ``paper`` reference, a ``note``.
    extra: tuple[tuple[str, str], ...] = ()
    #: Whether the variable spans the instance grid (False: one value per block).
    over_grid: bool = True

    @property
    def per_step(self) -> bool:
        """Whether the variable has one value per SROA step."""
        return STEP in self.dims

    @property
    def fill(self) -> float | bool:
        """Value of instances (or blocks) not written yet."""
        return False if self.dtype == "bool" else math.nan

    @property
    def attrs(self) -> dict[str, str]:
        """The variable's attrs as stored."""
        return {"long_name": self.long_name, "units": self.units, **dict(self.extra)}


def by_name(*records: Variable | Dim) -> Mapping[str, Any]:
    """Variables (or dims) by name, read-only, in the order given: how a kind declares its
    ``all_variables`` and ``dims``."""
    return MappingProxyType({r.name: r for r in records})


#: Bookkeeping variables (one element per block; each task writes only its own).
BOOKKEEPING: Mapping[str, Variable] = by_name(
    Variable(DONE, (BLOCK,), "bool", "block finished and its data written", over_grid=False),
    Variable(
        DONE_TIME,
        (BLOCK,),
        "f8",
        "when the block's data was written (POSIX time)",
        units="s",
        over_grid=False,
    ),
    Variable(
        FAILED,
        (BLOCK,),
        "bool",
        "last attempt at the block raised (see attrs of this variable)",
        over_grid=False,
    ),
)
