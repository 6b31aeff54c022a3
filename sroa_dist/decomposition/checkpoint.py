"""Step checkpoints of an SROA: a long decomposition saved as it goes, and continued after a kill
to the same bits.

Why: one SROA can be hours of CPU (the power method at its AGHKT budget at n = 1024: about 10⁴
starts of 20 iterations per step, 1 024 steps against up to n deflation terms). A sweep journals
whole evaluations, each one SROA, so a kill used to lose the SROA in progress, and no session
shorter than one SROA could ever finish one.

What is saved: everything the remaining steps read (the engine's deflation terms, warm starts
and shared check starts, the global check's draws, every generator's state and spawn count) and
the steps taken so far. Each step is a pure function of that state, so a call given the same
inputs and the checkpoint continues from it and returns the uninterrupted result bit for bit.
The global check of ``global_check=True``, which runs after the last step, is not covered: after
a kill it runs again from the saved steps (the same bits; the cost of the check alone).

A checkpoint is written at most every :attr:`StepCheckpoint.interval_s` seconds (wall) of steps,
so a short SROA writes none. The file is one line ``sroa-steps <format> <sha256> <done> <rank>``
and then an ``.npz`` archive (arrays only, no pickles) holding the state, its structure as JSON
and a fingerprint of the call (tensor, method, options, settings). A file whose digest or format
does not match is damaged; one whose fingerprint differs holds another SROA. The checkpoint
object says what happens then (:meth:`StepCheckpoint.rejected`): :class:`FileCheckpoint`, a
user's file, refuses the call and keeps the file; a sweep's journal warns and starts again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import InputError
from ..methods import RankOneResult, deflated_values
from ..operators import TensorOperator

__all__ = [
    "CHECKPOINT_FORMAT",
    "DEFAULT_INTERVAL_S",
    "FileCheckpoint",
    "StepCheckpoint",
    "checkpoint_header",
]

#: Layout of a checkpoint file; a file of another format is refused (the SROA starts again).
CHECKPOINT_FORMAT = 1
#: Seconds of steps between two writes, unless the checkpoint says otherwise.
DEFAULT_INTERVAL_S = 300.0
_MAGIC = "sroa-steps"


@runtime_checkable
class StepCheckpoint(Protocol):
    """Where one SROA's steps are saved: the bytes of the last checkpoint, or none."""

    #: Seconds (wall) of steps between two writes; 0 writes after every step.
    interval_s: float

    def load(self) -> bytes | None:
        """The last checkpoint written, or None where there is none."""

    def save(self, data: bytes) -> None:
        """Replace the checkpoint with ``data``, whole or not at all."""

    def rejected(self, reason: str) -> None:
        """A checkpoint that cannot be continued (``reason``): raise, or warn and return (the
        SROA then starts from its first step and overwrites it)."""


@dataclasses.dataclass
class FileCheckpoint:
    """A checkpoint in one local file, for a long :func:`~sroa_dist.sroa` call run by hand:
    ``sroa(T, method="power", checkpoint=FileCheckpoint("run.steps"))``, killed and called
    again with the same arguments, continues where the last write left it. A file that holds
    another SROA, or is damaged, is refused with an ``InputError`` naming it (it is never
    overwritten or deleted: remove it to start afresh)."""

    path: str | os.PathLike[str]
    interval_s: float = DEFAULT_INTERVAL_S

    def __post_init__(self) -> None:
        if not (isinstance(self.interval_s, (int, float)) and self.interval_s >= 0):
            raise InputError(
                f"interval_s: expected seconds >= 0, received {self.interval_s!r}",
                "give how often to write the checkpoint, e.g. 300",
            )

    def load(self) -> bytes | None:
        try:
            return Path(self.path).read_bytes()
        except FileNotFoundError:
            return None

    def save(self, data: bytes) -> None:
        path = Path(self.path)
        tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

    def rejected(self, reason: str) -> None:
        raise InputError(
            f"checkpoint {os.fspath(self.path)}: {reason}",
            "remove the file (or give another path) to start this SROA from its first step",
        )


class _Damaged(ValueError):
    """A checkpoint that is not whole (digest, format or structure): never a user's error by
    itself; the checkpoint object decides (:meth:`StepCheckpoint.rejected`)."""

    hint = "remove the checkpoint file to start the SROA from its first step"


def checkpoint_header(first_line: bytes) -> tuple[int, int]:
    """``(steps done, rank)`` from a checkpoint file's first line (``ValueError`` if it is not
    one): what a store's journal reports of an SROA in progress without reading its state."""
    parts = first_line.decode("ascii", "replace").split()
    if len(parts) != 5 or parts[0] != _MAGIC:
        raise _Damaged("not an SROA step checkpoint")
    return int(parts[3]), int(parts[4])


# ---- the state: packed into arrays and JSON, and back ---------------------------------------


class _Unsupported(ValueError):
    """A state value with no exact array form (a certificate object, say): no checkpoint is
    written for that SROA, which runs on as without one."""

    hint = "nothing to do: the SROA runs on without checkpoints"


def _pack(value: Any, arrays: list[np.ndarray]) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, np.generic):
        return value
    if isinstance(value, float) and not isinstance(value, np.generic):
        return {"f": value.hex()}
    if isinstance(value, np.generic):
        arrays.append(np.asarray(value))
        return {"g": len(arrays) - 1}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufcUS":
            if value.dtype == object:
                return {"o": [list(value.shape), [_pack(v, arrays) for v in value.ravel()]]}
            raise _Unsupported(f"an array of dtype {value.dtype}")
        arrays.append(value)
        return {"a": len(arrays) - 1}
    if isinstance(value, list):
        return [_pack(v, arrays) for v in value]
    if isinstance(value, tuple):
        return {"t": [_pack(v, arrays) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"d": {k: _pack(v, arrays) for k, v in value.items()}}
    if isinstance(value, RankOneResult):
        fields = dataclasses.fields(value)
        return {"r": {f.name: _pack(getattr(value, f.name), arrays) for f in fields}}
    raise _Unsupported(f"a value of type {type(value).__name__}")


def _unpack(node: Any, arrays: Sequence[np.ndarray]) -> Any:
    if isinstance(node, list):
        return [_unpack(v, arrays) for v in node]
    if not isinstance(node, dict):
        return node
    ((tag, inner),) = node.items()
    if tag == "f":
        return float.fromhex(inner)
    if tag == "g":
        return arrays[inner][()]
    if tag == "a":
        return arrays[inner]
    if tag == "o":
        shape, items = inner
        out = np.empty(len(items), dtype=object)
        out[:] = [_unpack(v, arrays) for v in items]
        return out.reshape(shape)
    if tag == "t":
        return tuple(_unpack(v, arrays) for v in inner)
    if tag == "d":
        return {k: _unpack(v, arrays) for k, v in inner.items()}
    if tag == "r":
        return RankOneResult(**{k: _unpack(v, arrays) for k, v in inner.items()})
    raise _Damaged(f"unknown node {tag!r}")


def _encode(state: dict[str, Any], done: int, rank: int) -> bytes:
    arrays: list[np.ndarray] = []
    doc = json.dumps(_pack(state, arrays), sort_keys=True)
    buf = io.BytesIO()
    named = {f"a{i}": a for i, a in enumerate(arrays)}
    np.savez(buf, doc=np.frombuffer(doc.encode(), dtype=np.uint8), **named)
    body = buf.getvalue()
    head = f"{_MAGIC} {CHECKPOINT_FORMAT} {hashlib.sha256(body).hexdigest()} {done} {rank}\n"
    return head.encode() + body


def _decode(data: bytes) -> dict[str, Any]:
    head, sep, body = data.partition(b"\n")
    parts = head.decode("ascii", "replace").split()
    if not sep or len(parts) != 5 or parts[0] != _MAGIC:
        raise _Damaged("it is not an SROA step checkpoint")
    if parts[1] != str(CHECKPOINT_FORMAT):
        raise _Damaged(f"checkpoint format {parts[1]}, expected {CHECKPOINT_FORMAT}")
    if hashlib.sha256(body).hexdigest() != parts[2]:
        raise _Damaged("its digest does not match its content (a partial or damaged file)")
    try:
        with np.load(io.BytesIO(body), allow_pickle=False) as z:
            doc = json.loads(z["doc"].tobytes().decode())
            arrays = [z[f"a{i}"] for i in range(len(z.files) - 1)]
        return _unpack(doc, arrays)
    except (ValueError, KeyError, TypeError, OSError) as exc:
        raise _Damaged(f"unreadable: {exc}") from None


# ---- generators: state and spawn count --------------------------------------------------------


def generator_state(g: np.random.Generator) -> dict[str, Any]:
    """A generator's exact state and how many streams its seed sequence has spawned."""
    seq = g.bit_generator.seed_seq
    return {"bit": g.bit_generator.state, "spawned": int(getattr(seq, "n_children_spawned", 0))}


def _restore_generator(g: np.random.Generator, saved: dict[str, Any]) -> None:
    g.bit_generator.state = saved["bit"]
    seq = g.bit_generator.seed_seq
    have = int(getattr(seq, "n_children_spawned", 0))
    if have > saved["spawned"]:
        raise RuntimeError("a generator has spawned more streams than its checkpoint records")
    if have < saved["spawned"]:
        seq.spawn(saved["spawned"] - have)  # advance the spawn count: children drawn later match


# ---- the fingerprint of a call ----------------------------------------------------------------


def fingerprint(Ts: Any, settings: dict[str, Any]) -> str:
    """A digest of what an SROA's steps depend on besides its generators: the tensors (every
    entry of a formed stack; an operator's values at two fixed unit vectors, exact bits, with
    its shape and Frobenius norm) and ``settings`` (method, rank, options, ...)."""
    h = hashlib.sha256()
    h.update(json.dumps(settings, sort_keys=True, default=_canonical).encode())
    if isinstance(Ts, TensorOperator):
        B, n = Ts.shape[0], Ts.shape[1]
        probe = np.random.default_rng(20261129).standard_normal((B, 2, n))
        probe /= np.linalg.norm(probe, axis=-1, keepdims=True)
        h.update(repr(Ts.shape).encode())
        h.update(np.ascontiguousarray(deflated_values(Ts, probe)[1]).tobytes())
        h.update(np.ascontiguousarray(np.asarray(Ts.fro2(), dtype=float)).tobytes())
    else:
        arr = np.ascontiguousarray(Ts)
        h.update(repr((arr.shape, arr.dtype.str)).encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def _canonical(value: Any) -> Any:
    """A JSON form of an option value JSON has none for: an array by its bytes' digest (its
    repr would elide the middle of a long one), anything else by its repr."""
    if isinstance(value, np.ndarray):
        arr = np.ascontiguousarray(value)
        digest = hashlib.sha256(arr.tobytes()).hexdigest()
        return {"array": [arr.dtype.str, list(arr.shape), digest]}
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)


# ---- the recorder one SROA uses -------------------------------------------------------------


@dataclasses.dataclass
class StepRecorder:
    """The steps loop's side of a checkpoint: :meth:`resume` restores the engine, generators
    and check draws and returns the steps already taken; :meth:`after_step` writes the state
    when :attr:`StepCheckpoint.interval_s` has passed since the last write."""

    checkpoint: StepCheckpoint
    identity: str
    rank: int
    engine: Any
    rngs: list[np.random.Generator]
    draws: list[Any] | None
    _last: float = dataclasses.field(default_factory=time.monotonic)
    _off: bool = False

    def resume(self) -> list[RankOneResult]:
        data = self.checkpoint.load()
        if data is None:
            return []
        try:
            state = _decode(data)
        except _Damaged as exc:
            self.checkpoint.rejected(f"damaged checkpoint: {exc}")
            return []
        if state.get("fingerprint") != self.identity:
            self.checkpoint.rejected(
                "it holds the steps of another SROA (another tensor, method, options or rank)"
            )
            return []
        # The fingerprint holds the engine's state version, so a whole file of this call is a
        # state this code wrote: a failure below is a bug, not a user's problem.
        self.engine.restore(state["engine"])
        for g, saved in zip(self.rngs, state["rngs"], strict=True):
            _restore_generator(g, saved)
        if self.draws is not None:
            for d, saved in zip(self.draws, state["draws"], strict=True):
                _restore_generator(d.rng, saved["rng"])
                d.theta, d.uniform = list(saved["theta"]), list(saved["uniform"])
        return list(state["steps"])

    def after_step(self, steps: list[RankOneResult]) -> None:
        if self._off or time.monotonic() - self._last < self.checkpoint.interval_s:
            return
        state = {
            "fingerprint": self.identity,
            "engine": self.engine.snapshot(),
            "rngs": [generator_state(g) for g in self.rngs],
            "draws": None
            if self.draws is None
            else [
                {"rng": generator_state(d.rng), "theta": d.theta, "uniform": d.uniform}
                for d in self.draws
            ],
            "steps": steps,
        }
        try:
            data = _encode(state, len(steps), self.rank)
        except _Unsupported:
            self._off = True  # a state with no exact array form: this SROA runs unsaved
            return
        self.checkpoint.save(data)
        self._last = time.monotonic()
