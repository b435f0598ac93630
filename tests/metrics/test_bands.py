"""Frequency bands (equi-voluminous thirds of the training labels), macro averages per band and each band's
contribution to P@k, against hand-worked examples and the ranking metrics' own P@k."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from mlnb.errors import MlnbError
from mlnb.metrics.at_k import ranking_metrics, top_k_of_scores
from mlnb.metrics.bands import BANDS, band_summary, frequency_bands, macro_by_band, precision_at_k_by_band

HEAD, TORSO, TAIL, UNSEEN = range(4)


def test_bands_by_the_share_of_labels_before_each_category():
    # T = 100. before: 40 -> 0 (head); 30 -> 0.40 (torso); 10, 10 -> 0.70 (tail, equal counts together);
    # 5, 5 -> 0.90 (tail); 0 -> unseen
    counts = [10, 40, 0, 5, 30, 10, 5]
    assert frequency_bands(counts).tolist() == [TAIL, HEAD, UNSEEN, TAIL, TORSO, TAIL, TAIL]


def test_a_boundary_share_starts_the_next_band_and_equal_counts_share_one():
    # before = 0, 1/3, 2/3 exactly: head, torso, tail
    assert frequency_bands([1, 1, 1]).tolist() == [HEAD, HEAD, HEAD]  # equal counts: all before = 0
    assert frequency_bands([4, 2, 1, 1]).tolist() == [HEAD, TORSO, TAIL, TAIL]  # before: 0, 0.5, 0.75
    assert frequency_bands([2, 1, 1, 1, 1]).tolist() == [HEAD, TORSO, TORSO, TORSO, TORSO]  # before 1/3: torso


def test_every_band_holds_about_a_third_of_a_long_tail():
    rng = np.random.default_rng(0)
    counts = rng.zipf(1.6, 20_000).clip(max=50_000).astype(float)
    counts[:500] = 0
    bands = frequency_bands(counts)
    summary = band_summary(counts, bands)
    for band in ("head", "torso", "tail"):
        assert summary[band]["share_of_labels"] == pytest.approx(1 / 3, abs=0.1)
    assert summary["head"]["categories"] < summary["torso"]["categories"] < summary["tail"]["categories"]
    assert summary["unseen"]["categories"] == 500 and summary["unseen"]["train_positives"] == 0
    assert summary["head"]["min_train_positives"] >= summary["torso"]["max_train_positives"]


def test_no_positive_anywhere_is_all_unseen_and_bad_counts_say_so():
    assert frequency_bands([0, 0]).tolist() == [UNSEEN, UNSEEN]
    assert band_summary([0, 0])["head"] == {"categories": 0, "train_positives": 0, "share_of_labels": 0.0,
                                            "min_train_positives": None, "max_train_positives": None}
    with pytest.raises(MlnbError, match="train_positives"):
        frequency_bands([1, -1])


def test_macro_by_band_averages_the_included_categories_of_each_band():
    table = pd.DataFrame({"auc": [0.9, 0.7, 0.5, np.nan, 0.6], "f1": [0.8, 0.4, 0.2, 0.0, 0.1],
                          "included": [True, True, True, False, True]})
    bands = np.array([HEAD, TAIL, TAIL, TAIL, UNSEEN])
    macro = macro_by_band(table, bands)
    assert macro["head"] == {"evaluated": 1, "macro_auc": 0.9, "macro_f1": 0.8}
    assert macro["tail"]["evaluated"] == 2 and macro["tail"]["macro_auc"] == pytest.approx(0.6)
    assert macro["tail"]["macro_f1"] == pytest.approx(0.3)
    assert macro["torso"]["evaluated"] == 0 and np.isnan(macro["torso"]["macro_auc"])
    with pytest.raises(MlnbError, match="one band per category"):
        macro_by_band(table, bands[:3])


def test_precision_by_band_by_hand():
    # 2 documents, categories 0 (head), 1 (tail), 2 (tail); rankings [0, 1], [2, 0]; truths {0, 2}, {2}
    Y = sp.csr_matrix(np.array([[1, 0, 1], [0, 0, 1]]))
    top = np.array([[0, 1], [2, 0]])
    bands = np.array([HEAD, TAIL, TAIL])
    by_band = precision_at_k_by_band(Y, top, bands, ks=(1, 2))
    assert by_band["head"] == {"P@1": 0.5, "P@2": 0.25}  # doc 0's first; 1 of 4 at k = 2
    assert by_band["tail"] == {"P@1": 0.5, "P@2": 0.25}  # doc 1's first
    assert by_band["torso"] == by_band["unseen"] == {"P@1": 0.0, "P@2": 0.0}


def test_the_bands_add_up_to_p_at_k_with_padding_and_unlabelled_documents():
    rng = np.random.default_rng(3)
    n, K = 300, 40
    dense = (rng.random((n, K)) < 0.08).astype(np.float64)
    dense[5] = 0  # a document without a true category counts 0
    Y = sp.csr_matrix(dense)
    scores = rng.normal(size=(n, K)) + Y.toarray()
    ks = (1, 3, 5)
    top = top_k_of_scores(scores, 5)[0]
    counts = np.asarray(Y.sum(axis=0)).ravel() * 3 + rng.integers(0, 3, K)
    counts[:4] = 0
    by_band = precision_at_k_by_band(Y, top, frequency_bands(counts), ks)
    expected = ranking_metrics(Y, top, ks).means
    for k in ks:
        assert sum(by_band[band][f"P@{k}"] for band in BANDS) == pytest.approx(expected[f"P@{k}"], abs=1e-12)
    # k beyond K: rankings padded with -1 count as misses
    small = precision_at_k_by_band(Y[:, :3], top_k_of_scores(scores[:, :3], 5)[0], np.zeros(3, dtype=int), (5,))
    assert small["head"]["P@5"] == pytest.approx(ranking_metrics(Y[:, :3], top_k_of_scores(scores[:, :3], 5)[0],
                                                                 (5,)).means["P@5"])


def test_precision_by_band_says_what_is_wrong():
    Y = sp.csr_matrix(np.eye(3))
    with pytest.raises(MlnbError, match="one band per category"):
        precision_at_k_by_band(Y, np.zeros((3, 1), dtype=int), [0, 0], (1,))
    with pytest.raises(MlnbError, match="top_categories"):
        precision_at_k_by_band(Y, np.zeros((3, 1), dtype=int), [0, 0, 0], (3,))
