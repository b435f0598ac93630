"""evaluate(): decisions, calibrated probabilities, exclusions and the new summary keys, against sklearn."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit
from sklearn.metrics import (average_precision_score, brier_score_loss, coverage_error, f1_score,
                             label_ranking_average_precision_score, label_ranking_loss, log_loss,
                             precision_score, recall_score, roc_auc_score)

from mlnb.errors import MlnbError
from mlnb.metrics import evaluate, evaluate_multiclass, precision_at_k
from mlnb.metrics.evaluation import PER_CATEGORY_COLUMNS

DECISION_COLUMNS = ["tp", "fp", "fn", "tn", "accuracy", "precision", "recall", "f1"]


@pytest.fixture
def scored():
    rng = np.random.default_rng(2)
    Y = rng.random((800, 7)) < np.array([0.4, 0.2, 0.1, 0.05, 0.02, 0.0, 1.0])
    scores = np.round(rng.normal(size=Y.shape) + 1.8 * Y - 1.0, 1)  # ties within columns and rows
    return Y, scores


@pytest.fixture
def decided(scored):
    """Decisions of a rule other than the threshold: a per-category cut, category 3 never yes."""
    Y, scores = scored
    D = scores >= np.array([0.5, -0.5, 1.0, 99.0, 0.0, 0.3, -0.2])
    return Y, scores, D


@pytest.mark.parametrize("form", [lambda D: D, lambda D: D.astype(np.int8), sp.csr_matrix,
                                  lambda D: sp.csc_matrix(D.astype(float))])
def test_threshold_decisions_given_as_decisions_change_nothing(scored, form):
    Y, scores = scored
    plain = evaluate(Y, scores)
    given = evaluate(Y, scores, decisions=form(scores >= 0))
    assert list(given.per_category.columns) == PER_CATEGORY_COLUMNS
    assert given.per_category.equals(plain.per_category)
    assert given.summary == plain.summary


def test_decision_metrics_come_from_the_decisions(decided):
    Y, scores, D = decided
    plain = evaluate(Y, scores)
    ev = evaluate(sp.csr_matrix(Y), scores, decisions=sp.csr_matrix(D))
    table = ev.per_category
    kept = [0, 1, 2, 3, 4]
    for k in range(7):
        assert table["precision"][k] == pytest.approx(precision_score(Y[:, k], D[:, k], zero_division=0), abs=1e-12)
        assert table["recall"][k] == pytest.approx(recall_score(Y[:, k], D[:, k], zero_division=0), abs=1e-12)
        assert table["f1"][k] == pytest.approx(f1_score(Y[:, k], D[:, k], zero_division=0), abs=1e-12)
        assert table["tp"][k] == np.sum(Y[:, k] & D[:, k]) and table["tn"][k] == np.sum(~Y[:, k] & ~D[:, k])
    assert ev.summary["micro_f1"] == pytest.approx(f1_score(Y, D, average="micro"), abs=1e-12)
    assert ev.summary["macro_f1"] == pytest.approx(f1_score(Y, D, average="macro", labels=kept, zero_division=0),
                                                   abs=1e-12)
    assert ev.summary["n_no_positive_predictions"] == 1  # category 3 (5 and 6 are not evaluable)
    assert plain.summary["n_no_positive_predictions"] == 0
    # the rank and probability metrics do not see the decisions
    for column in ("auc", "average_precision", "log_loss", "brier", "expected_accuracy"):
        np.testing.assert_array_equal(ev.per_category[column], plain.per_category[column])
    dense = evaluate(Y, scores, decisions=D.astype(float))
    assert dense.per_category[DECISION_COLUMNS].equals(ev.per_category[DECISION_COLUMNS])


def test_decisions_are_checked(scored):
    Y, scores = scored
    with pytest.raises(MlnbError, match="decisions must hold only 0/1"):
        evaluate(Y, scores, decisions=np.where(scores > 0, 2, 0))
    with pytest.raises(MlnbError, match="decisions must hold only 0/1"):
        evaluate(Y, scores, decisions=sp.csr_matrix(np.where(scores > 0, 0.5, 0)))
    with pytest.raises(MlnbError, match="decisions has shape"):
        evaluate(Y, scores, decisions=np.zeros((800, 3)))


def test_probability_scores_feed_the_probability_metrics_only(scored):
    Y, scores = scored
    calibrated = np.round(scores / 2, 0)  # heavily tied, like an isotonic fit
    ev = evaluate(Y, scores, probability_scores=calibrated)
    plain = evaluate(Y, scores)
    p = expit(calibrated)
    for k in range(7):
        assert ev.per_category["log_loss"][k] == pytest.approx(log_loss(Y[:, k], p[:, k], labels=[0, 1]),
                                                               abs=1e-12)
        assert ev.per_category["brier"][k] == pytest.approx(brier_score_loss(Y[:, k], p[:, k], pos_label=1),
                                                            abs=1e-12)
        assert ev.per_category["expected_accuracy"][k] == pytest.approx(
            np.mean(np.where(Y[:, k], p[:, k], 1 - p[:, k])), abs=1e-12)
    for column in ("auc", "average_precision", *DECISION_COLUMNS):  # ranks and decisions from the scores
        np.testing.assert_array_equal(ev.per_category[column], plain.per_category[column])
    assert ev.summary["micro_auc"] == plain.summary["micro_auc"]
    bins = np.minimum((p * 10).astype(int), 9).ravel()  # the calibration table bins σ(calibrated)
    counts = np.bincount(bins, minlength=10)
    np.testing.assert_array_equal(ev.calibration["count"], counts)
    filled = counts > 0
    np.testing.assert_allclose(ev.calibration["mean_predicted"][filled],
                               np.bincount(bins, weights=p.ravel(), minlength=10)[filled] / counts[filled], rtol=1e-12)
    with pytest.raises(MlnbError, match="probability_scores: NaN score"):
        evaluate(Y, scores, probability_scores=np.full(Y.shape, np.nan))
    with pytest.raises(MlnbError, match="probability_scores has shape"):
        evaluate(Y, scores, probability_scores=calibrated[:, :3])


def test_probability_scores_may_be_infinite():
    Y = np.array([[1, 0], [0, 1], [1, 0], [0, 0]])
    z = np.array([[1.0, -1.0], [-1.0, 1.0], [0.5, 0.0], [0.0, 0.2]])
    u = np.array([[np.inf, -np.inf], [-np.inf, np.inf], [np.inf, -np.inf], [-np.inf, -np.inf]])
    ev = evaluate(Y, z, probability_scores=u)  # isotonic: probabilities exactly 0 and 1, all right
    np.testing.assert_array_equal(ev.per_category["log_loss"], [0.0, 0.0])
    np.testing.assert_array_equal(ev.per_category["brier"], [0.0, 0.0])
    wrong = evaluate(Y, z, probability_scores=-u)
    assert np.all(np.isinf(wrong.per_category["log_loss"])) and wrong.summary["mean_log_loss"] == np.inf


def test_numba_and_numpy_agree_with_probability_scores(scored):
    from mlnb.metrics._pointwise import pointwise_sums

    Y, scores = scored
    u = np.round(scores / 3, 1)
    fast, fast_bins = pointwise_sums(Y, scores, 0.0, 10, use_numba=True, probability_scores=u)
    slow, slow_bins = pointwise_sums(Y, scores, 0.0, 10, use_numba=False, probability_scores=u)
    for field in fast:
        np.testing.assert_allclose(fast[field], slow[field], rtol=1e-12, err_msg=field)
    np.testing.assert_allclose(fast_bins, slow_bins, rtol=1e-12)


def test_exclusions_leave_macro_averages_and_micro_pools(decided):
    Y, scores, D = decided
    ev = evaluate(Y, scores, decisions=D, exclude=[1, 5], top_k=2)
    kept, pooled = [0, 2, 3, 4], [0, 2, 3, 4, 6]  # 5 (no positives) and 6 (no negatives) stay pooled
    np.testing.assert_array_equal(ev.excluded, [1, 5, 6])
    assert list(ev.per_category["excluded"]) == ["", "untrainable", "", "", "", "untrainable",
                                                 "no test positive or negative"]
    assert ev.excluded_table["reason"].tolist() == ["untrainable", "untrainable", "no test positive or negative"]
    s = ev.summary
    assert (s["n_evaluable"], s["n_excluded"], s["n_excluded_untestable"], s["n_excluded_by_caller"]) == (4, 3, 1, 2)
    assert s["macro_auc"] == pytest.approx(roc_auc_score(Y[:, kept], scores[:, kept], average="macro"), abs=1e-12)
    assert s["macro_average_precision"] == pytest.approx(
        average_precision_score(Y[:, kept], scores[:, kept], average="macro"), abs=1e-12)
    assert s["macro_f1"] == pytest.approx(f1_score(Y[:, kept], D[:, kept], average="macro", zero_division=0),
                                          abs=1e-12)
    assert s["mean_log_loss"] == pytest.approx(ev.per_category["log_loss"][kept].mean(), abs=1e-15)
    Yp, Sp, Dp = Y[:, pooled], scores[:, pooled], D[:, pooled]
    assert s["micro_auc"] == pytest.approx(roc_auc_score(Yp, Sp, average="micro"), abs=1e-12)
    assert s["micro_average_precision"] == pytest.approx(average_precision_score(Yp, Sp, average="micro"),
                                                         abs=1e-12)
    assert s["micro_f1"] == pytest.approx(f1_score(Yp, Dp, average="micro"), abs=1e-12)
    assert s["micro_precision"] == pytest.approx(precision_score(Yp, Dp, average="micro"), abs=1e-12)
    assert s["precision_at_k"] == precision_at_k(Yp, Sp, 2)
    assert s["label_ranking_average_precision"] == pytest.approx(label_ranking_average_precision_score(Yp, Sp),
                                                                 abs=1e-12)
    assert s["coverage_error"] == pytest.approx(coverage_error(Yp, Sp), abs=1e-12)
    assert s["label_ranking_loss"] == pytest.approx(label_ranking_loss(Yp, Sp), abs=1e-12)
    # the excluded categories keep their own per-category values
    plain = evaluate(Y, scores, decisions=D)
    reasons = ["excluded", "included"]
    assert ev.per_category.drop(columns=reasons).equals(plain.per_category.drop(columns=reasons))


def test_exclusion_reasons_and_checks(scored):
    Y, scores = scored
    ev = evaluate(Y, scores, exclude={6: "no training negative", 2: "untrainable"})
    assert ev.per_category["excluded"][6] == "no training negative"  # the caller's reason wins
    np.testing.assert_array_equal(ev.excluded, [2, 5, 6])
    assert evaluate(Y, scores, exclude=[]).summary == evaluate(Y, scores).summary
    with pytest.raises(MlnbError, match=r"exclude: categories must be indices 0\.\.6, got 7"):
        evaluate(Y, scores, exclude=[7])
    with pytest.raises(MlnbError, match="reason for category 1 must be a non-empty string"):
        evaluate(Y, scores, exclude={1: ""})


def test_new_summary_keys_equal_sklearn(scored):
    Y, scores = scored
    ev = evaluate(sp.csr_matrix(Y), scores)
    kept = [0, 1, 2, 3, 4]
    for k in kept + [6]:
        assert ev.per_category["average_precision"][k] == pytest.approx(average_precision_score(Y[:, k],
                                                                                                scores[:, k]), abs=1e-12)
    assert np.isnan(ev.per_category["average_precision"][5])  # no positive
    s = ev.summary
    assert s["macro_average_precision"] == pytest.approx(
        average_precision_score(Y[:, kept], scores[:, kept], average="macro"), abs=1e-12)
    assert s["micro_average_precision"] == pytest.approx(average_precision_score(Y, scores, average="micro"),
                                                         abs=1e-12)
    assert s["label_ranking_average_precision"] == pytest.approx(label_ranking_average_precision_score(Y, scores),
                                                                 abs=1e-12)
    assert s["coverage_error"] == pytest.approx(coverage_error(Y, scores), abs=1e-12)
    assert s["label_ranking_loss"] == pytest.approx(label_ranking_loss(Y, scores), abs=1e-12)
    assert s["n_no_positive_predictions"] == 0 and s["baseline_prevalence"] == "test"


def test_multiclass_forwards_the_new_keywords():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 4, size=300)
    J = rng.normal(size=(300, 4)) + 1.5 * np.eye(4)[y]
    calibrated = np.round(rng.normal(size=(300, 4)), 1)
    q = np.array([0.1, 0.2, 0.3, 0.4])
    ev = evaluate_multiclass(y, J, probability_scores=calibrated, exclude=[3], train_prevalence=q)
    assert ev.per_category["excluded"].tolist() == ["", "", "", "untrainable"]
    assert ev.summary["macro_f1"] == pytest.approx(ev.per_category["f1"][:3].mean(), abs=1e-15)
    assert ev.summary["log_loss"] == pytest.approx(np.mean(np.logaddexp(0, -calibrated[np.arange(300), y])),
                                                   abs=1e-12)
    assert ev.per_category["log_loss"][0] == pytest.approx(log_loss(y == 0, expit(calibrated[:, 0])), abs=1e-12)
    assert ev.summary["accuracy"] == pytest.approx(np.mean(J.argmax(axis=1) == y), abs=1e-15)  # every class
    pi = np.bincount(y, minlength=4) / 300
    assert ev.baselines["prevalence_random"]["accuracy"] == pytest.approx(pi @ q, abs=1e-15)
    assert ev.baselines["prevalence_random"]["log_loss"] == pytest.approx(-pi @ np.log(q), abs=1e-15)
    assert ev.summary["baseline_prevalence"] == "train"
