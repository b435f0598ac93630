"""Threshold and probability metrics against sklearn.metrics and by hand."""

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, f1_score, log_loss, precision_score, recall_score

from mlnb.metrics.classification import (brier_score, confusion_counts, expected_accuracy,
                                         log_loss_from_scores)


@pytest.fixture
def multilabel():
    rng = np.random.default_rng(1)
    Y = rng.random((500, 6)) < np.array([0.5, 0.2, 0.1, 0.05, 0.01, 0.0])
    scores = rng.normal(size=(500, 6)) + 2.0 * Y - 1.5
    return Y, scores


def test_f1_precision_recall_equal_sklearn(multilabel):
    Y, scores = multilabel
    predicted = (scores >= 0).astype(int)
    counts = confusion_counts(Y, scores, threshold=0.5)
    np.testing.assert_allclose(counts.f1, f1_score(Y, predicted, average=None, zero_division=0), atol=1e-9)
    np.testing.assert_allclose(counts.precision, precision_score(Y, predicted, average=None, zero_division=0),
                               atol=1e-9)
    np.testing.assert_allclose(counts.recall, recall_score(Y, predicted, average=None, zero_division=0),
                               atol=1e-9)


def test_threshold_is_applied_to_probabilities(multilabel):
    Y, scores = multilabel
    counts = confusion_counts(Y, scores, threshold=0.8)
    predicted = (1 / (1 + np.exp(-scores)) >= 0.8).astype(int)
    np.testing.assert_allclose(counts.f1, f1_score(Y, predicted, average=None, zero_division=0), atol=1e-9)


def test_expected_accuracy_by_hand():
    Y = np.array([[1], [0], [1], [0]])
    p = np.array([[0.9], [0.2], [0.4], [0.0]])
    # (0.9 + 0.8 + 0.4 + 1.0) / 4
    np.testing.assert_allclose(expected_accuracy(Y, p), [0.775])


def test_log_loss_and_brier_equal_sklearn(multilabel):
    Y, scores = multilabel
    p = 1 / (1 + np.exp(-scores))
    for k in range(5):
        assert log_loss_from_scores(Y, scores)[k] == pytest.approx(log_loss(Y[:, k], p[:, k], labels=[0, 1]),
                                                                  rel=1e-9)
        assert brier_score(Y, p)[k] == pytest.approx(brier_score_loss(Y[:, k], p[:, k]), rel=1e-9)


def test_log_loss_stays_finite_for_extreme_scores():
    Y = np.array([[1], [0]])
    z = np.array([[-800.0], [800.0]])  # σ would be exactly 0 and 1: both wrong
    np.testing.assert_allclose(log_loss_from_scores(Y, z), [800.0])
