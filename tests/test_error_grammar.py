"""One error grammar: every error a user can cause is one line saying what was expected and
received, and one line of hint; every warning of the package is one line.

The lists here cannot go stale quietly:

* every ``raise`` in ``sroa_dist/`` is read (``ast``): no bare ``ValueError``/``TypeError``
  (bad input raises :class:`~sroa_dist.errors.InputError` with a hint, a broken invariant a
  ``RuntimeError``), no hint pasted into a message, no empty hint; every ``warnings.warn``
  names a :class:`~sroa_dist.errors.SroaWarning` category;
* every exception class the package defines carries a hint and is explained by the CLI;
* every public function of ``sroa_dist`` and ``sroa_dist.analysis`` and every ``sroa-dist``
  subcommand has a bad-input case below (a new one fails until it gets one), and each case
  is checked for the grammar: the CLI's two lines and exit status 2, the API's one-line
  message with a one-line hint shown as the exception's note.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import sroa_dist
import sroa_dist.analysis as analysis
from sroa_dist.errors import InputError, SroaWarning
from tests.support.helpers import ROOT

PKG = ROOT / "sroa_dist"
SPEC = str(ROOT / "sweeps" / "smoke" / "figure2.toml")
THRESHOLD_SPEC = str(ROOT / "sweeps" / "smoke" / "threshold.toml")

ERROR_LINE = re.compile(r"^sroa-dist( [a-z]+)?: error: \S.*$")
HINT_LINE = re.compile(r"^hint: \S.*$")


def _modules():
    """Every module of the package (imported: the exception classes live on them)."""
    out = [sroa_dist]
    for info in pkgutil.walk_packages(sroa_dist.__path__, "sroa_dist."):
        if not info.name.endswith("__main__"):
            out.append(importlib.import_module(info.name))
    return out


def _package_classes(base: type) -> set[type]:
    found = set()
    for mod in _modules():
        for obj in vars(mod).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, base)
                and obj.__module__.startswith("sroa_dist")
            ):
                found.add(obj)
    return found


def _raises():
    """``(where, call node, callee name)`` of every ``raise Name(...)`` in the package."""
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                func = node.exc.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                yield f"{path.relative_to(ROOT)}:{node.lineno}", node.exc, name


def _strings(node: ast.AST) -> list[str]:
    return [
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


# ---- every raise site ---------------------------------------------------------------------


def test_bad_input_is_never_a_bare_value_or_type_error():
    bare = [where for where, _, name in _raises() if name in ("ValueError", "TypeError")]
    assert bare == [], (
        "raise InputError(message, hint) for bad input (InputTypeError for a wrong type), "
        f"RuntimeError for a broken invariant: {bare}"
    )


def test_no_hint_is_pasted_into_a_message():
    pasted = [
        where
        for where, call, _ in _raises()
        if call.args and any(re.search(r"(?i)\bhint:", s) for s in _strings(call.args[0]))
    ]
    assert pasted == [], f"give the hint as its own argument: {pasted}"


def test_every_input_error_gets_a_hint():
    """Classes whose hint is a required argument get a non-empty one at every raise site."""
    required = {}
    for cls in _package_classes(InputError):
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        for i, prm in enumerate(params):
            if prm.name == "hint" and prm.default is inspect.Parameter.empty:
                required[cls.__name__] = i
    assert {"InputError", "CLIError", "NotAStoreError"} <= set(required)
    missing = []
    for where, call, name in _raises():
        if name not in required:
            continue
        hint = next((k.value for k in call.keywords if k.arg == "hint"), None)
        if hint is None and len(call.args) > required[name]:
            hint = call.args[required[name]]
        empty = isinstance(hint, ast.Constant) and not str(hint.value).strip()
        if hint is None or empty:
            missing.append(where)
    assert missing == [], f"raised without a hint: {missing}"


def test_every_warning_of_the_package_is_a_sroa_warning():
    categories = {c.__name__ for c in _package_classes(SroaWarning)}
    wrong = []
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "warnings.warn":
                cat = node.args[1] if len(node.args) > 1 else None
                cat = next((k.value for k in node.keywords if k.arg == "category"), cat)
                if not (isinstance(cat, ast.Name) and cat.id in categories):
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert wrong == [], f"warn with a SroaWarning category (one line, no source line): {wrong}"


def test_every_error_class_has_a_hint_and_the_cli_explains_it():
    from sroa_dist.cli.errors import explain

    explain(RuntimeError())  # builds the table
    from sroa_dist.cli.errors import ERRORS

    covered = [t for types, _ in ERRORS for t in types]
    for cls in _package_classes(Exception):
        if cls.__module__ == "sroa_dist.cli" and cls.__name__.startswith("_"):
            continue
        if issubclass(cls, Warning):
            continue
        init = cls.__dict__.get("__init__")
        has_hint = (
            issubclass(cls, InputError)
            or "hint" in dir(cls)
            or "hint" in inspect.signature(cls.__init__).parameters
            or (init is not None and "self.hint = " in inspect.getsource(init))
        )
        assert has_hint, f"{cls.__module__}.{cls.__name__} has no hint"
        assert issubclass(cls, tuple(covered)), f"the CLI does not explain {cls.__name__}"


# ---- the Python API -----------------------------------------------------------------------


def _tensor():
    return sroa_dist.make_instance(4, 3, noise="gaussian", sigma=0.01, rng=0).T_hat


#: One bad call per public function of ``sroa_dist``.
API = {
    "identity_basis": lambda: sroa_dist.identity_basis(1),
    "random_orthonormal_basis": lambda: sroa_dist.random_orthonormal_basis(3, 5, rng=0),
    "sod_tensor": lambda: sroa_dist.sod_tensor([1, 0], np.eye(2), 3),
    "symmetrize": lambda: sroa_dist.symmetrize(np.ones((2, 3, 4))),
    "noise_tensor": lambda: sroa_dist.noise_tensor("cauchy", 4, 3, 0.1, rng=0),
    "register_noise": lambda: sroa_dist.register_noise("", lambda rng, size, sigma: None),
    "register_method": lambda: sroa_dist.register_method("sshopm", lambda Ts, rngs: None),
    "register_perturbation": lambda: sroa_dist.register_perturbation("a+b", lambda *a: None),
    "resolve_method": lambda: sroa_dist.resolve_method("nope"),
    "rank_one": lambda: sroa_dist.rank_one(np.ones((3, 3)), rng=0),
    "rank_one_batch": lambda: sroa_dist.rank_one_batch(np.zeros((0, 3, 3, 3)), rng=0),
    "sroa": lambda: sroa_dist.sroa(_tensor(), rank=9, rng=0),
    "sroa_batch": lambda: sroa_dist.sroa_batch(_tensor()[None], deflation="sideways", rng=0),
    "operator_norm": lambda: sroa_dist.operator_norm(_tensor(), method="nope"),
    "operator_norm_batch": lambda: sroa_dist.operator_norm_batch(_tensor(), method="sshopm"),
    "scale_to_opnorm": lambda: sroa_dist.scale_to_opnorm(_tensor(), -1.0, norm=1.0),
    "make_instance": lambda: sroa_dist.make_instance(4, 3, sigma=0.1, eps=0.1, rng=0),
    "match": lambda: sroa_dist.match(
        sroa_dist.sroa(_tensor(), method="sshopm", rng=0), np.ones(3), np.eye(4)
    ),
    "theorem_2_2_bounds": lambda: sroa_dist.theorem_2_2_bounds(-1.0, 1.0),
    "theorem_3_1_bounds": lambda: sroa_dist.theorem_3_1_bounds(-0.1, 1.0),
    "structured_tensor": lambda: sroa_dist.structured_tensor(2, np.ones(3), eps=0.1),
    "draw_perturbation": lambda: sroa_dist.draw_perturbation(
        "coherent-tilt+cauchy", 4, 3, np.eye(4), np.ones(4), rng=0
    ),
    "worst_case": lambda: sroa_dist.worst_case(4, 3, 0.1, metric="nope", rng=0),
    "load_worst_case": lambda: sroa_dist.load_worst_case(ROOT / "results" / "no-such-case.npz"),
    "recheck_worst_case": lambda: sroa_dist.recheck_worst_case(ROOT / "results" / "no-such.npz"),
    "tilt_shrink_norm": lambda: sroa_dist.tilt_shrink_norm(5, 0.3),
    "find_threshold": lambda: sroa_dist.find_threshold(1, 3, rng=0),
    "load_spec": lambda: sroa_dist.load_spec(ROOT / "sweeps" / "no-such-spec.toml"),
    "open_results": lambda: sroa_dist.open_results(ROOT / "results" / "no-such-store.zarr"),
    "run_sweep": lambda: sroa_dist.run_sweep(SPEC, ROOT / "results" / "never.zarr", workers=0),
}

#: Functions of ``sroa_dist.analysis`` that take a cube and refuse an empty one.
CUBE_FUNCTIONS_OF_ANALYSIS = "a cube"
#: The others, each with its own bad call.
ANALYSIS = {
    "fit_rate": lambda: analysis.fit_rate([8, 16], [0.1, 0.1], [0.2, 0.2], p=3),
    "size_medians": lambda: analysis.size_medians([8], [0.1], [0.2], p=2),
    "plot_cube": lambda out: analysis.plot_cube(xr.Dataset(), out / "figures"),
    "write_report": lambda out: analysis.write_report(xr.Dataset(), out / "report"),
    "plot_sample_scaling": lambda out: analysis.plot_sample_scaling(xr.Dataset(), out / "s"),
    "get_criterion": lambda: analysis.get_criterion("bogus"),
    "accumulation": lambda: analysis.accumulation(3, [0.1, -0.1], n=8),
    "accumulation_limit": lambda: analysis.accumulation_limit(2),
    "predict_threshold": lambda: analysis.predict_threshold(3, [16], c=-1.0),
    "compare_prediction": lambda: analysis.compare_prediction([32], [0.3], [float("inf")], p=3),
    "figure_prediction": lambda: analysis.figure_prediction([]),
    "fit_g_decay": lambda: analysis.fit_g_decay(xr.Dataset(), 3),
    "corrected_crossing": lambda: analysis.corrected_crossing(
        analysis.PredictedThreshold.from_record(
            {
                "p": 3,
                "criterion": "value",
                "c": 0.5,
                "n": [16],
                "eps_star": [0.2],
                "asymptote": [0.2],
                "plateau": 0.4,
                "onset_n": 14,
            }
        ),
        None,
        512,
    ),
    "check_report_formats": lambda: analysis.check_report_formats(["md", "docx"]),
}
#: The ones among them that write files (their bad call gets a folder to leave untouched).
OUTPUT_FUNCTIONS = {"plot_cube", "write_report", "plot_sample_scaling"}
#: Public callables with no argument to refuse (queries), and why.
NO_BAD_INPUT = {
    "supported_figures": "a query: any cube has a (possibly empty) list of figures",
}


def _public_functions(module) -> set[str]:
    return {
        name
        for name in module.__all__
        if callable(getattr(module, name)) and not inspect.isclass(getattr(module, name))
    }


def test_every_public_function_has_a_bad_input_case():
    assert _public_functions(sroa_dist) == set(API)
    assert set(ANALYSIS) | set(NO_BAD_INPUT) <= _public_functions(analysis)


def _assert_api_grammar(exc: BaseException) -> None:
    assert isinstance(exc, InputError), f"{type(exc).__name__}: {exc}"
    message, hint = str(exc), exc.hint
    assert message and "\n" not in message and not re.search(r"(?i)\bhint:", message)
    assert hint and "\n" not in hint
    assert exc.__notes__ == [f"hint: {hint}"]  # what Python prints under the message


@pytest.mark.parametrize("name", sorted(API))
def test_the_api_refuses_bad_input_in_one_line_with_a_hint(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError) as info:
            API[name]()
    _assert_api_grammar(info.value)


@pytest.mark.parametrize("name", sorted(_public_functions(analysis) - set(NO_BAD_INPUT)))
def test_the_analysis_api_refuses_bad_input_in_one_line_with_a_hint(name, tmp_path):
    call = ANALYSIS.get(name, lambda: getattr(analysis, name)(xr.Dataset()))
    out = tmp_path / "out"
    with pytest.raises(ValueError) as info:
        call(out) if name in OUTPUT_FUNCTIONS else call()
    _assert_api_grammar(info.value)
    assert not out.exists()  # bad input leaves nothing behind


def _cube():
    from tests.support.analysis_cubes import scaling_cube

    return scaling_cube(ns=(4, 8), n_eps=4, n_rep=3)


def _threshold(**kw):
    return sroa_dist.find_threshold(6, 3, rng=0, **kw)


NAN, INF = float("nan"), float("inf")

#: Every option of the Python API that takes a number or a flag, one bad value each:
#: (call, a part of the message). The report and figure cases get a real cube, and must
#: leave their output folder unmade.
OPTIONS = {
    "write_report c=-1": (
        lambda out: analysis.write_report(_cube(), out / "r", c=-1.0),
        "c: expected a finite number > 0",
    ),
    "write_report c=0 (criterion recovery)": (
        lambda out: analysis.write_report(_cube(), out / "r", criterion="recovery", c=0.0),
        "c: expected a finite number > 0",
    ),
    "write_report radius=nan": (
        lambda out: analysis.write_report(_cube(), out / "r", radius=NAN),
        "radius: expected a finite number > 0",
    ),
    "write_report rtol=-1": (
        lambda out: analysis.write_report(_cube(), out / "r", rtol=-1.0),
        "rtol: expected a finite number >= 0",
    ),
    "write_report n_boot=-1": (
        lambda out: analysis.write_report(_cube(), out / "r", n_boot=-1),
        "n_boot: expected an integer >= 0",
    ),
    "plot_cube c=nan (criterion recovery)": (
        lambda out: analysis.plot_cube(_cube(), out / "f", c=NAN),
        "c: expected a finite number > 0",
    ),
    "plot_cube radius=inf": (
        lambda out: analysis.plot_cube(_cube(), out / "f", radius=INF),
        "radius: expected a finite number > 0",
    ),
    "plot_cube radius='0.3'": (
        lambda out: analysis.plot_cube(_cube(), out / "f", radius="0.3"),
        "received '0.3'",
    ),
    "write_report rng='x'": (
        lambda out: analysis.write_report(_cube(), out / "r", rng="x"),
        "rng: expected a seed",
    ),
    "plot_cube formats=3": (
        lambda out: analysis.plot_cube(_cube(), out / "f", 3),
        "formats: expected a figure format",
    ),
    "find_threshold p=2.5": (lambda out: sroa_dist.find_threshold(6, 2.5), "received 2.5"),
    "run_sweep overwrite='yes'": (
        lambda out: sroa_dist.run_sweep(SPEC, out / "s.zarr", overwrite="yes"),
        "overwrite: expected true or false",
    ),
    "plot_cube dpi=0": (
        lambda out: analysis.plot_cube(_cube(), out / "f", dpi=0),
        "dpi: expected a finite number > 0",
    ),
    "summarize c=-1": (
        lambda out: analysis.summarize(_cube(), c=-1.0),
        "c: expected a finite number > 0",
    ),
    "success radius=0": (
        lambda out: analysis.success(_cube(), "recovery", radius=0.0),
        "radius: expected a finite number > 0",
    ),
    "success theorem c=inf": (
        lambda out: analysis.success(_cube(), "theorem", c=INF),
        "c: expected a finite number > 0",
    ),
    "estimate_thresholds n_boot=1.5": (
        lambda out: analysis.estimate_thresholds(_cube(), n_boot=1.5),
        "n_boot: expected an integer >= 0",
    ),
    "find_threshold c=inf": (lambda out: _threshold(c=INF), "c: expected a finite number > 0"),
    "find_threshold radius=nan": (
        lambda out: _threshold(criterion="theorem", radius=NAN),
        "radius: expected a finite number > 0",
    ),
    "RunCriterion.evaluate level=nan": (
        lambda out: sroa_dist.studies.criteria.get_run_criterion("value").evaluate(
            [0.1], [0.1], 0.1, [1.0], level=NAN
        ),
        "level: expected a finite number > 0",
    ),
    "rank_one power certificate=True": (
        lambda out: sroa_dist.rank_one(_tensor(), "power", certificate=True, rng=0),
        "certificate: method 'power' cannot produce a certificate",
    ),
    "rank_one_batch sshopm certificate=True": (
        lambda out: sroa_dist.rank_one_batch(_tensor()[None], "sshopm", certificate=True),
        "certificate: method 'sshopm' cannot produce a certificate",
    ),
    "rank_one certificate='yes'": (
        lambda out: sroa_dist.rank_one(_tensor(), certificate="yes", rng=0),
        "certificate: expected true or false",
    ),
    "run_sweep misspelt keyword": (
        lambda out: sroa_dist.run_sweep(SPEC, out / "s.zarr", replicatse=4),
        "run_sweep() got an unexpected keyword argument 'replicatse'",
    ),
    "run_sweep misspelt nested keyword": (
        lambda out: sroa_dist.run_sweep(SPEC, out / "s.zarr", noise__sigmaa=0.1),
        "unexpected keyword argument 'noise__sigmaa'",
    ),
    "run_sweep bad spec value by keyword": (
        lambda out: sroa_dist.run_sweep(SPEC, out / "s.zarr", replicates=-1),
        "run_sweep(replicates=-1): key 'replicates'",
    ),
    "run_sweep lease_timeout=nan": (
        lambda out: sroa_dist.run_sweep(SPEC, out / "s.zarr", lease_timeout=NAN),
        "lease_timeout: expected seconds > 0",
    ),
    "run_sweep connect_timeout='soon'": (
        lambda out: sroa_dist.run_sweep(SPEC, out / "s.zarr", connect_timeout="soon"),
        "connect_timeout: expected seconds > 0",
    ),
    "open_results damaged='ignore'": (
        lambda out: sroa_dist.open_results(out / "none.zarr", damaged="ignore"),
        "damaged",
    ),
}


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_every_option_is_checked_in_one_line_with_a_hint(name, tmp_path):
    call, part = OPTIONS[name]
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError) as info:
            call(out)
    _assert_api_grammar(info.value)
    assert part in str(info.value), str(info.value)
    assert not out.exists()  # bad input leaves nothing behind


def test_a_misspelt_keyword_of_run_sweep_is_a_type_error_listing_the_valid_ones(tmp_path):
    """Python's own answer to a misspelt keyword is a TypeError naming the function; the
    spec layer's answer named a `--set` option the caller never wrote."""
    with pytest.raises(TypeError) as info:
        sroa_dist.run_sweep(SPEC, tmp_path / "s.zarr", replicatse=4)
    text = str(info.value)
    assert "--set" not in text and "--set" not in info.value.hint
    for keyword in ("workers", "block_size", "task_timeout", "'replicates'", "'noise'"):
        assert keyword in text, text  # its own keywords and the spec's keys


def test_certificate_true_names_the_methods_that_can_give_one():
    with pytest.raises(ValueError) as info:
        sroa_dist.rank_one(_tensor(), "sshopm", certificate=True, rng=0)
    assert "certified" in info.value.hint and "sos" in info.value.hint
    step = sroa_dist.rank_one(_tensor(), "certified", certificate=True, rng=0)
    assert step.certificate is not None  # a method that can gives one


def test_a_criterion_knob_that_passes_keeps_its_lines_in_the_report(tmp_path):
    """The bug behind the checks: an option the criterion refused dropped its lines."""
    ds = _cube()
    md = analysis.write_report(ds, tmp_path / "r", ("md",), c=0.7, n_boot=0)[0].read_text()
    assert "Success (value: every step's |λ̂ − λ| ≤ 0.7·ε)" in md
    assert "Success (recovery:" in md and "Success (theorem:" in md


def test_errors_keep_their_hint_across_processes():
    """Dask pickles a task's error back to the client: the hint and the key travel with it."""
    import pickle

    from sroa_dist.sweep.spec.fields import SpecError
    from sroa_dist.sweep.store.target import StoreNotFoundError

    for exc in (
        SpecError("s.toml", "tensor.n", "dimensions n >= 2", 1, "give n >= 2"),
        StoreNotFoundError("store: expected a store; received nothing", "run it first"),
    ):
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc) and back.hint == exc.hint
        assert back.__notes__ == exc.__notes__
    assert isinstance(back, FileNotFoundError)  # a missing store is still one


def test_ipython_shows_an_error_as_its_two_lines_unless_debugging(monkeypatch):
    """IPython (a notebook) prints what ``_render_traceback_`` returns in place of the
    traceback: the CLI's two lines; with ``SROA_DEBUG`` the hook is absent, so the traceback
    shows. tests/analysis/test_notebook.py sees the two lines come out of a real kernel."""
    from sroa_dist.sweep.store.target import StoreNotFoundError

    monkeypatch.delenv("SROA_DEBUG", raising=False)
    exc = StoreNotFoundError("store: expected a store; received x, which does not exist", "run")
    assert exc._render_traceback_() == [f"error: {exc}", "hint: run"]
    assert InputError("no advice here", "")._render_traceback_() == ["error: no advice here"]
    monkeypatch.setenv("SROA_DEBUG", "1")
    assert not hasattr(exc, "_render_traceback_")


def test_a_package_warning_prints_as_one_line():
    """What Python prints for a warning of the package: no file name, no source line."""
    text = warnings.formatwarning("first line\nsecond line", SroaWarning, "x.py", 3, "src()")
    assert text == "SroaWarning: first line second line\n"
    other = warnings.formatwarning("kept as is", UserWarning, "x.py", 3, "src()")
    assert "x.py:3" in other  # other libraries' warnings keep Python's format


# ---- the command line ---------------------------------------------------------------------


@pytest.fixture
def files(tmp_path):
    d = tmp_path
    (d / "empty.toml").write_text("")
    (d / "comments.toml").write_text("# only a comment\n")
    (d / "badtoml.toml").write_text("name = \n")
    (d / "badname.toml").write_text(Path(SPEC).read_text().replace("smoke-figure2", "bad name!"))
    (d / "nonutf8.toml").write_bytes(b'name = "caf\xe9"\n')
    (d / "afile").write_text("not a store")
    (d / "empty").mkdir()
    return d


#: (argv with {d} for the folder above, a part of the error line) per bad input.
CLI = [
    ([], "expected a command"),
    (["frobnicate"], "expected a command (run, validate"),
    (["run", SPEC, "--workers", "0"], "argument --workers: expected an integer >= 1"),
    (["run", SPEC, "--lease-timeout", "-1"], "argument --lease-timeout: expected seconds > 0"),
    (["run", SPEC, "--bogus", "3"], "received unknown --bogus 3"),
    (["run"], "the following arguments are required: spec"),
    (["run", "{d}/nope.toml"], "expected an existing TOML spec file"),
    (["run", SPEC, "--store", "{d}/afile"], "received a file"),
    (["run", SPEC, "--store", "{d}/x.zarr", "--workers", "100000"], "expected at most"),
    (["run", SPEC, "--store", "{d}/y.zarr", "--dashboard-address", "x"], "expected HOST:PORT"),
    (["validate", "{d}/empty.toml"], "received <an empty file>"),
    (["validate", "{d}/comments.toml"], "received <a file with no keys, only comments>"),
    (["validate", "{d}/badtoml.toml"], "expected valid TOML"),
    (["validate", "{d}/badname.toml"], "key 'name': expected a non-empty name"),
    (["validate", "{d}/nonutf8.toml"], "expected UTF-8 TOML text"),
    (["validate", "{d}"], "received a directory"),
    (["validate", SPEC, "--set", "replicatse=3"], "key 'replicatse': expected one of"),
    (["validate", SPEC, "--set", "tensor.n=-3"], "key 'tensor.n': expected dimensions n >= 2"),
    (["validate", SPEC, "--set", "noise"], "key 'noise': expected KEY=VALUE"),
    (["validate", THRESHOLD_SPEC, "--set", "threshold.c=0"], "'threshold.c'"),
    (["status", "{d}/nope.zarr"], "which does not exist"),
    (["status", "{d}/empty", "--deep"], "an empty folder"),
    (["check", "{d}/afile"], "received a file"),
    (["info", "{d}/empty"], "an empty folder"),
    (["verify", "{d}/nope.zarr"], "which does not exist"),
    (["recheck", "{d}/nope.npz"], "no such file"),
    (["plot", "{d}/nope.zarr"], "which does not exist"),
    (["plot", "{d}/empty", "--criterion", "nope"], "expected one of recovery, value, theorem"),
    (["report", "{d}/nope.zarr", "--format", ","], "--format: expected a comma-separated"),
    (["report", "{d}/nope.zarr"], "which does not exist"),
    # The criterion's knobs: float() took these, and the report dropped the criterion's lines.
    (["report", "{d}/nope.zarr", "--c", "-1"], "argument --c: expected a finite number > 0"),
    (["report", "{d}/nope.zarr", "--c", "0"], "argument --c: expected a finite number > 0"),
    (["report", "{d}/nope.zarr", "--radius", "0"], "argument --radius: expected a finite"),
    (["plot", "{d}/nope.zarr", "--radius", "nan"], "argument --radius: expected a finite"),
    (["plot", "{d}/nope.zarr", "--c", "inf"], "argument --c: expected a finite number > 0"),
    (["plot", "{d}/nope.zarr", "--c", "half"], "received 'half'"),
]


def _subcommands() -> set[str]:
    from sroa_dist.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return set(sub.choices)


def test_every_subcommand_has_a_bad_input_case():
    assert {argv[0] for argv, _ in CLI if argv} >= _subcommands()


@pytest.mark.parametrize("case", CLI, ids=[" ".join(c[0][:3]) or "<none>" for c in CLI])
def test_the_cli_answers_bad_input_with_one_error_line_and_one_hint(files, case, capsys):
    from sroa_dist.cli import main

    argv, part = case
    code = main([a.replace("{d}", str(files)) for a in argv])
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert code == 2, err
    assert len(lines) == 2, err
    assert ERROR_LINE.match(lines[0]) and HINT_LINE.match(lines[1]), err
    assert part in lines[0], err
    assert err.lower().count("hint:") == 1, err  # the misspelled key printed it twice


def test_a_locked_store_is_refused_before_any_cluster_starts(files, capsys, monkeypatch):
    """A second run on a store that another run writes was refused only after it had started
    a whole Dask cluster (and printed Dask's port warning)."""
    from sroa_dist.cli import main
    from sroa_dist.sweep.run import cluster
    from sroa_dist.sweep.store.lease import StoreLease

    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started for a run that is refused")

    monkeypatch.setattr(cluster, "_embedded", no_cluster)
    lease = StoreLease(str(files / "held.zarr"), command="sroa-dist run other.toml")
    lease.acquire()
    try:
        code = main(["run", SPEC, "--store", str(files / "held.zarr")])
    finally:
        lease.release()
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert code == 2 and len(lines) == 2, err
    assert "expected no other writer" in lines[0] and HINT_LINE.match(lines[1])


def test_a_taken_dashboard_port_is_one_warning_and_a_free_port(recwarn):
    """Dask's 4-line 'Port 8787 is already in use' becomes one line, before the cluster."""
    import socket

    from sroa_dist.sweep.run.cluster import free_dashboard_address

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert free_dashboard_address(f"127.0.0.1:{port}") == "127.0.0.1:0"
    assert [type(w.message) for w in recwarn] == [SroaWarning]
    assert "\n" not in str(recwarn[0].message) and f"port {port} is in use" in str(
        recwarn[0].message
    )
    assert free_dashboard_address("127.0.0.1:0") == "127.0.0.1:0"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    assert free_dashboard_address(f"127.0.0.1:{free}") == f"127.0.0.1:{free}"


def test_the_cli_prints_every_warning_as_one_line(files, capsys):
    """A warning during a command is ``sroa-dist CMD: warning: ...``, never a source line."""
    from sroa_dist.cli import main

    spec = files / "tilt.toml"
    spec.write_text(
        Path(SPEC).read_text().replace('"binary", "uniform", "gaussian"', '"gaussian"')
        + '\n[noise.params.coherent-tilt]\ncomponent = "smallest"\n'
    )
    code = main(["validate", str(spec)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    warned = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(warned) == 1, captured.err
    assert warned[0].startswith("sroa-dist validate: warning: ") and "ignoring" in warned[0]
