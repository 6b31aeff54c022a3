"""Whole powers under a rule (:mod:`sroa_dist.integer_powers`): ``"pow"`` is NumPy's ``c**k``
bit for bit, ``"products"`` the left-to-right products; the squares agree under both; the
rule holds inside its block and in its own thread only, and an unknown rule is refused."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from sroa_dist.integer_powers import integer_power_rule, ipow
from sroa_dist.methods import METHODS
from sroa_dist.methods.records import OptionError


def _bits(a):
    return np.asarray(a, dtype=float).view(np.int64)


C = np.random.default_rng(0).standard_normal((20, 64))


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 5, 6])
def test_each_rule_gives_its_own_bits(k):
    assert np.array_equal(_bits(ipow(C, k)), _bits(C**k))  # no rule set: pow
    with integer_power_rule("pow"):
        assert np.array_equal(_bits(ipow(C, k)), _bits(C**k))
    with integer_power_rule("products"):
        got = ipow(C, k)
    want = C**0 if k == 0 else C.copy()
    for _ in range(k - 1):
        want = want * C
    assert np.array_equal(_bits(got), _bits(want))
    np.testing.assert_allclose(got, C**k, rtol=4 * np.finfo(float).eps, atol=0)
    if k <= 2:
        assert np.array_equal(_bits(got), _bits(C**k))  # powers 0-2: the same bits under both
    else:
        assert not np.array_equal(_bits(got), _bits(C**k))  # really products


def test_the_rule_ends_with_its_block_and_stays_in_its_thread():
    seen = {}

    def other():
        seen["other"] = ipow(C, 3)

    with integer_power_rule("products"):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        inside = ipow(C, 3)
        with pytest.raises(RuntimeError):
            with integer_power_rule("pow"):
                assert np.array_equal(_bits(ipow(C, 3)), _bits(C**3))
                raise RuntimeError("leaves the inner block")
        assert np.array_equal(_bits(ipow(C, 3)), _bits(inside))  # the outer rule again
    assert np.array_equal(_bits(seen["other"]), _bits(C**3))  # a new thread: the default
    assert np.array_equal(_bits(ipow(C, 3)), _bits(C**3))


def test_an_unknown_rule_is_refused_naming_the_option():
    with pytest.raises(ValueError, match="integer_powers: expected one of"):
        with integer_power_rule("fast"):
            pass
    with pytest.raises(OptionError, match="integer_powers") as err:
        METHODS["sshopm"].power_rule({"integer_powers": "fast"})
    assert err.value.option == "integer_powers"


def test_a_method_pins_its_rule():
    """sshopm's current revision computes by products, its revision 9 by pow; a method
    without the option (power) by pow."""
    s = METHODS["sshopm"]
    for options, rule in (({}, "products"), (s.options_at(9), "pow")):
        with s.power_rule(options):
            assert np.array_equal(_bits(ipow(C, 3)), _bits(C * C * C)) == (rule == "products")
    with METHODS["power"].power_rule({}):
        assert np.array_equal(_bits(ipow(C, 3)), _bits(C**3))
