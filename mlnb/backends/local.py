"""The backend that runs every partition in this process, one after the other."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mlnb.backends.reduce import tree_reduce


class LocalBackend:
    """Map over partitions here; reduce pairwise in the shape the Dask backend uses."""

    #: the tasks run one after another in this process (``mlnb.backends.Executor.sequential``)
    sequential = True
    n_workers = 1

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def map(self, function: Callable, partitions: Sequence, *args, description: str = "") -> list:
        """[function(p, *args) for p in partitions]."""
        return [function(partition, *args) for partition in partitions]

    def map_reduce(self, function: Callable, partitions: Sequence, *args, combine: Callable[[Any, Any], Any],
                   description: str = "") -> Any:
        """The results of every partition, combined pairwise (``tree_reduce``)."""
        return tree_reduce((function(partition, *args) for partition in partitions), combine)

    def describe(self) -> dict:
        return {"kind": "local"}
