"""What a study gives: each model's run (``ModelRun``) and the study's result (``StudyResult``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from mlnb.config import StudyConfig
from mlnb.metrics.comparison import Comparison
from mlnb.metrics.evaluation import Evaluation
from mlnb.metrics.multiclass import class_log_odds


@dataclass
class ModelRun:
    """One model of a study, fitted and evaluated."""

    name: str  # the config's [models.<name>]
    kind: str
    label: str  # for tables and legends
    model: object  # the fitted estimator
    fit_seconds: float  # without numba's compiling, which is compile_seconds
    score_seconds: float
    eval_seconds: float
    evaluation: Evaluation
    decision: object = None  # the fitted decision rule (multilabel), mlnb.decision.DecisionRule
    calibration: object = None  # the fitted calibration, or None
    probability_scores: object = None  # (n_eval, K) calibrated log-odds, or None
    decisions: object = None  # (n_eval, K) 0/1 decisions (multilabel)
    uncalibrated: object = None  # the reliability table of the scores before calibration, or None
    intervals: dict = field(default_factory=dict)  # summary metric -> (low, high), bootstrap
    auc_intervals: object = None  # (K, 2) score intervals of each category's AUC (``auc_intervals``)
    scores: np.ndarray = None  # (n_eval, K) decision scores: multilabel, per-category log-odds (complement NB:
    #                     a ranking score); multiclass, per-class joint scores J (softmax(J) = posterior)
    spill: object = None  # the scores on disk (mlnb.metrics.streaming.ScoreSpill) while the run lasts, when spilled
    n_fit: int | None = None  # training documents the evaluated model was fitted on
    n_validation: int = 0  # held-out training documents its decision rule or calibration learned from
    compile_seconds: float = 0.0  # numba compiling (a first run) or loading kernels during the fit: not in fit_seconds
    # multilabel, eval.ranking_k > 0: {"metrics": {"P@1": …}, "intervals": {"P@1": [low, high]}} (``_rank_at_k``)
    ranking: dict = field(default_factory=dict)

    @cached_property  # used by every comparison and interval of the run: computed once
    def rank_scores(self) -> np.ndarray:
        """Scores that rank documents within a category: the log-odds, or for multiclass each class's
        log-odds against the rest, J_k − logsumexp_{j≠k} J_j (never saturated posteriors)."""
        return class_log_odds(self.scores) if self.evaluation.summary.get("task") == "multiclass" else self.scores


@dataclass
class StudyResult:
    config: StudyConfig
    data: dict  # Dataset.describe() plus the feature space after transforms
    category_names: list
    train_positives: np.ndarray  # (K,) training documents per category
    models: list[ModelRun] = field(default_factory=list)
    load_seconds: float = 0.0
    Y_test: object = None  # (n_test, K) sparse 0/1, the store's ``labels_kept`` (None when the scores were spilled)
    comparisons: list[Comparison] = field(default_factory=list)  # one per report.compare pair, a − b
    untrainable: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=int))  # no training positive/negative
    timings: object = None  # mlnb.timings.Timings: seconds per stage of the run (``mlnb run --profile``)
    # the input files as the run read them (``mlnb.data.fingerprint``, taken at load: a file replaced or
    # deleted while the models train is not what the results came from); None: the writer takes it
    data_fingerprint: dict | None = None
    # the ranking metrics at k: their cut-offs (empty: not measured), whether propensity-scored, and the paired
    # comparisons of the best model by P@1 against each other one (``mlnb.metrics.at_k_study.rank_models``)
    ranking_ks: tuple = ()
    ranking_propensity_scored: bool = False
    ranking_comparisons: list = field(default_factory=list)

    def model(self, name: str) -> ModelRun:
        return next(run for run in self.models if run.name == name)


def model_labels(config: StudyConfig) -> dict[str, str]:
    """name -> label of every enabled model; equal labels get the model's name added."""
    labels = {spec.name: spec.display_label() for spec in config.study_models()}
    repeated = {label for label in labels.values() if list(labels.values()).count(label) > 1}
    return {name: f"{label} [{name}]" if label in repeated else label for name, label in labels.items()}
