"""Progress display for long steps (data generation, per-category fitting).

Quiet by default so that the Python API prints nothing; the CLI turns it on.
Uses rich (a dependency of typer) and writes to stderr so stdout stays clean.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

_enabled = False


def enable(on: bool = True) -> None:
    """Turn progress bars on or off for the whole process."""
    global _enabled
    _enabled = on


def is_enabled() -> bool:
    return _enabled


def log(line: str) -> None:
    """Print a one-line progress report to stderr when enabled."""
    if _enabled:
        import sys

        print(line, file=sys.stderr, flush=True)


def track(iterable: Iterable[T], total: int | None = None, description: str = "") -> Iterator[T]:
    """Yield from ``iterable``, showing a progress bar when enabled."""
    if not _enabled:
        yield from iterable
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
    from rich.console import Console

    with Console(stderr=True).status(message):
        yield
