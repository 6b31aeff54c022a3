"""The block kernel (``sroa_dist.sweep.run.worker``) on its own: serial, no Dask, no store.

Entry points used (the kernel's stable surface): ``compute_block(task) -> BlockResult`` with
``.data`` / ``.n_instances`` / ``.index``, and ``draw_group(spec, [(settings, replicate)])``
with ``.instances`` / ``.T_hat`` / ``.eps`` / ``.lower`` / ``.upper`` / ``.lambdas``; tasks
come from ``grid.make_layout`` / ``grid.block_task`` and ``BlockTask.instances``.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest

from sroa_dist.sweep import load_spec
from sroa_dist.sweep.kinds import make_layout
from sroa_dist.sweep.kinds.tensor.block import draw_group
from sroa_dist.sweep.layout import block_task
from sroa_dist.sweep.run.worker import compute_block
from sroa_dist.sweep.spec.fields import SpecError
from tests.support.helpers import ROOT, assert_same_bits

SMOKE = ROOT / "sweeps" / "smoke"
#: n in {3, 4} x method in {power, sshopm} x eps_scaled in {0.25, 0.5, 1, 2} x 2 replicates;
#: uniform weights in [1, 2] and a random basis, so every instance has its own lambda_min.
NSCALING = SMOKE / "nscaling.toml"


def _cube(spec, block_size: int) -> dict[str, np.ndarray]:
    """Every block of the layout computed by the kernel and put at its region of the grid."""
    layout = make_layout(spec, block_size=block_size)
    cube: dict[str, np.ndarray] = {}
    for b in range(layout.n_blocks):
        task = block_task(spec, layout, b)
        res = compute_block(task)
        assert res.index == b and res.n_instances == int(np.prod(task.shape))
        region = layout.block_region(b)
        for name, arr in res.data.items():
            extra = arr.shape[len(region) :]
            full = cube.setdefault(name, np.zeros(layout.shape + extra, dtype=arr.dtype))
            full[region] = arr
    return cube


def _results(cube: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: v for k, v in cube.items() if k != "solve_time"}  # timings are not results


@pytest.fixture(scope="module")
def nscaling():
    spec = load_spec(NSCALING, ["replicates=2", "output.vectors=true"])
    return spec, _cube(spec, block_size=1)


@pytest.mark.slow
def test_a_block_is_the_concatenation_of_its_single_instance_blocks(nscaling):
    """One block of all 32 instances (batched core calls across the grid) equals 32 blocks of
    one instance each, bit for bit, and so does an uneven cut."""
    spec, single = nscaling
    assert make_layout(spec, block_size=1).n_blocks == 32
    assert make_layout(spec, block_size=32).n_blocks == 1
    assert_same_bits(_results(_cube(spec, block_size=32)), _results(single))
    assert_same_bits(_results(_cube(spec, block_size=6)), _results(single))


def test_an_instance_depends_only_on_seed_coordinates_and_replicate(nscaling):
    """Computing a block twice gives the same bits; the instances at (n = 4, eps_scaled = 1)
    are the same in a sweep that has only that grid point; another master seed changes them."""
    spec, full = nscaling
    layout = make_layout(spec, block_size=32)
    task = block_task(spec, layout, 0)
    assert_same_bits(_results(compute_block(task).data), _results(compute_block(task).data))

    sub_spec = load_spec(
        NSCALING, ["replicates=2", "output.vectors=true", "tensor.n=[4]", "noise.eps_scaled=[1.0]"]
    )
    sub = _cube(sub_spec, block_size=4)
    i_n, i_eps = layout.coord("n").index(4), layout.coord("eps_scaled").index(1.0)
    picked = {k: v[i_n : i_n + 1, :, i_eps : i_eps + 1] for k, v in _results(full).items()}
    assert_same_bits(_results(sub), picked)

    other = _cube(load_spec(NSCALING, ["replicates=2", "seed=8"]), block_size=32)  # no v_hat
    assert not np.array_equal(other["lam_hat"], full["lam_hat"], equal_nan=True)
    assert not np.array_equal(other["eps"], full["eps"])


def test_eps_scaled_is_theorem_3_1_scale(nscaling):
    """With ``noise.eps_scaled = c`` each E is scaled to ||E|| = c * lambda_min * n^(-1/(p-1))
    (p = 3: n^(-1/2)), lambda_min the instance's own smallest weight: the stored ``eps`` is
    that closed form to rounding (rtol 1e-12), and an independent certified bracket of
    ||T_hat - T|| contains it (rtol 1e-6)."""
    from sroa_dist import operator_norm

    spec, cube = nscaling
    layout = make_layout(spec, block_size=1)
    n = np.array(layout.coord("n"), dtype=float)[:, None, None, None]
    c = np.array(layout.coord("eps_scaled"))[None, None, :, None]
    lam_min = np.nanmin(cube["lam_true"], axis=-1)  # every weight is matched to a step
    target = c * lam_min * n ** (-1.0 / 2)
    np.testing.assert_allclose(cube["eps"], target, rtol=1e-12, atol=0)
    assert (cube["eps_lower"] <= cube["eps"]).all() and (cube["eps"] <= cube["eps_upper"]).all()

    task = block_task(spec, make_layout(spec, block_size=32), 0)
    members = [(s, rep) for _, s, rep in task.instances(spec) if s.method == "sshopm"]
    for n_value in (3, 4):
        group = [(s, rep) for s, rep in members if s.n == n_value]
        drawn = draw_group(spec, group)
        for (s, _), inst, T_hat, eps in zip(
            group, drawn.instances, drawn.T_hat, drawn.eps, strict=True
        ):
            expect = s.level * np.abs(inst.lambdas).min() * s.n ** (-0.5)
            assert eps == pytest.approx(expect, rel=1e-12)
            bracket = operator_norm(T_hat - inst.T, "certified", rng=0)
            assert bracket.lower <= expect * (1 + 1e-6) and expect <= bracket.upper * (1 + 1e-6)


def test_steps_and_components_past_an_instance_are_fill_values(nscaling):
    """The grid holds n = 3 and n = 4: an n = 3 instance records three steps; its fourth step
    and the fourth component of its vectors are NaN (``certified`` False), while n = 4 fills
    all four."""
    _, cube = nscaling
    small, large = cube["lam_hat"][0], cube["lam_hat"][1]
    assert np.isfinite(small[..., :3]).all() and np.isnan(small[..., 3]).all()
    assert np.isfinite(large).all()
    assert not cube["certified"][0][..., 3].any()
    assert np.isnan(cube["v_hat"][0][..., 3]).all() and np.isnan(cube["v_hat"][0][..., 3, :]).all()
    assert np.isfinite(cube["v_hat"][0][..., :3, :3]).all() and np.isfinite(cube["v_hat"][1]).all()
    for name in ("eps", "eps_lower", "eps_upper", "thm22_lam_bound", "thm22_vec_bound"):
        assert np.isfinite(cube[name]).all(), name


def test_vectors_are_recorded_where_asked():
    """``[output] vectors``: v_hat holds each step's unit vector (noise, replicate, step,
    component)."""
    spec = load_spec(SMOKE / "figure2.toml", ["replicates=2"])
    cube = _cube(spec, block_size=3)
    v = cube["v_hat"]
    assert v.shape == (3, 2, 4, 4)  # noise, replicate, step, component
    np.testing.assert_allclose(np.linalg.norm(v, axis=-1), 1.0, rtol=1e-12)


def test_a_task_the_kernel_cannot_compute_raises_and_returns_nothing():
    """A failure is the whole block's: compute_block raises (the execution layer records the
    block as failed) rather than returning a partly filled block."""
    spec = load_spec(NSCALING, ["replicates=2"])
    task = block_task(spec, make_layout(spec, block_size=4), 0)
    data = json.loads(task.spec_json)
    data["tensor"]["p"] = 1  # no such tensor order: the spec in the task is refused
    bad = dataclasses.replace(task, spec_json=json.dumps(data))
    with pytest.raises(SpecError, match="tensor.p"):
        compute_block(bad)


def _ignored_signals(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        line = next(x for x in f if x.startswith("SigIgn:"))
    return int(line.split()[1], 16)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc")
def test_embedded_workers_ignore_sigint_from_their_start(tmp_path):
    """The terminal's Ctrl-C reaches the whole process group: the embedded cluster's worker
    processes start with SIGINT ignored (not merely blocked, which Python's process start
    clears), so one that is still importing prints no KeyboardInterrupt traceback; the
    launcher that makes it so is gone afterwards and this process's SIGINT is left alone."""
    import multiprocessing.spawn as mp_spawn
    import signal

    from sroa_dist.sweep.run.cluster import _embedded

    before = mp_spawn.get_executable()
    handler = signal.getsignal(signal.SIGINT)
    with _embedded(1, ":0", None) as client:
        pids = client.run(os.getpid)
        assert pids
        for pid in pids.values():
            assert _ignored_signals(pid) & (1 << (signal.SIGINT - 1)), pid
    assert mp_spawn.get_executable() == before
    assert signal.getsignal(signal.SIGINT) is handler
    assert not signal.pthread_sigmask(signal.SIG_BLOCK, set()) & {signal.SIGINT}


def test_a_spec_is_validated_once_per_worker_not_per_task(tmp_path, monkeypatch):
    """Two blocks of one sweep and a block's certificate file: one parse of the spec."""
    from sroa_dist.sweep.kinds import KINDS, registry
    from sroa_dist.sweep.store.certificate_files import write_certificates

    spec = load_spec(ROOT / "sweeps" / "smoke" / "figure2.toml", ["replicates=2"])
    layout = make_layout(spec, block_size=1)
    tasks = [block_task(spec, layout, b) for b in range(2)]
    tensor = KINDS["tensor"]
    calls = []
    parse = tensor.parse
    monkeypatch.setattr(
        tensor, "parse", lambda raw, source: calls.append(source) or parse(raw, source)
    )
    registry._spec_of_task.cache_clear()  # this process may have parsed the spec before
    for task in tasks:
        compute_block(task)
    write_certificates(str(tmp_path / "c.zarr"), tasks[0], {})
    assert calls == ["<block task>"]
    registry._spec_of_task.cache_clear()
