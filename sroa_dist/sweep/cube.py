"""The result cube's vocabulary: dimensions, coordinate dtypes, variables and bookkeeping names.

One home for every fact about the cube's format (the RESULT CUBE table of
``docs/architecture.md``): the sweep kinds, storage and analysis read their names, dims,
dtypes, units and meanings from here, so they cannot drift apart. Which variables a sweep
writes is its kind's answer (:meth:`sroa_dist.sweep.kinds.SweepKind.variables`). Plain data:
no numpy, Dask, zarr or xarray.

A variable over the instance grid has the sweep's dims (its swept axes in :data:`AXIS_ORDER`,
then ``replicate``) followed by its own :attr:`Variable.dims` (``step``, ``component``);
bookkeeping variables have the ``block`` dim only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "ATTR_FORMAT",
    "AXIS_ORDER",
    "BOOKKEEPING",
    "DIMS",
    "MODEL_DIMS",
    "MODEL_VARIABLES",
    "NOISE_LEVELS",
    "STORE_FORMAT",
    "TENSOR_DIMS",
    "TENSOR_VARIABLES",
    "THRESHOLD_VARIABLES",
    "V_HAT",
    "Dim",
    "Variable",
    "eps_scaled_target",
    "store_format",
]

# --------------------------------------------------------------------------------------------
# Bookkeeping names

#: Instance index at a grid point (the innermost sweep dim of every cube).
REPLICATE = "replicate"
#: SROA iteration j (1-based): the dim of per-step variables.
STEP = "step"
#: Coordinate index of an estimated component (the last dim of ``v_hat``).
COMPONENT = "component"
#: Block (task) index: the dim of the bookkeeping variables.
BLOCK = "block"
#: Block finished and its data written (the only completion record).
DONE = "done"
#: When a block's data was written (POSIX seconds).
DONE_TIME = "done_time"
#: Last attempt at a block raised; messages in this variable's ``messages`` attr.
FAILED = "failed"
#: Attr of ``failed`` holding the error message per block index.
FAILED_MESSAGES = "messages"
#: Read-time bookkeeping (never stored): the blocks that failed their integrity check on read
#: and read as fill values (``open_results(..., damaged="mask")``), and the Dataset attr that
#: says, for people, what was wrong with each (JSON ``{block: [problem, ...]}``).
DAMAGED, DAMAGED_BLOCKS = "damaged", "damaged_blocks"
#: What a read does with a damaged block: refuse the read (the default), or mask the block.
DAMAGED_MODES = ("raise", "mask")
#: Root attrs that identify a sroa-dist store and its layout.
ATTR_SPEC, ATTR_SWEEP_NAME, ATTR_LAYOUT_TOKEN = "spec", "sweep_name", "layout_token"
#: Root attr naming the store's sweep kind (its registered name); a read sets it on the cube, and
#: analysis and ``verify`` dispatch on it through the kind registry.
ATTR_KIND = "sroa_kind"
#: Root attr recording the store's format (an int; a store without it has format 1).
ATTR_FORMAT = "store_format"
#: The format this code writes. Format 1 (no :data:`ATTR_FORMAT`): stores made before
#: per-block digests or before certificates moved inside the store; a finished block without a
#: recorded digest is "cannot vouch" there, and certificate files live beside the store
#: (``<store>.certificates/``). Format 2: every finished block records its digests (a missing
#: one is damage, except for the blocks a migration from format 1 listed as written before
#: digests), and certificate files live inside the store (``<store>/certificates/``), so a
#: copy of the store folder is the whole store.
STORE_FORMAT = 2
#: Prefix of the root attrs recording a non-swept setting (``setting_n``, ``setting_basis``).
SETTING_PREFIX = "setting_"

#: Noise-level dims of tensor sweeps; exactly one is in use per sweep.
NOISE_LEVELS: tuple[str, ...] = ("sigma", "eps", "eps_scaled")

# --------------------------------------------------------------------------------------------
# Dimensions

#: Sweep dims of tensor sweeps, in cube order.
TENSOR_DIMS: tuple[str, ...] = ("noise", "n", "p", "rank", "method", *NOISE_LEVELS)
#: Sweep dims of model sweeps: the model's size axes, the method, then the sample size N.
MODEL_DIMS: tuple[str, ...] = ("k", "d", "L", "weight_ratio", "method", "N")
#: Canonical order of every sweep dim in the cube: the model's size axes go before the method,
#: the sample size (a model sweep's "noise level") after the noise levels.
AXIS_ORDER: tuple[str, ...] = (*TENSOR_DIMS[:4], *MODEL_DIMS[:4], *TENSOR_DIMS[4:], "N")


@dataclass(frozen=True)
class Dim:
    """One dimension of the cube: its coordinate dtype and attrs."""

    name: str
    #: Coordinate dtype: ``"str"`` (zarr v3 variable-length string), ``"f8"`` or ``"i8"``.
    dtype: str
    long_name: str
    units: str = "1"

    @property
    def attrs(self) -> dict[str, str]:
        """The coordinate's attrs as stored."""
        return {"long_name": self.long_name, "units": self.units}


_DIMS = (
    Dim("noise", "str", "noise model of E's entries (paper Section 2.3)"),
    Dim("n", "i8", "tensor dimension n"),
    Dim("p", "i8", "tensor order p"),
    Dim("rank", "i8", "number of SOD components r"),
    Dim("method", "str", "rank-one solver method"),
    Dim("sigma", "f8", "entry scale sigma of the noise"),
    Dim("eps", "f8", "operator norm ||E|| the noise was scaled to"),
    Dim(
        "eps_scaled",
        "f8",
        "eps * n^(1/(p-1)) / lambda_min (Theorem 3.1 scale); absolute ||E|| in eps",
    ),
    Dim(REPLICATE, "i8", "instance index at a grid point (0-based)"),
    Dim(STEP, "i8", "SROA iteration j (1-based)"),
    Dim(COMPONENT, "i8", "coordinate index of v_hat_j"),
    Dim(BLOCK, "i8", "block (task) index, C order over the chunk grid"),
    Dim("N", "i8", "sample size N (documents or points) per instance"),
    Dim("k", "i8", "number of latent classes k (topics or mixture components)"),
    Dim("d", "i8", "observation dimension d (vocabulary size or ambient dim)"),
    Dim("L", "i8", "words per document L (single-topic model)"),
    Dim(
        "weight_ratio",
        "f8",
        "mixing-weight imbalance max(w)/min(w); weights geometric in the class index, 1 = uniform",
    ),
)
#: Every dim of the cube by name.
DIMS: Mapping[str, Dim] = MappingProxyType({d.name: d for d in _DIMS})


def store_format(attrs: Mapping[str, object]) -> int:
    """The format of a store with these root attrs (1 when none is recorded)."""
    return int(attrs.get(ATTR_FORMAT, 1))  # type: ignore[call-overload]


def eps_scaled_target(eps_scaled: float, lambda_min: float, n: int, p: int) -> float:
    """The operator norm ``||E||`` meant by a ``noise.eps_scaled`` value (the ``eps_scaled`` dim).

    ``eps_scaled * lambda_min * n^(-1/(p-1))``: Theorem 3.1 recovers every component once
    ``||E|| <= c lambda_min n^(-1/(p-1))``, so ``eps_scaled`` measures the perturbation in
    units of that scale (1 is the theorem's threshold up to its constant ``c``).
    """
    return eps_scaled * lambda_min * n ** (-1.0 / (p - 1))


# --------------------------------------------------------------------------------------------
# Variables


@dataclass(frozen=True)
class Variable:
    """One variable of the cube.

    ``dims`` are the variable's own dims after the sweep's (``()`` per instance, ``("step",)``
    per SROA step, ``("step", "component")`` for vectors), or ``("block",)`` for bookkeeping
    (``over_grid`` False). The fill value (unwritten instances) follows from the dtype: NaN
    for floats, False for booleans.
    """

    name: str
    dims: tuple[str, ...]
    #: ``"f8"`` or ``"bool"``.
    dtype: str
    #: What the variable means (its ``long_name`` attr).
    long_name: str
    units: str = "1"
    #: Further attrs, in stored order: a ``paper`` reference, a ``note``.
    extra: tuple[tuple[str, str], ...] = ()
    #: Whether the variable spans the instance grid (False: one value per block).
    over_grid: bool = True

    @property
    def per_step(self) -> bool:
        """Whether the variable has one value per SROA step."""
        return STEP in self.dims

    @property
    def fill(self) -> float | bool:
        """Value of instances (or blocks) not written yet."""
        return False if self.dtype == "bool" else math.nan

    @property
    def attrs(self) -> dict[str, str]:
        """The variable's attrs as stored."""
        return {"long_name": self.long_name, "units": self.units, **dict(self.extra)}


def _by_name(*variables: Variable) -> Mapping[str, Variable]:
    return MappingProxyType({v.name: v for v in variables})


_S = (STEP,)
_ALG1 = (("paper", "Algorithm 1, line 3"),)
_T31 = (("paper", "Theorem 3.1"),)
_T22 = (("paper", "Theorem 2.2"),)
_EPS = (("paper", "epsilon = ||E||"),)

#: Variables of a tensor sweep, in documented order.
TENSOR_VARIABLES: Mapping[str, Variable] = _by_name(
    Variable(
        "lam_hat", _S, "f8", "estimated weight lambda_hat_j returned by SROA step j", extra=_ALG1
    ),
    Variable("lam_true", _S, "f8", "weight of the true component matched to step j"),
    Variable(
        "lam_err", _S, "f8", "|lambda_hat_j - lambda_pi(j)| after optimal (Hungarian) matching"
    ),
    Variable(
        "vec_err",
        _S,
        "f8",
        "||v_hat_j - v_pi(j)|| after optimal matching (even p: min over sign)",
    ),
    Variable(
        "certified",
        _S,
        "bool",
        "global optimality of step j certified by the solver",
        extra=(("note", "False past the instance's last step"),),
    ),
    Variable("upper_bound", _S, "f8", "valid upper bound of step j's objective max T_{j-1} x^p"),
    Variable(
        "n_best",
        _S,
        "f8",
        "number of starts of a local method that reached step j's best value",
        extra=(("note", "NaN for methods without starts, and past the instance's last step"),),
    ),
    Variable(
        "confirmed",
        _S,
        "bool",
        "no start of an independent confirmation rose above step j's best value (local methods)",
        extra=(("note", "evidence against a missed global step, not a certificate"),),
    ),
    Variable(
        "thm31_lam_bound",
        _S,
        "f8",
        "Theorem 3.1 bound on |lambda_hat_j - lambda_pi(j)|: 2 eps",
        extra=_T31,
    ),
    Variable(
        "thm31_vec_bound",
        _S,
        "f8",
        "Theorem 3.1 bound on ||v_hat_j - v_pi(j)||: 20 eps / lambda_pi(j)",
        extra=_T31,
    ),
    Variable(
        "eps", (), "f8", "operator norm ||E|| of the perturbation (best value found)", extra=_EPS
    ),
    Variable("eps_lower", (), "f8", "certified lower bound of ||E||"),
    Variable("eps_upper", (), "f8", "certified upper bound of ||E||"),
    Variable("eps_certified", (), "bool", "||E|| bracket certified tight"),
    Variable(
        "thm22_lam_bound",
        (),
        "f8",
        "Theorem 2.2 bound on |lambda_hat_1 - lambda_pi(1)|: eps",
        extra=_T22,
    ),
    Variable(
        "thm22_vec_bound",
        (),
        "f8",
        "Theorem 2.2 bound on ||v_hat_1 - v_pi(1)||: 10 (eps/lam + (eps/lam)^2)",
        extra=_T22,
    ),
    Variable(
        "solve_time",
        (),
        "f8",
        "seconds in the solvers for the instance (all SROA steps + ||E||)",
        units="s",
    ),
)

#: The estimated components of a tensor sweep (``[output] vectors = true``).
V_HAT = Variable(
    "v_hat",
    (STEP, COMPONENT),
    "f8",
    "estimated component v_hat_j (column of SROA's vectors)",
    extra=(("note", "NaN past the instance's n and last step"),),
)

_STEP_NOTE = (
    ("note", "SROA step j recovers one component; errors after optimal (Hungarian) matching"),
)

#: Variables of a model sweep (``[model]`` spec), in documented order.
MODEL_VARIABLES: Mapping[str, Variable] = _by_name(
    Variable(
        "lam_hat",
        _S,
        "f8",
        "lambda_hat_j of SROA step j on the whitened T_hat (sign fixed > 0); "
        "the recovered weight is 1/lambda_hat_j^2",
        extra=_ALG1,
    ),
    Variable("certified", _S, "bool", "global optimality of SROA step j certified by the solver"),
    Variable("upper_bound", _S, "f8", "valid upper bound of step j's objective max T_{j-1} x^3"),
    Variable(
        "component_error",
        _S,
        "f8",
        "error of the component recovered at step j: total variation "
        "(1/2 l1) to the matched topic, or l2 distance to the matched mean",
        units="1 (topics, probability); data units (gmm)",
        extra=_STEP_NOTE,
    ),
    Variable(
        "weight_error",
        _S,
        "f8",
        "|w_hat_j - w_pi(j)|: error of the mixing weight recovered at step j",
        extra=_STEP_NOTE,
    ),
    Variable(
        "eps",
        (),
        "f8",
        "||E|| with the population whitening W: E = M3_hat(W,W,W) - M3(W,W,W), "
        "the paper's perturbation (best value found)",
        units="1 (whitened space)",
        extra=_EPS,
    ),
    Variable("eps_lower", (), "f8", "certified lower bound of ||E|| (population W)"),
    Variable("eps_upper", (), "f8", "certified upper bound of ||E|| (population W)"),
    Variable("eps_certified", (), "bool", "||E|| bracket (population W) certified tight"),
    Variable(
        "eps_full",
        (),
        "f8",
        "||E|| with the estimated whitening W_hat: M3_hat(W_hat,W_hat,W_hat) "
        "minus the true SOD tensor in W_hat's coordinates (whole pipeline; best value found)",
        units="1 (whitened space)",
    ),
    Variable("eps_full_upper", (), "f8", "certified upper bound of eps_full"),
    Variable(
        "lambda_min",
        (),
        "f8",
        "smallest true lambda_i = w_i^(-1/2), the scale eps compares with",
    ),
    Variable(
        "success",
        (),
        "bool",
        "every component_error and weight_error within the tolerances",
        extra=(("note", "False also for instances not computed yet (see component_error)"),),
    ),
    Variable(
        "sigma2_hat",
        (),
        "f8",
        "variance used by the mixture's corrections (NaN for topics)",
        units="data units^2",
    ),
    Variable(
        "solve_time",
        (),
        "f8",
        "wall seconds of the whole instance: sampling, moment estimation, SROA and both norms",
        units="s",
    ),
)

_EVAL = (
    ("note", "dim 'step' counts the search's evaluations here (k = 1, 2, ... in the order made)"),
    ("past_end", "NaN (False for trace_passed) after the search's n_evals evaluations"),
)
_SEARCH = (("paper", "first crossing of the criterion in epsilon = ||E||"),)

#: Variables of a threshold sweep (``[threshold]`` spec): one first-crossing search per
#: instance (``sroa_dist.find_threshold``), in documented order.
THRESHOLD_VARIABLES: Mapping[str, Variable] = _by_name(
    Variable(
        "eps_star",
        (),
        "f8",
        "threshold: upper end of the final bracket, the first ||E|| seen to fail below which "
        "every ||E|| evaluated passed",
        extra=(*_SEARCH, ("note", "inf when no ||E|| in eps_range failed (reached false)")),
    ),
    Variable(
        "eps_lo",
        (),
        "f8",
        "lower end of the final bracket (passed); 0 when eps_range's start already failed",
    ),
    Variable("eps_hi", (), "f8", "upper end of the final bracket (failed); equals eps_star"),
    Variable("n_evals", (), "f8", "number of SROA runs the search made"),
    Variable("reached", (), "bool", "a failure was seen within eps_range"),
    Variable(
        "non_monotone",
        (),
        "bool",
        "some ||E|| passed above one that failed (continued scan or bisection)",
        extra=(
            (
                "note",
                "since search revision 2: only passes and failures whose SROA steps were all "
                "global (no step's global gap above its tolerance); the others count in "
                "artefacts",
            ),
        ),
    ),
    Variable(
        "artefacts",
        (),
        "f8",
        "evaluations whose verdict came from an SROA with a non-global step (passes above a "
        "failure, and failures)",
        extra=(("note", "NaN in stores made before the global check (search revision 1)"),),
    ),
    Variable(
        "scan_resolution",
        (),
        "f8",
        "ratio between consecutive scanned ||E|| below the first failure: narrower failure "
        "windows can be missed",
    ),
    Variable(
        "certified_ends",
        (),
        "f8",
        "1 where the bracket stands with certified steps at both ends, 0 where it does not",
        extra=(("note", "NaN where certify_ends did not run or a step was not certified"),),
    ),
    Variable(
        "certified_fraction",
        (),
        "f8",
        "fraction of all SROA steps of the search certified globally optimal",
    ),
    Variable("trace_eps", _S, "f8", "||E|| of evaluation k of the search", extra=_EVAL),
    Variable(
        "trace_metric",
        _S,
        "f8",
        "the criterion's metric at evaluation k (value: max |lam_hat - lam| / eps; recovery: "
        "max ||v_hat - v||; theorem: largest error / its bound)",
        extra=_EVAL,
    ),
    Variable("trace_passed", _S, "bool", "evaluation k met the criterion", extra=_EVAL),
    Variable(
        "trace_global_gap",
        _S,
        "f8",
        "largest global gap of evaluation k's SROA steps: best value of the check starts "
        "minus the step's (tensor units; NaN where no step was checked)",
        extra=_EVAL,
    ),
    Variable(
        "trace_non_global",
        _S,
        "bool",
        "evaluation k's SROA kept a step whose global gap exceeds 1e-6 ||T_j||_F",
        extra=_EVAL,
    ),
    Variable(
        "trace_redone",
        _S,
        "f8",
        "steps of evaluation k's SROA redone from a higher point of their global check",
        extra=_EVAL,
    ),
    Variable(
        "trace_lam_err",
        _S,
        "f8",
        "max |lam_hat - lam| of evaluation k (any fixed-level criterion can judge it again)",
        extra=_EVAL,
    ),
    Variable("trace_vec_err", _S, "f8", "max ||v_hat - v|| of evaluation k", extra=_EVAL),
    Variable("solve_time", (), "f8", "wall seconds of the instance's whole search", units="s"),
)

#: Bookkeeping variables (one element per block; each task writes only its own).
BOOKKEEPING: Mapping[str, Variable] = _by_name(
    Variable(DONE, (BLOCK,), "bool", "block finished and its data written", over_grid=False),
    Variable(
        DONE_TIME,
        (BLOCK,),
        "f8",
        "when the block's data was written (POSIX time)",
        units="s",
        over_grid=False,
    ),
    Variable(
        FAILED,
        (BLOCK,),
        "bool",
        "last attempt at the block raised (see attrs of this variable)",
        over_grid=False,
    ),
)
