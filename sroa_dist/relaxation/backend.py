"""Where the array work of a device driver runs: an array namespace and the few calls that
differ between NumPy on the host and CuPy on a CUDA device.

Code written against an :class:`ArrayBackend` uses ``backend.xp`` (``numpy`` or ``cupy``)
for dense arrays and the backend's methods for everything else: sparse matrices (SciPy's or
``cupyx.scipy.sparse``, built only from ``(data, indices, indptr)``), symmetric
eigendecompositions (stacks included), and the copy back to the host. So the same code runs
on the CPU, where the tests run it, and on a GPU. CuPy is optional (the ``gpu`` extra) and is
imported only when ``device="cuda"`` is asked for.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import InputError

__all__ = ["DEVICES", "ArrayBackend", "DeviceUnavailableError", "get_backend"]

#: The devices a device driver may run on.
DEVICES = ("cpu", "cuda")


class DeviceUnavailableError(InputError):
    """The device asked for cannot be used here (no CuPy, or no CUDA device); ``hint`` says
    what to do."""


@dataclass(frozen=True, eq=False)
class ArrayBackend:
    """An array namespace (``xp``) and its sparse module, with the calls that differ by device.

    Attributes
    ----------
    device : str
        ``"cpu"`` or ``"cuda"``.
    xp : module
        ``numpy`` or ``cupy``.
    sparse : module
        ``scipy.sparse`` or ``cupyx.scipy.sparse``.
    """

    device: str
    xp: Any
    sparse: Any

    @property
    def on_host(self) -> bool:
        """Whether arrays live in host memory (NumPy)."""
        return self.xp is np

    def asarray(self, a: Any) -> Any:
        """``a`` as a float64 array of this backend (a copy to the device when it is one)."""
        return self.xp.asarray(a, dtype=np.float64)

    def asindex(self, a: Any) -> Any:
        """``a`` as an integer index array of this backend."""
        return self.xp.asarray(np.asarray(a, dtype=np.int64))

    def to_host(self, a: Any) -> np.ndarray:
        """``a`` as a NumPy array (a copy from the device when it is one)."""
        return np.asarray(a) if self.on_host else self.xp.asnumpy(a)

    def csr(self, A: sp.spmatrix) -> Any:
        """The host sparse matrix ``A`` as a CSR matrix of this backend."""
        A = sp.csr_matrix(A)
        if self.on_host:
            return A
        A.sort_indices()
        # cupyx's sparse matrices index with int32 (every matrix here has far fewer entries).
        return self.sparse.csr_matrix(
            (
                self.xp.asarray(A.data, dtype=np.float64),
                self.xp.asarray(A.indices.astype(np.int32)),
                self.xp.asarray(A.indptr.astype(np.int32)),
            ),
            shape=A.shape,
        )

    def csr_from(self, data: Any, indices: Any, indptr: Any, shape: tuple[int, int]) -> Any:
        """A CSR matrix of this backend from its arrays (already on the device)."""
        return self.sparse.csr_matrix((data, indices, indptr), shape=shape)

    def eigh(self, A: Any) -> tuple[Any, Any]:
        """Eigenvalues (ascending) and eigenvectors of a symmetric matrix or a stack of them.

        NumPy takes a stack directly (LAPACK per matrix). CuPy hands a stack to cuSOLVER's
        batched Jacobi solver, which is meant for small matrices (side <= 32), so a stack is
        decomposed one matrix after another with the divide-and-conquer solver here.
        """
        if self.on_host or A.ndim == 2:
            return self.xp.linalg.eigh(A)
        w = self.xp.empty(A.shape[:-1])
        V = self.xp.empty(A.shape)
        for b in range(A.shape[0]):
            w[b], V[b] = self.xp.linalg.eigh(A[b])
        return w, V

    def eigvalsh(self, A: Any) -> Any:
        """Eigenvalues (ascending) of a symmetric matrix or of a stack (see :meth:`eigh`)."""
        if self.on_host or A.ndim == 2:
            return self.xp.linalg.eigvalsh(A)
        w = self.xp.empty(A.shape[:-1])
        for b in range(A.shape[0]):
            w[b] = self.xp.linalg.eigvalsh(A[b])
        return w


#: The host backend (NumPy, SciPy).
NUMPY = ArrayBackend("cpu", np, sp)

_CUDA: ArrayBackend | None = None
_CUDA_LOCK = threading.Lock()


def _cuda() -> ArrayBackend:
    global _CUDA
    with _CUDA_LOCK:
        if _CUDA is not None:
            return _CUDA
        try:
            import cupy
            import cupyx.scipy.sparse as cusparse
        except ImportError as exc:
            raise DeviceUnavailableError(
                f"relaxation device 'cuda' needs CuPy, which cannot be imported here ({exc})",
                "pip install 'sroa-dist[gpu]' (CuPy for CUDA 13; cupy-cuda12x for a CUDA 12 "
                "driver), or use device 'cpu'",
            ) from None
        try:
            count = int(cupy.cuda.runtime.getDeviceCount())
        except Exception as exc:  # CUDARuntimeError: no driver, no device
            count, why = 0, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        else:
            why = "no CUDA device is visible"
        if count < 1:
            raise DeviceUnavailableError(
                f"relaxation device 'cuda': CuPy finds no usable GPU ({why})",
                "run on a machine with an NVIDIA GPU (check nvidia-smi and "
                "CUDA_VISIBLE_DEVICES), or use device 'cpu'",
            )
        _CUDA = ArrayBackend("cuda", cupy, cusparse)
        return _CUDA


def get_backend(device: str) -> ArrayBackend:
    """The backend of ``device`` (``"cpu"``: NumPy; ``"cuda"``: CuPy on the current CUDA
    device). A device that cannot be used here raises :class:`DeviceUnavailableError`, a
    ``ValueError`` of one line that ends with a hint."""
    if device == "cpu":
        return NUMPY
    if device == "cuda":
        return _cuda()
    raise InputError(
        f"relaxation device: expected one of {list(DEVICES)}, received {device!r}",
        "'cpu' runs everywhere, 'cuda' needs CuPy and an NVIDIA GPU",
    )
