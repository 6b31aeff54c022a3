"""Best rank-one approximation of symmetric tensors: one front door over a registry of methods.

``rank_one(T, method=...)`` maximises ``T x^p`` over the unit sphere (odd ``p``) or ``|T x^p|``
(even ``p``, paper Section 3.3; ``lam`` keeps its sign). The best rank-one approximation in
Frobenius norm is then ``lam · x^{⊗p}`` (Algorithm 1, line 3).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import time
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._registry import check_entry
from .ascent import (  # noqa: F401  (Deflation, _contract, newton_polish: re-exported)
    Deflation,
    _contract,
    _values,
    newton_polish,
)
from .matrix_free import TensorOperator, operator_rank_one
from .methods import (  # noqa: F401  (re-exported)
    COST_MODEL,
    DEFAULT_TIME_BUDGET,
    GAP_TOL,
    MethodOutput,
    _method_certified,
    _method_power,
    _method_sos,
    _method_sshopm,
    _object_array,
    relaxation_cost,
    relaxation_tractable,
)
from .tensors import (
    as_rng_list,
    check_symmetric_tensor,
    normalized_unfolding_norm,
    normalizing_exponents,
    scale_up_bound,
)

__all__ = [
    "DEFAULT_TIME_BUDGET",
    "METHODS",
    "MethodOutput",
    "OptionError",
    "RankOneResult",
    "check_options",
    "memory_estimate",
    "rank_one",
    "rank_one_batch",
    "register_method",
    "relaxation_cost",
    "relaxation_tractable",
]

FloatArray = NDArray[np.float64]
RngLike = np.random.Generator | int | np.random.SeedSequence | None

#: Tensors with ``2^-64 <= ‖T‖_F < 2^64`` are solved as given (see :func:`rank_one_batch`).
_UNSCALED_EXPONENT = 64


@dataclasses.dataclass(frozen=True)
class RankOneResult:
    """Result of a best rank-one approximation (fields gain a leading batch axis when batched).

    Attributes
    ----------
    lam : float
        ``T x^p`` at the returned ``x`` (signed; for even p the sign of the extremum found).
    x : (n,) ndarray
        Unit-norm maximiser of ``T x^p`` (odd p) or ``|T x^p|`` (even p).
    upper_bound : float
        A valid upper bound of ``max T x^p`` (odd p) or ``max |T x^p|`` (even p): from the
        moment relaxation's validated dual where it was solved, otherwise the spectral norm
        of the ``n × n^{p-1}`` unfolding.
    certified : bool
        ``upper_bound − |lam| ≤ gap_tol · ‖T‖_F``: ``x`` is a proven global optimum.
    method, n_starts, n_iter, message, solve_time
        Method name, random starts used, iterations of the local phase, a human-readable
        status, and seconds spent (batched local phases are shared equally by the instances).
    certificate : Certificate or None
        With ``certificate=True``: the auditable SOS certificate of the relaxation's bound
        (:class:`sroa_dist.certificate.Certificate`; both signs for even p), ``None`` where no
        relaxation ran (local methods, or ``certified`` above its size cap). Batched: an
        object array. Its ``verify(T)`` re-derives a bound ``>= upper_bound`` in plain numpy
        (equal up to rounding unless the unfolding bound was the smaller one).
    n_best : int or None
        How many local starts reached the best value (within ``BEST_RTOL``): one lone start is
        a warning sign that the global maximiser's basin is small. ``None`` for methods
        without starts.
    confirmed : bool or None
        Whether two independent start sets reached the same best value (``sshopm`` with
        ``max_starts``). A confirmation is evidence, not a proof: only ``certified`` is.
    """

    lam: Any
    x: Any
    upper_bound: Any
    certified: Any
    method: str
    n_starts: Any
    n_iter: Any
    message: Any
    solve_time: Any
    certificate: Any = None
    n_best: Any = None
    confirmed: Any = None

    @property
    def gap(self) -> Any:
        """Certification gap ``upper_bound − |lam|`` (≥ 0 up to rounding)."""
        return np.asarray(self.upper_bound) - np.abs(np.asarray(self.lam))

    def __getitem__(self, i: int) -> RankOneResult:
        """The ``i``-th instance of a batched result."""
        return RankOneResult(
            lam=float(self.lam[i]),
            x=self.x[i],
            upper_bound=float(self.upper_bound[i]),
            certified=bool(self.certified[i]),
            method=self.method,
            n_starts=int(self.n_starts[i]),
            n_iter=int(self.n_iter[i]),
            message=str(self.message[i]),
            solve_time=float(self.solve_time[i]),
            certificate=None if self.certificate is None else self.certificate[i],
            n_best=None if self.n_best is None else int(self.n_best[i]),
            confirmed=None if self.confirmed is None else bool(self.confirmed[i]),
        )


MethodFn = Callable[..., MethodOutput]
_REGISTRY: dict[str, MethodFn] = {}
#: Read-only view of the rank-one methods by name (add one with :func:`register_method`);
#: every entry is tested by the same suite.
METHODS: Mapping[str, MethodFn] = MappingProxyType(_REGISTRY)


def register_method(name: str, fn: MethodFn, *, overwrite: bool = False) -> None:
    """Register a rank-one method under ``name``, so ``rank_one(T, method=name)``, SROA and
    sweep specs can use it.

    ``fn(Ts, rngs, **options) -> MethodOutput`` follows the contract documented on
    :class:`MethodOutput`; its keyword-only parameters are its options. Registering a name
    that exists is refused unless ``overwrite=True``.
    """
    check_entry(
        _REGISTRY,
        "rank-one method",
        name,
        fn,
        overwrite=overwrite,
        expected="(Ts, rngs, **options) -> MethodOutput",
    )
    _REGISTRY[name] = fn


def unregister_method(name: str) -> None:
    """Remove a method added with :func:`register_method` (the built-in ones stay)."""
    if name in _BUILTIN:
        raise ValueError(f"method {name!r} is built in and cannot be removed")
    _REGISTRY.pop(name, None)


_BUILTIN = ("certified", "sos", "sshopm", "power")
for _name, _fn in zip(
    _BUILTIN, (_method_certified, _method_sos, _method_sshopm, _method_power), strict=True
):
    register_method(_name, _fn)


def method_options(method: str) -> list[str]:
    """Names of the keyword options a method accepts."""
    sig = inspect.signature(_lookup(method))
    return [k for k, v in sig.parameters.items() if v.kind is inspect.Parameter.KEYWORD_ONLY]


def _lookup(method: str) -> MethodFn:
    try:
        return METHODS[method]
    except (KeyError, TypeError):
        raise ValueError(
            f"method: unknown rank-one method {method!r}; expected one of {sorted(METHODS)}"
        ) from None


class OptionError(ValueError):
    """A rank-one method option has an unknown name or an invalid value.

    ``option`` is the offending keyword and ``method`` the method, so callers (the sweep spec)
    can name the key in their own terms.
    """

    def __init__(self, method: str, option: str, message: str, expected: str | None = None):
        self.method, self.option, self.expected = method, option, expected
        super().__init__(message)


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_real(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, (float, np.floating))) and bool(np.isfinite(v))


def _int_at_least(lo: int) -> tuple[Callable[[Any], bool], str]:
    return (lambda v: _is_int(v) and v >= lo), f"an integer >= {lo}"


def _relaxation_keys() -> frozenset[str]:
    from .relaxation import SCS_SETTING_NAMES, SOLVE_OPTIONS

    return frozenset(SOLVE_OPTIONS) | SCS_SETTING_NAMES


#: Value rules of the options the built-in methods share, by option name (one meaning per
#: name across methods): ``(predicate, what is expected)``. Options of user-registered methods
#: that have no rule here are checked by name only.
OPTION_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "n_starts": _int_at_least(1),
    "n_iter": _int_at_least(0),
    "max_iter": _int_at_least(0),
    "tol": (lambda v: _is_real(v) and v >= 0, "a finite number >= 0"),
    "gap_tol": (lambda v: _is_real(v) and v >= 0, "a finite number >= 0"),
    "shift": (
        lambda v: v in ("adaptive", "monotone") if isinstance(v, str) else _is_real(v) and v >= 0,
        "'adaptive', 'monotone' or a finite number >= 0 (a fixed shift)",
    ),
    "polish": (lambda v: isinstance(v, (bool, np.bool_)), "true or false"),
    "max_starts": (lambda v: v is None or (_is_int(v) and v >= 0), "an integer >= 0"),
    "n_spectral": _int_at_least(0),
    "warm": (lambda v: isinstance(v, (bool, np.bool_)), "true or false"),
    "lazy": (lambda v: isinstance(v, (bool, np.bool_)), "true or false"),
    "order": (lambda v: v is None or (_is_int(v) and v >= 1), "an integer relaxation order"),
    "max_gram_size": _int_at_least(1),
    "relaxation": (
        lambda v: v is None or (isinstance(v, Mapping) and set(v) <= _relaxation_keys()),
        "a table of MomentRelaxation.solve options and SCS settings",
    ),
}

_FLAG = (lambda v: isinstance(v, (bool, np.bool_)), "true or false")
_NONNEG = (lambda v: _is_real(v) and v >= 0, "a finite number >= 0")
_POSITIVE = (lambda v: _is_real(v) and v > 0, "a finite number > 0")
#: Value rules of the ``relaxation`` sub-options (``MomentRelaxation.solve`` keywords and SCS
#: settings); keys without a rule are checked by name only.
RELAXATION_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "warmup_iters": (lambda v: v is None or (_is_int(v) and v >= 0), "an integer >= 0"),
    "warmup_chunks": _int_at_least(1),
    "refine_iters": _int_at_least(0),
    "fallback_chunk": _int_at_least(1),
    "gap_tol": _NONNEG,
    "fallback": _FLAG,
    "polish_steps": _int_at_least(0),
    "flat_tol": _NONNEG,
    "normalize": _FLAG,
    "adaptive_scale": _FLAG,
    "verbose": _FLAG,
    "scale": _POSITIVE,
    "rho_x": _POSITIVE,
    "max_iters": _int_at_least(1),
    "eps_abs": _NONNEG,
    "eps_rel": _NONNEG,
    "eps_infeas": _NONNEG,
    "alpha": (lambda v: _is_real(v) and 0 < v < 2, "a number in (0, 2)"),
    "time_limit_secs": _NONNEG,
    "acceleration_interval": _int_at_least(1),
}


def check_options(
    method: str, options: Mapping[str, Any], *, n: int | None = None, p: int | None = None
) -> dict[str, Any]:
    """Dry-bind ``options`` to ``method`` as :func:`rank_one` would, without solving anything.

    Checks the method name, that every option is a keyword the method accepts (``gap_tol`` is
    accepted for every method: it belongs to the front door), and each value against
    :data:`OPTION_RULES`; with the tensor order ``p`` also that a relaxation ``order`` is at
    least ``⌈p/2⌉``, and with ``n`` too that ``sos`` can index the relaxation's monomials.
    :func:`rank_one_batch` calls this before every solve, and sweep specs call
    it at validation, so a setting that validates is one the solver accepts.

    Returns the options as a dict. Raises :class:`OptionError` (a ``ValueError``) naming the
    option, what was expected and what was received.
    """
    valid = method_options(method)
    unknown = sorted(set(options) - set(valid) - {"gap_tol"})
    if unknown:
        raise OptionError(
            method,
            unknown[0],
            f"options: method {method!r} does not accept {unknown}; valid options: "
            f"{valid + ['gap_tol']}",
        )
    for name, value in options.items():
        rule = OPTION_RULES.get(name)
        if rule is not None and not rule[0](value):
            hint = ""
            if name == "relaxation" and isinstance(value, Mapping):
                bad = sorted(set(value) - _relaxation_keys())
                hint = f" (unknown keys {bad}; valid: {sorted(_relaxation_keys())})"
            raise OptionError(
                method,
                name,
                f"options: {name} of method {method!r}: expected {rule[1]}, received "
                f"{value!r} ({type(value).__name__}){hint}",
                rule[1] + hint,
            )
    for key, value in (options.get("relaxation") or {}).items():
        rule = RELAXATION_RULES.get(key)
        if rule is not None and not rule[0](value):
            raise OptionError(
                method,
                "relaxation",
                f"options: relaxation.{key} of method {method!r}: expected {rule[1]}, received "
                f"{value!r} ({type(value).__name__})",
                f"{rule[1]} for relaxation.{key}",
            )
    order = options.get("order")
    if p is not None and order is not None and order < (int(p) + 1) // 2:
        raise OptionError(
            method,
            "order",
            f"options: order of method {method!r}: expected a relaxation order >= ceil(p/2) = "
            f"{(int(p) + 1) // 2} for p = {p}, received {order!r}",
            f"a relaxation order >= ceil(p/2) = {(int(p) + 1) // 2} (p = {p})",
        )
    if method == "sos" and n is not None and p is not None:
        d = (int(p) + 1) // 2 if order is None else int(order)
        if int(n) * math.log2(2 * d + 1) > 62:
            raise OptionError(
                method,
                "order" if order is not None else "method",
                f"method 'sos': the order-{d} moment relaxation cannot index n = {n} variables "
                "(its int64 monomial keys would overflow); hint: use method 'certified', which "
                "skips the relaxation where it is intractable, or 'sshopm'",
            )
    return dict(options)


def memory_estimate(
    method: str, n: int, p: int, batch: int = 1, options: Mapping[str, Any] | None = None
) -> int:
    """Rough peak bytes of one :func:`rank_one_batch` call on ``batch`` tensors ``(n,)*p``.

    Counts the tensor stack and the copies the front door and the local phase make (normalised
    stack, the ``±T`` stack of even orders, the active subset of the ascent), the Kronecker
    powers of the starts, and for the relaxation (where the method solves one) its moment
    index tables and SCS workspace. An order-of-magnitude guard against requests that cannot
    fit in memory, not an exact figure; computed without allocating anything.
    """
    options = dict(options or {})
    fn = _lookup(method)
    defaults = {
        k: v.default
        for k, v in inspect.signature(fn).parameters.items()
        if v.kind is inspect.Parameter.KEYWORD_ONLY
    }
    starts = int(options.get("n_starts", defaults.get("n_starts", 16)) or 1)
    tensor = 8.0 * batch * float(n) ** p
    local = 5 * tensor + 8.0 * batch * 2 * starts * (3 * float(n) ** (p - 1) + 2 * n * n)
    relax = 0.0
    order = options.get("order", defaults.get("order"))
    max_gram = options.get("max_gram_size", defaults.get("max_gram_size"))
    budget = options.get("time_budget", defaults.get("time_budget", DEFAULT_TIME_BUDGET))
    if method == "sos" or (
        method == "certified" and relaxation_tractable(n, p, max_gram, float(budget))
    ):
        d = (p + 1) // 2 if order is None else int(order)
        side = float(math.comb(n + d, d))
        moments = float(math.comb(n + 2 * d, 2 * d))
        # Moment map (side² nonzeros), SCS's KKT factorisation and per-thread workspaces.
        relax = 400.0 * side * side + 200.0 * moments
    return int(local + relax)


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


def _scaled_certificates(out: MethodOutput, k: NDArray[np.int64], B: int) -> Any:
    """The methods' certificates (of ``T / 2^k``) turned into certificates of ``T``."""
    certs = out.certificate
    if certs is None:
        return _object_array([None] * B)
    return _object_array(
        [None if c is None else c.scaled(int(kb)) for c, kb in zip(certs, k, strict=True)]
    )


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
    fn = _lookup(method)
    if isinstance(Ts, TensorOperator):  # matrix-free: a local step, never certified
        check_options(method, options, n=Ts.shape[1], p=Ts.ndim - 1)
        rngs = as_rng_list(rng, Ts.shape[0])
        return RankOneResult(**operator_rank_one(Ts, method, fn, rngs, certificate, options))
    accepted = method_options(method)
    if certificate and "certificate" in accepted:
        options = {**options, "certificate": True}
    if "gap_tol" in accepted:
        # Methods that can stop once a step is certified (the relaxation) are told the
        # tolerance, so they do not keep iterating past what certification asks for.
        options = {**options, "gap_tol": gap_tol}
    Ts = check_symmetric_tensor(Ts, "Ts", batched=True)
    B, n, p = Ts.shape[0], Ts.shape[1], Ts.ndim - 1
    check_options(method, {**options, "gap_tol": gap_tol}, n=n, p=p)
    rngs = as_rng_list(rng, B)
    k, zero = normalizing_exponents(Ts)
    if np.all(np.abs(k) <= _UNSCALED_EXPONENT):
        # Dividing by a power of two this close to 1 changes no bit of any result (nothing
        # under- or overflows either way; test_scale checks it), so skip the copy.
        k = np.zeros_like(k)
    Tn = np.ldexp(Ts, -k.reshape((B,) + (1,) * p)) if np.any(k) else Ts
    # Dividing by 2^k (k > 0) is exact unless an entry became subnormal; then it moved by at
    # most half the smallest subnormal, which moves T x^p by at most that times n^{p/2}. The
    # bound below is padded by that always (far below an ulp of it, so no bits change).
    inexact = k > 0
    keep = np.flatnonzero(~zero)
    t0 = time.perf_counter()
    if len(keep) == B:
        out = MethodOutput.coerce(fn(Tn, rngs, **options), method)
    elif len(keep):
        part = MethodOutput.coerce(fn(Tn[keep], [rngs[i] for i in keep], **options), method)
        out = _expand(part, keep, B, n)
    else:
        none = np.zeros(0, dtype=np.int64)
        out = _expand(MethodOutput(x=np.zeros((0, n)), n_starts=none, n_iter=none), keep, B, n)
    elapsed = time.perf_counter() - t0
    x = out.x
    _, f = _values(Tn, x[:, None, :])
    lam_n = f[:, 0]
    fro_n = np.linalg.norm(Tn.reshape(B, -1), axis=1)
    cheap = normalized_unfolding_norm(Tn)
    upper_n = cheap if out.upper_bound is None else np.minimum(out.upper_bound, cheap)
    upper_n = upper_n + np.where(inexact, 2.0**-1074 * n ** (p / 2), 0.0)
    certified = upper_n - np.abs(lam_n) <= gap_tol * fro_n
    if p % 2 == 1:
        # For odd p, max T x^p = max |T x^p|, so a bound on |.| bounds the objective too.
        certified &= lam_n >= 0
    with np.errstate(over="ignore"):
        lam = np.ldexp(lam_n, k)
    if not np.all(np.isfinite(lam)):
        b = int(np.flatnonzero(~np.isfinite(lam))[0])
        raise ValueError(
            f"Ts: the best rank-one value of tensor {b} is {lam_n[b]!r} · 2^{k[b]}, beyond the "
            "float64 range; hint: divide the tensor by a power of two and scale the result back"
        )
    upper = scale_up_bound(upper_n, k)
    lam = np.where(zero, 0.0, lam)
    upper = np.where(zero, 0.0, upper)
    # Invariant: a certificate is a proof, so it never comes with a bound below the value.
    # Rounding could in principle break it; then the instance is simply not certified.
    sound = (upper_n >= np.abs(lam_n)) & (upper >= np.abs(lam))
    anomaly = certified & ~sound
    certified = (certified & sound) | zero
    solve_time = np.full(B, elapsed / B) if out.solve_time is None else out.solve_time
    extra = out.notes
    message = np.array(
        [
            (
                "certified global optimum"
                if c
                else "not certified (bound below value by rounding)"
                if a
                else "not certified (local optimum)"
            )
            + (f"; {extra}" if extra else "")
            for c, a in zip(certified, anomaly, strict=True)
        ],
        dtype=object,
    )
    return RankOneResult(
        lam=lam,
        x=x,
        upper_bound=upper,
        certified=certified,
        method=method,
        n_starts=np.asarray(out.n_starts),
        n_iter=np.asarray(out.n_iter),
        message=message,
        solve_time=np.asarray(solve_time, dtype=float),
        certificate=(_scaled_certificates(out, k, B) if certificate else None),
        n_best=None if out.n_best is None else np.asarray(out.n_best),
        confirmed=None if out.confirmed is None else np.asarray(out.confirmed),
    )


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
        :func:`sroa_dist.solvers.method_options`.
    rng : Generator, int or SeedSequence, optional
        Source of the random starts.
    gap_tol : float
        Certification tolerance relative to ``‖T‖_F``.
    certificate : bool
        Attach the relaxation's auditable SOS certificate (``result.certificate``, checkable
        with ``result.certificate.verify(T)``); ``None`` where no relaxation ran.

    Returns
    -------
    RankOneResult
    """
    T = T.as_batch() if isinstance(T, TensorOperator) else check_symmetric_tensor(T, "T")[None]
    res = rank_one_batch(T, method, rng=[rng], gap_tol=gap_tol, certificate=certificate, **options)
    return res[0]
