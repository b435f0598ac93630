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
    sparse          its weights as a default plus corrections at the (word, category) pairs that occur
                    (``SparseForm``, read by ``sparse.SparseNaiveBayes``); None where the counters of
                    those pairs cannot give them (gaussian, mixed: they need sums of squares of signed
                    values, not counters)

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


class SparseQuantities(NamedTuple):
    """What the sparse counters give every sparse form (float64; ``sparse`` holds the decomposition)."""

    V: int  # words
    prior: np.ndarray  # (K,) prior log-odds, log N − log N̄ (smoothed where a category is untrainable)
    N: np.ndarray  # (K,) documents in each category
    N_bar: np.ndarray  # (K,) documents outside it: n − N, or Σ_j N_j − N (mode="tutorial")
    S: np.ndarray  # (K,) Σ_w F_kw
    S_bar: np.ndarray  # (K,) Σ_w τ_w − S
    t: np.ndarray  # (V,) corpus totals of every word
    totals: np.ndarray  # (V,) τ, what F̄ = τ − F is the rest of: t, or Σ_k F_k (mode="tutorial")
    log_totals: np.ndarray  # (V,) log(τ + α)
    pair_sums: Callable[[dict], np.ndarray]  # (per-category arrays beyond N, N̄) -> (K,) Σ over each category's
    #                                          pairs of pair_terms(..., "sum")
    grouped_sum: np.ndarray | None  # (K,) Σ_w G(τ_w, k) over all V words, for a form with ``grouped``


class SparseDefault(NamedTuple):
    """A sparse form's default: D_wk = Σ_j U_j[w]·H_j[k] (+ G(τ_w, k)), and the bias b."""

    U: list  # J arrays (V,): the per-word vectors
    H: list  # J arrays (K,): the per-category vectors
    bias: np.ndarray  # (K,) b, the score of an empty document
    per_category: dict  # (K,) arrays pair_terms reads besides N and N̄ (e.g. complement norm's Z)


@dataclass(frozen=True)
class SparseForm:
    """An event model's weights as W = D + Δ: a default D for the pairs with F = 0, a sum of J products of a
    per-word and a per-category vector (+ G(τ_w, k), not separable), and Δ at the pairs that occur.

    default     (SparseQuantities, Parameters) -> SparseDefault
    pair_terms  (τ (P,), F (P,), categories (P,), per-category arrays (dict of (K,)), Parameters, what)
                -> (P,) float64 at P pairs: Δ (what="delta"), or the pair's share of a per-category sum
                over words that the default reads through ``SparseQuantities.pair_sums`` (what="sum")
    grouped     (distinct totals (T,), per-category arrays, α) -> G (T, K), the default's part that ties a
                word's total to a category (Bernoulli); summed per document by grouping its words by
                total. None: the default is separable
    """

    default: Callable[[SparseQuantities, Parameters], SparseDefault]
    pair_terms: Callable[..., np.ndarray]
    grouped: Callable[[np.ndarray, dict, float], np.ndarray] | None = None


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
    sparse: SparseForm | None = None

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
