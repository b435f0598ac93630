"""The one check of a feature matrix X and a label matrix Y, wherever they enter.

Every loader (svmlight, text, ARFF, Reuters, LYRL2004, RCV1, synthetic, bundled), every streamed
chunk and every estimator's ``fit``/``partial_fit``/``decision_function`` passes its matrices
through :func:`check_features` and :func:`check_labels`, so a value refused in training lines is
refused the same way in test lines, in a scoring call and in a chunk. A refusal is one
:class:`~mlnb.errors.MlnbError` line naming the place of the first offending row: ``file:LINE``
when the caller knows the lines of its rows, else ``where: document i``.

What every source must satisfy (checked here):

- X is 2-D and numeric (bool, integer or float; never strings or objects);
- every value is finite and |x| ≤ ``MAX_ABS_FEATURE`` (float32 scoring overflows beyond it);
- with ``non_negative=True`` (the count Naive Bayes kinds: multinomial, Bernoulli, complement) every
  value is ≥ 0. Negative values are valid features for logistic regression, linear SVMs and
  Gaussian Naive Bayes, so the loaders do not refuse them: the estimators that need counts ask.
- Y is 2-D with one row per document and only 0/1 entries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb.data.regular import check_regular
from mlnb.errors import MlnbError

#: the largest |x| a feature value may have. float32 ends at 3.4e38: Gaussian Naive Bayes squares
#: x (x² ≤ 1e30) and sums x² over the documents (room for 10⁸ of them), and X·W with |x| = 1e30
#: already overflows for |w| ≥ 1e9, so that a model "silently learns nothing"
MAX_ABS_FEATURE = 1e15

RowLines = Sequence[int] | np.ndarray | Callable[[int], int] | None


def place(where: str, row: int, first_line: int | None = None, row_lines: RowLines = None) -> str:
    """'where:LINE' for row ``row`` (0-based) when its line is known, else 'where: document row'.

    ``row_lines`` maps rows to 1-based line numbers (a sequence, or a function called only on
    error, for files whose rows skip blank or comment lines); ``first_line`` is the line of row 0
    when rows are consecutive lines.
    """
    if row_lines is not None:
        line = row_lines(row) if callable(row_lines) else row_lines[row]
        return f"{where}:{int(line)}"
    if first_line is not None:
        return f"{where}:{first_line + row}"
    return f"{where}: document {row}"


def _row_of(X: sp.csr_matrix, data_position: int) -> int:
    """The row that holds X.data[data_position]."""
    return int(np.searchsorted(X.indptr, data_position, side="right")) - 1


def as_csr(X, where: str, kind: str = "X") -> sp.csr_matrix:
    """X (sparse, array or nested lists) as CSR, refusing what is not a numeric 2-D matrix."""
    if sp.issparse(X):
        dtype = X.dtype
        shape = X.shape
    else:
        try:
            X = np.asarray(X)
        except (ValueError, TypeError):  # ragged nested lists
            raise MlnbError(f"{where}: expected a 2-D numeric matrix, got rows of different lengths") from None
        dtype, shape = X.dtype, X.shape
    if len(shape) != 2:
        raise MlnbError(f"{where}: expected a 2-D matrix (documents × {'features' if kind == 'X' else 'categories'}), "
                        f"got shape {shape}")
    if dtype.kind not in "biuf":
        raise MlnbError(f"{where}: expected numbers, got dtype {dtype}"
                        + (" (strings: map them to numbers first)" if dtype.kind in "USO" else ""))
    # a new matrix object even for a CSR input (sharing its arrays): callers may set its attributes
    # (logistic regression widens indptr to int64) without touching the caller's matrix
    return sp.csr_matrix(X)


def check_features(X, where: str = "X", first_line: int | None = None, row_lines: RowLines = None,
                   non_negative: bool = False) -> sp.csr_matrix:
    """X as CSR float32 (documents × features), every value finite, |x| ≤ ``MAX_ABS_FEATURE`` and,
    with ``non_negative``, x ≥ 0; copying only when needed. One MlnbError line otherwise, naming
    ``where`` and the first offending row (see :func:`place`)."""
    X = as_csr(X, where, "X")
    if X.dtype != np.float32:
        original = X.data
        if X.has_canonical_format:
            # new values on X's own indices: scipy's astype also copies the indices
            X = sp.csr_matrix((original.astype(np.float32), X.indices, X.indptr), shape=X.shape)
        else:
            X = X.astype(np.float32)
            original = X.data  # reordered: name the float32 values
        # checked in float32, one pass over half the bytes; a message shows the value as given
        _check_values(X.data, X, where, first_line, row_lines, non_negative, original)
        return X
    _check_values(X.data, X, where, first_line, row_lines, non_negative)
    return X


def _check_values(data: np.ndarray, X: sp.csr_matrix, where: str, first_line, row_lines,
                  non_negative: bool, original: np.ndarray | None = None) -> None:
    """``data`` (X's float32 values) finite, within MAX_ABS_FEATURE and (``non_negative``) ≥ 0;
    a message quotes ``original`` (the values before the float32 conversion) when given."""
    if not data.size:
        return
    from mlnb._kernels.csr import value_bounds  # (numba: imported when a matrix is checked, not with the sources)

    low, high = value_bounds(data)  # NaN propagates through min/max: a pass each when all is well, on every thread
    if np.isfinite(low) and np.isfinite(high) and max(high, -low) <= MAX_ABS_FEATURE \
            and (low >= 0 or not non_negative):
        return
    shown = data if original is None else original
    bad = ~np.isfinite(data)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise MlnbError(f"{place(where, _row_of(X, i), first_line, row_lines)}: feature value {shown[i]} "
                        "(NaN or infinite values, or values beyond float32's range, cannot be scored)")
    big = np.abs(data) > MAX_ABS_FEATURE
    if big.any():
        i = int(np.flatnonzero(big)[0])
        raise MlnbError(f"{place(where, _row_of(X, i), first_line, row_lines)}: feature value {shown[i]:.3g} "
                        f"has a magnitude beyond the {MAX_ABS_FEATURE:g} that float32 scoring can take; "
                        "rescale the features (e.g. features.transform)")
    i = int(np.flatnonzero(data < 0)[0])
    raise MlnbError(f"{place(where, _row_of(X, i), first_line, row_lines)}: feature value {shown[i]:g} is "
                    "negative; this model needs non-negative feature values (counts, presence or TF-IDF)")


def check_non_negative(X: sp.csr_matrix, where: str = "X", first_line: int | None = None,
                       row_lines: RowLines = None) -> None:
    """For a checked X (see check_features): every value ≥ 0, as the count models need."""
    from mlnb._kernels.csr import value_bounds

    if X.nnz and value_bounds(X.data)[0] < 0:
        _check_values(X.data, X, where, first_line, row_lines, non_negative=True)


def check_labels(Y, where: str = "Y", n_documents: int | None = None, first_line: int | None = None,
                 row_lines: RowLines = None, *, shape: tuple | None = None) -> sp.csr_matrix:
    """Y as CSR int8 0/1 (documents × categories), with ``n_documents`` rows when given and of the
    scores' ``shape`` when given; one MlnbError line otherwise, naming ``where`` and the first
    offending row."""
    if Y is None:
        raise MlnbError(f"{where}: required, got None")
    Y = as_csr(Y, where, "Y")
    if n_documents is not None and Y.shape[0] != n_documents:
        raise MlnbError(f"{where}: expected one row per document ({n_documents}), got shape {Y.shape}")
    if shape is not None and Y.shape != tuple(shape):
        raise MlnbError(f"{where}: shape {Y.shape} differs from the scores' {tuple(shape)}")
    bad = np.flatnonzero((Y.data != 0) & (Y.data != 1))
    if bad.size:
        i = int(bad[0])
        raise MlnbError(f"{place(where, _row_of(Y, i), first_line, row_lines)}: label value {Y.data[i]} in "
                        f"category column {Y.indices[i]}; expected a 0/1 category matrix (documents × categories)")
    from mlnb._kernels.csr import row_order

    if Y.dtype == np.int8 and row_order(Y) and Y.has_canonical_format and (Y.data == 1).all():
        return Y
    Y = Y.astype(np.int8)
    Y.eliminate_zeros()
    Y.sum_duplicates()
    if Y.nnz and not (Y.data == 1).all():  # duplicates of one entry summed above 1
        Y.data[:] = 1
    return Y


def check_scores(scores, where: str = "scores", shape: tuple | None = None) -> np.ndarray:
    """A dense 2-D numeric (documents × categories) score matrix without NaN (±inf allowed: a
    probability of exactly 0 or 1), of ``shape`` when given; one MlnbError line otherwise."""
    if scores is None:
        raise MlnbError(f"{where}: required, got None")
    if sp.issparse(scores):
        raise MlnbError(f"{where}: expected a dense documents × categories array, got a sparse matrix")
    try:
        scores = np.asarray(scores)
    except (ValueError, TypeError) as error:
        raise MlnbError(f"{where}: expected a 2-D numeric array ({error})") from None
    if scores.dtype.kind not in "biuf":
        raise MlnbError(f"{where}: expected numbers, got dtype {scores.dtype}")
    if scores.ndim != 2:
        raise MlnbError(f"{where}: expected a 2-D array (documents × categories), got shape {scores.shape}")
    if shape is not None and scores.shape != tuple(shape):
        raise MlnbError(f"{where}: has shape {scores.shape}, expected {tuple(shape)} (documents × categories "
                        "of the labels)")
    if scores.dtype.kind == "f":
        from mlnb._kernels.csr import value_bounds  # (numba: imported when scores are checked, not with the sources)

        if np.isnan(value_bounds(scores)[0]):  # NaN propagates through min: no n × K mask unless there is one
            bad = np.isnan(scores)
            row, column = np.argwhere(bad)[0]
            raise MlnbError(f"{where}: NaN score for document {row}, category {column} "
                            f"({int(bad.sum())} NaN in all)")
    return scores


def existing_file(path, what: str) -> Path:
    """``path`` as a Path when it is a readable regular file; else one line saying what it is instead
    ('is a directory', 'no such file', 'is a FIFO (named pipe), not a regular file', 'permission denied'),
    naming ``what`` was expected (:func:`mlnb.data.regular.check_regular`)."""
    return check_regular(path, what)


def existing_folder(path, what: str) -> Path:
    """``path`` as a Path when it is a folder; else one line ('is a file', 'no such folder')."""
    path = Path(path)
    if path.is_dir():
        return path
    if path.exists():
        raise MlnbError(f"{path}: is a file, not a folder ({what})")
    raise MlnbError(f"{path}: no such folder ({what})")


def one_class_error(place: str, labels: list) -> MlnbError:
    """The one line for a document without exactly one class (task = 'multiclass'), the same whole and
    streamed: ``place`` is its 'file:LINE', ``labels`` the names of the classes it has."""
    has = f"labels {', '.join(map(repr, labels))}" if labels else "no label"
    return MlnbError(f"{place}: document has {has}; task = 'multiclass' needs exactly one class per document: use "
                     "task = 'multilabel'")
