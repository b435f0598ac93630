"""The scores file of a results folder: test labels and every model's test scores.

``mlnb run`` saves it (``report.save_scores``) so that ``mlnb compare`` can later
pair two runs on the same test documents. It is a NumPy ``.npz`` archive read with
``allow_pickle=False``: loading it never runs code. The labels, names and other small arrays are
deflated; the models' float32 scores are stored as they are: their low mantissa bytes are near
random, so deflate saves little of them, slowly and on one core (measured by
``experiments/bench_threads.py``). ``np.load`` reads deflated and
stored members alike, so the files of older runs (all deflated, or all stored) still load.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb.data.validate import check_scores
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
    small = dict(labels_indptr=Y.indptr, labels_indices=Y.indices, labels_shape=np.array(Y.shape),
                 category_names=np.array(category_names, dtype=str), train_positives=np.asarray(train_positives),
                 model_keys=np.array(list(scores), dtype=str),
                 model_labels=np.array([labels[k] for k in scores], dtype=str), task=np.array(task),
                 excluded=np.asarray(excluded, dtype=np.int64))
    stored = {f"scores_{key}": np.asarray(value, dtype=np.float32) for key, value in scores.items()}
    _write_npz(path, small, stored)


def _write_npz(path, deflated: dict, stored: dict) -> None:
    """An .npz archive (what ``np.savez`` writes: one ``name.npy`` member per array) whose ``deflated``
    arrays are compressed and whose ``stored`` ones are not; the same bytes for the same arrays."""
    with zipfile.ZipFile(path, "w", allowZip64=True) as archive:
        for arrays, compression in ((deflated, zipfile.ZIP_DEFLATED), (stored, zipfile.ZIP_STORED)):
            for name, array in arrays.items():
                member = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                member.compress_type = compression
                with archive.open(member, "w", force_zip64=True) as file:
                    np.lib.format.write_array(file, np.asanyarray(array), allow_pickle=False)


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
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as error:  # EOFError: an empty file
        raise MlnbError(f"{path}: not a readable mlnb scores file ({type(error).__name__}: {error})") from None
    # checked after the scores so that a damaged scores file is named as such
    missing = [name for name in RUN_FILES if not (folder / name).is_file()]
    if missing:
        raise MlnbError(f"{folder}: not a completed results folder of mlnb run: no {', '.join(missing)}")
    return saved


def _array(saved, name: str, path: Path, kinds: str, ndim: int) -> np.ndarray:
    """Array ``name`` of the scores file, of a dtype kind in ``kinds`` and ``ndim`` dimensions."""
    if name not in saved:
        raise MlnbError(f"{path}: no array {name!r}; not a scores file written by mlnb run")
    value = saved[name]
    if value.dtype.kind not in kinds or value.ndim != ndim:
        raise MlnbError(f"{path}: array {name!r} has dtype {value.dtype} and shape {value.shape}; expected "
                        f"{'integers' if kinds == 'iu' else 'numbers' if 'f' in kinds else 'strings'} in "
                        f"{ndim} dimension{'s' if ndim != 1 else ''}")
    return value


def _labels(saved, path: Path) -> sp.csr_matrix:
    """The test labels (documents × categories, 0/1 CSR), every array checked against the others."""
    shape = _array(saved, "labels_shape", path, "iu", 1)
    if shape.size != 2 or (shape < 0).any():
        raise MlnbError(f"{path}: array 'labels_shape' is {shape.tolist()}; expected [documents, categories]")
    n, K = (int(v) for v in shape)
    indptr = _array(saved, "labels_indptr", path, "iu", 1)
    indices = _array(saved, "labels_indices", path, "iu", 1)
    if indptr.size != n + 1 or indptr[0] != 0 or (np.diff(indptr) < 0).any() or indptr[-1] != indices.size:
        raise MlnbError(f"{path}: array 'labels_indptr' ({indptr.size} values) does not describe {n} documents "
                        f"with the {indices.size} entries of 'labels_indices'; the file is damaged")
    beyond = np.flatnonzero((indices < 0) | (indices >= K))
    if beyond.size:
        row = int(np.searchsorted(indptr, beyond[0], side="right")) - 1
        raise MlnbError(f"{path}: array 'labels_indices' gives test document {row} the category "
                        f"{indices[beyond[0]]}, outside the {K} categories (0..{K - 1}); the file is damaged")
    Y = sp.csr_matrix((np.ones(indices.size, dtype=np.int8), indices.astype(np.int32), indptr), shape=(n, K))
    if not Y.has_canonical_format:  # a category twice in one row
        raise MlnbError(f"{path}: array 'labels_indices' repeats a category within a test document or is "
                        "unsorted; the file is damaged")
    return Y


def _read_saved_run(folder: Path, path: Path) -> SavedRun:
    with np.load(path, allow_pickle=False) as saved:
        Y = _labels(saved, path)
        n, K = Y.shape
        names = _array(saved, "category_names", path, "U", 1)
        positives = _array(saved, "train_positives", path, "iuf", 1)
        keys = [str(k) for k in _array(saved, "model_keys", path, "U", 1)]
        labels = [str(k) for k in _array(saved, "model_labels", path, "U", 1)]
        for name, array, expected in (("category_names", names, K), ("train_positives", positives, K),
                                      ("model_labels", labels, len(keys))):
            if len(array) != expected:
                raise MlnbError(f"{path}: array {name!r} has {len(array)} values; expected {expected} "
                                f"({'one per model key' if name == 'model_labels' else 'one per category'})")
        task = str(saved["task"]) if "task" in saved else "multilabel"
        if task not in ("multilabel", "multiclass"):
            raise MlnbError(f"{path}: array 'task' is {task!r}; expected 'multilabel' or 'multiclass'")
        if task == "multiclass" and (np.diff(Y.indptr) != 1).any():
            row = int(np.flatnonzero(np.diff(Y.indptr) != 1)[0])
            raise MlnbError(f"{path}: multiclass test document {row} has {np.diff(Y.indptr)[row]} classes in "
                            "'labels_indices'; expected exactly one")
        excluded = _array(saved, "excluded", path, "iu", 1) if "excluded" in saved else np.empty(0, dtype=np.int64)
        if ((excluded < 0) | (excluded >= K)).any():
            raise MlnbError(f"{path}: array 'excluded' holds category {excluded[(excluded < 0) | (excluded >= K)][0]}, "
                            f"outside the {K} categories")
        scores = {}
        for key in keys:
            try:
                scores[key] = check_scores(_array(saved, f"scores_{key}", path, "iuf", 2), f"scores_{key}", (n, K))
            except MlnbError as error:
                raise MlnbError(f"{path}: model {key!r}: {error}") from None
        return SavedRun(folder=folder, Y_test=Y, scores=scores, labels=dict(zip(keys, labels)),
                        category_names=[str(c) for c in names], train_positives=positives, task=task,
                        excluded=excluded.astype(np.int64))
