"""The asymptote block of docs/results/thresholds.md (issue 35): the predictions committed
before the runs, "not yet measured" where no study store exists, and the measured bracket,
its residual, normalised threshold and doubling slope beside them where one does."""

from __future__ import annotations

import math

from sroa_dist.analysis.published.rate_tables import asymptote_table
from sroa_dist.analysis.published.sources import Data
from tests.support.helpers import ROOT


class _Stores(Data):
    """The repository's JSON, with threshold stores given as rows (study -> rows)."""

    def __init__(self, stores: dict[str, list[dict]]) -> None:
        super().__init__(ROOT)
        self.stores = stores

    def threshold_store(self, study: str):
        return self.stores.get(study)


def _row(n: int, lo: float, hi: float) -> dict:
    return {"n": n, "replicate": 0, "lo": lo, "hi": hi, "eps_star": hi, "n_evals": 9}


def _line(table: str, p: int, crit: str, n: int) -> list[str]:
    head = f"| {p} | {crit} | {n} |"
    return next(line for line in table.splitlines() if line.startswith(head)).split(" | ")


def test_without_stores_every_row_is_not_yet_measured():
    table = asymptote_table(_Stores({}))
    assert table.count("not yet measured") == table.count("\n| ")  # every data row
    assert "before any of these runs" in table and "p = 6 at n = 1180" in table


def test_a_store_puts_its_bracket_residual_and_doubling_slope_beside_the_prediction():
    # brackets a factor 1.02 wide around 0.0540 (n = 256) and 0.0380 (n = 512)
    stores = {
        "asymptote-p3-c0.5-n256": [_row(256, 0.0535, 0.0545)],
        "asymptote-p3-c0.5": [_row(512, 0.0376, 0.0384)],
    }
    table = asymptote_table(_Stores(stores))
    cells = _line(table, 3, "value c=0.5", 512)
    assert cells[8] == "(0.0376, 0.0384]"
    mid = math.sqrt(0.0376 * 0.0384)
    assert cells[9] == f"{100 * (mid / float(cells[3]) - 1):+.1f} %"
    assert cells[10] == f"{mid * 511**0.5:.3f}"
    slope = math.log(mid / math.sqrt(0.0535 * 0.0545)) / math.log(511 / 255)
    assert cells[11].startswith(f"{slope:+.3f} [")
    assert "not yet measured" in " ".join(_line(table, 3, "value c=0.5", 1024))
    assert "not yet measured" in " ".join(_line(table, 3, "theorem c=2", 512))


def _asymptote_points(fig, panel: int):
    """(x, y) of the asymptote runs' markers in ``panel`` of rate_normalised.png (None if
    the panel has none)."""
    ax = fig.axes[panel]
    for container in ax.containers:
        if container.get_label().startswith("measured, asymptote runs"):
            return container.lines[0].get_data()
    return None


def test_the_normalised_figure_puts_the_asymptote_runs_beside_the_committed_predictions():
    from sroa_dist.analysis.published.rate_data import prefactor
    from sroa_dist.analysis.published.rate_figures import figure_normalised

    empty = figure_normalised(_Stores({}))
    assert all(_asymptote_points(empty, k) is None for k in range(4))
    labels = {t.get_text() for t in empty.legends[0].get_texts()}
    assert "prediction committed before the asymptote runs" in labels

    stores = {"asymptote-p4-c0.5": [_row(512, 0.150, 0.153)]}
    data = _Stores(stores)
    fig = figure_normalised(data)
    x, y = _asymptote_points(fig, 1)  # the p = 4 panel
    assert list(x) == [511]
    expected = math.sqrt(0.150 * 0.153) * 511 ** (1 / 3) / prefactor(data, 4, 0.5)
    assert math.isclose(y[0], expected, rel_tol=1e-12)
    assert _asymptote_points(fig, 0) is None


def test_the_attractor_pair_past_256_reads_each_solvers_store_and_names_what_is_missing(tmp_path):
    from sroa_dist.analysis.published.rate_tables import attractor_large_n_table

    empty = attractor_large_n_table(Data(tmp_path))
    assert empty.count("not measured") == 4  # two sizes, two solvers
    data = Data(ROOT)
    table = attractor_large_n_table(data)
    rows = [x.split(" | ") for x in table.splitlines() if x.startswith("| 512 | global (sshopm")]
    # each basis' store is a row: the same bracket on the random basis and on the identity
    assert [r[2:6] for r in rows] == [
        ["random", "[0.12, 0.6]", "19", "(0.30294, 0.30634]"],
        ["identity", "[0.12, 0.6]", "19", "(0.30294, 0.30634]"],
    ]
    used = {s.path for s in data.used}
    assert "docs/data/studies/asymptote-attractor-global-n512.zarr" in used
    assert "docs/data/studies/asymptote-attractor-global-n512-identity.zarr" in used


def _errorbar_points(ax, label: str):
    """(x, y) of the error-bar series of ``ax`` labelled ``label`` (None if there is none)."""
    for container in ax.containers:
        if container.get_label() == label:
            return container.lines[0].get_data()
    return None


def test_the_power_figure_draws_the_pair_past_256_once_per_size_and_names_what_it_draws():
    from sroa_dist.analysis.published.rate_figures import figure_power_vs_global

    data = Data(ROOT)
    ax = figure_power_vs_global(data).axes[2]
    gx, gy = _errorbar_points(ax, "whole SROA, global steps: first crossing")
    # n = 16-256 from the attractor threshold study, then 512 and 1024 from the large-n stores;
    # the two bases' stores at n = 512 give one point
    assert list(gx[-2:]) == [512, 1024]
    assert len(set(gx)) == len(gx)
    assert math.isclose(gy[-2], math.sqrt(0.30294082237329056 * 0.30633971267322463))
    px, py = _errorbar_points(ax, "whole SROA, power AGHKT: first crossing")
    assert math.isclose(px[0], 512 * 1.06) and math.isclose(py[0], gy[-2])
    used = {s.path for s in data.used}
    assert "docs/data/studies/asymptote-attractor-global-n512.zarr" in used
    assert "docs/data/studies/asymptote-attractor-global-n512-identity.zarr" not in used


def test_a_search_that_passes_its_whole_scan_is_a_lower_bound_not_a_crossing():
    """No crossing in the scan range (bracket (end, inf)): the row says so, and compares the
    scan's end with the prediction as a bound; no doubling slope is drawn through it."""
    stores = {
        "asymptote-p5-c2-n512": [_row(512, 1.2, math.inf)],
        "asymptote-p5-c2-n1024-identity": [_row(1024, 1.2, math.inf)],
    }
    table = asymptote_table(_Stores(stores))
    cells = _line(table, 5, "theorem c=2", 1024)
    assert cells[8] == "none: passes up to 1.20 (the scan's end)"
    assert cells[9] == f"> {100 * (1.2 / float(cells[3]) - 1):+.0f} %"
    assert cells[10] == f"> {1.2 * 1023**0.25:.3f}"
    assert cells[11].startswith("—")
