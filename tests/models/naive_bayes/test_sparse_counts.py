"""SparseCounts: the event counters of the (word, category) pairs that occur, equal to the dense NBCounts,
added left to right in list order, and asked for by word."""

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb import MlnbError
from mlnb.models.naive_bayes import NBCounts
from mlnb.models.naive_bayes.sparse_counts import SparseCounts, merge_pairs

V, K = 400, 9
KINDS = {"integers": dict(integer=True, presence=False), "non-integers": dict(integer=False, presence=False),
         "presence": dict(integer=False, presence=True)}


def random_chunk(rng, n_documents, integer=True):
    X = sp.random(n_documents, V, density=0.04, random_state=rng, format="csr", dtype=np.float32)
    X.data = np.ceil(X.data * 6) if integer else (X.data * 10 + 0.01).astype(np.float32)
    Y = sp.csr_matrix((rng.random((n_documents, K)) < 0.25).astype(np.float32))
    return X, Y


def random_chunks(seed, integer, n_chunks=6):
    rng = np.random.default_rng(seed)
    return [random_chunk(rng, int(rng.integers(20, 80)), integer) for _ in range(n_chunks)]


def assert_same_bits(a: SparseCounts, b: SparseCounts):
    assert a.shape == b.shape and a.n == b.n and a.presence == b.presence
    for name in ("key", "value", "t", "S", "N"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        assert getattr(a, name).dtype == getattr(b, name).dtype, name


def left_to_right(pieces):
    """The reference: a dict of key → value added one piece after the other."""
    total = {}
    for piece in pieces:
        for key, value in zip(piece.key.tolist(), piece.value.tolist()):
            total[key] = total[key] + value if key in total else value
    return np.array(sorted(total), dtype=np.int64), np.array([total[k] for k in sorted(total)])


def wide_pieces(seed, n_pieces=25, n_keys=40):
    """Pieces of a few keys with values of magnitudes 1e-5 to 1e16: every order of addition rounds differently."""
    rng = np.random.default_rng(seed)
    pieces = []
    for _ in range(n_pieces):
        key = np.unique(rng.integers(0, n_keys, rng.integers(1, n_keys)))
        value = rng.random(key.size) * 10.0 ** rng.integers(-5, 17, key.size)
        pieces.append(SparseCounts(key=key, value=value, t=rng.random(V), S=rng.random(K), N=rng.random(K), n=3))
    return pieces


@pytest.mark.parametrize("kind", KINDS.values(), ids=KINDS.keys())
def test_counting_a_chunk_equals_the_dense_counts(kind):
    X, Y = random_chunk(np.random.default_rng(4), 300, kind["integer"])
    sparse = SparseCounts.from_chunk(X, Y, presence=kind["presence"])
    dense = NBCounts.from_chunk(X, Y, presence=kind["presence"])
    assert sparse.n_pairs == np.count_nonzero(dense.F) > 0
    assert np.all(np.diff(sparse.key) > 0) and np.all(sparse.value != 0)
    back = sparse.to_dense()
    for name in ("F", "t", "S", "N"):
        np.testing.assert_array_equal(getattr(back, name), getattr(dense, name), err_msg=name)
    assert back.n == dense.n == 300 and back.presence == kind["presence"]
    assert_same_bits(SparseCounts.from_dense(dense), sparse)


def test_words_and_categories_decode_the_keys():
    sparse = SparseCounts.from_chunk(*random_chunk(np.random.default_rng(1), 100))
    np.testing.assert_array_equal(sparse.words() * K + sparse.categories(), sparse.key)
    assert sparse.categories().max() < K and sparse.words().max() < V
    assert sparse.nbytes == 16 * sparse.n_pairs + 8 * (V + 2 * K)


@pytest.mark.parametrize("kind", KINDS.values(), ids=KINDS.keys())
def test_adding_chunks_equals_counting_their_concatenation(kind):
    chunks = random_chunks(7, kind["integer"])
    pieces = [SparseCounts.from_chunk(X, Y, presence=kind["presence"]) for X, Y in chunks]
    whole = SparseCounts.from_chunk(sp.vstack([X for X, _ in chunks]).tocsr(),
                                    sp.vstack([Y for _, Y in chunks]).tocsr(), presence=kind["presence"])
    merged = SparseCounts.merge(pieces)
    np.testing.assert_array_equal(merged.key, whole.key)
    if kind["integer"] or kind["presence"]:
        assert_same_bits(merged, whole)  # integer sums are exact in every order
    else:
        np.testing.assert_allclose(merged.value, whole.value, rtol=1e-12)
    assert merged.n == whole.n


def test_a_plus_b_is_the_merge_of_both_bit_for_bit():
    a, b = wide_pieces(0, n_pieces=2)
    assert_same_bits(a + b, SparseCounts.merge([a, b]))
    key, value = left_to_right([a, b])
    np.testing.assert_array_equal((a + b).key, key)
    np.testing.assert_array_equal((a + b).value, value)


def test_merge_adds_left_to_right_in_list_order():
    pieces = wide_pieces(1)
    merged = SparseCounts.merge(pieces)
    key, value = left_to_right(pieces)
    np.testing.assert_array_equal(merged.key, key)
    np.testing.assert_array_equal(merged.value, value)
    np.testing.assert_array_equal(merged.t, left_to_right_arrays([p.t for p in pieces]))
    np.testing.assert_array_equal(merged.N, left_to_right_arrays([p.N for p in pieces]))
    # numpy's reduceat adds runs of 3 or more pairwise: the data tells the two orders apart
    concatenated = np.concatenate([p.key for p in pieces])
    order = np.argsort(concatenated, kind="stable")
    values = np.concatenate([p.value for p in pieces])[order]
    starts = np.flatnonzero(np.r_[True, np.diff(concatenated[order]) != 0])
    assert not np.array_equal(np.add.reduceat(values, starts), value)


def left_to_right_arrays(arrays):
    total = arrays[0].copy()
    for array in arrays[1:]:
        total = total + array
    return total


def test_merging_in_steps_gives_the_bits_of_one_merge():
    # what the aggregator does: the sum so far merged with the pending pieces (a sum of a middle run of
    # pieces, merged on its own first, would round differently)
    pieces = wide_pieces(2, n_pieces=30)
    so_far = SparseCounts.merge(pieces[:7])
    so_far = SparseCounts.merge([so_far] + pieces[7:8])
    so_far = SparseCounts.merge([so_far] + pieces[8:20])
    assert_same_bits(SparseCounts.merge([so_far] + pieces[20:]), SparseCounts.merge(pieces))
    middle_first = SparseCounts.merge([so_far] + [SparseCounts.merge(pieces[20:])])
    assert not np.array_equal(middle_first.value, SparseCounts.merge(pieces).value)
    one_by_one = pieces[0]
    for piece in pieces[1:]:
        one_by_one = one_by_one + piece
    assert_same_bits(one_by_one, SparseCounts.merge(pieces))


def test_merge_pairs_of_one_piece_and_of_disjoint_pieces():
    key, value = merge_pairs([np.array([1, 5])], [np.array([2.0, 3.0])])
    np.testing.assert_array_equal(key, [1, 5])
    key, value = merge_pairs([np.array([1, 5]), np.array([0, 2, 9]), np.array([], dtype=np.int64)],
                             [np.array([2.0, 3.0]), np.array([1.0, 4.0, 7.0]), np.array([])])
    np.testing.assert_array_equal(key, [0, 1, 2, 5, 9])
    np.testing.assert_array_equal(value, [1.0, 2.0, 4.0, 3.0, 7.0])


@pytest.mark.parametrize("other", [SparseCounts.empty(V + 1, K), SparseCounts.empty(V, K - 1),
                                   SparseCounts.empty(V, K, presence=True)], ids=["features", "categories", "presence"])
def test_adding_counters_of_another_shape_or_kind_is_refused_in_one_line(other):
    with pytest.raises(MlnbError) as caught:
        SparseCounts.empty(V, K) + other
    assert "\n" not in str(caught.value) and "cannot add counters" in str(caught.value)
    with pytest.raises(MlnbError):
        SparseCounts.merge([SparseCounts.empty(V, K), other])
    with pytest.raises(MlnbError, match="at least one"):
        SparseCounts.merge([])


def test_the_empty_counters_are_the_neutral_element():
    counts = SparseCounts.from_chunk(*random_chunk(np.random.default_rng(3), 60, integer=False))
    assert_same_bits(SparseCounts.empty(V, K) + counts, counts)
    assert SparseCounts.empty(V, K).n_pairs == 0 and SparseCounts.empty(V, K).to_dense().F.shape == (K, V)


def test_pairs_of_gives_the_requested_words_pairs_in_key_order():
    counts = SparseCounts.from_chunk(*random_chunk(np.random.default_rng(5), 200))
    rng = np.random.default_rng(6)
    for words in (np.unique(rng.integers(0, V, 30)), np.arange(V), np.array([0, V - 1]), np.array([], np.int64)):
        key, value = counts.pairs_of(words)
        wanted = np.isin(counts.words(), words)
        np.testing.assert_array_equal(key, counts.key[wanted])
        np.testing.assert_array_equal(value, counts.value[wanted])
    assert counts.pairs_of(np.arange(V))[0].size == counts.n_pairs


@pytest.mark.parametrize("words", [np.array([3, 1]), np.array([2, 2]), np.array([-1, 4]), np.array([V]),
                                   np.array([0.5]), np.zeros((2, 2), dtype=np.int64)],
                         ids=["unsorted", "repeated", "negative", "beyond", "float", "2-D"])
def test_pairs_of_refuses_words_that_are_not_sorted_unique_indices(words):
    with pytest.raises(MlnbError) as caught:
        SparseCounts.empty(V, K).pairs_of(words)
    assert "\n" not in str(caught.value) and "pairs_of" in str(caught.value)


def test_column_sums_are_the_dense_column_sums():
    counts = SparseCounts.from_chunk(*random_chunk(np.random.default_rng(8), 200))
    np.testing.assert_array_equal(counts.column_sums(), counts.to_dense().F.sum(axis=0))
    assert counts.column_sums().shape == (V,) and counts.column_sums().sum() == counts.S.sum()


def test_a_dense_matrix_beyond_two_gib_is_refused_in_one_line():
    with pytest.raises(MlnbError) as caught:
        SparseCounts.empty(10**6, 10**3).to_dense()
    assert "\n" not in str(caught.value) and "7.5 GiB" in str(caught.value)
