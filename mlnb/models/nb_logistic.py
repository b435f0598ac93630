r"""NB-feature logistic regression for every category at once (Wang & Manning 2012, "NBSVM").

Wang & Manning ("Baselines and Bigrams", ACL 2012) scale each feature by its
Naive Bayes log-count ratio, fit a linear model on the scaled features, and
pull the weights towards their mean magnitude. Per category k, on word
presence x̂ = 1{x > 0} (``binarize``; else x itself) and with smoothing α:

    p_k = α + Σ_{i: y_ik = 1} x̂_i,   q_k = α + Σ_{i: y_ik = 0} x̂_i      (V,)
    r_k = log((p_k / ‖p_k‖₁) / (q_k / ‖q_k‖₁))                         (V,)
    x̃_ik = r_k ∘ x̂_i                                                    (V,)

which is exactly multinomial Naive Bayes' ``weights_`` on x̂ (binarize=True,
alpha=α): R = [r_1 … r_K] (V × K). A logistic regression on x̃ for all
categories together is the re-parameterisation W = R ∘ W′ of the minibatch solver in
``logistic``, trained in W′ space (see ``logistic.kernels``):

    Z = X̂_B·(R ∘ W′) + b                                              (m × K)
    G = R ∘ (X̂_Bᵀ·(σ(Z) − Y_B)) / m                                   (V × K)
    AdaGrad (or SGD) on W′ and b, with the regularised step of ``logistic`` on W′
    (minimising (1/n) Σ loss + (l2/2)·‖W′‖² + l1·‖W′‖₁)

Then each category's weights are interpolated towards their mean magnitude
(the paper's β = 0.25; β = 1, the default here, keeps W′ as trained, as a
validation search chose on every corpus of ``experiments/nb_logistic_gains.py``):

    w̄_k = ‖W′[:, k]‖₁ / V                                              (K,)
    W″ = (1 − β)·w̄ + β·W′                                              (V × K)

and the model scores like every other mlnb model, with the effective weights

    W = R ∘ W″,   z = x̂·W + b.

The bias b is the trained one: the paper interpolates w only. Categories with
no positive (or no negative) training document get r_k = 0 from Naive Bayes,
hence W[:, k] = 0 and a bias that learns the base rate.

>>> import numpy as np
>>> X = np.array([[2, 0, 1], [1, 1, 0], [0, 3, 1], [0, 1, 1]])
>>> Y = np.array([[1], [1], [0], [0]])
>>> model = NBLogisticRegression(batch_size=4, npasses=20, kernel="scipy").fit(X, Y)
>>> np.round(model.ratios_[:, 0], 3)  # p = (3, 2, 2), q = (1, 3, 3), ‖p‖₁ = ‖q‖₁ = 7
array([ 1.099, -0.405, -0.405], dtype=float32)
>>> model.predict(X).ravel()
array([1, 1, 0, 0], dtype=int8)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator

from mlnb.errors import MlnbError
from mlnb.models._linear import LinearMultilabelModel, as_csr_float32, as_label_matrix
from mlnb.models.logistic import LogisticRegression, MinibatchOptions, least_passes, minibatch_params
from mlnb.models.logistic.options import check_data, fixed_updates, idle_options, schedule_of
from mlnb.models.naive_bayes import NaiveBayes
from mlnb.models.registry import CountRequest, ModelKind
from mlnb.options import option


@dataclass
class NBLogisticOptions(MinibatchOptions):
    alpha: float = option(1.0, "Naive Bayes pseudo-count of the log-count ratios r (Wang & Manning: 1)",
                          min=0, exclusive_min=True)
    beta: float = option(1.0, "interpolation W = (1 − beta)·mean|W| + beta·W per category; 1 = none. "
                         "Wang & Manning used 0.25 for their SVM; here validation picked 1 on Reuters-21578 "
                         "and both RCV1 subsets (b is trained for W, so beta < 1 also shifts the 0.5 cut)",
                         min=0, max=1)
    binarize: bool = option(True, "fit and score on word presence 1{x > 0} (Wang & Manning's x̂)")


_DEFAULTS = NBLogisticOptions()


class NBLogisticRegression(LinearMultilabelModel, BaseEstimator):
    """Logistic regression on NB-scaled features, all categories at once (Wang & Manning's NBSVM).

    Parameters
    ----------
    alpha : float > 0
        Pseudo-count of the NB log-count ratios.
    beta : float in [0, 1]
        Interpolation of each category's weights with their mean magnitude.
    binarize : bool
        Fit and score on word presence [X > 0] instead of X.
    updater, lrate, batch_size, npasses, l1, l2, texp, vexp, epsilon, shuffle, random_state, kernel
        The minibatch solver's, as in :class:`mlnb.models.LogisticRegression`;
        l1 and l2 act on W′.

    Attributes
    ----------
    ratios_ : (V, K) float32
        R, the NB log-count ratios (the features' per-category scale).
    weights_ : (V, K) float32
        W = R ∘ W″, the effective weights on x̂ after the interpolation.
    bias_ : (K,) float32
    untrainable_categories_ : categories without a positive (or a negative) training document
    history_ : list of dict, one per pass of the inner logistic regression (see ``LogisticRegression``); a
        held-out loss there is that of R ∘ W′ before the interpolation.
    """

    def __init__(self, alpha=_DEFAULTS.alpha, beta=_DEFAULTS.beta, binarize=_DEFAULTS.binarize,
                 updater=_DEFAULTS.updater, lrate=_DEFAULTS.lrate, batch_size=_DEFAULTS.batch_size,
                 npasses=_DEFAULTS.npasses, l1=_DEFAULTS.l1, l2=_DEFAULTS.l2, texp=_DEFAULTS.texp,
                 vexp=_DEFAULTS.vexp, epsilon=_DEFAULTS.epsilon, shuffle=_DEFAULTS.shuffle, random_state=0,
                 kernel=_DEFAULTS.kernel):
        self.alpha = alpha
        self.beta = beta
        self.binarize = binarize
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

    @property
    def _scores_presence(self) -> bool:
        return bool(self.binarize)

    def _non_negative_features(self) -> bool:
        """Counts (X ≥ 0) unless binarised: R is multinomial NB's, which refuses a negative count."""
        return not self.binarize

    def _inner_logistic(self) -> LogisticRegression:
        params = self.get_params()
        for name in ("alpha", "beta", "binarize"):
            del params[name]
        return LogisticRegression(**params)

    def _features(self, X):
        """x̂ = 1{x > 0} (binarize) or x, as CSR float32."""
        X = as_csr_float32(X)
        if self.binarize:
            X = X.copy()  # X is the caller's
            X.data = (X.data > 0).astype(np.float32)
        return X

    def _ratio_model(self) -> NaiveBayes:
        """The (unfitted) Naive Bayes whose weights on x̂ are R."""
        return NaiveBayes(event_model="multinomial", alpha=self.alpha, binarize=self.binarize)

    def _log_count_ratios(self, X_hat, Y) -> np.ndarray:
        """R (V × K): r_k = log((p_k/‖p_k‖₁) / (q_k/‖q_k‖₁)), multinomial NB's weights on x̂."""
        return self._ratio_model().fit(X_hat, Y).weights_

    def fit(self, X, Y, eval_set=None):
        """Fit R, then W′ and b on X (n × V, non-negative) and Y (n × K, 0/1); interpolate.

        eval_set : optional (X, Y) whose log loss is reported after every pass.
        """
        if not (np.isfinite(self.beta) and 0 <= self.beta <= 1):
            raise MlnbError(f"beta must be in [0, 1], got {self.beta!r}")
        X_hat = self._features(X)  # (n, V)
        Y = as_label_matrix(Y, X_hat.shape[0])  # (n, K)
        R = np.ascontiguousarray(self._log_count_ratios(X_hat, Y), dtype=np.float32)  # (V, K)
        if eval_set is not None:
            eval_set = (self._features(eval_set[0]), eval_set[1])
        inner = self._inner_logistic().fit(X_hat, Y, eval_set=eval_set, scale=R)
        return self.finish(inner, R)

    def finish(self, inner: LogisticRegression, R: np.ndarray):
        """Interpolate an inner logistic regression trained with ``scale=R`` into this model's weights (the last
        step of ``fit``; a streaming fit trains it chunk by chunk and ends here too)."""
        W_prime = inner.weights_prime_  # (V, K)
        w_bar = np.abs(W_prime).mean(axis=0)  # (K,)  ‖W′[:, k]‖₁ / V
        W_interpolated = (1 - self.beta) * w_bar + self.beta * W_prime  # (V, K)  W″
        self.ratios_ = R
        self.weights_ = (R * W_interpolated).astype(np.float32, copy=False)  # (V, K)  W = R ∘ W″
        self.bias_ = inner.bias_  # (K,)
        self.n_features_in_ = R.shape[0]
        self.untrainable_categories_ = inner.untrainable_categories_
        self.history_ = inner.history_
        return self


# -- as a model kind of a study ----------------------------------------------------------------
def _least_passes(options: NBLogisticOptions) -> tuple[int, str]:
    """The pass that counts R, then the inner logistic regression's passes."""
    passes, key = least_passes(options)
    return 1 + passes, key


def _params(options: NBLogisticOptions) -> dict:
    return {**minibatch_params(options), "alpha": options.alpha, "beta": options.beta,
            "binarize": options.binarize}


def _fit_arguments(options: NBLogisticOptions, fitted: dict, eval_set) -> dict:
    return {"eval_set": eval_set} if options.monitor and eval_set is not None else {}


def _count_request(estimator: NBLogisticRegression) -> CountRequest:
    """The counts of R: multinomial NB's on x̂ (presence with binarize)."""
    return CountRequest(estimator._ratio_model(), binarize_input=bool(estimator.binarize))


def _fit_streamed(estimator: NBLogisticRegression, options, fitted: dict, trainer) -> NBLogisticRegression:
    """``fit`` over a stream: R from its NB counts, W′ by the minibatch passes on x̂ scaled by R, then
    W = R ∘ W″ (``finish``)."""
    R = np.ascontiguousarray(trainer.naive_bayes(_count_request(estimator)).weights_, dtype=np.float32)  # (V, K)
    inner = trainer.minibatch(estimator._inner_logistic(), binarize_input=bool(estimator.binarize), scale=R)
    return estimator.finish(inner, R)


KIND = ModelKind(
    name="nb_logistic", estimator=NBLogisticRegression, options=NBLogisticOptions,
    help="logistic regression on Naive Bayes log-count-ratio features, all categories at once "
         "(Wang & Manning 2012's NBSVM, with the log loss)",
    describe=lambda o: f"NB-LR ({o.updater}, alpha {o.alpha:g}, beta {o.beta:g}"
                       + (", binarized" if o.binarize else "") + ")",
    params=_params, fit_arguments=_fit_arguments,
    least_passes=_least_passes,
    fits_from="minibatch", count_request=_count_request, fit_streamed=_fit_streamed,
    schedule=fixed_updates, schedule_of=schedule_of, idle_options=idle_options, check_data=check_data,
    requires_non_negative=lambda options: True)  # R is multinomial NB's: counts or presence
