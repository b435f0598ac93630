r"""Seconds per stage of a study: where its time goes (``mlnb run --profile``, ``timings`` in summary.json).

    clock = timings.Timings()
    with timings.recording(clock):              # the whole run
        with timings.stage("load"):
            ...
        with timings.stage("fit"):
            fit = fit_models(...)
            timings.add("fit nb", fit.seconds["nb"])   # seconds measured elsewhere
    clock.table()   # one row per stage, in the order first entered

Each row holds a stage's own seconds, wall and CPU (all threads of the process), the share of
the recording's wall time and the cores it kept busy on average:

    seconds_s = wall time inside s − wall time inside the stages entered (or added) within s
    share_s   = seconds_s / wall          busy_cores_s = cpu_s / seconds_s

so the stages never count a second twice and add up, with ``other`` (what no stage covers:
imports, checks, Python between the stages), to the wall time. A stage entered again adds to its
row (the intervals of each model). A stage still open when the table is read (``writing``,
while summary.json is written) counts its time so far. Seconds measured elsewhere (``add``: each
model's fit, timed by the engine) are their stage's; their CPU time, unknown, is a share of the
enclosing stage's in proportion to wall time.

Nothing is recorded outside ``recording``, nor from other threads than the one recording (the
stages of a study run one after the other; their kernels' own threads are inside them): the
Python API pays one lookup per stage. An unranked helper like ``mlnb.progress``: any layer may
import it.

Compiling. The first run after installing (or after an edit of a file with compiled code) compiles
every numba kernel it calls, seconds to minutes on a small machine, inside whatever stage called
it; a later run loads each from numba's cache on its first call. Once ``watch_compiling`` ran
(``recording`` calls it), that time is timed from numba's events (``compile_seconds``: every thread,
the outermost compilation only, cache loads included); on the recording thread each one is a row of
its own, ``compiling``, not the stage's. ``Stopwatch`` times a block of work less the compiling
inside it: a model's fit seconds, the rate of an LR pass.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

#: the row of what no stage covers
OTHER = "other"
#: the row of numba's compiling on the recording thread (``watch_compiling``)
COMPILING = "compiling"
#: the row of the command's process before its recording started (imports, config): ``from_process_start``
START_UP = "start-up"


@dataclass
class _Open:
    name: str
    wall: float  # perf_counter when entered
    cpu: float  # process_time when entered
    inner_wall: float = 0.0  # seconds of the stages entered or added within it
    inner_cpu: float = 0.0
    added: list = field(default_factory=list)  # (stage, wall seconds) added within it, CPU unknown

    def split(self, now: float, now_cpu: float, open_wall: float = 0.0, open_cpu: float = 0.0
              ) -> tuple[float, float, list]:
        """(own wall, own CPU, [(stage, CPU)] of ``added``) at ``now``, less ``open_*`` (a stage within
        still open): the CPU not accounted for by the stages within is shared between this stage and
        its added ones in proportion to wall time."""
        own_wall = max(now - self.wall - self.inner_wall - open_wall, 0.0)
        free_cpu = max(now_cpu - self.cpu - self.inner_cpu - open_cpu, 0.0)
        span = own_wall + sum(wall for _, wall in self.added)
        if span <= 0.0:
            return own_wall, free_cpu, [(name, 0.0) for name, _ in self.added]
        return own_wall, free_cpu * own_wall / span, [(name, free_cpu * wall / span) for name, wall in self.added]


@dataclass(eq=False)
class Timings:
    """Per-stage wall and CPU seconds of one recording (``recording``), in the order first entered."""

    wall: dict = field(default_factory=dict)  # stage -> own wall seconds
    cpu: dict = field(default_factory=dict)  # stage -> own CPU seconds (every thread of the process)
    started: float | None = None  # perf_counter / process_time when the recording started
    started_cpu: float = 0.0
    stopped: float | None = None  # perf_counter when it stopped (None: still recording)
    stopped_cpu: float = 0.0
    _open: list = field(default_factory=list)  # the stack of stages entered and not left

    def _count(self, name: str, wall: float, cpu: float) -> None:
        self.wall[name] = self.wall.get(name, 0.0) + wall
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu

    def _add(self, name: str, wall: float, cpu: float | None) -> None:
        """Seconds measured elsewhere; inside a stage they are not that stage's."""
        if not self._open:
            self._count(name, wall, wall if cpu is None else cpu)
            return
        parent = self._open[-1]
        parent.inner_wall += wall
        if cpu is None:  # its CPU is a share of the parent's, worked out when the parent is left
            self.wall[name] = self.wall.get(name, 0.0) + wall
            self.cpu.setdefault(name, 0.0)
            parent.added.append((name, wall))
        else:
            self._count(name, wall, cpu)
            parent.inner_cpu += cpu

    def _enter(self, name: str) -> None:
        self.wall.setdefault(name, 0.0)  # the table's order: first entered
        self.cpu.setdefault(name, 0.0)
        self._open.append(_Open(name, time.perf_counter(), time.process_time()))

    def _leave(self) -> None:
        done = self._open.pop()
        now, now_cpu = time.perf_counter(), time.process_time()
        own_wall, own_cpu, added = done.split(now, now_cpu)
        self._count(done.name, own_wall, own_cpu)
        for name, cpu in added:
            self.cpu[name] += cpu
        if self._open:  # all of it, stages within included, is not the enclosing stage's own
            self._open[-1].inner_wall += now - done.wall
            self._open[-1].inner_cpu += now_cpu - done.cpu

    def _so_far(self) -> tuple[dict, dict]:
        """(wall, cpu) per stage, the open stages' time so far included."""
        wall, cpu = dict(self.wall), dict(self.cpu)
        now, now_cpu = time.perf_counter(), time.process_time()
        inner_wall = inner_cpu = 0.0  # the elapsed time of the open stage within, not yet in its parent
        for entered in reversed(self._open):  # innermost first
            own_wall, own_cpu, added = entered.split(now, now_cpu, inner_wall, inner_cpu)
            wall[entered.name] = wall.get(entered.name, 0.0) + own_wall
            cpu[entered.name] = cpu.get(entered.name, 0.0) + own_cpu
            for name, share in added:
                cpu[name] += share
            inner_wall, inner_cpu = now - entered.wall, now_cpu - entered.cpu
        return wall, cpu

    @property
    def total_seconds(self) -> float:
        """Wall seconds of the recording (so far, while it runs)."""
        if self.started is None:
            return sum(self.wall.values())
        return (self.stopped if self.stopped is not None else time.perf_counter()) - self.started

    def table(self) -> list[dict]:
        """One row per stage, then ``other`` and the ``total``: {"stage", "seconds", "cpu_seconds",
        "share", "busy_cores"} (share of the recording's wall time; busy cores = CPU / wall)."""
        wall, cpu = self._so_far()
        total = self.total_seconds
        if self.started is not None:
            end_cpu = self.stopped_cpu if self.stopped is not None else time.process_time()
            total_cpu = end_cpu - self.started_cpu
            wall[OTHER] = max(total - sum(wall.values()), 0.0)
            cpu[OTHER] = max(total_cpu - sum(cpu.values()), 0.0)
        else:
            total_cpu = sum(cpu.values())

        def row(name, seconds, cpu_seconds):
            return {"stage": name, "seconds": round(seconds, 4), "cpu_seconds": round(cpu_seconds, 4),
                    "share": round(seconds / total, 4) if total > 0 else 0.0,
                    "busy_cores": round(cpu_seconds / seconds, 2) if seconds > 0 else 0.0}

        return [row(name, wall[name], cpu[name]) for name in wall] + [row("total", total, total_cpu)]

    def format(self, threads: int | None = None) -> str:
        """The table as aligned text (``mlnb run --profile``)."""
        rows = self.table()
        width = max([len(r["stage"]) for r in rows] + [5])
        head = f"{'stage':<{width}}  {'seconds':>9}  {'share':>6}  {'busy cores':>10}"
        lines = [head, "-" * len(head)]
        for r in rows:
            if r is rows[-1]:
                lines.append("-" * len(head))
            lines.append(f"{r['stage']:<{width}}  {r['seconds']:>9.3f}  {100 * r['share']:>5.1f}%  "
                         f"{r['busy_cores']:>10.2f}")
        if threads:
            lines.append(f"(busy cores = CPU seconds of every thread / wall seconds; {threads} threads available)")
        return "\n".join(lines)

    def markdown(self) -> str:
        """The table as Markdown (the report's "Where the time went")."""
        lines = ["| stage | seconds | share | busy cores |", "|---|---:|---:|---:|"]
        lines += [f"| {r['stage']} | {r['seconds']:.3f} | {100 * r['share']:.1f} % | {r['busy_cores']:.2f} |"
                  for r in self.table()]
        return "\n".join(lines)


_local = threading.local()


def current() -> Timings | None:
    """The recording of this thread, or None."""
    return getattr(_local, "clock", None)


@contextmanager
def recording(clock: Timings | None = None):
    """Record the stages entered in this thread into ``clock`` (a new one if None) and yield it. Inside
    another recording of the same clock it changes nothing (``run_study`` inside ``mlnb run``)."""
    clock = clock if clock is not None else Timings()
    outer = current()
    if outer is clock:
        yield clock
        return
    _local.clock = clock
    watch_compiling()  # numba's compiling: a row of its own, not the stage's that called the kernel
    if clock.started is None:
        clock.started, clock.started_cpu = time.perf_counter(), time.process_time()
    clock.stopped = None
    try:
        yield clock
    finally:
        while clock._open:  # left by an exception inside a stage: close them, as ``stage`` does
            clock._leave()
        clock.stopped, clock.stopped_cpu = time.perf_counter(), time.process_time()
        _local.clock = outer


@contextmanager
def stage(name: str):
    """Count the time inside as ``name``'s (its own: minus the stages within it)."""
    clock = current()
    if clock is None:
        yield
        return
    clock._enter(name)
    try:
        yield
    finally:
        if clock._open and clock._open[-1].name == name:
            clock._leave()


def add(name: str, seconds: float, cpu_seconds: float | None = None) -> None:
    """Count ``seconds`` measured elsewhere (a fit timed by the engine) as ``name``'s, and not as the
    enclosing stage's. CPU seconds unknown: a share of the enclosing stage's, in proportion to wall time."""
    clock = current()
    if clock is not None and seconds:
        clock._add(name, float(seconds), None if cpu_seconds is None else float(cpu_seconds))


# -- compiling ----------------------------------------------------------------------------------------
class _CompileTimer:
    """A listener of numba's "numba:compiler_lock" and "numba:compile" events: wall seconds of the outermost
    of them on each thread (compiling a kernel compiles the kernels it calls inside it, under the lock it
    holds already), summed over every thread. numba compiles, and loads a compiled kernel from its on-disk
    cache, under one process-wide lock: the sum exceeds the wall time it spans only by what a second
    thread waited for the lock."""

    def __init__(self):
        self.seconds = 0.0
        self.compiled = False  # whether numba compiled a kernel (not only loaded it from its cache)
        self._lock = threading.Lock()
        self._thread = threading.local()  # depth, and when the outermost compilation started

    def _start(self, compiling: bool) -> None:
        self.compiled = self.compiled or compiling
        depth = getattr(self._thread, "depth", 0)
        if depth == 0:
            self._thread.wall, self._thread.cpu = time.perf_counter(), time.thread_time()
        self._thread.depth = depth + 1

    def _end(self) -> None:
        self._thread.depth = getattr(self._thread, "depth", 1) - 1
        if self._thread.depth:
            return
        wall, cpu = time.perf_counter() - self._thread.wall, time.thread_time() - self._thread.cpu
        with self._lock:
            self.seconds += wall
        clock = current()
        if clock is not None:  # not the enclosing stage's own time, nor an added stage's (``Stopwatch``)
            clock._add(COMPILING, wall, cpu)


_compile_timer: _CompileTimer | None = None


def watch_compiling() -> bool:
    """Time numba's compiling from now on (once per process; later calls do nothing). False without numba
    or without its event API."""
    global _compile_timer
    if _compile_timer is not None:
        return True
    try:
        from numba.core import event
    except ImportError:  # pragma: no cover - numba is a declared dependency
        return False
    timer = _CompileTimer()

    class Listener(event.Listener):
        def __init__(self, kind: str):
            self.compiling = kind == "numba:compile"

        def on_start(self, _event):
            timer._start(self.compiling)

        def on_end(self, _event):
            timer._end()

    for kind in ("numba:compiler_lock", "numba:compile"):
        event.register(kind, Listener(kind))
    _compile_timer = timer
    return True


def compile_seconds() -> float:
    """Wall seconds numba spent compiling kernels or loading them from its cache (holding its compiler lock),
    every thread, since ``watch_compiling`` (which this calls): compare two readings to know the compiling
    between them. A warm run only loads: a fraction of a second."""
    watch_compiling()
    return _compile_timer.seconds if _compile_timer is not None else 0.0


def compiled_here() -> bool:
    """Whether numba compiled a kernel in this process since ``watch_compiling`` (a first run), rather
    than only loading the kernels from its cache."""
    return _compile_timer is not None and _compile_timer.compiled


class Stopwatch:
    """The seconds of a block of work, numba's compiling inside it apart::

        with timings.Stopwatch() as watch:
            estimator.fit(X, Y)
        watch.seconds, watch.compile_seconds   # seconds = wall − compile_seconds

    ``seconds`` and ``compile_seconds`` read so far while the block runs (``work_rate``'s clock)."""

    def __init__(self):
        self.started = self.compiled = 0.0
        self._seconds = self._compile_seconds = None

    @classmethod
    def start(cls) -> "Stopwatch":
        """A stopwatch running from now, read (``seconds``) without a ``with`` block."""
        return cls().__enter__()

    def __enter__(self) -> "Stopwatch":
        self.compiled = compile_seconds()
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> tuple[float, float]:
        """Stop it: (seconds, compile_seconds), as they read from now on."""
        self._compile_seconds = self.compile_seconds
        self._seconds = self.seconds
        return self._seconds, self._compile_seconds

    @property
    def compile_seconds(self) -> float:
        return self._compile_seconds if self._compile_seconds is not None else compile_seconds() - self.compiled

    @property
    def seconds(self) -> float:
        if self._seconds is not None:
            return self._seconds
        return max(time.perf_counter() - self.started - self.compile_seconds, 0.0)


class WorkRate:
    """Units of work per second, timed only after the last compilation: when numba compiled since the
    previous reading (the first minibatch of a run's first pass compiles the step kernels), the count
    restarts from this reading, so that no rate, and no ETA, ever includes compiling::

        rate = WorkRate()
        ...  rate.update(done)   # None until some work was timed with no compiling in it

    ``started`` and ``update``'s ``now`` are times of ``clock``; ``clock`` and ``compiled`` (seconds so far:
    ``time.perf_counter``, ``compile_seconds``) are for tests."""

    def __init__(self, done: int = 0, started: float | None = None, clock=time.perf_counter,
                 compiled=compile_seconds):
        self._clock, self._compiled = clock, compiled
        self._since = clock() if started is None else started
        self._done_since, self._compiled_since = done, compiled()

    def update(self, done: int, now: float | None = None) -> float | None:
        now, compiled = self._clock() if now is None else now, self._compiled()
        if compiled != self._compiled_since:
            self._since, self._done_since, self._compiled_since = now, done, compiled
            return None
        elapsed = now - self._since
        if elapsed <= 0.0 or done <= self._done_since:
            return None
        return (done - self._done_since) / elapsed


# -- the whole process ----------------------------------------------------------------------------------
def seconds_since_process_start() -> float | None:
    """Wall seconds since this process started (Linux: /proc/self/stat's start time against /proc/uptime,
    to 0.01 s); None where that cannot be read. (Not always plausible: a container's /proc/uptime may be its
    own while process start times count from the host's boot; ``from_process_start`` checks.)"""
    import os

    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
            since_boot = float(uptime.read().split()[0])
        seconds = since_boot - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return seconds


#: seconds the interpreter may take to start before it imports the command's entry point
_INTERPRETER_START_UP = 60.0


def from_process_start(entered: float | None = None) -> Timings:
    """A ``Timings`` whose recording starts when the process started, its time until now a ``start-up``
    row (the interpreter, the imports, reading the config): for ``mlnb run --profile``, whose total is
    then the command's wall time. ``entered``: the ``time.perf_counter()`` at which the command's entry
    point was imported, a start when the process's own is unknown or implausible (neither before it nor
    within ``_INTERPRETER_START_UP`` seconds of it); with neither, it starts now."""
    clock = Timings()
    now = time.perf_counter()
    before = seconds_since_process_start()
    if entered is not None and (before is None or not now - entered <= before <= now - entered + _INTERPRETER_START_UP):
        before = now - entered
    if before is not None and before >= 0.0:
        clock.started, clock.started_cpu = now - before, 0.0
        clock._count(START_UP, before, time.process_time())
    return clock
