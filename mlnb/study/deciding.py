"""Decide: each model's decision rule and calibration, learned from held-out scores of the training documents.

A rule that learns its thresholds (``mlnb.decision.LEARNED_ON_HELD_OUT``) and every calibration learn from
scores of training documents by models that did not train on them (``held_out_scores``): the held-out part of
a seeded hash split of the training documents' ids (``eval.validation = "split"``), or the out-of-fold scores of
k hash folds (the buckets of ``mlnb.study.documents``). The evaluation documents are never seen; the parts are
the same documents in memory, streamed and on Dask. ``task = "multiclass"`` decides by the most probable class
and learns nothing here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from mlnb.calibration import fit_calibration
from mlnb.config import StudyConfig
from mlnb.decision import fit_decision_rule
from mlnb.errors import MlnbError
from mlnb.study.documents import Documents, validation_buckets
from mlnb.study.fitting import NoTrainingDocuments, fit_models
from mlnb.study.scoring import score_in_memory
from mlnb.study.stores import scored_by_prior

#: eval.untrainable values under which every model scores its untrainable categories by their training prior
#: (multilabel): 'keep' too, so that it is even-handed — naive Bayes, L-BFGS LR and the SVM reset such a
#: category to its prior themselves, while a minibatch LR would keep scores learned from one class only
BY_PRIOR = ("prior", "keep")


def untrainable_scored_by_prior(config: StudyConfig) -> bool:
    """Whether every model's scores of the untrainable categories are replaced by their training prior
    (``BY_PRIOR``, one-vs-rest only: a multiclass model's scores are a softmax's, kept as scored)."""
    return config.eval.untrainable in BY_PRIOR and config.task != "multiclass"


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
    (``mlnb.study.documents``). Every model of ``names`` is fitted on each part at once (one
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


def fit_decisions(config: StudyConfig, names: list[str], held: dict[str, HeldOut], untrainable: np.ndarray,
                  prior: np.ndarray, prevalence: np.ndarray) -> tuple[dict, dict]:
    """({name: fitted decision rule}, {name: fitted calibration or None}) of every model of ``names``
    (multilabel): each learns from its held-out scores ``held[name]`` where it has them (untrainable
    categories by their prior under ``BY_PRIOR``); the calibration (``eval.calibration``) first, and the
    fixed rule then thresholds the calibrated probabilities. Multiclass: none."""
    ev = config.eval
    decisions, calibrations = {}, {}
    for name in names if config.task != "multiclass" else ():
        rule_name = config.models[name].decision or ev.decision
        validation = calibration = None
        if name in held:
            S_val, Y_val = held[name].scores, held[name].labels
            if untrainable_scored_by_prior(config):
                S_val = scored_by_prior(S_val, untrainable, prior)
            validation = (S_val, Y_val)
        if ev.calibration != "none":
            calibration = fit_calibration(ev.calibration, *validation)
        rule_validation = validation
        if validation is not None and rule_name == "fixed" and calibration is not None:
            rule_validation = (calibration.transform(validation[0]), validation[1])
        decisions[name] = fit_decision_rule(rule_name, *(rule_validation or (None, None)), threshold=ev.threshold,
                                            metric=ev.decision_metric, fbr=ev.fbr, fbr_rank=ev.fbr_rank,
                                            rcut_k=ev.rcut_k, train_prevalence=prevalence)
        calibrations[name] = calibration
    return decisions, calibrations
