r"""Where a study's evaluation scores are held, and what the study computes from them there: a ``ScoreStore``.

Scoring (``mlnb.study.scoring``) gives one store for every model of the study; the loop and the commands
then ask it the same things whatever it holds, and never ask where the scores are:

    evaluate    every metric of one model (``mlnb.metrics.evaluation``), its decisions and probabilities
    intervals   bootstrap intervals of the summary metrics and score intervals of every category's AUC
    compare     DeLong tests per category of two models (and McNemar's test for multiclass)
    top_k       each document's k best categories, for the ranking metrics at k

Three stores implement it:

    ScoresInMemory  the (n × K) float32 scores of each model and the labels Y (CSR). Everything runs on
                    them exactly as on any in-memory study, on the scores the evaluation read (the
                    untrainable categories by their prior under eval.untrainable = 'prior' or 'keep').
    SpilledScores   one ``ScoreSpill`` per model (``mlnb.metrics.streaming``), category-major on disk, with
                    the running sums of every pointwise metric (decisions and calibrated probabilities
                    applied chunk by chunk while scoring). What reads one category at a time reads its
                    column (AUC intervals, DeLong tests: the in-memory numbers); what needs every score at
                    once is left out or bounded, and the report says which (``SPILL_LIMITS``).
    TopKScores      each document's eval.ranking_k best categories and their scores, ranked while scoring
                    (``mlnb.study.top_k``, engine.scores = "top_k"): the ranking metrics at k and RCut's exact
                    per-category counts; what needs every score is not computed, and ``describe`` says so.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import scipy.sparse as sp

from mlnb import progress, timings
from mlnb.metrics.at_k import top_k_of_scores
from mlnb.metrics.at_k_study import spill_labels, top_k_of_spill
from mlnb.metrics.auc_intervals import category_auc_intervals, category_auc_intervals_by_column
from mlnb.metrics.comparison import Comparison, compare_scores, comparison_from_tests
from mlnb.metrics.evaluation import evaluate, reliability_table
from mlnb.metrics.multiclass import evaluate_multiclass
from mlnb.metrics.ranking import column_work
from mlnb.metrics.significance import auc_difference_tests_by_column, mcnemar_test
from mlnb.metrics.streaming import evaluate_spilled
from mlnb.metrics.uncertainty import bootstrap_intervals

#: what an evaluation from spilled scores cannot do, each as the report states it
SPILL_LIMITS = ("bootstrap intervals of the summary metrics (those of the ranking metrics at k are kept: they "
                "resample each document's k best categories) and the scores file for `mlnb compare` (the scores stay "
                "on disk only during the run); micro AUC/AP are binned, with their largest possible error in the "
                "summary")


def scored_by_prior(scores: np.ndarray, categories: np.ndarray, prior: np.ndarray | None) -> np.ndarray:
    """``scores`` with the columns of ``categories`` set to their training prior log-odds ``prior[k]`` (a copy;
    ``scores`` itself when ``prior`` is None or no category is given): how every model scores its untrainable
    categories under eval.untrainable = 'prior' or 'keep' (``mlnb.study.deciding.BY_PRIOR``)."""
    if prior is None or not categories.size:
        return scores
    scores = scores.copy()
    scores[:, categories] = prior[categories]
    return scores


class ScoreStore(Protocol):
    """Every model's scores of the evaluation documents, and what the study computes from them (module docstring).

    ``evaluate`` gives the ``ModelRun`` fields of one model's evaluation; ``intervals``, ``compare`` and
    ``top_k`` take the evaluated runs. ``close`` lets go of the scores (a spill's folder is deleted)."""

    n_documents: int
    seconds: dict  # model name -> scoring seconds

    @property
    def labels(self) -> sp.csr_matrix:
        """(n × K) 0/1 labels of the evaluation documents, CSR."""

    @property
    def labels_kept(self) -> sp.csr_matrix | None:
        """The labels a study's result keeps with its runs' scores (tables, the scores file); None where no
        scores are kept."""

    def describe(self) -> dict:
        """{"scores": where they are held, "not_computed": what that leaves out ("" for nothing)}."""

    def evaluate(self, name: str, config, *, decision, calibration, untrainable: np.ndarray, by_prior,
                 prevalence: np.ndarray, category_names, curve_categories) -> dict:
        """The ``ModelRun`` fields of model ``name``'s evaluation."""

    def intervals(self, run, config, excluded) -> tuple[dict, np.ndarray | None]:
        """(bootstrap intervals of the summary metrics, (K, 2) score intervals of each category's AUC, or None
        where no AUC is computed) of ``run``."""

    def compare(self, a, b, config, category_names, train_positives, excluded) -> Comparison | None:
        """The paired tests of runs ``a`` and ``b`` on the same documents, a − b; None where the store keeps too
        little of the scores for them (``TopKScores``)."""

    def top_k(self, runs, k: int) -> tuple:
        """(the labels, {run name: (n, k) each document's k best categories}) of ``runs``."""

    def close(self) -> None:
        """Let go of the scores."""


@dataclass(eq=False)
class ScoresInMemory:
    """Every model's scores held in memory: ``scores`` name -> (n, K) float32, the labels ``Y`` and the ids."""

    n_documents: int
    Y: sp.csr_matrix  # (n, K) 0/1
    ids: np.ndarray | None = None  # (n,) int64 document ids
    scores: dict = field(default_factory=dict)  # name -> (n, K) float32
    seconds: dict = field(default_factory=dict)  # name -> scoring seconds

    @property
    def labels(self) -> sp.csr_matrix:
        return self.Y

    @property
    def labels_kept(self) -> sp.csr_matrix:
        return self.Y

    def describe(self) -> dict:
        return {"scores": "in memory", "not_computed": ""}

    def evaluate(self, name: str, config, *, decision, calibration, untrainable: np.ndarray, by_prior,
                 prevalence: np.ndarray, category_names, curve_categories) -> dict:
        """Multilabel: the scores (untrainable categories by their prior ``by_prior``, when given), their
        calibrated probabilities, the decision rule's decisions, and ``evaluate`` of them; multiclass,
        ``evaluate_multiclass`` of the scores as scored."""
        ev = config.eval
        exclude = untrainable if ev.untrainable == "exclude" else None
        Y_eval, scores = self.Y, self.scores[name]
        probability_scores = decisions = uncalibrated = None
        if config.task != "multiclass":
            scores = scored_by_prior(scores, untrainable, by_prior)
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
        return {"evaluation": evaluation, "scores": scores, "probability_scores": probability_scores,
                "decisions": decisions, "uncalibrated": uncalibrated}

    def intervals(self, run, config, excluded) -> tuple[dict, np.ndarray]:
        """``bootstrap_intervals`` of the run's rank scores and decisions (eval.bootstrap resamples; multiclass,
        the argmax decision, one class per document) and ``category_auc_intervals`` of its rank scores."""
        ev = config.eval
        decisions, intervals = run.decisions, {}
        if config.task == "multiclass":  # the argmax decision, one class per document
            n, K = run.scores.shape
            decisions = sp.csr_matrix((np.ones(n, dtype=np.int8), run.evaluation.predicted, np.arange(n + 1)),
                                      shape=(n, K))
        if ev.bootstrap:
            with progress.status(f"bootstrap intervals of {run.name} ({ev.bootstrap} resamples)"), \
                    timings.stage("bootstrap"):
                intervals = bootstrap_intervals(self.Y, run.rank_scores, decisions=decisions, n_boot=ev.bootstrap,
                                                seed=config.seed, level=ev.confidence, exclude=excluded)
        with timings.stage("intervals"):
            auc_intervals = category_auc_intervals(self.Y, run.rank_scores, level=ev.confidence)
        return intervals, auc_intervals

    def compare(self, a, b, config, category_names, train_positives, excluded) -> Comparison:
        """``compare_scores`` of the two runs' rank scores (DeLong per category, with the bootstrap of the
        summary differences), and for multiclass McNemar's test of their paired accuracy."""
        mcnemar = None
        if config.task == "multiclass":  # paired accuracy on the same documents
            truth = a.evaluation.true
            mcnemar = mcnemar_test(a.evaluation.predicted == truth, b.evaluation.predicted == truth)
        return compare_scores(self.Y, a.rank_scores, b.rank_scores, category_names, train_positives, a.label,
                              b.label, config.report.alpha, a.name, b.name, mcnemar=mcnemar, exclude=excluded,
                              n_boot=config.eval.bootstrap, seed=config.seed, level=config.eval.confidence)

    def top_k(self, runs, k: int) -> tuple:
        """Each run's evaluated scores ranked in blocks of rows (``top_k_of_scores``)."""
        return self.Y, {run.name: top_k_of_scores(run.scores, k)[0] for run in runs}

    def close(self) -> None:
        """Nothing to let go of but the matrices, which the runs share."""


@dataclass(eq=False)
class SpilledScores:
    """Every model's scores spilled to disk: ``spills`` name -> closed ``ScoreSpill``, in ``folder``."""

    n_documents: int
    spills: dict  # name -> closed ScoreSpill
    folder: Path  # the spills' folder (deleted by ``close``)
    seconds: dict = field(default_factory=dict)  # name -> scoring seconds

    @property
    def labels(self) -> sp.csr_matrix:
        """Read from the first spill's positives, category by category (``spill_labels``)."""
        return spill_labels(next(iter(self.spills.values())))

    @property
    def labels_kept(self) -> None:
        """None: the scores stay on disk only during the run."""
        return None

    def describe(self) -> dict:
        return {"scores": "spilled to disk", "not_computed": SPILL_LIMITS}

    def evaluate(self, name: str, config, *, decision, calibration, untrainable: np.ndarray, by_prior,
                 prevalence: np.ndarray, category_names, curve_categories) -> dict:
        """``evaluate_spilled`` of the model's spill, whose running sums hold the decisions and probabilities
        (and, under ``by_prior``, the prior scores) applied while scoring; pcut decides from each category's
        column here."""
        spill = self.spills[name]
        evaluation = evaluate_spilled(spill, category_names, roc_points=config.eval.roc_points,
                                      curve_categories=curve_categories, train_prevalence=prevalence,
                                      decided_in_column=decision.decided_in_column if decision is not None
                                      and decision.rule == "pcut" else None)
        return {"evaluation": evaluation, "spill": spill}

    def intervals(self, run, config, excluded) -> tuple[dict, np.ndarray]:
        """No bootstrap (``SPILL_LIMITS``); the AUC intervals from each category's column of the spill
        (``category_auc_intervals_by_column``: the in-memory numbers)."""
        spill = self.spills[run.name]
        with progress.status(f"AUC intervals of {run.name}"), timings.stage("intervals"):
            auc_intervals = category_auc_intervals_by_column(
                lambda k: (spill.label_column(k), spill.scores_column(k)), spill.n_categories,
                config.eval.confidence, work=column_work(spill.positive_counts, spill.n_documents))
        return {}, auc_intervals

    def compare(self, a, b, config, category_names, train_positives, excluded) -> Comparison:
        """DeLong tests per category from the two spills' columns (``auc_difference_tests_by_column``)."""
        spill_a, spill_b = self.spills[a.name], self.spills[b.name]

        def column(k: int):
            return spill_a.label_column(k), spill_a.scores_column(k), spill_b.scores_column(k)

        table = auc_difference_tests_by_column(column, len(category_names),
                                               work=column_work(spill_a.positive_counts, spill_a.n_documents))
        return comparison_from_tests(table, category_names, train_positives, a.label, b.label,
                                     config.report.alpha, a.name, b.name, exclude=excluded)

    def top_k(self, runs, k: int) -> tuple:
        """Each run's spill read a block of whole categories at a time (``top_k_of_spill``: the rankings of
        ``top_k_of_scores``)."""
        return self.labels, {run.name: top_k_of_spill(self.spills[run.name], k)[0] for run in runs}

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def labels_and_top_k(store: ScoreStore, runs, k: int) -> tuple:
    """(the evaluation labels, {run name: each document's k best categories}) of ``runs``, from wherever
    ``store`` holds their scores (``ScoreStore.top_k``); shared by the run (``mlnb.study.loop``) and by sweep
    and curve points (``mlnb.studies.ranking``)."""
    return store.top_k(runs, k)
