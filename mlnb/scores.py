"""The scores file of a results folder: test labels and every model's test scores.

``mlnb run`` saves it (``report.save_scores``) so that ``mlnb compare`` can later
pair two runs on the same test documents. It is a NumPy ``.npz`` archive read
with ``allow_pickle=False``: loading it never runs code.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb.errors import MlnbError

SCORES_FILE = "scores.npz"
RUN_FILES = ("config.toml", "summary.json", "report.md")  # what every completed run folder holds
PARTIAL_PREFIX = ".partial-"  # a results folder being written (mlnb.report.folder)


def save_scores(path: Path, Y_test, scores: dict, labels: dict, category_names, train_positives,
                task: str = "multilabel", excluded=()) -> None:
    """Test labels, every model's test scores and what a later comparison needs, in one .npz.

    Multilabel scores are per-category log-odds; multiclass scores are per-class joint scores J
    (the posterior is softmax(J))."""
    Y = sp.csr_matrix(Y_test)
    arrays = {f"scores_{key}": np.asarray(value, dtype=np.float32) for key, value in scores.items()}
    np.savez(path, labels_indptr=Y.indptr, labels_indices=Y.indices, labels_shape=np.array(Y.shape),
             category_names=np.array(category_names, dtype=str), train_positives=np.asarray(train_positives),
             model_keys=np.array(list(scores), dtype=str),
             model_labels=np.array([labels[k] for k in scores], dtype=str), task=np.array(task),
             excluded=np.asarray(excluded, dtype=np.int64), **arrays)


@dataclass
class SavedRun:
    folder: Path
    Y_test: sp.csr_matrix
    scores: dict
    labels: dict
    category_names: list
    train_positives: np.ndarray
    task: str = "multilabel"
    excluded: np.ndarray = None  # categories the run left out of its comparisons (eval.untrainable)


def load_scores(folder) -> SavedRun:
    """The saved run of a complete results folder of ``mlnb run``; MlnbError for anything else.

    A ``.partial-*`` folder (a run still writing, or killed) is refused unread, and so is a
    folder without the files a completed run writes (``RUN_FILES``; report.md comes last)."""
    folder = Path(folder)
    path = folder / SCORES_FILE
    if not folder.is_dir():
        raise MlnbError(f"{folder}: no such results folder")
    partial = [part for part in (folder.name, *folder.resolve().parts) if part.startswith(PARTIAL_PREFIX)]
    if partial:
        raise MlnbError(f"{folder}: {partial[0]} is an unfinished results folder (a run still writing, or "
                        "interrupted); expected a completed one")
    if not path.is_file():
        raise MlnbError(f"{folder}: no {SCORES_FILE} (run with report.save_scores = true to compare later)")
    try:
        saved = _read_saved_run(folder, path)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
        raise MlnbError(f"{path}: not a readable mlnb scores file ({type(error).__name__}: {error})") from None
    # checked after the scores so that a damaged scores file is named as such
    missing = [name for name in RUN_FILES if not (folder / name).is_file()]
    if missing:
        raise MlnbError(f"{folder}: not a completed results folder of mlnb run: no {', '.join(missing)}")
    return saved


def _read_saved_run(folder: Path, path: Path) -> SavedRun:
    with np.load(path, allow_pickle=False) as saved:
        shape = tuple(saved["labels_shape"])
        indices = saved["labels_indices"]
        Y = sp.csr_matrix((np.ones(indices.size, dtype=np.int8), indices, saved["labels_indptr"]), shape=shape)
        keys = [str(k) for k in saved["model_keys"]]
        return SavedRun(folder=folder, Y_test=Y, scores={k: saved[f"scores_{k}"] for k in keys},
                        labels=dict(zip(keys, map(str, saved["model_labels"]))),
                        category_names=[str(c) for c in saved["category_names"]],
                        train_positives=saved["train_positives"],
                        task=str(saved["task"]) if "task" in saved else "multilabel",
                        excluded=saved["excluded"] if "excluded" in saved else np.empty(0, dtype=np.int64))
