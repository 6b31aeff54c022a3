"""Sweep specifications: TOML files validated on load into a frozen, pure-data ``SweepSpec``.

A spec says *what* to compute (tensor family, noise, solver, replicates); the grid module turns
it into axes and blocks, the execution layer says *where and how*. Validation is hand-written
rather than delegated to pydantic so that every error names the file, the dotted key, what was
expected, what was received and a hint, without the noise of union-branch error lists.

Grammar (the keys are a contract, see ``docs/sweeps.md``)::

    name, seed, replicates, description
    [tensor]  n, p, rank, basis, lambdas
    [noise]   model, sigma | eps | eps_scaled, scale
    [solver]  method, steps, options, norm_method, norm_options
    [output]  vectors, certificates

Any of ``tensor.n``, ``tensor.p``, ``tensor.rank``, ``noise.model``, ``noise.sigma``,
``noise.eps``, ``noise.eps_scaled`` and ``solver.method`` given as a list or a range table
(``{start, stop, step}`` or ``{start, stop, factor}``) becomes an axis of the sweep.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from sroa_dist.instances import BASES, MAX_SCALE, check_lambdas, check_level
from sroa_dist.policy import resolve_norm_method
from sroa_dist.solvers import OptionError, check_options, method_options

from .schema import AXIS_ORDER, NOISE_LEVELS, REPLICATE

__all__ = [
    "AXIS_ORDER",
    "NoiseSection",
    "OutputSection",
    "SolverSection",
    "SpecError",
    "SweepSpec",
    "TensorSection",
    "apply_overrides",
    "default_store",
    "expand_range",
    "load_spec",
    "parse_override",
    "range_length",
    "round_sig",
    "solver_options",
    "spec_from_dict",
]

_SIG_DIGITS = 12
#: Longest axis (values of one swept key, or replicates). Axis values are materialised as
#: coordinates, so the cap bounds validation time and memory.
MAX_AXIS_LEN = 1_000_000
#: Folder of the default store, ``results/<name>.zarr``.
RESULTS_DIR = "results"


class SpecError(ValueError):
    """A sweep spec (file, ``--set`` override or dict) is invalid.

    The message names the source, the dotted key, and says what was expected, what was received
    and, where one helps, a hint.
    """

    def __init__(self, source: str, key: str, expected: str, received: Any, hint: str = ""):
        self.source, self.key = source, key
        self.expected, self.received, self.hint = expected, received, hint
        msg = f"{source}: key '{key}': expected {expected}; received {_show(received)}"
        if hint:
            msg += f". Hint: {hint}"
        super().__init__(msg)


def _show(value: Any) -> str:
    if isinstance(value, str) and value.startswith("<"):
        return value  # already a description such as "<missing>"
    return f"{value!r} ({type(value).__name__})"


def round_sig(x: float, digits: int = _SIG_DIGITS) -> float:
    """Round ``x`` to ``digits`` significant digits (0 stays 0).

    Coordinates computed as ``start + step * k`` carry representation noise
    (0.1 + 0.2 != 0.3); rounding makes them equal to the decimal a person would type, which
    matters because coordinate values also seed each instance's random stream.
    """
    x = float(x)
    if x == 0.0 or not math.isfinite(x):
        return x
    return float(f"{x:.{digits - 1}e}")


# --------------------------------------------------------------------------------------------
# Schema: (kind, default, required). Kinds: "int", "float", "str", "bool", "table",
# "int_axis", "float_axis", "str_axis", "lambdas", "seed".
_SCHEMA: dict[str, Any] = {
    "name": ("str", None, True),
    "description": ("str", "", False),
    "seed": ("seed", 0, False),
    "replicates": ("int", 1, False),
    "tensor": {
        "n": ("int_axis", None, True),
        "p": ("int_axis", 3, False),
        "rank": ("int_axis", None, False),
        "basis": ("str", "identity", False),
        "lambdas": ("lambdas", 1.0, False),
    },
    "noise": {
        "model": ("str_axis", "gaussian", False),
        **{level: ("float_axis", None, False) for level in NOISE_LEVELS},
        "scale": ("str", None, False),
        # Perturbation families (sroa_dist.perturbations): parameters, mixture weight.
        "params": ("table", {}, False),
        "weight": ("float_axis", None, False),
    },
    "solver": {
        "method": ("str_axis", "certified", False),
        "steps": ("int", None, False),
        "options": ("table", {}, False),
        "norm_method": ("str", None, False),
        "norm_options": ("table", {}, False),
    },
    "output": {
        "vectors": ("bool", False, False),
        "certificates": ("bool", False, False),
    },
}

#: Dotted spec key -> axis (dimension) name, for keys that may be swept.
AXIS_KEYS: dict[str, str] = {
    "noise.model": "noise",
    "tensor.n": "n",
    "tensor.p": "p",
    "tensor.rank": "rank",
    "solver.method": "method",
    **{f"noise.{level}": level for level in NOISE_LEVELS},
}

_SCALES = ("sigma", "opnorm")


def solver_options(data: Mapping[str, Any], method: str, *, norm: bool = False) -> dict[str, Any]:
    """Keyword options for ``method`` from ``[solver.options]`` (or ``[solver.norm_options]``)
    of a resolved spec dict; see :meth:`SolverSection.options_for`."""
    return SolverSection(**data["solver"]).options_for(method, norm=norm)


def _registry_names() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Method and noise-model names from the numerical core's registries."""
    from sroa_dist import METHODS, NOISE_MODELS

    return tuple(sorted(METHODS)), tuple(sorted(NOISE_MODELS))


def default_store(name: str) -> str:
    """The store a sweep named ``name`` writes to when no ``--store`` is given."""
    return str(Path(RESULTS_DIR) / f"{name}.zarr")


# --------------------------------------------------------------------------------------------
# Typed sections of a resolved spec. A key that may be swept holds its value as written
# (a scalar, a list or a range table); its values are in ``SweepSpec.axes``.


@dataclass(frozen=True)
class TensorSection:
    """``[tensor]``: the planted tensor."""

    n: Any
    p: Any
    rank: Any
    basis: str
    lambdas: Any


@dataclass(frozen=True)
class NoiseSection:
    """``[noise]``: the perturbation E and its size."""

    model: Any
    sigma: Any
    eps: Any
    eps_scaled: Any
    scale: str
    params: Mapping[str, Any]
    weight: Any

    @property
    def level_name(self) -> str:
        """The noise level in use: ``"sigma"``, ``"eps"`` or ``"eps_scaled"``."""
        for level in NOISE_LEVELS:
            if getattr(self, level) is not None:
                return level
        raise AssertionError("validated spec without a noise level")  # pragma: no cover


@dataclass(frozen=True)
class SolverSection:
    """``[solver]``: the rank-one method(s), SROA steps, and the ``||E||`` solver."""

    method: Any
    steps: int | None
    options: Mapping[str, Any]
    norm_method: str | None
    norm_options: Mapping[str, Any]

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
        """
        table = getattr(self, self.norm_table_key(method) if norm else "options")
        out = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
        out.update(table.get(method, {}) if isinstance(table.get(method), Mapping) else {})
        return out


@dataclass(frozen=True)
class OutputSection:
    """``[output]``: what is stored beyond the cube's default variables."""

    vectors: bool = False
    certificates: bool = False


@dataclass(frozen=True)
class Axis:
    """One possibly swept setting: its values and whether it is an axis (list or range)."""

    key: str
    values: tuple[Any, ...]
    swept: bool
    given: Any  # as written (range tables kept compact for provenance)

    @property
    def scalar(self) -> Any:
        """The single value of a non-swept setting."""
        return self.values[0]


@dataclass(frozen=True)
class SweepSpec:
    """A validated, resolved sweep spec (pure data, hashable pieces, JSON round-trip).

    Use :func:`load_spec` or :func:`spec_from_dict` to build one. ``data`` is the resolved
    spec as a plain dict (defaults filled in, range tables kept as written); ``axes`` maps each
    possibly swept key to an :class:`Axis`. The package reads the spec through the typed
    sections (:attr:`tensor`, :attr:`noise`, :attr:`solver`, :attr:`output`) and the derived
    properties, never through ``data``.
    """

    data: dict[str, Any]
    source: str = "<dict>"
    axes: dict[str, Axis] = field(default_factory=dict, compare=False)
    #: The ``--set KEY=VALUE`` items applied on load, so later checks can blame them.
    overrides: tuple[str, ...] = field(default=(), compare=False)

    #: Kind of sweep: ``"tensor"`` (planted tensor + noise) or ``"model"`` (model_sweep.py).
    kind: ClassVar[str] = "tensor"
    #: Dotted spec key -> dimension name, for the keys that may be swept.
    axis_keys: ClassVar[Mapping[str, str]] = AXIS_KEYS

    def error(self, key: str, expected: str, received: Any, hint: str = "") -> SpecError:
        """A :class:`SpecError` about ``key``, naming the ``--set`` item that gave it if one
        did, else the spec's source."""
        setting = _override_for(key, self.overrides)
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
    def tensor(self) -> TensorSection:
        """The ``[tensor]`` section."""
        return TensorSection(**self.data["tensor"])

    @functools.cached_property
    def noise(self) -> NoiseSection:
        """The ``[noise]`` section."""
        return NoiseSection(**self.data["noise"])

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
    def scale(self) -> str:
        """``"sigma"`` (entries of scale σ) or ``"opnorm"`` (E rescaled to ‖E‖ = eps)."""
        return self.noise.scale

    @property
    def noise_level_key(self) -> str:
        """The noise-level key in use: ``noise.sigma``, ``noise.eps`` or ``noise.eps_scaled``."""
        return f"noise.{self.noise.level_name}"

    @property
    def ranks(self) -> tuple[int, ...]:
        """Ranks on the grid: the ``tensor.rank`` values, or (full rank, the default) the n
        values."""
        key = "tensor.rank" if "tensor.rank" in self.axes else "tensor.n"
        return tuple(int(r) for r in self.axes[key].values)

    def steps_for(self, rank: int) -> int:
        """SROA steps of an instance of rank ``rank``: ``solver.steps``, else ``rank``."""
        return int(self.solver.steps or rank)

    @property
    def n_steps(self) -> int:
        """Length of the cube's ``step`` dim: the most SROA steps of any instance."""
        return self.steps_for(max(self.ranks))

    def norm_method_for(self, method: str, n: int, p: int) -> str:
        """The method bounding ``||E||`` for instances solved by ``method`` at size (n, p)."""
        return resolve_norm_method(method, n, p, self.solver.norm_method)

    def options_for(self, method: str, *, norm: bool = False) -> dict[str, Any]:
        """Keyword options for ``method``; see :meth:`SolverSection.options_for`."""
        return self.solver.options_for(method, norm=norm)

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
        order = {d: i for i, d in enumerate(AXIS_ORDER)}
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
        return d


# --------------------------------------------------------------------------------------------
# Loading


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
    path = Path(path)
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(source, "<file>", "an existing TOML file", "<missing>") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(source, "<file>", "valid TOML", f"<parse error: {exc}>") from None
    raw = apply_overrides(raw, overrides, source)
    try:
        spec = spec_from_dict(raw, source=source)
    except SpecError as exc:
        setting = _override_for(exc.key, overrides)
        if setting is None:
            raise
        # The bad value came from the command line: say so, not the file.
        raise SpecError(f"--set {setting}", exc.key, exc.expected, exc.received, exc.hint) from None
    return dataclasses.replace(spec, overrides=_override_items(overrides))


def _override_items(overrides: Sequence[str] | Mapping[str, Any]) -> tuple[str, ...]:
    if isinstance(overrides, Mapping):
        return tuple(f"{k}={v!r}" for k, v in overrides.items())
    return tuple(overrides)


def _override_for(key: str, overrides: Sequence[str] | Mapping[str, Any]) -> str | None:
    """The ``--set`` item that wrote ``key`` (or a table holding it), if any; the last wins."""
    for item in reversed(_override_items(overrides)):
        okey = item.split("=", 1)[0].strip().replace("__", ".")
        if key == okey or key.startswith(okey + ".") or okey.startswith(key + "."):
            return item
    return None


def parse_override(item: str) -> tuple[str, Any]:
    """Parse one ``KEY=VALUE`` override; VALUE is TOML (a bare word becomes a string)."""
    if "=" not in item:
        raise SpecError(
            "--set", item, "KEY=VALUE", item, "e.g. --set replicates=20 or --set noise.sigma=0.01"
        )
    key, value = item.split("=", 1)
    key, value = key.strip(), value.strip()
    try:
        parsed = tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value  # bare word such as gaussian or certified
    return key, parsed


def apply_overrides(
    raw: Mapping[str, Any], overrides: Sequence[str] | Mapping[str, Any], source: str = "<dict>"
) -> dict[str, Any]:
    """Return a copy of ``raw`` with dotted-key overrides applied (unknown keys are kept and
    reported by validation, naming the ``--set`` option)."""
    out = copy.deepcopy(dict(raw))
    items = (
        list(overrides.items())
        if isinstance(overrides, Mapping)
        else [parse_override(o) for o in overrides]
    )
    for key, value in items:
        key = key.replace("__", ".")
        parts = key.split(".")
        node = out
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise SpecError(
                    f"{source} (--set)", key, "a key inside a table", f"<{part} is not a table>"
                )
            node = nxt
        node[parts[-1]] = value
    return out


def spec_from_dict(raw: Mapping[str, Any], source: str = "<dict>") -> SweepSpec:
    """Validate a spec given as a (TOML-like) dict and resolve defaults."""
    if isinstance(raw, Mapping) and "model" in raw:
        # A model sweep: its schema lives with its kernel (model_sweep builds on this module,
        # hence the import at call time).
        from .model_sweep import model_spec_from_dict

        return model_spec_from_dict(raw, source)
    data = _validate_table(raw, _SCHEMA, "", source)
    methods, models = _registry_names()
    models = (*models, *_perturbation_models(data, source))
    axes = build_axes(data, _SCHEMA, AXIS_KEYS, source)
    _check_semantics(data, axes, source, methods, models)
    return SweepSpec(data=data, source=source, axes=axes)


def build_axes(
    data: Mapping[str, Any], schema: Mapping[str, Any], axis_keys: Mapping[str, str], source: str
) -> dict[str, Axis]:
    """The :class:`Axis` of every possibly swept key that the validated ``data`` sets."""
    axes = {}
    for key in axis_keys:
        sect, leaf = key.split(".")
        given = data[sect][leaf]
        if given is None:
            continue
        values, swept = _axis_values(given, schema[sect][leaf][0], key, source)
        axes[key] = Axis(key, values, swept, given)
    return axes


def check_replicates(replicates: int, source: str) -> None:
    """Replicates are a dim of the cube: between 1 and MAX_AXIS_LEN."""
    if not 1 <= replicates <= MAX_AXIS_LEN:
        raise SpecError(
            source,
            "replicates",
            f"an integer >= 1 and <= {MAX_AXIS_LEN:,}",
            replicates,
            "replicates are a dimension of the cube; for more, run several sweeps with "
            "different seeds",
        )


def check_methods(
    solver: Mapping[str, Any],
    methods_on_axis: Sequence[str],
    methods: Sequence[str],
    source: str,
    table_keys: Sequence[str] = ("options", "norm_options"),
) -> None:
    """Method names on the ``solver.method`` axis, ``solver.norm_method`` and the method
    sub-tables of ``[solver.options]`` (and ``norm_options``) are in the core's registry."""
    named = [("solver.method", m) for m in methods_on_axis]
    if solver.get("norm_method") is not None:
        named.append(("solver.norm_method", solver["norm_method"]))
    for key, m in named:
        if m not in methods:
            raise SpecError(source, key, f"one of {sorted(methods)}", m, "unknown method")
    for table_key in table_keys:
        for sub, val in solver[table_key].items():
            if isinstance(val, Mapping) and sub not in methods:
                raise SpecError(
                    source,
                    f"solver.{table_key}.{sub}",
                    f"a method sub-table (one of {sorted(methods)})",
                    "<unknown method>",
                )


def _validate_table(raw: Any, schema: dict[str, Any], prefix: str, source: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise SpecError(source, prefix.rstrip(".") or "<root>", "a table", raw)
    unknown = sorted(set(raw) - set(schema))
    if unknown:
        raise SpecError(
            source,
            prefix + unknown[0],
            f"one of {sorted(schema)}" + (f" in [{prefix.rstrip('.')}]" if prefix else ""),
            "<unknown key>",
            "check the spelling; see docs/sweeps.md for the key reference",
        )
    out: dict[str, Any] = {}
    for key, sub in schema.items():
        dotted = prefix + key
        if isinstance(sub, dict):
            out[key] = _validate_table(raw.get(key, {}), sub, dotted + ".", source)
            continue
        kind, default, required = sub
        if raw.get(key) is None:  # absent (TOML has no null; None comes from JSON round trips)
            if required:
                raise SpecError(source, dotted, f"a value ({kind})", "<missing>")
            out[key] = copy.deepcopy(default)
            continue
        out[key] = _check_kind(raw[key], kind, dotted, source)
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(v)


def _check_kind(v: Any, kind: str, key: str, source: str) -> Any:
    """Type-check one value; returns it normalised (floats as float, tables as dicts)."""
    if kind == "str":
        if not isinstance(v, str):
            raise SpecError(source, key, "a string", v)
        return v
    if kind == "bool":
        if not isinstance(v, bool):
            raise SpecError(source, key, "true or false", v)
        return v
    if kind == "table":
        if not isinstance(v, Mapping):
            raise SpecError(source, key, "a table of keyword options", v)
        return dict(v)
    if kind in ("int", "seed"):
        if not _is_int(v):
            raise SpecError(source, key, "an integer", v)
        if kind == "seed" and not 0 <= v < 2**128:
            raise SpecError(source, key, "a non-negative integer", v)
        return v
    if kind == "lambdas":
        try:
            return check_lambdas(v)
        except ValueError as exc:
            raise SpecError(
                source,
                key,
                "non-zero weights of magnitude <= 1e150: a number, a list of r numbers or "
                '{dist = "uniform", low = L, high = H} with L < H',
                v,
                re.sub(r"^lambdas(\.dist)?: ", "", str(exc)),
            ) from None
    # axes: scalar, list or range table
    elem = kind.split("_")[0]
    if isinstance(v, Mapping):
        return _check_range_table(v, elem, key, source)
    if isinstance(v, list):
        if not v:
            raise SpecError(source, key, "a non-empty list", v, "an axis needs at least one value")
        return [_check_scalar(x, elem, key, source) for x in v]
    return _check_scalar(v, elem, key, source)


def _check_scalar(x: Any, elem: str, key: str, source: str) -> Any:
    if elem == "int":
        if not _is_int(x):
            raise SpecError(source, key, "an integer (or a list / range table of integers)", x)
        return x
    if elem == "float":
        if not _is_num(x):
            raise SpecError(source, key, "a finite number (or a list / range table)", x)
        return float(x)
    if not isinstance(x, str):
        raise SpecError(source, key, "a string (or a list of strings)", x)
    return x


def _check_range_table(v: Mapping[str, Any], elem: str, key: str, source: str) -> dict[str, Any]:
    if elem == "str":
        raise SpecError(source, key, "a string or a list of strings", dict(v))
    allowed = {"start", "stop", "step", "factor"}
    extra = sorted(set(v) - allowed)
    if extra:
        raise SpecError(
            source, f"{key}.{extra[0]}", "one of start, stop, step, factor", "<unknown key>"
        )
    if "start" not in v or "stop" not in v or (("step" in v) == ("factor" in v)):
        raise SpecError(
            source, key, "a range table {start, stop, step} or {start, stop, factor}", dict(v)
        )
    out = {}
    for k in ("start", "stop", "step", "factor"):
        if k in v:
            num = v[k]
            ok = _is_int(num) if (elem == "int" and k != "factor") else _is_num(num)
            if not ok:
                want = "an integer" if elem == "int" and k != "factor" else "a finite number"
                raise SpecError(source, f"{key}.{k}", want, num)
            out[k] = num if elem == "int" and k != "factor" else float(num)
    if out["stop"] < out["start"]:
        raise SpecError(
            source, key, "a range with stop >= start", dict(v), "ranges must be increasing"
        )
    if "step" in out and out["step"] <= 0:
        raise SpecError(
            source, f"{key}.step", "a positive step", out["step"], "ranges must be increasing"
        )
    if "factor" in out and (out["factor"] <= 1 or out["start"] <= 0):
        raise SpecError(
            source,
            f"{key}.factor",
            "factor > 1 with start > 0",
            dict(v),
            "geometric ranges must grow",
        )
    try:
        range_length(out)
    except ValueError as exc:
        raise SpecError(
            source,
            key,
            f"a range of at most {MAX_AXIS_LEN:,} values",
            dict(v),
            f"{exc}; use a larger step or factor, or split the sweep",
        ) from None
    return out


def range_length(table: Mapping[str, Any], cap: int = MAX_AXIS_LEN) -> int:
    """Number of values of a range table, computed without materialising anything.

    ``{start, stop, step}`` has ``floor((stop - start) / step + 1e-9) + 1`` values and
    ``{start, stop, factor}`` ``floor(log(stop / start) / log(factor) + 1e-9) + 1`` (the
    ``1e-9`` absorbs representation error, so a stop that is meant to be hit is included).
    Both are computed in floating point with logarithms taken separately, so no intermediate
    overflows; a length that is not finite or exceeds ``cap`` raises ``ValueError``.
    """
    start, stop = float(table["start"]), float(table["stop"])
    with np.errstate(over="ignore", invalid="ignore"):
        if "step" in table:
            ratio = (np.float64(stop) - np.float64(start)) / np.float64(table["step"])
        else:
            ratio = (math.log(stop) - math.log(start)) / math.log(float(table["factor"]))
    ratio = float(ratio)
    if not math.isfinite(ratio) or ratio + 1 > cap:
        shown = "more than 10^308" if not math.isfinite(ratio) else f"{math.floor(ratio) + 1:,}"
        raise ValueError(f"the range has {shown} values, more than the cap of {cap:,}")
    return math.floor(ratio + 1e-9) + 1


def expand_range(table: Mapping[str, Any], integer: bool = False) -> tuple[Any, ...]:
    """Values of a range table.

    ``{start, stop, step}`` gives ``start + step * arange(k)`` with
    ``k = floor((stop - start) / step + 1e-9) + 1``; ``{start, stop, factor}`` gives
    ``start * factor**arange(k)`` up to ``stop`` (``k`` from :func:`range_length`, which
    refuses ranges longer than :data:`MAX_AXIS_LEN`). Floats are rounded to 12 significant digits so
    that ``{start = 0.0001, stop = 0.2, step = 0.0001}`` gives exactly 2000 values, the last 0.2.
    Integer ranges give integers (geometric ones rounded to the nearest integer, deduplicated).
    """
    start = table["start"]
    k = range_length(table)
    if "step" in table:
        raw = start + table["step"] * np.arange(k, dtype=np.float64)
    else:
        raw = start * table["factor"] ** np.arange(k, dtype=np.float64)
    if integer:
        vals = [int(round(x)) for x in raw]
        return tuple(dict.fromkeys(vals))
    return tuple(round_sig(x) for x in raw)


def _axis_values(given: Any, kind: str, key: str, source: str) -> tuple[tuple[Any, ...], bool]:
    integer = kind == "int_axis"
    if isinstance(given, Mapping):
        values = expand_range(given, integer=integer)
    elif isinstance(given, list):
        values = tuple(round_sig(x) if kind == "float_axis" else x for x in given)
    else:
        return ((round_sig(given) if kind == "float_axis" else given),), False
    if len(set(values)) != len(values):
        dup = next(x for x in values if values.count(x) > 1)
        raise SpecError(
            source,
            key,
            "distinct values",
            given,
            f"{dup!r} appears twice; coordinates must be unique",
        )
    return values, True


def _check_semantics(
    data: dict[str, Any],
    axes: dict[str, Axis],
    source: str,
    methods: Sequence[str],
    models: Sequence[str],
) -> None:
    """Cross-key rules: p >= 3, rank <= n, registry names, one noise level, steps <= rank."""
    check_replicates(data["replicates"], source)
    ns, ps = axes["tensor.n"].values, axes["tensor.p"].values
    if min(ns) < 2:
        raise SpecError(source, "tensor.n", "dimensions n >= 2", min(ns))
    if min(ps) < 3:
        raise SpecError(
            source,
            "tensor.p",
            "tensor order p >= 3",
            min(ps),
            "p = 2 is the matrix case (use an eigendecomposition); SROA theory needs p >= 3",
        )
    if "tensor.rank" in axes:
        ranks = axes["tensor.rank"].values
        if min(ranks) < 1:
            raise SpecError(source, "tensor.rank", "rank >= 1", min(ranks))
        if max(ranks) > min(ns):
            raise SpecError(
                source,
                "tensor.rank",
                f"rank <= n (smallest n is {min(ns)})",
                max(ranks),
                "an orthogonal decomposition has at most n components",
            )
    basis = data["tensor"]["basis"]
    if basis not in BASES:
        raise SpecError(source, "tensor.basis", f"one of {sorted(BASES)}", basis)
    lambdas = data["tensor"]["lambdas"]
    rank_ax = axes.get("tensor.rank")
    ranks = rank_ax.values if rank_ax else ns  # full rank by default
    for r in ranks:  # the core's own check of the weights against each rank
        try:
            check_lambdas(lambdas, r)
        except ValueError as exc:
            raise SpecError(
                source,
                "tensor.lambdas",
                f"a list of rank = {list(ranks)} values",
                lambdas,
                f"{exc}; a list of lambdas needs a single rank (or n) of the same length",
            ) from None
    for m in axes["noise.model"].values:
        if m not in models:
            raise SpecError(
                source, "noise.model", f"one of {sorted(models)}", m, "unknown noise model"
            )
    check_methods(data["solver"], axes["solver.method"].values, methods, source)
    nm = data["solver"]["norm_method"]
    levels = [k for k in NOISE_LEVELS if f"noise.{k}" in axes]
    if len(levels) != 1:
        raise SpecError(
            source,
            "noise",
            "exactly one of sigma, eps, eps_scaled",
            levels or "<none>",
            "sigma sets the entry scale; eps / eps_scaled set the operator norm of E",
        )
    level = levels[0]
    scale = data["noise"]["scale"]
    inferred = "sigma" if level == "sigma" else "opnorm"
    if scale is None:
        data["noise"]["scale"] = scale = inferred
    if scale not in _SCALES:
        raise SpecError(source, "noise.scale", f"one of {list(_SCALES)}", scale)
    if scale != inferred:
        raise SpecError(
            source,
            "noise.scale",
            f'"{inferred}" with noise.{level}',
            scale,
            'scale = "sigma" goes with noise.sigma; scale = "opnorm" with noise.eps or eps_scaled',
        )
    level_values = axes[f"noise.{level}"].values
    for value in (min(level_values), max(level_values)):  # the range is an interval: O(1)
        try:
            check_level(value, level)
        except ValueError:
            raise SpecError(
                source, f"noise.{level}", f"values between 0 and {MAX_SCALE:g}", value
            ) from None
    # Option names, values and types go through the core's own dry bind (check_options), for
    # every (method, n, p) the sweep will solve, and for the norm method each one resolves to.
    checked: set[tuple[str, str, int, int]] = set()
    for m in axes["solver.method"].values:
        for n in ns:
            for p in ps:
                for norm, method in ((False, m), (True, resolve_norm_method(m, n, p, nm))):
                    if (str(norm), method, n, p) not in checked:
                        checked.add((str(norm), method, n, p))
                        check_method_options(data, method, n, p, norm, source)
    steps = data["solver"]["steps"]
    if steps is not None:
        min_rank = min(axes["tensor.rank"].values) if "tensor.rank" in axes else min(ns)
        if not 1 <= steps <= min_rank:
            raise SpecError(
                source,
                "solver.steps",
                f"1 <= steps <= rank (smallest rank is {min_rank})",
                steps,
                "SROA extracts one component per step; omit steps to run all rank steps",
            )


def check_method_options(
    data: dict[str, Any], method: str, n: int, p: int, norm: bool, source: str
) -> None:
    """``check_options`` of the core on the options ``method`` will receive, as a SpecError
    naming the spec key the offending option came from."""
    options = solver_options(data, method, norm=norm)
    try:
        check_options(method, options, n=n, p=p)
    except OptionError as exc:
        solver = data["solver"]
        table_key = SolverSection(**solver).norm_table_key(method) if norm else "options"
        if exc.option == "method":
            key = "solver.norm_method" if norm else "solver.method"
            raise SpecError(
                source, key, f"a method that can solve n = {n}", method, str(exc)
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


def _perturbation_models(data: dict[str, Any], source: str) -> tuple[str, ...]:
    """Models on the ``noise.model`` axis that the perturbation registry accepts (families,
    import paths, mixtures), validated with their ``noise.params`` and ``noise.weight`` by the
    registry's own rules; i.i.d. models are left to the noise registry check."""
    from sroa_dist import NOISE_MODELS
    from sroa_dist.perturbations import (
        DEFAULT_WEIGHT,
        PERTURBATIONS,
        check_model,
        model_params,
    )

    noise = data["noise"]
    given = noise["model"]
    names = [given] if isinstance(given, str) else list(given) if isinstance(given, list) else []
    weight = noise.get("weight")
    if weight is not None and not isinstance(weight, float):
        raise SpecError(source, "noise.weight", "a number in [0, 1]", weight, "it is not an axis")
    for key, sub in noise["params"].items():
        if isinstance(sub, Mapping) and key not in names:
            raise SpecError(
                source,
                f"noise.params.{key}",
                f"a sub-table named after a model on the axis {names}",
                "<unknown model>",
            )
    out = []
    for name in names:
        if name in NOISE_MODELS or not (name in PERTURBATIONS or ":" in name or "+" in name):
            continue  # i.i.d. or unknown: the noise-model check below names it
        try:
            check_model(
                name,
                model_params(noise["params"], name),
                DEFAULT_WEIGHT if weight is None else weight,
            )
        except ValueError as exc:
            raise SpecError(
                source, "noise.model", "a valid perturbation model", name, str(exc)
            ) from None
        out.append(name)
    return tuple(out)
