r"""The Naive Bayes count product F = Yᵀ·X (categories × words) for all categories at once.

scipy computes it as a sparse × sparse product on one core, building a sparse
result (K × V). The numba kernel accumulates straight into a dense (K × V)
array, parallel over categories: each category's row of F belongs to one
thread, which adds up the rows of X of that category's documents (from Y in
CSC form). Both give the same sums; ``binary`` counts presence [X > 0].
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mlnb._numba import HAVE_NUMBA, njit, prange

_NUMBA_MIN_NNZ = 200_000

if HAVE_NUMBA:

    @njit(parallel=True, cache=True)
    def _count(y_indptr, y_indices, indptr, indices, data, binary, F):
        K = F.shape[0]
        for k in prange(K):
            row = F[k]
            for q in range(y_indptr[k], y_indptr[k + 1]):
                i = y_indices[q]
                for p in range(indptr[i], indptr[i + 1]):
                    if binary:
                        row[indices[p]] += 1.0 if data[p] > 0 else 0.0
                    else:
                        row[indices[p]] += data[p]


if HAVE_NUMBA:

    @njit(cache=True)
    def _totals(indices, data, binary, t):
        for p in range(indices.size):
            if binary:
                t[indices[p]] += 1.0 if data[p] > 0 else 0.0
            else:
                t[indices[p]] += data[p]


def feature_totals(X: sp.csr_matrix, binary: bool = False) -> np.ndarray:
    """t = 1ᵀ·X (or 1ᵀ·[X > 0]) as float64 (V,), without a float64 copy of X's values."""
    t = np.zeros(X.shape[1], dtype=np.float64)
    if HAVE_NUMBA:
        _totals(X.indices, X.data, binary, t)
        return t
    weights = (X.data > 0) if binary else X.data
    return np.bincount(X.indices, weights=weights.astype(np.float64), minlength=X.shape[1])


def category_feature_counts(Y: sp.csr_matrix, X: sp.csr_matrix, binary: bool = False,
                            kernel: str = "auto") -> np.ndarray:
    """F = Yᵀ·X as a dense float64 (K × V) array; ``binary`` uses [X > 0] for X."""
    use_numba = kernel == "numba" or (kernel == "auto" and HAVE_NUMBA and X.nnz >= _NUMBA_MIN_NNZ)
    if use_numba:
        Yc = sp.csc_matrix(Y, copy=True)
        Yc.eliminate_zeros()  # a stored 0 is not a label
        F = np.zeros((Y.shape[1], X.shape[1]), dtype=np.float64)
        _count(Yc.indptr, Yc.indices, X.indptr, X.indices, X.data, binary, F)
        return F
    if binary:
        X = X.copy()
        X.data = (X.data > 0).astype(np.float32)
    return (Y.T.astype(np.float64) @ X).toarray()  # (K, n)·(n, V) -> (K, V), summed in float64
