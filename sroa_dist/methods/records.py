"""Rank-one methods as records: each registered method carries its option rules, cost model,
memory estimate, whether its steps can be global and its moment-matrix size, so the front door,
SROA, the solver policy and sweep specs ask the record and never branch on a method's name.

:func:`resolve_method` is the one lookup: a registered name, or an import path
``"package.module:function"`` (imported where it runs, e.g. on a sweep worker).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from .._registry import check_entry, import_entry, is_names_only
from ..errors import InputError
from ..integer_powers import INTEGER_POWER_RULES, integer_power_rule
from .ascent import CONVERGED_SPECTRAL, ENGINES, KERNELS, LANCZOS_VARIANTS, SPECTRAL_PRECISIONS
from .builtin import (
    DEFAULT_TIME_BUDGET,
    MethodOutput,
    _method_certified,
    _method_power,
    _method_sos,
    _method_sshopm,
    aghkt_budget,
    local_cost,
    local_memory,
    moment_side,
    relaxation_cost,
    relaxation_memory,
    relaxation_tractable,
)
from .confirmation import CONFIRM_RULES

if TYPE_CHECKING:
    from ..relaxation import RelaxationTable

__all__ = [
    "METHODS",
    "Method",
    "OptionError",
    "check_options",
    "current_revisions",
    "memory_estimate",
    "method_options",
    "register_method",
    "resolve_method",
    "revision_options",
    "unregister_method",
]

MethodFn = Callable[..., MethodOutput]
#: ``(predicate, what is expected)``: the value rule of one option.
Rule = tuple[Callable[[Any], bool], str]


class OptionError(InputError):
    """A rank-one method option has an unknown name or an invalid value.

    ``option`` is the offending keyword and ``method`` the method, so callers (the sweep spec)
    can name the key in their own terms; ``hint`` defaults to where the options are listed.
    """

    def __init__(
        self,
        method: str,
        option: str,
        message: str,
        expected: str | None = None,
        hint: str = "",
    ):
        self.method, self.option, self.expected = method, option, expected
        super().__init__(
            message,
            hint or f"sroa_dist.methods.method_options({method!r}) lists its options and values",
        )


#: Most random starts one solve may take: far above any use (the defaults are tens), and low
#: enough that the starts' arrays always fit in memory.
MAX_STARTS = 1_000_000


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_real(v: Any) -> bool:
    if not (_is_int(v) or isinstance(v, (float, np.floating))):
        return False
    try:  # math, not numpy: np.isfinite raised TypeError on an int beyond 64 bits
        return math.isfinite(float(v))
    except OverflowError:  # an int beyond the float range
        return False


def _int_at_least(lo: int) -> tuple[Callable[[Any], bool], str]:
    return (lambda v: _is_int(v) and v >= lo), f"an integer >= {lo}"


def _relaxation_rules(table: Mapping[str, Any]) -> tuple[str, str, dict[str, Rule | None]]:
    """The driver and device a ``relaxation`` table names (checked first; static, no device
    needed) and the table's rules: the relaxation's own (:func:`sroa_dist.relaxation.
    option_rules`) for that driver."""
    from ..relaxation import option_rules, selection

    name, device = selection(table)
    return name, device, option_rules(name)


#: Value rules of the options the built-in methods share, by option name (one meaning per
#: name across methods): ``(predicate, what is expected)``. Options of user-registered methods
#: that have no rule here are checked by name only.
OPTION_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    # Capped: n_starts = 2^40 passed the check and was killed for memory (the fuzz campaign).
    "n_starts": (
        lambda v: _is_int(v) and 1 <= v <= MAX_STARTS,
        f"an integer >= 1 and <= {MAX_STARTS:,}",
    ),
    "n_iter": _int_at_least(0),
    "budget": (lambda v: v in ("fixed", "aghkt"), "'fixed' (n_starts, n_iter) or 'aghkt'"),
    "noise_level": (lambda v: v is None or (_is_real(v) and v > 0), "a number > 0, or none"),
    "max_iter": _int_at_least(0),
    "tol": (lambda v: _is_real(v) and v >= 0, "a finite number >= 0"),
    "gap_tol": (lambda v: _is_real(v) and v >= 0, "a finite number >= 0"),
    "shift": (
        lambda v: v in ("adaptive", "monotone") if isinstance(v, str) else _is_real(v) and v >= 0,
        "'adaptive', 'monotone' or a finite number >= 0 (a fixed shift)",
    ),
    "polish": (lambda v: isinstance(v, (bool, np.bool_)), "true or false"),
    "max_starts": (lambda v: v is None or (_is_int(v) and v >= 0), "an integer >= 0"),
    "n_spectral": (
        lambda v: v == "operators" if isinstance(v, str) else _is_int(v) and v >= 0,
        "an integer >= 0, or 'operators' (spectral starts on matrix-free operators only)",
    ),
    "confirm": (lambda v: v in CONFIRM_RULES, f"one of {list(CONFIRM_RULES)}"),
    "confirm_margin": (
        lambda v: (_is_int(v) or isinstance(v, (float, np.floating))) and v >= 0,
        "a number >= 0 (inf: confirm every instance)",
    ),
    "abandon_margin": (
        lambda v: (_is_int(v) or isinstance(v, (float, np.floating))) and v >= 0,
        "a number >= 0 (inf: run every start to convergence)",
    ),
    "kernel": (lambda v: v in KERNELS, f"one of {list(KERNELS)}"),
    "engine": (lambda v: v in ENGINES, f"one of {list(ENGINES)}"),
    "spectral_low_dim": (
        lambda v: v is None or (_is_int(v) and v >= 1),
        "an integer >= 1, or none (the lower end converged)",
    ),
    "shared_check": (lambda v: isinstance(v, (bool, np.bool_)), "true or false"),
    "polish_rtol": (
        lambda v: _is_real(v) and 0 < v < 1,
        "a number between 0 and 1 (the polish's relative MINRES residual)",
    ),
    "deflation_block": (
        lambda v: v is None or (_is_int(v) and v >= 1),
        "an integer >= 1 (bytes of deflation terms per fused block), or none (whole products)",
    ),
    "lanczos": (
        lambda v: v in LANCZOS_VARIANTS,
        f"one of {list(LANCZOS_VARIANTS)}",
    ),
    "spectral_precision": (
        lambda v: v in SPECTRAL_PRECISIONS,
        f"one of {list(SPECTRAL_PRECISIONS)}",
    ),
    "integer_powers": (
        lambda v: v in INTEGER_POWER_RULES,
        f"one of {list(INTEGER_POWER_RULES)}",
    ),
    "spectral_tol": (
        lambda v: _is_real(v) and 0 < v < 1,
        "a number between 0 and 1 (the spectral starts' Lanczos residual, relative)",
    ),
    "warm": (lambda v: isinstance(v, (bool, np.bool_)), "true or false"),
    "lazy": (lambda v: isinstance(v, (bool, np.bool_)), "true or false"),
    "order": (lambda v: v is None or (_is_int(v) and v >= 1), "an integer relaxation order"),
    "max_gram_size": _int_at_least(1),
    "relaxation": (
        lambda v: v is None or isinstance(v, Mapping),
        "a table of MomentRelaxation.solve options, the driver's settings and the keys "
        "driver and device",
    ),
}


def _defaults(fn: MethodFn) -> dict[str, Any]:
    return {
        k: v.default
        for k, v in inspect.signature(fn).parameters.items()
        if v.kind is inspect.Parameter.KEYWORD_ONLY and v.default is not inspect.Parameter.empty
    }


def _local_cost(per_entry: float | None) -> Callable[[int, int, Mapping[str, Any]], float]:
    return lambda n, p, options: local_cost(n, p, per_entry)


def _power_cost(n: int, p: int, options: Mapping[str, Any]) -> float:
    """One ``power`` solve: the local cost model, which was measured at the method's default
    starts and iterations, times the start-iterations its options ask for over those defaults
    (``budget="aghkt"``: :func:`~sroa_dist.methods.builtin.aghkt_budget`'s, about 12 times the
    defaults' at n = 64 and 180 times at n = 512)."""
    defaults = _defaults(_method_power)
    opts = {**defaults, **dict(options)}
    starts, iters = int(opts["n_starts"]), int(opts["n_iter"])
    if opts["budget"] == "aghkt":
        starts, iters = aghkt_budget(n, opts["noise_level"])
    base = int(defaults["n_starts"]) * int(defaults["n_iter"])
    return local_cost(n, p, 1e-7) * (starts * iters) / base


def _local_memory(n: int, p: int, batch: int, options: Mapping[str, Any]) -> float:
    return local_memory(n, p, batch, int(options.get("n_starts") or 16))


@dataclasses.dataclass(frozen=True)
class Method:
    """A rank-one method and what the rest of the package needs to know about it.

    Attributes
    ----------
    name : str
        Registered name (or the import path it was resolved from).
    fn : callable
        ``fn(Ts, rngs, [deflation,] **options) -> MethodOutput`` (see :class:`MethodOutput`).
    rules : mapping
        Value rules ``(predicate, expected)`` of its options by name; options without a rule
        are checked by name only. Default: the shared :data:`OPTION_RULES` of its options.
    cost : callable
        ``cost(n, p, options) -> seconds`` of one solve on one core (block sizing). Default: the
        local cost model (:func:`sroa_dist.methods.builtin.local_cost`).
    memory : callable
        ``memory(n, p, batch, options) -> bytes``, rough peak of one batched call.
    global_steps : bool
        Whether its steps can be global (solved with a certificate of optimality): such a
        method also bounds ``||E||`` itself in a sweep.
    moment_side : callable or None
        ``moment_side(n, p, options) -> int | None``: side of the moment matrix it solves at
        ``(n, p)`` (``None`` where it solves none).
    check : callable or None
        ``check(name, n, p, options)``: raises :class:`OptionError` where the method cannot
        solve size ``(n, p)`` with these options.
    revision : int
        Its algorithm's revision, raised whenever a default changes its results. A sweep store
        records the revision it was made with and keeps computing with it when resumed or
        extended by newer code (:meth:`options_at`), so a cube never mixes two algorithms.
    legacy : mapping
        Earlier revision -> the option values that reproduce it with this code.
    """

    name: str
    fn: MethodFn
    rules: Mapping[str, Rule]
    cost: Callable[[int, int, Mapping[str, Any]], float]
    memory: Callable[[int, int, int, Mapping[str, Any]], float]
    global_steps: bool = False
    moment_side: Callable[[int, int, Mapping[str, Any]], int | None] | None = None
    check: Callable[[str, int, int, Mapping[str, Any]], None] | None = None
    revision: int = 1
    legacy: Mapping[int, Mapping[str, Any]] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )

    def options_at(self, revision: int | None) -> dict[str, Any]:
        """The option values that make this code compute revision ``revision`` (``None``: the
        current one): empty for the current revision. ``ValueError`` for a revision this
        code cannot reproduce."""
        if revision is None or revision == self.revision:
            return {}
        if revision not in self.legacy:
            known = sorted({*self.legacy, self.revision})
            raise InputError(
                f"method {self.name!r}: revision {revision!r} cannot be reproduced by this "
                f"code (known revisions: {known})",
                "use one of the known revisions, or make a new store for this code's revision",
            )
        return dict(self.legacy[revision])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self.power_rule(kwargs):
            return self.fn(*args, **kwargs)

    def power_rule(self, options: Mapping[str, Any] | None) -> AbstractContextManager[None]:
        """The integer-power rule its options pin (:mod:`sroa_dist.integer_powers`), as a
        context: its ``integer_powers`` option over the default, ``"pow"`` for a method
        without one (the bits every result had before the rule existed)."""
        rule = self.with_defaults(options).get("integer_powers", "pow")
        if rule not in INTEGER_POWER_RULES:
            raise OptionError(
                self.name,
                "integer_powers",
                f"integer_powers: expected one of {list(INTEGER_POWER_RULES)}, received {rule!r}",
                f"one of {list(INTEGER_POWER_RULES)}",
            )
        return integer_power_rule(rule)

    @property
    def options(self) -> list[str]:
        """Names of the keyword options it accepts."""
        sig = inspect.signature(self.fn)
        return [k for k, v in sig.parameters.items() if v.kind is inspect.Parameter.KEYWORD_ONLY]

    @property
    def implicit(self) -> bool:
        """Whether it takes a :class:`~sroa_dist.methods.ascent.Deflation` (SROA may deflate
        implicitly: the deflated tensor is never formed)."""
        return "deflation" in inspect.signature(self.fn).parameters

    def with_defaults(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """``options`` over the defaults of its keyword options."""
        return {**_defaults(self.fn), **dict(options or {})}


def make_method(
    name: str,
    fn: MethodFn,
    *,
    rules: Mapping[str, Rule] | None = None,
    cost: Callable[[int, int, Mapping[str, Any]], float] | None = None,
    memory: Callable[[int, int, int, Mapping[str, Any]], float] | None = None,
    global_steps: bool = False,
    moment_side: Callable[[int, int, Mapping[str, Any]], int | None] | None = None,
    check: Callable[[str, int, int, Mapping[str, Any]], None] | None = None,
    revision: int = 1,
    legacy: Mapping[int, Mapping[str, Any]] | None = None,
) -> Method:
    """A :class:`Method` record with the local defaults for what is not given; ``InputError``
    for a function that cannot be called as ``fn(Ts, rngs)``."""
    _check_callable_as_method(name, fn)
    rec = Method(name, fn, {}, cost or _local_cost(1e-7), memory or _local_memory)
    own = {k: OPTION_RULES[k] for k in rec.options if k in OPTION_RULES}
    return dataclasses.replace(
        rec,
        rules=MappingProxyType(dict(own if rules is None else rules)),
        global_steps=global_steps,
        moment_side=moment_side,
        check=check,
        revision=int(revision),
        legacy=MappingProxyType({int(k): dict(v) for k, v in (legacy or {}).items()}),
    )


def _check_callable_as_method(name: str, fn: Any) -> None:
    """A method is called ``fn(Ts, rngs, **options)``: refuse, at registration or when a spec
    names it, a callable that cannot take the two (``"math:sqrt"`` validated and failed in
    every block of the run)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # no signature Python can read: its first call says
    try:
        sig.bind(None, None)
    except TypeError:
        raise InputError(
            f"method {name!r}: expected a function {_EXPECTED}; received {fn!r} with "
            f"signature {sig}",
            "a rank-one method takes the stack of tensors and one generator per tensor: "
            "def my_method(Ts, rngs, *, option=default)",
        ) from None


# ---------------------------------------------------------------------------------------------
# The built-in records


def _relaxes(n: int, p: int, options: Mapping[str, Any]) -> bool:
    """Whether ``certified`` solves the relaxation at ``(n, p)`` with these options."""
    budget = options.get("time_budget", DEFAULT_TIME_BUDGET)
    return relaxation_tractable(n, p, options.get("max_gram_size"), float(budget))


def _sos_side(n: int, p: int, options: Mapping[str, Any]) -> int | None:
    return moment_side(n, p, options.get("order"))


def _certified_side(n: int, p: int, options: Mapping[str, Any]) -> int | None:
    return moment_side(n, p, options.get("order")) if _relaxes(n, p, options) else None


def _relaxation_step_cost(side: Callable[..., int | None]) -> Callable[..., float]:
    """A local candidate, plus the relaxation (:func:`relaxation_cost`) where it is solved."""

    def cost(n: int, p: int, options: Mapping[str, Any]) -> float:
        local = local_cost(n, p, None)  # the relaxation needs the formed tensor
        return local + relaxation_cost(n, p) if side(n, p, options) is not None else local

    return cost


def _relaxation_step_memory(side: Callable[..., int | None]) -> Callable[..., float]:
    def memory(n: int, p: int, batch: int, options: Mapping[str, Any]) -> float:
        local = _local_memory(n, p, batch, options)
        if side(n, p, options) is None:
            return local
        return local + relaxation_memory(n, p, options.get("order"))

    return memory


def _check_sos_indexable(name: str, n: int, p: int, options: Mapping[str, Any]) -> None:
    order = options.get("order")
    d = (p + 1) // 2 if order is None else int(order)
    if n * math.log2(2 * d + 1) > 62:
        raise OptionError(
            name,
            "order" if order is not None else "method",
            f"method {name!r}: the order-{d} moment relaxation cannot index n = {n} variables "
            "(its int64 monomial keys would overflow)",
            hint="use method 'certified', which skips the relaxation where it is intractable, "
            "or 'sshopm'",
        )


#: What revisions 1-9 of ``sshopm`` share and revision 10 changed: whole powers above the
#: square by the C library's ``pow`` (NumPy's ``c**k``), not by products.
_BEFORE_10: dict[str, Any] = {"integer_powers": "pow"}
#: What revisions 1-8 of ``sshopm`` share and revision 9 changed: the large-n engine's Lanczos
#: runs converge the spectral starts to a residual of 1e-10 of the largest Ritz value, their
#: products against the deflation terms in double precision.
_BEFORE_9: dict[str, Any] = {
    "spectral_tol": CONVERGED_SPECTRAL,
    "spectral_precision": "double",
    **_BEFORE_10,
}
#: What revisions 1-7 of ``sshopm`` share and revision 8 changed: an implicit deflation's
#: products of a few vectors run as two whole matrix products, and the large-n engine's
#: lockstep Lanczos run keeps every matrix until the slowest has converged, reorthogonalising
#: twice per product (``lanczos="lockstep"``).
_BEFORE_8: dict[str, Any] = {"deflation_block": None, "lanczos": "lockstep", **_BEFORE_9}
#: What revisions 1-6 of ``sshopm`` share and revision 7 changed: the global check of an
#: implicitly deflated step runs its own spectral eigensolve (``power`` has no such option: its
#: steps have no spectral starts to share), and the large-n polish solves to 1e-14.
_BEFORE_7: dict[str, Any] = {"shared_check": False, "polish_rtol": 1e-14, **_BEFORE_8}
#: What revision 5 of ``sshopm`` (and revision 2 of ``power``) share with the earlier ones and
#: revision 6 (3) changed: Lanczos converges both ends of an even order's contraction.
_BEFORE_6: dict[str, Any] = {"spectral_low_dim": None}
#: What revisions 1-4 of ``sshopm`` (and revision 1 of ``power``) share and the large-n engine
#: changed: dense eigensolves for spectral starts, Newton polish and the global check at every n.
_BEFORE_5: dict[str, Any] = {"engine": "dense", **_BEFORE_6}
#: What revisions 1-3 of ``sshopm`` share and revision 4 changed: the confirmation rule and
#: spectral starts on matrix-free operators only.
_BEFORE_4: dict[str, Any] = {"confirm": "settle", "n_spectral": "operators", **_BEFORE_5}


def _builtin_records() -> list[Method]:
    return [
        make_method(
            "certified",
            _method_certified,
            cost=_relaxation_step_cost(_certified_side),
            memory=_relaxation_step_memory(_certified_side),
            global_steps=True,
            moment_side=_certified_side,
        ),
        make_method(
            "sos",
            _method_sos,
            cost=_relaxation_step_cost(_sos_side),
            memory=_relaxation_step_memory(_sos_side),
            global_steps=True,
            moment_side=_sos_side,
            check=_check_sos_indexable,
        ),
        make_method(
            "sshopm",
            _method_sshopm,
            cost=_local_cost(1e-8),
            # 2: starts far below the best are abandoned and do not ask for a confirming
            # start set (ABANDON_MARGIN), and p = 3 gradients use the distinct index pairs.
            # 3: p = 3 ascents on formed tensors run coordinates first ("packed"): the same
            # steps as revision 2 up to rounding, faster.
            # 4: 'confirmed' means an exploration of the unexplored directions found nothing
            # higher (confirm="explore"; the rule of 1-3 confirmed steps that missed a whole
            # basin), and spectral starts run on every path, formed tensors included.
            # 5: on matrix-free operators of n >= LARGE_N, the large-n engine (engine="auto":
            # Lanczos spectral starts, MINRES polish, in the steps and their global check):
            # the same steps up to rounding, not bit for bit.
            # 6: the large-n engine's Lanczos run accepts an even order's clustered lower end
            # at Krylov dimension LOW_END_DIM (spectral_low_dim; it ran to 400 at n = 512):
            # the same steps as revision 5 at odd p, at even p the same values and components
            # (tests/core/test_large_n.py).
            # 7: the global check of an implicitly deflated step takes its spectral starts
            # from the step's own Lanczos run (shared_check: the check's contraction
            # eigensolved in lockstep with the step's two, one run per step instead of two);
            # the same check starts up to rounding, drawn from the same stream; and the
            # large-n polish's MINRES solves to 1e-6 (polish_rtol), not 1e-14: inexact Newton
            # steps reaching the same maximisers to rounding with about half the products.
            # 8: an implicit deflation's products of 2-8 vectors fused in L2-sized blocks of
            # the deflation terms (deflation_block: each block read once for both products,
            # the engine keeping Uᵀ), and the Lanczos variant "own" (lanczos: a matrix leaves
            # the lockstep run once its pairs have converged, each Krylov vector reorthogonalised
            # once unless the Kahan–Parlett test asks again): the same steps up to rounding.
            # 9: the large-n engine's Lanczos runs accept a spectral start at a residual of 1e-3
            # of the largest Ritz value (spectral_tol), not 1e-10, their products against the
            # deflation terms in single precision (spectral_precision): a start only has to
            # lie in its basin. The same λ̂ at every step; where weights tie exactly (the tilt's unit
            # ones) another of the equal components may come first, a permutation of the
            # same steps (tests/core/test_large_n.py).
            # 10: whole powers above the square (the coordinates' c^(p-2), c^(p-1), c^p in every
            # contraction, p >= 3) by products, not by the C library's pow, about 45 times
            # slower per entry (integer_powers; sroa_dist.integer_powers): at most two units
            # in the last place apart, the same steps up to rounding (tests/core/test_large_n.py).
            # Each revision's throughput and misses: docs/results/benchmarks.md, Figure-2
            # throughput, False confirmations and Global SROA at large n (bench_sroa_local.py,
            # bench_miss_rate.py, bench_global_large_n.py).
            revision=10,
            legacy={
                1: {**_BEFORE_4, **_BEFORE_7, "abandon_margin": math.inf, "kernel": "dense"},
                2: {**_BEFORE_4, **_BEFORE_7, "kernel": "symmetric"},
                3: {**_BEFORE_4, **_BEFORE_7},
                4: {**_BEFORE_5, **_BEFORE_7},
                5: {**_BEFORE_6, **_BEFORE_7},
                6: dict(_BEFORE_7),
                7: dict(_BEFORE_8),
                8: dict(_BEFORE_9),
                9: dict(_BEFORE_10),
            },
        ),
        make_method(
            "power",
            _method_power,
            cost=_power_cost,
            # 2: the global check of its steps on operators of n >= LARGE_N runs the large-n
            # engine (its own iterations are unchanged).
            # 3: that check's Lanczos runs accept an even order's lower end at LOW_END_DIM.
            revision=3,
            legacy={1: dict(_BEFORE_5), 2: dict(_BEFORE_6)},
        ),
    ]


# ---------------------------------------------------------------------------------------------
# The registry

_REGISTRY: dict[str, Method] = {}
#: Read-only view of the rank-one methods by name (add one with :func:`register_method`);
#: every entry is tested by the same suite. Values are :class:`Method` records (callable like
#: the method itself).
METHODS: Mapping[str, Method] = MappingProxyType(_REGISTRY)
_EXPECTED = "(Ts, rngs, **options) -> MethodOutput"


def _import_method(path: str) -> Method:
    obj = import_entry(
        path,
        "method",
        "rank-one method",
        f"a sroa_dist.methods.Method or a function {_EXPECTED}",
        accept=(Method,),
    )
    if isinstance(obj, Method):
        return dataclasses.replace(obj, name=path)
    return make_method(path, obj)


def register_method(
    name: str,
    fn: MethodFn | Method | str,
    *,
    overwrite: bool = False,
    **record: Any,
) -> Method:
    """Register a rank-one method under ``name``, so ``rank_one(T, method=name)``, SROA and
    sweep specs can use it.

    ``fn`` is ``fn(Ts, rngs, **options) -> MethodOutput`` (the contract documented on
    :class:`MethodOutput`; its keyword-only parameters are its options), a :class:`Method`
    record, or an import path ``"package.module:function"`` to one of these. The keywords
    ``rules``, ``cost``, ``memory``, ``global_steps``, ``moment_side`` and ``check`` fill the
    record (see :class:`Method`; local defaults otherwise). Registering a name that exists is
    refused unless ``overwrite=True``. A method need not be registered to be used: an import
    path works wherever a method name does (:func:`resolve_method`).
    """
    if isinstance(fn, str):
        fn = _import_method(fn)
    check_entry(_REGISTRY, "rank-one method", name, fn, overwrite=overwrite, expected=_EXPECTED)
    if isinstance(fn, Method):
        rec = dataclasses.replace(fn, name=name, **record)
    else:
        rec = make_method(name, fn, **record)
    _REGISTRY[name] = rec
    return rec


def unregister_method(name: str) -> None:
    """Remove a method added with :func:`register_method` (the built-in ones stay)."""
    if name in _BUILTIN:
        raise InputError(
            f"method {name!r} is built in and cannot be removed",
            "built-in methods stay; register yours under another name",
        )
    _REGISTRY.pop(name, None)


for _rec in _builtin_records():
    _REGISTRY[_rec.name] = _rec
_BUILTIN = tuple(_REGISTRY)


def resolve_method(method: str) -> Method:
    """The record of a method: a registered name, or an import path
    ``"package.module:function"`` (imported here, so a sweep worker imports it where the block
    runs). Raises ``ValueError`` naming the argument, what is valid and the likely cause."""
    if isinstance(method, str) and method in _REGISTRY:
        return _REGISTRY[method]
    if isinstance(method, str) and ":" in method:
        return _import_method(method)
    raise InputError(
        f"method: unknown rank-one method {method!r}; expected one of {sorted(METHODS)} or an "
        "import path 'package.module:function'",
        "use one of the listed methods, register one (sroa_dist.register_method) or give "
        "'package.module:function'",
    )


def revision_options(method: str, revision: int | None) -> dict[str, Any]:
    """The option values that make this code compute ``method``'s revision ``revision``
    (:meth:`Method.options_at`): empty for the current one (``None``) and for a method given by
    import path, which has one revision."""
    record = METHODS.get(method)
    return {} if record is None else record.options_at(revision)


def current_revisions() -> dict[str, int]:
    """Every registered method's current revision (what a new sweep store records)."""
    return {name: int(record.revision) for name, record in METHODS.items()}


def method_options(method: str) -> list[str]:
    """Names of the keyword options a method accepts."""
    return resolve_method(method).options


def check_options(
    method: str, options: Mapping[str, Any], *, n: int | None = None, p: int | None = None
) -> dict[str, Any]:
    """Dry-bind ``options`` to ``method`` as :func:`rank_one` would, without solving anything.

    Checks the method name, that every option is a keyword the method accepts (``gap_tol`` is
    accepted for every method: it belongs to the front door), and each value against
    :attr:`Method.rules`; with the tensor order ``p`` also that a relaxation ``order`` is at
    least ``⌈p/2⌉``, and with ``n`` too the method's own :attr:`Method.check` (``sos``: that it
    can index the relaxation's monomials).
    :func:`rank_one_batch` calls this before every solve, and sweep specs call
    it at validation, so a setting that validates is one the solver accepts.

    Returns the options as a dict, a ``relaxation`` table parsed
    (:func:`check_relaxation_table`): what runs the method reads it, never parsing it again.
    Raises :class:`OptionError` (a ``ValueError``) naming the option, what was expected and
    what was received.
    """
    record = resolve_method(method)
    valid = list(record.options)
    unknown = sorted(set(options) - set(valid) - {"gap_tol"})
    if unknown:
        raise OptionError(
            method,
            unknown[0],
            f"options: method {method!r} does not accept {unknown}; valid options: "
            f"{valid + ['gap_tol']}",
        )
    for name, value in options.items():
        # gap_tol belongs to the front door: its rule holds whatever the method.
        rule = record.rules.get(name, OPTION_RULES["gap_tol"] if name == "gap_tol" else None)
        if rule is not None and not rule[0](value):
            raise OptionError(
                method,
                name,
                f"options: {name} of method {method!r}: expected {rule[1]}, received "
                f"{value!r} ({type(value).__name__})",
                rule[1],
            )
    options = dict(options)
    if record.rules.get("relaxation") is OPTION_RULES["relaxation"]:
        table = check_relaxation_table(method, options.get("relaxation"))
        if table is not None:
            options["relaxation"] = table
    order = options.get("order")
    if p is not None and order is not None and order < (int(p) + 1) // 2:
        raise OptionError(
            method,
            "order",
            f"options: order of method {method!r}: expected a relaxation order >= ceil(p/2) = "
            f"{(int(p) + 1) // 2} for p = {p}, received {order!r}",
            f"a relaxation order >= ceil(p/2) = {(int(p) + 1) // 2} (p = {p})",
        )
    if record.check is not None and n is not None and p is not None:
        record.check(method, int(n), int(p), options)
    return options


def check_relaxation_table(method: str, table: Mapping[str, Any] | None) -> RelaxationTable | None:
    """A ``relaxation`` table of ``method``'s options parsed and checked, once: each key
    against the rules of the driver it names. Returns the :class:`~sroa_dist.relaxation.
    RelaxationTable` (``table`` itself when it already is one; ``None`` for no table, or in a
    stored spec read by name only, whose driver's module need not be installed here)."""
    from ..relaxation import RelaxationTable

    if isinstance(table, RelaxationTable):
        return table
    if not table or is_names_only():
        return None
    try:
        name, device, rules = _relaxation_rules(table)
    except ValueError as exc:  # an unknown driver or device, or a device the driver lacks
        key = str(exc).split(":", 1)[0].removeprefix("relaxation.")
        raise OptionError(
            method, "relaxation", f"options: {exc}", f"{exc} (relaxation.{key})"
        ) from None
    unknown = sorted(set(table) - set(rules))
    if unknown:
        raise OptionError(
            method,
            "relaxation",
            f"options: relaxation of method {method!r}: unknown keys {unknown} for driver "
            f"{name!r}; valid: {sorted(rules)}",
            f"a table of keys among {sorted(rules)} (driver {name!r})",
        )
    for key, value in table.items():
        rule = rules.get(key)
        if rule is not None and not rule[0](value):
            raise OptionError(
                method,
                "relaxation",
                f"options: relaxation.{key} of method {method!r}: expected {rule[1]}, received "
                f"{value!r} ({type(value).__name__})",
                f"{rule[1]} for relaxation.{key}",
            )
    return RelaxationTable(table, name, device)


def memory_estimate(
    method: str, n: int, p: int, batch: int = 1, options: Mapping[str, Any] | None = None
) -> int:
    """Rough peak bytes of one :func:`rank_one_batch` call on ``batch`` tensors ``(n,)*p``:
    the method record's :attr:`Method.memory` with the method's defaults filled in.

    An order-of-magnitude guard against requests that cannot fit in memory, not an exact
    figure; computed without allocating anything.
    """
    record = resolve_method(method)
    return int(record.memory(int(n), int(p), int(batch), record.with_defaults(options)))
