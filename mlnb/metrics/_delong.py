r"""DeLong's structural components, AUCs and variances of many score columns, compiled.

The formulas are those of ``mlnb.metrics.significance``. With m positives and n negatives of one
category and, for a document's score v,

    h(v) = #{other-class scores < v} + ½ #{other-class scores = v}

the components are V10(X_i) = h(X_i) / n for a positive and V01(Y_j) = 1 − h(Y_j) / m for a
negative: the midrank differences T_Z − T_X and T_Z − T_Y of Sun & Xu (2014), whole or half
integers, so each component is the same float64 as from scipy's midranks. h is counted without
ordering all n + m scores: only the smaller class A is sorted (the positives, for most text
categories); every score x of the other class is located in A by a binary search, which gives
h(x) = lb(x) + ½ (ub(x) − lb(x)) with lb(x) = #{a ∈ A: a < x}, ub(x) = #{a ∈ A: a ≤ x}, and is
counted at ub(x), so that for the j-th smallest a

    #{x < A[j]} = Σ_{u ≤ j} #{x: ub(x) = u}          #{x = A[j]} = #{x: lb(x) = first j' with A[j'] = A[j]}

give h(a) of A in one more pass. The AUC is 2 Σ_i h(X_i) (an integer) / (2 m n), exact up to
that division. The variances are sums over the documents in their order (compensated,
Neumaier), of each class's components or of their paired differences
d = V(a) − V(b) (``significance``: zero exactly when a and b rank the documents alike):

    paired:  var(V10_a − V10_b; ddof 1) / m + var(V01_a − V01_b; ddof 1) / n
    single:  var(V10; ddof 1) / m + var(V01; ddof 1) / n

Each column (or pair of columns) is computed by one thread, its sums in one fixed order, so the
results are the same for any number of threads, any grouping of the columns into tasks (fewer per
task when there are many threads, ``_group``) and any order in which the threads claim them (the
most work first, ``_schedule``). Scores may be float32 or float64 (a float32 score converts to float64 exactly, so ties and order are kept); they must not
be NaN (the callers check).
"""

from __future__ import annotations

import numpy as np

from mlnb._kernels.jit import HAVE_NUMBA, njit, prange

#: columns gathered together from a row-major n × K matrix (one 64-byte line of float64)
GROUP_COLUMNS = 8
#: buckets per value of the ordered class, and at most this many (bounds the lookup table)
BUCKETS_PER_VALUE = 8
MAX_BUCKETS = 1 << 21

if HAVE_NUMBA:
    from mlnb._kernels.atomic import claim as _claim
    from mlnb.metrics.ranking import _bucket, _bucket_scale, _count_below

    @njit(cache=True, nogil=True)
    def _add_components(z, positives, sign, out):
        """out[i] += sign · (V10 or V01 of document i) for the scores z (n,) of one category whose
        positives are the ascending document numbers ``positives``; returns 2 Σ_i h(X_i).

        Lookups as ``ranking._column_auc``: A in T equal-width buckets over its finite range
        (±inf in one more at each end), first[v] = #{a: bucket(a) < v}; x's lb is first[bucket(x)]
        when its bucket is empty, else a binary search inside it; ub = tie_end[lb] if A[lb] = x.

        Why a kernel: counts h of each score against the other class by bucket lookups without sorting all the
        scores, where numpy needs a sort of everything and temporaries the size of the column. Measured by
        experiments/bench_delong.py."""
        n_docs = z.size
        P = positives.size
        N = n_docs - P
        sorted_positive = P <= N  # A, the class ordered: the smaller one
        m = P if sorted_positive else N
        A = np.empty(m)
        j = 0
        p = 0  # next positive to pass when walking all documents
        if sorted_positive:
            for q in range(P):
                A[q] = np.float64(z[positives[q]])
        else:
            for i in range(n_docs):
                if p < P and positives[p] == i:
                    p += 1
                else:
                    A[j] = np.float64(z[i])
                    j += 1
        A.sort()
        low, high = np.inf, -np.inf  # finite range
        for q in range(m):
            if A[q] > -np.inf and A[q] < np.inf:
                low = min(low, A[q])
                high = max(high, A[q])
        T = min(BUCKETS_PER_VALUE * m, MAX_BUCKETS)
        low, scale = _bucket_scale(low, high, T)  # finite, never a division by zero (``ranking``)
        first = np.zeros(T + 3, dtype=np.int64)
        for q in range(m):
            first[_bucket(A[q], low, scale, T) + 1] += 1
        for v in range(1, T + 3):
            first[v] += first[v - 1]
        tie_end = np.empty(m, dtype=np.int64)  # one past the last value equal to A[q]
        if m:
            tie_end[m - 1] = m
        for q in range(m - 2, -1, -1):
            tie_end[q] = tie_end[q + 1] if A[q] == A[q + 1] else q + 1
        by_upper = np.zeros(m + 1, dtype=np.int64)  # #{x: ub(x) = u}
        equal_at = np.zeros(m + 1, dtype=np.int64)  # #{x = A[q]}, at the first q of A's tie
        twice_h_other = 0  # 2 Σ h over the other class
        p = 0
        for i in range(n_docs):
            is_positive = p < P and positives[p] == i
            if is_positive:
                p += 1
            if is_positive == sorted_positive:
                continue
            x = np.float64(z[i])
            v = _bucket(x, low, scale, T)
            lb = first[v]
            end = first[v + 1]
            ub = lb
            if lb < end:
                lb = _count_below(A, lb, end, x)
                ub = tie_end[lb] if lb < m and A[lb] == x else lb
            by_upper[ub] += 1
            if ub > lb:
                equal_at[lb] += 1
            twice_h = lb + ub
            twice_h_other += twice_h
            if is_positive:
                out[i] += sign * ((twice_h * 0.5) / N)
            else:
                out[i] += sign * (1.0 - (twice_h * 0.5) / P)
        # A: twice h(A[q]) at the first q of each tie (x < A[q] ⟺ ub(x) ≤ q), then per document
        twice_h_of = by_upper  # overwritten in place: by_upper[q] is read before twice_h_of[q] is set
        below = 0
        for q in range(m):
            below += by_upper[q]
            twice_h_of[q] = 2 * below + equal_at[q] if q == 0 or A[q] != A[q - 1] else -1
        twice_h_small = 0
        p = 0
        for i in range(n_docs):
            is_positive = p < P and positives[p] == i
            if is_positive:
                p += 1
            if is_positive != sorted_positive:
                continue
            x = np.float64(z[i])
            v = _bucket(x, low, scale, T)
            twice_h = twice_h_of[_count_below(A, first[v], first[v + 1], x)]
            twice_h_small += twice_h
            if is_positive:
                out[i] += sign * ((twice_h * 0.5) / N)
            else:
                out[i] += sign * (1.0 - (twice_h * 0.5) / P)
        return twice_h_small if sorted_positive else twice_h_other

    @njit(cache=True, nogil=True)
    def _neumaier(total, compensation, value):
        """(total + value, the new compensation): one step of Neumaier's compensated summation.

        Why a kernel: inlined into the variance sums. Measured by experiments/bench_delong.py."""
        t = total + value
        if abs(total) >= abs(value):
            compensation += (total - t) + value
        else:
            compensation += (value - t) + total
        return t, compensation

    @njit(cache=True, nogil=True)
    def _squared_deviations(d, positives):
        """(Σ (d − mean)² over the positive documents, the same over the negative ones).

        Why a kernel: one pass in document order with compensated sums, so that a variance is the same bits
        whichever thread computes it. Measured by experiments/bench_delong.py."""
        n_docs = d.size
        P = positives.size
        sums = np.zeros(4)  # positive total, its compensation, negative total, its compensation
        p = 0
        for i in range(n_docs):
            if p < P and positives[p] == i:
                p += 1
                sums[0], sums[1] = _neumaier(sums[0], sums[1], d[i])
            else:
                sums[2], sums[3] = _neumaier(sums[2], sums[3], d[i])
        mean_positive = (sums[0] + sums[1]) / P
        mean_negative = (sums[2] + sums[3]) / (n_docs - P)
        sums[:] = 0.0
        p = 0
        for i in range(n_docs):
            if p < P and positives[p] == i:
                p += 1
                e = d[i] - mean_positive
                sums[0], sums[1] = _neumaier(sums[0], sums[1], e * e)
            else:
                e = d[i] - mean_negative
                sums[2], sums[3] = _neumaier(sums[2], sums[3], e * e)
        return sums[0] + sums[1], sums[2] + sums[3]

    @njit(cache=True, nogil=True)
    def _paired_one(z_a, z_b, positives, out):
        """out[:] = auc_a, auc_b, var(AUC_a − AUC_b) of one category (NaN where undefined).

        Why a kernel: one category's components, AUCs and variance on one thread with no Python between the steps.
        Measured by experiments/bench_delong.py."""
        P = positives.size
        N = z_a.size - P
        out[:] = np.nan
        if P == 0 or N == 0:
            return
        d = np.zeros(z_a.size)
        twice_a = _add_components(z_a, positives, 1.0, d)
        twice_b = _add_components(z_b, positives, -1.0, d)  # d = V(a) − V(b), as one subtraction
        out[0] = twice_a / (2.0 * P * N)
        out[1] = twice_b / (2.0 * P * N)
        if P >= 2 and N >= 2:
            ss10, ss01 = _squared_deviations(d, positives)
            out[2] = ss10 / (P - 1) / P + ss01 / (N - 1) / N  # np.var(ddof=1) / m + … / n

    @njit(cache=True, nogil=True)
    def _single_one(z, positives, out):
        """out[:] = AUC, var(AUC) of one category (NaN where undefined).

        Why a kernel: one category's components, AUC and variance on one thread with no Python between the steps.
        Measured by experiments/bench_delong.py."""
        P = positives.size
        N = z.size - P
        out[:] = np.nan
        if P == 0 or N == 0:
            return
        v = np.zeros(z.size)
        out[0] = _add_components(z, positives, 1.0, v) / (2.0 * P * N)
        if P >= 2 and N >= 2:
            ss10, ss01 = _squared_deviations(v, positives)
            out[1] = ss10 * (1.0 / (P - 1)) / P + ss01 * (1.0 / (N - 1)) / N  # np.cov: × 1/(m − 1)

    @njit(cache=True)
    def _column_group(scores, first, width):
        """Columns first … first + width − 1 of row-major scores (n × K) as a (width, n) float64
        array, each column contiguous: one pass over the rows for the whole group.

        Why a kernel: gathers a group of columns in one pass over the rows, where numpy reads the whole matrix once
        for each column. Measured by experiments/bench_delong.py."""
        n = scores.shape[0]
        z = np.empty((width, n))
        for i in range(n):
            for c in range(width):
                z[c, i] = scores[i, first + c]
        return z

    @njit(parallel=True, cache=True)
    def _paired_rows(scores_a, scores_b, indptr, indices, group, order, n_threads):
        """(K, 3) of ``_paired_one`` for the columns of row-major scores_a, scores_b (n × K), the
        positives of column k at indices[indptr[k]:indptr[k + 1]]; ``group`` columns are copied
        out together (``_column_group``). The groups are claimed by the threads one at a time, in
        ``order`` (``_schedule``: the most work first).

        Why a kernel: the categories on every thread, the most work first, where the numpy path takes them one after
        another on one core. Measured by experiments/bench_delong.py."""
        K = scores_a.shape[1]
        out = np.empty((K, 3))
        claimed = np.zeros(1, dtype=np.int64)
        for _ in prange(n_threads):
            o = _claim(claimed, 0)
            while o < order.size:
                first = order[o] * group
                width = min(group, K - first)
                z_a = _column_group(scores_a, first, width)
                z_b = _column_group(scores_b, first, width)
                for c in range(width):
                    k = first + c
                    _paired_one(z_a[c], z_b[c], indices[indptr[k]:indptr[k + 1]], out[k])
                o = _claim(claimed, 0)
        return out

    @njit(parallel=True, cache=True)
    def _paired_categories(scores_a, scores_b, indptr, indices, order, n_threads):
        """``_paired_rows`` for category-major scores (K × n: each category's scores contiguous).

        Why a kernel: the categories on every thread, the most work first, where the numpy path takes them one after
        another on one core. Measured by experiments/bench_delong.py."""
        K = scores_a.shape[0]
        out = np.empty((K, 3))
        claimed = np.zeros(1, dtype=np.int64)
        for _ in prange(n_threads):
            o = _claim(claimed, 0)
            while o < order.size:
                k = order[o]
                _paired_one(scores_a[k], scores_b[k], indices[indptr[k]:indptr[k + 1]], out[k])
                o = _claim(claimed, 0)
        return out

    @njit(parallel=True, cache=True)
    def _single_rows(scores, indptr, indices, group, order, n_threads):
        """(K, 2) of ``_single_one`` for the columns of row-major scores (n × K), as ``_paired_rows``.

        Why a kernel: the categories on every thread, the most work first, where the numpy path takes them one after
        another on one core. Measured by experiments/bench_delong.py (the intervals)."""
        K = scores.shape[1]
        out = np.empty((K, 2))
        claimed = np.zeros(1, dtype=np.int64)
        for _ in prange(n_threads):
            o = _claim(claimed, 0)
            while o < order.size:
                first = order[o] * group
                width = min(group, K - first)
                z = _column_group(scores, first, width)
                for c in range(width):
                    k = first + c
                    _single_one(z[c], indices[indptr[k]:indptr[k + 1]], out[k])
                o = _claim(claimed, 0)
        return out

    @njit(parallel=True, cache=True)
    def _single_categories(scores, indptr, indices, order, n_threads):
        """``_single_rows`` for category-major scores (K × n).

        Why a kernel: the categories on every thread, the most work first, where the numpy path takes them one after
        another on one core. Measured by experiments/bench_delong.py (the intervals)."""
        K = scores.shape[0]
        out = np.empty((K, 2))
        claimed = np.zeros(1, dtype=np.int64)
        for _ in prange(n_threads):
            o = _claim(claimed, 0)
            while o < order.size:
                k = order[o]
                _single_one(scores[k], indices[indptr[k]:indptr[k + 1]], out[k])
                o = _claim(claimed, 0)
        return out

    @njit(parallel=True, cache=True)
    def _component_columns(scores, positives):
        """(n, k): V10 (positive rows) or V01 (negative rows) of each score column of one category;
        NaN without a positive or a negative.

        Why a kernel: each score column's components on a thread of its own, by the lookups the tests' kernels use.
        No experiments/ script times it (``delong_covariance``, one category); its lookup, ``_add_components``, is
        measured by experiments/bench_delong.py."""
        n_docs, K = scores.shape
        out = np.full((n_docs, K), np.nan)
        if positives.size == 0 or positives.size == n_docs:
            return out
        for r in prange(K):
            v = np.zeros(n_docs)
            _add_components(np.ascontiguousarray(scores[:, r]), positives, 1.0, v)
            out[:, r] = v
        return out


def _schedule(indptr, n: int, group: int = 1):
    """(order of the tasks, threads) for the claiming kernels: tasks of ``group`` consecutive
    categories, the most work first. A category's work is about n + m·log2 m (one pass over its
    documents, the sort of its smaller class, m = min(P, n − P)), so the categories are very
    unequal: dealt out in equal runs of categories, the thread with the large ones worked alone
    at the end (measured by experiments/bench_delong.py). Claimed largest first, the last tasks are small.
    Which thread computes a category never changes its numbers."""
    from mlnb.metrics.ranking import _largest_first_tasks

    return _largest_first_tasks(indptr, n, group)


def _group(K: int) -> int:
    """Columns gathered per task: GROUP_COLUMNS, fewer when the K columns would leave threads idle
    (``ranking.column_group``); each column's numbers are the same whatever its group."""
    from mlnb.metrics.ranking import column_group, worker_threads

    return column_group(K, worker_threads(), GROUP_COLUMNS)


def _kernel_scores(scores, name: str) -> np.ndarray:
    """The last check before a parallel loop: float32/float64 without NaN (``_inputs.score_array``; the
    public callers have checked already, so this is one pass that finds nothing)."""
    from mlnb.metrics._inputs import score_array

    return score_array(scores, name)


def _components_numpy(z: np.ndarray, positives: np.ndarray) -> tuple[np.ndarray, int]:
    """(V10 or V01 of each document, 2 Σ_i h(X_i)) from scipy's midranks: the numpy path."""
    from scipy.stats import rankdata

    y = np.zeros(z.size, dtype=bool)
    y[positives] = True
    P, N = int(y.sum()), int(z.size - y.sum())
    z = np.asarray(z, dtype=np.float64)
    t_z = rankdata(z, method="average")
    h = np.empty(z.size)
    h[y] = t_z[y] - rankdata(z[y], method="average")  # T_Z − T_X
    h[~y] = t_z[~y] - rankdata(z[~y], method="average")  # T_Z − T_Y
    v = np.where(y, h / max(N, 1), 1.0 - h / max(P, 1))
    return v, int(round(2 * h[y].sum()))


def _variances_numpy(d: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(Σ (d − mean)² over the positives, the same over the negatives)."""
    return float(np.sum((d[y] - d[y].mean()) ** 2)), float(np.sum((d[~y] - d[~y].mean()) ** 2))


def _statistics_numpy(columns, indptr, indices, variance) -> np.ndarray:
    """(K, len(columns) + 1): each column's AUC, then ``variance(ss10, ss01, P, N)`` of d, the first
    column's components minus the second's (or the only column's), per category; the numpy
    counterpart of the kernels, NaN where they give NaN."""
    n_docs, K = columns[0].shape
    out = np.full((K, len(columns) + 1), np.nan)
    for k in range(K):
        positives = indices[indptr[k]:indptr[k + 1]]
        P, N = positives.size, n_docs - positives.size
        if P == 0 or N == 0:
            continue
        parts = [_components_numpy(z[:, k], positives) for z in columns]
        out[k, :-1] = [twice / (2.0 * P * N) for _, twice in parts]
        if P >= 2 and N >= 2:
            y = np.zeros(n_docs, dtype=bool)
            y[positives] = True
            d = parts[0][0] - parts[1][0] if len(parts) == 2 else parts[0][0]
            out[k, -1] = variance(*_variances_numpy(d, y), P, N)
    return out


def paired_statistics(scores_a, scores_b, indptr, indices, category_major: bool = False,
                      use_numba: bool = HAVE_NUMBA) -> np.ndarray:
    """(K, 3): auc_a, auc_b, var(AUC_a − AUC_b) of the K column pairs of scores_a, scores_b (n × K
    float32/float64 without NaN; K × n, rows contiguous, if ``category_major``), the positives of
    category k at indices[indptr[k]:indptr[k + 1]] (ascending, no repeats). NaN AUCs without a
    positive or a negative, NaN variance with fewer than two of either."""
    indptr, indices = np.asarray(indptr, np.int64), np.asarray(indices, np.int64)
    scores_a, scores_b = _kernel_scores(scores_a, "scores_a"), _kernel_scores(scores_b, "scores_b")
    if use_numba:
        if category_major:
            return _paired_categories(np.ascontiguousarray(scores_a), np.ascontiguousarray(scores_b), indptr, indices,
                                      *_schedule(indptr, scores_a.shape[1]))
        group = _group(scores_a.shape[1])
        return _paired_rows(scores_a, scores_b, indptr, indices, group, *_schedule(indptr, scores_a.shape[0], group))
    columns = (scores_a.T, scores_b.T) if category_major else (scores_a, scores_b)
    # as the kernel's _paired_one: np.var(ddof=1) / m + … / n
    return _statistics_numpy(columns, indptr, indices, lambda ss10, ss01, P, N: ss10 / (P - 1) / P + ss01 / (N - 1) / N)


def single_statistics(scores, indptr, indices, category_major: bool = False,
                      use_numba: bool = HAVE_NUMBA) -> np.ndarray:
    """(K, 2): the AUC of each column of scores and its DeLong variance (as ``paired_statistics``)."""
    indptr, indices = np.asarray(indptr, np.int64), np.asarray(indices, np.int64)
    scores = _kernel_scores(scores, "scores")
    if use_numba:
        if category_major:
            return _single_categories(np.ascontiguousarray(scores), indptr, indices, *_schedule(indptr, scores.shape[1]))
        group = _group(scores.shape[1])
        return _single_rows(scores, indptr, indices, group, *_schedule(indptr, scores.shape[0], group))
    # as the kernel's _single_one: np.cov's × 1/(m − 1)
    return _statistics_numpy((scores.T if category_major else scores,), indptr, indices,
                             lambda ss10, ss01, P, N: ss10 * (1.0 / (P - 1)) / P + ss01 * (1.0 / (N - 1)) / N)


def component_columns(scores, positives, use_numba: bool = HAVE_NUMBA) -> np.ndarray:
    """(n, k): each document's component (V10 for a positive, V01 for a negative) in each of the k
    score columns of one category."""
    positives = np.asarray(positives, np.int64)
    scores = _kernel_scores(scores, "scores")
    if use_numba:
        return _component_columns(scores, positives)
    return np.column_stack([_components_numpy(scores[:, r], positives)[0] for r in range(scores.shape[1])])


#: bound on the scores of the categories read together by ``column_blocks`` (bytes), per thread and in all: a
#: block's stacked copy, the memory maps it is read from while it is copied, and the kernels' float64 work
#: arrays of its categories are all about this size (10M documents, 2 threads: 2.48 GiB peak RSS with 512 MiB
#: blocks, ``experiments/bench_scale.py``)
COLUMN_BLOCK_BYTES_PER_THREAD = 1 << 26
COLUMN_BLOCK_BYTES = 1 << 29


def column_blocks(column, K: int, block_bytes: int | None = None, n_threads: int | None = None, work=None):
    """Blocks of categories from ``column(k) -> (y, scores, …)`` (labels and one or more score
    vectors of category k), as many per block as fit in ``block_bytes`` of stacked scores
    (default ``COLUMN_BLOCK_BYTES_PER_THREAD`` × threads, at most ``COLUMN_BLOCK_BYTES``):
    yields (categories (G,) int64, indptr, indices, [(G, n) scores per score vector]), row g of
    each block and its positives those of category categories[g]; float32 kept, other types as
    float64. Bad input raises ``MlnbError`` as ``significance`` does. The vectors that ``column``
    gave (e.g. memory maps of a spill) are let go before the block is yielded, so their pages need
    not stay resident while the kernels run.

    Without ``work`` the categories come in order, G consecutive ones a block. With ``work`` ((K,),
    each category's ``ranking.column_work``, known beforehand: a spill's positives), they come the most
    work first, so that a block's categories are of about one size, and G is a multiple of the
    threads where at least as many fit: each thread of the kernels then has as much work (three
    categories in a block of two threads leave one thread waiting; measured by
    experiments/bench_scale.py).

    The G categories of a block are read on ``n_threads`` threads (default: numba's count): a
    streamed study reads them from memory-mapped files, and one thread reading and copying 12 ×
    40 MB of scores at 10M documents left the others idle between the parallel kernels. Each
    category's row is the same whichever thread reads it, and an error is that of the first bad
    category in the order they come, as when they were read in turn."""
    from concurrent.futures import ThreadPoolExecutor

    from mlnb.errors import MlnbError
    from mlnb.metrics._inputs import binary_labels, score_array
    from mlnb.metrics.ranking import worker_threads

    order = np.arange(K, dtype=np.int64) if work is None else np.argsort(-np.asarray(work, dtype=np.float64),
                                                                        kind="stable").astype(np.int64)
    if order.size != K:
        raise MlnbError(f"column_blocks: {order.size} work estimates for {K} categories")

    def read(k: int, n: int, parts=None):
        """(positives, score vectors) of category k, checked against the block's first category."""
        y, *scores = parts if parts is not None else column(k)
        y = binary_labels(np.ravel(y), f"category {k}: y_true").astype(bool)
        vectors = [np.asarray(s).ravel() for s in scores]
        for s in vectors:
            if s.size != y.size or s.size != n:
                raise MlnbError(f"category {k}: y_true has {y.size} values but the scores have "
                                f"{s.size} (expected {n}, as category {first})")
        return np.flatnonzero(y), vectors

    threads = worker_threads(n_threads)
    if block_bytes is None:
        block_bytes = min(COLUMN_BLOCK_BYTES, COLUMN_BLOCK_BYTES_PER_THREAD * threads)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        done = 0
        while done < K:
            first = int(order[done])
            head = column(first)
            n = np.size(head[1])
            itemsize = max(np.dtype(_score_dtype(s)).itemsize for s in head[1:])
            fit = int(max(1, block_bytes // max(1, n * itemsize * len(head[1:]))))
            if work is not None and fit >= threads:
                fit -= fit % threads
            G = min(K - done, fit)
            categories = order[done:done + G]
            if threads > 1 and G > 1:  # results taken in order: the first bad category raises, as before
                read_all = [pool.submit(read, first, n, head)] + [pool.submit(read, int(k), n) for k in categories[1:]]
                parts = [job.result() for job in read_all]
            else:
                parts = [read(first, n, head)] + [read(int(k), n) for k in categories[1:]]
            indices = [positives for positives, _ in parts]
            indptr = np.concatenate([[0], np.cumsum([p.size for p in indices])]).astype(np.int64)
            rows = list(zip(*(vectors for _, vectors in parts)))  # per score vector: its G rows
            stacked = [np.empty((G, n), dtype=np.result_type(*(v.dtype for v in r))) for r in rows]  # as np.stack
            copies = [(out[c], v) for out, r in zip(stacked, rows) for c, v in enumerate(r)]  # (row, its scores)
            if threads > 1:  # numpy's copies release the GIL: the rows are read from the files in parallel
                list(pool.map(lambda job: np.copyto(*job), copies))
            else:
                for row, scores in copies:
                    np.copyto(row, scores)
            # checked before the parallel loop: float32/float64 without NaN (``_inputs``)
            named = f"categories {first}..{first + G - 1}" if work is None else f"categories {categories.tolist()}"
            stacked = [score_array(s, f"{named}: scores") for s in stacked]
            stacked = [s.astype(np.result_type(*map(_score_dtype, r)), copy=False) for s, r in zip(stacked, rows)]
            del head, parts, rows, copies  # the memory maps: their pages may go while the kernels run
            yield categories, indptr, np.concatenate(indices).astype(np.int64), stacked
            done += G

def _score_dtype(scores) -> np.dtype:
    dtype = np.asarray(scores).dtype
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)
