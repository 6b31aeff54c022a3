"""Solver policy (sroa_dist/methods/cost.py): the default norm method and the cost of a solve;
a core module, free of the sweep machinery."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sroa_dist.methods.builtin import IMPLICIT_BYTES, relaxation_cost, relaxation_tractable
from sroa_dist.methods.cost import certified_tractable, resolve_norm_method, solve_cost


def _modules_after(code: str) -> set[str]:
    """Module names loaded by a fresh interpreter after running ``code``."""
    probe = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.slow
def test_policy_and_schema_are_free_of_the_sweep_machinery():
    loaded = _modules_after("import sroa_dist.methods.cost")
    assert not {m for m in loaded if m.startswith("sroa_dist.sweep")}
    assert not {m.split(".")[0] for m in loaded} & {"dask", "distributed", "zarr", "xarray"}
    loaded = _modules_after("import sroa_dist.sweep.cube, sroa_dist.sweep.spec.load")
    assert not {m.split(".")[0] for m in loaded} & {"dask", "distributed", "zarr", "xarray"}


@pytest.mark.parametrize("n, p", [(4, 3), (10, 3), (14, 4), (20, 3), (30, 4)])
def test_norm_method_defaults(n, p):
    assert resolve_norm_method("sshopm", n, p, "power") == "power"  # given: used as is
    for method in ("certified", "sos"):  # global methods bound ||E|| themselves
        assert resolve_norm_method(method, n, p, None) == method
    want = "certified" if relaxation_tractable(n, p) else "sshopm"
    assert resolve_norm_method("sshopm", n, p, None) == want
    assert resolve_norm_method("power", n, p, None) == want
    assert certified_tractable(n, p) == bool(relaxation_tractable(n, p))


def test_solve_cost_branches():
    # Local methods: 1e-4 + 2.5e-7 n^p below the implicit-deflation size.
    assert solve_cost("power", 10, 3) == 1e-4 + 2.5e-7 * 10**3
    # The relaxation methods add the one certified-step model (relaxation_cost).
    assert solve_cost("certified", 10, 3) == 1e-4 + 2.5e-7 * 1e3 + relaxation_cost(10, 3)
    assert solve_cost("sos", 10, 3) == solve_cost("certified", 10, 3)
    # ... and is priced as local where it is intractable.
    n = next(n for n in range(3, 40) if not relaxation_tractable(n, 3))
    assert solve_cost("certified", n, 3) == solve_cost("power", n, 3)
    # Above IMPLICIT_BYTES per tensor: sshopm restarts warm, power iterates cold.
    big = next(n for n in range(10, 400) if 8.0 * n**3 > IMPLICIT_BYTES)
    assert solve_cost("sshopm", big, 3) == 0.01 + 1e-8 * big**3
    assert solve_cost("power", big, 3) == 0.01 + 1e-7 * big**3


def test_power_is_priced_at_its_budget():
    """``power``'s cost model was measured at its default 20 starts and 30 iterations; other
    starts and iterations, or the AGHKT budget (hundreds of starts at n = 64), scale it by
    their start-iterations: a block's estimate and deadline follow the budget a spec asks for."""
    from sroa_dist.methods import aghkt_budget

    base = solve_cost("power", 64, 3)
    assert solve_cost("power", 64, 3, {}) == base
    assert solve_cost("power", 64, 3, {"n_starts": 40}) == pytest.approx(2 * base)
    assert solve_cost("power", 64, 3, {"n_iter": 15}) == pytest.approx(base / 2)
    L, N = aghkt_budget(64, 0.05)
    got = solve_cost("power", 64, 3, {"budget": "aghkt", "noise_level": 0.05})
    assert got == pytest.approx(base * L * N / 600) and got > 10 * base
    assert solve_cost("sshopm", 64, 3, {"n_starts": 40}) == solve_cost("sshopm", 64, 3)
