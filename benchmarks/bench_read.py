"""What checking every block costs a read: ``open_results`` and a full report of the Figure 2
cube, against the read before checks (``xr.open_zarr`` of the same store, as ``open_results``
did until issue 24).

    python benchmarks/bench_read.py                  # builds both stores (~1 min), 3 rounds
    python benchmarks/bench_read.py --rounds 5 --stores /tmp/bench-read   # keep / reuse them

Two stores of Figure 2's 1500 instances (n = 10, p = 3, 10 steps, 3 noise models):

* ``sshopm``: ``sweeps/figure2-sshopm.toml`` with its own blocks (6 blocks of 250);
* ``certified-blocks``: the blocks of the certified ``sweeps/figure2.toml`` (252 blocks of 6
  instances). What a read costs depends on the cube's shape and blocks, not on the method, so
  its steps are solved with ``sshopm`` to build it in seconds.

Per store, rounds alternate unchecked and checked reads (so that a change in the machine's
load hits both): ``open`` (the call alone), ``open+load`` (every variable into memory),
``open+report`` (``write_report``, Markdown and HTML with the figures, after a fresh open),
and ``check`` (``scan_store``, the deep check). The fastest round of each (the least disturbed
by other jobs; the ratios use it) and the medians; writes ``benchmarks/out/bench_read.json``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import _common

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import xarray as xr  # noqa: E402

from sroa_dist.analysis import write_report  # noqa: E402
from sroa_dist.sweep import load_spec, run_sweep  # noqa: E402
from sroa_dist.sweep.cube import BOOKKEEPING  # noqa: E402
from sroa_dist.sweep.kinds import variable_order  # noqa: E402
from sroa_dist.sweep.store.integrity import scan_store  # noqa: E402
from sroa_dist.sweep.store.prepare import store_layout  # noqa: E402
from sroa_dist.sweep.store.read import open_results  # noqa: E402

STORES = {
    "sshopm": ("figure2-sshopm.toml", {}, None),
    "certified-blocks": (
        "figure2.toml",
        {"solver.method": "sshopm", "solver.norm_method": "sshopm"},
        6,
    ),
}


def open_unchecked(url: str) -> xr.Dataset:
    """The read before issue 24: lazy, nothing checked."""
    ds = xr.open_zarr(url, consolidated=False)
    order = dict.fromkeys([*variable_order(), *BOOKKEEPING])
    return ds[[v for v in order if v in ds.data_vars]]


def build(name: str, where: Path) -> str:
    spec_file, overrides, block_size = STORES[name]
    store = where / f"{name}.zarr"
    if not (store / "zarr.json").exists():
        spec = load_spec(ROOT / "sweeps" / spec_file, overrides)
        res = run_sweep(spec, store, workers=2, block_size=block_size, dashboard_address=":0")
        assert res.complete, res.failed
    return str(store)


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(url: str, rounds: int, out: Path) -> dict:
    samples: dict[str, list[float]] = {}
    opens = {"unchecked": open_unchecked, "checked": open_results}

    def report(op) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write_report(op(url), out / "report", ("md", "html"))

    layout = store_layout(url)[1]
    for _ in range(rounds):
        for label, op in opens.items():
            samples.setdefault(f"open/{label}", []).append(_time(lambda op=op: op(url)))
            samples.setdefault(f"open+load/{label}", []).append(_time(lambda op=op: op(url).load()))
            samples.setdefault(f"open+report/{label}", []).append(_time(lambda op=op: report(op)))
        samples.setdefault("check", []).append(_time(lambda: scan_store(url, layout)))
    out = {}
    for stat, fn in (("fastest_s", min), ("median_s", statistics.median)):
        got = {k: round(fn(v), 3) for k, v in samples.items()}
        for what in ("open", "open+load", "open+report"):
            got[f"{what}/ratio"] = round(got[f"{what}/checked"] / got[f"{what}/unchecked"], 3)
        out[stat] = got
    return {**out, "samples_s": {k: [round(x, 3) for x in v] for k, v in samples.items()}}


def main() -> None:
    ap = _common.parser(__doc__, "bench_read")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--stores", type=Path, help="folder to keep (and reuse) the stores in")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-read-") as tmp:
        where = args.stores or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        results = {}
        for name in STORES:
            url = build(name, where)
            layout = store_layout(url)[1]
            results[name] = {
                "blocks": layout.n_blocks,
                "instances": layout.n_instances,
                **measure(url, args.rounds, Path(tmp)),
            }
            print(name, "fastest", results[name]["fastest_s"], flush=True)
            print(name, "median", results[name]["median_s"], flush=True)
    path = _common.write(args.out, {"rounds": args.rounds, "stores": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
