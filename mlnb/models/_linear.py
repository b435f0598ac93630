"""What every mlnb model shares: per-category log-odds = X·W + b.

A fitted model has ``weights_`` W (features × categories, float32) and
``bias_`` b (categories,). Scoring every document for every category is one
sparse × dense product, so all models score the same way and the metrics
never need to know which model produced the scores.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from scipy.special import expit

from mlnb import progress
from mlnb.data.validate import MAX_ABS_FEATURE, check_features, check_labels, check_non_negative  # noqa: F401
from mlnb.errors import MlnbError
from mlnb.models._scoring import linear_scores
from mlnb.models._sklearn import NotFittedError, SklearnClassifier, adapt


def as_csr_float32(X, what: str = "X", non_negative: bool = False) -> sp.csr_matrix:
    """X as CSR float32 (documents × features), copying only when needed: every value finite, |x| at
    most ``MAX_ABS_FEATURE`` and, with ``non_negative``, x ≥ 0 (``mlnb.data.validate.check_features``,
    the check every loader and streamed chunk also passes)."""
    return check_features(X, what, non_negative=non_negative)


def as_label_matrix(Y, n_documents: int, what: str = "Y") -> sp.csr_matrix:
    """Y as CSR float32 0/1 (documents × categories); sparse or dense input."""
    return check_labels(Y, what, n_documents=n_documents).astype(np.float32)


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
            raise MlnbError(f"multiclass labels must be integers 0..K−1, got dtype {labels.dtype}"
                            + (f" (e.g. {labels.ravel()[0].item()!r}): map the class names to 0..K−1 first"
                               if labels.size and labels.dtype.kind in "USO" else ""))
        bad = np.flatnonzero(~(np.isfinite(labels) & (labels >= 0) & (labels == np.floor(labels))))
        if bad.size:
            raise MlnbError(f"multiclass labels must be integers 0..K−1; document {bad[0]} has "
                            f"label {labels[bad[0]]}" + (" (a continuous target: class labels are whole numbers)"
                                                         if (labels != np.floor(labels)).any() else ""))
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


#: n_jobs of a kind fitted category by category: processes, each with its own interpreter and a copy of its data
MAX_JOBS = 256

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


def _shape_of(A) -> tuple:
    """A's shape without converting it (sparse, array or nested lists); () when it has none."""
    shape = getattr(A, "shape", None)
    if shape is None:
        try:
            shape = np.shape(A)
        except (ValueError, TypeError):  # ragged lists: the full check names them
            return ()
    return tuple(shape)


def check_fit_shapes(X, Y, dense_weights: bool = True) -> None:
    """What no single matrix check sees: a fit needs at least one document, one feature and (for
    a 0/1 matrix Y) one category. Without this, every kind failed its own way (ZeroDivisionError,
    ``range() arg 3 must not be zero``, or a 'fitted' model of nothing). ``partial_fit`` chunks
    may be empty and are not checked here."""
    X_shape, Y_shape = _shape_of(X), _shape_of(Y)
    if len(X_shape) == 2 and X_shape[0] == 0:
        raise MlnbError(f"X has 0 documents (shape {X_shape}): fitting needs at least one")
    if len(X_shape) == 2 and X_shape[1] == 0:
        raise MlnbError(f"X has 0 feature(s) (shape={X_shape}) while a minimum of 1 is required: fitting needs at "
                        "least one")
    if len(Y_shape) == 2 and Y_shape[1] == 0:
        raise MlnbError(f"Y has 0 categories (shape {Y_shape}): fitting needs at least one")
    if len(X_shape) == 2 and dense_weights:  # a model whose weights are never V × K is not sized by them
        _check_model_size(X_shape[1], Y_shape[1] if len(Y_shape) == 2 else 1)


#: bytes per weight that every kind holds at least while it fits: W (float32) and beside it its optimiser's
#: sums (LR) or its float64 counts (NB)
BYTES_PER_WEIGHT = 8


def _check_model_size(V: int, K: int) -> None:
    """The model a fit is about to allocate (V × K weights and their state) against the bound of the
    config key that sizes it and the memory available (``mlnb.budget``), before any of it is allocated."""
    from mlnb.budget import available_memory, human
    from mlnb.data.limits import MAX_FEATURES

    if V > MAX_FEATURES:
        raise MlnbError(f"X has {V} features: at most {MAX_FEATURES} (sparse column indices are 32-bit)")
    need, available = BYTES_PER_WEIGHT * V * K, available_memory()
    if available is not None and need > available:
        raise MlnbError(f"X has {V} features and Y {K} categories: a model of them needs at least {human(need)} "
                        f"(W and its optimiser's state or counts), more than the {human(available)} available")


class LinearMultilabelModel(SklearnClassifier):
    """Mixin: scoring for a fitted ``weights_`` (V × K) and ``bias_`` (K,).

    Subclasses set ``weights_``, ``bias_`` and ``n_features_in_`` in ``fit``. Every subclass's own
    ``fit`` is wrapped so that ``check_fit_shapes`` runs first: no model kind can forget it. Its
    ``fit``, ``partial_fit`` and scoring methods are wrapped once more (``_sklearn.adapt``) so that
    a 1-D y of class labels works as in scikit-learn, while a 0/1 matrix Y passes through as it is.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fit = cls.__dict__.get("fit")
        if fit is not None and not getattr(fit, "_checks_shapes", False):
            @functools.wraps(fit)
            def checked_fit(self, X, Y, *args, **kwargs):
                check_fit_shapes(X, Y)
                return fit(self, X, Y, *args, **kwargs)
            checked_fit._checks_shapes = True
            cls.fit = checked_fit
        adapt(cls)

    def _check_fitted(self) -> None:
        if not hasattr(self, "weights_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit(X, Y) first")

    def _non_negative_features(self) -> bool:
        """Whether the model needs X ≥ 0 (counts, presence or TF-IDF); the count Naive Bayes kinds
        say yes, so that a negative value is refused when scoring exactly as when fitting."""
        return False

    def _check_features(self, X: sp.csr_matrix) -> None:
        """A scoring X (checked by ``as_csr_float32``) against the fitted model: its number of
        features, and its sign where the model needs counts."""
        if X.shape[1] != self.n_features_in_:
            raise MlnbError(
                f"X has {X.shape[1]} features, but {type(self).__name__} was fitted with "
                f"{self.n_features_in_}: train and test data must share one feature space")
        if self._non_negative_features():
            check_non_negative(X)

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


adapt(LinearMultilabelModel)
