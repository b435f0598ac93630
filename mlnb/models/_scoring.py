r"""Scores of every document for every category: Z = X·W + b, one sparse × dense product.

scipy's CSR × dense product runs on one core. The numba kernel below computes
the same sums in the same order (each row's non-zeros in index order, the
category loop innermost over a contiguous row of W), in parallel on every core
over pieces of rows that the threads claim in turn (measured against scipy by
experiments/bench.py). With ``binary`` it treats every
stored value as 1 (word presence) without copying X.

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

from mlnb._kernels.atomic import piece_rows
from mlnb._kernels.jit import HAVE_NUMBA, IEEE, njit, prange

# below this many multiply-adds the thread start-up costs more than it saves
_NUMBA_MIN_WORK = 2_000_000

if HAVE_NUMBA:
    from mlnb._kernels.atomic import claim_rows
    from mlnb.models._float32_math import sigmoid as sigmoid32

    @njit(cache=True, fastmath=IEEE, inline="always")
    def _score_row(i, indptr, indices, data, W, b, binary, sigmoid, out):
        """out[i] = b + Σ_p x_ip·W_j over row i's non-zeros (x_ip read as 1 where > 0 with ``binary``), then σ of
        each value with ``sigmoid``.

        Why a kernel: inlined into both scoring loops, so that the parallel and the serial loop make the same
        operations in the same order. Measured by experiments/bench.py (the scoring stage)."""
        K = out.shape[1]
        one = np.float32(1.0)
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

    # one row's arithmetic (inlined by numba into both loops), looped on every thread or on one. IEEE
    # arithmetic (no FMA contraction or approximate reciprocals), so that the two loops, and numba's
    # fresh and cached code, give the same bits whatever they vectorise (see mlnb._kernels.jit.IEEE).
    # Two functions, not one compiled twice: numba's on-disk cache names a kernel by its function
    # (qualified name and first line) and keys it on the argument types only, not on the compile
    # flags, so the parallel and serial compilations of one function shared one cache entry, and
    # whichever ran first in a fresh cache was loaded for both: scoring then ran on one thread at
    # any thread count (tests/models/test_scoring.py checks that no two kernels share a name)
    @njit(parallel=True, cache=True, fastmath=IEEE)
    def _csr_times_dense(indptr, indices, data, W, b, binary, sigmoid, out, workers, rows_a_piece):
        """out = X·W + b (σ of it with ``sigmoid``) from X's CSR arrays, pieces of ``rows_a_piece`` rows claimed by
        ``workers`` workers in turn.

        Why a kernel: scipy's CSR × dense product runs on one core and takes no σ or presence in the same pass,
        where here the threads claim pieces of rows. Measured by experiments/bench.py (the scoring stage)."""
        # each worker claims pieces of rows_a_piece rows in turn (mlnb._kernels.atomic), not a fixed share: a
        # worker slowed by the machine (another process on its core, output pages new to the process)
        # scores fewer pieces instead of keeping the others waiting
        n, claimed = out.shape[0], np.zeros(1, dtype=np.int64)
        for worker in prange(workers):
            while True:
                start, stop = claim_rows(claimed, rows_a_piece, n)
                if start >= n:
                    break
                for i in range(start, stop):
                    _score_row(i, indptr, indices, data, W, b, binary, sigmoid, out)

    @njit(cache=True, fastmath=IEEE)
    def _csr_times_dense_serial(indptr, indices, data, W, b, binary, sigmoid, out):
        """``_csr_times_dense`` on one thread, rows in order.

        Why a kernel: the same row operations for products too small to repay starting the threads. Measured by
        experiments/bench.py (the scoring stage)."""
        for i in range(out.shape[0]):
            _score_row(i, indptr, indices, data, W, b, binary, sigmoid, out)

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
        arguments = (X.indptr, X.indices, X.data, np.ascontiguousarray(W, dtype=np.float32),
                     np.asarray(b, dtype=np.float32), binary, sigmoid, out)
        if X.nnz * W.shape[1] >= _NUMBA_MIN_WORK:
            import numba

            workers = numba.get_num_threads()
            _csr_times_dense(*arguments, workers, piece_rows(X.shape[0], workers))
        else:
            _csr_times_dense_serial(*arguments)
        return out
    if binary:
        X = X.copy()
        X.data = (X.data > 0).astype(np.float32)
    out = np.asarray(X @ W, dtype=np.float32)  # (n, V)·(V, K) -> (n, K)
    out += b
    return expit(out, out=out) if sigmoid else out
