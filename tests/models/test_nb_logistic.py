"""NB-feature logistic regression (Wang & Manning's NBSVM): the scaled engine step, R, β, defaults."""

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb import LogisticRegression, MlnbError, NBLogisticRegression
from mlnb.models import KINDS
from mlnb.models.nb_logistic import KIND, NBLogisticOptions

KERNELS = ["numba", "scipy"]



def presence(X):
    X = sp.csr_matrix(X, dtype=np.float32, copy=True)
    X.data = (X.data > 0).astype(np.float32)
    return X


def objective(X, Y, R, W_prime, b, l2, l1):
    """(1/n) Σ_i Σ_k [softplus(z_ik) − y_ik·z_ik] + (l2/2)·‖W′‖² + l1·‖W′‖₁, float64,
    at Z = X·(R ∘ W′) + b."""
    Z = X.toarray().astype(np.float64) @ (R * W_prime) + b
    return ((np.logaddexp(0, Z) - Y * Z).sum() / X.shape[0] + 0.5 * l2 * np.sum(W_prime ** 2)
            + l1 * np.abs(W_prime).sum())


@pytest.mark.parametrize("kernel", KERNELS)
def test_one_scaled_step_is_minus_lrate_times_the_finite_difference_gradient_in_w_prime(tiny, kernel):
    X, Y = tiny
    rng = np.random.default_rng(3)
    R = rng.normal(size=(12, 3)).astype(np.float32)  # of both signs, different per category
    W0, b0 = (rng.normal(size=(12, 3)) * 0.3).astype(np.float32), np.array([0.2, -0.1, 0.0], np.float32)
    l2, l1, lrate = 0.05, 0.01, 1e-3
    model = LogisticRegression(updater="sgd", lrate=lrate, texp=0.0, batch_size=60, npasses=1, l2=l2, l1=l1,
                               shuffle=False, kernel=kernel)
    model.fit(X, Y, coef_init=W0, intercept_init=b0, scale=R)
    step_gradient = (W0 - model.weights_prime_) / lrate  # (V, K)
    np.testing.assert_array_equal(model.weights_, R * model.weights_prime_)
    touched = np.flatnonzero(np.diff(X.tocsc().indptr))  # lazy regularisation: only touched rows
    W0, b0, h = W0.astype(np.float64), b0.astype(np.float64), 1e-6
    for j in touched:
        for k in range(3):
            up, down = W0.copy(), W0.copy()
            up[j, k] += h
            down[j, k] -= h
            numeric = (objective(X, Y, R, up, b0, l2, l1) - objective(X, Y, R, down, b0, l2, l1)) / (2 * h)
            assert step_gradient[j, k] == pytest.approx(numeric, rel=2e-3, abs=1e-4), f"word {j}, cat. {k}"
    for k in range(3):
        up, down = b0.copy(), b0.copy()
        up[k] += h
        down[k] -= h
        numeric_b = (objective(X, Y, R, W0, up, l2, l1) - objective(X, Y, R, W0, down, l2, l1)) / (2 * h)
        assert (b0[k] - model.bias_[k]) / lrate == pytest.approx(numeric_b, rel=2e-3, abs=1e-4)


@pytest.mark.slow
def test_numba_and_scipy_kernels_agree_with_a_scale(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    # (no l1 here: sign(w) at w = 0 turns float round-off into different paths)
    a = NBLogisticRegression(kernel="numba", batch_size=200, npasses=2, l2=1e-5).fit(X, Y)
    b = NBLogisticRegression(kernel="scipy", batch_size=200, npasses=2, l2=1e-5).fit(X, Y)
    np.testing.assert_array_equal(a.ratios_, b.ratios_)
    assert np.abs(a.weights_).max() > 0.1  # it did learn something
    # float32 sums in another order: as a whole W agrees to 4e-5 (relative norm, measured); a few rarely
    # touched weights of a 16-positive category, whose first AdaGrad steps amplify round-off, differ by
    # up to 1e-3 (measured 9.6e-4 on this split; 2.3e-5 on the permutation split used before)
    assert np.linalg.norm(a.weights_ - b.weights_) <= 2e-4 * np.linalg.norm(b.weights_)
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-3, atol=2e-3)
    np.testing.assert_allclose(a.bias_, b.bias_, rtol=1e-4, atol=1e-5)
    assert a.history_[0]["train_loss"] == pytest.approx(b.history_[0]["train_loss"], rel=1e-5)


@pytest.mark.parametrize("kernel", KERNELS)
def test_beta_one_and_unit_ratios_is_plain_logistic_regression_on_presence(small_corpus, monkeypatch, kernel):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    monkeypatch.setattr(NBLogisticRegression, "_log_count_ratios",
                        lambda self, X_hat, Y: np.ones((X_hat.shape[1], Y.shape[1]), dtype=np.float32))
    engine = dict(batch_size=300, npasses=2, random_state=4, kernel=kernel)  # no l1: see the numba branch
    nb_lr = NBLogisticRegression(beta=1.0, **engine).fit(X, Y)
    lr = LogisticRegression(**engine).fit(presence(X), Y)
    if kernel == "scipy":
        np.testing.assert_array_equal(nb_lr.weights_, lr.weights_)
        np.testing.assert_array_equal(nb_lr.bias_, lr.bias_)
        assert [r["train_loss"] for r in nb_lr.history_] == [r["train_loss"] for r in lr.history_]
    else:
        # equal too when both numba specialisations (scale or none) are freshly compiled, or both
        # loaded from numba's disk cache; a cached parallel function can differ from a fresh one
        # in the last bits (numba issue #10617), e.g. right after only test_logistic.py has run;
        # hence no l1 here, whose sign(w) at w = 0 would turn those bits into different paths
        np.testing.assert_allclose(nb_lr.weights_, lr.weights_, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(nb_lr.bias_, lr.bias_, rtol=1e-5, atol=1e-6)


class _FixedEngine:
    """Stands in for the LR engine: 'trains' a given W′ and b."""

    def __init__(self, W_prime, b):
        self.W_prime, self.b = W_prime, b

    def fit(self, X, Y, eval_set=None, scale=None):
        self.weights_prime_, self.bias_ = self.W_prime, self.b
        self.untrainable_categories_, self.history_ = np.array([], dtype=int), []
        return self


def test_beta_interpolation_by_hand(monkeypatch):
    R = np.array([[2.0, 1.0], [1.0, -1.0], [0.5, 3.0]], dtype=np.float32)  # (V=3, K=2)
    W_prime = np.array([[1.0, 0.0], [-3.0, 2.0], [2.0, -4.0]], dtype=np.float32)
    b = np.array([0.5, -0.5], dtype=np.float32)
    monkeypatch.setattr(NBLogisticRegression, "_log_count_ratios", lambda self, X_hat, Y: R)
    monkeypatch.setattr(NBLogisticRegression, "_inner_logistic", lambda self: _FixedEngine(W_prime, b))
    model = NBLogisticRegression(beta=0.25).fit(np.eye(3), np.array([[1, 0], [0, 1], [1, 1]]))
    # w̄ = mean |W′| per category = (1 + 3 + 2)/3 = 2 and (0 + 2 + 4)/3 = 2
    # W″ = 0.75·2 + 0.25·W′ = [[1.75, 1.5], [0.75, 2.0], [2.0, 0.5]]
    expected = R * np.array([[1.75, 1.5], [0.75, 2.0], [2.0, 0.5]])
    np.testing.assert_allclose(model.weights_, expected, rtol=1e-6)
    np.testing.assert_array_equal(model.bias_, b)
    np.testing.assert_array_equal(model.ratios_, R)


def test_ratios_are_the_smoothed_log_count_ratios_of_word_presence(tiny):
    X, Y = tiny
    model = NBLogisticRegression(alpha=0.7, npasses=1, kernel="scipy").fit(X, Y)
    X_hat = (X.toarray() > 0).astype(np.float64)
    for k in range(Y.shape[1]):
        p = 0.7 + X_hat[Y[:, k] == 1].sum(axis=0)
        q = 0.7 + X_hat[Y[:, k] == 0].sum(axis=0)
        np.testing.assert_allclose(model.ratios_[:, k], np.log((p / p.sum()) / (q / q.sum())), rtol=1e-5,
                                   atol=1e-6)


def test_scores_word_presence_when_binarized(tiny):
    X, Y = tiny
    model = NBLogisticRegression(npasses=3, kernel="scipy").fit(X, Y)
    np.testing.assert_allclose(model.decision_function(X), model.decision_function(presence(X)), rtol=1e-6)
    counts = NBLogisticRegression(binarize=False, npasses=3, kernel="scipy").fit(X, Y)
    assert not np.allclose(counts.decision_function(X), counts.decision_function(presence(X)))


def test_heldout_loss_is_reported_and_beta_is_checked(small_corpus):
    model = NBLogisticRegression(npasses=2, batch_size=200).fit(
        small_corpus.X_train, small_corpus.Y_train, eval_set=(small_corpus.X_test, small_corpus.Y_test))
    assert all(0 < record["heldout_loss"] < 1 for record in model.history_)
    with pytest.raises(MlnbError, match="beta must be in"):
        NBLogisticRegression(beta=1.5).fit(small_corpus.X_train, small_corpus.Y_train)


def test_estimator_defaults_are_the_options_defaults():
    assert KIND.build(NBLogisticOptions()).get_params() == NBLogisticRegression().get_params()
    assert KINDS["nb_logistic"] is KIND
    defaults = NBLogisticOptions()
    assert (defaults.alpha, defaults.beta, defaults.binarize) == (1.0, 1.0, True)  # beta: chosen by validation


def test_monitor_passes_the_heldout_set_only_when_asked():
    held_out = (np.eye(2), np.eye(2))
    assert KIND.fit_arguments(NBLogisticOptions(monitor=True), {}, held_out) == {"eval_set": held_out}
    assert KIND.fit_arguments(NBLogisticOptions(), {}, held_out) == {}
