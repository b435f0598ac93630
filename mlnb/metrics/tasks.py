"""``evaluate`` of either task, the Python API's one entry point (``mlnb.evaluate``).

A multilabel model's scores are per-category log-odds, evaluated one-vs-rest
(``evaluation.evaluate``); a single-label (multiclass) model's are per-class joint scores, whose
argmax decides (``multiclass.evaluate_multiclass``). Read the wrong way, either gives numbers that
look plausible and are wrong, so ``task`` is taken from the caller, or from the labels where their
shape says it, and refused in one line where it cannot be told. This module sits above both (the
multiclass evaluation builds on the one-vs-rest one), so that neither imports the other in a circle.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mlnb.errors import MlnbError
from mlnb.data.validate import check_labels
from mlnb.metrics.evaluation import UNTRAINABLE, UNTRAINABLE_RULES, Evaluation, caller_exclusions
from mlnb.metrics.evaluation import evaluate as evaluate_one_vs_rest
from mlnb.metrics.multiclass import _check_joint, _true_classes, evaluate_multiclass

#: what ``evaluate(..., task=)`` takes, as a run's ``task``: per-category log-odds of any number of labels
#: per document, or a single-label model's per-class joint scores (``multiclass.evaluate_multiclass``)
EVALUATED_TASKS = ("multilabel", "multiclass")


def evaluated_task(Y_true, task: str | None) -> str:
    """``task`` as given, else read from Y_true: class indices (1-D) are multiclass, rows with other
    than one label multilabel; one label in every row of K ≥ 2 columns fits both, so it is refused
    in one line naming ``task=`` (as log-odds, a multiclass model's joint scores give wrong numbers)."""
    if task is not None:
        if task not in EVALUATED_TASKS:
            raise MlnbError(f"task must be one of {EVALUATED_TASKS}, got {task!r}")
        return task
    if not sp.issparse(Y_true) and np.ndim(Y_true) == 1:
        return "multiclass"
    shape = Y_true.shape if sp.issparse(Y_true) else np.shape(Y_true)
    if len(shape) != 2 or shape[0] == 0 or shape[1] < 2:
        return "multilabel"  # its own checks say what is wrong
    if (np.diff(check_labels(Y_true, "Y_true").indptr) == 1).all():
        raise MlnbError("Y_true has exactly one label per document: pass task='multiclass' if scores are a "
                        "single-label model's per-class joint scores (the argmax decides), or task='multilabel' "
                        "if they are per-category log-odds")
    return "multilabel"


def _evaluate_single_label(Y_true, J, category_names, *, decisions, exclude, train_prevalence, Y_train,
                           untrainable: str, **options):
    """``evaluate`` with task="multiclass": ``evaluate_multiclass``, with a run's treatment of the
    classes without a training document (or with every one): excluded under "exclude", else kept
    as scored (a softmax's scores are not replaced by a prior)."""
    if decisions is not None:
        raise MlnbError("decisions: with task='multiclass' the argmax of the scores decides; leave decisions out")
    if untrainable not in UNTRAINABLE_RULES:
        raise MlnbError(f"untrainable must be one of {UNTRAINABLE_RULES}, got {untrainable!r}")
    J = _check_joint(J)
    if Y_train is not None:
        K = J.shape[1]
        n_train = Y_train.shape[0] if hasattr(Y_train, "shape") else len(Y_train)
        positives = np.bincount(_true_classes(Y_train, n_train, K, "Y_train"), minlength=K).astype(np.float64)
        if train_prevalence is None:
            train_prevalence = positives / max(n_train, 1)
        untrainable_classes = np.flatnonzero((positives == 0) | (positives == n_train))
        if untrainable == "exclude" and untrainable_classes.size:
            exclude = {int(k): UNTRAINABLE for k in untrainable_classes} | caller_exclusions(exclude, K)
    return evaluate_multiclass(Y_true, J, category_names, exclude=exclude, train_prevalence=train_prevalence,
                               **options)


def evaluate(Y_true, scores: np.ndarray, category_names=None, threshold: float = 0.5,
             roc_points: int = 101, curve_categories=None, top_k: int = 2,
             n_threads: int | None = None, *, decisions=None, probability_scores=None,
             exclude=None, train_prevalence=None, Y_train=None, untrainable: str = "exclude",
             task: str | None = None) -> Evaluation:
    """All metrics of ``scores`` against ``Y_true``: with ``task="multilabel"`` of per-category
    log-odds (n × K) against 0/1 labels (n × K), one-vs-rest (``evaluation.evaluate``, whose
    docstring gives every other argument); with ``task="multiclass"`` of a single-label model's
    joint scores (n × K) against class indices (n,) or one-hot rows (``evaluate_multiclass``).

    task : one of ``EVALUATED_TASKS`` (a run's ``task``); None: read from Y_true (``evaluated_task``):
           class indices are multiclass, rows with other than one label multilabel, and one label in
           every row is refused in one line naming ``task=``. Multiclass: the argmax decides (no
           ``decisions``), and untrainable classes are excluded ("exclude") or kept as scored, as a run
           does.
    """
    options = dict(threshold=threshold, roc_points=roc_points, curve_categories=curve_categories, top_k=top_k,
                   n_threads=n_threads, decisions=decisions, probability_scores=probability_scores,
                   exclude=exclude, train_prevalence=train_prevalence, Y_train=Y_train, untrainable=untrainable)
    if evaluated_task(Y_true, task) == "multiclass":
        return _evaluate_single_label(Y_true, scores, category_names, **options)
    return evaluate_one_vs_rest(Y_true, scores, category_names, **options)
