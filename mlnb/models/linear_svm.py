r"""Linear support vector machine by scikit-learn's LinearSVC (liblinear), one category at a time.

For each category k, ``LinearSVC`` minimises the primal

    ½ (‖w_k‖² + b_k²) + C · Σ_i c_ik · L(s_ik · (x_i·w_k + b_k)),    s_ik = 2·y_ik − 1

    L(m) = max(0, 1 − m)     loss = "hinge"
    L(m) = max(0, 1 − m)²    loss = "squared_hinge"
    c_ik = 1                                     class_weight = "none"
    c_ik = n / (2 · n_k(y_ik))                   class_weight = "balanced" (n_k(1) = N_k, n_k(0) = N̄_k)

(liblinear regularises the intercept too: b_k is the weight of a constant feature 1), solved in
the dual or the primal by coordinate descent to tolerance ``tol`` in at most ``max_iter``
iterations. This is what ``OneVsRestClassifier(LinearSVC())`` does; the fitted coefficients are
then stacked into one W (V × K) and b (K,) so that scoring is the same single product X·W + b as
every other mlnb model (Yang & Liu 1999's SVM on Reuters-21578).

The scores are margins, not log-odds: σ(x·w_k + b_k) is no probability, so
``scores_are_log_odds`` is False and a study shows thresholded and probability metrics only after
a decision rule or calibration. The SVM's own decision, margin ≥ 0, is ``predict(X)`` (threshold
0.5 cuts the scores at logit(0.5) = 0).

A category with no positive (or no negative) training document cannot be fitted; it gets
w_k = 0 and the prior log-odds log((N + ½)/(N̄ + ½)), as the other models do.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from mlnb.errors import MlnbError
from mlnb.models._linear import (MAX_JOBS, LinearMultilabelModel, as_csr_float32, as_label_matrix,
                                fit_each_category)
from mlnb.models.registry import ModelKind
from mlnb.options import option

LOSSES = ("squared_hinge", "hinge")
CLASS_WEIGHTS = ("none", "balanced")
DUALS = ("auto", "dual", "primal")
#: bounds of C and max_iter: liblinear's primal (trust-region Newton) solver never ends once C·loss overflows
#: (it still converges within max_iter at C = 1e90, and never ends from about C = 1e100), which
#: max_iter does not bound; beyond 1e10 a larger C changes nothing a study could use (a hard margin)
MAX_C = 1e10
MAX_ITERATIONS = 100_000


@dataclass
class LinearSVMOptions:
    C: float = option(1.0, "cost of margin violations: larger C, weaker regularisation; at most 1e10 (far past "
                           "a hard margin; from about 1e100 liblinear's primal solver overflows and never ends)",
                      min=0, exclusive_min=True, max=MAX_C)
    loss: str = option("squared_hinge", "max(0, 1 − m)² or max(0, 1 − m) of the margin m", choices=LOSSES)
    class_weight: str = option("none", "'balanced': each category's positives and negatives weighted "
                                       "n / (2·count), so both classes weigh the same", choices=CLASS_WEIGHTS)
    tol: float = option(1e-4, "liblinear's stopping tolerance", min=0, exclusive_min=True)
    max_iter: int = option(1000, "most coordinate-descent iterations per category, at most 100000", min=1,
                           max=MAX_ITERATIONS)
    dual: str = option("auto", "problem solved: 'auto' (scikit-learn's choice: the dual when there are fewer "
                               "documents than features, else the primal), 'dual' or 'primal' "
                               "(the hinge loss has the dual only)", choices=DUALS)
    n_jobs: int = option(1, "categories fitted in parallel (processes, at most 256: each holds an interpreter and a copy of the data)", min=1,
                         max=MAX_JOBS)


_DEFAULTS = LinearSVMOptions()


_HINGE_IN_THE_DUAL = ("loss = 'hinge' is solved in the dual only: use dual = 'dual' or 'auto' "
                      "(or loss = 'squared_hinge')")


def _check_options(options, task: str = "multilabel") -> None:
    """The combination no single option shows: liblinear solves the hinge loss in the dual only."""
    if options.loss == "hinge" and options.dual == "primal":
        raise MlnbError(_HINGE_IN_THE_DUAL)


def _fit_one_category(X, y, params: dict) -> tuple[np.ndarray, float, int]:
    """(w_k (V,), b_k, iterations) of one category; not converging is reported by the caller."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LinearSVC(**params).fit(X, y)
    return clf.coef_.ravel(), float(clf.intercept_[0]), int(np.max(clf.n_iter_))


class LinearSVM(LinearMultilabelModel, BaseEstimator):
    """One-vs-rest linear SVM through scikit-learn's ``LinearSVC``.

    Its scores X·W + b are margins, not log-odds (``scores_are_log_odds`` is False): they rank
    documents, and margin ≥ 0 is the SVM's decision, but σ(score) is no probability until the
    scores are calibrated.

    Parameters
    ----------
    C : float, 0 < C <= 1e10
        Cost of margin violations (inverse regularisation strength).
    loss : {"squared_hinge", "hinge"}
    class_weight : {"none", "balanced"} or None
        "balanced" weighs each category's positives and negatives by n / (2·count).
    tol : float > 0
        liblinear's stopping tolerance.
    max_iter : int >= 1
        Most coordinate-descent iterations per category.
    dual : {"auto", "dual", "primal"} or bool
        Which problem liblinear solves; "auto" is scikit-learn's choice (True/False are accepted
        as scikit-learn's spelling of "dual"/"primal").
    random_state : int
        Seed of the dual coordinate descent's shuffling; the same for every category, as when
        ``OneVsRestClassifier`` clones one estimator.
    n_jobs : int
        Categories fitted in parallel (joblib processes).

    Attributes
    ----------
    weights_ : (V, K) float32
    bias_ : (K,) float32
    untrainable_categories_ : indices of the categories with no positive or no negative document
    n_iter_ : (K,) int, liblinear's iterations per category (0 where untrainable)
    unconverged_categories_ : indices of the categories that stopped at ``max_iter``
    """

    def __init__(self, C=_DEFAULTS.C, loss=_DEFAULTS.loss, class_weight=_DEFAULTS.class_weight,
                 tol=_DEFAULTS.tol, max_iter=_DEFAULTS.max_iter, dual=_DEFAULTS.dual, random_state=0,
                 n_jobs=_DEFAULTS.n_jobs):
        self.C = C
        self.loss = loss
        self.class_weight = class_weight
        self.tol = tol
        self.max_iter = max_iter
        self.dual = dual
        self.random_state = random_state
        self.n_jobs = n_jobs

    @property
    def scores_are_log_odds(self) -> bool:
        """False: the scores are SVM margins, which rank but are no log-odds (σ(score) is no probability)."""
        return False

    def _svc_params(self) -> dict:
        if self.loss not in LOSSES:
            raise MlnbError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if self.class_weight is not None and self.class_weight not in CLASS_WEIGHTS:
            raise MlnbError(f"class_weight must be one of {CLASS_WEIGHTS} (or None), got {self.class_weight!r}")
        dual = {"auto": "auto", "dual": True, "primal": False, True: True, False: False}.get(
            self.dual if isinstance(self.dual, (str, bool)) else None)  # scikit-learn's value
        if dual is None:
            raise MlnbError(f"dual must be one of {DUALS}, got {self.dual!r}")
        if self.loss == "hinge" and dual is False:
            raise MlnbError(_HINGE_IN_THE_DUAL)
        if not 0 < self.C <= MAX_C:
            raise MlnbError(f"C must be > 0 and <= {MAX_C:g} (liblinear's primal solver overflows and never ends "
                            f"from about 1e100), got {self.C}")
        if not self.tol > 0:
            raise MlnbError(f"tol must be > 0, got {self.tol}")
        if not (isinstance(self.max_iter, (int, np.integer)) and self.max_iter >= 1):
            raise MlnbError(f"max_iter must be an integer >= 1, got {self.max_iter!r}")
        return dict(C=self.C, loss=self.loss, class_weight=None if self.class_weight in (None, "none") else
                    self.class_weight, tol=self.tol, max_iter=self.max_iter, dual=dual,
                    random_state=self.random_state)

    def fit(self, X, Y):
        """Fit every category on X (n × V) and Y (n × K, 0/1)."""
        params = self._svc_params()
        X = as_csr_float32(X)
        X64 = X.astype(np.float64)  # liblinear's type, converted once rather than once per category
        Y = as_label_matrix(Y, X.shape[0])
        W, b, self.untrainable_categories_, extras = fit_each_category(
            X64, Y, partial(_fit_one_category, params=params), self.n_jobs, "linear SVM (liblinear)")
        n_iter = np.zeros(Y.shape[1], dtype=np.int64)
        for k, (iterations,) in extras.items():
            n_iter[k] = iterations
        self.n_iter_ = n_iter
        self.unconverged_categories_ = np.flatnonzero(n_iter >= self.max_iter)
        if len(self.unconverged_categories_):
            warnings.warn(f"liblinear stopped at max_iter = {self.max_iter} before tol = {self.tol} for "
                          f"{len(self.unconverged_categories_)} categories (unconverged_categories_); "
                          "raise max_iter", ConvergenceWarning, stacklevel=2)
        self.n_features_in_ = X.shape[1]
        self.weights_ = W  # (V, K)
        self.bias_ = b  # (K,)
        return self


KIND = ModelKind(
    name="linear_svm", estimator=LinearSVM, options=LinearSVMOptions,
    help="linear SVM by scikit-learn's LinearSVC, one category at a time (margins, not log-odds)",
    describe=lambda o: f"Linear SVM ({o.loss.replace('_', ' ')}, C {o.C:g}"
                       + (", balanced" if o.class_weight == "balanced" else "") + ")",
    check=_check_options, score_type=lambda options, task: "margin",
    processes=lambda options: (options.n_jobs, f"n_jobs = {options.n_jobs}"))
