r"""Naive Bayes for all categories at once, as one log-odds matrix.

Each category k is its own binary problem "k vs not k". With a document-word
matrix X (n × V) and a category matrix Y (n × K), all the counts every
category needs come from one sparse product:

    F = Yᵀ·X                       (K × V)  word counts inside each category
    t = 1ᵀ·X                       (V,)     word counts over all documents
    F̄ = t − F                      (K × V)  word counts outside each category
    N = 1ᵀ·Y,  N̄ = n − N           (K,)     documents inside / outside

(F̄ = t − F counts every document once, however many labels it has; the RCV1
tutorial's ``sum(F) − F`` counts a document once per other label it carries:
see ``mode="tutorial"`` below.)

Multinomial event model, with additive smoothing α:

    θ_kw = (F_kw + α) / (Σ_w F_kw + αV)        θ̄_kw likewise from F̄
    W_wk = log θ_kw − log θ̄_kw
    b_k  = log N_k − log N̄_k

Bernoulli event model (X binarised, so F and F̄ count documents):

    p_kw = (F_kw + α) / (N_k + 2α)             p̄_kw likewise from F̄, N̄
    W_wk = log p_kw − log(1 − p_kw) − log p̄_kw + log(1 − p̄_kw)
    b_k  = log N_k − log N̄_k + Σ_w [log(1 − p_kw) − log(1 − p̄_kw)]

The absent-word terms of the Bernoulli likelihood are folded into b, so both
models score by the same single product: log-odds = X·W + b.

The m-estimate spreads a pseudo-count m evenly over the vocabulary, i.e. it is
additive smoothing with α = m / V.

``mode="tutorial"`` reproduces the BIDMach RCV1 Naive Bayes tutorial exactly:
complement counts F̄ = Σ_j F_j − F_k (and N̄ = Σ_j N_j − N_k) and prior odds
from summed category probabilities, b_k = log(π_k / (Σ_j π_j − π_k)) with
π_k = N_k / n. Both approximations over-count multi-label documents.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from mlnb.errors import MlnbError
from mlnb.models._counting import category_feature_counts, feature_totals
from mlnb.models._linear import LinearMultilabelModel, as_csr_float32, as_label_matrix

EVENT_MODELS = ("multinomial", "bernoulli")
SMOOTHINGS = ("additive", "m_estimate")
MODES = ("exact", "tutorial")


class NaiveBayes(LinearMultilabelModel, BaseEstimator):
    """One-vs-rest Naive Bayes for every category, fitted by one count product.

    Parameters
    ----------
    event_model : {"multinomial", "bernoulli"}
        Word counts (multinomial) or word presence (Bernoulli, X binarised).
    smoothing : {"additive", "m_estimate"}
        Additive pseudo-count ``alpha`` per word, or the m-estimate: a total
        pseudo-count ``m`` spread as m/V per word.
    alpha : float > 0
        Pseudo-count per word for additive smoothing.
    m : float > 0
        Total pseudo-count for the m-estimate.
    binarize : bool
        Count word presence (1) instead of word counts, as the RCV1 tutorial
        does. Always on for the Bernoulli model.
    mode : {"exact", "tutorial"}
        Exact complement counts and priors, or the tutorial's approximations.

    Attributes
    ----------
    feature_count_ : ndarray (K, V), float64
        F = Yᵀ·X, the per-category word (or document) counts.
    feature_total_ : ndarray (V,), float64
        t = column sums of X over all training documents.
    class_count_ : ndarray (K,), float64
        N, positive training documents per category.
    n_documents_ : int
        n, training documents seen.
    weights_ : ndarray (V, K), float32
        W, per-word log-odds contributions.
    bias_ : ndarray (K,), float32
        b, per-category log-odds of an empty document.
    untrainable_categories_ : ndarray of int
        Categories with no positive (or no negative) training documents. They
        score by their prior alone, W[:, k] = 0 and b_k = log((N + ½)/(N̄ + ½)),
        so that scores stay finite.
    """

    def __init__(self, event_model="multinomial", smoothing="additive", alpha=0.5, m=1.0,
                 binarize=False, mode="exact"):
        self.event_model = event_model
        self.smoothing = smoothing
        self.alpha = alpha
        self.m = m
        self.binarize = binarize
        self.mode = mode

    # -- fitting ---------------------------------------------------------------------------
    def fit(self, X, Y):
        """Fit on X (n × V, non-negative) and Y (n × K, 0/1, sparse or dense)."""
        for name in ("feature_count_", "feature_total_", "class_count_", "n_documents_"):
            if hasattr(self, name):
                delattr(self, name)
        return self.partial_fit(X, Y)

    def partial_fit(self, X, Y):
        """Add the counts of one more chunk of documents; ``fit`` is one chunk."""
        self._check_params()
        X = as_csr_float32(X)
        Y = as_label_matrix(Y, X.shape[0])
        if X.nnz and X.data.min() < 0:
            raise MlnbError(f"Naive Bayes needs non-negative feature values (counts, presence or "
                            f"TF-IDF); X has a value of {X.data.min():g}")
        if hasattr(self, "feature_count_"):
            if X.shape[1] != self.n_features_in_ or Y.shape[1] != self.feature_count_.shape[0]:
                raise MlnbError(f"partial_fit got X {X.shape} / Y {Y.shape}, but earlier chunks had "
                                f"{self.n_features_in_} features and {self.feature_count_.shape[0]} "
                                "categories")
        else:
            self.n_features_in_ = X.shape[1]
            self.feature_count_ = np.zeros((Y.shape[1], X.shape[1]))
            self.feature_total_ = np.zeros(X.shape[1])
            self.class_count_ = np.zeros(Y.shape[1])
            self.n_documents_ = 0
        self._count(X, Y)
        self._update_log_odds()
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

    @property
    def _scores_presence(self) -> bool:
        return bool(self.binarize or self.event_model == "bernoulli")

    def _count(self, X: sp.csr_matrix, Y: sp.csr_matrix) -> None:
        """F += Yᵀ·X, t += 1ᵀ·X, N += 1ᵀ·Y, n += rows: the only pass over the data.

        X is used as is (multinomial) or as its presence pattern [X > 0] (Bernoulli,
        binarize), without a copy of X.
        """
        presence = self._scores_presence
        self.feature_count_ += category_feature_counts(Y, X, binary=presence)  # (K, V)
        self.feature_total_ += feature_totals(X, binary=presence)  # (V,)
        self.class_count_ += np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()
        self.n_documents_ += X.shape[0]

    # -- counts -> log-odds ----------------------------------------------------------------
    @property
    def effective_alpha_(self) -> float:
        """The per-word pseudo-count actually used: α, or m / V for the m-estimate."""
        if self.smoothing == "m_estimate":
            return self.m / self.n_features_in_
        return self.alpha

    def _complement_counts(self):
        """(F̄, N̄): counts outside each category, exact or as the tutorial has them."""
        F, N = self.feature_count_, self.class_count_
        if self.mode == "tutorial":
            return F.sum(axis=0) - F, N.sum() - N
        # max(·, 0) only removes float round-off when X holds non-integer values
        return np.maximum(self.feature_total_ - F, 0.0), self.n_documents_ - N

    def _prior_log_odds(self, N_bar: np.ndarray) -> np.ndarray:
        """b_k before the Bernoulli absent-word terms."""
        N = self.class_count_
        if self.mode == "tutorial":
            N_bar = self.class_count_.sum() - N  # Σ_j π_j − π_k, in counts (n cancels)
        trainable = (N > 0) & (N_bar > 0)
        self.untrainable_categories_ = np.flatnonzero(~trainable)
        if not trainable.all():
            warnings.warn(f"{int((~trainable).sum())} categories have no positive or no negative "
                          "training documents; they score by their prior alone", stacklevel=4)
        with np.errstate(divide="ignore"):
            exact = np.log(N) - np.log(N_bar)
        smoothed = np.log(N + 0.5) - np.log(N_bar + 0.5)
        return np.where(trainable, exact, smoothed)

    def _update_log_odds(self) -> None:
        """Rebuild W and b from the counts (so partial_fit equals fit)."""
        alpha, V = self.effective_alpha_, self.n_features_in_
        F, N = self.feature_count_, self.class_count_
        F_bar, N_bar = self._complement_counts()
        prior = self._prior_log_odds(N_bar)
        if self.event_model == "multinomial":
            # W = log θ − log θ̄, written in place: two (K, V) arrays instead of five
            W = np.log(F + alpha)
            W -= np.log(F.sum(axis=1, keepdims=True) + alpha * V)  # log θ
            F_bar_total = F_bar.sum(axis=1, keepdims=True) + alpha * V
            F_bar += alpha
            W -= np.log(F_bar, out=F_bar)
            W += np.log(F_bar_total)  # − log θ̄
            b = prior
        else:
            p = (F + alpha) / (N[:, None] + 2 * alpha)
            p_bar = (F_bar + alpha) / (N_bar[:, None] + 2 * alpha)
            W = np.log(p) - np.log1p(-p) - np.log(p_bar) + np.log1p(-p_bar)
            b = prior + (np.log1p(-p) - np.log1p(-p_bar)).sum(axis=1)
        # without both classes in training there is nothing to learn about words:
        # score such categories by their prior alone (as the LR models do)
        untrainable = self.untrainable_categories_
        W[untrainable] = 0.0
        b[untrainable] = prior[untrainable]
        self.weights_ = np.ascontiguousarray(W.T, dtype=np.float32)  # (V, K)
        self.bias_ = b.astype(np.float32)  # (K,)
