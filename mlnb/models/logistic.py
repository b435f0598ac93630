r"""Logistic regression for every category at once, by minibatch SGD / AdaGrad (BIDMach's GLM).

One weight matrix W (V × K) and bias b (K,) for all K categories. Each
minibatch B of m documents costs one sparse product forward and one backward:

    Z = X_B·W + b,   P = σ(Z)                                   (m × K)
    G = X_Bᵀ·(P − Y_B) / m + l2·W + l1·sign(W)                  (rows B touches)
    g_b = 1ᵀ·(P − Y_B) / m

and an update of only the rows of W that B touches:

    adagrad:  S += G²,   W −= lrate · t^(−texp) · G / ((S/t)^vexp + ε)
    sgd:                 W −= lrate · t^(−texp) · G

where t counts minibatches from 1 and lrate may be one value per category.
With texp = vexp = ½ (the defaults) AdaGrad is the classic lrate·G/√ΣG².
This minimises, over all categories together,

    (1/n) Σ_i Σ_k [softplus(z_ik) − y_ik·z_ik] + (l2/2)·‖W‖² + l1·‖W‖₁

(with regularisation applied lazily, to the rows a minibatch touches).

With ``task = "multiclass"`` (one class per document, Y one-hot) the link is
the softmax instead of the sigmoid, and only the probabilities and the loss
change; the backward product, the regularisation and the updates are the same:

    Z = X_B·W + b,   P_i = softmax(z_i) = exp(z_i − logsumexp(z_i))       (m × K)
    G = X_Bᵀ·(P − Y_B) / m + l2·W + l1·sign(W),   g_b = 1ᵀ·(P − Y_B) / m

which minimises the mean cross-entropy (multinomial logistic regression)

    (1/n) Σ_i [logsumexp(z_i) − z_i·y_i] + (l2/2)·‖W‖² + l1·‖W‖₁.

The minibatch step itself lives in ``_glm_kernels`` (a scipy reference and a
two-core numba kernel that compute the same thing).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.special import log_softmax, logsumexp, softmax
from sklearn.base import BaseEstimator

from mlnb import progress
from mlnb.errors import MlnbError
from mlnb.models._glm_kernels import HAVE_NUMBA, KERNELS
from mlnb.models._linear import LinearMultilabelModel, as_csr_float32, as_label_matrix, as_one_hot, prior_log_odds
from mlnb.models.registry import ModelKind
from mlnb.options import option

UPDATERS = ("adagrad", "sgd")
#: each task's link: K independent sigmoids, or one softmax over K classes
LINKS = {"multilabel": "sigmoid", "multiclass": "softmax"}


@dataclass
class EngineOptions:
    """The minibatch engine's options (shared by ``logistic`` and ``nb_logistic``)."""

    updater: str = option("adagrad", "update rule", choices=UPDATERS)
    lrate: float = option(0.3, "learning rate", min=0, exclusive_min=True)
    lrate_per_category: list[float] = option([], "one learning rate per category (overrides lrate)",
                                             min=0, exclusive_min=True)
    batch_size: int = option(1000, "documents per minibatch", min=1)
    npasses: int = option(2, "passes over the training data", min=1)
    l1: float = option(0.0, "L1 regularisation", min=0)
    l2: float = option(1e-4, "L2 regularisation (as scikit-learn's SGD alpha default)", min=0)
    texp: float = option(0.5, "step scale t^(-texp) over minibatches t", min=0)
    vexp: float = option(0.5, "AdaGrad divides by (mean squared gradient)^vexp", min=0)
    epsilon: float = option(1e-8, "added to the AdaGrad denominator", min=0)
    shuffle: bool = option(True, "new random document order every pass")
    kernel: str = option("numba", "minibatch kernel, two-core numba or scipy reference",
                         choices=("numba", "scipy"))
    monitor: bool = option(False, "report the held-out log loss after every pass "
                           "(display only, never used to choose anything)")


@dataclass
class LogisticOptions(EngineOptions):
    init_from: str = option("", "name of another model of the study (e.g. a naive_bayes one) whose W and b "
                            "start training; empty = W = 0, b = each category's training log-odds")


_DEFAULTS = LogisticOptions()

#: a pass whose mean training loss exceeds this many times the loss of the all-prior model (W = 0,
#: b = the training log-odds; or of the warm start, if higher) has diverged. Healthy training stays
#: within 2×; lrate 10, far too large but still learning, reaches ~70× in its first pass; lrate 1e9
#: gives 10^7–10^9×. The loss grows about linearly with lrate, so this fires from lrate ~10^3–10^5.
DIVERGENCE_FACTOR = 1e4


def _prior_loss(Y, link: str) -> float:
    """The mean training loss of W = 0 and b = the default start (the training log-odds), from the
    category counts N_k alone: multilabel Σ_k N_k·softplus(−b_k) + (n − N_k)·softplus(b_k) per
    document and category; multiclass logsumexp(b) − Σ_c N_c·b_c / n per document."""
    n, K = Y.shape
    N = np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()  # (K,)
    b = prior_log_odds(N, n, link)
    if link == "softmax":
        return float(logsumexp(b) - N @ b / n)
    return float((N @ np.logaddexp(0.0, -b) + (n - N) @ np.logaddexp(0.0, b)) / (n * K))


class LogisticRegression(LinearMultilabelModel, BaseEstimator):
    """All-categories logistic regression by minibatch AdaGrad or SGD.

    Parameters
    ----------
    updater : {"adagrad", "sgd"}
    lrate : float or array of K floats
        Learning rate, one for all categories or one per category.
    batch_size : int
        Documents per minibatch.
    npasses : int
        Passes over the training data.
    l1, l2 : float
        Regularisation strengths.
    texp, vexp : float
        Decay exponents: step scale t^(−texp); AdaGrad divides by (mean G²)^vexp.
    epsilon : float
        Added to the AdaGrad denominator.
    shuffle : bool
        Visit the documents in a new seeded random order every pass.
    random_state : int
        Seed of the shuffling.
    kernel : {"numba", "scipy"}
        Implementation of the minibatch step (identical math).
    task : {"multilabel", "multiclass"}
        "multilabel": a sigmoid per category, Y any 0/1 matrix. "multiclass": one
        softmax over the K classes, Y one-hot (n × K) or class labels 0..K−1 (n,).

    Attributes
    ----------
    weights_ : (V, K) float32,  bias_ : (K,) float32
    untrainable_categories_ : categories without a positive (or a negative) training document
    history_ : list of dict, one per pass: training loss (before each update; multilabel:
        mean log loss per document and category; multiclass: mean cross-entropy per
        document), held-out loss (the same measure) if an ``eval_set`` was given,
        seconds, documents per second, GFLOP/s.
    weights_prime_ : (V, K) float32, only after ``fit(..., scale=R)``: the trained W′,
        of which ``weights_`` = R ∘ W′.
    """

    def __init__(self, updater=_DEFAULTS.updater, lrate=_DEFAULTS.lrate, batch_size=_DEFAULTS.batch_size,
                 npasses=_DEFAULTS.npasses, l1=_DEFAULTS.l1, l2=_DEFAULTS.l2, texp=_DEFAULTS.texp,
                 vexp=_DEFAULTS.vexp, epsilon=_DEFAULTS.epsilon, shuffle=_DEFAULTS.shuffle, random_state=0,
                 kernel=_DEFAULTS.kernel, task="multilabel"):
        self.updater = updater
        self.lrate = lrate
        self.batch_size = batch_size
        self.npasses = npasses
        self.l1 = l1
        self.l2 = l2
        self.texp = texp
        self.vexp = vexp
        self.epsilon = epsilon
        self.shuffle = shuffle
        self.random_state = random_state
        self.kernel = kernel
        self.task = task

    @property
    def scores_are_joint_log_likelihoods(self) -> bool:
        """True in multiclass: ``decision_function`` gives per-class scores J whose softmax is the
        posterior (not per-category log-odds)."""
        return self.task == "multiclass"

    def _link(self) -> str:
        if self.task not in LINKS:
            raise MlnbError(f"task must be one of {tuple(LINKS)}, got {self.task!r}")
        return LINKS[self.task]

    def _check_params(self, K: int) -> np.ndarray:
        if self.updater not in UPDATERS:
            raise MlnbError(f"updater must be one of {UPDATERS}, got {self.updater!r}")
        if self.kernel not in KERNELS:
            raise MlnbError(f"kernel must be one of {tuple(KERNELS)}, got {self.kernel!r}")
        if self.kernel == "numba" and not HAVE_NUMBA:
            raise MlnbError("kernel = 'numba' needs the numba package; install it or use kernel = 'scipy'")
        for name in ("batch_size", "npasses"):
            value = getattr(self, name)
            if not (isinstance(value, (int, np.integer)) and value >= 1):
                raise MlnbError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("l1", "l2", "texp", "vexp", "epsilon"):
            if not (np.isfinite(getattr(self, name)) and getattr(self, name) >= 0):
                raise MlnbError(f"{name} must be a finite number >= 0, got {getattr(self, name)!r}")
        lrate = np.broadcast_to(np.asarray(self.lrate, dtype=np.float64), (K,)) if np.ndim(self.lrate) == 0 \
            else np.asarray(self.lrate, dtype=np.float64)
        if lrate.shape != (K,):
            raise MlnbError(f"lrate must be one number or one per category ({K}), got {lrate.size} values")
        if not (np.all(np.isfinite(lrate)) and np.all(lrate > 0)):
            raise MlnbError(f"lrate must be finite and > 0, got {self.lrate!r}")
        return np.ascontiguousarray(lrate, dtype=np.float32)

    def fit(self, X, Y, coef_init=None, intercept_init=None, eval_set=None, scale=None):
        """Fit W and b on X (n × V) and Y (n × K, 0/1; multiclass: one-hot, or labels (n,) in 0..K−1).

        coef_init, intercept_init : optional warm start, (V, K) and (K,), e.g.
            the Naive Bayes weights of the same data. Without them W starts at 0
            and b at the training log-odds of each category (its base rate), so
            rare categories need not spend their first steps finding it; in
            multiclass at the log class frequencies log((N_c + ½)/(n + ½K)),
            which is where softmax(b) fits the class frequencies.
        eval_set : optional (X, Y) whose log loss is reported after every pass.
        scale : optional R (V, K): train W′ of W = R ∘ W′ instead of W, i.e. a
            per-category rescaling of the features x̃ = R[:, k] ∘ x (NB-LR's
            log-count ratios; see ``nb_logistic.py``). Regularisation and the
            AdaGrad sums then apply to W′, ``coef_init`` is a W′, and
            ``weights_prime_`` holds W′ beside ``weights_`` = R ∘ W′.

        Raises ``MlnbError`` naming lrate if the weights overflow, or if a pass's mean training
        loss exceeds ``DIVERGENCE_FACTOR`` × that of the all-prior model (or of the start, if
        higher): such a model has diverged, and its scores are no result.
        """
        link = self._link()
        X = as_csr_float32(X)
        Y = (as_one_hot(Y, X.shape[0]) if link == "softmax" else as_label_matrix(Y, X.shape[0])).astype(np.int8)
        n, V = X.shape
        K = Y.shape[1]
        lrate = self._check_params(K)
        X.sort_indices()
        X.indptr = X.indptr.astype(np.int64)
        W = np.zeros((V, K), dtype=np.float32) if coef_init is None else \
            np.array(coef_init, dtype=np.float32, order="C", copy=True)
        if intercept_init is None:  # start at each category's (class's) smoothed training prior
            b = prior_log_odds(Y.sum(axis=0), n, link).astype(np.float32)
        else:
            b = np.array(intercept_init, dtype=np.float32, copy=True)
        if W.shape != (V, K) or b.shape != (K,):
            raise MlnbError(f"coef_init must be ({V}, {K}) and intercept_init ({K},); got {W.shape} "
                            f"and {b.shape}")
        R = None if scale is None else np.ascontiguousarray(scale, dtype=np.float32)  # (V, K)
        if R is not None and (R.shape != (V, K) or not np.isfinite(R).all()):
            raise MlnbError(f"scale must be a finite ({V}, {K}) array, got shape {R.shape}")
        self.__dict__.pop("weights_prime_", None)  # from an earlier fit with a scale
        S = np.zeros((V, K), dtype=np.float32)  # AdaGrad's running sum of squared gradients
        Sb = np.zeros(K, dtype=np.float32)
        batch_size = min(self.batch_size, n)
        kernel = KERNELS[self.kernel](X, Y, batch_size, link)
        rng = np.random.default_rng(self.random_state)
        self.n_features_in_ = V
        positives = np.diff(Y.tocsc().indptr)
        # still fitted (their gradient pushes towards "never"), but listed like NB's
        self.untrainable_categories_ = np.flatnonzero((positives == 0) | (positives == n))
        self.history_ = []
        per = n * K if link == "sigmoid" else n  # the loss is per document and category, or per document
        reference = _prior_loss(Y, link)  # raised below to the first minibatch's loss (the start)
        step = 0
        adagrad = self.updater == "adagrad"
        for epoch in range(1, self.npasses + 1):
            started = time.perf_counter()
            order = rng.permutation(n) if self.shuffle else np.arange(n)
            loss = 0.0
            for start in range(0, n, batch_size):
                step += 1
                rows = order[start:start + batch_size]
                batch_loss = kernel.step(rows, W, b, S, Sb, lrate, step, adagrad, self.texp, self.vexp,
                                         self.epsilon, self.l1, self.l2, R)
                if step == 1:  # before any update: the loss of the starting W and b (e.g. a warm start)
                    reference = max(reference, batch_loss * n / (rows.size * per))
                loss += batch_loss
            seconds = time.perf_counter() - started
            if not (np.isfinite(W).all() and np.isfinite(b).all()):
                raise MlnbError(f"the weights overflowed in pass {epoch}: lrate {self.lrate} is too large "
                                "for these data; lower it")
            if not loss / per <= DIVERGENCE_FACTOR * reference:
                raise MlnbError(f"training diverged in pass {epoch}: mean training loss {loss / per:.3g}, more than "
                                f"{DIVERGENCE_FACTOR:g} × the {reference:.3g} of the all-prior (or starting) model; lrate "
                                f"{self.lrate if np.ndim(self.lrate) else f'{self.lrate:g}'} is too large for these data; lower it")
            self.weights_, self.bias_ = W if R is None else R * W, b  # with a scale, W is W′
            if R is not None:
                self.weights_prime_ = W
            # multilabel: per document and category; multiclass: per document (K classes, one loss)
            record = {"pass": epoch, "train_loss": loss / per, "seconds": seconds,
                      "docs_per_second": n / seconds, "gflops": 4.0 * X.nnz * K / seconds / 1e9}
            if eval_set is not None:
                record["heldout_loss"] = self.mean_log_loss(*eval_set)
            self.history_.append(record)
            progress.log(_format_pass(record, self.npasses))
        return self

    def mean_log_loss(self, X, Y) -> float:
        """Mean log loss of the current weights on (X, Y): per document and category (multilabel),
        or the mean cross-entropy per document, (1/n) Σ_i logsumexp(z_i) − z_i·y_i (multiclass)."""
        Z = self.decision_function(X).astype(np.float64)  # (n, K)
        if self._link() == "softmax":
            Y = as_one_hot(Y, Z.shape[0], n_classes=Z.shape[1])
            return float((logsumexp(Z, axis=1).sum() - Z[Y.toarray().astype(bool)].sum()) / Z.shape[0])
        Y = as_label_matrix(Y, Z.shape[0])
        return float((np.logaddexp(0.0, Z).sum() - Z[Y.toarray().astype(bool)].sum()) / Z.size)

    # -- scoring: the mixin's sigmoid scoring for multilabel, the softmax for multiclass ---------
    def predict_log_proba(self, X) -> np.ndarray:
        """log P, float64 (documents, categories): multiclass log softmax(z) = z − logsumexp(z)
        (the row max subtracted first, so never log 0 of an underflowed softmax); multilabel
        log σ(z) = −softplus(−z)."""
        Z = self.decision_function(X).astype(np.float64)  # (n, K)
        if self._link() == "softmax":
            return log_softmax(Z, axis=1)
        return -np.logaddexp(0.0, -Z)

    def predict_proba(self, X, dtype=np.float64) -> np.ndarray:
        """P(class | document) = softmax(X·W + b) in multiclass (each row sums to 1), else the
        mixin's σ(X·W + b); shape (documents, categories)."""
        if self._link() == "sigmoid":
            return super().predict_proba(X, dtype=dtype)
        return softmax(self.decision_function(X).astype(np.float64), axis=1).astype(dtype, copy=False)

    def predict(self, X, threshold=None) -> np.ndarray:
        """Multiclass: the most probable class, argmax_k z_k, shape (documents,). Multilabel: the
        mixin's 0/1 matrix, P ≥ threshold (default 0.5); a threshold has no meaning in multiclass."""
        if self._link() == "sigmoid":
            return super().predict(X, 0.5 if threshold is None else threshold)
        if threshold is not None:
            raise MlnbError("threshold applies to task = 'multilabel'; multiclass predicts the most "
                            "probable class")
        return np.argmax(self.decision_function(X), axis=1)



def _format_pass(record: dict, npasses: int) -> str:
    """One BIDMach-style line per pass."""
    heldout = f", held-out loss {record['heldout_loss']:.5f}" if "heldout_loss" in record else ""
    return (f"LR pass {record['pass']}/{npasses}: train loss {record['train_loss']:.5f}{heldout}, "
            f"{record['seconds']:.2f} s, {record['docs_per_second']:,.0f} docs/s, "
            f"{record['gflops']:.2f} GFLOP/s")


# -- as a model kind of a study ----------------------------------------------------------------
def engine_params(options: EngineOptions) -> dict:
    """The estimator's keyword arguments from the engine options (lrate may be one per category)."""
    return dict(updater=options.updater, lrate=list(options.lrate_per_category) or options.lrate,
                batch_size=options.batch_size, npasses=options.npasses, l1=options.l1, l2=options.l2,
                texp=options.texp, vexp=options.vexp, epsilon=options.epsilon, shuffle=options.shuffle,
                kernel=options.kernel)


def _fit_arguments(options: LogisticOptions, fitted: dict, eval_set) -> dict:
    arguments = {}
    if options.init_from:
        start = fitted[options.init_from]
        if start.weights_.shape[0] != start.n_features_in_:  # e.g. Gaussian NB scores [X∘X, X]
            raise MlnbError(f"init_from = {options.init_from!r}: its weights are not one row per feature "
                            f"({start.weights_.shape[0]} rows for {start.n_features_in_} features), so they "
                            "cannot start a logistic regression; start from a count Naive Bayes model")
        arguments.update(coef_init=start.weights_, intercept_init=start.bias_)
    if options.monitor and eval_set is not None:
        arguments["eval_set"] = eval_set
    return arguments


KIND = ModelKind(
    name="logistic", estimator=LogisticRegression, options=LogisticOptions,
    help="logistic regression for all categories at once, minibatch AdaGrad/SGD (BIDMach's GLM)",
    describe=lambda o: f"Logistic regression ({o.updater}, all categories"
                       + (f", from {o.init_from}" if o.init_from else "") + ")",
    params=engine_params, uses=lambda o: [o.init_from] if o.init_from else [],
    fit_arguments=_fit_arguments, tasks=("multilabel", "multiclass"))
