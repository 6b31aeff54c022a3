"""``ResultStore``: one object that owns a sweep's result store.

A store is a zarr group (the cube's arrays, the ``done`` mask and the other bookkeeping),
its writer lease (:mod:`.lease`, inside the group) and its certificate files (the folder
``certificates`` inside the group, :mod:`.certificate_files`), so a copy of the store folder is
the whole store. :class:`ResultStore` is the one handle on all of them: it
checks the target, prepares (creates, resumes, extends) the store, takes the lease, writes a
block's certificates, data and ``done`` flag in that order, reads the done mask and status,
opens the cube, and rebuilds a stored instance (:meth:`ResultStore.instance`). Block regions
come from the store's :class:`~..layout.Layout` only.

The functions of :mod:`.prepare` and :mod:`.verify` stay the implementation (the
execution layer and the CLI call them); this class composes them so that a caller holding a
store needs nothing else.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from ..kinds import kind_of
from ..layout import BlockResult, BlockTask, Layout
from ..spec import SweepSpec
from . import certificate_files, integrity
from . import prepare as storage
from . import read as verified_read
from . import verify as certificates
from .lease import DEFAULT_LEASE_TIMEOUT, StoreLease
from .target import check_store_target, require_store

__all__ = ["ResultStore", "StoredInstance", "instance_of"]


@dataclass(frozen=True)
class StoredInstance:
    """One instance of a store, rebuilt: where it lies and what its kind rebuilt.

    ``instance`` is the kind's object (a tensor sweep's :class:`sroa_dist.Instance`, with the
    ``T_hat`` its SROA ran on; a model sweep's latent variable model); ``block`` and ``index``
    locate it in the store (block index, and its position inside the block's region).
    """

    coords: dict[str, Any]
    settings: Any
    replicate: int
    block: int
    index: tuple[int, ...]
    instance: Any


class ResultStore:
    """A sweep's result store at ``url`` (local path or fsspec URL).

    Parameters
    ----------
    url
        The store: a path (made absolute, so workers in other folders write the same store)
        or an fsspec URL.
    storage_options
        fsspec options for remote stores.
    """

    def __init__(self, url: str | Path, storage_options: Mapping[str, Any] | None = None):
        url = str(url)
        if "://" not in url:
            url = str(Path(url).absolute())
        self.url = url
        self.storage_options = dict(storage_options) if storage_options else None

    def __repr__(self) -> str:
        return f"ResultStore({self.url!r})"

    # -- the path ------------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """What the path holds (:func:`~.target.store_kind`): ``absent``, ``sroa``, ..."""
        return storage.store_kind(self.url, self.storage_options)

    def check_target(self, *, overwrite: bool = False) -> str:
        """Refuse a path a run could damage (:func:`~.target.check_store_target`)."""
        return check_store_target(
            self.url, overwrite=overwrite, storage_options=self.storage_options
        )

    def require(self) -> None:
        """Raise unless the path is a sroa-dist store (:func:`~.target.require_store`)."""
        require_store(self.url, self.storage_options)

    # -- the writer lease and preparation -----------------------------------------------------
    def lease(self, *, timeout: float = DEFAULT_LEASE_TIMEOUT, command: str = "") -> StoreLease:
        """The store's writer lease (not yet acquired): one writer per store."""
        return StoreLease(self.url, self.storage_options, timeout=timeout, command=command)

    def prepare(
        self,
        spec: SweepSpec,
        layout: Layout,
        *,
        overwrite: bool = False,
        history: str = "",
        settle: float = 0.0,
    ) -> storage.PreparedStore:
        """Create, resume or extend the store for ``spec`` (:func:`~.prepare.prepare_store`);
        the caller holds the lease."""
        self.__dict__.pop("spec_and_layout", None)
        return storage.prepare_store(
            self.url,
            spec,
            layout,
            overwrite=overwrite,
            history=history,
            storage_options=self.storage_options,
            settle=settle,
        )

    # -- what the store holds -------------------------------------------------------------------
    @functools.cached_property
    def spec_and_layout(self) -> tuple[SweepSpec, Layout]:
        """The spec and layout the store was written with (read once)."""
        self.require()
        return storage.store_layout(self.url, self.storage_options)

    @property
    def spec(self) -> SweepSpec:
        """The stored spec."""
        return self.spec_and_layout[0]

    @property
    def layout(self) -> Layout:
        """The stored layout: the one source of block regions."""
        return self.spec_and_layout[1]

    def region(self, block: int) -> tuple[slice, ...]:
        """Index slices of block ``block`` along the layout's dims."""
        return self.layout.block_region(int(block))

    def done(self) -> np.ndarray:
        """The ``done`` mask: one bool per block."""
        return storage.read_done(self.url, self.storage_options)

    def pending(self) -> list[int]:
        """Blocks not done yet, in index order."""
        return [int(b) for b in np.flatnonzero(~self.done())]

    def status(self) -> storage.StoreStatus:
        """Blocks and instances done, failed blocks with their messages."""
        return storage.store_status(self.url, self.storage_options)

    def open(self, *, damaged: str = "raise") -> xr.Dataset:
        """The cube, every block checked (:func:`~.read.open_results`)."""
        return verified_read.open_results(self.url, self.storage_options, damaged=damaged)

    # -- writing ---------------------------------------------------------------------------------
    def write(self, task: BlockTask, result: BlockResult) -> None:
        """Write one computed block: its certificate file (when it has one), then its arrays
        into the layout's region of the block, then its ``done`` flag -- so a block that is
        done has its certificates, and a kill at any point leaves a block that is recomputed
        with the same bits. A task planned for another layout is refused
        (:class:`~.block_write.StaleLayoutError`), and nothing is written."""
        digest = None
        if result.certificates is not None:
            digest = certificate_files.write_certificates(
                self.url, task, result.certificates, self.storage_options
            )
        region = tuple(slice(a, b) for a, b in task.region)
        storage.write_block(
            self.url,
            task.index,
            result,
            region=region,
            storage_options=self.storage_options,
            layout_token=task.layout_token or None,
            certificate_digest=digest,
        )

    def mark_failed(self, failures: Mapping[int, str]) -> None:
        """Record failed blocks (the client only)."""
        storage.mark_failed(self.url, failures, self.storage_options)

    def clear_failed(self) -> None:
        """Forget recorded failures before a new attempt."""
        storage.clear_failed(self.url, self.storage_options)

    # -- certificates ---------------------------------------------------------------------------
    def verify_certificates(self, progress=None) -> certificates.VerifyReport:
        """Re-check every stored certificate (:func:`~.verify.verify_store`)."""
        return certificates.verify_store(self.url, self.storage_options, progress)

    # -- integrity -------------------------------------------------------------------------------
    def check(self, progress=None) -> integrity.IntegrityReport:
        """Read every chunk and certificate file of every finished block and compare them with
        the digests recorded when they were written (:func:`~.integrity.scan_store`;
        ``sroa-dist check``)."""
        return integrity.scan_store(
            self.url,
            self.layout,
            self.storage_options,
            progress,
            certificates=self.spec.output.certificates,
        )

    # -- instances -------------------------------------------------------------------------------
    def locate(self, coords: Mapping[str, Any]) -> tuple[int, tuple[int, ...]]:
        """Block index and position within the block of the instance at ``coords`` (a value
        for every dim of the layout, ``replicate`` included)."""
        layout = self.layout
        missing = [d for d in layout.dims if d not in coords]
        if missing:
            raise KeyError(
                f"coords: expected a value for every dim {layout.dims}; missing {missing}"
            )
        pos = []
        for d, values in zip(layout.dims, layout.coords, strict=True):
            try:
                pos.append(values.index(coords[d]))
            except ValueError:
                raise KeyError(
                    f"coords[{d!r}]: expected one of the store's values {list(values)[:8]}; "
                    f"received {coords[d]!r}"
                ) from None
        return layout.block_of(pos)

    def instance(self, coords: Mapping[str, Any]) -> StoredInstance:
        """Rebuild the stored instance at ``coords`` bit for bit, with the stored spec and the
        same seeds and construction as the block that computed it (the kind's
        :meth:`~..kinds.SweepKind.instance`)."""
        spec, layout = self.spec_and_layout
        block, index = self.locate(coords)
        swept = {d: coords[d] for d in layout.dims[:-1]}
        settings = spec.settings_at(swept)
        replicate = int(coords[layout.dims[-1]])
        built = kind_of(spec).instance(spec, settings, replicate)
        return StoredInstance(dict(coords), settings, replicate, block, index, built)


def instance_of(
    store: str | Path | ResultStore,
    coords: Mapping[str, Any],
    storage_options: Mapping[str, Any] | None = None,
) -> StoredInstance:
    """Rebuild the instance a store holds at ``coords`` (every dim of the cube but ``step``,
    ``replicate`` included), bit for bit: see :meth:`ResultStore.instance`.

    For a tensor sweep, ``.instance.T_hat`` is the tensor SROA ran on, ``.instance.E`` the
    perturbation as added (rescaled to its target norm through
    :func:`sroa_dist.norms.scale_factors` when the sweep sets ``noise.eps``), and
    ``sroa_dist.sroa(T_hat, ...)`` with the instance's solver seed gives the stored values.
    """
    rs = store if isinstance(store, ResultStore) else ResultStore(store, storage_options)
    return rs.instance(coords)
