"""The paired permutation test of an AUC difference: by hand, by brute force, in the comparison tables
(in memory and column by column alike), and its rejection rates under the null on a corpus shaped like
Reuters-21578's test set, where DeLong's normal z rejects far too often."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb.errors import MlnbError
from mlnb.metrics.auc_permutation import PERMUTATION_MAX, auc_permutation_test
from mlnb.metrics.comparison import compare_scores
from mlnb.metrics.significance import (auc_difference_tests, auc_difference_tests_by_column, delong_test,
                                     delong_tests, holm)


def _brute_force_p(y, a, b) -> float:
    """The module docstring's p straight from ψ: placements of each class against the other, every one
    of the 2^k sign flips of the smaller class written out."""
    y = np.asarray(y, dtype=bool)
    minority = y if y.sum() <= (~y).sum() else ~y

    def placements(s, inside):  # share of the other class scored below (ties ½)
        own, other = s[inside], s[~inside]
        return ((own[:, None] > other[None, :]) + 0.5 * (own[:, None] == other[None, :])).mean(axis=1)

    e = placements(a, minority) - placements(b, minority)
    f = placements(a, ~minority) - placements(b, ~minority)
    v_min, v_maj = (e ** 2).sum() / e.size ** 2, (f ** 2).sum() / f.size ** 2
    shrunk = abs(e.sum()) * np.sqrt(v_min / (v_min + v_maj)) if v_min > 0 else 0.0
    flips = [abs(np.dot(signs, e)) >= shrunk - 1e-9 for signs in itertools.product((1, -1), repeat=e.size)]
    return float(np.mean(flips))


def test_hand_worked_three_positives_that_delong_calls_certain():
    # a ranks the 3 positives above the 4 negatives, b below them: every placement difference e = 1,
    # every negative's f = −1. In units of 1/(2kl) = 1/24: e = (8, 8, 8), f = (−6, −6, −6, −6), so
    # Σe² = 192, Σf² = 144, the observed 24 shrinks to 24·√(192/336) = 18.1; of the 8 flips only
    # ±(8 + 8 + 8) reach it: p = 2/8. DeLong's variance is 0 here, its z infinite and p = 0.
    y = np.array([1, 1, 1, 0, 0, 0, 0])
    a = np.array([10.0, 11.0, 12.0, 0.0, 1.0, 2.0, 3.0])
    b = np.array([0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 13.0])
    result = auc_permutation_test(y, a, b)
    assert (result.difference, result.p_value, result.flipped) == (1.0, 0.25, 3)
    assert delong_test(y, a, b).p_value == 0.0
    assert auc_permutation_test(y, b, a).p_value == 0.25  # two-sided


@pytest.mark.parametrize("seed", range(12))
def test_p_value_equals_brute_force_over_every_sign_flip(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(9, 15))
    y = np.zeros(n, dtype=int)
    y[rng.choice(n, int(rng.integers(2, n - 1)), replace=False)] = 1  # positives or negatives the minority
    a = rng.integers(0, 5, n).astype(float)  # few values: ties within and across the classes
    b = np.round(rng.normal(size=n) + y, 1)
    result = auc_permutation_test(y, a, b)
    assert result.p_value == pytest.approx(_brute_force_p(y, a, b), abs=1e-15)
    assert result.difference == pytest.approx(delong_test(y, a, b).difference, abs=1e-15)
    assert result.flipped == min(y.sum(), n - y.sum())


def test_scale_free_edge_cases_and_refusals():
    rng = np.random.default_rng(3)
    y = (rng.random(400) < 0.03).astype(int)
    a, b = rng.normal(size=400) + y, rng.normal(size=400) + y
    p = auc_permutation_test(y, a, b).p_value
    assert auc_permutation_test(y, np.exp(a), 5 * b - 2).p_value == p  # each model's own monotone rescaling
    assert auc_permutation_test(y, a, a).p_value == 1.0  # no difference at all
    one = np.zeros(400, dtype=int)
    one[7] = 1
    assert np.isnan(auc_permutation_test(one, a, b).p_value)  # one positive: undefined, as DeLong's
    with pytest.raises(MlnbError, match="at most 40"):
        auc_permutation_test(rng.random(400) < 0.5, a, b)
    with pytest.raises(MlnbError, match="scores_b"):
        auc_permutation_test(y, a, np.r_[b[:-1], np.nan])


def _mixed_corpus(n=900, seed=4):
    """Categories of 0, 1, 2, 5, 12, 30, 31 and 200 positives, one of 3 negatives; float32 and tied scores."""
    rng = np.random.default_rng(seed)
    counts = [0, 1, 2, 5, 12, 30, 31, 200, n - 3]
    Y = np.zeros((n, len(counts)), dtype=bool)
    for k, count in enumerate(counts):
        Y[rng.choice(n, count, replace=False), k] = True
    a = np.round(rng.normal(size=Y.shape) + 1.5 * Y, 1).astype(np.float32)
    b = rng.normal(size=Y.shape) + Y
    return Y, a, b


def test_tables_name_each_categorys_test_and_holm_the_mixed_p_values():
    Y, a, b = _mixed_corpus()
    table = auc_difference_tests(sp.csr_matrix(Y), a, b)
    assert table["test"].tolist() == ["none", "none", "permutation", "permutation", "permutation", "permutation",
                                      "delong", "delong", "permutation"]
    delong = delong_tests(Y, a, b)
    for k in range(Y.shape[1]):
        if table["test"].iloc[k] == "permutation":
            assert table["p_value"].iloc[k] == auc_permutation_test(Y[:, k], a[:, k], b[:, k]).p_value
    kept = table["test"] != "permutation"
    np.testing.assert_array_equal(table["p_value"][kept], delong["p_value"][kept])
    np.testing.assert_array_equal(table["p_holm"], holm(table["p_value"]))
    np.testing.assert_array_equal(table[["auc_a", "auc_b", "difference", "variance", "z"]],
                                  delong[["auc_a", "auc_b", "difference", "variance", "z"]])
    assert auc_difference_tests(Y, a, b, permutation_max=0)["test"].tolist() == \
        ["none", "none"] + ["delong"] * 7
    assert PERMUTATION_MAX == 30


def test_streamed_tables_equal_the_table_in_memory():
    Y, a, b = _mixed_corpus()
    table = auc_difference_tests(Y, a, b)
    column = lambda k: (Y[:, k], a[:, k], b[:, k])  # noqa: E731
    work = np.minimum(Y.sum(axis=0), len(Y) - Y.sum(axis=0)) + 1.0  # another order of the blocks
    for streamed in (auc_difference_tests_by_column(column, Y.shape[1]),
                     auc_difference_tests_by_column(column, Y.shape[1], work=work)):
        assert streamed["test"].tolist() == table["test"].tolist()
        numbers = table.drop(columns="test")
        np.testing.assert_array_equal(streamed.drop(columns="test").to_numpy(), numbers.to_numpy())


def test_comparison_counts_the_tests_and_leaves_excluded_categories_untested():
    Y, a, b = _mixed_corpus()
    names = [f"c{k}" for k in range(Y.shape[1])]
    comparison = compare_scores(Y, a, b, names, np.full(Y.shape[1], 10), exclude=[3])
    assert comparison.table["test"].tolist()[2:5] == ["permutation", "none", "permutation"]
    assert comparison.tests_used() == {"delong": 2, "permutation": 4}
    assert comparison.summary()["tests"] == {"delong": 2, "permutation": 4}
    assert comparison.counts()["not_testable"] == 3


# A corpus shaped like Reuters-21578's ModApte test set: 3,019 documents, 90 categories, most of them
# rare (positives per category as there, roughly: 8 with one, 10 with two, 16 with 3–5, 30 with 6–20).
REUTERS_POSITIVES = np.array([1] * 8 + [2] * 10 + [3] * 5 + [4] * 5 + [5] * 6 + list(range(6, 21)) * 2
                             + [21, 22, 24, 25, 28, 30, 34, 37, 40, 44, 47, 51, 56, 63, 71, 80, 89, 99, 110, 131,
                                149, 179, 189, 280, 719, 1087])
BANDS = {"2": (2, 2), "3-5": (3, 5), "6-20": (6, 20), "21+": (21, 3019)}


def _rejection_rates(reps: int, shift: float, seed: int) -> tuple[dict, float, float]:
    """(per band: share of categories with p < 0.05; share of repetitions with some Holm p < 0.05; share where
    Holm finds a significantly higher in some category and b in none). Two models with binormal scores
    sharing 60 % of their variance; a's positives shifted up by ``shift`` (0: no real difference); b on
    another scale (3b − 1), which the tests must not see."""
    rng = np.random.default_rng(seed)
    n, K = 3019, REUTERS_POSITIVES.size
    separation = np.linspace(1.0, 3.0, K)  # AUCs from about 0.76 to 0.98
    rejected, any_holm, a_wins = dict.fromkeys(BANDS, 0.0), 0, 0
    for _ in range(reps):
        Y = np.zeros((n, K), dtype=bool)
        for k, count in enumerate(REUTERS_POSITIVES):
            Y[rng.choice(n, count, replace=False), k] = True
        shared = rng.standard_normal((n, K)) + separation * Y
        a = np.sqrt(0.6) * shared + np.sqrt(0.4) * rng.standard_normal((n, K)) + shift * Y
        b = np.sqrt(0.6) * shared + np.sqrt(0.4) * rng.standard_normal((n, K))
        table = auc_difference_tests(Y, a, 3.0 * b - 1.0)
        p, significant = table["p_value"].to_numpy(), table["p_holm"].to_numpy() < 0.05
        for band, (low, high) in BANDS.items():
            rejected[band] += np.mean(p[(REUTERS_POSITIVES >= low) & (REUTERS_POSITIVES <= high)] < 0.05) / reps
        any_holm += significant.any()
        higher = table["difference"].to_numpy() > 0
        a_wins += (significant & higher).any() and not (significant & ~higher).any()
    return rejected, any_holm / reps, a_wins / reps


@pytest.mark.slow
def test_per_category_significance_keeps_its_level_on_a_corpus_of_rare_categories():
    rejected, family_wise, _ = _rejection_rates(reps=200, shift=0.0, seed=11)
    # DeLong's normal z alone here: 0.24, 0.11, 0.065, 0.053 in these bands, a family-wise error of 0.79
    assert all(rate <= 0.07 for rate in rejected.values()), rejected
    assert family_wise <= 0.07
    # and a real difference (a's positives 0.4 higher everywhere) is found
    rejected, family_wise, a_wins = _rejection_rates(reps=40, shift=0.4, seed=12)
    assert rejected["6-20"] >= 0.12 and rejected["21+"] >= 0.4, rejected
    assert a_wins >= 0.9
