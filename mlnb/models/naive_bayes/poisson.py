r"""Poisson Naive Bayes: each word's count is Poisson within a category (fastNaiveBayes's ``fnb.poisson``).

A document's count of word w in category c is Poisson with rate λ_cw, the mean count of w over
the category's training documents:

    log P(x | c) = Σ_w [x_w log λ_cw − λ_cw − log x_w!]

R's fastNaiveBayes (``fnb.poisson``) takes λ_cw = F_cw / N_c unsmoothed and, where λ_cw = 0 meets
x_w > 0, replaces the −∞ term by log(threshold) (threshold = machine ε): a floor that is not
linear in x, so it cannot be one product X·W + b. Here λ is smoothed instead, with the additive
pseudo-count α of the other count models:

    λ_cw = (F_cw + α) / (N_c + α)

the posterior mean of λ under a Gamma(α, α) prior (α pseudo-documents holding α occurrences:
a prior rate of 1). It is finite and positive for every count, also for N_c = 0, and is
fastNaiveBayes's F_cw / N_c as α → 0 (the tests check its own expected posteriors so). X may hold
counts, presence (``binarize``) or any non-negative values (x! is then Γ(x + 1), and cancels).

Multilabel, per category k against the documents outside it (F̄ = total − F, N̄, as the other
modules have them), the log x_w! cancel:

    λ_kw = (F_kw + α)/(N_k + α)            λ̄_kw = (F̄_kw + α)/(N̄_k + α)
    W_kw = log λ_kw − log λ̄_kw = log[(F_kw + α)/(F̄_kw + α) · (N̄_k + α)/(N_k + α)]
    b_k  = prior_k − Σ_w (λ_kw − λ̄_kw),    Σ_w λ_kw = (S_k + αV)/(N_k + α),  Σ_w λ̄_kw = (S̄_k + αV)/(N̄_k + α)

(S = F·1, S̄ = Σ_w total − S): W is one log of one ratio per weight, formed in a single sweep
(``fused``, the multinomial's with the factor (N̄ + α)/(N + α)).

Multiclass (one class c per document; F_c, N_c per class), the joint log-likelihood

    J_c(x) = log prior_c + Σ_w x_w log λ_cw − Σ_w λ_cw
    W_cw   = log λ_cw = log[(F_cw + α) / (N_c + α)],     b_c = log prior_c − (S_c + αV)/(N_c + α)

drops the per-document constant −Σ_w log x_w!: it is the same for every class of a document, so
it cancels in softmax(J) and in every J_c − J_j (J is log P(x, c) + Σ_w log x_w!). A class without
documents has λ_c = 1 from the smoothing alone.

W is returned as (V × K), one row per word, the layout X·W reads.

>>> import numpy as np
>>> W, b = log_odds(np.array([[3., 1.]]), np.array([3., 4.]), np.array([2.]), np.array([1.]), np.array([0.]),
...                 alpha=1.0, dtype=np.float64)
>>> np.round(W.T, 3), np.round(b, 3)  # λ = (4/3, 2/3), λ̄ = (1/2, 2): log 8/3, log 1/3; 0 − (2 − 5/2)
(array([[ 0.981, -1.099]]), array([0.5]))
>>> W, b = log_likelihood(np.array([[3., 1.]]), np.array([2.]), np.log([0.5]), alpha=1.0)
>>> np.round(W.T, 3), np.round(b, 3)  # λ = (4/3, 2/3): log λ; log ½ − 2
(array([[ 0.288, -0.405]]), array([-2.693]))
"""

from __future__ import annotations

import numpy as np

from mlnb.models.naive_bayes import fused
from mlnb.models.naive_bayes.event_model import (EventModel, Parameters, SparseDefault, SparseForm, SparseQuantities,
                                                 Weights)
from mlnb.models.naive_bayes.multinomial import sparse_pair_terms, sparse_rate_default


def log_odds(F: np.ndarray, total: np.ndarray, N: np.ndarray, N_bar: np.ndarray, prior: np.ndarray, alpha: float,
             S: np.ndarray | None = None, clip: bool = True, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(W (V × K) in ``dtype``, b (K,)) from F (K × V), the totals F̄ is the rest of (F̄ = total − F, (V,),
    floored at 0 with ``clip``), N, N̄ (K,), the prior log-odds (K,) and S = F·1."""
    V = F.shape[1]
    S = F.sum(axis=1) if S is None else S
    S_bar = total.sum() - S  # Σ_w F̄_kw
    rate_sum = (S + alpha * V) / (N + alpha)  # (K,) Σ_w λ_kw
    rate_sum_bar = (S_bar + alpha * V) / (N_bar + alpha)  # (K,) Σ_w λ̄_kw
    b = prior - (rate_sum - rate_sum_bar)  # (K,)
    factor = (N_bar + alpha) / (N + alpha)  # (K,): λ's and λ̄'s denominators
    return fused.count_log_odds(F, total, clip, factor, alpha, dtype), b


def log_likelihood(F: np.ndarray, N: np.ndarray, log_prior: np.ndarray, alpha: float, S: np.ndarray | None = None,
                   dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """Multiclass: (W (V × K), b (K,)) from the per-class sums F (K × V), N (K,), log prior_c (K,) and S = F·1."""
    V = F.shape[1]
    S = F.sum(axis=1) if S is None else S
    b = log_prior - (S + alpha * V) / (N + alpha)  # (K,) log prior_c − Σ_w λ_cw
    factor = 1 / (N + alpha)  # (K,)
    largest = float(F.max(initial=0.0))
    dtype_r = fused.ratio_dtype(alpha * float(factor.min()), (largest + alpha) * float(factor.max()), dtype)
    if dtype_r is None:
        W = np.log(F + alpha) - np.log(N + alpha)[:, None]  # (K, V)
        return np.ascontiguousarray(W.T, dtype=dtype), b
    W = fused.log_in_place(fused.multinomial_ratios(F, None, False, False, factor, alpha, dtype_r))
    return W.astype(dtype, copy=False), b


# -- as sparse counters read it (``sparse``: W = D + Δ, Δ only at the pairs that occur) -------------
def sparse_default(q: SparseQuantities, p: Parameters) -> SparseDefault:
    r"""The default and bias of W = log[(F + α)/(F̄ + α) · (N̄ + α)/(N + α)] (τ = total, F̄ = τ − F): the
    multinomial's with the factor (N̄ + α)/(N + α), and its Δ (``multinomial.sparse_pair_terms``):

        D = U·H,   U = [1, log α − log(τ + α)],   H = [log((N̄ + α)/(N + α)), 1]
        b = prior − (S + αV)/(N + α) + (S̄ + αV)/(N̄ + α)
    """
    alpha, V = p.alpha, q.V
    factor = (q.N_bar + alpha) / (q.N + alpha)
    bias = q.prior - ((q.S + alpha * V) / (q.N + alpha) - (q.S_bar + alpha * V) / (q.N_bar + alpha))
    return sparse_rate_default(q, p, factor, bias)


SPARSE = SparseForm(default=sparse_default, pair_terms=sparse_pair_terms)


# -- as a registered event model (``event_model``) ---------------------------------------------
EVENT_MODEL = EventModel(
    name="poisson", help="counts as Poisson rates per category, fastNaiveBayes's fnb.poisson",
    log_odds=lambda counts, outside, prior, p: Weights(*log_odds(counts.F, outside.total, counts.N, outside.N_bar,
                                                                 prior, p.alpha, counts.S, outside.clip)),
    log_likelihood=lambda counts, log_prior, p: Weights(*log_likelihood(counts.F, counts.N, log_prior, p.alpha,
                                                                        counts.S)),
    options=("binarize",), sparse=SPARSE)
