"""What every mlnb model shares: per-category log-odds = X·W + b.

A fitted model has ``weights_`` W (features × categories, float32) and
``bias_`` b (categories,). Scoring every document for every category is one
sparse × dense product, so all models score the same way and the metrics
never need to know which model produced the scores.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from mlnb.errors import MlnbError
from mlnb.models._scoring import linear_scores


def as_csr_float32(X, what: str = "X") -> sp.csr_matrix:
    """X as CSR float32 (documents × features), copying only when needed."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise MlnbError(f"{what} must be 2-D (documents × features), got shape {X.shape}")
        X = sp.csr_matrix(X)
    if X.dtype != np.float32:
        X = X.astype(np.float32)
    if X.nnz and not np.isfinite(X.data).all():
        raise MlnbError(f"{what} holds NaN or infinite values (or values beyond float32's range)")
    return X


def as_label_matrix(Y, n_documents: int) -> sp.csr_matrix:
    """Y as CSR float32 0/1 (documents × categories); sparse or dense input."""
    Y = sp.csr_matrix(Y) if sp.issparse(Y) else sp.csr_matrix(np.asarray(Y))
    if Y.ndim != 2 or Y.shape[0] != n_documents:
        raise MlnbError(f"Y must have one row per document ({n_documents}), got shape {Y.shape}")
    Y.eliminate_zeros()
    if Y.nnz and not np.all(Y.data == 1):
        raise MlnbError("Y must be a 0/1 category matrix (documents × categories)")
    return Y.astype(np.float32)


def log_odds_to_proba(scores: np.ndarray) -> np.ndarray:
    """σ(z) = 1 / (1 + e^{-z}) in float64, without overflow for any z.

    float64 keeps σ(z) off exact 0 down to z ≈ −745 (float32: z ≈ −104); rank
    metrics still use z itself, never these probabilities.
    """
    return expit(np.asarray(scores, dtype=np.float64))


class LinearMultilabelModel:
    """Mixin: scoring for a fitted ``weights_`` (V × K) and ``bias_`` (K,).

    Subclasses set ``weights_``, ``bias_`` and ``n_features_in_`` in ``fit``.
    """

    def _check_fitted(self) -> None:
        if not hasattr(self, "weights_"):
            raise MlnbError(f"this {type(self).__name__} is not fitted yet: call fit(X, Y) first")

    def _check_features(self, X: sp.csr_matrix) -> None:
        if X.shape[1] != self.n_features_in_:
            raise MlnbError(
                f"X has {X.shape[1]} features, but {type(self).__name__} was fitted with "
                f"{self.n_features_in_}: train and test data must share one feature space")

    #: whether W applies to word presence [X > 0] rather than X (Naive Bayes with binarize)
    _scores_presence = False

    def _scoring_matrix(self, X: sp.csr_matrix) -> sp.csr_matrix:
        """The matrix that W multiplies: X itself here. A model whose log-odds are not linear in
        X (Gaussian Naive Bayes: [X∘X, X]) returns its features of X, one column per row of W."""
        return X

    def _linear_scores(self, X, sigmoid: bool = False) -> np.ndarray:
        self._check_fitted()
        X = as_csr_float32(X)
        self._check_features(X)
        return linear_scores(self._scoring_matrix(X), self.weights_, self.bias_, binary=self._scores_presence,
                             sigmoid=sigmoid)

    def decision_function(self, X) -> np.ndarray:
        """Per-category log-odds z = X·W + b, shape (documents, categories), float32."""
        return self._linear_scores(X)

    def predict_proba(self, X, dtype=np.float64) -> np.ndarray:
        """P(category | document) = σ(X·W + b), shape (documents, categories).

        float64 by default, which keeps σ(z) off exact 0 down to z ≈ −745; with
        ``dtype=np.float32`` the sigmoid is taken in the scoring pass itself, with no
        second matrix.
        """
        if dtype == np.float32:
            return self._linear_scores(X, sigmoid=True)
        return log_odds_to_proba(self.decision_function(X))

    def predict(self, X, threshold: float = 0.5) -> np.ndarray:
        """0/1 predictions, shape (documents, categories): P ≥ threshold.

        Thresholding the log-odds at logit(threshold) gives the same answer as
        thresholding probabilities and cannot be fooled by saturation.
        """
        if not 0.0 < threshold < 1.0:
            raise MlnbError(f"threshold must be in (0, 1), got {threshold}")
        cut = np.log(threshold) - np.log1p(-threshold)
        return (self.decision_function(X) >= cut).astype(np.int8)
