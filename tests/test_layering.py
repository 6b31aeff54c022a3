"""Layers and dependencies: what each part of the package may import, and that every
third-party import is declared in pyproject.toml.

Layers (imports point downwards only): the numerical core (every module outside ``sweep/``,
``analysis/`` and ``cli/``: numpy/scipy/SCS) <- the pure sweep vocabulary and kernel (every
``sweep/`` module outside ``store/`` and ``run/``, and ``run/worker.py``: no Dask, no zarr, no
xarray) <- execution (``sweep/run``: Dask) and storage (``sweep/store``: zarr) <- analysis and
CLI. The lists are read from the package tree, not kept by hand.
Each rule is checked twice: statically (every ``import`` in the file, including the lazy ones
inside functions) and dynamically (a fresh interpreter imports the module, or runs the block
kernel, and ``sys.modules`` is inspected).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.helpers import ROOT

PKG = ROOT / "sroa_dist"

ORCHESTRATION = {"dask", "distributed"}
STORAGE = {"zarr", "xarray"}

#: The service layers above the numerical core: everything else in sroa_dist/ is the core.
SERVICE = ("sweep", "analysis", "cli")
#: The sweep wings that hold Dask (run/) and zarr (store/); every other sweep module is pure
#: data, and so is the block kernel's entry, run/worker.py (a block computes without either).
IMPURE_WINGS = ("store", "run")
BLOCK_ENTRY = PKG / "sweep" / "run" / "worker.py"


def _core_files() -> list[Path]:
    """Every module of the package outside the service layers (the front door excepted)."""
    return sorted(
        p
        for p in PKG.rglob("*.py")
        if p != PKG / "__init__.py" and p.relative_to(PKG).parts[0] not in SERVICE
    )


def _pure_sweep_files() -> list[Path]:
    """Every sweep module outside store/ and run/ (the sweep's front door excepted), and the
    block kernel's entry."""
    sweep = PKG / "sweep"
    pure = [
        p
        for p in sweep.rglob("*.py")
        if p != sweep / "__init__.py" and p.relative_to(sweep).parts[0] not in IMPURE_WINGS
    ]
    return sorted([*pure, BLOCK_ENTRY])


PURE_SWEEP = [str(p.relative_to(PKG)) for p in _pure_sweep_files()]


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """``(absolute module, line, guarded)`` of every import in ``path``, at any depth;
    ``guarded``: inside ``try: ... except ImportError`` (an optional dependency)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []

    def catches_import_error(node: ast.Try) -> bool:
        names = set()
        for h in node.handlers:
            for t in h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]:
                names.add(getattr(t, "id", None) or getattr(t, "attr", None))
        return bool(names & {"ImportError", "ModuleNotFoundError"})

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend((a.name, node.lineno, guarded) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((name, node.lineno, guarded))
            found.extend((f"{name}.{a.name}", node.lineno, guarded) for a in node.names)
        if isinstance(node, ast.Try) and catches_import_error(node):
            for child in node.body:
                visit(child, True)
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child, guarded)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return found


def _static_violations(files: list[Path], banned: set[str]) -> list[str]:
    return [
        f"{f.relative_to(ROOT)}:{line}: imports {name}"
        for f in files
        for name, line, _ in _imports(f)
        if name.split(".")[0] in banned
    ]


def _loaded_after(code: str) -> set[str]:
    """Top-level modules loaded by a fresh interpreter after running ``code``."""
    probe = (
        code
        + "\nimport sys, json; print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


# ---- the core: numpy / scipy / SCS only ---------------------------------------------------


def test_core_files_import_no_orchestration_or_storage():
    """No core file imports Dask, zarr or xarray, not even lazily inside a function, and none
    reaches up into the sweep service, the analysis or the CLI (the package's ``__init__`` is
    the one lazy gateway to ``run_sweep`` / ``open_results``)."""
    files = _core_files()
    assert PKG / "problems" / "noise.py" in files and PKG / "moments" / "fit.py" in files
    assert _static_violations(files, ORCHESTRATION | STORAGE) == []
    upward = [
        f"{f.relative_to(ROOT)}:{line}: imports {name}"
        for f in files
        if f != PKG / "__init__.py"
        for name, line, _ in _imports(f)
        if re.match(r"sroa_dist\.(sweep|analysis|cli)\b", name)
    ]
    assert upward == []


@pytest.mark.slow
def test_core_import_pulls_in_no_orchestration_or_storage():
    modules = sorted({_module(f) for f in _core_files()})
    loaded = _loaded_after("\n".join(f"import {m}" for m in modules))
    assert loaded & (ORCHESTRATION | STORAGE) == set()


# ---- the pure sweep layer: no Dask, no zarr, no xarray ------------------------------------


def test_pure_sweep_files_import_no_dask_zarr_or_xarray():
    files = _pure_sweep_files()
    names = {str(f.relative_to(PKG)) for f in files}
    assert {"sweep/spec/load.py", "sweep/kinds/registry.py", "sweep/run/worker.py"} <= names
    assert _static_violations(files, ORCHESTRATION | STORAGE) == []


@pytest.mark.parametrize("path", PURE_SWEEP)
@pytest.mark.slow
def test_pure_sweep_import_pulls_in_no_dask_zarr_or_xarray(path):
    assert (PKG / path).exists(), f"sroa_dist/{path} is listed in PURE_SWEEP but does not exist"
    loaded = _loaded_after(f"import {_module(PKG / path)}")
    assert loaded & (ORCHESTRATION | STORAGE) == set()


@pytest.mark.slow
def test_computing_blocks_pulls_in_no_dask_zarr_or_xarray():
    """The block kernel's lazy paths too: certificates collected, the certified method (the
    moment relaxation) and a model sweep (method of moments) each compute a block."""
    code = """
from sroa_dist.sweep.kinds import make_layout
from sroa_dist.sweep.layout import block_task
from sroa_dist.sweep import load_spec
from sroa_dist.sweep.run.worker import compute_block
for name, over in [
    ("certified", ["replicates=2", "output.certificates=true"]),
    ("figure2", ["replicates=1"]),
    ("gmm", ["replicates=1", "model.N=[500]"]),
]:
    spec = load_spec(f"sweeps/smoke/{name}.toml", over)
    result = compute_block(block_task(spec, make_layout(spec, block_size=2), 0))
    assert result.n_instances >= 1
"""
    loaded = _loaded_after(code)
    assert "scs" in loaded  # the relaxation did run
    assert loaded & (ORCHESTRATION | STORAGE) == set()


# ---- dependencies: every third-party import is declared ------------------------------------

#: Import name -> distribution name, where they differ and the distribution is not installed
#: here (installed ones are looked up in their metadata).
IMPORT_TO_DISTRIBUTION = {
    "yaml": "pyyaml",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    # the gpu extra: CuPy's wheels are named by CUDA version
    "cupy": "cupy-cuda13x",
    "cupyx": "cupy-cuda13x",
}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(requirements: list[str]) -> set[str]:
    return {
        _canonical(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", r).group(1)) for r in requirements
    }


def _distributions(top: str) -> set[str]:
    from importlib.metadata import packages_distributions

    found = packages_distributions().get(top)
    return (
        {_canonical(d) for d in found}
        if found
        else {_canonical(IMPORT_TO_DISTRIBUTION.get(top, top))}
    )


def _third_party(files: list[Path], local: set[str]) -> dict[str, tuple[str, bool]]:
    """Top-level third-party module -> (first place imported, every import guarded)."""
    out: dict[str, tuple[str, bool]] = {}
    for f in files:
        for name, line, guarded in _imports(f):
            top = name.split(".")[0]
            if not top or top in sys.stdlib_module_names or top in local:
                continue
            where, all_guarded = out.get(top, (f"{f.relative_to(ROOT)}:{line}", True))
            out[top] = (where, all_guarded and guarded)
    return out


@pytest.mark.slow
def test_every_imported_distribution_is_declared():
    """Each third-party module the package imports is a declared dependency (``[project]
    dependencies``; an import guarded by ``except ImportError`` may be declared in an extra
    instead), and each one the tests import is declared for the tests too (runtime or the
    ``test`` extra)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = _requirement_names(project["dependencies"])
    extras = {k: _requirement_names(v) for k, v in project["optional-dependencies"].items()}
    any_extra = set().union(*extras.values())

    missing = []
    for top, (where, guarded) in _third_party(sorted(PKG.rglob("*.py")), {"sroa_dist"}).items():
        allowed = runtime | (any_extra if guarded else set())
        if not _distributions(top) & allowed:
            missing.append(f"{where}: {top} ({' or '.join(sorted(_distributions(top)))})")
    test_files = sorted((ROOT / "tests").rglob("*.py"))
    # The repository's own modules: the package, the tests and their helpers, the root's dev.py.
    local = {"sroa_dist", "dev", "tests"} | {f.stem for f in test_files}
    for top, (where, _) in _third_party(test_files, local).items():
        if not _distributions(top) & (runtime | extras["test"]):
            missing.append(f"{where}: {top} (tests)")
    assert missing == [], "imported but not declared in pyproject.toml:\n" + "\n".join(missing)


def test_the_version_is_written_once():
    """pyproject.toml holds the version; the package reads it from the installed metadata."""
    import sroa_dist

    text = (PKG / "__init__.py").read_text(encoding="utf-8")
    assert 'metadata.version("sroa-dist")' in text
    assert not re.search(r"__version__\s*=\s*['\"]\d+\.\d+", text)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" in project and "dynamic" not in project
    stray = [
        str(p.relative_to(ROOT))
        for p in PKG.rglob("*.py")
        if re.search(rf"['\"]{re.escape(project['version'])}['\"]", p.read_text(encoding="utf-8"))
    ]
    assert stray == []
    assert sroa_dist.__version__ in (project["version"], "0+unknown")
