r"""Where the array code runs: the namespace pair (xp, xsp), picked once per device.

    device          xp      xsp                   what it is for
    "gpu"           cupy    cupyx.scipy.sparse    the GPU code (``pip install 'mlnb[gpu]'``)
    "array-numpy"   numpy   scipy.sparse          the same code on the CPU: tests and CI compare it
                                                  with the numba kernels; never faster than it

Every function of the array code is written once against ``xp`` (numpy's array API, which CuPy
mirrors) and ``xsp`` (scipy.sparse's CSR products, which cupyx mirrors); nothing else differs.
CuPy is imported here, and only when a study names ``engine.device = "gpu"``: importing mlnb
or running a CPU study never imports it (a test checks).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

import numpy as np
import scipy.sparse as sp

from mlnb.errors import MlnbError

#: ``[engine] device``: the numba kernels on the CPU's cores, the array code on a GPU, or the array
#: code on numpy (the GPU's code on the CPU, for tests)
DEVICES = ("cpu", "gpu", "array-numpy")


def gpu_problem() -> str | None:
    """Why the GPU code cannot run here, in a few words; None when CuPy sees a GPU."""
    try:
        cupy = importlib.import_module("cupy")
    except ImportError:
        return "CuPy is not installed (pip install 'mlnb[gpu]' for CUDA 12, or cupy-cuda13x for CUDA 13)"
    except Exception as error:  # a CuPy built for another CUDA fails in many ways at import  # noqa: BLE001
        return f"CuPy does not load ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # no driver, no device  # noqa: BLE001
        return f"CUDA finds no GPU ({str(error).splitlines()[0] if str(error) else type(error).__name__})"
    return None if count > 0 else "CUDA finds no GPU"


@dataclass(frozen=True)
class ArrayNamespace:
    """The array library (xp) and its sparse module (xsp) the array code runs on."""

    name: str  # "gpu" or "array-numpy"
    xp: ModuleType
    xsp: ModuleType

    @property
    def on_gpu(self) -> bool:
        return self.xp is not np

    def asarray(self, a, dtype=None):
        """A host (or device) array on the device."""
        return self.xp.asarray(a, dtype=dtype)

    def csr(self, X: sp.csr_matrix, dtype=None):
        """A host CSR matrix on the device (int32 indices, as cuSPARSE wants them), marked canonical
        when X is (``csr_from``)."""
        dtype = X.dtype if dtype is None else dtype
        if not self.on_gpu:
            return sp.csr_matrix((X.data.astype(dtype, copy=False), X.indices, X.indptr), shape=X.shape)
        xp = self.xp
        return self.csr_from(xp.asarray(X.data, dtype=dtype), xp.asarray(X.indices, dtype=np.int32),
                             xp.asarray(X.indptr, dtype=np.int32), X.shape, bool(X.has_canonical_format))

    def csr_from(self, data, indices, indptr, shape, canonical: bool):
        """CSR (data, indices, indptr) on this namespace, sharing the three arrays. ``canonical``: the
        caller knows every row's indices sorted and unique (X's structure, or rows of it). cupyx
        otherwise establishes that itself before every product of a new matrix (a check kernel, or in
        older versions a sort of every non-zero through COO); scipy's products need no such thing, and
        nothing is marked there."""
        M = self.xsp.csr_matrix((data, indices, indptr), shape=shape)
        return _marked(M, canonical) if self.on_gpu else M

    def transposed(self, X):
        """Xᵀ of a CSR X (n × V) without a copy: the CSC matrix (V × n) on X's arrays, canonical when X is."""
        if not self.on_gpu:
            return X.T
        n, V = X.shape
        return _marked(self.xsp.csc_matrix((X.data, X.indices, X.indptr), shape=(V, n)), canonical(X))

    def transposed_product(self, X, D):
        """Xᵀ·D (V × K) of a CSR X (n × V) and a dense D (n × K): on a GPU, cuSPARSE's product with X
        transposed in place (``transposed``). Its sums are not bit-reproducible from run to run: it adds
        with atomics (forming Xᵀ first, csr2csc, does too: experiments/gpu_machine.sh), so the GPU code
        is deterministic to round-off only (a CSR × dense kernel of our own, summing each row in order,
        would make it bit for bit)."""
        if not self.on_gpu:
            return X.T @ D
        return self.transposed(X) @ D

    def rows(self, X, order):
        """The rows ``order`` (device int64) of a CSR X, in that order; canonical when X is."""
        taken = X[order]
        return _marked(taken, canonical(X)) if self.on_gpu else taken

    def to_host(self, a) -> np.ndarray:
        """A device array as a numpy array (itself on numpy)."""
        return a.get() if self.on_gpu else np.asarray(a)

    def synchronize(self) -> None:
        """Wait for the device's queued work (timings include it)."""
        if self.on_gpu:
            self.xp.cuda.get_current_stream().synchronize()


def canonical(M) -> bool:
    """Whether a device sparse matrix is marked canonical (sorted, unique indices in every row)."""
    return getattr(M, "_has_canonical_format", None) is True


def _marked(M, canonical: bool):
    """M with cupyx's flags set: sorted and unique indices (the attributes its ``sum_duplicates`` and
    ``has_canonical_format`` read), so that its products use M as it is; unchanged when not canonical."""
    if canonical:
        M._has_canonical_format = True
        M._has_sorted_indices = True
    return M


def namespace(device: str) -> ArrayNamespace:
    """The namespace pair of ``device`` ("gpu" or "array-numpy"); one MlnbError line where the GPU
    code cannot run."""
    if device == "array-numpy":
        return ArrayNamespace(device, np, sp)
    if device != "gpu":
        raise MlnbError(f"engine.device = {device!r}: the array code runs on 'gpu' or 'array-numpy'")
    problem = gpu_problem()
    if problem:
        raise MlnbError(f"engine.device = 'gpu': {problem}; use engine.device = 'cpu'")
    return ArrayNamespace(device, importlib.import_module("cupy"), importlib.import_module("cupyx.scipy.sparse"))
