"""Regression of the threshold kind against the published first crossings of the former
benchmarks/nscaling_study.py, at the script's own seeds.

The kind seeds a search with ``SeedSequence(spec seed, spawn_key=(h(noise), h(n), h(p),
replicate))``; the script seeded ``SeedSequence(20261126, spawn_key=(n, p, crc32(family),
crc32(method), crc32(criterion), round(1000 c), replicate))``. This runs the kind's own search
(``KINDS["threshold"].instance(spec, settings, replicate)``: the spec's settings, revision and
weights) with only the seed swapped for the script's, and sets the bracket beside the
published one (``docs/data/nscaling/<file>``) and the script's rerun with the current search
(``docs/data/nscaling-global/<file>``, same seeds; null where the script never reran that
file). Where the cube differs from the published bracket and this gives the published
search's bits, the seeds are the whole difference; where this gives the cube's bits, the seeds
make no difference and the rest is the search revision's.

Usage: ``python docs/data/studies/threshold-regression.py SPEC FILE N[/REP] [N[/REP] ...]``,
e.g. ``sweeps/studies/nscaling-recovery-p3.toml gauss-p3-rec 8`` (replicate 0) or ``... tiltg-p3
8/1`` (replicate 1). Appends to docs/data/studies/threshold-regression.json, replacing the rows
of the same file, n and replicate.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np

from sroa_dist.sweep import load_spec
from sroa_dist.sweep.kinds import KINDS

ROOT = Path(__file__).resolve().parents[3]
OUT = Path(__file__).with_name("threshold-regression.json")
SCRIPT_SEED = 20261126


def script_key(doc: dict, n: int, rep: int) -> tuple[int, ...]:
    """benchmarks/nscaling_study.py's seed_of (its studies had no theorem companion here)."""
    st = doc["study"]
    return (
        n,
        st["p"],
        zlib.crc32(st["family"].encode()),
        zlib.crc32(st["method"].encode()),
        zlib.crc32(st["criterion"].encode()),
        int(round(st["c"] * 1000)),
        rep,
    )


def main() -> None:
    spec_path, name, *ns = sys.argv[1:]
    spec = load_spec(spec_path)
    published = json.loads((ROOT / f"docs/data/nscaling/{name}.json").read_text())
    rerun = ROOT / f"docs/data/nscaling-global/{name}.json"
    again = json.loads(rerun.read_text()) if rerun.exists() else {"results": []}
    st = published["study"]
    kind = KINDS["threshold"]
    rows = []
    for arg in ns:
        n, _, r = arg.partition("/")
        n, rep = int(n), int(r or 0)
        settings = spec.settings_at({"n": n, "method": st["method"], "noise": st["family"]})
        problem = kind.instance(spec, settings, rep)
        assert (problem.family, problem.method, problem.criterion) == (
            st["family"], st["method"], st["criterion"]
        )  # fmt: skip
        at_script = dataclasses.replace(
            problem, seed=SCRIPT_SEED, spawn_key=script_key(published, n, rep)
        )
        t0, c0 = time.perf_counter(), time.process_time()
        res = at_script.run()
        lo, hi = (float(x) for x in res.bracket)
        old = next(r for r in published["results"] if (r["n"], r["replicate"]) == (n, rep))
        new = next((r for r in again["results"] if (r["n"], r["replicate"]) == (n, rep)), None)
        current = None if new is None else [new["lo"], new["hi"]]
        rows.append(
            {
                "file": name,
                "spec": spec_path,
                "n": n,
                "replicate": rep,
                "kind_at_script_seed": [lo, hi],
                "n_evals": int(res.n_evals),
                "published": [old["lo"], old["hi"]],
                "published_n_evals": old["n_evals"],
                "script_current_search": current,
                "same_bits_as_published": [lo, hi] == [old["lo"], old["hi"]],
                "same_bits_as_script_current_search": (
                    None if current is None else [lo, hi] == current
                ),
                # a bracket from 0 (the first scan point failed) has no centre: its upper end
                "rel_diff_published": float(
                    np.sqrt(lo * hi / (old["lo"] * old["hi"])) - 1
                    if old["lo"] > 0
                    else hi / old["hi"] - 1
                ),
                "cpu_s": round(time.process_time() - c0, 1),
                "wall_s": round(time.perf_counter() - t0, 1),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    doc = json.loads(OUT.read_text()) if OUT.exists() else {"what": __doc__.split("\n\n")[0]}
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    doc.setdefault("rows", [])
    done = {(x["file"], x["n"], x["replicate"]) for x in rows}
    doc["rows"] = [r for r in doc["rows"] if (r["file"], r["n"], r["replicate"]) not in done] + rows
    doc["git_commit"], doc["python"] = commit, platform.python_version()
    OUT.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
