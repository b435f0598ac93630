r"""The Naive Bayes count products F = Yᵀ·X (categories × words) for all categories at once.

scipy computes it as a sparse × sparse product on one core, building a sparse
result (K × V). The numba kernel accumulates straight into a dense (K × V)
array, parallel over categories: each category's row of F belongs to one
thread, which adds up the rows of X of that category's documents (from Y in
CSC form). Both give the same sums; ``binary`` counts presence [X > 0].

The Gaussian event model also needs the sums of squares F2 = Yᵀ·(X∘X) and
t2 = 1ᵀ·(X∘X). The same kernels accumulate them in the same pass: each float32
value is widened to float64 before it is squared, which is exact (24 + 24
significant bits fit in float64's 53), so no float64 copy of X is ever made.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mlnb._numba import HAVE_NUMBA, njit, prange

# the kernel is ahead of scipy from about a thousand non-zeros (tweets DTM, 3 classes: 0.43 ms against
# 1.9 ms at 124k non-zeros; 0.11 against 0.22 ms at 8k); below this scipy's path is kept for tiny inputs
_NUMBA_MIN_NNZ = 10_000

if HAVE_NUMBA:

    @njit(parallel=True, cache=True)
    def _count(y_indptr, y_indices, indptr, indices, data, binary, F, F2):
        K = F.shape[0]
        squares = F2.shape[0] > 0  # tested once per document, never inside the word loop
        for k in prange(K):
            row = F[k]
            for q in range(y_indptr[k], y_indptr[k + 1]):
                i = y_indices[q]
                if squares:
                    row2 = F2[k]
                    for p in range(indptr[i], indptr[i + 1]):
                        v = np.float64(data[p])
                        row[indices[p]] += v
                        row2[indices[p]] += v * v
                    continue
                for p in range(indptr[i], indptr[i + 1]):
                    if binary:
                        row[indices[p]] += 1.0 if data[p] > 0 else 0.0
                    else:
                        row[indices[p]] += data[p]


if HAVE_NUMBA:

    @njit(cache=True)
    def _totals(indices, data, binary, t, t2):
        squares = t2.shape[0] > 0
        for p in range(indices.size):
            if binary:
                t[indices[p]] += 1.0 if data[p] > 0 else 0.0
            else:
                v = np.float64(data[p])
                t[indices[p]] += v
                if squares:
                    t2[indices[p]] += v * v


_NO_SQUARES_1D = np.zeros(0)
_NO_SQUARES_2D = np.zeros((0, 0))


def feature_totals(X: sp.csr_matrix, binary: bool = False) -> np.ndarray:
    """t = 1ᵀ·X (or 1ᵀ·[X > 0]) as float64 (V,), without a float64 copy of X's values."""
    t = np.zeros(X.shape[1], dtype=np.float64)
    if HAVE_NUMBA:
        _totals(X.indices, X.data, binary, t, _NO_SQUARES_1D)
        return t
    weights = (X.data > 0) if binary else X.data
    return np.bincount(X.indices, weights=weights.astype(np.float64), minlength=X.shape[1])


def feature_moments(X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """(t, t2) = (1ᵀ·X, 1ᵀ·(X∘X)) as float64 (V,) each, in one pass over X."""
    t = np.zeros(X.shape[1], dtype=np.float64)
    t2 = np.zeros(X.shape[1], dtype=np.float64)
    if HAVE_NUMBA:
        _totals(X.indices, X.data, False, t, t2)
        return t, t2
    values = X.data.astype(np.float64)  # without numba: one float64 copy of the values
    return (np.bincount(X.indices, weights=values, minlength=X.shape[1]),
            np.bincount(X.indices, weights=values * values, minlength=X.shape[1]))


if HAVE_NUMBA:

    @njit(cache=True)
    def _column_extremes(indices, data, lo, hi, integer, stored):
        for p in range(indices.size):
            j, v = indices[p], data[p]
            lo[j] = min(lo[j], v)
            hi[j] = max(hi[j], v)
            integer[j] &= v == np.floor(v)
            stored[j] += 1


def column_statistics(X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(min, max, all-integer) of every column of X (V,) each, implicit zeros included."""
    V = X.shape[1]
    lo, hi = np.full(V, np.inf), np.full(V, -np.inf)
    integer, stored = np.ones(V, dtype=bool), np.zeros(V, dtype=np.int64)
    if HAVE_NUMBA:
        _column_extremes(X.indices, X.data, lo, hi, integer, stored)
    else:  # pragma: no cover
        np.minimum.at(lo, X.indices, X.data)
        np.maximum.at(hi, X.indices, X.data)
        np.logical_and.at(integer, X.indices, X.data == np.floor(X.data))
        stored = np.bincount(X.indices, minlength=V)
    has_zero = stored < X.shape[0]  # a column with fewer stored values than rows has implicit zeros
    return np.where(has_zero, np.minimum(lo, 0.0), lo), np.where(has_zero, np.maximum(hi, 0.0), hi), integer


def _use_numba(X: sp.csr_matrix, kernel: str) -> bool:
    if kernel == "numba" and not HAVE_NUMBA:  # pragma: no cover
        raise ImportError("numba is not installed: use kernel = 'scipy'")
    return kernel == "numba" or (kernel == "auto" and HAVE_NUMBA and X.nnz >= _NUMBA_MIN_NNZ)


def _labels_by_category(Y: sp.csr_matrix) -> sp.csc_matrix:
    Yc = sp.csc_matrix(Y, copy=True)
    Yc.eliminate_zeros()  # a stored 0 is not a label
    return Yc


def category_feature_counts(Y: sp.csr_matrix, X: sp.csr_matrix, binary: bool = False,
                            kernel: str = "auto") -> np.ndarray:
    """F = Yᵀ·X as a dense float64 (K × V) array; ``binary`` uses [X > 0] for X."""
    if _use_numba(X, kernel):
        Yc = _labels_by_category(Y)
        F = np.zeros((Y.shape[1], X.shape[1]), dtype=np.float64)
        _count(Yc.indptr, Yc.indices, X.indptr, X.indices, X.data, binary, F, _NO_SQUARES_2D)
        return F
    if binary:
        X = X.copy()
        X.data = (X.data > 0).astype(np.float32)
    return (Y.T.astype(np.float64) @ X).toarray()  # (K, n)·(n, V) -> (K, V), summed in float64


def category_feature_moments(Y: sp.csr_matrix, X: sp.csr_matrix,
                             kernel: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """(F, F2) = (Yᵀ·X, Yᵀ·(X∘X)) as dense float64 (K × V) arrays, in one pass over X."""
    if _use_numba(X, kernel):
        Yc = _labels_by_category(Y)
        F = np.zeros((Y.shape[1], X.shape[1]), dtype=np.float64)
        F2 = np.zeros_like(F)
        _count(Yc.indptr, Yc.indices, X.indptr, X.indices, X.data, False, F, F2)
        return F, F2
    # small X (or no numba): float64 values, squared exactly; the copy is of a small X
    X64 = X.astype(np.float64)
    Yt = Y.T.astype(np.float64)
    F = (Yt @ X64).toarray()  # (K, V)
    X64.data *= X64.data
    return F, (Yt @ X64).toarray()  # (K, V)
