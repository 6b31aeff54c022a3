"""find_threshold on the matrix-free path (structured_tensor) against the dense path.

Both paths draw the basis and the weights from the same stream and the coherent tilt draws
nothing, so they search the same tensor; only the solver differs in its starts (operators
add spectral starts to sshopm) and in deflation (implicit on operators). The criterion's
crossing is a property of the tensor when every step finds the same local maximum, so the
brackets must overlap and their upper ends agree to within the search's rtol.
"""

from __future__ import annotations

import numpy as np
import pytest

import sroa_dist
from sroa_dist.problems.instances import make_instance
from sroa_dist.problems.structured import structured_tensor
from sroa_dist.studies.threshold import DENSE_BYTES_CAP, _use_matrix_free, default_lambdas

RTOL = 0.01


@pytest.mark.parametrize(("p", "n"), [(3, 6), (4, 6), (5, 5)])
@pytest.mark.slow
def test_dense_and_matrix_free_brackets_agree(p, n):
    kw = dict(family="coherent-tilt", c=0.5, method="sshopm", eps_range=(0.05, 1.5), rtol=RTOL)
    dense = sroa_dist.find_threshold(n, p, rng=7, matrix_free=False, **kw)
    mf = sroa_dist.find_threshold(n, p, rng=7, matrix_free=True, **kw)
    assert dense.reached and mf.reached
    (dlo, dhi), (mlo, mhi) = dense.bracket, mf.bracket
    # Overlapping brackets, each of relative width <= rtol, so the upper ends agree to
    # within one bracket width: the same first crossing.
    assert mlo < dhi and dlo < mhi, (dense.bracket, mf.bracket)
    assert abs(mf.eps_star / dense.eps_star - 1) <= RTOL + 1e-9
    assert mf.certified_fraction == 0.0
    # The scan points (before bisection) are the same ε and give the same verdicts.
    n_scan = min(len(dense.trace), len(mf.trace))
    for d, m in zip(dense.trace[:n_scan], mf.trace[:n_scan], strict=True):
        if d.eps != m.eps:
            break
        assert d.passed == m.passed, (d.eps, dense.trace, mf.trace)
        # Both paths checked every step; neither left one non-global.
        assert not d.non_global and not m.non_global


def test_matrix_free_tensor_is_the_dense_instance():
    """The V and λ drawn on the matrix-free path give make_instance's tensor (to 1e-12)."""
    n, p, eps = 5, 4, 0.3
    ss = np.random.SeedSequence(11)
    inst = make_instance(
        n,
        p,
        basis="random",
        lambdas=default_lambdas(n).tolist(),
        noise="coherent-tilt",
        eps=eps,
        rng=np.random.default_rng(ss),
    )
    gen = np.random.default_rng(np.random.SeedSequence(11))
    V = sroa_dist.problems.instances.BASES["random"](n, n, rng=gen)
    lam = sroa_dist.problems.instances.draw_lambdas(default_lambdas(n).tolist(), n, rng=gen)
    op = structured_tensor(p, lam, V=V, family="coherent-tilt", eps=eps)
    x = np.random.default_rng(3).standard_normal((7, n))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    dense = np.einsum("ijkl,bj,bk,bl->bi", inst.T_hat, x, x, x)
    np.testing.assert_allclose(op.as_batch().contract(x[None], p - 1), dense[None], atol=1e-12)


def test_auto_rule_and_refusals():
    assert 8 * 64**5 > DENSE_BYTES_CAP and 8 * 16**4 < DENSE_BYTES_CAP
    assert _use_matrix_free(None, 64, 5, "coherent-tilt", None)
    assert not _use_matrix_free(None, 16, 4, "coherent-tilt", None)
    # i.i.d. noise and mixtures with it have no factored form: dense only.
    assert not _use_matrix_free(None, 64, 5, "gaussian", None)
    assert not _use_matrix_free(None, 64, 5, "coherent-tilt+gaussian", None)
    with pytest.raises(ValueError, match="no factored form"):
        sroa_dist.find_threshold(6, 3, family="gaussian", matrix_free=True, rng=0)
    with pytest.raises(ValueError, match="no factored form"):
        sroa_dist.find_threshold(6, 3, family="coherent-tilt+gaussian", matrix_free=True, rng=0)
    with pytest.raises(ValueError, match="matrix_free"):
        sroa_dist.find_threshold(6, 3, matrix_free="yes", rng=0)
