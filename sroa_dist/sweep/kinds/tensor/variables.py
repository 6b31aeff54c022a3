"""The tensor kind's cube: its sweep dims, in cube order, and its variables (shared dims and
the :class:`~sroa_dist.sweep.cube.Dim` / :class:`~sroa_dist.sweep.cube.Variable` records:
:mod:`sroa_dist.sweep.cube`)."""

from __future__ import annotations

from collections.abc import Mapping

from sroa_dist.sweep.cube import COMPONENT, SHARED_AXES, STEP, Dim, Variable, by_name

__all__ = ["NOISE_LEVELS", "TENSOR_DIMS", "TENSOR_VARIABLES", "V_HAT", "eps_scaled_target"]

#: Noise-level dims of tensor sweeps; exactly one is in use per sweep.
NOISE_LEVELS: tuple[str, ...] = ("sigma", "eps", "eps_scaled")

#: Sweep dims of tensor sweeps, in cube order.
TENSOR_DIMS: Mapping[str, Dim] = by_name(
    *(SHARED_AXES[d] for d in ("noise", "n", "p", "rank", "method")),
    Dim("sigma", "f8", "entry scale sigma of the noise"),
    SHARED_AXES["eps"],
    Dim(
        "eps_scaled",
        "f8",
        "eps * n^(1/(p-1)) / lambda_min (Theorem 3.1 scale); absolute ||E|| in eps",
    ),
)


def eps_scaled_target(eps_scaled: float, lambda_min: float, n: int, p: int) -> float:
    """The operator norm ``||E||`` meant by a ``noise.eps_scaled`` value (the ``eps_scaled`` dim).

    ``eps_scaled * lambda_min * n^(-1/(p-1))``: Theorem 3.1 recovers every component once
    ``||E|| <= c lambda_min n^(-1/(p-1))``, so ``eps_scaled`` measures the perturbation in
    units of that scale (1 is the theorem's threshold up to its constant ``c``).
    """
    return eps_scaled * lambda_min * n ** (-1.0 / (p - 1))


_S = (STEP,)
_ALG1 = (("paper", "Algorithm 1, line 3"),)
_T31 = (("paper", "Theorem 3.1"),)
_T22 = (("paper", "Theorem 2.2"),)
_EPS = (("paper", "epsilon = ||E||"),)

#: Variables of a tensor sweep, in documented order.
TENSOR_VARIABLES: Mapping[str, Variable] = by_name(
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
