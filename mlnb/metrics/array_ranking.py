r"""Per-category AUC, ROC on a grid and lift on a device, from one sort of every score at once.

Each score z_ik (float32) becomes an unsigned key that sorts like the pair (category k, z):

    key_ik = k·2³² + u(z_ik),   u(z) = bits(z) with the sign bit set (z ≥ 0), or ~bits(z) (z < 0)

(−0 is made +0 first, so the two zeros tie, as ``==`` has them), and ONE sort of the n·K keys
orders every category's scores at once. With lt(x) and le(x) the numbers of the category's
scores < x and ≤ x (two binary searches in the sorted keys), each positive's midrank is
(lt + le + 1)/2, and the Mann–Whitney count with ties ½, doubled, is an integer:

    2U_k = Σ_{positives x of k} (lt(x) + le(x) + 1) − P_k(P_k + 1),    AUC_k = 2U_k / (2·P_k·N_k)

summed in int64 and divided once in float64: the very number ``mlnb.metrics.ranking`` gives (its
kernel sums the same 2U exactly and divides the same way), NaN without a positive or a negative.

The ROC of category k has a point at each distinct score v, (FP(v), TP(v)) = the negatives and
positives scored ≥ v, read off the sorted order as the counts at the start of each run of equal
keys; on the grid (``roc_on_grid``) TPR is read off the segments between those points exactly as
``ranking._piecewise_linear_upper`` reads it (the top of a vertical segment), and the lift is
TPR(x)/x without x = 0.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mlnb.models.array.device import ArrayNamespace
from mlnb.errors import MlnbError

_SIGN = np.uint32(0x80000000)


def sort_keys(ns: ArrayNamespace, S):
    """(n·K,) uint64 keys of S (n × K float32, device), category-major: key = k·2³² + u(z)."""
    xp = ns.xp
    if S.dtype != np.float32:
        raise MlnbError(f"the array code ranks float32 scores (its own), got {S.dtype}")
    n, K = S.shape
    Z = xp.ascontiguousarray(S.T) + np.float32(0.0)  # (K, n); −0 + 0 = +0: the two zeros tie
    bits = Z.view(np.uint32)
    ordered = xp.where((bits & _SIGN) != 0, ~bits, bits | _SIGN).astype(np.uint64)  # u(z): sorts as z does
    column = xp.arange(K, dtype=np.uint64)[:, None] << np.uint64(32)
    return (ordered | column).ravel()


def _positives(ns: ArrayNamespace, Y, n: int, K: int):
    """(indptr (K + 1,) host, flat category-major positions k·n + i of the positives (device))."""
    Y = sp.csc_matrix(Y)
    Y.eliminate_zeros()
    Y.sort_indices()
    indptr = Y.indptr.astype(np.int64)
    column = np.repeat(np.arange(K, dtype=np.int64), np.diff(indptr))
    return indptr, ns.asarray(column * n + Y.indices.astype(np.int64))


def auc_per_category(ns: ArrayNamespace, Y, S) -> np.ndarray:
    """(K,) exact AUC of each column of S (n × K float32, device) against Y (n × K 0/1, host sparse or
    dense), ties ½; NaN where a column has no positive or no negative."""
    xp = ns.xp
    n, K = S.shape
    keys = sort_keys(ns, S)
    ordered = xp.sort(keys)
    indptr, flat = _positives(ns, Y, n, K)
    positive_keys = keys[flat]  # (ΣP,) the positives' keys, category by category
    start = (flat // n) * n  # where each positive's category begins in the sorted keys
    ranks = (xp.searchsorted(ordered, positive_keys, side="left") - start
             + xp.searchsorted(ordered, positive_keys, side="right") - start + 1)  # lt + le + 1, int64
    cumulative = np.concatenate([[0], ns.to_host(xp.cumsum(ranks.astype(np.int64)))]).astype(np.int64)
    sums = cumulative[indptr[1:]] - cumulative[indptr[:-1]]  # (K,) Σ_pos (lt + le + 1)
    P = np.diff(indptr)
    N = n - P
    twice_u = sums - P * (P + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = twice_u / (2.0 * P * N)
    auc[(P == 0) | (N == 0)] = np.nan
    return auc


def rank_points(ns: ArrayNamespace, Y, S):
    """Every category's ROC points at once: (fp, tp, category) device int64 arrays, one entry per
    distinct score of a category (its negatives and positives scored ≥ it), highest score first within
    each category; and P, N (K,) host."""
    xp = ns.xp
    n, K = S.shape
    keys = sort_keys(ns, S)
    order = xp.argsort(keys)
    ordered = keys[order]
    indptr, flat = _positives(ns, Y, n, K)
    label = xp.zeros(n * K, dtype=np.int64)
    label[flat] = 1
    label = label[order]  # in sorted order
    below = xp.cumsum(label) - label  # positives before each place (exclusive), over every category
    place = xp.arange(n * K, dtype=np.int64)
    category = place // n
    first = place % n == 0
    start_of_run = first.copy()
    start_of_run[1:] |= ordered[1:] != ordered[:-1]
    begins = xp.nonzero(start_of_run)[0]  # ascending: the lowest distinct score first
    P = np.diff(indptr)
    N = n - P
    column_start_below = below[category * n]  # positives before the category's first place
    k = category[begins]
    pos_below = below[begins] - column_start_below[begins]  # positives scored < v
    neg_below = (begins - k * n) - pos_below
    tp = ns.asarray(P)[k] - pos_below
    fp = ns.asarray(N)[k] - neg_below
    # highest score first within each category: run j of category c (ascending) goes to place
    # bounds[c] + bounds[c + 1] − 1 − j
    counts = np.bincount(ns.to_host(k), minlength=K)
    bounds = ns.asarray(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))
    where = bounds[k] + bounds[k + 1] - 1 - xp.arange(begins.size, dtype=np.int64)
    out_fp, out_tp, out_k = xp.empty_like(fp), xp.empty_like(tp), xp.empty_like(k)
    out_fp[where], out_tp[where], out_k[where] = fp, tp, k
    return out_fp, out_tp, out_k, P, N


def roc_on_grid(ns: ArrayNamespace, Y, S, grid: np.ndarray) -> np.ndarray:
    """(K, G) TPR at each FPR of ``grid`` (``ranking.roc_on_grid`` for every category); NaN rows where a
    category has no positive or no negative."""
    xp = ns.xp
    fp, tp, k, P, N = rank_points(ns, Y, S)
    K = S.shape[1]
    counts = np.bincount(ns.to_host(k), minlength=K)
    bounds = np.concatenate([[0], np.cumsum(counts)])
    at = ns.asarray(np.asarray(grid, dtype=np.float64))
    out = np.full((K, grid.size), np.nan)
    for c in range(K):
        if P[c] == 0 or N[c] == 0:
            continue
        lo, hi = bounds[c], bounds[c + 1]
        zero = xp.zeros(1, dtype=np.int64)  # the point before any document is accepted
        x = xp.concatenate([zero, fp[lo:hi]]) / N[c]
        y = xp.concatenate([zero, tp[lo:hi]]) / P[c]
        out[c] = ns.to_host(_piecewise_linear_upper(xp, x, y, at))
    return out


def _piecewise_linear_upper(xp, x, y, at):
    """``ranking._piecewise_linear_upper``: y along the polyline through (x, y) at ``at``, the top of a
    vertical segment."""
    right = xp.searchsorted(x, at, side="right")
    j = xp.clip(right - 1, 0, x.size - 1)
    k = xp.clip(right, 0, x.size - 1)
    dx = x[k] - x[j]
    safe = xp.where(dx > 0, dx, 1.0)
    t = xp.where(dx > 0, (at - x[j]) / safe, 0.0)
    return y[j] + t * (y[k] - y[j])


def roc_lift(tpr_on_grid: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """TPR / FPR on the grid without x = 0 (``ranking.roc_lift``)."""
    return tpr_on_grid[..., 1:] / grid[1:]
