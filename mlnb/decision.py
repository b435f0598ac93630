r"""Decision rules: from per-category scores S (n × K) to 0/1 decisions D (n × K).

A rule is fitted on a *validation* part — scores and labels of documents the caller carved from
the training part — and then decides test scores, which it never reads while fitting. Scores
are log-odds, or any score where higher means more likely (only ``fixed`` needs log-odds).

    fixed    D_ik = [S_ik ≥ logit p]                  one probability cut p for every category
    scut     D_ik = [S_ik ≥ t_k]                      t_k maximises M on the validation part
    scutfbr  D_ik = [S_ik ≥ t_k]                      t_k as scut; if M*_k < fbr, t_k = s_(r),k
    pcut     D_ik = [i among the m_k top S_·k]       m_k = ⌊π_k·n + ½⌋ over the n documents decided
    rcut     D_ik = [k among the r top S_i·]         r = rcut_k categories per document

(Yang 2001, "A study of thresholding strategies for text categorization", SIGIR: SCut, PCut,
RCut and SCutFBR; Lewis, Yang, Rose & Li 2004, "RCV1: a new benchmark collection for text
categorization research", JMLR 5, used SCutFBR.1 for their SVM.1 and k-NN results.)

The metric M of a category at a cut that accepts TP positives and FP negatives of its P
positives and N negatives (n = P + N validation documents):

    f1 / f_beta   F_β = (1 + β²)·TP / (β²·P + TP + FP)     (0 where P = TP + FP = 0; f1: β = 1)
    accuracy      (TP + N − FP) / n

SCut, per category k (vectorised over a block of categories, one sort each):
  1. sort the validation scores descending, s_(1) ≥ … ≥ s_(n), and accumulate TP_j, FP_j of
     the top j documents;
  2. the candidate cuts are j = 0 (accept nothing) and every j where s_(j) > s_(j+1) or j = n:
     documents tied at one score enter together, since no threshold can split them;
  3. j* is the smallest j with the largest M_j — among equally good cuts the highest threshold,
     the one predicting fewest positives;
  4. t_k = +∞ if j* = 0; s_(n) if j* = n; otherwise (s_(j*) + s_(j*+1))/2, midway between the
     lowest accepted and the highest rejected distinct score (should the midpoint round onto
     s_(j*+1), as for adjacent float64 values, t_k = s_(j*)). ``best_metric`` records M_{j*}.
  A category with no validation positive has F = 0 at every cut (and accuracy is best with
  nothing accepted), so j* = 0 and t_k = +∞: it predicts nothing (only a test score of +∞
  would pass). It is flagged ``fallback = True``, since its threshold was not learnt.

SCutFBR.r (Yang 2001): SCut, except where the best validation F-score M_{j*} < ``fbr``: then
t_k just above s_(r), the score of the validation document at rank r = ``fbr_rank`` (r = 1: the
top-scored, "SCutFBR.1"): a test document must score strictly higher, as in Fan & Lin's
LIBSVM-tools code for SCutFBR.1 — so a category whose validation scores all tie (a model that
learnt nothing for it and scores every document by the prior) predicts nothing instead of
everything; t_k = +∞ for r = 0 ("SCutFBR.0"). Those categories are flagged ``fallback``. This
includes every category without a validation positive (F = 0 < fbr). The F-score is the chosen
f1 / f_beta (accuracy is refused: the fallback is about a low F). The fallback applies when
F < fbr (Fan & Lin: F ≤ fbr).

PCut (Yang 2001, with her proportion factor x = 1): category k gets m_k = ⌊π_k·n + ½⌋ positive
decisions (π_k its training prevalence, n the documents in the batch being decided, halves
rounded up), its m_k top-scored documents, ties broken by document index (lower first).
Decisions depend on the batch: deciding two halves apart differs from deciding them together.

RCut: each document's ``rcut_k`` top-scored categories, ties broken by category index (lower
first, as ``metrics.evaluation.precision_at_k``); all K if rcut_k ≥ K.

Every rule fitted with validation data also records ``validation_metric``: M of its own
decisions on the validation part (for scut this equals ``best_metric``).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import logit

from mlnb._kernels.csr import at_or_above
from mlnb._kernels.jit import HAVE_NUMBA, map_threads, worker_threads
from mlnb.calibration import category_blocks, label_block, validation_labels
from mlnb.data.validate import check_scores
from mlnb.errors import MlnbError

RULES = ("fixed", "scut", "scutfbr", "pcut", "rcut")
#: the rules that learn their thresholds from held-out training scores (``mlnb.study.deciding.held_out_scores``)
LEARNED_ON_HELD_OUT = ("scut", "scutfbr")
METRICS = ("f1", "f_beta", "accuracy")
SWEEP_ELEMENTS = 1 << 21  # documents × categories per SCut block: ~60 MB of sort temporaries
DECIDE_ROWS_ELEMENTS = 1 << 22  # documents × categories per block of decide (4 MB of booleans)
#: documents × categories above which a cut is compiled and on every thread (below, numpy's blocks)
PARALLEL_CUT_ELEMENTS = 1 << 16


@dataclass(frozen=True, eq=False)
class DecisionRule:
    """A fitted decision rule; ``decide(scores)`` applies it. Options are kept as given."""

    rule: str  # one of RULES
    n_categories: int | None  # K; None for ``fixed`` fitted without data
    thresholds: np.ndarray | None  # (K,) float64 t_k on the score scale, D = [S ≥ t_k]; None for pcut, rcut
    threshold: float = 0.5  # fixed: the probability cut p
    metric: str = "f1"  # scut, scutfbr: the metric maximised; every rule: the one reported
    beta: float = 1.0  # metric = "f_beta": β
    fbr: float = 0.1  # scutfbr: fall back where the best F < fbr
    fbr_rank: int = 1  # scutfbr: fall back to the score at this validation rank (0: +∞)
    rcut_k: int = 1  # rcut: categories per document
    train_prevalence: np.ndarray | None = None  # (K,) pcut: π_k
    n_validation: int = 0  # validation documents the rule was fitted on (0: none)
    validation_positives: np.ndarray | None = None  # (K,) P_k on the validation part
    best_metric: np.ndarray | None = None  # (K,) scut, scutfbr: M at SCut's optimal cut
    validation_metric: np.ndarray | None = None  # (K,) M of this rule's decisions on validation
    fallback: np.ndarray | None = None  # (K,) bool: threshold not learnt (no positive; scutfbr: F < fbr)

    def reads(self, scores, probability_scores=None):
        """What this rule decides on: a probability cut (``fixed``) reads the calibrated
        ``probability_scores`` when a calibration gave them; the rank rules read the model's own scores."""
        return probability_scores if (self.rule == "fixed" and probability_scores is not None) else scores

    def decide(self, scores) -> sp.csr_matrix:
        """0/1 decisions (n × K, CSR int8) for ``scores`` (n × K); NaN anywhere is refused."""
        S = check_scores(scores)
        if self.n_categories is not None and S.shape[1] != self.n_categories:
            raise MlnbError(f"scores: {S.shape[1]} columns, but the rule was fitted on {self.n_categories} "
                            "categories")
        if self.rule == "pcut":
            return _top_documents(S, _pcut_counts(self.train_prevalence, S.shape[0]))
        if self.rule == "rcut":
            return _top_categories(S, self.rcut_k)
        cuts = self.thresholds if self.thresholds is not None else np.full(S.shape[1], logit(self.threshold))
        return _at_or_above(S, cuts)

    def decided_in_column(self, k: int, column) -> np.ndarray:
        """The documents decided in category k, given its n scores ``column`` (every document of the batch):
        column k of ``decide`` of the whole n × K scores, for pcut, which decides each category alone — so
        scores read one category at a time (a spill on disk) get the decisions of the scores in memory."""
        if self.rule != "pcut":
            raise MlnbError(f"decided_in_column: rule {self.rule!r} decides documents, not a category's column")
        s = check_scores(np.asarray(column).reshape(-1, 1), "column")[:, 0]
        m = int(_pcut_counts(self.train_prevalence[k:k + 1], s.size)[0])
        return _top_of_column(s, m) if m else np.zeros(0, dtype=np.int64)

    def to_frame(self, category_names) -> pd.DataFrame:
        """One row per category: threshold, validation metrics, fallback flag (to save with results)."""
        names = [str(c) for c in category_names]
        K = len(names)
        if self.n_categories is not None and K != self.n_categories:
            raise MlnbError(f"category_names: {K} names for {self.n_categories} categories")

        def column(values, fill=np.nan):
            return np.full(K, fill) if values is None else values

        thresholds = self.thresholds
        if thresholds is None and self.rule == "fixed":
            thresholds = np.full(K, logit(self.threshold))
        return pd.DataFrame({
            "category": np.arange(K), "name": names, "rule": self.rule, "metric": self.metric,
            "threshold": column(thresholds), "validation_positives": column(self.validation_positives, -1),
            "best_validation_metric": column(self.best_metric),
            "validation_metric": column(self.validation_metric),
            "fallback": column(self.fallback, False), "train_prevalence": column(self.train_prevalence)})


def fit_decision_rule(rule: str, scores_val=None, Y_val=None, *, threshold: float = 0.5, metric: str = "f1",
                      beta: float = 1.0, fbr: float = 0.1, fbr_rank: int = 1, rcut_k: int = 1,
                      train_prevalence=None) -> DecisionRule:
    """Fit ``rule`` on validation scores (n × K) and labels (n × K, 0/1, sparse or dense).

    fixed            needs nothing (validation data, if given, only fills the diagnostics)
    scut, scutfbr    need scores_val and Y_val
    pcut             needs train_prevalence (K,), the share of training documents in each category
    rcut             needs nothing

    >>> import numpy as np
    >>> S_val = np.array([[3., 1.], [2., 4.], [1., 2.], [0., 3.]])  # 4 validation documents × 2 categories
    >>> Y_val = np.array([[1, 0], [1, 1], [0, 0], [0, 1]])
    >>> rule = fit_decision_rule("scut", S_val, Y_val)
    >>> rule.thresholds  # F1 = 1 on both: midway between the lowest accepted and highest rejected score
    array([1.5, 2.5])
    >>> rule.decide(np.array([[2.0, 2.0], [1.0, 3.0]])).toarray()
    array([[1, 0],
           [0, 1]], dtype=int8)
    >>> fit_decision_rule("rcut", rcut_k=1).decide(np.array([[0.1, 0.3, -1.0]])).toarray()  # the best one
    array([[0, 1, 0]], dtype=int8)
    """
    _check_options(rule, threshold, metric, beta, fbr, fbr_rank, rcut_k)
    S = None if scores_val is None else check_scores(scores_val, "scores_val")
    if S is not None and S.shape[0] == 0:
        raise MlnbError("scores_val: no validation documents")
    if rule in LEARNED_ON_HELD_OUT and (S is None or Y_val is None):
        raise MlnbError(f"scores_val, Y_val: rule {rule!r} is fitted on validation scores and labels")
    Y = None if S is None or Y_val is None else validation_labels(Y_val, S.shape)
    prevalence = None
    if rule == "pcut":
        prevalence = _check_prevalence(train_prevalence, None if S is None else S.shape[1])
    K = S.shape[1] if S is not None else (prevalence.size if prevalence is not None else None)
    thresholds = best = fallback = None
    if rule == "fixed" and K is not None:
        thresholds = np.full(K, logit(threshold))
    if rule in LEARNED_ON_HELD_OUT:
        thresholds, best, top_scores = _scut(S, Y, metric, beta, fbr_rank if rule == "scutfbr" else 0)
        fallback = np.diff(Y.indptr) == 0  # no validation positive: t = +∞, nothing learnt
        if rule == "scutfbr":
            low = best < fbr  # (K,) SCut's best F is too low to trust
            # strictly above the rank-r score: a category whose validation scores all tie (a model
            # that learnt nothing, e.g. scoring by the prior) must not accept every document
            thresholds = np.where(low, np.nextafter(top_scores, np.inf), thresholds)
            fallback |= low
    rule_object = DecisionRule(rule=rule, n_categories=K, thresholds=thresholds, threshold=float(threshold),
                               metric=metric, beta=float(beta), fbr=float(fbr), fbr_rank=int(fbr_rank),
                               rcut_k=int(rcut_k), train_prevalence=prevalence,
                               n_validation=0 if S is None else S.shape[0], best_metric=best,
                               fallback=fallback)
    if Y is None:
        return rule_object
    n = S.shape[0]
    decided = rule_object.decide(S)  # (n, K) this rule's own validation decisions
    positives = np.diff(Y.indptr).astype(np.int64)  # (K,) P
    accepted = np.diff(decided.tocsc().indptr).astype(np.int64)  # (K,) TP + FP
    tp = np.asarray(decided.multiply(Y).sum(axis=0)).ravel().astype(np.int64)  # (K,) TP
    return replace(rule_object, validation_positives=positives,
                   validation_metric=_metric(tp, accepted - tp, positives, n, metric, beta))


def _check_options(rule, threshold, metric, beta, fbr, fbr_rank, rcut_k) -> None:
    def whole(value):
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)

    def real(value):
        return isinstance(value, numbers.Real) and not isinstance(value, bool)

    if rule not in RULES:
        raise MlnbError(f"rule: unknown decision rule {rule!r} (one of {', '.join(RULES)})")
    if not (real(threshold) and 0.0 < threshold < 1.0):
        raise MlnbError(f"threshold: a probability strictly between 0 and 1, got {threshold!r}")
    if metric not in METRICS:
        raise MlnbError(f"metric: unknown metric {metric!r} (one of {', '.join(METRICS)})")
    if not (real(beta) and np.isfinite(beta) and beta > 0):
        raise MlnbError(f"beta: a positive number, got {beta!r}")
    if beta != 1 and metric != "f_beta":
        raise MlnbError(f"beta: {beta!r} applies to metric = 'f_beta' only (metric is {metric!r})")
    if rule == "scutfbr" and metric == "accuracy":
        raise MlnbError("metric: scutfbr falls back on a low F-score; use 'f1' or 'f_beta', not 'accuracy'")
    if not (real(fbr) and 0.0 <= fbr <= 1.0):
        raise MlnbError(f"fbr: an F-score between 0 and 1, got {fbr!r}")
    if not (whole(fbr_rank) and fbr_rank >= 0):
        raise MlnbError(f"fbr_rank: a rank ≥ 0 (1 = the top validation document, 0 = predict nothing), "
                        f"got {fbr_rank!r}")
    if not (whole(rcut_k) and rcut_k >= 1):
        raise MlnbError(f"rcut_k: a whole number of categories ≥ 1, got {rcut_k!r}")


def _check_prevalence(train_prevalence, K: int | None) -> np.ndarray:
    if train_prevalence is None:
        raise MlnbError("train_prevalence: rule 'pcut' needs each category's training prevalence")
    prevalence = np.asarray(train_prevalence, dtype=np.float64)
    if prevalence.ndim != 1 or (K is not None and prevalence.size != K):
        raise MlnbError(f"train_prevalence: one share per category ({K if K is not None else 'K'}), "
                        f"got shape {prevalence.shape}")
    if not np.all((prevalence >= 0) & (prevalence <= 1)):
        raise MlnbError("train_prevalence: shares must lie in [0, 1]")
    return prevalence


def _metric(tp, fp, positives, n: int, metric: str, beta: float) -> np.ndarray:
    """M at cuts accepting tp positives and fp negatives of ``positives`` (broadcast)."""
    if metric == "accuracy":
        return (tp + (n - positives) - fp) / n
    b2 = beta * beta
    numerator = (1.0 + b2) * tp
    denominator = b2 * positives + tp + fp
    return np.divide(numerator, denominator, out=np.zeros(np.broadcast(numerator, denominator).shape),
                     where=denominator > 0)


def _scut(S: np.ndarray, Y: sp.csc_matrix, metric: str, beta: float, rank: int):
    """SCut thresholds t (K,), best M (K,) and the score at validation rank ``rank`` (K,)."""
    n, K = S.shape
    if rank > n:
        raise MlnbError(f"fbr_rank: {rank} exceeds the {n} validation documents")
    thresholds, best, at_rank = np.empty(K), np.empty(K), np.full(K, np.inf)
    for start, stop in category_blocks(n, K, SWEEP_ELEMENTS):
        s_block = np.ascontiguousarray(S[:, start:stop].T)  # (b, n)
        order = np.argsort(s_block, axis=1)[:, ::-1]  # (b, n) descending
        s = np.take_along_axis(s_block, order, axis=1).astype(np.float64)  # (b, n) s_(1) ≥ … ≥ s_(n)
        y = np.take_along_axis(label_block(Y, start, stop), order, axis=1)  # (b, n)
        tp = np.cumsum(y, axis=1, dtype=np.int64)  # (b, n) TP_j, j = 1..n
        fp = np.arange(1, n + 1) - tp  # (b, n) FP_j
        positives = tp[:, -1:]  # (b, 1) P
        m = _metric(tp, fp, positives, n, metric, beta)  # (b, n) M_j
        m[:, :-1][s[:, :-1] == s[:, 1:]] = -np.inf  # a cut inside a tie is no cut
        m0 = _metric(0, 0, positives, n, metric, beta)  # (b, 1) M_0: accept nothing
        j = np.argmax(np.hstack([m0, m]), axis=1)  # (b,) j*, the first maximum: the highest threshold
        rows = np.arange(stop - start)
        best[start:stop] = np.where(j == 0, m0[:, 0], m[rows, np.maximum(j - 1, 0)])
        lowest_in = s[rows, np.maximum(j - 1, 0)]  # s_(j*)
        highest_out = s[rows, np.minimum(j, n - 1)]  # s_(j*+1)
        with np.errstate(invalid="ignore"):  # +∞ and −∞ as neighbours: NaN, then lowest_in below
            midpoint = lowest_in / 2 + highest_out / 2
            midpoint = np.where(midpoint > highest_out, midpoint, lowest_in)
        thresholds[start:stop] = np.where(j == 0, np.inf, np.where(j == n, lowest_in, midpoint))
        if rank:
            at_rank[start:stop] = s[:, rank - 1]
    return thresholds, best, at_rank


def _block_elements(n: int, K: int) -> int:
    """Documents × categories per block of decide: at most ``DECIDE_ROWS_ELEMENTS`` (the temporaries of a
    block), and from ``PARALLEL_CUT_ELEMENTS`` on at least two blocks per thread of ``worker_threads()``
    (the blocks run on a thread pool: numpy's partitions, comparisons and nonzero let the threads run;
    below, one block and no pool). Blocks only share the work out: each document (rcut) or category
    (pcut) is decided alone, so any size gives the same decisions."""
    if n * K < PARALLEL_CUT_ELEMENTS:
        return DECIDE_ROWS_ELEMENTS
    return max(1, min(DECIDE_ROWS_ELEMENTS, -(-n * K // (2 * worker_threads()))))


def _row_blocks(n: int, K: int):
    step = max(1, _block_elements(n, K) // max(K, 1))
    return [(start, min(n, start + step)) for start in range(0, n, step)]


def _csr_from_blocks(block_mask, blocks, shape) -> sp.csr_matrix:
    """Stack the (r, K) boolean masks ``block_mask(a, b)`` of the row blocks (a, b) (rows in order) into one
    CSR int8 0/1 matrix, the blocks on a thread pool (``map_threads``)."""
    def nonzeros(block):
        mask = block_mask(*block)
        rows, cols = np.nonzero(mask)  # row-major: columns ascending within each row
        return cols.astype(np.int32), np.bincount(rows, minlength=mask.shape[0])

    parts = map_threads(nonzeros, blocks)
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    if parts:
        np.cumsum(np.concatenate([counts for _, counts in parts]), out=indptr[1:])
    cols = np.concatenate([cols for cols, _ in parts]) if parts else np.empty(0, dtype=np.int32)
    return sp.csr_matrix((np.ones(cols.size, dtype=np.int8), cols, indptr), shape=shape)


def _at_or_above(S: np.ndarray, cuts: np.ndarray) -> sp.csr_matrix:
    """D_ik = [S_ik ≥ t_k]: compiled, counting each row's accepted categories and then writing them, on
    every thread (``mlnb._kernels.csr.at_or_above``: numpy's comparison ran on one core); else a block of rows
    at a time. The same CSR either way (the comparison in the common type of S and t, as numpy's)."""
    n, K = S.shape
    compiled = HAVE_NUMBA and n * K >= PARALLEL_CUT_ELEMENTS and S.dtype in (np.float32, np.float64) \
        and S.dtype.isnative  # (other scores, e.g. big-endian or integer ones, take numpy's comparison)
    if not compiled:
        return _csr_from_blocks(lambda a, b: S[a:b] >= cuts, _row_blocks(n, K), S.shape)
    cuts = np.ascontiguousarray(cuts, dtype=np.result_type(S.dtype, np.asarray(cuts).dtype))
    indptr, indices = at_or_above(S, cuts)
    return sp.csr_matrix((np.ones(indices.size, dtype=np.int8), indices, indptr), shape=S.shape)


def _top_categories(S: np.ndarray, k: int) -> sp.csr_matrix:
    """The k top-scored categories of each document; ties to the lower category index."""
    n, K = S.shape

    def mask(a: int, b: int) -> np.ndarray:
        s = S[a:b]  # (r, K)
        if k >= K:
            return np.ones(s.shape, dtype=bool)
        kth = np.partition(s, K - k, axis=1)[:, K - k][:, None]  # (r, 1) k-th highest score
        above, tied = s > kth, s == kth
        room = k - np.count_nonzero(above, axis=1)  # (r,) ≥ 1 places left for the tied ones
        return above | (tied & (np.cumsum(tied, axis=1) <= room[:, None]))  # first tied by index

    return _csr_from_blocks(mask, _row_blocks(n, K), S.shape)


def _pcut_counts(prevalence: np.ndarray, n: int) -> np.ndarray:
    """m_k = ⌊π_k·n + ½⌋ (halves up), at most n."""
    return np.minimum(np.floor(prevalence * n + 0.5), n).astype(np.int64)


def _top_of_column(s: np.ndarray, m: int) -> np.ndarray:
    """The m (≥ 1) top-scored of the n scores s of one category; ties to the lower document index.

    One O(n) partition finds the m-th highest score v: every document above v is in, and the
    first (m − #above) documents tied at v by index."""
    v = np.partition(s, s.size - m)[s.size - m]
    above = np.flatnonzero(s > v)
    return np.concatenate([above, np.flatnonzero(s == v)[:m - above.size]])


def _top_documents(S: np.ndarray, counts: np.ndarray) -> sp.csr_matrix:
    """Category k's counts[k] top-scored documents, one category at a time (``_top_of_column``)."""
    n, K = S.shape

    def chosen(block) -> list:  # [(documents, category)] of the block's categories, on a thread of the pool
        start, stop = block
        found = []
        for offset, s in enumerate(np.ascontiguousarray(S[:, start:stop].T)):  # (b, n) one row per category
            m = int(counts[start + offset])
            if m:
                found.append((_top_of_column(s, m), start + offset))
        return found

    parts = [part for found in map_threads(chosen, category_blocks(n, K, _block_elements(n, K))) for part in found]
    rows = np.concatenate([documents for documents, _ in parts]) if parts else np.empty(0, dtype=np.int64)
    cols = (np.concatenate([np.full(documents.size, k, dtype=np.int32) for documents, k in parts]) if parts
            else np.empty(0, dtype=np.int32))
    decided = sp.coo_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=S.shape).tocsr()
    decided.sort_indices()
    return decided
