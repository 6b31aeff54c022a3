"""Step checkpoints of an SROA (``sroa_dist.decomposition.checkpoint``): an SROA killed after any
step and called again with its checkpoint continues from the last write and returns the
uninterrupted result bit for bit, on every engine (formed tensors explicit and implicit, the
matrix-free operators on the small-n and large-n engines, ``power`` and ``sshopm`` with the
shared global check); a user's file of another SROA, or a damaged one, is refused by name and
kept; the interval bounds how often it is written."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sroa_dist import (
    FileCheckpoint,
    InputError,
    identity_basis,
    random_orthonormal_basis,
    sod_tensor,
    sroa,
    structured_tensor,
    symmetrize,
)
from sroa_dist.decomposition import checkpoint_header
from sroa_dist.decomposition.engines import ExplicitSteps, ImplicitSteps


class Killed(BaseException):
    """Stands for a SIGKILL landing right after a checkpoint was written."""


class MemoryCheckpoint:
    """A checkpoint in memory, written after every step, that kills its SROA at its
    ``kill_at``-th write (None: never)."""

    interval_s = 0.0

    def __init__(self, kill_at: int | None = None) -> None:
        self.data: bytes | None = None
        self.kill_at, self.writes = kill_at, 0

    def load(self) -> bytes | None:
        return self.data

    def save(self, data: bytes) -> None:
        self.data, self.writes = data, self.writes + 1
        if self.writes == self.kill_at:
            raise Killed

    def rejected(self, reason: str) -> None:
        raise AssertionError(reason)


def _assert_same_bits(a, b) -> None:
    """Every field of two SROA results and of their steps, bit for bit (wall times aside)."""
    for x, y, name in _fields(a, b):
        X, Y = np.asarray(x), np.asarray(y)
        assert X.dtype == Y.dtype and X.shape == Y.shape, name
        assert np.array_equal(X, Y, equal_nan=X.dtype.kind in "fc"), name


def _fields(a, b):
    for f in dataclasses.fields(a):
        if f.name == "steps":
            for s, t in zip(a.steps, b.steps, strict=True):
                for g in dataclasses.fields(s):
                    if g.name != "solve_time":
                        yield getattr(s, g.name), getattr(t, g.name), f"steps.{g.name}"
        elif f.name != "solve_time":
            yield getattr(a, f.name), getattr(b, f.name), f.name


def _attractor(n, eps, V="identity"):
    basis = identity_basis(n) if V == "identity" else random_orthonormal_basis(n, rng=3)
    return lambda: structured_tensor(3, np.ones(n), V=basis, family="attractor", eps=eps)


def _tilt(n, eps, p=3):
    lam = np.ones(n)
    lam[-1] = 0.95
    basis = random_orthonormal_basis(n, rng=3)
    return lambda: structured_tensor(p, lam, V=basis, family="coherent-tilt", eps=eps)


def _dense():
    rng = np.random.default_rng(0)
    lam = np.array([3.0, 2.0, 1.5, 1.0, 0.8, 0.5])
    T = sod_tensor(lam, random_orthonormal_basis(6, rng=1), 3)
    T = T + 0.05 * symmetrize(rng.standard_normal((6, 6, 6)))
    return lambda: T


CASES = {
    # small-n engine, matrix-free: power, and sshopm globally checked and redone
    "power attractor n=24": (_attractor(24, 0.3, V="random"), {"method": "power"}),
    "sshopm tilt n=24 global": (
        _tilt(24, 0.25),
        {"method": "sshopm", "global_check": True, "redo": True},
    ),
    # the large-n engine (n >= 128): the buffer of deflation terms, the shared check's starts
    "sshopm tilt n=128 global": (
        _tilt(128, 0.08),
        {"method": "sshopm", "global_check": True, "redo": True},
    ),
    "sshopm p=4 tilt n=128 global": (
        _tilt(128, 0.3, p=4),
        {"method": "sshopm", "global_check": True, "redo": True},
    ),
    "power attractor n=128": (_attractor(128, 0.35), {"method": "power"}),
    # formed tensors: deflated tensors formed (explicit), or deflation terms (implicit)
    "dense explicit sshopm": (_dense(), {"method": "sshopm", "global_check": True}),
    "dense implicit power": (_dense(), {"method": "power", "deflation": "implicit"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_killed_sroa_continues_from_its_checkpoint_to_the_same_bits(case, monkeypatch):
    make, kwargs = CASES[case]
    reference = sroa(make(), rng=5, **kwargs)
    r = reference.rank
    for kill_at in (1, r // 2, r - 1):
        ck = MemoryCheckpoint(kill_at)
        with pytest.raises(Killed):
            sroa(make(), rng=5, checkpoint=ck, **kwargs)
        assert checkpoint_header(ck.data.partition(b"\n")[0]) == (kill_at, r)
        ck.kill_at = None
        proposes = []
        for engine in (ExplicitSteps, ImplicitSteps):
            real = engine.propose

            def counted(self, forced=None, real=real, proposes=proposes):
                proposes.append(forced is None)
                return real(self, forced)

            monkeypatch.setattr(engine, "propose", counted)
        resumed = sroa(make(), rng=5, checkpoint=ck, **kwargs)
        monkeypatch.undo()
        # it continued: the steps loop proposed only the steps after the saved ones
        assert sum(proposes) - int(np.sum(resumed.redone)) <= r - kill_at
        _assert_same_bits(resumed, reference)
    # without a kill, writing checkpoints changes nothing either
    _assert_same_bits(sroa(make(), rng=5, checkpoint=MemoryCheckpoint(), **kwargs), reference)


def _killed_file(path, make, kill_at=3, **kwargs):
    class Dying(FileCheckpoint):
        writes = 0

        def save(self, data):
            super().save(data)
            self.writes += 1
            if self.writes == kill_at:
                raise Killed

    with pytest.raises(Killed):
        sroa(make(), rng=5, method="power", checkpoint=Dying(path, interval_s=0), **kwargs)


def test_a_file_checkpoint_is_continued_refused_when_foreign_or_damaged_and_always_kept(tmp_path):
    make = _attractor(24, 0.3)
    reference = sroa(make(), rng=5, method="power")
    path = tmp_path / "run.steps"
    _killed_file(path, make)
    saved = path.read_bytes()
    assert not list(tmp_path.glob("*.tmp"))  # written whole: temporary name, then renamed
    # another SROA (another eps, another seed, another rank) is refused by name, file kept
    for other, kwargs in (
        (_attractor(24, 0.31), {"rng": 5}),
        (make, {"rng": 6}),
        (make, {"rng": 5, "rank": 10}),
    ):
        with pytest.raises(InputError, match=f"checkpoint {path}: it holds the steps of another"):
            sroa(other(), method="power", checkpoint=FileCheckpoint(path), **kwargs)
        assert path.read_bytes() == saved
    # a damaged file is refused by name, and kept
    path.write_bytes(saved[:-9])
    with pytest.raises(InputError, match=f"checkpoint {path}: damaged checkpoint: its digest"):
        sroa(make(), rng=5, method="power", checkpoint=FileCheckpoint(path))
    path.write_bytes(saved)
    resumed = sroa(make(), rng=5, method="power", checkpoint=FileCheckpoint(path, interval_s=0))
    _assert_same_bits(resumed, reference)
    assert path.exists()  # a user's file: the finished SROA leaves it in place


def test_the_interval_bounds_the_writes_and_is_checked(tmp_path):
    path = tmp_path / "run.steps"
    sroa(_attractor(24, 0.3)(), rng=5, method="power", checkpoint=FileCheckpoint(path))
    assert not path.exists()  # a second-long SROA under the default interval writes nothing
    for bad in (-1, "300", float("nan")):
        with pytest.raises(InputError, match="interval_s: expected seconds >= 0"):
            FileCheckpoint(path, interval_s=bad)
    with pytest.raises(InputError, match="checkpoint: expected a step checkpoint"):
        sroa(_attractor(24, 0.3)(), method="power", checkpoint=str(path))
