r"""Comparing k models over N corpora (Demšar 2006, JMLR 7:1–30): ranks, Friedman, Nemenyi, Wilcoxon, Holm.

The input is an N × k table: one metric of each model (column) on each corpus (row). A metric's
scale differs from corpus to corpus (a macro AUC of 0.97 on one is poor, of 0.80 on another
good), so the models are compared by their *ranks* within each corpus.

**Ranks.** r_ij = the rank of model j on corpus i, 1 = best (highest, or lowest for a loss);
tied models share the mean of their ranks. Average rank R_j = (1/N) Σ_i r_ij.

**Friedman (1937, 1940)**, H0: every model has the same expected rank:

    χ²_F = 12N / (k(k+1)) · [Σ_j R_j² − k(k+1)²/4]              (k − 1 degrees of freedom)

With ties the statistic is divided by C = 1 − Σ_i Σ_t (t³ − t) / (N k (k² − 1)) (t: the size of each
group of tied models within a corpus), as ``scipy.stats.friedmanchisquare`` does; without ties
C = 1 and it is Demšar's formula. Iman & Davenport (1980): χ²_F is undesirably conservative, and

    F_F = (N − 1) χ²_F / (N(k − 1) − χ²_F)       ~ F(k − 1, (k − 1)(N − 1))

is the p-value reported first. F_F is undefined (``FriedmanResult.undefined`` says why; NaN, no
verdict) with fewer than ``MIN_CORPORA`` = 3 corpora, and when every corpus ranks the models alike:
then χ²_F = N(k − 1) and its denominator is 0.

**Nemenyi (1963)** post-hoc test: two models differ when their average ranks differ by at least
the critical difference

    CD = q_α · sqrt(k(k+1) / (6N)),     q_α = (studentized range quantile, k groups, df = ∞) / √2

(q_0.05 = 1.960, 2.343, 2.569, 2.728, 2.850, … for k = 2, 3, 4, 5, 6: Demšar's Table 5).

**Wilcoxon (1945) signed-ranks test** for a pair over the N corpora, as Demšar describes it: the
differences d_i = a_i − b_i are ranked by |d_i| (ties share the mean rank); zero differences are
ranked too and their ranks split evenly between the two sums:

    R+ = Σ_{d_i > 0} rank(d_i) + ½ Σ_{d_i = 0} rank(d_i),   R− likewise,   T = min(R+, R−)

Without ties and zeros (and N ≤ 50) p is exact: twice the share of the 2^N sign patterns whose
sum is ≤ T (capped at 1). Otherwise the normal approximation, tie-corrected, without continuity
correction (``scipy.stats.wilcoxon(zero_method="zsplit", method="approx")``):

    z = (T − N(N+1)/4) / sqrt(N(N+1)(2N+1)/24 − Σ (t³ − t)/48)

The pairs' p-values are then adjusted by Holm's step-down method (``significance.holm``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from mlnb.metrics.significance import holm

__all__ = ["MIN_CORPORA", "FriedmanResult", "SignedRankResult", "average_ranks", "critical_difference",
           "friedman_from_ranks", "friedman_test", "nemenyi_q", "pairwise_tests", "rank_table", "signed_rank_test"]

#: the fewest corpora for Iman-Davenport's F_F and Nemenyi's CD: with 2, two corpora that rank the models alike
#: make F_F infinite, and at α = 0.05 Nemenyi's CD exceeds the largest possible rank difference k − 1
MIN_CORPORA = 3

#: the largest N whose signed-rank distribution is enumerated exactly (as scipy's "auto" method)
EXACT_SIGNED_RANK_MAX = 50


def _table(values) -> np.ndarray:
    table = np.asarray(values, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] < 2 or table.shape[1] < 2:
        raise ValueError(f"expected an N × k table with at least 2 corpora and 2 models, got shape {table.shape}")
    if not np.isfinite(table).all():
        raise ValueError("the table holds NaN or infinite values: every model needs a finite metric on every corpus")
    return table


def rank_table(values, higher_is_better: bool = True) -> np.ndarray:
    """(N, k) ranks within each row, 1 = best, ties given their mean rank."""
    table = _table(values)
    return stats.rankdata(-table if higher_is_better else table, axis=1)


def average_ranks(values, higher_is_better: bool = True) -> np.ndarray:
    """(k,) R_j = mean rank of each model over the corpora."""
    return rank_table(values, higher_is_better).mean(axis=0)


@dataclass(frozen=True)
class FriedmanResult:
    n_corpora: int  # N
    n_models: int  # k
    average_ranks: np.ndarray  # (k,)
    chi2: float  # χ²_F (tie-corrected when tie_correction)
    chi2_p_value: float
    f_statistic: float  # Iman-Davenport F_F (NaN when undefined)
    f_p_value: float  # NaN when undefined
    df: tuple  # (k − 1, (k − 1)(N − 1)) of F_F
    undefined: str = ""  # why F_F (and so a verdict) is undefined, or ""


def friedman_from_ranks(average: np.ndarray, n_corpora: int, tie_factor: float = 1.0) -> FriedmanResult:
    """Friedman's χ²_F and Iman-Davenport's F_F from the average ranks (Demšar's formulas)."""
    R = np.asarray(average, dtype=np.float64)
    N, k = int(n_corpora), R.size
    chi2 = 12.0 * N / (k * (k + 1)) * (np.sum(R ** 2) - k * (k + 1) ** 2 / 4.0)
    chi2 = max(chi2, 0.0) / tie_factor if tie_factor > 0 else 0.0  # every model tied everywhere: no evidence
    denominator = N * (k - 1) - chi2
    df = (k - 1, (k - 1) * (N - 1))
    undefined = ""
    if N < MIN_CORPORA:
        undefined = f"it needs at least {MIN_CORPORA} corpora, and there are {N}"
    elif denominator <= 1e-12 * N * k:
        undefined = "every corpus ranks the models alike, so its denominator N(k − 1) − χ²_F is 0"
    if undefined:
        f_statistic = f_p = np.nan
    else:
        f_statistic = (N - 1) * chi2 / denominator
        f_p = float(stats.f.sf(f_statistic, *df))
    return FriedmanResult(N, k, R, float(chi2), float(stats.chi2.sf(chi2, k - 1)), float(f_statistic), f_p, df,
                          undefined)


def friedman_test(values, higher_is_better: bool = True, tie_correction: bool = True) -> FriedmanResult:
    """The Friedman test of an N × k table (rows corpora, columns models)."""
    ranks = rank_table(values, higher_is_better)
    N, k = ranks.shape
    factor = 1.0
    if tie_correction:
        ties = 0.0
        for row in ranks:
            _, counts = np.unique(row, return_counts=True)
            ties += np.sum(counts.astype(np.float64) ** 3 - counts)
        factor = 1.0 - ties / (N * k * (k * k - 1))
    return friedman_from_ranks(ranks.mean(axis=0), N, factor)


def nemenyi_q(n_models: int, alpha: float = 0.05) -> float:
    """q_α of the Nemenyi test: the studentized range quantile (k groups, infinite df) over √2."""
    return float(stats.studentized_range.ppf(1 - alpha, n_models, np.inf) / np.sqrt(2))


def critical_difference(n_models: int, n_corpora: int, alpha: float = 0.05) -> float:
    """CD = q_α sqrt(k(k+1) / (6N)): average ranks this far apart differ (Nemenyi, level α)."""
    k = n_models
    return nemenyi_q(k, alpha) * float(np.sqrt(k * (k + 1) / (6.0 * n_corpora)))


@dataclass(frozen=True)
class SignedRankResult:
    n: int  # corpora (zeros included: they are ranked and split)
    r_plus: float  # rank sum where a > b
    r_minus: float  # rank sum where a < b
    statistic: float  # T = min(R+, R−)
    p_value: float
    exact: bool  # p from the exact distribution (no ties, no zeros) or the normal approximation


def _exact_lower_tail(t: float, n: int) -> float:
    """P(W ≤ t) for W = the sum of the ranks 1..n given a + sign each with probability ½."""
    total = n * (n + 1) // 2
    counts = np.zeros(total + 1, dtype=np.float64)  # counts[s] = sign patterns with sum s
    counts[0] = 1.0
    for r in range(1, n + 1):
        counts[r:] = counts[r:] + counts[:-r].copy()
    return float(counts[: int(np.floor(t)) + 1].sum() / 2.0 ** n)


def signed_rank_test(a, b) -> SignedRankResult:
    """Wilcoxon's signed-ranks test of paired values a, b (two-sided), zeros split as Demšar does."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = d.size
    if n == 0 or not np.isfinite(d).all():
        raise ValueError("signed-rank test: expected paired finite values")
    ranks = stats.rankdata(np.abs(d))
    zeros = ranks[d == 0].sum()
    r_plus = float(ranks[d > 0].sum() + zeros / 2)
    r_minus = float(ranks[d < 0].sum() + zeros / 2)
    T = min(r_plus, r_minus)
    _, tied = np.unique(np.abs(d), return_counts=True)
    exact = bool((d != 0).all() and (tied == 1).all() and n <= EXACT_SIGNED_RANK_MAX)
    if exact:
        p = min(1.0, 2.0 * _exact_lower_tail(T, n))
    else:
        mean = n * (n + 1) / 4.0
        variance = n * (n + 1) * (2 * n + 1) / 24.0 - np.sum(tied.astype(np.float64) ** 3 - tied) / 48.0
        p = 1.0 if variance <= 0 else float(2 * stats.norm.sf(abs(T - mean) / np.sqrt(variance)))
        p = min(p, 1.0)
    return SignedRankResult(n, r_plus, r_minus, T, p, exact)


def pairwise_tests(values, names: list[str], higher_is_better: bool = True, alpha: float = 0.05) -> pd.DataFrame:
    """Every pair of models: the difference of average ranks against Nemenyi's CD, and Wilcoxon's
    signed-ranks test on the metric values with Holm's adjustment over the pairs.

    One row per pair (a, b): mean_difference (a − b of the metric), rank_difference (R_a − R_b),
    nemenyi_significant (|R_a − R_b| ≥ CD), wins/losses/ties of a, r_plus, r_minus, p_value,
    p_holm, holm_significant (p_holm < α)."""
    table = _table(values)
    N, k = table.shape
    if len(names) != k:
        raise ValueError(f"{len(names)} names for {k} models")
    R = average_ranks(table, higher_is_better)
    cd = critical_difference(k, N, alpha)
    rows = []
    for i, j in itertools.combinations(range(k), 2):
        d = table[:, i] - table[:, j]
        better = d if higher_is_better else -d
        test = signed_rank_test(table[:, i], table[:, j])
        rows.append({"a": names[i], "b": names[j], "mean_difference": float(d.mean()),
                     "rank_difference": float(R[i] - R[j]), "nemenyi_significant": bool(abs(R[i] - R[j]) >= cd),
                     "a_wins": int((better > 0).sum()), "a_losses": int((better < 0).sum()),
                     "ties": int((better == 0).sum()), "r_plus": test.r_plus, "r_minus": test.r_minus,
                     "p_value": test.p_value, "exact": test.exact})
    frame = pd.DataFrame(rows)
    frame["p_holm"] = holm(frame["p_value"].to_numpy())
    frame["holm_significant"] = frame["p_holm"] < alpha
    return frame
