"""A family of registered components by name (model kinds, NB event models, data sources).

Each component is one module ending in a record with a ``name``; registering it is one line,
``FAMILY.add(module.RECORD)``. The registry keeps registration order (the order a config lists
the choices in) and gives the one-line error for an unknown name.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from mlnb.errors import MlnbError

T = TypeVar("T")


class Registry(dict, Generic[T]):
    """name -> component of one family, in the order registered."""

    def __init__(self, noun: str):
        super().__init__()
        self.noun = noun  # 'model kind', 'event model', 'source': for messages

    def add(self, component: T) -> T:
        if component.name in self:
            raise ValueError(f"{self.noun} {component.name!r} is registered twice")
        self[component.name] = component
        return component

    def named(self, name: str, where: str) -> T:
        """The component called ``name``, or one MlnbError line naming ``where`` and the choices."""
        if name not in self:
            raise MlnbError(f"{where}: unknown {self.noun} {name!r}; expected one of {', '.join(map(repr, self))}")
        return self[name]
