r"""Per-category threshold and probability metrics, vectorised over categories.

With y ∈ {0, 1}, decision score z (log-odds) and p = σ(z), for each category
(columns) over the n documents (rows):

    expected accuracy  = (1/n) Σ_i [p_i y_i + (1 − p_i)(1 − y_i)]   (RCV1 tutorial)
    accuracy           = (1/n) Σ_i [ŷ_i = y_i],   ŷ_i = [p_i ≥ τ] = [z_i ≥ logit τ]
    precision          = TP / (TP + FP),   recall = TP / (TP + FN)
    F1                 = 2·TP / (2·TP + FP + FN)      (0 when the denominator is 0)
    log loss           = (1/n) Σ_i [y_i·softplus(−z_i) + (1 − y_i)·softplus(z_i)]
    Brier              = (1/n) Σ_i (p_i − y_i)²

Log loss uses softplus(±z) = −log σ(∓z), so it is finite however far the
scores are from 0 (log(p) of a saturated p would be −inf).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den with 0 where den is 0 (scikit-learn's zero_division=0)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), 0.0)


@dataclass(frozen=True)
class ConfusionCounts:
    """TP, FP, FN, TN per category, shape (K,) each."""

    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    tn: np.ndarray

    @property
    def precision(self) -> np.ndarray:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> np.ndarray:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> np.ndarray:
        return _ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn)

    @property
    def accuracy(self) -> np.ndarray:
        return (self.tp + self.tn) / (self.tp + self.fp + self.fn + self.tn)


def logit(p: float) -> float:
    return float(np.log(p) - np.log1p(-p))


def confusion_counts(Y: np.ndarray, scores: np.ndarray, threshold: float = 0.5) -> ConfusionCounts:
    """Counts of ŷ = [σ(z) ≥ threshold] against Y, both (n, K)."""
    Y = np.asarray(Y, dtype=bool)
    predicted = np.asarray(scores) >= logit(threshold)
    tp = np.count_nonzero(predicted & Y, axis=0)
    fp = np.count_nonzero(predicted, axis=0) - tp
    fn = np.count_nonzero(Y, axis=0) - tp
    tn = Y.shape[0] - tp - fp - fn
    return ConfusionCounts(tp=tp, fp=fp, fn=fn, tn=tn)


def expected_accuracy(Y: np.ndarray, proba: np.ndarray) -> np.ndarray:
    """(1/n) Σ_i p_i y_i + (1 − p_i)(1 − y_i), per category."""
    Y = np.asarray(Y, dtype=bool)
    proba = np.asarray(proba, dtype=np.float64)
    return np.where(Y, proba, 1.0 - proba).mean(axis=0)


def log_loss_from_scores(Y: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Mean binary cross-entropy per category, computed from log-odds."""
    Y = np.asarray(Y, dtype=bool)
    z = np.asarray(scores, dtype=np.float64)
    # −log σ(z) = softplus(−z) = logaddexp(0, −z)
    return np.where(Y, np.logaddexp(0.0, -z), np.logaddexp(0.0, z)).mean(axis=0)


def brier_score(Y: np.ndarray, proba: np.ndarray) -> np.ndarray:
    """Mean squared error of the probabilities, per category."""
    Y = np.asarray(Y, dtype=np.float64)
    return ((np.asarray(proba, dtype=np.float64) - Y) ** 2).mean(axis=0)


def sigmoid(scores: np.ndarray) -> np.ndarray:
    return expit(np.asarray(scores, dtype=np.float64))
