r"""What a Naive Bayes event model is to the estimator: one record per module, registered by one line.

Every event model turns the same counts (``counts.NBCounts``) into weights W and a bias b, and a
document scores as one product Φ(X)·W + b. Its module declares, at its end, one ``EventModel``:

    name            the option's value, ``event_model = "..."``
    help            its words in the option's help line
    log_odds        (counts, Outside, prior (K,), Parameters) -> Weights: multilabel, each category's
                    log-odds against the documents outside it (F̄ = total − F, N̄)
    log_likelihood  (counts, log prior (K,), Parameters) -> Weights: multiclass, each class's joint
                    log-likelihood J_c (float64)
    non_negative    x ≥ 0 (counts, presence): a negative value is refused when fitting and when scoring
    presence        reads word presence [X > 0] whatever ``binarize`` says (Bernoulli)
    squares         needs the sums of squares F2, t2 (and its W has rows for squares: ``design``)
    column_stats    needs every column's min, max and integrality (lo, hi, integer)
    ranking         its scores rank documents but are neither log-odds nor joint log-likelihoods
    options         the estimator's options it reads beyond the smoothing (``OPTIONS``); binarize,
                    mode="tutorial", norm and column_models are refused where it does not read them
    design          (X, Weights, dtype) -> Φ(X) for a model whose W has rows other than X's columns
                    (Gaussian: [Z∘Z, Z]); None: Φ(X) = X
    check_counts    (counts, Parameters) -> raises MlnbError for counts its options contradict (mixed);
                    None: nothing to check

and ``estimator`` registers it with one line, ``register(module.EVENT_MODEL)``: the option's choices
(``EVENT_MODELS``) and help line come from the registry, and the estimator asks the record, never the name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np

from mlnb._registry import Registry

#: the event-model options an ``EventModel`` may read (``EventModel.options``)
OPTIONS = ("binarize", "mode", "norm", "reference", "var_smoothing", "column_models")


class Outside(NamedTuple):
    """Multilabel: what is outside each category, from the counts (see ``estimator``)."""

    total: np.ndarray  # (V,) F̄ = total − F: t (exact) or Σ_k F_k (mode="tutorial")
    clip: bool  # floor F̄ at 0 (float round-off of non-integer counts)
    N_bar: np.ndarray  # (K,) documents outside each category


class Parameters(NamedTuple):
    """The estimator's hyperparameters an event model may read."""

    alpha: float  # per-word pseudo-count: α, or m/V for the m-estimate
    norm: bool  # complement
    reference: str  # complement: "corpus" or "none"
    var_smoothing: float  # gaussian, mixed
    column_models: Any  # mixed: a list of 'COLUMNS=MODEL' overrides (as given: parsing checks it)


class Weights(NamedTuple):
    """What an event model's formula gives."""

    W: np.ndarray  # (rows of Φ(X), K)
    b: np.ndarray  # (K,)
    shift: np.ndarray | None = None  # (V,) Gaussian centring (gaussian, mixed)
    epsilon: float | None = None  # variance added to every variance (gaussian, mixed)
    column_models: np.ndarray | None = None  # (V,) str: each column's event model (mixed)


@dataclass(frozen=True)
class EventModel:
    """A registered Naive Bayes event model (the fields: module docstring)."""

    name: str
    help: str
    log_odds: Callable[[Any, Outside, np.ndarray, Parameters], Weights]
    log_likelihood: Callable[[Any, np.ndarray, Parameters], Weights]
    non_negative: bool = True
    presence: bool = False
    squares: bool = False
    column_stats: bool = False
    ranking: bool = False
    options: tuple = ()
    design: Callable[[Any, Weights, Any], Any] | None = None
    check_counts: Callable[[Any, Parameters], None] | None = None

    def __post_init__(self):
        unknown = set(self.options) - set(OPTIONS)
        if unknown:
            raise ValueError(f"event model {self.name!r}: unknown options {sorted(unknown)}; expected some of "
                             f"{OPTIONS}")
        if self.squares != (self.design is not None):
            raise ValueError(f"event model {self.name!r}: a model with sums of squares scores a design of its "
                             "own (design), and only such a model")

    def score_type(self, task: str) -> str:
        """What its scores are (``mlnb.models.registry.SCORE_TYPES``)."""
        if self.ranking:
            return "ranking"
        return "joint_log_likelihood" if task == "multiclass" else "log_odds"


#: every registered event model by name, in the order registered (the option's choices)
REGISTERED: Registry[EventModel] = Registry("event model")
register = REGISTERED.add


def reading(option: str) -> list[str]:
    """The registered event models that read ``option``, in order."""
    return [model.name for model in REGISTERED.values() if option in model.options]


def listed(names: list[str]) -> str:
    """'a, b and c'."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
