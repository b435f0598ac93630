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
category k than in the corpus as a whole. Without norm W is one log of one
ratio per weight, formed in a single sweep (``fused``):

    W_kw = log[(S̄_k + αV)/(F̄_kw + α) · (t_w + α)/(Σ_w t_w + αV)]    (the last factor: corpus only)

with F̄ = total − F (total = t, or the tutorial's Σ_j F_j) and S̄_k = Σ_w total_w − S_k.
The shift x·W_ref is the same for every category of a document, so multiclass
decisions (argmax over categories) and the differences between categories'
scores are exactly scikit-learn's.

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

W is returned as (V × K), one row per word, the layout X·W reads.

>>> import numpy as np
>>> W, b = log_odds(np.array([[3., 1.]]), np.array([3., 4.]), alpha=1.0, norm=False, dtype=np.float64)
>>> np.round(W.T, 3), b  # F̄ = (0, 3): θ̄ = (1/5, 4/5)
(array([[1.609, 0.223]]), array([0.]))
"""

from __future__ import annotations

import numpy as np

from mlnb.models.naive_bayes import fused
from mlnb.models.naive_bayes.event_model import (EventModel, Parameters, SparseDefault, SparseForm, SparseQuantities,
                                                 Weights)


def log_odds(F: np.ndarray, total: np.ndarray, alpha: float, norm: bool, t: np.ndarray | None = None,
             S: np.ndarray | None = None, clip: bool = True, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(W (V × K) in ``dtype``, b (K,)) from F (K × V), the totals its complement is the rest of
    (F̄ = total − F, (V,), floored at 0 with ``clip``) and S = F·1; with the corpus totals t (V,), centred
    on the corpus reference W_ref."""
    K, V = F.shape
    S = F.sum(axis=1) if S is None else S
    factor = total.sum() - S + alpha * V  # (K,): S̄ + αV
    reference = np.ones(V) if t is None else (t + alpha) / (t.sum() + alpha * V)  # (V,): θ_w, or 1
    largest = max(float(total.max(initial=0.0)), 0.0)
    dtype_r = fused.ratio_dtype(float(factor.min()) * float(reference.min()) / (largest + alpha),
                                float(factor.max()) * float(reference.max()) / alpha, dtype)
    if norm or dtype_r is None:  # the normalised weights need log θ̄ itself
        F_bar = total - F
        W = _weights(np.maximum(F_bar, 0.0) if clip else F_bar, alpha, norm)  # (K, V)
        if t is not None:
            W -= _weights(t[None, :].copy(), alpha, norm)  # (K, V) − (1, V)
        return np.ascontiguousarray(W.T, dtype=dtype), np.zeros(K)
    W = fused.log_in_place(fused.complement_ratios(F, total, clip, factor, reference, alpha, dtype_r))
    return W.astype(dtype, copy=False), np.zeros(K)


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


def log_likelihood(F: np.ndarray, total: np.ndarray, log_prior: np.ndarray, alpha: float, norm: bool,
                   t: np.ndarray | None = None, S: np.ndarray | None = None,
                   dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """Multiclass: (W (V × K), b (K,)) from the per-class sums F (K × V), their totals (F̄ = total − F, the
    scikit-learn's Σ_j F_j − F_c) and log prior_c (K,), used only when K = 1, as scikit-learn has it; with
    t, centred as ``log_odds``."""
    W, b = log_odds(F, total, alpha, norm, t, S, True, dtype)
    if F.shape[0] == 1:
        b = log_prior.copy()
    return W, b


# -- as sparse counters read it (``sparse``: W = D + Δ, Δ only at the pairs that occur) -------------
def sparse_default(q: SparseQuantities, p: Parameters) -> SparseDefault:
    r"""The default and bias of the weights above, from R = S̄ + αV (K,), τ = total (F̄ = τ − F) and
    ρ_w = (t_w + α)/(Σ_w t_w + αV) (reference="corpus"; ρ = 1 with "none"). b = 0.

    norm=False:  W = log R − log(F̄ + α) + log ρ
                 U = [1, log ρ − log(τ + α)],   H = [log R, 1]
    norm=True:   W = (log(F̄ + α) − log R_k)/Z_k − r_w,   Z_k = Σ_w log θ̄_kw
                   = Σ_w log(τ_w + α) − V·log R_k + Σ_{pairs of k} δ_wk   (δ: ``sparse_pair_terms``)
                 r = log ρ / Σ_w log ρ ("corpus"), 0 ("none")
                 U = [1, log(τ + α), r],   H = [−log R / Z, 1/Z, −1]   (without r's term for "none")
    """
    alpha, V, K = p.alpha, q.V, q.N.shape[0]
    ones = np.ones(V)
    log_R = np.log(q.S_bar + alpha * V)  # (K,)
    t = q.t
    log_rho = np.log(t + alpha) - np.log(t.sum() + alpha * V) if p.reference == "corpus" else None
    bias = np.zeros(K)
    if not p.norm:
        return SparseDefault(U=[ones, (log_rho if log_rho is not None else 0.0) - q.log_totals],
                             H=[log_R, np.ones(K)], bias=bias, per_category={})
    Z = q.log_totals.sum() - V * log_R + q.pair_sums({})
    U, H = [ones, q.log_totals], [-log_R / Z, 1.0 / Z]
    if log_rho is not None:
        U.append(log_rho / log_rho.sum())
        H.append(-np.ones(K))
    return SparseDefault(U=U, H=H, bias=bias, per_category={"Z": Z})


def sparse_pair_terms(tau, F, categories, per_category: dict, p: Parameters, what: str) -> np.ndarray:
    r"""At each pair, δ = log(F̄ + α) − log(τ + α) (log θ̄ less its default, F̄ = max(τ − F, 0)):
    Δ = −δ (norm=False), Δ = δ / Z_k (norm=True); norm's Z sums δ over each category's pairs
    (what="sum")."""
    alpha = p.alpha
    F_bar = np.maximum(tau - F, 0.0)
    delta = np.log(F_bar + alpha) - np.log(tau + alpha)  # log θ̄ − its default
    if not p.norm:
        return -delta
    return delta if what == "sum" else delta / per_category["Z"][categories]


SPARSE = SparseForm(default=sparse_default, pair_terms=sparse_pair_terms)


# -- as a registered event model (``event_model``) ---------------------------------------------
def _corpus(counts, p):
    """t (V,) to centre on (reference="corpus"), or None."""
    return counts.t if p.reference == "corpus" else None


EVENT_MODEL = EventModel(
    name="complement", help="Rennie et al. 2003; a ranking score, not a log-odds",
    log_odds=lambda counts, outside, prior, p: Weights(*log_odds(counts.F, outside.total, p.alpha, p.norm,
                                                                 _corpus(counts, p), counts.S, outside.clip)),
    log_likelihood=lambda counts, log_prior, p: Weights(*log_likelihood(counts.F, counts.t, log_prior, p.alpha,
                                                                        p.norm, _corpus(counts, p), counts.S)),
    ranking=True, options=("binarize", "mode", "norm", "reference"), sparse=SPARSE)
