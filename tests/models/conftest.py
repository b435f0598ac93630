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
