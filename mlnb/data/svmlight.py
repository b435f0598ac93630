"""LIBSVM / svmlight multilabel files (plain, .gz, .bz2), read by scikit-learn.

One document per line: ``<labels> <index>:<value> ...`` where labels are
comma-separated non-negative integers (possibly none) and indices start at
``index_base`` (1 in the LIBSVM convention, as in the RCV1 subsets). When
scikit-learn's fast reader rejects a file, the file is scanned line by line to
report the first bad line by number.
"""

from __future__ import annotations

import bz2
import gzip
import io
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_files

from mlnb.data.dataset import Dataset, RowOrigin
from mlnb.data.validate import check_features, existing_file, place
from mlnb.errors import MlnbError


def _open_text(path: Path):
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix, open)
    return io.TextIOWrapper(opener(path, "rb"), encoding="utf-8", errors="replace")


def _documents(path: Path):
    """(line number, body) of every document line: what is left of the line before a '#' comment,
    when not blank (the lines scikit-learn's reader turns into rows, in order)."""
    with _open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            body = line.split("#", 1)[0].strip()
            if body:
                yield number, body


def _row_lines(path: Path):
    """row -> its line number in ``path``, by a scan made only when a row is reported."""
    def line_of(row: int) -> int:
        for i, (number, _) in enumerate(_documents(path)):
            if i == row:
                return number
        raise MlnbError(f"{path}: has fewer than {row + 1} documents")  # unreachable for rows of the file
    return line_of


def _describe_bad_line(path: Path, index_base: int, n_features: int | None) -> str | None:
    """'path:LINE: what is wrong' for the first malformed line, or None."""
    for number, body in _documents(path):
        fields = body.split()
        first = 0
        if ":" not in fields[0]:
            first = 1
            for label in fields[0].split(","):
                try:
                    float(label)
                except ValueError:
                    return (f"{path}:{number}: expected labels as comma-separated non-negative "
                            f"integers, got {fields[0]!r}")
        previous = None
        for field in fields[first:]:
            index, sep, value = field.partition(":")
            if index == "qid":  # a query id (ranking files): scikit-learn reads and drops it
                continue
            if not sep or not index.lstrip("-").isdigit():
                return f"{path}:{number}: expected 'index:value', got {field!r}"
            try:
                float(value)
            except ValueError:
                return f"{path}:{number}: expected a number after '{index}:', got {value!r}"
            if int(index) < index_base:
                return (f"{path}:{number}: feature index {index} is below {index_base} "
                        f"(index_base = {index_base})")
            if n_features is not None and int(index) - index_base >= n_features:
                return (f"{path}:{number}: feature index {index} is beyond n_features = "
                        f"{n_features}")
            if previous is not None and int(index) <= previous:
                what = "repeats" if int(index) == previous else f"comes after the larger index {previous}"
                return (f"{path}:{number}: feature index {index} {what}; expected indices in increasing "
                        "order, each once")
            previous = int(index)
    return None


def _label_matrix(label_tuples, n_categories: int, path: Path) -> sp.csr_matrix:
    lengths = np.fromiter((len(t) for t in label_tuples), dtype=np.int64, count=len(label_tuples))
    flat = np.fromiter((v for t in label_tuples for v in t), dtype=np.float64, count=int(lengths.sum()))
    rows = np.repeat(np.arange(len(label_tuples)), lengths)
    bad = np.flatnonzero((flat < 0) | (flat != np.round(flat)))
    if bad.size:
        value = flat[bad[0]]
        hint = " (a binary ±1 file? label its positives 0 and leave its negatives without a label)" \
            if value == -1 else ""
        raise MlnbError(f"{place(str(path), int(rows[bad[0]]), row_lines=_row_lines(path))}: label {value:g} is "
                        f"not a category id; expected non-negative integers{hint}")
    labels = flat.astype(np.int64)
    beyond = np.flatnonzero(labels >= n_categories)
    if beyond.size:
        raise MlnbError(f"{place(str(path), int(rows[beyond[0]]), row_lines=_row_lines(path))}: label "
                        f"{labels[beyond[0]]} is out of range for n_categories = {n_categories}")
    Y = sp.csr_matrix((np.ones(labels.size, dtype=np.int8), (rows, labels)),
                      shape=(len(label_tuples), n_categories))
    Y.sum_duplicates()
    Y.data[:] = 1
    return Y


def read_svmlight(paths: list[str | os.PathLike], n_features: int | None = None,
                  index_base: int = 1, n_categories: int | None = None):
    """Read one or more multilabel svmlight files into one shared feature space.

    Returns a list of (X, Y) pairs, one per file, and the number of categories
    (``n_categories`` or one more than the largest label seen). Every matrix passes
    ``validate.check_features``, and every bad value is reported at its file and line.
    """
    paths = [existing_file(p, "svmlight data") for p in paths]
    if index_base not in (0, 1):
        raise MlnbError(f"index_base must be 0 or 1, got {index_base}")
    try:
        loaded = load_svmlight_files([str(p) for p in paths], n_features=n_features, dtype=np.float32,
                                     multilabel=True, zero_based=bool(index_base == 0))
    except (ValueError, UnicodeDecodeError, OSError, EOFError) as error:
        for path in paths:
            try:
                message = _describe_bad_line(path, index_base, n_features)
            except (OSError, EOFError, ValueError) as scan_error:
                raise MlnbError(f"{path}: not a readable svmlight file ({scan_error})") from None
            if message:
                raise MlnbError(message) from None
        raise MlnbError(f"{', '.join(map(str, paths))}: not a readable svmlight file ({error})") from None
    Xs, label_lists = loaded[0::2], loaded[1::2]
    checked = []
    for path, X in zip(paths, Xs):
        if X.shape[0] == 0:
            raise MlnbError(f"{path}: the file holds no documents")
        checked.append(check_features(X, str(path), row_lines=_row_lines(path)))
    largest = max((max(t) for labels in label_lists for t in labels if t), default=-1)
    K = n_categories if n_categories else int(largest) + 1
    if K < 1:
        raise MlnbError(f"{paths[0]}: no labels found; a multilabel file needs category ids")
    pairs = [(X, _label_matrix(labels, K, path)) for path, X, labels in zip(paths, checked, label_lists)]
    return pairs, K


def read_category_names(path) -> list[str]:
    """One category name per non-empty line, in category-id order."""
    path = existing_file(path, "category names")
    names = [line.strip() for line in path.read_text(encoding="utf-8-sig", errors="replace").splitlines()]
    names = [n for n in names if n]
    if not names:
        raise MlnbError(f"{path}: no category names (expected one name per line, in category-id order)")
    seen = {}
    for name in names:
        if name in seen:
            raise MlnbError(f"{path}: category name {name!r} repeats; expected one distinct name per category")
        seen[name] = True
    return names


def load_svmlight_dataset(path, test_path=None, n_features=None, index_base=1, n_categories=None,
                          category_names=None, test_fraction=0.5, seed=0) -> Dataset:
    """A Dataset from one file (seeded random split) or a train file and a test file.

    ``category_names`` may be a list or a file with one name per line; without
    ``n_categories`` its length sets the number of categories.
    """
    names_file = category_names if isinstance(category_names, (str, Path)) else None
    if names_file is not None:
        category_names = read_category_names(names_file)
    paths = [path] + ([test_path] if test_path else [])
    pairs, K = read_svmlight(paths, n_features=n_features, index_base=index_base,
                             n_categories=n_categories)
    if category_names is not None and len(category_names) != K:
        names_from = f"{names_file}: " if names_file is not None else ""
        if n_categories:
            raise MlnbError(f"{names_from}{len(category_names)} category names given for n_categories = {K}")
        for where, (_, Y) in zip(paths, pairs):  # the first document whose category id has no name
            beyond = np.flatnonzero(Y.indices >= len(category_names))
            if beyond.size:
                row = int(np.searchsorted(Y.indptr, beyond[0], side="right")) - 1
                raise MlnbError(f"{names_from}{len(category_names)} category names, but "
                                f"{place(str(where), row, row_lines=_row_lines(Path(where)))} has category id "
                                f"{Y.indices[beyond[0]]}: expected at least {K} names, one per line in id order")
        pairs = [(X, sp.csr_matrix((Y.data, Y.indices, Y.indptr), shape=(Y.shape[0], len(category_names))))
                 for X, Y in pairs]  # named categories beyond the largest id seen: no documents
        K = len(category_names)
    name = Path(path).name.split(".")[0]
    origins = [RowOrigin(str(p), X.shape[0], row_lines=_row_lines(Path(p))) for p, (X, _) in zip(paths, pairs)]
    if test_path:
        (X_train, Y_train), (X_test, Y_test) = pairs
        return Dataset.from_train_test(X_train, Y_train, X_test, Y_test, category_names, name=name, origins=origins)
    (X, Y), = pairs
    return Dataset.from_arrays(X, Y, category_names, test_fraction=test_fraction, seed=seed, name=name,
                               origins=origins)
