"""The sweep-kind registry: which kind of sweep a spec describes, and the one place that
dispatches on it.

A *kind* (tensor, model, ...) is an object satisfying :class:`SweepKind`; its module holds
everything specific to it (schema and checks, grid-point settings and seeds, cost, layout,
block kernel, cube variables, provenance) and imports only the shared modules (:mod:`..spec`,
:mod:`..layout`, :mod:`..cube`, and :mod:`.base`: what the kinds share -- grid points and their
seeds, the timed block loop, the layout skeleton) and the numerical core -- never another kind,
and never this registry. Spec loading, the grid, the worker and storage ask
:func:`kind_of` / :func:`kind_for_raw` and call the kind, so none of them branches on a
kind's name. A kind describes itself (its keys' meanings, dims, variables, cost model, report
and figures), so the reference pages and the CLI read it from the kind.

A new kind is one module: a spec names it by import path, ``kind = "package.module:NAME"``
(:data:`KIND_KEY`), and needs no edit here or anywhere else in the package; the path is kept in
the resolved spec, so the store's copy of the spec finds the kind again (on the workers, and
when the store is opened, reported or resumed). The kinds that ship with the package are the
entries of :data:`_BUILTIN`; :func:`register_kind` registers one by hand.

A raw spec is of the kind its ``kind`` key names, else of the kind whose
:attr:`SweepKind.marker` table it has (``[model]``); a spec with neither is of the default kind
(marker ``None``: ``tensor``). A store records its kind's name in the root attr ``sroa_kind``
(:data:`~..cube.ATTR_KIND`) and a read sets it on the cube, so a cube's kind is :func:`kind_of`
the cube: analysis and ``verify`` ask the kind (its ``analysis`` and ``certificate_tensors``
hooks), never the cube's variables.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import itertools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np

from sroa_dist._registry import is_names_only
from sroa_dist.errors import InputError

from ..cost import SweepEstimate, sweep_estimate
from ..cube import ATTR_KIND, DIMS, Dim, Variable
from ..layout import WORKER_BASE_BYTES, BlockResult, BlockTask, Layout
from ..layout import default_block_size as _block_size_for_cost
from ..spec import (
    SpecError,
    SweepSpec,
    apply_overrides,
    override_for,
    override_items,
    read_spec_file,
)
from .accumulation import ACCUMULATION
from .model import MODEL
from .samples import SAMPLES
from .start_escape import ESCAPE
from .structure import STRUCTURE
from .tensor import TENSOR
from .threshold import THRESHOLD
from .worst_case import WORST_CASE

__all__ = [
    "BUILTIN",
    "KINDS",
    "KIND_KEY",
    "SweepKind",
    "advice",
    "cube_dims",
    "default_block_size",
    "estimate",
    "kind_for_raw",
    "kind_of",
    "load_spec",
    "make_layout",
    "parse_as",
    "point_cost",
    "parse_spec",
    "recorded_kind",
    "resolve_kind",
    "spec_from_dict",
    "spec_of_task",
    "register_kind",
    "variable_order",
]


@runtime_checkable
class SweepKind(Protocol):
    """What a sweep kind implements (one object per kind, registered by :attr:`name`).

    Everything but :meth:`parse` receives a spec the kind itself parsed (an instance of its
    own :class:`~..spec.base.SweepSpec` subclass, whose ``kind`` class attribute is :attr:`name`;
    a grid point's settings are the spec's own ``settings_at(coords)``).

    Optional members, looked up where they are used (a kind without one gets the default):

    - ``analysis``: the kind's analysis hooks, a
      :class:`sroa_dist.analysis.KindAnalysis` (its report section, its figures) or the import
      path ``"package.module:NAME"`` of one. A path, because a kind lives below analysis
      (layers import downwards): the analysis layer imports it when it analyses such a cube.
      Default: the report and figures of SROA's per-step results.
    - ``certificate_tensors(spec, members)``: ``T_hat`` of instances ``(settings,
      replicate)`` sharing a group key, rebuilt exactly as the block drew them: what
      ``sroa-dist verify`` checks stored certificates against. Default: the kind stores no
      certificates, and verify has none to check.
    - ``instance_cost(spec, settings)``: CPU seconds of one instance at a grid point on one
      idle core, from the kind's measured cost model (:mod:`..cost`); what :func:`estimate`
      sums. Default: the settings' own ``cost()``, else :meth:`mean_cost`.
    - ``worker_memory(spec, layout)``: peak bytes of a worker at the sweep's largest task
      (:func:`estimate`). Default: the bare worker process.
    - ``schema``, ``axis_keys`` and ``key_meanings``: the kind's spec grammar (``(vtype,
      default, required)`` per key, :mod:`..spec.fields`), its sweepable keys (dotted key ->
      dim) and what each key means (dotted key -> one line; :data:`~..spec.COMMON_MEANINGS`
      holds the common keys'), which the spec reference page (docs/reference/spec.md) lists.
      Default: the page has no section for it.
    - ``advice``, ``trial_draws``, ``step_meaning``: ``sroa-dist validate``.
    """

    #: The kind's name: the ``kind`` of its specs.
    name: str
    #: Top-level spec table that marks a raw spec as this kind (``None``: the default kind).
    marker: str | None
    #: Every variable this kind may write, in documented order (for reading cubes), declared
    #: in the kind's own module (:func:`~..cube.by_name` of :class:`~..cube.Variable` records).
    all_variables: Mapping[str, Variable]
    #: The kind's sweep dims in cube order, each a :class:`~..cube.Dim` (coordinate dtype,
    #: meaning), declared in the kind's own module: a dim several kinds sweep is picked from
    #: :data:`~..cube.SHARED_AXES`, the kind's own are new ``Dim`` records. Its specs'
    #: ``axis_keys`` name these dims, and a cube's swept axes come in this order. The dims
    #: every cube has (``replicate``, ``step``, ...) are :data:`~..cube.DIMS`, not listed here.
    dims: Mapping[str, Dim]

    def parse(self, raw: Mapping[str, Any], source: str) -> SweepSpec:
        """Validate a raw (TOML-like) spec and resolve its defaults; ``SpecError`` naming the
        source and key otherwise."""

    def mean_cost(self, spec: Any) -> float:
        """Estimated seconds per instance averaged over the grid (sizes blocks)."""

    def layout(
        self,
        spec: Any,
        block_size: int | None = None,
        chunks: Sequence[int] | None = None,
        *,
        memory_limit: int | None = None,
    ) -> Layout:
        """The sweep's :class:`~..layout.Layout` (dims, coordinates, block shape, extents of
        ``step`` and ``component``); ``SpecError`` when a task cannot fit ``memory_limit``."""

    def compute_block(self, task: BlockTask, spec: Any) -> BlockResult:
        """Every instance of one block: a pure function of the task."""

    def variables(self, spec: Any) -> Mapping[str, Variable]:
        """The cube variables this spec's sweep writes, in documented order."""

    def provenance(self, spec: Any) -> dict[str, Any]:
        """Root attrs (``setting_*``) recording the kind's settings that are not axes."""

    def instance(self, spec: Any, settings: Any, replicate: int) -> Any:
        """The instance ``(settings, replicate)`` rebuilt exactly as its block computed it."""


_KINDS: dict[str, SweepKind] = {}
#: Registered sweep kinds by name (read-only view; :func:`register_kind` adds one).
KINDS: Mapping[str, SweepKind] = MappingProxyType(_KINDS)


def register_kind(kind: SweepKind, *, overwrite: bool = False) -> None:
    """Register a sweep kind under ``kind.name``.

    Refused (``ValueError``) for an object that does not implement :class:`SweepKind`, an
    existing name (unless ``overwrite``), or a marker table another kind already claims.
    """
    if not isinstance(kind, SweepKind):
        missing = [m for m in _MEMBERS if not hasattr(kind, m)]
        raise InputError(
            f"sweep kind: expected an object implementing SweepKind; received {kind!r}, "
            f"which lacks {missing}",
            "implement every member of sroa_dist.sweep.kinds.SweepKind "
            "(docs/explanation/architecture.md)",
        )
    name = kind.name
    if not isinstance(name, str) or not name:
        raise InputError(
            f"sweep kind name: expected a non-empty string, received {name!r}",
            "give the kind a non-empty name",
        )
    if name in _KINDS and not overwrite:
        raise InputError(
            f"sweep kind {name!r}: expected a new name; received one already registered",
            "pass overwrite=True to replace it, or choose another name",
        )
    for other in _KINDS.values():
        if other.name != name and other.marker == kind.marker:
            what = f"table [{kind.marker}]" if kind.marker else "the default (no marker)"
            raise InputError(
                f"sweep kind {name!r}: {what} is already kind {other.name!r}'s",
                "give the kind its own marker table and spec class",
            )
    _KINDS[name] = kind


_MEMBERS = (
    "name",
    "marker",
    "all_variables",
    "dims",
    "parse",
    "mean_cost",
    "layout",
    "compute_block",
    "variables",
    "provenance",
    "instance",
)


#: The top-level spec key that names a spec's kind: a registered kind's name, or the import
#: path ``"package.module:NAME"`` of a kind object (one that no registry lists).
KIND_KEY = "kind"


def _is_path(ref: Any) -> bool:
    return isinstance(ref, str) and ":" in ref


def resolve_kind(ref: Any, source: str = "<dict>") -> SweepKind:
    """The kind a spec's ``kind`` key names: a registered kind's name, or the import path
    ``"package.module:NAME"`` of an object implementing :class:`SweepKind`, imported here (on a
    worker too: where the block runs) and registered under its own name for this process.

    Raises ``SpecError`` naming the ``kind`` key and the reason: not a name or a path, a module
    that cannot be imported, a missing attribute, an object without the protocol's members, or
    a name another kind already has. A kind is imported even when a stored spec is read by
    names only (:func:`sroa_dist._registry.names_only`): its spec cannot be read without it.
    """
    if isinstance(ref, str) and ref in _KINDS:
        return _KINDS[ref]
    expected = f"a sweep kind: one of {sorted(_KINDS)} or an import path 'package.module:NAME'"
    if not _is_path(ref):
        raise SpecError(
            source,
            KIND_KEY,
            expected,
            ref,
            "name a kind defined outside the package by its module and object, e.g. "
            "kind = 'mystudies.kinds:MY_KIND'",
        )
    module_name, _, attr = ref.partition(":")
    importable = "an importable sweep kind 'package.module:NAME'"
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(
            source,
            KIND_KEY,
            importable,
            f"<{ref!r}: cannot import module {module_name!r} ({exc})>",
            "the module must be importable where the spec is read and on every worker "
            "(install it or add its directory to PYTHONPATH)",
        ) from None
    kind = getattr(module, attr, None)
    if kind is None:
        raise SpecError(
            source,
            KIND_KEY,
            importable,
            f"<{ref!r}: module {module_name!r} has no attribute {attr!r}>",
            "check the name after the colon",
        )
    missing = [m for m in _MEMBERS if not hasattr(kind, m)]
    if isinstance(kind, type) and not missing:  # the class has every member but is no kind
        raise SpecError(
            source,
            KIND_KEY,
            "an object implementing SweepKind (sroa_dist.sweep.kinds.SweepKind)",
            f"<{ref!r}: a class, not its kind object>",
            "name the kind object (an instance of the class), not its class",
        )
    if missing or not isinstance(kind, SweepKind):
        raise SpecError(
            source,
            KIND_KEY,
            "an object implementing SweepKind (sroa_dist.sweep.kinds.SweepKind)",
            f"<{type(kind).__name__} {ref!r}, which lacks {missing}>",
            "name the kind object; it needs every member of the protocol",
        )
    name = getattr(kind, "name", None)
    if _KINDS.get(name) is kind:  # imported before in this process
        return kind
    try:
        register_kind(kind)
    except InputError as exc:
        raise SpecError(
            source, KIND_KEY, "a kind with a name and marker of its own", ref, str(exc)
        ) from None
    return kind


def kind_for_raw(raw: Any, source: str = "<dict>") -> SweepKind:
    """The kind a raw spec describes: the one its ``kind`` key names (:func:`resolve_kind`),
    else the one whose marker table it has, else the default.

    A spec with the marker tables of two kinds is a ``SpecError`` (it must be split).
    """
    if isinstance(raw, Mapping) and KIND_KEY in raw:
        return resolve_kind(raw[KIND_KEY], source)
    marked = [
        k for k in _KINDS.values() if k.marker and isinstance(raw, Mapping) and k.marker in raw
    ]
    if len(marked) > 1:
        names = sorted(f"[{k.marker}]" for k in marked)
        raise SpecError(
            source,
            marked[1].marker or "<root>",
            "the table of one kind of sweep",
            f"<tables {', '.join(names)}>",
            "a spec describes one kind of sweep; split it into one spec per kind",
        )
    if marked:
        return marked[0]
    default = [k for k in _KINDS.values() if k.marker is None]
    return default[0]


def advice(spec: SweepSpec) -> list[str]:
    """One-line notes on a valid spec that probably does not do what its author wants (e.g.
    replicates of a deterministic family), from its kind's optional ``advice(spec)``."""
    hook = getattr(kind_of(spec), "advice", None)
    return list(hook(spec)) if hook is not None else []


def kind_of(spec_or_cube: Any) -> SweepKind:
    """The registered kind of a parsed spec, or of a cube read from a store (the kind its
    ``sroa_kind`` attr names: :func:`~..store.read.open_results` sets it)."""
    if isinstance(spec_or_cube, SweepSpec):
        return _named(spec_or_cube.kind, "spec kind")
    attrs = getattr(spec_or_cube, "attrs", None)
    if not isinstance(attrs, Mapping) or ATTR_KIND not in attrs:
        raise InputError(
            f"cube kind: expected a parsed spec or a cube whose attrs name its kind "
            f"({ATTR_KIND!r}); received {type(spec_or_cube).__name__} without it",
            "open the store with sroa_dist.open_results (it sets the attr), or set "
            f"ds.attrs[{ATTR_KIND!r}] to one of {sorted(_KINDS)} on a cube built by hand",
        )
    return _named(attrs[ATTR_KIND], "cube kind")


def recorded_kind(attrs: Mapping[str, Any], raw_spec: Any, source: str) -> SweepKind:
    """The kind of a store with root attrs ``attrs`` and stored (raw) spec ``raw_spec``.

    The kind ``sroa_kind`` names; a store written before the attr existed is of its stored
    spec's kind (:func:`kind_for_raw`), derived here once, on read, from the spec alone.
    A kind named by import path in the stored spec (its ``kind`` key) is imported
    (:func:`resolve_kind`) before the name is looked up.
    """
    if isinstance(raw_spec, Mapping) and _is_path(raw_spec.get(KIND_KEY)):
        kind = resolve_kind(raw_spec[KIND_KEY], source)
        if ATTR_KIND in attrs and attrs[ATTR_KIND] != kind.name:
            raise SpecError(
                source,
                KIND_KEY,
                f"the kind the store records ({ATTR_KIND} = {attrs[ATTR_KIND]!r})",
                f"<{raw_spec[KIND_KEY]!r}, whose name is {kind.name!r}>",
                "the module now names another kind: restore the one the store was made with",
            )
        return kind
    if ATTR_KIND in attrs:
        return _named(attrs[ATTR_KIND], f"{source}: {ATTR_KIND}")
    return kind_for_raw(raw_spec, source)


def _named(name: Any, what: str) -> SweepKind:
    try:
        return _KINDS[name]
    except (KeyError, TypeError):
        raise InputError(
            f"{what}: expected one of {sorted(_KINDS)}; received {name!r}",
            "register the kind first (register_kind)",
        ) from None


def parse_as(kind: SweepKind, raw: Mapping[str, Any], source: str = "<dict>") -> SweepSpec:
    """Validate a raw spec with ``kind``'s rules (a store's spec with the kind it records).

    The ``kind`` key is the registry's, not the kind's grammar's: it is taken out before
    ``kind.parse`` and kept in the resolved spec where it is an import path, so the spec's JSON
    (a block task's, the store's copy) names the kind again. A registered name adds nothing
    (the marker table says as much), so built-in specs resolve as they always did.
    """
    if not isinstance(raw, Mapping) or KIND_KEY not in raw:
        return kind.parse(raw, source)
    ref = raw[KIND_KEY]
    if resolve_kind(ref, source) is not kind:
        raise SpecError(
            source,
            KIND_KEY,
            f"the kind {kind.name!r} (its tables' kind)",
            ref,
            "drop the kind key, or give the tables of the kind it names",
        )
    spec = kind.parse({k: v for k, v in raw.items() if k != KIND_KEY}, source)
    if not _is_path(ref):
        return spec
    return dataclasses.replace(spec, data={**spec.data, KIND_KEY: ref})


def parse_spec(raw: Mapping[str, Any], source: str = "<dict>") -> SweepSpec:
    """Validate a raw spec with its kind's rules (:func:`kind_for_raw`, :func:`parse_as`)."""
    return parse_as(kind_for_raw(raw, source), raw, source)


def spec_of_task(spec_json: str) -> SweepSpec:
    """The spec a block task carries (its ``spec_json``), parsed and validated once per
    process and spec text: the spec is frozen, so every later task of the same sweep on this
    worker (its block and its certificate file) reuses the same object."""
    return _spec_of_task(spec_json, is_names_only())


@functools.lru_cache(maxsize=16)
def _spec_of_task(spec_json: str, names_only: bool) -> SweepSpec:
    # ``names_only`` is part of the key: a spec read without importing its user code must
    # never stand in for one that a block runs.
    return parse_spec(json.loads(spec_json), source="<block task>")


def spec_from_dict(raw: Mapping[str, Any], source: str = "<dict>") -> SweepSpec:
    """Validate a spec given as a (TOML-like) dict with its kind's rules and resolve defaults."""
    return parse_spec(raw, source)


def load_spec(path: str | Path, overrides: Sequence[str] | Mapping[str, Any] = ()) -> SweepSpec:
    """Read, override and validate a TOML sweep spec.

    Parameters
    ----------
    path
        The TOML file.
    overrides
        ``KEY=VALUE`` strings as given to ``sroa-dist run --set`` (VALUE is a TOML value; a bare
        word is taken as a string), or a mapping of dotted keys to Python values.

    Raises
    ------
    SpecError
        Naming the file (or the ``--set`` option), the key and the reason.
    """
    source = str(path)
    raw = apply_overrides(read_spec_file(path), overrides, source)
    try:
        spec = parse_spec(raw, source)
    except SpecError as exc:
        setting = override_for(exc.key, overrides)
        if setting is None:
            raise
        # The bad value came from the command line: say so, not the file.
        raise SpecError(
            f"--set {setting}", exc.key, exc.expected, exc.received, exc.given_hint
        ) from None
    return dataclasses.replace(spec, overrides=override_items(overrides))


def default_block_size(spec: SweepSpec, mean_cost: float | None = None) -> int:
    """Instances per task (see :func:`~sroa_dist.layout.default_block_size`); ``mean_cost`` (seconds
    per instance) defaults to the spec's kind's cost model."""
    if mean_cost is None:
        mean_cost = kind_of(spec).mean_cost(spec)
    return _block_size_for_cost(spec, mean_cost)


def point_cost(spec: SweepSpec, settings: Any) -> float:
    """CPU seconds of one instance at grid point ``settings`` of ``spec`` on one idle core:
    its kind's ``instance_cost`` where the kind has one, else the settings' own ``cost()``,
    else the kind's grid mean. What both the estimate and a block's deadline are made of, so
    a grid whose points differ in cost by orders of magnitude (n = 8 to 64 in one search
    spec) gives each block the deadline of its own points, not of the grid's mean."""
    kind = kind_of(spec)
    own = getattr(kind, "instance_cost", None)
    if own is not None:
        return float(own(spec, settings))
    fallback = getattr(settings, "cost", None)
    return float(fallback()) if callable(fallback) else float(kind.mean_cost(spec))


def estimate(
    spec: SweepSpec, layout: Layout, workers: int, blocks: Sequence[int] | None = None
) -> SweepEstimate:
    """What the sweep ``spec`` with ``layout`` costs on ``workers`` workers of an idle machine:
    its kind's ``instance_cost`` at every grid point (once per point; replicates cost the
    same), summed per block and scheduled by :func:`..cost.sweep_estimate`, and its kind's
    ``worker_memory``. ``blocks``: only these blocks (a resumed run's pending ones; default
    all). Costs O(grid points + blocks)."""
    kind = kind_of(spec)
    outer_dims = layout.dims[:-1]  # the last dim is the replicate: the layout's own points
    per_point = np.array(
        [
            point_cost(spec, spec.settings_at(dict(zip(outer_dims, point, strict=True))))
            for point in itertools.product(*layout.coords[:-1])
        ]
    ).reshape(layout.shape[:-1])
    seconds, instances = [], 0
    for b in range(layout.n_blocks) if blocks is None else blocks:
        region = layout.block_region(b)
        reps = region[-1].stop - region[-1].start
        seconds.append(float(per_point[region[:-1]].sum()) * reps)
        instances += layout.block_size(b)
    memory = getattr(kind, "worker_memory", None)
    peak = float(memory(spec, layout)) if memory is not None else float(WORKER_BASE_BYTES)
    return sweep_estimate(seconds, instances, workers, peak)


def make_layout(
    spec: SweepSpec,
    block_size: int | None = None,
    chunks: Sequence[int] | None = None,
    *,
    memory_limit: int | None = None,
) -> Layout:
    """The sweep's layout; block shape from explicit ``chunks``, a ``block_size`` or the default.

    Raises ``SpecError`` if a task would need more than ``memory_limit`` bytes (default:
    :func:`~sroa_dist.layout.default_worker_memory`; ``math.inf`` skips the check).
    """
    return kind_of(spec).layout(spec, block_size, chunks, memory_limit=memory_limit)


def cube_dims(spec_or_cube: Any) -> dict[str, Dim]:
    """Every dim the cube of a spec (or a cube read from a store) may have: its kind's sweep
    dims (:attr:`SweepKind.dims`), then the dims every cube has (:data:`~..cube.DIMS`)."""
    return {**kind_of(spec_or_cube).dims, **DIMS}


def variable_order() -> list[str]:
    """Every variable any registered kind writes, in documented order (kinds in registration
    order): the order :func:`~..store.prepare.open_results` presents a cube's variables in."""
    return list(dict.fromkeys(name for k in _KINDS.values() for name in k.all_variables))


#: The kinds that ship with the package. A kind outside it needs no entry: its specs name it
#: by import path (:data:`KIND_KEY`).
_BUILTIN: tuple[SweepKind, ...] = (
    TENSOR,
    MODEL,
    THRESHOLD,
    WORST_CASE,
    ESCAPE,
    ACCUMULATION,
    SAMPLES,
    STRUCTURE,
)
for _kind in _BUILTIN:
    register_kind(_kind)
#: The kinds that ship with the package, by name (read-only): what the reference pages
#: document, whatever other kinds this process has imported or registered.
BUILTIN: Mapping[str, SweepKind] = MappingProxyType({k.name: k for k in _BUILTIN})
