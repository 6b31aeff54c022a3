"""What a result cube holds: done / damaged / failed / not-run blocks, axis values and
replicates with results. Reports and figures state it, so that a partial sweep is never read as
complete."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import dask
import numpy as np
import xarray as xr

from ..errors import InputError, SroaWarning
from ..sweep import BLOCK, DAMAGED, DONE, FAILED, FAILED_MESSAGES, REPLICATE, STEP
from ._cube import kind_variables, sweep_axes


@dataclass(frozen=True)
class Completeness:
    """How much of a result cube has results: blocks, instances, axis values, replicates.

    Block counts come from the store's bookkeeping variables ``done``, ``failed`` and
    ``damaged`` (dim ``block``; they describe the whole store, also when ``ds`` is a selection
    of it) and are None for a cube without them.  A block counts as done only when it passed
    its integrity check on read (``open_results``): a damaged block read with
    ``damaged="mask"`` is counted apart.  Everything else is read from the data: an instance
    has results when its error variable is non-NaN at some step.

    Attributes
    ----------
    n_instances, instances_done : int
        Instances in the cube (grid points × replicates) and those with results.
    blocks_total, blocks_done, blocks_failed : int or None
        Blocks of the store; failed = the last attempt raised and the block is not done.
    blocks_damaged : int
        Blocks that failed their integrity check on read and were masked (read as fill).
    failures : Mapping[int, str]
        Message of each failed block (as recorded by the sweep).
    axis_values : Mapping[str, tuple]
        Every sweep axis with its coordinate values.
    missing_values, partial_values : Mapping[str, tuple]
        Per sweep axis, the values with no results at all, and those with some but not all.
    replicates : tuple of int
        (min, max) over grid points with any results of the number of replicates present;
        ``replicates_planned`` is the size of the ``replicate`` dimension.
    """

    n_instances: int
    instances_done: int
    blocks_total: int | None
    blocks_done: int | None
    blocks_failed: int | None
    failures: Mapping[int, str]
    axis_values: Mapping[str, tuple]
    missing_values: Mapping[str, tuple]
    partial_values: Mapping[str, tuple]
    replicates: tuple[int, int]
    replicates_planned: int
    blocks_damaged: int = 0

    @property
    def blocks_missing(self) -> int | None:
        """Blocks neither done, damaged nor failed (never run, or interrupted)."""
        if self.blocks_total is None:
            return None
        counted = (self.blocks_done or 0) + (self.blocks_failed or 0) + self.blocks_damaged
        return self.blocks_total - counted

    @property
    def complete(self) -> bool:
        """Every instance has results and every block of the store is done."""
        blocks_ok = self.blocks_total is None or self.blocks_done == self.blocks_total
        return blocks_ok and self.instances_done == self.n_instances

    @property
    def empty(self) -> bool:
        """No instance has results (nothing to analyse)."""
        return self.instances_done == 0

    def replicates_text(self) -> str:
        """``"24 replicates"``, or e.g. ``"3–24 of 24 replicates"`` when some lack results."""
        return replicates_text(*self.replicates, self.replicates_planned)

    def describe(self) -> str:
        """One line for report headers and figure titles.

        E.g. ``incomplete: 28/80 blocks done, 2 failed, 50 not run, 336/960 instances; 3 of 10
        sigma values missing`` or ``complete: 80/80 blocks, 960 instances``.
        """
        head = "complete" if self.complete else "no results" if self.empty else "incomplete"
        return f"{head}: {self.details()}"

    def details(self) -> str:
        """:meth:`describe` without its leading word."""
        if self.complete:
            blocks = (
                f"{self.blocks_total}/{self.blocks_total} blocks, "
                if self.blocks_total is not None
                else ""
            )
            return f"{blocks}{self.n_instances} instances"
        parts = []
        if self.blocks_total is not None:
            damaged = f"{self.blocks_damaged} damaged (masked), " if self.blocks_damaged else ""
            parts.append(
                f"{self.blocks_done}/{self.blocks_total} blocks done, {damaged}"
                f"{self.blocks_failed} failed, {self.blocks_missing} not run"
            )
        parts.append(f"{self.instances_done}/{self.n_instances} instances")
        axes = []
        for axis, values in self.axis_values.items():
            miss = len(self.missing_values.get(axis, ()))
            part = len(self.partial_values.get(axis, ()))
            if miss:
                axes.append(f"{miss} of {len(values)} {axis} values missing")
            if part:
                axes.append(f"{part} of {len(values)} {axis} values partial")
        return ", ".join(parts) + ("; " + ", ".join(axes) if axes else "")


class IncompleteCubeWarning(SroaWarning):
    """The cube analysed lacks results (unfinished or failed blocks): numbers are partial."""


def warn_incomplete(status: Completeness, stacklevel: int = 3) -> None:
    """Raise an :class:`IncompleteCubeWarning` stating ``status`` unless the cube is complete."""
    if not status.complete:
        warnings.warn(
            f"result cube not complete ({status.describe()}): numbers and figures cover only the "
            "instances with results",
            IncompleteCubeWarning,
            stacklevel=stacklevel,
        )


def replicate_span(has: xr.DataArray) -> tuple[int, int]:
    """(min, max) over grid points with any results of the replicates with results.

    ``has`` is :func:`has_results` (or a selection of it); (0, 0) when nothing has results.
    """
    if REPLICATE not in has.dims:
        return (1, 1) if bool(has.any()) else (0, 0)
    counts = np.asarray(has.sum(REPLICATE).values).ravel()
    counts = counts[counts > 0]
    return (int(counts.min()), int(counts.max())) if counts.size else (0, 0)


def replicates_text(lo: int, hi: int, planned: int) -> str:
    """How many replicates back each number: ``24 replicates``, ``3 of 4 replicates``, …"""
    if hi == 0:
        return "no replicates"
    if lo == hi == planned:
        return f"{hi} replicate{'s' if hi != 1 else ''}"
    return f"{hi if lo == hi else f'{lo}–{hi}'} of {planned} replicates"


def has_results(ds: xr.Dataset) -> xr.DataArray:
    """Boolean per instance (sweep axes × replicate): some step has a non-NaN result."""
    for name in (*_RESULT_VARS, *kind_variables(ds)):
        if name in ds.data_vars:
            ran = ds[name].notnull()
            return ran.any(STEP) if STEP in ran.dims else ran
    raise InputError(
        "cube has none of the variables "
        + ", ".join(f"`{v}`" for v in _RESULT_VARS)
        + ": cannot tell which instances have results (is this a sroa-dist result cube?)",
        "open a store written by sroa-dist run (open_results(store))",
    )


_RESULT_VARS = ("vec_err", "lam_err", "lam_hat", "eps_hi")  # eps_hi: threshold cubes


def completeness(ds: xr.Dataset) -> Completeness:
    """What a cube holds: done / failed / not-run blocks, missing axis values, replicates.

    Reports and figures state it in their headers and titles, so that a partial sweep is never
    read as a complete one.  Computes one boolean per instance (cheap next to any analysis).

    Parameters
    ----------
    ds : xarray.Dataset
        Result cube (``open_results``) or a selection of it.

    Returns
    -------
    Completeness
    """
    axes = sweep_axes(ds)
    lazy = {"has": has_results(ds).transpose(*axes, ...)}
    if DONE in ds.data_vars:
        lazy[DONE] = ds[DONE].astype(bool)
        if DAMAGED in ds.data_vars:
            lazy[DAMAGED] = ds[DAMAGED].astype(bool) & ~lazy[DONE]
        if FAILED in ds.data_vars:
            lazy[FAILED] = ds[FAILED].astype(bool) & ~lazy[DONE]
            if DAMAGED in lazy:
                lazy[FAILED] = lazy[FAILED] & ~lazy[DAMAGED]
    (values,) = dask.compute(lazy)
    has = values["has"]
    missing: dict[str, tuple] = {}
    partial: dict[str, tuple] = {}
    axis_values: dict[str, tuple] = {}
    for axis in axes:
        others = [d for d in has.dims if d != axis]
        any_ = np.asarray(has.any(others).values)
        all_ = np.asarray(has.all(others).values)
        vals = tuple(_plain(v) for v in ds[axis].values.tolist())
        axis_values[axis] = vals
        missing[axis] = tuple(v for v, a in zip(vals, any_, strict=True) if not a)
        partial[axis] = tuple(v for v, a, b in zip(vals, any_, all_, strict=True) if a and not b)
    blocks = failed = done = None
    damaged = int(np.asarray(values[DAMAGED].values, dtype=bool).sum()) if DAMAGED in values else 0
    failures: dict[int, str] = {}
    if DONE in values:
        done_mask = np.asarray(values[DONE].values, dtype=bool)
        blocks, done = int(done_mask.size), int(done_mask.sum())
        failed = 0
        if FAILED in values:
            fmask = np.asarray(values[FAILED].values, dtype=bool)
            failed = int(fmask.sum())
            # The messages are for people; the boolean mask decides what failed.
            msgs = dict(ds[FAILED].attrs.get(FAILED_MESSAGES, {}) or {})
            block_ids = np.asarray(ds[BLOCK].values) if BLOCK in ds.coords else None
            for i in np.flatnonzero(fmask):
                b = int(block_ids[i]) if block_ids is not None else int(i)
                failures[b] = str(msgs.get(str(b), ""))
    return Completeness(
        n_instances=int(has.size),
        instances_done=int(has.sum()),
        blocks_total=blocks,
        blocks_done=done,
        blocks_failed=failed,
        failures=MappingProxyType(failures),
        axis_values=MappingProxyType(axis_values),
        missing_values=MappingProxyType({k: v for k, v in missing.items() if v}),
        partial_values=MappingProxyType({k: v for k, v in partial.items() if v}),
        replicates=replicate_span(has),
        replicates_planned=int(ds.sizes.get(REPLICATE, 1)),
        blocks_damaged=damaged,
    )


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
