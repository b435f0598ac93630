"""evaluate_multiclass() and class_log_odds() against sklearn.metrics, by hand, and under saturation."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp, softmax
from sklearn.metrics import (accuracy_score, balanced_accuracy_score, confusion_matrix, f1_score,
                             log_loss, precision_score, recall_score, roc_auc_score,
                             top_k_accuracy_score)

from mlnb.errors import MlnbError
from mlnb.metrics import Evaluation, MulticlassEvaluation, class_log_odds, evaluate, evaluate_multiclass

K = 5
LABELS = list(range(K))


def _oracle_log_odds(J):
    """L_k = J_k − logsumexp_{j≠k} J_j, one class at a time with scipy (the definition)."""
    return np.column_stack([J[:, k] - logsumexp(np.delete(J, k, axis=1), axis=1) for k in range(J.shape[1])])


@pytest.fixture
def random_scores():
    rng = np.random.default_rng(11)
    y = rng.integers(0, K, size=700)
    J = rng.normal(size=(700, K)) + 1.2 * np.eye(K)[y]  # informative but far from perfect
    return y, J


@pytest.fixture
def saturated_scores():
    # classes 1000 apart (an informative order, plus noise): P(k|x) is exactly 0 or 1 in float64
    rng = np.random.default_rng(12)
    y = rng.integers(0, K, size=700)
    order = np.argsort(np.argsort(rng.normal(size=(700, K)) + 1.2 * np.eye(K)[y], axis=1), axis=1)
    return y, 1000.0 * order + rng.normal(size=(700, K))


def test_class_log_odds_by_hand():
    # P = 1/6, 2/6, 3/6: L = log(1/5), log(2/4), log(3/3)
    np.testing.assert_allclose(class_log_odds(np.log([[1.0, 2.0, 3.0]])),
                               [[-np.log(5), -np.log(2), 0.0]], atol=1e-15)
    # gaps of 1 and 1000: L_2 = −1000 − log(1 + e^−1), where P_2 = 0 in float64
    L = class_log_odds([[1000.0, 999.0, 0.0]])
    np.testing.assert_allclose(L, [[1.0, -1.0, -1000.0 - np.log1p(np.exp(-1.0))]], rtol=1e-15)
    P = softmax([[1000.0, 999.0, 0.0]], axis=1)
    with np.errstate(divide="ignore"):
        assert np.log(P[0, 2]) - np.log1p(-P[0, 2]) == -np.inf  # the naive formula fails there
    np.testing.assert_array_equal(class_log_odds([[0.0, -1000.0, -2000.0]]), [[1000.0, -1000.0, -2000.0]])
    # K = 2: L = ±(J_0 − J_1) exactly, however large the gap
    J2 = np.array([[3.5, -1.25], [-7.0, 1e4], [0.0, 0.0]])
    L2 = class_log_odds(J2)
    np.testing.assert_array_equal(L2[:, 0], J2[:, 0] - J2[:, 1])
    np.testing.assert_array_equal(L2[:, 1], -L2[:, 0])
    # a class ruled out (-inf) has L = -inf; the only class left has L = +inf
    np.testing.assert_array_equal(class_log_odds([[3.0, -np.inf]]), [[np.inf, -np.inf]])
    assert class_log_odds([[3.0, -np.inf, 1.0]])[0, 1] == -np.inf
    assert class_log_odds([[1.0, 2.0]], dtype=np.float32).dtype == np.float32


def test_class_log_odds_ties_in_J_stay_ties():
    J = np.array([[3.0, 3.0, 1.0, 1.0, -2.0], [0.5, 2.0, 0.5, 2.0, 2.0], [1.0, 1.0, 1.0, 1.0, 1.0],
                  [9.0, 4.0, 4.0, 4.0, -1.0]])
    L = class_log_odds(J)
    for row_J, row_L in zip(J, L):
        same = row_J[:, None] == row_J[None, :]
        np.testing.assert_array_equal(row_L[:, None] == row_L[None, :], same)
        np.testing.assert_array_equal(np.argsort(-row_L, kind="stable"), np.argsort(-row_J, kind="stable"))
    np.testing.assert_allclose(L[2], np.log(1 / 4), rtol=1e-15)


def test_class_log_odds_against_definition_and_naive_formula(random_scores, saturated_scores):
    for _, J in (random_scores, saturated_scores):
        np.testing.assert_allclose(class_log_odds(J), _oracle_log_odds(J), rtol=1e-12, atol=1e-9)
    J = random_scores[1] * 3.0
    P = softmax(J, axis=1)
    finite = (P > 1e-6) & (P < 1 - 1e-6)
    assert finite.mean() > 0.9
    np.testing.assert_allclose(class_log_odds(J)[finite], (np.log(P) - np.log1p(-P))[finite], atol=1e-9)
    # blocks of rows give the same answer as one block
    from mlnb.metrics import multiclass

    J = saturated_scores[1]
    whole = class_log_odds(J)
    small = multiclass.BLOCK_ROWS
    try:
        multiclass.BLOCK_ROWS = 64
        np.testing.assert_array_equal(class_log_odds(J), whole)
    finally:
        multiclass.BLOCK_ROWS = small


@pytest.mark.parametrize("fixture", ["random_scores", "saturated_scores"])
def test_decision_metrics_equal_sklearn(fixture, request):
    y, J = request.getfixturevalue(fixture)
    ev = evaluate_multiclass(y, J)
    predicted = J.argmax(axis=1)
    assert isinstance(ev, MulticlassEvaluation) and isinstance(ev, Evaluation)
    np.testing.assert_array_equal(ev.predicted, predicted)
    np.testing.assert_array_equal(ev.true, y)
    np.testing.assert_array_equal(ev.confusion, confusion_matrix(y, predicted, labels=LABELS))
    assert ev.confusion.dtype == np.int64
    s, table = ev.summary, ev.per_category
    assert s["task"] == "multiclass" and s["n_classes"] == K
    assert s["accuracy"] == pytest.approx(accuracy_score(y, predicted), abs=1e-12)
    assert s["micro_f1"] == pytest.approx(s["accuracy"], abs=1e-12)  # single-label: micro F1 = accuracy
    assert s["micro_f1"] == pytest.approx(f1_score(y, predicted, average="micro"), abs=1e-12)
    assert s["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y, predicted), abs=1e-12)
    for average in ("macro", "weighted"):
        assert s[f"{average}_f1"] == pytest.approx(f1_score(y, predicted, average=average), abs=1e-12)
    assert s["macro_precision"] == pytest.approx(precision_score(y, predicted, average="macro",
                                                                 zero_division=0), abs=1e-12)
    assert s["macro_recall"] == pytest.approx(recall_score(y, predicted, average="macro"), abs=1e-12)
    np.testing.assert_allclose(table["f1"], f1_score(y, predicted, average=None, labels=LABELS), atol=1e-12)
    np.testing.assert_allclose(table["precision"], precision_score(y, predicted, average=None, labels=LABELS,
                                                                   zero_division=0), atol=1e-12)
    np.testing.assert_allclose(table["recall"], recall_score(y, predicted, average=None, labels=LABELS),
                               atol=1e-12)
    np.testing.assert_allclose(table["accuracy"], [accuracy_score(y == k, predicted == k) for k in LABELS],
                               atol=1e-12)
    assert (table[["tp", "fp", "fn", "tn"]].sum(axis=1) == len(y)).all()
    assert s["mean_accuracy"] == pytest.approx(table["accuracy"].mean(), abs=1e-12)


def test_rank_and_probability_metrics_equal_sklearn_on_random_scores(random_scores):
    y, J = random_scores
    P = softmax(J, axis=1)
    ev = evaluate_multiclass(y, J, top_k=3)
    for k in LABELS:
        assert ev.per_category["auc"][k] == pytest.approx(roc_auc_score(y == k, P[:, k]), abs=1e-12)
    assert ev.summary["macro_auc"] == pytest.approx(
        roc_auc_score(y, P, multi_class="ovr", average="macro", labels=LABELS), abs=1e-12)
    assert ev.summary["log_loss"] == pytest.approx(log_loss(y, P, labels=LABELS), abs=1e-9)
    assert ev.summary["top_k_accuracy"] == pytest.approx(top_k_accuracy_score(y, J, k=3, labels=LABELS),
                                                         abs=1e-12)
    # one-vs-rest binary log loss per class, from P(k|x)
    Y = np.eye(K, dtype=bool)[y]
    expected = [log_loss(Y[:, k], P[:, k], labels=[False, True]) for k in LABELS]
    np.testing.assert_allclose(ev.per_category["log_loss"], expected, atol=1e-9)
    assert ev.calibration["count"].sum() == y.size * K
    assert ev.calibration["mean_predicted"].notna().all()


def test_saturated_scores_keep_exact_aucs_where_probabilities_tie(saturated_scores):
    y, J = saturated_scores
    P = softmax(J, axis=1)
    assert np.isin(P, (0.0, 1.0)).all()  # saturated: exactly 0 or 1 in float64
    ev = evaluate_multiclass(y, J)
    L = _oracle_log_odds(J)
    exact = np.array([roc_auc_score(y == k, L[:, k]) for k in LABELS])
    np.testing.assert_allclose(ev.per_category["auc"], exact, atol=1e-12)
    assert ev.summary["macro_auc"] == pytest.approx(exact.mean(), abs=1e-12)
    # the same AUCs from the saturated probabilities tie and come out lower
    from_probabilities = np.array([roc_auc_score(y == k, P[:, k]) for k in LABELS])
    assert np.all(exact - from_probabilities > 0.01)
    assert roc_auc_score(y, P, multi_class="ovr", labels=LABELS) < ev.summary["macro_auc"] - 0.01
    # log loss stays finite and exact; −log of a posterior that rounds to 0 does not
    log_posterior = J[np.arange(y.size), y] - logsumexp(J, axis=1)
    assert np.isfinite(ev.summary["log_loss"]) and ev.summary["log_loss"] > 100
    assert ev.summary["log_loss"] == pytest.approx(-log_posterior.mean(), rel=1e-12)
    with np.errstate(divide="ignore"):
        assert np.isinf(-np.log(P[np.arange(y.size), y])).any()
    assert ev.summary["top_k_accuracy"] == pytest.approx(top_k_accuracy_score(y, J, k=2, labels=LABELS),
                                                         abs=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 6])
def test_top_k_accuracy_breaks_ties_as_sklearn(k):
    rng = np.random.default_rng(3)
    y = rng.integers(0, K, size=400)
    J = rng.integers(0, 3, size=(400, K)).astype(float)  # many ties within rows
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns when k ≥ K
        expected = top_k_accuracy_score(y, J, k=k, labels=LABELS)
    assert evaluate_multiclass(y, J, top_k=k).summary["top_k_accuracy"] == pytest.approx(expected, abs=1e-12)


def test_tied_top_scores_rank_the_higher_index_first_for_top_k_but_not_for_argmax():
    J = np.array([[2.0, 2.0, 0.0], [2.0, 2.0, 0.0]])
    ev = evaluate_multiclass(np.array([0, 1]), J, top_k=1)
    np.testing.assert_array_equal(ev.predicted, [0, 0])  # argmax: the first maximum
    assert ev.summary["accuracy"] == 0.5
    assert ev.summary["top_k_accuracy"] == 0.5 == top_k_accuracy_score([0, 1], J, k=1, labels=[0, 1, 2])
    # top-1 by sklearn's rule hits the second document (class 1), argmax the first
    from mlnb.metrics.multiclass import top_k_hits

    np.testing.assert_array_equal(top_k_hits(np.array([0, 1]), J, 1), [False, True])


def test_precision_at_k_is_top_k_accuracy_over_k_without_ties(random_scores):
    y, J = random_scores
    ev = evaluate_multiclass(y, J, top_k=2)
    assert ev.summary["precision_at_k"] == pytest.approx(ev.summary["top_k_accuracy"] / 2, abs=1e-12)


def test_label_formats_agree_and_bad_rows_are_errors(random_scores):
    y, J = random_scores
    one_hot = np.eye(K, dtype=int)[y]
    by_labels = evaluate_multiclass(y, J, class_names=list("abcde"))
    for Y in (one_hot, sp.csr_matrix(one_hot), sp.csc_matrix(one_hot.astype(float))):
        other = evaluate_multiclass(Y, J, class_names=list("abcde"))
        assert other.summary == by_labels.summary
        np.testing.assert_array_equal(other.confusion, by_labels.confusion)
    assert list(by_labels.per_category["name"]) == list("abcde")
    two = one_hot.copy()
    two[3, (y[3] + 1) % K] = 1
    with pytest.raises(MlnbError, match="row 3 of Y_true has 2 classes.*exactly one"):
        evaluate_multiclass(two, J)
    none = one_hot.copy()
    none[5] = 0
    with pytest.raises(MlnbError, match="row 5 of Y_true has 0 classes"):
        evaluate_multiclass(sp.csr_matrix(none), J)
    with pytest.raises(MlnbError, match="class indices 0..4"):
        evaluate_multiclass(np.where(np.arange(y.size) == 0, K, y), J)
    with pytest.raises(MlnbError, match="integer class indices"):
        evaluate_multiclass(np.array(["a", "b", "c", "d"]), J[:4])
    with pytest.raises(MlnbError, match="integer class indices"):
        evaluate_multiclass(np.array([0.0, 1.5, 2.0, 3.0]), J[:4])
    with pytest.raises(MlnbError, match="labels but J has"):
        evaluate_multiclass(y[:-1], J)
    with pytest.raises(MlnbError, match="K ≥ 2"):
        evaluate_multiclass(np.zeros(4, dtype=int), np.zeros((4, 1)))
    with pytest.raises(MlnbError, match="NaN"):
        class_log_odds([[np.nan, 1.0]])
    with pytest.raises(MlnbError, match="row 1 is -inf"):
        class_log_odds([[0.0, 1.0], [-np.inf, -np.inf]])
    with pytest.raises(MlnbError, match="top_k must be a positive integer"):
        evaluate_multiclass(y, J, top_k=0)


def test_a_class_absent_from_the_test_set_is_excluded_from_macro_averages(random_scores):
    y, J = random_scores
    keep = y != 4  # class 4 never true (but still predicted sometimes)
    y, J = y[keep], J[keep]
    predicted = J.argmax(axis=1)
    assert (predicted == 4).any()
    ev = evaluate_multiclass(y, J)
    np.testing.assert_array_equal(ev.excluded, [4])
    present = [0, 1, 2, 3]
    P = softmax(J, axis=1)
    assert ev.summary["macro_auc"] == pytest.approx(np.mean([roc_auc_score(y == k, P[:, k]) for k in present]),
                                                    abs=1e-12)
    assert ev.summary["macro_f1"] == pytest.approx(f1_score(y, predicted, average="macro", labels=present),
                                                   abs=1e-12)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns about the predicted-only class
        assert ev.summary["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y, predicted),
                                                                abs=1e-12)
    assert ev.summary["weighted_f1"] == pytest.approx(f1_score(y, predicted, average="weighted",
                                                               labels=LABELS, zero_division=0), abs=1e-12)
    assert ev.summary["accuracy"] == pytest.approx(accuracy_score(y, predicted), abs=1e-12)


def test_multiclass_summary_keeps_every_multilabel_key(random_scores):
    y, J = random_scores
    multilabel = evaluate(np.eye(K, dtype=int)[y], class_log_odds(J), task="multilabel").summary  # one-vs-rest
    multiclass = evaluate_multiclass(y, J).summary
    assert set(multilabel) <= set(multiclass)
    # the rank and probability keys are the same numbers; the decision keys are argmax's
    for key in ("macro_auc", "micro_auc", "mean_log_loss", "mean_brier", "mean_expected_accuracy",
                "precision_at_k", "n_evaluable"):
        assert multiclass[key] == multilabel[key]
    ev = evaluate_multiclass(y, J, roc_points=11)
    assert ev.roc_tpr.shape == (K, 11) and ev.roc_lift.shape == (K, 10) and ev.depth_lift.shape == (K, 10)
