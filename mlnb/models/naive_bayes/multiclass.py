r"""Single-label (multiclass) Naive Bayes: one class per document, every class scored jointly.

Multilabel Naive Bayes asks of each category k "k or not k?" (log-odds, from
complement counts). With exactly one class per document the question is
"which class?", and class c scores by its joint log-likelihood

    J_c(x) = log P(c) + log P(x | c) = Φ(x)·W_c + b_c     (n × K: one product for all classes)
    log P(c | x) = J_c(x) − logsumexp_j J_j(x)             (``log_posterior``)

W_c and b_c are per-class log-probabilities, by each event model's
``log_likelihood`` (its record's, see ``event_model``). The counts are those of the multilabel model (``NBCounts``
of the one-hot Y) read per class, so ``partial_fit`` still equals ``fit``.

Class priors P(c), option ``class_prior``:

    mle          N_c / n
    m_estimate   (N_c + m·q) / (n + m),  q = 1/K,  m = ``prior_m``
    uniform      1 / K
    given        ``class_prior_values``: one per class, positive, summing to 1

A class without training documents (N_c = 0) keeps finite scores: under "mle"
its prior is smoothed to (N_c + ½) / (n + ½K) (the other priors are finite
already, and a prior the user gave is kept), and its word model comes from the
smoothing alone (Gaussian: the moments of all documents; see each module).

>>> one_hot(np.array([2, 0]), 2).toarray()
array([[0., 0., 1.],
       [1., 0., 0.]], dtype=float32)
>>> np.exp(class_log_prior(np.array([3., 1.]), 4, "m_estimate", m=2.0, given=()))  # (3 + 1)/6, (1 + 1)/6
array([0.66666667, 0.33333333])
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from mlnb._kernels.jit import HAVE_NUMBA, njit, prange
from mlnb.errors import MlnbError
from mlnb.models.naive_bayes.counts import NBCounts

CLASS_PRIORS = ("mle", "m_estimate", "uniform", "given")
PRIOR_SUM_TOLERANCE = 1e-6  # how far from 1 given class priors may sum


def one_hot(Y, n_documents: int, n_classes: int = 0) -> sp.csr_matrix:
    """Y as one-hot CSR float32 (n × K): class labels 0..K−1 (1-D; K = max(largest + 1,
    n_classes), as a later chunk may bring a new class) or a one-hot matrix."""
    from mlnb.models._linear import as_one_hot  # here: a compiling process (mlnb.precompile) skips scikit-learn

    return as_one_hot(Y, n_documents, min_classes=n_classes)


def with_classes(counts: NBCounts, K: int) -> NBCounts:
    """The counts with empty classes appended up to K: a later chunk saw a new class label."""
    extra = K - counts.shape[0]
    if extra <= 0:
        return counts
    grown = lambda A: None if A is None else np.vstack([A, np.zeros((extra, A.shape[1]))])  # noqa: E731
    return dataclasses.replace(counts, F=grown(counts.F), F2=grown(counts.F2), N=np.r_[counts.N, np.zeros(extra)],
                               S=np.r_[counts.S, np.zeros(extra)])


def check_given_prior(values, K: int | None = None) -> None:
    """``class_prior_values``: positive, summing to 1, and (when K is known) one per class."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0 or not (values > 0).all():
        raise MlnbError(f"class_prior_values must be positive, one per class, got {list(values)}")
    if abs(values.sum() - 1) > PRIOR_SUM_TOLERANCE:
        raise MlnbError(f"class_prior_values must sum to 1 (within {PRIOR_SUM_TOLERANCE:g}), got "
                        f"{list(values)} summing to {values.sum():.9g}")
    if K is not None and values.size != K:
        raise MlnbError(f"class_prior_values has {values.size} values, but the training data have {K} classes")


def class_log_prior(N: np.ndarray, n: int, how: str, m: float, given) -> np.ndarray:
    """log P(c) (K,) from the class counts N (K,) of n documents."""
    K = N.size
    if how == "uniform":
        return np.full(K, -np.log(K))
    if how == "given":
        check_given_prior(given, K)
        return np.log(np.asarray(given, dtype=np.float64))
    if how == "m_estimate":
        return np.log(N + m / K) - np.log(n + m)
    with np.errstate(divide="ignore"):
        mle = np.log(N) - np.log(n)
    return np.where(N > 0, mle, np.log(N + 0.5) - np.log(n + 0.5 * K))


if HAVE_NUMBA:

    @njit(parallel=True, cache=True)
    def _joint_kernel(indptr, indices, data, binary, W, b, out):
        """out = Φ·W + b in float64 from Φ's CSR arrays (with ``binary``, [Φ > 0]), rows on every thread.

        Why a kernel: widens each stored value in place of the float64 copy of Φ that scipy would make, and
        multiplies on every thread, where scipy's product runs on one core. Measured by
        experiments/bench_multiclass_nb.py."""
        n, K = out.shape
        for i in prange(n):
            for k in range(K):
                out[i, k] = b[k]
            for p in range(indptr[i], indptr[i + 1]):
                v = (1.0 if data[p] > 0 else 0.0) if binary else np.float64(data[p])  # float32 -> 64: exact
                j = indices[p]
                for k in range(K):
                    out[i, k] += v * W[j, k]


def joint_log_likelihood(Phi: sp.csr_matrix, W: np.ndarray, b: np.ndarray, binary: bool) -> np.ndarray:
    """J = Φ·W + b (n × K) in float64 from Φ (n × rows, CSR; ``binary``: [Φ > 0]), W (rows × K) and b
    (K,) in float64. numba widens each stored value in place of a float64 copy of Φ (which scipy
    would make, then multiply on one core)."""
    if HAVE_NUMBA:
        out = np.empty((Phi.shape[0], W.shape[1]), dtype=np.float64)
        _joint_kernel(Phi.indptr, Phi.indices, Phi.data, binary, np.ascontiguousarray(W), b, out)
        return out
    values = (Phi.data > 0) if binary else Phi.data
    Phi = sp.csr_matrix((values.astype(np.float64), Phi.indices, Phi.indptr), shape=Phi.shape)
    return Phi @ W + b  # (n, rows)·(rows, K) + (K,)


def log_posterior(J: np.ndarray) -> np.ndarray:
    """log P(c | x) = J_c − logsumexp_j J_j per row (n × K), float64; the row maximum is taken out
    first, so no exp overflows and the largest term is exactly exp(0) = 1."""
    # held as (K, n): numpy reduces over a short last axis row by row (experiments/bench_multiclass_nb.py)
    by_class = np.array(J, dtype=np.float64, order="F").T  # (K, n), C-contiguous
    by_class -= by_class.max(axis=0)
    by_class -= np.log(np.exp(by_class).sum(axis=0))
    return np.ascontiguousarray(by_class.T)  # (n, K)
