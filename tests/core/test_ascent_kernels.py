"""The gradient kernels of the batched ascent on formed tensors: ``dense``, ``symmetric`` and
``packed`` (sshopm's default since revision 3) give the same iterates up to rounding, and the
packed kernel's bits for an instance do not depend on the batch it runs in (its working rows
are compacted by batch-wide rules, and its products are formed two ways by batch size)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sroa_dist as sd
from sroa_dist.methods.ascent import random_starts, shifted_ascent


def _tensors(count: int, n: int = 6, p: int = 3) -> np.ndarray:
    models = ["binary", "uniform", "gaussian"]
    return np.stack(
        [sd.make_instance(n, p, noise=models[s % 3], sigma=0.02, rng=s).T_hat for s in range(count)]
    )


def _starts(count: int, S: int, n: int, seed: int = 0) -> np.ndarray:
    return random_starts([np.random.default_rng([seed, b]) for b in range(count)], S, n)


def _ascend(Ts, X0, kernel, **kw):
    options = {"max_iter": 100, "tol": 1e-5, "shift": "monotone", **kw}
    return shifted_ascent(Ts, X0, kernel=kernel, **options)


@pytest.mark.parametrize("shift", ["monotone", 0.3])
@pytest.mark.parametrize("abandon_margin", [math.inf, 0.5])
def test_the_kernels_give_the_same_iterates_up_to_rounding(shift, abandon_margin):
    Ts = _tensors(12, n=10)
    X0 = _starts(12, 16, 10)
    runs = {
        kernel: _ascend(Ts, X0, kernel, shift=shift, abandon_margin=abandon_margin)
        for kernel in ("dense", "symmetric", "packed")
    }
    X, F, it = runs["symmetric"]
    for kernel in ("dense", "packed"):
        Xk, Fk, itk = runs[kernel]
        np.testing.assert_allclose(Fk, F, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(Xk, X, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(itk, it)
    # Not vacuous: the packed kernel's arithmetic is its own (above 7 coordinates numpy sums
    # a row pairwise, the packed kernel in index order).
    assert not np.array_equal(runs["packed"][1], F)


def test_packed_bits_do_not_depend_on_the_batch():
    # 80 instances x 16 starts: products formed block by block, and rows compacted as
    # instances stop; alone, each instance forms its products by gathers.
    Ts = _tensors(80)
    X0 = _starts(80, 16, 6)
    X, F, it = _ascend(Ts, X0, "packed", abandon_margin=0.5)
    assert len(set(it.tolist())) > 3  # instances stop at different iterations
    for b in (0, 17, 79):
        Xb, Fb, itb = _ascend(Ts[b : b + 1], X0[b : b + 1], "packed", abandon_margin=0.5)
        assert np.array_equal(Xb[0], X[b]) and np.array_equal(Fb[0], F[b])
        assert itb[0] == it[b]
    # One instance with one start: a lone column, whose sums numpy would add pairwise.
    X1, F1, _ = _ascend(Ts, X0[:, :1], "packed")
    Xa, Fa, _ = _ascend(Ts[5:6], X0[5:6, :1], "packed")
    assert np.array_equal(Xa[0], X1[5]) and np.array_equal(Fa[0], F1[5])


def test_packed_sroa_equals_revision_2_up_to_rounding():
    """sshopm's revision 3 (the packed kernel) against its revision-2 options on whole SROAs:
    the same components in the same order, the same start statistics."""
    Ts = _tensors(40, n=10)
    seeds = list(range(40))
    new = sd.sroa_batch(Ts, method="sshopm", rng=seeds, **sd.METHODS["sshopm"].options_at(3))
    old = sd.sroa_batch(Ts, method="sshopm", rng=seeds, **sd.METHODS["sshopm"].options_at(2))
    np.testing.assert_allclose(new.lambdas, old.lambdas, rtol=1e-13, atol=0)
    np.testing.assert_allclose(new.vectors, old.vectors, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(new.n_best, old.n_best)
    np.testing.assert_array_equal(new.confirmed, old.confirmed)
    for a, b in zip(new.steps, old.steps, strict=True):
        np.testing.assert_array_equal(a.n_starts, b.n_starts)


def test_packed_falls_back_where_it_does_not_apply():
    # The adaptive shift needs T(I, I, x) per start: the symmetric kernel runs it, bit for bit.
    Ts = _tensors(5)
    X0 = _starts(5, 8, 6)
    adaptive = {"shift": "adaptive", "max_iter": 30}
    packed = _ascend(Ts, X0, "packed", **adaptive)
    symmetric = _ascend(Ts, X0, "symmetric", **adaptive)
    for a, b in zip(packed, symmetric, strict=True):
        assert np.array_equal(a, b)
    # Other orders use the dense kernel.
    T4 = _tensors(4, n=5, p=4)
    X4 = _starts(4, 8, 5)
    for a, b in zip(_ascend(T4, X4, "packed"), _ascend(T4, X4, "dense"), strict=True):
        assert np.array_equal(a, b)


def test_an_unknown_kernel_is_named():
    with pytest.raises(ValueError, match="kernel: expected one of .*'packed'.*received 'fast'"):
        _ascend(_tensors(1), _starts(1, 4, 6), "fast")
