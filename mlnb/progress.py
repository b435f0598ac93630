"""Progress display for long steps (data generation, per-category fitting).

Quiet by default so that the Python API prints nothing; the CLI turns it on.
Uses rich (a dependency of typer) and writes to stderr so stdout stays clean.

``mlnb run`` on a terminal shows one live line for the whole run (``run_display``): the stage and how
many of the run's stages are done, the step within it (``status``), its state (``note``: an LR pass's
documents, rate and ETA) and the time so far; it ends in one summary line. Lines of record (``log``)
print above it; a line that only says how far a step got (``note``, ``log(..., final=False)``) is
shown in it, not kept. Where stderr is not a terminal (a pipe, a log file, tests) there is no live
line: only the lines of record print, and the notes are dropped.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

_enabled = False
_display = None  # the run's live line while it is shown (``run_display``), a terminal only

#: the stages of a run that its live line counts (``mlnb.timings`` stage names), as they come
STAGES = ("load", "features", "fit", "decide", "score", "evaluate", "intervals", "comparisons", "plots", "writing")


def enable(on: bool = True) -> None:
    """Turn progress bars on or off for the whole process."""
    global _enabled
    _enabled = on


def is_enabled() -> bool:
    return _enabled


def log(line: str, final: bool = True) -> None:
    """Print a one-line progress report to stderr when enabled. ``final=False``: a line that the next one
    makes stale (an LR pass before the last): on a terminal with the run's live line, shown in it, not kept."""
    if not _enabled:
        return
    if _display is not None:
        _display.log(line, keep=final)
        return
    print(line, file=sys.stderr, flush=True)


def note(line: str) -> None:
    """How far the current step got (documents so far, rate, ETA): shown in the run's live line on a
    terminal until the next note or step; never a line of its own, so dropped without a live line."""
    if _enabled and _display is not None:
        _display.detail = line


def track(iterable: Iterable[T], total: int | None = None, description: str = "") -> Iterator[T]:
    """Yield from ``iterable``, showing a progress bar when enabled."""
    if not _enabled:
        yield from iterable
        return
    if _display is not None:  # within the run's live line: "description i/total" as its note
        for done, item in enumerate(iterable):
            _display.detail = f"{description} {done}/{total}" if total else f"{description} {done}"
            yield item
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        yield from bar.track(iterable, total=total, description=description)


@contextmanager
def status(message: str):
    """Show a spinner with ``message`` while a step without sub-steps runs."""
    if not _enabled:
        yield
        return
    if _display is not None:
        with _display.step(message):
            yield
        return
    from rich.console import Console

    with Console(stderr=True).status(message):
        yield


def _seconds(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 60 else f"{seconds // 60:.0f} min {seconds % 60:02.0f} s"


class _RunDisplay:
    """The live line of a run: ``[done/total] stage: step · note (seconds so far)`` (rich calls ``__rich__``
    from its refresh thread). The stages are those of the run's recording (``mlnb.timings``): the ones it
    ``expects``, and any other of ``STAGES`` once entered."""

    def __init__(self, clock, expected: Iterable[str]):
        self.clock, self.expected = clock, list(expected)
        self.steps: list[str] = []  # the open ``status`` messages, innermost last
        self.detail = ""
        self.console = None  # the rich console the line is drawn on
        self._lock = threading.Lock()
        self._last = ""

    @contextmanager
    def step(self, message: str):
        with self._lock:
            self.steps.append(message)
            self.detail = ""
        try:
            yield
        finally:
            with self._lock:
                self.steps.remove(message)
                self.detail = ""

    def log(self, line: str, keep: bool) -> None:
        if keep:
            self.console.print(line, markup=False, highlight=False, emoji=False, soft_wrap=True)
        else:
            self.detail = line

    def stages(self) -> tuple[int, int, str]:
        """(stages done, stages in all, the innermost open stage or '') of the recording so far."""
        entered, open_now = list(self.clock.wall), [entered.name for entered in list(self.clock._open)]
        names = self.expected + [name for name in entered if name in STAGES and name not in self.expected]
        done = sum(1 for name in names if name in entered and name not in open_now)
        return done, len(names), open_now[-1] if open_now else ""

    def line(self) -> str:
        try:
            done, total, stage = self.stages()
        except RuntimeError:  # the recording changed while it was read (another thread): the last line again
            return self._last
        with self._lock:
            step = self.steps[-1] if self.steps else ""
            detail = self.detail
        parts = [f"[{done}/{total}]", f"{stage}:" if stage else "starting" if not done else ""]
        parts += [step, f"· {detail}" if detail else "", f"({_seconds(self.clock.total_seconds)})"]
        self._last = " ".join(part for part in parts if part)
        return self._last

    def __rich__(self):
        from rich.text import Text

        return Text(self.line(), no_wrap=True, overflow="ellipsis")

    def summary(self) -> str:
        """The line left when the display ends: each stage's own seconds (the recording's table)."""
        rows = [row for row in self.clock.table() if row["stage"] not in ("total", "other") and row["seconds"] >= 0.05]
        each = ", ".join(f"{row['stage']} {_seconds(row['seconds'])}" for row in rows)
        return f"done in {_seconds(self.clock.total_seconds)}" + (f": {each}" if each else "")


@contextmanager
def run_display(clock, expected: Iterable[str] = ()):
    """On a terminal (and when enabled): one live line for the run recorded by ``clock`` (a
    ``mlnb.timings.Timings``), which ``expected`` stages it will enter, then one summary line. Elsewhere
    nothing: the lines of record print as they come."""
    global _display
    if not _enabled or _display is not None or not sys.stderr.isatty():
        yield
        return
    from rich.console import Console
    from rich.live import Live

    display = _RunDisplay(clock, expected)
    display.console = Console(stderr=True)
    _display = display
    try:
        with Live(display, console=display.console, transient=True, refresh_per_second=4, redirect_stdout=False,
                  redirect_stderr=True):
            yield
    finally:
        _display = None
    display.console.print(display.summary(), markup=False, highlight=False, emoji=False)
