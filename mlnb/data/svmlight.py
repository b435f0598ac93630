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

from mlnb.data.dataset import Dataset
from mlnb.errors import MlnbError


def _open_text(path: Path):
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix, open)
    return io.TextIOWrapper(opener(path, "rb"), encoding="utf-8", errors="replace")


def _describe_bad_line(path: Path, index_base: int, n_features: int | None) -> str | None:
    """'path:LINE: what is wrong' for the first malformed line, or None."""
    with _open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            body = line.split("#", 1)[0].strip()
            if not body:
                continue
            fields = body.split()
            first = 0
            if ":" not in fields[0]:
                first = 1
                for label in fields[0].split(","):
                    if not label.isdigit():
                        return (f"{path}:{number}: expected labels as comma-separated non-negative "
                                f"integers, got {fields[0]!r}")
            for field in fields[first:]:
                index, sep, value = field.partition(":")
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
    return None


def _label_matrix(label_tuples, n_categories: int, path: Path) -> sp.csr_matrix:
    lengths = np.fromiter((len(t) for t in label_tuples), dtype=np.int64, count=len(label_tuples))
    flat = np.fromiter((v for t in label_tuples for v in t), dtype=np.float64, count=int(lengths.sum()))
    if flat.size and (np.any(flat < 0) or np.any(flat != np.round(flat))):
        raise MlnbError(f"{path}: labels must be non-negative integers (category ids)")
    labels = flat.astype(np.int64)
    if labels.size and labels.max() >= n_categories:
        raise MlnbError(f"{path}: label {labels.max()} is out of range for n_categories = {n_categories}")
    rows = np.repeat(np.arange(len(label_tuples)), lengths)
    Y = sp.csr_matrix((np.ones(labels.size, dtype=np.int8), (rows, labels)),
                      shape=(len(label_tuples), n_categories))
    Y.sum_duplicates()
    Y.data[:] = 1
    return Y


def read_svmlight(paths: list[str | os.PathLike], n_features: int | None = None,
                  index_base: int = 1, n_categories: int | None = None):
    """Read one or more multilabel svmlight files into one shared feature space.

    Returns a list of (X, Y) pairs, one per file, and the number of categories
    (``n_categories`` or one more than the largest label seen).
    """
    paths = [Path(p) for p in paths]
    for path in paths:
        if not path.is_file():
            raise MlnbError(f"{path}: no such file (svmlight data)")
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
    for path, X in zip(paths, Xs):
        if X.shape[0] == 0:
            raise MlnbError(f"{path}: the file holds no documents")
        if X.nnz and not np.isfinite(X.data).all():
            row = int(np.searchsorted(X.indptr, np.flatnonzero(~np.isfinite(X.data))[0], side="right"))
            raise MlnbError(f"{path}: document {row} (counting non-empty lines from 1) holds a NaN or "
                            "infinite value, or one beyond float32's range")
    largest = max((max(t) for labels in label_lists for t in labels if t), default=-1)
    K = n_categories if n_categories else int(largest) + 1
    if K < 1:
        raise MlnbError(f"{paths[0]}: no labels found; a multilabel file needs category ids")
    pairs = [(sp.csr_matrix(X), _label_matrix(labels, K, path))
             for path, X, labels in zip(paths, Xs, label_lists)]
    return pairs, K


def read_category_names(path) -> list[str]:
    """One category name per non-empty line, in category-id order."""
    path = Path(path)
    if not path.is_file():
        raise MlnbError(f"{path}: no such file (category names)")
    names = [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    names = [n for n in names if n]
    if len(set(names)) != len(names):
        raise MlnbError(f"{path}: category names repeat")
    return names


def load_svmlight_dataset(path, test_path=None, n_features=None, index_base=1, n_categories=None,
                          category_names=None, test_fraction=0.5, seed=0) -> Dataset:
    """A Dataset from one file (seeded random split) or a train file and a test file.

    ``category_names`` may be a list or a file with one name per line; without
    ``n_categories`` its length sets the number of categories.
    """
    if isinstance(category_names, (str, Path)):
        category_names = read_category_names(category_names)
    if category_names is not None and not n_categories:
        n_categories = len(category_names)
    paths = [path] + ([test_path] if test_path else [])
    pairs, K = read_svmlight(paths, n_features=n_features, index_base=index_base,
                             n_categories=n_categories)
    if category_names is not None and len(category_names) != K:
        raise MlnbError(f"{len(category_names)} category names given for {K} categories")
    name = Path(path).name.split(".")[0]
    if test_path:
        (X_train, Y_train), (X_test, Y_test) = pairs
        return Dataset.from_train_test(X_train, Y_train, X_test, Y_test, category_names, name=name)
    (X, Y), = pairs
    return Dataset.from_arrays(X, Y, category_names, test_fraction=test_fraction, seed=seed, name=name)
