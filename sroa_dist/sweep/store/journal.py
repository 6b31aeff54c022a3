"""The evaluation journal: each finished evaluation of a block's search, kept inside the store
until the block is written, so that a killed search resumes from the evaluations it finished.

A first-crossing search (a threshold kind's block) is 20-30 evaluations of minutes each at
large n, and a block is written only when its search ends. Every evaluation is a pure function
of its inputs, and the search's next points are a function of the outcomes so far, so a search
run again asks for the same points in the same order: replaying the stored outcomes of the
points it finished before the kill and evaluating the rest gives the uninterrupted result, bit
for bit.

:class:`EvaluationJournal` is the block's inner pool (:mod:`..inner_pool`) wrapped around the
one the execution layer gives it: for an evaluator with a ``journal_key(item)`` (the threshold
search's evaluator, :func:`sroa_dist.find_threshold`; the samples kind's draw) it looks every
point of a round up, hands only the missing ones to the inner pool, and each of those writes
its entry where it ran (this thread, or a task on another worker) as soon as it finished.
Evaluators without a key run as before.

Where the entries live: ``<store>/journal/`` (:data:`FOLDER`, an empty zarr group like the
certificate folder), one folder per block named by the hash of the block's instance coordinates
(:func:`~.certificate_files.block_file_name`: it survives an extension, which keeps the folder),
one file per evaluation named by its key. Everything is written by the tasks of the run that
holds the store's writer lease (as block writes are); an entry is content-addressed, so a stale
writer's late entry is still the outcome of its key. ``--overwrite`` clears the folder with the
rest of the store. When the block is written its folder is removed (the entries are the run's
own bookkeeping, never a user's file).

An entry is whole or refused: written to a temporary name and renamed, and its first line holds
the SHA-256 of the rest; a file whose digest, format or key does not match is not used (a
:class:`~sroa_dist.errors.SroaWarning` names it, and the evaluation runs again and rewrites
it). Mixed code versions follow the store's rule (:func:`.prepare.prepare_store` warns "created
by commit X, continued by Y" and keeps the finished blocks): an entry records the commit that
wrote it and is replayed under another commit with a warning, as a finished block is kept. The
key (:meth:`sroa_dist.studies.threshold._Evaluator.journal_key`) holds everything that
determines an evaluation: the instance's seeds (its coordinates and replicate), the spec's
settings that reach the evaluation, ε's exact bits, the search revision and the method
revisions the store pinned.

Stores on fsspec filesystems (object stores, S3) journal through the same calls (write to a
temporary name, then move), as certificate files are written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fsspec.core

from sroa_dist.decomposition import DEFAULT_INTERVAL_S, checkpoint_header
from sroa_dist.errors import InputError, SroaWarning

from ..layout import Layout
from .certificate_files import block_file_name, make_folder
from .target import git_commit, now_iso, storage_options_for

__all__ = [
    "ENTRY_FORMAT",
    "FOLDER",
    "EvaluationJournal",
    "JournalCount",
    "describe_journal",
    "journal_counts",
    "read_entry",
]

#: The folder inside a store that holds the journal (an empty zarr group holding folders).
FOLDER = "journal"
#: Layout of an entry file; an entry of another format is refused (run again).
ENTRY_FORMAT = 1
#: First bytes of an entry file, before its format and digest.
_MAGIC = "sroa-journal"
#: What an entry's key (its file name) may hold.
_KEY = re.compile(r"[0-9A-Za-z_-]{1,200}")


def _fs(url: str, so: Mapping[str, Any] | None) -> tuple[Any, str]:
    fs, path = fsspec.core.url_to_fs(str(url), **(storage_options_for(url, so) or {}))
    return fs, path.rstrip("/")


def _block_folder(dims: Sequence[str], coords: Sequence[Sequence[Any]]) -> str:
    return block_file_name(dims, coords).removesuffix(".npz")


# ---- entries: encode, write, read -----------------------------------------------------------


def _encode(value: Any) -> Any:
    """An evaluation's outcome as JSON, every float by its exact bits (``float.hex``) and
    tuples kept apart from lists, so that :func:`_decode` gives the same values back."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if hasattr(value, "dtype") and getattr(value, "shape", None) == ():
        return _encode(value.item())  # a numpy scalar
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return {"f": value.hex()}
    if isinstance(value, tuple):
        return {"t": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {"d": {k: _encode(v) for k, v in value.items()}}
    # The evaluators that journal return only these types: anything else is a broken invariant.
    raise RuntimeError(f"an evaluation outcome of type {type(value).__name__} cannot be journalled")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        (tag, inner), *rest = value.items()
        if rest or tag not in ("f", "t", "d"):
            raise _Damaged(f"unknown outcome node {sorted(value)}")
        if tag == "f":
            return float.fromhex(inner)
        if tag == "t":
            return tuple(_decode(v) for v in inner)
        return {k: _decode(v) for k, v in inner.items()}
    return value


class _Damaged(ValueError):
    """An entry file that is not whole: its digest, format or key does not match. Never reaches
    a user as an error: the reader warns, naming the file, and the evaluation runs again."""

    hint = "the evaluation runs again and rewrites the entry; nothing needs doing"


def _write_whole(fs: Any, path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` inside a block's journal folder (made, with the journal's
    zarr group, where missing), whole or not at all: a temporary name, then renamed."""
    base = path.rsplit("/", 1)[0]
    make_folder(fs, base.rsplit("/", 1)[0])
    fs.makedirs(base, exist_ok=True)
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    try:
        fs.pipe_file(tmp, data)
        fs.mv(tmp, path)
    except BaseException:
        # A full disk, say: leave no temporary file behind (the OSError fails the block as any
        # store write does; its evaluations so far stay journalled).
        with contextlib.suppress(Exception):
            fs.rm(tmp)
        raise


@dataclass(frozen=True)
class _Entries:
    """One block's journal folder: read and write entries (picklable: an evaluation on another
    worker writes its own entry)."""

    url: str
    storage_options: Mapping[str, Any] | None
    block: str
    commit: str

    def folder(self) -> tuple[Any, str]:
        fs, path = _fs(self.url, self.storage_options)
        return fs, f"{path}/{FOLDER}/{self.block}"

    def write(self, key: str, outcome: Any) -> None:
        """Write the entry of ``key`` (temporary name, then renamed: whole or absent)."""
        body = json.dumps(
            {
                "format": ENTRY_FORMAT,
                "key": key,
                "outcome": _encode(outcome),
                "git_commit": self.commit,
                "written": now_iso(),
            },
            sort_keys=True,
        ).encode()
        head = f"{_MAGIC} {ENTRY_FORMAT} {hashlib.sha256(body).hexdigest()}\n".encode()
        fs, base = self.folder()
        _write_whole(fs, f"{base}/{key}.json", head + body)

    def steps(self, key: str) -> StepFile:
        """The step checkpoint of the evaluation of ``key`` (its SROA in progress)."""
        return StepFile(self, key)

    def read(self, key: str) -> tuple[Any, str] | None:
        """``(outcome, commit)`` of the entry of ``key``; None where there is none or it is
        damaged (a warning names the file)."""
        fs, base = self.folder()
        path = f"{base}/{key}.json"
        try:
            data = fs.cat_file(path)
        except FileNotFoundError:
            return None
        try:
            return read_entry(data, key)
        except _Damaged as exc:
            warnings.warn(
                f"journal entry {path} is damaged ({exc}); it is not used and its evaluation "
                "runs again",
                SroaWarning,
                stacklevel=2,
            )
            return None


def read_entry(data: bytes, key: str | None = None) -> tuple[Any, str]:
    """``(outcome, commit)`` of an entry file's bytes; :class:`_Damaged` (a ``ValueError``)
    unless its digest, format and (where given) key match."""
    head, sep, body = data.partition(b"\n")
    parts = head.decode("ascii", "replace").split(" ")
    if not sep or len(parts) != 3 or parts[0] != _MAGIC:
        raise _Damaged("no journal header")
    if parts[1] != str(ENTRY_FORMAT):
        raise _Damaged(f"entry format {parts[1]}, expected {ENTRY_FORMAT}")
    if hashlib.sha256(body).hexdigest() != parts[2]:
        raise _Damaged("its digest does not match its content")
    try:
        doc = json.loads(body)
        outcome = _decode(doc["outcome"])
    except (ValueError, KeyError, TypeError) as exc:
        raise _Damaged(f"unreadable: {exc}") from None
    if key is not None and doc.get("key") != key:
        raise _Damaged("it is the entry of another evaluation")
    return outcome, str(doc.get("git_commit", "unknown"))


#: Seconds of steps between two writes of an evaluation's step checkpoint, unless the
#: environment variable of this name says otherwise (tests set 0: a write after every step).
STEP_INTERVAL_ENV = "SROA_DIST_STEP_CHECKPOINT_S"


@dataclass(frozen=True)
class StepFile:
    """The step checkpoint of one journalled evaluation (:mod:`sroa_dist.decomposition.
    checkpoint`): ``<key>.steps`` beside its entry, so that an SROA of hours killed mid-run
    continues from its last write. Written whole (temporary name, then renamed); removed once
    the evaluation's entry is written. A damaged file or one of another SROA is the run's own
    bookkeeping: a warning names it and the SROA starts from its first step."""

    entries: _Entries
    key: str

    @property
    def interval_s(self) -> float:
        text = os.environ.get(STEP_INTERVAL_ENV, "")
        try:
            value = float(text) if text else DEFAULT_INTERVAL_S
        except ValueError:
            value = math.nan
        if not value >= 0:
            raise InputError(
                f"environment variable {STEP_INTERVAL_ENV}: expected seconds >= 0, "
                f"received {text!r}",
                f"unset {STEP_INTERVAL_ENV} (every {DEFAULT_INTERVAL_S:.0f} s) or give seconds",
            )
        return value

    def path(self) -> tuple[Any, str]:
        fs, base = self.entries.folder()
        return fs, f"{base}/{self.key}{STEPS_SUFFIX}"

    def load(self) -> bytes | None:
        fs, path = self.path()
        try:
            return fs.cat_file(path)
        except FileNotFoundError:
            return None

    def save(self, data: bytes) -> None:
        fs, path = self.path()
        _write_whole(fs, path, data)

    def rejected(self, reason: str) -> None:
        warnings.warn(
            f"step checkpoint {self.path()[1]}: {reason}; not used, the SROA starts from its "
            "first step",
            SroaWarning,
            stacklevel=2,
        )

    def drop(self) -> None:
        """Remove the checkpoint (its evaluation's entry is written: it is spent)."""
        fs, path = self.path()
        with contextlib.suppress(FileNotFoundError):
            fs.rm(path)


#: Suffix of an evaluation's step checkpoint in its block's journal folder.
STEPS_SUFFIX = ".steps"


@dataclass(frozen=True)
class _Recorded:
    """``fn`` on ``(key, item)``, its outcome journalled under ``key`` as soon as it is known
    (where it ran). An evaluator with ``checkpointed(item, checkpoint)`` gets the step
    checkpoint of its key, so an SROA in progress survives a kill as well."""

    fn: Callable[[Any], Any]
    entries: _Entries

    def __call__(self, keyed: tuple[str, Any]) -> Any:
        key, item = keyed
        checkpointed = getattr(self.fn, "checkpointed", None)
        if checkpointed is None:
            out = self.fn(item)
        else:
            steps = self.entries.steps(key)
            out = checkpointed(item, steps)
        self.entries.write(key, out)
        if checkpointed is not None:
            steps.drop()
        return out


# ---- the block's pool ------------------------------------------------------------------------


def _same_commit(a: str, b: str) -> bool:
    return "unknown" in (a, b) or a.removesuffix("-dirty") == b.removesuffix("-dirty")


@dataclass
class EvaluationJournal:
    """The inner pool of one block: ``map(fn, items)`` replays the journalled outcomes of
    ``fn``'s items and runs the others on ``inner`` (``None``: in this thread), journalling
    each as it finishes. ``replayed`` and ``evaluated`` count what it did.

    Parameters
    ----------
    url, storage_options
        The store.
    dims, coords
        The block's instance coordinates (:attr:`~..layout.BlockTask.dims`, ``coords``).
    inner
        The pool that runs the missing evaluations (``map(fn, items)``).
    """

    url: str
    storage_options: Mapping[str, Any] | None
    dims: Sequence[str]
    coords: Sequence[Sequence[Any]]
    inner: Any = None
    replayed: int = 0
    evaluated: int = 0
    _entries: _Entries | None = field(default=None, repr=False)
    _warned_commit: bool = field(default=False, repr=False)

    @property
    def entries(self) -> _Entries:
        """The block's journal folder (made on first use: the commit is asked for only where
        an evaluator with a key runs)."""
        if self._entries is None:
            self._entries = _Entries(
                str(self.url),
                dict(self.storage_options) if self.storage_options else None,
                _block_folder(self.dims, self.coords),
                git_commit(),
            )
        return self._entries

    def _run(self, fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        if self.inner is None:
            return [fn(x) for x in items]
        return list(self.inner.map(fn, items))

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """``[fn(x) for x in items]``, in order, the journalled ones replayed."""
        items = list(items)
        key_of = getattr(fn, "journal_key", None)
        if key_of is None:
            return self._run(fn, items)
        keys = [str(key_of(x)) for x in items]
        for k in keys:  # a key names a file: no separators, nothing hidden
            if not _KEY.fullmatch(k):
                # keys are made by the evaluators, never by a user: a bad one is a bug
                raise RuntimeError(f"journal key {k!r}: expected letters, digits, '_' or '-'")
        entries = self.entries
        found = [entries.read(k) for k in keys]
        outs: list[Any] = [None if f is None else f[0] for f in found]
        others = sorted({f[1] for f in found if f is not None} - {entries.commit})
        others = [c for c in others if not _same_commit(c, entries.commit)]
        if others and not self._warned_commit:
            self._warned_commit = True
            warnings.warn(
                f"store {self.url}: journalled evaluations computed by commit {others[0]}, "
                f"continued by {entries.commit}; evaluations computed by different code "
                "versions may differ in their last bits (use --overwrite for a single-version "
                "cube)",
                SroaWarning,
                stacklevel=2,
            )
        todo = [i for i, f in enumerate(found) if f is None]
        self.replayed += len(items) - len(todo)
        if todo:
            got = self._run(_Recorded(fn, entries), [(keys[i], items[i]) for i in todo])
            if len(got) != len(todo):
                raise RuntimeError(f"the pool returned {len(got)} outcomes for {len(todo)} items")
            for i, out in zip(todo, got, strict=True):
                outs[i] = out
            self.evaluated += len(todo)
        return outs

    def clear(self) -> None:
        """Remove the block's journal folder (its block is written: the entries are spent)."""
        fs, base = self.entries.folder()
        if fs.exists(base):
            fs.rm(base, recursive=True)


# ---- what a store's journal holds ------------------------------------------------------------


@dataclass(frozen=True)
class JournalCount:
    """The journal of one block: entries that read whole, and the paths of damaged ones."""

    entries: int
    damaged: tuple[str, ...] = ()
    #: ``(steps done, rank)`` of each SROA in progress (a step checkpoint), in key order.
    in_progress: tuple[tuple[int, int], ...] = ()


def journal_counts(
    url: str,
    layout: Layout,
    blocks: Iterable[int],
    storage_options: Mapping[str, Any] | None = None,
) -> dict[int, JournalCount]:
    """The journal of each of ``blocks`` that has one (every entry read and its digest
    checked: entries are a few hundred bytes)."""
    fs, path = _fs(url, storage_options)
    root = f"{path}/{FOLDER}"
    if not fs.exists(root):
        return {}
    present = {p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(root, detail=False)}
    out: dict[int, JournalCount] = {}
    for b in blocks:
        region = layout.block_region(int(b))
        coords = [c[s] for c, s in zip(layout.coords, region, strict=True)]
        name = _block_folder(layout.dims, coords)
        if name not in present:
            continue
        good, damaged, partial = 0, [], []
        for f in sorted(fs.ls(f"{root}/{name}", detail=False)):
            if f.endswith(STEPS_SUFFIX):
                with contextlib.suppress(ValueError, OSError), fs.open(f, "rb") as fh:
                    partial.append(checkpoint_header(fh.readline()))
                continue
            if not f.endswith(".json"):
                continue  # a temporary name: a write that never finished
            try:
                key = f.rstrip("/").rsplit("/", 1)[-1].removesuffix(".json")
                read_entry(fs.cat_file(f), key)
                good += 1
            except (_Damaged, OSError):
                damaged.append(f)
        if good or damaged or partial:
            out[int(b)] = JournalCount(good, tuple(damaged), tuple(partial))
    return out


def describe_journal(counts: Mapping[int, JournalCount]) -> list[str]:
    """One line per block: ``12 evaluations of block 0 journalled`` (and its damaged files)."""
    lines = []
    for b, c in sorted(counts.items()):
        line = f"{c.entries} evaluation{'s' if c.entries != 1 else ''} of block {b} journalled"
        if c.damaged:
            line += f"; {len(c.damaged)} damaged (not used, run again): {', '.join(c.damaged)}"
        if c.in_progress:
            steps = ", ".join(f"step {d} of {r}" for d, r in c.in_progress)
            line += f"; SROA in progress saved at {steps}"
        lines.append(line)
    return lines
