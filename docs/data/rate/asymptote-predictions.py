"""The accumulation model's predictions for the asymptote runs, written before they are run.

:func:`sroa_dist.analysis.asymptote_predictions` (the coherent tilt's model fed by n = 16 only;
the c = 2 crossings also corrected by g_p's decay measured in
``docs/data/studies/accumulation-large-n.zarr``) to ``--out``, with the git commit of the model
code, whether the work tree was clean, the date, and the largest difference from the earlier
predictions (``docs/data/rate/predictions.json``) at the sizes both hold.

Usage: ``python docs/data/rate/asymptote-predictions.py`` (``--out`` defaults to
``docs/data/rate/asymptote-predictions.json``). The committed file was written while this
script lay at ``benchmarks/asymptote_predictions.py``; its provenance names that path.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import time
from pathlib import Path

from sroa_dist import open_results
from sroa_dist.analysis import (
    asymptote_predictions,
    corrected_crossing,
    fit_g_decay,
    predict_threshold,
)

ROOT = Path(__file__).resolve().parent.parent
MODEL_CODE = ("sroa_dist/analysis/accumulation.py", "sroa_dist/analysis/asymptote.py")


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def _against_earlier(record: dict, earlier: Path) -> dict[str, object]:
    """The largest relative difference of ε* from the earlier file's rows (same p, c)."""
    if not earlier.exists():
        return {"file": str(earlier.relative_to(ROOT)), "compared": 0}
    old = json.loads(earlier.read_text())["rows"]
    worst, count = 0.0, 0
    for entry in record["predictions"]:
        for o in old:
            if o["p"] != entry["p"] or o["c"] != entry["c"] or o.get("radius") is not None:
                continue
            for row in entry["rows"]:
                if row["n"] in o["n"]:
                    e_old = o["eps_star"][o["n"].index(row["n"])]
                    if math.isfinite(e_old) and math.isfinite(row["eps_star"]):
                        worst = max(worst, abs(row["eps_star"] / e_old - 1))
                        count += 1
    return {"file": str(earlier.relative_to(ROOT)), "compared": count, "worst_rel": worst}


#: The published c = 2 first crossings (Theorem 3.1's criterion) the correction is checked on:
#: their studies (stores under docs/data/studies; the committed file read the same brackets,
#: bit for bit, from the JSON they were first published as, since retired).
PUBLISHED_C2 = {3: "theorem-p3-c2", 4: "theorem-p4-c2"}


def _check_correction(g_cube) -> list[dict[str, object]]:
    """The n = 16 model and its g-decay correction at the published c = 2 crossings (closed
    brackets only): how far each lies from what was measured before these predictions."""
    from sroa_dist.analysis.published.rate_data import threshold_rows
    from sroa_dist.analysis.published.sources import Data

    out = []
    data = Data(ROOT)
    for p, study in PUBLISHED_C2.items():
        rows = [r for r in threshold_rows(data, study) if r["hi"] < math.inf]
        sizes = [int(r["n"]) for r in rows]
        pr = predict_threshold(p, sizes, c=2.0, criterion="value")
        decay = fit_g_decay(g_cube, p)
        for r, model in zip(rows, pr.eps_star, strict=True):
            centre = math.sqrt(r["lo"] * r["hi"])
            corrected = corrected_crossing(pr, decay, int(r["n"]))
            out.append(
                {
                    "p": p,
                    "n": int(r["n"]),
                    "measured": [r["lo"], r["hi"]],
                    "model": float(model),
                    "corrected": corrected,
                    "measured_over_model": centre / float(model) - 1,
                    "measured_over_corrected": (
                        centre / corrected - 1 if math.isfinite(corrected) else None
                    ),
                    "corrected_is": decay.where(corrected, int(r["n"])),
                    "source": data.store_path(PUBLISHED_C2[p]),
                }
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs/data/rate/asymptote-predictions.json")
    ap.add_argument(
        "--g-store", type=Path, default=ROOT / "docs/data/studies/accumulation-large-n.zarr"
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    g_cube = open_results(args.g_store)
    record = asymptote_predictions(g_cube)
    record["correction_check"] = _check_correction(g_cube)
    dirty = _git("status", "--porcelain", "--", *MODEL_CODE)
    record["setup"] = {
        "family": "coherent-tilt",
        "weights": "1, ..., 1, 0.95 (the tilted component, deflated last)",
        "method": "sshopm, global_check=True, redo=True",
        "n_model": 16,
        "eps_range": [0.01, 1.5],
        "points": 48,
        "g_store": str(args.g_store.resolve().relative_to(ROOT)),
        "theorem_note": (
            "Theorem 3.1's criterion is |lam_hat - lam| <= 2 eps and ||v_hat - v|| <= "
            "20 eps / lam_j; the model predicts its value part, and vector_ratio (the largest "
            "vector error over its radius at the prediction) says whether the vector part can "
            "bind there (it can only if vector_ratio >= 1)"
        ),
    }
    record["provenance"] = {
        "made": "before the asymptote runs (issue 35, item 3)",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "head_commit": _git("rev-parse", "HEAD"),
        "model_code_commit": _git("log", "-1", "--format=%H", "--", *MODEL_CODE),
        "model_code": list(MODEL_CODE),
        "model_code_clean": not dirty,
        "script": "docs/data/rate/asymptote-predictions.py",
        "seconds": time.perf_counter() - t0,
        "load_average": list(os.getloadavg()),
    }
    record["against_earlier"] = _against_earlier(record, ROOT / "docs/data/rate/predictions.json")
    args.out.write_text(json.dumps(record, indent=1, default=float) + "\n")
    print(f"wrote {args.out} in {record['provenance']['seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
