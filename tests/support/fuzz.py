"""The input fuzz campaign's shared pieces (tests/fuzz): the one contract every input is held to,
the in-process ``sroa-dist`` call that checks it, and a snapshot of a folder's files.

The contract (issue 32, "Same bits on every path"): a valid input runs; anything else is
answered, on the command line, by exactly one ``error:`` line and one ``hint:`` line on stderr
with exit status 2, no traceback, and no file created, changed or deleted; from the Python API
by an exception of the project's error type (:class:`sroa_dist.errors.InputError`) whose
one-line message names the argument -- never a raw numpy/scipy error, a hang or a NaN result.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import signal
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, settings

from sroa_dist.errors import InputError

#: Every fuzz test's settings: derandomised (the same examples on every run, so CI is
#: deterministic and a failure reproduces), no example database, no per-example deadline (the
#: machine is shared; a hang is caught by :func:`no_hang` instead).
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)

ERROR_LINE = re.compile(r"^sroa-dist( [a-z]+)?: error: \S.*$")
HINT_LINE = re.compile(r"^hint: \S.*$")
WARNING_LINE = re.compile(r"^sroa-dist( [a-z]+)?: warning: \S.*$")
#: What a raw Python error looks like on stderr.
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\w+(Error|Exception): ", re.M)

#: Longest any single input may take before the campaign calls it a hang (seconds): far above
#: what any of them needs (validate and the API calls answer in well under a second), so a
#: busy machine never trips it.
HANG_S = 120


class Hang(Exception):
    """An input took longer than :data:`HANG_S`: a breach of the contract."""


@contextlib.contextmanager
def no_hang(seconds: int = HANG_S) -> Iterator[None]:
    """Raise :class:`Hang` in the main thread if the body runs longer than ``seconds``."""

    def fire(signum, frame):
        raise Hang(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def snapshot(root: Path) -> dict[str, str]:
    """Every file and folder under ``root``: relative path -> content digest (``"<dir>"`` for
    a folder), so a file created, deleted or changed shows as a difference."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        for d in dirnames:
            out[str(rel / d)] = "<dir>"
        for f in filenames:
            path = Path(dirpath) / f
            try:
                out[str(rel / f)] = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError as exc:  # unreadable on purpose (a fuzz case): its mode is the fact
                out[str(rel / f)] = f"<{type(exc).__name__}>"
    return out


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What differs between two snapshots, one ``+ path`` / ``- path`` / ``~ path`` each."""
    return sorted(
        [f"+ {p}" for p in after.keys() - before.keys()]
        + [f"- {p}" for p in before.keys() - after.keys()]
        + [f"~ {p}" for p in before.keys() & after.keys() if before[p] != after[p]]
    )


@dataclass
class Answer:
    """What one in-process ``sroa-dist`` call did."""

    argv: list[str]
    code: int
    out: str
    err: str
    changed: list[str]

    @property
    def lines(self) -> list[str]:
        """stderr's lines that are not one-line warnings (the grammar allows those)."""
        return [ln for ln in self.err.splitlines() if ln.strip() and not WARNING_LINE.match(ln)]

    def show(self) -> str:
        return (
            f"argv={self.argv!r}\nexit={self.code}\nstderr:\n{self.err}\nstdout:\n"
            f"{self.out[-2000:]}\nchanged: {self.changed}"
        )


class WouldRun(BaseException):
    """Raised where ``sroa-dist run`` would start or reach a cluster: the command was
    accepted (every check passed) and the fuzz campaign stops it there, at no cost."""


@contextlib.contextmanager
def no_cluster() -> Iterator[None]:
    """Where ``run_sweep`` would start the embedded cluster or reach a running one, it raises
    :class:`WouldRun` instead.

    Everything a run checks (arguments, spec, store target, writer lease, the scheduler file
    and dashboard address) comes before, and nothing is written before, so an accepted run
    leaves the folder as it was.
    """
    from sroa_dist.sweep.run import cluster

    saved = cluster._embedded, cluster._client

    def refuse(*args, **kwargs):
        raise WouldRun

    cluster._embedded = cluster._client = refuse
    try:
        yield
    finally:
        cluster._embedded, cluster._client = saved


def call_cli(argv: Sequence[str], cwd: Path, watch: Path | None = None) -> Answer:
    """``sroa-dist ARGV`` in this process, from ``cwd``, with stdout and stderr captured, a
    ``run`` stopped before its cluster (exit 0, as if it had run), and the files under ``watch``
    (default ``cwd``) compared before and after. An exception that escapes ``main`` (a
    traceback the user would see) is returned as exit status ``"traceback"`` on stderr."""
    from sroa_dist.cli import main

    watch = cwd if watch is None else watch
    before = snapshot(watch)
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.environ.pop("SROA_DEBUG", None)
    try:
        os.chdir(cwd)
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            no_cluster(),
            no_hang(),
        ):
            try:
                code = main(list(argv))
            except WouldRun:
                code = 0
            except SystemExit as exc:  # argparse's --help; anything else is a breach
                code = exc.code if isinstance(exc.code, int) else 2
                if exc.code not in (0, None):
                    err.write(f"SystemExit({exc.code!r}) escaped main\n")
            except Exception as exc:  # noqa: BLE001  (the breach the campaign looks for)
                import traceback

                err.write("Traceback (most recent call last):\n")
                err.write("".join(traceback.format_exception(exc)))
                code = -1
    finally:
        os.chdir(here)
    return Answer(
        list(argv), code, out.getvalue(), err.getvalue(), changes(before, snapshot(watch))
    )


def assert_refused(answer: Answer, *names: str) -> None:
    """The CLI's answer to bad input: exit 2, one error line (naming one of ``names``, when
    given) and one hint line, no traceback, nothing created, changed or deleted."""
    assert answer.code == 2, answer.show()
    assert not TRACEBACK.search(answer.err), answer.show()
    lines = answer.lines
    assert len(lines) == 2, answer.show()
    assert ERROR_LINE.match(lines[0]) and HINT_LINE.match(lines[1]), answer.show()
    if names:
        assert any(n in lines[0] for n in names), f"the error names none of {names}\n" + (
            answer.show()
        )
    assert answer.changed == [], answer.show()


def assert_answered(answer: Answer, allowed: Sequence[str] = ()) -> None:
    """Either a refusal in the grammar (:func:`assert_refused`), or a normal answer: exit 0 or
    1, no error line, no traceback, and changes only under the ``allowed`` relative paths
    (what the command is meant to write)."""
    if answer.code == 2:
        assert_refused(answer)
        return
    assert answer.code in (0, 1), answer.show()
    assert not TRACEBACK.search(answer.err), answer.show()
    assert not any(ERROR_LINE.match(ln) for ln in answer.err.splitlines()), answer.show()
    stray = [c for c in answer.changed if not any(c[2:].startswith(a) for a in allowed)]
    assert stray == [], answer.show()


def assert_api_refusal(exc: BaseException, *names: str) -> None:
    """An API refusal: the project's error type, one line naming one of ``names``, a hint."""
    assert isinstance(exc, InputError), f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
    message = str(exc)
    assert message and "\n" not in message, message
    assert exc.hint and "\n" not in exc.hint, exc.hint
    if names:  # as words: "T" is not named by "Ts"
        named = [n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}(?![\w])", message)]
        assert named, f"the error names none of {names}: {message}"


def toml_value(v) -> str:
    """``v`` as a TOML value (inline tables and arrays); the fuzz specs' only writer, so that
    wrong types (a date, a table where a number goes) are written as TOML would hold them."""
    import datetime as dt
    import json
    import math

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # JSON escapes are TOML basic-string escapes
    if isinstance(v, dt.date | dt.datetime | dt.time):
        return v.isoformat()
    if isinstance(v, list | tuple):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"no TOML for {type(v).__name__}")


def toml_key(k: str) -> str:
    import json

    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def toml_text(spec: dict) -> str:
    """A spec dict as a TOML file: plain keys first, then one ``[table]`` per sub-dict (its
    own sub-dicts inline, as the shipped specs write ``options = { ... }``)."""
    lines = [f"{toml_key(k)} = {toml_value(v)}" for k, v in spec.items() if not isinstance(v, dict)]
    for k, v in spec.items():
        if isinstance(v, dict):
            lines.append(f"\n[{toml_key(k)}]")
            lines += [f"{toml_key(kk)} = {toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"
