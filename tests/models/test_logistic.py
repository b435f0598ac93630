"""The all-categories LR engine: gradient, convergence, kernels, determinism, safety."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression as SklearnLR

from mlnb import LogisticRegression, MlnbError, NaiveBayes

KERNELS = ["numba", "scipy"]



def objective(X, Y, W, b, l2, l1=0.0):
    """(1/n) Σ_i Σ_k [softplus(z_ik) − y_ik·z_ik] + (l2/2)·‖W‖² + l1·‖W‖₁, in float64."""
    Z = X.toarray().astype(np.float64) @ W + b
    return (np.logaddexp(0, Z) - Y * Z).sum() / X.shape[0] + 0.5 * l2 * np.sum(W ** 2) + l1 * np.abs(W).sum()


@pytest.mark.parametrize("kernel", KERNELS)
def test_one_step_is_minus_lrate_times_the_finite_difference_gradient(tiny, kernel):
    X, Y = tiny
    Y = Y[:, :1]  # one category
    rng = np.random.default_rng(3)
    W0, b0 = rng.normal(size=(12, 1)) * 0.3, np.array([0.2])
    l2, l1, lrate = 0.05, 0.01, 1e-3
    model = LogisticRegression(updater="sgd", lrate=lrate, texp=0.0, batch_size=60, npasses=1, l2=l2,
                               l1=l1, shuffle=False, kernel=kernel)
    model.fit(X, Y, coef_init=W0, intercept_init=b0)
    step_gradient = (W0 - model.weights_) / lrate
    touched = np.flatnonzero(np.diff(X.tocsc().indptr))  # lazy regularisation: only touched rows
    h = 1e-6
    for j in touched:
        up, down = W0.copy(), W0.copy()
        up[j, 0] += h
        down[j, 0] -= h
        numeric = (objective(X, Y, up, b0, l2, l1) - objective(X, Y, down, b0, l2, l1)) / (2 * h)
        assert step_gradient[j, 0] == pytest.approx(numeric, rel=2e-3, abs=1e-4), f"word {j}"
    numeric_b = (objective(X, Y, W0, b0 + h, l2)
                 - objective(X, Y, W0, b0 - h, l2)) / (2 * h)
    assert (b0[0] - model.bias_[0]) / lrate == pytest.approx(numeric_b, rel=2e-3, abs=1e-4)


@pytest.mark.parametrize("kernel", KERNELS)
def test_converges_to_sklearn_logistic_regression(tiny, kernel):
    X, Y = tiny
    l2 = 0.02
    model = LogisticRegression(updater="sgd", lrate=0.5, texp=0.0, batch_size=60, npasses=3000, l2=l2,
                               shuffle=False, kernel=kernel).fit(X, Y)
    for k in range(Y.shape[1]):
        # sklearn minimises ½‖w‖² + C·Σ loss; ours (1/n)·Σ loss + (l2/2)‖w‖²: C = 1/(n·l2)
        reference = SklearnLR(C=1 / (X.shape[0] * l2), tol=1e-10, max_iter=10_000).fit(X, Y[:, k])
        np.testing.assert_allclose(model.weights_[:, k], reference.coef_.ravel(), atol=2e-3)
        assert model.bias_[k] == pytest.approx(reference.intercept_[0], abs=2e-3)


def test_adagrad_gets_near_the_optimum(tiny):
    X, Y = tiny
    l2 = 0.02
    model = LogisticRegression(lrate=0.3, batch_size=60, npasses=3000, l2=l2, shuffle=False).fit(X, Y)
    reference = SklearnLR(C=1 / (X.shape[0] * l2), tol=1e-10, max_iter=10_000).fit(X, Y[:, 0])
    np.testing.assert_allclose(model.weights_[:, 0], reference.coef_.ravel(), atol=2e-2)


def test_numba_and_scipy_kernels_compute_the_same_thing(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    # (no l1 here: sign(w) at w = 0 turns float round-off into different paths)
    a = LogisticRegression(kernel="numba", batch_size=200, npasses=2, l2=1e-5).fit(X, Y)
    b = LogisticRegression(kernel="scipy", batch_size=200, npasses=2, l2=1e-5).fit(X, Y)
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(a.bias_, b.bias_, rtol=1e-4, atol=1e-5)
    assert a.history_[0]["train_loss"] == pytest.approx(b.history_[0]["train_loss"], rel=1e-5)


def test_same_seed_same_weights_other_seed_other_weights(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    a = LogisticRegression(random_state=1, npasses=1).fit(X, Y)
    b = LogisticRegression(random_state=1, npasses=1).fit(X, Y)
    c = LogisticRegression(random_state=2, npasses=1).fit(X, Y)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    assert not np.array_equal(a.weights_, c.weights_)


def test_training_loss_falls_and_heldout_loss_is_reported(small_corpus):
    model = LogisticRegression(npasses=3, batch_size=100).fit(small_corpus.X_train, small_corpus.Y_train,
                                              eval_set=(small_corpus.X_test, small_corpus.Y_test))
    losses = [record["train_loss"] for record in model.history_]
    assert losses[2] < losses[0]
    assert all(0 < record["heldout_loss"] < 1 for record in model.history_)


def test_per_category_learning_rate(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    rates = np.full(Y.shape[1], 0.3)
    rates[0] = 1e-9  # category 0 barely moves
    model = LogisticRegression(lrate=rates, npasses=1).fit(X, Y)
    assert np.abs(model.weights_[:, 0]).max() < 1e-6 < np.abs(model.weights_[:, 1]).max()


def test_nb_warm_start_starts_lower(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    nb = NaiveBayes().fit(X, Y)
    cold = LogisticRegression(npasses=1, lrate=0.05).fit(X, Y)
    warm = LogisticRegression(npasses=1, lrate=0.05).fit(X, Y, coef_init=nb.weights_ * 0.1,
                                                         intercept_init=nb.bias_)
    assert warm.history_[0]["train_loss"] < cold.history_[0]["train_loss"]


def test_huge_learning_rate_is_a_clear_error(small_corpus):
    with pytest.raises(MlnbError, match="overflowed .* lrate"):
        LogisticRegression(updater="sgd", lrate=1e38, npasses=1).fit(small_corpus.X_train * 1e3,
                                                                       small_corpus.Y_train)


def test_extreme_scores_stay_finite(small_corpus):
    model = LogisticRegression(lrate=50.0, npasses=2).fit(small_corpus.X_train, small_corpus.Y_train)
    assert np.isfinite(model.predict_proba(small_corpus.X_test * 100)).all()


@pytest.mark.parametrize("params, message", [
    (dict(updater="adam"), "updater must be one of"), (dict(lrate=0), "lrate must be finite and > 0"),
    (dict(lrate=[0.1, 0.2]), "one per category"), (dict(batch_size=0), "batch_size must be"),
    (dict(kernel="cuda"), "kernel must be one of"), (dict(l2=-1), "l2 must be"),
])
def test_bad_parameters(small_corpus, params, message):
    with pytest.raises(MlnbError, match=message):
        LogisticRegression(**params).fit(small_corpus.X_train, small_corpus.Y_train)
