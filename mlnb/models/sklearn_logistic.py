r"""Logistic regression by scikit-learn's SGD, one category at a time (the reference).

For each category k, ``SGDClassifier(loss="log_loss")`` minimises

    (1/n) Σ_i log(1 + exp(−s_ik · (x_i·w_k + b_k))) + α · R(w_k),    s_ik = 2·y_ik − 1

over exactly ``npasses`` passes through the data. This is what
``OneVsRestClassifier(SGDClassifier(loss="log_loss"))`` does; the fitted
coefficients are then stacked into one W (V × K) and b (K,) so that scoring
is the same single product X·W + b as every other mlnb model.

A category with no positive (or no negative) training document cannot be
fitted; it gets w_k = 0 and the prior log-odds log((N + ½)/(N̄ + ½)).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.linear_model import SGDClassifier

from mlnb.errors import MlnbError
from mlnb.models._linear import (MAX_JOBS, LinearMultilabelModel, as_csr_float32, as_label_matrix,
                                fit_each_category)
from mlnb.models.logistic.options import MAX_PASSES
from mlnb.models.registry import ModelKind
from mlnb.options import option

LEARNING_RATES = ("optimal", "constant", "invscaling", "adaptive")
PENALTIES = ("l2", "l1", "elasticnet")


@dataclass
class SklearnSGDOptions:
    learning_rate: str = option("optimal", "scikit-learn's step-size schedule", choices=LEARNING_RATES)
    eta0: float = option(0.01, "initial step size (not used by 'optimal')", min=0)
    alpha: float = option(1e-4, "regularisation strength (scikit-learn's default)", min=0)
    penalty: str = option("l2", "regulariser", choices=PENALTIES)
    l1_ratio: float = option(0.15, "elastic-net mixing, 0 = l2 .. 1 = l1", min=0, max=1)
    npasses: int = option(2, "passes (epochs) over the training data, always run in full (at most 100000)", min=1,
                          max=MAX_PASSES)
    average: bool = option(False, "averaged SGD")
    n_jobs: int = option(1, "categories fitted in parallel (processes, at most 256: each holds an interpreter and a copy of the data)", min=1,
                         max=MAX_JOBS)


_DEFAULTS = SklearnSGDOptions()


def _fit_one_category(X, y, params: dict) -> tuple[np.ndarray, float]:
    clf = SGDClassifier(loss="log_loss", tol=None, **params).fit(X, y)
    return clf.coef_.ravel(), float(clf.intercept_[0])


class SklearnLogisticRegression(LinearMultilabelModel, BaseEstimator):
    """One-vs-rest SGD logistic regression through scikit-learn.

    Parameters
    ----------
    learning_rate : {"optimal", "constant", "invscaling", "adaptive"}
        scikit-learn's step-size schedule.
    eta0 : float
        Initial step size (unused by "optimal").
    alpha : float >= 0
        Regularisation strength α.
    penalty : {"l2", "l1", "elasticnet"}
    l1_ratio : float in [0, 1]
        Elastic-net mixing (only for ``penalty="elasticnet"``).
    npasses : int >= 1
        Passes (epochs) over the training data; always run in full.
    average : bool
        Averaged SGD (ASGD).
    random_state : int
        Seed of the per-pass shuffling; the same for every category, as when
        ``OneVsRestClassifier`` clones one estimator.
    n_jobs : int
        Categories fitted in parallel (joblib processes).
    """

    def __init__(self, learning_rate=_DEFAULTS.learning_rate, eta0=_DEFAULTS.eta0, alpha=_DEFAULTS.alpha,
                 penalty=_DEFAULTS.penalty, l1_ratio=_DEFAULTS.l1_ratio, npasses=_DEFAULTS.npasses,
                 average=_DEFAULTS.average, random_state=0, n_jobs=_DEFAULTS.n_jobs):
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.alpha = alpha
        self.penalty = penalty
        self.l1_ratio = l1_ratio
        self.npasses = npasses
        self.average = average
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _sgd_params(self) -> dict:
        if self.learning_rate not in LEARNING_RATES:
            raise MlnbError(f"learning_rate must be one of {LEARNING_RATES}, got {self.learning_rate!r}")
        if self.penalty not in PENALTIES:
            raise MlnbError(f"penalty must be one of {PENALTIES}, got {self.penalty!r}")
        if self.learning_rate == "optimal" and not self.alpha > 0:
            raise MlnbError(f"alpha must be > 0 with learning_rate = 'optimal', got {self.alpha}")
        if self.learning_rate != "optimal" and not self.eta0 > 0:
            raise MlnbError(f"eta0 must be > 0 with learning_rate = {self.learning_rate!r}, got {self.eta0}")
        if not (isinstance(self.npasses, (int, np.integer)) and self.npasses >= 1):
            raise MlnbError(f"npasses must be an integer >= 1, got {self.npasses!r}")
        return dict(learning_rate=self.learning_rate, eta0=self.eta0, alpha=self.alpha,
                    penalty=self.penalty, l1_ratio=self.l1_ratio, max_iter=self.npasses,
                    average=self.average, random_state=self.random_state)

    def fit(self, X, Y):
        """Fit every category on X (n × V) and Y (n × K, 0/1)."""
        params = self._sgd_params()
        X = as_csr_float32(X)
        Y = as_label_matrix(Y, X.shape[0])
        W, b, self.untrainable_categories_, _ = fit_each_category(
            X, Y, partial(_fit_one_category, params=params), self.n_jobs, "LR (sklearn SGD)")
        self.n_features_in_ = X.shape[1]
        self.weights_ = W  # (V, K)
        self.bias_ = b  # (K,)
        return self


KIND = ModelKind(
    name="sklearn_sgd", estimator=SklearnLogisticRegression, options=SklearnSGDOptions,
    help="logistic regression by scikit-learn's SGDClassifier, one category at a time (the reference)",
    describe=lambda o: "Logistic regression (sklearn SGD, one category at a time)",
    least_passes=lambda options: (options.npasses, f"npasses = {options.npasses}"),
    processes=lambda options: (options.n_jobs, f"n_jobs = {options.n_jobs}"))
