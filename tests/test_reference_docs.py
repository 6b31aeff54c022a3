"""The generated reference pages (docs/reference/) match the code: CI fails when they are stale."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from sroa_dist.cli import build_parser
from sroa_dist.cli import reference as ref
from sroa_dist.sweep.cube import BOOKKEEPING, DIMS
from sroa_dist.sweep.kinds import BUILTIN, KINDS
from sroa_dist.sweep.spec import key_meanings, schema_keys
from tests.support.helpers import ROOT

FOLDER = ROOT / "docs" / "reference"
PAGES = ref.pages()


@pytest.mark.parametrize("name", sorted(ref.PAGES))
def test_checked_in_page_is_current(name):
    path = FOLDER / name
    assert path.exists(), f"docs/reference/{name} is missing: run {ref.GENERATOR}"
    on_disk = path.read_text(encoding="utf-8")
    assert on_disk == PAGES[name], f"docs/reference/{name} is stale: run {ref.GENERATOR}"


def test_pages_are_deterministic():
    """A fresh interpreter generates the same bytes: no addresses, dates or set order."""
    code = (
        "import json, sys; from sroa_dist.cli.reference import pages; "
        "sys.stdout.write(json.dumps(pages()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    import json

    assert json.loads(out.stdout) == PAGES
    for name, text in PAGES.items():
        assert " at 0x" not in text and str(ROOT) not in text, name


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_subcommand_and_option_is_in_the_cli_page():
    page = PAGES["cli.md"]
    for name, sub in _subcommands().items():
        assert f"## `sroa-dist {name}`" in page, name
        for action in sub._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"{flag}`" in page or f"{flag}," in page, (name, flag)


def test_every_cube_variable_and_dim_is_in_the_cube_page():
    page = PAGES["cube.md"]
    names = {v for kind in BUILTIN.values() for v in (*kind.all_variables, *kind.dims)}
    for name in sorted(names | set(BOOKKEEPING) | set(DIMS)):
        assert f"| `{name}` |" in page, name


def test_every_spec_key_has_a_meaning_declared_by_its_kind():
    """Each kind declares its keys' meanings (``key_meanings``, built on the shared ones of
    :mod:`sroa_dist.sweep.spec.meanings`); the spec page reads them from the kind."""
    tables = ref._kind_tables()
    assert set(tables) == set(BUILTIN), "a built-in kind's schema is not known to the spec page"
    keys = {(kind, key) for kind, (schema, _) in tables.items() for key, _ in schema_keys(schema)}
    missing = sorted(f"{kind}:{key}" for kind, key in keys if not ref.meaning(kind, key))
    assert not missing, f"spec keys without a meaning in their kind's key_meanings: {missing}"
    for name, kind in BUILTIN.items():  # in schema order, and only the schema's keys
        assert list(kind.key_meanings) == [k for k, _ in schema_keys(kind.schema)], name
    vtypes = {entry[0] for schema, _ in tables.values() for _, entry in schema_keys(schema)}
    assert vtypes <= set(ref.VALUE_TYPES), vtypes - set(ref.VALUE_TYPES)
    for kind, key in keys:
        assert f"| `{key}` |" in PAGES["spec.md"], (kind, key)
    assert "(theorem: its value bound, default 2)" in PAGES["spec.md"]  # a kind's own text


def test_a_meaning_of_a_key_the_schema_lacks_is_refused():
    with pytest.raises(ValueError, match=r"key meanings: expected keys .*\['tensor.nope'\]"):
        key_meanings(KINDS["threshold"].schema, {"tensor.nope": "stale"})


def test_every_public_name_is_in_the_api_page():
    import importlib

    page = PAGES["api.md"]
    for module_name in ref.API_MODULES:
        for name in importlib.import_module(module_name).__all__:
            assert f"### `{module_name}.{name}`" in page, (module_name, name)


def test_check_names_a_stale_page_and_write_fixes_it(tmp_path):
    assert ref.write(tmp_path) == sorted(ref.PAGES, key=list(ref.PAGES).index)
    assert ref.stale(tmp_path) == []
    (tmp_path / "cube.md").write_text("old", encoding="utf-8")
    assert ref.main([str(tmp_path), "--check"]) == 1
    assert ref.stale(tmp_path) == ["cube.md"]
    assert ref.main([str(tmp_path)]) == 0 and ref.stale(tmp_path) == []
