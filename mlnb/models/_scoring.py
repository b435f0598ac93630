r"""Scores of every document for every category: Z = X·W + b, one sparse × dense product.

scipy's CSR × dense product runs on one core. The numba kernel below computes
the same sums in the same order (each row's non-zeros in index order, the
category loop innermost over a contiguous row of W), in parallel over rows on
every core; it measured 3.6× scipy on 781k × 47k × 103 (experiments/bench.py).
With ``binary`` it treats every stored value as 1 (word presence) without
copying X.

A document's scores must not depend on what else is scored with it (a streamed
test set is scored chunk by chunk, a whole one at once), so "auto" never
switches between scipy and numba by size: small products run the same compiled
loop on one thread (no thread start-up), large ones in parallel; each row's sums
are the same operations either way.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from mlnb._numba import HAVE_NUMBA, IEEE, njit, prange

# below this many multiply-adds the thread start-up costs more than it saves
_NUMBA_MIN_WORK = 2_000_000

if HAVE_NUMBA:
    from mlnb.models._float32_math import sigmoid as sigmoid32

    def _csr_times_dense_rows(indptr, indices, data, W, b, binary, sigmoid, out):
        n, K = out.shape
        one = np.float32(1.0)
        for i in prange(n):
            for k in range(K):
                out[i, k] = b[k]
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                v = (one if data[p] > 0 else np.float32(0.0)) if binary else data[p]
                for k in range(K):
                    out[i, k] += v * W[j, k]
            if sigmoid:  # _float32_math's σ: the loop runs in vector lanes (np.exp is a call per value)
                for k in range(K):
                    out[i, k] = sigmoid32(out[i, k])

    # one loop, compiled twice: the rows' arithmetic is identical, only the threads differ. IEEE
    # arithmetic (no FMA contraction or approximate reciprocals), so that the two compilations, and
    # numba's fresh and cached code, give the same bits whatever they vectorise (see mlnb._numba.IEEE)
    _csr_times_dense = njit(parallel=True, cache=True, fastmath=IEEE)(_csr_times_dense_rows)
    _csr_times_dense_serial = njit(cache=True, fastmath=IEEE)(_csr_times_dense_rows)


def linear_scores(X: sp.csr_matrix, W: np.ndarray, b: np.ndarray, binary: bool = False,
                  kernel: str = "auto", sigmoid: bool = False) -> np.ndarray:
    """Z = X·W + b as float32 (n × K); ``binary`` scores [X > 0] instead of X; ``sigmoid``
    returns σ(Z) instead, computed in the same pass.

    kernel: "numba" (all cores for large products, one for small), "scipy" (one core) or "auto"
    (numba when installed).
    """
    use_numba = kernel == "numba" or (kernel == "auto" and HAVE_NUMBA)
    if use_numba:
        if not HAVE_NUMBA:  # pragma: no cover
            raise ImportError("numba is not installed: use kernel = 'scipy'")
        out = np.empty((X.shape[0], W.shape[1]), dtype=np.float32)
        product = _csr_times_dense if X.nnz * W.shape[1] >= _NUMBA_MIN_WORK else _csr_times_dense_serial
        product(X.indptr, X.indices, X.data, np.ascontiguousarray(W, dtype=np.float32),
                np.asarray(b, dtype=np.float32), binary, sigmoid, out)
        return out
    if binary:
        X = X.copy()
        X.data = (X.data > 0).astype(np.float32)
    out = np.asarray(X @ W, dtype=np.float32)  # (n, V)·(V, K) -> (n, K)
    out += b
    return expit(out, out=out) if sigmoid else out
