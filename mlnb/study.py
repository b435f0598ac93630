"""A study: data source -> features -> models -> scores -> metrics, for any number of models.

``run_models`` is the one loop — per model: fit, score, decide, evaluate — that
``mlnb run`` (on the test part), ``mlnb sweep`` (on a validation part of the
training documents) and ``mlnb curve`` (on samples of the training part) share,
so every command treats every model and every ``eval.*`` key the same way.
``run_study`` computes everything and writes nothing; ``mlnb.report`` turns its
result into a results folder.
"""

from __future__ import annotations

import dataclasses
import difflib
import time
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from mlnb import progress
from mlnb.config import StudyConfig, fit_order
from mlnb.data.dataset import Dataset
from mlnb.data.sources import load_dataset
from mlnb.errors import MlnbError
from mlnb.features import FeatureTransform
from mlnb.metrics.comparison import Comparison, compare_scores
from mlnb.metrics.evaluation import Evaluation, evaluate
from mlnb.metrics.multiclass import class_log_odds, evaluate_multiclass
from mlnb.metrics.significance import mcnemar_test
from mlnb.models import get_kind


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
    scores: np.ndarray  # (n_eval, K) decision scores: multilabel, per-category log-odds (complement NB:
    #                     a ranking score); multiclass, per-class joint scores J (softmax(J) = posterior)

    @property
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

    def model(self, name: str) -> ModelRun:
        return next(run for run in self.models if run.name == name)


def model_labels(config: StudyConfig) -> dict[str, str]:
    """name -> label of every enabled model; equal labels get the model's name added."""
    labels = {spec.name: spec.display_label() for spec in config.study_models()}
    repeated = {label for label in labels.values() if list(labels.values()).count(label) > 1}
    return {name: f"{label} [{name}]" if label in repeated else label for name, label in labels.items()}


def run_models(config: StudyConfig, X_train, Y_train, X_eval, Y_eval, category_names, *,
               wanted: list[str] | None = None, curve_categories=(), seed: int | None = None) -> list[ModelRun]:
    """Fit every enabled model (or those ``wanted``, with the models they start from) on the
    training documents, then score, decide and evaluate it on the evaluation documents.

    The decision rule today is one probability cut for every category (``eval.threshold``), or
    for ``task = "multiclass"`` the most probable class; every ``eval.*`` key reaches the
    evaluation here, for every command.
    """
    seed = config.seed if seed is None else seed
    labels = model_labels(config)
    unknown = sorted(set(wanted or ()) - set(labels))
    if unknown:
        raise MlnbError(f"no enabled model {', '.join(map(repr, unknown))} in the study ({', '.join(labels)})")
    evaluated = set(labels) if wanted is None else set(wanted)
    fitted, runs = {}, []
    for spec in fit_order(config, wanted):
        kind = get_kind(spec.kind)
        estimator = kind.build(spec.options, seed, config.task)
        started = time.perf_counter()
        try:
            with progress.status(f"fitting {labels[spec.name]}"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # untrainable categories are reported, not warned
                estimator.fit(X_train, Y_train, **kind.fit_arguments(spec.options, fitted, (X_eval, Y_eval)))
                estimator.weights_  # a lazy model (Naive Bayes) builds W here, so fit time includes it
        except MlnbError as error:
            raise MlnbError(f"models.{spec.name}: {error}") from None
        fitted[spec.name] = estimator
        if spec.name not in evaluated:
            continue
        fit_seconds = time.perf_counter() - started
        started = time.perf_counter()
        scores = estimator.decision_function(X_eval)  # (n_eval, K)
        score_seconds = time.perf_counter() - started
        started = time.perf_counter()
        evaluate_task = evaluate_multiclass if config.task == "multiclass" else evaluate
        evaluation = evaluate_task(Y_eval, scores, category_names, curve_categories=curve_categories,
                                   **dataclasses.asdict(config.eval))
        runs.append(ModelRun(name=spec.name, kind=spec.kind, label=labels[spec.name], model=estimator,
                             fit_seconds=fit_seconds, score_seconds=score_seconds,
                             eval_seconds=time.perf_counter() - started, evaluation=evaluation, scores=scores))
    order = list(labels)  # config order, whatever order the models had to be fitted in
    return sorted(runs, key=lambda run: order.index(run.name))


def prepare_data(config: StudyConfig) -> tuple[Dataset, FeatureTransform]:
    with progress.status("loading data"):
        dataset = load_dataset(config.data, config.seed, config.features, config.task)
    if config.report.category_name:
        names = list(dataset.category_names)
        if config.report.category_name not in names:
            close = difflib.get_close_matches(config.report.category_name, names, n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise MlnbError(f"report.category_name = {config.report.category_name!r} is not a category of "
                            f"the data{hint}")
    elif not 0 <= config.report.category < dataset.n_categories:
        raise MlnbError(f"report.category = {config.report.category} is out of range: the data has "
                        f"{dataset.n_categories} categories (0..{dataset.n_categories - 1})")
    for spec in config.study_models():
        per_category = getattr(spec.options, "lrate_per_category", [])
        if per_category and len(per_category) != dataset.n_categories:
            raise MlnbError(f"models.{spec.name}.lrate_per_category has {len(per_category)} values but the "
                            f"data has {dataset.n_categories} categories")
    features = FeatureTransform(config.features.transform, config.features.min_df,
                                config.features.max_features)
    features.fit(dataset.X_train)
    return dataset, features


def run_study(config: StudyConfig) -> StudyResult:
    """Fit every enabled model on the training part, evaluate it on the test part, compare pairs."""
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
    for name_a, name_b in config.compared_pairs():
        a, b = result.model(name_a), result.model(name_b)
        mcnemar = None
        if config.task == "multiclass":  # paired accuracy on the same documents
            truth = a.evaluation.true
            mcnemar = mcnemar_test(a.evaluation.predicted == truth, b.evaluation.predicted == truth)
        with progress.status(f"DeLong tests per category, {name_a} against {name_b}"):
            result.comparisons.append(compare_scores(Y_test, a.rank_scores, b.rank_scores, dataset.category_names,
                                                     result.train_positives, a.label, b.label,
                                                     config.report.alpha, name_a, name_b, mcnemar=mcnemar))
    return result
