"""A study: data source -> features -> models -> scores -> metrics, for any number of models.

``run_models`` is the one loop — per model: fit, score, decide, evaluate — that
``mlnb run`` (on the test part), ``mlnb sweep`` (on a validation part of the
training documents) and ``mlnb curve`` (on samples of the training part) share,
so every command treats every model and every ``eval.*`` key the same way.
``run_study`` computes everything and writes nothing; ``mlnb.report`` turns its
result into a results folder.
"""

from __future__ import annotations

import difflib
import time
import warnings
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from mlnb import progress
from mlnb.budget import DataShape, check_budget
from mlnb.config import StudyConfig, fit_order
from mlnb.data.dataset import Dataset
from mlnb.data.sources import load_dataset
from mlnb.errors import MlnbError
from mlnb.features import FeatureTransform
from mlnb.calibration import fit_calibration
from mlnb.decision import fit_decision_rule
from mlnb.metrics.comparison import Comparison, compare_scores
from mlnb.metrics.evaluation import Evaluation, evaluate, reliability_table
from mlnb.metrics.multiclass import class_log_odds, evaluate_multiclass
from mlnb.metrics.significance import mcnemar_test
from mlnb.metrics.uncertainty import auc_confidence_intervals, bootstrap_intervals
from mlnb.models import get_kind
from mlnb.models._linear import prior_log_odds


@dataclass
class ModelRun:
    """One model of a study, fitted and evaluated."""

    name: str  # the config's [models.<name>]
    kind: str
    label: str  # for tables and legends
    model: object  # the fitted estimator
    fit_seconds: float
    score_seconds: float
    eval_seconds: float
    evaluation: Evaluation
    decision: object = None  # the fitted decision rule (multilabel), mlnb.decision.DecisionRule
    calibration: object = None  # the fitted calibration, or None
    probability_scores: object = None  # (n_eval, K) calibrated log-odds, or None
    decisions: object = None  # (n_eval, K) 0/1 decisions (multilabel)
    uncalibrated: object = None  # the reliability table of the scores before calibration, or None
    intervals: dict = field(default_factory=dict)  # summary metric -> (low, high), bootstrap
    auc_intervals: object = None  # (K, 2) DeLong intervals of each category's AUC
    scores: np.ndarray = None  # (n_eval, K) decision scores: multilabel, per-category log-odds (complement NB:
    #                     a ranking score); multiclass, per-class joint scores J (softmax(J) = posterior)

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
    Y_test: object = None  # (n_test, K) sparse 0/1
    comparisons: list[Comparison] = field(default_factory=list)  # one per report.compare pair, a − b
    untrainable: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=int))  # no training positive/negative

    def model(self, name: str) -> ModelRun:
        return next(run for run in self.models if run.name == name)


def model_labels(config: StudyConfig) -> dict[str, str]:
    """name -> label of every enabled model; equal labels get the model's name added."""
    labels = {spec.name: spec.display_label() for spec in config.study_models()}
    repeated = {label for label in labels.values() if list(labels.values()).count(label) > 1}
    return {name: f"{label} [{name}]" if label in repeated else label for name, label in labels.items()}


def _fit_models(config: StudyConfig, wanted: list[str] | None, X, Y, eval_set, seed: int,
                labels: dict) -> tuple[dict, dict]:
    """Fit ``wanted`` (default: every enabled model) and the models they start from on (X, Y):
    (fitted estimators by name, fit seconds by name)."""
    fitted, seconds = {}, {}
    for spec in fit_order(config, wanted):
        kind = get_kind(spec.kind)
        estimator = kind.build(spec.options, seed, config.task)
        started = time.perf_counter()
        try:
            with progress.status(f"fitting {labels[spec.name]}"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # untrainable categories are reported, not warned
                estimator.fit(X, Y, **kind.fit_arguments(spec.options, fitted, eval_set))
                estimator.weights_  # a lazy model (Naive Bayes) builds W here, so fit time includes it
        except MlnbError as error:
            raise MlnbError(f"models.{spec.name}: {error}") from None
        fitted[spec.name] = estimator
        seconds[spec.name] = time.perf_counter() - started
    return fitted, seconds


def held_out_scores(config: StudyConfig, name: str, X_train, Y_train, seed: int, labels: dict):
    """Scores of training documents by a model that did not train on them, for the decision rule and
    the calibration to learn from: one seeded validation split of the training part, or the
    out-of-fold scores of k-fold cross-validation on it. The evaluation documents are never seen.
    Returns (scores (m × K), labels (m × K)) in training-row order, and the model of the split
    (None for k-fold)."""
    ev = config.eval
    n = X_train.shape[0]
    order = np.random.default_rng([seed, 11]).permutation(n)
    if ev.validation == "split":
        n_val = int(round(ev.validation_fraction * n))
        if not 0 < n_val < n:
            raise MlnbError(f"eval.validation_fraction = {ev.validation_fraction} leaves no fitting or no "
                            f"validation documents out of {n} training documents")
        blocks = [np.sort(order[:n_val])]
    else:
        if ev.folds > n:
            raise MlnbError(f"eval.folds = {ev.folds} is more than the {n} training documents")
        blocks = [np.sort(block) for block in np.array_split(order, ev.folds)]
    parts, rows, model, seconds = [], [], None, 0.0
    for block in blocks:
        keep = np.setdiff1d(np.arange(n), block, assume_unique=True)
        fitted, fit_seconds = _fit_models(config, [name], X_train[keep], Y_train[keep], None, seed, labels)
        model, seconds = fitted[name], fit_seconds[name]
        parts.append(model.decision_function(X_train[block]))
        rows.append(block)
    rows = np.concatenate(rows)
    back = np.argsort(rows, kind="stable")  # to training-row order
    split = ev.validation == "split"
    return HeldOut(np.vstack(parts)[back], Y_train[rows[back]], model if split else None, seconds if split else None)


class HeldOut(NamedTuple):
    """What ``held_out_scores`` gives: validation scores and labels, and for a split its model."""

    scores: np.ndarray  # (m, K) scores of held-out training documents
    labels: object  # (m, K) their labels
    model: object  # the split's model (fitted without them), or None for k-fold
    fit_seconds: float | None


def untrainable_categories(Y_train) -> tuple[np.ndarray, np.ndarray]:
    """(indices of categories without a training positive or negative, every category's prior log-odds
    log((N + ½)/(N̄ + ½)) (K,))."""
    n = Y_train.shape[0]
    positives = np.asarray(Y_train.sum(axis=0), dtype=np.float64).ravel()
    return (np.flatnonzero((positives == 0) | (positives == n)),
            prior_log_odds(positives, n).astype(np.float32))


def _by_prior(scores: np.ndarray, categories: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """eval.untrainable = 'prior': untrainable categories score by their training prior, in every model."""
    if categories.size:
        scores = scores.copy()
        scores[:, categories] = prior[categories]
    return scores


def run_models(config: StudyConfig, X_train, Y_train, X_eval, Y_eval, category_names, *,
               wanted: list[str] | None = None, curve_categories=(), seed: int | None = None) -> list[ModelRun]:
    """Fit every enabled model (or those ``wanted``, with the models they start from) on the
    training documents, then score, decide and evaluate it on the evaluation documents.

    Decide: the model's decision rule (``eval.decision`` or its own ``decision``) and the
    calibration (``eval.calibration``) learn from held-out scores of the training documents
    (``held_out_scores``), never from the evaluation documents; ``task = "multiclass"`` decides
    by the most probable class. Every ``eval.*`` key reaches this stage or the evaluation, for
    every command.
    """
    seed = config.seed if seed is None else seed
    ev = config.eval
    labels = model_labels(config)
    unknown = sorted(set(wanted or ()) - set(labels))
    if unknown:
        raise MlnbError(f"no enabled model {', '.join(map(repr, unknown))} in the study ({', '.join(labels)})")
    evaluated = list(labels) if wanted is None else [name for name in labels if name in wanted]
    multiclass = config.task == "multiclass"
    rules = {name: config.models[name].decision or ev.decision for name in evaluated}
    needs = {name for name in evaluated if not multiclass and
             (rules[name] in ("scut", "scutfbr") or ev.calibration != "none")}
    held = {}
    if needs and ev.validation == "split" and not ev.refit:
        # thresholds fit the split's model, so that model is evaluated — for every model of the study,
        # so that all are compared trained on the same documents (the training part minus the split)
        for name in evaluated:
            with progress.status(f"held-out scores of {name} (split)"):
                held[name] = held_out_scores(config, name, X_train, Y_train, seed, labels)
        fitted = {name: held[name].model for name in evaluated}
        fit_seconds = {name: held[name].fit_seconds for name in evaluated}
    else:
        fitted, fit_seconds = _fit_models(config, evaluated, X_train, Y_train, (X_eval, Y_eval), seed, labels)
    untrainable, prior = untrainable_categories(Y_train)
    n_train = Y_train.shape[0]
    # from integer counts: a float mean of an all-ones column can exceed 1 by an ulp
    prevalence = np.asarray(Y_train.sum(axis=0), dtype=np.float64).ravel() / max(n_train, 1)
    runs = []
    for name in evaluated:
        spec, estimator = config.models[name], fitted[name]
        started = time.perf_counter()
        scores = estimator.decision_function(X_eval)  # (n_eval, K)
        score_seconds = time.perf_counter() - started
        started = time.perf_counter()
        rule_name = spec.decision or ev.decision
        decision = calibration = probability_scores = decisions = uncalibrated = None
        exclude = untrainable if ev.untrainable == "exclude" else None
        if not multiclass:
            if ev.untrainable == "prior":
                scores = _by_prior(scores, untrainable, prior)
            validation = None
            if name in needs:
                if name not in held:
                    with progress.status(f"held-out scores of {name} ({ev.validation})"):
                        held[name] = held_out_scores(config, name, X_train, Y_train, seed, labels)
                S_val, Y_val = held[name].scores, held[name].labels
                if ev.untrainable == "prior":
                    S_val = _by_prior(S_val, untrainable, prior)
                validation = (S_val, Y_val)
            if ev.calibration != "none":
                calibration = fit_calibration(ev.calibration, *validation)
                probability_scores = calibration.transform(scores)
                uncalibrated = reliability_table(Y_eval, scores)
            # a probability cut reads calibrated probabilities; the rank rules read the model's own scores
            cut_scores = probability_scores if (rule_name == "fixed" and calibration is not None) else scores
            rule_validation = validation
            if validation is not None and rule_name == "fixed" and calibration is not None:
                rule_validation = (calibration.transform(validation[0]), validation[1])
            decision = fit_decision_rule(rule_name, *(rule_validation or (None, None)), threshold=ev.threshold,
                                         metric=ev.decision_metric, fbr=ev.fbr, fbr_rank=ev.fbr_rank,
                                         rcut_k=ev.rcut_k, train_prevalence=prevalence)
            decisions = decision.decide(cut_scores)
            evaluation = evaluate(Y_eval, scores, category_names, threshold=ev.threshold,
                                  roc_points=ev.roc_points, top_k=ev.top_k, curve_categories=curve_categories,
                                  decisions=decisions, probability_scores=probability_scores, exclude=exclude,
                                  train_prevalence=prevalence)
        else:
            evaluation = evaluate_multiclass(Y_eval, scores, category_names, threshold=ev.threshold,
                                             roc_points=ev.roc_points, top_k=ev.top_k,
                                             curve_categories=curve_categories, exclude=exclude,
                                             train_prevalence=prevalence)
        runs.append(ModelRun(name=name, kind=spec.kind, label=labels[name], model=estimator,
                             fit_seconds=fit_seconds[name], score_seconds=score_seconds,
                             eval_seconds=time.perf_counter() - started, evaluation=evaluation, scores=scores,
                             decision=decision, calibration=calibration, probability_scores=probability_scores,
                             decisions=decisions, uncalibrated=uncalibrated))
    return runs


def prepare_data(config: StudyConfig) -> tuple[Dataset, FeatureTransform]:
    with progress.status("loading data"):
        dataset = load_dataset(config.data, config.seed, config.features, config.task)
    _check_against_data(config, dataset.category_names)
    check_budget(config, DataShape(int(dataset.train_index.size), int(dataset.test_index.size), dataset.n_features,
                                   dataset.n_categories, int(dataset.X.nnz)))  # the data's real shape now
    if any(spec.kind in ("naive_bayes", "nb_logistic") and getattr(spec.options, "event_model", "multinomial")
           in ("multinomial", "bernoulli", "complement") for spec in config.study_models()):
        dataset.check_non_negative()  # the test part too, with the file and line of the first bad value
    features = FeatureTransform(config.features.transform, config.features.min_df,
                                config.features.max_features)
    features.fit(dataset.X_train)
    return dataset, features


def _check_against_data(config: StudyConfig, category_names) -> None:
    """The keys that name categories, checked against the categories the data has."""
    n_categories = len(category_names)
    if config.report.category_name:
        names = list(category_names)
        if config.report.category_name not in names:
            close = difflib.get_close_matches(config.report.category_name, names, n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise MlnbError(f"report.category_name = {config.report.category_name!r} is not a category of "
                            f"the data{hint}")
    elif not 0 <= config.report.category < n_categories:
        raise MlnbError(f"report.category = {config.report.category} is out of range: the data has "
                        f"{n_categories} categories (0..{n_categories - 1})")
    for spec in config.study_models():
        per_category = getattr(spec.options, "lrate_per_category", [])
        if per_category and len(per_category) != n_categories:
            raise MlnbError(f"models.{spec.name}.lrate_per_category has {len(per_category)} values but the "
                            f"data has {n_categories} categories")


def run_study(config: StudyConfig) -> StudyResult:
    """Fit every enabled model on the training part, evaluate it on the test part, compare pairs."""
    if config.data.streaming:
        from mlnb.study_streaming import run_streaming_study

        return run_streaming_study(config)
    started = time.perf_counter()
    dataset, features = prepare_data(config)
    if config.report.category_name:  # the name decides; the resolved config records the index too
        index = list(dataset.category_names).index(config.report.category_name)
        config = replace(config, report=replace(config.report, category=index))
    X_train, X_test = features.transform(dataset.X_train), features.transform(dataset.X_test)
    Y_train, Y_test = dataset.Y_train, dataset.Y_test
    info = dataset.describe() | {"n_features_used": int(X_train.shape[1]),
                                 "feature_transform": config.features.transform}
    result = StudyResult(config=config, data=info, category_names=dataset.category_names,
                         train_positives=np.asarray(Y_train.sum(axis=0)).ravel(),
                         load_seconds=time.perf_counter() - started, Y_test=Y_test)
    result.models = run_models(config, X_train, Y_train, X_test, Y_test, dataset.category_names,
                               curve_categories=[config.report.category])
    untrainable, _ = untrainable_categories(Y_train)
    result.untrainable = untrainable
    excluded = untrainable if config.eval.untrainable == "exclude" else None
    ev = config.eval
    for run in result.models:  # uncertainty of what the report states
        decisions = run.decisions
        if config.task == "multiclass":  # the argmax decision, one class per document
            n, K = run.scores.shape
            decisions = sp.csr_matrix((np.ones(n, dtype=np.int8), run.evaluation.predicted, np.arange(n + 1)),
                                      shape=(n, K))
        if ev.bootstrap:
            with progress.status(f"bootstrap intervals of {run.name} ({ev.bootstrap} resamples)"):
                run.intervals = bootstrap_intervals(Y_test, run.rank_scores, decisions=decisions,
                                                    n_boot=ev.bootstrap, seed=config.seed, level=ev.confidence,
                                                    exclude=excluded)
        run.auc_intervals = auc_confidence_intervals(Y_test, run.rank_scores, level=ev.confidence)
    for name_a, name_b in config.compared_pairs():
        a, b = result.model(name_a), result.model(name_b)
        mcnemar = None
        if config.task == "multiclass":  # paired accuracy on the same documents
            truth = a.evaluation.true
            mcnemar = mcnemar_test(a.evaluation.predicted == truth, b.evaluation.predicted == truth)
        with progress.status(f"DeLong tests per category, {name_a} against {name_b}"):
            result.comparisons.append(compare_scores(Y_test, a.rank_scores, b.rank_scores, dataset.category_names,
                                                     result.train_positives, a.label, b.label,
                                                     config.report.alpha, name_a, name_b, mcnemar=mcnemar,
                                                     exclude=excluded))
    return result
