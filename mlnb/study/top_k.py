r"""Each evaluation document's k best categories, kept while scoring: the ``TopKScores`` store (engine.scores =
"top_k"), for label spaces where n × K scores do not fit.

**Ranking a block.** The evaluation documents are scored a block of b rows at a time (b · K · 12 bytes within
``mlnb.budget.SCORING_BLOCK_BYTES``, ``block_rows``); each block's scores S (b × K, float32) are those the
evaluation reads — the untrainable categories by their training prior under eval.untrainable = 'prior' or
'keep' (``scored_by_prior``) — and each document keeps

    categories[d] = argsort(−S[d], stable)[:k],   values[d, i] = S[d, categories[d, i]]

(``top_k_of_scores``: equal scores lower category first; k > K padded with category −1 and −inf), then the
block is dropped: memory n × k, never n × K. A model whose kind ranks without forming a block's scores
(``ModelKind.ranks_top_k``: its estimator's ``top_k(X, k)``) ranks itself, where its own scores of the
untrainable categories are already those of the by-prior rule (``ranks_by_itself``); both give the same
categories and values. Documents stay in their order (ids ascending within a file, files in order; streamed
and on Dask, each partition's block of rows concatenated in partition order): the order of the other stores.

**What it evaluates** (``evaluate_rankings``). The ranking metrics at k (P@k, R@k, nDCG@k, PSP@k, PSnDCG@k,
coverage@k, their bootstrap intervals and paired comparisons) read the rankings (``top_k``). The decisions are
RCut's, each document's r best categories (eval.decision = 'rcut', r = eval.rcut_k ≤ k; eval.decision = 'auto'
stands for r = eval.ranking_k here: ``mlnb.config.with_decision_resolved``), so each category's counts are exact:

    predicted_l = #{d : l ∈ top_r(d)},   tp_l = #{d : l ∈ top_r(d) ∩ y_d},   fp_l = predicted_l − tp_l,
    fn_l = n_pos_l − tp_l

and precision, recall, F1 and their micro and macro averages follow as in any evaluation
(``mlnb.metrics.evaluation.assemble_evaluation``). The summary's precision_at_k (eval.top_k = t) is the mean of
|top_t(d) ∩ y_d| / t over the pooled categories where each ranking holds t of them (``pooled_precision_at_k``),
else NaN. What needs every score — AUC, ROC and lift curves, average precision, log loss, Brier, calibration,
the bootstrap intervals of the summary metrics, DeLong tests — is NaN or absent, and ``describe`` says so in
one sentence (``not_computed_sentence``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from mlnb.budget import SCORING_BLOCK_BYTES
from mlnb.metrics.at_k import label_matrix, ranked_hits, top_k_of_scores
from mlnb.metrics.evaluation import CALIBRATION_BINS, POOLED_KEYS, assemble_evaluation, caller_exclusions

#: bytes per score of one scoring block: the float32 scores and the temporaries of ranking them
BLOCK_BYTES_PER_SCORE = 12


def block_rows(n_categories: int) -> int:
    """b = max(1, SCORING_BLOCK_BYTES // (12 · K)): documents scored (b × K scores) and ranked at a time."""
    return max(1, SCORING_BLOCK_BYTES // (BLOCK_BYTES_PER_SCORE * max(n_categories, 1)))


def index_dtype(n_categories: int):
    """int32 categories where K fits (half the memory of int64), else int64."""
    return np.int32 if n_categories < 2**31 else np.int64


def ranks_by_itself(model, ranks_top_k: bool, untrainable: np.ndarray, prior: np.ndarray | None) -> bool:
    """Whether ``model`` ranks itself (its kind's ``ranks_top_k``) to the same rankings as its scores under the
    by-prior rule: no category is replaced (``prior`` None or no untrainable category), or the model says it
    scores its untrainable categories by their prior whatever the words (``untrainable_scored_by_prior_``), the
    study's untrainable categories are among its own, and its float32 scores of them (those of an empty
    document) are ``prior``'s. Otherwise its scores are formed a block at a time and replaced."""
    if not ranks_top_k:
        return False
    if prior is None or not untrainable.size:
        return True
    if not getattr(model, "untrainable_scored_by_prior_", False):
        return False
    if not np.isin(untrainable, np.asarray(model.untrainable_categories_)).all():
        return False
    empty = sp.csr_matrix((1, model.n_features_in_), dtype=np.float32)
    return bool(np.array_equal(np.asarray(model.decision_function(empty))[0, untrainable],
                               prior[untrainable].astype(np.float32)))


def rank_block(model, X, k: int, n_categories: int, *, by_itself: bool, prior: np.ndarray | None,
               untrainable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(categories (m, k) ``index_dtype``, values (m, k) float32) of the k best categories of each row of ``X``,
    best first, equal scores lower category first, padded with -1 / -inf beyond K (module docstring)."""
    if by_itself:
        kept = min(k, n_categories)
        best, values = model.top_k(X, kept)
        if kept < k:
            best = np.pad(best, ((0, 0), (0, k - kept)), constant_values=-1)
            values = np.pad(values, ((0, 0), (0, k - kept)), constant_values=-np.inf)
    else:
        scores = model.decision_function(X)  # (m, K), a block of rows
        if prior is not None and untrainable.size:
            scores[:, untrainable] = prior[untrainable]
        best, values = top_k_of_scores(scores, k)
        del scores
    return best.astype(index_dtype(n_categories), copy=False), np.asarray(values, dtype=np.float32)


def rank_rows(model, X, k: int, n_categories: int, **how) -> tuple[np.ndarray, np.ndarray]:
    """``rank_block`` of ``X`` a block of ``block_rows(K)`` rows at a time, the blocks' rows in order."""
    rows, n = block_rows(n_categories), X.shape[0]
    if n <= rows:
        return rank_block(model, X, k, n_categories, **how)
    parts = [rank_block(model, X[start:start + rows], k, n_categories, **how) for start in range(0, n, rows)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def rcut_counts(Y, rankings: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
    """(predicted (K,), tp (K,)) int64 of RCut at r: predicted_l = #{d : l ∈ top_r(d)}, tp_l = #{d : l ∈
    top_r(d) ∩ y_d}, from each document's ranked categories (n, ≥ r; -1 for none)."""
    Y = label_matrix(Y)
    K = Y.shape[1]
    T = np.asarray(rankings)[:, :r]
    correct = ranked_hits(Y, T)
    predicted = np.bincount(T[T >= 0].astype(np.int64), minlength=K).astype(np.int64)
    tp = np.bincount(T[correct].astype(np.int64), minlength=K).astype(np.int64)
    return predicted, tp


def pooled_precision_at_k(Y, rankings: np.ndarray, pooled: np.ndarray, t: int) -> float:
    """The summary's precision_at_k, (1/(n·t)) Σ_d |top_t(d) ∩ y_d| over the ``pooled`` categories, from the
    rankings of every category: a document's t best pooled categories are the first t pooled ones of its ranking
    (the order among them is kept), known when its ranking holds t of them or every category; NaN otherwise."""
    n, K = Y.shape
    T = np.asarray(rankings)
    if not n or not pooled.any():
        return float("nan")
    kept = (T >= 0) & pooled[np.maximum(T, 0)]
    taken = kept & (np.cumsum(kept, axis=1) <= t)
    if T.shape[1] < K and (taken.sum(axis=1) < t).any():  # some document's t best pooled are not all kept
        return float("nan")
    return float((ranked_hits(Y, T) & taken).sum() / (n * t))


def evaluate_rankings(Y, rankings: np.ndarray, category_names, *, rcut_k: int, top_k: int, exclude=None,
                      train_prevalence=None) -> object:
    """The ``Evaluation`` of RCut at ``rcut_k`` from each document's ranked categories (module docstring): exact
    per-category counts, precision, recall, F1 and their averages; NaN where every score is needed (AUC,
    average precision, log loss, Brier, expected accuracy; no ROC grid, no curve, an empty calibration table).
    ``exclude``: categories left out of every average and pool (eval.untrainable = 'exclude')."""
    Y = label_matrix(Y)
    n, K = Y.shape
    rankings = np.asarray(rankings)
    predicted, tp = rcut_counts(Y, rankings, rcut_k)
    reasons = caller_exclusions(exclude, K)
    pooled = np.ones(K, dtype=bool)
    pooled[list(reasons)] = False
    n_pos = np.bincount(Y.indices, minlength=K).astype(np.float64)
    nan = np.full(K, np.nan)
    sums = {"positives": n_pos, "expected": nan, "log_loss": nan, "brier": nan}
    no_grid = np.empty(0)
    ranked = [(np.nan, no_grid, no_grid, None, np.nan)] * K
    labels_per_document = np.bincount(np.repeat(np.arange(n), np.diff(Y.indptr)), weights=pooled[Y.indices],
                                      minlength=n).astype(np.int64)  # each document's labels among the pooled
    precision_at_k = pooled_precision_at_k(Y, rankings, pooled, top_k)
    q = None if train_prevalence is None else np.asarray(train_prevalence, dtype=np.float64)
    names = list(category_names) if category_names is not None else [str(k) for k in range(K)]
    pooled_metrics = dict.fromkeys(POOLED_KEYS, float("nan")) | {"precision_at_k": precision_at_k}
    return assemble_evaluation(n, names, sums, (predicted, tp), ranked, set(), no_grid,
                               np.zeros((3, CALIBRATION_BINS)), pooled_metrics, reasons, pooled, q,
                               labels_per_document, int(top_k))


#: the summary and per-category metrics ``evaluate_rankings`` computes (exact, from the rankings); every other
#: metric is NaN: what a sweep over a top-k study can be decided by
SUMMARY_METRICS_KEPT = ("macro_f1", "micro_f1", "mean_accuracy", "precision_at_k")
PER_CATEGORY_METRICS_KEPT = ("accuracy", "f1")


def metrics_kept(config, per_category: bool = False) -> tuple | None:
    """The metrics a study of ``config`` measures when its store keeps each document's k best categories only
    (``PER_CATEGORY_METRICS_KEPT`` or ``SUMMARY_METRICS_KEPT``); None when its store keeps every score."""
    if config.engine.scores != "top_k":
        return None
    return PER_CATEGORY_METRICS_KEPT if per_category else SUMMARY_METRICS_KEPT


def not_computed_sentence(k: int, n_categories: int, rcut_k: int) -> str:
    """What a study with each document's k best of K categories leaves out, and why, in one sentence."""
    return (f"AUC, ROC and lift curves, average precision, log loss, Brier score, calibration, the bootstrap "
            f"intervals of the summary metrics, DeLong tests and the scores file for `mlnb compare` need every score "
            f"of the {n_categories:,} categories, and engine.scores = 'top_k' keeps each test document's {k} best "
            f"(eval.ranking_k = {k}); precision, recall and F1 are those of RCut at {rcut_k} (each document's "
            f"{rcut_k} best categories decided)")


@dataclass(eq=False)
class TopKScores:
    """Every model's k best categories of each evaluation document (``categories`` name -> (n, k), ``values``
    name -> (n, k) float32), the labels ``Y`` (CSR) and the ids: the ``ScoreStore`` of engine.scores = "top_k"."""

    n_documents: int
    Y: sp.csr_matrix  # (n, K) 0/1
    k: int  # eval.ranking_k: the categories kept per document
    ids: np.ndarray | None = None
    categories: dict = field(default_factory=dict)  # name -> (n, k) int32 (int64 beyond 2^31 categories)
    values: dict = field(default_factory=dict)  # name -> (n, k) float32, the scores of those categories
    seconds: dict = field(default_factory=dict)  # name -> scoring seconds
    rcut_k: dict = field(default_factory=dict)  # name -> r of the RCut its evaluation decided by

    @property
    def n_categories(self) -> int:
        return self.Y.shape[1]

    @property
    def labels(self) -> sp.csr_matrix:
        return self.Y

    @property
    def labels_kept(self) -> None:
        """None: no run keeps n × K scores (nor a scores file for `mlnb compare`)."""
        return None

    def describe(self) -> dict:
        r = max(self.rcut_k.values(), default=self.k)
        return {"scores": f"as each document's {self.k} best of {self.n_categories:,} categories "
                          "(engine.scores = 'top_k')",
                "not_computed": not_computed_sentence(self.k, self.n_categories, r)}

    def evaluate(self, name: str, config, *, decision, calibration, untrainable: np.ndarray, by_prior,
                 prevalence: np.ndarray, category_names, curve_categories) -> dict:
        """``evaluate_rankings`` of the model's rankings, decided by RCut at the rule's r (≤ k; the config
        refuses any other rule and any calibration with engine.scores = 'top_k')."""
        ev = config.eval
        r = min(decision.rcut_k if decision is not None and decision.rule == "rcut" else self.k, self.k)
        self.rcut_k[name] = r
        evaluation = evaluate_rankings(self.Y, self.categories[name], category_names, rcut_k=r, top_k=ev.top_k,
                                       exclude=untrainable if ev.untrainable == "exclude" else None,
                                       train_prevalence=prevalence)
        return {"evaluation": evaluation}

    def intervals(self, run, config, excluded) -> tuple[dict, None]:
        """None of the summary metrics nor of the AUCs: they need every score (``describe``)."""
        return {}, None

    def compare(self, a, b, config, category_names, train_positives, excluded) -> None:
        """None: DeLong tests need every score; the paired comparisons at k are the rankings' (``rank_models``)."""
        return None

    def top_k(self, runs, k: int) -> tuple:
        """Each run's kept rankings, cut at k (≤ the k kept)."""
        if k > self.k:
            raise ValueError(f"top_k: {k} categories asked of rankings that keep {self.k}")
        return self.Y, {run.name: self.categories[run.name][:, :k] for run in runs}

    def close(self) -> None:
        """Nothing on disk."""
