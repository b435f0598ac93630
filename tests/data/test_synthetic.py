"""The synthetic corpus has RCV1's shape and statistics, and depends only on its seed (bit for bit the
corpus of the original generator, with or without numba)."""

import hashlib

import numpy as np
import scipy.sparse as sp
import pytest

from mlnb import MlnbError
from mlnb.data import synthetic
from mlnb.data.hashing import split_mask
from mlnb.data.synthetic import _ancestor_closure, make_rcv1_like


@pytest.fixture(scope="module")
def corpus():
    return make_rcv1_like(n_documents=60_000, n_features=20_000, n_categories=103, seed=3)


def test_shapes_and_types(corpus):
    assert corpus.X.shape == (60_000, 20_000) and corpus.Y.shape == (60_000, 103)
    assert corpus.X.dtype == np.float32 and corpus.X.format == "csr"
    assert corpus.train_index.size + corpus.test_index.size == 60_000
    assert np.intersect1d(corpus.train_index, corpus.test_index).size == 0
    assert len(corpus.category_names) == 103 and corpus.category_names[:4] == ["CCAT", "ECAT", "GCAT", "MCAT"]


def test_rcv1_like_statistics(corpus):
    info = corpus.describe()
    assert 70 <= info["mean_features_per_document"] <= 85  # RCV1: ~77 distinct words
    assert 2.8 <= info["mean_labels_per_document"] <= 3.8  # RCV1: ~3.2 labels
    prevalence = np.asarray(corpus.Y.sum(axis=0)).ravel() / corpus.n_documents
    assert prevalence.max() > 0.25  # a CCAT-like giant
    positive = prevalence[prevalence > 0]
    assert np.log10(positive.max() / positive.min()) >= 3.5  # about four decades
    # word frequencies: a Zipf-like head, the top 1% of words carry a large share of tokens
    frequency = np.sort(np.asarray(corpus.X.sum(axis=0)).ravel())[::-1]
    assert frequency[:200].sum() / frequency.sum() > 0.3
    assert (corpus.X.data >= 1).all() and np.all(corpus.X.data == np.round(corpus.X.data))


def test_every_label_brings_its_ancestors(corpus):
    names = corpus.category_names
    Y = corpus.Y.toarray().astype(bool)
    children = [k for k, name in enumerate(names) if not name.endswith("CAT")]
    assert children
    for k in children:
        root = [j for j, name in enumerate(names) if name == names[k][0] + "CAT"][0]
        assert Y[Y[:, k], root].all(), f"{names[k]} without its root"


def test_same_seed_same_corpus_other_seed_other_corpus():
    a = make_rcv1_like(n_documents=2000, n_features=1000, n_categories=12, seed=5)
    b = make_rcv1_like(n_documents=2000, n_features=1000, n_categories=12, seed=5)
    c = make_rcv1_like(n_documents=2000, n_features=1000, n_categories=12, seed=6)
    assert (a.X != b.X).nnz == 0 and (a.Y != b.Y).nnz == 0
    np.testing.assert_array_equal(a.test_index, b.test_index)
    assert (a.X != c.X).nnz > 0


def test_ancestor_closure():
    closure = _ancestor_closure(np.array([-1, 0, 1, -1])).toarray()
    np.testing.assert_array_equal(closure, [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [0, 0, 0, 1]])


def test_impossible_sizes_are_rejected():
    with pytest.raises(MlnbError, match="words_per_document"):
        make_rcv1_like(n_documents=10, n_features=100, words_per_document=77)
    with pytest.raises(MlnbError, match="n_categories must be at least 1"):
        make_rcv1_like(n_documents=10, n_features=1000, n_categories=0)


def _old_draw(cdf, u):
    """The generator's original draw, the oracle of the guide-table search."""
    return np.minimum(np.searchsorted(cdf, u, side="right"), cdf.size - 1)


@pytest.mark.parametrize("cdf", [
    np.array([1.0]),
    np.array([0.5, 1.0]),
    np.array([0.0, 0.0, 0.25, 0.25, 0.25, 1.0]),  # empty buckets and flat steps (zero-probability values)
    np.cumsum(np.full(7, 1 / 7)) / np.cumsum(np.full(7, 1 / 7))[-1],
    np.array([1e-300, 0.999999999999, 1.0]),
])
def test_draw_is_searchsorted_on_edge_values(cdf):
    edges = np.unique(np.concatenate([cdf, np.nextafter(cdf, 0), np.nextafter(cdf, 2), np.arange(64) / 64,
                                      np.nextafter(np.arange(1, 65) / 64, 0), [0.0, np.nextafter(1.0, 0)]]))
    u = edges[(edges >= 0) & (edges < 1)]
    np.testing.assert_array_equal(synthetic._draw(cdf, u), _old_draw(cdf, u))


@pytest.mark.parametrize("n, exponent", [(10_000, 1.0), (3, 1.0), (1_000, 2.5), (200, 1.0)])
def test_draw_is_searchsorted_on_random_values(n, exponent):
    cdf = synthetic._zipf_cdf(n, exponent)
    u = np.random.default_rng(n).random(200_000)
    np.testing.assert_array_equal(synthetic._draw(cdf, u), _old_draw(cdf, u))


# sha256 (first 16 hex digits) of X and Y, made by the generator before it was sped up (binary search per
# token, COO->CSR): committed reference results depend on these exact corpora. (The split, once a seeded
# permutation, is now the hash split of every pooled source: checked apart, below.)
CORPUS_DIGESTS = [
    (dict(n_documents=2000, n_features=1000, n_categories=12, seed=5), "b2271d2fb5195095"),
    (dict(n_documents=3000, n_features=800, n_categories=103, seed=0, topical_fraction=0.0), "d0f07f19fff96eef"),
    (dict(n_documents=1500, n_features=5000, n_categories=7, seed=11, topical_fraction=1.0, zipf_exponent=1.3),
     "0fee6a88b533157a"),
]


def _digest(dataset) -> str:
    digest = hashlib.sha256()
    for array in (dataset.X.indptr, dataset.X.indices, dataset.X.data, dataset.Y.indptr, dataset.Y.indices,
                  dataset.Y.data):
        digest.update(str(array.dtype).encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    digest.update(repr(dataset.category_names).encode())
    digest.update(repr(dataset.X.shape).encode())
    return digest.hexdigest()[:16]


@pytest.mark.parametrize("arguments, expected", CORPUS_DIGESTS)
def test_the_corpus_is_bit_identical_to_the_original_generator(arguments, expected):
    corpus = make_rcv1_like(**arguments)
    assert _digest(corpus) == expected
    ids = np.arange(arguments["n_documents"])
    np.testing.assert_array_equal(corpus.ids, ids)
    np.testing.assert_array_equal(corpus.test_index, np.flatnonzero(split_mask(ids, arguments["seed"], 0.5)))
    np.testing.assert_array_equal(corpus.train_index, np.flatnonzero(~split_mask(ids, arguments["seed"], 0.5)))


def test_the_corpus_is_the_same_without_numba(monkeypatch):
    arguments, expected = CORPUS_DIGESTS[0]
    monkeypatch.setattr(synthetic, "HAVE_NUMBA", False)
    assert _digest(make_rcv1_like(**arguments)) == expected


def test_chunks_made_at_once_and_stacked_on_every_thread_give_the_same_corpus(monkeypatch):
    """Chunks generated on several threads, stacked by ``mlnb._kernels.csr.stack_rows``: the corpus of one chunk
    at a time stacked by scipy, bit for bit (dtypes included)."""
    monkeypatch.setattr(synthetic, "_CHUNK_DOCUMENTS", 400)  # 3,000 documents: 8 chunks
    arguments = dict(n_documents=3000, n_features=900, n_categories=20, seed=3)
    monkeypatch.setattr(synthetic, "GENERATING_THREADS", 4)
    many = make_rcv1_like(**arguments)
    monkeypatch.setattr(synthetic, "GENERATING_THREADS", 1)
    monkeypatch.setattr(synthetic, "stack_rows", lambda blocks: sp.vstack(blocks, format="csr"))
    one = make_rcv1_like(**arguments)
    assert _digest(many) == _digest(one)
    assert many.X.has_canonical_format
