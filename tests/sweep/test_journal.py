"""The evaluation journal (``sroa_dist.sweep.store.journal``): a threshold search killed after
some evaluations resumes from them, evaluates only the missing points and writes the cube of an
uninterrupted run bit for bit; a damaged entry is refused and named; an entry of another
instance or spec is never used; the store's status says what a resumed run will replay.

The block runs as a task body runs it (``_compute_and_write``: the journal around the block's
pool, then the block write), on a real zarr store, in this process; the kill is an exception
that is no ``Exception`` (as a SIGKILL, nothing after it runs) raised by the k-th evaluation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest

from sroa_dist.decomposition import checkpoint_header
from sroa_dist.decomposition.engines import ExplicitSteps
from sroa_dist.errors import SroaWarning
from sroa_dist.studies import threshold as search
from sroa_dist.sweep.kinds import make_layout, spec_from_dict
from sroa_dist.sweep.layout import block_task
from sroa_dist.sweep.run.execute import _compute_and_write
from sroa_dist.sweep.store import (
    describe_journal,
    journal_counts,
    prepare_store,
    read_done,
    scan_store,
    store_status,
)
from sroa_dist.sweep.store.journal import STEP_INTERVAL_ENV, STEPS_SUFFIX
from tests.support.helpers import assert_same_bits, cube_values, run_cli, sigkill_run_when


def _raw(**threshold) -> dict:
    """One cheap search (p = 3, n = 4): about 25 evaluations of a few ms."""
    return {
        "name": "journal",
        "seed": 5,
        "replicates": 1,
        "tensor": {"n": 4, "p": 3},
        "noise": {
            "model": "coherent-tilt",
            "params": {"coherent-tilt": {"component": "smallest"}},
        },
        "solver": {"method": "sshopm"},
        "threshold": {
            "criterion": "value",
            "c": 0.5,
            "eps_range": [0.05, 1.5],
            "rtol": 0.03,
            **threshold,
        },
    }


class Killed(BaseException):
    """Stands for a SIGKILL: no ``except Exception`` of the task body catches it."""


class Counter:
    """Counts the search's evaluations (``_Evaluator.checkpointed``, what a journal runs), and
    kills the block at the evaluation after ``kill_after`` (None: never)."""

    def __init__(self, monkeypatch, kill_after: int | None = None):
        self.calls, self.kill_after = 0, kill_after
        real = search._Evaluator.checkpointed

        def counted(ev, eps, checkpoint):
            if self.kill_after is not None and self.calls >= self.kill_after:
                raise Killed
            self.calls += 1
            return real(ev, eps, checkpoint)

        monkeypatch.setattr(search._Evaluator, "checkpointed", counted)


def _store(path: Path, raw: dict):
    spec = spec_from_dict(raw)
    prep = prepare_store(str(path), spec, make_layout(spec))
    task = block_task(prep.spec or spec, prep.layout, 0)
    return dataclasses.replace(task, layout_token=prep.layout_token), prep.layout


def _run_block(path: Path, task) -> None:
    info = _compute_and_write(str(path), task, None)
    assert "error" not in info, info


def _entries(path: Path) -> list[Path]:
    return sorted((path / "journal").glob("*/*.json"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted cube, and how many evaluations its search made."""
    path = tmp_path_factory.mktemp("ref") / "ref.zarr"
    task, _ = _store(path, _raw())
    mp = pytest.MonkeyPatch()
    try:
        counter = Counter(mp)
        _run_block(path, task)
    finally:
        mp.undo()
    values = cube_values(path)
    assert counter.calls == int(values["n_evals"].ravel()[0]) > 12
    return values, counter.calls


def _interrupted(path: Path, monkeypatch, k: int, raw: dict | None = None):
    """A store whose block was killed after ``k`` evaluations."""
    task, layout = _store(path, raw or _raw())
    Counter(monkeypatch, kill_after=k)
    with pytest.raises(Killed):
        _compute_and_write(str(path), task, None)
    monkeypatch.undo()
    assert not read_done(str(path)).any()
    return task, layout


def test_a_killed_search_resumes_from_its_journal_and_equals_the_uninterrupted_cube(
    tmp_path, monkeypatch, reference
):
    values, total = reference
    path = tmp_path / "k.zarr"
    k = 12
    task, layout = _interrupted(path, monkeypatch, k)
    assert len(_entries(path)) == k  # each evaluation journalled as it finished
    # What a resumed run will replay: the status and the run's progress line say it.
    counts = journal_counts(str(path), layout, [0])
    assert counts[0].entries == k and not counts[0].damaged
    assert store_status(str(path)).journal == counts
    assert describe_journal(counts) == [f"{k} evaluations of block 0 journalled"]
    # Nothing of it is damage to `check`, before the block is written or after.
    assert not scan_store(str(path), layout).damaged
    counter = Counter(monkeypatch)
    _run_block(path, task)
    assert counter.calls == total - k  # only the missing points were evaluated
    assert_same_bits(cube_values(path), values)
    assert _entries(path) == []  # the block is written: its journal is spent
    assert not scan_store(str(path), layout).damaged


def test_status_names_the_journalled_evaluations(tmp_path, monkeypatch):
    path = tmp_path / "s.zarr"
    _interrupted(path, monkeypatch, 5)
    out = run_cli("status", str(path), check=False)
    assert out.returncode == 1, out  # not done
    assert "resuming: 5 evaluations of block 0 journalled" in out.stdout


def test_a_damaged_entry_is_named_refused_and_evaluated_again(tmp_path, monkeypatch, reference):
    values, total = reference
    path = tmp_path / "d.zarr"
    k = 8
    task, layout = _interrupted(path, monkeypatch, k)
    victim = _entries(path)[3]
    data = bytearray(victim.read_bytes())
    data[-5] ^= 0x01  # one bit of one float's hex digits
    victim.write_bytes(bytes(data))
    counts = journal_counts(str(path), layout, [0])
    assert counts[0].entries == k - 1 and counts[0].damaged == (str(victim),)
    assert str(victim) in describe_journal(counts)[0]
    counter = Counter(monkeypatch)
    with pytest.warns(SroaWarning, match=f"journal entry {victim}.* damaged"):
        _run_block(path, task)
    assert counter.calls == total - k + 1  # the damaged one ran again
    assert_same_bits(cube_values(path), values)


def test_a_truncated_entry_and_one_under_another_name_are_refused(tmp_path, monkeypatch):
    path = tmp_path / "t.zarr"
    k = 6
    task, _ = _interrupted(path, monkeypatch, k)
    first, second, *_ = _entries(path)
    first.write_bytes(first.read_bytes()[:40])  # a write cut short (no rename protects it)
    second.write_bytes(_entries(path)[2].read_bytes())  # whole, but another evaluation's
    counter = Counter(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _run_block(path, task)
    damaged = [str(w.message) for w in caught if "damaged" in str(w.message)]
    assert any(str(first) in m for m in damaged)
    assert any(str(second) in m and "another evaluation" in m for m in damaged)
    n_evals = int(cube_values(path)["n_evals"].ravel()[0])
    assert counter.calls == n_evals - k + 2


@pytest.mark.parametrize(
    "change",
    [{"threshold.c": 0.45}, {"seed": 6}, {"threshold.rtol": 0.02}],
    ids=["level", "seed", "rtol"],
)
def test_an_entry_of_another_spec_is_never_used(tmp_path, monkeypatch, change):
    """Another spec's journal copied where this spec's block looks (the same block folder:
    the block coordinates are the same): a level or seed changes every key, so nothing is
    replayed; rtol changes no evaluation, so its entries are the same evaluations and are."""
    raw = _raw()
    other = _raw()
    for key, value in change.items():
        node = other
        *parts, leaf = key.split(".")
        for part in parts:
            node = node[part]
        node[leaf] = value
    a, b = tmp_path / "a.zarr", tmp_path / "b.zarr"
    k = 10
    _interrupted(a, monkeypatch, k, raw)
    task, _ = _store(b, other)
    shutil.copytree(a / "journal", b / "journal", dirs_exist_ok=True)
    ref = tmp_path / "ref.zarr"
    ref_task, _ = _store(ref, other)
    counter = Counter(monkeypatch)
    _run_block(ref, ref_task)
    total = counter.calls
    counter.calls = 0
    _run_block(b, task)
    same_evaluations = "threshold.rtol" in change
    assert counter.calls == (total - k if same_evaluations else total)
    assert_same_bits(cube_values(b), cube_values(ref))


def test_the_key_holds_every_input_of_an_evaluation():
    """Evaluations differing in one input (ε by one ulp, the seed's spawn key, the level, a
    method revision) never share a key; the same evaluation always has the same key."""
    ev = search._Evaluator(
        n=4,
        p=3,
        family="coherent-tilt",
        lam_spec=np.array([1.0, 1.0, 1.0, 0.95]),
        V=None,
        params={"component": "smallest"},
        inst_ss=np.random.SeedSequence(5, spawn_key=(1, 2)),
        norm_ss=np.random.SeedSequence(5, spawn_key=(1, 3)),
        solve_ss=np.random.SeedSequence(5, spawn_key=(1, 4)),
        method="sshopm",
        revisions={},
        options={},
        checks={"global_check": True, "redo": True},
        criterion="value",
        level=0.5,
        crit_params={},
        matrix_free=False,
    )
    eps = 0.3
    key = ev.journal_key(eps)
    assert key == dataclasses.replace(ev).journal_key(0.3)
    others = [
        ev.journal_key(np.nextafter(eps, 1.0)),
        dataclasses.replace(ev, solve_ss=np.random.SeedSequence(5, spawn_key=(1, 5))).journal_key(
            eps
        ),
        dataclasses.replace(ev, level=np.nextafter(0.5, 1.0)).journal_key(eps),
        dataclasses.replace(ev, revisions={"sshopm": 6}).journal_key(eps),
        dataclasses.replace(ev, lam_spec=np.array([1.0, 1.0, 1.0, 0.9])).journal_key(eps),
    ]
    assert key not in others and len(set(others)) == len(others)


def test_entries_of_another_commit_are_replayed_with_the_stores_warning(
    tmp_path, monkeypatch, reference
):
    """The store's rule for mixed code versions: a store continued by another commit keeps
    its finished blocks and says so; journalled evaluations are kept and said the same way."""
    from sroa_dist.sweep.store import journal

    values, total = reference
    path = tmp_path / "c.zarr"
    monkeypatch.setattr(journal, "git_commit", lambda: "0" * 40)
    task, _ = _interrupted(path, monkeypatch, 9)  # undoes the patch when done
    monkeypatch.setattr(journal, "git_commit", lambda: "1" * 40)  # the resuming code
    counter = Counter(monkeypatch)
    with pytest.warns(SroaWarning, match=f"computed by commit {'0' * 40}, continued by {'1' * 40}"):
        _run_block(path, task)
    assert counter.calls == total - 9
    assert_same_bits(cube_values(path), values)


def test_an_extension_keeps_the_journal_of_an_unfinished_block(tmp_path, monkeypatch, reference):
    """An extension (one more replicate) swaps a new layout in: the journal, named by block
    coordinates like the certificate files, stays, and the interrupted instance's block (same
    coordinates) resumes from it."""
    values, total = reference
    path = tmp_path / "e.zarr"
    k = 11
    _interrupted(path, monkeypatch, k)
    spec = spec_from_dict({**_raw(), "replicates": 2})
    prep = prepare_store(str(path), spec, make_layout(spec))
    assert prep.action == "extended" and prep.layout.n_blocks == 2
    assert len(_entries(path)) == k
    assert journal_counts(str(path), prep.layout, [0, 1])[0].entries == k
    task = block_task(prep.spec or spec, prep.layout, 0)
    task = dataclasses.replace(task, layout_token=prep.layout_token)
    counter = Counter(monkeypatch)
    _run_block(path, task)
    assert counter.calls == total - k
    from sroa_dist.sweep import open_results

    first = open_results(str(path)).isel(replicate=slice(0, 1)).load()
    for name, ref in values.items():
        if not name.startswith("coord:"):
            assert_same_bits({name: first[name].values}, {name: ref})


def test_a_killed_sample_size_search_resumes_from_its_journalled_draws(tmp_path, monkeypatch):
    """The samples kind's N* search goes through the same pool: each draw at each size is
    journalled, and a block killed after k draws replays them and equals an uninterrupted
    block bit for bit."""
    from sroa_dist.sweep.kinds import samples

    raw = {
        "name": "journal-samples",
        "seed": 11,
        "samples": {
            "model": "gmm",
            "k": 2,
            "weights": "uniform",
            "draws": 3,
            "N_range": [50, 3200],
            "rtol": 0.2,
            "k_section": 2,
            "norm_draws": 1,
        },
        "solver": {"method": "power@aghkt"},
    }
    real = samples._Draw.__call__
    state = {"calls": 0, "kill_after": None}

    def counted(draw, item):
        if state["kill_after"] is not None and state["calls"] >= state["kill_after"]:
            raise Killed
        state["calls"] += 1
        return real(draw, item)

    monkeypatch.setattr(samples._Draw, "__call__", counted)
    ref = tmp_path / "ref.zarr"
    ref_task, _ = _store(ref, raw)
    _run_block(ref, ref_task)
    total, state["calls"] = state["calls"], 0
    path = tmp_path / "k.zarr"
    task, layout = _store(path, raw)
    state["kill_after"] = k = 10
    with pytest.raises(Killed):
        _compute_and_write(str(path), task, None)
    assert journal_counts(str(path), layout, [0])[0].entries == k
    state["calls"], state["kill_after"] = 0, None
    _run_block(path, task)
    assert state["calls"] == total - k > 0
    assert_same_bits(cube_values(path), cube_values(ref))


KILL_SPEC = """\
name = "journal-kill"
seed = 5
replicates = 1
[tensor]
n = 8
p = 3
[noise]
model = "coherent-tilt"
[noise.params.coherent-tilt]
component = "smallest"
[solver]
method = "sshopm"
[threshold]
criterion = "value"
c = 0.5
eps_range = [0.05, 1.5]
rtol = 0.005
k_section = 2
"""


@pytest.mark.slow
def test_sigkill_of_a_cli_run_mid_search_resumes_from_the_journal(tmp_path):
    """The real thing: `sroa-dist run` of one search (about 35 evaluations of 0.2 s, two a
    round, each round's points run as tasks on the two worker processes, which journal their
    own outcome) SIGKILLed with its scheduler and workers once a few evaluations are
    journalled; the same command again says how many it found, and the cube equals an
    uninterrupted search's (computed in this process) bit for bit."""
    spec = tmp_path / "kill.toml"
    spec.write_text(KILL_SPEC)
    store = tmp_path / "k.zarr"
    args = ["run", str(spec), "--store", str(store), "--workers", "2"]
    args += ["--dashboard-address", ":0"]
    sigkill_run_when(args, lambda: len(_entries(store)) >= 4)
    assert not read_done(str(store)).any()
    k = len(_entries(store))
    assert k >= 4
    again = run_cli(*args, timeout=600)
    assert f"sroa-dist: resuming: {k} evaluations of block 0 journalled" in again.stderr + (
        again.stdout
    )
    ref = tmp_path / "ref.zarr"
    task, _ = _store(ref, tomllib.loads(KILL_SPEC))
    _run_block(ref, task)
    assert k < int(cube_values(ref)["n_evals"].ravel()[0])
    assert_same_bits(cube_values(store), cube_values(ref))
    assert _entries(store) == []


# ---- an SROA killed mid-evaluation: its step checkpoint -------------------------------------


def _steps_files(path: Path) -> list[Path]:
    return sorted((path / "journal").glob(f"*/*{STEPS_SUFFIX}"))


class StepKill:
    """Counts every step an engine commits (``ExplicitSteps.commit``: the n = 4 search forms
    its deflated tensors) and proposes, and kills the block right after the ``kill_at``-th
    commit (None: never); the step checkpoint of that commit is not written, as with a kill
    landing mid-step."""

    def __init__(self, monkeypatch, kill_at: int | None = None):
        self.commits = self.proposes = 0
        commit, propose = ExplicitSteps.commit, ExplicitSteps.propose

        def counted_commit(engine):
            commit(engine)
            self.commits += 1
            if self.commits == kill_at:
                raise Killed

        def counted_propose(engine, forced=None):
            self.proposes += 1
            return propose(engine, forced)

        monkeypatch.setattr(ExplicitSteps, "commit", counted_commit)
        monkeypatch.setattr(ExplicitSteps, "propose", counted_propose)


def _kill_mid_sroa(path: Path, task, kill_at: int) -> None:
    """Run the block of ``path`` until right after its ``kill_at``-th committed step."""
    mp = pytest.MonkeyPatch()
    try:
        StepKill(mp, kill_at=kill_at)
        with pytest.raises(Killed):
            _compute_and_write(str(path), task, None)
    finally:
        mp.undo()


def test_an_sroa_killed_mid_evaluation_continues_from_its_step_checkpoint(
    tmp_path, monkeypatch, reference
):
    """With a checkpoint after every step, a kill at the 3rd step of the 6th evaluation leaves
    5 entries and that SROA saved at step 2 of 4 (the status says so); the resumed block
    replays the 5, continues the 6th from its 3rd step, and writes the uninterrupted cube bit
    for bit; no checkpoint is left behind."""
    values, total = reference
    monkeypatch.setenv(STEP_INTERVAL_ENV, "0")
    path = tmp_path / "s.zarr"
    task, layout = _store(path, _raw())
    _kill_mid_sroa(path, task, kill_at=5 * 4 + 3)
    counts = journal_counts(str(path), layout, [0])
    assert counts[0].entries == 5 and counts[0].in_progress == ((2, 4),)
    assert len(_steps_files(path)) == 1
    assert describe_journal(counts) == [
        "5 evaluations of block 0 journalled; SROA in progress saved at step 2 of 4"
    ]
    assert not scan_store(str(path), layout).damaged  # bookkeeping, not damage
    steps = StepKill(monkeypatch)
    _run_block(path, task)
    # every evaluation's 4 steps, less the 5 replayed and the 2 continued from
    assert steps.proposes == (total - 5) * 4 - 2
    assert_same_bits(cube_values(path), values)
    assert _steps_files(path) == [] and _entries(path) == []


def test_a_damaged_step_checkpoint_is_named_and_its_sroa_starts_again(
    tmp_path, monkeypatch, reference
):
    values, total = reference
    monkeypatch.setenv(STEP_INTERVAL_ENV, "0")
    path = tmp_path / "d.zarr"
    task, layout = _store(path, _raw())
    _kill_mid_sroa(path, task, kill_at=3)
    (victim,) = _steps_files(path)
    data = bytearray(victim.read_bytes())
    data[-7] ^= 0x01
    victim.write_bytes(bytes(data))
    steps = StepKill(monkeypatch)
    with pytest.warns(SroaWarning, match=f"step checkpoint {victim}: damaged checkpoint"):
        _run_block(path, task)
    assert steps.proposes == total * 4  # the damaged one's SROA ran from its first step
    assert_same_bits(cube_values(path), values)


def test_the_step_interval_setting_is_checked_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv(STEP_INTERVAL_ENV, "soon")
    path = tmp_path / "e.zarr"
    task, _ = _store(path, _raw())
    info = _compute_and_write(str(path), task, None)
    assert STEP_INTERVAL_ENV in info.get("error", "") and "soon" in info["error"]


STEP_KILL_SPEC = """\
name = "journal-step-kill"
seed = 5
replicates = 1
[tensor]
n = 160
p = 3
basis = "identity"
[noise]
model = "attractor"
[solver]
method = "power"
[threshold]
criterion = "theorem"
c = 0.5
radius = 0.3
eps_range = [0.3, 0.32]
rtol = 0.05
matrix_free = true
"""


@pytest.mark.slow
def test_sigkill_of_a_cli_run_mid_sroa_continues_from_its_step_checkpoint(tmp_path, monkeypatch):
    """The real thing, one level down: `sroa-dist run` of a search whose evaluations are one
    matrix-free power SROA of 160 steps each, with a checkpoint after every step, SIGKILLed
    with its scheduler and workers once an SROA is saved past its 20th step; the same command
    again says where it continues, and the cube equals an uninterrupted search's (computed in
    this process, without checkpoints) bit for bit."""
    monkeypatch.setenv(STEP_INTERVAL_ENV, "0")  # the CLI's worker processes inherit it
    spec = tmp_path / "kill.toml"
    spec.write_text(STEP_KILL_SPEC)
    store = tmp_path / "k.zarr"
    args = ["run", str(spec), "--store", str(store), "--workers", "1"]
    args += ["--dashboard-address", ":0"]

    def saved_past_20() -> bool:
        for f in _steps_files(store):
            with contextlib.suppress(OSError, ValueError), f.open("rb") as fh:
                if checkpoint_header(fh.readline())[0] > 20:
                    return True
        return False

    sigkill_run_when(args, saved_past_20)
    assert not read_done(str(store)).any()
    again = run_cli(*args, timeout=600)
    assert "SROA in progress saved at step" in again.stderr + again.stdout
    monkeypatch.delenv(STEP_INTERVAL_ENV)
    ref = tmp_path / "ref.zarr"
    task, _ = _store(ref, tomllib.loads(STEP_KILL_SPEC))
    _run_block(ref, task)
    assert_same_bits(cube_values(store), cube_values(ref))
    assert _steps_files(store) == []
