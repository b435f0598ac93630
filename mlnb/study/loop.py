"""The one loop (``run_on``) and the run of a study (``run_study``): fit, decide, score, evaluate, then
intervals, paired tests and the ranking metrics at k — each stage from its module of ``mlnb.study``.

The scores of the evaluation documents are asked of the ``ScoreStore`` scoring gives (``mlnb.study.stores``),
whether they are held in memory or spilled to disk; nothing here asks where they are.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, replace

import numpy as np

from mlnb import progress, timings
from mlnb.backends import LocalBackend
from mlnb.config import StudyConfig, with_decision_resolved
from mlnb.data.fingerprint import data_fingerprint
from mlnb.decision import LEARNED_ON_HELD_OUT
from mlnb.errors import MlnbError
from mlnb.metrics.at_k_study import propensities_from_counts, rank_models, ranking_cutoffs
from mlnb.metrics.bands import frequency_bands, precision_at_k_by_band
from mlnb.models._linear import prior_log_odds
from mlnb.study.deciding import fit_decisions, held_out_scores, untrainable_scored_by_prior
from mlnb.study.documents import Documents, InMemoryDocuments
from mlnb.study.fitting import fit_models, monitored_set, training_counts
from mlnb.study.opening import describe_documents, open_documents, open_executor, plotted_category
from mlnb.study.results import ModelRun, StudyResult, model_labels
from mlnb.study.scoring import score_evaluation
from mlnb.study.stores import ScoreStore
from mlnb.work import check_work, study_work


@dataclass(eq=False)
class LoopResult:
    """What ``run_on`` gives besides the runs: the training documents' counts and the store of the scores."""

    runs: list[ModelRun]
    train_positives: np.ndarray  # (K,) float64
    n_train: int
    nnz_train: int
    untrainable: np.ndarray
    store: ScoreStore
    counting_seconds: float = 0.0  # streamed: the counting pass of the training documents


def run_on(config: StudyConfig, train: Documents, evaluation: Documents, *, wanted: list[str] | None = None,
           curve_categories=(), seed: int | None = None, backend=None) -> LoopResult:
    """Fit every enabled model (or those ``wanted``, with the models they start from) on the
    training documents, then score, decide and evaluate it on the evaluation documents.

    Decide: the model's decision rule (``eval.decision`` or its own ``decision``) and the
    calibration (``eval.calibration``) learn from held-out scores of the training documents
    (``held_out_scores``), never from the evaluation documents; ``task = "multiclass"`` decides
    by the most probable class. Every ``eval.*`` key reaches this stage or the evaluation, for
    every command and every size. The caller closes ``LoopResult.store`` (spilled scores).
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
        with timings.stage("fit"):
            positives, n_train, nnz, counting_seconds = training_counts(train, backend)
    else:
        with timings.stage("fit"):  # its own seconds: what the models share (the counting pass when streamed)
            fit = fit_models(config, evaluated, train, seed, labels, backend=backend,
                             eval_set=monitored_set(train, evaluation))
            for name in evaluated:
                timings.add(f"fit {name}", fit.seconds[name])
        fitted, fit_seconds, compile_seconds = fit.models, fit.seconds, fit.compile_seconds
        positives, n_train, nnz = fit.positives, fit.n, fit.nnz
        counting_seconds = fit.counting_seconds
    untrainable = np.flatnonzero((positives == 0) | (positives == n_train))
    prior = prior_log_odds(positives, n_train).astype(np.float32)
    by_prior = prior if untrainable_scored_by_prior(config) else None
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
    decide_started = timings.Stopwatch.start(), time.process_time()  # its compiling has a row of its own
    decisions_of, calibrations = fit_decisions(config, evaluated, {name: held[name] for name in needs}, untrainable,
                                               prior, prevalence)
    timings.add("decide", decide_started[0].seconds, time.process_time() - decide_started[1])

    with timings.stage("score"):
        store = score_evaluation(config, {name: fitted[name] for name in evaluated}, evaluation, backend,
                                 decisions_of, calibrations, exclude, by_prior, untrainable)
    runs = []
    try:
        for name in evaluated:
            with timings.stage("evaluate"):
                started = time.perf_counter()
                evaluated_fields = store.evaluate(name, config, decision=decisions_of.get(name),
                                                  calibration=calibrations.get(name), untrainable=untrainable,
                                                  by_prior=by_prior, prevalence=prevalence,
                                                  category_names=evaluation.category_names,
                                                  curve_categories=curve_categories)
                runs.append(ModelRun(name=name, kind=config.models[name].kind, label=labels[name],
                                     model=fitted[name], fit_seconds=fit_seconds[name],
                                     score_seconds=store.seconds[name], eval_seconds=time.perf_counter() - started,
                                     decision=decisions_of.get(name), calibration=calibrations.get(name),
                                     **evaluated_fields))
    except BaseException:
        store.close()
        raise
    split_fitted = needs and ev.validation == "split" and not ev.refit  # every model fitted without the split
    for run in runs:  # what each model was trained on, for the report
        run.n_validation = int(held[run.name].scores.shape[0]) if run.name in needs else 0
        run.compile_seconds = compile_seconds.get(run.name, 0.0)
        run.n_fit = n_train - int(next(iter(held.values())).scores.shape[0]) if split_fitted else n_train
    return LoopResult(runs, positives, n_train, nnz, untrainable, store, counting_seconds)


def run_models(config: StudyConfig, X_train, Y_train, X_eval, Y_eval, category_names, *,
               wanted: list[str] | None = None, curve_categories=(), seed: int | None = None) -> list[ModelRun]:
    """``run_on`` for matrices in memory (document ids = row numbers): the runs alone."""
    names = list(category_names) if category_names is not None else [str(k) for k in range(Y_train.shape[1])]
    train = InMemoryDocuments(X_train, Y_train, np.arange(X_train.shape[0], dtype=np.int64), names)
    evaluation = InMemoryDocuments(X_eval, Y_eval, np.arange(X_eval.shape[0], dtype=np.int64), names)
    return run_on(config, train, evaluation, wanted=wanted, curve_categories=curve_categories, seed=seed).runs


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
        backend = stack.enter_context(open_executor(config))
        load_seconds = time.perf_counter() - started
        chosen = []  # streamed, report.category = -1: chosen from the training counts, before the test scores
        curves = [config.report.category] if config.report.category >= 0 else \
            (lambda positives, n: chosen.append(plotted_category(positives, n)) or chosen)
        loop = run_on(config, train, test, curve_categories=curves, backend=backend)
        if chosen:
            config = replace(config, report=replace(config.report, category=chosen[0]))
        stack.callback(loop.store.close)
        # reading the data: loading it whole, or the counting pass over the training chunks
        result = StudyResult(config=config, data=describe_documents(config, info, loop, backend), category_names=names,
                             train_positives=loop.train_positives, load_seconds=load_seconds + loop.counting_seconds,
                             Y_test=loop.store.labels_kept, untrainable=loop.untrainable, timings=clock,
                             data_fingerprint=fingerprint)
        if loop.store.describe()["not_computed"] and "streaming" not in result.data:  # else said there
            result.data = result.data | {"test_scores": loop.store.describe()}
        result.models = loop.runs
        _intervals(result, loop.store)
        _compare(result, loop.store)
        _rank_at_k(result, loop.store, loop.n_train)
    for run in result.models:
        run.spill = None  # deleted with the run's temporary folder
    return result


def _excluded(result: StudyResult):
    """The categories left out of every average (eval.untrainable = 'exclude'), or None."""
    return result.untrainable if result.config.eval.untrainable == "exclude" else None


def _intervals(result: StudyResult, store: ScoreStore) -> None:
    """Bootstrap intervals of the summary metrics and score intervals of every category's AUC
    (``ScoreStore.intervals``)."""
    for run in result.models:
        run.intervals, run.auc_intervals = store.intervals(run, result.config, _excluded(result))


def _compare(result: StudyResult, store: ScoreStore) -> None:
    """DeLong tests per category of every compared pair (and McNemar's test for multiclass;
    ``ScoreStore.compare``)."""
    for name_a, name_b in result.config.compared_pairs():
        with progress.status(f"DeLong tests per category, {name_a} against {name_b}"), timings.stage("comparisons"):
            comparison = store.compare(result.model(name_a), result.model(name_b), result.config,
                                       result.category_names, result.train_positives, _excluded(result))
        if comparison is not None:  # None: a store without every score (``TopKScores``)
            result.comparisons.append(comparison)


def _rank_at_k(result: StudyResult, store: ScoreStore, n_train: int) -> None:
    """Multilabel, ``eval.ranking_k`` = k > 0: each model's k best categories of every test document, from
    its evaluated scores wherever the store holds them (``ScoreStore.top_k``: in memory ``top_k_of_scores``,
    spilled ``top_k_of_spill``, a block of whole categories at a time: the same rankings), then P@k, R@k,
    nDCG@k, PSP@k, PSnDCG@k and coverage@k at the cut-offs ``ranking_cutoffs(k)``, with the study's bootstrap
    intervals and, for two models or more, the paired differences of the best by P@1 against each other one
    (``mlnb.metrics.at_k_study``; none with ``report.paired_tests = false``). Every category is ranked,
    untrainable ones too, by the scores the evaluation reads (their training prior under eval.untrainable =
    'prior' or 'keep'). Propensities from the training counts (``eval.propensity_a``, ``eval.propensity_b``)."""
    config, ev = result.config, result.config.eval
    ks = ranking_cutoffs(ev.ranking_k)
    if not ks or config.task == "multiclass" or not result.models:
        return
    with progress.status(f"ranking metrics at k = {ev.ranking_k}"), timings.stage("evaluate"):
        labels, rankings = store.top_k(result.models, ev.ranking_k)
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
