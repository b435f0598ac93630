"""A study's figures drawn in other processes on a machine with many cores, each figure on one.

Drawing is Python that holds Python's lock (matplotlib's layout, ticks and text), so threads cannot
share it out, and each figure takes about as long whatever the data's size (measured by
``experiments/bench_serial.py --study``). On a machine with ``PROCESSES_FROM_THREADS`` threads or more (numba's count: every core
unless NUMBA_NUM_THREADS says otherwise), ``draw`` hands each figure to a worker process instead, and
the figures are drawn side by side.

The workers are forked from multiprocessing's fork server, which ``start_early`` starts when a study
begins: a new interpreter that imports the plotting modules (about a second, on a core the study
leaves) and forks each worker from itself, single-threaded, so that no worker inherits the study's
thread pools. Each task pickles ``for_drawing(result)``: the result without its scores, decisions
and models (the plots read the evaluations, comparisons and a few flags). The figures are the same
bytes as those drawn here (``tests/report/test_drawing.py``).

Where no process can be started (no fork server on the platform, no semaphores, a worker killed),
the figures are drawn in this process, one after the other, as on fewer threads. An error inside a
figure is raised here as it would be in this process.
"""

from __future__ import annotations

import copy
import dataclasses
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from types import SimpleNamespace

from mlnb._kernels.jit import worker_threads

#: numba's thread count from which the figures are drawn in worker processes; below it, in this process
#: (on two cores the fork server's imports would take a core from the study for about a second)
PROCESSES_FROM_THREADS = 4
#: what each worker imports before it is forked: every plotting function of a study
PRELOAD = ["mlnb.report.plots"]


def worker_processes(figures: int) -> int:
    """How many processes draw ``figures`` figures: one per figure, at most one per thread; 0 (this
    process) below ``PROCESSES_FROM_THREADS`` threads or for one figure."""
    threads = worker_threads()
    if threads < PROCESSES_FROM_THREADS or figures < 2:
        return 0
    return min(figures, threads)


def _context():
    """multiprocessing's fork-server context with ``PRELOAD``, or None where the platform has none."""
    try:
        context = multiprocessing.get_context("forkserver")
    except ValueError:  # Windows: no fork server
        return None
    context.set_forkserver_preload(PRELOAD)
    return context


def start_early() -> bool:
    """Start the fork server now, so that its imports are done when the figures are drawn; True if it
    runs. Nothing below ``PROCESSES_FROM_THREADS`` threads."""
    if worker_processes(2) == 0:
        return False
    context = _context()
    if context is None:
        return False
    try:
        from multiprocessing import forkserver

        forkserver.ensure_running()
    except OSError:  # no process could be started: the figures are drawn here
        return False
    return True


def for_drawing(result):
    """A shallow copy of a study result holding what its plots read and nothing large: the runs keep
    their evaluations, calibrations and names, and of their models the flags that say what the
    scores mean; the scores, decisions, labels and fitted models are left out."""
    runs = []
    for run in result.models:
        flags = SimpleNamespace(**{name: getattr(run.model, name) for name in
                                   ("scores_are_log_odds", "scores_are_joint_log_likelihoods")
                                   if hasattr(run.model, name)})
        slim = copy.copy(run)  # a cached rank_scores, if computed, would be pickled: it is dropped
        slim.__dict__.pop("rank_scores", None)
        slim.model, slim.scores, slim.decisions, slim.spill, slim.decision = flags, None, None, None, None
        # what the plots ask of the calibrated scores is whether there are any
        slim.probability_scores = None if run.probability_scores is None else ()
        runs.append(slim)
    return dataclasses.replace(result, models=runs, Y_test=None)


def draw(figures: list) -> list:
    """[function(*arguments) for (function, arguments) in figures]: in worker processes when
    ``worker_processes`` gives some (the functions module-level, the arguments picklable), else here."""
    processes = worker_processes(len(figures))
    context = _context() if processes else None
    if context is None:
        return [function(*arguments) for function, arguments in figures]
    try:
        pool = ProcessPoolExecutor(max_workers=processes, mp_context=context)
    except OSError:  # no semaphores or processes here: this process draws them
        return [function(*arguments) for function, arguments in figures]
    try:
        try:
            futures = [pool.submit(function, *arguments) for function, arguments in figures]
        except (OSError, BrokenProcessPool):  # no worker could be started: this process draws them
            return [function(*arguments) for function, arguments in figures]
        try:
            return [future.result() for future in futures]  # a figure's own error is raised here
        except BrokenProcessPool:  # a worker died (killed, out of memory): the figures are drawn here
            return [function(*arguments) for function, arguments in figures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
