"""The long-tailed corpus: each chunk a function of (seed, chunk number), long tails, learnable labels,
and memory that never grows with V × K."""

import pickle
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb.data.long_tail import LongTailCorpus, zipf_ranks
from mlnb.errors import MlnbError


def _same(a, b):
    return (a.shape == b.shape and np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
            and np.array_equal(a.data, b.data))


def test_a_chunk_depends_on_the_seed_and_its_number_alone():
    corpus = LongTailCorpus(5_000, 20_000, 300, chunk_documents=1_000, seed=4)
    in_order = list(corpus.chunks())
    # another instance, the chunks asked for backwards, and one pickled as a worker would receive it
    other = pickle.loads(pickle.dumps(LongTailCorpus(5_000, 20_000, 300, chunk_documents=1_000, seed=4)))
    for i in reversed(range(corpus.n_chunks)):
        X, Y = other.chunk(i)
        assert _same(X, in_order[i][0]) and _same(Y, in_order[i][1])
    X5, _ = LongTailCorpus(5_000, 20_000, 300, chunk_documents=1_000, seed=5).chunk(0)
    assert not _same(X5, in_order[0][0])
    assert not _same(in_order[0][0], in_order[1][0])  # chunks differ from each other


def test_shapes_and_types():
    corpus = LongTailCorpus(2_500, 50_000, 1_000, words_per_document=60, chunk_documents=1_000, seed=1)
    assert corpus.n_chunks == 3 and [corpus.chunk_size(i) for i in range(3)] == [1_000, 1_000, 500]
    X, Y = corpus.chunk(2)
    assert X.shape == (500, 50_000) and Y.shape == (500, 1_000)
    assert X.format == "csr" and X.dtype == np.float32 and Y.format == "csr" and Y.dtype == np.int8
    assert X.has_canonical_format and Y.has_canonical_format
    assert (X.data >= 1).all() and np.array_equal(X.data, np.round(X.data))
    assert (Y.data == 1).all()
    assert (np.diff(Y.indptr) >= 1).all()  # every document has a label
    tokens = np.asarray(X.sum(axis=1)).ravel()
    assert 55 <= tokens.mean() <= 65  # words_per_document is the mean token count
    assert 2.3 <= np.diff(Y.indptr).mean() <= 3.0  # 3 picks, repeats of common categories count once


def test_split_gives_disjoint_training_and_test_chunks():
    corpus = LongTailCorpus(10_000, 1_000, 20, chunk_documents=1_000)
    train, test = corpus.split(0.2)
    assert list(train) == list(range(8)) and list(test) == [8, 9]
    assert sum(corpus.chunk_size(i) for i in [*train, *test]) == 10_000
    with pytest.raises(MlnbError, match="chunk_documents"):
        LongTailCorpus(1_000, 1_000, 20, chunk_documents=1_000).split(0.2)
    with pytest.raises(MlnbError, match=r"chunk 10 out of range"):
        corpus.chunk(10)


def test_bad_sizes_are_refused_in_one_line():
    with pytest.raises(MlnbError, match=r"^LongTailCorpus: n_categories must be at least 1, got 0$"):
        LongTailCorpus(100, 100, 0)
    with pytest.raises(MlnbError, match="topic_share"):
        LongTailCorpus(100, 100, 5, topic_share=1.5)


def test_category_and_word_frequencies_are_long_tailed():
    corpus = LongTailCorpus(20_000, 200_000, 5_000, chunk_documents=10_000, seed=2)
    Y = sp.vstack([corpus.chunk(i)[1] for i in range(corpus.n_chunks)], format="csr")
    X = sp.vstack([corpus.chunk(i)[0] for i in range(corpus.n_chunks)], format="csr")
    frequency = np.asarray(Y.sum(axis=0)).ravel()
    assert frequency[0] == frequency.max()  # category 0 is the commonest
    assert frequency.max() > 100 * max(1.0, np.median(frequency))
    assert (frequency > 0).sum() > 2_000  # yet thousands of categories occur: a long tail, not a head
    words = np.sort(np.asarray(X.sum(axis=0)).ravel())[::-1]
    assert words[:2_000].sum() > 0.3 * words.sum()  # the top 1 % of words carry a large share
    assert (words > 0).sum() > 50_000


def test_zipf_ranks_follow_the_law():
    u = np.random.default_rng(0).random(400_000)
    ranks = zipf_ranks(u, 1_000, 1.0)
    assert ranks.min() == 0 and ranks.max() == 999
    counts = np.bincount(ranks, minlength=1_000)
    # f(x) ∝ 1 / (x + 2.7): rank 0 against rank 99 ≈ ln(3.7/2.7) / ln(102.7/101.7) ≈ 32
    assert 25 < counts[0] / counts[99] < 40
    assert np.array_equal(np.bincount(zipf_ranks(u, 10, 0.0), minlength=10) > 35_000, np.ones(10, bool))


def test_a_category_is_learnable_from_its_words():
    from mlnb.metrics.ranking import roc_auc_per_category
    from mlnb.models.naive_bayes import NaiveBayes

    corpus = LongTailCorpus(6_000, 5_000, 40, words_per_document=50, chunk_documents=1_000, seed=7)
    train, test = corpus.split(1 / 3)
    X, Y = (sp.vstack(parts, format="csr") for parts in zip(*corpus.chunks(train)))
    X_test, Y_test = (sp.vstack(parts, format="csr") for parts in zip(*corpus.chunks(test)))
    scores = NaiveBayes().fit(X, Y).decision_function(X_test)
    auc = roc_auc_per_category(Y_test, np.asarray(scores))
    assert np.isfinite(auc).sum() >= 30
    assert np.nanmean(auc) > 0.8
    # without topic words nothing is learnable
    flat = LongTailCorpus(6_000, 5_000, 40, words_per_document=50, chunk_documents=1_000, seed=7, topic_share=0.0)
    X, Y = (sp.vstack(parts, format="csr") for parts in zip(*flat.chunks(train)))
    X_test, Y_test = (sp.vstack(parts, format="csr") for parts in zip(*flat.chunks(test)))
    flat_auc = roc_auc_per_category(Y_test, np.asarray(NaiveBayes().fit(X, Y).decision_function(X_test)))
    assert np.nanmean(flat_auc) < 0.6


def test_memory_does_not_grow_with_the_vocabulary_times_the_label_space():
    corpus = LongTailCorpus(2_000, 10_000_000, 1_000_000, chunk_documents=1_000, seed=3)
    tracemalloc.start()
    try:
        X, Y = corpus.chunk(1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert X.shape == (1_000, 10_000_000) and Y.shape == (1_000, 1_000_000)
    assert Y.indices.max() > 1_000  # the tail is really drawn from a million categories
    assert X.indices.max() > 5_000_000
    # one chunk's ~100k tokens: a few MB, where even one V-sized float64 array would be 80 MB
    assert peak < 20 * 2**20
