"""The ``mlnb`` command's process plumbing, apart from the commands (``mlnb.cli``): errors as one line,
signals as interrupts, warnings as one line, and the garbage collector after the imports.

A command wrapped in ``interruptible`` ends in one of three ways:

- done: its own exit (``typer.Exit``) passes through;
- an ``MlnbError`` or any other exception: one line ``error: ...`` (``describe_error`` words the ones
  that are not an ``MlnbError``) and exit code 2, the traceback first when ``--debug`` (``DEBUG``) asks;
- Ctrl-C or SIGTERM (``signals_as_interrupts`` raises ``Interrupted``, a ``KeyboardInterrupt``): one line
  ``interrupted`` and exit code 128 + the signal's number, or exit 0 and ``done: results in ...`` when the
  command's results folder was already in place (``mlnb.report.folder.completed``).
"""

from __future__ import annotations

import functools
import gc
import os
import signal
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import typer

from mlnb.errors import MlnbError, MlnbWarning

DEBUG = {"on": bool(os.environ.get("MLNB_DEBUG"))}  # --debug: tracebacks before the one-line errors
MAX_MESSAGE = 2000  # characters of an error line


def show_tracebacks(asked: bool) -> None:
    """``mlnb --debug``: print an error's traceback before its one line (``MLNB_DEBUG=1`` asks as well)."""
    DEBUG["on"] = DEBUG["on"] or asked


def one_line(text: str) -> str:
    """``text`` with its whitespace runs as single spaces, cut at ``MAX_MESSAGE`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + f"... ({len(text):,} characters)"


def print_traceback(error: BaseException) -> None:
    """``error``'s traceback on stderr, when ``--debug`` or ``MLNB_DEBUG`` asked for it."""
    if DEBUG["on"]:
        import traceback

        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)


def fail(error: MlnbError) -> None:
    """Bad input: one line ``error: ...`` and exit code 2."""
    print_traceback(error)
    typer.echo(f"error: {one_line(error)}", err=True)
    raise typer.Exit(code=2)


def describe_error(error: BaseException) -> str:
    """One line for an exception that is not an ``MlnbError``: what happened, in words where the type
    says it, else the type and its message."""
    if isinstance(error, RecursionError):
        return ("the input is nested too deeply to read (arrays, tables or objects nested hundreds of levels "
                "deep; Python's recursion limit)")
    if isinstance(error, MemoryError):
        return "out of memory (MemoryError); make the data, the models or eval.bootstrap smaller"
    if isinstance(error, OSError) and error.strerror:
        where = ": ".join(str(name) for name in (error.filename, error.filename2) if name is not None)
        return f"{where + ': ' if where else ''}{error.strerror}"
    message = str(error)
    return f"{type(error).__name__}{': ' + message if message else ''} (unexpected; `mlnb --debug ...` shows where)"


def one_line_error(error: BaseException) -> None:
    """The top-level handler: any exception that reaches a command's end, as one line and exit code 2."""
    if isinstance(error, MlnbError):
        fail(error)
    print_traceback(error)
    typer.echo(f"error: {one_line(describe_error(error))}", err=True)
    raise typer.Exit(code=2)


class Interrupted(KeyboardInterrupt):
    """A signal turned into an exception, so that SIGTERM unwinds (and cleans up) like Ctrl-C."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _send_again(signum: int) -> None:
    """Sends this process ``signum`` again, 10 ms later: once the main thread has left the place that dropped
    its exception, or the code the signal must not cut short (``signals_as_interrupts``)."""
    time.sleep(0.01)
    os.kill(os.getpid(), signum)


# Python code that must not be cut short by an exception: llvmlite's ctypes bindings free an LLVM object and then
# mark it freed (OutputString.close: LLVMPY_DisposeString, then ``self._ptr = None``; ObjectRef.detach; a module
# handed to LLVM by link_in, then detached). An exception raised between the two leaves an object that frees its
# memory again when it is finalised: glibc's "free(): double free detected" and SIGABRT (exit -6), as a SIGTERM
# while numba compiles can cause. llvmlite.ir (the IR builder, pure Python) is safe.
_NOT_TO_BE_CUT_SHORT = ("llvmlite.binding",)


def _inside_code_not_to_be_cut_short(frame) -> bool:
    """Whether ``frame`` (where the main thread stood when a signal was handled) or a frame that called it runs
    in a module of ``_NOT_TO_BE_CUT_SHORT``; a finalizer or a callback from C counts with its caller's frames."""
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith(_NOT_TO_BE_CUT_SHORT):
            return True
        frame = frame.f_back
    return False


@contextmanager
def signals_as_interrupts():
    """While a command runs, SIGINT and SIGTERM raise ``Interrupted``; once: a second signal during
    the clean-up (removing the staging folder) is ignored. The previous handlers come back after."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set them
        yield
        return
    watched = (signal.SIGINT, signal.SIGTERM)
    interrupted = []  # the signal numbers handled so far

    def handler(signum, frame):
        if _inside_code_not_to_be_cut_short(frame):
            # put off, not lost: sent again in 10 ms, handled at a later bytecode, until it lands outside
            threading.Thread(target=_send_again, args=(signum,), daemon=True).start()
            return
        for number in watched:
            signal.signal(number, signal.SIG_IGN)
        interrupted.append(signum)
        raise Interrupted(signum)

    def swallowed(report):
        # Python runs a signal's handler at the next bytecode, wherever it is; where that is a function called
        # from C (numba's compiler calls llvmlite's object-cache callback through ctypes while it compiles, a
        # __del__, a weakref callback), the Interrupted it raises is printed and dropped, and the run would go on
        # to the end with both signals ignored. Armed again and sent again from a helper thread, the signal is
        # handled at a later bytecode; it is sent as often as it is dropped, until it lands in ordinary code.
        if isinstance(report.exc_value, Interrupted) and threading.current_thread() is threading.main_thread():
            signal.signal(report.exc_value.signum, handler)
            threading.Thread(target=_send_again, args=(report.exc_value.signum,), daemon=True).start()
            return None
        if interrupted:
            # the aftermath of an Interrupted raised inside a finalizer: an object it cut short fails when it
            # is finalised again (llvmlite's ObjectRef.__del__ on the _as_parameter_ that the interrupted
            # close() had already deleted). The command ends with its one line anyway.
            return None
        return unraisable_before(report)  # (the handler runs, and raises, in the main thread only)

    previous = {number: signal.getsignal(number) for number in watched}
    unraisable_before = sys.unraisablehook
    sys.unraisablehook = swallowed
    for number in watched:
        signal.signal(number, handler)
    try:
        yield
    finally:
        if interrupted:  # finalise what the interrupt left behind now, while its failures stay quiet
            gc.collect()
        sys.unraisablehook = unraisable_before
        # blocked while they are given back: a signal between two of these calls would run ``handler``, which
        # leaves both ignored (and a process that ignores SIGINT passes that on to every child it starts); held
        # until the previous handlers are back, it goes to them
        signal.pthread_sigmask(signal.SIG_BLOCK, watched)
        try:
            for number, before in previous.items():
                signal.signal(number, signal.SIG_DFL if before is None else before)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)


@contextmanager
def one_line_warnings():
    """While a command runs, an ``MlnbWarning`` (input accepted, but the user should know) is one
    line ``warning: ...`` on stderr; other warnings are shown as Python shows them."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, MlnbWarning):
            typer.echo(f"warning: {' '.join(str(message).split())}", err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.simplefilter("always", MlnbWarning)  # every one, also when repeated in one process
        warnings.showwarning = show
        yield


def imports_done() -> None:
    """A command's imports are done: the ~350,000 objects they made (scikit-learn, scipy, numba, pandas)
    live as long as the process. The entry point (``mlnb_entry``) turns Python's cyclic garbage
    collector off until here, so that it does not traverse them again and again while they pile up
    (a large share of the imports' time; experiments/bench_quickstart.py); they are then frozen
    (``gc.freeze``): no later collection traverses them. Within a process that did not turn the
    collector off (tests calling the commands, a user's own program) this does nothing."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def interruptible(command):
    """A command that ends on Ctrl-C or SIGTERM with one line and exit 128 + the signal number."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from mlnb.report.folder import completed

        written_before = len(completed)
        try:
            with signals_as_interrupts(), one_line_warnings():
                return command(*args, **kwargs)
        except KeyboardInterrupt as stop:  # the staging folder is gone: atomic_folder removed it
            interrupted(stop, completed[written_before:])
        except (typer.Exit, typer.Abort):  # the command's own exit (click's Exit is a RuntimeError)
            raise
        except Exception as error:  # noqa: BLE001  (every other type: one line, exit 2)
            stop = interrupt_behind(error)
            if stop is not None:
                interrupted(stop, completed[written_before:])
            one_line_error(error)
    return wrapper


def interrupted(stop: KeyboardInterrupt, written: list[Path]):
    """Exit 128 + the signal's number after one line 'interrupted', nothing written; or, when the command's
    results folder was already in place (writing it is every command's last step), exit 0 after one line
    'done: results in ...' that says what the interrupt may have cut short."""
    if written:
        typer.echo(f"done: results in {written[-1]} (interrupted after they were complete: the summary lines, "
                   "index.html or MLflow tracking may be missing)", err=True)
        raise typer.Exit(code=0)
    typer.echo("interrupted", err=True)
    raise typer.Exit(code=128 + getattr(stop, "signum", signal.SIGINT)) from None


def interrupt_behind(error: BaseException) -> KeyboardInterrupt | None:
    """The interrupt that an error stands for: a signal that arrives inside a compiled (numba) call is
    raised there and comes back as ``SystemError: ... returned a result with an exception set``, the
    KeyboardInterrupt as its cause or context."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def run_command_line(app: typer.Typer) -> None:
    """Runs the command line ``app``; an interrupt or an exception outside a command (while typer parses
    its arguments) ends as one inside does: one line, exit 128 + the signal's number or exit 2."""
    try:
        app()
    except SystemExit:
        raise
    except KeyboardInterrupt as stop:
        typer.echo("interrupted", err=True)
        sys.exit(128 + getattr(stop, "signum", signal.SIGINT))
    except Exception as error:  # noqa: BLE001  (outside a command: the same one line)
        print_traceback(error)
        typer.echo(f"error: {one_line(describe_error(error))}", err=True)
        sys.exit(2)
