"""Fixtures of the Naive Bayes tests: real-valued and mixed-column data, single-label data, and the
scikit-learn oracle."""

from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_svmlight_file

from mlnb.data.synthetic import make_rcv1_like

TWEETS_DTM = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "tweets" / "tweetsDTM.svm.gz"


def _sklearn_log_odds(estimator, X, y):
    """log P(y=1|x) − log P(y=0|x) of an sklearn NB fitted on one category's binary problem."""
    joint = clone(estimator).fit(X, y).predict_joint_log_proba(X)
    return joint[:, 1] - joint[:, 0]


@pytest.fixture(scope="session")
def sklearn_log_odds():
    return _sklearn_log_odds


def as_float32(X):
    """X as mlnb sees it (float32), handed back to scikit-learn as float64."""
    return np.asarray(X, dtype=np.float32).astype(np.float64)


@pytest.fixture(scope="session")
def breast_cancer_multilabel():
    """569 × 30 real values; 4 categories: the diagnosis and three thresholded features."""
    data = load_breast_cancer()
    X = data.data
    Y = np.column_stack([data.target, X[:, 0] > 15, X[:, 20] > np.median(X[:, 20]), X[:, 5] > 0.1]).astype(int)
    return as_float32(X), Y


@pytest.fixture(scope="session")
def mixed_columns():
    """569 documents: 30 real columns (breast cancer), 6 binary 0/1 columns, 6 count columns.

    Returns X, Y and the column groups (real, binary, counts) as index arrays.
    """
    data = load_breast_cancer()
    rng = np.random.default_rng(3)
    real = data.data
    target = data.target
    binary = np.column_stack([real[:, j] > np.median(real[:, j]) for j in (1, 4, 8, 12)]
                             + [rng.random(len(real)) < 0.2 + 0.5 * target, np.zeros(len(real))])
    counts = np.column_stack([rng.poisson(1 + 3 * target), rng.poisson(2 + 0 * target), np.round(real[:, 3] / 100),
                              np.round(real[:, 13] / 10), rng.poisson(0.5 + real[:, 0] / 10),
                              rng.poisson(4 - 2 * target)])
    X = as_float32(np.hstack([real, binary, counts]))
    Y = np.column_stack([target, real[:, 0] > 15, real[:, 20] > np.median(real[:, 20]), binary[:, 4]]).astype(int)
    groups = np.arange(30), np.arange(30, 36), np.arange(36, 42)
    return X, Y, groups


@pytest.fixture(scope="session")
def tweets_dtm():
    """The fastNaiveBayes tweets document-term matrix: 14,640 × 2,213 counts, 3 classes (X CSR, y (n,))."""
    if not TWEETS_DTM.is_file():
        pytest.skip(f"real data not found at {TWEETS_DTM} (../shared/data is beside the project only in the "
                    "development checkout)")
    X, y = load_svmlight_file(str(TWEETS_DTM), zero_based=False, n_features=2213)
    return X.tocsr(), y.astype(int)


@pytest.fixture(scope="session")
def single_label_corpus():
    """make_rcv1_like's word counts (2,000 documents, 1,500 words) with random single labels in 5 classes
    of unequal sizes: (X CSR, y (n,))."""
    X = make_rcv1_like(n_documents=4000, n_features=1500, n_categories=10, seed=11).X_train
    y = np.random.default_rng(5).choice(5, size=X.shape[0], p=[0.4, 0.25, 0.2, 0.1, 0.05])
    return X, y
