r"""Threshold and probability sums for every category in one pass over the score matrix.

For each category k over the n documents (z = log-odds, p = σ(z), ŷ = [z ≥ cut]):

    predicted_k = Σ ŷ            tp_k = Σ ŷ·y            positives_k = Σ y
    expected_k  = Σ [y·p + (1 − y)(1 − p)]
    log_loss_k  = Σ [y·softplus(−z) + (1 − y)·softplus(z)]
    brier_k     = Σ (p − y)²

and, pooled over all pairs, the reliability bins of p (count, Σp, Σy). The
numba kernel reads the (n × K) scores once, row by row, in parallel over
blocks of rows: every pair is first counted as a negative, then each
document's few labels are corrected to positives (Y is sparse). Sums are
float64. Without numba, the same sums come from numpy one category at a time.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from mlnb._numba import HAVE_NUMBA, njit, prange

FIELDS = ("predicted", "tp", "positives", "expected", "log_loss", "brier")

if HAVE_NUMBA:

    @njit(cache=True, fastmath=False)
    def _softplus(x):
        return max(x, 0.0) + np.log1p(np.exp(-abs(x)))

    @njit(parallel=True, cache=True)
    def _sums(S, y_indptr, y_indices, cut, bins, n_blocks):
        n, K = S.shape
        acc = np.zeros((n_blocks, 6, K))
        rel = np.zeros((n_blocks, 3, bins))
        step = (n + n_blocks - 1) // n_blocks
        for block in prange(n_blocks):
            a = acc[block]
            r = rel[block]
            for i in range(block * step, min(n, (block + 1) * step)):
                for k in range(K):
                    z = np.float64(S[i, k])
                    p = 1.0 / (1.0 + np.exp(-z))
                    if z >= cut:
                        a[0, k] += 1.0
                    a[3, k] += 1.0 - p
                    a[4, k] += _softplus(z)
                    a[5, k] += p * p
                    b = min(int(p * bins), bins - 1)
                    r[0, b] += 1.0
                    r[1, b] += p
                for q in range(y_indptr[i], y_indptr[i + 1]):  # the labels: negative -> positive
                    k = y_indices[q]
                    z = np.float64(S[i, k])
                    p = 1.0 / (1.0 + np.exp(-z))
                    if z >= cut:
                        a[1, k] += 1.0
                    a[2, k] += 1.0
                    a[3, k] += p - (1.0 - p)
                    a[4, k] += _softplus(-z) - _softplus(z)
                    a[5, k] += (1.0 - p) * (1.0 - p) - p * p
                    r[2, min(int(p * bins), bins - 1)] += 1.0
        return acc.sum(axis=0), rel.sum(axis=0)


def pointwise_sums(Y_true, scores: np.ndarray, cut: float, bins: int) -> tuple[dict, np.ndarray]:
    """({field: (K,) sums}, (3, bins) reliability sums) for decision scores (n × K)."""
    n, K = scores.shape
    Y = sp.csr_matrix(Y_true)
    Y.eliminate_zeros()
    if HAVE_NUMBA:
        sums, reliability = _sums(np.ascontiguousarray(scores), Y.indptr, Y.indices, float(cut), bins,
                                  max(1, min(256, n // 1024)))
        return dict(zip(FIELDS, sums)), reliability
    Yc = sp.csc_matrix(Y)  # pragma: no cover - the numpy path, one category at a time
    sums = {f: np.zeros(K) for f in FIELDS}
    reliability = np.zeros((3, bins))
    for k in range(K):
        y = np.zeros(n, dtype=bool)
        y[Yc.indices[Yc.indptr[k]:Yc.indptr[k + 1]]] = True
        z = scores[:, k].astype(np.float64)
        p = expit(z)
        predicted = z >= cut
        sums["predicted"][k], sums["tp"][k], sums["positives"][k] = predicted.sum(), (predicted & y).sum(), y.sum()
        sums["expected"][k] = np.where(y, p, 1 - p).sum()
        sums["log_loss"][k] = np.where(y, np.logaddexp(0, -z), np.logaddexp(0, z)).sum()
        sums["brier"][k] = ((p - y) ** 2).sum()
        b = np.minimum((p * bins).astype(np.int64), bins - 1)
        reliability += [np.bincount(b, minlength=bins), np.bincount(b, weights=p, minlength=bins),
                        np.bincount(b[y], minlength=bins)]
    return sums, reliability
