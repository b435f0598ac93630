"""Verdicts of a paired comparison: the paired bootstrap of the macro AUC difference first, the sign
test only where it has power, DeLong + Holm otherwise — alike for multiclass and multilabel tasks."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import roc_auc_score

from mlnb.metrics.comparison import compare_scores
from mlnb.metrics.multiclass import class_log_odds


def _multiclass(rng, n=1500, K=5):
    """One-hot labels and two models' joint scores: a separates the classes clearly better than b."""
    y = rng.integers(0, K, n)
    noise = rng.normal(size=(n, K))
    J_a = noise + 1.6 * np.eye(K)[y]
    J_b = noise + 1.35 * np.eye(K)[y] + 0.3 * rng.normal(size=(n, K))
    return sp.csr_matrix(np.eye(K)[y]), class_log_odds(J_a), class_log_odds(J_b)


def test_multiclass_clear_difference_has_a_winner():
    # 5 classes, macro AUC higher by ~0.05 and most classes significant: the sign test alone could
    # never say so (its smallest p with 5 classes is 0.0625), the paired bootstrap and DeLong do
    Y, a, b = _multiclass(np.random.default_rng(0))
    names = [f"c{k}" for k in range(5)]
    with_bootstrap = compare_scores(Y, a, b, names, np.full(5, 300), name_a="mnb", name_b="bnb", n_boot=200)
    macro = np.mean([roc_auc_score(Y[:, k].toarray().ravel(), a[:, k]) - roc_auc_score(Y[:, k].toarray().ravel(),
                                                                                            b[:, k]) for k in range(5)])
    assert with_bootstrap.macro_difference == pytest.approx(macro)
    assert 0.03 < macro < 0.08
    assert with_bootstrap.counts()["a_significantly_better"] >= 3
    assert not with_bootstrap.sign_test_has_power()
    low, high = with_bootstrap.macro_interval
    assert 0 < low < macro < high
    assert with_bootstrap.verdict().winner == "mnb" and with_bootstrap.verdict().basis == "bootstrap"
    without = compare_scores(Y, a, b, names, np.full(5, 300), name_a="mnb", name_b="bnb")
    assert without.macro_interval is None
    assert (without.verdict().winner, without.verdict().basis) == ("mnb", "delong")
    summary = with_bootstrap.summary()
    assert summary["verdict"] == {"winner": "mnb", "basis": "bootstrap", "sign_test_has_power": False}
    assert summary["macro_auc_difference"]["low"] == low


def test_binary_task_without_difference_has_no_winner():
    rng = np.random.default_rng(1)
    y = rng.random(600) < 0.3
    a = rng.normal(size=600) + y  # two models of the same quality, independent errors
    b = rng.normal(size=600) + y
    comparison = compare_scores(y[:, None], a[:, None], b[:, None], ["yes"], [180], n_boot=200)
    verdict = comparison.verdict()
    assert verdict.winner is None and not verdict.sign_test_has_power
    low, high = comparison.macro_interval
    assert low < 0 < high


def test_sign_test_decides_only_where_it_has_power():
    # the smallest two-sided p of the sign test with t categories is 2 · 2^−t: below 0.05 from t = 6
    rng = np.random.default_rng(2)
    for K, has_power in ((5, False), (6, True)):
        Y = rng.random((400, K)) < 0.3
        noise = rng.normal(size=Y.shape)
        a, b = noise + 1.2 * Y, noise + 1.0 * Y + 0.2 * rng.normal(size=Y.shape)
        comparison = compare_scores(Y, a, b, list(range(K)), np.full(K, 100))
        assert comparison.sign_test_has_power() is has_power
        if has_power and comparison.sign.p_value < 0.05:
            assert comparison.verdict().winner == "a"
