"""The SDP driver seam of the moment relaxation: SCS results are bit for bit those recorded
before the seam existed, and a second driver (dense Clarabel) gives the same validated bound
and an SOS certificate that verifies.

Regenerate the recorded SCS results (only when a numerical change is intended, and say so in
the commit):  python tests/core/test_relaxation_driver.py --write
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from sroa_dist.relaxation import (
    SCS,
    SOLVE_OPTIONS,
    MomentRelaxation,
    Schedule,
    SdpIterate,
    SdpProblem,
    get_relaxation,
    option_rules,
)
from sroa_dist.relaxation.clarabel_driver import (
    CLARABEL,
    CLARABEL_SETTING_RULES,
    DEFAULT_CLARABEL_SETTINGS,
)
from sroa_dist.relaxation.scs_driver import (
    DEFAULT_SCS_SETTINGS,
    SCS_SETTING_RULES,
    WARMUP_SCS_SETTINGS,
)
from sroa_dist.tensors import rank_one_tensor
from tests.support.helpers import DATA, ROOT, require_recorded_blas_kernel

PKG = ROOT / "sroa_dist" / "relaxation"

GOLDEN = DATA / "relaxation_scs_golden.npz"

#: Fixed instances: (name, n, p, noise level, seed). Nearly SOD with unit weights, the regime
#: of the sweeps; two deflation steps each.
INSTANCES = [("p3n6", 6, 3, 0.05, 11), ("p3n10", 10, 3, 0.05, 12), ("p4n6", 6, 4, 0.05, 13)]
STEPS = 2
#: Option sets of MomentRelaxation.solve_abs that reach every branch of the chunk loop: the
#: certified method's (stop at 0.9 of GAP_TOL, certificate attached), the default solve, the
#: full solve without a warm-up, and an early stop (an unconverged SCS dual, repaired).
OPTIONS = {
    "certified": {"gap_tol": 0.9e-6, "with_certificate": True},
    "default": {"with_certificate": True},
    "full": {"warmup_iters": 0, "with_certificate": True, "gap_tol": 0.0, "max_iters": 60},
    "early": {"warmup_iters": 3, "fallback": False, "with_certificate": True, "gap_tol": 0.0},
}
FLOATS = ("value", "upper_bound", "fx", "rank_ratio", "dual_margin", "x")
CERT = ("signs", "bounds", "exponents", "gram", "h_exponents", "h_coefs")


def sym(A):
    p = A.ndim
    return sum(np.transpose(A, q) for q in itertools.permutations(range(p))) / math.factorial(p)


def instance(n, p, sigma, seed):
    rng = np.random.default_rng(seed)
    T = np.zeros((n,) * p)
    for i in range(n):
        T[(i,) * p] = 1.0
    return T + sym(sigma * rng.standard_normal((n,) * p))


def record(**solve_kw) -> dict[str, np.ndarray]:
    """Every output of solve_abs along two explicit deflation steps of each instance, per
    option set, as a flat dict of arrays (floats compared bit for bit)."""
    out: dict[str, np.ndarray] = {}
    for (name, n, p, sigma, seed), (oname, opts) in itertools.product(INSTANCES, OPTIONS.items()):
        T = instance(n, p, sigma, seed)
        rel = get_relaxation(n, p)
        for k in range(STEPS):
            r = rel.solve_abs(T, **opts, **solve_kw)
            key = f"{name}/{oname}/{k}"
            for f in FLOATS:
                out[f"{key}/{f}"] = np.asarray(getattr(r, f), dtype=float)
            out[f"{key}/sdp_value"] = np.asarray(_sdp_value(r), dtype=float)
            out[f"{key}/ints"] = np.array([r.sign, r.iterations, int(r.flat)])
            out[f"{key}/strings"] = np.array([r.certificate, r.status])
            cert = r.sos_certificate
            out[f"{key}/has_cert"] = np.array(cert is not None)
            for f in CERT if cert is not None else ():
                out[f"{key}/cert/{f}"] = np.asarray(getattr(cert, f))
            lam = r.sign * r.fx
            T = T - rank_one_tensor(lam, r.x, p)  # the step's explicit deflation
    return out


def _sdp_value(r):
    # The field was named scs_value before the driver seam; either name reads the same number.
    return r.sdp_value if hasattr(r, "sdp_value") else r.scs_value


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_scs_results_are_bit_for_bit_those_recorded_before_the_driver_seam():
    """Sweeps are compared bit for bit after a resume, so the SCS path must not move: every
    float (x, bounds, values, certificate arrays) equals the recorded one exactly."""
    require_recorded_blas_kernel()
    want = np.load(GOLDEN)
    got = record()
    assert sorted(got) == sorted(want.files)
    diff = [k for k in want.files if not _same_bits(got[k], want[k])]
    assert diff == [], f"{len(diff)} recorded arrays changed, first: {diff[:5]}"


# ---- a second driver: Clarabel, dense, tiny n ----------------------------------------------

#: Small instances both drivers certify: (n, p, noise level, seed).
SMALL = [(4, 3, 0.05, 1), (5, 3, 0.1, 2), (4, 4, 0.05, 3), (3, 4, 0.3, 4)]


@pytest.mark.parametrize("n,p,sigma,seed", SMALL)
def test_clarabel_gives_the_same_validated_bound_and_a_certificate_that_verifies(n, p, sigma, seed):
    """The seam carries a second solver: from Clarabel's interior-point dual the relaxation
    builds the same face certificate (the same validated bound, to the certification gap) and
    the same SOS export, which Certificate.verify accepts."""
    T = instance(n, p, sigma, seed)
    scale = float(np.linalg.norm(T))
    rel = get_relaxation(n, p)
    by_scs = rel.solve_abs(T, with_certificate=True)
    by_clarabel = rel.solve_abs(T, with_certificate=True, driver=CLARABEL)
    for r in (by_scs, by_clarabel):
        assert r.gap <= 1e-9 * scale
        cert = r.sos_certificate
        verified = cert.verify(T)
        # verify is a rigorous bound whatever the arrays say; honest ones exceed U by rounding
        assert verified >= r.fx - 1e-12 * scale
        assert verified - r.upper_bound <= 1e-9 * scale
    assert by_clarabel.upper_bound == pytest.approx(by_scs.upper_bound, abs=2e-9 * scale)
    assert by_clarabel.fx == pytest.approx(by_scs.fx, abs=1e-12 * scale)
    assert abs(by_clarabel.x @ by_scs.x) == pytest.approx(1.0, abs=1e-9)
    assert by_clarabel.certificate == "face" and by_clarabel.iterations > 0


def test_clarabel_settings_are_its_own():
    rel = get_relaxation(3, 3)
    T = instance(3, 3, 0.05, 5)
    with pytest.raises(ValueError, match="valid Clarabel settings"):
        rel.solve(T, driver=CLARABEL, eps_abs=1e-9)  # an SCS setting
    r = rel.solve(T, driver=CLARABEL, max_iter=1)  # one interior-point step: far from optimal
    assert r.iterations <= 1 and r.upper_bound >= rel.solve(T).fx - 1e-12


# ---- the seam asks for a dual only, and trusts none ------------------------------------------


class DualOnly:
    """A driver that hands back SCS's duals without the primal moments (a dual-only method)."""

    name = "dual-only SCS"
    setting_rules = SCS.setting_rules

    def configure(self, settings):
        return SCS.configure(settings)

    def runs(self, problem, c, config, schedule):
        for it in SCS.runs(problem, c, config, schedule):
            yield dataclasses.replace(it, y=None, primal_objective=float("nan"))


class Garbage:
    """A driver whose duals and moments are noise: nothing it says can be trusted."""

    name = "garbage"
    setting_rules = {}

    def __init__(self, seed):
        self.seed = seed

    def configure(self, settings):
        return dict(settings)

    def runs(self, problem, c, config, schedule):
        rng = np.random.default_rng(self.seed)
        for _ in range(3):
            G = rng.standard_normal((problem.m, problem.m))
            yield SdpIterate(
                z_zero=rng.standard_normal(problem.n_zero),
                Z=G + G.T,
                iterations=1,
                status="noise",
                y=rng.standard_normal(problem.n_vars),
            )


def test_a_driver_without_primal_moments_still_certifies():
    """Only a dual is needed: without moments, candidates come from the tensor (Jennrich
    starts, fixed random starts) and the face certificate closes the gap as before."""
    for n, p, sigma, seed in SMALL:
        T = instance(n, p, sigma, seed)
        rel = get_relaxation(n, p)
        want = rel.solve_abs(T)
        got = rel.solve_abs(T, driver=DualOnly())
        assert got.gap <= 1e-9 * np.linalg.norm(T)
        assert got.fx == pytest.approx(want.fx, abs=1e-12)
        assert np.isnan(got.sdp_value) and np.isnan(got.rank_ratio)


@pytest.mark.parametrize("seed", range(3))
def test_noise_from_a_driver_gives_a_valid_bound_never_a_false_certificate(seed):
    """Planted T = sum_i w_i e_i^p: the maximum is max w_i in closed form. Random duals give
    a bound above it (validated, not trusted), and their export verifies above it too."""
    for p in (3, 4):
        n = 4
        w = np.array([1.0, 0.8, 0.6, 0.5])
        T = np.zeros((n,) * p)
        T[(np.arange(n),) * p] = w
        r = MomentRelaxation(n, p).solve_abs(T, driver=Garbage(seed), with_certificate=True)
        assert r.upper_bound >= 1.0
        assert r.fx <= 1.0 + 1e-12
        assert r.sos_certificate.verify(T) >= 1.0
        assert r.certificate in ("driver", "repaired", "face", "flattening")


def test_scs_accepts_the_moment_entries_in_any_order():
    """The problem names each entry's (row, col), so its order is the builder's business: SCS
    gets the same data, bit for bit, and hands back the same dual in the problem's order."""
    rel = get_relaxation(4, 3)
    pr = rel.problem
    perm = np.random.default_rng(0).permutation(len(pr.rows))
    shuffled = SdpProblem(
        A0=pr.A0,
        b0=pr.b0,
        entries=pr.entries[perm],
        rows=pr.rows[perm],
        cols=pr.cols[perm],
        m=pr.m,
        p=pr.p,
    )
    c = rel.objective(instance(4, 3, 0.05, 6), 1)
    sched = Schedule(warmup_iters=None, warmup_chunks=1, fallback=False, fallback_chunk=30)
    cfg = SCS.configure({})
    (a,) = SCS.runs(pr, c, cfg, sched)
    (b,) = SCS.runs(shuffled, c, cfg, sched)
    assert np.array_equal(a.Z, b.Z) and np.array_equal(a.z_zero, b.z_zero)
    assert np.array_equal(a.y, b.y)
    bad = dataclasses.replace(shuffled, rows=pr.rows[:-1], cols=pr.cols[:-1])
    with pytest.raises(ValueError, match="lower-triangle entries"):
        next(SCS.runs(bad, c, cfg, sched))


# ---- settings from one place, SCS names in one module ---------------------------------------


def test_option_rules_list_the_solve_options_and_the_drivers_settings():
    """One table per driver: its rules accept its own defaults, and option_rules adds the
    solve options and the selection keys (what sweep specs and rank_one's option check
    read), by driver object or by name."""
    rules = option_rules()
    selection = {"driver", "device"}
    assert set(rules) == set(SOLVE_OPTIONS) | set(SCS_SETTING_RULES) | selection
    assert (
        set(option_rules(CLARABEL)) == set(SOLVE_OPTIONS) | set(CLARABEL_SETTING_RULES) | selection
    )
    assert option_rules("clarabel") == option_rules(CLARABEL)
    defaults = [
        (SCS_SETTING_RULES, DEFAULT_SCS_SETTINGS),
        *((SCS_SETTING_RULES, w) for w in WARMUP_SCS_SETTINGS.values()),
        (CLARABEL_SETTING_RULES, DEFAULT_CLARABEL_SETTINGS),
    ]
    for table, values in defaults:
        for key, value in values.items():
            rule = table[key]
            assert rule is None or rule[0](value), (key, value)
    assert not rules["max_iters"][0](0) and not rules["alpha"][0](2.0)


def _relative_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
    } | {
        a.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and not node.module
        for a in node.names
    }


def test_relaxation_imports_form_no_circle_and_scs_stays_in_its_driver():
    """bound and export read the relaxation's structure, not the class that solves it (no
    circle, not even under TYPE_CHECKING); only scs_driver.py imports SCS or reads its result
    dictionary."""
    mods = {p.stem: _relative_imports(p) for p in PKG.glob("*.py") if p.stem != "__init__"}
    assert "core" not in mods["bound"] | mods["export"] | mods["structure"]

    def reaches(a, b, seen=()):
        return any(d == b or (d not in seen and reaches(d, b, (*seen, d))) for d in mods.get(a, ()))

    assert [m for m in mods if reaches(m, m)] == []
    scs_words = re.compile(r"^\s*(import scs|from scs)|\[\"(info|pobj|status_val)\"\]", re.M)
    outside = [p.name for p in PKG.glob("*.py") if p.name != "scs_driver.py"]
    assert [n for n in outside if scs_words.search((PKG / n).read_text())] == []
    assert scs_words.search((PKG / "scs_driver.py").read_text())


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    np.savez_compressed(GOLDEN, **record())
    print(f"wrote {GOLDEN}")


# ---- a new driver is one module: tests/support/toy_driver.py ----------------------------

ZERO_DUAL = "tests.support.toy_driver:ZERO_DUAL"


def _nearly_sod():
    from sroa_dist import make_instance

    return make_instance(4, 3, noise="gaussian", sigma=0.01, rng=0).T_hat


@pytest.mark.parametrize("method", ["sos", "certified"])
def test_a_driver_module_named_by_import_path_bounds_a_step(method):
    """The toy driver yields only the zero dual: the relaxation validates its bound as any
    other (valid, looser than SCS's, never certified) and records which driver bounded it."""
    from sroa_dist import rank_one

    T = _nearly_sod()
    toy = rank_one(T, method, relaxation={"driver": ZERO_DUAL, "label": "toy"})
    scs = rank_one(T, method)
    assert toy.relaxation == f"{ZERO_DUAL}/cpu" and scs.relaxation == "scs/cpu"
    assert scs.certified and not toy.certified
    assert toy.upper_bound >= scs.upper_bound - 1e-12 >= abs(toy.lam) - 1e-12
    with pytest.raises(ValueError, match=r"relaxation.*unknown keys \['max_iters'\].*label"):
        rank_one(T, method, relaxation={"driver": ZERO_DUAL, "max_iters": 5})


@pytest.mark.parametrize("method", ["sos", "certified"])
def test_a_relaxation_table_is_parsed_once_per_rank_one_call(monkeypatch, method):
    """The option check parses and checks the table (driver, device, every key); the solve
    reads what it parsed instead of selecting the driver again."""
    from sroa_dist import rank_one
    from sroa_dist import relaxation as R
    from sroa_dist.relaxation import drivers

    parsed = []
    real = drivers.selection

    def counting(table):
        parsed.append(dict(table or {}))
        return real(table)

    monkeypatch.setattr(R, "selection", counting)
    monkeypatch.setattr(drivers, "selection", counting)
    table = {"driver": "scs", "device": "cpu", "polish_steps": 8}
    res = rank_one(_nearly_sod(), method, relaxation=table)
    assert parsed == [table] and res.relaxation == "scs/cpu" and res.certified
    assert table == {"driver": "scs", "device": "cpu", "polish_steps": 8}  # not consumed


def test_the_default_driver_is_named_in_one_place():
    """``relaxation.DEFAULT_DRIVER`` is what a table without ``driver``, an option check and
    a solve without a driver all fall back on."""
    from sroa_dist.relaxation import DEFAULT_DRIVER, default_driver, option_rules, selection
    from sroa_dist.relaxation.drivers import driver_entry

    assert selection({}) == (DEFAULT_DRIVER, "cpu")
    assert option_rules() == option_rules(DEFAULT_DRIVER)
    assert type(default_driver()) is type(driver_entry(DEFAULT_DRIVER).make("cpu"))
    T = _nearly_sod()
    rel = get_relaxation(4, 3)
    assert rel.solve_abs(T).upper_bound == rel.solve_abs(T, driver=default_driver()).upper_bound


def test_a_registered_driver_is_chosen_by_name_and_the_builtins_stay():
    from sroa_dist import rank_one
    from sroa_dist.relaxation import DRIVERS, register_driver
    from sroa_dist.relaxation.drivers import unregister_driver
    from tests.support.toy_driver import ZERO_DUAL as driver

    register_driver("zero-dual", driver)
    try:
        assert "zero-dual" in DRIVERS
        res = rank_one(_nearly_sod(), "sos", relaxation={"driver": "zero-dual"})
        assert res.relaxation == "zero-dual/cpu" and not res.certified
        with pytest.raises(ValueError, match="already registered"):
            register_driver("zero-dual", driver)
        with pytest.raises(ValueError, match="runs on cpu"):
            rank_one(_nearly_sod(), "sos", relaxation={"driver": "zero-dual", "device": "cuda"})
    finally:
        unregister_driver("zero-dual")
    with pytest.raises(ValueError, match="built in"):
        register_driver("scs", driver)
    with pytest.raises(ValueError, match=r"lacks \['setting_rules', 'configure', 'runs'\]"):
        register_driver("nothing", type("NotADriver", (), {"name": "x"})())
    assert "zero-dual" not in DRIVERS


@pytest.mark.slow
def test_a_driver_module_runs_in_a_sweep_on_real_workers(tmp_path, client):
    """A spec names the driver by import path; the workers import it where the blocks run."""
    from sroa_dist.sweep import open_results, run_sweep

    spec = {
        "name": "toy-driver",
        "seed": 3,
        "replicates": 2,
        "tensor": {"n": 3, "p": 3},
        "noise": {"model": "gaussian", "sigma": 0.01},
        "solver": {
            "method": "certified",
            "options": {"certified": {"relaxation": {"driver": ZERO_DUAL}}},
            "norm_method": "sshopm",
        },
    }
    res = run_sweep(spec, tmp_path / "toy.zarr", client=client, block_size=1)
    assert res.complete
    ds = open_results(tmp_path / "toy.zarr")
    assert not bool(ds["certified"].isel(step=0).any())  # the zero dual bounds loosely
    lam = np.abs(ds["lam_hat"].values)
    assert np.all(ds["upper_bound"].values >= lam - 1e-12)
