r"""Rank metrics from decision scores: exact ROC, AUC, ROC on a grid, lift.

Everything starts from one sort of a category's scores, descending. At each
distinct score (threshold) t_j, the cumulative counts of positives and
negatives scored ≥ t_j give

    TPR_j = TP_j / P        FPR_j = FP_j / N        depth_j = (TP_j + FP_j) / n

Documents tied at one score enter together, so the curve joins consecutive
points by straight segments: the expected curve under random tie-breaking.

* AUC is the trapezoid area under (FPR, TPR): equal to the Mann–Whitney
  probability that a random positive outscores a random negative, ties ½.
* ROC on a grid: TPR at evenly spaced FPR x ∈ [0, 1], read off those segments
  (at a vertical segment, the top of it, so TPR(0) = share of positives scored
  above every negative).
* ROC lift: TPR(x) / x on the same grid without x = 0; how many times better
  than random the classifier is at false-positive rate x (the RCV1 tutorial's
  "lift").
* Cumulative gains: share of all positives among the top ``depth`` fraction of
  documents, G(d) = TP(d) / P; its lift-by-depth is G(d) / d = precision at
  depth d / base rate (the marketing "lift chart").

* Average precision (the area under the precision–recall curve as
  scikit-learn's ``average_precision_score`` sums it, no interpolation):

      AP = Σ_j (TP_j − TP_{j−1}) / P · TP_j / (TP_j + FP_j)

  — each positive takes the precision at its own score, tied documents
  entering together; the terms are added in order by a compensated (Neumaier)
  sum, within an ulp of the exactly rounded one.

Example-based ranking metrics (``label_ranking_metrics``) rank the K
categories of each document i by its scores s_i, with true set T_i (n_i = |T_i|):

    rank_ij = #{l: s_il ≥ s_ij}     L_ij = #{l ∈ T_i: s_il ≥ s_ij}
    LRAP_i     = (1/n_i) Σ_{j ∈ T_i} L_ij / rank_ij            (1 if n_i ∈ {0, K})
    coverage_i = #{l: s_il ≥ min_{j ∈ T_i} s_ij}                (0 if n_i = 0)
    loss_i     = #{(j, l) ∈ T_i × T̄_i: s_ij ≤ s_il} / (n_i (K − n_i))   (0 if n_i ∈ {0, K})

each averaged over the documents: scikit-learn's
``label_ranking_average_precision_score``, ``coverage_error`` and
``label_ranking_loss`` with their tie conventions (a tie counts *against* the
true label in all three).

Scores should be log-odds or decision values: sigmoid probabilities saturate
to exactly 0 or 1 and create ties that destroy the ranking.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from mlnb._kernels.csr import columns_of
from mlnb._kernels.jit import HAVE_NUMBA, njit, prange, worker_threads  # noqa: F401  (re-exported)
from mlnb.errors import MlnbError
from mlnb.metrics._inputs import binary_labels, score_array


@dataclass(frozen=True)
class RankCurve:
    """Cumulative counts at each distinct threshold, highest score first.

    ``tp[0] = fp[0] = 0`` is the point before any document is accepted.
    """

    thresholds: np.ndarray  # (m,)   distinct scores, descending (first is +inf)
    tp: np.ndarray  # (m,)   positives scored >= threshold
    fp: np.ndarray  # (m,)   negatives scored >= threshold
    n_pos: int
    n_neg: int
    #: the sums of ``auc_from_curve`` and ``average_precision_from_curve`` when the walk that made the
    #: curve added them up on its way (the same numbers in the same order: the same bits); None: from
    #: the arrays
    sums: tuple[int, float] | None = None

    @property
    def defined(self) -> bool:
        """AUC and ROC need at least one positive and one negative."""
        return self.n_pos > 0 and self.n_neg > 0

    @property
    def tpr(self) -> np.ndarray:
        return self.tp / self.n_pos if self.n_pos else np.full(self.tp.shape, np.nan)

    @property
    def fpr(self) -> np.ndarray:
        return self.fp / self.n_neg if self.n_neg else np.full(self.fp.shape, np.nan)

    @property
    def depth(self) -> np.ndarray:
        return (self.tp + self.fp) / (self.n_pos + self.n_neg)


def rank_curve(y_true, scores) -> RankCurve:
    """The cumulative counts of one category, without a Python loop.

    Sorting values is several times faster than ``argsort``, so: sort all scores to find the
    distinct thresholds and how many documents score ≥ each, and sort the positives' scores alone;
    then one walk down both (``_fill_curve``, compiled, and letting other threads run: ``evaluate``
    ranks categories on a thread pool) counts the positives ≥ each threshold, the negatives being the
    rest, and adds up the curve's AUC and AP terms on its way (``RankCurve.sums``). Without numba the
    same counts come from ``np.searchsorted``.
    """
    y = binary_labels(np.ravel(y_true), "y_true").astype(bool)
    s = score_array(scores, "scores").ravel()  # float32/float64 without NaN (``_inputs``)
    if y.shape != s.shape:
        raise MlnbError(f"y_true has {y.size} values but scores has {s.size}")
    ascending = np.sort(s)
    positives = np.sort(np.compress(y, s))  # (compress, not s[y]: faster; experiments/bench_roc_auc.py)
    if HAVE_NUMBA:
        m = _count_distinct(ascending)
        # made at their final size, the point before any document first: a curve over n documents then
        # needs ~5 numbers per document at most (streaming evaluation keeps one per thread)
        thresholds = np.empty(m + 1, dtype=np.result_type(s.dtype, np.inf))  # as np.r_[np.inf, s]: float32 stays
        tp, fp = np.empty(m + 1, dtype=np.int64), np.empty(m + 1, dtype=np.int64)
        twice_area, precision_sum = _fill_curve(ascending, positives, thresholds, tp, fp)
        return RankCurve(thresholds=thresholds, tp=tp, fp=fp, n_pos=int(positives.size),
                         n_neg=int(y.size - positives.size), sums=(int(twice_area), float(precision_sum)))
    s_sorted = ascending[::-1]  # descending
    del ascending
    # != rather than diff: inf − inf is NaN, which would split a tie of infinities
    last_of_tie = np.flatnonzero(s_sorted[1:] != s_sorted[:-1])
    m = last_of_tie.size + (1 if s.size else 0)  # distinct scores
    thresholds = np.empty(m + 1, dtype=np.result_type(s.dtype, np.inf))
    thresholds[0] = np.inf
    fp = np.empty(m + 1, dtype=np.int64)  # first the last index of each tie, then FP
    fp[0] = 0
    fp[1:last_of_tie.size + 1] = last_of_tie
    del last_of_tie
    if s.size:
        fp[m] = s.size - 1
    thresholds[1:] = s_sorted[fp[1:]]
    del s_sorted
    tp = np.empty(m + 1, dtype=np.int64)
    tp[0] = 0
    tp[1:] = positives.size - np.searchsorted(positives, thresholds[1:], side="left")
    fp[1:] += 1  # documents scored >= each threshold
    fp[1:] -= tp[1:]
    return RankCurve(thresholds=thresholds, tp=tp, fp=fp, n_pos=int(positives.size),
                     n_neg=int(y.size - positives.size))


if HAVE_NUMBA:

    @njit(cache=True, nogil=True)
    def _count_distinct(ascending):
        """The number of distinct values of a sorted array (``!=``, so a tie of infinities is one).

        Why a kernel: one pass with no temporary comparison array, so that the curve's arrays are made at their
        final size. Measured by experiments/bench_roc_auc.py."""
        m = 1 if ascending.size else 0
        for i in range(1, ascending.size):
            if ascending[i] != ascending[i - 1]:
                m += 1
        return m

    @njit(cache=True, nogil=True)
    def _add_point(tp_now, fp_now, tp_before, fp_before, twice_area, precision_sum, carry):
        """The terms of curve point (TP, FP) after (TP', FP'): twice_area + (FP − FP')(TP + TP'), an
        integer, and ΔTP·TP/(TP + FP) added to precision_sum by Neumaier's compensated summation
        (``carry`` keeps the low bits: the sum is within ~2 ulps however long the curve).

        Why a kernel: inlined into the curve's walk, so that the AUC and AP terms are added as the points are made,
        not in passes over the finished arrays. Measured by experiments/bench_roc_auc.py."""
        twice_area += (fp_now - fp_before) * (tp_now + tp_before)
        if tp_now > tp_before:  # zero terms change neither the sum nor its carry
            term = np.float64(tp_now - tp_before) * (np.float64(tp_now) / np.float64(tp_now + fp_now))
            total = precision_sum + term
            if abs(precision_sum) >= abs(term):
                carry += (precision_sum - total) + term
            else:
                carry += (term - total) + precision_sum
            precision_sum = total
        return twice_area, precision_sum, carry

    @njit(cache=True, nogil=True)
    def _fill_curve(ascending, positives, thresholds, tp, fp):
        """thresholds, tp, fp of ``RankCurve`` from all scores and the positives' scores, each sorted
        ascending: the point (+inf, 0, 0) first, then from the highest score down, at the lowest
        document of each tie (index i of ``ascending``), the threshold, the positives ≥ it (a pointer
        walking down ``positives``) and the other documents ≥ it, n − i − tp. Returns the curve's
        (twice its area in counts, Σ ΔTP·precision) summed on the way (``_add_point``).

        Why a kernel: one walk down the sorted scores and positives that lets other threads run, where numpy needs
        searches and several temporaries the size of the curve. Measured by experiments/bench_roc_auc.py."""
        n = ascending.size
        thresholds[0] = np.inf
        tp[0] = 0
        fp[0] = 0
        p = positives.size - 1
        above = 0  # positives scored ≥ the current threshold
        j = 0
        twice_area, precision_sum, carry = np.int64(0), 0.0, 0.0
        for i in range(n - 1, -1, -1):
            value = ascending[i]
            if i == 0 or ascending[i - 1] != value:  # the last document of its tie, highest first
                while p >= 0 and positives[p] >= value:
                    above += 1
                    p -= 1
                j += 1
                thresholds[j] = value
                tp[j] = above
                fp[j] = n - i - above
                twice_area, precision_sum, carry = _add_point(tp[j], fp[j], tp[j - 1], fp[j - 1],
                                                              twice_area, precision_sum, carry)
        return twice_area, precision_sum + carry

    @njit(cache=True, nogil=True)
    def _curve_sums(tp, fp):
        """``_fill_curve``'s sums from a curve's arrays (a curve made elsewhere): the same bits.

        Why a kernel: adds the terms in the walk's order, so that a curve made elsewhere gives the walk's bits. No
        experiments/ script times it (curves from ``BinnedScores.curve`` or a user's); the walk it repeats is
        measured by experiments/bench_roc_auc.py."""
        twice_area, precision_sum, carry = np.int64(0), 0.0, 0.0
        for j in range(1, tp.size):
            twice_area, precision_sum, carry = _add_point(tp[j], fp[j], tp[j - 1], fp[j - 1],
                                                          twice_area, precision_sum, carry)
        return twice_area, precision_sum + carry


def _sums_of(curve: RankCurve) -> tuple[int, float]:
    """(Σ_j ΔFP_j (TP_j + TP_{j−1}), Σ_j ΔTP_j · TP_j/(TP_j + FP_j)) of a curve: the walk's if it kept
    them, else compiled from the arrays (the same bits), else numpy's sums (no numba: the area the
    same integer, the precision sum pairwise, so its last bits may differ)."""
    if curve.sums is not None:
        return curve.sums
    tp, fp = np.asarray(curve.tp, dtype=np.int64), np.asarray(curve.fp, dtype=np.int64)
    if tp.ndim != 1 or tp.shape != fp.shape:
        raise MlnbError(f"a rank curve needs tp and fp of one length, got shapes {tp.shape} and {fp.shape}")
    if HAVE_NUMBA:
        twice_area, precision_sum = _curve_sums(tp, fp)
        return int(twice_area), float(precision_sum)
    accepted = (tp + fp)[1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.where(accepted > 0, np.diff(tp) * (tp[1:] / np.where(accepted > 0, accepted, 1)), 0.0)
    return int(np.sum(np.diff(fp) * (tp[1:] + tp[:-1]))), float(np.sum(terms))


def auc_from_curve(curve: RankCurve) -> float:
    """Trapezoid area under the exact ROC; NaN without positives or negatives."""
    if not curve.defined:
        return float("nan")
    area = _sums_of(curve)[0] / 2.0
    return float(area / (curve.n_pos * curve.n_neg))


def average_precision_from_curve(curve: RankCurve) -> float:
    """Σ_j ΔTP_j / P · precision_j (sklearn's ``average_precision_score``); NaN without positives."""
    if curve.n_pos == 0:
        return float("nan")
    return float(_sums_of(curve)[1] / curve.n_pos)


def roc_auc(y_true, scores, n_threads: int | None = None):
    """Exact ROC AUC (ties count ½): a float for 1-D inputs, one per category for 2-D ones.

    1-D ``y_true`` (n,) and ``scores`` (n,): the AUC of one category, NaN without a positive or a
    negative. 2-D ``y_true`` (n × K, 0/1, sparse or dense) and ``scores`` (n × K, dense): a (K,)
    array, the AUC of each column, NaN in the columns without a positive or a negative — like
    ``sklearn.metrics.roc_auc_score(y_true, scores, average=None)``, which raises there instead.
    It never pools the columns: the AUC of all (document, category) pairs pooled is
    ``mlnb.metrics.micro_auc``. ``n_threads`` bounds the threads of the 2-D kernel (default: numba's).

    Scores go through ``mlnb.metrics._inputs.score_array`` first: NaN, complex and object scores are
    refused in one line, float16 and small integers converted exactly, and int64 scores refused
    unless every value is exactly representable in float64 (|v| ≤ 2^53): they are not ranked as
    integers. Labels must be 0/1 (or booleans).
    """
    if sp.issparse(scores):
        raise MlnbError("roc_auc: scores must be a dense 1-D or 2-D array, got a sparse matrix")
    scores = score_array(scores, "roc_auc: scores", ndim=(1, 2))
    if scores.ndim == 2:
        return roc_auc_per_category(y_true, scores, n_threads=n_threads)
    return auc_from_curve(rank_curve(binary_labels(np.ravel(y_true), "roc_auc: y_true"), scores))


# ---------------------------------------------------------------------------------------------
# One AUC per column of an n × K score matrix, ordering only the smaller class.
#
# With lb(x) = #{a ∈ A: a < x} and ub(x) = #{a ∈ A: a ≤ x} for the scores A of one class,
# the Mann–Whitney count (ties ½) doubled is an integer sum over the other class:
#
#     A = negatives (m = N):   2U = Σ_{positives x} [lb(x) + ub(x)]
#     A = positives (m = P):   2U = Σ_{negatives x} [2m − lb(x) − ub(x)]
#
# and AUC = 2U / (2 P N). A is the smaller class (the positives, for most text categories). Its m
# values go into T = 8m equal-width buckets over their finite range, −inf and +inf into one more
# bucket at each end:
#
#     bucket(x) = ⌊clip((x − low)·scale, −1, T)⌋ + 1 ∈ [0, T + 1]
#
# non-decreasing in x, so a lower bucket holds lower values only. A is ordered by a counting
# sort on the buckets and a sort inside each (mostly empty or single-valued) bucket, and
# first[v] = #{a: bucket(a) < v}. For x of the other class, every value of A in a lower bucket is
# < x and every one in a higher bucket > x: lb(x) = first[bucket(x)] at once when x's bucket holds
# no value of A (most of them), else a binary search inside that bucket. 2U is summed in int64, so
# the AUC is exact up to its final division; a column costs two passes over its n values.

NAN_SCORES = -1.0  # what the kernel returns for a column holding a NaN
AUC_BUCKETS_PER_VALUE = 8  # buckets per value of A (most buckets empty: one lookup for most x)
AUC_GROUP_COLUMNS = 8  # columns gathered together from the row-major matrix (one 64-byte line of float64)
SMALL_BUCKET = 16  # buckets up to this size are ordered by insertion, larger ones by np.sort

if HAVE_NUMBA:
    from mlnb._kernels.atomic import claim as _claim

    @njit(cache=True, nogil=True)
    def _count_below(A, lo, hi, x):
        """lo + the number of A[lo:hi] (ascending) below x.

        Why a kernel: a binary search inlined into the AUC loops, where ``np.searchsorted`` is a call. Measured by
        experiments/bench_roc_auc.py."""
        while lo < hi:
            mid = (lo + hi) >> 1
            if A[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        return lo

    @njit(cache=True, nogil=True)
    def _bucket_scale(low, high, T):
        """(low, scale) of ``_bucket`` for T buckets over the finite range [low, high] (low > high: no
        finite value). scale is always finite and > 0, whatever the spread: with subnormal or extreme
        values, high/2 − low/2 can be 0 (5e-324 halves to 0) or so small that (T − ½) over it
        overflows, and 0 · inf = NaN made a NaN bucket, an index out of bounds and a lost division by
        zero in the parallel loop. Then scale = 1: the whole finite range of A lies in bucket 1 (it
        spans less than 2), ordered by the sort inside it; exact, as any non-decreasing bucket is.

        Why a kernel: computed in the compiled code that buckets the values, so that the kernels and their lookups
        agree on every bucket. Measured by experiments/bench_roc_auc.py."""
        if not low <= high:  # no finite value (or a NaN, which the callers refuse)
            return 0.0, 1.0
        span = high * 0.5 - low * 0.5  # halves: high − low may overflow, their halves cannot
        if span > 0.0:
            scale = (T - 0.5) / span
            if scale < np.inf:
                return low, scale
        return low, 1.0

    @njit(cache=True, nogil=True)
    def _bucket(x, low, scale, T):
        """The bucket (0 … T + 1) of x: non-decreasing in x, −inf in 0 and +inf in T + 1; in range for
        any x, NaN included (bucket 0), so no caller can index out of bounds with it.

        Why a kernel: inlined into the AUC loops: a multiplication and a clip per value instead of a search.
        Measured by experiments/bench_roc_auc.py."""
        if x == np.inf:
            return T + 1
        if not x > -np.inf:  # −inf or NaN
            return 0
        v = (x * 0.5 - low * 0.5) * scale  # finite · finite ≥ 0: ±inf at worst (overflow), never NaN
        return int(min(max(v, -1.0), T) + 1.0)

    @njit(cache=True, nogil=True)
    def _column_auc(z, positive):
        """Exact AUC of one column: z (n,) float64, positive (n,) uint8. NaN without a positive or a
        negative; ``NAN_SCORES`` (−1) when z holds a NaN.

        Why a kernel: orders only the smaller class and looks the other up by buckets, where scikit-learn sorts all
        of a column's scores. Measured by experiments/bench_roc_auc.py."""
        n = z.size
        P = 0
        for i in range(n):
            P += positive[i]
        N = n - P
        if P == 0 or N == 0:
            for i in range(n):
                if np.isnan(z[i]):
                    return NAN_SCORES
            return np.nan
        sorted_positive = 1 if P <= N else 0  # the class ordered: the smaller one
        m = min(P, N)
        values = np.empty(m)
        low, high = np.inf, -np.inf  # finite range
        j = 0
        for i in range(n):
            if positive[i] == sorted_positive:
                x = z[i]
                if np.isnan(x):
                    return NAN_SCORES
                values[j] = x
                j += 1
                if x > -np.inf and x < np.inf:
                    low = min(low, x)
                    high = max(high, x)
        T = AUC_BUCKETS_PER_VALUE * m
        low, scale = _bucket_scale(low, high, T)  # finite, never a division by zero
        first = np.zeros(T + 3, dtype=np.int32)  # counting sort: first[v] = #{a: bucket(a) < v}
        for j in range(m):
            first[_bucket(values[j], low, scale, T) + 1] += 1
        for v in range(1, T + 3):
            first[v] += first[v - 1]
        fill = first.copy()
        A = np.empty(m)
        for j in range(m):
            v = _bucket(values[j], low, scale, T)
            A[fill[v]] = values[j]
            fill[v] += 1
        for v in range(T + 2):  # order inside each bucket
            a, e = first[v], first[v + 1]
            if e - a > SMALL_BUCKET:
                A[a:e] = np.sort(A[a:e])
            else:
                for j in range(a + 1, e):
                    x = A[j]
                    t = j
                    while t > a and A[t - 1] > x:
                        A[t] = A[t - 1]
                        t -= 1
                    A[t] = x
        tie_end = np.empty(m, dtype=np.int64)  # tie_end[j]: one past the last value equal to A[j]
        tie_end[m - 1] = m
        for j in range(m - 2, -1, -1):
            tie_end[j] = tie_end[j + 1] if A[j] == A[j + 1] else j + 1
        total = 0  # Σ lb + ub over the other class
        for i in range(n):
            if positive[i] == sorted_positive:
                continue
            x = z[i]
            if np.isnan(x):
                return NAN_SCORES
            v = _bucket(x, low, scale, T)
            lb = first[v]
            end = first[v + 1]
            if lb == end:  # no value of A in x's bucket: lb = ub
                total += 2 * lb
                continue
            lb = _count_below(A, lb, end, x)
            total += lb + (tie_end[lb] if lb < m and A[lb] == x else lb)
        twice_u = 2 * m * (n - m) - total if sorted_positive else total
        return twice_u / (2.0 * P * N)

    @njit(parallel=True, cache=True)
    def _auc_columns_sparse(S, indptr, indices, group, order, n_threads):
        """AUC of each column of S (n × K), positives of column k at indices[indptr[k]:indptr[k + 1]]
        (CSC); a column with a NaN gives NAN_SCORES, which the caller reports. Tasks of ``group``
        columns, claimed by the threads one at a time in ``order`` (the most work first:
        ``_largest_first_tasks``).

        Why a kernel: every category on every thread, the most work first, where scikit-learn's ``roc_auc_score``
        takes the columns one after another on one core. Measured by experiments/bench_roc_auc.py."""
        n, K = S.shape
        out = np.empty(K)
        claimed = np.zeros(1, dtype=np.int64)
        for _ in prange(n_threads):
            positive = np.zeros(n, dtype=np.uint8)
            o = _claim(claimed, 0)
            while o < order.size:
                first = order[o] * group
                width = min(group, K - first)
                z = np.empty((width, n))
                for i in range(n):  # the row's ``width`` values are adjacent: one pass over S per group
                    for c in range(width):
                        z[c, i] = S[i, first + c]
                for c in range(width):
                    k = first + c
                    for q in range(indptr[k], indptr[k + 1]):
                        positive[indices[q]] = 1
                    out[k] = _column_auc(z[c], positive)
                    for q in range(indptr[k], indptr[k + 1]):
                        positive[indices[q]] = 0
                o = _claim(claimed, 0)
        return out


def roc_auc_per_category(Y_true, scores, n_threads: int | None = None, use_numba: bool = HAVE_NUMBA) -> np.ndarray:
    """(K,) exact AUC of each column of ``scores`` (n × K) against ``Y_true`` (n × K, 0/1, sparse or
    dense); NaN where a column has no positive or no negative. In parallel over groups of columns."""
    if sp.issparse(scores):
        raise MlnbError("roc_auc: scores must be a dense n × K array, got a sparse matrix")
    # checked before the parallel loop: float32/float64 without NaN, 0/1 labels of the same shape
    S = score_array(scores, "roc_auc: scores", ndim=2)
    Y_true = binary_labels(Y_true, "roc_auc: y_true", shape=S.shape)
    n, K = S.shape
    if K == 0:
        return np.empty(0)
    if use_numba:
        indptr, indices = _positives_by_column(Y_true, K)
        def run():
            group = column_group(K, worker_threads(), AUC_GROUP_COLUMNS)
            return _auc_columns_sparse(S, indptr, indices, group, *_largest_first_tasks(indptr, n, group))

        auc = _with_threads(run, n_threads)
        if (auc == NAN_SCORES).any():
            raise MlnbError(f"roc_auc: scores contain NaN (column {int(np.argmax(auc == NAN_SCORES))})")
        return auc
    if np.isnan(S).any():
        raise MlnbError("roc_auc: scores contain NaN")
    column = _label_column_reader(Y_true, n)
    with ThreadPoolExecutor(max_workers=worker_threads(n_threads)) as pool:
        return np.array(list(pool.map(lambda k: auc_from_curve(
            rank_curve(column(k), np.ascontiguousarray(S[:, k]))), range(K))), dtype=np.float64)


def _positives_by_column(Y_true, K: int) -> tuple[np.ndarray, np.ndarray]:
    """(indptr (K + 1,), rows): the positive rows of each column of Y (nonzeros), as in CSC."""
    if sp.issparse(Y_true):
        Y = sp.csr_matrix(Y_true)
        if not Y.has_canonical_format:  # a repeated entry is one label (sum_duplicates must not touch the caller's)
            Y = Y.copy()
            Y.sum_duplicates()
        indptr, rows, _ = columns_of(Y)  # stored zeros left out
        return indptr, rows
    columns, rows = np.nonzero(np.asarray(Y_true).T)  # column after column, rows ascending
    return np.r_[0, np.cumsum(np.bincount(columns, minlength=K))], rows




def column_group(K: int, threads: int, widest: int) -> int:
    """Columns per task of a parallel loop over K columns: ``widest`` (gathered from the row-major
    matrix together, in one pass over its rows), fewer when there would be fewer than four tasks
    per thread: 103 categories in 13 groups of 8 leave 3 of 16 threads idle, and the threads,
    which claim the tasks the largest first (``_largest_first_tasks``), balance their work with
    the small tasks at the end. Fewer columns per group cost more per column (more passes over
    the rows; measured by experiments/bench_threads.py), so 2 threads keep 8. A column's numbers do
    not depend on its group or its thread: the same bits."""
    return int(max(1, min(widest, K // max(4 * threads, 1))))


def column_work(positive_counts, n: int) -> np.ndarray:
    """(K,) each column's work in the rank kernels (AUC, DeLong), about n + m·log2 m, m = min(P, n − P)
    its smaller class (they pass over its n documents and sort that class), from its P positives of n."""
    P = np.asarray(positive_counts, dtype=np.int64)
    m = np.minimum(P, n - P).astype(np.float64)
    return n + m * np.log2(m + 1.0)


def _largest_first_tasks(indptr, n: int, group: int = 1) -> tuple[np.ndarray, int]:
    """(order, threads) of tasks of ``group`` consecutive columns for a kernel whose threads claim
    them one at a time: the tasks by their work, the most first (ties by index), and the threads
    to start (no more than the tasks). A column's work is about n + m·log2 m, m = min(P, n − P)
    its smaller class (``_column_auc`` and DeLong sort it and pass over the n documents)."""
    work = column_work(np.diff(np.asarray(indptr, dtype=np.int64)), n)  # (K,)
    K = work.size
    starts = np.arange(0, K, max(group, 1))
    tasks = np.add.reduceat(work, starts) if K else np.zeros(0)
    order = np.argsort(-tasks, kind="stable").astype(np.int64)
    return order, int(max(1, min(worker_threads(), order.size)))


def _with_threads(run, n_threads: int | None):
    """run() with numba's thread count set to ``n_threads`` (None: unchanged)."""
    if not n_threads:
        return run()
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n_threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        return run()
    finally:
        numba.set_num_threads(before)


def curve_parts(curve: RankCurve, grid: np.ndarray, keep_curve: bool):
    """(AUC, ROC on ``grid``, gains on ``grid``, the curve if ``keep_curve`` else None, AP) of a rank curve."""
    return auc_from_curve(curve), roc_on_grid(curve, grid), gains_on_grid(curve, grid), \
        curve if keep_curve else None, average_precision_from_curve(curve)


def rank_parts(scores: np.ndarray, k: int, rows: np.ndarray, grid: np.ndarray, keep_curve: bool):
    """(AUC, ROC on ``grid``, gains on ``grid``, the curve if ``keep_curve`` else None, AP) of column k of
    checked scores (n × K float, no NaN) whose positives are the documents ``rows`` (distinct): the numbers of
    ``auc_from_curve``, ``roc_on_grid``, ``gains_on_grid`` and ``average_precision_from_curve`` of
    ``rank_curve``, bit for bit, for ``evaluate``'s thread pool. The column and its positives are gathered
    in one compiled call and the curve, its sums and both grids made in another, both letting other threads
    run, with numpy's two sorts between them: the per-category checks and the dozen small numpy calls of
    ``rank_curve`` and its functions each took and gave back Python's lock, which the many threads of
    ``evaluate()`` then queued for (measured by experiments/bench_threads.py)."""
    n = scores.shape[0]
    if not HAVE_NUMBA:  # the functions of the curve themselves
        y = np.zeros(n, dtype=bool)
        y[rows] = True
        return curve_parts(rank_curve(y, np.ascontiguousarray(scores[:, k])), grid, keep_curve)
    ascending, positives = _column_and_positives(scores, k, rows)
    ascending.sort()  # numpy's sort, as ``rank_curve``'s (np.sort sorts a copy in place the same way)
    positives.sort()
    at = np.ascontiguousarray(grid, dtype=np.float64)
    roc, gains = np.empty(at.shape), np.empty(at.shape)
    thresholds, tp, fp, twice_area, precision_sum = _curve_on_grid(ascending, positives, at.ravel(), roc.ravel(),
                                                                   gains.ravel())
    n_pos, n_neg = int(positives.size), int(n - positives.size)
    twice_area, precision_sum = int(twice_area), float(precision_sum)
    curve = RankCurve(thresholds=thresholds, tp=tp, fp=fp, n_pos=n_pos, n_neg=n_neg,
                      sums=(twice_area, precision_sum)) if keep_curve else None
    defined = n_pos > 0 and n_neg > 0
    auc = float(twice_area / 2.0 / (n_pos * n_neg)) if defined else float("nan")  # as ``auc_from_curve``
    return auc, roc, gains, curve, float(precision_sum / n_pos) if n_pos else float("nan")


if HAVE_NUMBA:

    @njit(cache=True, nogil=True)
    def _column_and_positives(scores, k, rows):
        """(scores[:, k], scores[rows, k]) as new contiguous arrays.

        Why a kernel: copies a column and its positives' scores in one pass over the strided matrix, where numpy
        makes two strided gathers. Measured by experiments/bench_threads.py (the ``evaluate()`` stage)."""
        n = scores.shape[0]
        column = np.empty(n, dtype=scores.dtype)
        for i in range(n):
            column[i] = scores[i, k]
        positives = np.empty(rows.size, dtype=scores.dtype)
        for j in range(rows.size):
            positives[j] = scores[rows[j], k]
        return column, positives

    @njit(cache=True, nogil=True)
    def _curve_on_grid(ascending, positives, at, roc, gains):
        """``rank_curve``'s arrays and sums from the sorted scores and positives (``_fill_curve``), and
        roc[g], gains[g] at x = at[g] (``_grid_walk``), NaN where undefined (no positive, or no negative
        for the ROC).

        Why a kernel: the curve, its sums and both grids in one compiled call that lets other threads run, so that
        ``evaluate`` ranks categories on a thread pool. Measured by experiments/bench_threads.py (the ``evaluate()``
        stage)."""
        m = _count_distinct(ascending)
        thresholds = np.empty(m + 1, dtype=ascending.dtype)
        tp, fp = np.empty(m + 1, dtype=np.int64), np.empty(m + 1, dtype=np.int64)
        twice_area, precision_sum = _fill_curve(ascending, positives, thresholds, tp, fp)
        n_pos = positives.size
        n_neg = ascending.size - n_pos
        if n_pos > 0 and n_neg > 0:
            _grid_walk(tp, fp, n_pos, n_neg, False, at, roc)
        else:
            roc[:] = np.nan
        if n_pos > 0:
            _grid_walk(tp, fp, n_pos, n_neg, True, at, gains)
        else:
            gains[:] = np.nan
        return thresholds, tp, fp, twice_area, precision_sum


def _label_column_reader(Y_true, n: int):
    """k -> boolean column k of Y (sparse or dense), without densifying Y."""
    if sp.issparse(Y_true):
        Y = sp.csc_matrix(Y_true, copy=True)
        Y.eliminate_zeros()

        def column(k: int) -> np.ndarray:
            y = np.zeros(n, dtype=bool)
            y[Y.indices[Y.indptr[k]:Y.indptr[k + 1]]] = True
            return y
        return column
    Y = np.asarray(Y_true)
    return lambda k: Y[:, k] != 0


def roc_curve_exact(y_true, scores) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fpr, tpr, thresholds) at every distinct score, like sklearn's roc_curve
    with ``drop_intermediate=False`` (its first threshold is +inf)."""
    curve = rank_curve(y_true, scores)
    return curve.fpr, curve.tpr, curve.thresholds


def fpr_grid(n_points: int = 101) -> np.ndarray:
    """Evenly spaced x from 0 to 1 inclusive."""
    if n_points < 2:
        raise ValueError(f"a grid needs at least 2 points, got {n_points}")
    return np.linspace(0.0, 1.0, n_points)


def _piecewise_linear_upper(x: np.ndarray, y: np.ndarray, at: np.ndarray) -> np.ndarray:
    """y along the polyline through (x, y) (x non-decreasing) at the points ``at``;
    where x repeats (a vertical segment), the highest y there."""
    right = np.searchsorted(x, at, side="right")  # first point strictly beyond
    j = np.clip(right - 1, 0, x.size - 1)  # last point at or before
    k = np.clip(right, 0, x.size - 1)
    dx = x[k] - x[j]
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(dx > 0, (at - x[j]) / dx, 0.0)
    return y[j] + t * (y[k] - y[j])


def roc_on_grid(curve: RankCurve, grid: np.ndarray) -> np.ndarray:
    """TPR at each FPR in ``grid``; NaN where the ROC is undefined."""
    if not curve.defined:
        return np.full(grid.shape, np.nan)
    if HAVE_NUMBA:
        return _on_grid(curve, grid, by_depth=False)
    return _piecewise_linear_upper(curve.fpr, curve.tpr, grid)


def gains_on_grid(curve: RankCurve, grid: np.ndarray) -> np.ndarray:
    """Share of positives captured in the top ``grid`` fraction of documents."""
    if curve.n_pos == 0:
        return np.full(grid.shape, np.nan)
    if HAVE_NUMBA:
        return _on_grid(curve, grid, by_depth=True)
    return _piecewise_linear_upper(curve.depth, curve.tpr, grid)


def _on_grid(curve: RankCurve, grid: np.ndarray, by_depth: bool) -> np.ndarray:
    """``_piecewise_linear_upper`` of (FPR or depth, TPR) at ``grid``, the ratios computed only at the
    points the binary searches visit (``_grid_walk``) instead of as arrays over the whole curve: the
    same divisions and interpolation, so the same bits."""
    at = np.ascontiguousarray(grid, dtype=np.float64)
    out = np.empty(at.shape, dtype=np.float64)
    _grid_walk(curve.tp, curve.fp, curve.n_pos, curve.n_neg, by_depth, at.ravel(), out.ravel())
    return out


if HAVE_NUMBA:

    @njit(cache=True, nogil=True)
    def _grid_x(tp, fp, j, n_pos, n_neg, by_depth):
        """x of point j: FPR fp/N, or depth (tp + fp)/(P + N), as numpy divides the arrays.

        Why a kernel: inlined into the grid walk. Measured by experiments/bench_threads.py (the ``evaluate()``
        stage)."""
        if by_depth:
            return np.float64(tp[j] + fp[j]) / np.float64(n_pos + n_neg)
        return np.float64(fp[j]) / np.float64(n_neg)

    @njit(cache=True, nogil=True)
    def _grid_walk(tp, fp, n_pos, n_neg, by_depth, at, out):
        """out[g] = TPR along the polyline through (x_j, TPR_j) at x = at[g], the highest TPR where x
        repeats (``_piecewise_linear_upper``, with TPR_j = tp_j/P and x_j from ``_grid_x``).

        Why a kernel: visits only the points the binary searches need, where numpy's interpolation builds arrays
        over the whole curve. Measured by experiments/bench_threads.py (the ``evaluate()`` stage)."""
        size = tp.size
        for g in range(at.size):
            a = at[g]
            lo, hi = 0, size  # the first point with x > a (np.searchsorted(x, a, side="right"))
            while lo < hi:
                mid = (lo + hi) // 2
                if _grid_x(tp, fp, mid, n_pos, n_neg, by_depth) <= a:
                    lo = mid + 1
                else:
                    hi = mid
            j = min(max(lo - 1, 0), size - 1)
            k = min(max(lo, 0), size - 1)
            xj = _grid_x(tp, fp, j, n_pos, n_neg, by_depth)
            dx = _grid_x(tp, fp, k, n_pos, n_neg, by_depth) - xj
            t = (a - xj) / dx if dx > 0 else 0.0
            yj = np.float64(tp[j]) / np.float64(n_pos)
            yk = np.float64(tp[k]) / np.float64(n_pos)
            out[g] = yj + t * (yk - yj)


def roc_lift(tpr_on_grid: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """TPR / FPR on the grid without x = 0 (where it is undefined)."""
    return tpr_on_grid[..., 1:] / grid[1:]


def depth_lift(gains: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Gains / depth on the grid without depth 0: precision at depth / base rate."""
    return gains[..., 1:] / grid[1:]


if HAVE_NUMBA:

    @njit(cache=True)
    def _add_ranking_rows(S, y_indptr, y_indices, keep, kept, first, last, acc):
        """Add rows first .. last − 1 to acc (3,): one block of ``_ranking_sums``.

        Why a kernel: ranks each document's categories from one read of its score row, where scikit-learn's ranking
        metrics sort and compare whole matrices. Measured by experiments/bench_threads.py (the ``evaluate()``
        stage)."""
        K = S.shape[1]
        positive = np.zeros(K, dtype=np.bool_)
        for i in range(first, last):
            n_true = 0
            for q in range(y_indptr[i], y_indptr[i + 1]):  # canonical CSR: no repeats
                k = y_indices[q]
                if keep[k]:
                    positive[k] = True
                    n_true += 1
            if n_true == 0:
                acc[0] += 1.0  # coverage and loss 0
            else:
                lowest = np.inf
                precision = 0.0
                bad_pairs = 0
                for q in range(y_indptr[i], y_indptr[i + 1]):
                    j = y_indices[q]
                    if not positive[j]:
                        continue
                    s = S[i, j]
                    lowest = min(lowest, s)
                    rank, true_above = 0, 0
                    for l in range(K):
                        if keep[l] and S[i, l] >= s:
                            rank += 1
                            if positive[l]:
                                true_above += 1
                    precision += true_above / rank
                    bad_pairs += rank - true_above  # false labels scored ≥ s
                covered = 0
                for l in range(K):
                    if keep[l] and S[i, l] >= lowest:
                        covered += 1
                acc[0] += 1.0 if n_true == kept else precision / n_true
                acc[1] += covered
                if n_true < kept:
                    acc[2] += bad_pairs / (n_true * (kept - n_true))
            for q in range(y_indptr[i], y_indptr[i + 1]):
                positive[y_indices[q]] = False

    @njit(parallel=True, cache=True)
    def _ranking_sums(S, y_indptr, y_indices, keep, n_blocks):
        """(3,): the sums of ``_add_ranking_rows`` (LRAP, coverage, ranking loss) over ``n_blocks`` blocks of rows,
        each block on a thread into an accumulator of its own, added in block order.

        Why a kernel: blocks of rows on every thread, each into an accumulator of its own, so that the sums do not
        depend on the thread count. Measured by experiments/bench_threads.py (the ``evaluate()`` stage)."""
        n, K = S.shape
        kept = 0
        for k in range(K):
            kept += keep[k]
        acc = np.zeros((n_blocks, 3))  # Σ LRAP_i, Σ coverage_i, Σ loss_i
        step = (n + n_blocks - 1) // n_blocks
        for block in prange(n_blocks):
            _add_ranking_rows(S, y_indptr, y_indices, keep, kept, block * step, min(n, (block + 1) * step), acc[block])
        return acc.sum(axis=0)

    @njit(cache=True)
    def _ranking_sums_one_block(S, y_indptr, y_indices, keep):
        """``_ranking_sums`` with one block, without a parallel region (a small chunk of a stream).

        Why a kernel: the same sums without entering a parallel region, for a small chunk of a stream. Measured by
        experiments/bench_scale.py (the streamed evaluation)."""
        n, K = S.shape
        kept = 0
        for k in range(K):
            kept += keep[k]
        acc = np.zeros((1, 3))
        _add_ranking_rows(S, y_indptr, y_indices, keep, kept, 0, n, acc[0])
        return acc.sum(axis=0)

    @njit(cache=True, nogil=True)
    def top_k_hits(S, y_indptr, y_indices, columns, k, first, last):
        """Σ_{i = first .. last − 1} |true_i ∩ top_k(i)|: the k highest of S[i, columns] (0 < k <
        columns.size), ties to the lower index, against canonical CSR labels (no repeats, no zeros).

        One scan per row keeps the best k so far, highest first, a new value entering only when
        strictly above the k-th: an equal later value stays behind, so ties go to the lower index.
        Whole numbers: blocks of rows add up the same in any order. Lets other threads run.

        Why a kernel: one scan per row keeps the best k, where numpy's ``argpartition`` makes an index matrix for
        every block of rows. Measured by experiments/bench_threads.py (the ``evaluate()`` stage)."""
        best_value = np.empty(k, dtype=S.dtype)
        best_column = np.empty(k, dtype=np.int64)
        hits = 0
        for i in range(first, last):
            filled = 0
            for c in range(columns.size):
                value = S[i, columns[c]]
                if filled < k:
                    position = filled
                    filled += 1
                elif value > best_value[k - 1]:
                    position = k - 1  # the k-th leaves
                else:
                    continue
                while position > 0 and best_value[position - 1] < value:
                    best_value[position] = best_value[position - 1]
                    best_column[position] = best_column[position - 1]
                    position -= 1
                best_value[position] = value
                best_column[position] = columns[c]
            for q in range(y_indptr[i], y_indptr[i + 1]):
                label = y_indices[q]
                for position in range(k):
                    if best_column[position] == label:
                        hits += 1
                        break
        return hits


RANKING_BLOCK_ROWS = 256  # rows per block of the numpy path (its temporaries are b × K × K)


def _ranking_sums_numpy(Y, S, columns) -> np.ndarray:
    """The same three sums as the kernel, from b × K × K comparisons per block of rows."""
    sums = np.zeros(3)
    kept = columns.size
    for start in range(0, S.shape[0], RANKING_BLOCK_ROWS):
        stop = min(S.shape[0], start + RANKING_BLOCK_ROWS)
        y = Y[start:stop][:, columns].toarray() != 0  # (b, K)
        s = np.asarray(S[start:stop])[:, columns]  # (b, K)
        n_true = y.sum(axis=1)  # (b,)
        at_or_above = s[:, None, :] >= s[:, :, None]  # (b, j, l): s_l ≥ s_j
        rank = at_or_above.sum(axis=2)  # (b, K)
        true_above = (at_or_above & y[:, None, :]).sum(axis=2)  # (b, K)
        with np.errstate(invalid="ignore", divide="ignore"):
            lrap = np.where(y, true_above / rank, 0.0).sum(axis=1) / n_true
            loss = np.where(y, rank - true_above, 0).sum(axis=1) / (n_true * (kept - n_true))
        lowest = np.where(y, s, np.inf).min(axis=1)  # (b,)
        covered = (s >= lowest[:, None]).sum(axis=1)
        sums += [np.where((n_true == 0) | (n_true == kept), 1.0, lrap).sum(),
                 np.where(n_true > 0, covered, 0).sum(),
                 np.where((n_true == 0) | (n_true == kept), 0.0, loss).sum()]
    return sums


def label_ranking_sums(Y_true, scores, columns=None, use_numba: bool = HAVE_NUMBA) -> np.ndarray:
    """(3,) Σ_i LRAP_i, Σ_i coverage_i, Σ_i loss_i over the documents (module docstring), over the
    categories ``columns`` (None: all) of n × K scores: sums, so that chunks of documents add up."""
    S = score_array(scores, "scores", ndim=2)  # before the parallel loop: a NaN would make rank 0 there
    binary_labels(Y_true, "Y_true", shape=S.shape)
    n, K = S.shape
    keep = np.zeros(K, dtype=bool)
    keep[np.arange(K) if columns is None else np.asarray(columns, dtype=np.int64)] = True
    if n == 0 or not keep.any():
        return np.zeros(3)
    Y = sp.csr_matrix(Y_true, copy=True)  # eliminate_zeros must not touch the caller's matrix
    Y.sum_duplicates()
    Y.eliminate_zeros()
    if use_numba:
        n_blocks = max(1, min(256, n // 1024))
        if n_blocks > 1:
            return _ranking_sums(np.ascontiguousarray(S), Y.indptr, Y.indices, keep, n_blocks)
        return _ranking_sums_one_block(np.ascontiguousarray(S), Y.indptr, Y.indices, keep)
    return _ranking_sums_numpy(Y, S, np.flatnonzero(keep))


LABEL_RANKING_NAMES = ("label_ranking_average_precision", "coverage_error", "label_ranking_loss")


def label_ranking_metrics(Y_true, scores, columns=None, use_numba: bool = HAVE_NUMBA) -> dict:
    """Label ranking average precision, coverage error and ranking loss (module docstring), as
    scikit-learn computes them, over the categories ``columns`` (None: all) of n × K scores.

    Y_true : (n, K) 0/1, sparse or dense
    Returns {"label_ranking_average_precision", "coverage_error", "label_ranking_loss"}; NaN
    without documents or categories.
    """
    S = np.asarray(scores)
    n, K = S.shape
    if n == 0 or (columns is not None and np.asarray(columns).size == 0) or K == 0:
        return dict.fromkeys(LABEL_RANKING_NAMES, float("nan"))
    sums = label_ranking_sums(Y_true, S, columns, use_numba=use_numba)
    return {name: float(total / n) for name, total in zip(LABEL_RANKING_NAMES, sums)}
