"""Auditable SOS certificates: engine exports verify, tampering is caught, bounds are valid."""

import itertools
import math

import numpy as np
import pytest

from sroa_dist import rank_one, sroa
from sroa_dist.certificate import Certificate
from sroa_dist.relaxation import MomentRelaxation, get_relaxation, solve, solve_abs
from sroa_dist.relaxation.clarabel_driver import CLARABEL
from sroa_dist.relaxation.scs_driver import SCS
from sroa_dist.tensors import rank_one_tensor

#: Slack allowed between verify(T) and the claimed U for an untampered certificate, relative to
#: ||T||_F: the engine's certification tolerance (solvers.GAP_TOL). A face certificate that
#: closed the gap leaves ~1e-12; degenerate maximisers (equal weights) leave up to ~1e-9.
ACCEPT = 1e-6
#: A tampered certificate counts as rejected when verify(T) exceeds U by more than this
#: (relative to ||T||_F), far outside the acceptance band.
REJECT = 1e-4
#: The SDP drivers whose duals the export must turn into verifying certificates (Clarabel: the
#: small cases only).
DRIVERS = [pytest.param(SCS, id="scs"), pytest.param(CLARABEL, id="clarabel")]


def sym(A):
    p = A.ndim
    return sum(np.transpose(A, q) for q in itertools.permutations(range(p))) / math.factorial(p)


def planted(n, p, lambdas):
    T = np.zeros((n,) * p)
    for i, lam in enumerate(lambdas):
        T[(i,) * p] = lam
    return T


def nearly_sod(n, p, sigma, seed):
    rng = np.random.default_rng(seed)
    return planted(n, p, np.ones(n)) + sym(sigma * rng.standard_normal((n,) * p))


def sphere_max(T, n_samples=20_000, seed=0, absolute=None):
    """Max of T x^p (|T x^p| for even p) over random unit vectors, each polished by 50
    shifted power steps (SS-HOPM, monotone): a lower bound of the true maximum, tight on these
    small cases."""
    p, n = T.ndim, T.shape[0]
    absolute = p % 2 == 0 if absolute is None else absolute
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, n))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    Tm = T.reshape(n, -1)
    alpha = (p - 1) * np.linalg.norm(T)
    best = -np.inf
    for s in (1, -1) if absolute else (1,):
        Y = X.copy()
        for _ in range(50):
            Y = s * (_kron(Y, p - 1) @ Tm.T) + alpha * Y
            Y /= np.linalg.norm(Y, axis=1, keepdims=True)
        best = max(best, float((s * (_kron(Y, p) @ T.reshape(-1))).max()))
    return best


def _kron(X, p):
    out = X
    for _ in range(p - 1):
        out = (out[:, :, None] * X[:, None, :]).reshape(len(X), -1)
    return out


def circle_max(T, sign=1, m=400_001):
    th = np.linspace(0.0, 2.0 * np.pi, m)
    X = np.stack([np.cos(th), np.sin(th)], axis=1)
    return float((sign * (_kron(X, T.ndim) @ T.reshape(-1))).max())


CASES = {
    "p3-nearly-sod": lambda: nearly_sod(6, 3, 0.05, 1),
    "p4-nearly-sod": lambda: nearly_sod(5, 4, 0.05, 2),
    "p5-nearly-sod": lambda: nearly_sod(4, 5, 0.05, 3),
    "p3-planted-weights": lambda: planted(5, 3, [1.0, 0.7, 0.4, 0.9, 0.2]),
    "p3-planted-support": lambda: planted(4, 3, [1.0, 1.0, 1.0, 0.0]),
    "p4-negative-dominant": lambda: -nearly_sod(4, 4, 0.1, 4),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.slow
def test_engine_certificates_verify_and_bound_the_true_maximum(name):
    T = CASES[name]()
    p = T.ndim
    res = rank_one(T, rng=0, certificate=True)
    cert = res.certificate
    assert isinstance(cert, Certificate)
    fro = float(np.linalg.norm(T))
    bound = cert.verify(T)
    assert bound <= cert.bound + ACCEPT * fro  # accepted: nothing beyond rounding left over
    assert bound >= abs(res.lam)  # a bound on the maximum, which lam attains
    assert bound >= sphere_max(T) - 1e-12
    if res.certified:
        assert bound - abs(res.lam) <= 1e-6 * fro + ACCEPT * fro
    if p % 2 == 0:
        assert sorted(cert.signs.tolist()) == [-1, 1]  # covers max |T x^p|
    else:
        assert cert.signs.tolist() == [1]


def test_planted_maxima_in_closed_form():
    """T = sum_i lam_i e_i^{(x)3}, lam_i > 0: max T x^3 = max lam_i, attained at e_argmax."""
    lams = [0.3, 1.5, 0.8, 1.1]
    T = planted(4, 3, lams)
    cert = rank_one(T, method="sos", certificate=True).certificate
    assert max(lams) <= cert.verify(T) <= max(lams) + 1e-9
    # every support S has a Z-eigenpair lam = 1/sqrt|S| (unit weights): the bound beats none
    # of them unless it is the maximum 1. The default stops at the certification tolerance
    # (gap <= 1e-6 ||T||_F); a tighter gap_tol is passed on to the relaxation.
    T1 = planted(4, 3, [1.0] * 4)
    fro1 = float(np.linalg.norm(T1))
    c1 = rank_one(T1, method="sos", certificate=True).certificate
    assert 1.0 <= c1.verify(T1) <= 1.0 + 1e-6 * fro1
    tight = rank_one(T1, method="sos", certificate=True, gap_tol=1e-10).certificate
    assert 1.0 <= tight.verify(T1) <= 1.0 + 1e-9


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("p", [3, 4])
@pytest.mark.slow
def test_circle_exhaustive_search(p, driver):
    rng = np.random.default_rng(11)
    for _ in range(3):
        T = sym(rng.standard_normal((2,) * p))
        for sign in (1, -1):
            r = solve(T, sign, with_certificate=True, driver=driver)
            v = r.sos_certificate.verify(T)
            assert v >= circle_max(T, sign)
            assert v <= circle_max(T, sign) + 1e-7


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.slow
def test_even_order_pieces_bound_each_sign(driver):
    T = sym(np.random.default_rng(5).standard_normal((3, 3, 3, 3)))
    r = solve_abs(T, with_certificate=True, driver=driver)
    cert = r.sos_certificate
    pieces = cert.verify_pieces(T)
    for s, b in zip(cert.signs, pieces, strict=True):
        assert b >= sphere_max(s * T, absolute=False) - 1e-12
    assert cert.verify(T) >= sphere_max(T) - 1e-12
    # one sign alone does not bound |T x^p| when the other sign dominates: both are exported
    Tn = -nearly_sod(4, 4, 0.05, 4)
    plus = solve(Tn, 1, with_certificate=True, driver=driver).sos_certificate
    assert plus.verify(Tn) < sphere_max(Tn) - 0.5
    both = solve_abs(Tn, with_certificate=True, driver=driver).sos_certificate
    assert both.verify(Tn) >= sphere_max(Tn) - 1e-12


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("formulation", ["homogeneous", "full"])
@pytest.mark.parametrize("p", [3, 4])
def test_both_formulations_and_higher_order_export(formulation, p, driver):
    T = nearly_sod(4, p, 0.1, 7)
    r = solve(T, 1, formulation=formulation, with_certificate=True, driver=driver)
    assert r.sos_certificate.verify(T) <= r.sos_certificate.bound + ACCEPT * np.linalg.norm(T)
    assert r.sos_certificate.verify(T) >= r.fx
    # order above ceil(p/2): the objective is multiplied by ||x||^{2j}; h absorbs it
    r3 = solve(T, 1, order=3, with_certificate=True, driver=driver)
    assert r3.sos_certificate.verify(T) <= r3.sos_certificate.bound + ACCEPT * np.linalg.norm(T)
    assert r3.sos_certificate.verify(T) >= r3.fx


def _tampered(cert, **changes):
    arrays = cert.to_arrays()
    arrays.update(changes)
    return Certificate.from_arrays(arrays)


def test_tampered_certificates_are_rejected():
    T = nearly_sod(5, 3, 0.05, 9)
    cert = rank_one(T, method="sos", certificate=True).certificate
    U = cert.bounds.copy()
    true_max = sphere_max(T)
    # a lower claimed U: the identity no longer holds, verify stays a valid bound
    low = _tampered(cert, bounds=U - 0.1)
    assert low.verify(T) >= true_max - 1e-12
    assert low.verify(T) > low.bound + REJECT * np.linalg.norm(T)
    # Q perturbed symmetrically (still a plausible-looking Gram matrix)
    rng = np.random.default_rng(0)
    G = rng.standard_normal(cert.gram.shape[1:])
    for Q in (cert.gram + 1e-3 * (G + G.T)[None], cert.gram * 0.9, cert.gram + 0.01):
        bad = _tampered(cert, gram=Q)
        assert bad.verify(T) > bad.bound + REJECT * np.linalg.norm(T)
        assert bad.verify(T) >= true_max - 1e-12
    # an antisymmetric addition leaves m^T Q m unchanged: verify symmetrises, same bound
    k = cert.gram.shape[1]
    A = np.zeros((k, k))
    A[0, 1], A[1, 0] = 1.0, -1.0  # antisymmetric: m^T A m = 0, but (Q + A) is not symmetric
    skew = _tampered(cert, gram=cert.gram + A[None])
    assert skew.verify(T) == pytest.approx(cert.verify(T), abs=1e-12)
    # the wrong tensor: the certificate's residual carries the difference, bound stays valid
    T2 = T + 0.01 * sym(rng.standard_normal(T.shape))
    assert cert.verify(T2) >= sphere_max(T2) - 1e-12
    assert cert.verify(T2) > cert.bound + REJECT * np.linalg.norm(T)


def test_h_tampering_and_structure_checks():
    T = nearly_sod(4, 4, 0.05, 3)
    cert = rank_one(T, method="sos", certificate=True).certificate
    bad = _tampered(cert, h_coefs=cert.h_coefs * 1.01)
    assert bad.verify(T) > bad.bound + REJECT * np.linalg.norm(T)
    with pytest.raises(ValueError, match="distinct"):
        _tampered(cert, exponents=np.vstack([cert.exponents[:1]] * len(cert.exponents))).verify(T)
    with pytest.raises(ValueError, match="shape"):
        cert.verify(np.zeros((3,) * 4))
    with pytest.raises(ValueError, match="gram"):
        _tampered(cert, gram=cert.gram[:, :-1])


def test_arbitrary_duals_give_valid_bounds():
    """Perturbed or random duals: the exported identity still yields a valid bound."""
    rng = np.random.default_rng(1)
    rel = MomentRelaxation(3, 3)
    T = sym(rng.standard_normal((3, 3, 3)))
    true_max = sphere_max(T)
    r = rel.solve(T, with_certificate=True)
    z0 = r.sos_certificate.bounds
    Z = r.sos_certificate.gram[0]
    for scale in (1e-6, 1e-3, 1.0):
        G = rng.standard_normal(Z.shape) * scale
        c = rel.export_certificate(T, 1, z0 + scale * rng.standard_normal(1), Z + G + G.T)
        assert c.verify(T) >= true_max - 1e-12


def test_early_stopped_solve_still_verifies():
    """No fallback, one short warm-up chunk: the certificate is weak but valid."""
    T = nearly_sod(6, 3, 0.2, 4)
    r = solve(T, warmup_iters=3, warmup_chunks=1, fallback=False, with_certificate=True)
    v = r.sos_certificate.verify(T)
    assert v >= sphere_max(T) - 1e-12
    assert v <= r.upper_bound * (1 + 1e-9) + 1e-9


def test_serialisation_round_trip(tmp_path):
    T = nearly_sod(4, 4, 0.05, 6)
    cert = rank_one(T, method="sos", certificate=True).certificate
    path = tmp_path / "cert.npz"
    cert.save(path)
    back = Certificate.load(path)
    for k, v in cert.to_arrays().items():
        np.testing.assert_array_equal(back.to_arrays()[k], v)
    assert back.verify(T) == cert.verify(T)
    with np.load(path) as z:  # plain arrays: a referee needs only numpy
        assert set(z.files) == set(cert.to_arrays())


def test_sroa_attaches_a_certificate_per_step():
    T = nearly_sod(5, 3, 0.05, 8)
    res = sroa(T, rank=3, rng=0, certificate=True)
    residual = T.copy()
    for j, step in enumerate(res.steps):
        assert step.certificate is not None
        assert step.certificate.verify(residual) >= abs(step.lam)
        assert step.certificate.verify(residual) <= step.certificate.bound + 1e-9
        residual = residual - rank_one_tensor(res.lambdas[j], res.vectors[:, j], 3)
    plain = sroa(T, rank=1, rng=0)
    assert plain.steps[0].certificate is None
    # A local method has no bound to certify: asking it for a certificate is an error that
    # names the methods that can give one (it was answered with None, without a word).
    with pytest.raises(ValueError, match="certificate: method 'sshopm' cannot") as info:
        rank_one(T, method="sshopm", rng=0, certificate=True)
    assert "certified, sos" in info.value.hint


@pytest.mark.parametrize("exponent", [-900, 700])
def test_certificate_of_an_extremely_scaled_tensor_is_for_that_tensor(exponent):
    # The front door solves T / 2^k; the certificate it returns must be the one of T itself.
    T = nearly_sod(4, 3, 0.05, 3)
    big = np.ldexp(T, exponent)
    res = rank_one(big, rng=0, certificate=True)
    assert res.certified
    cert = res.certificate
    assert cert.bound == pytest.approx(res.upper_bound, rel=1e-9)
    v = cert.verify(big)
    assert res.lam <= v <= cert.bound * (1 + 1e-9)
    assert np.isclose(
        v, np.ldexp(rank_one(T, rng=0, certificate=True).certificate.verify(T), exponent), rtol=1e-9
    )


@pytest.mark.slow
def test_certificate_past_n_26():
    n = 27
    T = nearly_sod(n, 3, 0.01, 5)
    rel = get_relaxation(n, 3)
    r = rel.solve(T, with_certificate=True)
    cert = r.sos_certificate
    v = cert.verify(T)
    assert r.fx <= v <= cert.bound + ACCEPT * np.linalg.norm(T)
    assert v - r.fx <= 1e-8 * np.linalg.norm(T)
    # a perturbed dual at this size: still a valid bound (>= fx, a point value), and flagged
    G = np.random.default_rng(0).standard_normal(cert.gram.shape[1:]) * 1e-4
    bad = _tampered(cert, gram=cert.gram + (G + G.T)[None])
    assert bad.verify(T) >= r.fx
    assert bad.verify(T) > bad.bound + REJECT * np.linalg.norm(T)


def test_zero_tensor_certificate():
    T = np.zeros((3, 3, 3))
    r = solve(T, with_certificate=True)
    assert r.sos_certificate.verify(T) == pytest.approx(0.0, abs=1e-290)


# ---- sweeps: [output] certificates = true, `sroa-dist verify` ------------------------------

SWEEP_SPEC = """
name = "cert-sweep"
seed = 5
replicates = 2

[tensor]
n = 3
p = [3, 4]

[noise]
model = "gaussian"
eps = [0.02, 0.05]

[solver]
method = "certified"

[output]
certificates = true
"""


def _tamper_one(files):
    """Scale one step's Gram matrix in one certificate file (rewritten in place)."""
    path = files[0]
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    key = next(k for k in arrays if k.endswith("_gram"))
    arrays[key] = arrays[key] * 0.9
    np.savez_compressed(path, **arrays)
    return key


@pytest.mark.slow
def test_sweep_stores_certificates_and_verify_checks_them(tmp_path, client):
    import json

    from sroa_dist import sroa_batch
    from sroa_dist.sweep import open_results, run_sweep
    from sroa_dist.sweep.layout import block_task
    from sroa_dist.sweep.store.prepare import store_layout
    from sroa_dist.sweep.store.verify import _instance_tensors, verify_store
    from tests.support.helpers import run_cli

    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(SWEEP_SPEC)
    store = tmp_path / "c.zarr"
    res = run_sweep(spec_path, store, client=client, block_size=2)
    assert res.complete
    files = sorted((tmp_path / "c.zarr" / "certificates").glob("*.npz"))
    assert len(files) == res.n_blocks
    rep = verify_store(str(store))
    ds = open_results(store).load()
    n_steps = int(ds["certified"].count())  # every instance runs n = 3 steps
    assert rep.ok and len(rep.checks) == n_steps == 2 * 2 * 2 * 3 and rep.steps_without == 0
    assert all(c.verified >= abs(c.lam) for c in rep.checks)
    out = run_cli("verify", str(store))
    assert "24 certificates checked, 0 failed" in out.stdout

    # The rebuilt tensors are the sweep's own: SROA on them reproduces the stored bits.
    spec, layout = store_layout(str(store))
    task = block_task(spec, layout, 0)
    members = list(task.instances(spec))
    st = members[0][1]
    same = [(s, r) for _, s, r in members if s.group_key() == st.group_key()]
    tensors = _instance_tensors(spec, same)
    seeds = [s.seed(spec.seed, r).spawn(3)[1] for s, r in same]
    again = sroa_batch(np.stack(tensors), method="certified", rng=seeds)
    sel = {d: task.coords[i][0] for i, d in enumerate(task.dims) if d != "replicate"}
    stored = ds["lam_hat"].sel(sel).isel(replicate=slice(0, len(same))).values
    np.testing.assert_array_equal(again.lambdas, stored)

    # Tampering is reported, with a non-zero exit status.
    key = _tamper_one(files)
    bad = run_cli("verify", str(store), check=False)
    assert bad.returncode == 1 and "FAIL" in bad.stdout and "1 failed" in bad.stdout
    # A finished block without its file is reported as missing.
    files[0].unlink()
    gone = verify_store(str(store))
    assert not gone.ok and gone.missing
    assert all(json.loads(t) for t in gone.missing)
    assert key  # the tampered key named a Gram matrix

    # Resuming recomputes nothing and needs no certificate rewrite; a fresh run restores it.
    res2 = run_sweep(spec_path, store, client=client, overwrite=True, block_size=2)
    assert res2.complete and verify_store(str(store)).ok


@pytest.mark.slow
def test_verify_rebuilds_perturbation_family_instances(tmp_path, client):
    # Families with a closed-form norm skip the norm solve in the worker; verify must rebuild
    # exactly those tensors (one construction shared by both), or every check would fail.
    from sroa_dist.sweep import run_sweep
    from sroa_dist.sweep.store.verify import verify_store

    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(
        SWEEP_SPEC.replace(
            'model = "gaussian"', 'model = ["coherent-tilt", "coherent-tilt+gaussian"]'
        )
        .replace("p = [3, 4]", "p = 3")
        .replace("n = 3", "n = 4")
    )
    store = tmp_path / "tilt.zarr"
    res = run_sweep(spec_path, store, client=client, block_size=2)
    assert res.complete
    rep = verify_store(str(store))
    assert rep.ok and not rep.missing
    assert len(rep.checks) == 2 * 2 * 2 * 4  # families x eps x replicates x steps
    # Bit for bit: SROA on the rebuilt tensors reproduces the stored values.
    from sroa_dist import sroa_batch
    from sroa_dist.sweep import open_results
    from sroa_dist.sweep.layout import block_task
    from sroa_dist.sweep.store.prepare import store_layout
    from sroa_dist.sweep.store.verify import _instance_tensors

    ds = open_results(store).load()
    spec, layout = store_layout(str(store))
    for b in range(layout.n_blocks):
        task = block_task(spec, layout, b)
        members = list(task.instances(spec))
        same = [(st, r) for _, st, r in members if st.group_key() == members[0][1].group_key()]
        tensors = _instance_tensors(spec, same)
        seeds = [st.seed(spec.seed, r).spawn(3)[1] for st, r in same]
        again = sroa_batch(np.stack(tensors), method="certified", rng=seeds)
        sel = {d: task.coords[i][0] for i, d in enumerate(task.dims) if d != "replicate"}
        stored = ds["lam_hat"].sel(sel).isel(replicate=slice(0, len(same))).values
        np.testing.assert_array_equal(again.lambdas, stored)
