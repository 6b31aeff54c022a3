"""Fuzz campaign, the Python API: random tensors and arguments for the tensor functions.

``rank_one``, ``rank_one_batch``, ``sroa``, ``sroa_batch``, ``operator_norm``,
``operator_norm_batch``, ``scale_to_opnorm`` and ``symmetrize`` get random arrays -- valid
symmetric tensors at every scale from 1e-300 to 1e300 (and zero), and arrays with NaN or inf,
the wrong shape or number of axes, not cubical, not symmetric, of integer, boolean, complex or
object dtype, empty -- and random other arguments (method, rank, gap_tol, rng, options). The
contract: a valid call returns a result whose numbers are finite (a unit vector, a value within
its bounds); anything else raises :class:`sroa_dist.errors.InputError` with a one-line message
naming the argument and a hint -- never a raw numpy/scipy error, a hang, or NaN in a result.

Left out on purpose: ``certificate=True`` (its checks with local methods are another change's).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import sroa_dist
from tests.support.fuzz import FUZZ, assert_api_refusal, no_hang

# ---- tensors ---------------------------------------------------------------------------------


@st.composite
def symmetric(draw, batch: int | None = None) -> np.ndarray:
    """A finite symmetric tensor (a stack of ``batch`` when given) at a random scale."""
    n, p = draw(st.integers(2, 4)), draw(st.sampled_from([3, 3, 4]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    shape = ((batch,) if batch else ()) + (n,) * p
    kind = draw(st.sampled_from(["normal", "sod", "zero", "rank one", "tiny entries"]))
    if kind == "zero":
        return np.zeros(shape)
    if kind == "sod":
        one = sroa_dist.make_instance(n, p, noise="gaussian", sigma=0.05, rng=seed).T_hat
        T = np.broadcast_to(one, shape).copy()
    elif kind == "rank one":
        x = rng.standard_normal(n)
        T = np.broadcast_to(sroa_dist.sod_tensor([1.0], x[:, None] / np.linalg.norm(x), p), shape)
        T = T.copy()
    else:
        T = sroa_dist.symmetrize(rng.standard_normal(shape), batched=bool(batch))
        if kind == "tiny entries":  # a few entries far below the rest
            T = T * np.where(rng.random(shape) < 0.5, 1e-200, 1.0)
            T = sroa_dist.symmetrize(T, batched=bool(batch))
    scale = 10.0 ** draw(st.integers(-300, 300))
    event(f"valid: {kind}")
    return T * scale


@st.composite
def broken(draw, batch: bool = False) -> tuple[object, str]:
    """``(array, what is wrong)``: an input every tensor function must refuse."""
    base = draw(symmetric(2 if batch else None))
    what = draw(
        st.sampled_from(
            [
                "nan",
                "inf",
                "not cubical",
                "order 2",
                "order 1",
                "scalar",
                "n = 1",
                "empty",
                "asymmetric",
                "complex",
                "object",
                "strings",
                "none",
                "ragged",
                "overflow",
            ]
        )
    )
    event(f"broken: {what}")
    n = base.shape[-1]
    if what in ("nan", "inf"):
        T = base.copy()
        flat = T.reshape(-1)
        flat[draw(st.integers(0, flat.size - 1))] = np.nan if what == "nan" else -np.inf
        return T, what
    if what == "not cubical":
        return np.zeros(base.shape[:-1] + (n + 1,)), what
    if what == "order 2":
        return np.eye(n) if not batch else np.stack([np.eye(n)] * 2), what
    if what == "order 1":
        return np.ones(n) if not batch else np.ones((2, n)), what
    if what == "scalar":
        return np.float64(draw(st.floats(allow_nan=True))), what
    if what == "n = 1":
        return np.ones(((2,) if batch else ()) + (1, 1, 1)), what
    if what == "empty":
        return np.zeros(draw(st.sampled_from([(0,), (0, 0, 0), (2, 0, 0, 0), (0, 3, 3, 3)]))), what
    if what == "asymmetric":
        T = base.copy() + 1.0  # the 1.0 keeps a zero tensor from staying symmetric
        T[..., 0, 1, 0] += 0.5 * (1 + np.max(np.abs(T)))
        return T, what
    if what == "complex":
        return base.astype(complex) * draw(st.sampled_from([1, 1j])), what
    if what == "object":
        return base.astype(object), what  # numbers in an object array: the numbers count
    if what == "strings":
        return np.full(base.shape, "x", dtype=object), what
    if what == "none":
        return None, what
    if what == "ragged":
        return [[[1.0, 2.0], [3.0]], [[1.0, 2.0], [3.0, 4.0]]], what
    return np.full(base.shape, draw(st.sampled_from([1e308, -1.7e308]))), what


#: Input arrays that are not broken: an integer or boolean symmetric tensor, an object array
#: of numbers, nested lists -- converted to float64 as documented.
ACCEPTED_AS_FLOAT = ("object",)

# ---- the calls -------------------------------------------------------------------------------

_METHODS = st.sampled_from(["sshopm", "power", "sshopm", "power", "certified"])


def _check_rank_one(res, T) -> None:
    assert np.all(np.isfinite(res.lam)), res
    assert np.all(np.isfinite(res.x)), res
    norms = np.linalg.norm(np.atleast_2d(res.x), axis=-1)
    zero = np.all(np.reshape(T, (len(norms), -1)) == 0, axis=-1)
    assert np.all((np.abs(norms - 1) < 1e-8) | zero), res
    ub = np.atleast_1d(res.upper_bound)
    lam = np.atleast_1d(res.lam)
    # The bound holds where there is one (a local method's is nan only if it has none).
    has = ~np.isnan(ub)
    assert np.all(ub[has] >= lam[has] - 1e-9 * np.maximum(1, np.abs(lam[has]))), res


def _check_sroa(res, T) -> None:
    for field in ("lambdas", "vectors"):
        assert np.all(np.isfinite(getattr(res, field))), (field, res)


def _check_norm(res, T) -> None:
    assert np.all(np.isfinite(res.value)) and np.all(np.asarray(res.value) >= 0), res
    assert np.all(np.asarray(res.lower) <= np.asarray(res.upper) * (1 + 1e-9) + 1e-300), res


FUNCTIONS = {
    "rank_one": (lambda T, m, rng: sroa_dist.rank_one(T, m, rng=rng), False, _check_rank_one, "T"),
    "rank_one_batch": (
        lambda T, m, rng: sroa_dist.rank_one_batch(T, m, rng=rng),
        True,
        _check_rank_one,
        "Ts",
    ),
    "sroa": (lambda T, m, rng: sroa_dist.sroa(T, method=m, rng=rng), False, _check_sroa, "T"),
    "sroa_batch": (
        lambda T, m, rng: sroa_dist.sroa_batch(T, method=m, rng=rng),
        True,
        _check_sroa,
        "Ts",
    ),
    "operator_norm": (
        lambda T, m, rng: sroa_dist.operator_norm(T, m, rng=rng),
        False,
        _check_norm,
        "E",
    ),
    "operator_norm_batch": (
        lambda T, m, rng: sroa_dist.operator_norm_batch(T, m, rng=rng),
        True,
        _check_norm,
        "E",
    ),
}


def _call(fn, *args):
    with no_hang(), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a numpy overflow is a breach too
        return fn(*args)


@settings(FUZZ, max_examples=30)
@given(data=st.data())
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_valid_tensor_gets_a_finite_answer(name, data):
    call, batched, check, _ = FUNCTIONS[name]
    T = data.draw(symmetric(data.draw(st.integers(1, 3)) if batched else None), label="T")
    method = data.draw(_METHODS, label="method")
    if method == "certified" and (T.shape[-1] > 3 or T.ndim - batched > 3):
        method = "sshopm"  # the relaxation at n = 4 or p = 4 costs seconds: kept to n, p = 3
    res = _call(call, T, method, data.draw(st.integers(0, 2**32), label="rng"))
    check(res, T)


@settings(FUZZ, max_examples=30)
@given(data=st.data())
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_broken_tensor_is_refused_naming_it(name, data):
    call, batched, check, arg = FUNCTIONS[name]
    T, what = data.draw(broken(batched), label="T")
    try:
        res = _call(call, T, data.draw(_METHODS, label="method"), 0)
    except Exception as exc:  # noqa: BLE001  (which exception is what the test checks)
        # A value beyond float64 is the tensor's, whichever argument carried it.
        assert_api_refusal(exc, arg, *(["the tensor"] if what == "overflow" else []))
        return
    assert what in ACCEPTED_AS_FLOAT, f"{what}: accepted, returned {res}"
    check(res, np.asarray(T, dtype=float))


# ---- the other arguments ---------------------------------------------------------------------

_BAD_SCALARS = [
    -1,
    0,
    2.5,
    float("nan"),
    float("inf"),
    -float("inf"),
    "3",
    None,
    True,
    [1],
    2**70,
    1e-320,
]


@settings(FUZZ, max_examples=40)
@given(data=st.data())
@pytest.mark.parametrize(
    "argument", ["method", "rank", "gap_tol", "rng", "deflation", "option", "eps", "norm"]
)
def test_a_bad_argument_is_refused_naming_it(argument, data):
    """One argument out of range or of the wrong type, the tensor valid: refused naming the
    argument, or (a value that happens to be valid) answered with finite numbers."""
    T = sroa_dist.make_instance(3, 3, noise="gaussian", sigma=0.05, rng=1).T_hat
    value = data.draw(
        st.one_of(
            st.sampled_from(_BAD_SCALARS),
            st.text(max_size=8),
            st.floats(),
            st.integers(-(2**80), 2**80),
        ),
        label=argument,
    )
    names = {
        "method": ["method"],
        "rank": ["rank"],
        "gap_tol": ["gap_tol"],
        "rng": ["rng", "seed"],
        "deflation": ["deflation"],
        "option": ["n_starts"],
        "eps": ["eps"],
        "norm": ["norm"],
    }[argument]
    if argument == "method":
        call = lambda: sroa_dist.rank_one(T, value, rng=0)  # noqa: E731
    elif argument == "rank":
        call = lambda: sroa_dist.sroa(T, value, "sshopm", rng=0)  # noqa: E731
    elif argument == "gap_tol":
        call = lambda: sroa_dist.rank_one(T, "certified", rng=0, gap_tol=value)  # noqa: E731
    elif argument == "rng":
        call = lambda: sroa_dist.rank_one(T, "sshopm", rng=value)  # noqa: E731
    elif argument == "deflation":
        call = lambda: sroa_dist.sroa(T, method="sshopm", rng=0, deflation=value)  # noqa: E731
    elif argument == "option":
        call = lambda: sroa_dist.rank_one(T, "sshopm", rng=0, n_starts=value)  # noqa: E731
    elif argument == "eps":
        call = lambda: sroa_dist.scale_to_opnorm(T, value, norm=1.0)  # noqa: E731
    else:
        call = lambda: sroa_dist.scale_to_opnorm(T, 0.1, norm=value)  # noqa: E731
    try:
        res = _call(call)
    except Exception as exc:  # noqa: BLE001
        assert_api_refusal(exc, *names)
        event(f"{argument}: refused")
        return
    event(f"{argument}: accepted")
    if isinstance(res, np.ndarray):
        assert np.all(np.isfinite(res))
    elif hasattr(res, "lambdas"):
        _check_sroa(res, T)
    else:
        _check_rank_one(res, T)
        assert not (isinstance(value, float) and math.isnan(value)), res


# ---- what the campaign found: kept as explicit cases ----------------------------------------


def _tensor():
    return sroa_dist.make_instance(3, 3, noise="gaussian", sigma=0.05, rng=1).T_hat


FOUND = {
    # numpy's own ValueError from np.iscomplexobj.
    "ragged list": (lambda: sroa_dist.rank_one([[[1.0, 2.0], [3.0]], [[1.0]]]), "T"),
    # int(nan) / int(inf) in the rank check.
    "rank nan": (lambda: sroa_dist.sroa(_tensor(), float("nan"), "sshopm"), "rank"),
    "rank inf": (lambda: sroa_dist.sroa(_tensor(), float("inf"), "sshopm"), "rank"),
    # np.isfinite of an int beyond 64 bits: numpy's TypeError.
    "gap_tol 10^400": (lambda: sroa_dist.rank_one(_tensor(), "sshopm", gap_tol=10**400), "gap_tol"),
    # Passed the check; the process was then killed for memory.
    "n_starts 2^40": (lambda: sroa_dist.rank_one(_tensor(), "sshopm", n_starts=2**40), "n_starts"),
    # Text reached np.isfinite (TypeError); a subnormal norm returned inf entries.
    "eps text": (lambda: sroa_dist.scale_to_opnorm(_tensor(), "3", norm=1.0), "eps"),
    "norm 1e-320": (lambda: sroa_dist.scale_to_opnorm(_tensor(), 0.1, norm=1e-320), "norm"),
    # Named 'Ts', an argument rank_one does not have.
    "value beyond float64": (lambda: sroa_dist.rank_one(np.full((2, 2, 2), 1e308)), "the tensor"),
}


@pytest.mark.parametrize("case", sorted(FOUND))
def test_what_the_campaign_found_is_refused(case):
    call, name = FOUND[case]
    with pytest.raises(Exception) as info:  # noqa: PT011  (the type is what is checked)
        _call(call)
    assert_api_refusal(info.value, name)


@pytest.mark.parametrize("method", ["certified", "sos"])
def test_sroa_of_a_tensor_of_lower_rank_than_its_steps_answers(method):
    """A step that takes out all that is left leaves a residual of rounding, not symmetric to
    its own scale: the relaxation refused it (InputError on a valid tensor)."""
    x = np.array([0.6, 0.8, 0.0])
    T = sroa_dist.sod_tensor([1.0], x[:, None], 3)  # rank one, three steps
    res = _call(lambda: sroa_dist.sroa(T, method=method, rng=0))
    _check_sroa(res, T)
    assert abs(res.lambdas[0] - 1.0) < 1e-9 and np.all(np.abs(res.lambdas[1:]) < 1e-9)
