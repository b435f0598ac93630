"""Paired comparison of models saved in results folders (``mlnb compare``).

The test itself (DeLong per category, Holm, sign test) is ``mlnb.metrics.comparison``;
the scores file is ``mlnb.scores``. Here: pairing two saved models and checking
that they were evaluated on the same test documents. ``load_scores`` reads the file
(``mlnb.scores.load_scores``) and passes every model's scores through the metrics' own
check (``mlnb.metrics._inputs.score_array``), naming the file and the model: a scores file
holds whatever its writer put there, and no value of it may reach the compiled kernels
unchecked (float16 becomes float32, int64 only when exact in float64, NaN is refused).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mlnb import scores as scores_file
from mlnb.errors import MlnbError
from mlnb.metrics._inputs import score_array
from mlnb.metrics.comparison import Comparison, compare_scores
from mlnb.metrics.multiclass import class_log_odds
from mlnb.metrics.significance import mcnemar_test
from mlnb.scores import SavedRun

__all__ = ["compare_runs", "load_scores"]


def _checked_scores(run: SavedRun, where: str) -> SavedRun:
    """``run`` with each model's scores through ``score_array`` (converted where exact), or MlnbError
    naming ``where`` and the model."""
    shape = run.Y_test.shape
    for key, values in list(run.scores.items()):
        try:
            run.scores[key] = score_array(values, f"scores_{key}", ndim=2, shape=shape)
        except MlnbError as error:
            raise MlnbError(f"{where}: model {key!r}: {error}") from None
    return run


def load_scores(folder) -> SavedRun:
    """The saved run of a complete results folder (``mlnb.scores.load_scores``), its scores checked as
    the metrics check them; MlnbError naming the scores file and the model otherwise."""
    return _checked_scores(scores_file.load_scores(folder), str(Path(folder) / scores_file.SCORES_FILE))


def compare_runs(run_a: SavedRun, key_a: str, run_b: SavedRun, key_b: str, alpha: float = 0.05) -> Comparison:
    if run_a is run_b and key_a == key_b:
        raise MlnbError(f"{run_a.folder}: model {key_a!r} against itself; name the other with --model-b "
                        f"(it has {', '.join(run_a.scores)})")
    for run, key in ((run_a, key_a), (run_b, key_b)):
        if key not in run.scores:
            raise MlnbError(f"{run.folder}: no model {key!r}; it has {', '.join(run.scores)}")
    if run_a.Y_test.shape != run_b.Y_test.shape or (run_a.Y_test != run_b.Y_test).nnz:
        raise MlnbError(f"{run_a.folder} and {run_b.folder} were evaluated on different test documents "
                        "or categories: a paired test needs the same ones")
    if run_a.task != run_b.task:
        raise MlnbError(f"{run_a.folder} is a {run_a.task} run and {run_b.folder} a {run_b.task} one: "
                        "their scores do not compare")
    for run, key in ((run_a, key_a), (run_b, key_b)):  # a SavedRun built in Python, not by load_scores
        try:
            run.scores[key] = score_array(run.scores[key], f"scores_{key}", ndim=2, shape=run.Y_test.shape)
        except MlnbError as error:
            raise MlnbError(f"{run.folder}: model {key!r}: {error}") from None
    label_a = run_a.labels[key_a] + ("" if run_a is run_b else f" [{run_a.folder.name}]")
    label_b = run_b.labels[key_b] + ("" if run_a is run_b else f" [{run_b.folder.name}]")
    scores_a, scores_b, mcnemar = run_a.scores[key_a], run_b.scores[key_b], None
    if run_a.task == "multiclass":  # rank by each class's log-odds; pair the argmax decisions
        truth = run_a.Y_test.indices  # one class per row
        mcnemar = mcnemar_test(scores_a.argmax(axis=1) == truth, scores_b.argmax(axis=1) == truth)
        scores_a, scores_b = class_log_odds(scores_a), class_log_odds(scores_b)
    # what either run left out of its own comparisons (eval.untrainable = 'exclude') stays out here
    excluded = np.union1d(run_a.excluded, run_b.excluded).astype(np.int64)
    try:
        return compare_scores(run_a.Y_test, scores_a, scores_b, run_a.category_names, run_a.train_positives,
                              label_a, label_b, alpha, key_a, key_b, mcnemar=mcnemar, exclude=excluded)
    except ValueError as error:  # what the scores file checks cannot see: named by run and model
        raise MlnbError(f"{run_a.folder} (model {key_a!r}) against {run_b.folder} (model {key_b!r}): "
                        f"{' '.join(str(error).split())}") from None
