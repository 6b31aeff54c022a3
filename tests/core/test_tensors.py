"""Tensor construction, validation and batched contractions."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sroa_dist import identity_basis, random_orthonormal_basis, sod_tensor, symmetrize
from sroa_dist.tensors import (
    as_rng_list,
    check_symmetric_tensor,
    contract,
    rank_one_tensor,
    unfolding_norm,
)


def naive_sod(lam, V, p):
    n = V.shape[0]
    T = np.zeros((n,) * p)
    for i in range(V.shape[1]):
        T += lam[i] * rank_one_tensor(1.0, V[:, i], p)
    return T


@pytest.mark.parametrize("p", [3, 4, 5])
@pytest.mark.parametrize("n,r", [(4, 4), (5, 3)])
def test_sod_tensor_matches_sum_of_outer_products(p, n, r):
    V = random_orthonormal_basis(n, r, rng=7)
    lam = np.linspace(1.0, 2.0, r)
    T = sod_tensor(lam, V, p)
    np.testing.assert_allclose(T, naive_sod(lam, V, p), atol=1e-13)
    check_symmetric_tensor(T)
    # Each component is a Z-eigenvector: T v_i^{p-1} = λ_i v_i.
    g = contract(T[None], V.T[None], p - 1)[0]
    np.testing.assert_allclose(g, lam[:, None] * V.T, atol=1e-12)


def test_random_basis_is_orthonormal_and_seeded():
    Q = random_orthonormal_basis(6, rng=3)
    np.testing.assert_allclose(Q.T @ Q, np.eye(6), atol=1e-12)
    np.testing.assert_array_equal(Q, random_orthonormal_basis(6, rng=3))
    assert not np.array_equal(Q, random_orthonormal_basis(6, rng=4))
    np.testing.assert_array_equal(identity_basis(4, 2), np.eye(4, 2))


@settings(max_examples=25, deadline=None)
@given(
    p=st.integers(3, 5),
    n=st.integers(2, 4),
    seed=st.integers(0, 2**31),
)
def test_contract_agrees_with_einsum_on_symmetric_tensors(p, n, seed):
    rng = np.random.default_rng(seed)
    T = symmetrize(rng.standard_normal((2,) + (n,) * p), batched=True)
    X = rng.standard_normal((2, 3, n))
    letters = "ijklmn"[:p]
    for times in (p, p - 1, p - 2):
        spec = f"b{letters}," + ",".join(f"bs{c}" for c in letters[p - times :])
        out = f"bs{letters[: p - times]}"
        ref = np.einsum(spec + "->" + out, T, *([X] * times))
        np.testing.assert_allclose(contract(T, X, times), ref, atol=1e-12)


def test_symmetrize_is_a_projection():
    rng = np.random.default_rng(0)
    T = symmetrize(rng.standard_normal((3, 3, 3)))
    for perm in itertools.permutations(range(3)):
        np.testing.assert_allclose(T, T.transpose(perm), atol=1e-15)
    np.testing.assert_allclose(symmetrize(T), T, atol=1e-15)


def test_unfolding_norm_bounds_the_operator_norm():
    rng = np.random.default_rng(1)
    T = symmetrize(rng.standard_normal((2, 2, 2)))
    theta = np.linspace(0, 2 * np.pi, 20001)
    X = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    vals = contract(T[None], X[None], 3)[0]
    assert unfolding_norm(T[None])[0] >= np.max(np.abs(vals)) - 1e-12


@pytest.mark.parametrize(
    "bad,match",
    [
        (np.zeros((3, 3)), "order p >= 3"),
        (np.zeros((3, 3, 4)), "cubical"),
        (np.zeros((1, 1, 1)), "n >= 2"),
        (np.full((2, 2, 2), np.nan), "NaN"),
        (np.arange(8.0).reshape(2, 2, 2), "not symmetric"),
        (np.zeros((2, 2, 2), dtype=complex), "expected a real array, received a complex"),
    ],
)
def test_bad_tensors_are_rejected_with_named_reason(bad, match):
    with pytest.raises(ValueError, match=match):
        check_symmetric_tensor(bad, "T")


def test_bad_sod_inputs():
    with pytest.raises(ValueError, match="p: expected"):
        sod_tensor([1.0], np.eye(3, 1), 2)
    with pytest.raises(ValueError, match="not orthonormal"):
        sod_tensor([1.0, 1.0], np.ones((3, 2)), 3)
    with pytest.raises(ValueError, match="r: expected"):
        identity_basis(3, 4)
    with pytest.raises(ValueError, match="lambdas: expected 2 values"):
        sod_tensor([1.0], np.eye(3, 2), 3)


def test_symmetry_is_judged_per_tensor_and_at_any_scale():
    e = np.zeros((2, 2, 2))
    e[0, 0, 1] = 1.0  # asymmetric
    big = np.full((2, 2, 2), 1.7e308)
    check_symmetric_tensor(big, "T")  # differences of huge entries must not overflow
    with pytest.raises(ValueError, match="not symmetric"):
        check_symmetric_tensor(np.stack([big, 1e-200 * e]), "Ts", batched=True)
    with pytest.raises(ValueError, match="empty batch"):
        check_symmetric_tensor(np.zeros((0, 2, 2, 2)), "Ts", batched=True)


@pytest.mark.parametrize("bad", ["abc", 1.5, -1, True, [0, "x"]])
def test_bad_rng_is_named(bad):
    with pytest.raises(ValueError, match="rng: expected"):
        as_rng_list(bad, 2)


def test_rng_list_accepts_every_seed_like():
    gens = as_rng_list([0, np.int64(1), np.random.SeedSequence(2), np.random.PCG64(3)], 4)
    assert all(isinstance(g, np.random.Generator) for g in gens)
    assert len(as_rng_list(np.random.PCG64(3), 3)) == 3


def test_unfolding_norm_is_scale_equivariant_and_padded():
    rng = np.random.default_rng(2)
    T = symmetrize(rng.standard_normal((3, 3, 3)))
    ref = unfolding_norm(T[None])[0]
    exact = np.linalg.norm(T.reshape(3, 9), 2)
    assert exact <= ref <= exact * (1 + 1e-12)
    for j in (-1000, -3, 5, 1000):
        assert unfolding_norm(np.ldexp(T, j)[None])[0] == np.ldexp(ref, j)


def test_rng_is_keyword_only():
    from sroa_dist.tensors import random_orthonormal_basis

    with pytest.raises(TypeError):
        random_orthonormal_basis(5, 3, 11)
