"""The ADMM driver (sroa_dist/relaxation/admm_driver.py) on the CPU, through the same array-
namespace code the GPU runs: its maps agree with the relaxation's own, it certifies the
held-out steps SCS certifies with certificates that verify, it is deterministic and batched
solves equal one-by-one solves bit for bit, and choosing a driver or device that cannot run is
one line with a hint."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sroa_dist import make_instance, rank_one, rank_one_batch, sroa
from sroa_dist.methods import OptionError, check_options
from sroa_dist.relaxation import get_relaxation
from sroa_dist.relaxation.admm_driver import (
    ADMM_SETTING_RULES,
    DEFAULT_ADMM_SETTINGS,
    AdmmDriver,
    admm_driver,
)
from sroa_dist.relaxation.backend import NUMPY, ArrayBackend, DeviceUnavailableError, get_backend
from sroa_dist.relaxation.bound import DeviceFace, _HostFace, proven_lam_min
from sroa_dist.relaxation.device_maps import device_maps
from sroa_dist.relaxation.drivers import get_driver, selection
from sroa_dist.tensors import rank_one_tensor

ADMM = {"driver": "admm"}


class _NumpyAsDevice:
    """NumPy under CuPy's one extra name (``asnumpy``): an array namespace that is not
    ``numpy`` itself, so a backend built on it takes every branch a GPU takes (copies to and
    from the device, int32 sparse indices, stacks decomposed one matrix at a time)."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def asnumpy(a):
        return np.array(a)


#: The device code path with NumPy arithmetic.
AS_DEVICE = ArrayBackend("cuda", _NumpyAsDevice(), sp)


def held_out(n: int, p: int, noise: str, seed: int, step: int) -> np.ndarray:
    """A step of SROA on a nearly SOD tensor (unit weights, noise not used to choose the
    driver's defaults): the tensor deflated by the ``step - 1`` certified steps before it."""
    T = make_instance(n, p, noise=noise, sigma=0.05 / np.sqrt(n), rng=seed).T_hat
    for j in range(step - 1):
        r = rank_one(T, rng=seed + j)
        T = T - rank_one_tensor(r.lam, r.x, p)
    return T


# ---- the maps on the backend are the relaxation's maps ---------------------------------------


@pytest.mark.parametrize("n,p", [(4, 3), (7, 3), (4, 4), (6, 4)])
def test_device_maps_agree_with_the_relaxations_own(n, p, monkeypatch):
    """Scatter, gather and the Woodbury Gram solve, derived from the conic problem alone,
    agree with the relaxation's (which the validated bound uses); p = 3 goes through the
    low-rank Gram term, p = 4 has a diagonal Gram map."""
    rel = get_relaxation(n, p)
    maps = device_maps(rel.problem, NUMPY)
    rng = np.random.default_rng(n + p)
    Y = rng.standard_normal((3, rel.n_vars))
    W = rng.standard_normal((3, rel.m, rel.m))
    W = W + W.transpose(0, 2, 1)
    M = maps.moment_matrix(Y)
    for b in range(3):
        np.testing.assert_allclose(M[b], rel.moment_matrix(Y[b]), rtol=0, atol=1e-14)
        np.testing.assert_allclose(maps.adjoint(W)[b], rel._adjoint(W[b]), rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(maps.solve_gram(Y)[b], rel._solve_gram(Y[b]), rtol=1e-10)
    # (M^* M)^{-1} M^*(M(y)) = y: the Gram solve inverts the Gram map.
    np.testing.assert_allclose(maps.solve_gram(maps.adjoint(M)), Y, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("n,p", [(5, 3), (4, 4)])
def test_the_face_system_on_the_backend_is_the_hosts(n, p):
    """F^T (M^*M)^{-1} F and its operators, built from fixed sparse patterns (no atomic adds),
    equal the host's scipy construction."""
    rel = get_relaxation(n, p)
    x = np.random.default_rng(1).standard_normal(n)
    q = rel.basis_vector(x / np.linalg.norm(x))
    q /= np.linalg.norm(q)
    A, Ft_a, gF_a = _HostFace(rel).face_system(q)
    B, Ft_b, gF_b = DeviceFace(rel, device_maps(rel.problem, NUMPY)).face_system(q)
    np.testing.assert_allclose(B, A, rtol=1e-12, atol=1e-13)
    v = np.random.default_rng(2).standard_normal(rel.m)
    u = np.random.default_rng(3).standard_normal(rel.n_vars)
    np.testing.assert_allclose(Ft_b @ u, Ft_a @ u, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(gF_b(v), gF_a(v), rtol=1e-10, atol=1e-12)


def test_proven_lam_min_is_a_lower_bound_whatever_the_estimate():
    """The host's Cholesky proof of lambda_min takes an untrusted estimate (e.g. from a GPU)
    and returns a bound below the true eigenvalue, close to it for a good estimate."""
    rng = np.random.default_rng(0)
    for k in (1, 5, 40):
        G = rng.standard_normal((k, k))
        Z = G @ G.T - 0.3 * np.eye(k)
        lam = float(np.linalg.eigvalsh(Z)[0])
        good = proven_lam_min(Z, lam)
        assert good <= lam and lam - good <= 1e-10 * max(1.0, np.linalg.norm(Z))
        for wrong in (lam + 5.0, lam - 5.0, np.inf, -np.inf, np.nan):
            assert proven_lam_min(Z, wrong) <= lam


# ---- certified steps --------------------------------------------------------------------------

#: Held-out steps (noise models and seeds the defaults were not chosen on): (n, p, noise,
#: seed, step). n = 6-16, p = 3 and 4, first and deflated steps.
HELD_OUT = [
    (6, 3, "binary", 9101, 1),
    (6, 3, "uniform", 9102, 2),
    (10, 3, "binary", 9103, 2),
    (10, 3, "uniform", 9104, 3),
    (16, 3, "binary", 9105, 2),
    (6, 4, "binary", 9106, 1),
    (6, 4, "uniform", 9107, 2),
    (10, 4, "binary", 9108, 2),
]


@pytest.mark.parametrize("n,p,noise,seed,step", HELD_OUT)
def test_admm_certifies_the_held_out_steps_scs_certifies(n, p, noise, seed, step):
    """Where SCS certifies a step, the NumPy ADMM does too, at the same maximiser, and its
    SOS certificate passes Certificate.verify (a bound computed without the solver)."""
    T = held_out(n, p, noise, seed, step)
    by_scs = rank_one(T, rng=seed)
    by_admm = rank_one(T, rng=seed, certificate=True, relaxation=ADMM)
    assert by_scs.certified and by_scs.relaxation == "scs/cpu"
    assert by_admm.certified and by_admm.relaxation == "admm/cpu"
    scale = float(np.linalg.norm(T))
    assert by_admm.lam == pytest.approx(by_scs.lam, abs=1e-12 * scale)
    assert abs(by_admm.x @ by_scs.x) == pytest.approx(1.0, abs=1e-8)
    verified = by_admm.certificate.verify(T)
    assert verified >= abs(by_admm.lam) - 1e-12 * scale
    assert verified - by_admm.upper_bound <= 1e-9 * scale
    assert verified - abs(by_admm.lam) <= 1e-6 * scale


@pytest.mark.parametrize("n,p", [(6, 3), (22, 3), (6, 4)])
def test_the_device_code_path_gives_the_hosts_bits(n, p):
    """Every branch a GPU takes (device copies, int32 sparse indices, stacks decomposed one
    by one, face certificates on the device, bounds validated after the copy back), run with
    NumPy arithmetic, gives the host path's results bit for bit: what differs on a GPU is
    the arithmetic, not the algorithm. n = 22, p = 3 has the sparse Woodbury Gram term."""
    assert not AS_DEVICE.on_host
    T = held_out(n, p, "uniform", 9150 + n, 2)
    rel = get_relaxation(n, p)
    host = rel.solve_abs(T, gap_tol=0.9e-6, driver=admm_driver("cpu"), with_certificate=True)
    dev = AdmmDriver("cuda", backend=AS_DEVICE)
    got = rel.solve_abs(T, gap_tol=0.9e-6, driver=dev, with_certificate=True)
    assert got.gap <= 1e-6 * np.linalg.norm(T)
    for f in ("x", "upper_bound", "fx", "iterations", "rank_ratio"):
        assert np.asarray(getattr(got, f)).tobytes() == np.asarray(getattr(host, f)).tobytes()
    assert got.sos_certificate.gram.tobytes() == host.sos_certificate.gram.tobytes()


def test_admm_gives_the_same_bits_on_a_rerun():
    """A pure function of the tensor and options: sweeps compare resumed blocks bit for bit."""
    T = held_out(10, 3, "uniform", 9110, 2)
    runs = [rank_one(T, rng=1, certificate=True, relaxation=ADMM) for _ in range(2)]
    a, b = runs
    assert a.x.tobytes() == b.x.tobytes()
    assert np.float64(a.upper_bound).tobytes() == np.float64(b.upper_bound).tobytes()
    for field in ("bounds", "gram", "h_coefs"):
        assert getattr(a.certificate, field).tobytes() == getattr(b.certificate, field).tobytes()


@pytest.mark.parametrize("p", [3, 4])
def test_batched_relaxations_equal_one_by_one_bit_for_bit(p):
    """Several tensors of a block solved together (one stack, each dropped as its certificate
    closes) give each tensor exactly its own solve's results."""
    Ts = np.stack([held_out(6, p, "binary", 9120 + s, 1 + s % 2) for s in range(4)])
    rel = get_relaxation(6, p)
    drv = admm_driver("cpu")
    batch = rel.solve_abs_batch(Ts, driver=drv, gap_tol=0.9e-6, with_certificate=True)
    for T, got in zip(Ts, batch, strict=True):
        want = rel.solve_abs(T, driver=drv, gap_tol=0.9e-6, with_certificate=True)
        for f in ("x", "upper_bound", "fx", "value", "rank_ratio", "iterations", "sign"):
            assert np.asarray(getattr(got, f)).tobytes() == np.asarray(getattr(want, f)).tobytes()
        assert got.sos_certificate.gram.tobytes() == want.sos_certificate.gram.tobytes()
    one = rank_one_batch(Ts, rng=list(range(4)), relaxation=ADMM)
    for b, T in enumerate(Ts):
        r = rank_one(T, rng=b, relaxation=ADMM)
        assert one.x[b].tobytes() == r.x.tobytes() and one.upper_bound[b] == r.upper_bound


def test_sroa_with_the_admm_driver_records_its_provenance():
    T = make_instance(6, 3, noise="gaussian", sigma=0.01, rng=9130).T_hat
    out = sroa(T, rng=0, relaxation=ADMM)
    assert out.certified.all()
    assert {s.relaxation for s in out.steps} == {"admm/cpu"}
    local = rank_one(T, "sshopm", rng=0)
    assert local.relaxation is None


def test_the_full_formulation_runs_too():
    """Many equality rows (y_0 = 1 and the localising equalities) go through the Schur
    complement of the Gram solve; the bound is valid and its certificate verifies (this
    relaxation is slow for every first-order solver: SCS needs thousands of iterations)."""
    T = held_out(4, 3, "binary", 9140, 1)
    rel = get_relaxation(4, 3, formulation="full")
    r = rel.solve(T, driver=admm_driver("cpu"), with_certificate=True, max_iters=300)
    best = get_relaxation(4, 3).solve(T, gap_tol=1e-12)  # homogeneous: closes the gap
    scale = float(np.linalg.norm(T))
    assert r.upper_bound >= best.fx and r.gap <= 1e-4 * scale
    assert r.fx == pytest.approx(best.fx, abs=1e-12)
    assert r.sos_certificate.verify(T) >= best.fx - 1e-12


# ---- settings and choosing a driver -----------------------------------------------------------


def test_admm_settings_have_rules_that_accept_the_defaults():
    for key, value in DEFAULT_ADMM_SETTINGS.items():
        rule = ADMM_SETTING_RULES[key]
        assert rule is None or rule[0](value), key
    with pytest.raises(ValueError, match="for the ADMM"):
        AdmmDriver("cpu").configure({"eps_abs": 1e-9})


@pytest.mark.parametrize(
    "table,match",
    [
        ({"driver": "cvx"}, "relaxation.driver: expected one of"),
        ({"driver": "scs", "device": "cuda"}, "driver 'scs' runs on cpu"),
        ({"driver": "admm", "device": "tpu"}, "relaxation.device: expected one of"),
        ({"driver": "admm", "eps_abs": 1e-9}, "unknown keys \\['eps_abs'\\] for driver 'admm'"),
        ({"driver": "admm", "rho": -1.0}, "relaxation.rho"),
        ({"eps_abs": -1.0}, "relaxation.eps_abs"),
    ],
)
def test_a_bad_relaxation_table_is_one_line_naming_the_key(table, match):
    with pytest.raises(OptionError, match=match) as err:
        check_options("certified", {"relaxation": table})
    assert "\n" not in str(err.value)
    with pytest.raises(OptionError):
        rank_one(held_out(4, 3, "binary", 1, 1), relaxation=table)


def test_device_cuda_is_accepted_by_the_checks_and_refused_where_it_cannot_run():
    """The option checks are static (a spec for a GPU cluster validates on a laptop); a solve
    without CuPy or without a GPU is refused in one line that ends with a hint."""
    check_options("certified", {"relaxation": {"driver": "admm", "device": "cuda"}})
    assert selection({"driver": "admm", "device": "cuda"}) == ("admm", "cuda")
    try:
        get_backend("cuda")
    except DeviceUnavailableError as exc:
        message, hint = str(exc), exc.hint
    else:  # pragma: no cover - a machine with CuPy and a GPU
        pytest.skip("CuPy and a GPU are available here: nothing is refused")
    assert "\n" not in message and hint and "\n" not in hint
    with pytest.raises(DeviceUnavailableError) as err:
        rank_one(held_out(4, 3, "binary", 1, 1), relaxation={"driver": "admm", "device": "cuda"})
    assert str(err.value) == message
    with pytest.raises(DeviceUnavailableError):
        get_driver("admm", "cuda")
