"""Where a published number is read from: a study store, or a committed JSON input (the
predictions made before the runs that test them, the samples study's cost and real data).

A study store (or its compact copy) lives at ``docs/data/studies/<study>.zarr`` and is read
through :func:`sroa_dist.sweep.open_results`, so every block it gives is checked against its
digests. A :class:`Data` reader records
each :class:`Source` a block used, so the block can say where its numbers came from, and
fingerprints it (the JSON file's bytes, or the values read from the store) so that a page
whose data changed reads as stale.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["STUDIES", "Data", "Source", "fingerprint"]

#: Where the study stores (or their compact copies) live, relative to the repository root.
STUDIES = "docs/data/studies"


def fingerprint(obj: Any) -> str:
    """A short sha256 of ``obj``'s canonical JSON (sorted keys, floats by ``repr``)."""
    text = json.dumps(obj, sort_keys=True, default=_plain, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _plain(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    # Everything fingerprinted is read from JSON or a cube: anything else is a broken invariant.
    raise RuntimeError(f"fingerprint: a {type(x).__name__} is not JSON data")


@dataclasses.dataclass(frozen=True)
class Source:
    """One file or store a block read: its path (relative to the repository root), its form
    (``"store"`` or ``"JSON"``), a fingerprint of what was read and which part was used."""

    path: str
    form: str
    digest: str
    part: str = ""

    def describe(self) -> str:
        part = f", {self.part}" if self.part else ""
        return f"{self.form} `{self.path}`{part} ({self.digest})"


class Data:
    """Reads the published data below ``root`` once, and records the sources each block used
    (:meth:`for_block` gives a reader sharing the cache with a fresh record)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._cache: dict[str, Any] = {}
        self.used: list[Source] = []

    def for_block(self) -> Data:
        fresh = Data.__new__(Data)
        fresh.root, fresh._cache, fresh.used = self.root, self._cache, []
        return fresh

    def exists(self, rel: str) -> bool:
        return (self.root / rel).exists()

    def note(self, source: Source) -> None:
        if source not in self.used:
            self.used.append(source)

    def json(self, rel: str, part: str = "", note: bool = True) -> Any:
        """The JSON file ``rel``, recorded as a source unless ``note`` is false (``part``: which
        of its rows were used)."""
        key = f"json:{rel}"
        if key not in self._cache:
            raw = (self.root / rel).read_bytes()
            self._cache[key] = (json.loads(raw), hashlib.sha256(raw).hexdigest()[:12])
        doc, digest = self._cache[key]
        if note:
            self.note(Source(rel, "JSON", digest, part))
        return doc

    def cached(self, key: str, make: Callable[[], Any]) -> Any:
        """``make()``, computed once per ``key`` for this reader and every reader sharing its
        cache: a store that several blocks read is opened (and digest-checked) once per
        render, not once per block."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def store_path(self, study: str) -> str:
        return f"{STUDIES}/{study}.zarr"

    def has_store(self, study: str) -> bool:
        return self.exists(self.store_path(study))

    def threshold_store(self, study: str) -> list[dict[str, Any]] | None:
        """The finished first crossings of threshold study ``study``'s store as rows (``n``,
        ``replicate``, ``noise``, ``method``, ``p``: the instance's coordinates, the spec's
        value where it sweeps none; ``lo``, ``hi``, ``eps_star``, ``n_evals``, ``redone``:
        evaluations with a redone step, ``non_monotone``: whether the search saw a pass above
        a failure, ``seed``: the spec's master seed), or None when it has
        no store. Not recorded as a source: :meth:`note_store` records the part a block
        used."""
        key = f"store:{study}"
        if key not in self._cache:
            rel = self.store_path(study)
            self._cache[key] = _threshold_rows(self.root / rel) if self.exists(rel) else None
        return self._cache[key]

    def store(self, study: str) -> Any:
        """Study ``study``'s whole store as a loaded ``xarray.Dataset`` (every block checked
        against its digest by ``open_results``), or None when it has none. Not recorded as a
        source: :meth:`note_store` records what a block used."""
        key = f"dataset:{study}"
        if key not in self._cache:
            rel = self.store_path(study)
            self._cache[key] = _open(self.root / rel) if self.exists(rel) else None
        return self._cache[key]

    def note_store(self, study: str, rows: Any, part: str = "") -> None:
        self.note(Source(self.store_path(study), "store", fingerprint(rows), part))


def _open(path: Path) -> Any:
    from sroa_dist.sweep import open_results  # storage: imported only when a store exists

    return open_results(path).compute()


def _threshold_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a threshold cube: one per finished instance (every block digest-checked by
    ``open_results``)."""
    ds = _open(path)
    spec = json.loads(ds.attrs["spec"])
    fixed = {
        "noise": spec["noise"]["model"],
        "method": spec["solver"]["method"],
        "p": spec["tensor"]["p"],
        "n": spec["tensor"]["n"],
    }
    flat = ds.stack(instance=list(ds["eps_star"].dims))
    rows = []
    for i in range(flat.sizes["instance"]):
        one = flat.isel(instance=i)
        hi = float(one["eps_hi"])
        if math.isnan(hi):  # not done
            continue
        n_evals = int(one["n_evals"])
        redone = np.asarray(one["trace_redone"], dtype=float)[:n_evals]
        coords = {k: one[k].item() if k in one.coords else v for k, v in fixed.items()}
        rows.append(
            {
                **coords,
                "n": int(coords["n"]),
                "replicate": int(one["replicate"]),
                "lo": float(one["eps_lo"]),
                "hi": hi,
                "eps_star": float(one["eps_star"]),
                "n_evals": n_evals,
                "redone": int(np.sum(redone > 0)),
                "non_monotone": bool(one["non_monotone"]),
                "seed": int(spec["seed"]),
            }
        )
    return sorted(rows, key=lambda r: (r["n"], r["replicate"]))
