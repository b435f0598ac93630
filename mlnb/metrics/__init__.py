"""Metrics, vectorised over categories; rank metrics from decision scores."""

from mlnb.metrics.classification import (ConfusionCounts, brier_score, confusion_counts,
                                         expected_accuracy, log_loss_from_scores)
from mlnb.metrics.evaluation import Evaluation, evaluate
from mlnb.metrics.ranking import (RankCurve, depth_lift, fpr_grid, gains_on_grid, rank_curve,
                                  roc_auc, roc_curve_exact, roc_lift, roc_on_grid)

__all__ = ["ConfusionCounts", "Evaluation", "RankCurve", "brier_score", "confusion_counts",
           "depth_lift", "evaluate", "expected_accuracy", "fpr_grid", "gains_on_grid",
           "log_loss_from_scores", "rank_curve", "roc_auc", "roc_curve_exact", "roc_lift",
           "roc_on_grid"]
