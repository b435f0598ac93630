"""Two CSR operations on every thread, the same arrays whatever the thread count.

``column_counts``: how many stored values each column has, ``np.bincount(X.indices, minlength=V)``.
For RCV1's 781k documents (47M non-zeros) ``np.bincount`` took 0.85 s cold on one core: it first
copies the int32 indices to int64. Each thread counts its own share of the indices into its own row
of counts, and the rows are added: integer sums. (The features' document frequencies, the LR
engine's word counts.)

``copy_rows``: the rows ``rows`` of a CSR matrix, in that order (``X[rows]``): the offsets in one
serial pass, then each row copied to its own place, a share of the rows per thread. (A dataset's
training and test parts, and each minibatch of the LR engine: on one core, these copies were part
of the 0.39 s that an LR pass spent outside its parallel regions on 16 cores.)
"""

from __future__ import annotations

import numpy as np

from mlnb._numba import HAVE_NUMBA, njit, prange

#: at most this many bytes of per-thread count rows (threads × V × 8); beyond, fewer threads count
COUNT_ROWS_BYTES = 64 * 2**20

if HAVE_NUMBA:

    @njit(parallel=True, cache=True)
    def _count(indices, V, pieces, counts, bad):
        n = indices.size
        share = (n + pieces - 1) // pieces
        for p in prange(pieces):
            for q in range(p * share, min(n, (p + 1) * share)):
                j = indices[q]
                if 0 <= j < V:
                    counts[p, j] += 1
                else:
                    bad[p] = 1

    @njit(cache=True)
    def _row_offsets(indptr, rows, out_indptr):
        """out_indptr of the rows ``rows``: 0, then the running sum of their lengths."""
        out_indptr[0] = 0
        for ii in range(rows.size):
            r = rows[ii]
            out_indptr[ii + 1] = out_indptr[ii] + (indptr[r + 1] - indptr[r])

    @njit(parallel=True, cache=True)
    def _copy_rows(indptr, indices, data, rows, out_indptr, out_indices, out_data):
        for ii in prange(rows.size):
            r = rows[ii]
            start, end, q = indptr[r], indptr[r + 1], out_indptr[ii]
            out_indices[q:q + end - start] = indices[start:end]
            out_data[q:q + end - start] = data[start:end]

    def copy_rows(indptr, indices, data, rows, index_dtype) -> tuple:
        """(indptr, indices, data) of the rows ``rows`` of a CSR matrix's arrays, ``index_dtype``
        indexed (the caller checks that the rows' non-zeros fit it)."""
        rows = np.asarray(rows, dtype=np.int64)
        out_indptr = np.empty(rows.size + 1, dtype=index_dtype)
        _row_offsets(indptr, rows, out_indptr)
        out_indices = np.empty(int(out_indptr[-1]), dtype=index_dtype)
        out_data = np.empty(int(out_indptr[-1]), dtype=data.dtype)
        _copy_rows(indptr, indices, data, rows, out_indptr, out_indices, out_data)
        return out_indptr, out_indices, out_data


def column_counts(indices: np.ndarray, V: int) -> np.ndarray:
    """(V,) int64: how often each of 0..V−1 occurs in ``indices`` (a CSR matrix's column indices);
    ValueError for an index outside 0..V−1 (``np.bincount`` would grow its output instead)."""
    indices = np.asarray(indices)
    if not HAVE_NUMBA or indices.size < 1 << 16:
        counts = np.bincount(indices, minlength=V) if indices.size else np.zeros(V, dtype=np.int64)
        if counts.size != V:
            raise ValueError(f"a column index is {counts.size - 1}, beyond the {V} columns")
        return counts.astype(np.int64, copy=False)
    import numba

    pieces = max(1, min(numba.get_num_threads(), COUNT_ROWS_BYTES // (8 * max(V, 1)), indices.size >> 16))
    counts = np.zeros((pieces, V), dtype=np.int64)
    bad = np.zeros(pieces, dtype=np.int64)
    _count(indices, V, pieces, counts, bad)
    if bad.any():
        raise ValueError(f"a column index is outside 0..{V - 1}")
    return counts.sum(axis=0)


#: expected non-zeros of a row selection above which ``select_rows`` copies on every thread (below,
#: starting the threads costs more than the copy)
PARALLEL_COPY_NONZEROS = 32_768


def select_rows(M, rows: np.ndarray):
    """``M[rows]`` of a scipy CSR matrix (``rows`` an integer array): the same arrays and dtypes as
    scipy's, copied on every thread when there are many non-zeros to copy."""
    import scipy.sparse as sp

    rows = np.asarray(rows)
    expected = rows.size * M.nnz / max(M.shape[0], 1)
    if not HAVE_NUMBA or expected <= PARALLEL_COPY_NONZEROS or rows.dtype.kind not in "iu" or \
            (rows.size and (rows.min() < 0 or rows.max() >= M.shape[0])):
        return M[rows]  # scipy's own checks and messages for anything unusual
    wide = M.indptr.dtype.itemsize > 4 or M.indices.dtype.itemsize > 4  # scipy's index dtype
    nonzeros = int(np.diff(M.indptr)[rows].sum())
    index_dtype = np.int64 if wide or nonzeros > np.iinfo(np.int32).max else np.int32
    indptr, indices, data = copy_rows(M.indptr, M.indices, M.data, rows, index_dtype)
    return sp.csr_matrix((data, indices, indptr), shape=(rows.size, M.shape[1]))
