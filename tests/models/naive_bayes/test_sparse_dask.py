"""Naive Bayes counters on a real Dask LocalCluster (two worker processes) equal the in-memory ones bit
for bit, gathered into memory or written by the workers as a CountStore."""

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("distributed")

from mlnb.data.long_tail import LongTailCorpus  # noqa: E402
from mlnb.errors import MlnbError  # noqa: E402
from mlnb.models.naive_bayes.sparse_counts import SparseCounts  # noqa: E402
from mlnb.models.naive_bayes.count_store import CountStore  # noqa: E402
from mlnb.models.naive_bayes.sparse_dask import count_on_dask  # noqa: E402

pytestmark = pytest.mark.slow  # a LocalCluster of two processes takes seconds to start

CORPUS = LongTailCorpus(6_000, 30_000, 400, words_per_document=40, chunk_documents=700, seed=11)


def weighted(corpus):
    """``corpus.chunk`` with non-integer values (tf-idf-like): sums that depend on their order, so only the
    same additions in the same order give the same bits. A closure, so that it travels to the workers by
    value (pytest imports this module by path: the workers could not import it by name)."""

    def make_chunk(i):
        X, Y = corpus.chunk(i)
        X = X.copy()
        # float32 values over 16 decades: their float64 sums are rounded, unlike sums of counts
        X.data = X.data * (10.0 ** np.random.default_rng(i).uniform(-8, 8, X.nnz)).astype(np.float32)
        return X, Y

    return make_chunk


@pytest.fixture(scope="module")
def client(dask_address):
    """A client of the session's LocalCluster of 2 worker processes (``dask_address`` in tests/conftest.py)."""
    from distributed import Client

    dask_client = Client(dask_address, set_as_default=False)
    yield dask_client
    dask_client.close()


def _in_memory(make_chunk, chunk_ids, presence=False) -> SparseCounts:
    return SparseCounts.merge([SparseCounts.from_chunk(*make_chunk(i), presence=presence) for i in chunk_ids])


def _assert_identical(got, expected):
    for name in ("key", "value", "t", "S", "N"):
        assert np.array_equal(getattr(got, name), getattr(expected, name)), name
        assert getattr(got, name).dtype == getattr(expected, name).dtype, name
    assert got.n == expected.n and got.presence == expected.presence and got.shape == expected.shape


@pytest.mark.parametrize("presence", [False, True])
def test_counts_on_dask_equal_the_in_memory_counts_bit_for_bit(client, presence):
    make_chunk = weighted(CORPUS)
    chunk_ids = range(CORPUS.n_chunks)
    expected = _in_memory(make_chunk, chunk_ids, presence)
    got = count_on_dask(client, make_chunk, chunk_ids, CORPUS.n_features, CORPUS.n_categories,
                        presence=presence, n_partitions=5)
    assert isinstance(got, SparseCounts) and got.n_pairs > 50_000
    _assert_identical(got, expected)


def test_the_chunk_order_is_the_order_of_the_additions(client):
    make_chunk = weighted(CORPUS)
    backwards = list(reversed(range(CORPUS.n_chunks)))
    got = count_on_dask(client, make_chunk, backwards, CORPUS.n_features, CORPUS.n_categories, n_partitions=3)
    _assert_identical(got, _in_memory(make_chunk, backwards))
    forwards = _in_memory(make_chunk, range(CORPUS.n_chunks))
    assert np.array_equal(got.key, forwards.key)
    assert not np.array_equal(got.value, forwards.value)  # the same sums in another order: other bits


def test_counts_written_by_the_workers_as_a_count_store(client, tmp_path):
    make_chunk = weighted(CORPUS)
    chunk_ids = range(CORPUS.n_chunks)
    store = count_on_dask(client, make_chunk, chunk_ids, CORPUS.n_features, CORPUS.n_categories,
                          n_partitions=4, folder=tmp_path / "counts")
    assert isinstance(store, CountStore)
    assert sorted(p.name for p in (tmp_path / "counts").glob("pairs-*.parquet")) == \
        [f"pairs-{p:05d}.parquet" for p in range(4)]
    _assert_identical(CountStore.open(tmp_path / "counts").load(), _in_memory(make_chunk, chunk_ids))


def test_one_partition_and_more_partitions_than_words(client):
    corpus = LongTailCorpus(900, 7, 3, words_per_document=5, chunk_documents=300, seed=2)
    expected = _in_memory(corpus.chunk, range(3))
    for n_partitions in (1, 50):
        _assert_identical(count_on_dask(client, corpus.chunk, range(3), 7, 3, n_partitions=n_partitions), expected)


def test_bad_input_is_refused_in_one_line(client):
    def wrong_width(i):
        return sp.csr_matrix((4, 10), dtype=np.float32), sp.csr_matrix((4, 3), dtype=np.int8)

    with pytest.raises(MlnbError, match=r"^count_on_dask: chunk_ids is empty"):
        count_on_dask(client, CORPUS.chunk, [], 10, 3)
    with pytest.raises(MlnbError, match=r"n_partitions must be a positive integer"):
        count_on_dask(client, CORPUS.chunk, [0], 10, 3, n_partitions=0)
    with pytest.raises(MlnbError, match=r"^count_on_dask: chunk 0 has X of 10 features and Y of 3 categories; "
                                        r"expected 11 and 3"):
        count_on_dask(client, wrong_width, [0], 11, 3)


def test_a_failing_chunk_leaves_no_store_to_read(client, tmp_path):
    def fails_at_chunk_2(i):
        if i == 2:
            raise MlnbError("shard-2.npz: a corrupt chunk")
        return CORPUS.chunk(i)

    folder = tmp_path / "counts"
    with pytest.raises(MlnbError, match=r"^shard-2\.npz: a corrupt chunk$"):
        count_on_dask(client, fails_at_chunk_2, range(4), CORPUS.n_features, CORPUS.n_categories, folder=folder)
    assert not folder.exists()
    with pytest.raises(MlnbError, match="no such folder"):
        CountStore.open(folder)
    with pytest.raises(MlnbError, match="expected an empty or new folder"):
        (tmp_path / "full").mkdir()
        (tmp_path / "full" / "other.txt").write_text("")
        count_on_dask(client, CORPUS.chunk, [0], CORPUS.n_features, CORPUS.n_categories, folder=tmp_path / "full")
