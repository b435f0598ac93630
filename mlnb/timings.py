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
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

#: the row of what no stage covers
OTHER = "other"


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
