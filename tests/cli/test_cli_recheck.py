"""`sroa-dist recheck FILE [--c C]`: a saved worst case re-checked in a real subprocess; exit 0
where the claim stands, 1 where it does not, 2 (error/hint) for a file that is not one."""

from __future__ import annotations

import sroa_dist as core
from tests.support.helpers import run_cli


def test_recheck_verb(tmp_path):
    # -ε Σ v_i^{⊗3} (exact norm ε) lowers every weight by ε: ratio 1, so c = 0.5 is broken.
    res = core.worst_case(4, 3, 0.2, starts=("sod-shrink",), budget=1, rng=0)
    path = str(res.save(tmp_path / "shrink.npz", c=0.5))
    ok = run_cli("recheck", path)
    assert "the claim STANDS" in ok.stdout and "c = 0.5" in ok.stdout
    assert "(certified)" in ok.stdout and "all certified" in ok.stdout
    no = run_cli("recheck", path, "--c", "2", check=False)
    assert no.returncode == 1 and "DOES NOT STAND" in no.stdout
    (tmp_path / "junk.npz").write_text("not a worst case")
    bad = run_cli("recheck", str(tmp_path / "junk.npz"), check=False)
    assert bad.returncode == 2
    lines = bad.stderr.strip().splitlines()
    assert lines[0].startswith("sroa-dist recheck: error: ")
    assert "not a saved worst case" in lines[0]
    assert lines[1].startswith("hint: ")
