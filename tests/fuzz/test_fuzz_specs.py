"""Fuzz campaign, sweep specs: random TOML specs of every kind through ``sroa-dist validate``.

Three families of input, for each sweep kind (tensor, model, threshold):

* valid specs drawn from each kind's grammar (sroa_dist/sweep/kinds): ``validate`` accepts
  every one (exit 0, no error line);
* near-valid specs, one mutation away from a valid one (a key misspelt, a value of the wrong
  type, out of range, a table missing, an unknown kind / method / noise model / family,
  duplicate or empty grid values, huge values), written in the file or given as ``--set``:
  refused with one error line naming the key (or the file) and one hint line, exit 2 -- or,
  for the mutations that may be harmless (a missing table with defaults, a huge value that
  fits), accepted;
* garbage (random bytes, a byte that is not UTF-8, a spec cut short, random text): refused in
  the same grammar, or accepted where a cut left a whole spec.

Every input answers without a traceback, leaves the folder as it was, and answers at all
(:func:`tests.support.fuzz.no_hang`). ``validate`` is the contract's judge of "valid"; a few
tiny real runs (``test_fuzz_runs.py``) check that what it accepts runs. Examples are
derandomised: every run of the campaign tries the same inputs.
"""

from __future__ import annotations

import datetime as dt
import string
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.support.fuzz import (
    FUZZ,
    assert_answered,
    assert_refused,
    call_cli,
    toml_text,
    toml_value,
)

# ---- valid specs, one grammar per kind -------------------------------------------------------

_NAME = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,15}", fullmatch=True)
_COMMON = {
    "name": _NAME,
    "seed": st.integers(0, 2**64),
    "replicates": st.integers(1, 4),
}


def _axis(values: st.SearchStrategy, max_size: int = 3) -> st.SearchStrategy:
    """A scalar, or a list of distinct values (an axis)."""
    return st.one_of(values, st.lists(values, min_size=1, max_size=max_size, unique=True))


def _values(v) -> list:
    if isinstance(v, list):
        return v
    if isinstance(v, dict):
        out, x = [], v["start"]
        while x <= v["stop"]:
            out.append(x)
            x = x + v["step"] if "step" in v else x * v["factor"]
        return out
    return [v]


_N = st.one_of(
    _axis(st.integers(2, 6)),
    st.builds(
        lambda a, k: {"start": a, "stop": a + k, "step": 1}, st.integers(2, 4), st.integers(0, 2)
    ),
)
_LEVEL = _axis(st.floats(0.0, 0.5, allow_nan=False).map(lambda x: round(x, 4)))


@st.composite
def tensor_specs(draw) -> dict:
    ns = draw(_N)
    nmin = min(_values(ns))
    tensor = {"n": ns, "p": draw(st.one_of(st.just(3), st.sampled_from([3, 4]), st.just([3, 4])))}
    rank = None
    if draw(st.booleans()):
        tensor["rank"] = rank = draw(st.integers(1, nmin))
    tensor["basis"] = draw(st.sampled_from(["identity", "random"]))
    tensor["lambdas"] = draw(
        st.sampled_from([1.0, 2, -1.5, {"dist": "uniform", "low": 1.0, "high": 2.0}])
    )
    level = draw(st.sampled_from(["sigma", "eps", "eps_scaled"]))
    noise = {
        "model": draw(_axis(st.sampled_from(["gaussian", "binary", "uniform"]))),
        level: draw(_LEVEL),
    }
    method = draw(_axis(st.sampled_from(["sshopm", "power"]), 2))
    solver: dict = {"method": method}
    if draw(st.booleans()):
        solver["options"] = {"n_starts": draw(st.integers(1, 8))}
    if draw(st.booleans()):
        solver["norm_method"] = draw(st.sampled_from(["sshopm", "power"]))
    if draw(st.booleans()):
        solver["steps"] = draw(st.integers(1, rank or nmin))
    spec = {k: draw(s) for k, s in _COMMON.items()}
    spec.update(tensor=tensor, noise=noise, solver=solver)
    if draw(st.booleans()):
        spec["output"] = {"vectors": draw(st.booleans())}
    return spec


@st.composite
def model_specs(draw) -> dict:
    name = draw(st.sampled_from(["topics", "gmm"]))
    k = draw(st.integers(2, 3))
    model = {
        "name": name,
        "N": draw(_axis(st.integers(50, 2000))),
        "k": k,
        "d": draw(st.integers(k, 8)),
        "weights": draw(st.sampled_from(["uniform", 1.0, 2.0, [1.0, 3.0]])),
    }
    if name == "topics":
        model["L"] = draw(_axis(st.integers(3, 6), 2))
        model["prior"] = {"concentration": draw(st.sampled_from([0.2, 1.0]))}
    else:
        model["sigma2"] = draw(st.sampled_from([0.5, 1.0, 2]))
        model["prior"] = {"mean_scale": draw(st.sampled_from([1.0, 2.0]))}
    spec = {k: draw(s) for k, s in _COMMON.items()}
    spec.update(
        model=model,
        solver={"method": draw(_axis(st.sampled_from(["certified", "power", "sshopm"]), 2))},
    )
    return spec


@st.composite
def threshold_specs(draw) -> dict:
    crit = draw(st.sampled_from(["value", "recovery", "theorem"]))
    threshold: dict = {"criterion": crit}
    if crit in ("value", "theorem") and draw(st.booleans()):
        threshold["c"] = draw(st.sampled_from([0.5, 1.0, 2.0]))
    if crit in ("recovery", "theorem") and draw(st.booleans()):
        threshold["radius"] = draw(st.sampled_from([0.1, 0.3]))
    lo = draw(st.sampled_from([0.02, 0.05, 0.1]))
    threshold["eps_range"] = [lo, draw(st.sampled_from([0.5, 1.0, 1.5]))]
    threshold["rtol"] = draw(st.sampled_from([0.01, 0.02, 0.1]))
    models = draw(_axis(st.sampled_from(["coherent-tilt", "gaussian"]), 2))
    noise: dict = {"model": models}
    if "coherent-tilt" in _values(models) and draw(st.booleans()):
        noise["params"] = {"coherent-tilt": {"component": "smallest"}}
    spec = {k: draw(s) for k, s in _COMMON.items()}
    spec.update(
        tensor={"n": draw(_axis(st.integers(3, 10))), "p": 3},
        noise=noise,
        solver={"method": draw(_axis(st.sampled_from(["sshopm", "power"]), 2))},
        threshold=threshold,
    )
    return spec


KINDS = {"tensor": tensor_specs(), "model": model_specs(), "threshold": threshold_specs()}


def _validate(tmp: Path, text: str | bytes, *setting: str):
    spec = tmp / "spec.toml"
    if isinstance(text, bytes):
        spec.write_bytes(text)
    else:
        spec.write_text(text, encoding="utf-8")
    argv = ["validate", str(spec)]
    for item in setting:
        argv += ["--set", item]
    return call_cli(argv, tmp)


@settings(FUZZ, max_examples=40)
@given(data=st.data())
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_valid_spec_validates(kind, data):
    spec = data.draw(KINDS[kind], label="spec")
    with tempfile.TemporaryDirectory() as tmp:
        answer = _validate(Path(tmp), toml_text(spec))
    assert answer.code == 0, answer.show()
    assert_answered(answer)


# ---- near-valid: one mutation of a valid spec ------------------------------------------------


def _leaves(spec: dict, prefix: str = "") -> list[str]:
    """Dotted paths of the spec's keys, tables included; not inside the free-form option and
    parameter tables (their keys are the methods' and families' own, checked by them)."""
    out = []
    for k, v in spec.items():
        path = prefix + k
        out.append(path)
        if isinstance(v, dict) and k not in ("options", "params", "prior"):
            out += _leaves(v, path + ".")
    return out


def _get(spec: dict, path: str):
    node = spec
    for part in path.split("."):
        node = node[part]
    return node


def _set(spec: dict, path: str, value) -> None:
    parts = path.split(".")
    node = spec
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def _drop(spec: dict, path: str) -> None:
    parts = path.split(".")
    node = _get(spec, ".".join(parts[:-1])) if len(parts) > 1 else spec
    del node[parts[-1]]


def _misspelt(draw, key: str) -> str:
    how = draw(st.sampled_from(["swap", "drop", "double", "case", "typo"]))
    if how == "swap" and len(key) > 1:
        i = draw(st.integers(0, len(key) - 2))
        new = key[:i] + key[i + 1] + key[i] + key[i + 2 :]
    elif how == "drop" and len(key) > 1:
        i = draw(st.integers(0, len(key) - 1))
        new = key[:i] + key[i + 1 :]
    elif how == "double":
        i = draw(st.integers(0, len(key) - 1))
        new = key[:i] + key[i] + key[i:]
    elif how == "case":
        new = key.upper()
    else:
        new = key + draw(st.sampled_from(["s", "_", "x", "2"]))
    return new if new != key else key + "x"


#: Values of the wrong type for each type of key (by the type of the valid value).
_WRONG = {
    int: ["3", 2.5, True, [], {"a": 1}, dt.date(2024, 1, 1), [1, "x"]],
    float: ["0.1", True, {"a": 1.0}, dt.time(12, 0), [0.1, "x"], [[0.1]]],
    str: [3, 0.5, True, ["a", 1], {"name": "x"}, dt.datetime(2024, 1, 1, 12, 0)],
    bool: ["true", 1, 0.0, [True]],
    list: ["[1, 2]", {"start": "a"}, [[]], [True, False]],
    dict: ["table", 3, [1, 2], True],
}

#: Values out of range, per key: the grammar's limits from both sides.
_OUT_OF_RANGE = {
    "replicates": [0, -1, 1_000_001],
    "seed": [-1, 2**128],
    "name": ["", ".hidden", "../up", "a/b", "x" * 101, "bad name!"],
    "tensor.n": [1, 0, -3, [2, 1], {"start": 1, "stop": 3, "step": 1}],
    "tensor.p": [2, 1, 0, [3, 2]],
    "tensor.rank": [0, 99, -1],
    "tensor.lambdas": [0, 0.0, 1e200, [1.0] * 50, {"dist": "uniform", "low": 2.0, "high": 1.0}],
    "noise.sigma": [-0.1, 1e200, [0.1, -0.1], {"start": 0.5, "stop": 0.1, "step": 0.1}],
    "noise.eps": [-1.0, 1e151],
    "noise.eps_scaled": [-0.5, {"start": 0.0, "stop": 1.0, "factor": 2.0}],
    "solver.steps": [0, -1, 99],
    "solver.options": [{"n_starts": 0}, {"n_starts": -2}, {"n_starts": 2.5}],
    "model.N": [1, 0, -10],
    "model.k": [1, 0, 99],
    "model.d": [1, 0],
    "model.L": [2, 0],
    "model.sigma2": [0.0, -1.0],
    "model.weights": [0.5, -1.0, 0.0],
    "model.prior": [{"concentration": -1.0}, {"mean_scale": 0.0}, {"bogus": 1.0}],
    "threshold.c": [0.0, -1.0],
    "threshold.radius": [0.0, -0.3],
    "threshold.eps_range": [[0.5, 0.1], [0.0, 1.0], [0.1], [0.1, 0.2, 0.3], [-1.0, 1.0]],
    "threshold.rtol": [0.0, -0.01, 0.25, 1.0],
    "threshold.scan_phases": [0, 3],
    "threshold.revision": [0, 99],
}

#: Names no registry knows, for the keys that name a kind, method, model or family.
_UNKNOWN_NAME = st.one_of(
    st.sampled_from(["bogus", "SSHOPM", "gauss", "coherent_tilt", "tilt+", "+gaussian", ""]),
    st.sampled_from(["no_such_module_xyz:f", "math:sqrt", "sroa_dist:nope", "a:b:c", ":", "x."]),
    st.text(string.ascii_lowercase + "-_", min_size=1, max_size=12),
)
_NAMED = {
    "solver.method": "solver.method",
    "solver.norm_method": "solver.norm_method",
    "noise.model": "noise.model",
    "model.name": "model.name",
    "tensor.basis": "tensor.basis",
    "threshold.criterion": "threshold.criterion",
    "noise.scale": "noise.scale",
}

#: Values far beyond any real sweep: answered (refused, or accepted if they fit) without a hang.
_HUGE = [10**6, 10**9, 2**63, 2**70, 10**30, 1e300, 1.7e308, -(2**63), 10**400]
_HUGE_KEYS = [
    "replicates",
    "seed",
    "tensor.n",
    "tensor.p",
    "tensor.rank",
    "noise.sigma",
    "solver.steps",
    "model.N",
    "model.k",
    "model.d",
    "model.L",
    "threshold.eps_range",
]


#: The keys of each kind that may be swept (lists: the grids of duplicate and empty values).
_AXIS_KEYS = {
    "tensor": ["tensor.n", "tensor.p", "tensor.rank", "noise.model", "solver.method"],
    "model": ["model.N", "model.k", "model.d", "model.L", "model.weights", "solver.method"],
    "threshold": ["tensor.n", "tensor.p", "noise.model", "solver.method"],
}


#: The near-valid inputs, one mutation of a valid spec each.
MUTATIONS = (
    "misspelt",
    "wrong type",
    "out of range",
    "missing table",
    "unknown name",
    "duplicate grid",
    "empty grid",
    "unknown table",
    "huge",
)

#: Where a mutation is written: in the file, or as ``--set KEY=VALUE`` on the command line.
_WHERE = st.sampled_from(["file", "file", "set"])


@st.composite
def mutations(draw, kind: str, what: str):
    """One mutation ``what`` (:data:`MUTATIONS`) of a valid spec of ``kind``: ``(spec dict,
    [--set items], the names the error must mention, whether it must be refused)``."""
    spec = draw(KINDS[kind])
    leaves = _leaves(spec)
    where = draw(_WHERE)
    if what == "misspelt":
        path = draw(st.sampled_from(leaves))
        parent, _, leaf = path.rpartition(".")
        new = _misspelt(draw, leaf)
        value = _get(spec, path)
        _drop(spec, path)
        new_path = f"{parent}.{new}" if parent else new
        _set(spec, new_path, value)
        # Misspelling a kind's marker table makes it another kind's spec, with one unknown
        # table: either way the misspelt name is named.
        return spec, [], [new], True
    if what == "wrong type":
        path = draw(
            st.sampled_from([p for p in leaves if not isinstance(_get(spec, p), dict)] or leaves)
        )
        value = _get(spec, path)
        if path.endswith("weights") and value == "uniform":
            value = 1.0
        wrong = draw(st.sampled_from(_WRONG[type(value)]))
        return _placed(draw, spec, path, wrong, where, [path], True)
    if what == "out of range":
        keys = [k for k in _OUT_OF_RANGE if _applies(kind, spec, k)]
        path = draw(st.sampled_from(keys))
        bad = draw(st.sampled_from(_OUT_OF_RANGE[path]))
        # A bound between two keys may be blamed on either (rank <= n, k <= d).
        names = {
            "tensor.rank": ["tensor.rank", "tensor.n"],
            "model.d": ["model.d", "model.k"],
            "solver.options": ["solver.options", "solver.method"],
        }.get(path, [path])
        return _placed(draw, spec, path, bad, where, names, True)
    if what == "missing table":
        tables = [k for k, v in spec.items() if isinstance(v, dict)]
        _drop(spec, draw(st.sampled_from(tables)))
        return spec, [], [], False  # defaults may fill it: answered either way
    if what == "unknown name":
        keys = [k for k in _NAMED if _applies(kind, spec, k) or k in ("solver.norm_method",)]
        if kind != "tensor":
            keys = [
                k for k in keys if k not in ("noise.scale", "tensor.basis", "solver.norm_method")
            ]
        if kind != "threshold":
            keys = [k for k in keys if k != "threshold.criterion"]
        if kind != "model":
            keys = [k for k in keys if k != "model.name"]
        else:
            keys = [k for k in keys if k != "noise.model"]
        path = draw(st.sampled_from(keys))
        name = draw(_UNKNOWN_NAME)
        return _placed(draw, spec, path, name, where, [path], True)
    if what == "duplicate grid":
        path = draw(st.sampled_from([k for k in _AXIS_KEYS[kind] if _has(spec, k)]))
        values = _values(_get(spec, path))
        dup = values + [values[draw(st.integers(0, len(values) - 1))]]
        return _placed(draw, spec, path, dup, where, [path], True)
    if what == "empty grid":
        path = draw(st.sampled_from([k for k in _AXIS_KEYS[kind] if _has(spec, k)]))
        empty = draw(st.sampled_from([[], {"start": 3, "stop": 2, "step": 1}, {}]))
        return _placed(draw, spec, path, empty, where, [path], True)
    if what == "unknown table":
        table = draw(st.sampled_from(["kind", "sweep", "tensors", "models", "noise2", "Model"]))
        if kind == "model" and table == "Model":
            table = "models"
        spec[table] = {"x": 1}
        return spec, [], [table], True
    path = draw(
        st.sampled_from([k for k in _HUGE_KEYS if _applies(kind, spec, k) or k == "replicates"])
    )
    huge = draw(st.sampled_from(_HUGE))
    if path == "threshold.eps_range":
        huge = [1e-300, float(huge) if abs(huge) < 1e308 else 1.7e308]
    return _placed(draw, spec, path, huge, where, [], False)


def _has(spec: dict, path: str) -> bool:
    try:
        _get(spec, path)
    except (KeyError, TypeError):
        return False
    return True


def _applies(kind: str, spec: dict, key: str) -> bool:
    """Whether ``key`` belongs to this kind's grammar (and its table is in the spec)."""
    table = key.split(".")[0]
    if "." not in key:
        return True
    own = {
        "tensor": {"tensor", "noise", "solver"},
        "model": {"model", "solver"},
        "threshold": {"tensor", "noise", "solver", "threshold"},
    }[kind]
    if table not in own:
        return False
    if kind == "threshold" and key in (
        "tensor.rank",
        "tensor.lambdas",
        "noise.sigma",
        "noise.eps",
        "noise.eps_scaled",
        "solver.steps",
        "solver.options",
        "noise.scale",
    ):
        return False
    if kind == "tensor" and key.startswith("noise.") and key[6:] in ("sigma", "eps", "eps_scaled"):
        return key[6:] in spec["noise"]
    if kind == "model" and key == "model.L":
        return spec["model"]["name"] == "topics"
    if kind == "model" and key == "model.sigma2":
        return spec["model"]["name"] == "gmm"
    if kind == "model" and key == "model.prior":
        return True
    return True


def _placed(draw, spec: dict, path: str, value, where: str, names: list[str], refused: bool):
    """Put ``value`` at ``path``: in the spec, or as a ``--set`` item when TOML can say it
    inline (it always can here) and the file keeps the valid value."""
    # A value inside a key's table (a range table's step) may be blamed on the key itself.
    names = [n for name in names for n in _prefixes(name)]
    if where == "set":
        return spec, [f"{path}={toml_value(value)}"], names, refused
    _set(spec, path, value)
    return spec, [], names, refused


def _prefixes(path: str) -> list[str]:
    """``a.b.c`` -> ``[a.b.c, a.b]``: the key and the keys holding it (not the bare table)."""
    parts = path.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), min(2, len(parts)) - 1, -1)]


def _check(answer, names: list[str], refused: bool) -> None:
    if refused:
        assert_refused(answer, *names)
    else:
        assert_answered(answer)
    event("refused" if answer.code == 2 else "accepted")


@settings(FUZZ, max_examples=40)
@given(data=st.data())
@pytest.mark.parametrize("what", MUTATIONS)
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.slow
def test_a_near_valid_spec_is_refused_naming_the_key(kind, what, data):
    spec, setting, names, refused = data.draw(mutations(kind, what), label="mutation")
    with tempfile.TemporaryDirectory() as tmp:
        answer = _validate(Path(tmp), toml_text(spec), *setting)
    _check(answer, names, refused)


# ---- garbage ---------------------------------------------------------------------------------

_SMOKE_TEXT = {
    "tensor": "sweeps/smoke/figure2.toml",
    "model": "sweeps/smoke/gmm.toml",
    "threshold": "sweeps/smoke/threshold.toml",
}


@st.composite
def garbage(draw, kind: str):
    from tests.support.helpers import ROOT

    text = (ROOT / _SMOKE_TEXT[kind]).read_bytes()
    what = draw(st.sampled_from(["bytes", "not utf-8", "truncated", "text", "nul"]))
    event(f"{kind}: {what}")
    if what == "bytes":
        return draw(st.binary(min_size=1, max_size=200))
    if what == "not utf-8":
        i = draw(st.integers(0, len(text)))
        bad = draw(st.sampled_from([b"\xff", b"\xe9", b"\xc3", b"\x80\x80", b"\xfe\xff"]))
        return text[:i] + bad + text[i:]
    if what == "truncated":
        return text[: draw(st.integers(0, len(text) - 1))]
    if what == "nul":
        i = draw(st.integers(0, len(text)))
        return text[:i] + b"\x00" + text[i:]
    return draw(st.text(min_size=1, max_size=200)).encode("utf-8", "surrogatepass")


@settings(FUZZ, max_examples=40)
@given(data=st.data())
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_garbage_is_refused_in_one_line_with_a_hint(kind, data):
    raw = data.draw(garbage(kind), label="file")
    with tempfile.TemporaryDirectory() as tmp:
        answer = _validate(Path(tmp), raw)
    assert_answered(answer)  # a cut that leaves a whole spec is valid
    if answer.code == 2:
        assert "spec.toml" in answer.lines[0] or "key '" in answer.lines[0], answer.show()


# ---- what the campaign found: kept as explicit cases ----------------------------------------

_BASE = 'name = "found"\n[tensor]\nn = 3\n[noise]\nmodel = "gaussian"\nsigma = 0.01\n'
_THRESHOLD = (
    'name = "found"\n[tensor]\nn = 3\n[noise]\nmodel = "coherent-tilt"\n'
    '[solver]\nmethod = "sshopm"\n[threshold]\n'
)

FOUND = [
    # n^p beyond any memory overflowed the cost model's float(n) ** p: a traceback.
    (_BASE.replace("n = 3", "n = 3\np = 1000000"), "tensor.p"),
    (_BASE.replace("n = 3", "n = 1" + "0" * 400), "tensor.n"),
    # A range wider than the float range overflowed the search's scan grid: a traceback.
    (_THRESHOLD + "eps_range = [1e-300, 1e9]\n", "threshold.eps_range"),
    # Any callable passed as a method; every block of the run then failed.
    (_BASE + '[solver]\nmethod = "math:sqrt"\n', "solver.method"),
]


@pytest.mark.parametrize("text, key", FOUND, ids=[k for _, k in FOUND])
def test_what_the_campaign_found_is_refused(text, key):
    with tempfile.TemporaryDirectory() as tmp:
        assert_refused(_validate(Path(tmp), text), key)
