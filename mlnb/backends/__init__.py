"""Where a streaming study's work runs: this process, or a Dask cluster.

A backend (an ``Executor``) maps a function over partitions of the data and
reduces what comes back; it knows no model. The functions themselves
(``mlnb.study.tasks``) are the same either way, so a study gives the same
numbers on both (NB exactly; LR up to the parameter mixing that data-parallel
training needs, see ``study.tasks.lr_pass_partition``). The study asks a
backend what it can do (``Executor.sequential``), never its name.

    local : the partitions one after the other in this process (the numba kernels use
            every core inside each step)
    dask  : ``distributed.Client`` on a running scheduler (``engine.address``) or on a
            ``LocalCluster`` of ``engine.n_workers`` processes; workers read their own
            partitions, only models, counts and summaries travel
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from mlnb.backends.local import LocalBackend


class Executor(Protocol):
    """What the study loop asks of a backend: its capabilities, a map and a map-reduce."""

    #: True: the tasks run one after another in this process, so that they may share state in memory (an
    #: aggregator that spills to disk, one file written in order, the one-machine minibatch solver) and
    #: reading the data here costs nothing more than running the tasks; False: they run at once elsewhere
    #: (other processes or machines), so that only what they return comes back
    sequential: bool
    #: processes the tasks are spread over (1 when sequential)
    n_workers: int

    def map(self, function: Callable, partitions: Sequence, *args, description: str = "") -> list:
        """[function(p, *args) for p in partitions], in order."""

    def map_reduce(self, function: Callable, partitions: Sequence, *args, combine: Callable[[Any, Any], Any],
                   description: str = "") -> Any:
        """The partitions' results combined pairwise in ``tree_reduce``'s shape."""

    def describe(self) -> dict:
        """What the run's summary records of the backend."""

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc) -> None: ...


def open_backend(engine) -> Executor:
    """The backend ``engine`` (the config's ``[engine]`` table) names; use it as a context manager."""
    if engine.kind == "dask":
        from mlnb.backends.dask import DaskBackend  # dask is imported only when asked for

        return DaskBackend(address=engine.address, n_workers=engine.n_workers,
                           threads_per_worker=engine.threads_per_worker, timeout=engine.timeout,
                           retries=engine.retries)
    return LocalBackend()


__all__ = ["Executor", "LocalBackend", "open_backend"]
