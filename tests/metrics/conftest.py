"""Fixtures shared by the metrics tests."""

import numpy as np
import pytest


@pytest.fixture
def make_scored():
    """A maker of 800 documents × 7 categories (prevalences 0.4 .. 0.02, one never, one always) and
    scores that rank them imperfectly, rounded to ``decimals`` so that ties occur (more with fewer)."""
    def make(decimals: int):
        rng = np.random.default_rng(2)
        Y = rng.random((800, 7)) < np.array([0.4, 0.2, 0.1, 0.05, 0.02, 0.0, 1.0])
        scores = np.round(rng.normal(size=Y.shape) + 1.8 * Y - 1.0, decimals)
        return Y, scores
    return make
