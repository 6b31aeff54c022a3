"""Rank-one solvers: every registered method on planted solutions, closed forms and exhaustive
search; batching and seeding."""

import itertools

import numpy as np
import pytest
import scipy.optimize

from sroa_dist import (
    METHODS,
    MethodOutput,
    identity_basis,
    noise_tensor,
    random_orthonormal_basis,
    rank_one,
    rank_one_batch,
    register_method,
    sod_tensor,
    symmetrize,
)
from sroa_dist.methods import (
    OptionError,
    check_options,
    memory_estimate,
    method_options,
    resolve_method,
)
from sroa_dist.methods.ascent import newton_polish
from sroa_dist.methods.builtin import moment_side
from sroa_dist.tensors import contract

ALL_METHODS = sorted(METHODS)
GLOBAL_METHODS = ["certified", "sos"]


def circle_max(T):
    """Exhaustive maximum of |T x^p| (odd p: T x^p) over 200 001 points of the unit circle."""
    theta = np.linspace(0.0, 2 * np.pi, 200_001)
    X = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    vals = contract(T[None], X[None], T.ndim)[0]
    return np.max(vals) if T.ndim % 2 else np.max(np.abs(vals))


def z_residual(T, x):
    p = T.ndim
    g = contract(T[None], x[None, None], p - 1)[0, 0]
    return np.linalg.norm(g - (g @ x) * x)


@pytest.mark.parametrize("method", ALL_METHODS)
@pytest.mark.parametrize("p", [3, 4, 5])
def test_planted_sod_component_is_found(method, p):
    n = 5
    V = random_orthonormal_basis(n, 4, rng=p)
    lam = np.array([1.0, 2.0, 1.5, 0.7])
    if p % 2 == 0:
        lam[1] = -2.5  # the largest |λ| has a negative sign: lam must keep it
    res = rank_one(sod_tensor(lam, V, p), method, rng=1)
    i = int(np.argmax(np.abs(lam)))
    assert res.lam == pytest.approx(lam[i], abs=1e-9)
    assert min(np.linalg.norm(res.x - V[:, i]), np.linalg.norm(res.x + V[:, i])) < 1e-7
    assert res.upper_bound >= abs(res.lam) - 1e-9
    assert res.method == method


@pytest.mark.parametrize("p", [3, 4])
def test_sshopm_returns_z_eigenpairs_of_general_tensors(p):
    rng = np.random.default_rng(5)
    for _ in range(5):
        T = symmetrize(rng.standard_normal((4,) * p))
        res = rank_one(T, "sshopm", rng=rng)
        assert abs(np.linalg.norm(res.x) - 1) < 1e-12
        assert z_residual(T, res.x) < 1e-9 * np.linalg.norm(T)
        assert res.lam == pytest.approx(contract(T[None], res.x[None, None], p)[0, 0], rel=1e-12)


@pytest.mark.parametrize("p", [3, 4])
def test_power_method_returns_z_eigenpairs_of_nearly_sod_tensors(p):
    """The unshifted robust power method is meant for nearly SOD inputs; there it converges
    (on general tensors it can cycle between two points, which is why it is only the baseline)."""
    rng = np.random.default_rng(6)
    for _ in range(5):
        V = random_orthonormal_basis(5, rng=rng)
        T = sod_tensor(rng.uniform(1, 2, 5), V, p) + noise_tensor("gaussian", 5, p, 0.01, rng=rng)
        res = rank_one(T, "power", rng=rng)
        assert z_residual(T, res.x) < 1e-8 * np.linalg.norm(T)
        assert res.lam == pytest.approx(contract(T[None], res.x[None, None], p)[0, 0], rel=1e-12)


@pytest.mark.parametrize("method", GLOBAL_METHODS)
@pytest.mark.parametrize("p", [3, 4])
@pytest.mark.slow
def test_global_methods_agree_with_exhaustive_search_on_the_circle(method, p):
    rng = np.random.default_rng(100 + p)
    for _ in range(6):
        T = symmetrize(rng.standard_normal((2,) * p))
        best = circle_max(T)
        res = rank_one(T, method, rng=0)
        assert abs(res.lam) == pytest.approx(best, abs=1e-7)
        assert res.upper_bound >= best - 1e-9  # the certificate is a true upper bound
        assert res.certified


@pytest.mark.parametrize("method", GLOBAL_METHODS)
def test_even_order_negative_extremum_keeps_its_sign(method):
    T = -sod_tensor(np.ones(3), identity_basis(3), 4) + 0.2 * sod_tensor(
        [1.0], np.ones((3, 1)) / np.sqrt(3), 4
    )
    res = rank_one(T, method, rng=0)
    assert res.lam < 0
    # Oracle: exhaustive search on a fine grid of the sphere, refined by a local solve. The
    # extremum sits near e_i (value -1 + 0.2/9 there) but the tilt moves it slightly.
    theta, phi = np.meshgrid(np.linspace(0, np.pi, 301), np.linspace(0, 2 * np.pi, 601))
    X = np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], -1)
    F = np.einsum("ijkl,...i,...j,...k,...l->...", T, X, X, X, X)
    start = X.reshape(-1, 3)[np.argmin(F)]

    def f(y):
        x = y / np.linalg.norm(y)
        return float(np.einsum("ijkl,i,j,k,l->", T, x, x, x, x))

    best = scipy.optimize.minimize(
        f, start, method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 1e-15, "maxiter": 20000}
    ).fun
    assert best < -(1.0 - 0.2 / 9)  # the tilt does move the extremum
    assert res.lam == pytest.approx(best, abs=1e-7)
    assert res.certified


def test_diagonal_tensor_closed_form_z_eigenpairs():
    """T = Σ e_i^{⊗3}: x_S = Σ_{i∈S} e_i/√|S| is a Z-eigenvector with λ = 1/√|S| for every S."""
    n = 4
    T = sod_tensor(np.ones(n), identity_basis(n), 3)
    rng = np.random.default_rng(0)
    for k in range(1, n + 1):
        for S in itertools.combinations(range(n), k):
            x = np.zeros(n)
            x[list(S)] = 1 / np.sqrt(k)
            assert z_residual(T, x) < 1e-14
            # Newton on the sphere from a nearby point lands on the same eigenpair.
            y = x + 1e-3 * rng.standard_normal(n)
            y /= np.linalg.norm(y)
            z = newton_polish(T[None], y[None])[0]
            lam = contract(T[None], z[None, None], 3)[0, 0]
            if k == 1:  # a local maximum: polishing must converge to it
                assert lam == pytest.approx(1 / np.sqrt(k), abs=1e-12)
    for method in GLOBAL_METHODS:
        res = rank_one(T, method, rng=0)
        assert res.lam == pytest.approx(1.0, abs=1e-9)
        assert res.certified and res.upper_bound == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("method", ALL_METHODS)
def test_batched_equals_one_at_a_time_bit_for_bit(method):
    T0 = sod_tensor(np.ones(5), identity_basis(5), 3)
    Ts = np.stack([T0 + noise_tensor("gaussian", 5, 3, 0.05, rng=s) for s in range(4)])
    seeds = [11, 12, 13, 14]
    batch = rank_one_batch(Ts, method, rng=seeds)
    for b in range(4):
        one = rank_one(Ts[b], method, rng=seeds[b])
        np.testing.assert_array_equal(batch.x[b], one.x)
        assert batch.lam[b] == one.lam and batch.upper_bound[b] == one.upper_bound
    again = rank_one_batch(Ts, method, rng=seeds)
    np.testing.assert_array_equal(again.x, batch.x)


def test_nearly_sod_n10_certified():
    T = sod_tensor(np.ones(10), identity_basis(10), 3) + noise_tensor(
        "gaussian", 10, 3, 0.01, rng=3
    )
    res = rank_one(T, "certified", rng=0)
    assert res.certified
    assert 0 <= res.upper_bound - res.lam <= 1e-6 * np.linalg.norm(T)
    loc = rank_one(T, "sshopm", rng=0)
    assert loc.lam <= res.lam + 1e-12


def test_bad_method_and_options_are_named():
    T = sod_tensor(np.ones(3), identity_basis(3), 3)
    with pytest.raises(ValueError, match="unknown rank-one method 'newton'.*certified"):
        rank_one(T, "newton")
    with pytest.raises(ValueError, match="does not accept \\['n_start'\\].*n_starts"):
        rank_one(T, "sshopm", n_start=3)
    with pytest.raises(ValueError, match="not symmetric"):
        rank_one(np.arange(27.0).reshape(3, 3, 3))
    assert "n_starts" in method_options("power")


@pytest.mark.parametrize(
    "method, options, option",
    [
        ("sshopm", {"n_starts": 0}, "n_starts"),
        ("certified", {"n_starts": 2.5}, "n_starts"),
        ("power", {"n_starts": True}, "n_starts"),
        ("sshopm", {"shift": "bogus"}, "shift"),
        ("sshopm", {"shift": float("nan")}, "shift"),
        ("certified", {"gap_tol": -1}, "gap_tol"),
        ("sshopm", {"tol": "small"}, "tol"),
        ("sshopm", {"polish": 1}, "polish"),
        ("power", {"n_iter": -1}, "n_iter"),
        ("sos", {"relaxation": {"max_iter": 5}}, "relaxation"),
        ("sos", {"relaxation": {"max_iters": -1}}, "relaxation"),
        ("certified", {"relaxation": {"alpha": 2.5}}, "relaxation"),
        ("certified", {"max_gram_size": 0}, "max_gram_size"),
        ("sos", {"order": 1}, "order"),  # below ceil(p/2) = 2 for p = 3
    ],
)
def test_option_values_are_checked_before_solving(method, options, option):
    """``check_options`` is the dry bind that both ``rank_one`` and spec validation use."""
    T = sod_tensor(np.ones(3), identity_basis(3), 3)
    with pytest.raises(OptionError, match=option) as info:
        check_options(method, options, n=3, p=3)
    assert info.value.option == option and info.value.method == method
    with pytest.raises(ValueError, match=option):
        rank_one(T, method, rng=0, **options)


def test_valid_options_pass_the_dry_bind_and_run():
    T = sod_tensor(np.ones(3), identity_basis(3), 3)
    good = {"n_starts": 1, "shift": 0.5, "tol": 0, "polish": False, "gap_tol": 0.0}
    assert check_options("sshopm", good, n=3, p=3) == good
    assert rank_one(T, "sshopm", rng=0, **good).lam == pytest.approx(1.0)
    check_options("sos", {"relaxation": {"max_iters": 100, "warmup_chunks": 1}}, n=3, p=3)


def test_sos_refuses_dimensions_its_moment_index_cannot_hold():
    with pytest.raises(OptionError, match="cannot index n = 30"):
        check_options("sos", {}, n=30, p=3)
    check_options("certified", {}, n=30, p=3)  # certified skips the relaxation there


def test_memory_estimate_grows_with_the_problem_and_covers_the_tensor():
    small = memory_estimate("sshopm", 10, 3)
    assert small >= 8 * 10**3
    assert memory_estimate("sshopm", 20, 3) > small
    assert memory_estimate("sshopm", 10, 3, batch=4) > small
    assert memory_estimate("sshopm", 2000, 3) > 8 * 2000**3
    assert memory_estimate("sos", 10, 3) > memory_estimate("sshopm", 10, 3)


def test_sshopm_with_zero_tolerance_stays_finite():
    """With tol = 0 no start ever counts as converged: rejected steps at machine precision must
    not grow the shift without bound (it is capped at the convexifying (p-1)·‖T‖_F)."""
    T = sod_tensor(np.ones(6), identity_basis(6), 4) + noise_tensor("gaussian", 6, 4, 0.05, rng=1)
    with np.errstate(over="raise", invalid="raise"):
        res = rank_one(T, "sshopm", rng=0, tol=0.0, max_iter=2000)
    assert np.isfinite(res.lam) and np.all(np.isfinite(res.x))
    assert z_residual(T, res.x) < 1e-10


def test_a_singular_newton_system_does_not_change_other_instances_bits():
    """At x = e2 for T = e1^{⊗3} the bordered Newton matrix is singular; the batch falls back
    per instance, so its neighbour's result equals its one-at-a-time result bit for bit."""
    T0 = sod_tensor([1.0], np.eye(3, 1), 3)
    T1 = sod_tensor(np.ones(3), identity_basis(3), 3) + noise_tensor("gaussian", 3, 3, 0.1, rng=0)
    Ts = np.stack([T0, T1])
    x = np.stack([np.eye(3)[1], np.ones(3) / np.sqrt(3)])
    K_singular = (
        np.linalg.matrix_rank(
            np.block([[np.zeros((3, 3)), -x[0][:, None]], [-x[0][None, :], np.zeros((1, 1))]])
        )
        < 4
    )
    assert K_singular
    batch = newton_polish(Ts, x)
    for b in range(2):
        np.testing.assert_array_equal(batch[b], newton_polish(Ts[b : b + 1], x[b : b + 1])[0])


# ---- the method registry and its result contract ---------------------------------------------


@pytest.fixture
def scratch_methods():
    """The method registry restored after the test (no method leaks into other tests)."""
    from sroa_dist.methods import records as method_records

    saved = dict(method_records._REGISTRY)
    yield
    method_records._REGISTRY.clear()
    method_records._REGISTRY.update(saved)


def _first_axis(Ts, rngs, *, scale: float = 1.0):
    """A trivial method: x = e_1 for every tensor (its option ``scale`` is ignored)."""
    B, n = Ts.shape[0], Ts.shape[1]
    x = np.zeros((B, n))
    x[:, 0] = 1.0
    none = np.zeros(B, dtype=np.int64)
    return MethodOutput(x=x, n_starts=none, n_iter=none, notes="trivial test method")


def test_a_registered_method_is_callable_by_name(scratch_methods):
    register_method("first-axis", _first_axis)
    assert "first-axis" in METHODS
    assert method_options("first-axis") == ["scale"]
    T = sod_tensor(np.array([2.0, 1.0, 0.5]), identity_basis(3), 3)
    r = rank_one(T, "first-axis", rng=0, scale=2.0)
    assert r.lam == 2.0  # T e_1^3, recomputed by the front door from x
    assert r.certified  # the unfolding bound of this SOD tensor is 2 as well
    assert r.message.endswith("; trivial test method")  # notes reach the message
    with pytest.raises(OptionError, match="does not accept"):
        rank_one(T, "first-axis", rng=0, n_starts=3)


def test_registering_twice_needs_overwrite(scratch_methods):
    register_method("first-axis", _first_axis)
    with pytest.raises(ValueError, match="(?s)already registered.*overwrite=True"):
        register_method("first-axis", _first_axis)
    with pytest.raises(ValueError, match="already registered"):
        register_method("sshopm", _first_axis)
    register_method("first-axis", _first_axis, overwrite=True)
    with pytest.raises(TypeError):
        METHODS["x"] = _first_axis  # a read-only view
    with pytest.raises(ValueError, match="callable"):
        register_method("nope", 3)


def test_registry_is_left_clean():
    # Runs after the tests above (file order): their methods are gone again.
    assert "first-axis" not in METHODS
    assert {"certified", "sos", "sshopm", "power"} <= set(METHODS)


def test_a_mapping_result_is_refused(scratch_methods):
    def legacy(Ts, rngs):
        out = _first_axis(Ts, rngs)
        return {"x": out.x, "n_starts": out.n_starts, "n_iter": out.n_iter}

    register_method("legacy", legacy)
    T = sod_tensor(np.ones(3), identity_basis(3), 3)
    with pytest.raises(TypeError, match="expected it to return a MethodOutput, received dict"):
        rank_one(T, "legacy", rng=0)


def test_certified_reports_a_skipped_relaxation_in_the_message():
    T = sod_tensor(np.ones(4), identity_basis(4), 3)
    r = rank_one(T, "certified", rng=0, max_gram_size=2)
    assert "relaxation skipped (moment matrix larger than 2)" in r.message


def test_the_relaxation_stops_at_the_certification_tolerance():
    """rank_one's gap_tol reaches the relaxation: a looser tolerance stops SCS sooner, a tighter
    one runs it longer, and every answer is certified within its own tolerance."""
    n = 4
    T = np.zeros((n,) * 3)
    T[(np.arange(n),) * 3] = 1.0  # max T x^3 = 1 at every e_i: a degenerate, slow relaxation
    fro = float(np.linalg.norm(T))
    runs = {g: rank_one(T, method="sos", gap_tol=g) for g in (1e-2, 1e-6, 1e-10)}
    iters = [int(runs[g].n_iter) for g in (1e-2, 1e-6, 1e-10)]
    assert iters[0] < iters[1] < iters[2]
    for g, r in runs.items():
        assert r.certified and r.lam == pytest.approx(1.0, abs=1e-9)
        assert 1.0 - 1e-12 <= r.upper_bound <= abs(r.lam) + g * fro
    # the relaxation's own option still wins over the passed tolerance
    own = rank_one(T, method="sos", gap_tol=1e-2, relaxation={"gap_tol": 1e-10})
    assert int(own.n_iter) == iters[2]


# --------------------------------------------------------------------------------------------
# Methods as records, and user methods by import path (tests/support/user_method.py)

#: The user methods of the tests, by import path.
USER = "tests.support.user_method"


def test_builtin_records_carry_what_policy_and_specs_ask():
    assert METHODS["certified"].global_steps and METHODS["sos"].global_steps
    assert not METHODS["sshopm"].global_steps and not METHODS["power"].global_steps
    assert METHODS["sshopm"].implicit and METHODS["power"].implicit
    assert not METHODS["certified"].implicit and not METHODS["sos"].implicit
    # The one size formula: homogeneous basis of degrees 1 and 2 at n = 10, p = 3 (10 + 55).
    assert moment_side(10, 3) == 65 and moment_side(10, 3, full=True) == 66
    assert moment_side(10, 4) == 55  # even p: degree 2 only
    assert METHODS["sos"].moment_side(10, 3, {}) == 65
    assert METHODS["certified"].moment_side(10, 3, {}) == 65
    assert METHODS["certified"].moment_side(60, 3, {}) is None  # relaxation skipped there
    assert METHODS["sshopm"].moment_side is None
    # Costs: the relaxation methods pay for it where they solve it, local methods never.
    assert METHODS["sos"].cost(10, 3, {}) > METHODS["sshopm"].cost(10, 3, {})
    assert METHODS["certified"].cost(30, 3, {}) == METHODS["sshopm"].cost(30, 3, {})
    # METHODS values are callable like the methods themselves.
    T = sod_tensor(np.array([2.0, 1.0]), identity_basis(2), 3)
    out = METHODS["sshopm"](T[None], [np.random.default_rng(0)])
    assert isinstance(out, MethodOutput)


def test_a_user_method_by_import_path_runs_through_every_front_door():
    from sroa_dist import sroa

    T = sod_tensor(np.array([2.0, 1.0, 0.5]), identity_basis(3), 3)
    r = rank_one(T, f"{USER}:first_axis", rng=0, scale=2.0)
    assert r.lam == 2.0 and r.method == f"{USER}:first_axis"
    assert r.message.endswith("; user method")
    assert method_options(f"{USER}:first_axis") == ["scale"]
    assert check_options(f"{USER}:first_axis", {"scale": 3.0}, n=3, p=3) == {"scale": 3.0}
    with pytest.raises(OptionError, match="does not accept"):
        rank_one(T, f"{USER}:first_axis", rng=0, n_starts=3)
    assert f"{USER}:first_axis" not in METHODS  # used, not registered
    # A local user method (it takes a deflation) runs in implicit SROA too.
    lam = np.array([2.0, 1.5, 1.0])
    V = random_orthonormal_basis(3, 3, rng=4)
    for deflation in ("explicit", "implicit"):
        res = sroa(
            sod_tensor(lam, V, 3),
            3,
            f"{USER}:local_power",
            rng=1,
            deflation=deflation,
        )
        np.testing.assert_allclose(np.sort(res.lambdas), np.sort(lam), rtol=1e-8)
    # A full record by import path keeps its rules, cost and globality.
    rec = resolve_method(f"{USER}:CERTIFIED_RECORD")
    assert rec.global_steps and rec.name == f"{USER}:CERTIFIED_RECORD"
    assert rank_one(T, f"{USER}:CERTIFIED_RECORD", rng=0).certified
    from sroa_dist.methods.cost import resolve_norm_method, solve_cost

    assert resolve_norm_method(f"{USER}:CERTIFIED_RECORD", 6, 3, None) == rec.name
    assert resolve_norm_method(f"{USER}:first_axis", 6, 3, None) == "certified"
    assert solve_cost(f"{USER}:first_axis", 6, 3) == solve_cost("power", 6, 3)
    assert memory_estimate(f"{USER}:first_axis", 6, 3) >= 8 * 6**3


def test_register_method_accepts_an_import_path_and_a_record(scratch_methods):
    rec = register_method("mine", f"{USER}:first_axis")
    assert METHODS["mine"] is rec and rec.name == "mine" and not rec.global_steps
    T = sod_tensor(np.array([2.0, 1.0, 0.5]), identity_basis(3), 3)
    assert rank_one(T, "mine", rng=0).lam == 2.0
    register_method("mine-global", _first_axis, global_steps=True, cost=lambda n, p, o: 7.0)
    from sroa_dist.methods.cost import resolve_norm_method, solve_cost

    assert resolve_norm_method("mine-global", 6, 3, None) == "mine-global"
    assert solve_cost("mine-global", 6, 3) == 7.0


@pytest.mark.parametrize(
    "path, message",
    [
        # The same errors as user perturbation families by import path.
        ("no_such_module_xyz:f", "(?s)cannot import module 'no_such_module_xyz'.*every worker"),
        (f"{USER}:missing", "has no attribute 'missing'"),
        (f"{USER}:NOT_CALLABLE", "is not callable"),
        (f"{USER}:", "expected an import path 'package.module:attribute'"),
        ("no-colon", "unknown rank-one method 'no-colon'.*import path"),
    ],
)
def test_a_bad_method_path_gets_the_family_errors(path, message):
    T = sod_tensor(np.array([2.0, 1.0]), identity_basis(2), 3)
    with pytest.raises(ValueError, match=message):
        rank_one(T, path, rng=0)
    with pytest.raises(ValueError, match=message):
        resolve_method(path)
    if ":" in path:
        with pytest.raises(ValueError, match=message):
            register_method("x", path)


# --------------------------------------------------------------------------------------------
# sshopm revision 3's confirming start set runs only where the first set leaves the best value
# in doubt (the rule confirm="settle", which revisions 1-3 keep)


def test_confirming_set_runs_only_where_the_first_set_is_in_doubt():
    rev3 = METHODS["sshopm"].options_at(3)
    settled = sod_tensor(np.array([2.0, 1.8, 1.6]), identity_basis(3), 3)
    first_only = rank_one(settled, "sshopm", rng=3, max_starts=0, **rev3)
    r = rank_one(settled, "sshopm", rng=3, **rev3)
    # Many starts reached the best value, every maximum found was reached twice and the others
    # are far below the best: the first set is its own confirmation, the second set is not
    # paid for, the answer is unchanged.
    assert r.n_best >= 2 and r.confirmed and r.n_starts == first_only.n_starts == 16
    np.testing.assert_array_equal(r.x, first_only.x)
    assert not first_only.confirmed  # no confirmation asked, none claimed
    # A maximum within ABANDON_MARGIN of the best reached by one start only: unseen maxima
    # near the top are likely (Good–Turing), so the second set runs.
    near = sod_tensor(np.array([2.0, 1.6, 1.2]), identity_basis(3), 3)
    assert rank_one(near, "sshopm", rng=7, **rev3).n_starts == 32
    # One reached by one start only but far below the best (the 0.5 component's small basin)
    # cannot change the answer: no second set (revision 1 counted every point and ran it).
    lone = sod_tensor(np.array([2.0, 1.0, 0.5]), identity_basis(3), 3)
    assert rank_one(lone, "sshopm", rng=3, **rev3).n_starts == 16
    assert rank_one(lone, "sshopm", rng=3, abandon_margin=np.inf, **rev3).n_starts == 32
    # A near tie (two maxima 1e-7 apart, inside CONFIRM_MARGIN = 1e-5): the second set runs.
    tie = sod_tensor(np.array([1.0, 1.0 - 1e-7, 0.5]), identity_basis(3), 3)
    t = rank_one(tie, "sshopm", rng=3, **rev3)
    assert t.n_starts > 16 and t.confirmed
    assert t.lam == pytest.approx(1.0, abs=1e-12)
    # One start alone at the best value: the second set runs (two starts cannot all agree
    # on the trap below, whose maxima all have distinct values).
    lam = np.concatenate([[1.0], np.linspace(0.5, 0.8, 19)])
    trap = sod_tensor(lam, identity_basis(20), 3)
    runs = [rank_one(trap, "sshopm", rng=s, n_starts=2, max_starts=4, **rev3) for s in range(6)]
    for res in runs:
        assert (res.n_best >= 2) or res.n_starts > 2
    # confirm_margin = inf: every instance pays for the second set (the former default).
    assert rank_one(settled, "sshopm", rng=3, confirm_margin=np.inf, **rev3).n_starts == 32
    with pytest.raises(OptionError, match="confirm_margin"):
        rank_one(settled, "sshopm", rng=3, confirm_margin=-1.0)
