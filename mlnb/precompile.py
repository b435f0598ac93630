"""Compile every kernel of mlnb once, in parallel processes, the first time a study runs (``mlnb compile``
does it ahead of time), so that no later run compiles anything, whatever its source, task or event model.

numba compiles a kernel for each combination of argument types it is called with, and a study's
combinations depend on its data and models: the serial or the parallel variant of a kernel by the
corpus's size, float32 or float64 scores by the task, an optional array or none by the updater;
compiled on use, the first run on each new kind of data would stop to compile its own (minutes on 2
cores). The combinations studies use are listed in ``mlnb._kernel_signatures``; the first study on a
cache that lacks them (``ensure_compiled``: no ``ready_marker`` for this package's kernels) compiles
all of them into numba's on-disk cache in ``worker_processes()`` processes, which claim the kernels one at
a time, after one line on stderr (``announce``). Later processes load them from the cache.

``tests/test_precompile.py`` runs one study to fill a fresh cache and then studies of every other source
in a second process, and fails with the combinations that were compiled there: they belong in the list.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
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


def compile_task(task: tuple[str, str, list[str]], names: dict | None = None) -> int:
    """Compile (or load from numba's cache) one task's combinations; the number of them."""
    module, qualname, signatures = task
    kernel = _kernel(module, qualname)
    if kernel is None:
        return 0
    names = names or _numba_types()
    for text in signatures:
        kernel.compile(eval(text, {"__builtins__": {}}, names))  # noqa: S307 - the package's own list
    return len(signatures)


def compile_part(part: int = 0, parts: int = 1) -> int:
    """Compile (or load from numba's cache) the combinations of this part's kernels; the number of them."""
    names = _numba_types()
    return sum(compile_task(task, names) for task in share(tasks(), part, parts))


def serve() -> int:
    """A compiling process of ``compile_all``: read task numbers (of ``tasks()``) from stdin, one a line, compile
    each and answer ``ok N`` on stdout, until stdin ends."""
    listed, names = tasks(), _numba_types()
    for line in sys.stdin:
        number = int(line)
        compile_task(listed[number], names)
        sys.stdout.write(f"ok {number}\n")
        sys.stdout.flush()
    return 0


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
    """Compile every listed combination into numba's cache in ``workers`` processes, then check in fresh
    processes that each of them loads (a kernel that another kernel calls may have been written by two
    processes at once, and one of its combinations lost); whether every process succeeded.

    The processes claim the tasks, largest first, as they finish the last (``serve``): the compile times of
    the kernels differ by tens of times, and a fixed share of them left one core idle for seconds while the
    other compiled (experiments/compile_times.py times each)."""
    workers = workers or worker_processes()
    # the processes import this very package, wherever this process found it
    here = str(Path(__file__).resolve().parents[1])
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))}
    pending = iter(range(len(tasks())))
    claim = threading.Lock()
    failed = []

    def drive(process: subprocess.Popen) -> None:
        """Give ``process`` the next task each time it answers the last, until none is left."""
        try:
            while True:
                with claim:
                    number = next(pending, None)
                if number is None or failed:
                    break
                process.stdin.write(f"{number}\n")
                process.stdin.flush()
                if process.stdout.readline().strip() != f"ok {number}":
                    failed.append(number)  # the process died; the others take the rest
                    break
        except OSError:  # the process died between two tasks
            failed.append(-1)
        finally:
            try:
                process.stdin.close()
            except OSError:
                pass

    running = [subprocess.Popen([sys.executable, "-m", "mlnb.precompile", "--serve"], env=environment,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True) for _ in range(workers)]
    try:
        drivers = [threading.Thread(target=drive, args=(process,), daemon=True) for process in running]
        for driver in drivers:
            driver.start()
        for driver in drivers:
            driver.join()
        codes = [process.wait() for process in running]
        checks = [subprocess.Popen([sys.executable, "-m", "mlnb.precompile", "--part", f"{part}/{workers}"],
                                   env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                  for part in range(workers)]
        running += checks
        codes += [process.wait() for process in checks]
    finally:
        for process in running:
            if process.poll() is None:
                process.kill()
                process.wait()
    return not failed and not any(codes)


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
    if arguments == ["--serve"]:
        return serve()
    if arguments[:1] == ["--part"] and len(arguments) == 2:
        part, parts = (int(number) for number in arguments[1].split("/"))
        compile_part(part, parts)
        return 0
    progress.enable("--quiet" not in arguments)
    ensure_compiled()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
