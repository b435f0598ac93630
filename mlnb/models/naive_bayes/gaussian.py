r"""Gaussian Naive Bayes: each feature is normal within category k and within its complement.

Means and variances come from the counts (F2 = Yᵀ·(X∘X), t2 = 1ᵀ·(X∘X)):

    μ_kw = F_kw / N_k               σ²_kw = F2_kw / N_k − μ²_kw + ε
    μ̄_kw = F̄_kw / N̄_k               σ̄²_kw = F̄2_kw / N̄_k − μ̄²_kw + ε      (F̄2 = t2 − F2)
    ε    = var_smoothing · max_w var(X[:, w])      (scikit-learn's GaussianNB ``epsilon_``)

where that ε is positive; where it is 0 (every column constant, or var_smoothing = 0) a zero
variance would be divided by and the scores would be ±inf or NaN (scikit-learn's are), so ε is
floored at ``EPSILON_FLOOR`` · (max_w var(X[:, w]), or 1 when that is 0 too). Every column is
then constant or has a positive variance: a constant column is centred (below) to μ = μ̄ = 0 and
contributes nothing, and with no informative column at all a document scores its prior log-odds,
finite, as scikit-learn's class_log_prior_ would give.

The log-odds are quadratic in x, so W has two rows per feature, for x² and for x:

    log-odds_k(x) = Σ_w [A_kw x_w² + C_kw x_w] + b_k
    A_kw = 1/(2σ̄²_kw) − 1/(2σ²_kw)
    C_kw = μ_kw/σ²_kw − μ̄_kw/σ̄²_kw
    b_k  = prior_k + Σ_w [−½ log(σ²_kw/σ̄²_kw) − μ²_kw/(2σ²_kw) + μ̄²_kw/(2σ̄²_kw)]

and a document scores by one product [X∘X, X]·W + b. b holds every x = 0 term,
so a sparse zero costs nothing. W (2V × K: the A rows, then the C rows, the
layout [X∘X, X]·W reads) and b come from one sweep over the counts (``fused``),
with Σ_w ½ log(σ̄²/σ²) taken as the log of a product per block of words.

Multiclass (one class c per document; no complements), the joint log-likelihood
of scikit-learn's GaussianNB, on the same design [X∘X, X]:

    J_c(x) = log prior_c − ½ Σ_w [log(2π σ²_cw) + (x_w − μ_cw)² / σ²_cw]
    A_cw   = −1/(2σ²_cw)        C_cw = μ_cw/σ²_cw
    b_c    = log prior_c − ½ Σ_w [log(2π σ²_cw) + μ²_cw/σ²_cw]

A class without documents has no moments of its own: it takes those of all
documents (μ = t/n, σ² = t2/n − μ² + ε), so it scores like the corpus at large.

Centring. In float32 the three terms of a feature whose mean is large against
its spread (|μ| ≫ σ) are each ≈ (μ/σ)² and cancel to ≈ 1: the error grows as
(μ/σ)². A feature shifted by any constant c gives the same log-odds with μ − c
in place of μ, so features with |mean| > 2·std over all documents are scored as
x − mean. A zero of such a column is at least two standard deviations from the
mean, so at most a quarter of its values are zeros: centring at most adds a
third to its stored values, and leaves sparse columns sparse. Measured against
GaussianNB in float64, as a share of the largest |log-odds|: wine 1.6e-6 without
centring, 1.3e-7 with; breast cancer plus a column 2000 ± 5, 5.9e-6 and 1.9e-7.
(The counts are float64 sums of exact squares, so μ and σ² lose nothing.)

>>> import numpy as np
>>> F, F2 = np.array([[2.]]), np.array([[2.]])            # category: x = 1, 1
>>> t, t2 = np.array([0.]), np.array([4.])                # and the complement: x = −1, −1
>>> one = np.array([2.])
>>> W, b = log_odds(F, F2, one, t, t2, one, np.zeros(1), epsilon=1.0, shift=np.zeros(1), dtype=np.float64)
>>> W, b  # σ² = σ̄² = 1: A = 0, C = 1 − (−1)
(array([[0.],
       [2.]]), array([0.]))
>>> W, b = log_likelihood(F, F2, one, np.zeros(1), epsilon=1.0, shift=np.zeros(1), totals=(F[0], F2[0], 2))
>>> W, np.round(b, 3)  # μ = 1, σ² = 1: A = −½, C = 1, b = −½ (log 2π + 1)
(array([[-0.5],
       [ 1. ]]), array([-1.419]))
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mlnb.models.naive_bayes import fused
from mlnb.models.naive_bayes.event_model import EventModel, Weights

# features with |mean| > CENTRE_RATIO · std are scored as x − mean (see above)
CENTRE_RATIO = 2.0
#: ε where var_smoothing · max variance is 0, as a share of the largest variance (1 when that is 0):
#: scikit-learn's default var_smoothing
EPSILON_FLOOR = 1e-9


def epsilon(t: np.ndarray, t2: np.ndarray, n: int, var_smoothing: float) -> float:
    """ε = var_smoothing · max_w var(X[:, w]) from the column sums t, t2 (V,) of n documents; where that
    is 0, EPSILON_FLOOR · (max_w var, or 1): always > 0, so no variance is 0 (module docstring)."""
    if t.size == 0:  # no column: nothing to smooth
        return 0.0
    if n == 0:
        return EPSILON_FLOOR
    mean = t / n
    largest = float(np.max(np.maximum(t2 / n - mean * mean, 0.0)))
    eps = var_smoothing * largest
    return eps if eps > 0 else EPSILON_FLOOR * (largest if largest > 0 else 1.0)


def shift(t: np.ndarray, t2: np.ndarray, n: int) -> np.ndarray:
    """c (V,): the column mean where |mean| > CENTRE_RATIO · std, else 0."""
    mean = t / n
    var = np.maximum(t2 / n - mean * mean, 0.0)
    return np.where(mean * mean > CENTRE_RATIO**2 * var, mean, 0.0)


def log_odds(F, F2, N, t, t2, N_bar, prior, epsilon: float, shift, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(W (2V × K) in ``dtype``: [A; C], b (K,)) for features x − shift, from the sums F, F2 (K × V) of x
    inside each category and t, t2 (V,) over all documents (outside: F̄ = t − F, F̄2 = t2 − F2), N, N̄ (K,),
    and the prior log-odds (K,)."""
    W, word_terms = fused.gaussian_weights(F, F2, N, t, t2, N_bar, True, epsilon, shift, dtype)
    return W, prior + word_terms


def log_likelihood(F, F2, N, log_prior, epsilon: float, shift, totals,
                   dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """Multiclass: (W (2V × K): [A; C], b (K,)) for features x − shift, from the per-class sums F, F2
    (K × V), N (K,), log prior_c (K,), and totals = (t, t2, n) of all documents for empty classes."""
    t, t2, n = totals
    empty = N == 0
    if empty.any():
        F, F2, N = np.where(empty[:, None], t, F), np.where(empty[:, None], t2, F2), np.where(empty, n, N)
    W, word_terms = fused.gaussian_weights(F, F2, N, np.zeros(0), np.zeros(0), np.zeros(0), False, epsilon, shift,
                                           dtype)
    return W, log_prior + word_terms


def design(X: sp.csr_matrix, shift: np.ndarray, squared: np.ndarray | None = None,
           dtype=np.float32) -> sp.csr_matrix:
    """[Z∘Z restricted to the ``squared`` columns (all when None), Z] with Z = X − shift (n × (S + V)),
    in ``dtype`` (float64 keeps x² and x − c exact for float32 X)."""
    X = X.astype(dtype, copy=False)
    centred = np.flatnonzero(shift)
    if centred.size:
        n = X.shape[0]
        offsets = sp.csr_matrix((np.tile(-shift[centred].astype(dtype), n), np.tile(centred, n),
                                 np.arange(n + 1) * centred.size), shape=X.shape)
        X = (X + offsets).tocsr()  # (n, V): the centred columns stored in full
    Z = X if squared is None else X[:, squared]
    if Z.shape[1] == 0:
        return X
    return sp.hstack([Z.multiply(Z), X], format="csr", dtype=dtype)


# -- as a registered event model (``event_model``) ---------------------------------------------
def _log_odds(counts, outside, prior, p) -> Weights:
    eps = epsilon(counts.t, counts.t2, counts.n, p.var_smoothing)
    c = shift(counts.t, counts.t2, counts.n)
    # float64: the estimator scores Gaussian designs in float64 (terms up to 1/(2ε) cancel; see its _linear_scores)
    W, b = log_odds(counts.F, counts.F2, counts.N, counts.t, counts.t2, outside.N_bar, prior, eps, c, dtype=np.float64)
    return Weights(W, b, c, eps)


def _log_likelihood(counts, log_prior, p) -> Weights:
    eps = epsilon(counts.t, counts.t2, counts.n, p.var_smoothing)
    c = shift(counts.t, counts.t2, counts.n)
    W, b = log_likelihood(counts.F, counts.F2, counts.N, log_prior, eps, c, totals=(counts.t, counts.t2, counts.n))
    return Weights(W, b, c, eps)


EVENT_MODEL = EventModel(
    name="gaussian", help="real values", log_odds=_log_odds, log_likelihood=_log_likelihood,
    non_negative=False, squares=True, options=("var_smoothing",),
    design=lambda X, weights, dtype: design(X, weights.shift, dtype=dtype))
