"""Compile every kernel of mlnb once, in parallel processes, the first time a study runs (``mlnb compile``
does it ahead of time), so that no later run compiles anything, whatever its source, task or event model.

numba compiles a kernel for each combination of argument types it is called with, and a study's
combinations depend on its data and models: the serial or the parallel variant of a kernel by the
corpus's size, float32 or float64 scores by the task, an optional array or none by the updater;
compiled on use, the first run on each new kind of data would stop to compile its own (minutes on 2
cores). The combinations studies use are listed in ``mlnb._kernel_signatures``; the first study on a
cache that lacks them (no ``ready_marker`` for this package's kernels) compiles all of them into numba's
on-disk cache in ``worker_processes()`` processes, which claim the kernels one at a time, after one line
on stderr (``announce``). A study command starts them before its own imports (``start_compiling``) and
waits for them before its data (``ensure_compiled``). Later processes load the kernels from the cache.

``tests/test_precompile.py`` runs one study to fill a fresh cache and then studies of every other source
in a second process, and fails with the combinations that were compiled there: they belong in the list.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from mlnb import progress

#: CPU seconds to compile every listed combination in one process (experiments/compile_times.py's total, rounded
#: up for the processes' start and a busy machine): the estimate of the status line, shared out between the
#: worker processes
COMPILE_CPU_SECONDS = 110.0
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


def _import_bare(modules) -> None:
    """Import ``modules`` without running the ``__init__`` of the mlnb packages above them (a package already
    imported is left as it is): those import every model kind, and through them scikit-learn and pandas, most
    of the seconds a compiling process spent importing; the kernel modules need none of it."""
    import importlib
    import importlib.machinery
    import importlib.util

    for module in modules:
        parts = module.split(".")
        for depth in range(2, len(parts)):
            name = ".".join(parts[:depth])
            if name in sys.modules:
                continue
            parent = sys.modules[".".join(parts[:depth - 1])]
            spec = importlib.machinery.PathFinder.find_spec(name, parent.__path__)
            if spec is None:
                break  # not a package on the path: the import below says what is wrong
            sys.modules[name] = importlib.util.module_from_spec(spec)
            setattr(parent, parts[depth - 1], sys.modules[name])
        importlib.import_module(module)


def serve() -> int:
    """A compiling process of ``Compiling``: read tasks from stdin, one JSON ``[module, qualname, signatures]`` a
    line, compile each and answer ``ok`` (or ``failed``: a combination this platform cannot compile, which
    then compiles on use) on stdout, until stdin ends."""
    names = _numba_types()
    import mlnb  # noqa: F401 - the root package (its __init__ imports nothing): the others stay bare

    try:
        _import_bare(sorted({module for module, _, _ in tasks()}))
    except ImportError:  # a kernel module that needs its package's __init__: each task imports its own
        pass
    for line in sys.stdin:
        try:
            compile_task(tuple(json.loads(line)), names)
            answer = "ok"
        except Exception:  # noqa: BLE001 - any compile error: the kernel compiles on use, as without this module
            answer = "failed"
        sys.stdout.write(answer + "\n")
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


class Compiling:
    """Every task of ``listed`` compiling in ``workers`` processes (``serve``), started at once; ``wait`` for them.

    The processes claim the tasks, largest first, as they finish the last: the compile times of the kernels
    differ by tens of times, and a fixed share of them left one core idle for seconds while the other
    compiled (experiments/compile_times.py times each). Nothing is checked afterwards in another process:
    each kernel's combinations are written by the process that compiles its task, and a kernel compiled
    inside another's task as well writes the same combinations (``tests/test_precompile.py`` checks that
    a listed kernel called by others has one), so no process's write of numba's index of a kernel can
    lose another's."""

    def __init__(self, workers: int, listed: list | None = None):
        self.listed = tasks() if listed is None else listed
        self.pending = list(self.listed)
        self.claim = threading.Lock()
        self.answers: list[str] = []
        # the processes import this very package, wherever this process found it
        here = str(Path(__file__).resolve().parents[1])
        environment = {**os.environ,
                       "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))}
        self.processes = []
        self.drivers = []
        try:
            for _ in range(workers):
                process = subprocess.Popen([sys.executable, "-m", "mlnb.precompile", "--serve"], env=environment,
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=subprocess.DEVNULL, text=True)
                self.processes.append(process)
                driver = threading.Thread(target=self._drive, args=(process,), daemon=True)
                driver.start()
                self.drivers.append(driver)
        except BaseException:
            self.stop()
            raise

    def _drive(self, process: subprocess.Popen) -> None:
        """Give ``process`` the next task each time it answers the last, until none is left or it dies: the
        largest left of a module it has compiled from, else the largest left (the kernels of a module share
        helpers, which a process compiles once)."""
        modules: set[str] = set()
        try:
            while True:
                with self.claim:
                    if not self.pending:
                        break
                    task = next((task for task in self.pending if task[0] in modules), self.pending[0])
                    self.pending.remove(task)
                modules.add(task[0])
                process.stdin.write(json.dumps(list(task)) + "\n")
                process.stdin.flush()
                answer = process.stdout.readline().strip()
                self.answers.append(answer or "died")
                if answer not in ("ok", "failed"):
                    break  # the process died: the others take the rest
        except (OSError, ValueError):  # it died, or was stopped, between two tasks
            self.answers.append("died")
        finally:
            try:
                process.stdin.close()
            except (OSError, ValueError):
                pass

    def wait(self) -> bool:
        """Wait for every task; whether each was compiled (False: a process died or a task failed, and those
        kernels compile on use). An interrupt stops the processes."""
        try:
            for driver in self.drivers:
                driver.join()
            codes = [process.wait() for process in self.processes]
        finally:
            self.stop()
        return not any(codes) and len(self.answers) == len(self.listed) and set(self.answers) <= {"ok"}

    def stop(self) -> None:
        """End every process still running (an interrupt, a command that failed before its study)."""
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait()


#: the compile a study command started before its imports (``start_compiling``), until ``ensure_compiled``:
#: "compiling" -> (when it started, its ``Compiling``)
_started: dict = {}


def _begin() -> None:
    """Say so on stderr (``announce``) and start the compiling processes; kept in ``_started``."""
    workers = worker_processes()
    announce(workers)
    _started["compiling"] = (time.perf_counter(), Compiling(workers))


def start_compiling() -> None:
    """Start compiling now, where this cache lacks the kernels (after the status line), so that the compile runs
    while the command imports the rest of mlnb and reads its config; ``ensure_compiled`` waits for it. Called
    first thing by the study commands (``progress`` already set); a command that ends before its study stops
    the processes (at exit)."""
    marker = ready_marker()
    if marker is None or marker.exists() or "compiling" in _started:
        return
    _begin()
    atexit.register(_stop_started)


def _stop_started() -> None:
    started = _started.pop("compiling", None)
    if started is not None:
        started[1].stop()


def ensure_compiled() -> None:
    """Before a study: compile every kernel once, in parallel processes (``Compiling``; or wait for the compile
    ``start_compiling`` began), unless this cache already holds them (``ready_marker``); announce any other
    compile of a package kernel in this process."""
    marker = ready_marker()
    if marker is None:
        return
    _announce_package_compiles()
    if marker.exists():
        _stop_started()
        return
    if "compiling" not in _started:
        _begin()
    started, compiling = _started.pop("compiling")
    done = compiling.wait()  # an interrupt leaves no marker: the next study compiles again
    # written also where a process failed (a combination this platform cannot compile): the kernels it
    # left out compile on use, as they did before this module, not again up front at every study
    outcome = "" if done else "; a compiling process failed, its kernels compile on use"
    try:
        seconds, processes = time.perf_counter() - started, len(compiling.processes)
        marker.write_text(f"{seconds:.1f} s in {processes} processes{outcome}\n")
    except OSError:  # a cache folder that cannot be written: numba falls back likewise, nothing to keep
        pass


def _main(arguments: list[str]) -> int:
    if arguments == ["--serve"]:
        return serve()
    progress.enable("--quiet" not in arguments)
    ensure_compiled()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
