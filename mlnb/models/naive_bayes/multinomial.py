r"""Multinomial Naive Bayes: a document is a bag of word tokens.

With additive smoothing α, per category k and its complement (F̄, N̄ from the base):

    θ_kw = (F_kw + α) / (Σ_w F_kw + αV)        θ̄_kw likewise from F̄
    W_kw = log θ_kw − log θ̄_kw
    b_k  = prior_k  (= log N_k − log N̄_k)

X may hold counts, presence (``binarize``) or TF-IDF weights: any non-negative values.

Multiclass (one class c per document; F_c, N_c per class, no complements), the
joint log-likelihood of scikit-learn's MultinomialNB:

    J_c(x) = log prior_c + Σ_w x_w log θ_cw
    W_cw   = log θ_cw,     b_c = log prior_c

A class without documents has θ_c = 1/V from the smoothing alone.

>>> import numpy as np
>>> W, b = log_odds(np.array([[3., 1.]]), np.array([[0., 3.]]), np.array([0.]), alpha=1.0)
>>> np.round(np.exp(W), 3)  # θ / θ̄ = (4/6) / (1/5), (2/6) / (4/5)
array([[3.333, 0.417]])
>>> W, b = log_likelihood(np.array([[3., 1.]]), np.log([0.5]), alpha=1.0)
>>> np.round(np.exp(W), 3)  # θ = (4/6, 2/6)
array([[0.667, 0.333]])
"""

from __future__ import annotations

import numpy as np


def log_odds(F: np.ndarray, F_bar: np.ndarray, prior: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(W (K × V), b (K,)) from F, F̄ (K × V) and the prior log-odds (K,). F̄ is overwritten."""
    V = F.shape[1]
    # W = log θ − log θ̄, written in place: two (K, V) arrays instead of five
    W = np.log(F + alpha)
    W -= np.log(F.sum(axis=1, keepdims=True) + alpha * V)  # log θ
    F_bar_total = F_bar.sum(axis=1, keepdims=True) + alpha * V
    F_bar += alpha
    W -= np.log(F_bar, out=F_bar)
    W += np.log(F_bar_total)  # − log θ̄
    return W, prior.copy()


def log_likelihood(F: np.ndarray, log_prior: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Multiclass: (W (K × V), b (K,)) from the per-class sums F (K × V) and log prior_c (K,)."""
    V = F.shape[1]
    W = np.log(F + alpha)
    W -= np.log(F.sum(axis=1, keepdims=True) + alpha * V)  # log θ
    return W, log_prior.copy()
