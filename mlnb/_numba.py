"""numba, when installed: the compiled kernels import ``njit``, ``prange`` and ``HAVE_NUMBA`` from here.

Every kernel has a numpy/scipy path too, so mlnb still runs (slower) without numba.
"""

try:
    from numba import njit, prange

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - numba is a declared dependency
    HAVE_NUMBA = False
    njit = prange = None

__all__ = ["HAVE_NUMBA", "njit", "prange"]
