"""Synthetic result cubes (docs/reference/cube.md contract) for the analysis tests; seeded, fast."""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.special import expit

NOISES = ("binary", "uniform", "gaussian")
PROVENANCE = {
    "sroa_kind": "tensor",
    "spec": 'name = "synthetic"\n[grid]\nnoise = ["binary", "uniform", "gaussian"]\n',
    "sroa_dist_version": "0.1.0",
    "git_commit": "0123456789abcdef",
    "created": "2026-01-01T00:00:00Z",
    "history": "built by tests/support/analysis_cubes.py",
}


def _labels(values) -> np.ndarray:
    """String coordinate as the store writes it (object dtype → zarr v3 vlen string)."""
    return np.array(list(values), dtype=object)


def _finish(
    coords: dict,
    lam_true: np.ndarray,
    lam_err: np.ndarray,
    vec_err: np.ndarray,
    eps: np.ndarray,
    rng: np.random.Generator,
    *,
    eps_is_axis: bool,
) -> xr.Dataset:
    """Fill every contract variable from the planted errors; dims are coords' keys + step."""
    inst_dims = [d for d in coords if d != "step"]
    step_dims = [*inst_dims, "step"]
    nan = np.isnan(vec_err)
    sign = np.where(rng.random(lam_err.shape) < 0.5, -1.0, 1.0)
    certified = (rng.random(vec_err.shape) < 0.9) & ~nan
    lam1 = lam_true[..., 0]
    ratio1 = eps / lam1
    eps_step = eps[..., None]
    data = {
        "lam_hat": (step_dims, lam_true + sign * lam_err),
        "lam_true": (step_dims, lam_true),
        "lam_err": (step_dims, lam_err),
        "vec_err": (step_dims, vec_err),
        "certified": (step_dims, certified),
        "upper_bound": (step_dims, lam_true + lam_err + 1e-3),
        "eps_lower": (inst_dims, eps * (1 - 1e-6)),
        "eps_upper": (inst_dims, eps * (1 + 1e-6)),
        "eps_certified": (inst_dims, rng.random(eps.shape) < 0.95),
        "thm22_lam_bound": (inst_dims, eps.copy()),
        "thm22_vec_bound": (inst_dims, 10 * (ratio1 + ratio1**2)),
        "thm31_lam_bound": (step_dims, np.where(nan, np.nan, 2 * eps_step + 0 * lam_true)),
        "thm31_vec_bound": (step_dims, 20 * eps_step / lam_true),
        "solve_time": (inst_dims, rng.uniform(0.01, 0.1, eps.shape)),
    }
    if not eps_is_axis:  # the measured-‖E‖ variable cannot share the name of an `eps` axis
        data["eps"] = (inst_dims, eps)
    ds = xr.Dataset(data, coords=coords, attrs=dict(PROVENANCE))
    ds["lam_err"].attrs = {"long_name": "|λ̂_j − λ_π(j)|"}
    ds["vec_err"].attrs = {"long_name": "‖v̂_j − v_π(j)‖"}
    return ds


def figure1_cube(n_sigma: int = 40, seed: int = 0, noises=NOISES) -> xr.Dataset:
    """noise × sigma × replicate(1) × step(1), σ from 1e-4 to 0.2 as in Figure 1.

    Errors are planted strictly inside the Theorem 2.2 bounds (λ = 1): lam_err ≤ 0.5 ε and
    vec_err ≤ 2 ε, so any violation a test finds is one the test planted.
    """
    rng = np.random.default_rng(seed)
    sigma = np.geomspace(1e-4, 0.2, n_sigma)
    shape = (len(noises), n_sigma, 1)
    eps = 4.0 * sigma[None, :, None] * rng.uniform(0.9, 1.1, shape)
    lam_true = np.ones((*shape, 1))
    lam_err = (eps * rng.uniform(0.0, 0.5, shape))[..., None]
    vec_err = (eps * rng.uniform(0.0, 2.0, shape))[..., None]
    coords = {"noise": _labels(noises), "sigma": sigma, "replicate": [0], "step": [1]}
    return _finish(coords, lam_true, lam_err, vec_err, eps, rng, eps_is_axis=False)


def figure2_cube(n_rep: int = 50, n_steps: int = 10, seed: int = 1, noises=NOISES) -> xr.Dataset:
    """noise × replicate × step(1..n_steps) at one σ = 0.01 (σ a scalar setting, not an axis)."""
    rng = np.random.default_rng(seed)
    shape = (len(noises), n_rep)
    eps = 0.04 * rng.uniform(0.9, 1.1, shape)
    lam_true = np.ones((*shape, n_steps))
    lam_err = eps[..., None] * rng.uniform(0.0, 0.6, (*shape, n_steps))
    vec_err = eps[..., None] * rng.uniform(0.0, 1.5, (*shape, n_steps))
    coords = {
        "noise": _labels(noises),
        "replicate": np.arange(n_rep),
        "step": np.arange(1, n_steps + 1),
    }
    ds = _finish(coords, lam_true, lam_err, vec_err, eps, rng, eps_is_axis=False)
    ds.attrs["sigma"] = 0.01
    return ds


def planted_threshold(n, c: float = 0.8, exponent: float = -0.5):
    """The planted threshold thr(n) = c · n^exponent of :func:`scaling_cube`."""
    return c * np.asarray(n, dtype=float) ** exponent


def scaling_cube(
    ns=(4, 8, 16, 32),
    n_eps: int = 12,
    n_rep: int = 40,
    width: float = 0.15,
    c: float = 0.8,
    exponent: float = -0.5,
    seed: int = 2,
    radius: float = 0.3,
    value_c: float | None = None,
    value_exponent: float = -0.5,
) -> xr.Dataset:
    """n × eps × replicate × step(1..max n) with planted success probabilities.

    Instance success ~ Bernoulli(logistic((log thr(n) − log ε) / width)) with
    thr(n) = c · n^exponent.  A success has every step's vec_err below ``radius``; a failure has
    one random step above it.  Steps past n are NaN, as in a real n sweep.

    Value errors: by default lam_err ≤ 0.5 ε at every step (the ``value`` criterion with c = 1
    always succeeds).  With ``value_c``, value success is planted independently with threshold
    ``value_c · n^value_exponent``: a failure has one step with lam_err in (1.2 ε, 1.9 ε), a
    success every step below 0.9 ε (``planted_value_success`` holds the outcomes).
    """
    rng = np.random.default_rng(seed)
    ns = np.asarray(ns)
    eps_grid = np.geomspace(0.02, 1.0, n_eps)
    nmax = int(ns.max())
    shape = (len(ns), n_eps, n_rep)
    log_thr = np.log(planted_threshold(ns, c, exponent))[:, None, None]
    p = expit((log_thr - np.log(eps_grid)[None, :, None]) / width)
    ok = rng.random(shape) < p
    vec_err = rng.uniform(0.0, 0.9 * radius, (*shape, nmax))
    bad_step = (rng.random(shape) * ns[:, None, None]).astype(int)
    fail = np.zeros((*shape, nmax), dtype=bool)
    np.put_along_axis(fail, bad_step[..., None], (~ok)[..., None], axis=-1)
    vec_err = np.where(fail, rng.uniform(1.2 * radius, 1.4, vec_err.shape), vec_err)
    past = np.arange(1, nmax + 1)[None, None, None, :] > ns[:, None, None, None]
    vec_err[np.broadcast_to(past, vec_err.shape)] = np.nan
    lam_true = np.where(past, np.nan, 1.0) + 0 * vec_err
    eps = np.broadcast_to(eps_grid[None, :, None], shape) * rng.uniform(0.999, 1.001, shape)
    lam_err = 0.5 * eps[..., None] * rng.uniform(0, 1, vec_err.shape) + 0 * vec_err
    if value_c is not None:
        log_v = np.log(planted_threshold(ns, value_c, value_exponent))[:, None, None]
        ok_v = rng.random(shape) < expit((log_v - np.log(eps_grid)[None, :, None]) / width)
        bad_v = (rng.random(shape) * ns[:, None, None]).astype(int)
        fail_v = np.zeros((*shape, nmax), dtype=bool)
        np.put_along_axis(fail_v, bad_v[..., None], (~ok_v)[..., None], axis=-1)
        scale = np.where(
            fail_v, rng.uniform(1.2, 1.9, fail_v.shape), rng.uniform(0, 0.9, fail_v.shape)
        )
        lam_err = eps[..., None] * scale + 0 * vec_err
    coords = {
        "n": ns,
        "eps": eps_grid,
        "replicate": np.arange(n_rep),
        "step": np.arange(1, nmax + 1),
    }
    ds = _finish(coords, lam_true, lam_err, vec_err, eps, rng, eps_is_axis=True)
    ds["planted_success"] = (("n", "eps", "replicate"), ok)
    if value_c is not None:
        ds["planted_value_success"] = (("n", "eps", "replicate"), ok_v)
    ds.attrs["setting_p"] = 3  # as the store writes a non-swept p
    return ds


def family_cube(n_rep: int = 24, seed: int = 11) -> xr.Dataset:
    """noise(2 families) × n × eps × replicate × step, as a perturbation-family sweep would give.

    ``gaussian``: recovery threshold flat in n (exponent 0), value errors always ≤ 0.5 ε.
    ``coherent-tilt``: the same recovery threshold, but value errors that fail the ``value``
    criterion (c = 1) above 0.6 n^(-1/2), Theorem 3.1's rate for p = 3.
    """
    iid = scaling_cube(n_rep=n_rep, exponent=0.0, c=0.5, seed=seed)
    tilt = scaling_cube(
        n_rep=n_rep, exponent=0.0, c=0.5, seed=seed + 1, value_c=0.6, value_exponent=-0.5
    )
    iid["planted_value_success"] = xr.ones_like(tilt["planted_value_success"])
    ds = xr.concat([iid, tilt], "noise", coords="minimal", compat="override")
    ds = ds.assign_coords(noise=("noise", _labels(["gaussian", "coherent-tilt"])))
    return ds.transpose("noise", "n", "eps", "replicate", "step")


def criteria_cube() -> xr.Dataset:
    """sigma(1) × replicate(6) × step(2): instances whose success under each criterion is
    worked out by hand in ``CRITERIA_CASES`` (measured ‖E‖ in the ``eps`` variable).
    """
    # replicate: eps, lam_err per step, vec_err per step, lam_true per step
    rows = [
        (0.1, (0.05, 0.09), (0.10, 0.20), (1.0, 1.0)),  # A
        (0.1, (0.02, 0.15), (0.35, 0.10), (1.0, 1.0)),  # B
        (0.01, (0.025, nan), (0.10, nan), (1.0, nan)),  # C: rank 1, step 2 absent
        (nan, (nan, nan), (nan, nan), (nan, nan)),  # D: not run
        (0.05, (0.05, 0.05), (0.10, 0.10), (1.0, 1.0)),  # E: on the value bound c = 1
        (0.005, (0.001, 0.001), (0.10, 0.25), (2.0, 0.5)),  # F: Theorem 3.1 vector bound 0.2
    ]
    eps = np.array([[r[0] for r in rows]])
    lam_err = np.array([[r[1] for r in rows]])
    vec_err = np.array([[r[2] for r in rows]])
    lam_true = np.array([[r[3] for r in rows]])
    coords = {"sigma": [0.01], "replicate": np.arange(len(rows)), "step": [1, 2]}
    rng = np.random.default_rng(0)
    return _finish(coords, lam_true, lam_err, vec_err, eps, rng, eps_is_axis=False)


nan = np.nan
#: criterion, options -> success per replicate of :func:`criteria_cube` (NaN: no data).
CRITERIA_CASES = [
    ("recovery", {}, [1, 0, 1, nan, 1, 1]),
    ("recovery", {"radius": 0.4}, [1, 1, 1, nan, 1, 1]),
    ("recovery", {"radius": 0.2}, [1, 0, 1, nan, 1, 0]),
    ("value", {}, [1, 0, 0, nan, 1, 1]),
    ("value", {"c": 0.5}, [0, 0, 0, nan, 0, 1]),
    ("value", {"c": 2.0}, [1, 1, 0, nan, 1, 1]),
    ("value", {"c": 3.0}, [1, 1, 1, nan, 1, 1]),
    ("theorem", {}, [1, 1, 0, nan, 1, 0]),
]


def partial_store(
    path,
    spec_path,
    overrides=(),
    *,
    chunks=None,
    done=(),
    failed=(),
):
    """A real sweep store with only blocks ``done`` finished and ``failed`` recorded as failed.

    What a sweep killed (or failing) part-way leaves: written with the sweep's own storage and
    worker code, block by block, in this process (no cluster needed).
    """
    from sroa_dist.sweep import load_spec
    from sroa_dist.sweep.kinds import make_layout
    from sroa_dist.sweep.layout import block_task
    from sroa_dist.sweep.run.worker import compute_block
    from sroa_dist.sweep.store.block_write import write_block
    from sroa_dist.sweep.store.prepare import mark_failed, prepare_store

    spec = load_spec(spec_path, list(overrides))
    layout = make_layout(spec, chunks=chunks)
    prepare_store(str(path), spec, layout)
    for b in done:
        write_block(str(path), b, compute_block(block_task(spec, layout, b)))
    if failed:
        mark_failed(str(path), {b: f"ValueError: planted failure of block {b}" for b in failed})
    return layout
