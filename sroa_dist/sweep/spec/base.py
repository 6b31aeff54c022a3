"""What every sweep kind shares: the spec base class, ``[solver]`` and ``[output]`` sections,
the keys common to all kinds, ``--set`` bookkeeping and the method checks.

A kind module (:mod:`..kinds.tensor.spec`, :mod:`..kinds.model`, ...) builds its schema from
:data:`COMMON_SCHEMA` and its spec class on :class:`SweepSpec`; kinds share these helpers and
never each other's names. Pure data: no Dask, zarr or xarray.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from sroa_dist._registry import is_names_only
from sroa_dist.errors import InputError, with_hint
from sroa_dist.methods import (
    METHODS,
    OptionError,
    check_options,
    current_revisions,
    method_options,
    resolve_method,
    revision_options,
)
from sroa_dist.problems import is_deterministic

from ..cube import REPLICATE
from .fields import Axis, SpecError

__all__ = [
    "COMMON_SCHEMA",
    "RESULTS_DIR",
    "OutputSection",
    "SolverSection",
    "SweepSpec",
    "check_method",
    "check_method_options",
    "check_methods",
    "default_store",
    "override_for",
    "override_items",
    "replicate_advice",
    "resumable_as",
    "solver_options",
]

#: Folder of the default store, ``results/<name>.zarr``.
RESULTS_DIR = "results"

#: Keys every kind of spec has, with the same meaning: ``(vtype, default, required)`` (see
#: :mod:`.fields`). A kind adds its own tables (``[tensor]``, ``[model]``, ...) beside them.
COMMON_SCHEMA: dict[str, Any] = {
    "name": ("name", None, True),
    "description": ("str", "", False),
    "seed": ("seed", 0, False),
    "replicates": ("int", 1, False),
    "solver": {
        "method": ("str_axis", "certified", False),
        "steps": ("int", None, False),
        "options": ("table", {}, False),
        "norm_method": ("str", None, False),
        "norm_options": ("table", {}, False),
        "revisions": ("table", {}, False),
    },
    "output": {
        "vectors": ("bool", False, False),
        "certificates": ("bool", False, False),
    },
}


def default_store(name: str) -> str:
    """The store a sweep named ``name`` writes to when no ``--store`` is given; always inside
    ``results/`` (spec names are checked; a name that would leave it is a ``ValueError``)."""
    path = Path(RESULTS_DIR) / f"{name}.zarr"
    if not name or name.startswith(".") or path.parent != Path(RESULTS_DIR):
        raise InputError(
            f"sweep name {name!r}: expected a file name; it would leave results/",
            "use a name of letters, digits, '.', '_' and '-'",
        )
    return str(path)


def solver_options(data: Mapping[str, Any], method: str, *, norm: bool = False) -> dict[str, Any]:
    """Keyword options for ``method`` from ``[solver.options]`` (or ``[solver.norm_options]``)
    of a resolved spec dict; see :meth:`SolverSection.options_for`."""
    return SolverSection(**data["solver"]).options_for(method, norm=norm)


@dataclass(frozen=True)
class SolverSection:
    """``[solver]``: the rank-one method(s), SROA steps, and the ``||E||`` solver."""

    method: Any
    steps: int | None
    options: Mapping[str, Any]
    norm_method: str | None
    norm_options: Mapping[str, Any]
    #: Method -> the algorithm revision to compute with (:attr:`sroa_dist.methods.Method.
    #: revision`); a method not named runs its current revision. A store records the revisions
    #: it was made with (:meth:`SweepSpec.pinned`) and keeps them when resumed or extended.
    revisions: Mapping[str, int] = field(default_factory=dict)

    @property
    def methods(self) -> tuple[str, ...]:
        """The method(s) as a tuple (one, or the ``method`` axis as written)."""
        return tuple(self.method) if isinstance(self.method, list) else (self.method,)

    def norm_table_key(self, method: str) -> str:
        """Which table the norm options of ``method`` come from: ``norm_options``, or
        ``options`` when that is empty and the norm uses one of the sweep's own methods."""
        if not self.norm_options and method in self.methods:
            return "options"
        return "norm_options"

    def options_for(self, method: str, *, norm: bool = False) -> dict[str, Any]:
        """Keyword options for ``method`` (SROA steps, or with ``norm`` the ``||E||`` solve).

        Plain keys apply to every method; a sub-table named after a method (``[solver.options.
        certified]``) applies to that method only, so a ``method`` axis can tune each method.
        ``norm_options`` default to ``options`` when the norm uses the solver's own method.
        An older revision of the method (``[solver.revisions]``) adds the option values that
        reproduce it, under the spec's own.
        """
        out = revision_options(method, self.revisions.get(method))
        out.update(self.own_options(method, norm=norm))
        return out

    def own_options(self, method: str, *, norm: bool = False) -> dict[str, Any]:
        """The options the spec itself states for ``method`` (plain keys, then its sub-table),
        without those a pinned revision adds: what a caller that applies the revisions itself
        (:func:`sroa_dist.find_threshold`) is handed."""
        return options_given(
            getattr(self, self.norm_table_key(method) if norm else "options"), method
        )


def options_given(table: Mapping[str, Any], method: str) -> dict[str, Any]:
    """The options an ``[solver.options]``-shaped ``table`` gives ``method``: its plain keys,
    then the method's sub-table (no revision's options)."""
    out = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
    sub = table.get(method)
    out.update(sub if isinstance(sub, Mapping) else {})
    return out


@dataclass(frozen=True)
class OutputSection:
    """``[output]``: what is stored beyond the cube's default variables."""

    vectors: bool = False
    certificates: bool = False


@dataclass(frozen=True)
class SweepSpec:
    """A validated, resolved sweep spec (pure data, hashable pieces, JSON round-trip).

    The base of every kind's spec class (a kind adds its sections, :attr:`ranks` and
    :meth:`settings_at`). Use :func:`~sroa_dist.sweep.kinds.load_spec` or
    :func:`~sroa_dist.sweep.kinds.spec_from_dict` to build one. ``data`` is the resolved spec as
    a plain dict (defaults filled in, range tables kept as written); ``axes`` maps each
    possibly swept key to an :class:`Axis`. The package reads the spec through the typed
    sections (:attr:`solver`, :attr:`output` and the kind's own) and the derived properties,
    never through ``data``.
    """

    data: dict[str, Any]
    source: str = "<dict>"
    axes: dict[str, Axis] = field(default_factory=dict, compare=False)
    #: The ``--set KEY=VALUE`` items applied on load, so later checks can blame them.
    overrides: tuple[str, ...] = field(default=(), compare=False)

    #: Name of the sweep kind (:mod:`..kinds`) whose spec class this is.
    kind: ClassVar[str] = ""
    #: Dotted spec key -> dimension name, for the keys that may be swept, in cube order (its
    #: kind's ``dims`` order): the swept axes of the cube come in this order.
    axis_keys: ClassVar[Mapping[str, str]] = {}

    def error(self, key: str, expected: str, received: Any, hint: str = "") -> SpecError:
        """A :class:`SpecError` about ``key``, naming the ``--set`` item that gave it if one
        did, else the spec's source."""
        setting = override_for(key, self.overrides)
        source = self.source if setting is None else f"--set {setting}"
        return SpecError(source, key, expected, received, hint)

    # -- convenient views -------------------------------------------------------------------
    @property
    def name(self) -> str:
        """Sweep name (default store: ``results/<name>.zarr``)."""
        return self.data["name"]

    @property
    def description(self) -> str:
        """Free-text description."""
        return self.data.get("description", "")

    @property
    def seed(self) -> int:
        """Master seed."""
        return self.data["seed"]

    @property
    def replicates(self) -> int:
        """Instances per grid point."""
        return self.data["replicates"]

    @property
    def default_store(self) -> str:
        """The store written when no ``--store`` is given: ``results/<name>.zarr``."""
        return default_store(self.name)

    @functools.cached_property
    def solver(self) -> SolverSection:
        """The ``[solver]`` section."""
        return SolverSection(**self.data["solver"])

    @functools.cached_property
    def output(self) -> OutputSection:
        """The ``[output]`` section."""
        return OutputSection(**self.data["output"])

    def get(self, dotted: str) -> Any:
        """Value of a dotted key in the resolved spec."""
        node: Any = self.data
        for part in dotted.split("."):
            node = node[part]
        return node

    @property
    def ranks(self) -> tuple[int, ...]:
        """SROA ranks on the grid (each kind says where they come from)."""
        raise NotImplementedError(f"{type(self).__name__}.ranks")

    def steps_for(self, rank: int) -> int:
        """SROA steps of an instance of rank ``rank``: ``solver.steps``, else ``rank``."""
        return int(self.solver.steps or rank)

    @property
    def n_steps(self) -> int:
        """Length of the cube's ``step`` dim: the most SROA steps of any instance."""
        return self.steps_for(max(self.ranks))

    def options_for(self, method: str, *, norm: bool = False) -> dict[str, Any]:
        """Keyword options for ``method``; see :meth:`SolverSection.options_for`."""
        return self.solver.options_for(method, norm=norm)

    def settings_at(self, coords: Mapping[str, Any]) -> Any:
        """The settings of the grid point whose swept coordinates are ``coords`` (dim ->
        value): the kind's own settings type (seed key, group key, cost)."""
        raise NotImplementedError(f"{type(self).__name__}.settings_at")

    def setting(self, key: str, coords: Mapping[str, Any]) -> Any:
        """Value of the possibly swept ``key`` at the grid point whose swept coordinates are
        ``coords`` (dim -> value): the coordinate if swept, else the scalar, else None."""
        dim = self.axis_keys[key]
        if dim in coords:
            return coords[dim]
        ax = self.axes.get(key)
        return None if ax is None else ax.scalar

    def sweep_dims(self) -> list[str]:
        """Swept dimensions in canonical cube order (without ``replicate`` and ``step``)."""
        return [self.axis_keys[k] for k in self._axis_keys_in_order() if self.axes[k].swept]

    def _axis_keys_in_order(self) -> list[str]:
        order = {d: i for i, d in enumerate(self.axis_keys.values())}
        return sorted(self.axes, key=lambda k: order[self.axis_keys[k]])

    def instance_grid(self) -> tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]:
        """Dims (swept dims in cube order, then ``replicate``) and their coordinate values."""
        dims = self.sweep_dims()
        by_dim = {self.axis_keys[k]: ax for k, ax in self.axes.items()}
        coords = [tuple(by_dim[d].values) for d in dims]
        return (*dims, REPLICATE), (*coords, tuple(range(self.replicates)))

    def to_dict(self) -> dict[str, Any]:
        """The resolved spec as a JSON-serialisable dict (a deep copy)."""
        return copy.deepcopy(self.data)

    def to_json(self) -> str:
        """Canonical JSON text of the resolved spec (sorted keys)."""
        return json.dumps(self.data, sort_keys=True, separators=(",", ":"))

    def instance_settings(self) -> dict[str, Any]:
        """Everything that changes an instance's result, except axis *values*.

        Two specs whose ``instance_settings`` agree compute bitwise the same result for every
        instance they have in common, so a store written by one can be resumed or extended by
        the other. Axis values are excluded (extending an axis is compatible) but whether a key
        is swept is included (it changes the cube's dimensions).
        """
        d = self.to_dict()
        d.pop("name", None)
        d.pop("description", None)
        d.pop("replicates", None)
        for key in self.axes:
            sect, leaf = key.split(".")
            ax = self.axes[key]
            d[sect][leaf] = "<axis>" if ax.swept else ax.scalar
        # The store pins the revisions (pinned): a resumed store keeps computing with its own.
        d["solver"].pop("revisions", None)
        return d

    def pinned(
        self, stored: Mapping[str, int] | None = None, old: SweepSpec | None = None
    ) -> SweepSpec:
        """This spec with every registered method's revision stated in ``[solver.revisions]``:
        the spec's own entry, else ``stored`` (a store's; a method it does not name ran
        revision 1, the revision of every method before revisions were recorded), else the
        current revision (``stored`` None: a new store). ``ValueError`` naming the method where
        the spec's own entry differs from the store's. ``old`` (the store's spec) lets a kind
        pin its own revisions too (:meth:`pin_own`)."""
        own = dict(self.solver.revisions)
        if stored is None:
            base = current_revisions()
        else:
            base = {name: int(stored.get(name, 1)) for name in current_revisions()}
            clash = sorted(m for m, r in own.items() if m in base and base[m] != r)
            if clash:
                m = clash[0]
                raise InputError(
                    f"solver.revisions.{m}: the store was made with revision {base[m]} of "
                    f"method {m!r}; received {own[m]}",
                    "keep the store's revisions (drop the override), or write a new store",
                )
        data = self.to_dict()
        data["solver"]["revisions"] = {**base, **own}
        return replace(self, data=data).pin_own(old)

    def pin_own(self, old: SweepSpec | None) -> SweepSpec:
        """This spec with the kind's own pinned settings stated (``old``: the store's spec,
        ``None`` for a new store); a kind without any returns it unchanged."""
        return self


def resumable_as(old: SweepSpec, new: SweepSpec) -> tuple[SweepSpec, str | None]:
    """Whether a store of spec ``old`` can be resumed or extended with spec ``new``: ``new``
    with the store's method revisions pinned (:meth:`SweepSpec.pinned`), and ``None`` or the
    differences in their instance settings that forbid it."""
    a, b = old.instance_settings(), new.instance_settings()
    diffs = []
    for sect in sorted(set(a) | set(b)):
        va, vb = a.get(sect), b.get(sect)
        if isinstance(va, dict) and isinstance(vb, dict):
            diffs += [
                f"{sect}.{k}: {va.get(k)!r} -> {vb.get(k)!r}"
                for k in sorted(set(va) | set(vb))
                if va.get(k) != vb.get(k)
            ]
        elif va != vb:
            diffs.append(f"{sect}: {va!r} -> {vb!r}")
    if diffs:
        return new, "; ".join(diffs)
    try:
        return new.pinned(old.solver.revisions, old), None
    except ValueError as exc:
        return new, str(exc)


def replicate_advice(spec: SweepSpec, random_weights: bool) -> list[str]:
    """One line when replicates > 1 and a model on the ``noise.model`` axis is deterministic
    (:func:`sroa_dist.problems.perturbations.is_deterministic`) while the weights are fixed
    (``random_weights`` false): its replicates are rotations of one instance and repeat one
    result, up to SROA's random starts."""
    axis = spec.axes.get("noise.model")
    if axis is None or spec.replicates <= 1 or random_weights:
        return []
    models = [str(m) for m in axis.values]
    fixed = [m for m in models if is_deterministic(m)]
    if not fixed:
        return []
    random = [m for m in models if m not in fixed]
    then = (
        f"they spread only {random}"
        if random
        else "set replicates = 1 unless SROA's random starts are what you study"
    )
    return [
        f"{spec.source}: noise.model {fixed} draws no randomness (E turns with the basis), so "
        f"its {spec.replicates} replicates repeat one result up to SROA's random starts; {then}"
    ]


def override_items(overrides: Sequence[str] | Mapping[str, Any]) -> tuple[str, ...]:
    if isinstance(overrides, Mapping):
        return tuple(f"{k}={v!r}" for k, v in overrides.items())
    return tuple(overrides)


def override_for(key: str, overrides: Sequence[str] | Mapping[str, Any]) -> str | None:
    """The ``--set`` item that wrote ``key`` (or a table holding it), if any; the last wins."""
    for item in reversed(override_items(overrides)):
        okey = item.split("=", 1)[0].strip().replace("__", ".")
        if key == okey or key.startswith(okey + ".") or okey.startswith(key + "."):
            return item
    return None


def check_method(name: Any, key: str, source: str) -> str:
    """A method name of a spec (``solver.method``, ``solver.norm_method``, a method sub-table)
    must name a registered rank-one method or a user method by import path
    (``"package.module:function"``, imported where the block runs); a :class:`SpecError` naming
    ``key`` otherwise, with the resolver's reason (the same errors as perturbation families).
    """
    if isinstance(name, str) and name in METHODS:
        return name
    try:
        resolve_method(name)
    except (ValueError, TypeError) as exc:
        raise SpecError(
            source,
            key,
            f"one of {sorted(METHODS)} or an import path 'package.module:function'",
            name,
            with_hint(exc),
        ) from None
    return name


def check_methods(
    solver: Mapping[str, Any],
    methods_on_axis: Sequence[str],
    source: str,
    table_keys: Sequence[str] = ("options", "norm_options"),
) -> None:
    """Method names on the ``solver.method`` axis, ``solver.norm_method`` and the method
    sub-tables of ``[solver.options]`` (and ``norm_options``) pass :func:`check_method`."""
    for m in methods_on_axis:
        check_method(m, "solver.method", source)
    for m, revision in solver.get("revisions", {}).items():
        key = f"solver.revisions.{m}"
        if m not in METHODS:
            raise SpecError(source, key, f"a registered method (one of {sorted(METHODS)})", m)
        runs = not isinstance(revision, bool) and isinstance(revision, int)
        if runs:
            try:
                METHODS[m].options_at(revision)
            except ValueError:
                runs = False
        if not runs:
            known = sorted({*METHODS[m].legacy, METHODS[m].revision})
            raise SpecError(
                source, key, f"a revision of method {m!r} this code runs: one of {known}", revision
            )
    if solver.get("norm_method") is not None:
        check_method(solver["norm_method"], "solver.norm_method", source)
    for table_key in table_keys:
        for sub, val in solver[table_key].items():
            if isinstance(val, Mapping):
                try:
                    check_method(sub, f"solver.{table_key}.{sub}", source)
                except SpecError as exc:
                    raise SpecError(
                        source,
                        exc.key,
                        f"a method sub-table (one of {sorted(METHODS)})",
                        "<unknown method>",
                    ) from None


def check_method_options(
    data: dict[str, Any], method: str, n: int, p: int, norm: bool, source: str
) -> None:
    """``check_options`` of the core on the options ``method`` will receive, as a SpecError
    naming the spec key the offending option came from."""
    options = solver_options(data, method, norm=norm)
    if is_names_only() and method not in METHODS:
        return  # a stored spec's user method: its options were checked when the store was made
    try:
        check_options(method, options, n=n, p=p)
    except OptionError as exc:
        solver = data["solver"]
        table_key = SolverSection(**solver).norm_table_key(method) if norm else "options"
        if exc.option == "method":
            key = "solver.norm_method" if norm else "solver.method"
            raise SpecError(
                source, key, f"a method that can solve n = {n}", method, with_hint(exc)
            ) from None
        sub = solver[table_key].get(method)
        in_sub = isinstance(sub, Mapping) and exc.option in sub
        key = f"solver.{table_key}." + (f"{method}." if in_sub else "") + exc.option
        if exc.option in _method_option_names(method):  # a known option with a bad value
            expected = f"{exc.expected} (option of method '{method}')"
            received, hint = options[exc.option], ""
        else:
            expected = f"an option of method '{method}': {_method_option_names(method)}"
            received = "<unknown option>"
            hint = f"put method-specific options in [solver.{table_key}.{method}]"
        raise SpecError(source, key, expected, received, hint) from None


def _method_option_names(method: str) -> list[str]:
    names = method_options(method)
    return names if "gap_tol" in names else [*names, "gap_tol"]
