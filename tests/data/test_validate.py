"""The checks every X passes (``mlnb.data.validate``) on matrices large enough for their scans on every
thread (``mlnb._kernels.csr.value_bounds`` in pieces, ``row_order``): the same refusals, naming the same document,
as on a small one."""

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb import MlnbError
from mlnb._kernels import csr as _csr
from mlnb.data.validate import MAX_ABS_FEATURE, check_features, check_labels, check_non_negative

ROWS = 20_000  # × 400 × 0.05: 400k stored values, above PARALLEL_SCAN_VALUES


@pytest.fixture(autouse=True)
def pieces_of_values(monkeypatch):
    monkeypatch.setattr(_csr, "BOUNDS_PIECE_VALUES", 1 << 14)  # 400k values: pieces on every thread


def large_counts(dtype=np.float32) -> sp.csr_matrix:
    X = sp.random(ROWS, 400, density=0.05, format="csr", dtype=np.float64, random_state=0)
    X.data = np.ceil(X.data * 5)
    assert X.nnz > _csr.PARALLEL_SCAN_VALUES
    return X.astype(dtype)


def with_value(X: sp.csr_matrix, row: int, value: float) -> sp.csr_matrix:
    X = X.copy()
    X.data[X.indptr[row] + 1] = value
    return X


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("row, value, message", [
    (19_998, np.nan, r"^X: document 19998: feature value nan \(NaN or infinite"),
    (7, np.inf, r"^X: document 7: feature value inf \(NaN or infinite"),
    (12_345, -np.inf, r"^X: document 12345: feature value -inf \(NaN or infinite"),
    (3, 2 * MAX_ABS_FEATURE, r"^X: document 3: feature value .* has a magnitude beyond"),
])
def test_a_bad_value_deep_in_a_large_matrix_is_named_by_its_document(dtype, row, value, message):
    if dtype == np.float32 and abs(value) == 2 * MAX_ABS_FEATURE and 2 * MAX_ABS_FEATURE > np.finfo(np.float32).max:
        value = np.inf  # pragma: no cover  (float32 holds no such value)
    with pytest.raises(MlnbError, match=message):
        check_features(with_value(large_counts(dtype), row, value))


def test_a_negative_value_deep_in_a_large_matrix_is_refused_where_counts_are_needed():
    X = with_value(large_counts(), 19_999, -2.0)
    checked = check_features(X)  # signed values are fine in general
    with pytest.raises(MlnbError, match=r"^X: document 19999: feature value -2 is negative"):
        check_non_negative(checked)
    with pytest.raises(MlnbError, match=r"^X: document 19999: feature value -2 is negative"):
        check_features(X, non_negative=True)
    check_non_negative(check_features(large_counts()))  # and clean counts pass


def test_large_clean_labels_pass_as_they_are_and_repeats_are_summed_to_one():
    rng = np.random.default_rng(0)
    Y = sp.csr_matrix((rng.random((ROWS, 30)) < 0.2).astype(np.int8))
    assert Y.nnz > _csr.PARALLEL_SCAN_VALUES
    assert np.shares_memory(check_labels(Y).indices, Y.indices)  # canonical int8 0/1: no copy
    repeated = sp.csr_matrix((np.ones(Y.nnz + 1, dtype=np.int8), np.append(Y.indices, Y.indices[-1]),
                              np.append(Y.indptr[:-1], Y.nnz + 1)), shape=Y.shape)  # the last label twice
    fixed = check_labels(repeated)
    assert fixed.has_canonical_format and fixed.nnz == Y.nnz and (fixed.data == 1).all()
