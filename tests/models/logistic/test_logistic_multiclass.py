"""Softmax (multiclass) logistic regression: gradient, optimum, kernels, threads, labels, scoring.

Oracles: finite differences of the cross-entropy; scikit-learn's multinomial ``LogisticRegression``
optimum (and, for K = 2, its binary one). scikit-learn's ``SGDClassifier`` is no oracle here: its
multiclass is one-vs-rest (K separate binary losses), not the softmax, so it minimises another
objective.
"""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp, softmax
from sklearn.linear_model import LogisticRegression as SklearnLR
from sklearn.metrics import log_loss

from mlnb import LogisticRegression, MlnbError
from mlnb.models import KINDS
from mlnb.models.logistic import LogisticOptions

KERNELS = ["numba", "scipy"]


def objective(X, Y, W, b, l2, l1=0.0):
    """(1/n) Σ_i [logsumexp(z_i) − z_i·y_i] + (l2/2)·‖W‖² + l1·‖W‖₁, in float64 (Y one-hot)."""
    Z = X.toarray().astype(np.float64) @ W + b
    return ((logsumexp(Z, axis=1) - (Y * Z).sum(axis=1)).sum() / X.shape[0]
            + 0.5 * l2 * np.sum(W ** 2) + l1 * np.abs(W).sum())


def centred(b):
    """softmax(z + c) = softmax(z): the bias is only defined up to a constant, so compare b − mean(b)."""
    return b - b.mean()


@pytest.mark.parametrize("kernel", KERNELS)
def test_one_step_is_minus_lrate_times_the_finite_difference_gradient(tiny_multiclass, kernel):
    X, y = tiny_multiclass
    Y = np.eye(3)[y]  # (60, 3) one-hot
    rng = np.random.default_rng(3)
    W0, b0 = rng.normal(size=(12, 3)) * 0.3, np.array([0.2, -0.1, 0.4])
    l2, l1, lrate = 0.05, 0.01, 1e-3
    model = LogisticRegression(task="multiclass", updater="sgd", lrate=lrate, texp=0.0, batch_size=60,
                               npasses=1, l2=l2, l1=l1, shuffle=False, kernel=kernel)
    model.fit(X, y, coef_init=W0, intercept_init=b0)
    step_gradient = (W0 - model.weights_) / lrate  # (12, 3)
    touched = np.flatnonzero(np.diff(X.tocsc().indptr))  # lazy regularisation: only touched rows
    assert touched.size > 6
    h = 1e-6
    for j in touched:
        for k in range(3):
            up, down = W0.copy(), W0.copy()
            up[j, k] += h
            down[j, k] -= h
            numeric = (objective(X, Y, up, b0, l2, l1) - objective(X, Y, down, b0, l2, l1)) / (2 * h)
            assert step_gradient[j, k] == pytest.approx(numeric, rel=2e-3, abs=1e-4), f"word {j}, class {k}"
    for k in range(3):
        e = np.eye(3)[k] * h
        numeric_b = (objective(X, Y, W0, b0 + e, l2) - objective(X, Y, W0, b0 - e, l2)) / (2 * h)
        assert (b0[k] - model.bias_[k]) / lrate == pytest.approx(numeric_b, rel=2e-3, abs=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("kernel", KERNELS)
def test_converges_to_sklearn_multinomial_logistic_regression(tiny_multiclass, kernel):
    X, y = tiny_multiclass
    l2 = 0.02
    model = LogisticRegression(task="multiclass", updater="sgd", lrate=0.5, texp=0.0, batch_size=60,
                               npasses=3000, l2=l2, shuffle=False, kernel=kernel).fit(X, y)
    # sklearn minimises ½‖W‖² + C·Σ cross-entropy; ours (1/n)·Σ cross-entropy + (l2/2)‖W‖²: C = 1/(n·l2).
    # float64 X: with float32 X sklearn's lbfgs stops ~4e-5 from the optimum in the gradient.
    reference = SklearnLR(C=1 / (X.shape[0] * l2), tol=1e-12, max_iter=100_000).fit(X.astype(np.float64), y)
    assert reference.coef_.shape == (3, 12)  # multinomial: one row per class, not one-vs-rest
    np.testing.assert_allclose(model.weights_, reference.coef_.T, atol=2e-3)
    np.testing.assert_allclose(centred(model.bias_), centred(reference.intercept_), atol=2e-3)
    np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(X), atol=2e-3)


def test_adagrad_gets_near_the_optimum(tiny_multiclass):
    X, y = tiny_multiclass
    l2 = 0.02
    model = LogisticRegression(task="multiclass", lrate=0.3, batch_size=60, npasses=1000, l2=l2,
                               shuffle=False).fit(X, y)
    reference = SklearnLR(C=1 / (X.shape[0] * l2), tol=1e-12, max_iter=100_000).fit(X.astype(np.float64), y)
    np.testing.assert_allclose(model.weights_, reference.coef_.T, atol=2e-3)
    np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(X), atol=2e-3)


def test_two_classes_is_binary_logistic_regression_on_the_difference(tiny_multiclass):
    """K = 2: softmax(z)₁ = σ(z₁ − z₀), so w = W₁ − W₀ is a binary LR. At the optimum W₀ = −W₁ (the
    class gradients sum to zero), so (l2/2)·‖W‖² = (l2/4)·‖w‖²: sklearn's binary LR with C = 2/(n·l2)."""
    X, y = tiny_multiclass
    y = (y == 2).astype(int)
    l2 = 0.02
    model = LogisticRegression(task="multiclass", updater="sgd", lrate=0.5, texp=0.0, batch_size=60,
                               npasses=3000, l2=l2, shuffle=False).fit(X, y)
    reference = SklearnLR(C=2 / (X.shape[0] * l2), tol=1e-12, max_iter=100_000).fit(X.astype(np.float64), y)
    assert reference.coef_.shape == (1, 12)  # binary
    np.testing.assert_allclose(model.weights_[:, 1] - model.weights_[:, 0], reference.coef_[0], atol=2e-3)
    assert model.bias_[1] - model.bias_[0] == pytest.approx(reference.intercept_[0], abs=2e-3)
    np.testing.assert_allclose(model.weights_[:, 0], -model.weights_[:, 1], atol=1e-4)
    np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(X), atol=2e-3)


def test_numba_and_scipy_kernels_compute_the_same_thing(small_multiclass):
    X, y, _, _ = small_multiclass
    # (no l1 here: sign(w) at w = 0 turns float round-off into different paths)
    a = LogisticRegression(task="multiclass", kernel="numba", batch_size=200, npasses=2, l2=1e-5).fit(X, y)
    b = LogisticRegression(task="multiclass", kernel="scipy", batch_size=200, npasses=2, l2=1e-5).fit(X, y)
    assert np.abs(a.weights_).max() > 0.1  # it did learn something
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(a.bias_, b.bias_, rtol=1e-4, atol=1e-5)
    assert a.history_[0]["train_loss"] == pytest.approx(b.history_[0]["train_loss"], rel=1e-5)


def test_same_weights_for_any_thread_count(small_multiclass):
    X, y, _, _ = small_multiclass
    threads = numba.get_num_threads()
    fits = []
    try:
        for n_threads in (1, numba.config.NUMBA_NUM_THREADS):
            numba.set_num_threads(n_threads)
            fits.append(LogisticRegression(task="multiclass", batch_size=200, npasses=2, l1=1e-5).fit(X, y))
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(fits[0].weights_, fits[1].weights_)
    np.testing.assert_array_equal(fits[0].bias_, fits[1].bias_)
    assert [r["train_loss"] for r in fits[0].history_] == [r["train_loss"] for r in fits[1].history_]


def test_labels_and_one_hot_give_the_same_fit(tiny_multiclass):
    X, y = tiny_multiclass
    fits = [LogisticRegression(task="multiclass", npasses=3, batch_size=16).fit(X, Y)
            for Y in (y, y.astype(float), np.eye(3)[y], sp.csr_matrix(np.eye(3)[y]))]
    for other in fits[1:]:
        np.testing.assert_array_equal(fits[0].weights_, other.weights_)
        np.testing.assert_array_equal(fits[0].bias_, other.bias_)


def test_bias_starts_at_the_log_class_frequencies(tiny_multiclass):
    X, y = tiny_multiclass
    n, K = 60, 3
    # a learning rate far below float32's resolution of b: the fit leaves the starting point as it is
    model = LogisticRegression(task="multiclass", lrate=1e-30, npasses=1).fit(X, y)
    counts = np.bincount(y)  # (K,)
    start = (counts + 0.5) / (n + 0.5 * K)  # sums to 1: softmax(log start) = start
    np.testing.assert_allclose(model.bias_, np.log(start), rtol=1e-6)
    np.testing.assert_allclose(softmax(model.bias_.astype(np.float64)), start, rtol=1e-6)


def test_train_and_heldout_losses_are_mean_cross_entropies(small_multiclass):
    X, y, X_test, y_test = small_multiclass
    # from the start: W = 0, b = log class frequencies, so every document scores softmax(b)
    still = LogisticRegression(task="multiclass", lrate=1e-30, npasses=1, batch_size=100).fit(X, y)
    start = softmax(still.bias_.astype(np.float64))
    assert still.history_[0]["train_loss"] == pytest.approx(-np.log(start[y]).mean(), rel=1e-5)
    model = LogisticRegression(task="multiclass", lrate=0.03, npasses=3, batch_size=100).fit(
        X, y, eval_set=(X_test, y_test))
    assert model.history_[2]["train_loss"] < model.history_[0]["train_loss"]
    assert model.history_[-1]["heldout_loss"] == pytest.approx(
        log_loss(y_test, model.predict_proba(X_test), labels=range(5)), rel=1e-5)
    assert model.mean_log_loss(X_test, np.eye(5)[y_test]) == pytest.approx(model.history_[-1]["heldout_loss"])


def test_scoring(small_multiclass):
    X, y, X_test, y_test = small_multiclass
    model = LogisticRegression(task="multiclass", lrate=0.03, npasses=3, batch_size=100).fit(X, y)
    assert model.scores_are_joint_log_likelihoods
    assert not LogisticRegression().scores_are_joint_log_likelihoods
    Z = model.decision_function(X_test)
    assert Z.shape == (X_test.shape[0], 5) and Z.dtype == np.float32
    proba = model.predict_proba(X_test)
    assert proba.dtype == np.float64
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.log(proba), model.predict_log_proba(X_test), rtol=1e-10, atol=1e-12)
    predicted = model.predict(X_test)
    assert predicted.shape == (X_test.shape[0],)
    np.testing.assert_array_equal(predicted, np.argmax(proba, axis=1))
    # better than always the largest class (sklearn's multinomial LR: ~0.5 on these noisy classes)
    assert (predicted == y_test).mean() > np.bincount(y_test).max() / y_test.size + 0.05
    with pytest.raises(MlnbError, match="threshold applies to task = 'multilabel'"):
        model.predict(X_test, threshold=0.3)


def test_log_probabilities_stay_finite_for_extreme_scores(small_multiclass):
    X, y, X_test, _ = small_multiclass
    model = LogisticRegression(task="multiclass", npasses=2).fit(X, y)
    log_p = model.predict_log_proba(X_test * 1000)  # softmax underflows to 0 for all but one class
    assert np.isfinite(log_p).all() and (log_p <= 0).all()
    assert (model.predict_proba(X_test * 1000) == 0).any()


@pytest.mark.parametrize("Y, message", [
    (np.eye(3)[[0, 1, 2, 1]] + np.eye(3)[[0, 1, 2, 0]] * [[0], [0], [0], [1]], "row 3 has 2 labels"),
    (np.eye(3)[[0, 1, 2, 1]] * [[1], [1], [0], [1]], "row 2 has 0 labels"),
    (np.array([0, 1, -1, 2]), "document 2 has label -1"),
    (np.array([0, 1.5, 1, 2]), "document 1 has label 1.5"),
    (np.array([0, 1, np.nan, 2]), "document 2 has label nan"),
])
def test_bad_labels_name_the_first_bad_row(Y, message):
    X = sp.csr_matrix(np.ones((4, 2), dtype=np.float32))
    with pytest.raises(MlnbError, match=message):
        LogisticRegression(task="multiclass").fit(X, Y)


def test_heldout_labels_beyond_the_classes_are_named(tiny_multiclass):
    X, y = tiny_multiclass
    model = LogisticRegression(task="multiclass", npasses=1).fit(X, y)
    with pytest.raises(MlnbError, match="below the model's 3 classes; document 1 has label 3"):
        model.mean_log_loss(X[:3], np.array([0, 3, 1]))


def test_bad_task():
    with pytest.raises(MlnbError, match="task must be one of"):
        LogisticRegression(task="ordinal").fit(sp.csr_matrix(np.ones((2, 2))), np.eye(2))


def test_kinds_build_the_task():
    assert KINDS["logistic"].tasks == ("multilabel", "multiclass")
    assert KINDS["logistic"].build(LogisticOptions(), seed=0, task="multiclass").task == "multiclass"
    assert KINDS["logistic"].build(LogisticOptions(), seed=0).task == "multilabel"
    kind = KINDS["nb_logistic"]
    with pytest.raises(MlnbError, match="does not do task = 'multiclass'"):
        kind.build(kind.options(), seed=0, task="multiclass")


def one_hot_chunks(X, y, size, K):
    """make_chunks of ``size`` documents with one-hot Y (K classes), as a ChunkSource gives them."""
    from tests.models.logistic.test_logistic import chunks_of

    return chunks_of(X, np.eye(K, dtype=np.int8)[y], size)


@pytest.mark.parametrize("kernel", KERNELS)
def test_stream_in_the_same_order_is_in_memory_fit(small_multiclass, kernel):
    X, y, _, _ = small_multiclass
    params = {"task": "multiclass", "npasses": 2, "batch_size": 200, "kernel": kernel}
    memory = LogisticRegression(**params).fit(X, y)
    stream = LogisticRegression(**params).fit_stream(one_hot_chunks(X, y, 256, 5), X.shape[1], 5, buffer_chunks=100)
    np.testing.assert_array_equal(stream.weights_, memory.weights_)
    np.testing.assert_array_equal(stream.bias_, memory.bias_)
    assert [r["train_loss"] for r in stream.history_] == [r["train_loss"] for r in memory.history_]


def test_partial_fit_on_labels_takes_the_classes_from_category_counts(small_multiclass):
    X, y, _, _ = small_multiclass
    counts = (np.bincount(y, minlength=5), y.size)
    first = np.flatnonzero(y < 4)[:300]  # a chunk without class 4
    model = LogisticRegression(task="multiclass", batch_size=100).partial_fit(X[first], y[first],
                                                                             category_counts=counts)
    assert model.weights_.shape == (X.shape[1], 5)
    model.partial_fit(X, y)  # later chunks may hold every class
    with pytest.raises(MlnbError, match="below the model's 5 classes; document 0 has label 5"):
        model.partial_fit(X[:2], np.array([5, 0]))
