"""The package's shape, read from its ast import graph (lazy imports included, ``if
TYPE_CHECKING:`` ones not; tests/support/import_graph.py): no import circle anywhere, the rooms
of the package and the wings of ``sweep/`` each in one direction, nothing inside ``sweep/``
importing upward, one door per package (its ``__init__``) and no private name across packages,
and no sweep-kind branch outside the kind registry. Files follow concepts,
never line counts. Every list is read from the package tree or a registry, none kept by hand.
"""

from __future__ import annotations

import re

from tests.support.import_graph import (
    ROOT,
    circles,
    collapse,
    door_crossings,
    exported,
    imports_of,
    levels,
    module_name,
    packages,
    private_crossings,
    sources_in_tree,
)

PKG = ROOT / "sroa_dist"
SOURCES = sources_in_tree()
MODULES = {module_name(p) for p in SOURCES}
GRAPH = {
    module_name(p): {i.module for i in imports_of(p, text, MODULES)} for p, text in SOURCES.items()
}
#: The layers above the sweep service: nothing in sweep/ may import them.
ABOVE_SWEEP = ("sroa_dist.analysis", "sroa_dist.cli")


def test_the_circle_finder_finds_circles():
    """The checker itself: a planted circle is found, a chain is not."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert levels({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"c"}}) == {
        "a": 3,
        "b": 2,
        "c": 1,
        "d": 2,
    }


def test_the_import_parser_sees_lazy_imports_but_not_type_checking_ones():
    path = "sroa_dist/sweep/__init__.py"
    found = {(i.module, i.in_function) for i in imports_of(path, SOURCES[path], MODULES)}
    assert ("sroa_dist.sweep.run", True) in found
    assert ("sroa_dist.sweep.kinds", False) in found
    bound = "sroa_dist/relaxation/bound.py"
    assert "sroa_dist.relaxation.core" not in {
        i.module for i in imports_of(bound, SOURCES[bound], MODULES)
    }  # only under TYPE_CHECKING


def test_sroa_dist_has_no_import_circle():
    """No circle between modules, lazy imports included: the front door's lazy gateway to the
    sweep service is no exception, because nothing below it imports the front door."""
    assert circles(GRAPH) == []


def test_the_rooms_and_the_sweep_wings_each_point_one_way():
    """Collapsed to the package's rooms (its top-level modules and folders), and to the wings
    of sweep/, the graph still has no circle: each has levels."""
    for prefix in ("sroa_dist", "sroa_dist.sweep"):
        rooms = collapse(GRAPH, prefix)
        assert circles(rooms) == [], prefix
        assert levels(rooms)


def test_nothing_inside_sweep_imports_upward():
    """A sweep module imports the core, its own wing and the wings below it: never the
    package's front door, the sweep's own front door, the analysis or the CLI."""
    upward = sorted(
        f"{m} -> {t}"
        for m, targets in GRAPH.items()
        if m.startswith("sroa_dist.sweep.")
        for t in targets
        if t in ("sroa_dist", "sroa_dist.sweep") or t.startswith(ABOVE_SWEEP)
    )
    assert upward == []


def test_the_core_imports_no_service_layer():
    """The numerical core (every room but sweep/, analysis/ and cli/) imports none of them."""
    service = ("sroa_dist.sweep", *ABOVE_SWEEP)
    found = sorted(
        f"{m} -> {t}"
        for m, targets in GRAPH.items()
        if m != "sroa_dist" and not m.startswith(service)
        for t in targets
        if t.startswith(service) or t == "sroa_dist"
    )
    assert found == []


def test_the_door_checker_finds_planted_crossings():
    """The checker itself, on a planted tree: a module behind another package's door and a
    private name are found; the door, a sibling module inside the package, a subpackage
    reaching up into its parent's modules and a top-level room are not."""
    tree = {
        "sroa_dist/__init__.py": "",
        "sroa_dist/errors.py": "",
        "sroa_dist/a/__init__.py": "from .m import f\n",
        "sroa_dist/a/m.py": "from .n import g, _h\n",
        "sroa_dist/a/n.py": "",
        "sroa_dist/a/sub/__init__.py": "",
        "sroa_dist/a/sub/k.py": "from ..m import f\nfrom sroa_dist.a.n import _h\n",
        "sroa_dist/b/__init__.py": "",
        "sroa_dist/b/x.py": (
            "from ..a import f\nfrom ..errors import E\n"
            "def lazy():\n    from ..a.m import f\n    from ..a.n import _h\n"
        ),
    }
    assert door_crossings(tree) == [
        "sroa_dist/b/x.py:4: sroa_dist.a.m.f (import it from sroa_dist.a)",
        "sroa_dist/b/x.py:5: sroa_dist.a.n._h (import it from sroa_dist.a)",
    ]
    assert private_crossings(tree) == ["sroa_dist/b/x.py:5: sroa_dist.a.n._h"]


def test_one_door_per_package():
    """Code outside a package imports the package's public surface (its ``__init__``, which
    lists it in ``__all__``), never one of its modules: lazy imports included, so a caller
    sees one door per wing whatever it loads when."""
    assert door_crossings(SOURCES) == []


def test_no_private_name_crosses_a_package_line():
    """A ``_name`` is its package's own: one another package needs is public, with a
    docstring, or it moves."""
    assert private_crossings(SOURCES) == []


def test_every_door_lists_what_it_exports():
    """Every name a package's ``__init__`` is imported for by code outside the package is in
    its ``__all__`` (the door's public surface, not an accident of its imports)."""
    doors = packages(SOURCES)
    missing = []
    for path, text in SOURCES.items():
        me = module_name(path)
        for i in imports_of(path, text, MODULES):
            if i.name is None or i.module not in doors or i.module == "sroa_dist":
                continue
            if me.startswith(i.module + "."):
                continue
            if i.name not in (exported(SOURCES, i.module) or ()):
                missing.append(f"{path}:{i.line}: {i.module}.{i.name}")
    assert missing == []


def test_no_sweep_kind_branch_outside_the_registry():
    """Kinds are dispatched by the registry (sweep/kinds/registry.py): nothing else compares a
    kind with a registered kind's name or looks for a kind's marker table."""
    from sroa_dist.sweep.kinds import KINDS

    names = "|".join(map(re.escape, KINDS))
    pattern = re.compile(
        rf"kind\s*[!=]=\s*[\"']({names})[\"']|[\"']({names})[\"']\s*[!=]=\s*\w+\.kind"
        rf"|[\"']({names})[\"']\s+(not\s+)?in\s+raw\b"
    )
    assert pattern.search('if spec.kind == "model":') and pattern.search('"model" in raw')
    registry = "sroa_dist/sweep/kinds/registry.py"
    found = [
        f"{path}:{i}: {line.strip()}"
        for path, text in SOURCES.items()
        if path != registry
        for i, line in enumerate(text.splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []
