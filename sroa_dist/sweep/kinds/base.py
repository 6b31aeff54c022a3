"""What the sweep kinds share, written once: a grid point's settings and seeds
(:class:`GridPoint`), the grid's points (:func:`grid_points`), the block loop that runs, times
and stores each instance (:func:`timed_block`), a worker's memory limit (:func:`worker_limit`)
and the members of the kind protocol that most kinds fill the same way (:class:`KindBase`).

A kind imports this module as it imports the shared wings (:mod:`..layout`, :mod:`..spec`);
nothing here knows any kind. Every kind's seeds are made by :meth:`GridPoint.seed`, so the
rule that makes a result a pure function of (seed, coordinates, replicate) has one home; which
fields enter a kind's seed, in which order, stays the kind's own (its ``seed_fields``), and
``tests/data/kind_seeds.json`` pins the bits of every builtin kind's seeds.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import time
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..cube import Variable
from ..layout import (
    BlockResult,
    BlockTask,
    Layout,
    allocate,
    default_block_size,
    default_worker_memory,
    grid_layout,
    stable_hash32,
)
from ..spec import SweepSpec

__all__ = ["GridPoint", "KindBase", "grid_points", "timed_block", "worker_limit"]


@dataclasses.dataclass(frozen=True)
class GridPoint:
    """Base of a kind's grid-point settings (a frozen dataclass; instances at a point differ
    only by replicate).

    A subclass names its seeded fields in ``seed_fields``: each enters the spawn key as
    ``stable_hash32(field, value)``, in that order, so a field left out (the method, mostly) is
    paired across its values rather than seeded. ``group_fields`` (default: every field) make
    :meth:`group_key`, the instances that may share one batched core call.
    """

    seed_fields: ClassVar[tuple[str, ...]] = ()
    group_fields: ClassVar[tuple[str, ...] | None] = None

    @classmethod
    def at(cls, spec: SweepSpec, coords: Mapping[str, Any]) -> Any:
        """The point of ``spec``'s grid at ``coords``, for settings whose fields are the spec's
        axes by dim name (``axis_keys``), each read with :meth:`~..spec.SweepSpec.setting`
        and converted to its field's type."""
        types = _field_types(cls)
        return cls(**{d: types[d](spec.setting(k, coords)) for k, d in spec.axis_keys.items()})

    def hashed(self, *names: str) -> tuple[int, ...]:
        """``stable_hash32(name, value)`` of each named field, in order."""
        return tuple(stable_hash32(name, getattr(self, name)) for name in names)

    def seed_key(self) -> tuple[int, ...]:
        """Spawn-key prefix of the point: its ``seed_fields``, hashed."""
        return self.hashed(*self.seed_fields)

    def spawn_key(self, replicate: int, *part: int) -> tuple[int, ...]:
        """Spawn key of replicate ``replicate`` (and of one ``part`` of it, where an instance
        draws several independent streams): ``(*seed_key(), replicate, *part)``."""
        return (*self.seed_key(), int(replicate), *(int(x) for x in part))

    def seed(self, master: int, replicate: int, *part: int) -> np.random.SeedSequence:
        """The seed of replicate ``replicate`` (``part``: see :meth:`spawn_key`) under the
        spec's master seed."""
        return np.random.SeedSequence(master, spawn_key=self.spawn_key(replicate, *part))

    def group_key(self) -> tuple[Any, ...]:
        """The values of ``group_fields`` (default: every field)."""
        names = self.group_fields or tuple(f.name for f in dataclasses.fields(self))
        return tuple(getattr(self, name) for name in names)


@functools.cache
def _field_types(cls: type) -> dict[str, Callable[[Any], Any]]:
    return typing.get_type_hints(cls)


def grid_points(spec: SweepSpec) -> Iterator[Any]:
    """The settings of every point of ``spec``'s grid (replicates aside), in C order of the
    cube's dims."""
    dims, coords = spec.instance_grid()
    for point in itertools.product(*coords[:-1]):
        yield spec.settings_at(dict(zip(dims[:-1], point, strict=True)))


def timed_block(
    task: BlockTask,
    spec: SweepSpec,
    variables: Mapping[str, Variable],
    solve: Callable[[Any, int], Any],
    store: Callable[[dict[str, np.ndarray], tuple[int, ...], Any, int, Any], None],
) -> BlockResult:
    """Every instance of one block, one after the other (a pure function of the task,
    timings aside): ``solve(settings, replicate)``, timed, then ``store(out, idx, settings,
    replicate, result)`` into the block's arrays and its seconds into ``solve_time`` (a
    variable every kind using this loop has). An instance whose ``solve`` returns None is left
    at its fill values (a point the kind skips)."""
    t_start = time.perf_counter()
    out = allocate(task, variables)
    kernel = 0.0
    for idx, settings, replicate in task.instances(spec):
        t0 = time.perf_counter()
        result = solve(settings, replicate)
        if result is None:
            continue
        dt = time.perf_counter() - t0
        kernel += dt
        store(out, idx, settings, replicate, result)
        out["solve_time"][idx] = dt
    wall = time.perf_counter() - t_start
    return BlockResult(task.index, out, kernel, wall, math.prod(task.shape))


def worker_limit(memory_limit: float | None) -> tuple[float, str]:
    """The memory a worker may use, and where the figure comes from: ``memory_limit`` where
    given (``math.inf`` skips every check), else :func:`~..layout.default_worker_memory`."""
    return default_worker_memory() if memory_limit is None else (memory_limit, "given limit")


class KindBase:
    """The kind protocol's members that most kinds fill the same way (:class:`.SweepKind`).

    A kind sets ``all_variables`` and ``mean_cost``; its other members that only call its
    module's functions are those functions (``parse = staticmethod(my_spec_from_dict)``).
    """

    all_variables: Mapping[str, Variable]
    mean_cost: Callable[[Any], float]
    #: One instance per block (a search of seconds to minutes: the runner hands the next one to
    #: whichever worker is free) instead of blocks sized by the cost model.
    one_per_block: ClassVar[bool] = False

    def variables(self, spec: Any) -> Mapping[str, Variable]:
        """Every variable of the kind (a cube has them all, whatever the spec)."""
        return self.all_variables

    def extents(self, spec: Any) -> tuple[int, int]:
        """Lengths of the cube's ``step`` and ``component`` dims: the spec's ``n_steps``, and
        its largest rank."""
        return int(spec.n_steps), int(max(spec.ranks))

    def layout(
        self,
        spec: Any,
        block_size: int | None = None,
        chunks: Sequence[int] | None = None,
        *,
        memory_limit: int | None = None,
    ) -> Layout:
        """The grid's layout (:func:`~..layout.grid_layout`): blocks from ``chunks``, a
        ``block_size``, or the default (one instance, or the cost model's size), then
        :meth:`check_memory`."""
        if self.one_per_block:
            default: Callable[[], int] = lambda: 1  # noqa: E731
        else:
            default = lambda: default_block_size(spec, self.mean_cost(spec))  # noqa: E731
        layout = grid_layout(spec, block_size, chunks, default, *self.extents(spec))
        self.check_memory(spec, layout, memory_limit)
        return layout

    def check_memory(self, spec: Any, layout: Layout, memory_limit: float | None) -> None:
        """``SpecError`` where a task of ``layout`` cannot fit a worker's memory; by default
        none is refused (the kind's instances are small, or bounded by its validation)."""
