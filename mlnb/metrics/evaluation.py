"""One model's scores against the truth: every metric for every category.

``evaluate`` is the single entry point the study uses. Macro averages are
taken over the *evaluable* categories only, those with at least one positive
and one negative test document (AUC is undefined elsewhere); the others are
listed in ``Evaluation.excluded`` and counted in the summary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from mlnb import progress
from mlnb.metrics.classification import (brier_score, confusion_counts, expected_accuracy,
                                         log_loss_from_scores, sigmoid)
from mlnb.metrics.ranking import (RankCurve, auc_from_curve, depth_lift, fpr_grid, gains_on_grid,
                                  rank_curve, roc_lift, roc_on_grid)

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
    curves       : exact rank curves per category (for plots of single categories)
    excluded     : indices of categories without positives or negatives in the test set
    """

    per_category: pd.DataFrame
    summary: dict
    grid: np.ndarray
    roc_tpr: np.ndarray
    gains: np.ndarray
    curves: list[RankCurve]
    excluded: np.ndarray

    @property
    def roc_lift(self) -> np.ndarray:
        return roc_lift(self.roc_tpr, self.grid)

    @property
    def depth_lift(self) -> np.ndarray:
        return depth_lift(self.gains, self.grid)


def _dense_labels(Y) -> np.ndarray:
    return (Y.toarray() if sp.issparse(Y) else np.asarray(Y)).astype(bool)


def evaluate(Y_true, scores: np.ndarray, category_names=None, threshold: float = 0.5,
             roc_points: int = 101) -> Evaluation:
    """All metrics of decision ``scores`` (n × K log-odds) against ``Y_true`` (n × K, 0/1)."""
    Y = _dense_labels(Y_true)
    scores = np.asarray(scores)
    if Y.shape != scores.shape:
        raise ValueError(f"Y_true has shape {Y.shape} but scores has shape {scores.shape}")
    n, K = Y.shape
    names = list(category_names) if category_names is not None else [str(k) for k in range(K)]
    proba = sigmoid(scores)
    counts = confusion_counts(Y, scores, threshold)
    grid = fpr_grid(roc_points)

    curves = [rank_curve(Y[:, k], scores[:, k])
              for k in progress.track(range(K), total=K, description="ROC / lift per category")]
    auc = np.array([auc_from_curve(c) for c in curves])
    roc_tpr = np.vstack([roc_on_grid(c, grid) for c in curves]) if K else np.empty((0, grid.size))
    gains = np.vstack([gains_on_grid(c, grid) for c in curves]) if K else np.empty((0, grid.size))

    n_pos = Y.sum(axis=0)
    table = pd.DataFrame({
        "category": np.arange(K), "name": names, "n_pos": n_pos, "n_neg": n - n_pos,
        "prevalence": n_pos / n, "auc": auc,
        "expected_accuracy": expected_accuracy(Y, proba), "accuracy": counts.accuracy,
        "precision": counts.precision, "recall": counts.recall, "f1": counts.f1,
        "log_loss": log_loss_from_scores(Y, scores), "brier": brier_score(Y, proba),
        "tp": counts.tp, "fp": counts.fp, "fn": counts.fn, "tn": counts.tn,
    }, columns=PER_CATEGORY_COLUMNS)
    evaluable = (n_pos > 0) & (n_pos < n)
    excluded = np.flatnonzero(~evaluable)
    return Evaluation(per_category=table, summary=_summary(table, evaluable, Y, scores),
                      grid=grid, roc_tpr=roc_tpr, gains=gains, curves=curves, excluded=excluded)


def _summary(table: pd.DataFrame, evaluable: np.ndarray, Y: np.ndarray, scores: np.ndarray) -> dict:
    """Micro averages pool all (document, category) pairs; macro ones average
    the evaluable categories."""
    kept = table[evaluable]
    tp, fp, fn = (int(table[c].sum()) for c in ("tp", "fp", "fn"))
    micro_p = tp / (tp + fp) if tp + fp else 0.0
    micro_r = tp / (tp + fn) if tp + fn else 0.0
    micro_f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
    micro_auc = auc_from_curve(rank_curve(Y.ravel(), scores.ravel()))

    def macro(column: str) -> float:
        return float(kept[column].mean()) if len(kept) else float("nan")

    return {
        "macro_auc": macro("auc"), "micro_auc": micro_auc,
        "macro_f1": macro("f1"), "micro_f1": micro_f1,
        "macro_precision": macro("precision"), "micro_precision": micro_p,
        "macro_recall": macro("recall"), "micro_recall": micro_r,
        "mean_expected_accuracy": macro("expected_accuracy"), "mean_accuracy": macro("accuracy"),
        "mean_log_loss": macro("log_loss"), "mean_brier": macro("brier"),
        "n_categories": int(len(table)), "n_evaluable": int(evaluable.sum()),
        "n_excluded": int((~evaluable).sum()),
    }
