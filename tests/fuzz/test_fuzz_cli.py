"""Fuzz campaign, the command line: random argument lists for every ``sroa-dist`` subcommand.

The subcommands and their options are read from the parser itself (a new option is fuzzed
without a change here). Each argument list takes a random positional (a spec or a store: a
real one, a missing path, a file where a folder is expected, a folder that is no store, a
store made by another program, a damaged copy of a real store, ...) and random options with
random values (negative, NaN, inf, empty, huge, text, paths). The contract: exit 0 or 1 with
no error line, writing only what the command is meant to write; or exactly one ``error:`` line
and one ``hint:`` line, exit 2, nothing created, changed or deleted; never a traceback.

``sroa-dist`` runs in this process (:func:`tests.support.fuzz.call_cli`): a ``run`` that
passes every check stops where it would start its cluster, and in the fast part ``plot`` and
``report`` stop where they would draw (``_stop_writers``); the slow part lets them write, and
``test_fuzz_runs.py`` runs real subprocesses. Left out on purpose: ``plot``/``report``'s
``--c`` and ``--radius`` (their checks are another change's).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.support.fuzz import FUZZ, WouldRun, assert_answered, call_cli
from tests.support.helpers import DATA, SMOKE

GOLDEN = DATA / "golden"


def _parser_options() -> dict[str, list[tuple[str, int | None, tuple | None]]]:
    """Subcommand -> its options as ``(flag, nargs (0 for a switch), choices)``."""
    from sroa_dist.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    out = {}
    for name, p in sub.choices.items():
        opts = []
        for a in p._actions:
            if not a.option_strings or a.dest == "help":
                continue
            if name in ("plot", "report") and a.dest in ("c", "radius"):
                continue  # another change adds their checks: left out on purpose
            flag = max(a.option_strings, key=len)
            opts.append((flag, 0 if a.nargs == 0 else None, tuple(a.choices or ()) or None))
        out[name] = opts
    return out


OPTIONS = _parser_options()
#: The subcommands whose positional is a spec; every other one takes a store.
SPEC_COMMANDS = ("run", "validate")

#: Paths of the fuzz folder (made by :func:`_folder`), by what they are.
SPECS = [
    "spec.toml",
    "model.toml",
    "threshold.toml",
    "nope.toml",
    "garbage.toml",
    "folder",
    "empty.toml",
    "store.zarr",
]
STORES = [
    "store.zarr",
    "certified.zarr",
    "threshold.zarr",
    "damaged.zarr",
    "nope.zarr",
    "empty",
    "afile",
    "folder",
    "zarr-other.zarr",
    "spec.toml",
    "creating.zarr",
]
#: Option values: numbers out of every range, text, paths, URLs.
VALUES = [
    "0",
    "1",
    "2",
    "-1",
    "3.5",
    "nan",
    "inf",
    "-inf",
    "",
    " ",
    "1e400",
    "99999999999999999999",
    "abc",
    "é",
    "--",
    "-",
    "png",
    "md,html",
    ",",
    "png,nope",
    "svg",
    "html",
    "tcp://127.0.0.1:1",
    "127.0.0.1:0",
    ":0",
    "localhost:99999",
    "x:y",
    "s3://bucket/x.zarr",
    "nosuch://x",
    "replicates=2",
    "tensor.n=-1",
    "=",
    "noise",
    "tensor=3",
    "a.b.c=1",
    "name=bad name!",
    "solver.method=certified",
    "tensor.n=[3, 3]",
    "noise.sigma=nan",
    "replicates=0",
    "recovery",
    "value",
    "theorem",
    "raise",
    "mask",
    "bogus",
    *[f"{{d}}/{p}" for p in ("nope.zarr", "afile", "empty", "folder", "out", "afile/x")],
]


def _write_specs(d: Path) -> None:
    text = (SMOKE / "figure2.toml").read_text().replace("replicates = 12", "replicates = 2")
    (d / "spec.toml").write_text(text)
    (d / "model.toml").write_text((SMOKE / "gmm.toml").read_text())
    (d / "threshold.toml").write_text((SMOKE / "threshold.toml").read_text())
    (d / "garbage.toml").write_bytes(b"\xff\xfe name = [\n")
    (d / "empty.toml").write_text("")


def _damage(store: Path, how: str, pick: int) -> None:
    """Damage a copy of a store: one file deleted, truncated or overwritten, or its root
    metadata made unreadable."""
    files = sorted(p for p in store.rglob("*") if p.is_file())
    target = files[pick % len(files)]
    if how == "delete":
        target.unlink()
    elif how == "truncate":
        data = target.read_bytes()
        target.write_bytes(data[: len(data) // 2])
    elif how == "garble":
        data = bytearray(target.read_bytes() or b"\0")
        data[len(data) // 2] ^= 0xFF
        target.write_bytes(bytes(data))
    elif how == "root json":
        (store / "zarr.json").write_text("{not json")
    elif how == "no attrs":
        meta = json.loads((store / "zarr.json").read_text())
        meta["attributes"] = {}
        (store / "zarr.json").write_text(json.dumps(meta))


#: The real stores of the fuzz folder: copies of the golden ones (the damaged one is damaged).
_STORES = {
    "store.zarr": ["tensor.zarr"],
    "certified.zarr": ["certified.zarr", "certified.zarr.certificates"],
    "threshold.zarr": ["threshold.zarr"],
    "damaged.zarr": ["tensor.zarr"],
}


def _folder(d: Path, argv: list[str], damage: tuple[str, int]) -> None:
    """The fuzz folder: specs, things that are not stores, and the real stores ``argv``
    names (copied only when named: a copy costs more than most commands)."""
    _write_specs(d)
    named = " ".join(argv)
    for name, sources in _STORES.items():
        if name not in named:
            continue
        for src in sources:
            shutil.copytree(GOLDEN / src, d / src.replace("tensor.zarr", name))
    if (d / "damaged.zarr").exists():
        _damage(d / "damaged.zarr", *damage)
    (d / "empty").mkdir()
    (d / "afile").write_text("not a store")
    (d / "folder").mkdir()
    (d / "folder" / "notes.txt").write_text("a folder of other things")
    (d / "zarr-other.zarr").mkdir()
    (d / "zarr-other.zarr" / "zarr.json").write_text(
        json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {"title": "other"}})
    )
    (d / "creating.zarr" / "sroa_lease").mkdir(parents=True)  # a run's lease, no template yet
    (d / "creating.zarr" / "sroa_lease" / "zarr.json").write_text("{}")


_DAMAGE = st.tuples(
    st.sampled_from(["delete", "truncate", "garble", "root json", "no attrs"]),
    st.integers(0, 500),
)


@st.composite
def argv_for(draw, command: str) -> list[str]:
    """A random argument list for ``command``: its positional, then random options."""
    pool = SPECS if command in SPEC_COMMANDS else STORES
    argv = [command]
    if draw(st.integers(0, 9)) > 0:  # sometimes none: the parser's own refusal
        argv.append("{d}/" + draw(st.sampled_from(pool)))
    for flag, nargs, choices in draw(
        st.lists(st.sampled_from(OPTIONS[command]), max_size=4) if OPTIONS[command] else st.just([])
    ):
        argv.append(flag)
        if nargs == 0:
            continue
        if choices and draw(st.booleans()):
            argv.append(draw(st.sampled_from(choices)))
        else:
            argv.append(draw(st.sampled_from(VALUES)))
    if draw(st.integers(0, 9)) == 0:  # an unknown option or a second positional
        argv.insert(
            draw(st.integers(1, len(argv))), draw(st.sampled_from(["--bogus", "-x", "extra"]))
        )
    return argv


def _outputs(command: str, argv: list[str]) -> list[str]:
    """What ``command`` is meant to write (paths relative to the folder), for the changes check:
    plot/report their ``--out``; check --repair-metadata its store."""
    if command in ("plot", "report"):
        out = (
            argv[argv.index("--out") + 1]
            if "--out" in argv[:-1]
            else ("figures" if command == "plot" else "report")
        )
        return [out.replace("{d}/", "")]
    if command == "check" and "--repair-metadata" in argv and len(argv) > 1:
        return [argv[1].replace("{d}/", "")]
    return []


@contextlib.contextmanager
def _stop_writers() -> Iterator[None]:
    """``plot`` and ``report`` raise :class:`WouldRun` where they would draw (seconds each),
    after every check of their arguments and of the store has passed."""
    from sroa_dist import analysis

    saved = analysis.plot_cube, analysis.write_report

    def refuse(*args, **kwargs):
        raise WouldRun

    analysis.plot_cube = analysis.write_report = refuse
    try:
        yield
    finally:
        analysis.plot_cube, analysis.write_report = saved


def _run(command: str, argv: list[str], damage) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        _folder(d, argv, damage)
        args = [a.replace("{d}", str(d)) for a in argv]
        answer = call_cli(args, d)
    event(f"{command}: exit {answer.code}")
    assert_answered(answer, _outputs(command, argv))


@settings(FUZZ, max_examples=40)
@given(data=st.data())
@pytest.mark.parametrize("command", sorted(OPTIONS))
@pytest.mark.slow
def test_random_arguments_are_answered_in_the_grammar(command, data):
    argv = data.draw(argv_for(command), label="argv")
    damage = data.draw(_DAMAGE, label="damage")
    with _stop_writers():
        _run(command, argv, damage)


@settings(FUZZ, max_examples=6)
@given(data=st.data())
@pytest.mark.slow
@pytest.mark.parametrize("command", ["plot", "report"])
def test_random_arguments_write_figures_and_reports_or_are_refused(command, data):
    """As above with the real writers: what passes the checks is drawn (seconds each)."""
    argv = data.draw(argv_for(command), label="argv")
    _run(command, argv, data.draw(_DAMAGE, label="damage"))
