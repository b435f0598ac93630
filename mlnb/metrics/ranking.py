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

Scores should be log-odds or decision values: sigmoid probabilities saturate
to exactly 0 or 1 and create ties that destroy the ranking.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
