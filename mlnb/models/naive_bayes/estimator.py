r"""The NaiveBayes estimator: counts in, log-odds out, shared by every event model.

Each category k is its own binary problem "k vs not k". Everything a category
needs comes from the counts of one pass over the data (``counts.NBCounts``):

    F = Yᵀ·X   (K × V)     t = 1ᵀ·X   (V,)     N = 1ᵀ·Y   (K,)     n documents

and what is outside each category follows from them:

    F̄ = t − F              (K × V)  sums outside each category
    N̄ = n − N              (K,)     documents outside
    prior_k = log N_k − log N̄_k

(F̄ = t − F counts every document once, however many labels it has; the RCV1
tutorial's ``sum(F) − F`` counts a document once per other label it carries.)
``mode="tutorial"`` reproduces the BIDMach RCV1 Naive Bayes tutorial exactly:
F̄ = Σ_j F_j − F_k, N̄ = Σ_j N_j − N_k, and prior odds from summed category
probabilities, b_k = log(π_k / (Σ_j π_j − π_k)) with π_k = N_k / n. Both
approximations over-count multi-label documents.

A category without a positive (or a negative) training document has nothing
to learn from: W_k = 0 and b_k = log((N_k + ½)/(N̄_k + ½)), so it scores by its
smoothed prior alone and its scores stay finite, for every event model.

The event-model modules turn these into W and b, each by its own formula;
every model then scores as one product, Φ(X)·W + b, where Φ(X) is X (or its
presence [X > 0]) for the count models and [X∘X, X] for the Gaussian ones
(the squares of the Gaussian columns only, for mixed).

``fit`` counts one chunk; ``partial_fit`` adds the counts of another. W and b
are built from the counts once, when first used, not after every chunk.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from mlnb.errors import MlnbError
from mlnb.models._linear import LinearMultilabelModel, as_csr_float32, as_label_matrix
from mlnb.models.naive_bayes import bernoulli, complement, gaussian, mixed, multinomial
from mlnb.models.naive_bayes.counts import NBCounts
from mlnb.models.registry import ModelKind
from mlnb.options import option

EVENT_MODELS = ("multinomial", "bernoulli", "complement", "gaussian", "mixed")
SMOOTHINGS = ("additive", "m_estimate")
MODES = ("exact", "tutorial")
_COUNT_MODELS = ("multinomial", "bernoulli", "complement")  # non-negative X, smoothing, binarize, tutorial
_REAL_MODELS = ("gaussian", "mixed")  # need sums of squares


@dataclass
class NaiveBayesOptions:
    event_model: str = option("multinomial", "multinomial (word counts), bernoulli (word presence), complement "
                              "(Rennie et al. 2003; a ranking score, not a log-odds), gaussian (real values), "
                              "mixed (bernoulli, multinomial or gaussian per column)", choices=EVENT_MODELS)
    smoothing: str = option("additive", "additive alpha per word, or m-estimate m/|V| per word",
                            choices=SMOOTHINGS)
    alpha: float = option(0.5, "additive pseudo-count per word", min=0, exclusive_min=True)
    m: float = option(1.0, "m-estimate total pseudo-count", min=0, exclusive_min=True)
    binarize: bool = option(False, "count word presence instead of counts (the RCV1 tutorial does); always "
                            "on for bernoulli, not for gaussian or mixed")
    mode: str = option("exact", "exact complement counts and priors, or the RCV1 tutorial's approximations "
                       "(multinomial, bernoulli, complement)", choices=MODES)
    norm: bool = option(False, "complement: normalise each category's weights (Rennie et al.'s WCNB)")
    reference: str = option("corpus", "complement: subtract the weights of all training documents, a shift the "
                            "same for every category of a document that makes scores comparable across "
                            "documents (per-category AUC); 'none' = scikit-learn's ComplementNB weights",
                            choices=("corpus", "none"))
    var_smoothing: float = option(1e-9, "gaussian, mixed: share of the largest feature variance added to "
                                  "every variance (as scikit-learn's GaussianNB)", min=0)
    column_models: list[str] = option([], "mixed: 'COLUMNS=MODEL' overrides of the detected event model, "
                                      "e.g. '0-29=gaussian', '30=bernoulli' (0-based, ranges inclusive)")


_DEFAULTS = NaiveBayesOptions()
_SCALAR_OPTIONS = tuple(field.name for field in dataclasses.fields(NaiveBayesOptions) if field.name != "column_models")


class _LogOdds(NamedTuple):
    """What the counts give, built once per (counts, hyperparameters)."""

    counts: NBCounts
    params: tuple  # the hyperparameters they were built with
    weights: np.ndarray  # (rows of Φ(X), K) float32
    bias: np.ndarray  # (K,) float32
    untrainable: np.ndarray  # (≤ K,) int
    column_models: np.ndarray | None  # (V,) str, mixed only
    shift: np.ndarray | None  # (V,) Gaussian centring, gaussian and mixed only
    epsilon: float | None


class NaiveBayes(LinearMultilabelModel, BaseEstimator):
    """One-vs-rest Naive Bayes for every category, fitted by one count product.

    Parameters
    ----------
    event_model : {"multinomial", "bernoulli", "complement", "gaussian", "mixed"}
        Word counts, word presence (X binarised), complement counts (a ranking
        score), normal features, or one of the first, second and fourth per column.
    smoothing : {"additive", "m_estimate"}
        Additive pseudo-count ``alpha`` per word, or the m-estimate: a total
        pseudo-count ``m`` spread as m/V per word.
    alpha : float > 0
        Pseudo-count per word for additive smoothing.
    m : float > 0
        Total pseudo-count for the m-estimate.
    binarize : bool
        Count word presence (1) instead of word counts, as the RCV1 tutorial
        does. Always on for the Bernoulli model; not for gaussian and mixed.
    mode : {"exact", "tutorial"}
        Exact complement counts and priors, or the tutorial's approximations.
    norm : bool
        Complement only: normalise each category's weights.
    reference : {"corpus", "none"}
        Complement only: subtract the all-documents weights (default; scores comparable
        across documents, multiclass decisions unchanged) or not (scikit-learn's weights).
    var_smoothing : float ≥ 0
        Gaussian and mixed: ε = var_smoothing · the largest feature variance is
        added to every variance.
    column_models : list of str
        Mixed only: 'COLUMNS=MODEL' overrides of the detected column models.

    Attributes
    ----------
    counts_ : NBCounts
        Everything counted so far; the other attributes derive from it.
    feature_count_ : ndarray (K, V), float64
        F = Yᵀ·X, the per-category word (or document) counts.
    feature_total_ : ndarray (V,), float64
        t = column sums of X over all training documents.
    class_count_ : ndarray (K,), float64
        N, positive training documents per category.
    n_documents_ : int
        n, training documents seen.
    weights_ : ndarray (V, K), float32 — (2V, K) for gaussian, (G + V, K) for mixed
        W, the log-odds contribution of each row of Φ(X).
    bias_ : ndarray (K,), float32
        b, per-category log-odds of an empty (all-zero) document.
    untrainable_categories_ : ndarray of int
        Categories with no positive (or no negative) training documents. They
        score by their prior alone, W[:, k] = 0 and b_k = log((N + ½)/(N̄ + ½)),
        so that scores stay finite.
    column_event_models_ : ndarray (V,) of str
        Mixed only: the event model of each column.
    epsilon_ : float
        Gaussian and mixed: the variance added to every variance.

    W and b are built from ``counts_`` and the hyperparameters when first used
    after the counts (or the hyperparameters) changed: ``partial_fit`` on many
    chunks builds them once, and ``set_params(alpha=...)`` re-smooths without
    recounting.
    """

    def __init__(self, event_model=_DEFAULTS.event_model, smoothing=_DEFAULTS.smoothing, alpha=_DEFAULTS.alpha,
                 m=_DEFAULTS.m, binarize=_DEFAULTS.binarize, mode=_DEFAULTS.mode, norm=_DEFAULTS.norm,
                 reference=_DEFAULTS.reference, var_smoothing=_DEFAULTS.var_smoothing, column_models=()):
        self.event_model = event_model
        self.smoothing = smoothing
        self.alpha = alpha
        self.m = m
        self.binarize = binarize
        self.mode = mode
        self.norm = norm
        self.reference = reference
        self.var_smoothing = var_smoothing
        self.column_models = column_models

    # -- fitting: counts only --------------------------------------------------------------
    def fit(self, X, Y):
        """Fit on X (n × V) and Y (n × K, 0/1, sparse or dense): the counts of one chunk."""
        self.__dict__.pop("counts_", None)
        self.partial_fit(X, Y)
        self._warn_untrainable(self.counts_)  # the counts are complete: say so now, not at first use
        return self

    def partial_fit(self, X, Y):
        """Add the counts of one more chunk of documents; ``fit`` is one chunk."""
        self._check_params()
        X = as_csr_float32(X)
        Y = as_label_matrix(Y, X.shape[0])
        if self.event_model in _COUNT_MODELS and X.nnz and X.data.min() < 0:
            raise MlnbError(f"Naive Bayes needs non-negative feature values (counts, presence or "
                            f"TF-IDF); X has a value of {X.data.min():g}")
        fitted = hasattr(self, "counts_")
        if fitted and (X.shape[1], Y.shape[1]) != (self.n_features_in_, self.counts_.shape[0]):
            raise MlnbError(f"partial_fit got X {X.shape} / Y {Y.shape}, but earlier chunks had "
                            f"{self.n_features_in_} features and {self.counts_.shape[0]} categories")
        if self.event_model == "mixed":
            mixed.parse_column_models(self.column_models, X.shape[1])
        chunk = NBCounts.from_chunk(X, Y, **self._counts_needed())
        self.counts_ = self.counts_ + chunk if fitted else chunk
        self.n_features_in_ = X.shape[1]
        if self.event_model == "mixed":  # an override the data contradict fails at this chunk
            mixed.column_event_models(self.counts_, self.column_models)
        return self

    def _check_params(self) -> None:
        if self.event_model not in EVENT_MODELS:
            raise MlnbError(f"event_model must be one of {EVENT_MODELS}, got {self.event_model!r}")
        if self.smoothing not in SMOOTHINGS:
            raise MlnbError(f"smoothing must be one of {SMOOTHINGS}, got {self.smoothing!r}")
        if self.mode not in MODES:
            raise MlnbError(f"mode must be one of {MODES}, got {self.mode!r}")
        if not self.alpha > 0:
            raise MlnbError(f"alpha must be > 0, got {self.alpha}")
        if not self.m > 0:
            raise MlnbError(f"m must be > 0, got {self.m}")
        if not self.var_smoothing >= 0:
            raise MlnbError(f"var_smoothing must be >= 0, got {self.var_smoothing}")
        if self.binarize and self.event_model in _REAL_MODELS:
            raise MlnbError(f"binarize applies to multinomial, bernoulli and complement, not to "
                            f"event_model={self.event_model!r}")
        if self.mode == "tutorial" and self.event_model not in _COUNT_MODELS:
            raise MlnbError(f"mode='tutorial' exists for multinomial, bernoulli and complement only, not "
                            f"event_model={self.event_model!r}")
        if self.norm and self.event_model != "complement":
            raise MlnbError(f"norm applies to event_model='complement' only, not {self.event_model!r}")
        if self.reference not in ("corpus", "none"):
            raise MlnbError(f"reference must be 'corpus' or 'none', got {self.reference!r}")
        if len(self.column_models) and self.event_model != "mixed":
            raise MlnbError(f"column_models applies to event_model='mixed' only, not {self.event_model!r} "
                            f"(got {list(self.column_models)})")

    @property
    def scores_are_log_odds(self) -> bool:
        """False for complement NB: its scores rank, but σ(score) is no probability."""
        return self.event_model != "complement"

    @property
    def _scores_presence(self) -> bool:
        return bool(self.binarize or self.event_model == "bernoulli")

    def _counts_needed(self) -> dict:
        """What NBCounts must hold for this event model."""
        return dict(presence=self._scores_presence, squares=self.event_model in _REAL_MODELS,
                    column_stats=self.event_model == "mixed")

    # -- the counts, as the attributes they always were ----------------------------------------
    feature_count_ = property(lambda self: self.counts_.F, doc="F = Yᵀ·X (K, V)")
    feature_total_ = property(lambda self: self.counts_.t, doc="t = 1ᵀ·X (V,)")
    class_count_ = property(lambda self: self.counts_.N, doc="N = 1ᵀ·Y (K,)")
    n_documents_ = property(lambda self: self.counts_.n, doc="n, documents counted")

    @property
    def effective_alpha_(self) -> float:
        """The per-word pseudo-count actually used: α, or m / V for the m-estimate."""
        if self.smoothing == "m_estimate":
            return self.m / self.n_features_in_
        return self.alpha

    # -- counts -> log-odds, lazily ------------------------------------------------------------
    weights_ = property(lambda self: self._log_odds().weights, doc="W (rows of Φ(X), K) float32")
    bias_ = property(lambda self: self._log_odds().bias, doc="b (K,) float32")
    untrainable_categories_ = property(lambda self: self._log_odds().untrainable)
    epsilon_ = property(lambda self: self._fitted_attribute("epsilon"))

    @property
    def column_event_models_(self) -> np.ndarray:
        return self._fitted_attribute("column_models", only="mixed")

    def _fitted_attribute(self, name: str, only: str | None = None):
        value = getattr(self._log_odds(), name)
        if value is None or (only and self.event_model != only):
            raise AttributeError(f"{name} belongs to event_model={only or 'gaussian or mixed'}")
        return value

    def _log_odds(self) -> _LogOdds:
        """W, b and the rest, rebuilt only when the counts or hyperparameters changed since."""
        counts = self.counts_  # not fitted: AttributeError, so hasattr(model, "weights_") is False
        # asked on every scoring call: the values themselves, as get_params takes 80 µs; a copy of the list
        params = tuple(getattr(self, name) for name in _SCALAR_OPTIONS) + (tuple(self.column_models),)
        built = self.__dict__.get("_built")
        if built is None or built.counts is not counts or built.params != params:
            self._built = built = self._update_log_odds(counts, params)
        return built

    def _update_log_odds(self, counts: NBCounts, params: tuple) -> _LogOdds:
        """Rebuild W and b from the counts (so partial_fit equals fit)."""
        self._check_params()
        needed = self._counts_needed()
        held = dict(presence=counts.presence, squares=counts.F2 is not None, column_stats=counts.lo is not None)
        if held != needed:  # e.g. sums of signed values (gaussian) read as counts (multinomial)
            raise MlnbError(f"the counts were made for other parameters than event_model={self.event_model!r}, "
                            f"binarize={self.binarize}: fit again")
        F_bar, N_bar = self._complement_counts(counts)
        prior, trainable = self._prior_log_odds(counts, N_bar)
        alpha, model = self.effective_alpha_, self.event_model
        column_models = shift = eps = None
        if model == "multinomial":
            W, b = multinomial.log_odds(counts.F, F_bar, prior, alpha)
        elif model == "bernoulli":
            W, b = bernoulli.log_odds(counts.F, F_bar, counts.N, N_bar, prior, alpha)
        elif model == "complement":
            W, b = complement.log_odds(F_bar, alpha, self.norm, counts.t if self.reference == "corpus" else None)
        elif model == "gaussian":
            eps = gaussian.epsilon(counts.t, counts.t2, counts.n, self.var_smoothing)
            shift = gaussian.shift(counts.t, counts.t2, counts.n)
            W, b = gaussian.log_odds(counts.F, counts.F2, counts.N, F_bar, counts.t2 - counts.F2, N_bar, prior,
                                     eps, shift)
        else:
            column_models = mixed.column_event_models(counts, self.column_models)
            W, b, shift, eps = mixed.log_odds(counts, column_models, F_bar, counts.t2 - counts.F2, N_bar, prior,
                                              alpha, self.var_smoothing)
        # without both classes in training there is nothing to learn about words:
        # score such categories by their prior alone (as the LR models do)
        untrainable = np.flatnonzero(~trainable)
        W[untrainable] = 0.0
        b[untrainable] = prior[untrainable]
        self._warn_untrainable(counts)
        return _LogOdds(counts, params, weights=np.ascontiguousarray(W.T, dtype=np.float32),  # (rows, K)
                        bias=b.astype(np.float32), untrainable=untrainable, column_models=column_models,
                        shift=shift, epsilon=eps)

    def _complement_counts(self, counts: NBCounts) -> tuple[np.ndarray, np.ndarray]:
        """(F̄, N̄): counts outside each category, exact or as the tutorial has them."""
        F, N = counts.F, counts.N
        if self.mode == "tutorial":
            return F.sum(axis=0) - F, N.sum() - N
        if self.event_model in _REAL_MODELS:
            return counts.t - F, counts.n - N  # sums of real values may be negative
        # max(·, 0) only removes float round-off when X holds non-integer values
        return np.maximum(counts.t - F, 0.0), counts.n - N

    def _trainable(self, counts: NBCounts) -> np.ndarray:
        """(K,) bool: categories with a positive and a negative training document."""
        N = counts.N
        N_bar = N.sum() - N if self.mode == "tutorial" else counts.n - N
        return (N > 0) & (N_bar > 0)

    def _prior_log_odds(self, counts: NBCounts, N_bar: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(prior log-odds b_k before any word terms, trainable) (K,) each."""
        N = counts.N
        trainable = self._trainable(counts)
        with np.errstate(divide="ignore"):
            exact = np.log(N) - np.log(N_bar)
        smoothed = np.log(N + 0.5) - np.log(N_bar + 0.5)
        return np.where(trainable, exact, smoothed), trainable

    def _warn_untrainable(self, counts: NBCounts) -> None:
        """Warn once per counts about categories that score by their prior alone."""
        if self.__dict__.get("_warned_for") is counts:
            return
        self._warned_for = counts
        untrainable = int((~self._trainable(counts)).sum())
        if untrainable:
            warnings.warn(f"{untrainable} categories have no positive or no negative training documents; "
                          "they score by their prior alone", stacklevel=3)

    # -- scoring -----------------------------------------------------------------------------
    def _scoring_matrix(self, X: sp.csr_matrix) -> sp.csr_matrix:
        """Φ(X): X for the count models, [Z∘Z, Z] for the Gaussian ones (see ``gaussian``)."""
        built = self._log_odds()
        if self.event_model == "gaussian":
            return gaussian.design(X, built.shift)
        if self.event_model == "mixed":
            return mixed.design(X, built.column_models, built.shift)
        return X


def _describe(options: NaiveBayesOptions) -> str:
    details = [options.event_model]
    if options.binarize and options.event_model in ("multinomial", "complement"):
        details.append("binarized")
    if options.norm and options.event_model == "complement":
        details.append("normalised")
    if options.reference == "none" and options.event_model == "complement":
        details.append("uncentred")
    if options.column_models and options.event_model == "mixed":
        details.append(", ".join(options.column_models))
    return f"Naive Bayes ({', '.join(details)})"


KIND = ModelKind(
    name="naive_bayes", estimator=NaiveBayes, options=NaiveBayesOptions,
    help="Naive Bayes for all categories from one count product Yᵀ·X; every event model scores as Φ(X)·W + b",
    describe=_describe,
    params=lambda o: {**dataclasses.asdict(o), "column_models": tuple(o.column_models)})
