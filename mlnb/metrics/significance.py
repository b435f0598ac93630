r"""Significance tests for comparing two classifiers: DeLong, Holm, sign test.

**DeLong, DeLong & Clarke-Pearson (1988)**: two ROC AUCs measured on the same
documents are correlated; their paired test uses the structural components.
With the m positives' scores X_1..X_m, the n negatives' scores Y_1..Y_n and

    ψ(x, y) = 1 if x > y,  ½ if x = y,  0 if x < y

for each score column r (one classifier):

    AUC^r      = (1/mn) Σ_i Σ_j ψ(X_i^r, Y_j^r)
    V10^r(X_i) = (1/n) Σ_j ψ(X_i^r, Y_j^r)        (one per positive)
    V01^r(Y_j) = (1/m) Σ_i ψ(X_i^r, Y_j^r)        (one per negative)
    S10[r, s]  = 1/(m−1) Σ_i (V10^r(X_i) − AUC^r)(V10^s(X_i) − AUC^s)
    S01[r, s]  = 1/(n−1) Σ_j (V01^r(Y_j) − AUC^r)(V01^s(Y_j) − AUC^s)
    S          = S10 / m + S01 / n                 (covariance of the AUCs)

(for a single column, S is the variance of one AUC: ``uncertainty.auc_confidence_intervals``
builds its intervals from it) and for two columns a, b (the contrast c = (1, −1)):

    var(AUC_a − AUC_b) = c'Sc = S[a,a] + S[b,b] − 2 S[a,b]
    z = (AUC_a − AUC_b) / sqrt(var),    p = 2 Φ(−|z|)   (two-sided, normal)

**Sun & Xu (2014)** compute the components in O(n log n) from midranks
(ties share the mean of their ranks, which is how ψ counts them ½):
T_Z = midranks among all m + n scores, T_X = among the positives only,
T_Y = among the negatives only; then

    V10(X_i) = (T_Z(X_i) − T_X(X_i)) / n        (negatives below X_i, ties ½)
    V01(Y_j) = 1 − (T_Z(Y_j) − T_Y(Y_j)) / m     (positives above Y_j, ties ½)
    AUC      = (1/m) Σ_i V10(X_i)

The variance of the difference is computed as the variance of the component
differences, var(V10_a − V10_b)/m + var(V01_a − V01_b)/n, which is c'Sc
exactly but cannot go negative by rounding and is exactly 0 when the two
columns rank the documents identically (then z = 0 and p = 1; a nonzero
difference with zero variance gives z = ±inf, p = 0). Without positives or
negatives everything is NaN; with a single positive (or negative) the AUCs are
defined but S10 (or S01) is not, so the variance, z and p are NaN.

The normal z holds only when both classes are large. The comparison tables
(``auc_difference_tests``) give a category with at most ``auc_permutation.PERMUTATION_MAX``
positives (or negatives) the exact paired permutation test of ``mlnb.metrics.auc_permutation``
instead, and say which test each category got.

**Holm (1979)** step-down adjustment of M p-values sorted p_(1) ≤ … ≤ p_(M):

    p̃_(i) = max_{j ≤ i} min(1, (M − j + 1) p_(j))

**Sign test** (Yang & Liu 1999): over paired per-category differences d_k,
wins = #{d_k > t}, losses = #{d_k < −t}, ties = #{|d_k| ≤ t}; ties dropped,
p = two-sided exact binomial P(wins | wins + losses, ½).

**McNemar (1947)**, for two classifiers' decisions on the same documents:
with b = #{a right, b wrong} and c = #{a wrong, b right} (agreements carry no
information), under H0 the discordant pairs split ½ : ½, so

    b + c ≤ 25:  p = two-sided exact binomial P(b | b + c, ½)     (statistic = min(b, c))
    b + c > 25:  χ² = max(0, |b − c| − 1)² / (b + c),  1 df       (continuity-corrected)

and p = 1 when b + c = 0. The max(0, ·) keeps b = c at χ² = 0, p = 1 (the
uncapped formula would give 1/(b + c)). Symmetric in a and b.

The components, AUCs and variances of many categories are computed in parallel by
``mlnb.metrics._delong`` (one sort of the smaller class per score column; the AUC as the exact
integer 2U over 2mn, the variances as compensated sums in document order).

Scores are decision values / log-odds, never probabilities: saturated
probabilities tie and distort both the AUCs and the components.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.stats import binomtest, chi2, norm

from mlnb.errors import MlnbError
from mlnb.metrics._inputs import binary_labels, score_array
from mlnb.metrics._delong import column_blocks, component_columns, paired_statistics
from mlnb.metrics.auc_permutation import PERMUTATION_MAX, permutation_p_values
from mlnb.metrics.ranking import _positives_by_column


@dataclass(frozen=True)
class DeLongResult:
    """Paired DeLong test of AUC_a − AUC_b on the same documents."""

    auc_a: float
    auc_b: float
    difference: float  # auc_a − auc_b
    variance: float  # of the difference
    z: float
    p_value: float  # two-sided


@dataclass(frozen=True)
class SignTestResult:
    """Wins, losses and ties of a over b, and the two-sided exact binomial p."""

    wins: int
    losses: int
    ties: int
    p_value: float


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test of two classifiers' per-document correctness on the same documents."""

    b: int  # a right, b wrong
    c: int  # a wrong, b right
    statistic: float  # min(b, c) for "exact", the corrected χ² for "chi2"
    p_value: float  # two-sided
    method: str  # "exact" (binomial, b + c ≤ 25) or "chi2" (continuity-corrected, 1 df)


#: largest b + c for which McNemar's test uses the exact binomial p
MCNEMAR_EXACT_MAX = 25


def _labels_and_scores(y_true, score_matrix) -> tuple[np.ndarray, np.ndarray]:
    """(y (n,) bool, scores (n, k) float64 without NaN), checked by ``_inputs``."""
    y = binary_labels(np.ravel(y_true), "y_true").astype(bool)
    s = score_array(score_matrix, "scores", ndim=(1, 2)).astype(np.float64, copy=False)
    s = s.reshape(-1, 1) if s.ndim == 1 else s
    if s.shape[0] != y.size:
        raise MlnbError(f"y_true has {y.size} values but the scores have shape {s.shape}")
    return y, s


def _structural_components(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(AUC (k,), V10 (m, k), V01 (n, k)) from midranks, Sun & Xu (2014) (``_delong``)."""
    components = component_columns(s, np.flatnonzero(y))
    v10 = components[y]
    return v10.mean(axis=0), v10, components[~y]


def delong_covariance(y_true, score_matrix) -> tuple[np.ndarray, np.ndarray]:
    """(AUCs (k,), their DeLong covariance S (k, k)) for the k columns of
    ``score_matrix`` (n × k, or a single score vector) on the same documents."""
    y, s = _labels_and_scores(y_true, score_matrix)
    k = s.shape[1]
    m, n = int(y.sum()), int(y.size - y.sum())
    if m == 0 or n == 0:
        return np.full(k, np.nan), np.full((k, k), np.nan)
    auc, v10, v01 = _structural_components(y, s)
    if m < 2 or n < 2:
        return auc, np.full((k, k), np.nan)
    s10 = np.atleast_2d(np.cov(v10, rowvar=False, ddof=1))
    s01 = np.atleast_2d(np.cov(v01, rowvar=False, ddof=1))
    return auc, s10 / m + s01 / n


def delong_test(y_true, scores_a, scores_b) -> DeLongResult:
    """DeLong's paired two-sided test of AUC_a = AUC_b (one category)."""
    a, b = np.asarray(scores_a).ravel(), np.asarray(scores_b).ravel()
    if a.shape != b.shape:
        raise MlnbError(f"scores_a has {a.size} values but scores_b has {b.size}")
    y, a = _labels_and_scores(y_true, a)
    _, b = _labels_and_scores(y, b)
    positives = np.flatnonzero(y)
    statistics = paired_statistics(a, b, np.array([0, positives.size]), positives)
    return DeLongResult(*(float(v) for v in _test_columns(statistics).iloc[0]))


def _test_columns(statistics: np.ndarray, index=None) -> pd.DataFrame:
    """auc_a, auc_b, difference, variance, z, p_value from rows of (auc_a, auc_b, variance)."""
    auc_a, auc_b, variance = statistics.T
    difference = auc_a - auc_b
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(variance > 0, difference / np.sqrt(variance),
                     np.where(difference == 0, 0.0, np.copysign(np.inf, difference)))
    z[np.isnan(variance)] = np.nan
    return pd.DataFrame({"auc_a": auc_a, "auc_b": auc_b, "difference": difference, "variance": variance, "z": z,
                         "p_value": 2.0 * norm.sf(np.abs(z))}, index=index)


def _dense_scores(scores, name: str) -> np.ndarray:
    """float32 (as it is: no copy) or float64 n × K scores without NaN (``_inputs.score_array``)."""
    s = score_array(scores.toarray() if sp.issparse(scores) else scores, name)
    s = s.reshape(-1, 1) if s.ndim == 1 else s
    if s.ndim != 2:
        raise MlnbError(f"{name} must be an n × K matrix, got shape {s.shape}")
    return s


def _paired_columns(Y_true, scores_a, scores_b):
    """(scores_a, scores_b (n × K, checked), indptr, indices: each category's positives) for the kernels."""
    a, b = _dense_scores(scores_a, "scores_a"), _dense_scores(scores_b, "scores_b")
    Y = sp.csc_array(Y_true) if sp.issparse(Y_true) else np.asarray(Y_true)
    Y = Y.reshape(-1, 1) if Y.ndim == 1 else Y
    if a.shape != b.shape or Y.shape != a.shape:
        raise MlnbError(f"Y_true {Y.shape}, scores_a {a.shape} and scores_b {b.shape} must have one shape")
    binary_labels(Y, "Y_true")  # 0/1: the kernels read every nonzero as a positive
    return a, b, *_positives_by_column(Y if sp.issparse(Y) else Y.astype(bool), a.shape[1])


def delong_tests(Y_true, scores_a, scores_b, categories=None) -> pd.DataFrame:
    """DeLong's test for every category (column) of n × K labels and scores.

    One row per category: auc_a, auc_b, difference, variance, z, p_value, and
    p_holm (Holm over the categories where the test is defined, NaN elsewhere).
    ``Y_true`` may be scipy sparse or dense 0/1; ``categories`` names the rows.
    All categories at once, in parallel (``_delong``).
    """
    a, b, indptr, indices = _paired_columns(Y_true, scores_a, scores_b)
    return _delong_table(paired_statistics(a, b, indptr, indices), a.shape[1], categories)


def auc_difference_tests(Y_true, scores_a, scores_b, categories=None,
                         permutation_max: int = PERMUTATION_MAX) -> pd.DataFrame:
    """``delong_tests``, except that a category whose smaller class (positives or negatives) has 2 to
    ``permutation_max`` documents gets the exact paired permutation test's p (``auc_permutation``),
    where DeLong's normal z rejects too often; column ``test`` names each row's test ("delong",
    "permutation", or "none" where neither is defined), and Holm runs over the mixed p-values. The
    columns variance and z stay DeLong's. The comparisons of a study (``comparison.compare_scores``)."""
    a, b, indptr, indices = _paired_columns(Y_true, scores_a, scores_b)
    return _delong_table(paired_statistics(a, b, indptr, indices), a.shape[1], categories,
                         permutation_p_values(a, b, indptr, indices, permutation_max))


def delong_tests_by_column(column, K: int, categories=None, work=None) -> pd.DataFrame:
    """``delong_tests`` from ``column(k) -> (y, scores_a, scores_b)`` of one category at a time, so
    that the scores need never be in memory all at once (a streaming study reads them from disk):
    the categories are read in blocks of at most ``_delong.COLUMN_BLOCK_BYTES`` of scores, each
    block tested in parallel; ``work``: each category's ``ranking.column_work`` where known
    beforehand (blocks of even work)."""
    return _tests_by_column(column, K, categories, work, None)


def auc_difference_tests_by_column(column, K: int, categories=None, work=None,
                                   permutation_max: int = PERMUTATION_MAX) -> pd.DataFrame:
    """``auc_difference_tests`` column by column, as ``delong_tests_by_column``: the same table."""
    return _tests_by_column(column, K, categories, work, permutation_max)


def _tests_by_column(column, K: int, categories, work, permutation_max: int | None) -> pd.DataFrame:
    statistics = np.empty((K, 3))
    permutation_p = None if permutation_max is None else np.empty(K)
    for block, indptr, indices, (a, b) in column_blocks(column, K, work=work):
        statistics[block] = paired_statistics(a, b, indptr, indices, category_major=True)
        if permutation_p is not None:
            permutation_p[block] = permutation_p_values(a, b, indptr, indices, permutation_max, category_major=True)
    return _delong_table(statistics, K, categories, permutation_p)


def _delong_table(statistics: np.ndarray, K: int, categories, permutation_p=None) -> pd.DataFrame:
    """The DeLong table; with ``permutation_p`` ((K,), NaN where not applied) those p-values replace
    DeLong's and column ``test`` says which test each row got."""
    table = _test_columns(statistics, pd.Index(range(K) if categories is None else list(categories),
                                               name="category"))
    if permutation_p is not None:
        permuted = ~np.isnan(permutation_p)
        p_value = table["p_value"].to_numpy().copy()
        p_value[permuted] = permutation_p[permuted]
        table["p_value"] = p_value
        table["test"] = np.where(permuted, "permutation", np.where(np.isnan(p_value), "none", "delong"))
    table["p_holm"] = holm(table["p_value"].to_numpy())
    return table


def holm(p_values) -> np.ndarray:
    """Holm–Bonferroni step-down adjusted p-values; NaNs stay NaN and do not
    count towards M."""
    p = np.asarray(p_values, dtype=np.float64)
    flat = p.ravel()
    adjusted = np.full(flat.shape, np.nan)
    defined = np.flatnonzero(~np.isnan(flat))
    order = defined[np.argsort(flat[defined], kind="stable")]  # p_(1) ≤ … ≤ p_(M)
    multiplier = np.arange(order.size, 0, -1)  # M − j + 1 for j = 1..M
    adjusted[order] = np.maximum.accumulate(np.minimum(1.0, multiplier * flat[order]))
    return adjusted.reshape(p.shape)


def sign_test(differences, tie_tolerance: float = 0.0) -> SignTestResult:
    """Sign test of paired differences (a − b per category), Yang & Liu (1999).

    ``|d| ≤ tie_tolerance`` is a tie; ties and NaNs are dropped before the
    two-sided exact binomial test of wins against losses (p = 1 if none are left).
    """
    if not tie_tolerance >= 0:
        raise MlnbError(f"tie_tolerance must be >= 0, got {tie_tolerance}")
    d = np.asarray(differences, dtype=np.float64).ravel()
    d = d[~np.isnan(d)]
    wins, losses = int(np.sum(d > tie_tolerance)), int(np.sum(d < -tie_tolerance))
    ties = int(d.size - wins - losses)
    p_value = float(binomtest(wins, wins + losses, 0.5).pvalue) if wins + losses else 1.0
    return SignTestResult(wins, losses, ties, p_value)


def _correctness(values, name: str) -> np.ndarray:
    v = np.asarray(values)
    if v.ndim != 1:
        raise MlnbError(f"{name} must be a 1-D array of per-document correctness, got shape {v.shape}")
    if v.dtype != bool and not np.isin(v, (0, 1)).all():
        raise MlnbError(f"{name} must hold booleans or 0/1")
    return v.astype(bool)


def mcnemar_test(correct_a, correct_b) -> McNemarResult:
    """McNemar's two-sided test that models a and b are equally often right (same documents).

    correct_a, correct_b : (n,) booleans (or 0/1), whether each model got document i right
    """
    right_a, right_b = _correctness(correct_a, "correct_a"), _correctness(correct_b, "correct_b")
    if right_a.shape != right_b.shape:
        raise MlnbError(f"correct_a has {right_a.size} documents but correct_b has {right_b.size}")
    b, c = int(np.count_nonzero(right_a & ~right_b)), int(np.count_nonzero(~right_a & right_b))
    if b + c == 0:
        return McNemarResult(b, c, 0.0, 1.0, "exact")
    if b + c <= MCNEMAR_EXACT_MAX:
        return McNemarResult(b, c, float(min(b, c)), float(binomtest(b, b + c, 0.5).pvalue), "exact")
    statistic = max(0, abs(b - c) - 1) ** 2 / (b + c)
    return McNemarResult(b, c, float(statistic), float(chi2.sf(statistic, df=1)), "chi2")
