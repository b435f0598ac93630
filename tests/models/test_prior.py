"""The prior baseline: by hand, both tasks, chunked = whole, from the label counts alone."""

import doctest

import numpy as np
import pytest
from scipy.special import softmax

from mlnb import MlnbError
from mlnb.models import KINDS, prior
from mlnb.models.prior import PriorBaseline

X = np.eye(5, 3)  # 5 documents, 3 words: the prior never reads them


def test_multilabel_scores_are_the_smoothed_training_log_odds():
    # N = (3, 0, 5) of n = 5: log((3 + ½)/(2 + ½)), log(½/(5 + ½)), log((5 + ½)/½)
    Y = np.array([[1, 0, 1], [1, 0, 1], [1, 0, 1], [0, 0, 1], [0, 0, 1]])
    model = PriorBaseline().fit(X, Y)
    b = np.log([3.5 / 2.5, 0.5 / 5.5, 5.5 / 0.5])
    np.testing.assert_allclose(model.bias_, b, rtol=1e-6)
    assert not model.weights_.any() and model.weights_.shape == (3, 3)
    np.testing.assert_allclose(model.decision_function(np.ones((2, 3))), [b, b], rtol=1e-6)
    np.testing.assert_array_equal(model.untrainable_categories_, [1, 2])
    assert model.scores_are_log_odds and not model.scores_are_joint_log_likelihoods


def test_multiclass_posteriors_are_the_smoothed_class_priors():
    # N = (3, 0, 2) of n = 5, K = 3: (N + ½)/(n + 3/2) = (3.5, 0.5, 2.5)/6.5, summing to one
    model = PriorBaseline(task="multiclass").fit(X, [0, 2, 0, 2, 0])
    expected = np.array([3.5, 0.5, 2.5]) / 6.5
    np.testing.assert_allclose(model.predict_proba(X), np.tile(expected, (5, 1)), rtol=1e-6)
    np.testing.assert_allclose(softmax(model.decision_function(X), axis=1), model.predict_proba(X), rtol=1e-6)
    np.testing.assert_array_equal(model.predict(X), [0] * 5)
    np.testing.assert_array_equal(model.untrainable_categories_, [1])
    assert model.scores_are_joint_log_likelihoods and not model.scores_are_log_odds


@pytest.mark.parametrize("task, labels", [("multilabel", np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0]])),
                                          ("multiclass", np.array([0, 0, 1, 0, 3]))])  # class 3 first seen last
def test_chunks_and_label_counts_give_the_fit(task, labels):
    whole = PriorBaseline(task=task).fit(X, labels)
    chunked = PriorBaseline(task=task).partial_fit(X[:2], labels[:2]).partial_fit(X[2:], labels[2:])
    np.testing.assert_array_equal(chunked.bias_, whole.bias_)
    from_counts = PriorBaseline(task=task).fit_counts(whole.class_count_, 5, 3)
    np.testing.assert_array_equal(from_counts.bias_, whole.bias_)
    np.testing.assert_array_equal(from_counts.weights_, whole.weights_)


def test_errors_name_the_problem():
    model = PriorBaseline().fit(X, np.ones((5, 2)))
    with pytest.raises(MlnbError, match="partial_fit got X"):
        model.partial_fit(X, np.ones((5, 3)))
    with pytest.raises(MlnbError, match="task must be one of"):
        PriorBaseline(task="ranking").fit(X, np.ones((5, 2)))
    with pytest.raises(MlnbError, match="threshold applies to task = 'multilabel'"):
        PriorBaseline(task="multiclass").fit(X, [0, 1, 0, 1, 0]).predict(X, threshold=0.3)
    with pytest.raises(MlnbError, match="needs training documents"):
        PriorBaseline().fit_counts(np.zeros(2), 0, 3)


def test_the_kind_fits_from_the_label_counts():
    kind = KINDS["prior_baseline"]
    assert kind.fits_from == "counts" and kind.count_request(kind.build(kind.options())) is None

    class Trainer:
        n_features, n_categories = 3, 2

        def label_counts(self):
            return np.array([4.0, 1.0]), 5

    model = kind.fit_streamed(kind.build(kind.options()), kind.options(), {}, Trainer())
    np.testing.assert_allclose(model.bias_, np.log([4.5 / 1.5, 1.5 / 4.5]), rtol=1e-6)
    assert model.n_features_in_ == 3


def test_the_examples_in_the_docstring_hold():
    result = doctest.testmod(prior)
    assert result.attempted > 0 and result.failed == 0
