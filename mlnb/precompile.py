"""Compile every kernel of mlnb once, in parallel processes, the first time a study runs (``mlnb compile``
does it ahead of time), so that no later run compiles anything, whatever its source, task or event model.

numba compiles a kernel for each combination of argument types it is called with, and a study's
combinations depend on its data and models: the serial or the parallel variant of a kernel by the
corpus's size, float32 or float64 scores by the task, an optional array or none by the updater;
compiled on use, the first run on each new kind of data would stop to compile its own (minutes on 2
cores). The combinations studies use are listed in ``mlnb._kernel_signatures``; the first study on a
cache that lacks them (``ensure_compiled``: no ``ready_marker`` for this package's kernels) compiles
all of them into numba's on-disk cache, shared out between ``worker_processes()`` processes, after one
line on stderr (``announce``). Later processes load them from the cache.

``tests/test_precompile.py`` runs one study to fill a fresh cache and then studies of every other source
in a second process, and fails with the combinations that were compiled there: they belong in the list.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

from mlnb import progress

#: CPU seconds to compile every listed combination in one process (experiments/compile_times.py): the estimate of
#: the status line, shared out between the worker processes
COMPILE_CPU_SECONDS = 120.0
#: at most this many compiling processes (each holds the compiler's few hundred MB)
MAX_WORKERS = 8

_announced = {"done": False}


def announce(workers: int | None = None) -> None:
    """Print "compiling mlnb's kernels (one time, about N s)" on stderr, once per process, unless progress
    is off (``--quiet``, the Python API)."""
    if _announced["done"] or not progress.is_enabled():
        return
    _announced["done"] = True
    seconds = COMPILE_CPU_SECONDS / (workers or worker_processes())
    progress.log(f"compiling mlnb's kernels (one time, about {max(10, round(seconds, -1)):.0f} s)")


def _announce_package_compiles() -> None:
    """``announce`` when numba starts compiling one of the package's kernels in this process (a combination
    the list lacks, or a cache emptied since the ``ready_marker``); once per process, like the line itself."""
    from numba.core import event

    class _PackageCompile(event.Listener):
        def on_start(self, found):
            kernel = (found.data or {}).get("dispatcher")
            module = getattr(getattr(kernel, "py_func", None), "__module__", "") or ""
            if module.startswith("mlnb."):
                announce()

        def on_end(self, found):
            pass

    if not _announced.get("listening"):
        event.register("numba:compile", _PackageCompile())
        _announced["listening"] = True


def _numba_types() -> dict:
    """The names a listed signature's text uses (numba's str of each argument type)."""
    from numba.core import types

    names = {name: getattr(types, name) for name in dir(types) if not name.startswith("_")}
    names.update({"bool": types.boolean, "none": types.none})
    return names


def _kernel(module: str, qualname: str):
    """The dispatcher ``module.qualname``, or None where numba is off or the name no longer exists."""
    import importlib

    found = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found if hasattr(found, "compile") and hasattr(found, "signatures") else None


def tasks() -> list[tuple[str, str, list[str]]]:
    """(module, qualname, signatures) of every listed kernel, the largest first: each kernel is one task,
    so that no two processes write one kernel's cache index at the same time."""
    from mlnb._kernel_signatures import SIGNATURES

    listed = [(module, qualname, signatures) for module, kernels in SIGNATURES.items()
              for qualname, signatures in kernels.items()]
    return sorted(listed, key=lambda task: (-sum(len(text) for text in task[2]), task[0], task[1]))


def share(all_tasks: list, part: int, parts: int) -> list:
    """Part ``part`` of ``parts`` of the tasks: each task, largest first, to the part with the least text
    so far (the length of a signature's text stands in for its compile time)."""
    loads = [0] * parts
    mine = []
    for task in all_tasks:
        lightest = loads.index(min(loads))
        loads[lightest] += sum(len(text) for text in task[2])
        if lightest == part:
            mine.append(task)
    return mine


def compile_part(part: int = 0, parts: int = 1) -> int:
    """Compile (or load from numba's cache) the combinations of this part's kernels; the number of them."""
    names = _numba_types()
    done = 0
    for module, qualname, signatures in share(tasks(), part, parts):
        kernel = _kernel(module, qualname)
        if kernel is None:
            continue
        for text in signatures:
            kernel.compile(eval(text, {"__builtins__": {}}, names))  # noqa: S307 - the package's own list
            done += 1
    return done


def worker_processes() -> int:
    """One compiling process per core this process may use, at most ``MAX_WORKERS``."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, MAX_WORKERS))


def ready_marker() -> Path | None:
    """The file that says every listed combination is in numba's cache: in the cache's folder, named by a
    hash of the kernels' sources, the list, numba's and Python's versions. None without numba."""
    from mlnb._kernels import jit

    if not jit.HAVE_NUMBA:
        return None
    import platform

    import numba

    from mlnb._kernels import csr
    from mlnb._kernel_signatures import SIGNATURES

    kernel = next((value for value in vars(csr).values() if hasattr(getattr(value, "_cache", None), "_cache_path")),
                  None)
    if kernel is None:  # numba's compilation turned off (NUMBA_DISABLE_JIT)
        return None
    key = hashlib.sha256(jit.kernels_stamp() + repr(SIGNATURES).encode()
                         + f"{numba.__version__} {sys.version} {platform.machine()}".encode()).hexdigest()[:16]
    return Path(kernel._cache._cache_path) / f"mlnb-kernels-{key}.ready"


def compile_all(workers: int | None = None) -> bool:
    """Compile every listed combination into numba's cache in ``workers`` processes, then check in one
    process that each of them loads (a kernel that another kernel calls may have been written by two
    processes at once, and one of its combinations lost); whether every process succeeded."""
    workers = workers or worker_processes()
    command = [sys.executable, "-m", "mlnb.precompile", "--part"]
    # the processes import this very package, wherever this process found it
    here = str(Path(__file__).resolve().parents[1])
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))}
    rounds = [[f"{part}/{workers}" for part in range(workers)], ["0/1"]] if workers > 1 else [["0/1"]]
    for parts in rounds:
        running = [subprocess.Popen(command + [part], env=environment, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL) for part in parts]
        try:
            codes = [process.wait() for process in running]
        finally:
            for process in running:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        if any(codes):
            return False
    return True


def ensure_compiled() -> None:
    """Before a study: compile every kernel once, in parallel processes (``compile_all``), unless this cache
    already holds them (``ready_marker``); announce any other compile of a package kernel in this process."""
    marker = ready_marker()
    if marker is None:
        return
    _announce_package_compiles()
    if marker.exists():
        return
    workers = worker_processes()
    announce(workers)
    started = time.perf_counter()
    done = compile_all(workers)  # an interrupt leaves no marker: the next study compiles again
    # written also where a process failed (a combination this platform cannot compile): the kernels it
    # left out compile on use, as they did before this module, not again up front at every study
    outcome = "" if done else "; a compiling process failed, its kernels compile on use"
    try:
        marker.write_text(f"{time.perf_counter() - started:.1f} s in {workers} processes{outcome}\n")
    except OSError:  # a cache folder that cannot be written: numba falls back likewise, nothing to keep
        pass


def _main(arguments: list[str]) -> int:
    if arguments[:1] == ["--part"] and len(arguments) == 2:
        part, parts = (int(number) for number in arguments[1].split("/"))
        compile_part(part, parts)
        return 0
    progress.enable("--quiet" not in arguments)
    ensure_compiled()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
