r"""How sure a test set makes a metric: bootstrap intervals and DeLong intervals of AUCs.

**Bootstrap over documents.** A resample draws n documents with replacement:
for b = 0, 1, … in turn, ``idx = rng.integers(0, n, size=n)`` with
``rng = np.random.default_rng(seed)`` (``bootstrap_indices``), i.e. document i
gets the multinomial weight w_i = #{t: idx_t = i}. Each replicate is exactly
what ``evaluate`` would report on the resampled documents (same exclusions;
macro averages over the categories with a positive and a negative *in that
resample*). With weights, for each category

    AUC_w  = Σ_{i pos, j neg} w_i w_j ψ(s_i, s_j) / (W⁺ W⁻)      ψ = 1, ½, 0 for >, =, <
    tp_w = Σ w_i y_i d_i      predicted_w = Σ w_i d_i      positives_w = Σ w_i y_i
    F1_w = 2 tp_w / (predicted_w + positives_w)      precision_w = tp_w / predicted_w
    recall_w = tp_w / positives_w                    (0 where a denominator is 0)

Each category's scores are sorted once; a resample's AUC is then one pass
over that order, summing the weights of each tie group and adding
W⁺_group · (W⁻ below + ½ W⁻_group); the micro AUC does the same over the
pooled (document, category) pairs, cut into segments at tie boundaries (a
segment's area is shifted by its positives × the negatives of earlier
segments). The weighted counts are sparse products (Yᵀ W). The interval is the
percentile interval: the (1 − level)/2 and (1 + level)/2 quantiles of the
replicates (numpy's linear interpolation; NaN replicates ignored).

**DeLong intervals of one AUC** (DeLong, DeLong & Clarke-Pearson 1988): with
the structural components V10 (one per positive) and V01 (one per negative)
of ``significance``,

    var(AUC) = S10 / m + S01 / n,   S10 = var(V10; ddof 1),  S01 = var(V01; ddof 1)
    AUC ± z_{(1 + level)/2} √var,   clipped to [0, 1]

NaN without two positives and two negatives. (When the classes are perfectly
separated the variance is 0 and the interval collapses to the point.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from scipy.stats import norm

from mlnb._numba import HAVE_NUMBA, njit, prange
from mlnb.errors import MlnbError
from mlnb.metrics.classification import logit
from mlnb.metrics.evaluation import caller_exclusions
from mlnb.metrics.significance import delong_covariance

BOOTSTRAP_METRICS = ("macro_auc", "micro_auc", "macro_f1", "micro_f1", "macro_precision", "micro_precision",
                     "macro_recall", "micro_recall")
#: bound on the (n × B) weight block of resamples processed together (float64 entries)
WEIGHT_BLOCK_ENTRIES = 1 << 24
MAX_RESAMPLES_PER_BLOCK = 32


def bootstrap_indices(n: int, n_boot: int, seed: int = 0) -> Iterator[np.ndarray]:
    """The resampled document indices, one (n,) array per replicate, in order."""
    rng = np.random.default_rng(seed)
    for _ in range(n_boot):
        yield rng.integers(0, n, size=n)


if HAVE_NUMBA:

    @njit(parallel=True, cache=True)
    def _segment_sums(doc, label, new_group, starts, W):
        """(S, 3, B): per segment of sorted (ascending) items and per resample, the AUC area
        within the segment, its positive weight and its negative weight."""
        S = starts.size - 1
        B = W.shape[1]
        out = np.zeros((S, 3, B))
        for s in prange(S):
            below = np.zeros(B)  # negative weight below the current tie group
            area = np.zeros(B)
            positive = np.zeros(B)
            g_pos = np.zeros(B)
            g_neg = np.zeros(B)
            for j in range(starts[s], starts[s + 1]):
                if new_group[j] and j > starts[s]:
                    for b in range(B):
                        area[b] += g_pos[b] * (below[b] + 0.5 * g_neg[b])
                        below[b] += g_neg[b]
                        positive[b] += g_pos[b]
                        g_pos[b] = 0.0
                        g_neg[b] = 0.0
                d = doc[j]
                if label[j]:
                    for b in range(B):
                        g_pos[b] += W[d, b]
                else:
                    for b in range(B):
                        g_neg[b] += W[d, b]
            for b in range(B):
                out[s, 0, b] = area[b] + g_pos[b] * (below[b] + 0.5 * g_neg[b])
                out[s, 1, b] = positive[b] + g_pos[b]
                out[s, 2, b] = below[b] + g_neg[b]
        return out


def _segment_sums_numpy(doc, label, new_group, starts, W) -> np.ndarray:
    """The kernel's sums from group sums (np.add.reduceat) per segment."""
    out = np.zeros((starts.size - 1, 3, W.shape[1]))
    for s in range(starts.size - 1):
        a, b = starts[s], starts[s + 1]
        if a == b:
            continue
        w = W[doc[a:b]]  # (len, B)
        is_pos = label[a:b, None]
        groups = np.flatnonzero(new_group[a:b])  # starts with 0
        pos = np.add.reduceat(np.where(is_pos, w, 0.0), groups, axis=0)  # (G, B)
        neg = np.add.reduceat(np.where(is_pos, 0.0, w), groups, axis=0)
        below = np.cumsum(neg, axis=0) - neg
        out[s] = [(pos * (below + 0.5 * neg)).sum(axis=0), pos.sum(axis=0), neg.sum(axis=0)]
    return out


def _sorted_items(scores: np.ndarray, labels: np.ndarray, docs: np.ndarray):
    """(doc, label, new_group) of items sorted by ascending score; new_group marks each tie's start."""
    order = np.argsort(scores, kind="stable")
    s = scores[order]
    new_group = np.empty(s.size, dtype=bool)
    new_group[:1] = True
    np.not_equal(s[1:], s[:-1], out=new_group[1:])  # != rather than diff: inf − inf is NaN
    return docs[order], labels[order], new_group


class _AucPlan:
    """Each category's score order (segment k) and the pooled pairs' order (the segments after K),
    cut at tie boundaries into pieces the size of a category."""

    def __init__(self, Y: sp.csc_matrix, scores: np.ndarray, pooled: np.ndarray, with_micro: bool):
        n, K = scores.shape
        index = np.int32 if n < 2 ** 31 else np.int64
        docs = np.arange(n, dtype=index)
        parts = []
        for k in range(K):
            y = np.zeros(n, dtype=bool)
            y[Y.indices[Y.indptr[k]:Y.indptr[k + 1]]] = True
            parts.append(_sorted_items(np.asarray(scores[:, k]), y, docs))
        lengths = [n] * K
        self.n_micro = 0
        if with_micro and pooled.any():
            columns = np.flatnonzero(pooled)
            y = (Y[:, columns].toarray() != 0).ravel()  # row-major: pair t is document t // K'
            pair_docs = np.repeat(docs, columns.size)
            doc, label, new_group = _sorted_items(np.asarray(scores[:, columns]).ravel(), y, pair_docs)
            group_starts = np.flatnonzero(new_group)
            # about K pieces, each starting at the first tie group at or after an even cut
            nearest = np.searchsorted(group_starts, np.linspace(0, doc.size, K + 1)[:-1])
            cuts = np.unique(group_starts[np.minimum(nearest, group_starts.size - 1)])
            bounds = np.r_[cuts, doc.size]
            parts.append((doc, label, new_group))
            lengths += list(np.diff(bounds))
            self.n_micro = bounds.size - 1
        self.doc = np.concatenate([p[0] for p in parts])
        self.label = np.concatenate([p[1] for p in parts])
        self.new_group = np.concatenate([p[2] for p in parts])
        for start in np.cumsum([0] + lengths)[K:-1]:  # every micro segment starts a tie group
            self.new_group[start] = True
        self.starts = np.cumsum([0] + lengths).astype(np.int64)
        self.K = K

    def aucs(self, W: np.ndarray, use_numba: bool) -> tuple[np.ndarray, np.ndarray]:
        """((B, K) per-category AUCs, (B,) micro AUC) of the resamples weighted by W (n × B)."""
        kernel = _segment_sums if use_numba else _segment_sums_numpy
        sums = kernel(self.doc, self.label, self.new_group, self.starts, W)  # (S, 3, B)
        area, positive, negative = sums[:self.K, 0], sums[:self.K, 1], sums[:self.K, 2]  # (K, B)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_category = np.where((positive > 0) & (negative > 0), area / (positive * negative), np.nan).T
            micro = np.full(W.shape[1], np.nan)
            if self.n_micro:
                m_area, m_pos, m_neg = sums[self.K:, 0], sums[self.K:, 1], sums[self.K:, 2]  # (S', B)
                negatives_before = np.cumsum(m_neg, axis=0) - m_neg
                total = (m_area + m_pos * negatives_before).sum(axis=0)
                P, N = m_pos.sum(axis=0), m_neg.sum(axis=0)
                micro = np.where((P > 0) & (N > 0), total / (P * N), np.nan)
        return per_category, micro


def _decision_matrix(scores: np.ndarray, decisions, threshold: float) -> sp.csr_matrix:
    """The 0/1 decisions as a float CSR matrix, built in blocks of rows from dense input."""
    if sp.issparse(decisions):
        D = sp.csr_matrix(decisions, dtype=np.float64, copy=True)
        D.sum_duplicates()
        D.eliminate_zeros()
        if not np.all(D.data == 1):
            raise MlnbError("decisions must hold only 0/1 (or booleans)")
    else:
        dense = None if decisions is None else np.asarray(decisions)
        cut, step, blocks = logit(threshold), 8192, []
        for a in range(0, scores.shape[0], step):
            if dense is None:
                blocks.append(sp.csr_matrix(scores[a:a + step] >= cut, dtype=np.float64))
                continue
            part = dense[a:a + step]
            if part.dtype != bool and np.any((part != 0) & (part != 1)):
                raise MlnbError("decisions must hold only 0/1 (or booleans)")
            blocks.append(sp.csr_matrix(part != 0, dtype=np.float64))
        D = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix(scores.shape)
    if D.shape != scores.shape:
        raise MlnbError(f"decisions has shape {D.shape} but scores has shape {scores.shape}")
    return D


def bootstrap_replicates(Y_true, scores, decisions=None, threshold: float = 0.5, metrics=BOOTSTRAP_METRICS[:4],
                         n_boot: int = 200, seed: int = 0, exclude=None,
                         use_numba: bool = HAVE_NUMBA) -> dict[str, np.ndarray]:
    """{metric: (n_boot,) values}: each metric of ``evaluate`` on each resample (module docstring).

    Y_true : (n, K) 0/1, sparse or dense;  scores : (n, K) log-odds (the ranking)
    decisions : (n, K) 0/1 decisions, sparse or dense; default [scores ≥ logit(threshold)]
    metrics : any of BOOTSTRAP_METRICS
    exclude : categories left out of every average and pool, as in ``evaluate``
    """
    unknown = [m for m in metrics if m not in BOOTSTRAP_METRICS]
    if unknown:
        raise MlnbError(f"bootstrap metrics {unknown} unknown; choose from {', '.join(BOOTSTRAP_METRICS)}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise MlnbError(f"n_boot must be a positive integer, got {n_boot!r}")
    scores = np.asarray(scores)
    if scores.ndim != 2 or Y_true.shape != scores.shape:
        raise MlnbError(f"Y_true has shape {Y_true.shape} but scores has shape {scores.shape}")
    if np.isnan(scores).any():
        raise MlnbError("scores contain NaN")
    n, K = scores.shape
    pooled = np.ones(K, dtype=bool)
    pooled[list(caller_exclusions(exclude, K))] = False
    Y = sp.csc_matrix(Y_true, dtype=np.float64, copy=True)
    Y.data = (Y.data != 0).astype(np.float64)
    Y.eliminate_zeros()
    Y.sort_indices()
    wants_auc = any(m.endswith("_auc") for m in metrics)
    plan = _AucPlan(Y, scores, pooled, "micro_auc" in metrics) if wants_auc else None
    wants_counts = any(not m.endswith("_auc") for m in metrics)
    Yt = Y.T.tocsr()  # (K, n)
    if wants_counts:
        D = _decision_matrix(scores, decisions, threshold)
        Dt, Ht = D.T.tocsr(), sp.csr_matrix(D.multiply(Y)).T.tocsr()  # (K, n) each; H = hits

    values = {m: np.empty(n_boot) for m in metrics}
    block = max(1, min(MAX_RESAMPLES_PER_BLOCK, WEIGHT_BLOCK_ENTRIES // max(n, 1)))
    draws = bootstrap_indices(n, n_boot, seed)
    for first in range(0, n_boot, block):
        B = min(block, n_boot - first)
        W = np.empty((n, B))  # (n, B) multinomial weights, one column per resample
        for b in range(B):
            W[:, b] = np.bincount(next(draws), minlength=n)
        rows = slice(first, first + B)
        positives = np.asarray(Yt @ W)  # (K, B)
        evaluable = (positives > 0) & (positives < n) & pooled[:, None]  # (K, B)
        if wants_auc:
            per_category, micro = plan.aucs(W, use_numba)  # (B, K), (B,)
            if "macro_auc" in values:
                values["macro_auc"][rows] = _masked_mean(per_category.T, evaluable)
            if "micro_auc" in values:
                values["micro_auc"][rows] = micro
        if wants_counts:
            predicted, tp = np.asarray(Dt @ W), np.asarray(Ht @ W)  # (K, B)
            per_category = {"f1": _safe_ratio(2 * tp, predicted + positives),
                            "precision": _safe_ratio(tp, predicted), "recall": _safe_ratio(tp, positives)}
            TP, PRED, POS = (v[pooled].sum(axis=0) for v in (tp, predicted, positives))  # (B,)
            pooled_values = {"f1": _safe_ratio(2 * TP, PRED + POS), "precision": _safe_ratio(TP, PRED),
                             "recall": _safe_ratio(TP, POS)}
            for m in metrics:
                kind, name = m.split("_", 1)
                if name in per_category:
                    values[m][rows] = _masked_mean(per_category[name], evaluable) if kind == "macro" \
                        else pooled_values[name]
    return values


def _safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0 (``evaluate``'s convention)."""
    return np.divide(num, den, out=np.zeros(np.shape(num)), where=den > 0)


def _masked_mean(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(B,) mean over the rows of (K, B) ``values`` where ``mask``; NaN where none."""
    counts = mask.sum(axis=0)
    totals = np.where(mask, values, 0.0).sum(axis=0)
    return np.divide(totals, counts, out=np.full(counts.shape, np.nan), where=counts > 0)


def bootstrap_intervals(Y_true, scores, decisions=None, threshold: float = 0.5, metrics=BOOTSTRAP_METRICS[:4],
                        n_boot: int = 200, seed: int = 0, level: float = 0.95,
                        exclude=None) -> dict[str, tuple[float, float]]:
    """{metric: (low, high)} percentile bootstrap intervals over resampled documents.

    Arguments as ``bootstrap_replicates``; ``level`` the coverage (0.95: the 2.5 % and 97.5 %
    quantiles of the replicates).
    """
    if not 0 < level < 1:
        raise MlnbError(f"level must be in (0, 1), got {level}")
    replicates = bootstrap_replicates(Y_true, scores, decisions, threshold, metrics, n_boot, seed, exclude)
    quantiles = [50 * (1 - level), 50 * (1 + level)]
    intervals = {}
    for metric, values in replicates.items():
        if np.isnan(values).all():
            intervals[metric] = (float("nan"), float("nan"))
        else:
            low, high = np.nanpercentile(values, quantiles)
            intervals[metric] = (float(low), float(high))
    return intervals


def auc_interval(y, scores, level: float = 0.95) -> tuple[float, float]:
    """One category's DeLong (Wald) interval of its AUC, clipped to [0, 1]; NaN when undefined."""
    auc, covariance = delong_covariance(y, scores)
    half = norm.ppf(0.5 + level / 2) * np.sqrt(covariance[0, 0])
    return float(np.clip(auc[0] - half, 0, 1)), float(np.clip(auc[0] + half, 0, 1))


def auc_confidence_intervals(Y_true, scores, level: float = 0.95, n_threads: int | None = None) -> np.ndarray:
    """(K, 2) DeLong (Wald) intervals of each category's AUC, clipped to [0, 1]; NaN rows where the
    variance is undefined (fewer than two positives or two negatives)."""
    if not 0 < level < 1:
        raise MlnbError(f"level must be in (0, 1), got {level}")
    scores = np.asarray(scores)
    scores = scores.reshape(-1, 1) if scores.ndim == 1 else scores
    Y = sp.csc_matrix(Y_true if sp.issparse(Y_true) or np.ndim(Y_true) == 2 else np.reshape(Y_true, (-1, 1)))
    if Y.shape != scores.shape:
        raise MlnbError(f"Y_true has shape {Y.shape} but scores has shape {scores.shape}")
    def interval(k: int) -> tuple[float, float]:
        return auc_interval(Y[:, [k]].toarray().ravel() != 0, scores[:, k], level)

    with ThreadPoolExecutor(max_workers=n_threads or os.cpu_count() or 1) as pool:
        rows = list(pool.map(interval, range(scores.shape[1])))
    return np.array(rows, dtype=np.float64).reshape(-1, 2)
