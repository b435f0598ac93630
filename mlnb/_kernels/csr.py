"""CSR operations on every thread, giving the same arrays whatever the thread count.

``column_counts``: how many stored values each column has, ``np.bincount(X.indices, minlength=V)``.
``np.bincount`` runs on one core and first copies the int32 indices to int64 (measured by
experiments/bench_serial.py). Each thread counts its own share of the indices into its own row
of counts, and the rows are added: integer sums. (The features' document frequencies, the LR
engine's word counts.)

``copy_rows`` / ``select_rows``: the rows ``rows`` of a CSR matrix, in that order (``X[rows]``): the
offsets in one serial pass, then each row copied to its own place, in pieces of rows that the threads
claim in turn (``mlnb._kernels.atomic``), each row's non-zeros asked for a few rows before they are copied
(``mlnb._kernels.prefetch``).
(A dataset's training and test parts, and each minibatch of the LR engine: on one core, these
copies were part of what an LR pass spent outside its parallel regions; measured by
experiments/bench_serial.py.)

``stack_rows``: ``sp.vstack`` of CSR row blocks, numpy's copies of a block per thread (scipy's one-core
copy was a quarter of the synthetic corpus's generation).

``value_bounds``: numpy's (min, max) of a CSR matrix's stored values, a piece per thread (the one
check of every X that enters a model was two of numpy's serial passes, a large part of what an NB fit
spent outside its parallel regions; measured by experiments/bench_serial.py).

``columns_of``: a matrix's non-zero entries column by column (a CSC structure without stored zeros), in
two passes on every thread (scipy's conversion runs on one core).

``row_order``: whether every row's column indices are increasing (scipy's ``has_sorted_indices``, and
strictly: ``has_canonical_format``), rows on every thread, cached on the matrix as scipy caches its own
answer.

``checked_row_range``: rows a .. b of a CSR matrix's arrays (a memory-mapped shard) as arrays of their
own, copied and checked (column indices within the width and increasing within each row) in one pass,
a share of the rows per thread (numpy's copies and checks of each chunk read from a shard ran on one
core, in every pass over a streamed corpus).

``at_or_above``: the CSR structure of [S_ik ≥ t_k] of dense scores, each row's accepted columns
counted and then written, rows on every thread (a decision rule's cut, the bootstrap's decisions).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mlnb._kernels.atomic import piece_rows
from mlnb._kernels.jit import HAVE_NUMBA, map_pieces, map_threads, njit, prange

#: at most this many bytes of per-thread count rows (threads × V × 8); beyond, fewer threads count
COUNT_ROWS_BYTES = 64 * 2**20
#: non-zeros of a row copy above which it runs on every thread (below, starting the threads costs
#: more than the copy: a minibatch's labels, ~3k, are copied on one)
PARALLEL_COPY_NONZEROS = 32_768
#: rows ahead of the one being copied whose non-zeros are asked for (``_copy_rows_parallel``, ``_copy_rows_serial``)
COPY_AHEAD = 4
#: rows ahead of the one being measured whose offsets (indptr[r], indptr[r + 1]) are asked for (``_row_offsets``)
OFFSETS_AHEAD = 16
_INT32_MAX = np.iinfo(np.int32).max

if HAVE_NUMBA:
    from mlnb._kernels.atomic import claim_rows
    from mlnb._kernels.prefetch import prefetch_at, prefetch_span

    @njit(parallel=True, cache=True)
    def _count(indices, V, pieces, counts, bad):
        """counts[p, j] = how often j occurs in share p of ``indices`` (``pieces`` equal shares, each on a thread);
        bad[p] = 1 when share p holds an index outside 0 .. V − 1.

        Why a kernel: each thread counts its own share of the indices into its own row, where ``np.bincount`` runs
        on one core and first widens the int32 indices to int64. Measured by experiments/bench_serial.py."""
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
        """out_indptr of the rows ``rows``: 0, then the running sum of their lengths. The rows lie in a
        random order, and each indptr[r] is a wait on memory: asking for the one ``OFFSETS_AHEAD`` rows on
        keeps that many on their way at once (measured by experiments/bench_serial.py).

        Why a kernel: a loop that asks for the offsets of rows ahead of their turn, which numpy's fancy indexing
        cannot do. Measured by experiments/bench_serial.py."""
        out_indptr[0] = 0
        n = rows.size
        for ii in range(n):
            if ii + OFFSETS_AHEAD < n:
                ahead = rows[ii + OFFSETS_AHEAD]
                prefetch_at(indptr, ahead)
                prefetch_at(indptr, ahead + 1)
            r = rows[ii]
            out_indptr[ii + 1] = out_indptr[ii] + (indptr[r + 1] - indptr[r])

    @njit(inline="always")
    def _copy_row(indptr, indices, data, rows, ii, out_indptr, out_indices, out_data):
        """Row rows[ii] of (indptr, indices, data) copied to out_indices and out_data from out_indptr[ii] on.

        Why a kernel: inlined into both row copies, so that the parallel and the serial copy move each row by the
        same vector loops. Measured by experiments/bench_serial.py."""
        r = rows[ii]
        # unsigned places: numba then adds no wrap-around of negative indices, and the loops run in vector
        # lanes; loops, not slices: numba's slice copy is slower on short rows (experiments/bench_serial.py)
        start, end, q = np.uint64(indptr[r]), np.uint64(indptr[r + 1]), np.uint64(out_indptr[ii])
        for p in range(start, end):
            out_indices[q + (p - start)] = indices[p]
        for p in range(start, end):
            out_data[q + (p - start)] = data[p]

    @njit(parallel=True, cache=True)
    def _copy_rows_parallel(indptr, indices, data, rows, out_indptr, out_indices, out_data, workers, rows_a_piece):
        """Each worker claims pieces of ``rows_a_piece`` consecutive rows in turn (``mlnb._kernels.atomic``) until none
        is left, and copies each row of its piece asking for the row ``COPY_AHEAD`` rows on: the rows
        lie in a random order across the corpus, so each one is a wait on memory. Claimed pieces, not a
        fixed share a worker: a worker slowed by the machine (another process on its core, output pages
        new to the process) copies fewer, where with fixed shares the other waited (measured by
        experiments/bench_serial.py).

        Why a kernel: scipy's ``X[rows]`` copies the rows on one core, where here the threads claim pieces of rows
        and ask for the rows ahead. Measured by experiments/bench_serial.py."""
        n, claimed = rows.size, np.zeros(1, dtype=np.int64)
        for worker in prange(workers):
            while True:
                start, stop = claim_rows(claimed, rows_a_piece, n)
                if start >= n:
                    break
                for ii in range(start, stop):
                    if ii + COPY_AHEAD < n:
                        ahead = rows[ii + COPY_AHEAD]
                        prefetch_span(indices, indptr[ahead], indptr[ahead + 1])
                        prefetch_span(data, indptr[ahead], indptr[ahead + 1])
                    _copy_row(indptr, indices, data, rows, ii, out_indptr, out_indices, out_data)

    @njit(cache=True)
    def _copy_rows_serial(indptr, indices, data, rows, out_indptr, out_indices, out_data):
        """``_copy_rows_parallel`` on one thread (few non-zeros: a minibatch's labels), asking for rows ahead alike.

        Why a kernel: the same row loop without a parallel region, for copies too small to repay starting the
        threads. Measured by experiments/bench_serial.py."""
        n = rows.size
        for ii in range(n):
            if ii + COPY_AHEAD < n:
                ahead = rows[ii + COPY_AHEAD]
                prefetch_span(indices, indptr[ahead], indptr[ahead + 1])
                prefetch_span(data, indptr[ahead], indptr[ahead + 1])
            _copy_row(indptr, indices, data, rows, ii, out_indptr, out_indices, out_data)

    @njit(cache=True)
    def _pair_counts(indices):
        """(places j > 0 where indices[j] < indices[j − 1], where indices[j] == indices[j − 1]): loops from 0
        without branches, in vector lanes (a loop over each row's own range, from a variable start, was not).

        Why a kernel: two branch-free loops in vector lanes, where numpy would build a temporary boolean array for
        each comparison. Measured by experiments/bench_serial.py (through ``row_order`` and the checked copies)."""
        down = same = 0
        for j in range(1, indices.size):
            down += np.int64(indices[j] < indices[j - 1])
        for j in range(1, indices.size):
            same += np.int64(indices[j] == indices[j - 1])
        return down, same

    @njit(cache=True)
    def _copy_and_count(indices, data, out_columns, out_values, width):
        """indices copied into out_columns (data into out_values when not empty); (column indices outside
        0 .. width − 1, places j > 0 where indices[j] ≤ indices[j − 1]). Loops from 0 without branches,
        each doing one thing, so that they run in vector lanes (a loop from a variable start, or one
        that both wrote and added up, did not; measured by experiments/bench_serial.py).

        Why a kernel: the copy and both checks of a share while it is in the core's cache, where numpy copies and
        then makes a separate pass and temporary for each check. Measured by experiments/bench_shards.py (reading
        shards) and experiments/bench_serial.py."""
        for j in range(indices.size):
            out_columns[j] = indices[j]
        for j in range(data.size):
            out_values[j] = data[j]
        outside = 0
        for j in range(indices.size):
            outside += np.int64(indices[j] < 0) + np.int64(indices[j] >= width)
        down, same = _pair_counts(indices)
        return outside, down + same

    @njit(parallel=True, cache=True)
    def _copy_checked_range(pointers, indices, data, width, out_columns, out_values, workers):
        """Each worker copies a contiguous share of the non-zeros and counts what is wrong in it
        (``_copy_and_count``; data copied when not empty), and whether its first index is not above the
        last of the share before; then the places where a row starts after a non-empty one are taken
        out of that count (a row may start lower).

        Why a kernel: each chunk read from a shard is copied and checked on every thread, where numpy's copies and
        checks run on one core in every pass over a streamed corpus. Measured by experiments/bench_shards.py."""
        n = pointers.size - 1
        total = pointers[n]
        share = (total + workers - 1) // workers
        outside = np.zeros(workers, dtype=np.int64)
        drops = np.zeros(workers, dtype=np.int64)
        for worker in prange(workers):
            lo = min(total, worker * share)
            hi = min(total, lo + share)
            values = data[lo:hi] if data.size > 0 else data
            outside[worker], drops[worker] = _copy_and_count(indices[lo:hi], values, out_columns[lo:hi],
                                                             out_values[lo:hi], width)
            if 0 < lo < hi and indices[lo] <= indices[lo - 1]:
                drops[worker] += 1
        starts = 0
        for i in prange(1, n):
            q = pointers[i]
            if q > pointers[i - 1] and q < total and indices[q] <= indices[q - 1]:
                starts += 1
        return outside.sum(), drops.sum() - starts

    @njit(parallel=True, cache=True)
    def _at_or_above(S, cuts, indptr, indices):
        """With ``indices`` empty: indptr[i + 1] = #{k: S_ik ≥ t_k}; else (indptr cumulated) each row's
        columns, ascending, at indices[indptr[i]:indptr[i + 1]]; rows on every thread.

        Why a kernel: writes the CSR structure of a decision straight from the dense scores on every thread, where
        numpy's comparison builds a dense boolean matrix on one core. Measured by experiments/bench_threads.py (the
        bootstrap's decisions)."""
        n, K = S.shape
        if indices.size == 0:
            for i in prange(n):
                c = 0
                for k in range(K):
                    if S[i, k] >= cuts[k]:
                        c += 1
                indptr[i + 1] = c
            return
        for i in prange(n):
            q = indptr[i]
            for k in range(K):
                if S[i, k] >= cuts[k]:
                    indices[q] = k
                    q += 1


if HAVE_NUMBA:

    @njit(parallel=True, cache=True)
    def _row_order(indptr, indices, pieces, unsorted, repeated):
        """unsorted[p] / repeated[p]: pairs of neighbouring column indices within a row of share p that
        decrease / repeat: counted over the share's non-zeros as one run (``_pair_counts``), then the
        pairs that straddle a row start (the last of a non-empty row and the next row's first) taken out.

        Why a kernel: scans the rows on every thread, where scipy's sorted-indices check runs on one core. Measured
        by experiments/bench_serial.py (the check of every X and Y that enters a model)."""
        n = indptr.size - 1
        share = (n + pieces - 1) // pieces
        for p in prange(pieces):
            first, last = min(n, p * share), min(n, (p + 1) * share)
            a, b = indptr[first], indptr[last]
            down, same = _pair_counts(indices[a:b])
            for i in range(first + 1, last):
                q = indptr[i]
                if q > indptr[i - 1] and q < b:  # the first row starting at q, after a non-empty one
                    down -= np.int64(indices[q] < indices[q - 1])
                    same -= np.int64(indices[q] == indices[q - 1])
            unsorted[p], repeated[p] = down, same


if HAVE_NUMBA:

    @njit(parallel=True, cache=True)
    def _columns_pass(indptr, indices, data, pieces, write, at, sums, rows):
        """One of the two passes of a counting sort of a CSR matrix's non-zero entries by column, each over
        share p of the rows: without ``write``, at[p, k] and sums[p, k] = the entries of column k in share
        p and their sum; with it, rows[at[p, k]…] = the rows of share p with an entry in column k,
        ascending (at[p, k], each share's place in each column, advancing).

        Why a kernel: a counting sort by column on every thread, where scipy's conversion to CSC runs on one core.
        Measured by experiments/bench_serial.py (the NB fit's label columns)."""
        n = indptr.size - 1
        share = (n + pieces - 1) // pieces
        for p in prange(pieces):
            for i in range(p * share, min(n, (p + 1) * share)):
                for q in range(indptr[i], indptr[i + 1]):
                    if data[q] != 0:
                        k = indices[q]
                        if write:
                            rows[at[p, k]] = i
                            at[p, k] += 1
                        else:
                            at[p, k] += 1
                            sums[p, k] += np.float64(data[q])


#: rows of a ``columns_of`` share, at least; at most ``COLUMN_SHARES`` shares, and their per-column counts and
#: sums within ``COLUMN_SHARE_BYTES``
COLUMN_SHARE_ROWS = 4096
COLUMN_SHARES = 64
COLUMN_SHARE_BYTES = 8 << 20


def columns_of(M: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr (K + 1,) int64, rows int64, sums (K,) float64): M's non-zero entries column by column, column
    k's rows ascending at rows[indptr[k]:indptr[k + 1]] (scipy's CSC of M without its stored zeros; a
    repeated entry stays repeated), and the sum of each column's values.

    Two passes over shares of the rows, on every thread: each share's entries per column are counted
    (with their sum), then written from the share's place in each column. The shares depend on M's
    shape alone, never on the threads, so the sums are the same bits on any number of threads (and
    exact for whole numbers such as labels)."""
    n, K = M.shape
    if not HAVE_NUMBA:
        C = sp.csc_matrix(M, copy=True)
        C.eliminate_zeros()
        sums = np.asarray(C.sum(axis=0), dtype=np.float64).ravel()
        return C.indptr.astype(np.int64), C.indices.astype(np.int64), sums
    shares = max(1, min(COLUMN_SHARES, n // COLUMN_SHARE_ROWS, COLUMN_SHARE_BYTES // (16 * max(K, 1))))
    counts = np.zeros((shares, K), dtype=np.int64)
    sums = np.zeros((shares, K))
    _columns_pass(M.indptr, M.indices, M.data, shares, False, counts, sums, np.empty(0, dtype=np.int64))
    indptr = np.zeros(K + 1, dtype=np.int64)
    np.cumsum(counts.sum(axis=0), out=indptr[1:])
    at = indptr[:-1] + np.cumsum(counts, axis=0) - counts  # (shares, K) where each share starts in each column
    rows = np.empty(indptr[-1], dtype=np.int64)
    _columns_pass(M.indptr, M.indices, M.data, shares, True, at, sums, rows)
    return indptr, rows, sums.sum(axis=0)


#: non-zeros from which ``row_order`` runs on every thread (below, scipy's own scan)
PARALLEL_SCAN_VALUES = 1 << 16


def _scan_pieces(size: int) -> int:
    import numba

    return max(1, min(4 * numba.get_num_threads(), size // PARALLEL_SCAN_VALUES))


#: values of a ``value_bounds`` piece (below, one piece: starting threads would cost more than they save). One
#: thread of a small machine reads at its memory's full rate, but one thread of a many-core machine reads at a
#: fraction of its machine's rate (measured by experiments/bench_serial.py)
BOUNDS_PIECE_VALUES = 1 << 21


def value_bounds(data: np.ndarray) -> tuple[float, float]:
    """(min, max) of an array's values, NaN if any value is NaN (numpy's ``min`` and ``max``), ±inf for no
    values: in pieces on numba's thread count of threads for a large array (``map_pieces``), the same
    answer whatever the thread count (min and max are exact in any order)."""
    data = np.ravel(data)
    if not data.size:
        return np.inf, -np.inf
    found = np.array(map_pieces(lambda piece: (piece.min(), piece.max()), data, BOUNDS_PIECE_VALUES))
    return float(found[:, 0].min()), float(found[:, 1].max())  # NaN propagates through these too


def row_order(M: sp.csr_matrix) -> bool:
    """Whether M's rows have increasing column indices (scipy's ``has_sorted_indices``), answered on every
    thread for a large M and kept in scipy's own cache of the answer, with ``has_canonical_format`` (strictly
    increasing), so that neither scan is made again for this matrix object."""
    if not HAVE_NUMBA or M.nnz < PARALLEL_SCAN_VALUES:
        return bool(M.has_sorted_indices)
    pieces = _scan_pieces(M.nnz)
    unsorted, repeated = np.empty(pieces, dtype=np.int64), np.empty(pieces, dtype=np.int64)
    _row_order(M.indptr, M.indices, pieces, unsorted, repeated)
    ordered = not unsorted.any()
    M.has_sorted_indices = ordered
    M.has_canonical_format = ordered and not repeated.any()
    return ordered


def at_or_above(S: np.ndarray, cuts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indptr int64 (n + 1,), indices (nnz,)) of [S_ik ≥ t_k] for dense native float scores S (n × K)
    and cuts t (K,), compared as numba compares their types (float32 against float64 in float64, as
    numpy does); indices int32 where nnz and K allow, else int64. Numba required."""
    n, K = S.shape
    S = np.ascontiguousarray(S)
    indptr = np.zeros(n + 1, dtype=np.int64)
    _at_or_above(S, cuts, indptr, np.empty(0, dtype=np.int32))
    np.cumsum(indptr, out=indptr)
    indices = np.empty(int(indptr[-1]), dtype=np.int32 if max(int(indptr[-1]), K) <= _INT32_MAX else np.int64)
    _at_or_above(S, cuts, indptr, indices)
    return indptr, indices


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


def row_offsets(indptr, rows) -> np.ndarray:
    """(rows.size + 1,) int64: 0, then the running sum of the lengths of the rows ``rows`` (valid row numbers)
    of a CSR matrix's indptr, in that order: where each row's non-zeros start in ``copy_rows``'s output."""
    rows = np.asarray(rows, dtype=np.int64)
    offsets = np.empty(rows.size + 1, dtype=np.int64)
    _row_offsets(indptr, rows, offsets)
    return offsets


def copy_rows(indptr, indices, data, rows, index_dtype=None, column_dtype=None, parallel=None,
              offsets=None) -> tuple:
    """(indptr, indices, data) of the rows ``rows`` (valid row numbers) of a CSR matrix's arrays, in
    that order: int32 indexed where the rows' non-zeros fit, else int64, or ``index_dtype`` when
    given (the caller's to fit); the column indices ``column_dtype`` when given, else as indptr.
    On every thread when ``parallel``, else on one (None: above ``PARALLEL_COPY_NONZEROS`` non-zeros).
    ``offsets``: the rows' ``row_offsets`` when the caller has them. Numba required."""
    rows = np.asarray(rows, dtype=np.int64)
    offsets = row_offsets(indptr, rows) if offsets is None else np.ascontiguousarray(offsets, dtype=np.int64)
    nonzeros = int(offsets[-1])
    if index_dtype is None:
        index_dtype = np.int32 if nonzeros <= _INT32_MAX else np.int64
    out_indptr = offsets.astype(index_dtype, copy=False)
    out_indices = np.empty(nonzeros, dtype=index_dtype if column_dtype is None else column_dtype)
    out_data = np.empty(nonzeros, dtype=data.dtype)
    if (nonzeros > PARALLEL_COPY_NONZEROS) if parallel is None else parallel:
        import numba

        workers = numba.get_num_threads()
        _copy_rows_parallel(indptr, indices, data, rows, offsets, out_indices, out_data, workers,
                            piece_rows(rows.size, workers))
    else:
        # the int64 offsets, not out_indptr: the kernels read where each row goes, and one index type for them
        # is one compiled combination fewer each
        _copy_rows_serial(indptr, indices, data, rows, offsets, out_indices, out_data)
    return out_indptr, out_indices, out_data


def checked_row_range(indptr, indices, data, a: int, b: int, width: int) -> tuple:
    """(pointers, columns, values, problem) of rows a .. b of a CSR matrix's arrays (memory-mapped or
    not; indptr[a:b + 1] within indices), copied: pointers start at 0; values None where ``data`` is
    None. ``problem`` is None, or what is wrong, the first of: "decreasing" (indptr decreases: nothing
    else is read), "outside" (a column index outside 0 .. width − 1), "unordered" (column indices not
    increasing within a row). Each row's copy and checks on every thread from ``PARALLEL_COPY_NONZEROS``
    non-zeros on (with numba), else numpy's."""
    pointers = np.array(indptr[a:b + 1])
    if np.any(np.diff(pointers) < 0):
        return pointers, None, None, "decreasing"
    first, last = int(pointers[0]), int(pointers[-1])
    pointers -= pointers[0]
    if HAVE_NUMBA and last - first > PARALLEL_COPY_NONZEROS:
        import numba

        columns = np.empty(last - first, dtype=indices.dtype)
        values = None if data is None else np.empty(last - first, dtype=data.dtype)
        outside, unordered = _copy_checked_range(
            pointers, indices[first:last], np.empty(0, dtype=indices.dtype) if data is None else data[first:last],
            width, columns, columns if values is None else values, numba.get_num_threads())
        problem = "outside" if outside else "unordered" if unordered else None
        return pointers, columns, values, problem
    columns = np.array(indices[first:last])
    values = None if data is None else np.array(data[first:last])
    if not columns.size:
        return pointers, columns, values, None
    if columns.min() < 0 or columns.max() >= width:
        return pointers, columns, values, "outside"
    increasing = np.diff(columns) > 0
    row_starts = pointers[1:-1][(pointers[1:-1] > 0) & (pointers[1:-1] < columns.size)]
    increasing[row_starts - 1] = True  # a new row may start lower
    return pointers, columns, values, None if increasing.all() else "unordered"


def select_rows(M: sp.csr_matrix, rows: np.ndarray) -> sp.csr_matrix:
    """``M[rows]`` of a scipy CSR matrix: the same arrays and dtypes as scipy's, copied by
    ``copy_rows``; anything unusual (no numba, rows not integers or out of range) goes to scipy,
    with its own checks and messages."""
    rows = np.asarray(rows)
    if not HAVE_NUMBA or rows.dtype.kind not in "iu" or (rows.size and (rows.min() < 0 or rows.max() >= M.shape[0])):
        return M[rows]
    wide = M.indptr.dtype.itemsize > 4 or M.indices.dtype.itemsize > 4  # scipy's index dtype then
    indptr, indices, data = copy_rows(M.indptr, M.indices, M.data, rows, np.int64 if wide else None)
    return sp.csr_matrix((data, indices, indptr), shape=(rows.size, M.shape[1]))


def stack_rows(blocks: list) -> sp.csr_matrix:
    """``sp.vstack(blocks, format="csr")`` of CSR blocks with the same columns: the same arrays and index
    dtype, the blocks copied on a thread pool (numpy's copies let the threads run; no compiled code,
    whose typed list of blocks would compile anew in every process; timed by hand, no script)."""
    if len(blocks) < 2:
        return sp.vstack(blocks, format="csr")
    n, nnz, V = sum(b.shape[0] for b in blocks), sum(b.nnz for b in blocks), blocks[0].shape[1]
    # scipy's choice (``_compressed_sparse_stack``): int64 if a block's indptr is, or nnz or V needs it
    wide = any(b.indptr.dtype.itemsize > 4 for b in blocks) or max(nnz, V) > _INT32_MAX
    index_dtype = np.int64 if wide else np.int32
    data = np.empty(nnz, dtype=np.result_type(*(b.dtype for b in blocks)))
    indices, indptr = np.empty(nnz, dtype=index_dtype), np.empty(n + 1, dtype=index_dtype)
    indptr[0] = 0
    row_starts = np.cumsum([0] + [b.shape[0] for b in blocks[:-1]]).tolist()
    nnz_starts = np.cumsum([0] + [b.nnz for b in blocks[:-1]]).tolist()

    def copy(block: int) -> None:  # block b's rows to rows row_starts[b]…, its non-zeros to nnz_starts[b]…
        b, r, q = blocks[block], row_starts[block], nnz_starts[block]
        data[q:q + b.nnz] = b.data[:b.nnz]
        indices[q:q + b.nnz] = b.indices[:b.nnz]
        np.add(b.indptr[1:], q, out=indptr[r + 1:r + 1 + b.shape[0]], casting="unsafe")  # < 2**31 unless wide

    if nnz >= PARALLEL_COPY_NONZEROS:
        map_threads(copy, range(len(blocks)))
    else:  # a few non-zeros: a thread pool would cost more than the copies
        for block in range(len(blocks)):
            copy(block)
    stacked = sp.csr_matrix((data, indices, indptr), shape=(n, V))
    if all(b.has_canonical_format for b in blocks):
        stacked.has_canonical_format = True  # rows of canonical blocks: no new check needed
    return stacked
