r"""Ranking metrics per document over the k best categories, as extreme classification measures them.

Notation: document d of n, categories 0 … K−1, y_d its set of true categories, c_{d,(i)} the category
it ranks i-th (i = 1 … k), y_{(i)} = 1 when c_{d,(i)} ∈ y_d (else 0, and 0 for a padded rank -1),
w_l = 1/p_l the inverse propensity of category l.

**Top k** (``top_k_of_scores``): per row, the k highest scores, best first, equal scores lower
category first — exactly ``np.argsort(-scores, axis=1, kind="stable")[:, :k]`` — computed over
blocks of rows (``np.partition`` for the k-th value, then only the rows whose ties straddle it are
resolved by category). With k > K every row is padded with category -1 and score -inf.

**Per document** (``ranking_metrics``):

    P@k      = Σ_{i≤k} y_(i) / k
    R@k      = Σ_{i≤k} y_(i) / |y_d|                                   0 when |y_d| = 0
    nDCG@k   = DCG@k / IDCG@k,  DCG@k = Σ_{i≤k} y_(i) / log2(i + 1),
               IDCG@k = Σ_{i=1..min(k, |y_d|)} 1 / log2(i + 1)          0 when |y_d| = 0
    PSP@k raw     = (1/k) Σ_{i≤k} y_(i) w_(i)
    PSnDCG@k raw  = Σ_{i≤k} y_(i) w_(i) / log2(i + 1) / IDCG@k            0 when |y_d| = 0
    PSP@k best    = (1/k) Σ_{j ≤ min(k, |y_d|)} w*_j
    PSnDCG@k best = Σ_{j ≤ min(k, |y_d|)} w*_j / log2(j + 1) / IDCG@k    w*: w over y_d, descending

A document without a true category counts in every mean with R@k = nDCG@k = PSnDCG@k = 0 (and
P@k = 0): LibMultiLabel's convention (``RecallAtK``, ``NDCGAtK``) and pyxclib's, so that every
metric averages over the same n documents and a model is not credited for documents it cannot rank.

**Means** are over the n documents, Σ_d v_d / n. The propensity-scored metrics are reported both
raw (the mean of the raw values) and normalised as the Extreme Classification Repository's code does
(pyxclib ``psprecision`` / ``psndcg``): a ratio of means over the whole test set,

    PSP@k    = Σ_d PSP@k raw_d / Σ_d PSP@k best_d
    PSnDCG@k = Σ_d PSnDCG@k raw_d / Σ_d PSnDCG@k best_d

— the share of the best attainable propensity-weighted gain; the **normalised value is the
headline** (it is what published tables report, and lies in [0, 1]); ``"PSP@k raw"`` keeps the
unnormalised mean, which grows with the inverse propensities of the test set.

**Coverage**: coverage@k = |{l : ∃ d, l ∈ y_d and l is ranked ≤ k for d}| / |{l : ∃ d, l ∈ y_d}|,
the share of the categories with a test positive that are predicted correctly, at rank ≤ k, for at
least one document (NaN without any positive).

**Propensities** (``propensities``): Jain, Prabhu & Varma (2016, KDD), from N training documents of
which N_l are positive for category l:

    p_l = 1 / (1 + C · exp(−A · ln(N_l + B))),   C = (ln N − 1) · (B + 1)^A

(A = 0.55, B = 1.5 unless the data set is Wikipedia- or Amazon-like).

**Intervals** (``bootstrap_intervals_at_k``): resamples of documents from
``mlnb.metrics.uncertainty.bootstrap_indices(n, n_boot, seed)`` (the project's resamples), document d
weighted by its count m_d; a replicate of a mean is Σ m_d v_d / Σ m_d, of a normalised metric
Σ m_d raw_d / Σ m_d best_d. Coverage is no mean over documents but a count of distinct categories,
and a resample of documents holds only about 63 % of them: the categories seen in one document drop
out and the replicates fall below the estimate (the bootstrap is inconsistent for counts of distinct
items). So coverage@k resamples the set F of categories with a test positive instead, its fixed
covered / not covered indicators (``bootstrap_indices(|F|, n_boot, [seed, COVERAGE_STREAM])``):
a replicate is the mean of the drawn indicators, the interval says how precisely the share over a
label space like this one is known given these test documents. The interval is the percentile
interval: the (1 − level)/2 and (1 + level)/2 quantiles of the replicates (numpy's linear
interpolation, NaN replicates ignored).

**Paired comparisons** (``paired_differences_at_k``): both models' replicates on the same resamples;
the interval of metric_a − metric_b is the percentile interval of their differences (coverage: the
same category draws, F being one set for both). The p-value is a two-sided **paired randomisation
(sign-flip) test**: under the null hypothesis that the two models are exchangeable on every
document, each document's two rankings are swapped with probability ½ (one ``random(n) < 0.5``
draw per flip from ``numpy.random.default_rng([seed, FLIP_STREAM])``); for a mean that flips the
sign of d_d = v_{a,d} − v_{b,d}, the statistic being T = Σ_d s_d d_d / n (ratio metrics: / Σ_d
best_d, the same for both models), for coverage it recounts the covered categories of the swapped
rankings. p = (1 + #{flips: |T*| ≥ |T|}) / (1 + n_flips), |T*| ≥ |T| up to a relative 1e-12 of
rounding (coverage: exact counts), so a model against itself has p = 1.

>>> import numpy as np, scipy.sparse as sp
>>> categories, values = top_k_of_scores(np.array([[0.9, 0.1, 0.5], [0.2, 0.8, 0.3]]), 2)
>>> categories.tolist()
[[0, 2], [1, 2]]
>>> result = ranking_metrics(sp.csr_matrix(np.array([[1, 0, 0], [0, 0, 1]])), categories, ks=(1, 2))
>>> result.means["P@1"], result.means["P@2"], result.means["R@2"], result.means["coverage@1"]
(0.5, 0.5, 1.0, 0.5)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from mlnb.errors import MlnbError
from mlnb.metrics._inputs import binary_labels, score_array
from mlnb.metrics.uncertainty import MIN_BOOTSTRAP, bootstrap_indices

__all__ = ["MetricInterval", "PairedDifference", "RankingAtK", "bootstrap_intervals_at_k",
           "paired_differences_at_k", "propensities", "ranking_metrics", "top_k_of_scores"]

#: score entries of one block of rows in ``top_k_of_scores`` (its temporaries are a few of these)
TOP_K_BLOCK_ENTRIES = 1 << 21
#: the category resamples of coverage@k draw from ``bootstrap_indices(|F|, n_boot, [seed, COVERAGE_STREAM])``
COVERAGE_STREAM = 3
#: the swaps of the randomisation test draw from ``numpy.random.default_rng([seed, FLIP_STREAM])``
FLIP_STREAM = 2
#: resamples (and swaps) whose weights multiply the per-document values in one product
RESAMPLE_BLOCK = 64
#: relative rounding allowed when a flipped statistic equals the observed one
FLIP_TIE_TOLERANCE = 1e-12


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise MlnbError(f"{name}: expected a positive integer, got {value!r}")
    return int(value)


def _level(level) -> float:
    if not isinstance(level, (float, int, np.floating)) or isinstance(level, bool) or not 0 < level < 1:
        raise MlnbError(f"level: expected a number strictly between 0 and 1, got {level!r}")
    return float(level)


# ---------------------------------------------------------------------------------------------- top k

def _top_k_block(S: np.ndarray, k: int) -> np.ndarray:
    """The (rows, k) categories of ``np.argsort(-S, axis=1, kind="stable")[:, :k]`` for 1 ≤ k ≤ K."""
    rows, K = S.shape
    negated = -S
    if k == K:
        return np.argsort(negated, axis=1, kind="stable")
    kth = np.partition(negated, k - 1, axis=1)[:, k - 1:k]  # the k-th smallest of −S: the k-th best score
    chosen = negated <= kth
    over = np.flatnonzero(chosen.sum(axis=1) > k)  # ties at the k-th value: keep the lowest categories
    if over.size:
        strictly = (negated[over] < kth[over]).sum(axis=1)
        tied = negated[over] == kth[over]
        rank_among_tied = np.cumsum(tied, axis=1, dtype=np.int64)
        chosen[over] = (negated[over] < kth[over]) | (tied & (rank_among_tied <= (k - strictly)[:, None]))
    columns = np.nonzero(chosen)[1].reshape(rows, k)  # row-major: ascending categories per row
    order = np.argsort(np.take_along_axis(negated, columns, axis=1), axis=1, kind="stable")
    return np.take_along_axis(columns, order, axis=1)


def top_k_of_scores(scores, k: int, block_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The k best categories of each row of dense (n × K) scores and their scores, best first.

    categories[d] = ``np.argsort(-scores[d], kind="stable")[:k]`` (equal scores: lower category first),
    values[d, i] = scores[d, categories[d, i]]. With k > K the ranks K … k−1 are padded with
    category -1 and value -inf. Rows are ranked in blocks of ``block_rows`` (default: about
    ``TOP_K_BLOCK_ENTRIES`` scores a block), so the temporaries are those of one block.

    Returns (categories (n, k) int64, values (n, k) of the scores' float dtype).
    """
    S = score_array(scores, "top_k_of_scores: scores", ndim=2)
    k = _positive_int(k, "top_k_of_scores: k")
    n, K = S.shape
    if block_rows is None:
        block_rows = max(1, TOP_K_BLOCK_ENTRIES // max(K, 1))
    block_rows = _positive_int(block_rows, "top_k_of_scores: block_rows")
    kept = min(k, K)
    categories = np.full((n, k), -1, dtype=np.int64)
    values = np.full((n, k), -np.inf, dtype=S.dtype)
    if kept == 0:
        return categories, values
    for start in range(0, n, block_rows):
        block = S[start:start + block_rows]
        best = _top_k_block(block, kept)
        categories[start:start + block.shape[0], :kept] = best
        values[start:start + block.shape[0], :kept] = np.take_along_axis(block, best, axis=1)
    return categories, values


# ------------------------------------------------------------------------------------------ propensities

def label_matrix(Y, name: str = "Y") -> sp.csr_matrix:
    """``_label_matrix``: Y as the CSR of ones at its positives, sorted, without duplicates or explicit zeros (what
    ``ranked_hits`` searches); a non-binary Y is refused naming ``name``."""
    return _label_matrix(Y, name)


def ranked_hits(Y: sp.csr_matrix, rankings: np.ndarray) -> np.ndarray:
    """(n, r) bool: whether document d's i-th ranked category ``rankings[d, i]`` is one of its labels (False for
    −1, no category): a search of the keys d·K + l among the positives' (Y as ``label_matrix`` gives it)."""
    n, K = Y.shape
    T = np.asarray(rankings, dtype=np.int64)
    positive_keys = np.repeat(np.arange(n, dtype=np.int64), np.diff(Y.indptr)) * K + Y.indices
    ranked_keys = np.arange(n, dtype=np.int64)[:, None] * K + T
    found = np.searchsorted(positive_keys, ranked_keys)
    correct = (T >= 0) & (found < positive_keys.size)
    correct[correct] = positive_keys[found[correct]] == ranked_keys[correct]
    return correct


def _label_matrix(Y, name: str) -> sp.csr_matrix:
    """Y (dense or sparse 0/1) as a csr matrix of ones at the positives, sorted, without explicit zeros."""
    Y = binary_labels(Y, name)
    if not sp.issparse(Y) and np.ndim(Y) != 2:
        raise MlnbError(f"{name}: expected a 2-D (documents × categories) label matrix, got shape {np.shape(Y)}")
    matrix = sp.csr_matrix(Y, dtype=np.float64, copy=True)
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    matrix.sort_indices()
    matrix.data[:] = 1.0
    return matrix


def propensities(Y_train, A: float = 0.55, B: float = 1.5) -> np.ndarray:
    """(K,) propensities of Jain, Prabhu & Varma (2016) from (N × K) 0/1 training labels:

        p_l = 1 / (1 + C · exp(−A · ln(N_l + B))),   C = (ln N − 1) · (B + 1)^A

    N the number of training documents (rows), N_l the positives of category l. Needs N ≥ 3 (so that
    ln N > 1 and every p_l ≤ 1) and B > 0 (a category without positives has N_l + B > 0).
    """
    Y = _label_matrix(Y_train, "propensities: Y_train")
    N = Y.shape[0]
    if N < 3:
        raise MlnbError(f"propensities: Y_train has {N} documents; the formula needs at least 3 (ln N > 1)")
    for name, value in (("A", A), ("B", B)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value):
            raise MlnbError(f"propensities: {name} must be a finite number, got {value!r}")
    if B <= 0:
        raise MlnbError(f"propensities: B must be > 0 (a category without training positives needs N_l + B > 0), "
                        f"got {B!r}")
    positives = np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()
    C = (np.log(N) - 1.0) * (B + 1.0) ** A
    return 1.0 / (1.0 + C * np.exp(-A * np.log(positives + B)))


# ---------------------------------------------------------------------------------------------- metrics

@dataclass(frozen=True)
class RankingAtK:
    """Ranking metrics of one model on one test set (module docstring).

    per_document : {column: (n,) float64} — "P@k", "R@k", "nDCG@k" and, with propensities,
        "PSP@k raw", "PSP@k best", "PSnDCG@k raw", "PSnDCG@k best" for every k of ``ks``
    means : {metric: float} — "P@k", "R@k", "nDCG@k", "coverage@k" and, with propensities,
        "PSP@k" and "PSnDCG@k" (normalised: the headline) and "PSP@k raw", "PSnDCG@k raw"
    top_categories : (n, max k) the rankings evaluated; correct : (n, max k) bool, y_(i)
    labels : the test labels as 0/1 csr
    """

    ks: tuple[int, ...]
    per_document: dict[str, np.ndarray]
    means: dict[str, float]
    top_categories: np.ndarray
    correct: np.ndarray
    labels: sp.csr_matrix
    propensity_scored: bool

    @property
    def n_documents(self) -> int:
        return self.labels.shape[0]


def _metric_plan(result: RankingAtK) -> list[tuple[str, str, tuple]]:
    """(metric, kind, arguments) for each mean: ("mean", (column,)), ("ratio", (raw, best)), ("coverage", (k,))."""
    plan = []
    for k in result.ks:
        plan += [(f"P@{k}", "mean", (f"P@{k}",)), (f"R@{k}", "mean", (f"R@{k}",)),
                 (f"nDCG@{k}", "mean", (f"nDCG@{k}",))]
        if result.propensity_scored:
            for base in ("PSP", "PSnDCG"):
                plan += [(f"{base}@{k}", "ratio", (f"{base}@{k} raw", f"{base}@{k} best")),
                         (f"{base}@{k} raw", "mean", (f"{base}@{k} raw",))]
        plan.append((f"coverage@{k}", "coverage", (k,)))
    return plan


def _document_matrix(result: RankingAtK) -> tuple[dict[str, int], np.ndarray]:
    """{column: index} and the (n, columns) float64 matrix of ``result.per_document``."""
    names = list(result.per_document)
    matrix = np.column_stack([result.per_document[name] for name in names]) if names else np.zeros((0, 0))
    return {name: j for j, name in enumerate(names)}, np.ascontiguousarray(matrix, dtype=np.float64)


def _plan_values(plan, columns: dict[str, int], sums: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """(rows, len(plan)): each mean Σ w v / Σ w and ratio Σ w raw / Σ w best from the weighted column
    sums ``sums`` (rows, columns) and the weights' totals (rows,); NaN for coverage and for a ratio
    over 0."""
    out = np.full((sums.shape[0], len(plan)), np.nan)
    for j, (_, kind, args) in enumerate(plan):
        if kind == "mean":
            out[:, j] = sums[:, columns[args[0]]] / totals
        elif kind == "ratio":
            numerator, denominator = sums[:, columns[args[0]]], sums[:, columns[args[1]]]
            positive = denominator > 0
            out[positive, j] = numerator[positive] / denominator[positive]
    return out


def _covered(result: RankingAtK, k: int) -> np.ndarray:
    """(|F|,) bool over the categories F with a test positive (ascending): ranked correctly at rank
    ≤ k for at least one document."""
    with_positive = np.unique(result.labels.indices)
    return np.isin(with_positive, result.top_categories[:, :k][result.correct[:, :k]])


def _hits(result: RankingAtK, k: int, categories: np.ndarray) -> sp.csc_matrix:
    """(|categories| × n) 1 where document d ranks ``categories[j]`` (sorted, holding every correct
    prediction) correctly at rank ≤ k."""
    doc, rank = np.nonzero(result.correct[:, :k])
    category = np.searchsorted(categories, result.top_categories[doc, rank])
    return sp.csc_matrix((np.ones(doc.size), (category, doc)), shape=(categories.size, result.n_documents))


def _estimates(result: RankingAtK, plan) -> np.ndarray:
    columns, matrix = _document_matrix(result)
    n = result.n_documents
    values = _plan_values(plan, columns, matrix.sum(axis=0, keepdims=True), np.array([float(n)]))[0]
    for j, (_, kind, args) in enumerate(plan):
        if kind == "coverage":
            covered = _covered(result, args[0])
            values[j] = covered.mean() if covered.size else np.nan
    return values


def _rankings(top_categories, n: int, K: int, kmax: int) -> np.ndarray:
    T = np.asarray(top_categories)
    if T.ndim != 2 or T.shape[0] != n:
        raise MlnbError(f"ranking_metrics: top_categories must be (n documents = {n}, k) categories, "
                        f"got shape {T.shape}")
    if T.dtype.kind not in "iu":
        raise MlnbError(f"ranking_metrics: top_categories must hold integer categories, got dtype {T.dtype}")
    if T.shape[1] < kmax:
        raise MlnbError(f"ranking_metrics: top_categories has {T.shape[1]} ranks per document but ks asks for "
                        f"{kmax}; rank at least max(ks) categories (top_k_of_scores pads with -1)")
    T = T[:, :kmax].astype(np.int64)
    if T.size and (T.min() < -1 or T.max() >= K):
        raise MlnbError(f"ranking_metrics: top_categories must lie in 0 … {K - 1} (or -1 for no category), "
                        f"got values {T.min()} … {T.max()}")
    ranked = np.sort(T, axis=1)
    repeated = (ranked[:, 1:] == ranked[:, :-1]) & (ranked[:, 1:] >= 0)
    if repeated.any():
        d = int(np.flatnonzero(repeated.any(axis=1))[0])
        raise MlnbError(f"ranking_metrics: document {d} ranks one category twice in top_categories "
                        f"({T[d].tolist()}); each category may appear once")
    return T


def ranking_metrics(Y_true, top_categories, ks=(1, 3, 5), propensity=None) -> RankingAtK:
    """P@k, R@k, nDCG@k, coverage@k and, given ``propensity`` (K,), PSP@k and PSnDCG@k (module
    docstring) of the rankings ``top_categories`` (n, ≥ max ks; -1 for no category) against the
    0/1 test labels ``Y_true`` (n × K, sparse or dense)."""
    Y = _label_matrix(Y_true, "ranking_metrics: Y_true")
    n, K = Y.shape
    if isinstance(ks, (int, np.integer)) and not isinstance(ks, bool):
        ks = (ks,)
    ks = tuple(sorted({_positive_int(k, "ranking_metrics: ks") for k in ks}))
    if not ks:
        raise MlnbError("ranking_metrics: ks is empty; give the cut-offs k, e.g. (1, 3, 5)")
    kmax = ks[-1]
    T = _rankings(top_categories, n, K, kmax)
    inverse = None
    if propensity is not None:
        p = np.asarray(propensity, dtype=np.float64)
        if p.shape != (K,):
            raise MlnbError(f"ranking_metrics: propensity must hold one value per category ({K}), got shape {p.shape}")
        if not (np.all(np.isfinite(p)) and np.all(p > 0)):
            raise MlnbError("ranking_metrics: propensity must be finite and > 0 (see propensities())")
        inverse = 1.0 / p

    correct = ranked_hits(Y, T)  # y_(i): is the i-th ranked category a positive?

    n_true = np.diff(Y.indptr)
    discount = 1.0 / np.log2(np.arange(2, kmax + 2))
    ideal = np.concatenate([[0.0], np.cumsum(discount)])  # ideal[j] = Σ_{i ≤ j} 1/log2(i + 1)
    hits = np.cumsum(correct, axis=1)
    gain = np.cumsum(correct * discount, axis=1)
    has_true = n_true > 0
    per_document = {}
    if inverse is not None:
        weighted = np.where(correct, inverse[np.maximum(T, 0)], 0.0)
        weighted_cum = np.cumsum(weighted, axis=1)
        weighted_gain = np.cumsum(weighted * discount, axis=1)
        best = _best_weights(Y, inverse, kmax)
        best_cum = np.cumsum(best, axis=1)
        best_gain = np.cumsum(best * discount, axis=1)
    for k in ks:
        idcg = ideal[np.minimum(k, n_true)]
        safe = np.where(has_true, idcg, 1.0)
        per_document[f"P@{k}"] = hits[:, k - 1] / k
        per_document[f"R@{k}"] = np.where(has_true, hits[:, k - 1] / np.maximum(n_true, 1), 0.0)
        per_document[f"nDCG@{k}"] = np.where(has_true, gain[:, k - 1] / safe, 0.0)
        if inverse is not None:
            per_document[f"PSP@{k} raw"] = weighted_cum[:, k - 1] / k
            per_document[f"PSP@{k} best"] = best_cum[:, k - 1] / k
            per_document[f"PSnDCG@{k} raw"] = np.where(has_true, weighted_gain[:, k - 1] / safe, 0.0)
            per_document[f"PSnDCG@{k} best"] = np.where(has_true, best_gain[:, k - 1] / safe, 0.0)
    result = RankingAtK(ks=ks, per_document=per_document, means={}, top_categories=T, correct=correct,
                        labels=Y, propensity_scored=inverse is not None)
    plan = _metric_plan(result)
    values = _estimates(result, plan)
    result.means.update({name: float(v) for (name, _, _), v in zip(plan, values)})
    return result


def _best_weights(Y: sp.csr_matrix, inverse: np.ndarray, kmax: int) -> np.ndarray:
    """(n, kmax): each document's inverse propensities of its true categories, descending, 0-padded."""
    n = Y.shape[0]
    rows = np.repeat(np.arange(n), np.diff(Y.indptr))
    w = inverse[Y.indices]
    order = np.lexsort((-w, rows))
    position = np.arange(order.size) - Y.indptr[rows[order]]
    keep = position < kmax
    best = np.zeros((n, kmax))
    best[rows[order][keep], position[keep]] = w[order][keep]
    return best


# --------------------------------------------------------------------------------- intervals, comparisons

@dataclass(frozen=True)
class MetricInterval:
    """A metric, its percentile bootstrap interval at ``level``."""

    estimate: float
    low: float
    high: float
    level: float


@dataclass(frozen=True)
class PairedDifference:
    """metric_a − metric_b, the percentile interval of the paired bootstrap differences, and the
    two-sided p-value of the paired randomisation (sign-flip) test (module docstring)."""

    estimate: float
    low: float
    high: float
    level: float
    p_value: float


def _bootstrap_arguments(n_boot, level) -> tuple[int, float]:
    n_boot = _positive_int(n_boot, "n_boot")
    if n_boot < MIN_BOOTSTRAP:
        raise MlnbError(f"n_boot = {n_boot}: a percentile interval needs at least {MIN_BOOTSTRAP} resamples")
    return n_boot, _level(level)


def _percentiles(replicates: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Columnwise (1 − level)/2 and (1 + level)/2 quantiles, NaN replicates ignored (all NaN: NaN)."""
    low = np.full(replicates.shape[1], np.nan)
    high = np.full(replicates.shape[1], np.nan)
    for j in range(replicates.shape[1]):
        column = replicates[:, j][~np.isnan(replicates[:, j])]
        if column.size:
            low[j], high[j] = np.quantile(column, [(1 - level) / 2, (1 + level) / 2])
    return low, high


def _blocks(rows, size: int = RESAMPLE_BLOCK):
    """The arrays of ``rows`` (an iterator) stacked ``size`` at a time."""
    block = []
    for row in rows:
        block.append(row)
        if len(block) == size:
            yield np.stack(block)
            block = []
    if block:
        yield np.stack(block)


def _replicates(results: list[RankingAtK], plan, n_boot: int, seed: int) -> list[np.ndarray]:
    """(n_boot, len(plan)) replicates of each result on the same resamples: documents for the means
    and ratios, the categories with a test positive for coverage (module docstring)."""
    n = results[0].n_documents
    matrices = [_document_matrix(r) for r in results]
    out = [np.empty((n_boot, len(plan))) for _ in results]
    counts = (np.bincount(idx, minlength=n) for idx in bootstrap_indices(n, n_boot, seed))
    start = 0
    for weights in _blocks(counts):
        weights = weights.astype(np.float64)
        totals = weights.sum(axis=1)
        for (columns, matrix), o in zip(matrices, out):
            o[start:start + weights.shape[0]] = _plan_values(plan, columns, weights @ matrix, totals)
        start += weights.shape[0]
    coverage = [j for j, (_, kind, _) in enumerate(plan) if kind == "coverage"]
    covered = [np.column_stack([_covered(r, plan[j][2][0]) for j in coverage]).astype(np.float64) for r in results]
    n_categories = covered[0].shape[0]
    if n_categories == 0:
        for o in out:
            o[:, coverage] = np.nan
        return out
    for b, idx in enumerate(bootstrap_indices(n_categories, n_boot, [seed, COVERAGE_STREAM])):
        for o, c in zip(out, covered):
            o[b, coverage] = c[idx].mean(axis=0)
    return out


def bootstrap_intervals_at_k(result: RankingAtK, n_boot: int = 200, level: float = 0.95,
                             seed: int = 0) -> dict[str, MetricInterval]:
    """{metric: MetricInterval} for every metric of ``result.means``: percentile intervals over
    ``n_boot`` resamples of the documents (``bootstrap_indices(n, n_boot, seed)``; module docstring)."""
    n_boot, level = _bootstrap_arguments(n_boot, level)
    plan = _metric_plan(result)
    if result.n_documents == 0:
        return {name: MetricInterval(float("nan"), float("nan"), float("nan"), level) for name, _, _ in plan}
    (replicates,) = _replicates([result], plan, n_boot, seed)
    low, high = _percentiles(replicates, level)
    return {name: MetricInterval(result.means[name], float(lo), float(hi), level)
            for (name, _, _), lo, hi in zip(plan, low, high)}


def _same_test_set(a: RankingAtK, b: RankingAtK) -> None:
    la, lb = a.labels, b.labels
    same = (la.shape == lb.shape and np.array_equal(la.indptr, lb.indptr) and np.array_equal(la.indices, lb.indices))
    if not same:
        raise MlnbError("paired_differences_at_k: the two results were measured on different test labels; "
                        "a paired comparison needs the same documents and categories")
    if a.ks != b.ks or a.propensity_scored != b.propensity_scored:
        raise MlnbError(f"paired_differences_at_k: the two results differ in ks ({a.ks} / {b.ks}) or in "
                        "propensity scoring; measure both with the same arguments")
    for name, values in a.per_document.items():
        if name.endswith(" best") and not np.array_equal(values, b.per_document[name]):
            raise MlnbError("paired_differences_at_k: the two results were scored with different propensities")


def _flip_p_values(a: RankingAtK, b: RankingAtK, plan, n_flips: int, seed: int) -> np.ndarray:
    """Two-sided p-values of the paired randomisation test (module docstring), one per metric of plan."""
    n = a.n_documents
    columns, matrix_a = _document_matrix(a)
    differences = matrix_a - _document_matrix(b)[1]
    denominators = matrix_a.sum(axis=0)
    categories = np.union1d(a.top_categories[a.correct], b.top_categories[b.correct])
    hits = {args[0]: (_hits(a, args[0], categories), _hits(b, args[0], categories))
            for _, kind, args in plan if kind == "coverage"}

    def statistics(kept: np.ndarray) -> np.ndarray:
        """(rows, len(plan)) metric_a* − metric_b* with each row's documents not ``kept`` swapped
        (ratios over Σ best; coverage as a difference of covered counts)."""
        signed = (2.0 * kept - 1.0) @ differences
        kept_columns = np.ascontiguousarray(kept.T)  # (n, rows), as scipy's sparse × dense product reads it
        swapped_columns = 1.0 - kept_columns
        out = np.full((kept.shape[0], len(plan)), np.nan)
        for j, (_, kind, args) in enumerate(plan):
            if kind == "mean":
                out[:, j] = signed[:, columns[args[0]]] / n
            elif kind == "ratio" and denominators[columns[args[1]]] > 0:
                out[:, j] = signed[:, columns[args[0]]] / denominators[columns[args[1]]]
            elif kind == "coverage":
                hits_a, hits_b = hits[args[0]]
                covered_a = np.count_nonzero(hits_a @ kept_columns + hits_b @ swapped_columns, axis=0)
                covered_b = np.count_nonzero(hits_b @ kept_columns + hits_a @ swapped_columns, axis=0)
                out[:, j] = covered_a - covered_b
        return out

    observed = np.abs(statistics(np.ones((1, n)))[0])
    exact = np.array([kind == "coverage" for _, kind, _ in plan])
    tolerance = np.where(exact, 0.0, FLIP_TIE_TOLERANCE * observed)
    at_least = np.zeros(len(plan))
    rng = np.random.default_rng([seed, FLIP_STREAM])
    for kept in _blocks(rng.random(n) >= 0.5 for _ in range(n_flips)):
        at_least += np.sum(np.abs(statistics(kept.astype(np.float64))) >= observed - tolerance, axis=0)
    p = (1.0 + at_least) / (1.0 + n_flips)
    p[np.isnan(observed)] = np.nan
    if a.labels.nnz == 0:
        p[exact] = np.nan
    return p


def paired_differences_at_k(result_a: RankingAtK, result_b: RankingAtK, n_boot: int = 200,
                            level: float = 0.95, seed: int = 0, n_flips: int = 1000) -> dict[str, PairedDifference]:
    """{metric: PairedDifference} of model a minus model b on the same test set: the percentile
    interval of the differences of their replicates on the same resamples
    (``bootstrap_indices(n, n_boot, seed)``) and the two-sided p-value of ``n_flips`` random
    swaps of the two models' rankings per document (module docstring)."""
    n_boot, level = _bootstrap_arguments(n_boot, level)
    n_flips = _positive_int(n_flips, "n_flips")
    _same_test_set(result_a, result_b)
    plan = _metric_plan(result_a)
    if result_a.n_documents == 0:
        nan = float("nan")
        return {name: PairedDifference(nan, nan, nan, level, nan) for name, _, _ in plan}
    replicates_a, replicates_b = _replicates([result_a, result_b], plan, n_boot, seed)
    low, high = _percentiles(replicates_a - replicates_b, level)
    p = _flip_p_values(result_a, result_b, plan, n_flips, seed)
    return {name: PairedDifference(result_a.means[name] - result_b.means[name], float(lo), float(hi), level,
                                   float(pv))
            for (name, _, _), lo, hi, pv in zip(plan, low, high, p)}
