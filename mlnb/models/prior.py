r"""The prior baseline: every document scored by its category's training prior alone, no words.

What any model must beat: a ranking by it is chance (AUC ½ in every category), and its scores
are the base rates. With N_k training documents in category k of n (N̄_k = n − N_k outside it):

    multilabel   W = 0 (V × K)    b_k = log((N_k + ½) / (N̄_k + ½))         the smoothed log-odds
    multiclass   W = 0 (V × K)    b_c = log((N_c + ½) / (n + ½K))          the smoothed log prior

(``_linear.prior_log_odds``, where the logistic models start b). Both add ½ to every count, the
same smoothing in each: the log-odds stay finite for a category in no (or every) document, and the
K class priors still sum to one, (Σ_c N_c + ½K) / (n + ½K) = 1, with no class at log 0.

Multiclass scores are joint log-likelihoods J_c = log P(c) + log P(x): with no words in the model,
P(x | c) = P(x) is one constant per document, dropped, and softmax(J) = the priors.

Everything comes from the label counts N and n, sums over documents: ``partial_fit`` adds them
chunk by chunk, and a streamed fit reads them from the study's counting pass (``fit_counts``).

>>> import numpy as np
>>> model = PriorBaseline().fit(np.eye(4), [[1], [1], [1], [0]])
>>> np.round(model.bias_, 4)  # log((3 + ½)/(1 + ½)) = log 7/3
array([0.8473], dtype=float32)
>>> model = PriorBaseline(task="multiclass").fit(np.eye(4), [0, 0, 1, 2])
>>> np.round(model.predict_proba(np.eye(1, 4))[0], 4)  # (2.5, 1.5, 1.5) / 5.5
array([0.4545, 0.2727, 0.2727])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_softmax
from sklearn.base import BaseEstimator

from mlnb.errors import MlnbError
from mlnb.models._linear import LinearMultilabelModel, as_csr_float32, as_label_matrix, as_one_hot, prior_log_odds
from mlnb.models.registry import ModelKind

#: the link of each task: one-vs-rest log-odds (sigmoid) or one class per document (softmax)
LINKS = {"multilabel": "sigmoid", "multiclass": "softmax"}


@dataclass
class PriorOptions:
    """The prior baseline has no options (the smoothing is the ½ of ``prior_log_odds``)."""


class PriorBaseline(LinearMultilabelModel, BaseEstimator):
    """Scores every document by the training prior of each category (or class), W = 0.

    Parameters
    ----------
    task : {"multilabel", "multiclass"}
        Per-category smoothed log-odds, or per-class smoothed log priors (softmax: the priors).

    Attributes
    ----------
    class_count_ : ndarray (K,), float64
        N, training documents per category (class).
    n_documents_ : int
        n, training documents.
    weights_ : ndarray (V, K), float32
        W = 0.
    bias_ : ndarray (K,), float32
        b: log((N + ½)/(N̄ + ½)) (multilabel) or log((N + ½)/(n + ½K)) (multiclass).
    untrainable_categories_ : ndarray of int
        Categories with no positive or no negative training document (multiclass: classes with
        no document): here as in every model, though the prior treats them like any other.
    """

    def _poor_score(self) -> bool:
        return True  # chance by design: scikit-learn's accuracy checks do not apply

    def __init__(self, task="multilabel"):
        self.task = task

    def _link(self) -> str:
        if self.task not in LINKS:
            raise MlnbError(f"task must be one of {tuple(LINKS)}, got {self.task!r}")
        return LINKS[self.task]

    @property
    def scores_are_log_odds(self) -> bool:
        """Multilabel: b_k is category k's log-odds, σ(b_k) its smoothed base rate."""
        return self.task == "multilabel"

    @property
    def scores_are_joint_log_likelihoods(self) -> bool:
        """Multiclass: b_c = log P(c), the joint log-likelihood up to log P(x), one constant per document."""
        return self.task == "multiclass"

    def fit(self, X, Y):
        """Fit on X (n × V) and Y (n × K, 0/1; multiclass: one-hot or class labels (n,)): N and n."""
        self.__dict__.pop("class_count_", None)
        return self.partial_fit(X, Y)

    def partial_fit(self, X, Y):
        """Add the label counts of one more chunk; ``fit`` is one chunk. Multiclass: a chunk may name
        a class no earlier chunk had (the classes grow to the largest label + 1)."""
        link = self._link()
        X = as_csr_float32(X)  # (m, V)
        earlier = self.__dict__.get("class_count_")
        if link == "softmax":
            Y = as_one_hot(Y, X.shape[0], min_classes=0 if earlier is None else earlier.size)  # (m, K)
        else:
            Y = as_label_matrix(Y, X.shape[0])  # (m, K)
        N = np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()  # (K,)
        n = X.shape[0]
        if earlier is not None:
            if X.shape[1] != self.n_features_in_ or (link == "sigmoid" and N.size != earlier.size):
                raise MlnbError(f"partial_fit got X {X.shape} / Y {Y.shape}, but earlier chunks had "
                                f"{self.n_features_in_} features and {earlier.size} categories")
            N[:earlier.size] += earlier
            n += self.n_documents_
        return self.fit_counts(N, n, X.shape[1])

    def fit_counts(self, N, n: int, n_features: int):
        """Fitted from the label counts alone: N (K,) documents per category of n, over n_features words
        (what a streamed fit reads from the study's counting pass)."""
        link = self._link()
        N = np.asarray(N, dtype=np.float64).ravel()  # (K,)
        if n < 1 or N.size == 0:
            raise MlnbError(f"the prior needs training documents and categories, got n = {n}, {N.size} categories")
        self.class_count_, self.n_documents_, self.n_features_in_ = N, int(n), int(n_features)
        self.weights_ = np.zeros((int(n_features), N.size), dtype=np.float32)  # (V, K)  W = 0
        self.bias_ = prior_log_odds(N, n, link).astype(np.float32)  # (K,)
        empty = (N == 0) if link == "softmax" else (N == 0) | (N == n)
        self.untrainable_categories_ = np.flatnonzero(empty)
        return self

    # -- multiclass: posteriors and decisions (multilabel: the mixin's sigmoid) ------------------
    def predict_log_proba(self, X) -> np.ndarray:
        """log P (n × K) float64: multiclass log softmax(b), the log priors; multilabel log σ(b)."""
        Z = self.decision_function(X).astype(np.float64)  # (n, K)
        if self._link() == "softmax":
            return log_softmax(Z, axis=1)
        return -np.logaddexp(0.0, -Z)

    def predict_proba(self, X, dtype=np.float64) -> np.ndarray:
        """Multiclass: the class priors, softmax(b), for every document; multilabel: σ(b)."""
        if self._link() == "sigmoid":
            return super().predict_proba(X, dtype)
        return np.exp(self.predict_log_proba(X)).astype(dtype, copy=False)

    def predict(self, X, threshold=None) -> np.ndarray:
        """Multiclass: the most frequent training class for every document (n,); multilabel: 0/1 (n × K)
        at ``threshold`` (default 0.5)."""
        if self._link() == "sigmoid":
            return super().predict(X, 0.5 if threshold is None else threshold)
        if threshold is not None:
            raise MlnbError("threshold applies to task = 'multilabel'; multiclass predicts the most probable class")
        return np.argmax(self.decision_function(X), axis=1)


# -- as a model kind of a study ----------------------------------------------------------------
def _fit_streamed(estimator: PriorBaseline, options: PriorOptions, fitted: dict, trainer) -> PriorBaseline:
    """The label counts of the study's counting pass are the whole fit."""
    N, n = trainer.label_counts()
    return estimator.fit_counts(N, n, trainer.n_features)


# named apart from eval.untrainable = "prior" (scoring untrainable categories by their prior), which
# is no model: a study never compares a kind's name with a string (tests/test_architecture.py)
KIND = ModelKind(
    name="prior_baseline", estimator=PriorBaseline, options=PriorOptions,
    help="the training prior alone, W = 0: smoothed log-odds per category (multiclass: log priors); "
         "the baseline a model must beat",
    describe=lambda o: "Prior (no words)", tasks=("multilabel", "multiclass"),
    fits_from="counts", fit_streamed=_fit_streamed)
