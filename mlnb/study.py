"""A study: data source -> features -> models -> scores -> decisions -> metrics, at any size.

``run_on`` is the one loop — per model: fit, score, decide, evaluate — over training and
evaluation documents that are matrices in memory or sources read in chunks (here or on a Dask
cluster; ``mlnb.engine``). ``mlnb run`` (on the test part), ``mlnb sweep`` (on a validation part
of the training documents) and ``mlnb curve`` (on samples of the training part) share it, so every
command treats every model, every ``eval.*`` key and every size the same way:

    fit       each model as its kind declares it learns (``mlnb.engine.fitting``)
    decide    the decision rule and calibration learn from held-out scores of the training
              documents (a seeded hash split or k folds of their ids), never the evaluation ones
    score     the evaluation documents, held in memory or spilled to disk (``mlnb.engine.scoring``)
    evaluate  every metric, then intervals and paired tests in ``run_study``; multilabel, the ranking
              metrics at k of each document's ``eval.ranking_k`` best categories (``_rank_at_k``)

The same config gives the same split, the same parts and the same numbers in memory, streamed
and on Dask (Naive Bayes exactly; minibatch LR in the same minibatch order). ``run_study``
computes everything and writes nothing; ``mlnb.report`` turns its result into a results folder.
"""

from __future__ import annotations

import difflib
import operator
import time
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from mlnb import progress, timings
from mlnb.backends import LocalBackend, open_backend
from mlnb.budget import DataShape, check_budget
from mlnb.calibration import fit_calibration
from mlnb.config import StudyConfig, with_decision_resolved
from mlnb.data.dataset import Dataset
from mlnb.data.fingerprint import data_fingerprint
from mlnb.data.sources import describe_split, load_dataset, open_streams
from mlnb.data.stream import OneClassSource
from mlnb.decision import LEARNED_ON_HELD_OUT, fit_decision_rule
from mlnb.engine.documents import Documents, InMemoryDocuments, StreamedDocuments, validation_buckets
from mlnb.engine.fitting import NoTrainingDocuments, fit_models, label_counts
from mlnb.engine.scoring import (SPILL_LIMITS, Scored, fits_in_memory, in_memory, score_in_memory,
                                 score_spilled)
from mlnb.engine.tasks import Reading, count_partition
from mlnb.errors import MlnbError
from mlnb.features import FeatureTransform
from mlnb.metrics.at_k import top_k_of_scores
from mlnb.metrics.at_k_study import (propensities_from_counts, rank_models, ranking_cutoffs, spill_labels,
                                     top_k_of_spill)
from mlnb.metrics.auc_intervals import category_auc_intervals, category_auc_intervals_by_column
from mlnb.metrics.bands import frequency_bands, precision_at_k_by_band
from mlnb.metrics.comparison import Comparison, compare_scores, comparison_from_tests
from mlnb.metrics.evaluation import Evaluation, evaluate, reliability_table
from mlnb.metrics.multiclass import class_log_odds, evaluate_multiclass
from mlnb.metrics.ranking import column_work
from mlnb.metrics.significance import auc_difference_tests_by_column, mcnemar_test
from mlnb.metrics.streaming import evaluate_spilled
from mlnb.metrics.uncertainty import bootstrap_intervals
from mlnb.models import get_kind
from mlnb.models._linear import prior_log_odds
from mlnb.work import check_work, study_work


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
    spill: object = None  # the scores on disk (mlnb.metrics.streaming.ScoreSpill) when they were not held in memory
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
    Y_test: object = None  # (n_test, K) sparse 0/1 (None when the scores were spilled to disk)
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


class HeldOut(NamedTuple):
    """What ``held_out_scores`` gives: validation scores and labels, and for a split its model."""

    scores: np.ndarray  # (m, K) scores of held-out training documents, ascending ids
    labels: object  # (m, K) their labels
    model: object  # the split's model (fitted without them), or None for k-fold
    fit_seconds: float | None
    compile_seconds: float = 0.0


def held_out_scores(config: StudyConfig, names: list[str], train: Documents, seed: int, labels: dict,
                    backend=None) -> dict[str, HeldOut]:
    """Scores of training documents by models that did not train on them, for the decision rules and
    the calibrations to learn from: the held-out part of a seeded hash split of the training
    documents' ids (``eval.validation = "split"``), or the out-of-fold scores of k hash folds
    (``mlnb.engine.documents``). Every model of ``names`` is fitted on each part at once (one
    counting pass per part when streamed). The evaluation documents are never seen; the parts are
    the same documents in memory, streamed and on Dask."""
    ev = config.eval
    split = ev.validation == "split"
    buckets = validation_buckets(config.data_seed(seed), "validation", fraction=ev.validation_fraction if split else None,
                                 folds=None if split else ev.folds)
    scores, Y, ids, fitted = {name: [] for name in names}, [], [], None
    what = f"eval.validation_fraction = {ev.validation_fraction}" if split else f"eval.folds = {ev.folds}"
    for bucket in buckets:
        held, rest = train.select(bucket), train.select(bucket.complement())
        if train.in_memory and (rest.n_documents == 0 or (split and held.n_documents == 0)):
            raise MlnbError(f"{what} leaves no fitting or no validation documents out of {train.n_documents} "
                            "training documents")
        try:
            fitted = fit_models(config, names, rest, seed, labels, backend=backend)
        except NoTrainingDocuments:  # streamed: known once read
            raise MlnbError(f"{what} leaves no fitting documents among the training documents") from None
        part = score_in_memory({name: fitted.models[name] for name in names}, held)
        if split and part.n_documents == 0:
            raise MlnbError(f"{what} leaves no validation documents among the training documents")
        for name in names:
            scores[name].append(part.scores[name])
        Y.append(part.Y)
        ids.append(part.ids)
    order = np.argsort(np.concatenate(ids), kind="stable")  # one order (ascending ids) for every engine
    labels_held = sp.vstack(Y, format="csr")[order]
    return {name: HeldOut(np.vstack(scores[name])[order], labels_held, fitted.models[name] if split else None,
                          fitted.seconds[name] if split else None,
                          fitted.compile_seconds.get(name, 0.0) if split else 0.0)
            for name in names}


#: eval.untrainable values under which every model scores its untrainable categories by their training prior
#: (multilabel): 'keep' too, so that it is even-handed — naive Bayes, L-BFGS LR and the SVM reset such a
#: category to its prior themselves, while a minibatch LR would keep scores learned from one class only
BY_PRIOR = ("prior", "keep")


def untrainable_scored_by_prior(config: StudyConfig) -> bool:
    """Whether every model's scores of the untrainable categories are replaced by their training prior
    (``BY_PRIOR``, one-vs-rest only: a multiclass model's scores are a softmax's, kept as scored)."""
    return config.eval.untrainable in BY_PRIOR and config.task != "multiclass"


def _by_prior(scores: np.ndarray, categories: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """eval.untrainable = 'prior' or 'keep': untrainable categories score by their training prior, in every model."""
    if categories.size:
        scores = scores.copy()
        scores[:, categories] = prior[categories]
    return scores


@dataclass(eq=False)
class LoopResult:
    """What ``run_on`` gives besides the runs: the training documents' counts and the scores' holding."""

    runs: list[ModelRun]
    train_positives: np.ndarray  # (K,) float64
    n_train: int
    nnz_train: int
    untrainable: np.ndarray
    scored: Scored
    counting_seconds: float = 0.0  # streamed: the counting pass of the training documents


def run_on(config: StudyConfig, train: Documents, evaluation: Documents, *, wanted: list[str] | None = None,
           curve_categories=(), seed: int | None = None, backend=None) -> LoopResult:
    """Fit every enabled model (or those ``wanted``, with the models they start from) on the
    training documents, then score, decide and evaluate it on the evaluation documents.

    Decide: the model's decision rule (``eval.decision`` or its own ``decision``) and the
    calibration (``eval.calibration``) learn from held-out scores of the training documents
    (``held_out_scores``), never from the evaluation documents; ``task = "multiclass"`` decides
    by the most probable class. Every ``eval.*`` key reaches this stage or the evaluation, for
    every command and every size. The caller closes ``LoopResult.scored`` (spilled scores).
    """
    config = with_decision_resolved(config)  # eval.decision = 'auto': the rule it stands for here
    seed = config.seed if seed is None else seed
    backend = backend or LocalBackend()
    ev = config.eval
    labels = model_labels(config)
    unknown = sorted(set(wanted or ()) - set(labels))
    if unknown:
        raise MlnbError(f"no enabled model {', '.join(map(repr, unknown))} in the study ({', '.join(labels)})")
    evaluated = list(labels) if wanted is None else [name for name in labels if name in wanted]
    multiclass = config.task == "multiclass"
    rules = {name: config.models[name].decision or ev.decision for name in evaluated}
    needs = {name for name in evaluated if not multiclass and
             (rules[name] in LEARNED_ON_HELD_OUT or ev.calibration != "none")}
    held = {}
    eval_set = (evaluation.X, evaluation.Y) if train.in_memory and evaluation.in_memory else None
    if needs and ev.validation == "split" and not ev.refit:
        # thresholds fit the split's model, so that model is evaluated — for every model of the study,
        # so that all are compared trained on the same documents (the training part minus the split)
        with progress.status(f"held-out scores of {', '.join(evaluated)} (split)"), timings.stage("decide"):
            held = held_out_scores(config, evaluated, train, seed, labels, backend)
            for name in evaluated:  # the split's models are the ones evaluated: their fits are "fit <name>"
                timings.add(f"fit {name}", held[name].fit_seconds)
        fitted = {name: held[name].model for name in evaluated}
        fit_seconds = {name: held[name].fit_seconds for name in evaluated}
        compile_seconds = {name: held[name].compile_seconds for name in evaluated}
        started = time.perf_counter()
        with timings.stage("fit"):
            positives, n_train, nnz = _training_counts(train, backend)
        counting_seconds = time.perf_counter() - started if not train.in_memory else 0.0
    else:
        with timings.stage("fit"):  # its own seconds: what the models share (the counting pass when streamed)
            fit = fit_models(config, evaluated, train, seed, labels, backend=backend, eval_set=eval_set)
            for name in evaluated:
                timings.add(f"fit {name}", fit.seconds[name])
        fitted, fit_seconds, compile_seconds = fit.models, fit.seconds, fit.compile_seconds
        positives, n_train, nnz = fit.positives, fit.n, fit.nnz
        counting_seconds = fit.counting_seconds
    untrainable = np.flatnonzero((positives == 0) | (positives == n_train))
    prior = prior_log_odds(positives, n_train).astype(np.float32)
    # from integer counts: a float mean of an all-ones column can exceed 1 by an ulp
    prevalence = positives / max(n_train, 1)
    exclude = untrainable if ev.untrainable == "exclude" else None
    if callable(curve_categories):  # chosen from the training counts (a streamed study's plotted category)
        curve_categories = curve_categories(positives, n_train)

    # decide: rules and calibrations learn from held-out scores, before the evaluation documents are scored
    missing = [name for name in evaluated if name in needs and name not in held]
    if missing:
        with progress.status(f"held-out scores of {', '.join(missing)} ({ev.validation})"), timings.stage("decide"):
            held |= held_out_scores(config, missing, train, seed, labels, backend)
    decisions_of, calibrations = {}, {}
    decide_started = timings.Stopwatch.start(), time.process_time()  # its compiling has a row of its own
    for name in evaluated if not multiclass else ():
        rule_name = config.models[name].decision or ev.decision
        validation = calibration = None
        if name in needs:
            S_val, Y_val = held[name].scores, held[name].labels
            if untrainable_scored_by_prior(config):
                S_val = _by_prior(S_val, untrainable, prior)
            validation = (S_val, Y_val)
        if ev.calibration != "none":
            calibration = fit_calibration(ev.calibration, *validation)
        rule_validation = validation
        if validation is not None and rule_name == "fixed" and calibration is not None:
            rule_validation = (calibration.transform(validation[0]), validation[1])
        decisions_of[name] = fit_decision_rule(rule_name, *(rule_validation or (None, None)), threshold=ev.threshold,
                                               metric=ev.decision_metric, fbr=ev.fbr, fbr_rank=ev.fbr_rank,
                                               rcut_k=ev.rcut_k, train_prevalence=prevalence)
        calibrations[name] = calibration
    timings.add("decide", decide_started[0].seconds, time.process_time() - decide_started[1])

    with timings.stage("score"):
        scored = _score(config, {name: fitted[name] for name in evaluated}, evaluation, backend, decisions_of,
                        calibrations, exclude, prior if untrainable_scored_by_prior(config) else None,
                        untrainable)
    runs = []
    try:
        for name in evaluated:
            with timings.stage("evaluate"):
                runs.append(_evaluate(config, name, labels[name], fitted[name], fit_seconds[name], scored,
                                      decisions_of.get(name), calibrations.get(name), untrainable, prior, prevalence,
                                      evaluation.category_names, curve_categories))
    except BaseException:
        scored.close()
        raise
    split_fitted = needs and ev.validation == "split" and not ev.refit  # every model fitted without the split
    for run in runs:  # what each model was trained on, for the report
        run.n_validation = int(held[run.name].scores.shape[0]) if run.name in needs else 0
        run.compile_seconds = compile_seconds.get(run.name, 0.0)
        run.n_fit = n_train - int(next(iter(held.values())).scores.shape[0]) if split_fitted else n_train
    return LoopResult(runs, positives, n_train, nnz, untrainable, scored, counting_seconds)


def _training_counts(train: Documents, backend) -> tuple[np.ndarray, int, int]:
    """(N (K,), n, nnz) of the training documents: from Y in memory, by a counting pass when streamed."""
    if train.in_memory:
        return label_counts(train.Y), train.n_documents, int(train.X.nnz)
    counts = backend.map_reduce(count_partition, train.source.partitions(), Reading(train.source, train.chunk_size),
                                {}, combine=operator.add, description="counting the training documents")
    return counts.positives, counts.n, counts.nnz


def _score(config: StudyConfig, models: dict, evaluation: Documents, backend, rules: dict, calibrations: dict,
           exclude, prior, untrainable) -> Scored:
    """Every model's scores of the evaluation documents: in memory, or spilled when they do not fit
    (``engine.scores``, ``engine.max_score_memory``)."""
    if evaluation.in_memory:
        return score_in_memory(models, evaluation)
    engine, ev = config.engine, config.eval
    limit = engine.max_score_memory * 2**20
    K = evaluation.n_categories
    if engine.scores == "memory" or (engine.scores == "auto" and fits_in_memory(
            evaluation.source.expected_documents, K, len(models), limit)):
        if backend.sequential:  # read here anyway: no spill to write and read back
            return score_in_memory(models, evaluation)
    # pcut ranks each category's documents at once: it decides from the spill's columns (``_evaluate``)
    chunkwise = {name: rule for name, rule in rules.items() if rule.rule != "pcut"}

    def refuse_spilled(n_documents) -> None:
        """What the spilled evaluation cannot do, refused by what it needs (all scores at once)."""
        why = (f"the test scores were spilled to disk ({'' if n_documents is None else f'{n_documents:,} '}documents "
               f"× {K} categories × {len(models)} models: more than engine.max_score_memory = "
               f"{engine.max_score_memory} MiB, or engine.scores = 'disk')")
        if config.task == "multiclass":
            raise MlnbError(f"task = 'multiclass' evaluates every class of a document at once; {why}")
        # the ranking metrics' intervals resample each document's k best categories (n × k), not its scores;
        # the summary metrics' intervals are what a spill leaves out (SPILL_LIMITS)
        if ev.bootstrap and not ranking_cutoffs(ev.ranking_k):
            raise MlnbError(f"eval.bootstrap = {ev.bootstrap} resamples every test document at once; {why}: raise "
                            "engine.max_score_memory, set eval.bootstrap = 0, or measure the ranking metrics "
                            "(eval.ranking_k > 0), whose intervals a spill keeps")

    if engine.scores == "disk":
        refuse_spilled(None)  # before any work
    scored = score_spilled(models, evaluation, backend, rules=chunkwise, calibrations=calibrations,
                           threshold=ev.threshold, top_k=ev.top_k, exclude=exclude, prior=prior,
                           untrainable=untrainable, spill_folder=engine.spill_folder)
    if engine.scores == "memory" or (engine.scores == "auto" and fits_in_memory(scored.n_documents, K, len(models),
                                                                                 limit)):
        return in_memory(scored)
    try:
        refuse_spilled(scored.n_documents)
    except MlnbError:
        scored.close()
        raise
    return scored


def _evaluate(config: StudyConfig, name: str, label: str, estimator, fit_seconds: float, scored: Scored,
              decision, calibration, untrainable, prior, prevalence, category_names, curve_categories) -> ModelRun:
    ev = config.eval
    spec = config.models[name]
    started = time.perf_counter()
    exclude = untrainable if ev.untrainable == "exclude" else None
    if not scored.in_memory:  # the decisions and probabilities went into the spill's running sums
        evaluation = evaluate_spilled(scored.spills[name], category_names, roc_points=ev.roc_points,
                                      curve_categories=curve_categories, train_prevalence=prevalence,
                                      decided_in_column=decision.decided_in_column if decision is not None
                                      and decision.rule == "pcut" else None)
        return ModelRun(name=name, kind=spec.kind, label=label, model=estimator, fit_seconds=fit_seconds,
                        score_seconds=scored.seconds[name], eval_seconds=time.perf_counter() - started,
                        evaluation=evaluation, decision=decision, calibration=calibration,
                        spill=scored.spills[name])
    Y_eval, scores = scored.Y, scored.scores[name]
    probability_scores = decisions = uncalibrated = None
    if config.task != "multiclass":
        if untrainable_scored_by_prior(config):
            scores = _by_prior(scores, untrainable, prior)
        if calibration is not None:
            probability_scores = calibration.transform(scores)
            uncalibrated = reliability_table(Y_eval, scores)
        decisions = decision.decide(decision.reads(scores, probability_scores))
        evaluation = evaluate(Y_eval, scores, category_names, threshold=ev.threshold,
                              roc_points=ev.roc_points, top_k=ev.top_k, curve_categories=curve_categories,
                              decisions=decisions, probability_scores=probability_scores, exclude=exclude,
                              train_prevalence=prevalence)
    else:
        evaluation = evaluate_multiclass(Y_eval, scores, category_names, threshold=ev.threshold,
                                         roc_points=ev.roc_points, top_k=ev.top_k,
                                         curve_categories=curve_categories, exclude=exclude,
                                         train_prevalence=prevalence)
    return ModelRun(name=name, kind=spec.kind, label=label, model=estimator, fit_seconds=fit_seconds,
                    score_seconds=scored.seconds[name], eval_seconds=time.perf_counter() - started,
                    evaluation=evaluation, scores=scores, decision=decision, calibration=calibration,
                    probability_scores=probability_scores, decisions=decisions, uncalibrated=uncalibrated)


def run_models(config: StudyConfig, X_train, Y_train, X_eval, Y_eval, category_names, *,
               wanted: list[str] | None = None, curve_categories=(), seed: int | None = None) -> list[ModelRun]:
    """``run_on`` for matrices in memory (document ids = row numbers): the runs alone."""
    names = list(category_names) if category_names is not None else [str(k) for k in range(Y_train.shape[1])]
    train = InMemoryDocuments(X_train, Y_train, np.arange(X_train.shape[0], dtype=np.int64), names)
    evaluation = InMemoryDocuments(X_eval, Y_eval, np.arange(X_eval.shape[0], dtype=np.int64), names)
    return run_on(config, train, evaluation, wanted=wanted, curve_categories=curve_categories, seed=seed).runs


def prepare_data(config: StudyConfig) -> tuple[Dataset, FeatureTransform]:
    with progress.status("loading data"), timings.stage("load"):
        dataset = load_dataset(config.data, config.data_seed(), config.features, config.task)
    _check_against_data(config, dataset.category_names)
    check_budget(config, DataShape(int(dataset.train_index.size), int(dataset.test_index.size), dataset.n_features,
                                   dataset.n_categories, int(dataset.X.nnz)))  # the data's real shape now
    if any(get_kind(spec.kind).requires_non_negative(spec.options) for spec in config.study_models()):
        dataset.check_non_negative()  # the test part too, with the file and line of the first bad value
    with timings.stage("features"):
        features = FeatureTransform(config.features.transform, config.features.min_df,
                                    config.features.max_features)
        features.fit(dataset.X_train)
    return dataset, features


def in_memory_documents(config: StudyConfig, dataset: Dataset, features: FeatureTransform
                        ) -> tuple[InMemoryDocuments, InMemoryDocuments]:
    """(train, test) documents of a dataset read whole, after the feature transform."""
    ids, names = dataset.ids, list(dataset.category_names)
    with timings.stage("features"):
        return (InMemoryDocuments(features.transform(dataset.X_train), dataset.Y_train, ids[dataset.train_index],
                                  names),
                InMemoryDocuments(features.transform(dataset.X_test), dataset.Y_test, ids[dataset.test_index], names))


def streamed_documents(config: StudyConfig) -> tuple[StreamedDocuments, StreamedDocuments]:
    """(train, test) documents of a source read in chunks (``data.streaming = true``)."""
    train, test = open_streams(config.data, config.features, config.data_seed())
    if config.task == "multiclass":  # every document read is checked, as the in-memory loader checks them all
        train, test = OneClassSource(train), OneClassSource(test)
    data = config.data
    return (StreamedDocuments(train, data.chunk_size, data.shuffle_buffer),
            StreamedDocuments(test, data.chunk_size, data.shuffle_buffer))


def split_rule(config: StudyConfig, dataset: Dataset | None = None) -> str:
    """The sentence that says how the documents were split into training and test parts."""
    return dataset.split_rule if dataset is not None else describe_split(config.data, config.data_seed())


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
    elif config.report.category >= n_categories:  # -1: chosen from the data (plotted_category)
        raise MlnbError(f"report.category = {config.report.category} is out of range: the data has "
                        f"{n_categories} categories (0..{n_categories - 1})")
    for spec in config.study_models():
        per_category = getattr(spec.options, "lrate_per_category", [])
        if per_category and len(per_category) != n_categories:
            raise MlnbError(f"models.{spec.name}.lrate_per_category has {len(per_category)} values but the "
                            f"data has {n_categories} categories")


def open_documents(config: StudyConfig):
    """(config with report.category and eval.decision resolved, train, test, data description, category names) of
    the config's data: read whole (``data.streaming = false``) or as chunk sources."""
    if not config.data.streaming:
        dataset, features = prepare_data(config)
        train, test = in_memory_documents(config, dataset, features)
        info = dataset.describe() | {"n_features_used": int(train.n_features),
                                     "feature_transform": config.features.transform}
        info.setdefault("split", split_rule(config, dataset))
        names = list(dataset.category_names)
    else:
        if config.engine.spill_folder and not Path(config.engine.spill_folder).is_dir():  # before any work
            raise MlnbError(f"engine.spill_folder = {config.engine.spill_folder!r}: no such folder")
        train, test = streamed_documents(config)
        names = list(train.category_names)
        _check_against_data(config, names)
        # the source's own V and K now, before any chunk is counted (the config may not state them)
        check_budget(config, DataShape(None, None, int(train.n_features), len(names), None))
        info = {"name": train.source.name, "n_features": train.n_features, "n_categories": len(names),
                "n_features_used": train.n_features, "feature_transform": config.features.transform,
                "split": split_rule(config)}
        if train.source.text_features is not None:  # a text source's vocabulary, or its hashing's collisions
            info["text_features"] = train.source.text_features
    config = with_decision_resolved(config)  # the report and the results name the rule the study used
    if config.report.category_name:  # the name decides; the resolved config records the index too
        config = replace(config, report=replace(config.report, category=names.index(config.report.category_name)))
    elif config.report.category < 0 and not config.data.streaming:  # the default: one that exists and is testable
        count = lambda Y: np.asarray(Y.sum(axis=0)).ravel()
        k = plotted_category(count(train.Y), train.n_documents, count(test.Y), test.n_documents)
        config = replace(config, report=replace(config.report, category=k))
    return config, train, test, info, names


def plotted_category(train_positives, n_train: int, test_positives=None, n_test: int | None = None) -> int:
    """``report.category = -1``: the most frequent category among those with training positives and
    negatives and, when the test counts are given, test positives and negatives (its AUC and curves are
    defined): the most positives in both parts, ties broken by the test positives (the points of its
    curves); the first most frequent one when no category is testable."""
    train_positives = np.asarray(train_positives, dtype=np.float64)
    testable = (train_positives > 0) & (train_positives < n_train)
    frequency = train_positives
    if test_positives is not None:
        test_positives = np.asarray(test_positives, dtype=np.float64)
        testable &= (test_positives > 0) & (test_positives < n_test)
        frequency = train_positives + test_positives + test_positives / (n_test + 1.0)
    candidates = np.where(testable, frequency, -1.0) if testable.any() else frequency
    return int(np.argmax(candidates))


def run_study(config: StudyConfig) -> StudyResult:
    """Fit every enabled model on the training part, evaluate it on the test part, compare pairs.
    The seconds of each stage go to ``StudyResult.timings`` (``mlnb.timings``; that of ``mlnb run``
    when it records, which adds the plots and the writing)."""
    check_work(config, study_work(config), "run")  # before any data is read
    fingerprint = data_fingerprint(config)  # the files as they are read now, not when the results are written
    started = time.perf_counter()
    with ExitStack() as stack:
        clock = stack.enter_context(timings.recording(timings.current()))
        config, train, test, info, names = open_documents(config)
        backend = stack.enter_context(open_backend(config.engine)) if config.data.streaming else LocalBackend()
        load_seconds = time.perf_counter() - started
        chosen = []  # streamed, report.category = -1: chosen from the training counts, before the test scores
        curves = [config.report.category] if config.report.category >= 0 else \
            (lambda positives, n: chosen.append(plotted_category(positives, n)) or chosen)
        loop = run_on(config, train, test, curve_categories=curves, backend=backend)
        if chosen:
            config = replace(config, report=replace(config.report, category=chosen[0]))
        stack.callback(loop.scored.close)
        scored = loop.scored
        if config.data.streaming:
            n_test = scored.n_documents
            info |= {"n_documents": loop.n_train + n_test, "n_train": loop.n_train, "n_test": n_test, "nnz": loop.nnz_train,
                     "mean_labels_per_document": float(loop.train_positives.sum() / max(loop.n_train, 1)),
                     "mean_features_per_document": loop.nnz_train / max(loop.n_train, 1),
                     "streaming": {"chunk_size": config.data.chunk_size,
                                   "shuffle_buffer": config.data.shuffle_buffer,
                                   "engine": backend.describe(),
                                   "dask_training": {run.name: run.model.dask_training_ for run in loop.runs
                                                     if hasattr(run.model, "dask_training_")},
                                   "scores": "in memory" if scored.in_memory else "spilled to disk",
                                   "not_computed": "" if scored.in_memory else SPILL_LIMITS}}
        # reading the data: loading it whole, or the counting pass over the training chunks
        result = StudyResult(config=config, data=info, category_names=names, train_positives=loop.train_positives,
                             load_seconds=load_seconds + loop.counting_seconds, Y_test=scored.Y,
                             untrainable=loop.untrainable, timings=clock, data_fingerprint=fingerprint)
        result.models = loop.runs
        _uncertainty(result, scored)
        _compare(result, scored)
        _rank_at_k(result, scored, loop.n_train)
    for run in result.models:
        run.spill = None  # deleted with the run's temporary folder
    return result


def _uncertainty(result: StudyResult, scored: Scored) -> None:
    """Bootstrap intervals of the summary metrics and score intervals of every category's AUC."""
    config, ev = result.config, result.config.eval
    excluded = result.untrainable if ev.untrainable == "exclude" else None
    for run in result.models:
        if not scored.in_memory:
            spill = run.spill
            with progress.status(f"AUC intervals of {run.name}"), timings.stage("intervals"):
                run.auc_intervals = category_auc_intervals_by_column(
                    lambda k, spill=spill: (spill.label_column(k), spill.scores_column(k)), spill.n_categories,
                    ev.confidence, work=column_work(spill.positive_counts, spill.n_documents))
            continue
        decisions = run.decisions
        if config.task == "multiclass":  # the argmax decision, one class per document
            n, K = run.scores.shape
            decisions = sp.csr_matrix((np.ones(n, dtype=np.int8), run.evaluation.predicted, np.arange(n + 1)),
                                      shape=(n, K))
        if ev.bootstrap:
            with progress.status(f"bootstrap intervals of {run.name} ({ev.bootstrap} resamples)"), \
                    timings.stage("bootstrap"):
                run.intervals = bootstrap_intervals(scored.Y, run.rank_scores, decisions=decisions,
                                                    n_boot=ev.bootstrap, seed=config.seed, level=ev.confidence,
                                                    exclude=excluded)
        with timings.stage("intervals"):
            run.auc_intervals = category_auc_intervals(scored.Y, run.rank_scores, level=ev.confidence)


def _compare(result: StudyResult, scored: Scored) -> None:
    """DeLong tests per category of every compared pair (and McNemar's test for multiclass)."""
    config = result.config
    excluded = result.untrainable if config.eval.untrainable == "exclude" else None
    for name_a, name_b in config.compared_pairs():
        a, b = result.model(name_a), result.model(name_b)
        with progress.status(f"DeLong tests per category, {name_a} against {name_b}"), timings.stage("comparisons"):
            if not scored.in_memory:
                spill_a, spill_b = a.spill, b.spill

                def column(k: int, spill_a=spill_a, spill_b=spill_b):
                    return spill_a.label_column(k), spill_a.scores_column(k), spill_b.scores_column(k)

                table = auc_difference_tests_by_column(column, len(result.category_names),
                                                       work=column_work(spill_a.positive_counts, spill_a.n_documents))
                result.comparisons.append(comparison_from_tests(table, result.category_names, result.train_positives,
                                                                a.label, b.label, config.report.alpha, name_a,
                                                                name_b, exclude=excluded))
                continue
            mcnemar = None
            if config.task == "multiclass":  # paired accuracy on the same documents
                truth = a.evaluation.true
                mcnemar = mcnemar_test(a.evaluation.predicted == truth, b.evaluation.predicted == truth)
            result.comparisons.append(compare_scores(scored.Y, a.rank_scores, b.rank_scores, result.category_names,
                                                     result.train_positives, a.label, b.label,
                                                     config.report.alpha, name_a, name_b, mcnemar=mcnemar,
                                                     exclude=excluded, n_boot=config.eval.bootstrap,
                                                     seed=config.seed, level=config.eval.confidence))


def labels_and_top_k(scored: Scored, runs, k: int) -> tuple:
    """(the evaluation labels, {run name: each document's k best categories}) of ``runs`` whose scores are in
    memory (``top_k_of_scores``) or spilled (``top_k_of_spill``, a block of whole categories at a time: the same
    rankings); shared by the run (``_rank_at_k``) and by sweep and curve points (``mlnb.studies.ranking``)."""
    if scored.in_memory:
        return scored.Y, {run.name: top_k_of_scores(run.scores, k)[0] for run in runs}
    return spill_labels(runs[0].spill), {run.name: top_k_of_spill(run.spill, k)[0] for run in runs}


def _rank_at_k(result: StudyResult, scored: Scored, n_train: int) -> None:
    """Multilabel, ``eval.ranking_k`` = k > 0: each model's k best categories of every test document, from
    its evaluated scores in memory (``top_k_of_scores``) or from its spill, a block of whole categories at a
    time (``top_k_of_spill``: the same rankings), then P@k, R@k, nDCG@k, PSP@k, PSnDCG@k and coverage@k at
    the cut-offs ``ranking_cutoffs(k)``, with the study's bootstrap intervals and, for two models or more,
    the paired differences of the best by P@1 against each other one (``mlnb.metrics.at_k_study``; none
    with ``report.paired_tests = false``). Every category is ranked, untrainable ones too, by the scores the
    evaluation reads (their training prior under eval.untrainable = 'prior' or 'keep'). Propensities from the
    training counts (``eval.propensity_a``, ``eval.propensity_b``)."""
    config, ev = result.config, result.config.eval
    ks = ranking_cutoffs(ev.ranking_k)
    if not ks or config.task == "multiclass" or not result.models:
        return
    with progress.status(f"ranking metrics at k = {ev.ranking_k}"), timings.stage("evaluate"):
        labels, rankings = labels_and_top_k(scored, result.models, ev.ranking_k)
        propensity = propensities_from_counts(result.train_positives, n_train, ev.propensity_a, ev.propensity_b)
    with progress.status("ranking metrics' intervals and comparisons"), timings.stage("intervals"):
        per_model, comparisons = rank_models(rankings, labels, ks, propensity, n_boot=ev.bootstrap,
                                             level=ev.confidence, seed=config.seed,
                                             compare=config.report.paired_tests)
    bands = frequency_bands(result.train_positives)  # each band's share of P@j (``mlnb.metrics.bands``)
    for run in result.models:
        run.ranking = per_model[run.name] | {"by_band": precision_at_k_by_band(labels, rankings[run.name], bands, ks)}
    result.ranking_ks, result.ranking_propensity_scored = ks, propensity is not None
    result.ranking_comparisons = comparisons
