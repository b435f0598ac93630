"""Complement Naive Bayes against scikit-learn's ComplementNB on single-label data, one-hot as categories."""

from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_svmlight_file
from sklearn.naive_bayes import ComplementNB

from mlnb import NaiveBayes

TWEETS = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "tweets" / "tweetsDTM.svm.gz"


def digits():
    data = load_digits()  # pixel intensities 0..16: counts
    return data.data, data.target


def tweets():
    if not TWEETS.is_file():
        pytest.skip(f"real data not found at {TWEETS} (../shared/data is beside the project only in the "
                    "development checkout)")
    X, y = load_svmlight_file(str(TWEETS), zero_based=False, n_features=2213)
    return X, y.astype(int)


def assert_matches_complement_nb(X, y, reference_X=None, **params):
    """W[:, k] = ComplementNB's feature_log_prob_[k] and X·W + b = its joint log-likelihood, per class."""
    Y = np.eye(y.max() + 1, dtype=int)[y]  # (n, K): the classes as categories
    model = NaiveBayes(event_model="complement", reference="none", **params).fit(X, Y)
    reference_X = X if reference_X is None else reference_X
    alpha = model.effective_alpha_
    reference = ComplementNB(alpha=alpha, norm=params.get("norm", False)).fit(reference_X, y)
    np.testing.assert_allclose(model.weights_.T, reference.feature_log_prob_, rtol=1e-5)
    np.testing.assert_array_equal(model.bias_, 0)
    scores, expected = model.decision_function(X), reference.predict_joint_log_proba(reference_X)
    for k in range(Y.shape[1]):
        np.testing.assert_allclose(scores[:, k], expected[:, k], rtol=1e-5,
                                   atol=1e-5 * np.abs(expected[:, k]).max(), err_msg=f"class {k}")


@pytest.mark.parametrize("data", [digits, tweets])
@pytest.mark.parametrize("norm", [False, True])
def test_weights_and_scores_equal_sklearn(data, norm):
    X, y = data()
    assert_matches_complement_nb(X, y, alpha=0.5, norm=norm)


def test_binarize_equals_sklearn_on_presence():
    X, y = digits()
    assert_matches_complement_nb(X, y, reference_X=(X > 0).astype(float), alpha=1.0, binarize=True)


def test_m_estimate_is_additive_smoothing_with_m_over_V():
    X, y = digits()
    assert_matches_complement_nb(X, y, smoothing="m_estimate", m=8.0)  # α = 8 / 64


def test_two_classes_complement_is_multinomial():
    # with two classes the complement of one is the other: the score difference is the
    # multinomial log-odds without its prior
    X, y = digits()
    two = y < 2
    X, y = X[two], y[two]
    Y = np.eye(2, dtype=int)[y]
    complement = NaiveBayes(event_model="complement", alpha=0.5, reference="none").fit(X, Y).decision_function(X)
    multinomial = NaiveBayes(event_model="multinomial", alpha=0.5).fit(X, Y[:, :1])
    expected = multinomial.decision_function(X)[:, 0] - multinomial.bias_[0]
    np.testing.assert_allclose(complement[:, 0] - complement[:, 1], expected, rtol=1e-5,
                               atol=1e-5 * np.abs(expected).max())


def test_tutorial_mode_uses_the_summed_complement():
    X = np.array([[1, 0], [0, 1], [1, 1]], dtype=float)
    Y = np.array([[1, 1, 0], [0, 0, 1], [1, 1, 0]])
    model = NaiveBayes(event_model="complement", alpha=1.0, mode="tutorial", reference="none").fit(X, Y)
    F = Y.T @ X
    F_bar = F.sum(axis=0) - F + 1.0  # Σ_j F_j − F_k, smoothed
    np.testing.assert_allclose(model.weights_.T, -np.log(F_bar / F_bar.sum(axis=1, keepdims=True)), rtol=1e-6)


@pytest.mark.parametrize("norm", [False, True])
def test_corpus_reference_shifts_every_class_of_a_document_alike(norm):
    """The default centring: scores minus scikit-learn's differ by one value per document, so the
    multiclass decision and every difference between classes are scikit-learn's."""
    X, y = digits()
    Y = np.eye(10, dtype=int)[y]
    model = NaiveBayes(event_model="complement", alpha=0.5, norm=norm).fit(X, Y)
    reference = ComplementNB(alpha=0.5, norm=norm).fit(X, y)
    shift = model.decision_function(X) - reference.predict_joint_log_proba(X)  # (n, 10)
    np.testing.assert_allclose(shift, shift[:, :1].repeat(10, axis=1), rtol=1e-5, atol=1e-5 * np.abs(shift).max())
    np.testing.assert_array_equal(model.predict_proba(X).argmax(axis=1), reference.predict(X))
    # by hand (norm off): W = log θ − log θ̄ with θ from all documents
    if not norm:
        t, F = X.sum(axis=0), Y.T @ X
        theta = (t + 0.5) / (t + 0.5).sum()
        theta_bar = (t - F + 0.5) / (t - F + 0.5).sum(axis=1, keepdims=True)
        np.testing.assert_allclose(model.weights_.T, np.log(theta) - np.log(theta_bar), rtol=1e-5, atol=1e-6)


def test_corpus_reference_ranks_documents_within_a_category(small_corpus):
    """One-vs-rest AUC per category: near chance without the reference (length decides), far above with it."""
    from mlnb.metrics import evaluate

    X, Y = small_corpus.X_train, small_corpus.Y_train
    auc = {reference: evaluate(small_corpus.Y_test, NaiveBayes(event_model="complement", reference=reference)
                                .fit(X, Y).decision_function(small_corpus.X_test)).summary["macro_auc"]
           for reference in ("corpus", "none")}
    assert auc["none"] < 0.6 < 0.75 < auc["corpus"]
