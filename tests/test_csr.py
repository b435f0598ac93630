"""mlnb._kernels.csr against numpy and scipy: column_counts is np.bincount, select_rows is M[rows] and
stack_rows is sp.vstack, on any number of threads."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from mlnb._kernels import atomic as _atomic, csr as _csr
from mlnb._kernels.csr import column_counts, select_rows, stack_rows


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


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("parallel, piece", [(True, (256, 4096)), (True, (5, 5)), (False, (256, 4096))])
def test_select_rows_is_scipys_row_indexing(monkeypatch, index_dtype, parallel, piece):
    rng = np.random.default_rng(1)
    M = sp.random(500, 300, density=0.05, format="csr", dtype=np.float32, random_state=rng)
    M.indices, M.indptr = M.indices.astype(index_dtype), M.indptr.astype(index_dtype)
    monkeypatch.setattr(_csr, "PARALLEL_COPY_NONZEROS", 0 if parallel else float("inf"))
    # (5, 5): pieces of 5 rows claimed by the threads, the last one short (321 rows)
    monkeypatch.setattr(_atomic, "PIECE_ROWS", piece)
    for rows in (rng.permutation(500)[:321], np.repeat(np.arange(0, 500, 7), 2), np.array([], dtype=np.int64),
                 np.arange(499, -1, -1)):
        got, want = select_rows(M, rows), M[rows]
        for a, b in ((got.data, want.data), (got.indices, want.indices), (got.indptr, want.indptr)):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
        assert got.shape == want.shape


def test_select_rows_leaves_unusual_rows_to_scipy(monkeypatch):
    """Negative, out-of-range or boolean rows: scipy's own behaviour and errors."""
    monkeypatch.setattr(_csr, "PARALLEL_COPY_NONZEROS", 0)
    M = sp.random(50, 20, density=0.2, format="csr", dtype=np.float32, random_state=0)
    np.testing.assert_array_equal(select_rows(M, np.array([-1, 3])).toarray(), M[np.array([-1, 3])].toarray())
    with pytest.raises(IndexError):
        select_rows(M, np.array([0, 50]))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_stack_rows_is_scipys_vstack(index_dtype, threads, monkeypatch):
    monkeypatch.setattr(_csr, "PARALLEL_COPY_NONZEROS", 0 if threads > 1 else 1 << 30)  # the pool, or in line
    rng = np.random.default_rng(0)
    blocks = []
    for rows, dtype in ((5, np.float32), (0, np.float32), (17, np.float64), (1, np.float32), (40, np.float32)):
        block = sp.random(rows, 30, density=0.2, format="csr", dtype=dtype, random_state=rng)
        block.indices, block.indptr = block.indices.astype(index_dtype), block.indptr.astype(index_dtype)
        blocks.append(block)
    previous = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        stacked = stack_rows(blocks)
    finally:
        numba.set_num_threads(previous)
    expected = sp.vstack(blocks, format="csr")
    for got, want in ((stacked.data, expected.data), (stacked.indices, expected.indices),
                      (stacked.indptr, expected.indptr)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert stacked.shape == expected.shape


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [0, 5, 1 << 17])
def test_value_bounds_are_numpys_min_and_max_in_pieces_on_any_number_of_threads(monkeypatch, dtype, size):
    """numpy's min and max (NaN if a value is NaN, ±inf counted), in pieces of 4,096 values on one or more
    threads; (inf, −inf) for no values."""
    monkeypatch.setattr(_csr, "BOUNDS_PIECE_VALUES", 1 << 12)
    rng = np.random.default_rng(size)
    data = rng.normal(scale=1e3, size=size).astype(dtype)
    cases = [data]
    if size:
        for bad in ([np.nan], [np.inf, -np.inf], [np.nan, np.inf]):
            with_bad = data.copy()
            with_bad[rng.choice(size, len(bad), replace=False)] = bad
            cases.append(with_bad)
    before = numba.get_num_threads()
    try:
        for values in cases:
            want = (float(values.min()), float(values.max())) if size else (np.inf, -np.inf)
            for threads in sorted({1, before}):
                numba.set_num_threads(threads)
                got = _csr.value_bounds(values)
                np.testing.assert_array_equal(got, want)
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("rows", [3, 20_000])
def test_row_order_is_scipys_answer_and_is_kept_on_the_matrix(rows):
    """Sorted, sorted with a repeated index (sorted but not canonical), and unsorted: the answers of
    scipy's own scans, and both flags cached on the matrix as scipy caches them."""
    rng = np.random.default_rng(rows)
    M = sp.random(rows, 400, density=0.05, format="csr", dtype=np.float32, random_state=rng)
    M.sort_indices()
    variants = {"canonical": M}
    row = int(np.flatnonzero(np.diff(M.indptr) >= 2)[-1])  # a row of two or more, near the end
    p = M.indptr[row]
    repeated = M.copy()
    repeated.indices[p + 1] = repeated.indices[p]
    unsorted = M.copy()
    unsorted.indices[p], unsorted.indices[p + 1] = unsorted.indices[p + 1], unsorted.indices[p]
    variants |= {"repeated": repeated, "unsorted": unsorted}
    for name, matrix in variants.items():
        fresh = sp.csr_matrix((matrix.data, matrix.indices, matrix.indptr), shape=matrix.shape)
        want_sorted, want_canonical = fresh.has_sorted_indices, fresh.has_canonical_format
        assert (want_sorted, want_canonical) == {"canonical": (True, True), "repeated": (True, False),
                                                 "unsorted": (False, False)}[name]
        mine = sp.csr_matrix((matrix.data, matrix.indices, matrix.indptr), shape=matrix.shape)
        assert _csr.row_order(mine) is want_sorted
        assert (mine._has_sorted_indices, mine.has_canonical_format) == (want_sorted, want_canonical)


@pytest.mark.parametrize("n", [7, 50_000])
def test_columns_of_labels_are_scipys_columns_with_the_category_totals(n):
    """Each category's documents in ascending order, as scipy's CSC conversion lists them, a stored 0 left
    out, and N = Yᵀ·1, from shares of the rows on every thread (the NB counts' and the rank metrics'
    labels by category)."""
    rng = np.random.default_rng(n)
    Y = sp.csr_matrix((rng.random((n, 13)) < 0.2).astype(np.int8))
    Y.data[::7] = 0  # stored zeros: not labels
    expected = sp.csc_matrix(Y, copy=True)
    expected.eliminate_zeros()
    before = numba.get_num_threads()
    try:
        for threads in sorted({1, before}):
            numba.set_num_threads(threads)
            indptr, rows, N = _csr.columns_of(Y)
            np.testing.assert_array_equal(indptr, expected.indptr)
            np.testing.assert_array_equal(rows, expected.indices)
            np.testing.assert_array_equal(N, np.asarray(Y.sum(axis=0), dtype=np.float64).ravel())
    finally:
        numba.set_num_threads(before)


def _ragged(rng, rows: int, width: int, empty: float) -> sp.csr_matrix:
    """Rows of 0 to 12 sorted distinct columns, a share ``empty`` of them empty (runs of empty rows
    included), so that rows end high and the next starts low, and row starts repeat."""
    lengths = np.where(rng.random(rows) < empty, 0, rng.integers(1, 13, rows))
    indices = np.concatenate([np.sort(rng.choice(width, k, replace=False)) for k in lengths] or [np.zeros(0)])
    indptr = np.r_[0, np.cumsum(lengths)]
    return sp.csr_matrix((rng.random(indices.size).astype(np.float32), indices.astype(np.int32), indptr),
                         shape=(rows, width))


@pytest.mark.parametrize("seed", range(6))
def test_row_order_counts_only_pairs_within_a_row_whatever_the_pieces(seed, monkeypatch):
    """The scan counts neighbouring pairs over each piece's non-zeros as one run and takes out the pairs
    that straddle a row start: scipy's answers with empty rows, runs of them, pieces of a few rows, and
    a decrease or repeat placed at a row's first or last pair."""
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(_csr, "PARALLEL_SCAN_VALUES", 8)  # many pieces
    M = _ragged(rng, 300, 50, empty=[0.0, 0.3, 0.8][seed % 3])
    long_rows = np.flatnonzero(np.diff(M.indptr) >= 2)
    variants = [M]
    for row in rng.choice(long_rows, 3):
        for at in (M.indptr[row], M.indptr[row + 1] - 2):  # the row's first pair, its last
            for change in ("swap", "repeat"):
                bad = M.copy()
                if change == "swap":
                    bad.indices[at], bad.indices[at + 1] = bad.indices[at + 1], bad.indices[at]
                else:
                    bad.indices[at + 1] = bad.indices[at]
                variants.append(bad)
    for matrix in variants:
        want = sp.csr_matrix((matrix.data, matrix.indices, matrix.indptr), shape=matrix.shape)
        mine = sp.csr_matrix((matrix.data, matrix.indices, matrix.indptr), shape=matrix.shape)
        assert _csr.row_order(mine) is want.has_sorted_indices
        assert mine.has_canonical_format is want.has_canonical_format


@pytest.mark.parametrize("seed", range(4))
def test_a_checked_row_range_is_scipys_rows_and_names_what_is_wrong(seed, monkeypatch):
    """Rows a .. b copied and checked on every thread (above PARALLEL_COPY_NONZEROS) or by numpy (below):
    the same rows as scipy's slice, and the same verdict: a column outside the width, a decrease or a
    repeat within a row (never across a row start), a decreasing indptr."""
    rng = np.random.default_rng(seed)
    M = _ragged(rng, 2000, 60, empty=0.2)
    for parallel in (True, False):
        monkeypatch.setattr(_csr, "PARALLEL_COPY_NONZEROS", 16 if parallel else 10**9)
        for a, b in ((0, 2000), (37, 1500), (5, 6), (1999, 2000)):
            pointers, columns, values, problem = _csr.checked_row_range(M.indptr, M.indices, M.data, a, b, 60)
            assert problem is None
            got = sp.csr_matrix((values, columns, pointers), shape=(b - a, 60))
            assert (got != M[a:b]).nnz == 0 and got.indices.dtype == M.indices.dtype
            _, labels, nothing, problem = _csr.checked_row_range(M.indptr, M.indices, None, a, b, 60)
            assert nothing is None and problem is None
            np.testing.assert_array_equal(labels, M[a:b].indices)
        row = int(rng.choice(np.flatnonzero(np.diff(M.indptr) >= 2)))
        at = M.indptr[row]
        for change, want in (("outside", "outside"), ("negative", "outside"), ("swap", "unordered"),
                             ("repeat", "unordered")):
            indices = M.indices.copy()
            if change == "outside":
                indices[at] = 60
            elif change == "negative":
                indices[at] = -1
            elif change == "swap":
                indices[at], indices[at + 1] = indices[at + 1], indices[at]
            else:
                indices[at + 1] = indices[at]
            assert _csr.checked_row_range(M.indptr, indices, M.data, 0, 2000, 60)[3] == want
            assert _csr.checked_row_range(M.indptr, indices, M.data, row + 1, 2000, 60)[3] is None  # not read
        indptr = M.indptr.copy()
        indptr[row + 1] = indptr[row] - 1
        assert _csr.checked_row_range(indptr, M.indices, M.data, 0, 2000, 60)[3] == "decreasing"
