"""Confidence intervals of one category's AUC that keep their level with few positives.

The DeLong (Wald) interval AUC ∓ z √var_DeLong (``uncertainty.auc_confidence_intervals``) estimates
its variance from the spread of the positives' placements: with 2 to 5 positives that spread is
measured on 2 to 5 values, and where they all rank near the top (a good classifier) it is near 0,
so the interval shrinks to a point beside the true AUC. Its 95 % interval covered 48–79 % of the
time at 2–5 positives in simulation (binormal scores, true AUC 0.25–0.99), and 81–95 % at 21–60.

Here the interval is the score (Wilson-type) interval with the Hanley & McNeil (1982) variance,
as Newcombe (2006) proposed: all θ with

    (AUC − θ)² ≤ z²_{(1 + level)/2} · V(θ),
    V(θ) = [θ'(1 − θ') + (m − 1)(Q1 − θ'²) + (n − 1)(Q2 − θ'²)] / (m n),
    Q1 = θ' / (2 − θ'),  Q2 = 2θ'² / (1 + θ'),  θ' = max(θ, 1 − θ),

m positives and n negatives. The variance is that of the AUC at θ itself, not at the estimate, so
an AUC of 1 from two positives still gets a wide interval; it lies in [0, 1] by construction.
θ' = max(θ, 1 − θ) because reversing the scores maps the AUC to 1 − AUC and leaves its variance
unchanged, and Hanley & McNeil's exponential model is for AUC ≥ 0.5 (applied below 0.5 as written
it understates the variance: 88–90 % coverage at AUC 0.25). Measured coverage (95 % nominal, see
``tests/metrics/test_auc_intervals.py``, docs/guide/statistics.md): 96.5–99.7 %, the most
conservative at high AUCs.

- Hanley, J. A. & McNeil, B. J. (1982). The meaning and use of the area under a receiver operating
  characteristic (ROC) curve. *Radiology* 143, 29–36.
- Newcombe, R. G. (2006). Confidence intervals for an effect size measure based on the Mann–Whitney
  statistic. Part 2: asymptotic methods and evaluation. *Statistics in Medicine* 25, 559–573.
"""
from __future__ import annotations

import numpy as np
from scipy.stats import norm

from mlnb.metrics._delong import column_blocks, single_statistics
from mlnb.metrics.uncertainty import _check_level, category_auc_statistics

#: halvings of [0, AUC] and [AUC, 1] in the search for the interval's ends (2^-60: float64 exact)
BISECTION_STEPS = 60
#: fewest positives (and negatives) of a category given an interval, as for DeLong's variance: the
#: coverage of one positive was not measured
MIN_CLASS_COUNT = 2


def hanley_mcneil_variance(theta, positives, negatives) -> np.ndarray:
    """V(θ) of the module docstring: the variance of an AUC θ from m positives and n negatives."""
    theta = np.asarray(theta, np.float64)
    theta = np.maximum(theta, 1.0 - theta)  # θ': the variance of 1 − AUC is that of AUC
    q1 = theta / (2.0 - theta)
    q2 = 2.0 * theta**2 / (1.0 + theta)
    m, n = np.asarray(positives, np.float64), np.asarray(negatives, np.float64)
    return (theta * (1.0 - theta) + (m - 1.0) * (q1 - theta**2) + (n - 1.0) * (q2 - theta**2)) / (m * n)


def score_intervals(auc, positives, negatives, level: float = 0.95) -> np.ndarray:
    """(K, 2): the ends of {θ : (AUC − θ)² ≤ z² V(θ)} for each category, by bisection on each side
    of the AUC (inside at the AUC, outside at 0 and 1 where V = 0); NaN rows where the AUC is NaN
    or a class has fewer than ``MIN_CLASS_COUNT`` documents."""
    _check_level(level)
    auc = np.asarray(auc, np.float64).ravel()
    m = np.broadcast_to(np.asarray(positives, np.float64), auc.shape)
    n = np.broadcast_to(np.asarray(negatives, np.float64), auc.shape)
    z2 = norm.ppf(0.5 + level / 2) ** 2
    defined = np.isfinite(auc) & (m >= MIN_CLASS_COUNT) & (n >= MIN_CLASS_COUNT)
    a, m, n = np.where(defined, auc, 0.5), np.where(defined, m, 2.0), np.where(defined, n, 2.0)

    def inside(theta):
        return (a - theta) ** 2 <= z2 * hanley_mcneil_variance(theta, m, n)

    low_out, low_in = np.zeros_like(a), a.copy()  # [outside, inside] brackets of the lower end
    high_in, high_out = a.copy(), np.ones_like(a)
    for _ in range(BISECTION_STEPS):
        mid = (low_out + low_in) / 2
        keep = inside(mid)
        low_in, low_out = np.where(keep, mid, low_in), np.where(keep, low_out, mid)
        mid = (high_in + high_out) / 2
        keep = inside(mid)
        high_in, high_out = np.where(keep, mid, high_in), np.where(keep, high_out, mid)
    intervals = np.column_stack([low_in, high_in])
    intervals[~defined] = np.nan
    return intervals


def category_auc_intervals(Y_true, scores, level: float = 0.95, n_threads: int | None = None) -> np.ndarray:
    """(K, 2) score intervals (module docstring) of each category's AUC; NaN rows for categories
    with fewer than two positives or two negatives. The AUCs come from the DeLong kernel, all
    categories at once on ``n_threads`` numba threads (default: numba's)."""
    _check_level(level)
    statistics, positives, n = category_auc_statistics(Y_true, scores, n_threads)
    return score_intervals(statistics[:, 0], positives, n - positives, level)


def category_auc_intervals_by_column(column, K: int, level: float = 0.95, work=None) -> np.ndarray:
    """``category_auc_intervals`` from ``column(k) -> (y, scores)`` of one category at a time (a
    streaming study reads them from disk), in blocks of categories tested in parallel (``_delong.column_blocks``;
    ``work``: each category's ``ranking.column_work`` where known beforehand, for blocks of even work)."""
    _check_level(level)
    auc, positives, negatives = np.full(K, np.nan), np.zeros(K), np.zeros(K)
    for categories, indptr, indices, (scores,) in column_blocks(column, K, work=work):
        auc[categories] = single_statistics(scores, indptr, indices, category_major=True)[:, 0]
        positives[categories] = np.diff(indptr)
        negatives[categories] = scores.shape[1] - np.diff(indptr)
    return score_intervals(auc, positives, negatives, level)
