r"""Threshold and probability sums for every category in one pass over the score matrix.

For each category k over the n documents (z = decision log-odds, ŷ = [z ≥ cut];
u = probability log-odds, the calibrated ones if given, else z; p = σ(u)):

    predicted_k = Σ ŷ            tp_k = Σ ŷ·y            positives_k = Σ y
    expected_k  = Σ [y·p + (1 − y)(1 − p)]
    log_loss_k  = Σ [y·softplus(−u) + (1 − y)·softplus(u)]
    brier_k     = Σ (p − y)²

and, pooled over all pairs, the reliability bins of p (count, Σp, Σy). The
numba kernel reads the (n × K) scores once, row by row, in parallel over
blocks of rows, marking each document's few labels (Y is sparse) before
its row; one exponential per pair, e = e^(−|u|), gives both p (1/(1 + e) or
e/(1 + e)) and softplus(±u) = max(±u, 0) + log1p(e). exp and log1p are
``_float64_math``'s (within 1 and 2.2 ulps), computed for a whole row in vector
lanes before the row is added up, not the C library's call per pair (measured by
experiments/bench_threads.py, the ``evaluate()`` stage). Sums are float64. Without numba, the same sums
come from the matrix functions of ``mlnb.metrics.classification`` (which the tests
check against scikit-learn).

``decision_counts`` gives predicted_k and tp_k of a decision matrix made
elsewhere (sparse or dense 0/1), from sparse products or blocks of rows, so
that an 800k × 103 decision matrix is never copied whole.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from mlnb._kernels.jit import HAVE_NUMBA, njit, prange
from mlnb.errors import MlnbError
from mlnb.metrics._inputs import score_array
from mlnb.metrics.classification import brier_score, confusion_counts, expected_accuracy, log_loss_from_scores

FIELDS = ("predicted", "tp", "positives", "expected", "log_loss", "brier")

if HAVE_NUMBA:
    from mlnb.metrics._float64_math import exp_nonpositive, log1p_unit

    @njit(cache=True, error_model="numpy")
    def _add_rows(S, U, y_indptr, y_indices, cut, first, last, a, r):
        """Add rows first .. last − 1 to a (6, K) and r (3, bins): one block of ``_sums``.

        Why a kernel: one read of each score row gives all six sums and the reliability bins, the functions in
        vector lanes, where numpy makes a pass and a temporary for each sum. Measured by
        experiments/bench_threads.py (the ``evaluate()`` stage)."""
        K = S.shape[1]
        bins = r.shape[1]
        positive = np.zeros(K, dtype=np.bool_)  # this row's labels (Y is sparse)
        p_row, shared_row = np.empty(K), np.empty(K)
        for i in range(first, last):
            for q in range(y_indptr[i], y_indptr[i + 1]):
                positive[y_indices[q]] = True
            # the functions, in vector lanes (a loop with no call and no branch: a loop that also
            # adds to the sums below did not vectorise; experiments/bench_threads.py)
            for k in range(K):
                z = np.float64(U[i, k])  # U is S itself unless calibrated log-odds are given
                e = exp_nonpositive(-abs(z))  # one exponential for σ and both softplus terms
                p_row[k] = 1.0 / (1.0 + e) if z >= 0.0 else e / (1.0 + e)
                shared_row[k] = log1p_unit(e)  # softplus(±z) = max(±z, 0) + log1p(e^(−|z|))
            for k in range(K):
                predicted = 1.0 if np.float64(S[i, k]) >= cut else 0.0
                z = np.float64(U[i, k])
                p = p_row[k]
                b = min(int(p * bins), bins - 1) if p >= 0.0 else 0  # in range even for a NaN (refused before)
                a[0, k] += predicted
                r[0, b] += 1.0
                r[1, b] += p
                if positive[k]:
                    a[1, k] += predicted
                    a[2, k] += 1.0
                    a[3, k] += p
                    a[4, k] += max(-z, 0.0) + shared_row[k]
                    a[5, k] += (1.0 - p) * (1.0 - p)
                    r[2, b] += 1.0
                else:
                    a[3, k] += 1.0 - p
                    a[4, k] += max(z, 0.0) + shared_row[k]
                    a[5, k] += p * p
            for q in range(y_indptr[i], y_indptr[i + 1]):
                positive[y_indices[q]] = False

    @njit(parallel=True, cache=True)
    def _sums(S, U, y_indptr, y_indices, cut, bins, n_blocks):
        """(a (6, K), r (3, bins)): the sums of ``_add_rows`` over ``n_blocks`` blocks of rows, each block on a
        thread into accumulators of its own, added in block order.

        Why a kernel: blocks of rows on every thread, each into accumulators of its own, so that the sums do not
        depend on the thread count. Measured by experiments/bench_threads.py (the ``evaluate()`` stage)."""
        n, K = S.shape
        acc = np.zeros((n_blocks, 6, K))
        rel = np.zeros((n_blocks, 3, bins))
        step = (n + n_blocks - 1) // n_blocks
        for block in prange(n_blocks):
            _add_rows(S, U, y_indptr, y_indices, cut, block * step, min(n, (block + 1) * step), acc[block], rel[block])
        return acc.sum(axis=0), rel.sum(axis=0)

    @njit(cache=True)
    def _sums_one_block(S, U, y_indptr, y_indices, cut, bins):
        """``_sums`` with n_blocks = 1, without a parallel region (entering one costs more than
        a small chunk of a stream); the same additions in the same order.

        Why a kernel: the same additions for a small chunk of a stream, without entering a parallel region. Measured
        by experiments/bench_scale.py (the streamed evaluation)."""
        n, K = S.shape
        acc = np.zeros((1, 6, K))
        rel = np.zeros((1, 3, bins))
        _add_rows(S, U, y_indptr, y_indices, cut, 0, n, acc[0], rel[0])
        return acc.sum(axis=0), rel.sum(axis=0)

    @njit(parallel=True, cache=True)
    def _finite_range(S, keep, n_blocks):
        """(2,) lowest and highest finite S[i, k] over the columns where ``keep``, blocks of rows on
        every thread; min and max are exact in any order.

        Why a kernel: the kept columns' finite extremes in one pass on every thread, where numpy would copy the
        columns and mask the infinities first. Measured by experiments/bench_scale.py (the streamed evaluation)."""
        n, K = S.shape
        low = np.full(n_blocks, np.inf)
        high = np.full(n_blocks, -np.inf)
        step = (n + n_blocks - 1) // n_blocks
        for block in prange(n_blocks):
            lo, hi = np.inf, -np.inf
            for i in range(block * step, min(n, (block + 1) * step)):
                for k in range(K):
                    v = np.float64(S[i, k])
                    if keep[k] and np.isfinite(v):
                        lo = min(lo, v)
                        hi = max(hi, v)
            low[block], high[block] = lo, hi
        return np.array([low.min(), high.max()])


def pointwise_sums(Y_true, scores: np.ndarray, cut: float, bins: int, use_numba: bool = HAVE_NUMBA,
                   probability_scores: np.ndarray | None = None):
    """({field: (K,) sums}, (3, bins) reliability sums) for decision scores (n × K).

    probability_scores : (n × K) log-odds for the probability sums and bins (default: ``scores``)
    """
    # checked before the parallel loop (the callers have: one pass that finds nothing)
    scores = score_array(scores, "scores", ndim=2)
    if probability_scores is not None:
        probability_scores = score_array(probability_scores, "probability_scores", shape=scores.shape)
    n, K = scores.shape
    Y = sp.csr_matrix(Y_true, copy=True)  # eliminate_zeros must not touch the caller's matrix
    Y.eliminate_zeros()
    if use_numba:
        S = np.ascontiguousarray(scores)
        U = S if probability_scores is None else np.ascontiguousarray(probability_scores)
        n_blocks = max(1, min(256, n // 1024))
        if n_blocks > 1:
            sums, reliability = _sums(S, U, Y.indptr, Y.indices, float(cut), bins, n_blocks)
        else:
            sums, reliability = _sums_one_block(S, U, Y.indptr, Y.indices, float(cut), bins)
        return dict(zip(FIELDS, sums)), reliability
    # the numpy path: the same sums from the per-matrix functions of ``classification``
    dense = Y.toarray().astype(bool)
    z = np.asarray(scores, dtype=np.float64)
    u = z if probability_scores is None else np.asarray(probability_scores, dtype=np.float64)
    p = expit(u)
    counts = confusion_counts(dense, z, threshold=float(expit(cut)))
    sums = {"predicted": counts.tp + counts.fp, "tp": counts.tp, "positives": dense.sum(axis=0),
            "expected": expected_accuracy(dense, p) * n, "log_loss": log_loss_from_scores(dense, u) * n,
            "brier": brier_score(dense, p) * n}
    b = np.minimum((p * bins).astype(np.int64), bins - 1).ravel()
    reliability = np.vstack([np.bincount(b, minlength=bins), np.bincount(b, weights=p.ravel(), minlength=bins),
                             np.bincount(b[dense.ravel()], minlength=bins)])
    return {f: np.asarray(sums[f], dtype=np.float64) for f in FIELDS}, reliability


def finite_range(scores: np.ndarray, columns=None) -> tuple[float, float]:
    """(lowest, highest) finite score of the columns ``columns`` (None: all) of n × K scores;
    (inf, −inf) where none is finite. Without numba: numpy's, on the finite values."""
    S = np.asarray(scores)
    n, K = S.shape
    keep = np.ones(K, dtype=bool) if columns is None else np.isin(np.arange(K), columns)
    if n == 0 or not keep.any():
        return np.inf, -np.inf
    if HAVE_NUMBA and S.dtype in (np.float32, np.float64) and S.dtype.isnative:
        low, high = _finite_range(np.ascontiguousarray(S), keep, max(1, min(256, n // 1024)))
        return float(low), float(high)
    finite = (S if columns is None else S[:, keep]).astype(np.float64)
    finite = finite[np.isfinite(finite)]
    return (float(finite.min()), float(finite.max())) if finite.size else (np.inf, -np.inf)


DECISION_BLOCK_ROWS = 8192  # rows per block of a dense decision matrix (bounds the temporaries)


def decision_counts(Y_true, decisions) -> tuple[np.ndarray, np.ndarray]:
    """(predicted (K,), tp (K,)) int64 of a 0/1 decision matrix (n × K, sparse or dense) against Y.

    Sparse decisions: column counts of D and of D ∘ Y. Dense: counted in blocks of rows, and tp_k
    read off D at Y's nonzeros only (Y is sparse), so no n × K boolean copy is made.
    """
    Y = sp.csr_matrix(Y_true, copy=True)
    Y.sum_duplicates()
    Y.eliminate_zeros()
    n, K = Y.shape
    decisions = decisions if sp.issparse(decisions) else np.asarray(decisions)
    if decisions.shape != (n, K):
        raise MlnbError(f"decisions has shape {decisions.shape} but Y_true has shape {(n, K)}")
    if sp.issparse(decisions):
        D = sp.csr_matrix(decisions, copy=True)
        D.sum_duplicates()
        D.eliminate_zeros()
        if not np.all(D.data == 1):
            raise MlnbError("decisions must hold only 0/1 (or booleans)")
        hits = D.multiply(Y).tocsr()  # nonzero where both are
        hits.eliminate_zeros()
        return (np.bincount(D.indices, minlength=K).astype(np.int64),
                np.bincount(hits.indices, minlength=K).astype(np.int64))
    D = decisions
    predicted = np.zeros(K, dtype=np.int64)
    for start in range(0, n, DECISION_BLOCK_ROWS):
        block = D[start:start + DECISION_BLOCK_ROWS]  # a view
        if block.dtype != bool and np.any((block != 0) & (block != 1)):
            raise MlnbError("decisions must hold only 0/1 (or booleans)")
        predicted += np.count_nonzero(block, axis=0)
    rows = np.repeat(np.arange(n), np.diff(Y.indptr))  # (nnz,) row of each label
    tp = np.bincount(Y.indices, weights=D[rows, Y.indices] != 0, minlength=K)
    return predicted, tp.astype(np.int64)
