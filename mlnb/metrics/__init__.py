"""Metrics, vectorised over categories; rank metrics from decision scores."""

from mlnb.metrics.classification import (ConfusionCounts, brier_score, confusion_counts,
                                         expected_accuracy, log_loss_from_scores)
from mlnb.metrics.evaluation import Evaluation, evaluate, precision_at_k
from mlnb.metrics.multiclass import MulticlassEvaluation, class_log_odds, evaluate_multiclass
from mlnb.metrics.ranking import (RankCurve, depth_lift, fpr_grid, gains_on_grid, label_ranking_metrics,
                                  rank_curve, roc_auc, roc_curve_exact, roc_lift, roc_on_grid)
from mlnb.metrics.significance import McNemarResult, mcnemar_test
from mlnb.metrics.uncertainty import auc_confidence_intervals, bootstrap_intervals, bootstrap_replicates

__all__ = ["ConfusionCounts", "Evaluation", "McNemarResult", "MulticlassEvaluation", "RankCurve",
           "auc_confidence_intervals", "bootstrap_intervals", "bootstrap_replicates", "brier_score",
           "class_log_odds", "confusion_counts", "depth_lift", "evaluate", "evaluate_multiclass",
           "expected_accuracy", "fpr_grid", "gains_on_grid", "label_ranking_metrics", "log_loss_from_scores",
           "mcnemar_test", "precision_at_k", "rank_curve", "roc_auc", "roc_curve_exact", "roc_lift",
           "roc_on_grid"]
