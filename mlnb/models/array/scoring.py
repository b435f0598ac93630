r"""Scores on a device: Z = X̂·W + b, one sparse × dense product (cuSPARSE SpMM on a GPU).

    Z = X̂·W + b        X̂ (n × V) device CSR float32 (X, or its presence [X > 0] with ``binary``),
                        W (V × K) float32, b (K,) float32  ->  Z (n × K) float32

The product sums each row's terms in float32 in the library's order, not in the numba kernel's
(each row's non-zeros in index order, then + b), so Z equals the CPU estimator's to float32
round-off — a few ulp of the largest partial sum — not bit for bit.
"""

from __future__ import annotations

import numpy as np

from mlnb.models.array.device import ArrayNamespace, canonical


def presence(ns: ArrayNamespace, X):
    """[X > 0] as a device CSR float32 on X's structure (no copy of the indices)."""
    return ns.csr_from((X.data > 0).astype(np.float32), X.indices, X.indptr, X.shape, canonical(X))


def linear_scores(ns: ArrayNamespace, X, W, b, binary: bool = False):
    """Z = X̂·W + b (n × K) float32 on the device, from X (n × V) device CSR float32, W (V × K), b (K,)."""
    X = presence(ns, X) if binary else X
    Z = X @ W  # (n, V)·(V, K) -> (n, K)
    Z = ns.xp.asarray(Z, dtype=np.float32)  # scipy gives an ndarray (or a matrix for 1-column W)
    Z += ns.asarray(b, dtype=np.float32)
    return Z
