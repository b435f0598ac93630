"""numba, when installed: the compiled kernels import ``njit``, ``prange`` and ``HAVE_NUMBA`` from here,
and the thread pools their thread count (``worker_threads``).

Every kernel has a numpy/scipy path too, so mlnb still runs (slower) without numba. Importing this
module, before any kernel runs, also lets OpenMP's threads wait passively (``_wait_passively``), so
that every kernel behaves well beside other busy processes whatever the import order, and lets
malloc reuse the large blocks of one fit for the next (``mlnb._kernels.memory``), and stamps every kernel's
on-disk cache with the sources of all the package's compiled code (``_stamp_kernels_together``).
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from mlnb._kernels.memory import reuse_freed_blocks


def _wait_passively() -> None:
    """Let OpenMP's threads sleep, not spin, while they wait for the next parallel region.

    libgomp (numba's 'omp' threading layer on Linux) by default spins ~300,000 times (about a
    millisecond) at every barrier and between regions. Alone on the machine that saves a wake-up
    (microseconds); beside another busy process the spinning thread holds a core that the thread
    it waits for needs, and a step of a few milliseconds waits a time slice (measured by
    experiments/bench_contention.py). The setting must be made before numba starts its threads
    (libgomp reads it once); a user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT is left alone.
    """
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return
    from numba.np.ufunc import parallel

    if not getattr(parallel, "_is_initialized", True):
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


PACKAGE = Path(__file__).resolve().parents[1]  # the mlnb package
#: a file of the package holds compiled code (a kernel, an intrinsic) when its text holds one of these
KERNEL_MARKS = (b"njit", b"@intrinsic", b"prange")


@functools.lru_cache(maxsize=None)
def kernels_stamp(root: Path = PACKAGE) -> bytes:
    """SHA-256 over the path and the bytes of every ``.py`` file under ``root`` (the mlnb package) whose
    text holds a ``KERNEL_MARKS`` mark, in path order: the source stamp of every compiled kernel of the
    package (``_stamp_kernels_together``). ``tests/test_numba.py`` checks from the source that the
    compiled functions take nothing from the package's other files (only ``njit``, ``prange`` and
    ``IEEE`` from this one, which is part of the stamp)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        text = path.read_bytes()
        if any(mark in text for mark in KERNEL_MARKS):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(text + b"\0")
    return digest.digest()


def _stamp_kernels_together() -> None:
    """Make numba's on-disk cache of every mlnb kernel stale as soon as any file with compiled code changes.

    numba keys a cached kernel on its own source file only, but a kernel compiles in the functions and
    constants it calls from other files (``mlnb.models.logistic.kernels``'s update inlines ``regularisation``'s row
    step): after an edit, or a ``git pull`` of an editable install, that changes only the other file,
    the old machine code was loaded and run (seen here: a benchmark timed the old row step). With one
    stamp for all the files with compiled code (``kernels_stamp``), a change to any of them recompiles
    every kernel once, on first use; a change elsewhere (the study, the reports) recompiles nothing.
    numba's locators are internal: where this numba has none by that name, its own per-file stamps
    stay."""
    try:
        from numba.core import caching
    except ImportError:  # pragma: no cover - numba without the module (not a supported version)
        return
    mixin = getattr(caching, "_SourceFileBackedLocatorMixin", None)
    if mixin is None or getattr(mixin, "_mlnb_kernels_stamp", False):  # pragma: no cover - other numba
        return
    per_file = mixin.get_source_stamp

    def get_source_stamp(self):
        source = Path(getattr(self, "_py_file", "") or "")
        if source.suffix == ".py" and PACKAGE in source.resolve().parents:
            try:
                return kernels_stamp()
            except OSError:  # a package file that cannot be read: numba's own stamp, as without this
                pass
        return per_file(self)

    mixin.get_source_stamp = get_source_stamp
    mixin._mlnb_kernels_stamp = True


try:
    from numba import njit, prange

    HAVE_NUMBA = True
    _wait_passively()
    _stamp_kernels_together()
except ImportError:  # pragma: no cover - numba is a declared dependency
    HAVE_NUMBA = False
    njit = prange = None

reuse_freed_blocks()  # the numpy paths allocate the same V × K arrays

#: fastmath flags for the compiled float work: IEEE arithmetic (no reassociation, no contraction into
#: FMA, no approximate reciprocals or functions), only the assumptions that no value is NaN or
#: infinite and that the sign of zero does not matter. Then a value does not depend on whether it
#: is computed in a vector lane or in a loop's scalar remainder. With fastmath=True, the code numba
#: compiles in a fresh process and the same functions loaded from its cache in the next process
#: vectorised differently and gave other last bits (the weights of a 2-pass LR fit differed), so
#: the first run after installing gave other numbers than every later run. A reduction whose
#: order would then depend on the vector width is written as a loop in order.
IEEE = {"nnan", "ninf", "nsz"}



def worker_threads(n_threads: int | None = None) -> int:
    """Threads of a pool of work beside the kernels: ``n_threads``, else numba's thread count (what
    ``numba.set_num_threads`` or NUMBA_NUM_THREADS chose, every core by default), so that the pools
    and the compiled kernels of a stage use the same number of threads; the cores without numba."""
    if n_threads:
        return max(1, int(n_threads))
    if HAVE_NUMBA:
        import numba

        return numba.get_num_threads()
    return os.cpu_count() or 1


def map_threads(function, items) -> list:
    """[function(item) for item in items] on a thread pool of at most ``worker_threads()`` threads, in
    order: for numpy calls, which let other threads run during their loops. One thread or one item:
    in the calling thread."""
    items = list(items)
    threads = min(worker_threads(), len(items))
    if threads <= 1:
        return [function(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(function, items))


def map_pieces(function, array, piece_values: int) -> list:
    """[function(piece) for each piece of ``array`` along its first axis], the pieces (views) on a thread
    pool of ``worker_threads()`` threads, at most one piece per ``piece_values`` values: for numpy calls,
    which let other threads run during their loops. One thread, or a small array: [function(array)] in
    the calling thread. ``array`` may be a tuple of arrays of one length: each call then gets the tuple
    of their pieces at the same rows (e.g. inputs and output of a ufunc)."""
    arrays = array if isinstance(array, tuple) else (array,)
    threads = min(worker_threads(), len(arrays[0]), arrays[0].size // max(piece_values, 1))
    if threads <= 1:
        return [function(array)]
    import numpy as np

    pieces = [np.array_split(each, threads) for each in arrays]
    return map_threads(function, list(zip(*pieces)) if isinstance(array, tuple) else pieces[0])


__all__ = ["HAVE_NUMBA", "IEEE", "map_pieces", "map_threads", "njit", "prange", "worker_threads"]
