"""Evaluation.baselines: `always_no` is evaluate() on scores of −∞; `prevalence_random`'s closed forms
against evaluate() on constant probabilities, against random decisions, and against every order."""

from itertools import combinations

import numpy as np
import pytest
from scipy.special import logit
from sklearn.metrics import (average_precision_score, coverage_error, label_ranking_average_precision_score,
                             label_ranking_loss)

from mlnb.errors import MlnbError
from mlnb.metrics import evaluate, precision_at_k
from mlnb.metrics.evaluation import _random_average_precision


@pytest.fixture
def scored(make_scored):
    return make_scored(1)


Q = np.array([0.3, 0.25, 0.15, 0.04, 0.03, 0.01, 0.9])  # "training" prevalences


@pytest.mark.parametrize("options", [{}, {"exclude": [1, 5], "top_k": 3}, {"top_k": 9}])
def test_always_no_is_evaluate_on_scores_of_minus_infinity(scored, options):
    Y, scores = scored
    baseline = evaluate(Y, scores, **options).baselines["always_no"]
    constant = evaluate(Y, np.full(Y.shape, -np.inf), **options).summary
    assert set(baseline) <= set(constant)
    for key, value in baseline.items():
        assert value == pytest.approx(constant[key], abs=1e-12), key
    assert baseline["mean_log_loss"] == np.inf and baseline["micro_f1"] == 0.0


def test_prevalence_random_probability_metrics_are_those_of_the_constant_prior(scored):
    Y, scores = scored
    ev = evaluate(Y, scores, train_prevalence=Q)
    constant = evaluate(Y, np.broadcast_to(logit(Q), Y.shape)).summary
    for key in ("mean_log_loss", "mean_brier", "mean_expected_accuracy"):
        assert ev.baselines["prevalence_random"][key] == pytest.approx(constant[key], abs=1e-12), key
    assert ev.summary["baseline_prevalence"] == "train"
    # without training prevalences: the test prevalences (of the evaluable categories: 0 < π < 1)
    pi = Y.mean(axis=0)[:5]
    test_prior = evaluate(Y[:, :5], scores[:, :5])
    constant = evaluate(Y[:, :5], np.broadcast_to(logit(pi), (800, 5))).summary
    assert test_prior.summary["baseline_prevalence"] == "test"
    for key in ("mean_log_loss", "mean_brier", "mean_expected_accuracy"):
        assert test_prior.baselines["prevalence_random"][key] == pytest.approx(constant[key], abs=1e-12), key


def test_prevalence_random_decisions_by_hand_and_by_simulation(scored):
    Y, scores = scored
    kept = slice(0, 5)
    pi, q = Y.mean(axis=0)[kept], Q[kept]
    base = evaluate(Y, scores, train_prevalence=Q).baselines["prevalence_random"]
    assert base["macro_recall"] == pytest.approx(q.mean(), abs=1e-15)
    assert base["macro_precision"] == pytest.approx(pi.mean(), abs=1e-15)
    assert base["macro_f1"] == pytest.approx(np.mean(2 * pi * q / (pi + q)), abs=1e-15)
    assert base["mean_accuracy"] == pytest.approx(np.mean(pi * q + (1 - pi) * (1 - q)), abs=1e-15)
    n_pos = Y.sum(axis=0)
    assert base["micro_recall"] == pytest.approx(Q @ n_pos / n_pos.sum(), abs=1e-15)
    assert base["micro_precision"] == pytest.approx(Q @ n_pos / (Q.sum() * 800), abs=1e-15)
    assert base["macro_auc"] == base["micro_auc"] == 0.5

    rng = np.random.default_rng(11)
    draws = [evaluate(Y, scores, decisions=rng.random(Y.shape) < Q).summary for _ in range(100)]
    for key in ("macro_recall", "micro_recall", "mean_accuracy", "macro_precision", "micro_precision"):
        values = np.array([d[key] for d in draws])  # expectations that the closed forms give exactly
        assert abs(values.mean() - base[key]) < 4 * values.std() / np.sqrt(values.size) + 1e-6, key
    for key in ("macro_f1", "micro_f1"):  # F1 of the expected counts: close to, not equal to, E[F1]
        assert np.mean([d[key] for d in draws]) == pytest.approx(base[key], abs=0.01), key


@pytest.mark.parametrize("n, n_pos", [(6, 2), (7, 1), (5, 5), (8, 3), (2, 1)])
def test_random_average_precision_is_the_mean_over_every_order(n, n_pos):
    ranks = -np.arange(n, dtype=float)  # distinct scores: which places the positives take is all that matters
    values = [average_precision_score(np.isin(np.arange(n), places), ranks)
              for places in combinations(range(n), n_pos)]
    assert _random_average_precision(n, n_pos) == pytest.approx(np.mean(values), abs=1e-12)


def test_random_example_based_ranking_is_the_mean_over_every_order():
    Y = np.array([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 1], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1],
                  [0, 1, 0, 1, 0]])
    K = Y.shape[1]
    ev = evaluate(Y, np.zeros(Y.shape), top_k=2)
    expected = {"label_ranking_average_precision": [], "coverage_error": [], "label_ranking_loss": [],
                "precision_at_k": []}
    ranks = -np.arange(K, dtype=float)[None, :]
    for labels in Y.sum(axis=1):
        rows = [np.isin(np.arange(K), places)[None, :] for places in combinations(range(K), labels)]
        expected["label_ranking_average_precision"].append(
            np.mean([label_ranking_average_precision_score(r, ranks) for r in rows]))
        expected["coverage_error"].append(np.mean([coverage_error(r, ranks) for r in rows]))
        expected["label_ranking_loss"].append(np.mean([label_ranking_loss(r, ranks) for r in rows]))
        expected["precision_at_k"].append(np.mean([precision_at_k(r, ranks, 2) for r in rows]))
    for key, values in expected.items():
        assert ev.baselines["prevalence_random"][key] == pytest.approx(np.mean(values), abs=1e-12), key


def test_train_prevalence_is_checked(scored):
    Y, scores = scored
    with pytest.raises(MlnbError, match=r"train_prevalence must have one value per category \(7\)"):
        evaluate(Y, scores, train_prevalence=Q[:3])
    with pytest.raises(MlnbError, match=r"train_prevalence must hold values in \[0, 1\]"):
        evaluate(Y, scores, train_prevalence=Q * 2)


@pytest.mark.parametrize("options", [{}, {"top_k": 3}, {"exclude": [0, 3]}])
def test_prior_baseline_row_is_the_prior_baseline_model_evaluated(scored, options):
    """The ``prior`` row's rank metrics are exactly those of the ``prior_baseline`` model (b the
    smoothed training log-odds, W = 0) fitted on the training labels and evaluated like any model;
    its micro AUC is far above the trivial baselines' ½ (the frequent categories' pairs rank first)."""
    from mlnb.models.prior import PriorBaseline

    Y, scores = scored
    rng = np.random.default_rng(5)
    Y_train = rng.random((1000, 7)) < np.array([0.35, 0.2, 0.1, 0.1, 0.03, 0.0, 1.0])
    Y_train[:, 3] = np.roll(Y_train[:, 2], 1)  # two categories with one training count: tied priors
    prior = PriorBaseline().fit(np.eye(1000, 4), Y_train).decision_function(np.eye(len(Y), 4))
    row = evaluate(Y, scores, Y_train=Y_train, **options).baselines["prior"]
    model = evaluate(Y, prior, Y_train=Y_train, **options).summary
    for key in ("macro_auc", "micro_auc", "micro_average_precision", "precision_at_k"):
        assert row[key] == pytest.approx(model[key], abs=1e-12), key
    assert row["micro_auc"] > 0.6
