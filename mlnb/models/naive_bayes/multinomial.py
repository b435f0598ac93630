r"""Multinomial Naive Bayes: a document is a bag of word tokens.

With additive smoothing α, per category k and its complement (F̄ = total − F, F̄'s
totals S̄ = Σ_w total − S, N̄ from the base; S = F·1):

    θ_kw = (F_kw + α) / (S_k + αV)             θ̄_kw likewise from F̄, S̄
    W_kw = log θ_kw − log θ̄_kw = log[(F_kw + α)/(F̄_kw + α) · (S̄_k + αV)/(S_k + αV)]
    b_k  = prior_k  (= log N_k − log N̄_k)

one log of one ratio per weight, formed in a single sweep (``fused``).
X may hold counts, presence (``binarize``) or TF-IDF weights: any non-negative values.

Multiclass (one class c per document; F_c, S_c, N_c per class, no complements), the
joint log-likelihood of scikit-learn's MultinomialNB:

    J_c(x) = log prior_c + Σ_w x_w log θ_cw
    W_cw   = log θ_cw = log[(F_cw + α) / (S_c + αV)],     b_c = log prior_c

A class without documents has θ_c = 1/V from the smoothing alone.

W is returned as (V × K), one row per word, the layout X·W reads.

>>> import numpy as np
>>> W, b = log_odds(np.array([[3., 1.]]), np.array([3., 4.]), np.array([0.]), alpha=1.0, dtype=np.float64)
>>> np.round(np.exp(W.T), 3)  # F̄ = (0, 3): θ / θ̄ = (4/6) / (1/5), (2/6) / (4/5)
array([[3.333, 0.417]])
>>> W, b = log_likelihood(np.array([[3., 1.]]), np.log([0.5]), alpha=1.0)
>>> np.round(np.exp(W.T), 3)  # θ = (4/6, 2/6)
array([[0.667, 0.333]])
"""

from __future__ import annotations

import numpy as np

from mlnb.models.naive_bayes import fused
from mlnb.models.naive_bayes.event_model import (EventModel, Parameters, SparseDefault, SparseForm, SparseQuantities,
                                                 Weights)


def log_odds(F: np.ndarray, total: np.ndarray, prior: np.ndarray, alpha: float, S: np.ndarray | None = None,
             clip: bool = True, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(W (V × K) in ``dtype``, b (K,)) from F (K × V), the totals F̄ is the rest of (F̄ = total − F, (V,),
    floored at 0 with ``clip``: float round-off of non-integer X), the prior log-odds (K,) and S = F·1."""
    V = F.shape[1]
    S = F.sum(axis=1) if S is None else S
    S_bar = total.sum() - S  # Σ_w F̄_kw
    factor = (S_bar + alpha * V) / (S + alpha * V)  # (K,): θ's and θ̄'s normalisers
    return fused.count_log_odds(F, total, clip, factor, alpha, dtype), prior.copy()


def log_likelihood(F: np.ndarray, log_prior: np.ndarray, alpha: float, S: np.ndarray | None = None,
                   dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """Multiclass: (W (V × K), b (K,)) from the per-class sums F (K × V), log prior_c (K,) and S = F·1."""
    V = F.shape[1]
    S = F.sum(axis=1) if S is None else S
    factor = 1 / (S + alpha * V)  # (K,)
    largest = float(S.max(initial=0.0))  # F_cw ≤ S_c
    dtype_r = fused.ratio_dtype(alpha * float(factor.min()), (largest + alpha) * float(factor.max()), dtype)
    if dtype_r is None:
        W = np.log(F + alpha) - np.log(S + alpha * V)[:, None]  # (K, V)
        return np.ascontiguousarray(W.T, dtype=dtype), log_prior.copy()
    W = fused.log_in_place(fused.multinomial_ratios(F, None, False, False, factor, alpha, dtype_r))
    return W.astype(dtype, copy=False), log_prior.copy()


# -- as sparse counters read it (``sparse``: W = D + Δ, Δ only at the pairs that occur) -------------
def sparse_default(q: SparseQuantities, p: Parameters) -> SparseDefault:
    r"""The default and bias of W = log[(F + α)/(F̄ + α) · (S̄ + αV)/(S + αV)] (τ = total, F̄ = τ − F):

        D = U·H,   U = [1, log α − log(τ + α)],   H = [log((S̄ + αV)/(S + αV)), 1],   b = prior
    """
    V = q.V
    factor = (q.S_bar + p.alpha * V) / (q.S + p.alpha * V)
    return sparse_rate_default(q, p, factor, q.prior.copy())


def sparse_rate_default(q: SparseQuantities, p: Parameters, factor: np.ndarray,
                        bias: np.ndarray) -> SparseDefault:
    """U = [1, log α − log(τ + α)], H = [log factor, 1]: W's default with a per-category factor (poisson's too)."""
    K = q.N.shape[0]
    return SparseDefault(U=[np.ones(q.V), np.log(p.alpha) - q.log_totals], H=[np.log(factor), np.ones(K)],
                         bias=bias, per_category={})


def sparse_pair_terms(tau, F, categories, per_category: dict, p: Parameters, what: str) -> np.ndarray:
    r"""Δ = log(F + α) − log α + log(τ + α) − log(F̄ + α), F̄ = max(τ − F, 0), at each pair (W − D: every
    factor but the category's cancels). No per-category sum reads the pairs."""
    alpha = p.alpha
    F_bar = np.maximum(tau - F, 0.0)
    return np.log(F + alpha) - np.log(alpha) + np.log(tau + alpha) - np.log(F_bar + alpha)


SPARSE = SparseForm(default=sparse_default, pair_terms=sparse_pair_terms)


# -- as a registered event model (``event_model``) ---------------------------------------------
EVENT_MODEL = EventModel(
    name="multinomial", help="word counts",
    log_odds=lambda counts, outside, prior, p: Weights(*log_odds(counts.F, outside.total, prior, p.alpha, counts.S,
                                                                 outside.clip)),
    log_likelihood=lambda counts, log_prior, p: Weights(*log_likelihood(counts.F, log_prior, p.alpha, counts.S)),
    options=("binarize", "mode"), sparse=SPARSE)
