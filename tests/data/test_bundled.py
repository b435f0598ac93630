"""scikit-learn's bundled single-label sets as a Dataset split by the hash of each sample's id."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from mlnb.data.bundled import load_bundled
from mlnb.data.hashing import split_mask
from mlnb.errors import MlnbError


@pytest.mark.parametrize("name, n, V, K", [("iris", 150, 4, 3), ("wine", 178, 13, 3),
                                          ("breast_cancer", 569, 30, 2), ("digits", 1797, 64, 10)])
def test_shapes_one_hot_and_the_hash_split(name, n, V, K):
    data = load_bundled(name, test_fraction=0.5, seed=0)
    assert data.X.shape == (n, V) and data.Y.shape == (n, K)
    assert (np.diff(data.Y.indptr) == 1).all()  # one class per sample
    np.testing.assert_array_equal(data.ids, np.arange(n))
    np.testing.assert_array_equal(data.test_index, np.flatnonzero(split_mask(np.arange(n), 0, 0.5)))
    np.testing.assert_array_equal(data.train_index, np.flatnonzero(~split_mask(np.arange(n), 0, 0.5)))
    assert (data.Y_train.sum(axis=0).A1 > 0).all() and (data.Y_test.sum(axis=0).A1 > 0).all()
    assert data.describe()["split"] == "a seeded hash of each document's id (seed 0, test_fraction 0.5)"


def test_same_seed_same_split_and_values_are_the_original_ones():
    a, b = load_bundled("iris", seed=3), load_bundled("iris", seed=3)
    np.testing.assert_array_equal(a.train_index, b.train_index)
    assert not np.array_equal(a.train_index, load_bundled("iris", seed=4).train_index)
    np.testing.assert_allclose(a.X.toarray(), load_iris().data.astype(np.float32))
    assert a.category_names == ["setosa", "versicolor", "virginica"]


def test_a_split_that_leaves_a_class_out_of_a_part_is_refused():
    with pytest.raises(MlnbError, match=r"^data\.test_fraction = 0\.01: iris has 150 samples in 3 classes, and the "
                                        r"split .* leaves class '\w+' without a test sample"):
        load_bundled("iris", test_fraction=0.01)
