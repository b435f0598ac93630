"""Metrics, vectorised over categories; rank metrics from decision scores."""

from mlnb.metrics.at_k import (MetricInterval, PairedDifference, RankingAtK, bootstrap_intervals_at_k,
                               paired_differences_at_k, propensities, ranking_metrics, top_k_of_scores)
from mlnb.metrics.binned import BinnedScores, Grid
from mlnb.metrics.classification import (ConfusionCounts, brier_score, confusion_counts,
                                         expected_accuracy, log_loss_from_scores)
from mlnb.metrics.evaluation import Evaluation, micro_auc, precision_at_k
from mlnb.metrics.multiclass import MulticlassEvaluation, class_log_odds, evaluate_multiclass
from mlnb.metrics.ranking import (RankCurve, depth_lift, fpr_grid, gains_on_grid, label_ranking_metrics,
                                  rank_curve, roc_auc, roc_auc_per_category, roc_curve_exact, roc_lift,
                                  roc_on_grid)
from mlnb.metrics.significance import McNemarResult, mcnemar_test
from mlnb.metrics.streaming import RunningSums, ScoreSpill, evaluate_spilled
from mlnb.metrics.tasks import evaluate
from mlnb.metrics.uncertainty import auc_confidence_intervals, bootstrap_intervals, bootstrap_replicates

__all__ = ["BinnedScores", "ConfusionCounts", "Evaluation", "Grid", "McNemarResult", "MulticlassEvaluation",
           "RankCurve", "RunningSums", "ScoreSpill", "auc_confidence_intervals", "bootstrap_intervals",
           "bootstrap_replicates", "brier_score", "class_log_odds", "confusion_counts", "depth_lift", "evaluate",
           "evaluate_multiclass", "evaluate_spilled", "expected_accuracy", "fpr_grid", "gains_on_grid",
           "label_ranking_metrics", "log_loss_from_scores", "mcnemar_test", "micro_auc", "precision_at_k",
           "rank_curve", "roc_auc", "roc_auc_per_category", "roc_curve_exact", "roc_lift", "roc_on_grid",
           "MetricInterval", "PairedDifference", "RankingAtK", "bootstrap_intervals_at_k", "paired_differences_at_k",
           "propensities", "ranking_metrics", "top_k_of_scores"]
