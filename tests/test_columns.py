"""mlnb._columns.column_counts against np.bincount: every size, thread count and a bad index."""

import numba
import numpy as np
import pytest

from mlnb._columns import column_counts


@pytest.mark.parametrize("size, V", [(0, 5), (1000, 7), (200_000, 50), (300_000, 47_236)])
def test_column_counts_are_bincounts_on_any_number_of_threads(size, V):
    indices = np.random.default_rng(size).integers(0, V, size=size).astype(np.int32)
    expected = np.bincount(indices, minlength=V)
    before = numba.get_num_threads()
    try:
        for threads in sorted({1, before}):
            numba.set_num_threads(threads)
            counts = column_counts(indices, V)
            assert counts.dtype == np.int64 and counts.shape == (V,)
            np.testing.assert_array_equal(counts, expected)
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("size", [10, 200_000])
@pytest.mark.parametrize("bad", [-1, 9])
def test_an_index_outside_the_columns_is_refused_not_counted(size, bad):
    indices = np.zeros(size, dtype=np.int32)
    indices[size // 2] = bad
    with pytest.raises(ValueError):
        column_counts(indices, 9)
