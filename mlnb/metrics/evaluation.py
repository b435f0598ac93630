"""One model's scores against the truth: every metric for every category.

``evaluate`` is the single entry point the study uses. It works one category
at a time for the rank metrics — one sort of that category's scores gives its
exact ROC, AUC, ROC and gains grids — on every core, while the threshold and
probability metrics come from one pass over the score matrix
(``_pointwise``); the only full-size arrays are the inputs.

Macro averages are taken over the *evaluable* categories only, those with at
least one positive and one negative test document (AUC is undefined
elsewhere); the others are listed in ``Evaluation.excluded`` and counted in
the summary. Micro averages pool every (document, category) pair.

``precision_at_k`` is example-based: the mean over documents of the share of
their k highest-scored categories that are true labels,

    P@k = (1/n) Σ_i |true_i ∩ top_k(i)| / k

with ties among scores broken by category index (the lower index first), and
the division by k even where a document has fewer than k labels (or K < k).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from mlnb import progress
from mlnb.errors import MlnbError
from mlnb.metrics._pointwise import pointwise_sums
from mlnb.metrics.classification import logit
from mlnb.metrics.ranking import (auc_from_curve, depth_lift, fpr_grid, gains_on_grid,
                                  rank_curve, roc_lift, roc_on_grid)

CALIBRATION_BINS = 10
#: metrics where a smaller value is better (everything else: larger is better)
LOWER_IS_BETTER = ("log_loss", "brier", "mean_log_loss", "mean_brier")
PER_CATEGORY_COLUMNS = ["category", "name", "n_pos", "n_neg", "prevalence", "auc",
                        "expected_accuracy", "accuracy", "precision", "recall", "f1",
                        "log_loss", "brier", "tp", "fp", "fn", "tn"]


@dataclass
class Evaluation:
    """Metrics of one model on one test set.

    per_category : DataFrame, one row per category (columns PER_CATEGORY_COLUMNS)
    summary      : micro and macro averages (dict of floats and counts)
    grid         : x values of the curve grids (FPR for ROC, depth for gains)
    roc_tpr      : (K, G) TPR at each grid FPR (NaN rows for excluded categories)
    gains        : (K, G) share of positives in the top ``grid`` fraction
    curves       : exact rank curves, by category index, of the categories asked for
    excluded     : indices of categories without positives or negatives in the test set
    calibration  : reliability table over all (document, category) pairs: for each bin of
                   predicted probability, its count, mean prediction and observed positive rate
    """

    per_category: pd.DataFrame
    summary: dict
    grid: np.ndarray
    roc_tpr: np.ndarray
    gains: np.ndarray
    curves: dict
    excluded: np.ndarray
    calibration: pd.DataFrame

    @property
    def roc_lift(self) -> np.ndarray:
        return roc_lift(self.roc_tpr, self.grid)

    @property
    def depth_lift(self) -> np.ndarray:
        return depth_lift(self.gains, self.grid)


def _label_columns(Y_true, n: int, K: int):
    """A function k -> boolean column k of Y, from sparse or dense input, without densifying Y."""
    if sp.issparse(Y_true):
        Y = sp.csc_matrix(Y_true, copy=True)  # eliminate_zeros must not touch the caller's matrix
        Y.eliminate_zeros()

        def column(k: int) -> np.ndarray:
            y = np.zeros(n, dtype=bool)
            y[Y.indices[Y.indptr[k]:Y.indptr[k + 1]]] = True
            return y
        return column
    Y = np.asarray(Y_true)
    return lambda k: Y[:, k].astype(bool)


def _rank_part(y: np.ndarray, z: np.ndarray, grid: np.ndarray, keep_curve: bool):
    """AUC, ROC and gains on the grid from one sort of a category's scores."""
    curve = rank_curve(y, z)
    # a curve holds ~n points: keep only the few asked for, or K of them would rival the scores
    return auc_from_curve(curve), roc_on_grid(curve, grid), gains_on_grid(curve, grid), \
        curve if keep_curve else None


def micro_auc(Y_true, scores: np.ndarray) -> float:
    """AUC over all (document, category) pairs pooled, with one sort of the negatives:
    each positive counts the negatives scored below it, plus ½ per tie."""
    Y = (Y_true.toarray() if sp.issparse(Y_true) else np.asarray(Y_true)).astype(bool)
    negatives = scores[~Y]  # a copy, sorted in place below
    positives = scores[Y]
    if positives.size == 0 or negatives.size == 0:
        return float("nan")
    negatives.sort()
    below = np.searchsorted(negatives, positives, side="left").sum(dtype=np.float64)
    not_above = np.searchsorted(negatives, positives, side="right").sum(dtype=np.float64)
    return float((below + not_above) / 2.0 / (positives.size * negatives.size))


PRECISION_BLOCK_ROWS = 8192  # rows per block of precision_at_k (bounds its temporaries)


def precision_at_k(Y_true, scores: np.ndarray, k: int) -> float:
    """Mean over documents of (true labels among the k highest scores) / k, ties to the lower index."""
    n, K = scores.shape
    if n == 0:
        return float("nan")
    Y = sp.csr_matrix(Y_true) if sp.issparse(Y_true) else np.asarray(Y_true)
    hits = 0
    for start in range(0, n, PRECISION_BLOCK_ROWS):
        stop = min(n, start + PRECISION_BLOCK_ROWS)
        y = (Y[start:stop].toarray() if sp.issparse(Y) else Y[start:stop]) != 0  # (b, K)
        if k >= K:
            hits += np.count_nonzero(y)
            continue
        s = np.asarray(scores[start:stop])  # (b, K)
        kth = np.partition(s, K - k, axis=1)[:, K - k][:, None]  # (b, 1) k-th highest score
        above, tied = s > kth, s == kth
        room = k - np.count_nonzero(above, axis=1)  # (b,) ≥ 1 places left for the tied ones
        top = above | (tied & (np.cumsum(tied, axis=1) <= room[:, None]))  # first tied by index
        hits += np.count_nonzero(top & y)
    return float(hits / (n * k))


def evaluate(Y_true, scores: np.ndarray, category_names=None, threshold: float = 0.5,
             roc_points: int = 101, curve_categories=None, top_k: int = 2,
             n_threads: int | None = None) -> Evaluation:
    """All metrics of decision ``scores`` (n × K log-odds) against ``Y_true`` (n × K, 0/1).

    curve_categories : category indices whose exact ROC curves to keep (None: all)
    top_k : k of the summary's ``precision_at_k``
    n_threads : categories evaluated in parallel (default: every core)
    """
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise MlnbError(f"top_k must be a positive integer, got {top_k!r}")
    scores = np.asarray(scores)
    if np.isnan(scores).any():
        raise ValueError("scores contain NaN")
    if Y_true.shape != scores.shape:
        raise ValueError(f"Y_true has shape {Y_true.shape} but scores has shape {scores.shape}")
    n, K = scores.shape
    names = list(category_names) if category_names is not None else [str(k) for k in range(K)]
    keep = set(range(K)) if curve_categories is None else set(curve_categories)
    column = _label_columns(Y_true, n, K)
    cut, grid = logit(threshold), fpr_grid(roc_points)

    def work(k: int):
        return _rank_part(column(k), np.ascontiguousarray(scores[:, k]), grid, k in keep)

    with ThreadPoolExecutor(max_workers=n_threads or os.cpu_count() or 1) as pool:
        pooled_auc = pool.submit(micro_auc, Y_true, scores)  # alongside the categories
        pooled_precision = pool.submit(precision_at_k, Y_true, scores, int(top_k))
        sums, reliability = pointwise_sums(Y_true, scores, cut, CALIBRATION_BINS)
        ranked = list(progress.track(pool.map(work, range(K)), total=K, description="ROC / lift per category"))
        micro, at_k = pooled_auc.result(), pooled_precision.result()
    tp, predicted, n_pos = (sums[f].astype(np.int64) for f in ("tp", "predicted", "positives"))
    fp, fn = predicted - tp, n_pos - tp
    table = pd.DataFrame({
        "category": np.arange(K), "name": names, "n_pos": n_pos, "n_neg": n - n_pos, "prevalence": n_pos / n,
        "auc": [r[0] for r in ranked], "expected_accuracy": sums["expected"] / n,
        "accuracy": (n - fp - fn) / n, "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn), "log_loss": sums["log_loss"] / n, "brier": sums["brier"] / n,
        "tp": tp, "fp": fp, "fn": fn, "tn": n - tp - fp - fn}, columns=PER_CATEGORY_COLUMNS)
    roc_tpr = np.vstack([r[1] for r in ranked]) if K else np.empty((0, grid.size))
    gains = np.vstack([r[2] for r in ranked]) if K else np.empty((0, grid.size))
    curves = {k: ranked[k][3] for k in sorted(keep) if k < K}
    evaluable = (n_pos > 0) & (n_pos < n)
    summary = _summary(table, evaluable, micro) | {"precision_at_k": at_k}
    return Evaluation(per_category=table, summary=summary, grid=grid, roc_tpr=roc_tpr,
                      gains=gains, curves=curves, excluded=np.flatnonzero(~evaluable),
                      calibration=_calibration_table(reliability))


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0 (scikit-learn's zero_division=0)."""
    return np.divide(num, den, out=np.zeros(len(num)), where=den > 0)


def _calibration_table(reliability) -> pd.DataFrame:
    """(3, B) summed [count, Σp, Σy] per bin -> one row per bin of predicted probability."""
    edges = np.linspace(0.0, 1.0, CALIBRATION_BINS + 1)
    counts, sum_p, sum_y = reliability
    with np.errstate(invalid="ignore", divide="ignore"):
        return pd.DataFrame({"lower": edges[:-1], "upper": edges[1:], "count": counts.astype(np.int64),
                             "mean_predicted": np.where(counts > 0, sum_p / counts, np.nan),
                             "observed_rate": np.where(counts > 0, sum_y / counts, np.nan)})


def _summary(table: pd.DataFrame, evaluable: np.ndarray, micro_auc_value: float) -> dict:
    """Micro averages pool all (document, category) pairs; macro ones average
    the evaluable categories."""
    kept = table[evaluable]
    tp, fp, fn = (int(table[c].sum()) for c in ("tp", "fp", "fn"))

    def macro(column: str) -> float:
        return float(kept[column].mean()) if len(kept) else float("nan")

    return {
        "macro_auc": macro("auc"), "micro_auc": micro_auc_value,
        "macro_f1": macro("f1"), "micro_f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0,
        "macro_precision": macro("precision"), "micro_precision": tp / (tp + fp) if tp + fp else 0.0,
        "macro_recall": macro("recall"), "micro_recall": tp / (tp + fn) if tp + fn else 0.0,
        "mean_expected_accuracy": macro("expected_accuracy"), "mean_accuracy": macro("accuracy"),
        "mean_log_loss": macro("log_loss"), "mean_brier": macro("brier"),
        "n_categories": int(len(table)), "n_evaluable": int(evaluable.sum()),
        "n_excluded": int((~evaluable).sum()),
    }
