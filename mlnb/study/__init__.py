"""A study: data source -> features -> models -> scores -> decisions -> metrics, at any size.

``run_on`` is the one loop — per model: fit, score, decide, evaluate — over training and
evaluation documents that are matrices in memory or sources read in chunks (here or on a Dask
cluster). ``mlnb run`` (on the test part), ``mlnb sweep`` (on a validation part of the training
documents) and ``mlnb curve`` (on samples of the training part) share it, so every command treats
every model, every ``eval.*`` key and every size the same way. Its stages, each a module here:

    open      the documents, held whole or read in chunks (``mlnb.study.opening``), and the seeded hash
              rules that carve them into parts (``mlnb.study.documents``)
    fit       each model as its kind declares it learns (``mlnb.study.fitting``); streamed, the
              per-partition tasks an executor of ``mlnb.backends`` runs (``mlnb.study.tasks``)
    decide    the decision rule and calibration learn from held-out scores of the training
              documents (a seeded hash split or k folds of their ids), never the evaluation ones
              (``mlnb.study.deciding``)
    score     the evaluation documents, held in memory, spilled to disk or kept as each document's k best
              categories (``mlnb.study.scoring``), into a ``ScoreStore`` (``mlnb.study.stores``,
              ``mlnb.study.top_k``) that every later stage asks
    evaluate  every metric, then intervals and paired tests in ``run_study``; multilabel, the ranking
              metrics at k of each document's ``eval.ranking_k`` best categories (``mlnb.study.loop``)

The same config gives the same split, the same parts and the same numbers in memory, streamed
and on Dask (Naive Bayes exactly; minibatch LR in the same minibatch order). ``run_study``
computes everything and writes nothing (its result: ``mlnb.study.results``); ``mlnb.report`` turns
it into a results folder.
"""

from mlnb.study.deciding import BY_PRIOR, HeldOut, held_out_scores, untrainable_scored_by_prior
from mlnb.study.loop import LoopResult, run_models, run_on, run_study
from mlnb.study.opening import (in_memory_documents, open_documents, open_executor, plotted_category, prepare_data,
                                split_rule, streamed_documents)
from mlnb.study.results import ModelRun, StudyResult, model_labels
from mlnb.study.stores import ScoresInMemory, ScoreStore, SpilledScores, labels_and_top_k
from mlnb.study.top_k import TopKScores

__all__ = ["BY_PRIOR", "HeldOut", "LoopResult", "ModelRun", "ScoreStore", "ScoresInMemory", "SpilledScores",
           "StudyResult", "TopKScores", "held_out_scores", "in_memory_documents", "labels_and_top_k", "model_labels",
           "open_documents", "open_executor", "plotted_category", "prepare_data", "run_models", "run_on",
           "run_study", "split_rule", "streamed_documents", "untrainable_scored_by_prior"]
