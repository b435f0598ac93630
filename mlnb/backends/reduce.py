"""One pairwise reduction order shared by every backend."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def tree_reduce(values: Iterable, combine: Callable[[Any, Any], Any]) -> Any:
    """Combine values pairwise as a binary counter does: v0⊕v1, v2⊕v3, (v0⊕v1)⊕(v2⊕v3), ...; what
    is left at the end is combined from the most recent down, left operands always earlier.

    Consumed lazily, it holds at most log2(n) partial results (the NB counts of a partition are
    K × V float64: 39 MB at RCV1 size). The Dask backend builds the same tree of futures, so sums
    come out bit-identical on one machine and on a cluster: the shape, not the scheduling, fixes
    the order of every floating-point addition.
    """
    stack: list[tuple[int, Any]] = []  # (level, value), levels strictly decreasing upwards
    for value in values:
        level = 0
        while stack and stack[-1][0] == level:
            value = combine(stack.pop()[1], value)
            level += 1
        stack.append((level, value))
    if not stack:
        raise ValueError("nothing to reduce: no partitions")
    result = stack.pop()[1]
    while stack:
        result = combine(stack.pop()[1], result)
    return result
