"""Method revisions: ``sshopm`` revision 2 (abandoned starts) keeps its best values, revision 3
(the packed kernel) revision 2's steps up to rounding (tests/core/test_ascent_kernels.py), revision
4 (confirmation by exploration, spectral starts on every path) finds at least the values of revision
3, revisions 1-3 are reproduced bit for bit by their legacy options (explicit and implicit
deflation, matrix-free operators), and a sweep store keeps computing with the revisions it was made
with (a store made before revisions were recorded: revision 1)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import zarr

import sroa_dist as sd
from sroa_dist.methods.records import METHODS, OptionError, check_options
from sroa_dist.sweep import run_sweep
from sroa_dist.sweep.kinds import spec_from_dict
from sroa_dist.sweep.spec.fields import SpecError
from sroa_dist.sweep.store.integrity import forget_blocks
from sroa_dist.sweep.store.prepare import read_done
from sroa_dist.sweep.store.target import StoreIncompatibleError
from sroa_dist.tensors import rank_one_tensor
from tests.support.helpers import DATA, assert_same_bits, cube_values, require_recorded_blas_kernel

#: sroa_batch(method="sshopm") outputs of the code before revision 2 (2026-11-26, commit
#: 3f4db0c): Figure-2-like tensors (n = 10, p = 3) and n = 6, p = 4 ones.
GOLDEN = DATA / "sshopm_revision1.npz"
#: The same tensors through the code before revision 3 (2026-11-26, commit cef0b1e).
GOLDENS = {1: GOLDEN, 2: DATA / "sshopm_revision2.npz"}
#: The code before revision 4 (2026-11-27, commit 59abfe9): the revision-2 golden's tensors
#: through explicit and implicit deflation, SROA of a matrix-free coherent tilt (p = 4,
#: n = 12, ε = 0.3; its basis and weights stored), and a tilt + Gaussian draw (n = 6, p = 3,
#: σ = 1, rng = 2), whose background weight comes from sshopm norm estimates.
GOLDEN_3 = DATA / "sshopm_revision3.npz"


#: sroa_batch(method="certified") of the same code: certified results keep their bits across
#: sshopm revisions (its candidate runs revision 1's ascent; the final bits are what is checked).
CERTIFIED_GOLDEN = DATA / "certified_revision1.npz"


def _sroa(T: np.ndarray, **options):
    return sd.sroa_batch(T, method="sshopm", rng=list(range(len(T))), **options)


@pytest.mark.parametrize("revision", [1, 2])
@pytest.mark.parametrize("p", [3, 4])
def test_legacy_options_reproduce_the_old_code_bit_for_bit(p, revision):
    g = np.load(GOLDENS[revision])
    res = _sroa(g[f"p{p}_T"], **METHODS["sshopm"].options_at(revision))
    assert np.array_equal(res.lambdas.view(np.int64), g[f"p{p}_lambdas"].view(np.int64))
    assert np.array_equal(res.vectors.view(np.int64), g[f"p{p}_vectors"].view(np.int64))
    assert np.array_equal(np.stack([s.n_starts for s in res.steps], 1), g[f"p{p}_n_starts"])
    assert np.array_equal(res.n_best, g[f"p{p}_n_best"])
    assert np.array_equal(res.confirmed, g[f"p{p}_confirmed"])


@pytest.mark.parametrize("deflation", ["explicit", "implicit"])
@pytest.mark.parametrize("p", [3, 4])
def test_revision_3_is_reproduced_bit_for_bit(p, deflation):
    g, T = np.load(GOLDEN_3), np.load(GOLDENS[2])[f"p{p}_T"]
    res = _sroa(T, deflation=deflation, **METHODS["sshopm"].options_at(3))
    key = f"p{p}_{deflation}"
    assert np.array_equal(res.lambdas.view(np.int64), g[f"{key}_lambdas"].view(np.int64))
    assert np.array_equal(res.vectors.view(np.int64), g[f"{key}_vectors"].view(np.int64))
    assert np.array_equal(np.stack([s.n_starts for s in res.steps], 1), g[f"{key}_n_starts"])
    assert np.array_equal(res.n_best, g[f"{key}_n_best"])
    assert np.array_equal(res.confirmed, g[f"{key}_confirmed"])


def test_revision_3_on_an_operator_is_reproduced_bit_for_bit():
    """Revisions 1-3 ran spectral starts on matrix-free operators only (n_spectral =
    'operators'): the operator's SROA keeps its bits."""
    g = np.load(GOLDEN_3)
    op = sd.structured_tensor(4, g["mf_lam"], V=g["mf_V"], family="coherent-tilt", eps=0.3)
    res = sd.sroa(op, method="sshopm", rng=3, **METHODS["sshopm"].options_at(3))
    assert np.array_equal(res.lambdas.view(np.int64), g["mf_lambdas"].view(np.int64))
    assert np.array_equal(res.vectors.view(np.int64), g["mf_vectors"].view(np.int64))
    assert np.array_equal(np.array([s.n_starts for s in res.steps]), g["mf_n_starts"])


def test_a_mixture_instance_does_not_follow_the_current_revision():
    """Drawing a mixture estimates its parts' norms with sshopm: that is part of the instance,
    so it runs revision 3 whatever the current one is, and a store's instances stay the same."""
    g = np.load(GOLDEN_3)
    inst = sd.make_instance(
        6,
        3,
        basis="random",
        lambdas=[1, 1, 1, 1, 1, 0.95],
        noise="coherent-tilt+gaussian",
        sigma=1.0,
        rng=2,
    )
    assert np.array_equal(inst.E.view(np.int64), g["mixture_E"].view(np.int64))


@pytest.mark.parametrize("p", [3, 4])
def test_later_revisions_find_the_same_components_with_fewer_starts(p):
    """Abandoning starts far below the best (revision 2) changes no step of these SROAs (the
    measured property behind the default), and the confirming sets it saves are real; the
    packed kernel (revision 3) changes only rounding."""
    g = np.load(GOLDEN)
    res = _sroa(g[f"p{p}_T"], **METHODS["sshopm"].options_at(3))
    np.testing.assert_allclose(res.lambdas, g[f"p{p}_lambdas"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.vectors, g[f"p{p}_vectors"], rtol=0, atol=1e-10)
    used = np.stack([s.n_starts for s in res.steps], 1)
    assert used.sum() < g[f"p{p}_n_starts"].sum()


@pytest.mark.parametrize("p", [3, 4])
def test_revision_4_loses_no_step_of_revision_3(p):
    """Exploring before confirming, and spectral starts, can only add starts: every step of
    revision 4 reaches at least revision 3's value on the same residual, and is confirmed
    wherever revision 3's was."""
    T = np.load(GOLDENS[2])[f"p{p}_T"]
    new = _sroa(T)
    R, seeds, rev3 = T.copy(), list(range(len(T))), METHODS["sshopm"].options_at(3)
    for j in range(T.shape[1]):
        old = sd.rank_one_batch(R, "sshopm", rng=seeds, **rev3)
        now = sd.rank_one_batch(R, "sshopm", rng=seeds)
        assert np.all(np.abs(now.lam) >= np.abs(old.lam) - 1e-12)
        assert np.all(now.confirmed[old.confirmed])
        R = R - np.stack([rank_one_tensor(now.lam[b], now.x[b], p) for b in range(len(T))])
        np.testing.assert_allclose(new.lambdas[:, j], now.lam, rtol=0, atol=1e-12)


@pytest.mark.parametrize("p", [3, 4])
def test_certified_steps_keep_their_bits(p):
    require_recorded_blas_kernel()
    g = np.load(CERTIFIED_GOLDEN)
    res = sd.sroa_batch(g[f"p{p}_T"], method="certified", rng=[0, 1, 2])
    assert res.certified.all() and np.array_equal(res.certified, g[f"p{p}_certified"])
    assert np.array_equal(res.lambdas.view(np.int64), g[f"p{p}_lambdas"].view(np.int64))
    assert np.array_equal(res.vectors.view(np.int64), g[f"p{p}_vectors"].view(np.int64))


def test_abandoned_starts_stop_a_late_step_early():
    """The last SROA step: one component left plus noise. Starts that fall into the flat
    region wander for up to max_iter iterations unless abandoned; the answer is the same."""
    g = np.load(GOLDEN)
    T = g["p3_T"]
    lam, vec = g["p3_lambdas"], g["p3_vectors"]
    R = T - sum(rank_one_tensor(lam[:, j], vec[:, :, j], 3) for j in range(9))
    kept = sd.rank_one_batch(R, "sshopm", rng=list(range(len(R))), abandon_margin=math.inf)
    cut = sd.rank_one_batch(R, "sshopm", rng=list(range(len(R))))
    np.testing.assert_array_equal(cut.lam, kept.lam)
    assert cut.n_iter.sum() < 0.7 * kept.n_iter.sum()


def test_abandon_margin_is_checked():
    assert check_options("sshopm", {"abandon_margin": math.inf})["abandon_margin"] == math.inf
    with pytest.raises(OptionError, match="abandon_margin"):
        check_options("sshopm", {"abandon_margin": -0.1})


def test_only_known_revisions_run():
    before_10 = {"integer_powers": "pow"}  # test_large_n.py
    before_9 = {"spectral_tol": 1e-10, "spectral_precision": "double", **before_10}  # (same)
    before_8 = {"deflation_block": None, "lanczos": "lockstep", **before_9}  # (same file)
    before_7 = {"shared_check": False, "polish_rtol": 1e-14, **before_8}  # (same file)
    before_6 = {"spectral_low_dim": None, **before_7}  # the bounded lower end (same file)
    before_5 = {"engine": "dense", **before_6}  # the large-n engine (same file)
    before_4 = {"confirm": "settle", "n_spectral": "operators", **before_5}
    assert METHODS["sshopm"].revision == 10
    assert METHODS["sshopm"].options_at(10) == {} == METHODS["sshopm"].options_at(None)
    assert METHODS["sshopm"].options_at(9) == before_10
    assert METHODS["sshopm"].options_at(8) == before_9
    assert METHODS["sshopm"].options_at(7) == before_8
    assert METHODS["sshopm"].options_at(6) == before_7
    assert METHODS["sshopm"].options_at(5) == before_6
    assert METHODS["sshopm"].options_at(4) == before_5
    assert METHODS["sshopm"].options_at(3) == before_4
    assert METHODS["sshopm"].options_at(2) == {**before_4, "kernel": "symmetric"}
    with pytest.raises(ValueError, match="revision 11 cannot be reproduced"):
        METHODS["sshopm"].options_at(11)
    with pytest.raises(ValueError, match="revision 11"):
        sd.find_threshold(6, 3, rng=0, revisions={"sshopm": 11})


# ---------------------------------------------------------------------------------------------
# Sweeps pin the revisions of their store


def _spec(**solver):
    return spec_from_dict(
        {
            "name": "revisions",
            "seed": 7,
            "replicates": 4,
            "tensor": {"n": 10, "p": 3, "basis": "identity", "lambdas": 1.0},
            "noise": {"model": ["binary", "uniform", "gaussian"], "sigma": 0.01},
            "solver": {"method": "sshopm", "norm_method": "sshopm", **solver},
        }
    )


def _stored_solver(store: Path) -> dict:
    return json.loads(zarr.open_group(str(store), mode="r").attrs["spec"])["solver"]


@pytest.mark.slow
def test_a_store_keeps_the_revision_it_was_made_with(tmp_path, client):
    new, old, legacy = tmp_path / "new.zarr", tmp_path / "rev1.zarr", tmp_path / "legacy.zarr"
    run_sweep(_spec(), new, client=client, block_size=2)
    assert _stored_solver(new)["revisions"]["sshopm"] == METHODS["sshopm"].revision
    run_sweep(_spec(revisions={"sshopm": 1}), old, client=client, block_size=2)
    assert _stored_solver(old)["revisions"]["sshopm"] == 1
    # Not vacuous: the two revisions store different start statistics.
    assert not np.array_equal(cube_values(new)["n_best"], cube_values(old)["n_best"])

    # A store from before revisions were recorded: its spec has no [solver.revisions].
    run_sweep(_spec(revisions={"sshopm": 1}), legacy, client=client, block_size=2)
    group = zarr.open_group(str(legacy), mode="r+")
    raw = json.loads(group.attrs["spec"])
    del raw["solver"]["revisions"]
    group.attrs["spec"] = json.dumps(raw, sort_keys=True, separators=(",", ":"))
    n_blocks = len(read_done(str(legacy)))
    forget_blocks(str(legacy), list(range(n_blocks)))  # every block is computed again
    res = run_sweep(_spec(), legacy, client=client, block_size=2)
    assert res.action == "resumed" and res.blocks_computed == n_blocks
    assert_same_bits(cube_values(legacy), cube_values(old))

    # A spec that names another revision than its store's is refused, naming the key.
    with pytest.raises(StoreIncompatibleError, match=r"solver\.revisions\.sshopm"):
        run_sweep(_spec(revisions={"sshopm": 1}), new, client=client, block_size=2)


@pytest.mark.slow
def test_a_revision_2_store_resumes_with_revision_2(tmp_path, client):
    """A store made with revision 2 (the default before the packed kernel) and resumed by a
    spec that names no revision computes its missing blocks with revision 2, bit for bit."""
    rev2, rev3 = tmp_path / "rev2.zarr", tmp_path / "rev3.zarr"
    run_sweep(_spec(revisions={"sshopm": 2}), rev2, client=client, block_size=2)
    run_sweep(_spec(), rev3, client=client, block_size=2)
    whole = cube_values(rev2)
    # Not vacuous: the two revisions' cubes differ (in rounding).
    assert not np.array_equal(whole["lam_err"], cube_values(rev3)["lam_err"])
    n_blocks = len(read_done(str(rev2)))
    forget_blocks(str(rev2), [0, n_blocks - 1])
    res = run_sweep(_spec(), rev2, client=client, block_size=2)
    assert res.action == "resumed" and res.blocks_computed == 2
    assert _stored_solver(rev2)["revisions"]["sshopm"] == 2
    assert_same_bits(cube_values(rev2), whole)


def test_a_spec_names_only_known_revisions():
    with pytest.raises(SpecError, match=r"solver\.revisions\.sshopm"):
        _spec(revisions={"sshopm": 11})
    with pytest.raises(SpecError, match=r"solver\.revisions\.nosuch"):
        _spec(revisions={"nosuch": 1})
    legacy = {
        "abandon_margin": math.inf,
        "kernel": "dense",
        "confirm": "settle",
        "n_spectral": "operators",
        "engine": "dense",
        "spectral_low_dim": None,
        "shared_check": False,
        "polish_rtol": 1e-14,
        "deflation_block": None,
        "lanczos": "lockstep",
        "spectral_tol": 1e-10,
        "spectral_precision": "double",
        "integer_powers": "pow",
    }
    assert _spec(revisions={"sshopm": 1}).options_for("sshopm") == legacy
    assert _spec().options_for("sshopm") == {}


def test_a_threshold_search_runs_the_revision_it_is_given(monkeypatch):
    import sroa_dist.studies.threshold as ts

    seen = []
    real = ts.sroa_batch

    def spy(*args, **kwargs):
        seen.append(kwargs.get("abandon_margin"))
        return real(*args, **kwargs)

    monkeypatch.setattr(ts, "sroa_batch", spy)
    a = sd.find_threshold(6, 3, rng=3, revisions={"sshopm": 1}, rtol=0.1)
    assert seen and set(seen) == {math.inf}
    seen.clear()
    b = sd.find_threshold(6, 3, rng=3, rtol=0.1)
    assert seen and set(seen) == {None}
    assert a.bracket == b.bracket  # the same components either way on this instance
