"""How many stored values each column of a CSR matrix has: ``np.bincount(X.indices, minlength=V)``,
counted on every thread.

For RCV1's 781k documents (47M non-zeros) ``np.bincount`` took 1.0 s on one core: it first
copies the int32 indices to int64. Each thread here counts its own share of the indices into its
own row of counts, and the rows are added: integer sums, so the same counts whatever the thread
count. (Used for the features' document frequencies and the LR engine's word counts.)
"""

from __future__ import annotations

import numpy as np

from mlnb._numba import HAVE_NUMBA, njit, prange

#: at most this many bytes of per-thread count rows (threads × V × 8); beyond, fewer threads count
COUNT_ROWS_BYTES = 64 * 2**20

if HAVE_NUMBA:

    @njit(parallel=True, cache=True)
    def _count(indices, V, pieces, counts, bad):
        n = indices.size
        share = (n + pieces - 1) // pieces
        for p in prange(pieces):
            for q in range(p * share, min(n, (p + 1) * share)):
                j = indices[q]
                if 0 <= j < V:
                    counts[p, j] += 1
                else:
                    bad[p] = 1


def column_counts(indices: np.ndarray, V: int) -> np.ndarray:
    """(V,) int64: how often each of 0..V−1 occurs in ``indices`` (a CSR matrix's column indices);
    ValueError for an index outside 0..V−1 (``np.bincount`` would grow its output instead)."""
    indices = np.asarray(indices)
    if not HAVE_NUMBA or indices.size < 1 << 16:
        counts = np.bincount(indices, minlength=V) if indices.size else np.zeros(V, dtype=np.int64)
        if counts.size != V:
            raise ValueError(f"a column index is {counts.size - 1}, beyond the {V} columns")
        return counts.astype(np.int64, copy=False)
    import numba

    pieces = max(1, min(numba.get_num_threads(), COUNT_ROWS_BYTES // (8 * max(V, 1)), indices.size >> 16))
    counts = np.zeros((pieces, V), dtype=np.int64)
    bad = np.zeros(pieces, dtype=np.int64)
    _count(indices, V, pieces, counts, bad)
    if bad.any():
        raise ValueError(f"a column index is outside 0..{V - 1}")
    return counts.sum(axis=0)
