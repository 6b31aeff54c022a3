"""The regression table's mapping and readers (``sroa_dist.analysis.published.regression`` and
``.reruns``): every published first-crossing row names a study spec that holds it with the
published search's settings, the withdrawn worst-case files read "withdrawn", and the
probability rows read real escape, confirmation and capture stores written by ``run_sweep``."""

from __future__ import annotations

import json
import math
import shutil
import tomllib

import pytest

from sroa_dist.analysis.published.regression import (
    THRESHOLD_FILES,
    WITHDRAWN,
    bracket_rows,
    probability_rows,
    summary,
)
from sroa_dist.analysis.published.reruns import rerun_of
from sroa_dist.analysis.published.sources import STUDIES, Data
from sroa_dist.sweep import load_spec, run_sweep
from tests.support.helpers import ROOT


def _settings(doc: dict) -> dict:
    """The published search's settings, in a threshold spec's terms."""
    st = doc.get("study") or doc.get("setup")
    out = {"eps_range": st["eps_range"], "rtol": st["rtol"]}
    if st.get("criterion") == "recovery":  # the scripts kept the radius in ``c``
        out["radius"] = st["c"]
    else:
        out["c"] = st["c"]
        if st.get("radius") is not None:
            out["radius"] = st["radius"]
    return out


@pytest.mark.parametrize("rel", THRESHOLD_FILES)
def test_every_published_row_names_a_spec_that_holds_it(rel):
    """A row's rerun is a spec under sweeps/studies of that name whose grid holds the row's n
    (and its replicate, or one replicate of the coherent tilt, whose replicates repeat one
    bracket), whose swept coordinates include the row's, and whose search has the published
    range, tolerance, c and radius. Rows without a spec say why."""
    doc = json.loads((ROOT / rel).read_text())
    rows = doc.get("results", doc.get("rows", []))
    for row in rows:
        rerun = rerun_of(rel, row)
        assert rerun is not None, (rel, row["n"])
        if not rerun.study:
            assert rerun.why.startswith("no spec: "), rel
            continue
        path = ROOT / "sweeps" / "studies" / f"{rerun.study}.toml"
        spec = load_spec(path)
        assert spec.name == rerun.study
        dims, coords = spec.instance_grid()
        grid = dict(zip(dims, coords, strict=True))
        raw = tomllib.loads(path.read_text())
        fixed = {
            "n": raw["tensor"]["n"],
            "noise": raw["noise"]["model"],
            "method": raw["solver"]["method"],
            "p": raw["tensor"]["p"],
        }
        for key, value in [*rerun.where.items(), ("n", row["n"])]:
            assert value in grid.get(key, [fixed[key]] if key in fixed else []), (rel, key)
        noise = rerun.where.get("noise", fixed["noise"])
        if noise != "coherent-tilt":
            assert row.get("replicate", 0) < raw["replicates"], (rel, row["n"])
        search = {k: raw["threshold"].get(k) for k in ("eps_range", "rtol", "c", "radius")}
        for key, value in _settings(doc).items():
            assert search[key] == pytest.approx(value), (rel, key)


def test_the_withdrawn_worst_case_files_read_withdrawn_and_the_rerun_row_does_not():
    rows = [r for r in bracket_rows(Data(ROOT)) if r[0].startswith("worst-case")]
    withdrawn = [r for r in rows if r[-1].startswith(WITHDRAWN)]
    assert {r[0] for r in withdrawn} == {"worst-case-certified", "worst-case-p4"}
    assert all("The worst case against n" in r[-1] for r in withdrawn)
    (kept,) = [r for r in rows if r not in withdrawn]
    assert kept[:3] == ["worst-case", kept[1], "12"]
    assert kept[-1].startswith(("not rerun yet", "same finding", "differs"))
    count = summary(rows)
    assert count[WITHDRAWN] == 2


def test_the_worst_case_row_reads_a_real_worst_case_store(tmp_path, cluster):
    """The published worst case at n = 12 beside a real store of the worst_case kind under a
    name the table reads (the spec at n = 12 alone, one of its grid ε, a small budget): the
    row gives the store's finding and both searches' largest ratios, and names the store."""
    from distributed import Client

    for part in ("rate", "nscaling", "nscaling-global"):
        shutil.copytree(ROOT / "docs/data" / part, tmp_path / "docs/data" / part)
    (tmp_path / STUDIES).mkdir(parents=True)
    for check in (ROOT / STUDIES).glob("*.json"):  # the regression checks the rows cite
        shutil.copy(check, tmp_path / STUDIES / check.name)
    spec = tomllib.loads((ROOT / "sweeps/studies/worst-case.toml").read_text())
    spec["tensor"]["n"] = [12]
    spec["worst_case"].update(eps=[0.3797], budget=4)
    with Client(cluster) as client:
        res = run_sweep(spec, tmp_path / STUDIES / "worst-case-n12.zarr", client=client)
    assert res.complete
    data = Data(tmp_path)
    (row,) = [r for r in bracket_rows(data) if r[0] == "worst-case"]
    assert row[3] == "none up to 1.586"
    assert row[4] == "none up to 0.3797" or row[4].startswith("first at ε = ")
    assert row[5].startswith(("same finding (other seeds; every norm certified;", "differs"))
    assert "published 1.799 (certified) at ε = 0.3797" in row[5]
    stores = {s.path for s in data.used if s.form == "store"}
    assert stores == {f"{STUDIES}/worst-case-n12.zarr"}


def _escape_spec(name: str, n: int, eps: list[float], methods: list[str], **escape) -> dict:
    return {
        "name": name,
        "seed": 20261127,
        "replicates": escape.pop("replicates", 1),
        "tensor": {"n": n, "p": 3},
        "noise": {"model": "attractor", "eps": eps},
        "solver": {"method": methods},
        "escape": escape,
    }


@pytest.fixture(scope="module")
def probability_root(tmp_path_factory, cluster):
    """A copy of the published probabilities beside three small real stores under the names
    the table reads: escape at n = 16 (one published ε), a confirmation at the published
    n = 128 point (1 run per L) and a capture (2 runs per published ε, at n = 16)."""
    from distributed import Client

    root = tmp_path_factory.mktemp("prob")
    shutil.copytree(ROOT / "docs/data/rate", root / "docs/data/rate")
    (root / STUDIES).mkdir(parents=True)
    for name in ("accumulation-regression.json", "escape-regression.json"):
        shutil.copy(ROOT / STUDIES / name, root / STUDIES / name)
    specs = [
        _escape_spec("attractor-escape", 16, [0.1], ["power@20"], starts=50, sroa=False),
        _escape_spec(
            "attractor-confirm", 128, [0.757413195689], ["power@1", "power@4"],
            starts=5, stages="n", n_iter=30, radius=0.3, sroa=True,
        ),
        _escape_spec(
            "attractor-capture", 16, [0.377760893734, 0.383066234849], ["power@20"],
            starts=0, sroa=True, replicates=2,
        ),
    ]  # fmt: skip
    with Client(cluster) as client:
        for spec in specs:
            res = run_sweep(spec, root / STUDIES / f"{spec['name']}.zarr", client=client)
            assert res.complete
    return root


def test_probability_rows_read_the_escape_confirm_and_capture_stores(probability_root):
    data = Data(probability_root)
    rows = probability_rows(data)
    escape = {r[1]: r for r in rows if r[0] == "attractor-escape"}
    matched, _, of = escape["n = 16"][3].partition(" of 224 points; ")
    assert int(matched) >= 1 and " q equal; max |z| = " in of
    assert escape["n = 16"][4] == f"not rerun yet: the store holds {matched} of these points"
    assert escape["n = 32"][4].startswith("not rerun yet")
    confirm = [r for r in rows if r[0] == "attractor-confirm"]
    assert all(" of 1 (q = " in r[3] and "from 5 starts" in r[3] for r in confirm[:2])
    assert all(r[4].startswith("not rerun yet") for r in confirm[2:])  # n = 256: no store
    capture = [r for r in rows if r[0] == "attractor-capture"]
    assert [r[3].endswith("of 2 runs lost a component") for r in capture] == [True, True]
    assert all(r[4].startswith(("same", "differs")) for r in capture)
    stores = {s.path for s in data.used if s.form == "store"}
    assert stores == {
        f"{STUDIES}/attractor-escape.zarr",
        f"{STUDIES}/attractor-confirm.zarr",
        f"{STUDIES}/attractor-capture.zarr",
    }


def test_the_largest_of_many_z_scores_is_judged_as_the_largest():
    # A row of the escape table compares ~224 probabilities; its largest |z| is judged by the
    # chance that the largest of that many reaches it, not by a cut meant for one score.
    from scipy.stats import norm

    from sroa_dist.analysis.published.regression import FAMILY_ALPHA, largest_z_p

    assert math.isclose(largest_z_p(1.96, 1), 2 * norm.sf(1.96), rel_tol=1e-12)
    m, z = 224, 3.81
    assert math.isclose(largest_z_p(z, m), 1 - (1 - 2 * norm.sf(z)) ** m, rel_tol=1e-9)
    assert largest_z_p(3.5, 224) > 0.09  # a fixed cut of 3.5 fires one time in ten
    assert largest_z_p(z, m) > FAMILY_ALPHA > largest_z_p(z, 1)
    assert largest_z_p(5.0, 224) < FAMILY_ALPHA


def test_a_bracket_from_zero_is_compared_by_its_upper_end():
    """A search that failed at its first point has the bracket (0, hi]: no geometric centre,
    so its row compares the first failures."""
    from sroa_dist.analysis.published.regression import _compare

    old = {"lo": 0.0, "hi": 0.05}
    cube, status = _compare(old, {"lo": 0.0, "hi": 0.0505})
    assert cube == "(0.0000, 0.0505]"
    assert status.startswith("differs by +1.00 % in the upper end, a bracket from 0")
    assert _compare(old, dict(old))[1].startswith("same bits")


def test_a_last_bits_difference_reads_the_check_at_the_scripts_seed(tmp_path):
    """A bracket that differs in its last bits names what the kind gave at the script's own
    seed: the published bits (the seeds made the difference), the cube's bits (they made none:
    the search revision did), or neither; with no check it says so."""
    from sroa_dist.analysis.published.regression import THRESHOLD_CHECK, _compare, _same_search

    old = {"n": 8, "replicate": 0, "lo": 0.5406073840839108, "hi": 0.5481997702440861}
    new = {"lo": 0.540607384083911, "hi": 0.5481997702440862}
    rel = "docs/data/nscaling/tilt-p4.json"
    data = Data(tmp_path)
    assert _same_search(data, rel, old, new) == "other seeds"
    assert "not checked for this one" in _compare(old, new, "coherent-tilt")[1]

    def check(kind: list[float]) -> str:
        row = {"file": "tilt-p4", "n": 8, "replicate": 0, "kind_at_script_seed": kind}
        row |= {"same_bits_as_published": kind == [old["lo"], old["hi"]]}
        row |= {"same_bits_as_script_current_search": None, "rel_diff_published": 2.2e-16}
        path = tmp_path / THRESHOLD_CHECK
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"rows": [row]}))
        return _same_search(Data(tmp_path), rel, old, new)

    why = check([new["lo"], new["hi"]])
    assert "gives the cube's bits, so the draw makes no difference" in why
    status = _compare(old, new, "coherent-tilt", why)[1]
    assert status.startswith("differs in the last bits only") and "not checked" not in status
    assert "gives the published bracket bit for bit" in check([old["lo"], old["hi"]])
    assert "a bracket +0.00 % from the published" in check([0.5406, 0.5482])
