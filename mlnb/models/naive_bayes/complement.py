r"""Complement Naive Bayes (Rennie, Shih, Teevan & Karger, ICML 2003).

Each category is scored from the counts of its complement alone, which are
larger and less skewed than its own when categories are small:

    θ̄_kw = (F̄_kw + α) / (Σ_w F̄_kw + αV)
    W_kw = −log θ̄_kw                                   (norm=False)
    W_kw = log θ̄_kw / Σ_w log θ̄_kw                     (norm=True: the paper's
                                                        weight normalisation)
    b_k  = 0

as scikit-learn's ComplementNB computes ``feature_log_prob_`` and its joint
log-likelihood for more than one class (``reference="none"``).

Across documents those scores mostly measure length: every word adds −log θ̄ > 0,
so a long document outscores a short one in every category, and one-vs-rest
ranking of documents within a category (its AUC, ROC, lift) is near chance. The
default ``reference="corpus"`` subtracts the same formula applied to all
training documents, θ_w = (t_w + α) / (Σ_w t_w + αV):

    W_kw ← W_kw − W_ref,w,     W_ref,w = −log θ_w     (norm: log θ_w / Σ_w log θ_w)

i.e. W_kw = log θ_w − log θ̄_kw: how much less likely the document is without
category k than in the corpus as a whole. The shift x·W_ref is the same for
every category of a document, so multiclass decisions (argmax over categories)
and the differences between categories' scores are exactly scikit-learn's.

Either way X·W + b is a ranking score, not a log-odds: σ(X·W + b) is not a
probability. Probabilities must come from calibrating the scores on held-out data.

Multiclass (one class c per document). scikit-learn's ComplementNB computes its
complement counts as Σ_j F_j − F_c; with one class per document Σ_j F_j = t, so
they are the F̄_c above and its weights are these W. Its joint log-likelihood
for more than one class has no prior (b_c = 0); for a single class it is the
log prior. So:

    J_c(x) = x·W_c + b_c,    b_c = 0 (K > 1),  log prior_c (K = 1)

With ``reference="none"`` J is exactly scikit-learn's ``predict_joint_log_proba``.
With ``reference="corpus"`` every class's J of a document moves by the same
−x·W_ref, which cancels in J_c − logsumexp_j J_j: posteriors, argmax and every
difference J_c − J_j are scikit-learn's either way; only the level of J moves,
and with it J becomes comparable across documents. Nor is softmax(J) a model's
probability, though it is the ``predict_proba`` of scikit-learn's ComplementNB.

>>> import numpy as np
>>> W, b = log_odds(np.array([[0., 3.]]), alpha=1.0, norm=False)
>>> np.round(W, 3), b  # θ̄ = (1/5, 4/5)
(array([[1.609, 0.223]]), array([0.]))
"""

from __future__ import annotations

import numpy as np


def log_odds(F_bar: np.ndarray, alpha: float, norm: bool, t: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(W (K × V), b (K,)) from the complement counts F̄ (K × V); with the corpus totals t (V,),
    centred on the corpus reference W_ref. F̄ is overwritten."""
    W = _weights(F_bar, alpha, norm)
    if t is not None:
        W -= _weights(t[None, :].copy(), alpha, norm)  # (K, V) − (1, V)
    return W, np.zeros(F_bar.shape[0])


def _weights(F_bar: np.ndarray, alpha: float, norm: bool) -> np.ndarray:
    """−log θ̄ (or its normalised form) per row of counts; F̄ is overwritten."""
    V = F_bar.shape[1]
    F_bar_total = F_bar.sum(axis=1, keepdims=True) + alpha * V  # (K, 1)
    F_bar += alpha
    log_theta_bar = np.log(F_bar, out=F_bar)
    log_theta_bar -= np.log(F_bar_total)  # (K, V)
    if norm:
        return log_theta_bar / log_theta_bar.sum(axis=1, keepdims=True)
    return np.negative(log_theta_bar, out=log_theta_bar)


def log_likelihood(F_bar: np.ndarray, log_prior: np.ndarray, alpha: float, norm: bool,
                   t: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Multiclass: (W (K × V), b (K,)) from the complement counts F̄ = t − F (K × V) and log prior_c
    (K,), used only when K = 1, as scikit-learn has it; with t, centred as ``log_odds``. F̄ is overwritten."""
    W, b = log_odds(F_bar, alpha, norm, t)
    if F_bar.shape[0] == 1:
        b = log_prior.copy()
    return W, b
