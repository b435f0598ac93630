r"""Single-label (multiclass) evaluation: argmax decisions, per-class ROC from class log-odds.

A multiclass model gives each document i a joint score J_ik per class k: the
joint log-likelihood log P(x_i, k) of Naive Bayes, or the softmax logit of
logistic regression. Both define the posterior through the softmax link,

    log P(k | x) = J_k − logsumexp_j J_j                    (log posterior)

and the *class log-odds*, the one-vs-rest score of class k,

    L_k = log P(k|x) − log(1 − P(k|x)) = J_k − logsumexp_{j≠k} J_j.

``class_log_odds`` computes L without ever forming a saturated P. With a the
first argmax of the row, b the first argmax of the others, m1 = J_a ≥ m2 = J_b,
g = m1 − m2 and e_j = exp(J_j − m1) ∈ [0, 1]:

    L_a = g − log1p(Σ_{j∉{a,b}} exp(J_j − m2))               (each term ≤ 1)
    L_k = (J_k − m1) − log1p(Σ_{j∉{a,k}} e_j),  k ≠ a,
          Σ_{j∉{a,k}} e_j = R1 + e_b − e_k  (R1 = Σ_{j∉{a,b}} e_j; R1 itself for k = b)

Every sum is of terms in [0, 1], so nothing overflows, and the leader's L_a
is g minus a correction instead of −log(1 − p) of a p that rounds to 1. For
K = 2 both sums are empty: L_a = g and L_b = −g exactly. Classes tied in J
get bit-identical L (the leader's sum and the runner-up's are the same array
when g = 0), so rankings by L and by J agree.

``evaluate_multiclass`` runs the multilabel ``evaluate`` on (one-hot Y, L):
per-class ROC, AUC, lift, one-vs-rest log loss, Brier and calibration all come
from the exact posteriors σ(L_k) = P(k|x), ranked by L. The decision of a
multiclass model is the argmax ŷ_i = argmax_k J_ik (first index on ties), so
the threshold columns are then replaced with the argmax decision's, from the
K × K confusion matrix C (rows true, columns predicted):

    tp_k = C_kk     fp_k = Σ_i C_ik − C_kk     fn_k = Σ_j C_kj − C_kk     tn_k = n − tp_k − fp_k − fn_k

and the summary gains the single-label metrics:

    accuracy          = trace C / n
    balanced_accuracy = mean over classes with n_pos > 0 of recall_k        (sklearn)
    weighted_f1       = Σ_k n_pos_k F1_k / n
    log_loss          = −(1/n) Σ_i log P(y_i | x_i)            (finite for finite J)
    top_k_accuracy    = (1/n) Σ_i [rank_i < k],  rank_i = #{j: J_ij > J_iy} + #{j > y: J_ij = J_iy}

``top_k_accuracy`` breaks ties as ``sklearn.metrics.top_k_accuracy_score``
does (it sorts ascending with a stable sort and reverses, so among tied
classes the *higher* index ranks first). That differs from argmax (lower index
first): with ties, top-1 accuracy can differ from ``accuracy``.

Summary keys shared with the multilabel ``evaluate`` change meaning thus:
``micro_f1`` = ``micro_precision`` = ``micro_recall`` = accuracy (each document
has one true and one predicted class); ``macro_*`` and ``mean_accuracy``
average the evaluable classes (with positives and negatives; sklearn's macro
over those labels) of the argmax decision's per-class values (``mean_accuracy``
is one-vs-rest accuracy); ``macro_auc`` is sklearn's one-vs-rest macro AUC;
``micro_auc`` pools every (document, class) pair ranked by L; ``mean_log_loss``,
``mean_brier``, ``mean_expected_accuracy`` are the one-vs-rest binary ones of
P(k|x); ``precision_at_k`` = (top-k hits)/k with ties to the lower index; the
average precision and example-based ranking keys rank the classes by L.

``probability_scores``, ``exclude`` and ``train_prevalence`` are passed to
``evaluate`` (calibrated class log-odds for the probability metrics and, here,
for ``log_loss``; classes left out of the one-vs-rest averages and pools; the
training class shares of the baselines). The baselines are ``evaluate``'s, of
the one-vs-rest metrics — for an argmax classifier that draws its class with
the shares q, each class is still decided with probability q_k, so
``prevalence_random``'s expected counts hold — plus its single-label
``accuracy`` = Σ π_k q_k and ``log_loss`` = −Σ π_k log q_k (π the test shares).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp, xlogy

from mlnb.errors import MlnbError
from mlnb.metrics._inputs import score_array
from mlnb.metrics.evaluation import POOLED_KEYS, Evaluation, _ratio, _summary, caller_exclusions, evaluate

#: rows per block in ``class_log_odds`` (bounds its temporaries, whatever n)
BLOCK_ROWS = 8192


@dataclass
class MulticlassEvaluation(Evaluation):
    """An ``Evaluation`` of a single-label model, with its argmax decisions.

    confusion : (K, K) int64 counts, rows true class, columns predicted class
    predicted : (n,) argmax class of each document
    true      : (n,) true class of each document
    """

    confusion: np.ndarray
    predicted: np.ndarray
    true: np.ndarray


def _check_joint(J) -> np.ndarray:
    if sp.issparse(J):
        raise MlnbError("joint scores J must be a dense n × K array, got a sparse matrix")
    J = score_array(J, "joint scores J").astype(np.float64, copy=False)  # real, exact, no NaN (``_inputs``)
    if J.ndim != 2 or J.shape[1] < 2:
        raise MlnbError(f"joint scores J must be an n × K array with K ≥ 2 classes, got shape {J.shape}")
    if np.isnan(J).any():
        raise MlnbError("joint scores J contain NaN")
    if np.isposinf(J).any():
        raise MlnbError("joint scores J contain +inf")
    if J.shape[0] and np.isneginf(J.max(axis=1)).any():
        row = int(np.flatnonzero(np.isneginf(J.max(axis=1)))[0])
        raise MlnbError(f"joint scores J: every class of row {row} is -inf")
    return J


def _block_log_odds(J: np.ndarray) -> np.ndarray:
    """L for one block of rows (b, K), K ≥ 2, finite row maxima."""
    rows = np.arange(J.shape[0])
    a = J.argmax(axis=1)  # (b,) leader (first maximum)
    m1 = J[rows, a]
    others = J.copy()
    others[rows, a] = -np.inf
    b = others.argmax(axis=1)  # (b,) runner-up
    m2 = others[rows, b]  # may equal m1 (a tie) or be -inf (one finite class)
    e_b = np.exp(m2 - m1)  # (b,)
    others[rows, b] = -np.inf  # now: the classes other than a and b
    r1 = np.exp(others - m1[:, None]).sum(axis=1)  # (b,) Σ_{j∉{a,b}} e_j
    # relative to m2 for the leader (m2 = -inf: all those terms are exp(-inf) = 0)
    r2 = np.exp(others - np.where(np.isfinite(m2), m2, m1)[:, None]).sum(axis=1)
    e = np.exp(J - m1[:, None])  # (b, K) e_j ∈ [0, 1]
    # Σ_{j∉{a,k}} e_j = R1 + e_b − e_k; exactly R1 where e_k = e_b (the runner-up, or tied with it)
    rest = np.where(e == e_b[:, None], r1[:, None], np.maximum(r1[:, None] + e_b[:, None] - e, 0.0))
    L = (J - m1[:, None]) - np.log1p(rest)  # (b, K)
    L[rows, a] = (m1 - m2) - np.log1p(r2)  # g = +inf when m2 = -inf: L_a = +inf
    return L


def class_log_odds(J, dtype=np.float64) -> np.ndarray:
    """Per-class one-vs-rest log-odds L_k = J_k − logsumexp_{j≠k} J_j of joint scores J (n × K).

    J : joint log-likelihoods (Naive Bayes) or softmax logits (logistic regression), K ≥ 2;
        -inf allowed (a class a model rules out), NaN and +inf not
    dtype : of the result; float64 (default) keeps every distinction of the float64
            computation, float32 halves the memory of the (n, K) result
    Returns L (n, K) with σ(L_k) = P(k | x) and L_k = log P(k|x) − log(1 − P(k|x)).

    >>> class_log_odds(np.log([[1.0, 1.0, 2.0]]))  # P = 1/4, 1/4, 1/2: L = −log 3, −log 3, 0
    array([[-1.09861229, -1.09861229,  0.        ]])
    """
    J = _check_joint(J)
    L = np.empty(J.shape, dtype=dtype)
    for start in range(0, J.shape[0], BLOCK_ROWS):
        L[start:start + BLOCK_ROWS] = _block_log_odds(J[start:start + BLOCK_ROWS])
    return L


def _true_classes(Y_true, n: int, K: int, name: str = "Y_true") -> np.ndarray:
    """(n,) class index from 1-D labels or an n × K one-hot matrix (sparse or dense); errors name ``name``."""
    if sp.issparse(Y_true):
        Y = sp.csr_matrix(Y_true, copy=True)
        Y.eliminate_zeros()
    else:
        Y = np.asarray(Y_true)
        if Y.ndim == 1:
            if Y.shape[0] != n:
                raise MlnbError(f"{name} has {Y.shape[0]} labels but J has {n} rows")
            if not (np.issubdtype(Y.dtype, np.number) or Y.dtype == bool) or \
                    (Y.size and not np.all(np.equal(np.mod(Y, 1), 0))):
                raise MlnbError(f"{name} labels must be integer class indices 0..K-1")
            y = Y.astype(np.int64)
            if y.size and (y.min() < 0 or y.max() >= K):
                raise MlnbError(f"{name} labels must be class indices 0..{K - 1}, found {y.min()}..{y.max()}")
            return y
        Y = sp.csr_matrix(Y != 0)
    if Y.shape != (n, K):
        raise MlnbError(f"{name} has shape {Y.shape} but J has shape {(n, K)}")
    per_row = np.diff(Y.indptr)
    if np.any(per_row != 1):
        row = int(np.flatnonzero(per_row != 1)[0])
        raise MlnbError(f"row {row} of {name} has {per_row[row]} classes; a single-label task needs "
                        "exactly one per document")
    return Y.indices.astype(np.int64)


def top_k_hits(y: np.ndarray, J: np.ndarray, k: int) -> np.ndarray:
    """(n,) whether the true class is among the k highest-scored, ties as sklearn's
    ``top_k_accuracy_score`` (the higher class index ranks first)."""
    rows = np.arange(y.size)
    J_true = J[rows, y][:, None]  # (n, 1)
    later = np.arange(J.shape[1])[None, :] > y[:, None]  # (n, K)
    rank = np.count_nonzero(J > J_true, axis=1) + np.count_nonzero((J == J_true) & later, axis=1)
    return rank < k


def evaluate_multiclass(Y_true, J, class_names=None, threshold: float = 0.5, roc_points: int = 101,
                        curve_categories=None, top_k: int = 2, n_threads: int | None = None, *,
                        probability_scores=None, exclude=None,
                        train_prevalence=None) -> MulticlassEvaluation:
    """Every metric of a single-label model's joint scores ``J`` (n × K) against ``Y_true``.

    Y_true : (n,) class indices, or (n, K) one-hot, sparse or dense: exactly one class per row
    threshold : accepted so that one eval config serves both tasks; the multiclass decision
                is the argmax, so it enters no metric
    top_k : k of ``top_k_accuracy`` and of ``precision_at_k``
    probability_scores : (n × K) calibrated class log-odds for the one-vs-rest probability metrics
                         and for ``log_loss`` (−mean log σ(probability_scores[i, y_i]))
    exclude, train_prevalence : as ``evaluate``: classes left out of the macro averages and of the
                                one-vs-rest micro pools (the document-level accuracy, balanced
                                accuracy, weighted F1, log loss and top-k accuracy keep every
                                class), and the training class shares for the baselines
    Other arguments as ``evaluate``; the module docstring gives the summary keys.
    """
    J = _check_joint(J)
    n, K = J.shape
    y = _true_classes(Y_true, n, K)  # (n,)
    one_hot = sp.csr_matrix((np.ones(n, dtype=np.int8), y, np.arange(n + 1)), shape=(n, K))
    base = evaluate(one_hot, class_log_odds(J), class_names, threshold=threshold, roc_points=roc_points,
                    curve_categories=curve_categories, top_k=top_k, n_threads=n_threads,
                    probability_scores=probability_scores, exclude=exclude, train_prevalence=train_prevalence)  # one-vs-rest, of the class log-odds

    predicted = J.argmax(axis=1)  # (n,) first maximum, as np.argmax / sklearn's predict
    confusion = np.bincount(y * K + predicted, minlength=K * K).reshape(K, K).astype(np.int64)
    tp = np.diag(confusion)
    fp, fn = confusion.sum(axis=0) - tp, confusion.sum(axis=1) - tp
    table = base.per_category.copy()
    table["tp"], table["fp"], table["fn"], table["tn"] = tp, fp, fn, n - tp - fp - fn
    table["accuracy"] = (n - fp - fn) / n if n else np.nan
    table["precision"], table["recall"] = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    table["f1"] = _ratio(2 * tp, 2 * tp + fp + fn)

    n_pos = table["n_pos"].to_numpy()
    evaluable = (table["excluded"] == "").to_numpy()
    pooled = np.ones(K, dtype=bool)
    pooled[list(caller_exclusions(exclude, K))] = False
    if probability_scores is None:
        log_posterior = J[np.arange(n), y] - logsumexp(J, axis=1)  # (n,) log P(y_i | x_i)
    else:  # log σ(u) = −softplus(−u) of the calibrated class log-odds u of the true class
        log_posterior = -np.logaddexp(0.0, -np.asarray(probability_scores, dtype=np.float64)[np.arange(n), y])
    carried = {key: base.summary[key] for key in (*POOLED_KEYS, "baseline_prevalence")}
    summary = _summary(table, evaluable, pooled, carried) | {
        "accuracy": float(tp.sum() / n) if n else float("nan"),
        "balanced_accuracy": float(table["recall"][n_pos > 0].mean()),
        "weighted_f1": float((n_pos * table["f1"].to_numpy()).sum() / n) if n else float("nan"),
        "log_loss": float(-log_posterior.mean()) if n else float("nan"),
        "top_k_accuracy": float(top_k_hits(y, J, top_k).mean()) if n else float("nan"),
        "n_classes": int(K), "task": "multiclass",
    }
    baselines = {name: dict(values) for name, values in base.baselines.items()}
    q = table["prevalence"].to_numpy() if train_prevalence is None else np.asarray(train_prevalence, float)
    pi = table["prevalence"].to_numpy()
    # a random class drawn with the training shares q: right with probability Σ π_k q_k
    baselines["prevalence_random"] |= {"accuracy": float(np.sum(pi * q)),
                                       "log_loss": float(-np.sum(xlogy(pi, q)))}
    inherited = {f.name: getattr(base, f.name) for f in fields(Evaluation)}
    return MulticlassEvaluation(**inherited | {"per_category": table, "summary": summary, "baselines": baselines},
                                confusion=confusion, predicted=predicted, true=y)

