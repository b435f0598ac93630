"""Options as dataclass fields: a default, a one-line help and the values allowed.

Every configurable thing (a data source, a model kind, the evaluation) declares
its options once, as a dataclass whose fields are made with :func:`option`.
``mlnb.config`` validates TOML tables against these dataclasses, and a model
kind's estimator takes the same defaults from them, so a default lives in
exactly one place.
"""

from __future__ import annotations

from dataclasses import field


def option(default, help: str, choices: tuple | None = None, min: float | None = None,
           max: float | None = None, exclusive_min: bool = False, exclusive_max: bool = False):
    """A config field: its default, what it means, and what values are allowed
    (for a list, the bounds apply to each element)."""
    metadata = dict(help=help, choices=choices, min=min, max=max, exclusive_min=exclusive_min,
                    exclusive_max=exclusive_max)
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def section(cls):
    """A nested table of options (a sub-dataclass with its own defaults)."""
    return field(default_factory=cls)
