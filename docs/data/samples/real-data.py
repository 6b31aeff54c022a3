"""Power against global steps on real data that a package ships (issue 36, item 4).

Every dataset here is inside scikit-learn's wheel (a test dependency of sroa-dist); nothing is
downloaded at run time. Each has a ground truth the fit is scored against:

- GMM on Fisher's iris (150 flowers, d = 4, k = 3 species): the species' mean vectors;
- topics on the handwritten digits (1797 images of 8×8 pixels, k = 10 digits) read as bags of
  pixels (a document = an image, a pixel's ink 0-16 = its count): each digit's mean ink
  distribution over the 64 pixels;
- ICA on the two sample photographs (427×640, grayscale) cut into quadrants: 8 real signals
  of 68 160 pixels each, mixed by a seeded Gaussian matrix (the textbook blind-separation
  set-up: the sources are real, the mixing synthetic, so the truth is known).

Per dataset and method (``power`` at the AGHKT budget, ``sshopm`` with the global check,
``certified``): the errors against the truth, the recovered weights, whether every step was
certified, and the largest angle between the method's components and the certified ones
(0: the global steps changed nothing). Writes docs/data/samples/real-data.json.

Usage: ``nice -n 5 python docs/data/samples/real-data.py``
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.datasets import load_digits, load_iris, load_sample_images

from sroa_dist.moments import fit_gmm, fit_ica, fit_topics

OUT = Path(__file__).with_name("real-data.json")
SEED = 20261128
METHODS = {
    "power (AGHKT)": ("power", {"budget": "aghkt"}),
    "sshopm + global check": ("sshopm", {"global_check": True, "redo": True}),
    "certified": ("certified", {}),
}


def _match(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = linear_sum_assignment(dist)
    return cols[np.argsort(rows)], dist[rows, cols][np.argsort(rows)]


def _angles(V: np.ndarray, U: np.ndarray, even: bool) -> float:
    """Largest angle (degrees) between matched columns of two whitened component sets."""
    C = np.abs(V.T @ U) if even else V.T @ U
    _, cos = _match(-C)
    return float(np.degrees(np.arccos(np.clip(-cos, -1, 1))).max())


def _scored(fit, score) -> tuple:
    redone = fit.sroa.redone
    return fit, {
        **score(fit),
        "all_certified": fit.all_certified,
        "certified_steps": int(np.sum(fit.certified)),
        "redone_steps": 0 if redone is None else int(np.sum(redone)),
        "lambdas": fit.lambdas.tolist(),
    }


def iris() -> tuple[dict, callable]:
    X, y = load_iris(return_X_y=True)
    truth = np.stack([X[y == c].mean(axis=0) for c in range(3)], axis=1)
    w = np.bincount(y) / len(y)

    def score(fit) -> dict:
        dist = np.linalg.norm(fit.components[:, :, None] - truth[:, None, :], axis=0)
        perm, err = _match(dist)
        return {"mean_error": err.tolist(), "weights": fit.weights.tolist(),
                "weight_error": np.abs(fit.weights - w[perm]).tolist()}  # fmt: skip

    info = {"dataset": "iris (sklearn.datasets.load_iris)", "model": "gmm", "N": len(X),
            "d": X.shape[1], "k": 3, "error": "distance to the species' mean"}  # fmt: skip
    return info, lambda method, opts, rng: _scored(fit_gmm(X, 3, method, rng=rng, **opts), score)


def digits() -> tuple[dict, callable]:
    X, y = load_digits(return_X_y=True)
    C = X.astype(np.int64)
    keep = C.sum(axis=1) >= 3
    C, y = C[keep], y[keep]
    truth = np.stack([C[y == c].sum(axis=0) / C[y == c].sum() for c in range(10)], axis=1)

    def score(fit) -> dict:
        tv = 0.5 * np.abs(fit.components[:, :, None] - truth[:, None, :]).sum(axis=0)
        perm, err = _match(tv)
        return {"topic_tv": err.tolist(), "weights": fit.weights.tolist(),
                "weight_sum": float(fit.weights.sum())}  # fmt: skip

    info = {"dataset": "digits as bags of pixels (sklearn.datasets.load_digits)",
            "model": "topics", "N": int(len(C)), "d": 64, "k": 10,
            "error": "total variation to each digit's mean ink distribution"}  # fmt: skip
    return info, lambda method, opts, rng: _scored(
        fit_topics(C, 10, method, rng=rng, **opts), score
    )


def images() -> tuple[dict, callable]:
    S = []
    for im in load_sample_images().images:
        g = im.astype(np.float64).mean(axis=2)
        h, w = g.shape[0] // 2, g.shape[1] // 2
        S += [g[:h, :w], g[:h, w : 2 * w], g[h : 2 * h, :w], g[h : 2 * h, w : 2 * w]]
    S = np.stack([s.ravel() for s in S], axis=1)
    S = (S - S.mean(axis=0)) / S.std(axis=0)
    kurt = (S**4).mean(axis=0) - 3
    k = S.shape[1]
    A = np.random.default_rng(SEED).standard_normal((k, k))
    X = S @ A.T

    def score(fit) -> dict:
        An = A / np.linalg.norm(A, axis=0)
        Fn = fit.components / np.linalg.norm(fit.components, axis=0)
        dist = 1 - np.abs(Fn.T @ An)
        perm, err = _match(dist)
        return {"mixing_1_minus_cos": err.tolist(), "kurtosis": fit.weights.tolist(),
                "kurtosis_error": np.abs(fit.weights - kurt[perm]).tolist()}  # fmt: skip

    info = {"dataset": "sklearn sample photographs (china, flower) in quadrants, seeded mixing",
            "model": "ica", "N": int(len(X)), "d": k, "k": k,
            "source_kurtosis": kurt.tolist(),
            "error": "1 - |cos| between recovered and true mixing columns"}  # fmt: skip
    return info, lambda method, opts, rng: _scored(fit_ica(X, k, method, rng=rng, **opts), score)


def main() -> None:
    t0, load0 = time.time(), os.getloadavg()
    out = []
    for make in (iris, digits, images):
        info, run = make()
        per, fits = {}, {}
        for label, (method, opts) in METHODS.items():
            t = time.time()
            fits[label], per[label] = run(method, opts, SEED)
            per[label]["seconds"] = time.time() - t
        ref = fits["certified"].vectors
        for label, fit in fits.items():
            per[label]["angle_to_certified_deg"] = _angles(fit.vectors, ref, info["model"] == "ica")
            print(info["dataset"], label, per[label], flush=True)
        out.append({**info, "methods": per})
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
    doc = {
        "study": {
            "script": "docs/data/samples/real-data.py",
            "seed": SEED,
            "git_commit": commit.stdout.strip(),
            "wall_seconds": time.time() - t0,
            "load_average": [load0, os.getloadavg()],
        },  # fmt: skip
        "datasets": out,
    }
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
