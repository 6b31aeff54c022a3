"""Where a block may run: blocks whose relaxation runs on a GPU (``relaxation.device =
"cuda"`` in their method's options) hold one :data:`~.cluster.GPU_RESOURCE` while they run, so
Dask schedules them on workers that advertise it (``dask worker ADDRESS --resources GPU=1``)
and one cluster can mix CPU workers (local methods) and GPU workers (certified steps).

Pure bookkeeping on the spec and the client's worker list: no Dask import.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any, TextIO

from sroa_dist.errors import SroaWarning
from sroa_dist.relaxation import DeviceUnavailableError, get_backend, relaxation_device

from ..layout import BlockTask
from ..spec import SweepSpec
from .cluster import GPU_RESOURCE, ClusterConnectError

__all__ = ["block_resources", "check_gpu_here", "spec_needs_gpu", "warn_without_gpu_workers"]


def _needs_gpu(spec: SweepSpec, settings: Any) -> bool:
    """Whether instances with ``settings`` solve a relaxation on device ``"cuda"``: the
    options of their method, or of the method bounding ``||E||``, say so."""
    for name, norm in ((getattr(settings, "method", None), False),
                       (getattr(settings, "norm_method", None), True)):  # fmt: skip
        if name is not None and relaxation_device(spec.options_for(name, norm=norm)) == "cuda":
            return True
    return False


def block_resources(spec: SweepSpec, task: BlockTask) -> dict[str, float] | None:
    """The Dask resources a block's task holds while it runs: one :data:`GPU_RESOURCE` when
    one of its instances solves its relaxation on a GPU (``relaxation.device = "cuda"``), so
    the block runs on a worker that advertises one; ``None`` otherwise (any worker)."""
    seen: set[int] = set()
    for _, settings, _ in task.instances(spec):
        if id(settings) in seen:  # one settings object per grid point of the block
            continue
        seen.add(id(settings))
        if _needs_gpu(spec, settings):
            return {GPU_RESOURCE: 1}
    return None


def spec_needs_gpu(spec: SweepSpec) -> bool:
    """Whether some grid point of ``spec`` solves its relaxation on a GPU."""
    dims, coords = spec.instance_grid()
    grid = [dict(zip(dims[:-1], pt, strict=True)) for pt in itertools.product(*coords[:-1])]
    return any(_needs_gpu(spec, spec.settings_at(point)) for point in grid)


def check_gpu_here() -> None:
    """An embedded cluster runs GPU blocks on this machine: refuse early if it cannot."""
    try:
        get_backend("cuda")
    except DeviceUnavailableError as exc:
        raise ClusterConnectError(
            "the spec solves relaxations on device 'cuda' and the embedded cluster runs on "
            f"this machine, which cannot: {exc}",
            f"{exc.hint}; or pass --scheduler ADDRESS of a cluster with GPU workers "
            f"(dask worker ADDRESS --resources {GPU_RESOURCE}=1)",
        ) from None


def warn_without_gpu_workers(client: Any, stream: TextIO | None) -> None:
    """Blocks that need a GPU wait for a worker with the resource: say so when none is
    connected yet (a SLURM GPU job may still be queued), instead of waiting in silence."""
    info = client.scheduler_info(n_workers=-1).get("workers", {})
    if any((w.get("resources") or {}).get(GPU_RESOURCE, 0) >= 1 for w in info.values()):
        return
    message = (
        f"sroa-dist: blocks of this sweep need a worker with the {GPU_RESOURCE} resource "
        "(relaxation device 'cuda') and none is connected yet; they wait until one joins "
        f"(start one with: dask worker ADDRESS --resources {GPU_RESOURCE}=1)"
    )
    warnings.warn(message, SroaWarning, stacklevel=3)
    if stream is not None:
        stream.write(message + "\n")
        stream.flush()
