"""The package's import graph, parsed with ``ast``, and the numbers that describe its floor plan.

Every ``import`` of a ``sroa_dist`` module counts, including those inside functions (a lazy
import cannot hide a dependency); imports under ``if TYPE_CHECKING:`` are annotations only and
do not. A *room* is a top-level module or folder of ``sroa_dist/`` (the front door
``sroa_dist/__init__.py`` is not a room: it imports the public names of every room); a room's
*level* is one more than the highest level it imports (a room that imports no other room is on
level 1).

Standard library only, so anyone can measure a checkout or any commit::

    python3 dev.py imports            # the working tree
    python3 dev.py imports 57a4229    # a commit (read with git, nothing checked out)
    python3 tests/support/import_graph.py --json
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "sroa_dist"


@dataclass(frozen=True)
class Import:
    """One import of a package module: the module imported, its line, whether the import runs
    inside a function, and the name taken from the module (``from X import name``; ``None``
    when the module itself is imported)."""

    module: str
    line: int
    in_function: bool
    name: str | None = None


def module_name(path: str) -> str:
    """``sroa_dist/a/b.py`` -> ``sroa_dist.a.b``; a package's ``__init__.py`` is the package."""
    parts = list(Path(path).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources_in_tree(root: Path = ROOT) -> dict[str, str]:
    """Path (relative to ``root``) -> text of every ``.py`` file of the package."""
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted((root / PACKAGE).rglob("*.py"))
    }


def sources_at(rev: str, root: Path = ROOT) -> dict[str, str]:
    """Path -> text of every ``.py`` file of the package at git revision ``rev``."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=True
        ).stdout

    paths = [p for p in git("ls-tree", "-r", "--name-only", rev, "--", PACKAGE).split() if p]
    return {p: git("show", f"{rev}:{p}") for p in paths if p.endswith(".py")}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: str, text: str, modules: Iterable[str]) -> list[Import]:
    """Every import of a module in ``modules`` by the file ``path``, outside ``if
    TYPE_CHECKING:`` blocks. ``from X import a`` names the submodule ``X.a`` when there is
    one, else ``X``."""
    known = set(modules)
    me = module_name(path)
    package = me if path.endswith("__init__.py") else me.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child, in_function)
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            in_function = True
        if isinstance(node, ast.Import):
            found.extend(Import(a.name, node.lineno, in_function) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            for a in node.names:
                sub = f"{name}.{a.name}"
                if sub in known:
                    found.append(Import(sub, node.lineno, in_function))
                else:
                    found.append(Import(name, node.lineno, in_function, a.name))
        for child in ast.iter_child_nodes(node):
            # An import is a statement: no expression (a lambda's body included) holds one, and
            # expressions are most of a module's nodes (the walk took seconds at collection).
            if not isinstance(child, ast.expr):
                visit(child, in_function)

    visit(ast.parse(text), False)
    return [i for i in found if i.module in known and i.module != me]


def packages(sources: Mapping[str, str]) -> set[str]:
    """The packages of the tree: every folder with an ``__init__.py``."""
    return {module_name(p) for p in sources if p.endswith("__init__.py")}


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def exported(sources: Mapping[str, str], package: str) -> set[str] | None:
    """The names a package's ``__init__`` lists in ``__all__`` (a literal list), or ``None``
    when it has none."""
    path = next((p for p in sources if p.endswith("__init__.py") and module_name(p) == package), "")
    for node in ast.parse(sources.get(path, "")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return None


def door_crossings(sources: Mapping[str, str]) -> list[str]:
    """Every import that goes behind a package's door: a module ``P.m`` (or a name of it)
    imported by code outside the package ``P``, instead of the name from ``P`` itself (its
    ``__init__``, which re-exports it in ``__all__``). Inside one package anything goes, and
    its subpackages are inside it. The root package is no door: its modules (``errors``,
    ``tensors``, ...) are the top-level rooms, each imported as itself."""
    modules = {module_name(p) for p in sources}
    doors = packages(sources)
    out = []
    for path, text in sources.items():
        me = module_name(path)
        for i in imports_of(path, text, modules):
            owner, _, last = i.module.rpartition(".")
            if i.module in doors or owner == PACKAGE or _inside(me, owner):
                continue
            if i.name is None and last in (exported(sources, owner) or ()):
                continue  # the door's function of its module's name (studies.worst_case)
            what = i.module if i.name is None else f"{i.module}.{i.name}"
            out.append(f"{path}:{i.line}: {what} (import it from {owner})")
    return out


def private_crossings(sources: Mapping[str, str]) -> list[str]:
    """Every private name (``_x``) imported from another package, or from another top-level
    room (a module of the root package is its own room here)."""
    modules = {module_name(p) for p in sources}
    doors = packages(sources)
    out = []
    for path, text in sources.items():
        me = module_name(path)
        for i in imports_of(path, text, modules):
            if i.name is None or not i.name.startswith("_") or i.name.startswith("__"):
                continue
            owner = i.module if i.module in doors else i.module.rpartition(".")[0]
            owner = i.module if owner == PACKAGE else owner
            if not _inside(me, owner):
                out.append(f"{path}:{i.line}: {i.module}.{i.name}")
    return out


def module_graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """Module -> the package modules it imports."""
    modules = {module_name(p) for p in sources}
    return {
        module_name(p): {i.module for i in imports_of(p, text, modules)}
        for p, text in sources.items()
    }


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    graph = {k: sorted(v) for k, v in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph.get(w, ()))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def collapse(graph: Mapping[str, Iterable[str]], prefix: str) -> dict[str, set[str]]:
    """The graph of the rooms directly under ``prefix`` (a module or folder each): an edge
    ``a -> b`` where some module of room ``a`` imports some module of room ``b``. Modules
    outside ``prefix``, and ``prefix`` itself (its front door), are left out."""

    def room(module: str) -> str | None:
        if not module.startswith(prefix + "."):
            return None
        return prefix + "." + module[len(prefix) + 1 :].split(".")[0]

    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        r = room(module)
        if r is None:
            continue
        out.setdefault(r, set()).update(t for t in map(room, targets) if t is not None and t != r)
    return out


def levels(graph: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """Each node's level in an acyclic graph: 1 + the highest level it imports (1 when it
    imports nothing). A graph with a circle has no levels: ``ValueError``."""
    if circles(graph):
        raise ValueError(f"the graph has circles: {circles(graph)}")
    out: dict[str, int] = {}

    def level(node: str) -> int:
        if node not in out:
            out[node] = 1 + max((level(t) for t in graph.get(node, ())), default=0)
        return out[node]

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for node in graph:
        level(node)
    return out


def floor_plan(graph: Mapping[str, Iterable[str]], prefix: str = PACKAGE) -> dict[str, object]:
    """Rooms, levels and edges of the rooms under ``prefix``, and the module circles."""
    rooms = collapse(graph, prefix)
    room_circles = circles(rooms)
    lv = {} if room_circles else levels(rooms)
    return {
        "rooms": len(rooms),
        "levels": max(lv.values(), default=0) if lv else None,
        "edges": sum(len(t) for t in rooms.values()),
        "room_circles": room_circles,
        "by_level": {
            str(k): sorted(r.removeprefix(prefix + ".") for r in rooms if lv[r] == k)
            for k in sorted(set(lv.values()))
        },
    }


def measure(sources: Mapping[str, str]) -> dict[str, object]:
    """The numbers of the package's floor plan: its rooms, and the rooms of ``sweep/``."""
    graph = module_graph(sources)
    return {
        "modules": len(graph),
        "module_edges": sum(len(t) for t in graph.values()),
        "module_circles": circles(graph),
        "behind_doors": len(door_crossings(sources)),
        "private_crossings": len(private_crossings(sources)),
        "package": floor_plan(graph, PACKAGE),
        "sweep": floor_plan(graph, f"{PACKAGE}.sweep"),
    }


def _show(name: str, plan: Mapping[str, object]) -> str:
    lines = [
        f"{name}: {plan['rooms']} rooms on {plan['levels']} import levels, "
        f"{plan['edges']} edges between rooms"
    ]
    if plan["room_circles"]:
        lines.append(f"  circles between rooms: {plan['room_circles']}")
    for level, rooms in plan["by_level"].items():  # type: ignore[union-attr]
        lines.append(f"  level {level}: {' '.join(rooms)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="dev.py imports", description="Measure the package's import graph."
    )
    parser.add_argument("rev", nargs="?", help="a git revision (default: the working tree)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    sources = sources_at(args.rev) if args.rev else sources_in_tree()
    numbers = measure(sources)
    if args.json:
        print(json.dumps(numbers, indent=2))
        return 0
    print(
        f"{args.rev or 'working tree'}: {numbers['modules']} modules, "
        f"{numbers['module_edges']} imports between them"
    )
    print(f"circles between modules: {numbers['module_circles'] or 'none'}")
    print(
        f"imports behind a package's door: {numbers['behind_doors']}; "
        f"private names across packages: {numbers['private_crossings']}"
    )
    print(_show(PACKAGE, numbers["package"]))  # type: ignore[arg-type]
    print(_show(f"{PACKAGE}/sweep", numbers["sweep"]))  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
