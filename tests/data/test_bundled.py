"""scikit-learn's bundled single-label sets as a seeded, stratified Dataset."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from mlnb.data.bundled import load_bundled


@pytest.mark.parametrize("name, n, V, K", [("iris", 150, 4, 3), ("wine", 178, 13, 3),
                                          ("breast_cancer", 569, 30, 2), ("digits", 1797, 64, 10)])
def test_shapes_one_hot_and_stratified(name, n, V, K):
    data = load_bundled(name, test_fraction=0.5, seed=0)
    assert data.X.shape == (n, V) and data.Y.shape == (n, K)
    assert (np.diff(data.Y.indptr) == 1).all()  # one class per sample
    train, test = data.Y_train.sum(axis=0).A1, data.Y_test.sum(axis=0).A1
    assert np.abs(train - test).max() <= 1  # stratified: every class split evenly
    assert not set(data.train_index) & set(data.test_index)


def test_same_seed_same_split_and_values_are_the_original_ones():
    a, b = load_bundled("iris", seed=3), load_bundled("iris", seed=3)
    np.testing.assert_array_equal(a.train_index, b.train_index)
    assert not np.array_equal(a.train_index, load_bundled("iris", seed=4).train_index)
    np.testing.assert_allclose(a.X.toarray(), load_iris().data.astype(np.float32))
    assert a.category_names == ["setosa", "versicolor", "virginica"]
