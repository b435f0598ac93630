"""Names of a package imported on first use (PEP 562), for ``__init__`` files that re-export."""

from __future__ import annotations

import importlib


def lazy_exports(package: str, exports: dict[str, str], namespace: dict):
    """(__getattr__, __dir__) for ``package``, whose names ``exports`` (name -> defining module) are
    imported when first looked up and then kept in ``namespace`` (the package's globals())."""

    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value  # the next lookup is an ordinary attribute
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
