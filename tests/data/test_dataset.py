import numpy as np
import pytest
import scipy.sparse as sp

from mlnb import Dataset, MlnbError
from mlnb.data.hashing import SAMPLE_PURPOSE, hash_unit, purpose_seed, split_mask


def test_split_is_the_hash_of_the_ids_and_the_sample_the_smallest_hashes():
    X = sp.random(100, 20, density=0.2, format="csr", random_state=0)
    Y = sp.csr_matrix((np.arange(100)[:, None] % np.array([2, 3]) == 0).astype(int))
    a = Dataset.from_arrays(X, Y, test_fraction=0.3, seed=4)
    b = Dataset.from_arrays(X, Y, test_fraction=0.3, seed=4)
    np.testing.assert_array_equal(a.test_index, b.test_index)
    np.testing.assert_array_equal(a.ids, np.arange(100))
    np.testing.assert_array_equal(a.test_index, np.flatnonzero(split_mask(np.arange(100), 4, 0.3)))
    assert a.test_index.size + a.train_index.size == 100 and a.X_train.shape == (a.train_index.size, 20)
    assert a.describe()["split"] == "a seeded hash of each document's id (seed 4, test_fraction 0.3)"
    small = a.subsample_train(10, seed=1)
    assert small.train_index.size == 10 and set(small.train_index) <= set(a.train_index)
    u = hash_unit(a.ids[a.train_index], purpose_seed(1, SAMPLE_PURPOSE))
    np.testing.assert_array_equal(small.train_index, np.sort(a.train_index[np.argsort(u)[:10]]))
    assert set(a.subsample_train(5, seed=1).train_index) <= set(small.train_index)  # samples nest
    assert small.describe()["split"].endswith("; training on at most 10 of the training documents, those with the "
                                              "smallest seeded hash of their id (seed 1)")
    np.testing.assert_array_equal(a.subsample_train(1000, seed=1).train_index, a.train_index)


def test_ids_decide_the_split_not_the_row_order():
    X = sp.random(400, 5, density=0.5, format="csr", random_state=1)
    Y = sp.csr_matrix(np.eye(400, 2))
    ids = (np.arange(400) % 2 << 40) + np.arange(400) // 2  # two files, interleaved
    data = Dataset.from_arrays(X, Y, ids=ids, seed=2)
    np.testing.assert_array_equal(data.test_index, np.flatnonzero(split_mask(ids, 2, 0.5)))
    with pytest.raises(MlnbError, match="ids: expected 400 non-negative integer document ids"):
        Dataset.from_arrays(X, Y, ids=np.arange(399))


def test_a_split_with_an_empty_side_is_refused():
    with pytest.raises(MlnbError, match="test_fraction 0.01 of 3 documents leaves an empty train or test set"):
        Dataset.from_arrays(np.ones((3, 2)), np.eye(3), test_fraction=0.01)


def test_train_test_feature_mismatch_is_an_error():
    with pytest.raises(MlnbError, match="train data has 5 features but test data has 6"):
        Dataset.from_train_test(np.ones((3, 5)), np.eye(3), np.ones((2, 6)), np.ones((2, 3)))


def test_contiguous_parts_share_memory_and_equal_copies():
    X = sp.random(50, 8, density=0.3, format="csr", random_state=2, dtype=np.float32)
    data = Dataset.from_train_test(X[:30], sp.eye(30, 3, format="csr"), X[30:], sp.eye(20, 3, format="csr"))
    test = data.X_test
    assert np.shares_memory(test.data, data.X.data)
    np.testing.assert_array_equal(test.toarray(), X[30:].toarray())
    np.testing.assert_array_equal(data.X_train.toarray(), X[:30].toarray())
    np.testing.assert_array_equal(data.ids, np.concatenate([np.arange(30), np.arange(20)]))  # each part's positions
