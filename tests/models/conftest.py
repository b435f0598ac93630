"""Fixtures shared by the model tests."""

import numpy as np
import pytest
import scipy.sparse as sp


@pytest.fixture(scope="session")
def tiny():
    """60 documents, 12 words, 3 categories drawn from a known linear model: for gradients and optima."""
    rng = np.random.default_rng(0)
    X = sp.random(60, 12, density=0.4, format="csr", random_state=1, dtype=np.float32)
    X.data = np.round(X.data * 3 + 1).astype(np.float32)
    w_true = rng.normal(size=(12, 3))
    Y = (X @ w_true + rng.normal(size=(60, 3)) > 1.0).astype(int)
    return X, Y


@pytest.fixture(scope="session")
def tiny_multiclass():
    """60 documents, 12 words, 3 classes drawn from a known softmax model: for gradients and optima.

    argmax(z + Gumbel noise) is a draw from softmax(z), so the labels follow the model being fitted.
    """
    rng = np.random.default_rng(0)
    X = sp.random(60, 12, density=0.4, format="csr", random_state=1, dtype=np.float32)
    X.data = np.round(X.data * 3 + 1).astype(np.float32)
    w_true = rng.normal(size=(12, 3))
    y = np.argmax(X @ w_true + rng.gumbel(size=(60, 3)), axis=1)  # (60,) in 0..2
    return X, y


@pytest.fixture(scope="session")
def small_multiclass(small_corpus):
    """small_corpus's documents (2,000 words) with 5 classes from a seeded softmax model over them."""
    rng = np.random.default_rng(11)
    w_true = rng.normal(scale=0.3, size=(small_corpus.X_train.shape[1], 5))

    def labels(X):
        return np.argmax(X @ w_true + rng.gumbel(size=(X.shape[0], 5)), axis=1)  # (n,) in 0..4

    return small_corpus.X_train, labels(small_corpus.X_train), small_corpus.X_test, labels(small_corpus.X_test)
