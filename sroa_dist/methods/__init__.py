"""Best rank-one approximation of symmetric tensors: one front door over a registry of methods.

``rank_one(T, method=...)`` maximises ``T x^p`` over the unit sphere (odd ``p``) or ``|T x^p|``
(even ``p``, paper Section 3.3; ``lam`` keeps its sign). The best rank-one approximation in
Frobenius norm is then ``lam · x^{⊗p}`` (Algorithm 1, line 3).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InputError, InputTypeError
from ..operators import TensorOperator
from ..tensors import FloatArray, as_rng_list, check_symmetric_tensor
from ..threads import single_blas
from .ascent import (
    CONVERGED_SPECTRAL,
    DEFAULT_N_STARTS,
    LARGE_N,
    Deflation,  # noqa: F401  (the type of a local method's deflation argument)
    ascent_deflated,
    contraction_starts,
    deflated_contract,
    deflated_values,
    large_engine,
    newton_polish,
    power_iterations,
    random_starts,
    spectral_starts,
)
from .builtin import (
    DEFAULT_TIME_BUDGET,
    GAP_TOL,
    IMPLICIT_BYTES,
    MethodOutput,
    aghkt_budget,
    relaxation_cost,
    relaxation_tractable,
)
from .cost import CERTIFIED_NORM_METHOD, certified_tractable, resolve_norm_method, solve_cost
from .finishing import RankOneResult, certifies, finish_step, normalize
from .operator_step import check_local_method, operator_rank_one
from .records import (  # noqa: F401  (method_options, unregister_method: re-exported)
    METHODS,
    Method,
    OptionError,
    check_options,
    current_revisions,
    memory_estimate,
    method_options,
    register_method,
    resolve_method,
    revision_options,
    unregister_method,
)

__all__ = [
    "CONVERGED_SPECTRAL",
    "DEFAULT_TIME_BUDGET",
    "METHODS",
    "Method",
    "MethodOutput",
    "OptionError",
    "RankOneResult",
    "check_options",
    "memory_estimate",
    "rank_one",
    "rank_one_batch",
    "register_method",
    "resolve_method",
    "RngLike",
    "method_options",
    "rank_one_of_checked",
    "unregister_method",
    "relaxation_cost",
    "relaxation_tractable",
    "CERTIFIED_NORM_METHOD",
    "DEFAULT_N_STARTS",
    "LARGE_N",
    "Deflation",
    "GAP_TOL",
    "IMPLICIT_BYTES",
    "aghkt_budget",
    "ascent_deflated",
    "certified_tractable",
    "certifies",
    "check_local_method",
    "current_revisions",
    "deflated_contract",
    "deflated_values",
    "large_engine",
    "finish_step",
    "newton_polish",
    "normalize",
    "power_iterations",
    "random_starts",
    "resolve_norm_method",
    "revision_options",
    "solve_cost",
    "spectral_starts",
    "contraction_starts",
]

RngLike = np.random.Generator | int | np.random.SeedSequence | None


def _expand(out: MethodOutput, keep: NDArray[np.intp], B: int, n: int) -> MethodOutput:
    """Results of the non-zero tensors ``keep`` spread over the whole batch: the zero tensors
    get ``x = e_1``, zero counts and times (their answer is exact without solving)."""
    full: dict[str, Any] = {}
    for field in dataclasses.fields(out):
        val = getattr(out, field.name)
        if isinstance(val, np.ndarray) and val.ndim >= 1 and val.shape[0] == len(keep):
            # Object fields (certificates) get None for the zero tensors: nothing was solved.
            arr = (
                np.full((B,) + val.shape[1:], None, dtype=object)
                if val.dtype == object
                else np.zeros((B,) + val.shape[1:], dtype=val.dtype)
            )
            arr[keep] = val
            full[field.name] = arr
        else:
            full[field.name] = val
    x = np.zeros((B, n))
    x[:, 0] = 1.0
    x[keep] = out.x
    full["x"] = x
    if full["upper_bound"] is not None:
        full["upper_bound"] = np.asarray(full["upper_bound"], dtype=float)
    return MethodOutput(**full)


def _check_certificate(method: str, certificate: Any) -> None:
    """``certificate=True`` needs a method that solves the relaxation (its options take
    ``certificate``): a local method finds a point, never a bound to certify, and was
    answered with ``certificate=None`` without a word."""
    if not isinstance(certificate, (bool, np.bool_)):
        raise InputTypeError(
            f"certificate: expected true or false; received {certificate!r}",
            "pass certificate=True or certificate=False",
        )
    if certificate and "certificate" not in resolve_method(method).options:
        able = sorted(name for name, m in METHODS.items() if "certificate" in m.options)
        raise InputError(
            f"certificate: method {method!r} cannot produce a certificate (it is a local "
            "method: it finds a point, not an upper bound to certify); received "
            "certificate=True",
            f"use a method that solves the moment relaxation ({', '.join(able)}), or "
            "certificate=False",
        )


@single_blas
def rank_one_batch(
    Ts: ArrayLike,
    method: str = "certified",
    *,
    rng: RngLike | Sequence[RngLike] = None,
    gap_tol: float = GAP_TOL,
    certificate: bool = False,
    **options: Any,
) -> RankOneResult:
    """Best rank-one approximation of every tensor in a stack ``(B, n, ..., n)``.

    Same as :func:`rank_one` with a leading batch axis on every result field. ``rng`` is one
    seed-like (spawned into B streams) or B per-instance seed-likes; with the same per-instance
    seeds the results are bitwise identical to one-at-a-time calls.

    Every method runs on ``T / 2^k`` with ``‖T / 2^k‖_F`` in ``[1/2, 1)``
    (:func:`sroa_dist.tensors.normalizing_exponents`) and the value and bound are scaled back
    by ``2^k``, so results do not depend on the tensor's scale and nothing underflows or
    overflows between 1e-300 and 1e300. Dividing by a power of two is exact, so for
    ``2^-64 <= ‖T‖_F < 2^64`` it would change no bit of the result and is skipped. Zero
    tensors get the exact answer ``lam = upper_bound = 0`` (certified) without a solve.
    """
    if not isinstance(Ts, TensorOperator):
        _check_certificate(method, certificate)  # an operator's own refusal names it
    if isinstance(Ts, TensorOperator):  # matrix-free: a local step, never certified
        fn = resolve_method(method)
        check_options(method, options, n=Ts.shape[1], p=Ts.ndim - 1)
        rngs = as_rng_list(rng, Ts.shape[0])
        return operator_rank_one(Ts, method, fn, rngs, certificate, options, gap_tol=gap_tol)
    Ts = check_symmetric_tensor(Ts, "Ts", batched=True)
    return rank_one_of_checked(
        Ts, method, rng=rng, gap_tol=gap_tol, certificate=certificate, **options
    )


def rank_one_of_checked(
    Ts: FloatArray,
    method: str,
    *,
    rng: RngLike | Sequence[RngLike] = None,
    gap_tol: float = GAP_TOL,
    certificate: bool = False,
    **options: Any,
) -> RankOneResult:
    """:func:`rank_one_batch` on a float64 stack that already passed
    :func:`~sroa_dist.tensors.check_symmetric_tensor`, such as SROA's residuals (symmetric by
    construction; checking each again cost about 5 % of a Figure-2 SROA)."""
    fn = resolve_method(method)
    accepted = fn.options
    if certificate and "certificate" in accepted:
        options = {**options, "certificate": True}
    if "gap_tol" in accepted:
        # Methods that can stop once a step is certified (the relaxation) are told the
        # tolerance, so they do not keep iterating past what certification asks for.
        options = {**options, "gap_tol": gap_tol}
    B, n, p = Ts.shape[0], Ts.shape[1], Ts.ndim - 1
    checked = check_options(method, {**options, "gap_tol": gap_tol}, n=n, p=p)
    if "relaxation" in options:  # parsed once, there: the method reads the parsed table
        options = {**options, "relaxation": checked["relaxation"]}
    rngs = as_rng_list(rng, B)
    norm = normalize(Ts)
    keep = np.flatnonzero(~norm.zero)
    t0 = time.perf_counter()
    if len(keep) == B:
        out = MethodOutput.coerce(fn(norm.T, rngs, **options), method)
    elif len(keep):
        sub = norm.T[keep]
        part = MethodOutput.coerce(fn(sub, [rngs[i] for i in keep], **options), method)
        out = _expand(part, keep, B, n)
    else:
        none = np.zeros(0, dtype=np.int64)
        out = _expand(MethodOutput(x=np.zeros((0, n)), n_starts=none, n_iter=none), keep, B, n)
    elapsed = time.perf_counter() - t0
    return finish_step(
        norm, out, method, gap_tol=gap_tol, elapsed=elapsed, certificate=certificate
    ).result


@single_blas
def rank_one(
    T: ArrayLike,
    method: str = "certified",
    *,
    rng: RngLike = None,
    gap_tol: float = GAP_TOL,
    certificate: bool = False,
    **options: Any,
) -> RankOneResult:
    """Best rank-one approximation ``lam · x^{⊗p}`` of a symmetric tensor.

    Parameters
    ----------
    T : (n,)*p array_like
        Symmetric tensor, ``p >= 3``, ``n >= 2``. Or a matrix-free operator
        (:func:`sroa_dist.structured_tensor`): local methods only, never certified.
    method : str
        ``"certified"`` (default: local multi-start + moment-relaxation certificate),
        ``"sos"`` (relaxation only), ``"sshopm"`` (multi-start shifted power method) or
        ``"power"`` (robust tensor power method). See each method's options with
        :func:`sroa_dist.methods.method_options`.
    rng : Generator, int or SeedSequence, optional
        Source of the random starts. ``None`` is the fixed default seed 0, so a call that names
        no seed gives the same bits every time.
    gap_tol : float
        Certification tolerance relative to ``‖T‖_F``.
    certificate : bool
        Attach the relaxation's auditable SOS certificate (``result.certificate``, checkable
        with ``result.certificate.verify(T)``); ``None`` where no relaxation ran (``certified``
        skips it for a size past its budget, and a zero tensor needs none). Only methods that
        solve the relaxation (``certified``, ``sos``) can give one: with a local method
        (``sshopm``, ``power``) or a matrix-free operator ``certificate=True`` is an
        ``InputError``.

    Returns
    -------
    RankOneResult
    """
    T = T.as_batch() if isinstance(T, TensorOperator) else check_symmetric_tensor(T, "T")[None]
    res = rank_one_batch(T, method, rng=[rng], gap_tol=gap_tol, certificate=certificate, **options)
    return res[0]
