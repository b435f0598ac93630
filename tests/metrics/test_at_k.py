"""Ranking metrics over the k best categories: top k, propensities, P@k … PSnDCG@k, coverage, intervals."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb.errors import MlnbError
from mlnb.metrics.at_k import (bootstrap_intervals_at_k, paired_differences_at_k, propensities, ranking_metrics,
                               top_k_of_scores)


def _labels(rng, n, K, rate):
    """Random 0/1 labels, with some documents holding none (R@k and nDCG@k must count them as 0)."""
    Y = rng.random((n, K)) < rate
    Y[: n // 10] = False
    return Y


def _scored(seed=0, n=300, K=40, rate=0.08, signal=1.5):
    rng = np.random.default_rng(seed)
    Y = _labels(rng, n, K, rate)
    scores = rng.normal(size=(n, K)) + signal * Y  # continuous: no ties
    return Y, scores


# ------------------------------------------------------------------------------------------ (1) LibMultiLabel

def test_equals_libmultilabel_on_random_scores():
    metrics = pytest.importorskip("libmultilabel.linear.metrics",
                                  reason="LibMultiLabel is not installed (the independent implementation)")
    names = ["P@1", "P@3", "P@5", "R@1", "R@3", "R@5", "NDCG@1", "NDCG@3", "NDCG@5"]
    for seed in range(3):
        Y, scores = _scored(seed)
        categories, _ = top_k_of_scores(scores, 5)
        ours = ranking_metrics(sp.csr_matrix(Y), categories, ks=(1, 3, 5)).means
        with np.errstate(invalid="ignore", divide="ignore"):  # their 0/0 for documents without labels
            theirs = metrics.compute_metrics(scores, Y.astype(np.float64), names)
            # fed in batches too, as a streamed evaluation would
            collection = metrics.get_metrics(names, Y.shape[1])
            for rows in np.array_split(np.arange(Y.shape[0]), 4):
                collection.update(scores[rows], Y[rows].astype(np.float64))
        batched = collection.compute()
        assert not Y[:30].any() and Y.any(axis=1).sum() < Y.shape[0]  # documents without labels were counted
        for name in names:
            ours_name = name.replace("NDCG", "nDCG")
            assert ours[ours_name] == pytest.approx(theirs[name], rel=1e-12, abs=1e-15), name
            assert ours[ours_name] == pytest.approx(batched[name], rel=1e-12, abs=1e-15), name


# ------------------------------------------------------------------------------- (2) hand-worked PSP / PSnDCG

# Training labels: N = 10 documents, positives per category N_l = (6, 3, 1, 0).
# With A = 0.55, B = 1.5: C = (ln 10 − 1) · 2.5^0.55, and C · (N_l + 1.5)^−0.55 = (ln 10 − 1) · (2.5 / (N_l + 1.5))^0.55,
# so the inverse propensities are w_l = 1/p_l = 1 + 1.302585093 · (2.5 / (N_l + 1.5))^0.55:
#   N_l = 6: (1/3)^0.55 = exp(−0.55 · 1.098612289) = exp(−0.604236759) = 0.546477 → w0 = 1.711852
#   N_l = 3: (5/9)^0.55 = exp(−0.55 · 0.587786665) = exp(−0.323282666) = 0.723770 → w1 = 1.942771
#   N_l = 1: (2.5/2.5)^0.55 = 1                                                   → w2 = ln 10 = 2.302585
#   N_l = 0: (5/3)^0.55 = exp(0.55 · 0.510825624) = exp(0.280954093) = 1.324385   → w3 = 2.725134
W0, W1, W2, W3 = 1.711852, 1.942771, 2.302585093, 2.725134
TRAIN_POSITIVES = (6, 3, 1, 0)


def _train_labels():
    Y = np.zeros((10, 4), dtype=bool)
    for label, count in enumerate(TRAIN_POSITIVES):
        Y[:count, label] = True
    return sp.csr_matrix(Y)


def test_propensities_equal_the_hand_calculation():
    p = propensities(_train_labels())
    assert 1 / p == pytest.approx([W0, W1, W2, W3], rel=1e-6)
    assert 1 / p[2] == pytest.approx(math.log(10), rel=1e-14)  # N_l = 1: w = ln N exactly
    assert np.all(np.diff(p) < 0)  # rarer categories: lower propensity
    # another (A, B): w = 1 + (ln 20 − 1) · ((1 + 1) / (N_l + 1))^1, by hand for N_l = 3: 1 + 1.995732 · 0.5
    Y20 = sp.vstack([_train_labels(), sp.csr_matrix((10, 4))]).tocsr()
    assert 1 / propensities(Y20, A=1.0, B=1.0)[1] == pytest.approx(1 + 1.9957323 * 0.5, rel=1e-7)


def test_propensity_scored_metrics_equal_a_hand_worked_example():
    Y_test = sp.csr_matrix(np.array([[1, 0, 1, 0],     # document 0: y = {0, 2}
                                     [0, 0, 0, 1],     # document 1: y = {3}
                                     [0, 1, 1, 1]]))   # document 2: y = {1, 2, 3}
    ranked = np.array([[0, 1, 2], [1, 3, 0], [2, 0, 3]])
    result = ranking_metrics(Y_test, ranked, ks=(1, 3), propensity=propensities(_train_labels()))
    m, rel = result.means, 1e-6
    # k = 1: hits w0 (doc 0), none (doc 1), w2 (doc 2); the best attainable: w2, w3, w3
    assert m["PSP@1 raw"] == pytest.approx((W0 + 0 + W2) / 3, rel=rel)
    assert m["PSP@1"] == pytest.approx((W0 + W2) / (W2 + W3 + W3), rel=rel)  # 0.517800
    assert m["PSnDCG@1"] == pytest.approx(m["PSP@1"], rel=1e-12)  # IDCG@1 = 1, discount 1
    # k = 3: doc 0 hits at ranks 1 and 3 (w0, w2), doc 1 at rank 2 (w3), doc 2 at ranks 1 and 3 (w2, w3);
    # best: doc 0 {w2, w0}, doc 1 {w3}, doc 2 {w3, w2, w1}
    assert m["PSP@3 raw"] == pytest.approx((W0 + W2 + W3 + W2 + W3) / 9, rel=rel)
    assert m["PSP@3"] == pytest.approx((W0 + W2 + W3 + W2 + W3) / (W2 + W0 + W3 + W3 + W2 + W1), rel=rel)  # 0.858295
    # PSnDCG@3, per document Σ y_(i) w_(i) / log2(i + 1) / IDCG@3, IDCG = 1 + 1/log2 3 (|y| = 2), 1, 1 + 1/log2 3 + 1/2
    third = 1 / math.log2(3)  # 0.630930
    raw = [(W0 + W2 / 2) / (1 + third), W3 * third / 1, (W2 + W3 / 2) / (1 + third + 0.5)]
    best = [(W2 + W0 * third) / (1 + third), W3 / 1, (W3 + W2 * third + W1 / 2) / (1 + third + 0.5)]
    assert result.per_document["PSnDCG@3 raw"] == pytest.approx(raw, rel=rel)  # 1.755528, 1.719369, 1.719978
    assert result.per_document["PSnDCG@3 best"] == pytest.approx(best, rel=rel)  # 2.074072, 2.725134, 2.416454
    assert m["PSnDCG@3"] == pytest.approx(sum(raw) / sum(best), rel=rel)  # 0.719943
    assert m["PSnDCG@3 raw"] == pytest.approx(sum(raw) / 3, rel=rel)
    # the plain metrics of the same example
    assert m["P@3"] == pytest.approx(5 / 9) and m["R@3"] == pytest.approx((1 + 1 + 2 / 3) / 3)
    assert m["nDCG@3"] == pytest.approx(((1 + 0.5) / (1 + third) + third + 1.5 / (1 + third + 0.5)) / 3)
    # categories with a test positive: {0, 1, 2, 3}; correct at rank 1: {0, 2}; at rank ≤ 3: {0, 2, 3}
    assert m["coverage@1"] == 0.5 and m["coverage@3"] == 0.75


def test_normalised_propensity_metrics_follow_pyxclib_arithmetic():
    # pyxclib's psprecision / psndcg, restated densely: ratio of the dataset means of the model's and the
    # ideal ranking's propensity-weighted gains (_precision(eval)/_precision(ps_eval), _ndcg likewise)
    Y, scores = _scored(4, n=200, K=30, rate=0.1)
    rng = np.random.default_rng(5)
    inverse = 1 + 3 * rng.random(Y.shape[1])
    k = 5
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    ideal = np.argsort(-(Y * inverse), axis=1, kind="stable")[:, :k]
    flags = np.take_along_axis(Y, top, 1) * inverse[top]
    ideal_flags = np.take_along_axis(Y, ideal, 1) * inverse[ideal]
    psp = (flags.cumsum(1) / np.arange(1, k + 1)).mean(0) / (ideal_flags.cumsum(1) / np.arange(1, k + 1)).mean(0)
    discount = 1 / np.log2(np.arange(k) + 2)
    n_true = Y.sum(1)
    cut = np.cumsum(discount)

    def ndcg(f):
        dcg = np.cumsum(f * discount, 1)
        return np.array([np.mean(dcg[:, j] / np.minimum(np.where(n_true > 0, np.cumsum(
            1 / np.log2(np.arange(1, 40) + 1))[np.maximum(n_true - 1, 0)], 1.0), cut[j])) for j in range(k)])
    psndcg = ndcg(flags) / ndcg(ideal_flags)
    means = ranking_metrics(Y, top, ks=(1, 3, 5), propensity=1 / inverse).means
    for j in (1, 3, 5):
        assert means[f"PSP@{j}"] == pytest.approx(psp[j - 1], rel=1e-12)
        assert means[f"PSnDCG@{j}"] == pytest.approx(psndcg[j - 1], rel=1e-12)


# -------------------------------------------------------------------------------------------------- (4) top k

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_top_k_equals_a_stable_argsort_with_ties(dtype):
    rng = np.random.default_rng(1)
    scores = np.round(rng.normal(size=(257, 23)), 1).astype(dtype)  # many ties
    scores[0] = 0.0
    scores[1, ::2] = -0.0  # −0 and +0 tie, as in argsort
    scores[2, :5] = np.inf
    scores[3] = -np.inf
    order = np.argsort(-scores, axis=1, kind="stable")
    for k in (1, 2, 5, 22, 23):
        for block_rows in (None, 1, 10, 1000):
            categories, values = top_k_of_scores(scores, k, block_rows=block_rows)
            assert categories.dtype == np.int64 and values.dtype == dtype
            np.testing.assert_array_equal(categories, order[:, :k])
            np.testing.assert_array_equal(values, np.take_along_axis(scores, order[:, :k], 1))
    assert top_k_of_scores(scores, 3)[0][0].tolist() == [0, 1, 2]  # all equal: lowest categories first


def test_top_k_beyond_the_categories_pads():
    scores = np.array([[0.2, 0.7, 0.1], [0.0, 0.0, 0.5]])
    categories, values = top_k_of_scores(scores, 5)
    assert categories.tolist() == [[1, 0, 2, -1, -1], [2, 0, 1, -1, -1]]
    assert np.isneginf(values[:, 3:]).all()
    # padding is no hit; P@5 still divides by 5
    result = ranking_metrics(np.array([[1, 1, 0], [0, 0, 1]]), categories, ks=(5,))
    assert result.means["P@5"] == pytest.approx((2 / 5 + 1 / 5) / 2)
    assert result.means["R@5"] == 1.0 and result.means["nDCG@5"] == pytest.approx(1.0)
    assert top_k_of_scores(np.zeros((0, 4)), 2)[0].shape == (0, 2)


def test_bad_input_is_one_line():
    with pytest.raises(MlnbError, match="k: expected a positive integer"):
        top_k_of_scores(np.zeros((2, 3)), 0)
    with pytest.raises(MlnbError, match="NaN"):
        top_k_of_scores(np.array([[0.0, np.nan]]), 1)
    Y = np.array([[1, 0, 0], [0, 1, 0]])
    with pytest.raises(MlnbError, match="has 2 ranks per document but ks asks for 3"):
        ranking_metrics(Y, np.array([[0, 1], [1, 0]]), ks=(3,))
    with pytest.raises(MlnbError, match="ranks one category twice"):
        ranking_metrics(Y, np.array([[0, 0], [1, 0]]), ks=(2,))
    with pytest.raises(MlnbError, match=r"must lie in 0 … 2"):
        ranking_metrics(Y, np.array([[0, 3], [1, 0]]), ks=(2,))
    with pytest.raises(MlnbError, match="one value per category"):
        ranking_metrics(Y, np.array([[0, 1], [1, 0]]), ks=(1,), propensity=[0.5, 0.5])
    with pytest.raises(MlnbError, match="labels must be 0/1"):
        ranking_metrics(np.array([[2, 0, 0], [0, 1, 0]]), np.array([[0], [1]]), ks=(1,))
    with pytest.raises(MlnbError, match="at least 3"):
        propensities(np.array([[1, 0], [0, 1]]))


# -------------------------------------------------------------------------------- (5) intervals, comparisons

def _two_models(seed=7):
    Y, good = _scored(seed, n=400, K=200, rate=0.02, signal=2.5)
    worse = good + np.random.default_rng(seed + 1).normal(scale=2.0, size=good.shape)
    train = _labels(np.random.default_rng(seed + 2), 1000, 200, 0.02)
    p = propensities(sp.csr_matrix(train))
    a = ranking_metrics(Y, top_k_of_scores(good, 5)[0], propensity=p)
    b = ranking_metrics(Y, top_k_of_scores(worse, 5)[0], propensity=p)
    return a, b


def test_intervals_contain_the_estimate_and_repeat_bit_for_bit():
    a, _ = _two_models()
    intervals = bootstrap_intervals_at_k(a, n_boot=200, seed=3)
    assert set(intervals) == set(a.means)
    for name, interval in intervals.items():
        assert interval.low <= interval.estimate <= interval.high, name
        assert interval.low < interval.high, name
        assert interval.estimate == a.means[name]
    again = bootstrap_intervals_at_k(a, n_boot=200, seed=3)
    assert again == intervals  # same seed, same bits
    other = bootstrap_intervals_at_k(a, n_boot=200, seed=4)
    assert other["P@1"] != intervals["P@1"]


def test_paired_difference_of_a_model_with_itself_is_zero():
    a, _ = _two_models()
    same = paired_differences_at_k(a, a, n_boot=50, n_flips=50)
    for name, difference in same.items():
        assert (difference.estimate, difference.low, difference.high, difference.p_value) == (0.0, 0.0, 0.0, 1.0), name


def test_paired_difference_finds_the_better_model():
    a, b = _two_models()
    differences = paired_differences_at_k(a, b, n_boot=200, n_flips=200, seed=1)
    for name in ("P@1", "P@5", "nDCG@5", "PSP@5", "PSnDCG@5"):
        d = differences[name]
        assert d.estimate == pytest.approx(a.means[name] - b.means[name])
        assert 0 < d.low <= d.estimate <= d.high, name
        assert d.p_value == pytest.approx(1 / 201), name  # no swap reaches the observed difference
    coverage = differences["coverage@5"]
    assert 0 < coverage.low <= coverage.estimate <= coverage.high and coverage.p_value == pytest.approx(1 / 201)
    assert differences == paired_differences_at_k(a, b, n_boot=200, n_flips=200, seed=1)
    reverse = paired_differences_at_k(b, a, n_boot=200, n_flips=200, seed=1)
    assert reverse["P@5"].estimate == -differences["P@5"].estimate
    assert reverse["P@5"].p_value == differences["P@5"].p_value


def test_paired_needs_the_same_test_set():
    a, _ = _two_models(7)
    c, _ = _two_models(8)
    with pytest.raises(MlnbError, match="different test labels"):
        paired_differences_at_k(a, c, n_boot=10)
    with pytest.raises(MlnbError, match="at least 2 resamples"):
        bootstrap_intervals_at_k(a, n_boot=1)


def test_intervals_are_the_percentiles_of_the_metrics_on_resampled_documents():
    from mlnb.metrics.uncertainty import bootstrap_indices
    a, _ = _two_models()
    train = _labels(np.random.default_rng(9), 1000, 200, 0.02)
    p = propensities(sp.csr_matrix(train))
    a = ranking_metrics(a.labels, a.top_categories, propensity=p)
    intervals = bootstrap_intervals_at_k(a, n_boot=25, seed=11, level=0.9)
    replicates = {name: [] for name in a.means}
    for idx in bootstrap_indices(a.n_documents, 25, 11):
        again = ranking_metrics(a.labels[idx], a.top_categories[idx], propensity=p).means
        for name in replicates:
            replicates[name].append(again[name])
    for name, values in replicates.items():
        if name.startswith("coverage"):
            continue  # resamples the categories with a positive instead (module docstring)
        low, high = np.quantile(values, [0.05, 0.95])
        assert (intervals[name].low, intervals[name].high) == pytest.approx((low, high), rel=1e-12), name


def test_the_p_value_is_the_share_of_swaps_at_least_as_extreme():
    # two close models on a small test set, every swap recomputed from scratch
    Y, scores = _scored(12, n=60, K=30, rate=0.1, signal=1.0)
    other = scores + np.random.default_rng(13).normal(scale=0.7, size=scores.shape)
    a = ranking_metrics(Y, top_k_of_scores(scores, 5)[0])
    b = ranking_metrics(Y, top_k_of_scores(other, 5)[0])
    rows = np.arange(Y.shape[0])
    n_flips, seed = 30, 5
    observed = {name: a.means[name] - b.means[name] for name in a.means}
    at_least = dict.fromkeys(a.means, 0)
    rng = np.random.default_rng([seed, 2])
    for _ in range(n_flips):
        swapped = rng.random(rows.size) < 0.5
        top_a = np.where(swapped[:, None], b.top_categories, a.top_categories)
        top_b = np.where(swapped[:, None], a.top_categories, b.top_categories)
        means_a = ranking_metrics(a.labels, top_a).means
        means_b = ranking_metrics(a.labels, top_b).means
        for name in at_least:
            at_least[name] += abs(means_a[name] - means_b[name]) >= abs(observed[name]) * (1 - 1e-12)
    differences = paired_differences_at_k(a, b, n_boot=10, n_flips=n_flips, seed=seed)
    for name in a.means:
        assert differences[name].p_value == (1 + at_least[name]) / (1 + n_flips), name
    assert len({differences[name].p_value for name in a.means}) > 3  # not all at the floor or at 1
