"""``sroa-dist validate`` and ``run`` print the cost model's one estimate line, for every kind
of sweep, in real subprocesses; ``validate --workers`` prices the given worker count."""

from __future__ import annotations

import re

import pytest

from tests.support.helpers import run_cli

SMOKE = "sweeps/smoke"

#: "estimate: N instances in B blocks; CPU ...; about W wall on K workers (idle machine)"
LINE = re.compile(
    r"^estimate: ([\d,]+) instances? in ([\d,]+) blocks?; (\S+) (s|min|h) CPU \((\S+) s per "
    r"instance\), peak (\S+) GiB per worker; about (\S+) (s|min|h) wall on (\d+) workers? "
    r"\(idle machine\)",
    re.M,
)
_UNIT = {"s": 1.0, "min": 60.0, "h": 3600.0}


def _estimate(*args: str) -> dict:
    out = run_cli("validate", *args).stdout
    found = LINE.findall(out)
    assert len(found) == 1, out
    n, blocks, cpu, cu, per, peak, wall, wu, workers = found[0]
    return {
        "instances": int(n.replace(",", "")),
        "blocks": int(blocks.replace(",", "")),
        "cpu": float(cpu.replace(",", "")) * _UNIT[cu],
        "per": float(per),
        "wall": float(wall.replace(",", "")) * _UNIT[wu],
        "workers": int(workers),
        "out": out,
    }


@pytest.mark.parametrize(
    "spec",
    ["sweeps/figure2.toml", f"{SMOKE}/threshold.toml", f"{SMOKE}/gmm.toml"],
    ids=["tensor", "threshold", "model"],
)
def test_validate_prints_one_estimate_for_every_kind(spec):
    est = _estimate(spec, "--workers", "2")
    dims = next(ln for ln in est["out"].splitlines() if ln.startswith("instances: "))
    assert f"instances: {est['instances']} in {est['blocks']} blocks" in dims
    assert est["cpu"] > 0 and est["wall"] > 0 and est["workers"] <= 2


def test_the_estimate_scales_with_replicates_and_workers():
    one = _estimate("sweeps/figure2.toml", "--set", "replicates=50", "--workers", "1")
    two = _estimate("sweeps/figure2.toml", "--set", "replicates=100", "--workers", "1")
    assert two["instances"] == 2 * one["instances"]
    assert two["per"] == pytest.approx(one["per"], rel=0.01)  # the same grid points
    assert two["cpu"] == pytest.approx(2 * one["cpu"], rel=0.05)  # printed to 3 digits
    four = _estimate("sweeps/figure2.toml", "--set", "replicates=100", "--workers", "4")
    assert four["workers"] == 4 and four["wall"] < two["wall"] / 2


@pytest.mark.slow
def test_run_prints_the_same_line_before_it_starts(tmp_path):
    args = [f"{SMOKE}/gmm.toml", "--set", "replicates=1", "--workers", "1"]
    want = LINE.search(run_cli("validate", *args).stdout).group(0)
    proc = run_cli("run", *args, "--store", str(tmp_path / "s.zarr"))
    lines = proc.stderr.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("sroa-dist: sweep"))
    assert lines[start + 1].startswith(want)  # before the first progress line
    assert "instances: 2 total, 2 computed" in proc.stdout
