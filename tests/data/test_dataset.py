import numpy as np
import pytest
import scipy.sparse as sp

from mlnb import Dataset, MlnbError


def test_split_and_subsample_are_seeded():
    X = sp.random(100, 20, density=0.2, format="csr", random_state=0)
    Y = sp.csr_matrix((np.arange(100)[:, None] % np.array([2, 3]) == 0).astype(int))
    a = Dataset.from_arrays(X, Y, test_fraction=0.3, seed=4)
    b = Dataset.from_arrays(X, Y, test_fraction=0.3, seed=4)
    np.testing.assert_array_equal(a.test_index, b.test_index)
    assert a.test_index.size == 30 and a.X_train.shape == (70, 20)
    small = a.subsample_train(10, seed=1)
    assert small.train_index.size == 10 and set(small.train_index) <= set(a.train_index)
    np.testing.assert_array_equal(small.train_index, a.subsample_train(10, seed=1).train_index)


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
