"""The record of a worst-case search, and its file: a worst case saved as a claim that anyone
can re-check (:func:`sroa_dist.recheck_worst_case`).

:meth:`WorstCaseResult.save` writes everything a re-check needs (``E`` dense, ``λ``, ``V``,
``eps``, the claimed ratio and ``c``, the seeds) and the search's record to one ``.npz`` file;
:func:`load_worst_case` reads it back whole or refuses it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..tensors import check_symmetric_tensor
from .worst_case_form import ExactForm

__all__ = ["WorstCaseResult", "load_worst_case", "read_claim", "save_worst_case"]


@dataclasses.dataclass(frozen=True)
class WorstCaseResult:
    """The worst perturbation found and how the search got there.

    Attributes
    ----------
    E : ndarray, shape (n,)*p
        Symmetric, with operator norm ``eps`` (to the bracket ``norm_bracket``).
    metric : str
        The metric maximised.
    value : float
        The metric reached by ``E`` (``"lam"``: the value error over ``eps``, the attained lower
        end of ``‖E‖``, so an upper bound of ``error / ‖E‖``; ``ratio`` is the lower bound).
    lam_err, vec_err : ndarray, shape (r,)
        Per-step errors of SROA on ``T + E`` after optimal matching.
    trace : ndarray, shape (n_evals,)
        Metric of every evaluated candidate, in order (the structured and random starts
        first); ``best_trace`` is its running maximum.
    best_trace : ndarray, shape (n_evals,)
    start : str
        The start the search began from (the best start by metric).
    start_values : dict
        Metric of each start.
    tilt_cosine : float
        Largest ``|⟨E, E_tilt,l⟩_F| / (‖E‖_F ‖E_tilt,l‖_F)`` over the coherent tilts toward
        each component ``l``: 1 means the search found a coherent tilt.
    tilt_component : int
        The ``l`` of that best-aligned tilt.
    norm_bracket : tuple of float
        ``(lower, upper)`` of ``‖E‖``. ``lower`` is attained (``E`` was rescaled by it, so it is
        ``eps``); ``upper`` is the relaxation's validated bound where ``norm_certified``, else
        the unfolding bound (true, but loose).
    eps : float
        The target norm (the bracket's lower end).
    lambdas, V : ndarray
        The SOD tensor ``T = Σ λ_i v_i^{⊗p}`` the search attacked.
    seed : Any
        The ``rng`` argument (the search is a pure function of it and the other arguments).
    method : str
        The search (``"es"`` or ``"gradient"``).
    step_method, norm_method : str
        Rank-one method of SROA's steps, and the method that computed ``‖E‖`` for the
        renormalisation during the search (a local one with fresh starts at every evaluation).
    norm_certified : bool
        Whether ``norm_bracket`` is certified (within the relaxation's tolerance). The returned
        ``E`` is certified wherever the relaxation is tractable, whatever ``norm_method``.
    ratio : float
        ``max_j |λ̂_j − λ_π(j)| / upper``: SROA's largest value error over the upper end of
        the norm bracket, the number a claim about Theorem 3.1's constant needs (``E`` breaks
        ``error ≤ c·‖E‖`` only if ``ratio > c``).
    ratio_kind : str
        ``"certified"`` where the bracket is (``ratio`` is then the ratio, to the bracket's
        tolerance), ``"exact"`` where the norm is a closed form or a certified ``k``-dimensional
        problem (``form``), else ``"lower-bound"``: the upper end is the unfolding bound, so the
        true ratio is at least ``ratio`` (and at most ``ratio · upper / lower``).
    solve_seed, norm_seed : int
        The seeds drawn from ``rng`` for SROA's steps and for the norm (saved with the result
        so a re-check can rerun SROA with the same starts).
    form : ExactForm, optional
        ``E`` as a member of an exact-norm family
        (:class:`~sroa_dist.studies.worst_case_form.ExactForm`): saved by its parameters
        instead of ``n^p`` entries, and re-checked with the norm recomputed from them.
    """

    E: NDArray[np.float64]
    metric: str
    value: float
    lam_err: NDArray[np.float64]
    vec_err: NDArray[np.float64]
    trace: NDArray[np.float64]
    best_trace: NDArray[np.float64]
    start: str
    start_values: dict[str, float]
    tilt_cosine: float
    tilt_component: int
    norm_bracket: tuple[float, float]
    eps: float
    lambdas: NDArray[np.float64]
    V: NDArray[np.float64]
    seed: Any
    method: str = "es"
    step_method: str = "certified"
    norm_method: str = "certified"
    norm_certified: bool = True
    ratio: float = math.nan
    ratio_kind: str = "lower-bound"
    solve_seed: int = 0
    norm_seed: int = 0
    form: ExactForm | None = None

    @property
    def n_evals(self) -> int:
        """Number of SROA runs the search spent (a final certification's rerun not counted)."""
        return len(self.trace)

    def save(self, path: str | os.PathLike[str], *, c: float = 2.0) -> Path:
        """Save this worst case as a claim that it breaks ``error ≤ c·‖E‖`` (an ``.npz``
        file: ``E`` dense, ``λ``, ``V``, ``eps``, the ratio, ``c``, the seeds, the search's
        record); :func:`sroa_dist.recheck_worst_case` re-checks it from the file alone. An
        existing file is never overwritten."""
        return save_worst_case(self, path, c=c)


#: Format of the saved file (``format`` in its metadata); a reader refuses any other. Format 2
#: stores ``E`` by its :class:`ExactForm` (``form`` in the metadata, its arrays as
#: ``form_<name>``) instead of its entries.
FORMAT = "sroa-dist worst case 1"
FORMAT_FORM = "sroa-dist worst case 2"
_ARRAYS = ("E", "lam_err", "vec_err", "trace", "best_trace", "lambdas", "V")


def _seed_json(seed: Any) -> Any:
    """The ``rng`` argument as JSON: an int or None as itself, anything else (a Generator,
    whose state is not the seed it started from) as its repr; ``solve_seed`` and
    ``norm_seed``, saved beside it, are what reruns need."""
    if seed is None or isinstance(seed, (int, np.integer)):
        return None if seed is None else int(seed)
    return repr(seed)


def save_worst_case(result: WorstCaseResult, path: str | os.PathLike[str], *, c: float) -> Path:
    """Write ``result`` as a claim that it breaks ``error ≤ c·‖E‖`` to ``path`` (``.npz``).

    The file holds ``E`` dense and ``λ``, ``V``, ``eps``, ``n``, ``p``, the claimed ratio and
    ``c``, the seeds and the search's record (metadata as JSON). It is written to a temporary
    name and moved into place; an existing ``path`` is refused, never overwritten.
    """
    c = float(c)
    if not (math.isfinite(c) and c > 0):
        raise InputError(f"c: expected a finite constant > 0, received {c}", "give c > 0, e.g. 2")
    path = Path(path)
    if path.suffix != ".npz":
        raise InputError(
            f"{path}: expected a file name ending in .npz", "name the file e.g. worst.npz"
        )
    if path.exists():
        raise InputError(
            f"{path}: exists; a saved worst case is never overwritten",
            "choose a new file name",
        )
    meta = {
        "format": FORMAT if result.form is None else FORMAT_FORM,
        "n": int(result.E.shape[0]),
        "p": int(result.E.ndim),
        "c": c,
        "claimed_ratio": float(result.ratio),
        "ratio_kind": result.ratio_kind,
        "eps": float(result.eps),
        "norm_bracket": [float(b) for b in result.norm_bracket],
        "norm_certified": bool(result.norm_certified),
        "metric": result.metric,
        "value": float(result.value),
        "start": result.start,
        "start_values": {k: float(v) for k, v in result.start_values.items()},
        "tilt_cosine": float(result.tilt_cosine),
        "tilt_component": int(result.tilt_component),
        "seed": _seed_json(result.seed),
        "solve_seed": int(result.solve_seed),
        "norm_seed": int(result.norm_seed),
        "method": result.method,
        "step_method": result.step_method,
        "norm_method": result.norm_method,
    }
    names = _ARRAYS if result.form is None else tuple(k for k in _ARRAYS if k != "E")
    arrays = {k: np.asarray(getattr(result, k), dtype=float) for k in names}
    if result.form is not None:
        meta["form"] = result.form.to_json()
        for k, v in result.form.arrays.items():
            arrays[f"form_{k}"] = np.asarray(v, dtype=float)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, meta=np.array(json.dumps(meta)), **arrays)
    try:  # hard link: fails where path appeared meanwhile, so nothing is ever replaced
        os.link(tmp, path)
    except FileExistsError:
        raise InputError(
            f"{path}: exists; a saved worst case is never overwritten", "choose a new file name"
        ) from None
    finally:
        tmp.unlink()
    return path


def read_claim(path: str | os.PathLike[str]) -> tuple[WorstCaseResult, float]:
    """``(result, c)`` from a file :func:`save_worst_case` wrote, whole or refused."""
    path = Path(path)
    bad = f"{path}: not a saved worst case"
    hint = "give a file written by WorstCaseResult.save"
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"][()]))
            fmt = meta.get("format") if isinstance(meta, dict) else None
            if fmt not in (FORMAT, FORMAT_FORM):
                raise InputError(
                    f"{bad} (format {fmt!r}, expected {FORMAT!r} or {FORMAT_FORM!r})", hint
                )
            names = _ARRAYS if fmt == FORMAT else tuple(k for k in _ARRAYS if k != "E")
            arrays = {k: np.array(z[k]) for k in names}
            form_arrays = {k[5:]: np.array(z[k]) for k in z.files if k.startswith("form_")}
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", hint) from None
    except InputError:
        raise
    except (OSError, ValueError, KeyError) as exc:  # not an npz, damaged, a key missing
        raise InputError(f"{bad} ({type(exc).__name__}: {exc})", hint) from None
    try:
        n, p = int(meta["n"]), int(meta["p"])
        form = None
        if fmt == FORMAT_FORM:
            f = meta["form"]
            form = ExactForm(f["kind"], float(f["scale"]), dict(f["params"]), form_arrays)
            arrays["E"] = form.dense(arrays["V"], arrays["lambdas"], p)
        E = check_symmetric_tensor(arrays["E"], "E")
        if E.shape != (n,) * p or arrays["V"].shape[0] != n:
            shapes = f"E has shape {E.shape}, V {arrays['V'].shape}, for n = {n}, p = {p}"
            raise InputError(f"{bad} ({shapes})", hint)
        result = WorstCaseResult(
            E=E,
            metric=meta["metric"],
            value=float(meta["value"]),
            lam_err=arrays["lam_err"],
            vec_err=arrays["vec_err"],
            trace=arrays["trace"],
            best_trace=arrays["best_trace"],
            start=meta["start"],
            start_values=dict(meta["start_values"]),
            tilt_cosine=float(meta["tilt_cosine"]),
            tilt_component=int(meta["tilt_component"]),
            norm_bracket=(float(meta["norm_bracket"][0]), float(meta["norm_bracket"][1])),
            eps=float(meta["eps"]),
            lambdas=arrays["lambdas"],
            V=arrays["V"],
            seed=meta["seed"],
            method=meta["method"],
            step_method=meta["step_method"],
            norm_method=meta["norm_method"],
            norm_certified=bool(meta["norm_certified"]),
            ratio=float(meta["claimed_ratio"]),
            ratio_kind=meta["ratio_kind"],
            solve_seed=int(meta["solve_seed"]),
            norm_seed=int(meta["norm_seed"]),
            form=form,
        )
        c = float(meta["c"])
    except InputError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{bad} ({type(exc).__name__}: {exc})", hint) from None
    return result, c


def load_worst_case(path: str | os.PathLike[str]) -> WorstCaseResult:
    """The :class:`~sroa_dist.WorstCaseResult` saved at ``path`` (its ``ratio`` is the ratio
    it claimed); a file that is not whole is refused with :class:`~sroa_dist.InputError`."""
    return read_claim(path)[0]
