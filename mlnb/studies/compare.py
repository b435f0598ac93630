"""Paired comparison of models saved in results folders (``mlnb compare``).

The test itself (DeLong per category, Holm, sign test) is ``mlnb.metrics.comparison``;
the scores file is ``mlnb.scores``. Here: pairing two saved models and checking
that they were evaluated on the same test documents.
"""

from __future__ import annotations

from mlnb.errors import MlnbError
from mlnb.metrics.comparison import Comparison, compare_scores
from mlnb.scores import SavedRun, load_scores

__all__ = ["compare_runs", "load_scores"]


def compare_runs(run_a: SavedRun, key_a: str, run_b: SavedRun, key_b: str, alpha: float = 0.05) -> Comparison:
    for run, key in ((run_a, key_a), (run_b, key_b)):
        if key not in run.scores:
            raise MlnbError(f"{run.folder}: no model {key!r}; it has {', '.join(run.scores)}")
    if run_a.Y_test.shape != run_b.Y_test.shape or (run_a.Y_test != run_b.Y_test).nnz:
        raise MlnbError(f"{run_a.folder} and {run_b.folder} were evaluated on different test documents "
                        "or categories: a paired test needs the same ones")
    label_a = run_a.labels[key_a] + ("" if run_a is run_b else f" [{run_a.folder.name}]")
    label_b = run_b.labels[key_b] + ("" if run_a is run_b else f" [{run_b.folder.name}]")
    return compare_scores(run_a.Y_test, run_a.scores[key_a], run_b.scores[key_b], run_a.category_names,
                          run_a.train_positives, label_a, label_b, alpha, key_a, key_b)
