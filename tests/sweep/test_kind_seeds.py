"""Every builtin kind's per-instance seeds, pinned bit for bit (tests/data/kind_seeds.json).

A store resumes only if every instance still draws from the seeds it was made with, so the
seeds of a few instances of each kind's smoke spec were recorded from the code as it stood
(``python -m tests.sweep.test_kind_seeds`` rewrites the file: only for a kind that is new, never
to make this test pass). Each instance's entry is a digest of the state of every
``SeedSequence`` it draws from (the instance, its parts: stages, draws, the basis, the sizes),
so any change to a seed key's fields, names, order or hashing fails here, naming the kind, the
spec and the instance.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from sroa_dist.sweep import load_spec
from sroa_dist.sweep.kinds import BUILTIN, kind_of
from tests.support.helpers import DATA, ROOT

FIXTURE = DATA / "kind_seeds.json"

#: Kind -> the specs whose instances are pinned (a smoke spec each, two for kinds whose seeds
#: depend on a spec setting: the tensor kind's noise level, the escape kind's parts).
SPECS: dict[str, tuple[str, ...]] = {
    "tensor": ("sweeps/smoke/figure1.toml", "sweeps/smoke/nscaling.toml"),
    "model": ("sweeps/smoke/topics.toml", "sweeps/smoke/gmm.toml"),
    "threshold": ("sweeps/studies/smoke/nscaling-value-p3.toml",),
    "worst_case": ("sweeps/studies/smoke/worst-case.toml",),
    "escape": (
        "sweeps/studies/smoke/attractor-escape.toml",
        "sweeps/studies/smoke/attractor-confirm.toml",
    ),
    "accumulation": ("sweeps/studies/smoke/accumulation.toml",),
    "samples": ("sweeps/studies/smoke/samples-topics.toml",),
    "structure": ("sweeps/studies/smoke/noise-structure-gmm.toml",),
}


@contextmanager
def _recorded() -> Iterator[list[np.random.SeedSequence]]:
    """Every ``np.random.SeedSequence`` built inside the block, in order."""
    made: list[np.random.SeedSequence] = []
    original = np.random.SeedSequence

    class Recording(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    np.random.SeedSequence = Recording  # type: ignore[misc]
    try:
        yield made
    finally:
        np.random.SeedSequence = original  # type: ignore[misc]


def _tensor(spec: Any, s: Any, rep: int) -> list[np.random.SeedSequence]:
    return [s.seed(spec.seed, rep)]


def _model(spec: Any, s: Any, rep: int) -> list[np.random.SeedSequence]:
    return [s.seed(spec.seed, rep), s.study_seed(spec.seed, rep)]


def _problem(spec: Any, s: Any, rep: int) -> list[np.random.SeedSequence]:
    """Kinds whose instance object carries its seed and spawn key (threshold, accumulation)."""
    problem = kind_of(spec).instance(spec, s, rep)
    return [np.random.SeedSequence(problem.seed, spawn_key=problem.spawn_key)]


def _worst_case(spec: Any, s: Any, rep: int) -> list[np.random.SeedSequence]:
    problem = kind_of(spec).instance(spec, s, rep)
    return [
        np.random.SeedSequence(problem.seed, spawn_key=problem.spawn_key),
        np.random.SeedSequence(problem.seed, spawn_key=problem.basis_key),
    ]


def _escape(spec: Any, s: Any, rep: int) -> list[np.random.SeedSequence]:
    from sroa_dist.sweep.kinds.start_escape import parse_stages

    stages = [s.seed(spec.seed, rep, 0, r) for r in parse_stages(spec.escape.stages, s.n)]
    return [*stages, s.seed(spec.seed, rep, 1)]


def _samples(spec: Any, s: Any, rep: int) -> list[np.random.SeedSequence]:
    lo, hi = spec.samples["N_range"]
    out = []
    for draw in (0, 1):
        with _recorded() as made:  # the model's seed is built inside build_model
            s.build_model(spec.seed, rep, draw)
        out += [made[0], *(s.study_seed(spec.seed, rep, draw, n) for n in (lo, hi))]
    return out


def _structure(spec: Any, s: Any, rep: int) -> list[np.random.SeedSequence]:
    with _recorded() as made:  # the model's seed is built inside draw
        s.draw(spec.seed)
    return [made[0], s.pilot_seed(spec.seed), s.measure_seed(spec.seed, rep)]


PROBES: dict[str, Callable[[Any, Any, int], list[np.random.SeedSequence]]] = {
    "tensor": _tensor,
    "model": _model,
    "threshold": _problem,
    "worst_case": _worst_case,
    "escape": _escape,
    "accumulation": _problem,
    "samples": _samples,
    "structure": _structure,
}


def _digest(seeds: list[np.random.SeedSequence]) -> str:
    h = hashlib.sha256()
    for ss in seeds:
        h.update(np.asarray(ss.generate_state(8), dtype=np.uint32).tobytes())
    return f"{len(seeds)}:{h.hexdigest()[:24]}"


def _picked(spec: Any) -> list[tuple[dict[str, Any], int]]:
    """The first, a middle and the last grid point, each at the first and last replicate."""
    dims, coords = spec.instance_grid()
    points = list(itertools.product(*coords[:-1]))
    chosen = dict.fromkeys(points[i] for i in (0, len(points) // 2, -1))
    reps = dict.fromkeys((coords[-1][0], coords[-1][-1]))
    return [
        ({d: v for d, v in zip(dims[:-1], point, strict=True)}, int(rep))
        for point in chosen
        for rep in reps
    ]


def seeds_now() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Kind -> spec -> the picked instances' coordinates, replicate and seed digest, from the
    code as it is."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for kind, paths in SPECS.items():
        out[kind] = {}
        for path in paths:
            spec = load_spec(ROOT / path)
            assert kind_of(spec).name == kind, path
            out[kind][path] = [
                {
                    "coords": coords,
                    "replicate": rep,
                    "seeds": _digest(PROBES[kind](spec, spec.settings_at(coords), rep)),
                }
                for coords, rep in _picked(spec)
            ]
    return out


def test_every_builtin_kind_is_pinned():
    assert set(SPECS) == set(BUILTIN) == set(json.loads(FIXTURE.read_text()))


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_a_kinds_instance_seeds_are_the_recorded_bits(kind):
    recorded = json.loads(FIXTURE.read_text())[kind]
    now = seeds_now()[kind]
    assert set(now) == set(recorded)
    for path, instances in recorded.items():
        assert len(now[path]) == len(instances) >= 2, path
        for was, is_ in zip(instances, now[path], strict=True):
            assert is_ == was, f"{kind} ({path}): the seeds of an instance changed"


if __name__ == "__main__":  # record the fixture (see the module docstring)
    FIXTURE.write_text(json.dumps(seeds_now(), indent=1, sort_keys=True) + "\n")
    sys.exit(0)
