"""Across-corpora statistics against scipy and against Demšar's (2006) worked example."""

import numpy as np
import pytest
from scipy import stats

from mlnb.metrics.across_corpora import (MIN_CORPORA, average_ranks, critical_difference, friedman_from_ranks,
                                         friedman_test, nemenyi_q, pairwise_tests, signed_rank_test)

# Demšar (2006), Table 2 / Table 6: AUC of C4.5 (c = 0.25, m = 0) and C4.5 with m tuned, on 14 data sets
C45 = [.763, .599, .954, .628, .882, .936, .661, .583, .775, 1.000, .940, .619, .972, .957]
C45_M = [.768, .591, .971, .661, .888, .931, .668, .583, .838, 1.000, .962, .666, .981, .978]


def test_demsar_wilcoxon_example():
    """Demšar, section 3.1.3: R+ = 93, R− = 12 (zeros' ranks split), T = 12 < 21, the critical value
    for N = 14 at α = 0.05: C4.5+m is better."""
    result = signed_rank_test(C45_M, C45)
    assert (result.r_plus, result.r_minus, result.statistic) == (93.0, 12.0, 12.0)
    assert not result.exact and result.p_value < 0.05
    # the same statistic and normal approximation as scipy's zsplit
    oracle = stats.wilcoxon(C45_M, C45, zero_method="zsplit", method="approx", correction=False)
    assert result.statistic == oracle.statistic and result.p_value == pytest.approx(oracle.pvalue, rel=1e-12)


def test_demsar_friedman_and_nemenyi_example():
    """Demšar, section 3.2.2: average ranks 3.143, 2.000, 2.893, 1.964 over N = 14 give χ²_F = 9.28 and
    F_F = 3.69 (critical F(3, 39) = 2.85 at 0.05); CD = 1.25 at α = 0.05 (q = 2.569), 1.12 at 0.10."""
    result = friedman_from_ranks(np.array([3.143, 2.000, 2.893, 1.964]), 14)
    assert result.chi2 == pytest.approx(9.28, abs=0.01)
    assert result.f_statistic == pytest.approx(3.69, abs=0.01)
    assert result.df == (3, 39) and result.f_p_value < 0.05
    assert stats.f.ppf(0.95, 3, 39) == pytest.approx(2.85, abs=0.01)
    assert critical_difference(4, 14, 0.05) == pytest.approx(1.25, abs=0.005)
    assert critical_difference(4, 14, 0.10) == pytest.approx(1.12, abs=0.005)


def test_nemenyi_q_is_demsar_table_5():
    table = {2: 1.960, 3: 2.343, 4: 2.569, 5: 2.728, 6: 2.850, 7: 2.949, 8: 3.031, 9: 3.102, 10: 3.164}
    for k, q in table.items():
        assert nemenyi_q(k, 0.05) == pytest.approx(q, abs=0.0015)
    assert nemenyi_q(2, 0.10) == pytest.approx(1.645, abs=0.001)


@pytest.mark.parametrize("seed", range(6))
def test_friedman_equals_scipy_with_and_without_ties(seed):
    rng = np.random.default_rng(seed)
    N, k = int(rng.integers(3, 15)), int(rng.integers(3, 6))
    table = rng.normal(size=(N, k)) + np.arange(k) * 0.3
    if seed % 2:  # ties within corpora: scipy corrects for them
        table = np.round(table, 0)
    ours = friedman_test(table)
    oracle = stats.friedmanchisquare(*table.T)
    assert ours.chi2 == pytest.approx(oracle.statistic, rel=1e-10)
    assert ours.chi2_p_value == pytest.approx(oracle.pvalue, rel=1e-8)
    # ranks: 1 = best (highest); a loss ranks the other way
    np.testing.assert_allclose(average_ranks(table) + average_ranks(table, higher_is_better=False), k + 1)
    N_F = ours.n_corpora
    assert ours.f_statistic == pytest.approx((N_F - 1) * ours.chi2 / (N_F * (k - 1) - ours.chi2))


def test_friedman_when_every_corpus_agrees_has_no_iman_davenport_p():
    """χ²_F = N(k − 1) makes F_F's denominator 0: F_F is undefined, not infinite with p = 0."""
    table = np.array([[0.9, 0.8, 0.7]] * 5)
    result = friedman_test(table)
    assert result.chi2 == pytest.approx(10.0) and np.isnan(result.f_p_value) and np.isnan(result.f_statistic)
    assert "every corpus ranks the models alike" in result.undefined
    np.testing.assert_array_equal(result.average_ranks, [1, 2, 3])


def test_friedman_over_two_corpora_has_no_iman_davenport_p():
    """The issue's bench: 2 corpora ranking 3 models alike, χ²_F = 4 (p = 0.135) was reported with
    F_F = inf, p = 0."""
    result = friedman_test(np.array([[0.9, 0.8, 0.7], [0.95, 0.85, 0.75]]))
    assert result.chi2_p_value == pytest.approx(stats.chi2.sf(4.0, 2)) and np.isnan(result.f_p_value)
    assert result.undefined == "it needs at least 3 corpora, and there are 2"
    disagreeing = friedman_test(np.array([[0.9, 0.8, 0.7], [0.7, 0.95, 0.85]]))
    assert disagreeing.undefined and np.isnan(disagreeing.f_p_value)


def test_nemenyi_cannot_find_a_difference_with_two_corpora():
    """Why the bench does not test it with 2 corpora: at α = 0.05 the CD exceeds k − 1, the largest
    possible difference of average ranks."""
    assert all(critical_difference(k, MIN_CORPORA - 1) > k - 1 for k in range(2, 30))
    assert critical_difference(3, MIN_CORPORA) < 3 - 1


@pytest.mark.parametrize("seed", range(8))
def test_signed_rank_equals_scipy(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(5, 30))
    a, b = rng.normal(size=n), rng.normal(size=n) + 0.3
    if seed >= 4:  # ties and zeros: the normal approximation with zeros split
        a, b = np.round(a, 1), np.round(b, 1)
        b[:2] = a[:2]
    ours = signed_rank_test(a, b)
    if ours.exact:
        oracle = stats.wilcoxon(a, b, method="exact")
    else:
        oracle = stats.wilcoxon(a, b, zero_method="zsplit", method="approx", correction=False)
    assert ours.statistic == pytest.approx(oracle.statistic)
    assert ours.p_value == pytest.approx(oracle.pvalue, rel=1e-9)
    assert ours.exact == (seed < 4)


def test_pairwise_tests_holm_and_nemenyi():
    rng = np.random.default_rng(7)
    table = np.column_stack([rng.normal(0.8, 0.05, 12) + d for d in (0.0, 0.05, 0.051)])
    frame = pairwise_tests(table, ["x", "y", "z"])
    assert list(zip(frame["a"], frame["b"])) == [("x", "y"), ("x", "z"), ("y", "z")]
    p = frame["p_value"].to_numpy()
    order = np.argsort(p)
    assert frame["p_holm"].to_numpy()[order[0]] == pytest.approx(min(1, 3 * p[order[0]]))
    assert (frame["a_wins"] + frame["a_losses"] + frame["ties"] == 12).all()
    cd = critical_difference(3, 12)
    assert (frame["nemenyi_significant"] == (frame["rank_difference"].abs() >= cd)).all()
    with pytest.raises(ValueError, match="NaN"):
        pairwise_tests(np.array([[0.5, np.nan], [0.5, 0.6]]), ["a", "b"])
