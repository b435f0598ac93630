r"""The Naive Bayes count products F = Yᵀ·X (categories × words) for all categories at once.

scipy computes it as a sparse × sparse product on one core, building a sparse
result (K × V). The numba kernel accumulates straight into a dense (K × V)
array, in tasks: each category's row of F belongs to one task, which adds up
the rows of X of that category's documents (from Y in CSC form), and one more
task sums all documents, t = 1ᵀ·X, in the same parallel region. Both give the
same sums; ``binary`` counts presence [X > 0].

Each thread claims the next unclaimed task (an atomic counter), the tasks
ordered by their work (the non-zeros they read), largest first: categories are
very unequal (RCV1's largest holds 47 % of the documents, its smallest a
handful), and the last tasks claimed are small ones. Claiming rather than
dealing the tasks out beforehand matters beside another busy process: a thread
the system holds back delays the task it holds, not its whole share (measured
by experiments/bench_nb_fit.py). Each row is still summed by one task in document
order, so the sums do not depend on the thread count.

The all-documents task alone reads every non-zero, a quarter of the pass on RCV1, so one task
per row capped the speed-up at about 4× whatever the cores. Sums of whole numbers (counts,
presence: the float32 path below) are exact in any order, so there a row with more than 1/64 of
the pass's work is cut into pieces of consecutive documents, each summed into a float64 row of its
own and added after, in order (``_pieces``): the same bits as one task's, for any number of
threads. The cut depends on the data only. Other values (tf-idf) keep one task per row: cutting
would change the order of their sums.

A category's documents are scattered through X, and each of its rows waited on
memory: the task asks for the row of the document ``_AHEAD`` places ahead
before it sums the current one (measured by experiments/bench_nb_fit.py). The
all-documents task reads X in order,
which the hardware prefetches by itself.

Integer values (counts, presence) are summed in a float32 row that stays in
the core's cache, half the size of a float64 one, and copied into F's float64
row when the task ends: exact, since every float32 partial sum is an integer
below 2^24 (the row is flushed to float64 every (2^24 − 1) / max |x|
documents, before it could reach 2^24). Other values are summed in float64.
(Measured by experiments/bench_nb_fit.py.)

While its row is in cache each task also sums it, S_k = Σ_w F_kw, the totals
the multinomial and complement models normalise by.

The Gaussian event model also needs the sums of squares F2 = Yᵀ·(X∘X) and
t2 = 1ᵀ·(X∘X). The same kernels accumulate them in the same pass: each float32
value is widened to float64 before it is squared, which is exact (24 + 24
significant bits fit in float64's 53), so no float64 copy of X is ever made.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from mlnb._kernels.csr import columns_of
from mlnb._kernels.jit import HAVE_NUMBA, njit, prange

if HAVE_NUMBA:
    from mlnb._kernels.atomic import claim as _claim
    from mlnb._kernels.prefetch import prefetch_span

# the kernel is ahead of scipy from about a thousand non-zeros (experiments/bench_multiclass_nb.py); below
# this scipy's path is kept for tiny inputs
_NUMBA_MIN_NNZ = 10_000

# float32 holds every integer of magnitude up to 2^24 exactly, and so every sum of such integers that stays there
_FLOAT32_EXACT_INTEGERS = 2.0**24
_MIN_FLUSH_DOCUMENTS = 256  # a flush costs a pass over the row (V): not more often than this
_AHEAD = 4  # a category's documents are requested this many documents before they are summed


class ChunkCounts(NamedTuple):
    """The sums of one pass over a chunk (arrays float64)."""

    F: np.ndarray  # (K, V)  Yᵀ·X
    t: np.ndarray  # (V,)    1ᵀ·X
    S: np.ndarray  # (K,)    F·1, each category's total
    F2: np.ndarray | None  # (K, V)  Yᵀ·(X∘X), with squares
    t2: np.ndarray | None  # (V,)    1ᵀ·(X∘X), with squares
    N: np.ndarray | None = None  # (K,)  Yᵀ·1, each category's documents (its sum of Y's values)


if HAVE_NUMBA:

    @njit(cache=True)
    def _row_total(row):
        """Σ_w row_w in four interleaved partial sums: a fixed order, and not one long chain of dependent adds.

        Why a kernel: sums a task's row while it is in the core's cache, where numpy's sum would read it again.
        Measured by experiments/bench_nb_fit.py."""
        V = row.size
        s0 = s1 = s2 = s3 = 0.0
        for w in range(0, V - V % 4, 4):
            s0 += row[w]
            s1 += row[w + 1]
            s2 += row[w + 2]
            s3 += row[w + 3]
        for w in range(V - V % 4, V):
            s0 += row[w]
        return (s0 + s1) + (s2 + s3)

    @njit(cache=True)
    def _prefetch_document(i, indptr, indices, data):
        """Ask for document i's row of X (its indices and values) ahead of its turn.

        Why a kernel: asks for a category's next documents ahead of their turn from inside the counting loop.
        Measured by experiments/bench_nb_fit.py."""
        prefetch_span(indices, indptr[i], indptr[i + 1])
        prefetch_span(data, indptr[i], indptr[i + 1])

    @njit(parallel=True, cache=True)
    def _value_range(data):
        """(max |x|, whether every x is an integer) over the stored values.

        Why a kernel: the largest value and integrality in one pass on every thread, where numpy makes two passes
        and a temporary. Measured by experiments/bench_nb_fit.py."""
        largest = 0.0
        fractional = 0
        for p in prange(data.size):
            v = data[p]
            largest = max(largest, abs(np.float64(v)))
            if v != np.floor(v):
                fractional += 1
        return largest, fractional == 0

    @njit(cache=True)
    def _flush(partial, row, add):
        """row (+)= partial in float64; partial = 0 for the next documents.

        Why a kernel: moves the float32 partial row into float64 without leaving the task. Measured by
        experiments/bench_nb_fit.py."""
        for w in range(row.size):
            row[w] = row[w] + partial[w] if add else np.float64(partial[w])
            partial[w] = 0

    @njit(cache=True)
    def _count_task(everyone, first, last, y_indices, indptr, indices, data, binary, exact32, flush_every, row, row2,
                    partial):
        """row (and row2, with squares) = the sums of documents first … last − 1 (positions in
        y_indices, or with ``everyone`` document numbers), in document order. With exact32 the sums
        of integers are made in ``partial`` (float32), flushed to row every ``flush_every`` documents.

        Why a kernel: adds a category's document rows straight into a dense row, where scipy's sparse product builds
        a sparse result on one core. Measured by experiments/bench_nb_fit.py."""
        squares = row2.size > 0
        if not exact32:
            row[:] = 0.0
            if squares:
                row2[:] = 0.0
        flushed = False
        for q in range(first, last):
            i = q if everyone else y_indices[q]
            # a category's documents are scattered through X: ask for the rows ahead, or each waits on memory
            if not everyone and q + _AHEAD < last:
                _prefetch_document(y_indices[q + _AHEAD], indptr, indices, data)
            # unsigned places: numba adds no negative-index wrap-around to each access (experiments/bench_nb_fit.py)
            begin, end = np.uint64(indptr[i]), np.uint64(indptr[i + 1])
            if not exact32:
                if squares:
                    for p in range(begin, end):
                        v = np.float64(data[p])
                        row[indices[p]] += v
                        row2[indices[p]] += v * v
                elif binary:
                    for p in range(begin, end):
                        row[indices[p]] += 1.0 if data[p] > 0 else 0.0
                else:
                    for p in range(begin, end):
                        row[indices[p]] += data[p]
                continue
            if q > first and (q - first) % flush_every == 0:
                _flush(partial, row, flushed)
                flushed = True
            if binary:
                for p in range(begin, end):
                    if data[p] > 0:
                        partial[indices[p]] += np.float32(1.0)
            else:
                for p in range(begin, end):
                    partial[indices[p]] += data[p]
        if exact32:
            _flush(partial, row, flushed)

    @njit(parallel=True, cache=True)
    def _count_tasks(tasks, n_threads, y_indices, indptr, indices, data, binary, exact32, flush_every,
                     Fx, F2x, pieces, piece_ptr, S):
        """Every task of ``tasks`` (rows: Fx row k, first, last, piece), each thread claiming the next
        unclaimed one: a thread that the system holds back (another busy process) delays only the
        task it holds. A task with piece −1 sums into row k of Fx (and F2x) itself, one with piece
        p ≥ 0 into pieces[p]; then row k = Σ its pieces pieces[piece_ptr[k]:piece_ptr[k + 1]] in
        order, and S[k] = Σ_w Fx[k, w].

        Why a kernel: every category's row and the all-documents row in one parallel region, the tasks claimed
        largest first. Measured by experiments/bench_nb_fit.py."""
        K1, V = Fx.shape
        squares = F2x.shape[0] > 0
        claimed = np.zeros(1, dtype=np.int64)
        for _ in prange(n_threads):
            partial = np.zeros(V if exact32 else 0, dtype=np.float32)  # this thread's cached row
            o = _claim(claimed, 0)
            while o < tasks.shape[0]:
                k, first, last, piece = tasks[o, 0], tasks[o, 1], tasks[o, 2], tasks[o, 3]
                row = Fx[k] if piece < 0 else pieces[piece]
                row2 = (F2x[k] if squares else F2x[0, :0]) if piece < 0 else F2x[0, :0]
                _count_task(k == K1 - 1, first, last, y_indices, indptr, indices, data, binary, exact32, flush_every,
                            row, row2, partial)
                o = _claim(claimed, 0)
        for k in prange(K1):
            a, e = piece_ptr[k], piece_ptr[k + 1]
            if e > a:  # whole numbers below 2^53: their sum is exact in any order, the same as one task's
                row = Fx[k]
                row[:] = pieces[a]
                for p in range(a + 1, e):
                    row += pieces[p]
            S[k] = _row_total(Fx[k])


#: a row of F (or t) with more work than this share of the whole pass is summed in pieces
PIECE_SHARE = 1 / 64
MIN_PIECE_WORK = 1 << 18  # non-zeros: smaller pieces cost more in merging (a pass over V) than they save
PIECE_BYTES = 1 << 26  # bound on the pieces' float64 rows


def _pieces(work: np.ndarray, first: np.ndarray, last: np.ndarray, V: int, split: bool):
    """(tasks (T, 4) int64: row, first, last, piece; piece_ptr (K + 2,); number of pieces).

    Tasks are whole rows, the largest first; with ``split`` (sums of whole numbers only, which
    are exact in any order) a row whose work exceeds ``PIECE_SHARE`` of the pass is cut into
    pieces of consecutive documents, summed apart and added after. The cut depends on the data
    alone, never on the threads, and since the sums are exact the rows are the same bits as one
    task's: all that changes is that the RCV1's all-documents row t (a quarter of the work of
    the pass) and its largest categories no longer bound the speed-up (at most 4× before)."""
    rows = work.size
    per = np.ones(rows, dtype=np.int64)
    if split:
        target = max(MIN_PIECE_WORK, int(work.sum() * PIECE_SHARE))
        per = np.maximum(1, -(-work // target)).astype(np.int64)
        budget = max(0, PIECE_BYTES // (8 * max(V, 1)))  # pieces of float64 rows that fit the bound
        while per[per > 1].sum() > budget and (per > 1).any():  # coarser cuts where memory is short
            per = np.where(per > 1, np.maximum(1, per // 2), 1)
    piece_ptr = np.zeros(rows + 1, dtype=np.int64)
    piece_ptr[1:] = np.cumsum(np.where(per > 1, per, 0))
    tasks, sizes = [], []
    for k in range(rows):
        if per[k] == 1:
            tasks.append((k, first[k], last[k], -1))
            sizes.append(work[k])
            continue
        bounds = np.linspace(first[k], last[k], per[k] + 1).astype(np.int64)
        for j in range(per[k]):
            tasks.append((k, bounds[j], bounds[j + 1], piece_ptr[k] + j))
            sizes.append(work[k] / per[k])
    tasks = np.asarray(tasks, dtype=np.int64).reshape(-1, 4)
    return np.ascontiguousarray(tasks[_largest_first(np.asarray(sizes, dtype=np.float64))]), piece_ptr, \
        int(piece_ptr[-1])


def _largest_first(work: np.ndarray) -> np.ndarray:
    """The tasks in the order they are claimed: the most work first, so that the last ones to finish
    are small (longest processing time first); ties by index."""
    return np.argsort(-work, kind="stable").astype(np.int64)


def _numba_counts(Y: sp.csr_matrix, X: sp.csr_matrix, binary: bool, squares: bool) -> ChunkCounts:
    import numba

    # each category's documents, ascending, and N = Yᵀ·1, on every thread (scipy's CSC conversion and sparse
    # sum run on one core; measured by experiments/bench_serial.py)
    category_indptr, category_rows, N = columns_of(Y)
    K, V = Y.shape[1], X.shape[1]
    largest, integer = (1.0, True) if binary or not X.nnz else _value_range(X.data)
    # documents summed in float32 between two flushes: each adds at most ``largest`` to a partial sum,
    # which then stays below 2^24; float64 when flushes would come too often (huge integer values)
    flush_every = int((_FLOAT32_EXACT_INTEGERS - 1) // max(largest, 1.0))
    exact32 = bool(integer and not squares and flush_every >= _MIN_FLUSH_DOCUMENTS)
    # the work of a task: the non-zeros it reads, and the row it zeroes (or flushes) and sums
    reads = np.diff(X.indptr)[category_rows].cumsum()
    reads = np.concatenate([[0], reads])[category_indptr]
    work = np.concatenate([np.diff(reads), [X.nnz]]) + V
    first = np.concatenate([category_indptr[:-1], [0]]).astype(np.int64)  # row K (t): document numbers 0 … n − 1
    last = np.concatenate([category_indptr[1:], [X.shape[0]]]).astype(np.int64)
    tasks, piece_ptr, n_pieces = _pieces(work, first, last, V, split=exact32)
    Fx = np.empty((K + 1, V))  # rows 0..K−1: F; row K: t
    F2x = np.empty((K + 1, V)) if squares else np.zeros((1, 0))
    pieces = np.empty((n_pieces, V))
    S = np.empty(K + 1)
    _count_tasks(tasks, min(numba.get_num_threads(), tasks.shape[0]), category_rows, X.indptr, X.indices, X.data,
                 binary, exact32, flush_every, Fx, F2x, pieces, piece_ptr, S)
    return ChunkCounts(Fx[:K], Fx[K], S[:K], F2x[:K] if squares else None, F2x[K] if squares else None, N)


def _scipy_counts(Y: sp.csr_matrix, X: sp.csr_matrix, binary: bool, squares: bool) -> ChunkCounts:
    if binary:
        X = X.copy()
        X.data = (X.data > 0).astype(np.float32)
    X64 = X.astype(np.float64)  # small X (or no numba): float64 values, squared exactly
    Yt = Y.T.astype(np.float64)
    F = (Yt @ X64).toarray()  # (K, n)·(n, V) -> (K, V), summed in float64
    t = np.asarray(X64.sum(axis=0)).ravel()  # (V,)
    F2 = t2 = None
    if squares:
        X64.data *= X64.data
        F2, t2 = (Yt @ X64).toarray(), np.asarray(X64.sum(axis=0)).ravel()
    return ChunkCounts(F, t, F.sum(axis=1), F2, t2, np.asarray(Y.sum(axis=0), dtype=np.float64).ravel())


def count_chunk(Y: sp.csr_matrix, X: sp.csr_matrix, binary: bool = False, squares: bool = False,
                kernel: str = "auto") -> ChunkCounts:
    """F = Yᵀ·X, t = 1ᵀ·X, S = F·1 and, with ``squares``, F2 = Yᵀ·(X∘X), t2 = 1ᵀ·(X∘X), in one
    pass; ``binary`` uses [X > 0] for X."""
    if binary and squares:
        raise ValueError("the counts of presence [X > 0] have no sums of squares")
    if _use_numba(X, kernel):
        return _numba_counts(Y, X, binary, squares)
    return _scipy_counts(Y, X, binary, squares)


if HAVE_NUMBA:

    @njit(cache=True)
    def _column_extremes(indices, data, lo, hi, integer, stored):
        """lo[j], hi[j] = the least and the largest stored value of column j, integer[j] &= whether each is an
        integer, stored[j] += how many: one pass over X's non-zeros.

        Why a kernel: one pass over the non-zeros for all four statistics, where numpy's ``ufunc.at`` makes a slow
        pass for each. No experiments/ script runs the mixed event model that needs it; the counting pass it follows
        is measured by experiments/bench_nb_fit.py."""
        for p in range(indices.size):
            j, v = indices[p], data[p]
            lo[j] = min(lo[j], v)
            hi[j] = max(hi[j], v)
            integer[j] &= v == np.floor(v)
            stored[j] += 1


def column_statistics(X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(min, max, all-integer) of every column of X (V,) each, implicit zeros included."""
    V = X.shape[1]
    lo, hi = np.full(V, np.inf), np.full(V, -np.inf)
    integer, stored = np.ones(V, dtype=bool), np.zeros(V, dtype=np.int64)
    if HAVE_NUMBA:
        _column_extremes(X.indices, X.data, lo, hi, integer, stored)
    else:  # pragma: no cover
        np.minimum.at(lo, X.indices, X.data)
        np.maximum.at(hi, X.indices, X.data)
        np.logical_and.at(integer, X.indices, X.data == np.floor(X.data))
        stored = np.bincount(X.indices, minlength=V)
    has_zero = stored < X.shape[0]  # a column with fewer stored values than rows has implicit zeros
    return np.where(has_zero, np.minimum(lo, 0.0), lo), np.where(has_zero, np.maximum(hi, 0.0), hi), integer


def _use_numba(X: sp.csr_matrix, kernel: str) -> bool:
    if kernel == "numba" and not HAVE_NUMBA:  # pragma: no cover
        raise ImportError("numba is not installed: use kernel = 'scipy'")
    return kernel == "numba" or (kernel == "auto" and HAVE_NUMBA and X.nnz >= _NUMBA_MIN_NNZ)
