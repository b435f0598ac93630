r"""The ranking metrics at k of a multilabel study's models (``mlnb.metrics.at_k``), from their test scores
wherever the study holds them.

**Cut-offs.** ``eval.ranking_k = k`` ranks each test document's k best categories and measures them at
ks = sorted({1, 3, k} ∩ [1, k]) (``ranking_cutoffs``): P@j, R@j, nDCG@j, coverage@j and, with propensities,
PSP@j and PSnDCG@j (normalised, the headline, and raw).

**Scores in memory** (n × K per model): ``top_k_of_scores`` ranks them in blocks of rows.

**Scores spilled to disk** (``ScoreSpill``, category-major: each category's n scores contiguous):
``top_k_of_spill`` reads them the way the spill is laid out, a block of c whole categories at a time
(c · n scores, at most ``SPILL_BLOCK_BYTES``), and keeps each document's k best so far, (n, k) — what the
answer itself is. A block only touches the documents for which one of its scores beats the document's
current k-th best (or which hold fewer than k categories yet); for those, the block's own k best
(``top_k_of_scores``) are merged with the k best so far by

    order = lexsort(padding, −score) over [the k best so far, the block's k best]

which keeps, among equal scores, the earlier positions first: the k best so far (lower categories, in
category order among equal scores) before the block's (higher categories, in category order). So the result is exactly
``top_k_of_scores`` of the whole matrix, ``np.argsort(-S, axis=1, kind="stable")[:, :k]``, equal scores
lower category first, with -1 / -inf padding when k > K. Reading blocks of documents instead would read,
for each block, a short piece of every one of the K rows of the file (K seeks a block, a page or more read
for each piece), the file many times over when K is large; a pass over whole categories reads it once, in
order, as the per-category evaluation does. Keeping the k best while the chunks are scored (row-major then)
would save that pass, but needs the scoring task to know k; the pass is one sequential read of the file.

**Propensities** (``propensities_from_counts``): those of ``at_k.propensities`` from the training counts a
streamed study has instead of its label matrix — N training documents, N_l positives of category l:

    p_l = 1 / (1 + C · exp(−A · ln(N_l + B))),   C = (ln N − 1) · (B + 1)^A

(``eval.propensity_a`` = A, ``eval.propensity_b`` = B; none below 3 training documents, where ln N ≤ 1).

**Intervals and comparisons** (``rank_models``): ``bootstrap_intervals_at_k`` of each model on the study's
resamples (``eval.bootstrap``, ``eval.confidence``, the study's seed), and ``paired_differences_at_k`` of
the model with the highest P@1 (the first of equal ones, in the config's order) minus each other model,
with the p-value of ``RANKING_FLIPS`` random swaps.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mlnb.errors import MlnbError
from mlnb.metrics.at_k import (bootstrap_intervals_at_k, paired_differences_at_k, ranking_metrics,
                               top_k_of_scores)

__all__ = ["RANKING_FLIPS", "SPILL_BLOCK_BYTES", "headline_metrics", "propensities_from_counts", "rank_models",
           "ranking_cutoffs", "spill_labels", "top_k_of_spill"]

#: bytes of spilled scores (whole categories) read and merged at a time by ``top_k_of_spill``
SPILL_BLOCK_BYTES = 32 << 20
#: random swaps of the two models' rankings per document behind a comparison's p-value
RANKING_FLIPS = 1000
#: fewest training documents for which the propensities are defined (ln N > 1)
MIN_PROPENSITY_DOCUMENTS = 3


def ranking_cutoffs(k: int) -> tuple[int, ...]:
    """sorted({1, 3, k} ∩ [1, k]): the cut-offs measured for ``eval.ranking_k = k`` (none for k = 0)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise MlnbError(f"eval.ranking_k: expected a non-negative integer, got {k!r}")
    return tuple(sorted(j for j in {1, 3, int(k)} if 1 <= j <= k))


def headline_metrics(k: int, propensity_scored: bool = True) -> list[str]:
    """The metrics a report shows for ``eval.ranking_k = k``: P@j for every cut-off j, then R@k, nDCG@k,
    PSP@k, PSnDCG@k (when propensity-scored) and coverage@k."""
    ks = ranking_cutoffs(k)
    if not ks:
        return []
    top = ks[-1]
    return ([f"P@{j}" for j in ks] + [f"R@{top}", f"nDCG@{top}"]
            + ([f"PSP@{top}", f"PSnDCG@{top}"] if propensity_scored else []) + [f"coverage@{top}"])


def propensities_from_counts(positives, n_documents: int, A: float = 0.55, B: float = 1.5) -> np.ndarray | None:
    """(K,) p_l = 1 / (1 + C · exp(−A · ln(N_l + B))), C = (ln N − 1) · (B + 1)^A, from the training positives
    N_l (``positives``) of N = ``n_documents`` training documents; None when N < 3 (ln N ≤ 1)."""
    N_l = np.asarray(positives, dtype=np.float64).ravel()
    if n_documents < MIN_PROPENSITY_DOCUMENTS:
        return None
    if not (A > 0 and B > 0):
        raise MlnbError(f"propensities: A and B must be > 0 (eval.propensity_a, eval.propensity_b), got {A!r}, {B!r}")
    C = (np.log(n_documents) - 1.0) * (B + 1.0) ** A
    return 1.0 / (1.0 + C * np.exp(-A * np.log(N_l + B)))


def top_k_of_spill(spill, k: int, block_bytes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(categories (n, k) int64, values (n, k)) of the k best categories of each document of a closed
    ``ScoreSpill``, best first, equal scores lower category first, padded with -1 / -inf when k > K:
    ``top_k_of_scores`` of its n × K scores, read a block of whole categories at a time, at most ``block_bytes``
    of scores (default ``SPILL_BLOCK_BYTES``; module docstring)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise MlnbError(f"top_k_of_spill: k must be a positive integer, got {k!r}")
    block_bytes = SPILL_BLOCK_BYTES if block_bytes is None else block_bytes
    n, K, dtype = spill.n_documents, spill.n_categories, spill.dtype
    kept = min(int(k), K)
    best_values = np.full((n, kept), -np.inf, dtype=dtype)
    best_categories = np.full((n, kept), -1, dtype=np.int64)
    per_block = max(1, int(block_bytes) // max(1, n * dtype.itemsize))
    for first in range(0, K if n else 0, per_block):
        stop = min(K, first + per_block)
        columns = np.empty((stop - first, n), dtype=dtype)
        for j, category in enumerate(range(first, stop)):
            columns[j] = spill.scores_column(category)
        # documents whose k best may change: one of the block's scores beats their k-th best, or they hold
        # fewer than k categories yet (a score equal to the k-th best loses: its category is higher)
        rows = np.flatnonzero((best_categories[:, -1] < 0) | (columns > best_values[:, -1]).any(axis=0))
        if rows.size == 0:
            continue
        # the block's own k best of those documents (equal scores: lower category first), then merged
        block_categories, block_values = top_k_of_scores(np.ascontiguousarray(columns[:, rows].T), kept)
        block_categories = np.where(block_categories >= 0, block_categories + first, -1)
        values = np.concatenate([best_values[rows], block_values[:, :kept]], axis=1)
        categories = np.concatenate([best_categories[rows], block_categories[:, :kept]], axis=1)
        order = np.lexsort((categories < 0, -values), axis=1)[:, :kept]
        best_values[rows] = np.take_along_axis(values, order, axis=1)
        best_categories[rows] = np.take_along_axis(categories, order, axis=1)
    if kept == k:
        return best_categories, best_values
    padded_categories = np.full((n, k), -1, dtype=np.int64)
    padded_values = np.full((n, k), -np.inf, dtype=dtype)
    padded_categories[:, :kept], padded_values[:, :kept] = best_categories, best_values
    return padded_categories, padded_values


def spill_labels(spill) -> sp.csr_matrix:
    """The (n × K) 0/1 test labels of a closed ``ScoreSpill``, CSR int8 (from its positives, category by category)."""
    n, K = spill.n_documents, spill.n_categories
    columns = [np.asarray(spill.positives(k)) for k in range(K)]
    rows = np.concatenate(columns) if columns else np.zeros(0, dtype=np.int64)
    categories = np.repeat(np.arange(K), [c.size for c in columns])
    Y = sp.csr_matrix((np.ones(rows.size, dtype=np.int8), (rows, categories)), shape=(n, K))
    Y.sort_indices()
    return Y


def _finite_or_none(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def rank_models(rankings: dict, Y_test, ks: tuple[int, ...], propensity=None, *, n_boot: int = 0,
                level: float = 0.95, seed: int = 0, compare: bool = True,
                n_flips: int = RANKING_FLIPS) -> tuple[dict, list[dict]]:
    """The ranking metrics of every model's rankings {name: (n, ≥ max ks) categories} against the test
    labels, and the comparisons of the best model by P@1 against each other one.

    Returns ({name: {"metrics": {metric: mean}, "intervals": {metric: [low, high]}}}, comparisons), each
    comparison {"a": best, "b": other, "level", "differences": {metric: {"difference", "low", "high",
    "p_value"}}} of metric_a − metric_b. Intervals only with ``n_boot`` ≥ 2 resamples; comparisons only
    with them, ``compare`` and two models or more.
    """
    results = {name: ranking_metrics(Y_test, top, ks=ks, propensity=propensity) for name, top in rankings.items()}
    per_model = {}
    for name, result in results.items():
        intervals = {}
        if n_boot:
            intervals = {metric: [_finite_or_none(i.low), _finite_or_none(i.high)]
                         for metric, i in bootstrap_intervals_at_k(result, n_boot=n_boot, level=level,
                                                                   seed=seed).items()}
        per_model[name] = {"metrics": dict(result.means), "intervals": intervals}
    comparisons = []
    if n_boot and compare and len(results) >= 2:
        first = ks[0]
        names = list(results)
        best = max(names, key=lambda name: (results[name].means[f"P@{first}"], -names.index(name)))
        for other in names:
            if other == best:
                continue
            differences = paired_differences_at_k(results[best], results[other], n_boot=n_boot, level=level,
                                                  seed=seed, n_flips=n_flips)
            comparisons.append({"a": best, "b": other, "level": level, "by": f"P@{first}",
                                "differences": {metric: {"difference": d.estimate, "low": d.low, "high": d.high,
                                                         "p_value": d.p_value}
                                                for metric, d in differences.items()}})
    return per_model, comparisons

