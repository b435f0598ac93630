r"""One model's scores against the truth: every metric for every category.

``evaluate`` is the single entry point the study uses. It works one category
at a time for the rank metrics — one sort of that category's scores gives its
exact ROC, AUC, average precision, ROC and gains grids — on every core, while
the threshold and probability metrics come from one pass over the score matrix
(``_pointwise``) and the example-based ranking metrics from one more
(``ranking.label_ranking_metrics``); the only full-size arrays are the inputs.

**Which scores feed which metric.** AUC, ROC, lift, average precision and the
example-based ranking metrics always rank by ``scores`` (the model's own
log-odds). The probability metrics (expected accuracy, log loss, Brier, the
calibration table) use ``probability_scores`` when given — calibrated
log-odds; isotonic calibration creates ties, so ranks never come from them —
else ``scores``. The decision metrics (tp/fp/fn/tn, accuracy, precision,
recall, F1) use ``decisions`` when given — an n × K 0/1 matrix of a decision
rule applied elsewhere — else ŷ = [scores ≥ logit(threshold)].

**Exclusions.** A category is *evaluable* when it has at least one positive
and one negative test document (AUC is undefined elsewhere) and the caller
has not excluded it (``exclude``: e.g. the untrainable categories, without a
training positive or negative). Macro averages are taken over the evaluable
categories only. Micro averages (and the example-based metrics) pool every
(document, category) pair except those of the caller's exclusions: categories
lacking test positives or negatives stay in the pools, as in scikit-learn's
micro averages. ``Evaluation.excluded`` lists all non-evaluable categories;
the ``excluded`` column of ``per_category`` gives each one's reason ("" for an
evaluable category, ``"no test positive or negative"``, or the caller's
reason, default ``"untrainable"``, which wins when both apply).

``precision_at_k`` is example-based: the mean over documents of the share of
their k highest-scored categories that are true labels,

    P@k = (1/n) Σ_i |true_i ∩ top_k(i)| / k

with ties among scores broken by category index (the lower index first), and
the division by k even where a document has fewer than k labels (or K < k).
The other example-based metrics (label ranking average precision, coverage
error, ranking loss) and average precision follow scikit-learn, ties included
(``ranking``).

**Baselines** (``Evaluation.baselines``), on the same test labels, with the
same exclusions and the same summary keys. With test prevalence π_k = n_pos/n,
the training prevalence q_k (``train_prevalence``; without it the test
prevalence, and ``summary["baseline_prevalence"]`` says which), K' the pooled
categories and n_i a document's labels among them:

* ``always_no``: every score equal (−∞), every decision no: tp = fp = 0, so
  precision = recall = F1 = 0 (the zero-division convention of ``evaluate``),
  accuracy = expected accuracy = 1 − π_k, Brier = π_k, log loss = +∞ (p = 0 for
  an event that happens), AUC = 0.5, AP = π_k (micro: the pooled prevalence);
  P@k = Σ_{first min(k, K') pooled categories} n_pos / (n k) (ties to the lower
  index), LRAP_i = n_i / K', coverage_i = K', ranking loss_i = 1 (the
  conventions for n_i ∈ {0, K'} as in ``ranking``). It is exactly what
  ``evaluate`` reports for scores of −∞ everywhere.
* ``prevalence_random``: decides yes independently with probability q_k,
  ranks at random (i.i.d. continuous scores) and predicts the constant
  probability q_k. Decision metrics from the expected counts
  E tp = q·n_pos, E fp = q·n_neg, E fn = (1 − q)·n_pos: precision = π_k,
  recall = q_k, F1 = 2 π_k q_k / (π_k + q_k), accuracy = π q + (1 − π)(1 − q)
  (exact expectations for accuracy and recall, and for precision given a yes;
  F1 is that of the expected counts); micro ones from the pooled expected counts.
  Probability metrics of p = q_k: expected accuracy as accuracy,
  Brier = π(1 − q)² + (1 − π) q², log loss = −π log q − (1 − π) log(1 − q).
  Rank metrics, exact expectations over random orders: AUC = 0.5,
  AP(n, P) = (1/n)[H_n + (P − 1)/(n − 1)·(n − H_n)] (H the harmonic numbers;
  micro: n·K' pairs, pooled P), P@k = mean n_i · min(k, K') / (K' k),
  LRAP_i = (1/K')[H_K' + (n_i − 1)/(K' − 1)·(K' − H_K')],
  coverage_i = n_i (K' + 1) / (n_i + 1), ranking loss_i = ½;
  ``n_no_positive_predictions`` = Σ_k (1 − q_k)^n over evaluable categories.
* ``prior``: the ranking of the ``prior_baseline`` model, every document scored by its category's
  training prior (b_k = log((N_k + ½)/(N̄_k + ½)), W = 0: an order by q_k): AUC = 0.5 in every
  category, but pooled over categories it ranks the frequent categories' pairs first, so its micro
  AUC is well above ½ wherever category frequencies differ: its micro AUC, micro AP and P@k are
  what a model's micro metrics must beat.
  Only its rank metrics (``_prior_ranking``); its decisions depend on the run's rule.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import digamma, xlogy

from mlnb import progress
from mlnb.errors import MlnbError
from mlnb.data.validate import check_labels, check_scores
from mlnb.metrics._inputs import binary_labels, score_array
from mlnb.metrics._pointwise import decision_counts, pointwise_sums
from mlnb.metrics.classification import logit
from mlnb.metrics.ranking import (HAVE_NUMBA, _positives_by_column, depth_lift, fpr_grid, label_ranking_metrics,
                                  rank_parts, roc_lift, worker_threads)
if HAVE_NUMBA:
    from mlnb.metrics.ranking import top_k_hits

CALIBRATION_BINS = 10
#: metrics where a smaller value is better (everything else: larger is better)
LOWER_IS_BETTER = ("log_loss", "brier", "mean_log_loss", "mean_brier", "coverage_error", "label_ranking_loss")
PER_CATEGORY_COLUMNS = ["category", "name", "n_pos", "n_neg", "prevalence", "auc", "average_precision",
                        "expected_accuracy", "accuracy", "precision", "recall", "f1",
                        "log_loss", "brier", "tp", "fp", "fn", "tn", "excluded", "included"]
#: reason of a category without a positive or without a negative test document
NO_TEST_POSITIVE_OR_NEGATIVE = "no test positive or negative"
#: reason of the categories passed to ``exclude`` as plain indices
UNTRAINABLE = "untrainable"
#: how ``evaluate`` treats untrainable categories (no training positive or negative), as a run's
#: ``eval.untrainable``: leave them out of every average and pool, score them by their training prior
#: (``prior_log_odds``), or keep them as the model scored them
UNTRAINABLE_RULES = ("exclude", "prior", "keep")
#: summary keys that do not come from the per-category table (``multiclass`` carries them over)
POOLED_KEYS = ("micro_auc", "micro_average_precision", "precision_at_k", "label_ranking_average_precision",
               "coverage_error", "label_ranking_loss")


@dataclass
class Evaluation:
    """Metrics of one model on one test set.

    per_category : DataFrame, one row per category (columns PER_CATEGORY_COLUMNS); ``excluded``
                   holds the reason a category is left out of the averages ("" if it is not), and
                   ``included`` is True exactly where it is "": the macro averages are the means of
                   the included rows (``per_category[per_category.included].auc.mean()`` = macro AUC)
    summary      : micro and macro averages (dict of floats and counts)
    grid         : x values of the curve grids (FPR for ROC, depth for gains)
    roc_tpr      : (K, G) TPR at each grid FPR (NaN rows for excluded categories)
    gains        : (K, G) share of positives in the top ``grid`` fraction
    curves       : exact rank curves, by category index, of the categories asked for
    excluded     : indices of the categories left out of the macro averages (no positive or no
                   negative test document, or excluded by the caller)
    calibration  : reliability table over all (document, category) pairs: for each bin of
                   predicted probability, its count, mean prediction and observed positive rate
    baselines    : {"always_no": {...}, "prevalence_random": {...}, "prior": {...}}, with the summary's
                   metric keys, for trivial classifiers on the same labels (module docstring)
    """

    per_category: pd.DataFrame
    summary: dict
    grid: np.ndarray
    roc_tpr: np.ndarray
    gains: np.ndarray
    curves: dict
    excluded: np.ndarray
    calibration: pd.DataFrame
    baselines: dict

    def __init_subclass__(cls, **kwargs):
        # the short repr below for subclasses too: @dataclass writes a __repr__ only where a class has none
        super().__init_subclass__(**kwargs)
        cls.__repr__ = Evaluation.__repr__

    #: the summary's headline metrics, as ``repr`` and the notebook table show them
    HEADLINE = (("macro_auc", "macro AUC"), ("micro_auc", "micro AUC"), ("macro_f1", "macro F1"),
                ("micro_f1", "micro F1"), ("macro_average_precision", "macro AP"),
                ("mean_log_loss", "mean log loss"))

    def __repr__(self) -> str:
        """One line: the test set's size, the categories averaged, the headline metrics."""
        s = self.summary
        metrics = ", ".join(f"{label} {s[key]:.4f}" for key, label in self.HEADLINE if key in s)
        return (f"<{type(self).__name__} of {self._n_documents()} documents × {s['n_categories']} categories "
                f"({s['n_evaluable']} averaged, {s['n_excluded']} excluded): {metrics}>")

    def _n_documents(self) -> int:
        table = self.per_category
        return int(table["n_pos"].iloc[0] + table["n_neg"].iloc[0]) if len(table) else 0

    def _repr_html_(self) -> str:
        """A notebook's view: the headline metrics, then the categories (the largest first, 10 of them)."""
        import html

        s = self.summary
        head = "".join(f"<th>{label}</th>" for key, label in self.HEADLINE if key in s)
        values = "".join(f"<td>{s[key]:.4f}</td>" for key, label in self.HEADLINE if key in s)
        shown = ["name", "n_pos", "auc", "average_precision", "f1", "log_loss", "excluded"]
        top = self.per_category.sort_values("n_pos", ascending=False, kind="stable").head(10)[shown]
        return (f"<div><p><b>{html.escape(type(self).__name__)}</b>: {self._n_documents()} documents × "
                f"{s['n_categories']} categories, {s['n_evaluable']} averaged, {s['n_excluded']} excluded</p>"
                f"<table><tr>{head}</tr><tr>{values}</tr></table>"
                f"<p>The {len(top)} largest categories of {len(self.per_category)} (all: <code>.per_category</code>)</p>"
                f"{top.to_html(index=False, float_format=lambda v: f'{v:.4f}')}</div>")

    @property
    def roc_lift(self) -> np.ndarray:
        return roc_lift(self.roc_tpr, self.grid)

    @property
    def depth_lift(self) -> np.ndarray:
        return depth_lift(self.gains, self.grid)

    @property
    def excluded_table(self) -> pd.DataFrame:
        """The excluded categories with their test counts and the reason."""
        return self.per_category.loc[self.excluded, ["category", "name", "n_pos", "n_neg", "excluded"]] \
            .rename(columns={"excluded": "reason"}).reset_index(drop=True)


#: at least this many negatives per sorted run of ``pooled_rank_metrics`` (below, one run)
POOLED_RUN_MIN = 1 << 20


def pooled_rank_metrics(Y_true, scores: np.ndarray, columns=None, n_threads: int | None = None) -> tuple[float, float]:
    """(micro AUC, micro average precision) over the (document, category) pairs of ``columns``
    (None: all) pooled, from the sorted negatives and the sorted positives:

        AUC = (1/PN) Σ_{positives x} [#negatives < x + ½ #negatives = x]
        AP  = (1/P)  Σ_{positives x} #positives ≥ x / #pairs ≥ x

    Scores and labels are checked first (``_inputs``): NaN refused, as by ``roc_auc``.

    The negatives (most of the n × K pairs: 16M for RCV1's test set) are sorted as up to
    ``n_threads`` runs at once (default: numba's thread count; numpy's sort lets other threads run),
    and each positive's count of negatives below it is the sum of its counts in the runs, a share of
    the positives per thread: whole numbers, so the same AUC and AP as one sorted array, bit for bit,
    with no memory beyond the one sort's.
    """
    scores = score_array(scores, "scores", ndim=2)
    Y_true = binary_labels(Y_true, "Y_true", shape=scores.shape)
    Y = (Y_true.toarray() if sp.issparse(Y_true) else np.asarray(Y_true)).astype(bool)
    if columns is None:
        negatives = scores[~Y]  # a copy, sorted in place below
        positives = scores[Y]
    else:
        pooled = np.zeros(Y.shape[1], dtype=bool)
        pooled[np.asarray(columns, dtype=np.int64)] = True
        negatives = scores[~Y & pooled]
        positives = scores[Y & pooled]
    if positives.size == 0:
        return float("nan"), float("nan")
    positives.sort()
    runs = np.array_split(negatives, max(1, min(worker_threads(n_threads), negatives.size // POOLED_RUN_MIN)))
    negatives_below = np.zeros(positives.size, dtype=np.int64)  # (P,)
    negatives_not_above = np.zeros(positives.size, dtype=np.int64)

    def count(share: slice) -> None:  # this share of the positives against every run
        for run in runs:
            negatives_below[share] += np.searchsorted(run, positives[share], side="left")
            negatives_not_above[share] += np.searchsorted(run, positives[share], side="right")

    step = -(-positives.size // len(runs))
    shares = [slice(start, start + step) for start in range(0, positives.size, step)]
    if len(runs) == 1:
        negatives.sort()
        count(slice(None))
    else:
        with ThreadPoolExecutor(max_workers=len(runs)) as pool:
            list(pool.map(np.ndarray.sort, runs))  # each run (a view of negatives) sorted in place
            list(pool.map(count, shares))
    positives_at_or_above = positives.size - np.searchsorted(positives, positives, side="left")
    precision = positives_at_or_above / (positives_at_or_above + negatives.size - negatives_below)
    ap = float(precision.sum() / positives.size)
    if negatives.size == 0:
        return float("nan"), ap
    auc = (negatives_below.sum(dtype=np.float64) + negatives_not_above.sum(dtype=np.float64)) / 2.0
    return float(auc / (positives.size * negatives.size)), ap


def micro_auc(Y_true, scores: np.ndarray) -> float:
    """AUC over all (document, category) pairs pooled: each positive counts the negatives
    scored below it, plus ½ per tie. Scores and labels are refused as by ``roc_auc`` (a NaN score,
    labels other than 0/1: one MlnbError line naming the argument)."""
    scores = score_array(scores, "micro_auc: scores", ndim=2)
    Y_true = binary_labels(Y_true, "micro_auc: Y_true", shape=scores.shape)
    return pooled_rank_metrics(Y_true, scores)[0]


PRECISION_BLOCK_ROWS = 8192  # rows per block of precision_at_k (bounds its temporaries)


def precision_at_k(Y_true, scores: np.ndarray, k: int, columns=None, n_threads: int | None = None) -> float:
    """Mean over documents of (true labels among the k highest scores) / k, ties to the lower index.

    columns : the categories ranked (None: all), in increasing order
    n_threads : blocks of documents ranked at once (default: numba's thread count)
    """
    scores = score_array(scores, "precision_at_k: scores", ndim=2)
    binary_labels(Y_true, "precision_at_k: Y_true", shape=scores.shape)
    n, K = scores.shape
    ranked = K if columns is None else np.asarray(columns).size
    if n == 0 or ranked == 0:
        return float("nan")
    return float(precision_hits(Y_true, scores, k, columns, n_threads) / (n * k))


def precision_hits(Y_true, scores: np.ndarray, k: int, columns=None, n_threads: int | None = 1) -> int:
    """Σ_i |true_i ∩ top_k(i)| (``precision_at_k`` times n·k): a sum, so chunks of documents add up.

    With numba, one compiled scan per row keeps the k best (``ranking.top_k_hits``); without, numpy's
    partition per block of rows. Blocks of documents are ranked by up to ``n_threads`` threads at once
    (None: numba's thread count; both let other threads run), each block 1/threads of
    ``PRECISION_BLOCK_ROWS`` rows, so that numpy's temporaries stay those of one thread's block; the
    hits are whole numbers, the same in any order."""
    n, K = scores.shape
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise MlnbError(f"precision_at_k: k must be a positive integer, got {k!r}")
    columns = np.arange(K) if columns is None else _ranked_columns(columns, K)
    K = columns.size
    if n == 0 or K == 0:
        return 0
    every = K == scores.shape[1]
    if HAVE_NUMBA and k < K and scores.dtype in (np.float32, np.float64) and scores.dtype.isnative:
        Y = sp.csr_matrix(Y_true, copy=True)  # canonical (no repeats, no zeros) for the kernel
        Y.sum_duplicates()
        Y.eliminate_zeros()
        S = np.ascontiguousarray(scores)

        def block_hits(start: int) -> int:
            return int(top_k_hits(S, Y.indptr, Y.indices, columns, int(k), start, min(n, start + rows)))
    else:
        Y = sp.csr_matrix(Y_true) if sp.issparse(Y_true) else np.asarray(Y_true)

        def block_hits(start: int) -> int:
            stop = min(n, start + rows)
            y = (Y[start:stop].toarray() if sp.issparse(Y) else Y[start:stop]) != 0  # (b, K)
            y = y if every else y[:, columns]
            if k >= K:
                return int(np.count_nonzero(y))
            s = np.asarray(scores[start:stop])  # (b, K)
            s = s if every else s[:, columns]
            kth = np.partition(s, K - k, axis=1)[:, K - k][:, None]  # (b, 1) k-th highest score
            above, tied = s > kth, s == kth
            room = k - np.count_nonzero(above, axis=1)  # (b,) ≥ 1 places left for the tied ones
            top = above | (tied & (np.cumsum(tied, axis=1) <= room[:, None]))  # first tied by index
            return int(np.count_nonzero(top & y))

    threads = max(1, min(worker_threads(n_threads), -(-n // 1024)))
    rows = max(1024, PRECISION_BLOCK_ROWS // threads) if threads > 1 else PRECISION_BLOCK_ROWS
    starts = range(0, n, rows)
    if threads == 1:
        return sum(block_hits(start) for start in starts)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return sum(pool.map(block_hits, starts))


def _ranked_columns(columns, K: int) -> np.ndarray:
    """``columns`` as int64 category indices, increasing, each in 0..K − 1; one MlnbError line otherwise
    (the compiled scan reads the scores at them unchecked)."""
    values = np.asarray(columns)
    if values.ndim != 1 or (values.size and values.dtype.kind not in "iu"):
        raise MlnbError(f"precision_at_k: columns must be a list of category indices, got {columns!r}")
    values = values.astype(np.int64)
    if values.size and (values[0] < 0 or values[-1] >= K or np.any(np.diff(values) <= 0)):
        raise MlnbError(f"precision_at_k: columns must be increasing category indices in 0..{K - 1}, got "
                        f"{values.tolist()[:10]}")
    return values


def caller_exclusions(exclude, K: int) -> dict[int, str]:
    """{category: reason} from ``exclude``: indices (reason ``UNTRAINABLE``) or a mapping to reasons."""
    if exclude is None:
        return {}
    items = exclude.items() if isinstance(exclude, dict) else ((k, UNTRAINABLE) for k in np.ravel(exclude))
    reasons = {}
    for k, reason in items:
        k = k.item() if isinstance(k, np.generic) else k
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k < K:
            raise MlnbError(f"exclude: categories must be indices 0..{K - 1}, got {k!r}")
        if not isinstance(reason, str) or not reason:
            raise MlnbError(f"exclude: the reason for category {k} must be a non-empty string, got {reason!r}")
        reasons[int(k)] = reason
    return reasons


def _untrainable_rule(Y_train, rule: str, scores: np.ndarray, exclude, train_prevalence):
    """(scores, exclude, train_prevalence) after a run's ``eval.untrainable`` rule for the categories
    without a positive or a negative in ``Y_train`` (``mlnb.study.loop`` does the same with the training counts)."""
    if rule not in UNTRAINABLE_RULES:
        raise MlnbError(f"untrainable must be one of {UNTRAINABLE_RULES}, got {rule!r}")
    if Y_train is None:
        return scores, exclude, train_prevalence
    K = scores.shape[1]
    Y_train = check_labels(Y_train, "Y_train")
    if Y_train.shape[1] != K:
        raise MlnbError(f"Y_train has {Y_train.shape[1]} categories, but scores have {K}")
    n_train = Y_train.shape[0]
    positives = np.bincount(Y_train.indices, minlength=K).astype(np.float64)  # (K,) N, from integer counts
    if train_prevalence is None:
        train_prevalence = positives / max(n_train, 1)
    untrainable = np.flatnonzero((positives == 0) | (positives == n_train))
    if rule == "exclude" and untrainable.size:
        reasons = caller_exclusions(exclude, K)
        exclude = {int(k): UNTRAINABLE for k in untrainable} | reasons  # the caller's reason wins
    elif rule == "prior" and untrainable.size:
        from mlnb.models._linear import prior_log_odds  # (models sit below metrics; imported when used)

        prior = prior_log_odds(positives, n_train).astype(np.float32)  # (K,), as a run's
        scores = scores.copy()
        scores[:, untrainable] = prior[untrainable]
    return scores, exclude, train_prevalence


def _prevalence(train_prevalence, K: int) -> np.ndarray | None:
    if train_prevalence is None:
        return None
    q = np.asarray(train_prevalence, dtype=np.float64)
    if q.shape != (K,):
        raise MlnbError(f"train_prevalence must have one value per category ({K}), got shape {q.shape}")
    if not np.all((q >= 0) & (q <= 1)):
        raise MlnbError("train_prevalence must hold values in [0, 1]")
    return q


def _score_matrix(values, shape, name: str) -> np.ndarray:
    if sp.issparse(values):
        raise MlnbError(f"{name} must be a dense n × K array, got a sparse matrix")
    if np.shape(values) != shape:
        raise MlnbError(f"{name} has shape {np.shape(values)} but scores has shape {shape}")
    return score_array(values, name)  # float32/float64 without NaN (``_inputs``)


def evaluate(Y_true, scores: np.ndarray, category_names=None, threshold: float = 0.5,
             roc_points: int = 101, curve_categories=None, top_k: int = 2,
             n_threads: int | None = None, *, decisions=None, probability_scores=None,
             exclude=None, train_prevalence=None, Y_train=None, untrainable: str = "exclude") -> Evaluation:
    """All metrics of decision ``scores`` (n × K log-odds) against ``Y_true`` (n × K, 0/1), one-vs-rest
    (the public ``mlnb.evaluate`` is ``mlnb.metrics.tasks.evaluate``, which also takes a ``task``).

    Given the training labels ``Y_train``, the categories without a training positive or negative
    are treated as a run treats them (``untrainable``, a run's ``eval.untrainable``), so that
    ``evaluate(Y_test, model.decision_function(X_test), names, Y_train=Y_train)`` gives a run's
    numbers on the same split: its rank and probability metrics, and its decision metrics where the run
    decided by ``eval.decision = "fixed"`` (a run's default rule, pcut, is ``decisions`` from
    ``mlnb.decision``).

    curve_categories : category indices whose exact ROC curves to keep (None: all)
    top_k : k of the summary's ``precision_at_k``
    n_threads : threads of its parts (default: numba's thread count, every core unless set); 1: the
                parts one after the other in the calling thread (numba's kernels take numba's count)
    decisions : (n × K) 0/1, sparse or dense: the decisions of a rule applied elsewhere, for the
                decision metrics instead of [scores ≥ logit(threshold)]
    probability_scores : (n × K) calibrated log-odds for the probability metrics (±inf allowed:
                         a probability of exactly 0 or 1); the rank metrics keep ``scores``
    exclude : categories to leave out of every average and pool: indices (reason "untrainable")
              or {index: reason}
    train_prevalence : (K,) training share of positives, for the ``prevalence_random`` baseline
                       (default: Y_train's, else the test prevalence)
    Y_train : (n_train × K) 0/1 training labels, sparse or dense: which categories are untrainable
              (no training positive or no negative), their training prior, and train_prevalence
    untrainable : one of ``UNTRAINABLE_RULES``, for the untrainable categories of ``Y_train``:
                  "exclude" them from every average and pool (a run's default), score them by their
                  training prior log((N + ½)/(n − N + ½)) in place of the model's scores ("prior"), or
                  "keep" them as scored. Without Y_train no category is known to be untrainable.
    """
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise MlnbError(f"top_k must be a positive integer, got {top_k!r}")
    Y_true = check_labels(Y_true, "Y_true")  # the one check of labels and scores, as everywhere they enter
    # then the metrics' own: float16 → float32, int64 only when exact in float64 (``_inputs``)
    scores = score_array(check_scores(scores, "scores", Y_true.shape), "scores")
    n, K = scores.shape
    if n == 0 or K == 0:
        raise MlnbError(f"Y_true and scores: nothing to evaluate ({n} documents × {K} categories)")
    scores, exclude, train_prevalence = _untrainable_rule(Y_train, untrainable, scores, exclude, train_prevalence)
    if probability_scores is not None:
        probability_scores = _score_matrix(probability_scores, scores.shape, "probability_scores")
    reasons = caller_exclusions(exclude, K)
    q = _prevalence(train_prevalence, K)
    names = list(category_names) if category_names is not None else [str(k) for k in range(K)]
    keep = set(range(K)) if curve_categories is None else set(curve_categories)
    pooled = np.ones(K, dtype=bool)
    pooled[list(reasons)] = False
    columns = None if pooled.all() else np.flatnonzero(pooled)
    positives_at, positives = _positives_by_column(Y_true, K)  # each category's documents, as CSC
    cut, grid = logit(threshold), fpr_grid(roc_points)

    def work(k: int):
        return rank_parts(scores, k, positives[positives_at[k]:positives_at[k + 1]], grid, k in keep)

    threads = worker_threads(n_threads)  # numba's count unless given: one setting for all
    if threads == 1:  # one thread: every part in this one, one after the other
        micro, micro_ap = pooled_rank_metrics(Y_true, scores, columns, 1)
        at_k = precision_at_k(Y_true, scores, int(top_k), columns, 1)
        sums, reliability = pointwise_sums(Y_true, scores, cut, CALIBRATION_BINS, probability_scores=probability_scores)
        example_ranking = label_ranking_metrics(Y_true, scores, columns)
        ranked = list(progress.track(map(work, range(K)), total=K, description="ROC / lift per category"))
    else:
        pool = ThreadPoolExecutor(max_workers=threads)
        try:
            # the pool is given the pooled ranks (the longest task) first, then precision@k and every
            # category's ranks, all at once; this thread meanwhile runs the parallel numba kernels one
            # after the other (a workqueue layer forbids concurrent ones): no core waits for the kernels
            # to end, and no category waits for them to start (measured by experiments/bench_threads.py)
            pooled_ranks = pool.submit(pooled_rank_metrics, Y_true, scores, columns, threads)
            pooled_precision = pool.submit(precision_at_k, Y_true, scores, int(top_k), columns, threads)
            per_category = [pool.submit(work, k) for k in range(K)]
            sums, reliability = pointwise_sums(Y_true, scores, cut, CALIBRATION_BINS,
                                               probability_scores=probability_scores)
            example_ranking = label_ranking_metrics(Y_true, scores, columns)
            ranked = list(progress.track((future.result() for future in per_category), total=K,
                                         description="ROC / lift per category"))
            (micro, micro_ap), at_k = pooled_ranks.result(), pooled_precision.result()
        finally:  # an error or an interrupt here: the categories not started are dropped, not run first
            pool.shutdown(wait=True, cancel_futures=True)
    decided = None if decisions is None else decision_counts(Y_true, decisions)
    pooled_metrics = {"micro_auc": micro, "micro_average_precision": micro_ap, "precision_at_k": at_k,
                      **example_ranking}
    return assemble_evaluation(n, names, sums, decided, ranked, keep, grid, reliability, pooled_metrics,
                               reasons, pooled, q, _labels_per_document(Y_true, pooled), int(top_k))


def assemble_evaluation(n: int, names: list, sums: dict, decided, ranked: list, keep: set, grid: np.ndarray,
                        reliability: np.ndarray, pooled_metrics: dict, reasons: dict, pooled: np.ndarray,
                        q: np.ndarray | None, labels_per_document: np.ndarray, top_k: int) -> Evaluation:
    """The ``Evaluation`` of computed parts (``evaluate`` and ``streaming.evaluate_spilled`` share it).

    sums : the (K,) pointwise sums of ``_pointwise.pointwise_sums``; decided : (predicted, tp) of
    given decisions, or None for [scores ≥ cut]; ranked : per category (AUC, ROC grid, gains
    grid, curve or None, AP); pooled_metrics : the POOLED_KEYS values; labels_per_document : (n,)
    labels of each document among the pooled categories.
    """
    K = len(names)
    n_pos = sums["positives"].astype(np.int64)
    if decided is None:
        tp, predicted = sums["tp"].astype(np.int64), sums["predicted"].astype(np.int64)
    else:
        predicted, tp = decided
    fp, fn = predicted - tp, n_pos - tp
    untestable = (n_pos == 0) | (n_pos == n)
    why = np.where(untestable, NO_TEST_POSITIVE_OR_NEGATIVE, "").astype(object)
    for k, reason in reasons.items():
        why[k] = reason
    table = pd.DataFrame({
        "category": np.arange(K), "name": names, "n_pos": n_pos, "n_neg": n - n_pos, "prevalence": n_pos / n,
        "auc": [r[0] for r in ranked], "average_precision": [r[4] for r in ranked],
        "expected_accuracy": sums["expected"] / n,
        "accuracy": (n - fp - fn) / n, "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn), "log_loss": sums["log_loss"] / n, "brier": sums["brier"] / n,
        "tp": tp, "fp": fp, "fn": fn, "tn": n - tp - fp - fn, "excluded": why, "included": why == ""},
        columns=PER_CATEGORY_COLUMNS)
    roc_tpr = np.vstack([r[1] for r in ranked]) if K else np.empty((0, grid.size))
    gains = np.vstack([r[2] for r in ranked]) if K else np.empty((0, grid.size))
    curves = {k: ranked[k][3] for k in sorted(keep) if k < K}
    evaluable = why == ""
    extra = {**pooled_metrics, "baseline_prevalence": "test" if q is None else "train"}
    summary = _summary(table, evaluable, pooled, extra)
    baselines = _baselines(n_pos, n, evaluable, pooled, n_pos / max(n, 1) if q is None else q,
                           labels_per_document, top_k)
    return Evaluation(per_category=table, summary=summary, grid=grid, roc_tpr=roc_tpr,
                      gains=gains, curves=curves, excluded=np.flatnonzero(~evaluable),
                      calibration=_calibration_table(reliability), baselines=baselines)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0 (scikit-learn's zero_division=0)."""
    return np.divide(num, den, out=np.zeros(len(num)), where=den > 0)


def reliability_table(Y_true, scores: np.ndarray) -> pd.DataFrame:
    """The reliability bins (count, mean predicted probability, observed rate) of log-odds ``scores``
    over every (document, category) pair: the same table ``evaluate`` makes, for other scores (e.g.
    a model's scores before calibration)."""
    scores = score_array(scores, "reliability_table: scores", ndim=2)
    binary_labels(Y_true, "reliability_table: Y_true", shape=scores.shape)
    _, reliability = pointwise_sums(Y_true, scores, 0.0, CALIBRATION_BINS)
    return _calibration_table(reliability)


def _calibration_table(reliability) -> pd.DataFrame:
    """(3, B) summed [count, Σp, Σy] per bin -> one row per bin of predicted probability."""
    edges = np.linspace(0.0, 1.0, CALIBRATION_BINS + 1)
    counts, sum_p, sum_y = reliability
    with np.errstate(invalid="ignore", divide="ignore"):
        return pd.DataFrame({"lower": edges[:-1], "upper": edges[1:], "count": counts.astype(np.int64),
                             "mean_predicted": np.where(counts > 0, sum_p / counts, np.nan),
                             "observed_rate": np.where(counts > 0, sum_y / counts, np.nan)})


def _summary(table: pd.DataFrame, evaluable: np.ndarray, pooled: np.ndarray, extra: dict) -> dict:
    """Micro averages pool the (document, category) pairs of the ``pooled`` categories; macro
    ones average the evaluable categories; ``extra`` holds the pooled rank metrics."""
    kept = table[evaluable]
    tp, fp, fn = (int(table[c][pooled].sum()) for c in ("tp", "fp", "fn"))

    def macro(column: str) -> float:
        return float(kept[column].mean()) if len(kept) else float("nan")

    untestable = int((table["excluded"] == NO_TEST_POSITIVE_OR_NEGATIVE).sum())
    return {
        "macro_auc": macro("auc"), "micro_auc": extra["micro_auc"],
        "macro_f1": macro("f1"), "micro_f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0,
        "macro_precision": macro("precision"), "micro_precision": tp / (tp + fp) if tp + fp else 0.0,
        "macro_recall": macro("recall"), "micro_recall": tp / (tp + fn) if tp + fn else 0.0,
        "mean_expected_accuracy": macro("expected_accuracy"), "mean_accuracy": macro("accuracy"),
        "mean_log_loss": macro("log_loss"), "mean_brier": macro("brier"),
        "n_categories": int(len(table)), "n_evaluable": int(evaluable.sum()),
        "n_excluded": int((~evaluable).sum()),
        "n_excluded_untestable": untestable, "n_excluded_by_caller": int((~pooled).sum()),
        "n_no_positive_predictions": int((kept["tp"] + kept["fp"] == 0).sum()),
        "macro_average_precision": macro("average_precision"),
        **{key: extra[key] for key in POOLED_KEYS if key != "micro_auc"},
        "baseline_prevalence": extra["baseline_prevalence"],
    }


def _labels_per_document(Y_true, pooled: np.ndarray) -> np.ndarray:
    """(n,) number of true labels of each document among the pooled categories."""
    Y = sp.csr_matrix(Y_true, copy=True)
    Y.sum_duplicates()
    Y.eliminate_zeros()
    return np.bincount(np.repeat(np.arange(Y.shape[0]), np.diff(Y.indptr)), weights=pooled[Y.indices],
                       minlength=Y.shape[0]).astype(np.int64)


def _harmonic(m) -> np.ndarray:
    """H_m = Σ_{j ≤ m} 1/j = ψ(m + 1) + γ, for (arrays of) non-negative integers m."""
    return digamma(np.asarray(m, dtype=np.float64) + 1.0) + np.euler_gamma


def _random_average_precision(n, n_pos) -> np.ndarray:
    """E[AP] of a uniformly random order of n items with n_pos ≥ 1 positives:
    (1/n)[H_n + (P − 1)/(n − 1)·(n − H_n)] (from E[rel_i rel_j] = P(P − 1)/(n(n − 1)))."""
    n, P = np.asarray(n, dtype=np.float64), np.asarray(n_pos, dtype=np.float64)
    h = _harmonic(n)
    with np.errstate(invalid="ignore", divide="ignore"):
        pairs = np.where(n > 1, (P - 1) / np.where(n > 1, n - 1, 1) * (n - h), 0.0)
        return np.where(P > 0, (h + pairs) / n, np.nan)


def _baselines(n_pos: np.ndarray, n: int, evaluable: np.ndarray, pooled: np.ndarray, q: np.ndarray,
               labels: np.ndarray, top_k: int) -> dict:
    """The ``always_no`` and ``prevalence_random`` baselines (module docstring) with the summary's keys."""
    nan = float("nan")
    n_neg = n - n_pos
    pi = n_pos / n if n else np.full(n_pos.shape, np.nan)
    K_pool = int(pooled.sum())
    P_pool, N_pool = int(n_pos[pooled].sum()), int(n_neg[pooled].sum())
    ranked = n > 0 and K_pool > 0
    between = (labels > 0) & (labels < K_pool)  # documents whose label ranking means something

    def macro(values) -> float:
        return float(np.mean(np.asarray(values, dtype=np.float64)[evaluable])) if evaluable.any() else nan

    def micro(tp, fp, fn) -> dict:
        tp, fp, fn = (float(np.sum(v[pooled])) for v in (tp, fp, fn))
        return {"micro_f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0,
                "micro_precision": tp / (tp + fp) if tp + fp else 0.0,
                "micro_recall": tp / (tp + fn) if tp + fn else 0.0}

    def decision_metrics(tp, fp, fn) -> dict:
        micro_values = micro(tp, fp, fn)
        return {"macro_f1": macro(_ratio(2 * tp, 2 * tp + fp + fn)), "micro_f1": micro_values["micro_f1"],
                "macro_precision": macro(_ratio(tp, tp + fp)), "micro_precision": micro_values["micro_precision"],
                "macro_recall": macro(_ratio(tp, tp + fn)), "micro_recall": micro_values["micro_recall"],
                "mean_accuracy": macro((n - fp - fn) / max(n, 1))}

    chance_auc = 0.5 if P_pool and N_pool else nan
    zero = np.zeros(n_pos.shape)
    first_k = np.flatnonzero(pooled)[:top_k]  # the top k of tied scores: the lowest indices
    always_no = {
        "macro_auc": macro(np.full(n_pos.shape, 0.5)), "micro_auc": chance_auc,
        **decision_metrics(zero, zero, n_pos.astype(np.float64)),
        "mean_expected_accuracy": macro(1 - pi), "mean_log_loss": macro(np.where(pi > 0, np.inf, 0.0)),
        "mean_brier": macro(pi),
        "n_no_positive_predictions": int(evaluable.sum()),
        "macro_average_precision": macro(pi),
        "micro_average_precision": P_pool / (n * K_pool) if ranked and P_pool else nan,
        "precision_at_k": float(n_pos[first_k].sum() / (n * top_k)) if ranked else nan,
        "label_ranking_average_precision": float(np.where(between, labels / max(K_pool, 1), 1.0).mean())
        if ranked else nan,
        "coverage_error": float(np.where(labels > 0, K_pool, 0).mean()) if ranked else nan,
        "label_ranking_loss": float(between.mean()) if ranked else nan,
    }

    expected_accuracy = pi * q + (1 - pi) * (1 - q)
    h_K = float(_harmonic(K_pool))
    with np.errstate(invalid="ignore", divide="ignore"):
        lrap = np.where(between, (h_K + (labels - 1) / max(K_pool - 1, 1) * (K_pool - h_K)) / max(K_pool, 1), 1.0)
        coverage = np.where(labels > 0, labels * (K_pool + 1) / (labels + 1), 0.0)
    prevalence_random = {
        "macro_auc": macro(np.full(n_pos.shape, 0.5)), "micro_auc": chance_auc,
        **decision_metrics(q * n_pos, q * n_neg, (1 - q) * n_pos),
        "mean_expected_accuracy": macro(expected_accuracy),
        "mean_log_loss": macro(-xlogy(pi, q) - xlogy(1 - pi, 1 - q)),
        "mean_brier": macro(pi * (1 - q) ** 2 + (1 - pi) * q ** 2),
        "n_no_positive_predictions": float(np.sum((1 - q[evaluable]) ** n)),
        "macro_average_precision": macro(_random_average_precision(n, n_pos)),
        "micro_average_precision": float(_random_average_precision(n * K_pool, P_pool)) if ranked else nan,
        "precision_at_k": float(labels.mean() * min(top_k, K_pool) / (K_pool * top_k)) if ranked else nan,
        "label_ranking_average_precision": float(lrap.mean()) if ranked else nan,
        "coverage_error": float(coverage.mean()) if ranked else nan,
        "label_ranking_loss": float(0.5 * between.mean()) if ranked else nan,
    }
    return {"always_no": always_no, "prevalence_random": prevalence_random,
            "prior": _prior_ranking(n_pos, n, evaluable, pooled, q, top_k)}


def _prior_ranking(n_pos: np.ndarray, n: int, evaluable: np.ndarray, pooled: np.ndarray, q: np.ndarray,
                   top_k: int) -> dict:
    """The rank metrics of the ``prior`` baseline (module docstring): every document scored q_k in
    category k, tied within a category. Pooled over the categories, those scores rank the frequent
    categories' pairs first, so its micro AUC is above ½:

        micro AUC = Σ_k P_k (Σ_{j: q_j < q_k} N_j + ½ Σ_{j: q_j = q_k} N_j) / (P N)

    (P_k, N_k a pooled category's test positives and negatives, P, N their sums); micro AP is
    scikit-learn's over the tied groups, Σ_t (P_t / P)·(cumulative P up to t)/(cumulative P + N up
    to t), the groups t of equal q in decreasing q; P@k counts the top k pooled categories in
    (decreasing q, increasing index) order, as ``precision_at_k`` breaks ties."""
    nan = float("nan")
    columns = np.flatnonzero(pooled)
    positives, negatives = n_pos[columns].astype(np.float64), (n - n_pos[columns]).astype(np.float64)
    P, N = positives.sum(), negatives.sum()
    macro_auc = 0.5 if evaluable.any() else nan
    if not (n and columns.size and P and N):
        return {"macro_auc": macro_auc, "micro_auc": nan, "micro_average_precision": nan, "precision_at_k": nan}
    levels, group = np.unique(q[columns], return_inverse=True)  # increasing q
    group_pos = np.bincount(group, weights=positives, minlength=levels.size)
    group_neg = np.bincount(group, weights=negatives, minlength=levels.size)
    below = np.cumsum(group_neg) - group_neg
    micro_auc = float(np.sum(group_pos * (below + 0.5 * group_neg)) / (P * N))
    down_pos, down_all = np.cumsum(group_pos[::-1]), np.cumsum((group_pos + group_neg)[::-1])
    micro_ap = float(np.sum(group_pos[::-1] / P * down_pos / down_all))
    top = columns[np.lexsort((columns, -q[columns]))][:top_k]
    return {"macro_auc": macro_auc, "micro_auc": micro_auc, "micro_average_precision": micro_ap,
            "precision_at_k": float(n_pos[top].sum() / (n * top_k))}
