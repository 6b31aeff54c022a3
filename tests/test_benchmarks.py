"""benchmarks/ holds timing benchmarks, and every bench_*.py script parses its arguments and
writes its JSON through the one shared helper, benchmarks/_common.py (no copy in a script)."""

from __future__ import annotations

import ast
import importlib.util
import json

from tests.support.helpers import ROOT

BENCH = ROOT / "benchmarks"


def _common():
    spec = importlib.util.spec_from_file_location("_bench_common", BENCH / "_common.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _calls(tree: ast.AST) -> list[str]:
    """Dotted names of every call in a module (``argparse.ArgumentParser``, ``path.write_text``)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f, parts = node.func, []
            while isinstance(f, ast.Attribute):
                parts.append(f.attr)
                f = f.value
            if isinstance(f, ast.Name):
                parts.append(f.id)
            out.append(".".join(reversed(parts)))
    return out


def test_benchmarks_holds_timing_benchmarks_and_their_helper_only():
    """Studies are sweep specs under sweeps/studies (issue 34), not scripts here: every file
    of benchmarks/ is a bench_*.py timing script, the shared helper, the GPU runner or the
    README, and no script imports another (no import cycle can form among them)."""
    allowed = {"_common.py", "gpu_run.sh", "README.md"}
    files = sorted(p.name for p in BENCH.iterdir() if p.is_file())
    assert [f for f in files if f not in allowed and not f.startswith("bench_")] == []
    scripts = {p.stem for p in BENCH.glob("*.py")}
    for path in BENCH.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert names & scripts <= {"_common"}, path.name


def test_every_bench_script_parses_and_writes_through_the_shared_helper():
    scripts = sorted(BENCH.glob("bench_*.py"))
    assert scripts
    wrong = []
    for path in scripts:
        calls = _calls(ast.parse(path.read_text(encoding="utf-8")))
        if "_common.parser" not in calls:
            wrong.append(f"{path.name}: no _common.parser")
        if "_common.write" not in calls:
            wrong.append(f"{path.name}: no _common.write")
        for own in ("argparse.ArgumentParser", "json.dump"):
            if own in calls:
                wrong.append(f"{path.name}: {own}")
        wrong += [f"{path.name}: {c}" for c in calls if c.endswith(".write_text")]
    assert wrong == []


def test_the_shared_parser_and_writer(tmp_path, monkeypatch):
    common = _common()
    monkeypatch.setattr(common, "OUT", tmp_path / "out")
    ap = common.parser("Time one thing.\n\nMore words.", "thing")
    ap.add_argument("--n", type=int, default=3)
    assert ap.description == "Time one thing."
    args = ap.parse_args([])
    assert (args.out, args.n) == ("thing", 3)
    path = common.write(args.out, {"rows": [1.5]})
    assert path == tmp_path / "out" / "thing.json"
    data = json.loads(path.read_text())
    assert data["benchmark"] == "thing" and data["rows"] == [1.5]
    assert len(data["machine"]["load_avg"]) == 3 and data["when"]
    # A path ending in .json is that file; the default may be left to the script.
    there = tmp_path / "elsewhere" / "x.json"
    assert common.write(str(there), {}) == there and there.exists()
    assert common.parser(None, None).parse_args([]).out is None
