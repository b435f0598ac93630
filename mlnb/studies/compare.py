"""Paired comparison of models saved in results folders (``mlnb compare``).

The test itself (DeLong per category, Holm, sign test) is ``mlnb.metrics.comparison``;
the scores file is ``mlnb.scores``. Here: pairing two saved models and checking
that they were evaluated on the same test documents.
"""

from __future__ import annotations

import numpy as np

from mlnb.errors import MlnbError
from mlnb.metrics.comparison import Comparison, compare_scores
from mlnb.metrics.multiclass import class_log_odds
from mlnb.metrics.significance import mcnemar_test
from mlnb.scores import SavedRun, load_scores

__all__ = ["compare_runs", "load_scores"]


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
