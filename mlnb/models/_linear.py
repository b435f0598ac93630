"""What every mlnb model shares: per-category log-odds = X·W + b.

A fitted model has ``weights_`` W (features × categories, float32) and
``bias_`` b (categories,). Scoring every document for every category is one
sparse × dense product, so all models score the same way and the metrics
never need to know which model produced the scores.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from scipy.special import expit

from mlnb import progress
from mlnb.errors import MlnbError
from mlnb.models._scoring import linear_scores


#: the largest |x| a feature value may have. float32 ends at 3.4e38: Gaussian Naive Bayes squares
#: x (x² ≤ 1e30) and sums x² over the documents (room for 10⁸ of them), and X·W with |x| = 1e30
#: already overflows for |w| ≥ 1e9, so that a model "silently learns nothing"
MAX_ABS_FEATURE = 1e15


def as_csr_float32(X, what: str = "X") -> sp.csr_matrix:
    """X as CSR float32 (documents × features), copying only when needed; every |x| finite and at
    most ``MAX_ABS_FEATURE``."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise MlnbError(f"{what} must be 2-D (documents × features), got shape {X.shape}")
        X = sp.csr_matrix(X)
    if X.dtype != np.float32 and X.has_canonical_format:
        # new values on X's own indices: scipy's astype also copies the indices, ~10× the time
        X = sp.csr_matrix((X.data.astype(np.float32), X.indices, X.indptr), shape=X.shape)
    elif X.dtype != np.float32:
        X = X.astype(np.float32)
    largest = max(X.data.max(), -X.data.min()) if X.nnz else 0.0  # NaN propagates through max/min
    if not np.isfinite(largest):
        raise MlnbError(f"{what} holds NaN or infinite values (or values beyond float32's range)")
    if largest > MAX_ABS_FEATURE:
        raise MlnbError(f"{what} has a value of magnitude {largest:.3g}, beyond the {MAX_ABS_FEATURE:g} that "
                        "float32 scoring can take; rescale the features (e.g. features.transform)")
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


def as_one_hot(Y, n_documents: int, n_classes: int | None = None, min_classes: int = 0) -> sp.csr_matrix:
    """Multiclass labels as a one-hot CSR float32 (documents × classes).

    Y is either class labels (n,) in 0..K−1 — K = ``n_classes`` when given (a larger label is an
    error), else max(largest label + 1, ``min_classes``) — or an (n × K) 0/1 matrix with exactly
    one 1 per row.
    """
    if not sp.issparse(Y) and np.ndim(Y) == 1:
        labels = np.asarray(Y)
        if labels.shape[0] != n_documents:
            raise MlnbError(f"Y must have one label per document ({n_documents}), got {labels.shape[0]}")
        if labels.dtype.kind not in "iuf":
            raise MlnbError(f"multiclass labels must be integers 0..K−1, got dtype {labels.dtype}")
        bad = np.flatnonzero(~(np.isfinite(labels) & (labels >= 0) & (labels == np.floor(labels))))
        if bad.size:
            raise MlnbError(f"multiclass labels must be integers 0..K−1; document {bad[0]} has "
                            f"label {labels[bad[0]]}")
        labels = labels.astype(np.int64)
        K = max(int(labels.max()) + 1 if labels.size else 0, min_classes) if n_classes is None else n_classes
        beyond = np.flatnonzero(labels >= K)
        if beyond.size:
            raise MlnbError(f"multiclass labels must be below the model's {K} classes; document "
                            f"{beyond[0]} has label {labels[beyond[0]]}")
        return sp.csr_matrix((np.ones(n_documents, dtype=np.float32), labels, np.arange(n_documents + 1)),
                             shape=(n_documents, K))
    Y = as_label_matrix(Y, n_documents)  # (n, K) 0/1
    per_row = np.diff(Y.indptr)  # (n,)
    bad = np.flatnonzero(per_row != 1)
    if bad.size:
        raise MlnbError(f"multiclass Y must be one-hot (exactly one 1 per row) or class labels 0..K−1; "
                        f"row {bad[0]} has {per_row[bad[0]]} labels")
    if n_classes is not None and Y.shape[1] != n_classes:
        raise MlnbError(f"Y has {Y.shape[1]} classes, but the model has {n_classes}")
    return Y


def prior_log_odds(counts, n: int, link: str = "sigmoid") -> np.ndarray:
    """Each category's smoothed training prior (K,) float64 from its document counts N (K,):
    sigmoid (one-vs-rest) log((N + ½)/(n − N + ½)), finite even for N = 0 or n; softmax (one class
    per document) log((N_c + ½)/(n + ½K)), whose exponentials sum to one."""
    N = np.asarray(counts, dtype=np.float64).ravel()
    if link == "softmax":
        return np.log(N + 0.5) - np.log(n + 0.5 * N.size)
    return np.log(N + 0.5) - np.log(n - N + 0.5)


def fit_each_category(X, Y: sp.csr_matrix, fit_one, n_jobs: int = 1, description: str = "categories"):
    """One-vs-rest with a per-category binary learner, stacked into one linear model.

    ``fit_one(X, y)`` fits one category (y: 0/1 int8 (n,)) and returns (coef (V,), intercept, *extra);
    categories are fitted in parallel by joblib (``n_jobs``). Categories without a positive or a
    negative document are not fitted: w_k = 0 and b_k = their prior log-odds.
    Returns (W (V × K) float32, b (K,) float32, untrainable category indices, {k: extra}).
    """
    Y = Y.tocsc()
    n, K = Y.shape
    positives = np.diff(Y.indptr)  # (K,) N_k
    trainable = (positives > 0) & (positives < n)
    W = np.zeros((X.shape[1], K), dtype=np.float32)  # (V, K)
    b = prior_log_odds(positives, n).astype(np.float32)  # (K,)

    def labels(k):
        y = np.zeros(n, dtype=np.int8)
        y[Y.indices[Y.indptr[k]:Y.indptr[k + 1]]] = 1
        return y

    todo = np.flatnonzero(trainable)
    fitted = Parallel(n_jobs=n_jobs, return_as="generator")(delayed(fit_one)(X, labels(k)) for k in todo)
    extras = {}
    for k, (coef, intercept, *extra) in zip(todo, progress.track(fitted, total=len(todo), description=description)):
        W[:, k] = coef
        b[k] = intercept
        extras[int(k)] = extra
    return W, b, np.flatnonzero(~trainable), extras


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
