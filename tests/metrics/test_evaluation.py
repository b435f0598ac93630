"""evaluate(): per-category table and micro/macro averages against sklearn.metrics."""

import numpy as np
import pytest
from sklearn.metrics import f1_score, roc_auc_score

import scipy.sparse as sp

from mlnb.errors import MlnbError
from mlnb.metrics import evaluate, precision_at_k
from mlnb.metrics.ranking import auc_from_curve


@pytest.fixture
def scored(make_scored):
    return make_scored(2)


def test_auc_and_averages_equal_sklearn(scored):
    Y, scores = scored
    ev = evaluate(Y, scores, roc_points=101)
    kept = [0, 1, 2, 3, 4]  # 5 has no positives, 6 no negatives
    np.testing.assert_array_equal(ev.excluded, [5, 6])
    assert ev.summary["n_excluded"] == 2 and ev.summary["n_evaluable"] == 5
    assert np.isnan(ev.per_category["auc"][5]) and np.isnan(ev.per_category["auc"][6])
    for k in kept:
        assert ev.per_category["auc"][k] == pytest.approx(roc_auc_score(Y[:, k], scores[:, k]), abs=1e-9)
    assert ev.summary["macro_auc"] == pytest.approx(roc_auc_score(Y[:, kept], scores[:, kept],
                                                                  average="macro"), abs=1e-9)
    assert ev.summary["micro_auc"] == pytest.approx(roc_auc_score(Y, scores, average="micro"), abs=1e-9)
    predicted = (scores >= 0).astype(int)
    assert ev.summary["micro_f1"] == pytest.approx(f1_score(Y, predicted, average="micro"), abs=1e-9)
    assert ev.summary["macro_f1"] == pytest.approx(
        f1_score(Y, predicted, average="macro", labels=kept, zero_division=0), abs=1e-9)


def test_curve_grids_have_one_row_per_category(scored):
    Y, scores = scored
    ev = evaluate(Y, scores, roc_points=11)
    assert ev.roc_tpr.shape == (7, 11) and ev.gains.shape == (7, 11)
    assert ev.roc_lift.shape == (7, 10) and ev.depth_lift.shape == (7, 10)
    assert np.all(np.diff(ev.roc_tpr[:5], axis=1) >= 0)
    np.testing.assert_allclose(ev.roc_tpr[:5, -1], 1.0)


def test_shape_mismatch_is_an_error(scored):
    Y, scores = scored
    with pytest.raises(ValueError, match="shape"):
        evaluate(Y, scores[:, :3])


def test_calibration_table_counts_every_pair():
    Y = np.array([[1, 0], [0, 0], [1, 1], [0, 1]])
    z = np.array([[3.0, -3.0], [-3.0, 0.1], [0.1, 3.0], [-0.1, -3.0]])
    cal = evaluate(Y, z).calibration
    assert cal["count"].sum() == 8
    p = 1 / (1 + np.exp(-z))
    top = cal.iloc[-1]  # p >= 0.9: sigmoid(3) = 0.953, twice, both positive
    assert top["count"] == 2 and top["observed_rate"] == 1.0
    assert top["mean_predicted"] == pytest.approx(p[p >= 0.9].mean())
    middle = cal[(cal.lower <= 0.5) & (cal.upper > 0.5)].iloc[0]  # sigmoid(0.1) = 0.525, twice
    assert middle["count"] == 2 and middle["observed_rate"] == 0.5


def test_numba_and_numpy_pointwise_sums_agree(scored):
    from mlnb.metrics._pointwise import pointwise_sums

    Y, scores = scored
    fast, fast_bins = pointwise_sums(Y, scores.astype(np.float32), 0.0, 10, use_numba=True)
    slow, slow_bins = pointwise_sums(Y, scores.astype(np.float32), 0.0, 10, use_numba=False)
    for field in fast:
        np.testing.assert_allclose(fast[field], slow[field], rtol=1e-6, err_msg=field)
    np.testing.assert_allclose(fast_bins, slow_bins, rtol=1e-6)



@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_finite_range_by_hand_and_against_numpy(dtype, compiled, monkeypatch):
    """The streamed micro AUC's grid spans the finite scores of the pooled categories: the kernel
    (blocks of rows on every thread) and the path without numba against numpy's min and max of the
    finite values."""
    from mlnb.metrics import _pointwise
    from mlnb.metrics._pointwise import finite_range

    monkeypatch.setattr(_pointwise, "HAVE_NUMBA", _pointwise.HAVE_NUMBA and compiled)

    by_hand = np.array([[1.0, -np.inf, 3.0], [np.inf, -2.0, 0.5]], dtype=dtype)
    assert finite_range(by_hand) == (-2.0, 3.0)
    assert finite_range(by_hand, columns=np.array([0])) == (1.0, 1.0)
    assert finite_range(by_hand, columns=np.array([], dtype=np.int64)) == (np.inf, -np.inf)
    assert finite_range(np.full((3, 2), np.inf, dtype=dtype)) == (np.inf, -np.inf)
    rng = np.random.default_rng(3)
    S = rng.normal(size=(5000, 7)).astype(dtype) * 10  # 4 blocks of rows
    S[rng.random(S.shape) < 0.01] = np.inf
    S[rng.random(S.shape) < 0.01] = -np.inf
    for columns in (None, np.array([1, 4, 6])):
        kept = S if columns is None else S[:, columns]
        finite = kept[np.isfinite(kept)]
        assert finite_range(S, columns) == (float(finite.min()), float(finite.max()))

def test_precision_at_k_by_hand():
    scores = np.array([[0.9, 0.1, 0.5, 0.3],   # top 2 = {0, 2}: 1 true of 2
                       [0.2, 0.2, 0.2, 0.1],   # three-way tie: the lower indices {0, 1}: 1 true
                       [-1.0, 2.0, 2.0, 2.0],  # {1, 2}: 0 true
                       [5.0, -np.inf, 0.0, 1.0]])  # {0, 3}: 2 true
    Y = np.array([[1, 0, 0, 1], [0, 1, 1, 0], [0, 0, 0, 1], [1, 1, 0, 1]])
    assert precision_at_k(Y, scores, 2) == pytest.approx((1 + 1 + 0 + 2) / (4 * 2), abs=1e-15)
    assert precision_at_k(Y, scores, 1) == pytest.approx((1 + 0 + 0 + 1) / 4, abs=1e-15)
    # top 3 = {0, 2, 3}, {0, 1, 2}, {1, 2, 3}, {0, 2, 3}: 2, 2, 1, 2 true
    assert precision_at_k(Y, scores, 3) == pytest.approx((2 + 2 + 1 + 2) / (4 * 3), abs=1e-15)
    assert precision_at_k(Y, scores, 4) == pytest.approx(Y.sum() / 16, abs=1e-15)  # k = K: every category
    assert precision_at_k(Y, scores, 6) == pytest.approx(Y.sum() / 24, abs=1e-15)  # still divided by k
    assert precision_at_k(sp.csr_matrix(Y), scores, 2) == precision_at_k(Y, scores, 2)
    assert evaluate(Y, scores, top_k=2).summary["precision_at_k"] == pytest.approx(0.5, abs=1e-15)
    assert evaluate(Y, scores).summary["precision_at_k"] == 0.5  # default k = 2
    with pytest.raises(MlnbError, match="top_k must be a positive integer, got 0"):
        evaluate(Y, scores, top_k=0)


@pytest.mark.parametrize("k", [1, 3, 7])
def test_precision_at_k_equals_a_stable_sort_in_row_blocks(scored, k, monkeypatch):
    from mlnb.metrics import evaluation

    Y, scores = scored  # rounded scores: ties within rows
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]  # ties: the lower index first
    expected = np.take_along_axis(Y, order, axis=1).sum() / (Y.shape[0] * k)
    assert precision_at_k(Y, scores, k) == pytest.approx(expected, abs=1e-15)
    monkeypatch.setattr(evaluation, "PRECISION_BLOCK_ROWS", 37)
    assert precision_at_k(sp.csc_matrix(Y), scores, k) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("k, columns", [(1, None), (2, None), (3, [0, 2, 4, 5]), (5, None)])
def test_precision_hits_compiled_scan_is_numpys_partition(monkeypatch, k, columns):
    """The compiled scan that keeps each row's k best (ties to the lower index) counts the hits of
    numpy's partition per block: with ties, ±inf scores, float32, and labels given with repeats and
    explicit zeros (a repeat is one label, a stored 0 none)."""
    from mlnb.metrics import evaluation

    if not evaluation.HAVE_NUMBA:
        pytest.skip("numba is not installed: numpy's partition is the only way")
    rng = np.random.default_rng(11)
    n, K = 4000, 6
    S = np.round(rng.normal(size=(n, K)), 1).astype(np.float32)
    S[rng.random((n, K)) < 0.05] = np.inf
    S[rng.random((n, K)) < 0.05] = -np.inf
    Y = (rng.random((n, K)) < 0.3).astype(np.int8)
    indices, data, indptr = [], [], [0]
    for i in range(n):
        labels = np.flatnonzero(Y[i]).tolist()
        extra = labels[:1] if i % 3 == 0 else []  # a label stored again as 0: 1 + 0, still one label
        zero = [j for j in range(K) if Y[i, j] == 0][:1] if i % 5 == 0 else []  # a stored 0: none
        indices += labels + extra + zero
        data += [1] * len(labels) + [0] * len(extra) + [0] * len(zero)
        indptr.append(len(indices))
    messy = sp.csr_matrix((np.array(data, np.int8), np.array(indices), np.array(indptr)), shape=(n, K))
    assert not messy.has_canonical_format
    compiled = evaluation.precision_hits(messy, S, k, columns, 1)
    assert evaluation.precision_hits(Y, S, k, columns, 3) == compiled
    monkeypatch.setattr(evaluation, "HAVE_NUMBA", False)
    assert evaluation.precision_hits(Y, S, k, columns, 1) == compiled


@pytest.mark.parametrize("columns", [None, [0, 2, 3]])
def test_pooled_rank_metrics_are_the_same_bits_from_sorted_runs_on_any_number_of_threads(monkeypatch, columns):
    """The negatives sorted as several runs at once (one per thread) and each positive's counts summed
    over the runs: whole numbers, so micro AUC and AP are those of one sorted array, bit for bit, and
    scikit-learn's pooled ones; with ties within and across the runs."""
    from sklearn.metrics import average_precision_score

    from mlnb.metrics import evaluation

    rng = np.random.default_rng(4)
    n, K = 3000, 5
    Y = (rng.random((n, K)) < 0.2).astype(np.int8)
    S = np.round(rng.normal(size=(n, K)) + 1.5 * Y, 1).astype(np.float32)  # one decimal: many ties
    monkeypatch.setattr(evaluation, "POOLED_RUN_MIN", 100)  # several runs at this size
    one = evaluation.pooled_rank_metrics(Y, S, columns, n_threads=1)
    for threads in (2, 3, 8):
        assert evaluation.pooled_rank_metrics(sp.csr_matrix(Y), S, columns, n_threads=threads) == one
    kept = slice(None) if columns is None else columns
    y, s = Y[:, kept].ravel(), S[:, kept].ravel()
    assert one[0] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert one[1] == pytest.approx(average_precision_score(y, s), abs=1e-12)


@pytest.mark.parametrize("k, columns", [(2, None), (3, [0, 2, 4]), (9, None)])
def test_precision_at_k_is_the_same_on_any_number_of_threads(k, columns):
    """Blocks of documents ranked by several threads at once: the hits are whole numbers, so the same
    precision@k as one thread, ties (to the lower index) included, and as a direct count per document."""
    from mlnb.metrics.evaluation import precision_hits

    rng = np.random.default_rng(5)
    n, K = 5000, 6
    Y = (rng.random((n, K)) < 0.3).astype(np.int8)
    S = np.round(rng.normal(size=(n, K)), 1)  # many ties
    one = precision_hits(Y, S, k, columns, 1)
    for threads in (2, 3, 7):
        assert precision_hits(sp.csr_matrix(Y), S, k, columns, threads) == one
    kept = np.arange(K) if columns is None else np.asarray(columns)
    direct = sum(Y[i, kept[np.argsort(-S[i, kept], kind="stable")[:k]]].sum() for i in range(n))
    assert one == direct
    assert precision_at_k(Y, S, k, columns, n_threads=2) == one / (n * k)


def test_an_error_in_the_calling_thread_drops_the_categories_not_started(monkeypatch):
    """evaluate() on two threads queues every category's ranks at once; when the calling thread fails
    (or is interrupted) meanwhile, the error comes back without waiting for the queued ones to run."""
    import time

    from mlnb.metrics import evaluation

    rng = np.random.default_rng(0)
    K = 400
    Y = (rng.random((500, K)) < 0.1).astype(np.int8)
    S = rng.normal(size=Y.shape)
    ran = []
    rank_parts = evaluation.rank_parts

    def slow_rank_parts(*args):
        ran.append(1)
        time.sleep(0.005)  # 400 of them: a second on two threads
        return rank_parts(*args)

    def failing(*args, **kwargs):
        raise MlnbError("failed in the calling thread")

    monkeypatch.setattr(evaluation, "rank_parts", slow_rank_parts)
    evaluation.evaluate(Y[:, :3], S[:, :3], n_threads=1)  # the category work is the one replaced here
    assert len(ran) == 3
    ran.clear()
    monkeypatch.setattr(evaluation, "label_ranking_metrics", failing)
    with pytest.raises(MlnbError, match="failed in the calling thread"):
        evaluation.evaluate(Y, S, n_threads=2)
    assert len(ran) < K // 2


@pytest.mark.parametrize("k, columns, message", [
    (0, None, "k must be a positive integer, got 0"),
    (True, None, "k must be a positive integer, got True"),
    (1.5, None, "k must be a positive integer, got 1.5"),
    (2, [0, 7], r"columns must be increasing category indices in 0..3, got \[0, 7\]"),
    (2, [-1, 2], r"in 0..3, got \[-1, 2\]"),
    (2, [2, 1], r"in 0..3, got \[2, 1\]"),
    (2, [1, 1], r"in 0..3, got \[1, 1\]"),
    (2, [0.5, 1], "columns must be a list of category indices"),
])
def test_precision_at_k_refuses_what_its_compiled_scan_cannot_read(k, columns, message):
    """The scan reads the scores at the columns unchecked: a bad k or column is one MlnbError line,
    never a read outside the array (a k of 0 or a column of 7 crashed the process before)."""
    Y = np.eye(4, dtype=np.int8)
    S = np.arange(16, dtype=np.float64).reshape(4, 4)
    with pytest.raises(MlnbError, match=message):
        precision_at_k(Y, S, k, columns)


def test_a_rank_curve_made_by_hand_needs_tp_and_fp_of_one_length():
    from mlnb.metrics.ranking import RankCurve

    curve = RankCurve(thresholds=np.array([np.inf, 1.0]), tp=np.array([0, 1]), fp=np.array([0]), n_pos=1, n_neg=1)
    with pytest.raises(MlnbError, match="tp and fp of one length"):
        auc_from_curve(curve)


@pytest.fixture(scope="module")
def multiclass_runs():
    """A multiclass run of two models on 4 overlapping classes (plus class 4, absent from training):
    (runs, Y_train, Y_test, y_test, names)."""
    import warnings

    from mlnb.config import load_config
    from mlnb.study import run_models

    rng = np.random.default_rng(0)
    n, V, K = 900, 300, 5
    y = rng.integers(0, K - 1, n)
    y[-20:] = K - 1  # test documents of a class the models never trained on
    rates = rng.gamma(0.5, 1.0, V) * rng.lognormal(0, 0.3, (K, V))
    X = sp.csr_matrix(rng.poisson(rates[y] * 0.1))
    Y = sp.csr_matrix(np.eye(K, dtype=np.int8)[y])
    config = load_config("configs/iris.toml", ["eval.bootstrap=0", "models.lr.npasses=2",
                                               "models.gnb.event_model=multinomial"])
    names = [f"c{k}" for k in range(K)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the untrained class
        runs = run_models(config, X[:600], Y[:600], X[600:], Y[600:], names)
    return runs, Y[:600], Y[600:], y[600:], names


def test_multiclass_scores_with_task_multiclass_give_the_runs_numbers(multiclass_runs):
    """The issue: a multiclass model's scores read as multilabel log-odds gave NB macro AUC 0.5656,
    F1 0 and log loss 35 where the run said 0.8928, silently."""
    runs, Y_train, Y_test, y_test, names = multiclass_runs
    for run in runs:
        for labels in (Y_test, y_test):  # one-hot rows or class indices
            ours = evaluate(labels, run.scores, names, Y_train=Y_train, task="multiclass").summary
            for key in ("macro_auc", "micro_auc", "accuracy", "macro_f1", "log_loss", "balanced_accuracy",
                        "n_evaluable", "n_excluded_by_caller"):
                assert ours[key] == run.evaluation.summary[key], (run.name, key)
    assert run.evaluation.summary["n_excluded_by_caller"] == 1  # the class without training documents


def test_class_indices_are_read_as_multiclass(multiclass_runs):
    runs, Y_train, Y_test, y_test, names = multiclass_runs
    assert evaluate(y_test, runs[0].scores).summary == evaluate(Y_test, runs[0].scores, task="multiclass").summary


def test_one_label_per_document_without_task_is_refused_in_one_line(multiclass_runs):
    runs, Y_train, Y_test, y_test, names = multiclass_runs
    with pytest.raises(MlnbError, match=r"^Y_true has exactly one label per document: pass task='multiclass' .* "
                                        r"or task='multilabel' .*log-odds$"):
        evaluate(Y_test, runs[0].scores)
    assert "task" not in evaluate(Y_test, runs[0].scores, task="multilabel").summary  # one-vs-rest, as asked


@pytest.mark.parametrize("options, message", [
    ({"task": "binary"}, r"task must be one of \('multilabel', 'multiclass'\), got 'binary'"),
    ({"task": "multiclass", "decisions": np.eye(3)}, "decisions: with task='multiclass' the argmax .* decides"),
    ({"task": "multiclass", "Y_train": np.array([0, 1, 3])}, r"Y_train labels must be class indices 0..2"),
    ({"task": "multiclass", "Y_train": np.eye(4)[:, :3]}, r"row 3 of Y_train has 0 classes"),
])
def test_what_a_multiclass_evaluation_cannot_take_is_one_line(options, message):
    with pytest.raises(MlnbError, match=message):
        evaluate(np.array([0, 1, 2]), np.log(np.full((3, 3), 1 / 3)), **options)
