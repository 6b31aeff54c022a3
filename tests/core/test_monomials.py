"""The one indexer of monomials and index multisets (sroa_dist/monomials.py)."""

import itertools
import math

import numpy as np
import pytest

from sroa_dist.monomials import (
    MonomialKeys,
    exponent_tuples,
    monomial_exponents,
    multinomial,
    multiset_rank,
    multiset_tuples,
)


@pytest.mark.parametrize("n,d", [(1, 3), (3, 0), (4, 3), (5, 2)])
def test_multiset_tuples_are_itertools_order(n, d):
    combos = list(itertools.combinations_with_replacement(range(n), d))
    want = np.array(combos, dtype=np.int64).reshape(len(combos), d)
    np.testing.assert_array_equal(multiset_tuples(n, d), want)
    assert not multiset_tuples(n, d).flags.writeable


@pytest.mark.parametrize("n,d", [(3, 3), (6, 2), (2, 5)])
def test_rank_inverts_the_tuples(n, d):
    t = multiset_tuples(n, d)
    np.testing.assert_array_equal(multiset_rank(t.T, n), np.arange(len(t)))


def test_exponent_tuples_round_trip_and_padding():
    E = np.vstack([monomial_exponents(4, k) for k in range(4)])
    t = exponent_tuples(E, 3, 4)
    back = np.zeros_like(E)
    for row, tup in enumerate(t):
        for i in tup[tup < 4]:
            back[row, i] += 1
    np.testing.assert_array_equal(back, E)
    assert np.all(np.diff(t, axis=1) >= 0)  # sorted, pad last
    with pytest.raises(ValueError, match="degree"):
        exponent_tuples(E, 2, 4)


def test_monomial_exponents_and_multinomials():
    E = monomial_exponents(3, 3)
    assert E.shape == (math.comb(5, 3), 3)
    assert np.all(E.sum(axis=1) == 3)
    # sum of multinomials over degree-d monomials = n^d
    assert multinomial(E).sum() == 27


def test_keys_are_a_bijection_closed_under_products():
    n, D = 4, 4
    kx = MonomialKeys(n, D)
    E = np.vstack([monomial_exponents(n, k) for k in range(D + 1)])
    assert sorted(kx.of(E).tolist()) == list(range(math.comb(n + D, D)))
    a, b = E[:15], E[5:20]
    ok = (a + b).sum(1) <= D
    np.testing.assert_array_equal(
        kx.product(kx.tuples(a[ok]), kx.tuples(b[ok])), kx.of(a[ok] + b[ok])
    )
    with pytest.raises(ValueError, match="2\\^62"):
        MonomialKeys(10**6, 6)
