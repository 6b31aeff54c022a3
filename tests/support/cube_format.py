"""The result cube's on-disk format, reduced to what must not drift: per array its zarr
metadata (shape, dtype, chunks, fill value, codecs, dims, attributes) and the root attributes
(values of run-dependent ones such as ``created`` or ``git_commit`` replaced by their key)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sroa_dist.sweep.kinds import make_layout, spec_from_dict
from sroa_dist.sweep.store.prepare import prepare_store

#: Root attributes whose values depend on the run (time, code version, path, token).
VOLATILE_ATTRS = ("created", "git_commit", "layout_token", "spec_source", "history")

#: Small specs covering every kind of cube: sigma / eps / eps_scaled levels, vectors, a
#: method axis, certificates, family perturbations, a model sweep with every model dim, and a
#: threshold sweep (added with search revision 2: its variables include the global check's).
SPECS: dict[str, dict[str, Any]] = {
    "tensor_sigma_vectors": {
        "name": "fmt-sigma",
        "replicates": 3,
        "tensor": {"n": [3, 4], "p": 3},
        "noise": {"model": ["binary", "gaussian"], "sigma": [0.01, 0.02]},
        "solver": {"method": "sshopm", "steps": 1, "norm_method": "sshopm"},
        "output": {"vectors": True},
    },
    "tensor_eps_methods": {
        "name": "fmt-eps",
        "seed": 7,
        "tensor": {"n": 4, "p": [3, 4], "rank": [1, 2], "lambdas": 2.0},
        "noise": {"eps": {"start": 0.01, "stop": 0.03, "step": 0.01}},
        "solver": {"method": ["sshopm", "power"], "options": {"n_starts": 4}},
        "output": {"certificates": True},
    },
    "tensor_eps_scaled": {
        "name": "fmt-eps-scaled",
        "tensor": {
            "n": 3,
            "basis": "random",
            "lambdas": {"dist": "uniform", "low": 0.5, "high": 1},
        },
        "noise": {"eps_scaled": [0.1, 0.2]},
        "solver": {"method": "certified", "steps": 2},
    },
    "model_topics": {
        "name": "fmt-topics",
        "replicates": 2,
        "model": {
            "name": "topics",
            "N": [200, 400],
            "k": [2, 3],
            "d": 6,
            "L": [3, 4],
            "weights": [1, 3],
        },
        "solver": {"method": ["sshopm", "power"]},
    },
    "threshold_tilt": {
        "name": "fmt-threshold",
        "seed": 3,
        "replicates": 2,
        "tensor": {"n": [4, 5], "p": 3},
        "noise": {"model": ["coherent-tilt", "gaussian"]},
        "solver": {"method": "sshopm"},
        "threshold": {
            "criterion": "theorem",
            "c": 0.5,
            "radius": 0.3,
            "eps_range": [0.05, 1.5],
            "rtol": 0.03,
            "certify_ends": True,
        },
    },
}


def manifest(url: str | Path) -> dict[str, Any]:
    """Format of the zarr store at ``url`` (see the module docstring)."""
    root = Path(url)
    out: dict[str, Any] = {}
    for meta in sorted(root.glob("*/zarr.json")):
        if meta.parent.name.startswith("sroa_"):
            continue  # the writer lease is not part of the cube
        doc = json.loads(meta.read_text())
        out[meta.parent.name] = {
            k: doc.get(k)
            for k in (
                "shape",
                "data_type",
                "chunk_grid",
                "fill_value",
                "codecs",
                "dimension_names",
                "attributes",
            )
        }
    attrs = json.loads((root / "zarr.json").read_text())["attributes"]
    for entry in out.values():  # the digest array's copy of the root attrs (issue 24)
        copy = (entry.get("attributes") or {}).get("store_attrs")
        if copy is not None:
            assert copy == attrs, "the copy of the root attributes differs from them"
            entry["attributes"]["store_attrs"] = "<root attrs>"
    if "spec" in attrs:
        attrs["spec"] = _without_revision_numbers(attrs["spec"])
    if "setting_search" in attrs:
        search = json.loads(attrs["setting_search"])
        search["revision"] = "<revision>"
        attrs["setting_search"] = json.dumps(search, sort_keys=True)
    out["<root attrs>"] = {
        k: (f"<{k}>" if k in VOLATILE_ATTRS or k.endswith("_version") else v)
        for k, v in attrs.items()
    }
    return out


def build(tmp_path: Path, which: str) -> dict[str, Any]:
    """Create the template store of spec ``which`` under ``tmp_path``; its manifest."""
    spec = spec_from_dict(SPECS[which], source=f"<{which}>")
    layout = make_layout(spec, block_size=4)
    url = str(tmp_path / f"{which}.zarr")
    prepare_store(url, spec, layout, history="format test")
    return manifest(url)


def _without_revision_numbers(text: str) -> str:
    """The stored spec with each method's revision number replaced by ``<revision>``: the
    format is that the spec pins every method's revision; the numbers are the code's
    (tests/core/test_method_revisions.py checks them), and a new revision is not a format change."""
    spec = json.loads(text)
    revisions = spec.get("solver", {}).get("revisions")
    if revisions:
        spec["solver"]["revisions"] = dict.fromkeys(revisions, "<revision>")
    if spec.get("threshold", {}).get("revision") is not None:  # the search's, pinned likewise
        spec["threshold"]["revision"] = "<revision>"
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))
