"""A multilabel dataset: X (documents × features), Y (documents × categories), ids, a split.

X is CSR float32 and Y is CSR 0/1; each row has an id (int64), the number a streaming source
gives the same document (see :mod:`mlnb.data.stream`). The train/test split is a pair of row
index arrays made by one of a few rules, named in ``split_rule`` for the report:

* a seeded hash of each document's id (:func:`hash_split`, :func:`mlnb.data.hashing.split_mask`):
  every source without a given test part, in memory exactly as streamed;
* a given test part (a test file or folder, ModApte, ARFF's train/test files): training rows
  first, then test rows (:meth:`Dataset.from_train_test`);
* a corpus's own split (LYRL2004) or a seeded random split of given sizes (RCV1's ``random``).

Loaders (synthetic, svmlight, ...) build one of these; nothing downstream cares where it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from mlnb._kernels.csr import select_rows
from mlnb.data.hashing import SAMPLE_PURPOSE, hash_unit, purpose_seed, split_mask
from mlnb.data.splits import hash_split_rule, random_split_rule, sample_rule
from mlnb.data.validate import check_features, check_labels, place
from mlnb.errors import MlnbError


@dataclass(frozen=True)
class Dataset:
    """Documents, their categories and a train/test split.

    X : csr_matrix (n, V) float32      feature values (counts, presence or TF-IDF)
    Y : csr_matrix (n, K) int8         Y[i, k] = 1 if document i is in category k
    category_names : list of K str
    feature_names : list of V str, or None
    train_index, test_index : int arrays of row numbers, disjoint
    name : a short label for reports
    origins : where the rows of X come from, in row order (``RowOrigin``s: a file and the lines of
              its rows), so that a value refused later is named by file and line
    ids : int64 (n,), each row's document id, ≥ 0: its position in its file (or part), ``(file number
          << 40) + position`` for several files, a corpus's own id (Reuters NEWID), as the streaming
          sources number them; default arange(n). Unique within the training part and within the test part.
    split_rule : the report's sentence for the rule that made train_index / test_index
    text_features : how texts became the columns (a text source's vocabulary or hashing collisions,
                    :mod:`mlnb.data.vocabulary`), for the report; None for data that came as numbers
    """

    X: sp.csr_matrix
    Y: sp.csr_matrix
    category_names: list
    train_index: np.ndarray
    test_index: np.ndarray
    feature_names: list | None = None
    name: str = "dataset"
    origins: tuple = ()
    ids: np.ndarray | None = None
    split_rule: str = ""
    text_features: dict | None = None

    def __post_init__(self):
        n = self.X.shape[0]
        ids = np.arange(n, dtype=np.int64) if self.ids is None else np.asarray(self.ids)
        if ids.shape != (n,) or (ids.size and (ids.dtype.kind not in "iu" or ids.min() < 0)):
            raise MlnbError(f"ids: expected {n} non-negative integer document ids, one per row, got "
                            f"{ids.dtype} {ids.shape}")
        object.__setattr__(self, "ids", ids.astype(np.int64, copy=False))
        if self.Y.shape[0] != n:
            raise MlnbError(f"X has {n} documents but Y has {self.Y.shape[0]}")
        if len(self.category_names) != self.Y.shape[1]:
            raise MlnbError(f"{len(self.category_names)} category names for {self.Y.shape[1]} categories")
        if self.feature_names is not None and len(self.feature_names) != self.X.shape[1]:
            raise MlnbError(f"{len(self.feature_names)} feature names for {self.X.shape[1]} features")

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_arrays(cls, X, Y, category_names=None, feature_names=None, test_fraction=0.5,
                    seed=0, name="dataset", origins=(), ids=None) -> "Dataset":
        """All documents in one pool, split by a seeded hash of their ``ids`` (default arange(n)):
        the split a streaming source of the same documents makes (:func:`hash_split`).

        >>> import numpy as np, scipy.sparse as sp
        >>> X = sp.random(1000, 50, density=0.1, format="csr", random_state=0)  # 1,000 documents × 50 words
        >>> Y = (np.arange(1000)[:, None] % 3 == np.arange(3)).astype(int)      # × 3 categories
        >>> data = Dataset.from_arrays(X, Y, ["a", "b", "c"], seed=0)
        >>> data.X_train.shape, data.X_test.shape
        ((498, 50), (502, 50))
        >>> data.split_rule
        "a seeded hash of each document's id (seed 0, test_fraction 0.5)"

        The split follows the documents, not their order: reversed, the same documents are tested.

        >>> turned = Dataset.from_arrays(X[::-1], Y[::-1], ["a", "b", "c"], ids=np.arange(1000)[::-1], seed=0)
        >>> set(turned.ids[turned.test_index]) == set(data.ids[data.test_index])
        True
        """
        X, Y = _as_X(X), _as_Y(Y)
        names = list(category_names) if category_names is not None else _default_names(Y.shape[1])
        ids = np.arange(X.shape[0], dtype=np.int64) if ids is None else ids
        train, test = hash_split(ids, seed, test_fraction)
        return cls(X=X, Y=Y, category_names=names, feature_names=feature_names, train_index=train,
                   test_index=test, name=name, origins=tuple(origins), ids=ids,
                   split_rule=hash_split_rule(seed, test_fraction))

    @classmethod
    def from_train_test(cls, X_train, Y_train, X_test, Y_test, category_names=None,
                        feature_names=None, name="dataset", origins=(), ids=None,
                        split_rule="the given test part") -> "Dataset":
        """A given split: training rows first, then test rows. ``ids``: (train ids, test ids), default
        each part's positions (arange), as a train file and a test file number their documents."""
        X_train, X_test = _as_X(X_train), _as_X(X_test)
        Y_train, Y_test = _as_Y(Y_train), _as_Y(Y_test)
        if X_train.shape[1] != X_test.shape[1]:
            raise MlnbError(f"train data has {X_train.shape[1]} features but test data has "
                            f"{X_test.shape[1]}: they must share one feature space")
        if Y_train.shape[1] != Y_test.shape[1]:
            raise MlnbError(f"train data has {Y_train.shape[1]} categories but test data has "
                            f"{Y_test.shape[1]}")
        n_train, n_test = X_train.shape[0], X_test.shape[0]
        names = list(category_names) if category_names is not None else _default_names(Y_train.shape[1])
        train_ids, test_ids = ids if ids is not None else (np.arange(n_train), np.arange(n_test))
        return cls(X=sp.vstack([X_train, X_test], format="csr"),
                   Y=sp.vstack([Y_train, Y_test], format="csr"), category_names=names,
                   feature_names=feature_names, train_index=np.arange(n_train),
                   test_index=np.arange(n_train, n_train + n_test), name=name, origins=tuple(origins),
                   ids=np.concatenate([np.asarray(train_ids, dtype=np.int64), np.asarray(test_ids, dtype=np.int64)]),
                   split_rule=split_rule)

    def split_by_counts(self, train_size: int = 0, test_size: int = 0, test_fraction: float = 0.5,
                        seed: int = 0) -> "Dataset":
        """A new seeded random split of all documents: ``test_size`` test documents
        (0: ``test_fraction`` of all) and ``train_size`` training documents (0: the rest). Only
        RCV1's ``split = "random"`` (exact sizes) uses it; a pool without sizes is split by
        :func:`hash_split`."""
        n = self.n_documents
        n_test = test_size or int(round(n * test_fraction))
        n_train = train_size or n - n_test
        if n_test < 1 or n_train < 1 or n_test + n_train > n:
            raise MlnbError(f"a split of {n_train} training and {n_test} test documents does not fit "
                            f"{n} documents")
        permutation = np.random.default_rng([seed, 2]).permutation(n)
        return replace(self, test_index=np.sort(permutation[:n_test]),
                       train_index=np.sort(permutation[n_test:n_test + n_train]),
                       split_rule=random_split_rule(train_size, test_size, test_fraction, seed))

    def subsample_train(self, n_documents: int, seed: int = 0) -> "Dataset":
        """Keep ``n_documents`` of the training rows (all if fewer; 0: all): those with the smallest
        u(seed_s, id) (:func:`mlnb.data.hashing.hash_unit`, seed_s = ``purpose_seed(seed, SAMPLE_PURPOSE)``).
        A function of the ids and the seed only, so a streamed source can draw the same sample (a
        top-n of its training ids), and a smaller sample is part of every larger one."""
        if n_documents <= 0:
            return self
        rule = self.split_rule + sample_rule(n_documents, seed)
        if n_documents >= self.train_index.size:
            return replace(self, split_rule=rule)
        u = hash_unit(self.ids[self.train_index], purpose_seed(seed, SAMPLE_PURPOSE))
        smallest = np.argpartition(u, n_documents - 1)[:n_documents]  # ties: u has 53 bits, ids are distinct
        return replace(self, train_index=np.sort(self.train_index[smallest]), split_rule=rule)

    # -- views -------------------------------------------------------------------------------
    @property
    def X_train(self) -> sp.csr_matrix:
        return _rows(self.X, self.train_index)

    @property
    def Y_train(self) -> sp.csr_matrix:
        return _rows(self.Y, self.train_index)

    @property
    def X_test(self) -> sp.csr_matrix:
        return _rows(self.X, self.test_index)

    @property
    def Y_test(self) -> sp.csr_matrix:
        return _rows(self.Y, self.test_index)

    @property
    def n_documents(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_categories(self) -> int:
        return self.Y.shape[1]

    def place(self, row: int) -> str:
        """Where row ``row`` of X comes from: 'file:LINE', or 'NAME: document ROW' without origins."""
        start = 0
        for origin in self.origins:
            if row < start + origin.rows:
                return place(origin.where, row - start, origin.first_line, origin.row_lines)
            start += origin.rows
        return f"{self.name}: document {row}"

    def check_non_negative(self) -> None:
        """Every feature value ≥ 0, in the training and the test part alike (the count models need
        it), or one MlnbError line naming the file and line of the first negative value."""
        X = self.X
        if X.nnz and X.data.min() < 0:
            position = int(np.flatnonzero(X.data < 0)[0])
            row = int(np.searchsorted(X.indptr, position, side="right")) - 1
            raise MlnbError(f"{self.place(row)}: feature value {X.data[position]:g} is negative; this model needs "
                            "non-negative feature values (counts, presence or TF-IDF)")

    def describe(self) -> dict:
        """Shape and label statistics for reports."""
        labels_per_doc = np.diff(self.Y.indptr)
        words_per_doc = np.diff(self.X.indptr)
        prevalence = np.asarray(self.Y.sum(axis=0)).ravel() / max(self.n_documents, 1)
        return {
            "name": self.name, "n_documents": self.n_documents, "n_train": int(self.train_index.size),
            "n_test": int(self.test_index.size), "n_features": self.n_features,
            "n_categories": self.n_categories, "nnz": int(self.X.nnz),
            "mean_labels_per_document": float(labels_per_doc.mean()) if self.n_documents else 0.0,
            "mean_features_per_document": float(words_per_doc.mean()) if self.n_documents else 0.0,
            "max_prevalence": float(prevalence.max()) if self.n_categories else 0.0,
            "min_nonzero_prevalence": float(prevalence[prevalence > 0].min()) if (prevalence > 0).any() else 0.0,
            "split": self.split_rule,
        } | ({"text_features": self.text_features} if self.text_features is not None else {})


@dataclass(frozen=True)
class RowOrigin:
    """``rows`` consecutive rows of a Dataset's X read from ``where`` (a file), their lines given by
    ``first_line`` (consecutive lines) or ``row_lines`` (see ``validate.place``)."""

    where: str
    rows: int
    first_line: int | None = None
    row_lines: object = None


def hash_split(ids, seed: int, test_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) row numbers, sorted: row i is a test row when ``split_mask(ids, seed,
    test_fraction)[i]``, the rule by which a streaming source splits the same documents. The test
    share is test_fraction ± sqrt(test_fraction · (1 − test_fraction) / n), not exactly it.

    >>> hash_split([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], seed=0, test_fraction=0.5)
    (array([0, 2, 3, 8, 9]), array([1, 4, 5, 6, 7]))
    """
    ids = np.asarray(ids)
    test = split_mask(ids, seed, test_fraction)
    if test.all() or not test.any():
        raise MlnbError(f"test_fraction {test_fraction} of {ids.size} documents leaves an empty train or test set "
                        f"(split by a seeded hash of each document's id, seed {seed})")
    return np.flatnonzero(~test), np.flatnonzero(test)


def _rows(M: sp.csr_matrix, index: np.ndarray) -> sp.csr_matrix:
    """Rows ``index`` of M; a contiguous run of rows shares M's arrays instead of copying
    them (the LYRL2004 splits are two runs of 23k and 781k documents)."""
    if index.size and index[-1] - index[0] + 1 == index.size and np.all(np.diff(index) == 1):
        start, stop = int(index[0]), int(index[-1]) + 1
        first, last = M.indptr[start], M.indptr[stop]
        part = sp.csr_matrix((stop - start, M.shape[1]), dtype=M.dtype)
        # assigned, not passed to the constructor, which would copy data and indices
        part.data, part.indices = M.data[first:last], M.indices[first:last]
        part.indptr = M.indptr[start:stop + 1] - first
        return part
    return select_rows(M, index)


def _default_names(K: int) -> list[str]:
    return [str(k) for k in range(K)]


def _as_X(X) -> sp.csr_matrix:
    return check_features(X, "X")


def _as_Y(Y) -> sp.csr_matrix:
    return check_labels(Y, "Y")
