"""BLAS threads: the numerical front doors run with the configured count (default one), the
previous setting comes back after them, and processes about to start get the same count."""

from __future__ import annotations

import numpy as np
import pytest

import sroa_dist as sd
from sroa_dist.errors import InputError
from sroa_dist.methods import unregister_method
from sroa_dist.methods.builtin import MethodOutput
from sroa_dist.threads import (
    BLAS_THREAD_VARIABLES,
    BLAS_THREADS_ENV,
    blas_thread_env,
    blas_threads,
    configured_blas_threads,
    current_blas_threads,
    limit_blas_threads,
)


@pytest.fixture
def two_threads():
    """The process's BLAS at two threads for the test (the default of a plain process on this
    machine), restored afterwards; returns each library's setting (a BLAS built without
    threads, such as the one SCS bundles, stays at one)."""
    before = current_blas_threads()
    limit_blas_threads(2)
    yield current_blas_threads()
    for n in set(before.values()):
        limit_blas_threads(n)


def test_blas_threads_limits_inside_and_restores(two_threads):
    assert 2 in two_threads.values()
    with blas_threads():
        assert set(current_blas_threads().values()) == {1}
    assert current_blas_threads() == two_threads


def test_a_front_door_solves_with_one_blas_thread(two_threads, request):
    seen = []

    def spy(Ts, rngs):  # a method that records the BLAS threads its solve runs with
        seen.append(current_blas_threads())
        x = np.zeros((Ts.shape[0], Ts.shape[1]))
        x[:, 0] = 1.0
        ones = np.ones(Ts.shape[0], dtype=np.int64)
        return MethodOutput(x=x, n_starts=ones, n_iter=ones)

    sd.register_method("blas-spy", spy, overwrite=True)
    request.addfinalizer(lambda: unregister_method("blas-spy"))
    inst = sd.make_instance(4, 3, noise="gaussian", sigma=0.01, rng=0)
    sd.rank_one(inst.T_hat, method="blas-spy", rng=0)
    sd.sroa(inst.T_hat, method="blas-spy", rng=0)
    assert seen and all(set(s.values()) == {1} for s in seen)
    assert current_blas_threads() == two_threads  # the caller's setting is back


def test_the_count_comes_from_the_environment(monkeypatch, two_threads):
    monkeypatch.setenv(BLAS_THREADS_ENV, "2")
    assert configured_blas_threads() == 2
    limit_blas_threads(1)
    with blas_threads():
        assert current_blas_threads() == two_threads
    assert blas_thread_env() == dict.fromkeys(BLAS_THREAD_VARIABLES, "2")
    monkeypatch.setenv(BLAS_THREADS_ENV, "zero")
    with pytest.raises(InputError, match=f"{BLAS_THREADS_ENV}: expected an integer >= 1") as info:
        configured_blas_threads()
    assert info.value.hint


def test_a_new_process_gets_one_thread_by_default(monkeypatch):
    monkeypatch.delenv(BLAS_THREADS_ENV, raising=False)
    assert blas_thread_env() == dict.fromkeys(BLAS_THREAD_VARIABLES, "1")
