"""DeLong, Holm, sign and McNemar tests against hand-worked examples, the bootstrap and scipy."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import binomtest, chi2, norm, rankdata
from sklearn.metrics import roc_auc_score

from mlnb.errors import MlnbError
from mlnb.metrics.comparison import compare_scores
from mlnb.metrics.significance import (McNemarResult, delong_covariance, delong_test, delong_tests, holm,
                                     mcnemar_test, sign_test)


@pytest.fixture
def tiny():
    # 4 positives, 5 negatives, ties within and across the classes in both columns
    y = np.array([1, 0, 0, 1, 0, 1, 0, 1, 0])
    a = np.array([2.0, 1.0, -1.0, 1.0, 0.0, 3.0, 1.0, 0.0, -2.0])
    b = np.array([1.0, 1.0, 0.0, 2.0, -1.0, 1.0, 2.0, -1.0, -1.0])
    return y, a, b


def _textbook(y, s):
    """AUC, V10, V01 straight from ψ(x, y) = 1 if x > y, ½ if x = y, 0 otherwise."""
    x, w = s[y == 1], s[y == 0]
    psi = (x[:, None] > w[None, :]) + 0.5 * (x[:, None] == w[None, :])
    return psi.mean(), psi.mean(axis=1), psi.mean(axis=0)


def test_hand_worked_delong_matches_textbook_definitions(tiny):
    y, a, b = tiny
    m, n = 4, 5
    auc_a, v10_a, v01_a = _textbook(y, a)
    auc_b, v10_b, v01_b = _textbook(y, b)
    # by hand: ψ sums 16.5 and 12.5 over the 20 pairs
    assert (auc_a, auc_b) == (16.5 / 20, 12.5 / 20)
    s10 = np.cov(np.c_[v10_a, v10_b], rowvar=False, ddof=1)  # denominator m − 1
    s01 = np.cov(np.c_[v01_a, v01_b], rowvar=False, ddof=1)  # denominator n − 1
    cov = s10 / m + s01 / n
    var_diff = cov[0, 0] + cov[1, 1] - 2 * cov[0, 1]
    # V10_a − V10_b = (.3, −.1, .3, .3): SS .12 → .04/4; V01_a − V01_b: SS .14375 → .0359375/5
    assert var_diff == pytest.approx(0.04 / 4 + 0.0359375 / 5, abs=1e-15)  # = 11/640

    aucs, covariance = delong_covariance(y, np.c_[a, b])
    np.testing.assert_allclose(aucs, [roc_auc_score(y, a), roc_auc_score(y, b)], atol=1e-12)
    np.testing.assert_allclose(covariance, cov, atol=1e-12)

    result = delong_test(y, a, b)
    assert result.auc_a == pytest.approx(roc_auc_score(y, a), abs=1e-12)
    assert result.auc_b == pytest.approx(roc_auc_score(y, b), abs=1e-12)
    assert result.difference == pytest.approx(auc_a - auc_b, abs=1e-12)
    assert result.variance == pytest.approx(var_diff, abs=1e-12)
    z = (auc_a - auc_b) / np.sqrt(var_diff)
    assert result.z == pytest.approx(z, abs=1e-12)
    assert result.p_value == pytest.approx(2 * norm.sf(abs(z)), abs=1e-12)

    swapped = delong_test(y, b, a)
    assert (swapped.z, swapped.p_value) == pytest.approx((-result.z, result.p_value), abs=1e-12)


def test_general_covariance_of_three_columns_matches_textbook():
    rng = np.random.default_rng(3)
    y = rng.random(60) < 0.3
    S = np.round(rng.normal(size=(60, 3)) + y[:, None], 1)  # ties
    comps = [_textbook(y, S[:, r]) for r in range(3)]
    cov = (np.cov(np.column_stack([c[1] for c in comps]), rowvar=False) / y.sum()
           + np.cov(np.column_stack([c[2] for c in comps]), rowvar=False) / (~y).sum())
    aucs, covariance = delong_covariance(y, S)
    np.testing.assert_allclose(aucs, [roc_auc_score(y, S[:, r]) for r in range(3)], atol=1e-12)
    np.testing.assert_allclose(covariance, cov, atol=1e-12)
    # one column: a 1 × 1 matrix holding the variance of that AUC
    auc, var = delong_covariance(y, S[:, 0])
    assert var.shape == (1, 1) and var[0, 0] == pytest.approx(cov[0, 0], abs=1e-12)


def _bootstrap_aucs(scores_pos, scores_neg, pos_idx, neg_idx):
    """AUC of each stratified resample (rows of pos_idx / neg_idx), by ranks."""
    m = pos_idx.shape[1]
    both = np.concatenate([scores_pos[pos_idx], scores_neg[neg_idx]], axis=1)
    ranks = rankdata(both, axis=1)
    return (ranks[:, :m].sum(axis=1) - m * (m + 1) / 2) / (m * neg_idx.shape[1])


def test_delong_standard_deviation_matches_stratified_bootstrap():
    rng = np.random.default_rng(2024)
    y = rng.random(600) < 0.3
    shared = rng.normal(size=600)
    a = 1.0 * y + shared + 0.7 * rng.normal(size=600)
    b = 0.8 * y + shared + 0.7 * rng.normal(size=600)
    result = delong_test(y, a, b)

    pos, neg = np.flatnonzero(y), np.flatnonzero(~y)
    pos_idx = rng.integers(0, pos.size, size=(2000, pos.size))
    neg_idx = rng.integers(0, neg.size, size=(2000, neg.size))
    diffs = (_bootstrap_aucs(a[pos], a[neg], pos_idx, neg_idx)
             - _bootstrap_aucs(b[pos], b[neg], pos_idx, neg_idx))
    assert np.sqrt(result.variance) == pytest.approx(diffs.std(ddof=1), rel=0.10)


def test_null_rejection_rate_is_near_the_nominal_level():
    # 200 independent repetitions as 200 categories: same signal, independent noise of one size
    rng = np.random.default_rng(7)
    n, reps = 200, 200
    Y = rng.random((n, reps)) < 0.3
    signal = 1.0 * Y + rng.normal(size=(n, reps))
    a = signal + rng.normal(size=(n, reps))
    b = signal + rng.normal(size=(n, reps))
    table = delong_tests(sp.csr_array(Y.astype(np.int8)), a, b)
    assert 0.01 <= (table["p_value"] < 0.05).mean() <= 0.10
    assert (table["p_holm"] >= table["p_value"]).all()


def test_delong_tests_table_per_category_with_sparse_labels():
    rng = np.random.default_rng(5)
    Y = rng.random((300, 4)) < np.array([0.3, 0.1, 0.0, 0.2])  # category 2: no positives
    a = rng.normal(size=(300, 4)) + 1.5 * Y
    b = rng.normal(size=(300, 4)) + 0.5 * Y
    table = delong_tests(sp.csc_matrix(Y.astype(float)), a, b, categories=list("wxyz"))
    assert list(table.index) == list("wxyz")
    assert list(table.columns) == ["auc_a", "auc_b", "difference", "variance", "z", "p_value", "p_holm"]
    for k, name in enumerate("wxyz"):
        expected = delong_test(Y[:, k], a[:, k], b[:, k])
        np.testing.assert_allclose(table.loc[name, ["auc_a", "auc_b", "z", "p_value"]].to_numpy(float),
                                   [expected.auc_a, expected.auc_b, expected.z, expected.p_value])
    assert table.loc["y"].isna().all()
    np.testing.assert_allclose(table["p_holm"], holm(table["p_value"]))
    dense = delong_tests(Y, a, b)
    np.testing.assert_allclose(dense.to_numpy(), table.to_numpy())


def test_holm_hand_worked_and_with_nans():
    # sorted .01 .03 .04 .20 → ×4 ×3 ×2 ×1 = .04 .09 .08 .20 → running max .04 .09 .09 .20
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.20]), [0.04, 0.09, 0.09, 0.20])
    out = holm([np.nan, 0.01, 0.04, np.nan, 0.03, 0.20])  # NaNs do not count towards M
    np.testing.assert_allclose(out, [np.nan, 0.04, 0.09, np.nan, 0.09, 0.20])
    np.testing.assert_allclose(holm([0.6, 0.02, 0.55]), [1.0, 0.06, 1.0])  # .55×2 capped at 1
    assert holm([]).shape == (0,)
    assert np.isnan(holm([np.nan, np.nan])).all()
    p = np.random.default_rng(0).random(50) ** 3
    adjusted = holm(p)
    order = np.argsort(p)
    assert np.all(np.diff(adjusted[order]) >= 0) and adjusted.max() <= 1 and np.all(adjusted >= p)


def test_sign_test_counts_and_binomial_p_value():
    d = np.array([0.02, -0.01, 0.0, 0.03, np.nan, 0.005, 0.04, -0.002, 0.01])
    result = sign_test(d)
    assert (result.wins, result.losses, result.ties) == (5, 2, 1)
    assert result.p_value == pytest.approx(binomtest(5, 7, 0.5).pvalue, abs=1e-15)
    tolerant = sign_test(d, tie_tolerance=0.005)  # 0.0, 0.005, −0.002 are ties
    assert (tolerant.wins, tolerant.losses, tolerant.ties) == (4, 1, 3)
    assert tolerant.p_value == pytest.approx(binomtest(4, 5, 0.5).pvalue, abs=1e-15)
    assert sign_test([0.0, np.nan]).p_value == 1.0
    with pytest.raises(MlnbError):
        sign_test(d, tie_tolerance=-1)


def test_edge_cases_no_positives_and_identical_scores(tiny):
    y, a, b = tiny
    for labels in (np.zeros(9), np.ones(9)):
        result = delong_test(labels, a, b)
        assert all(np.isnan(v) for v in vars(result).values())
        assert np.isnan(delong_covariance(labels, np.c_[a, b])[1]).all()
    same = delong_test(y, a, a)
    assert (same.difference, same.variance, same.z, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    # a monotone transform ranks identically: the same test
    assert delong_test(y, a, np.exp(a)).p_value == 1.0
    one_positive = delong_test([1, 0, 0, 0], [3.0, 1, 2, 0], [2.0, 1, 3, 0])
    assert one_positive.auc_a == 1.0 and np.isnan(one_positive.p_value)


def test_bad_input_raises():
    with pytest.raises(MlnbError):
        delong_test([1, 0, 1], [1.0, 2.0], [1.0, 2.0])
    with pytest.raises(MlnbError):
        delong_test([1, 0], [1.0, np.nan], [1.0, 2.0])
    with pytest.raises(MlnbError):
        delong_tests(np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 3)))


def _correctness(b, c, both_right=7, both_wrong=3):
    """Per-document correctness with b (a right, b wrong) and c (a wrong, b right) discordant pairs."""
    a = [True] * b + [False] * c + [True] * both_right + [False] * both_wrong
    other = [False] * b + [True] * c + [True] * both_right + [False] * both_wrong
    order = np.random.default_rng(b * 100 + c).permutation(len(a))
    return np.array(a)[order], np.array(other)[order]


def test_mcnemar_exact_by_hand():
    a, b = _correctness(10, 2)
    result = mcnemar_test(a, b)
    # two-sided: 2 P(X ≤ 2), X ~ Bin(12, ½) = 2 (1 + 12 + 66) / 4096
    assert (result.b, result.c, result.method, result.statistic) == (10, 2, "exact", 2.0)
    assert result.p_value == pytest.approx(158 / 4096, abs=1e-15)
    assert result.p_value == pytest.approx(binomtest(10, 12, 0.5).pvalue, abs=1e-15)
    at_limit = mcnemar_test(*_correctness(20, 5))  # b + c = 25: still exact
    assert at_limit.method == "exact" and at_limit.p_value == pytest.approx(binomtest(5, 25, 0.5).pvalue)


def test_mcnemar_chi_square_by_hand():
    result = mcnemar_test(*_correctness(40, 20))
    # (|40 − 20| − 1)² / 60 = 361 / 60
    assert (result.b, result.c, result.method) == (40, 20, "chi2")
    assert result.statistic == pytest.approx(361 / 60, abs=1e-15)
    assert result.statistic == pytest.approx(6.017, abs=1e-3)
    assert result.p_value == pytest.approx(chi2.sf(361 / 60, df=1), abs=1e-15)
    assert result.p_value == pytest.approx(0.01417, abs=1e-5)
    just_over = mcnemar_test(*_correctness(20, 6))  # b + c = 26: χ² = 13² / 26 = 6.5
    assert just_over.method == "chi2" and just_over.statistic == pytest.approx(6.5, abs=1e-15)
    even = mcnemar_test(*_correctness(20, 20))  # the correction never goes below 0
    assert (even.statistic, even.p_value) == (0.0, 1.0)


def test_mcnemar_is_symmetric_and_handles_no_disagreement():
    for b, c in ((10, 2), (40, 20), (3, 0)):
        a, other = _correctness(b, c)
        forward, backward = mcnemar_test(a, other), mcnemar_test(other, a)
        assert (backward.b, backward.c) == (forward.c, forward.b)
        assert (backward.statistic, backward.p_value, backward.method) == \
            (forward.statistic, forward.p_value, forward.method)
    same = mcnemar_test([True, False, True], [True, False, True])
    assert same == McNemarResult(0, 0, 0.0, 1.0, "exact")
    assert mcnemar_test([1, 0, 1], np.array([0, 0, 1])).b == 1  # 0/1 as well as booleans
    with pytest.raises(MlnbError, match="3 documents but correct_b has 2"):
        mcnemar_test([True, False, True], [True, False])
    with pytest.raises(MlnbError, match="booleans or 0/1"):
        mcnemar_test([0, 2], [1, 1])


def test_comparison_carries_mcnemar_only_when_given():
    rng = np.random.default_rng(1)
    Y = rng.random((200, 3)) < 0.3
    a, b = rng.normal(size=(200, 3)) + Y, rng.normal(size=(200, 3)) + 0.5 * Y
    plain = compare_scores(Y, a, b, list("xyz"), [5, 6, 7])
    assert plain.mcnemar is None and "mcnemar" not in plain.summary()
    result = mcnemar_test(*_correctness(40, 20))
    with_test = compare_scores(Y, a, b, list("xyz"), [5, 6, 7], mcnemar=result)
    assert with_test.mcnemar is result
    assert with_test.summary()["mcnemar"] == {"a_right_b_wrong": 40, "a_wrong_b_right": 20,
                                              "statistic": result.statistic, "p_value": result.p_value,
                                              "method": "chi2"}
    assert {k: v for k, v in with_test.summary().items() if k != "mcnemar"} == plain.summary()
