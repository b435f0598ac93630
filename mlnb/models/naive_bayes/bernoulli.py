r"""Bernoulli Naive Bayes: a document is the set of words it contains.

X is read as presence [X > 0], so F and F̄ (= total − F) count documents. With additive
smoothing α:

    p_kw = (F_kw + α) / (N_k + 2α)             p̄_kw likewise from F̄, N̄
    W_kw = log p_kw − log(1 − p_kw) − log p̄_kw + log(1 − p̄_kw)
         = log[(F_kw + α)(N̄_k − F̄_kw + α) / ((N_k − F_kw + α)(F̄_kw + α))]
    b_k  = prior_k + Σ_w [log(1 − p_kw) − log(1 − p̄_kw)]

The absent-word terms of the likelihood are folded into b, so a document scores
by its present words alone: log-odds = [X > 0]·W + b. W is one log of one ratio
per weight, and the sum in b a log of products (``fused``).

Multiclass (one class c per document; F_c, N_c per class, no complements), the
joint log-likelihood of scikit-learn's BernoulliNB:

    J_c(x) = log prior_c + Σ_w [x_w log p_cw + (1 − x_w) log(1 − p_cw)]
    W_cw   = log p_cw − log(1 − p_cw) = log[(F_cw + α) / (N_c − F_cw + α)]
    b_c    = log prior_c + Σ_w log(1 − p_cw)

A class without documents has p_c = ½ from the smoothing alone.

W is returned as (V × K), one row per word, the layout X·W reads.

>>> import numpy as np
>>> W, b = log_odds(np.array([[2.]]), np.array([2.]), np.array([2.]), np.array([1.]), np.array([0.]), 1.0,
...                 dtype=np.float64)
>>> np.round(W, 3), np.round(b, 3)  # F̄ = 0: p = 3/4, p̄ = 1/3
(array([[1.792]]), array([-0.981]))
>>> W, b = log_likelihood(np.array([[2.]]), np.array([2.]), np.log([0.5]), 1.0)
>>> np.round(W, 3), np.round(b, 3)  # p = 3/4: log 3, log ½ + log ¼
(array([[1.099]]), array([-2.079]))
"""

from __future__ import annotations

import numpy as np

from mlnb.models.naive_bayes import fused
from mlnb.models.naive_bayes.event_model import (EventModel, Parameters, SparseDefault, SparseForm, SparseQuantities,
                                                 Weights)


def log_odds(F: np.ndarray, total: np.ndarray, N: np.ndarray, N_bar: np.ndarray, prior: np.ndarray, alpha: float,
             dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(W (V × K) in ``dtype``, b (K,)) from presence counts F (K × V), the totals F̄ is the rest of
    (F̄ = total − F, (V,)), N, N̄ (K,) and the prior log-odds (K,)."""
    W, log_absent = _ratios(F, total, N, N_bar, True, alpha, dtype)
    return W, prior + log_absent


def log_likelihood(F: np.ndarray, N: np.ndarray, log_prior: np.ndarray, alpha: float,
                   dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """Multiclass: (W (V × K), b (K,)) from the presence counts F (K × V), N and log prior_c (K,)."""
    W, log_absent = _ratios(F, np.zeros(0), N, np.zeros(0), False, alpha, dtype)
    return W, log_prior + log_absent


def _ratios(F, total, N, N_bar, complement: bool, alpha: float, dtype) -> tuple[np.ndarray, np.ndarray]:
    """(W, Σ_w of the absent-word terms): W = log r, each factor of r (count + α) in [α, n + α]."""
    most = max(float(N.max(initial=0.0)), float(N_bar.max(initial=0.0))) + alpha
    dtype_r = fused.ratio_dtype((alpha / most) ** 2, (most / alpha) ** 2, dtype)
    r, log_absent = fused.bernoulli_ratios(F, N, total, N_bar, complement, alpha, dtype_r or np.float64)
    if dtype_r is None:  # only for an α near the end of float64's range: the log-difference form
        r = _log_differences(F, total, N, N_bar, complement, alpha)
        return np.ascontiguousarray(r.T, dtype=dtype), log_absent
    return fused.log_in_place(r).astype(dtype, copy=False), log_absent


def _log_differences(F, total, N, N_bar, complement: bool, alpha: float) -> np.ndarray:
    W = np.log(F + alpha) - np.log(N[:, None] - F + alpha)  # (K, V)
    if complement:
        F_bar = total - F
        W += np.log(N_bar[:, None] - F_bar + alpha) - np.log(F_bar + alpha)
    return W


# -- as sparse counters read it (``sparse``: W = D + Δ, Δ only at the pairs that occur) -------------
def sparse_default(q: SparseQuantities, p: Parameters) -> SparseDefault:
    r"""The default and bias of W = log[(F + α)(N̄ − F̄ + α) / ((N − F + α)(F̄ + α))] (τ = total, F̄ = τ − F)
    and b = prior + Σ_w a_kw, a = log(N − F + α) − log(N + 2α) − log(N̄ − F̄ + α) + log(N̄ + 2α):

        D = U·H + G(τ, k),   U = [1, −log(τ + α)],   H = [log α − log(N + α), 1]
        G(τ, k) = log(max(N̄_k − τ, 0) + α)          (``sparse_grouped``: not separable)
        b = prior + V·[log(N + α) − log(N + 2α) + log(N̄ + 2α)] − Σ_w G(τ_w, k) + Σ_{pairs of k} (a − a|F=0)

    Σ_w G(τ_w, k) runs over the words grouped by their total (``SparseQuantities.grouped_sum``): presence
    totals are whole numbers ≤ n, few distinct values, so O(distinct totals × K), never O(V × K).
    (max(·, 0) only keeps G finite where F_kw > 0; Δ then corrects from that same G.)
    """
    alpha, V, N, N_bar = p.alpha, q.V, q.N, q.N_bar
    U, H = [np.ones(V), -q.log_totals], [np.log(alpha) - np.log(N + alpha), np.ones(N.shape[0])]
    absent_default = V * (np.log(N + alpha) - np.log(N + 2 * alpha) + np.log(N_bar + 2 * alpha)) - q.grouped_sum
    bias = q.prior + absent_default + q.pair_sums({})
    return SparseDefault(U=U, H=H, bias=bias, per_category={})


def sparse_grouped(values: np.ndarray, per_category: dict, alpha: float) -> np.ndarray:
    """G(τ, k) = log(max(N̄_k − τ, 0) + α) (len(values) × K) for the distinct totals τ = ``values``."""
    return _absent_default(per_category["N_bar"][None, :], values[:, None], alpha)


def _absent_default(N_bar, tau, alpha: float):
    """G = log(max(N̄ − τ, 0) + α), element by element."""
    return np.log(np.maximum(N_bar - tau, 0.0) + alpha)


def sparse_pair_terms(tau, F, categories, per_category: dict, p: Parameters, what: str) -> np.ndarray:
    r"""At each pair (F̄ = max(τ − F, 0)): Δ = W − D (what="delta"), or a − a|F=0 =
    log(N − F + α) − log(N + α) − log(N̄ − F̄ + α) + G(τ, k), its share of b (what="sum")."""
    alpha = p.alpha
    F_bar = np.maximum(tau - F, 0.0)
    N, N_bar = per_category["N"][categories], per_category["N_bar"][categories]
    absent_default = _absent_default(N_bar, tau, alpha)  # G(τ, k)
    if what == "sum":  # a − a|F=0
        return np.log(N - F + alpha) - np.log(N + alpha) - np.log(N_bar - F_bar + alpha) + absent_default
    weight = np.log(F + alpha) + np.log(N_bar - F_bar + alpha) - np.log(N - F + alpha) - np.log(F_bar + alpha)
    default = np.log(alpha) + absent_default - np.log(N + alpha) - np.log(tau + alpha)
    return weight - default


SPARSE = SparseForm(default=sparse_default, pair_terms=sparse_pair_terms, grouped=sparse_grouped)


# -- as a registered event model (``event_model``) ---------------------------------------------
EVENT_MODEL = EventModel(
    name="bernoulli", help="word presence",
    log_odds=lambda counts, outside, prior, p: Weights(*log_odds(counts.F, outside.total, counts.N, outside.N_bar,
                                                                 prior, p.alpha)),
    log_likelihood=lambda counts, log_prior, p: Weights(*log_likelihood(counts.F, counts.N, log_prior, p.alpha)),
    presence=True, options=("binarize", "mode"), sparse=SPARSE)
