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
