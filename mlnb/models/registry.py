"""Model kinds: what a study may name in ``[models.<name>] kind = "..."``.

A kind ties together its options dataclass (defaults, help and allowed values
in one place), its estimator (whose constructor defaults are those same
values) and how the study wires it: the label it shows, the other models of
the study it starts from, and extra arguments of its ``fit``. Registering a
kind is one line in ``mlnb/models/__init__.py``.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any, Callable

from mlnb.errors import MlnbError


def _no_models(options) -> list[str]:
    return []


def _no_arguments(options, fitted: dict, eval_set) -> dict:
    return {}


@dataclass(frozen=True)
class ModelKind:
    """A registered model kind.

    name         : the config's ``kind``
    estimator    : the estimator class (scikit-learn conventions)
    options      : the options dataclass; every field made with ``mlnb.options.option``
    help         : one line shown by ``mlnb show-config``
    describe     : options -> the label of tables and legends
    params       : options -> estimator keyword arguments (default: the fields as they are)
    uses         : options -> names of other models of the study that must be fitted first
    fit_arguments: (options, fitted models by name, (X, Y) held out or None) -> extra ``fit`` keywords
    """

    name: str
    estimator: type
    options: type
    help: str
    describe: Callable[[Any], str]
    params: Callable[[Any], dict] = dataclasses.asdict
    uses: Callable[[Any], list] = _no_models
    fit_arguments: Callable[[Any, dict, Any], dict] = _no_arguments

    def build(self, options, seed: int = 0):
        """An unfitted estimator with these options (and the study's seed where it takes one)."""
        params = self.params(options)
        if "random_state" in inspect.signature(self.estimator).parameters:
            params["random_state"] = seed
        return self.estimator(**params)


KINDS: dict[str, ModelKind] = {}


def register(kind: ModelKind) -> ModelKind:
    if kind.name in KINDS:
        raise ValueError(f"model kind {kind.name!r} is registered twice")
    KINDS[kind.name] = kind
    return kind


def get_kind(name: str, where: str = "kind") -> ModelKind:
    if name not in KINDS:
        raise MlnbError(f"{where}: unknown model kind {name!r}; expected one of "
                        f"{', '.join(map(repr, KINDS))}")
    return KINDS[name]
