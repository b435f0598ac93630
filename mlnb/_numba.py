"""numba, when installed: the compiled kernels import ``njit``, ``prange`` and ``HAVE_NUMBA`` from here.

Every kernel has a numpy/scipy path too, so mlnb still runs (slower) without numba. Importing this
module, before any kernel runs, also lets OpenMP's threads wait passively (``_wait_passively``), so
that every kernel behaves well beside other busy processes whatever the import order.
"""

import os


def _wait_passively() -> None:
    """Let OpenMP's threads sleep, not spin, while they wait for the next parallel region.

    libgomp (numba's 'omp' threading layer on Linux) by default spins ~300,000 times (about a
    millisecond) at every barrier and between regions. Alone on the machine that saves a wake-up
    (microseconds); beside another busy process the spinning thread holds a core that the thread
    it waits for needs, and a step of a few milliseconds waits a time slice: measured here, two
    threads forced on every step took 3.7 s a pass against 2.0 s when waiting passively (2.4 s on
    one thread). The setting must be made before numba starts its threads (libgomp reads it
    once); a user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT is left alone.
    """
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return
    from numba.np.ufunc import parallel

    if not getattr(parallel, "_is_initialized", True):
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


try:
    from numba import njit, prange

    HAVE_NUMBA = True
    _wait_passively()
except ImportError:  # pragma: no cover - numba is a declared dependency
    HAVE_NUMBA = False
    njit = prange = None

__all__ = ["HAVE_NUMBA", "njit", "prange"]
