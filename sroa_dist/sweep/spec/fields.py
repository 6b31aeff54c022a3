"""Typed fields of a sweep spec: the error type, value checks, axes and range tables.

Shared by every sweep kind (:mod:`..kinds`): a kind's schema maps each key to ``(vtype,
default, required)`` and :func:`validate_table` checks a raw table against it; keys whose type
ends in ``_axis`` may be swept (a list or a range table) and become an :class:`Axis`. Every
error is a :class:`SpecError` naming the source, the dotted key, what was expected, what was
received and a hint. Pure data: numpy only.

Value types: ``"int"``, ``"float"``, ``"str"``, ``"name"`` (a safe file name), ``"bool"``,
``"table"``, ``"seed"``,``"lambdas"``, ``"int_axis"``, ``"float_axis"``, ``"str_axis"``.
"""

from __future__ import annotations

import copy
import math
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sroa_dist.errors import InputError, SroaWarning
from sroa_dist.problems import check_lambdas

__all__ = [
    "MAX_AXIS_LEN",
    "Axis",
    "SpecError",
    "build_axes",
    "check_replicates",
    "check_tensor_size",
    "prune_model_params",
    "expand_range",
    "range_length",
    "round_sig",
    "validate_table",
]

_SIG_DIGITS = 12
#: Longest axis (values of one swept key, or replicates). Axis values are materialised as
#: coordinates, so the cap bounds validation time and memory.
MAX_AXIS_LEN = 1_000_000
#: Most entries ``n^p`` of one tensor a spec may ask for (log2): 2^62 float64 entries are 32 EiB,
#: beyond any machine, so every size the memory and cost models compute below it is a finite
#: float (``float(n) ** p`` overflowed for p = 10^6 or n = 10^400 and crashed ``validate``).
MAX_TENSOR_LOG2_ENTRIES = 62
#: Folder of the default store, ``results/<name>.zarr``.


class SpecError(InputError):
    """A sweep spec (file, ``--set`` override or dict) is invalid.

    The message names the source and the dotted key (none for the file as a whole), and says
    what was expected and what was received; ``hint`` says what to do (a key's own hint where
    one was given, else where the key is documented).
    """

    def __init__(self, source: str, key: str, expected: str, received: Any, hint: str = ""):
        self.source, self.key = source, key
        self.expected, self.received = expected, received
        self.given_hint = hint  # the key's own hint (the default depends on the source)
        where = f"{source}: key '{key}'" if key else str(source)
        msg = f"{where}: expected {expected}; received {_show(received)}"
        super().__init__(msg, hint or _default_hint(source, key))


def _default_hint(source: str, key: str) -> str:
    if not key:
        return "docs/sweeps.md describes the spec format; sweeps/ holds working examples"
    if str(source).startswith("--set"):
        return (
            f"fix the value in --set {key}=VALUE (a TOML value); docs/sweeps.md lists every "
            "key and what it takes"
        )
    return f"fix key '{key}' in {source}; docs/sweeps.md lists every key and what it takes"


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
        values, swept = axis_values(given, schema[sect][leaf][0], key, source)
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


def check_tensor_size(ns: Any, ps: Any, source: str) -> None:
    """Refuse tensors of more than ``2^MAX_TENSOR_LOG2_ENTRIES`` entries (``n^p`` at the
    largest n and p of the grid), naming ``tensor.p`` when it is too large even for n = 2,
    else ``tensor.n``; the memory check then judges what is left."""

    def too_large(n: int, p: int) -> bool:  # n >= 2: p alone past the cap is too large
        return p > MAX_TENSOR_LOG2_ENTRIES or p * math.log2(n) > MAX_TENSOR_LOG2_ENTRIES

    n, p = max(ns), max(ps)
    if not too_large(n, p):
        return
    # p is to blame when it is too large even for n = 2; else n is.
    key, value = ("tensor.p", p) if too_large(2, p) else ("tensor.n", n)
    raise SpecError(
        source,
        key,
        f"a tensor of at most 2^{MAX_TENSOR_LOG2_ENTRIES} entries (n^p)",
        value,
        "such a tensor is beyond any machine's memory; use a smaller n or p",
    )


def prune_model_params(
    params: Mapping[str, Any], models: Any, source: str, key: str = "noise.params"
) -> dict[str, Any]:
    """``[noise.params]`` without the sub-tables of models that are not on the axis.

    A sub-table applies to the model it is named after, or (for a mixture ``FAMILY+BG``) to
    its family part. Shrinking a spec from the command line (``--set noise.model=...``) leaves
    the tables of the models it dropped; they change nothing, so they are dropped with a
    one-line warning instead of refusing the spec. Plain (non-table) keys are kept.
    """
    names = [models] if isinstance(models, str) else list(models)
    used = set(names) | {m.rpartition("+")[0] for m in names if "+" in m}
    out, dropped = {}, []
    for name, sub in params.items():
        if isinstance(sub, Mapping) and name not in used:
            dropped.append(name)
        else:
            out[name] = sub
    if dropped:
        warnings.warn(
            f"{source}: ignoring {key} tables {dropped}: no such model on noise.model {names}",
            SroaWarning,
            stacklevel=2,
        )
    return out


def validate_table(raw: Any, schema: dict[str, Any], prefix: str, source: str) -> dict[str, Any]:
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
            out[key] = validate_table(raw.get(key, {}), sub, dotted + ".", source)
            continue
        vtype, default, required = sub
        if raw.get(key) is None:  # absent (TOML has no null; None comes from JSON round trips)
            if required:
                raise SpecError(source, dotted, f"a value ({vtype})", "<missing>")
            out[key] = copy.deepcopy(default)
            continue
        out[key] = _check_value(raw[key], vtype, dotted, source)
    return out


#: Spec names: safe as a file name on every system (the default store is named after it).
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(v)


def _check_value(v: Any, vtype: str, key: str, source: str) -> Any:
    """Type-check one value; returns it normalised (floats as float, tables as dicts)."""
    if vtype == "str":
        if not isinstance(v, str):
            raise SpecError(source, key, "a string", v)
        return v
    if vtype == "name":
        # The default store is results/<name>.zarr: a name must not climb out of results/
        # ("../x"), hide the store (".x") or be empty.
        if not isinstance(v, str) or not _SAFE_NAME.fullmatch(v):
            raise SpecError(
                source,
                key,
                "a non-empty name of letters, digits, '.', '_' and '-' (at most 100, not "
                "starting with '.')",
                v,
                'e.g. name = "my-study" (it names the default store, results/<name>.zarr)',
            )
        return v
    if vtype == "bool":
        if not isinstance(v, bool):
            raise SpecError(source, key, "true or false", v)
        return v
    if vtype == "table":
        if not isinstance(v, Mapping):
            raise SpecError(source, key, "a table of keyword options", v)
        return dict(v)
    if vtype in ("int", "seed"):
        if not _is_int(v):
            raise SpecError(source, key, "an integer", v)
        if vtype == "seed" and not 0 <= v < 2**128:
            raise SpecError(source, key, "a non-negative integer", v)
        return v
    if vtype == "lambdas":
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
    elem = vtype.split("_")[0]
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
        raise InputError(
            f"the range has {shown} values, more than the cap of {cap:,}",
            "use a larger step or factor, or split the sweep",
        )
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


def axis_values(given: Any, vtype: str, key: str, source: str) -> tuple[tuple[Any, ...], bool]:
    integer = vtype == "int_axis"
    if isinstance(given, Mapping):
        values = expand_range(given, integer=integer)
    elif isinstance(given, list):
        values = tuple(round_sig(x) if vtype == "float_axis" else x for x in given)
    else:
        return ((round_sig(given) if vtype == "float_axis" else given),), False
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
