"""Gaussian Naive Bayes against scikit-learn's GaussianNB, one category at a time."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_wine
from sklearn.naive_bayes import GaussianNB

from mlnb import NaiveBayes
from mlnb.models.naive_bayes import gaussian


def assert_matches_gaussian_nb(sklearn_log_odds, X, Y, var_smoothing=1e-9, categories=None):
    model = NaiveBayes(event_model="gaussian", var_smoothing=var_smoothing).fit(X, Y)
    scores = model.decision_function(X)
    dense = X.toarray() if sp.issparse(X) else X
    checked = 0
    for k in range(Y.shape[1]) if categories is None else categories:
        if 0 < Y[:, k].sum() < Y.shape[0]:
            expected = sklearn_log_odds(GaussianNB(var_smoothing=var_smoothing), dense, Y[:, k])
            np.testing.assert_allclose(scores[:, k], expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max(),
                                       err_msg=f"category {k}")
            checked += 1
    assert checked >= 2
    return model


@pytest.mark.parametrize("var_smoothing", [1e-9, 1e-3])
def test_log_odds_equal_sklearn_on_breast_cancer(breast_cancer_multilabel, sklearn_log_odds, var_smoothing):
    X, Y = breast_cancer_multilabel
    model = assert_matches_gaussian_nb(sklearn_log_odds, X, Y, var_smoothing)
    assert model.weights_.shape == (2 * X.shape[1], Y.shape[1])
    assert model.epsilon_ == pytest.approx(GaussianNB(var_smoothing=var_smoothing).fit(X, Y[:, 0]).epsilon_,
                                           rel=1e-9)


def test_log_odds_equal_sklearn_on_wine_classes_as_categories(sklearn_log_odds):
    data = load_wine()
    X = data.data.astype(np.float32).astype(np.float64)
    assert_matches_gaussian_nb(sklearn_log_odds, X, np.eye(3, dtype=int)[data.target])


def test_log_odds_equal_sklearn_on_sparse_counts(small_corpus, sklearn_log_odds):
    X, Y = small_corpus.X_train, small_corpus.Y_train.toarray()
    assert_matches_gaussian_nb(sklearn_log_odds, X, Y, categories=range(8))


def test_a_large_offset_is_centred_away(breast_cancer_multilabel, sklearn_log_odds):
    # a "year" column, 2000 ± 5: its x² and x terms are ~10⁵ times its log-odds and would cancel in float32
    X, Y = breast_cancer_multilabel
    year = np.float32(2000) + np.float32(5) * np.random.default_rng(0).standard_normal(len(X)).astype(np.float32)
    X = np.column_stack([X, year.astype(np.float64)])
    model = assert_matches_gaussian_nb(sklearn_log_odds, X, Y)
    assert model._log_odds().shift[-1] == pytest.approx(year.astype(np.float64).mean())


def test_sparse_columns_are_not_centred_and_stay_sparse(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    model = NaiveBayes(event_model="gaussian").fit(X, Y)
    assert not model._log_odds().shift.any()
    assert model._scoring_matrix(X).nnz == 2 * X.nnz  # x² and x: zeros cost nothing


def test_negative_values_are_accepted_and_shift_invariance_holds(breast_cancer_multilabel):
    # moving every feature by a constant leaves a Gaussian model's log-odds as they were
    X, Y = breast_cancer_multilabel
    shifted = X - X.mean(axis=0)
    a = NaiveBayes(event_model="gaussian").fit(X, Y).decision_function(X)
    b = NaiveBayes(event_model="gaussian").fit(shifted, Y).decision_function(shifted)
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * np.abs(a).max())


def test_hand_worked_example():
    # one feature; category: x = 1, 3 (μ = 2, σ² = 1); complement: x = 0, 0, 0, 2 (μ̄ = ½, σ̄² = ¾)
    X = np.array([[1.0], [3.0], [0.0], [0.0], [0.0], [2.0]])
    Y = np.array([[1], [1], [0], [0], [0], [0]])
    model = NaiveBayes(event_model="gaussian", var_smoothing=0.0).fit(X, Y)
    x = np.linspace(-1, 4, 6)[:, None]
    expected = (np.log(2 / 4) - 0.5 * np.log(1 / 0.75) - (x - 2) ** 2 / 2 + (x - 0.5) ** 2 / 1.5).ravel()
    np.testing.assert_allclose(model.decision_function(x)[:, 0], expected, rtol=1e-5)


def test_epsilon_is_var_smoothing_times_the_largest_variance():
    t, t2 = np.array([3.0, 10.0]), np.array([5.0, 50.0])  # columns (1, 2) and (5, 5)
    assert gaussian.epsilon(t, t2, 2, 0.1) == pytest.approx(0.1 * 0.25)


def _pairs_out_of_order(scores, oracle):
    """How many document pairs the scores order strictly against the oracle's order."""
    d_scores = np.sign(scores[:, None] - scores[None, :])
    d_oracle = np.sign(oracle[:, None] - oracle[None, :])
    return int(np.sum(d_scores * d_oracle < 0)) // 2


def test_rankings_equal_float64_sklearn_where_variances_reach_var_smoothing(sklearn_log_odds):
    # binary words, several of them never seen in a category: σ² = ε = var_smoothing · max var there,
    # log-odds terms of ±1/(2ε) ≈ 1e9 that cancel. Summed in float32 they scramble the order of the
    # documents that share such words; summed in float64 and rounded once they keep sklearn's order
    from mlnb.models._linear import LinearMultilabelModel

    rng = np.random.default_rng(0)
    n, V = 400, 40
    y = rng.random(n) < 0.3
    X = (rng.random((n, V)) < np.where(y[:, None], 0.3, 0.15)).astype(np.float64)
    X[y, :6] = 0.0  # six words never seen among the positives
    X[~y, 6:9] = 0.0  # three never among the negatives
    X[rng.random((n, V)) < 0.02] = 1.0  # ... except in a few documents of each kind (they rank by the rest)
    X_train = X.copy()
    X_train[y, :6], X_train[~y, 6:9] = 0.0, 0.0
    Y = y[:, None].astype(int)
    model = NaiveBayes(event_model="gaussian").fit(sp.csr_matrix(X_train), Y)
    expected = sklearn_log_odds(GaussianNB(), X_train, y)  # float64 throughout
    X_test = sp.csr_matrix(X)
    joint = GaussianNB().fit(X_train, y).predict_joint_log_proba(X)  # (n, 2) float64
    oracle = joint[:, 1] - joint[:, 0]
    assert np.abs(oracle).max() > 1e8  # the regime of the issue
    ours = model.decision_function(X_test)[:, 0]
    assert ours.dtype == np.float32
    assert _pairs_out_of_order(ours.astype(np.float64), oracle) == 0
    np.testing.assert_allclose(model.decision_function(sp.csr_matrix(X_train))[:, 0], expected,
                               rtol=1e-6, atol=1e-6 * np.abs(expected).max())
    float32_sums = LinearMultilabelModel._linear_scores(model, X_test)[:, 0]  # the float32 path it replaces
    assert _pairs_out_of_order(float32_sums.astype(np.float64), oracle) > 0
