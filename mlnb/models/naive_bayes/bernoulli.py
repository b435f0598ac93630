r"""Bernoulli Naive Bayes: a document is the set of words it contains.

X is read as presence [X > 0], so F and F̄ count documents. With additive smoothing α:

    p_kw = (F_kw + α) / (N_k + 2α)             p̄_kw likewise from F̄, N̄
    W_kw = log p_kw − log(1 − p_kw) − log p̄_kw + log(1 − p̄_kw)
    b_k  = prior_k + Σ_w [log(1 − p_kw) − log(1 − p̄_kw)]

The absent-word terms of the likelihood are folded into b, so a document scores
by its present words alone: log-odds = [X > 0]·W + b.

>>> import numpy as np
>>> W, b = log_odds(np.array([[2.]]), np.array([[0.]]), np.array([2.]), np.array([1.]), np.array([0.]), 1.0)
>>> np.round(W, 3), np.round(b, 3)  # p = 3/4, p̄ = 1/3
(array([[1.792]]), array([-0.981]))
"""

from __future__ import annotations

import numpy as np


def log_odds(F: np.ndarray, F_bar: np.ndarray, N: np.ndarray, N_bar: np.ndarray, prior: np.ndarray,
             alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(W (K × V), b (K,)) from presence counts F, F̄ (K × V), N, N̄ and the prior log-odds (K,)."""
    p = (F + alpha) / (N[:, None] + 2 * alpha)  # (K, V)
    p_bar = (F_bar + alpha) / (N_bar[:, None] + 2 * alpha)  # (K, V)
    W = np.log(p) - np.log1p(-p) - np.log(p_bar) + np.log1p(-p_bar)
    b = prior + (np.log1p(-p) - np.log1p(-p_bar)).sum(axis=1)
    return W, b
