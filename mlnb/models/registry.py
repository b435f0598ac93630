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


def _no_check(options, task: str) -> None:
    return None


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
    tasks        : the study tasks it can do: "multilabel" (one-vs-rest log-odds per category) and/or
                   "multiclass" (one class per document: joint log-likelihood per class, softmax)
    check        : (options, task) -> raises MlnbError for a combination of options that cannot work
                   (called when the config is loaded, before any data is read)
    """

    name: str
    estimator: type
    options: type
    help: str
    describe: Callable[[Any], str]
    params: Callable[[Any], dict] = dataclasses.asdict
    uses: Callable[[Any], list] = _no_models
    fit_arguments: Callable[[Any, dict, Any], dict] = _no_arguments
    tasks: tuple = ("multilabel",)
    check: Callable[[Any, str], None] = _no_check  # (options, task) -> MlnbError for what no single option shows

    def build(self, options, seed: int = 0, task: str = "multilabel"):
        """An unfitted estimator with these options (and the study's seed and task where it takes them)."""
        if task not in self.tasks:
            raise MlnbError(f"model kind {self.name!r} does not do task = {task!r} (it does: "
                            f"{', '.join(self.tasks)})")
        params = self.params(options)
        accepted = inspect.signature(self.estimator).parameters
        if "random_state" in accepted:
            params["random_state"] = seed
        if "task" in accepted:
            params["task"] = task
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
