"""The scikit-learn LR baseline equals OneVsRestClassifier(SGDClassifier(log_loss))."""

import numpy as np
import pytest
from sklearn.linear_model import SGDClassifier
from sklearn.multiclass import OneVsRestClassifier

from mlnb import MlnbError, SklearnLogisticRegression


@pytest.fixture(scope="module")
def data(small_corpus):
    Y = small_corpus.Y_train.toarray().astype(np.int64)
    keep = np.flatnonzero((Y.sum(axis=0) > 0) & (Y.sum(axis=0) < Y.shape[0]))
    return small_corpus.X_train, Y[:, keep], small_corpus.X_test


def test_decision_function_equals_sklearn_one_vs_rest(data):
    X, Y, X_test = data
    ours = SklearnLogisticRegression(npasses=3, alpha=1e-4, random_state=3).fit(X, Y)
    reference = OneVsRestClassifier(SGDClassifier(loss="log_loss", max_iter=3, tol=None, alpha=1e-4,
                                                  random_state=3)).fit(X, Y)
    np.testing.assert_allclose(ours.decision_function(X_test), reference.decision_function(X_test),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_same_seed_same_model_and_parallel_equals_serial(data):
    X, Y, _ = data
    a = SklearnLogisticRegression(npasses=2, random_state=1).fit(X, Y)
    b = SklearnLogisticRegression(npasses=2, random_state=1, n_jobs=2).fit(X, Y)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    c = SklearnLogisticRegression(npasses=2, random_state=2).fit(X, Y)
    assert not np.array_equal(a.weights_, c.weights_)


def test_untrainable_category_gets_prior_log_odds(small_corpus):
    X = small_corpus.X_train
    Y = np.zeros((X.shape[0], 2), dtype=int)
    Y[::3, 0] = 1
    model = SklearnLogisticRegression(npasses=1).fit(X, Y)
    assert list(model.untrainable_categories_) == [1]
    np.testing.assert_array_equal(model.weights_[:, 1], 0)
    assert model.bias_[1] == pytest.approx(np.log(0.5 / (X.shape[0] + 0.5)), rel=1e-6)


def test_bad_options_are_rejected(data):
    X, Y, _ = data
    with pytest.raises(MlnbError, match="learning_rate must be one of"):
        SklearnLogisticRegression(learning_rate="fast").fit(X, Y)
    with pytest.raises(MlnbError, match="npasses must be an integer >= 1"):
        SklearnLogisticRegression(npasses=0).fit(X, Y)
