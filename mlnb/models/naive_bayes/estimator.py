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
(the squares of the Gaussian columns only, for mixed). Each module declares
what the estimator needs to know of it in one record (``event_model.EventModel``:
its formulas, the counts and input it needs, the options it reads), registered
below with one line; the estimator asks that record, never the model's name.

``fit`` counts one chunk; ``partial_fit`` adds the counts of another. W and b
are built from the counts once, when first used, not after every chunk.

``task="multiclass"``: one class per document (Y one-hot or class labels). The
same counts, read per class, give each class's joint log-likelihood
J = Φ(X)·W + b, W and b per-class log-probabilities rather than log-odds, and
softmax(J) the posterior (see ``multiclass``).
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from mlnb.data.validate import check_labels
from mlnb.errors import MlnbError
from mlnb.models._linear import LinearMultilabelModel, as_csr_float32
from mlnb.models.naive_bayes import array, bernoulli, complement, gaussian, mixed, multiclass, multinomial, poisson
from mlnb.models.naive_bayes.counts import NBCounts
from mlnb.models.naive_bayes.event_model import REGISTERED, EventModel, Outside, Parameters, listed, reading, register
from mlnb.models.registry import CountRequest, ModelKind
from mlnb.options import option

# every event model, one line each (see ``event_model``)
register(multinomial.EVENT_MODEL)
register(bernoulli.EVENT_MODEL)
register(complement.EVENT_MODEL)
register(gaussian.EVENT_MODEL)
register(mixed.EVENT_MODEL)
register(poisson.EVENT_MODEL)

EVENT_MODELS = tuple(REGISTERED)
SMOOTHINGS = ("additive", "m_estimate")
MODES = ("exact", "tutorial")
TASKS = ("multilabel", "multiclass")


@dataclass
class NaiveBayesOptions:
    event_model: str = option("multinomial", ", ".join(f"{model.name} ({model.help})" for model in REGISTERED.values()),
                              choices=EVENT_MODELS)
    smoothing: str = option("additive", "additive alpha per word, or m-estimate m/|V| per word",
                            choices=SMOOTHINGS)
    alpha: float = option(0.5, "additive pseudo-count per word", min=0, exclusive_min=True)
    m: float = option(1.0, "m-estimate total pseudo-count", min=0, exclusive_min=True)
    binarize: bool = option(False, "count word presence instead of counts (the RCV1 tutorial does), for "
                            f"{listed(reading('binarize'))}; always on for bernoulli")
    mode: str = option("exact", "exact complement counts and priors, or the RCV1 tutorial's approximations "
                       f"({', '.join(reading('mode'))})", choices=MODES)
    norm: bool = option(False, "complement: normalise each category's weights (Rennie et al.'s WCNB)")
    reference: str = option("corpus", "complement: subtract the weights of all training documents, a shift the "
                            "same for every category of a document that makes scores comparable across "
                            "documents (per-category AUC); 'none' = scikit-learn's ComplementNB weights",
                            choices=("corpus", "none"))
    var_smoothing: float = option(1e-9, "gaussian, mixed: share of the largest feature variance added to "
                                  "every variance (as scikit-learn's GaussianNB)", min=0)
    column_models: list[str] = option([], "mixed: 'COLUMNS=MODEL' overrides of the detected event model, "
                                      "e.g. '0-29=gaussian', '30=bernoulli' (0-based, ranges inclusive)")
    class_prior: str = option("mle", "multiclass only: class priors N_c/n (mle), (N_c + m/K)/(n + m) "
                              "(m_estimate, m = prior_m), 1/K (uniform) or class_prior_values (given)",
                              choices=multiclass.CLASS_PRIORS)
    prior_m: float = option(1.0, "multiclass only: the m of class_prior = 'm_estimate'", min=0,
                            exclusive_min=True)
    class_prior_values: list[float] = option([], "multiclass only: the priors of class_prior = 'given', one "
                                             "per class, summing to 1", min=0, exclusive_min=True)


_DEFAULTS = NaiveBayesOptions()
_LIST_OPTIONS = ("column_models", "class_prior_values")
_SCALAR_OPTIONS = tuple(field.name for field in dataclasses.fields(NaiveBayesOptions)
                        if field.name not in _LIST_OPTIONS)
_MULTICLASS_OPTIONS = ("class_prior", "prior_m", "class_prior_values")


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
    weights64: np.ndarray | None  # (rows of Φ(X), K) float64: multiclass (exact log posteriors), Gaussian designs
    bias64: np.ndarray | None  # (K,) float64, as weights64


class NaiveBayes(LinearMultilabelModel, BaseEstimator):
    """Naive Bayes for every category (one-vs-rest) or every class (multiclass), from one count product.

    Parameters
    ----------
    task : {"multilabel", "multiclass"}
        Any number of categories per document, each scored by its log-odds; or
        exactly one class per document, each class scored by its joint
        log-likelihood J (``predict_proba`` = softmax(J), ``predict`` = argmax).
    event_model : str, one of ``EVENT_MODELS``
        Word counts (multinomial), word presence (bernoulli: X binarised), complement
        counts (complement: a ranking score), normal features (gaussian), one of the
        first, second and fourth per column (mixed), or Poisson counts (poisson):
        every registered event model (see ``event_model``).
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
        With task="multiclass" the posteriors are scikit-learn's either way; "none" makes
        decision_function scikit-learn's joint log-likelihood too.
    var_smoothing : float ≥ 0
        Gaussian and mixed: ε = var_smoothing · the largest feature variance is
        added to every variance.
    column_models : list of str
        Mixed only: 'COLUMNS=MODEL' overrides of the detected column models.
    class_prior : {"mle", "m_estimate", "uniform", "given"}
        Multiclass only: class priors N_c/n, (N_c + prior_m/K)/(n + prior_m), 1/K,
        or ``class_prior_values``.
    prior_m : float > 0
        Multiclass only: m of the m-estimate class prior.
    class_prior_values : list of float
        Multiclass only: one prior per class, positive, summing to 1 (class_prior="given").

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
        W, the log-odds contribution of each row of Φ(X) (multiclass: its
        contribution to each class's joint log-likelihood).
    bias_ : ndarray (K,), float32
        b, per-category log-odds of an empty (all-zero) document (multiclass:
        per-class joint log-likelihood of an empty document).
    untrainable_categories_ : ndarray of int
        Categories with no positive (or no negative) training documents. They
        score by their prior alone, W[:, k] = 0 and b_k = log((N + ½)/(N̄ + ½)),
        so that scores stay finite. Multiclass: classes without a training
        document; see ``multiclass`` for how they keep finite scores.
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
                 reference=_DEFAULTS.reference, var_smoothing=_DEFAULTS.var_smoothing, column_models=(),
                 class_prior=_DEFAULTS.class_prior, prior_m=_DEFAULTS.prior_m, class_prior_values=(),
                 task="multilabel"):
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
        self.class_prior = class_prior
        self.prior_m = prior_m
        self.class_prior_values = class_prior_values
        self.task = task

    # -- fitting: counts only --------------------------------------------------------------
    def fit(self, X, Y):
        """Fit on X (n × V) and Y (n × K, 0/1, sparse or dense; multiclass: one-hot, or class labels
        0..K−1 of shape (n,)): the counts of one chunk."""
        self.__dict__.pop("counts_", None)
        self.partial_fit(X, Y)
        if self.task == "multiclass" and self.class_prior == "given":  # K is final now
            multiclass.check_given_prior(self.class_prior_values, self.counts_.shape[0])
        self._warn_untrainable(self.counts_)  # the counts are complete: say so now, not at first use
        return self

    def partial_fit(self, X, Y):
        """Add the counts of one more chunk of documents; ``fit`` is one chunk. Multiclass: a chunk
        of class labels may name a class no earlier chunk had (the classes grow to the largest + 1)."""
        self._check_params()
        # the count models' x ≥ 0 is checked in the same pass over X's values as finiteness
        X = as_csr_float32(X, non_negative=self._non_negative_features())
        earlier = self.__dict__.get("counts_")
        if self.task == "multiclass":
            Y = multiclass.one_hot(Y, X.shape[0], earlier.shape[0] if earlier is not None else 0)
            if earlier is not None:
                earlier = multiclass.with_classes(earlier, Y.shape[1])  # a class first seen in this chunk
        else:
            Y = check_labels(Y, "Y", n_documents=X.shape[0])  # 0/1 int8: counted by its structure, no cast
        if earlier is not None and (X.shape[1], Y.shape[1]) != (self.n_features_in_, earlier.shape[0]):
            raise MlnbError(f"partial_fit got X {X.shape} / Y {Y.shape}, but earlier chunks had "
                            f"{self.n_features_in_} features and {earlier.shape[0]} categories")
        chunk = NBCounts.from_chunk(X, Y, **self._counts_needed())
        counts = chunk.add_into(earlier) if earlier is not None else chunk  # earlier + chunk, in chunk's arrays
        self.n_features_in_ = X.shape[1]
        check = self._event_model.check_counts
        if check is not None:  # e.g. a mixed override the data contradict fails at this chunk, before it counts
            check(counts, self._parameters())
        self.counts_ = counts
        return self

    def _check_params(self) -> None:
        if self.event_model not in EVENT_MODELS:
            raise MlnbError(f"event_model must be one of {EVENT_MODELS}, got {self.event_model!r}")
        if self.smoothing not in SMOOTHINGS:
            raise MlnbError(f"smoothing must be one of {SMOOTHINGS}, got {self.smoothing!r}")
        if self.mode not in MODES:
            raise MlnbError(f"mode must be one of {MODES}, got {self.mode!r}")
        if not (np.isfinite(self.alpha) and self.alpha > 0):
            raise MlnbError(f"alpha must be > 0 and finite, got {self.alpha}")
        if not (np.isfinite(self.m) and self.m > 0):
            raise MlnbError(f"m must be > 0 and finite, got {self.m}")
        if not (np.isfinite(self.var_smoothing) and self.var_smoothing >= 0):
            raise MlnbError(f"var_smoothing must be >= 0 and finite, got {self.var_smoothing}")
        reads = self._event_model.options
        if self.binarize and "binarize" not in reads:
            raise MlnbError(f"binarize applies to {listed(reading('binarize'))}, not to "
                            f"event_model={self.event_model!r}")
        if self.mode == "tutorial" and "mode" not in reads:
            raise MlnbError(f"mode='tutorial' exists for {listed(reading('mode'))} only, not "
                            f"event_model={self.event_model!r}")
        if self.norm and "norm" not in reads:
            raise MlnbError(f"norm applies to {_models(reading('norm'))} only, not {self.event_model!r}")
        if self.reference not in ("corpus", "none"):
            raise MlnbError(f"reference must be 'corpus' or 'none', got {self.reference!r}")
        if len(self.column_models) and "column_models" not in reads:
            raise MlnbError(f"column_models applies to {_models(reading('column_models'))} only, not "
                            f"{self.event_model!r} (got {list(self.column_models)})")
        if self.task not in TASKS:
            raise MlnbError(f"task must be one of {TASKS}, got {self.task!r}")
        if self.task == "multilabel":
            for name in _MULTICLASS_OPTIONS:
                value, default = getattr(self, name), getattr(_DEFAULTS, name)
                if (tuple(value) != tuple(default)) if name == "class_prior_values" else value != default:
                    raise MlnbError(f"{name} is multiclass only (task='multiclass'); got {name}={value!r} "
                                    "with task='multilabel'")
            return
        if self.mode == "tutorial":
            raise MlnbError("mode='tutorial' approximates multilabel complement counts: it is multilabel only, "
                            "not for task='multiclass'")
        if self.class_prior not in multiclass.CLASS_PRIORS:
            raise MlnbError(f"class_prior must be one of {multiclass.CLASS_PRIORS}, got {self.class_prior!r}")
        if not (np.isfinite(self.prior_m) and self.prior_m > 0):
            raise MlnbError(f"prior_m must be > 0 and finite, got {self.prior_m}")
        if self.class_prior == "given":
            multiclass.check_given_prior(self.class_prior_values)
        elif len(self.class_prior_values):
            raise MlnbError(f"class_prior_values applies to class_prior='given' only, not {self.class_prior!r}")

    @property
    def _event_model(self) -> EventModel:
        """The registered record of ``event_model`` (``event_model.EventModel``)."""
        try:
            return REGISTERED[self.event_model]
        except (KeyError, TypeError):  # TypeError: an unhashable value
            raise MlnbError(f"event_model must be one of {EVENT_MODELS}, got {self.event_model!r}") from None

    def _parameters(self) -> Parameters:
        """The hyperparameters every event model's formulas read."""
        return Parameters(self.effective_alpha_, self.norm, self.reference, self.var_smoothing, self.column_models)

    @property
    def score_type(self) -> str:
        """What the scores are, one of ``mlnb.models.registry.SCORE_TYPES``: "log_odds" (multilabel),
        "joint_log_likelihood" (multiclass), or "ranking" for an event model whose scores only rank
        (complement NB)."""
        return self._event_model.score_type(self.task)

    @property
    def scores_are_log_odds(self) -> bool:
        """Whether σ(score) is P(category | document): multilabel, except complement NB, whose
        scores rank but are no log-odds. False for multiclass: its scores are joint log-likelihoods."""
        return self.score_type == "log_odds"

    @property
    def scores_are_joint_log_likelihoods(self) -> bool:
        """Whether the scores are J_c = log P(c, document) (up to one constant per document), so that
        softmax(scores) is P(c | document): multiclass, except complement NB, whose softmax is
        scikit-learn's ComplementNB ``predict_proba`` but no model's probability."""
        return self.score_type == "joint_log_likelihood"

    def _non_negative_features(self) -> bool:
        """The count event models refuse a negative value when scoring as when fitting."""
        return self._event_model.non_negative

    def _poor_score(self) -> bool:
        """Count models, as scikit-learn's discrete Naive Bayes: two dense blob features are no word counts."""
        return self._event_model.non_negative

    @property
    def _scores_presence(self) -> bool:
        return bool(self.binarize or self._event_model.presence)

    def _counts_needed(self) -> dict:
        """What NBCounts must hold for this event model."""
        model = self._event_model
        return dict(presence=self._scores_presence, squares=model.squares, column_stats=model.column_stats)

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
    epsilon_ = property(lambda self: self._fitted_attribute("epsilon", "squares"))

    @property
    def column_event_models_(self) -> np.ndarray:
        return self._fitted_attribute("column_models", "column_stats")

    def _fitted_attribute(self, name: str, needs: str):
        """A fitted attribute of the event models with the record field ``needs`` only."""
        value = getattr(self._log_odds(), name)
        if value is None:
            owners = [model.name for model in REGISTERED.values() if getattr(model, needs)]
            raise AttributeError(f"{name} belongs to event_model={' or '.join(owners)}")
        return value

    def _log_odds(self) -> _LogOdds:
        """W, b and the rest, rebuilt only when the counts or hyperparameters changed since."""
        counts = self.counts_  # not fitted: AttributeError, so hasattr(model, "weights_") is False
        # asked on every scoring call: the values themselves, as get_params is slow; a copy of the list
        params = (tuple(getattr(self, name) for name in _SCALAR_OPTIONS)
                  + tuple(tuple(getattr(self, name)) for name in _LIST_OPTIONS) + (self.task,))
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
        if self.task == "multiclass":
            return self._update_log_likelihood(counts, params)
        outside = self._complement_counts(counts)
        prior, trainable = self._prior_log_odds(counts, outside.N_bar)
        # every module returns W in the layout X·W reads, (rows of Φ(X) × K) float32
        W, b, shift, eps, column_models = self._event_model.log_odds(counts, outside, prior, self._parameters())
        # without both classes in training there is nothing to learn about words:
        # score such categories by their prior alone (as the LR models do)
        untrainable = np.flatnonzero(~trainable)
        W[:, untrainable] = 0.0
        b[untrainable] = prior[untrainable]
        self._warn_untrainable(counts)
        # Gaussian designs give W in float64 (``gaussian``): kept for scoring, float32 for weights_
        wide = W.dtype == np.float64
        return _LogOdds(counts, params, weights=W.astype(np.float32) if wide else W, bias=b.astype(np.float32),
                        untrainable=untrainable, column_models=column_models, shift=shift, epsilon=eps,
                        weights64=W if wide else None, bias64=np.asarray(b, dtype=np.float64) if wide else None)

    def _update_log_likelihood(self, counts: NBCounts, params: tuple) -> _LogOdds:
        """Multiclass: W and b of every class's joint log-likelihood J (see ``multiclass``)."""
        if counts.N.sum() != counts.n:
            raise MlnbError("the counts hold documents with other than one label each (fitted with "
                            "task='multilabel'?): fit again with task='multiclass'")
        log_prior = multiclass.class_log_prior(counts.N, counts.n, self.class_prior, self.prior_m,
                                               self.class_prior_values)
        W, b, shift, eps, column_models = self._event_model.log_likelihood(counts, log_prior, self._parameters())
        self._warn_untrainable(counts)
        return _LogOdds(counts, params, weights=W.astype(np.float32), bias=b.astype(np.float32),  # W: (rows, K)
                        untrainable=np.flatnonzero(~self._trainable(counts)), column_models=column_models,
                        shift=shift, epsilon=eps, weights64=W, bias64=b)

    def _complement_counts(self, counts: NBCounts) -> Outside:
        """(total, clip, N̄): the counts outside each category are F̄ = total − F (V,) − (K × V), floored at 0
        when ``clip``, and N̄ (K,), exact or as the tutorial has them. F̄ itself is formed element by element
        where it is used, never stored."""
        F, N = counts.F, counts.N
        if self.mode == "tutorial":
            return Outside(F.sum(axis=0), False, N.sum() - N)
        # counts (x ≥ 0): flooring at 0 only removes float round-off when X holds non-integer values;
        # sums of real values (gaussian, mixed) may be negative
        return Outside(counts.t, self._event_model.non_negative, counts.n - N)

    def _trainable(self, counts: NBCounts) -> np.ndarray:
        """(K,) bool: categories with a positive and a negative training document (multiclass:
        classes with a training document)."""
        N = counts.N
        if self.task == "multiclass":
            return N > 0
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
        if untrainable and self.task == "multiclass":
            warnings.warn(f"{untrainable} classes have no training documents; they score by their prior and "
                          "the smoothing alone", stacklevel=3)
        elif untrainable:
            warnings.warn(f"{untrainable} categories have no positive or no negative training documents; "
                          "they score by their prior alone", stacklevel=3)

    # -- scoring -----------------------------------------------------------------------------
    def _scoring_matrix(self, X: sp.csr_matrix, dtype=np.float32) -> sp.csr_matrix:
        """Φ(X): X for the count models, [Z∘Z, Z] for the Gaussian ones (see ``gaussian``)."""
        built = self._log_odds()
        design = self._event_model.design
        if design is not None:
            return design(X, built, dtype)
        return X.astype(dtype, copy=False)

    def _linear_scores(self, X, sigmoid: bool = False) -> np.ndarray:
        """Φ(X)·W + b as float32. Gaussian designs (gaussian, mixed with Gaussian columns) sum in float64
        from float64 W and round once: their terms reach 1/(2ε) (~1e10 where a variance is at
        var_smoothing) and cancel, so float32 sums flip rankings; rounding is monotone, so the float32
        scores keep the float64 order (two scores within 2^−24 of each other may tie, never swap)."""
        if self._event_model.design is None:
            return super()._linear_scores(X, sigmoid)
        self._check_fitted()
        X = as_csr_float32(X)
        self._check_features(X)
        built = self._log_odds()
        if built.weights64 is None:
            return super()._linear_scores(X, sigmoid)
        Z = multiclass.joint_log_likelihood(self._scoring_matrix(X, dtype=np.float64), built.weights64,
                                            built.bias64, binary=self._scores_presence)  # (n, K) float64
        if sigmoid:
            from scipy.special import expit

            Z = expit(Z, out=Z)
        return Z.astype(np.float32)

    # -- multiclass: posteriors and decisions --------------------------------------------------
    def _joint_log_likelihood(self, X) -> np.ndarray:
        """J = Φ(X)·W + b (n × K) in float64, from float64 W: X's float32 values (and their squares)
        are exact in float64, so log posteriors lose nothing to the float32 W of ``decision_function``."""
        self._check_fitted()
        X = as_csr_float32(X)
        self._check_features(X)
        built = self._log_odds()
        # count models: X itself, widened value by value; Gaussian designs: x² and x − c made in float64
        Phi = self._scoring_matrix(X, dtype=np.float64) if self._event_model.design else X  # (n, rows)
        return multiclass.joint_log_likelihood(Phi, built.weights64, built.bias64, binary=self._scores_presence)

    def predict_log_proba(self, X) -> np.ndarray:
        """log P(c | document) = J_c − logsumexp_j J_j (n × K), float64. Multilabel: log σ(X·W + b)."""
        if self.task == "multilabel":
            return -np.logaddexp(0.0, -self.decision_function(X).astype(np.float64))
        return multiclass.log_posterior(self._joint_log_likelihood(X))

    def predict_proba(self, X, dtype=np.float64) -> np.ndarray:
        """P(c | document) = softmax(J) per row, rows summing to 1 (multiclass); multilabel: σ(X·W + b)."""
        if self.task == "multilabel":
            return super().predict_proba(X, dtype)
        return np.exp(self.predict_log_proba(X)).astype(dtype, copy=False)

    def predict(self, X, threshold: float = 0.5) -> np.ndarray:
        """Multiclass: the most probable class (n,), argmax_c J_c; multilabel: 0/1 per category at
        ``threshold`` (n × K)."""
        if self.task == "multilabel":
            return super().predict(X, threshold)
        if threshold != 0.5:
            raise MlnbError("threshold applies to task='multilabel'; multiclass predicts the most probable class")
        return np.argmax(self._joint_log_likelihood(X), axis=1)


def _models(names: list[str]) -> str:
    """event_model='a' (or event_model='a', 'b', ...)."""
    return "event_model=" + ", ".join(map(repr, names))


def event_model_details(options) -> list[str]:
    """The event model and those of its options that change its weights, as tables and legends name them
    (the dense and the sparse kind alike): ['complement', 'normalised']."""
    model = REGISTERED[options.event_model]
    details = [options.event_model]
    if options.binarize and "binarize" in model.options and not model.presence:
        details.append("binarized")
    if options.norm and "norm" in model.options:
        details.append("normalised")
    if options.reference == "none" and "reference" in model.options:
        details.append("uncentred")
    return details


def _describe(options: NaiveBayesOptions) -> str:
    model = REGISTERED[options.event_model]
    details = event_model_details(options)
    if options.column_models and "column_models" in model.options:
        details.append(", ".join(options.column_models))
    if options.class_prior != "mle":
        details.append(f"{options.class_prior} prior")
    return f"Naive Bayes ({', '.join(details)})"


KIND = ModelKind(
    name="naive_bayes", estimator=NaiveBayes, options=NaiveBayesOptions,
    help="Naive Bayes for all categories (or classes) from one count product Yᵀ·X; every event model scores "
         "as Φ(X)·W + b",
    describe=_describe,
    params=lambda o: {**dataclasses.asdict(o), **{name: tuple(getattr(o, name)) for name in _LIST_OPTIONS}},
    tasks=TASKS,
    check=lambda options, task: NaiveBayes(**{**dataclasses.asdict(options), "task": task})._check_params(),
    # streamed: its own counts, summed over the chunks, are the whole fit
    fits_from="counts",
    count_request=lambda estimator: CountRequest(estimator),
    fit_streamed=lambda estimator, options, fitted, trainer: trainer.naive_bayes(CountRequest(estimator)),
    fit_on_device=array.fit_on_device,  # the count event models (the others: None, on the CPU)
    requires_non_negative=lambda options: REGISTERED[options.event_model].non_negative,
    score_type=lambda options, task: REGISTERED[options.event_model].score_type(task))
