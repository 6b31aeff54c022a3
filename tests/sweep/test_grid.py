"""Grid: block layout, per-instance seeding from coordinate values, block-size invariance."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sroa_dist.sweep import load_spec
from sroa_dist.sweep.kinds import make_layout
from sroa_dist.sweep.layout import Layout, block_task, chunks_for_block_size, stable_hash32
from sroa_dist.sweep.run.worker import compute_block
from tests.support.helpers import ROOT


def test_stable_hash_is_pinned():
    """Changing these values silently changes every stored result: they are part of the
    reproducibility contract."""
    assert stable_hash32("n", 10) == stable_hash32("n", np.int64(10))
    assert stable_hash32("sigma", 0.1 + 0.2) == stable_hash32("sigma", 0.3)
    assert stable_hash32("noise", "gaussian") == 2783822724
    assert stable_hash32("sigma", 0.01) == 3742713962


def test_chunks_fill_innermost_dims_first():
    assert chunks_for_block_size((3, 500), 100) == (1, 100)
    assert chunks_for_block_size((3, 2000, 1), 256) == (1, 250, 1)
    assert chunks_for_block_size((3, 500), 120) == (1, 100)
    assert chunks_for_block_size((3, 10, 4), 8) == (1, 2, 4)
    assert chunks_for_block_size((3, 10, 4), 1000) == (3, 10, 4)
    assert chunks_for_block_size((5,), 1) == (1,)


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 7), min_size=1, max_size=4),
    block=st.integers(1, 60),
)
def test_blocks_tile_the_grid_exactly_once(shape, block):
    chunks = chunks_for_block_size(shape, block)
    layout = Layout(
        tuple(f"d{i}" for i in range(len(shape))),
        tuple(tuple(range(s)) for s in shape),
        chunks,
        1,
        1,
    )
    count = np.zeros(shape, dtype=int)
    for b in range(layout.n_blocks):
        region = layout.block_region(b)
        layout.check_aligned(region)  # every block is chunk-aligned by construction
        count[region] += 1
        assert layout.block_size(b) <= max(block, 1)
    assert (count == 1).all()


def test_check_aligned_refuses_partial_chunks():
    layout = Layout(("sigma", "replicate"), ((0.1, 0.2, 0.3), tuple(range(10))), (1, 4), 1, 1)
    with pytest.raises(ValueError, match="whole chunks"):
        layout.check_aligned((slice(0, 1), slice(2, 6)))
    with pytest.raises(ValueError, match="whole chunks"):
        layout.check_aligned((slice(0, 1), slice(0, 6)))
    layout.check_aligned((slice(0, 1), slice(8, 10)))  # the last, short chunk is whole


def test_seed_depends_on_values_not_positions():
    spec = load_spec(ROOT / "sweeps/smoke/figure1.toml")
    bigger = load_spec(
        ROOT / "sweeps/smoke/figure1.toml",
        ["noise.sigma=[0.005, 0.01, 0.05, 0.2]", "replicates=5"],
    )
    a, b = make_layout(spec), make_layout(bigger)
    (_, sa, ra) = next(iter(block_task(spec, a, 0).instances(spec)))
    found = [
        (s, r)
        for blk in range(b.n_blocks)
        for _, s, r in block_task(bigger, b, blk).instances(bigger)
        if s == sa and r == ra
    ]
    assert found, "sigma=0.01, replicate 0 must exist in both grids"
    assert sa.seed(spec.seed, ra).entropy == found[0][0].seed(bigger.seed, 0).entropy
    assert sa.seed(1, 0).spawn_key == found[0][0].seed(1, 0).spawn_key
    assert sa.seed(1, 0).spawn_key != sa.seed(1, 1).spawn_key
    other = dataclasses.replace(sa, method="power")
    # the method is not part of the key: methods compare on the same instances
    assert sa.seed(1, 0).spawn_key == other.seed(1, 0).spawn_key
    assert sa.seed(1, 0).spawn_key != dataclasses.replace(sa, level=0.02).seed(1, 0).spawn_key


def test_layout_of_figure_specs():
    f1 = make_layout(load_spec(ROOT / "sweeps/figure1.toml"), block_size=256)
    assert f1.dims == ("noise", "sigma", "replicate") and f1.shape == (3, 2000, 1)
    assert f1.chunks == (1, 250, 1) and f1.n_steps == 1 and f1.n_blocks == 24
    f2 = make_layout(load_spec(ROOT / "sweeps/figure2.toml"))
    assert f2.dims == ("noise", "replicate") and f2.shape == (3, 500) and f2.n_steps == 10
    assert f2.n_blocks <= 10_000


def test_default_block_size_gives_seconds_per_task():
    from sroa_dist.sweep.kinds import default_block_size

    spec = load_spec(ROOT / "sweeps/figure2.toml")
    cheap = load_spec(ROOT / "sweeps/figure2.toml", ["solver.method=power", "replicates=100000"])
    assert default_block_size(spec) < default_block_size(cheap)
    assert make_layout(cheap).n_blocks <= 10_000


def test_results_do_not_depend_on_block_size():
    """Cutting the grid into different blocks gives the same bits per instance (serial)."""
    spec = load_spec(ROOT / "sweeps/smoke/nscaling.toml", ["replicates=4"])
    whole = make_layout(spec, block_size=10_000)
    assert whole.n_blocks == 1
    ref = compute_block(block_task(spec, whole, 0)).data
    small = make_layout(spec, block_size=3)
    assert small.n_blocks > 1
    for b in range(small.n_blocks):
        region = small.block_region(b)
        got = compute_block(block_task(spec, small, b)).data
        for name, arr in got.items():
            if name == "solve_time":
                continue
            want = ref[name][region]
            assert np.array_equal(arr, want, equal_nan=arr.dtype.kind == "f"), name


def test_default_block_size_averages_over_axes_like_the_full_grid():
    """The O(axes) mean cost equals the mean over every grid point (enumerated here only)."""
    import itertools
    import math

    from sroa_dist.methods.cost import resolve_norm_method, solve_cost
    from sroa_dist.sweep.kinds import default_block_size
    from sroa_dist.sweep.layout import MAX_TASKS, MIN_TASK_SECONDS, TARGET_TASK_SECONDS

    spec = load_spec(
        ROOT / "sweeps/smoke/nscaling.toml",
        ['solver.method=["sshopm", "certified"]', "tensor.rank=[2, 3]", "replicates=7"],
    )
    ax = spec.axes
    costs = []
    for m, n, p, r in itertools.product(
        ax["solver.method"].values,
        ax["tensor.n"].values,
        ax["tensor.p"].values,
        ax["tensor.rank"].values,
    ):
        norm = resolve_norm_method(m, n, p, spec.solver.norm_method)
        costs.append(r * solve_cost(m, n, p) + solve_cost(norm, n, p))
    mean = sum(costs) / len(costs)
    total = make_layout(spec, block_size=1).n_instances
    size = max(
        min(TARGET_TASK_SECONDS / mean, total / 32), MIN_TASK_SECONDS / mean, total / MAX_TASKS, 1
    )
    assert default_block_size(spec) == int(min(math.ceil(size), total))


def test_memory_check_refuses_tasks_beyond_the_worker_limit(monkeypatch):
    from sroa_dist.sweep.kinds.tensor.kind import task_memory
    from sroa_dist.sweep.layout import WORKER_MEMORY_ENV, default_worker_memory
    from sroa_dist.sweep.spec.fields import SpecError

    spec = load_spec(ROOT / "sweeps/smoke/figure2.toml", ["tensor.n=64"])
    layout = make_layout(spec, memory_limit=float("inf"))
    parts = task_memory(spec, 1, "sshopm", 64, 3, "sshopm", layout.n_steps)
    assert parts["instances"] >= 5 * 8 * 64**3 and parts["solver"] > 8 * 64**3
    with pytest.raises(SpecError, match="'tensor.n'.*memory limit of 0.1 GiB"):
        make_layout(spec, memory_limit=100 * 2**20)
    monkeypatch.setenv(WORKER_MEMORY_ENV, "100MiB")
    assert default_worker_memory() == (100 * 2**20, f"${WORKER_MEMORY_ENV}")
    with pytest.raises(SpecError, match=f"\\${WORKER_MEMORY_ENV}"):
        make_layout(spec)
    monkeypatch.setenv(WORKER_MEMORY_ENV, "64GiB")
    make_layout(spec)
    monkeypatch.setenv(WORKER_MEMORY_ENV, "lots")
    with pytest.raises(SpecError, match=f"environment: key '{WORKER_MEMORY_ENV}'"):
        make_layout(spec)
    monkeypatch.delenv(WORKER_MEMORY_ENV)
    limit, origin = default_worker_memory(workers=4)
    assert 0 < limit and "/ 4 workers" in origin
    # The cases: n = 2000 (a 59.6 GiB tensor) and n = 99999 are refused, naming --set.
    for n in (2000, 99999):
        big = load_spec(ROOT / "sweeps/smoke/figure2.toml", [f"tensor.n={n}"])
        with pytest.raises(SpecError, match=f"^--set tensor.n={n}: key 'tensor.n'"):
            make_layout(big, memory_limit=64 * 2**30)


def test_parse_bytes():
    from sroa_dist.sweep.layout import parse_bytes

    assert parse_bytes("8GiB") == 8 * 2**30
    assert parse_bytes("500 MB") == 500 * 10**6
    assert parse_bytes("2e9") == 2 * 10**9
    with pytest.raises(ValueError, match="expected a size"):
        parse_bytes("lots")
