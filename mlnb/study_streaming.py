"""A study read chunk by chunk (``data.streaming = true``), here or on a Dask cluster.

The same config and the same loop as ``mlnb.study`` — fit every model, score, decide, evaluate,
compare — with the corpus never in memory at once (``mlnb.backends.tasks`` has the passes):

    count     one pass over the training chunks: label counts and every NB model's counts
    fit       NB from its counts; LR (and NB-LR from its NB ratios) by ``npasses`` passes
    score     one pass over the test chunks: scores spilled to disk per model, with running sums
    evaluate  per category from the spilled scores (exact), micro AUC/AP binned (with the bound)
    compare   DeLong per category, one category's scores read from disk at a time

What it leaves out, each stated in the report: bootstrap intervals (a resample of all test
documents at once), the scores file for ``mlnb compare`` (the spill is deleted after the run),
and the exact pooled micro AUC (binned, with its largest possible error beside it).
"""

from __future__ import annotations

import operator
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from sklearn.base import clone

from mlnb import progress
from mlnb.backends import open_backend
from mlnb.backends.tasks import (Counter, LogisticJob, Reading, Scoring, finished_naive_bayes, fit_logistic_here,
                                 lr_pass_partition, merge_spills, mix, worker_groups, count_partition,
                                 score_partitions)
from mlnb.config import StudyConfig, fit_order
from mlnb.data.stream_config import open_streams
from mlnb.decision import fit_decision_rule
from mlnb.errors import MlnbError
from mlnb.metrics.comparison import comparison_from_tests
from mlnb.metrics.significance import delong_tests_by_column
from mlnb.metrics.streaming import ScoreSpill, evaluate_spilled
from mlnb.metrics.uncertainty import auc_intervals_by_column
from mlnb.models import get_kind
from mlnb.models._linear import prior_log_odds
from mlnb.models.naive_bayes import NaiveBayes
from mlnb.study import ModelRun, StudyResult, _check_against_data, model_labels


def _counters(config: StudyConfig, seed: int) -> dict[str, Counter]:
    """The NB counts the models need: each naive_bayes model's own, and each nb_logistic model's
    multinomial NB on x̂ (its log-count ratios R)."""
    counters = {}
    for spec in config.study_models():
        estimator = get_kind(spec.kind).build(spec.options, seed, config.task)
        if spec.kind == "naive_bayes":
            counters[spec.name] = Counter(estimator)
        elif spec.kind == "nb_logistic":
            counters[spec.name] = Counter(NaiveBayes(event_model="multinomial", alpha=estimator.alpha,
                                                     binarize=estimator.binarize), binarize_input=estimator.binarize)
    return counters


def _start_state(engine, V: int, K: int, counts, coef_init=None, intercept_init=None) -> dict:
    """The state every worker starts the first pass from: W = coef_init or 0, b = intercept_init
    or the training priors, no AdaGrad history (what ``fit`` starts from)."""
    W = np.zeros((V, K), dtype=np.float32) if coef_init is None else np.array(coef_init, dtype=np.float32)
    b = prior_log_odds(counts.positives, counts.n).astype(np.float32) if intercept_init is None else \
        np.array(intercept_init, dtype=np.float32)
    adagrad = engine.updater == "adagrad"
    return {"weights": W, "bias": b, "S": np.zeros((V, K), dtype=np.float32) if adagrad else None,
            "Sb": np.zeros(K, dtype=np.float32), "t": 0, "passes": 0, "rng": None,
            "category_counts": (counts.positives, counts.n), "start_loss": None, "reference_loss": None,
            "task": engine.task, "updater": engine.updater}


def _fit_logistic(backend, job: LogisticJob, partitions, counts, coef_init=None, intercept_init=None):
    """One process: the engine through every chunk in order. Dask: per pass, every partition from
    the same state on a worker, then their document-weighted average (``tasks`` docstring)."""
    if backend.name == "local":
        return fit_logistic_here(job, partitions, counts, coef_init, intercept_init)
    source = job.reading.source
    V, K = source.n_features, source.n_categories
    engine = clone(job.estimator)
    state = _start_state(engine, V, K, counts, coef_init, intercept_init)
    history = []
    groups = worker_groups(partitions, backend.n_workers)  # one trainer per worker: the fewest models to mix
    for epoch in range(1, engine.npasses + 1):
        started = time.perf_counter()
        mixed = backend.map_reduce(lr_pass_partition, groups, job, state, epoch, combine=mix,
                                   description=f"LR pass {epoch}")
        state = {**mixed.state, "passes": epoch}
        seconds = time.perf_counter() - started
        history.append({"pass": epoch, "seconds": seconds, "docs_per_second": mixed.documents / seconds,
                        "trainers": len(groups)})
        progress.log(f"LR pass {epoch}/{engine.npasses} on {backend.n_workers} Dask workers: {mixed.documents:,} "
                     f"documents in {seconds:.1f} s, {mixed.documents / seconds:,.0f} docs/s (parameter mixing of "
                     f"{len(groups)} trainers)")
    engine.set_state(state)
    if job.scale is not None:  # the state holds W′ of W = R ∘ W′
        engine.weights_prime_, engine.weights_ = engine.weights_, job.scale * engine.weights_
    engine.history_ = history
    return engine


def _fit_models(config, backend, train, partitions, counts, seed: int, labels: dict):
    fitted, seconds = {}, {}
    reading = Reading(train, config.data.chunk_size)
    V = train.n_features
    for spec in fit_order(config):
        kind = get_kind(spec.kind)
        estimator = kind.build(spec.options, seed, config.task)
        started = time.perf_counter()
        try:
            with progress.status(f"fitting {labels[spec.name]}"):
                if spec.kind == "naive_bayes":
                    model = finished_naive_bayes(estimator, counts.nb.get(spec.name), V)
                elif spec.kind == "logistic":
                    start = {}
                    if spec.options.init_from:
                        kind.fit_arguments(spec.options, fitted, None)  # its checks
                        first = fitted[spec.options.init_from]
                        start = {"coef_init": first.weights_, "intercept_init": first.bias_}
                    job = LogisticJob(reading, estimator, False, None, config.data.shuffle_buffer)
                    model = _fit_logistic(backend, job, partitions, counts, **start)
                else:  # nb_logistic: R from its NB counts, W′ by the engine on x̂, then W = R ∘ W″
                    ratios = finished_naive_bayes(NaiveBayes(event_model="multinomial", alpha=estimator.alpha,
                                                             binarize=estimator.binarize),
                                                  counts.nb.get(spec.name), V).weights_
                    R = np.ascontiguousarray(ratios, dtype=np.float32)
                    job = LogisticJob(reading, estimator._engine(), bool(estimator.binarize), R,
                                      config.data.shuffle_buffer)
                    model = estimator.finish(_fit_logistic(backend, job, partitions, counts), R)
        except MlnbError as error:
            raise MlnbError(f"models.{spec.name}: {error}") from None
        fitted[spec.name], seconds[spec.name] = model, time.perf_counter() - started
    return fitted, seconds


def _auc_intervals(spill: ScoreSpill, level: float) -> np.ndarray:
    """(K, 2) DeLong intervals per category, read from disk in blocks of columns."""
    return auc_intervals_by_column(lambda k: (spill.label_column(k), spill.scores_column(k)), spill.n_categories,
                                   level)


def run_streaming_study(config: StudyConfig) -> StudyResult:
    """``run_study`` for ``data.streaming = true`` (module docstring)."""
    started = time.perf_counter()
    train, test = open_streams(config.data, config.features, config.seed)
    names = list(train.category_names)
    _check_against_data(config, names)
    if config.report.category_name:
        config = replace(config, report=replace(config.report, category=names.index(config.report.category_name)))
    seed, ev, labels = config.seed, config.eval, model_labels(config)
    if config.engine.spill_folder and not Path(config.engine.spill_folder).is_dir():
        raise MlnbError(f"engine.spill_folder = {config.engine.spill_folder!r}: no such folder")
    spill_root = Path(tempfile.mkdtemp(prefix="mlnb-scores-", dir=config.engine.spill_folder or None))
    try:
        with open_backend(config.engine) as backend:
            partitions = train.partitions()
            with progress.status("counting the training documents"):
                counts = backend.map_reduce(count_partition, partitions, Reading(train, config.data.chunk_size),
                                            _counters(config, seed), combine=operator.add,
                                            description="counting the training documents")
            if counts.n == 0:
                raise MlnbError(f"{train.name}: no training documents (data.test_fraction = {config.data.test_fraction} "
                                "of every document went to the test part, or the data are empty)")
            load_seconds = time.perf_counter() - started
            fitted, fit_seconds = _fit_models(config, backend, train, partitions, counts, seed, labels)
            untrainable = np.flatnonzero((counts.positives == 0) | (counts.positives == counts.n))
            prior = prior_log_odds(counts.positives, counts.n).astype(np.float32)
            prevalence = counts.positives / counts.n
            rules = {name: fit_decision_rule(config.models[name].decision or ev.decision, threshold=ev.threshold,
                                             rcut_k=ev.rcut_k, train_prevalence=prevalence) for name in fitted
                     if config.models[name].enabled}
            evaluated = {name: model for name, model in fitted.items() if name in labels}
            scoring = Scoring(Reading(test, config.data.chunk_size), evaluated, rules, ev.threshold, ev.top_k,
                              untrainable if ev.untrainable == "exclude" else None,
                              prior if ev.untrainable == "prior" else None, untrainable)
            score_started = time.perf_counter()
            test_partitions = test.partitions()
            # one spill per model here; one per partition and model on Dask, merged below
            groups = [(0, test_partitions)] if backend.name == "local" else list(enumerate([p] for p in test_partitions))
            backend.map(score_partitions, groups, scoring, str(spill_root), description="scoring the test documents")
            engine = backend.describe()
        spills = {}
        # parts written by one task each (Dask) are merged into one spill per model
        for name in evaluated:
            parts = sorted(spill_root.glob(f"part-*/{name}"))
            spills[name] = merge_spills(parts, spill_root / name) if len(parts) > 1 else ScoreSpill.open(parts[0])
        score_seconds = time.perf_counter() - score_started
        result = _result(config, train, counts, fitted, fit_seconds, spills, rules, names, untrainable, load_seconds,
                         score_seconds, backend_description=engine)
    finally:
        shutil.rmtree(spill_root, ignore_errors=True)
    return result


def _result(config, train, counts, fitted, fit_seconds, spills, rules, names, untrainable, load_seconds,
            score_seconds, backend_description) -> StudyResult:
    ev, labels = config.eval, model_labels(config)
    n_test = next(iter(spills.values())).n_documents
    data = {"name": train.name, "n_documents": counts.n + n_test, "n_train": counts.n, "n_test": n_test,
            "n_features": train.n_features, "n_categories": len(names), "nnz": counts.nnz,
            "mean_labels_per_document": float(counts.positives.sum() / counts.n),
            "mean_features_per_document": counts.nnz / counts.n,
            "n_features_used": train.n_features, "feature_transform": config.features.transform,
            "streaming": {"chunk_size": config.data.chunk_size, "shuffle_buffer": config.data.shuffle_buffer,
                          "engine": backend_description,
                          "not_computed": "bootstrap intervals and the scores file for `mlnb compare` (the scores "
                                          "stay on disk only during the run); micro AUC/AP are binned, with their "
                                          "largest possible error in the summary"}}
    result = StudyResult(config=config, data=data, category_names=names, train_positives=counts.positives,
                         load_seconds=load_seconds, Y_test=None, untrainable=untrainable)
    for name, spill in spills.items():
        started = time.perf_counter()
        with progress.status(f"evaluating {name} from its spilled scores"):
            evaluation = evaluate_spilled(spill, names, roc_points=ev.roc_points,
                                          curve_categories=[config.report.category],
                                          train_prevalence=counts.positives / counts.n)
        run = ModelRun(name=name, kind=config.models[name].kind, label=labels[name], model=fitted[name],
                       fit_seconds=fit_seconds[name], score_seconds=score_seconds / len(spills),
                       eval_seconds=time.perf_counter() - started, evaluation=evaluation, decision=rules[name])
        with progress.status(f"DeLong intervals of {name}"):
            run.auc_intervals = _auc_intervals(spill, ev.confidence)
        result.models.append(run)
    excluded = untrainable if ev.untrainable == "exclude" else None
    for name_a, name_b in config.compared_pairs():
        a, b = result.model(name_a), result.model(name_b)
        spill_a, spill_b = spills[name_a], spills[name_b]

        def column(k: int):
            return spill_a.label_column(k), spill_a.scores_column(k), spill_b.scores_column(k)

        with progress.status(f"DeLong tests per category, {name_a} against {name_b}"):
            table = delong_tests_by_column(column, len(names))
        result.comparisons.append(comparison_from_tests(table, names, counts.positives, a.label, b.label,
                                                        config.report.alpha, name_a, name_b, exclude=excluded))
    return result
