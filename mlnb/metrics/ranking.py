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
  entering together.

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

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from mlnb._numba import HAVE_NUMBA, njit, prange


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

    Sorting values is several times faster than ``argsort``, so: sort all
    scores (descending) to find the distinct thresholds and how many documents
    score ≥ each, sort the positives' scores alone, and count the positives
    ≥ each threshold by binary search; the negatives are the rest.
    """
    y = np.asarray(y_true).ravel().astype(bool)
    s = np.asarray(scores).ravel()
    if y.shape != s.shape:
        raise ValueError(f"y_true has {y.size} values but scores has {s.size}")
    if np.isnan(s).any():
        raise ValueError("scores contain NaN")
    s_sorted = np.sort(s)[::-1]  # descending
    positives = np.sort(s[y])
    # != rather than diff: inf − inf is NaN, which would split a tie of infinities
    last_of_tie = np.flatnonzero(s_sorted[1:] != s_sorted[:-1])
    ends = np.r_[last_of_tie, s.size - 1] if s.size else last_of_tie
    thresholds = s_sorted[ends]
    at_or_above = ends + 1  # documents scored >= each threshold
    tp = positives.size - np.searchsorted(positives, thresholds, side="left")
    return RankCurve(thresholds=np.r_[np.inf, thresholds], tp=np.r_[0, tp].astype(np.int64),
                     fp=np.r_[0, at_or_above - tp].astype(np.int64),
                     n_pos=int(positives.size), n_neg=int(y.size - positives.size))


def auc_from_curve(curve: RankCurve) -> float:
    """Trapezoid area under the exact ROC; NaN without positives or negatives."""
    if not curve.defined:
        return float("nan")
    area = np.sum(np.diff(curve.fp) * (curve.tp[1:] + curve.tp[:-1])) / 2.0
    return float(area / (curve.n_pos * curve.n_neg))


def average_precision_from_curve(curve: RankCurve) -> float:
    """Σ_j ΔTP_j / P · precision_j (sklearn's ``average_precision_score``); NaN without positives."""
    if curve.n_pos == 0:
        return float("nan")
    tp, accepted = curve.tp[1:], (curve.tp + curve.fp)[1:]  # accepted ≥ 1 after the first point
    return float(np.sum(np.diff(curve.tp) * (tp / accepted)) / curve.n_pos)


def roc_auc(y_true, scores) -> float:
    """Exact ROC AUC of one category (ties count ½)."""
    return auc_from_curve(rank_curve(y_true, scores))


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
    return _piecewise_linear_upper(curve.fpr, curve.tpr, grid)


def gains_on_grid(curve: RankCurve, grid: np.ndarray) -> np.ndarray:
    """Share of positives captured in the top ``grid`` fraction of documents."""
    if curve.n_pos == 0:
        return np.full(grid.shape, np.nan)
    return _piecewise_linear_upper(curve.depth, curve.tpr, grid)


def roc_lift(tpr_on_grid: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """TPR / FPR on the grid without x = 0 (where it is undefined)."""
    return tpr_on_grid[..., 1:] / grid[1:]


def depth_lift(gains: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Gains / depth on the grid without depth 0: precision at depth / base rate."""
    return gains[..., 1:] / grid[1:]


if HAVE_NUMBA:

    @njit(parallel=True, cache=True)
    def _ranking_sums(S, y_indptr, y_indices, keep, n_blocks):
        n, K = S.shape
        kept = 0
        for k in range(K):
            kept += keep[k]
        acc = np.zeros((n_blocks, 3))  # Σ LRAP_i, Σ coverage_i, Σ loss_i
        step = (n + n_blocks - 1) // n_blocks
        for block in prange(n_blocks):
            positive = np.zeros(K, dtype=np.bool_)
            for i in range(block * step, min(n, (block + 1) * step)):
                n_true = 0
                for q in range(y_indptr[i], y_indptr[i + 1]):  # canonical CSR: no repeats
                    k = y_indices[q]
                    if keep[k]:
                        positive[k] = True
                        n_true += 1
                if n_true == 0:
                    acc[block, 0] += 1.0  # coverage and loss 0
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
                    acc[block, 0] += 1.0 if n_true == kept else precision / n_true
                    acc[block, 1] += covered
                    if n_true < kept:
                        acc[block, 2] += bad_pairs / (n_true * (kept - n_true))
                for q in range(y_indptr[i], y_indptr[i + 1]):
                    positive[y_indices[q]] = False
        return acc.sum(axis=0)


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


def label_ranking_metrics(Y_true, scores, columns=None, use_numba: bool = HAVE_NUMBA) -> dict:
    """Label ranking average precision, coverage error and ranking loss (module docstring), as
    scikit-learn computes them, over the categories ``columns`` (None: all) of n × K scores.

    Y_true : (n, K) 0/1, sparse or dense
    Returns {"label_ranking_average_precision", "coverage_error", "label_ranking_loss"}; NaN
    without documents or categories.
    """
    S = np.asarray(scores)
    n, K = S.shape
    keep = np.zeros(K, dtype=bool)
    keep[np.arange(K) if columns is None else np.asarray(columns, dtype=np.int64)] = True
    names = ("label_ranking_average_precision", "coverage_error", "label_ranking_loss")
    if n == 0 or not keep.any():
        return dict.fromkeys(names, float("nan"))
    Y = sp.csr_matrix(Y_true, copy=True)  # eliminate_zeros must not touch the caller's matrix
    Y.sum_duplicates()
    Y.eliminate_zeros()
    if use_numba:
        sums = _ranking_sums(np.ascontiguousarray(S), Y.indptr, Y.indices, keep,
                             max(1, min(256, n // 1024)))
    else:
        sums = _ranking_sums_numpy(Y, S, np.flatnonzero(keep))
    return {name: float(total / n) for name, total in zip(names, sums)}
