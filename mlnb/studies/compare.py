"""Paired per-category comparison of two models' AUCs on the same test documents.

For every category: DeLong's test of AUC_a − AUC_b (``mlnb.metrics.significance``),
p-values Holm-corrected over the categories where the test is defined; then
counts of categories won / tied / lost by model a (won = significantly higher
at ``alpha`` after Holm) and, as in Yang & Liu (1999), a sign test over the
raw per-category differences.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from mlnb.errors import MlnbError
from mlnb.metrics.significance import SignTestResult, delong_tests, sign_test


@dataclass
class Comparison:
    label_a: str
    label_b: str
    table: pd.DataFrame  # one row per category: name, train_pos, auc_a, auc_b, difference, z, p, p_holm
    sign: SignTestResult
    alpha: float

    @property
    def significant(self) -> pd.Series:
        return self.table["p_holm"] < self.alpha

    def counts(self) -> dict:
        defined = self.table["p_value"].notna()
        better = self.significant & (self.table["difference"] > 0)
        worse = self.significant & (self.table["difference"] < 0)
        return {"a_significantly_better": int(better.sum()), "b_significantly_better": int(worse.sum()),
                "no_significant_difference": int((defined & ~self.significant).sum()),
                "not_testable": int((~defined).sum())}

    def summary(self) -> dict:
        return {"model_a": self.label_a, "model_b": self.label_b, "alpha": self.alpha, **self.counts(),
                "sign_test": {"a_higher": self.sign.wins, "b_higher": self.sign.losses,
                              "ties": self.sign.ties, "p_value": self.sign.p_value}}


def compare_scores(Y_test, scores_a, scores_b, category_names, train_positives, label_a="a", label_b="b",
                   alpha: float = 0.05) -> Comparison:
    """DeLong per category (a − b), Holm over categories, sign test over the differences."""
    table = delong_tests(Y_test, scores_a, scores_b).reset_index(drop=True)
    table.insert(0, "category", np.arange(len(table)))
    table.insert(1, "name", list(category_names))
    table.insert(2, "train_pos", np.asarray(train_positives).astype(int))
    return Comparison(label_a=label_a, label_b=label_b, table=table,
                      sign=sign_test(table["difference"].to_numpy()), alpha=alpha)


# -- scores saved in a results folder -------------------------------------------------------------
SCORES_FILE = "scores.npz"


def save_scores(path: Path, Y_test, scores: dict, labels: dict, category_names, train_positives) -> None:
    """Test labels, every model's test scores and what a later comparison needs, in one .npz."""
    Y = sp.csr_matrix(Y_test)
    arrays = {f"scores_{key}": np.asarray(value, dtype=np.float32) for key, value in scores.items()}
    np.savez(path, labels_indptr=Y.indptr, labels_indices=Y.indices, labels_shape=np.array(Y.shape),
             category_names=np.array(category_names, dtype=str), train_positives=np.asarray(train_positives),
             model_keys=np.array(list(scores), dtype=str),
             model_labels=np.array([labels[k] for k in scores], dtype=str), **arrays)


@dataclass
class SavedRun:
    folder: Path
    Y_test: sp.csr_matrix
    scores: dict
    labels: dict
    category_names: list
    train_positives: np.ndarray


def load_run(folder) -> SavedRun:
    folder = Path(folder)
    path = folder / SCORES_FILE
    if not folder.is_dir():
        raise MlnbError(f"{folder}: no such results folder")
    if not path.is_file():
        raise MlnbError(f"{folder}: no {SCORES_FILE} (run with report.save_scores = true to compare later)")
    try:
        return _read_saved_run(folder, path)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
        raise MlnbError(f"{path}: not a readable mlnb scores file ({type(error).__name__}: {error})") from None


def _read_saved_run(folder: Path, path: Path) -> SavedRun:
    with np.load(path, allow_pickle=False) as saved:
        shape = tuple(saved["labels_shape"])
        indices = saved["labels_indices"]
        Y = sp.csr_matrix((np.ones(indices.size, dtype=np.int8), indices, saved["labels_indptr"]), shape=shape)
        keys = [str(k) for k in saved["model_keys"]]
        return SavedRun(folder=folder, Y_test=Y, scores={k: saved[f"scores_{k}"] for k in keys},
                        labels=dict(zip(keys, map(str, saved["model_labels"]))),
                        category_names=[str(c) for c in saved["category_names"]],
                        train_positives=saved["train_positives"])


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
                          run_a.train_positives, label_a, label_b, alpha)
