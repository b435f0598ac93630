r"""Paired permutation test of an AUC difference where a category has few positives (or negatives).

DeLong's z is referred to the normal distribution, which it approaches only when both classes are
large: with two test positives its two-sided rejection rate at 0.05 under the null is several times
0.05, and after Holm over a corpus with many rare categories a winner is named by chance. Where the
smaller class has at most ``PERMUTATION_MAX`` documents the comparison tables
(``significance.auc_difference_tests``) use this test instead.

**Placements.** Let the minority be the smaller class of the category (its positives, or its
negatives if those are fewer), k documents, and the majority the other, l documents. A document's
placement under model r is the share of the other class's documents that r scores below it (ties
½): V10 for a positive, 1 − V01 for a negative (``significance``'s structural components). With
e_i = P^a(i) − P^b(i) for the minority and f_j likewise for the majority,

    AUC_a − AUC_b = ± (1/k) Σ_i e_i = ± (1/l) Σ_j f_j      (+ for the positives, − for the negatives)

Placements are ranks, so neither model's scale matters (Venkatraman & Begg 1996).

**The permutation.** Under the null that a document's two scores are exchangeable (two models with
no real difference), each e_i is as likely to be −e_i: the flips σ ∈ {±1}^k are equally likely,
and all 2^k of them are enumerated (no random draws). The flips hold the majority as observed; its
own sampling variance, which they do not see, is allowed for by shrinking the observed difference
by the minority's share of the flips' total variance, v_min = Σ e_i² / k² against
v_maj = Σ f_j² / l² (their sum is DeLong's variance of the difference with uncentred components):

    p = #{σ : |Σ_i σ_i e_i| ≥ |Σ_i e_i| · √(v_min / (v_min + v_maj))} / 2^k

When the majority is large (v_maj → 0) this is the exact permutation test; a majority of a few tens
of documents would make the plain flips reject too often. In simulation under the null (binormal
scores; 3,019 documents as in Reuters-21578's test set, and 60 to 300) its rejection rate at 0.05
was at most 0.06 for 2 to 30 minority documents, where DeLong's reached 0.24 (docs/guide/statistics.md).

With k ≤ 5, p ≥ 2 · 2^−k ≥ 0.0625: such a category can never be significant at 0.05 — that is all
that few positives can say. With k < 2 the test is undefined (NaN), as DeLong's is.

**Computation.** 2l·P is an integer (ties count ½), so every sum is exact in int64. The 2^k sums
are counted by meeting in the middle: the signed sums of the first ⌊k/2⌋ values and of the rest,
the latter sorted, each of the former counted against them by binary search — O(2^{k/2} k).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlnb.errors import MlnbError
from mlnb.metrics._inputs import binary_labels, score_array

#: largest minority class (positives or negatives) of a category that gets the permutation test in the
#: comparison tables; DeLong's normal z above it, where its rejection rate under the null nears 0.05
PERMUTATION_MAX = 30

#: the most minority documents enumerated (2^k sign flips): ``auc_permutation_test`` refuses more
ENUMERATION_MAX = 40


@dataclass(frozen=True)
class PermutationResult:
    """Paired permutation test of AUC_a − AUC_b on the same documents (module docstring)."""

    difference: float  # auc_a − auc_b
    p_value: float  # two-sided, over all 2^flipped sign flips
    flipped: int  # k: the documents of the smaller class whose placement differences are flipped


def _twice_placements(scores: np.ndarray, inside: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(2 × documents of the other class scored below each document of ``inside``, ties once; the same for
    each document outside ``inside``): integers, 2l·P and 2k·P of the module docstring."""
    own, other = scores[inside], scores[~inside]
    sorted_own, sorted_other = np.sort(own), np.sort(other)
    below_own = np.searchsorted(sorted_other, own, "left") + np.searchsorted(sorted_other, own, "right")
    below_other = np.searchsorted(sorted_own, other, "left") + np.searchsorted(sorted_own, other, "right")
    return below_own.astype(np.int64), below_other.astype(np.int64)


def _signed_sums(values: np.ndarray) -> np.ndarray:
    """Σ σ_i v_i for all 2^len(values) sign vectors σ (int64)."""
    sums = np.zeros(1, dtype=np.int64)
    for v in values:
        sums = np.concatenate([sums + v, sums - v])
    return sums


def _flips_at_least(values: np.ndarray, threshold: int) -> int:
    """#{σ ∈ {±1}^k : |Σ σ_i v_i| ≥ threshold} for an integer threshold > 0, meeting in the middle."""
    half = values.size // 2
    low, high = _signed_sums(values[:half]), np.sort(_signed_sums(values[half:]))
    at_least = high.size - np.searchsorted(high, threshold - low, "left")  # low + high ≥ threshold
    at_most = np.searchsorted(high, -threshold - low, "right")  # low + high ≤ −threshold
    return int(at_least.sum() + at_most.sum())


def permutation_p_value(scores_a: np.ndarray, scores_b: np.ndarray, positives: np.ndarray) -> tuple[float, int]:
    """(p, k) of the permutation test of one category: scores_a, scores_b (n,) checked float scores, its
    positives' indices; p is NaN where either class has fewer than two documents."""
    n = scores_a.size
    is_positive = np.zeros(n, dtype=bool)
    is_positive[positives] = True
    minority = is_positive if 2 * positives.size <= n else ~is_positive
    k = int(np.count_nonzero(minority))
    if k < 2 or n - k < 2:
        return float("nan"), k
    e_a, f_a = _twice_placements(scores_a, minority)
    e_b, f_b = _twice_placements(scores_b, minority)
    e, f = e_a - e_b, f_a - f_b
    # both in units of 1/(2kl) of the difference, so v_min / (v_min + v_maj) = Σe² / (Σe² + Σf²)
    spread_e, spread_f = float(np.dot(e, e)), float(np.dot(f, f))
    observed = abs(int(e.sum()))
    if observed == 0:
        return 1.0, k
    shrunk = observed * np.sqrt(spread_e / (spread_e + spread_f))
    # the sums are integers: |S| ≥ shrunk ⇔ |S| ≥ ⌈shrunk⌉ (less a rounding's worth, towards counting more)
    threshold = max(1, int(np.ceil(shrunk * (1 - 1e-12))))
    return _flips_at_least(e, threshold) / 2.0 ** k, k


def auc_permutation_test(y_true, scores_a, scores_b) -> PermutationResult:
    """The paired permutation test of AUC_a = AUC_b (one category; module docstring), exact over all
    2^k sign flips of its smaller class's k documents (at most ``ENUMERATION_MAX``)."""
    y = binary_labels(np.ravel(y_true), "y_true").astype(bool)
    a = score_array(np.ravel(scores_a), "scores_a")
    b = score_array(np.ravel(scores_b), "scores_b")
    if not a.size == b.size == y.size:
        raise MlnbError(f"y_true, scores_a and scores_b must have one length, got {y.size}, {a.size} and {b.size}")
    m = int(y.sum())
    if min(m, y.size - m) > ENUMERATION_MAX:
        raise MlnbError(f"auc_permutation_test: {min(m, y.size - m)} documents in the smaller class; it enumerates "
                        f"2^k sign flips, k at most {ENUMERATION_MAX} (DeLong's test suits more)")
    p_value, k = permutation_p_value(a, b, np.flatnonzero(y))
    if m == 0 or m == y.size:
        difference = float("nan")
    else:
        sorted_negatives = np.sort(a[~y]), np.sort(b[~y])
        below = [np.searchsorted(s, x[y], "left") + np.searchsorted(s, x[y], "right")
                 for s, x in zip(sorted_negatives, (a, b))]
        difference = float((below[0].sum() - below[1].sum()) / (2.0 * m * (y.size - m)))
    return PermutationResult(difference, p_value, k)


def permutation_p_values(scores_a: np.ndarray, scores_b: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
                         permutation_max: int = PERMUTATION_MAX, category_major: bool = False) -> np.ndarray:
    """(K,): the permutation test's p of each category whose smaller class has 2 to ``permutation_max``
    documents, NaN for the others. Scores n × K (K × n if ``category_major``), checked; the positives of
    category k at indices[indptr[k]:indptr[k + 1]] (as ``_delong.paired_statistics``)."""
    counts = np.diff(indptr)
    n = scores_a.shape[1] if category_major else scores_a.shape[0]
    smaller = np.minimum(counts, n - counts)
    p = np.full(counts.size, np.nan)
    for k in np.flatnonzero((smaller >= 2) & (smaller <= min(permutation_max, ENUMERATION_MAX))):
        column = np.s_[k] if category_major else np.s_[:, k]
        p[k] = permutation_p_value(scores_a[column], scores_b[column], indices[indptr[k]:indptr[k + 1]])[0]
    return p
