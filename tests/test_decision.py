"""Decision rules on hand-worked examples, a brute-force SCut oracle, and input checks."""

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb.decision import fit_decision_rule
from mlnb.errors import MlnbError

# Validation part: 6 documents × 4 categories, scores and labels.
S_VAL = np.array([[3, 0, 5, 1],
                  [2, 0, 4, 1],
                  [2, 0, 3, 0],
                  [1, 0, 2, 0],
                  [0, 0, 1, -1],
                  [-1, 0, 0, -2]], dtype=np.float32)
Y_VAL = np.array([[1, 0, 1, 1],
                  [0, 0, 0, 0],
                  [1, 0, 0, 0],
                  [1, 0, 1, 0],
                  [0, 0, 0, 0],
                  [0, 0, 0, 0]])
NAMES = ["c0", "c1", "c2", "c3"]


def test_scut_f1_by_hand():
    rule = fit_decision_rule("scut", S_VAL, Y_VAL)
    # F1 = 2·TP / (P + TP + FP) at each cut between distinct scores, accepted set top-down:
    # c0 (P=3):  {3}: 2/4   {3,2,2}: 4/6   {..1}: 6/7   {..0}: 6/8   {..−1}: 6/9
    #            best 6/7 accepting down to 1; midway to the next score 0: t = 0.5
    # c1: no positive, F = 0 everywhere: the first (highest) cut, accept nothing: t = +inf
    # c2 (P=2):  {5}: 2/3   {5,4}: 2/4   {5,4,3}: 2/5   {..2}: 4/6   {..1}: 4/7   {..0}: 4/8
    #            2/3 twice: the higher threshold wins, midway between 5 and 4: t = 4.5
    # c3 (P=1):  the two 1s (one positive, one negative) enter together: {1,1}: 2/3,
    #            {..0}: 2/5, ...  (splitting the tie would have given 1.0): t = (1 + 0)/2 = 0.5
    np.testing.assert_array_equal(rule.thresholds, [0.5, np.inf, 4.5, 0.5])
    np.testing.assert_allclose(rule.best_metric, [6 / 7, 0, 2 / 3, 2 / 3])
    np.testing.assert_allclose(rule.validation_metric, rule.best_metric)
    np.testing.assert_array_equal(rule.fallback, [False, True, False, False])
    np.testing.assert_array_equal(rule.validation_positives, [3, 0, 2, 1])


def test_scut_accuracy_by_hand():
    rule = fit_decision_rule("scut", S_VAL, Y_VAL, metric="accuracy")
    # accuracy = (TP + N − FP) / 6
    # c0 (N=3):  none 3/6  {3}: 4/6  {3,2,2}: 4/6  {..1}: 5/6  {..0}: 4/6  all 3/6  -> t = 0.5
    # c1 (N=6):  none 6/6, best                                                   -> t = +inf
    # c2 (N=4):  none 4/6  {5}: 5/6  {5,4}: 4/6  ...  {..2}: 4/6                  -> t = 4.5
    # c3 (N=5):  none 5/6  {1,1}: 5/6  ...: a tie, the higher threshold (nothing)  -> t = +inf
    np.testing.assert_array_equal(rule.thresholds, [0.5, np.inf, 4.5, np.inf])
    np.testing.assert_allclose(rule.best_metric, [5 / 6, 1, 5 / 6, 5 / 6])
    np.testing.assert_array_equal(rule.fallback, [False, True, False, False])  # c3 has a positive


def test_scut_f_beta_by_hand():
    rule = fit_decision_rule("scut", S_VAL, Y_VAL, metric="f_beta", beta=2.0)
    # F_2 = 5·TP / (4·P + TP + FP); c2 (P=2): {5}: 5/9  {5,4}: 5/10  {5,4,3}: 5/11
    #       {..2}: 10/12 (best)  {..1}: 10/13  {..0}: 10/14  -> midway between 2 and 1: t = 1.5
    assert rule.thresholds[2] == 1.5
    assert rule.best_metric[2] == pytest.approx(10 / 12)
    f1 = fit_decision_rule("scut", S_VAL, Y_VAL, metric="f_beta", beta=1.0)
    np.testing.assert_array_equal(f1.thresholds, fit_decision_rule("scut", S_VAL, Y_VAL).thresholds)


def test_scut_decides_test_scores_at_or_above_the_thresholds():
    rule = fit_decision_rule("scut", S_VAL, Y_VAL)  # t = [0.5, inf, 4.5, 0.5]
    test = np.array([[0.5, 7, 4.5, 0.4],
                     [0.49, -1, 4.6, 0.5],
                     [9, 1e30, 1.5, 1]], dtype=np.float32)
    decided = rule.decide(test)
    assert sp.isspmatrix_csr(decided) and decided.dtype == np.int8
    np.testing.assert_array_equal(decided.toarray(), [[1, 0, 1, 0],
                                                      [0, 0, 1, 1],
                                                      [1, 0, 0, 1]])
    # a threshold rule decides each document alone: any batch gives the same rows
    np.testing.assert_array_equal(rule.decide(test[1:]).toarray(), decided.toarray()[1:])


def test_scutfbr_falls_back_to_the_top_validation_score():
    rule = fit_decision_rule("scutfbr", S_VAL, Y_VAL, fbr=0.7, fbr_rank=1)
    # best F1 = [6/7, 0, 2/3, 2/3]; below 0.7 -> just above the score of the rank-1 validation
    # document: c0 keeps 0.5; c1: s_(1) = 0 (all six tied at 0); c2: 5; c3: 1 (docs 0 and 1 tied)
    above = lambda t: np.nextafter(np.asarray(t, dtype=np.float64), np.inf)  # noqa: E731
    np.testing.assert_array_equal(rule.thresholds, [0.5, above(0), above(5), above(1)])
    np.testing.assert_array_equal(rule.fallback, [False, True, True, True])
    # on validation nothing ties through: c1 (all tied) accepts none, c2 and c3 accept none: F1 0
    np.testing.assert_allclose(rule.validation_metric, [6 / 7, 0, 0, 0])
    assert rule.decide(S_VAL).toarray()[:, 1:].sum() == 0
    second = fit_decision_rule("scutfbr", S_VAL, Y_VAL, fbr=0.7, fbr_rank=2)
    # just above s_(2): c2 accepts the 5 (rank 1) alone, c3's rank-2 score ties rank 1 at 1
    np.testing.assert_array_equal(second.thresholds, [0.5, above(0), above(4), above(1)])
    np.testing.assert_array_equal(second.decide(S_VAL).toarray()[:, 2].sum(), 1)
    nothing = fit_decision_rule("scutfbr", S_VAL, Y_VAL, fbr=0.7, fbr_rank=0)
    np.testing.assert_array_equal(nothing.thresholds, [0.5, np.inf, np.inf, np.inf])
    assert nothing.decide(S_VAL).toarray()[:, 1:].sum() == 0


def test_scutfbr_with_fbr_zero_is_scut():
    # best F < 0 never happens: SCut's thresholds, c1 (no positive) still +inf and flagged
    rule = fit_decision_rule("scutfbr", S_VAL, Y_VAL, fbr=0.0)
    np.testing.assert_array_equal(rule.thresholds, fit_decision_rule("scut", S_VAL, Y_VAL).thresholds)
    np.testing.assert_array_equal(rule.fallback, [False, True, False, False])


def test_scutfbr_keeps_scut_above_fbr():
    # fbr = 0.5: c2 and c3 (2/3) keep SCut's thresholds; c1 (F = 0) still falls back
    rule = fit_decision_rule("scutfbr", S_VAL, Y_VAL, fbr=0.5)
    np.testing.assert_array_equal(rule.thresholds, [0.5, np.nextafter(0.0, 1.0), 4.5, 0.5])
    np.testing.assert_array_equal(rule.fallback, [False, True, False, False])


def test_fixed_needs_no_validation_data():
    rule = fit_decision_rule("fixed", None, None, threshold=0.75)  # logit 0.75 = ln 3 = 1.0986
    assert rule.thresholds is None and rule.n_categories is None
    test = np.array([[1.09, 1.1, -5.0]], dtype=np.float32)
    np.testing.assert_array_equal(rule.decide(test).toarray(), [[0, 1, 0]])
    frame = rule.to_frame(["a", "b", "c"])
    np.testing.assert_allclose(frame["threshold"], np.log(3.0))
    # with validation data it also reports its validation F1: c0 at S ≥ 0 accepts all but the
    # last document: TP 3, FP 2 -> 6/8
    with_val = fit_decision_rule("fixed", S_VAL, Y_VAL)
    np.testing.assert_array_equal(with_val.thresholds, [0, 0, 0, 0])
    assert with_val.validation_metric[0] == pytest.approx(6 / 8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_compiled_cut_is_numpys_on_any_number_of_threads(monkeypatch, dtype):
    """[S ≥ t] counted and written per row on every thread: the CSR of numpy's blocks, index for index,
    with ties at the cut, ±inf scores and cuts, and a float32 score against a float64 cut that
    float32 cannot hold (compared in float64, as numpy compares them)."""
    import numba

    from mlnb import decision

    rng = np.random.default_rng(2)
    S = np.round(rng.normal(size=(30_000, 7)), 1).astype(dtype)
    S[rng.random(S.shape) < 0.02] = np.inf
    S[rng.random(S.shape) < 0.02] = -np.inf
    S[:, 6] = np.float32(0.1)
    # just above float32(0.1) in float64, float32(0.1) again in float32: rejected only in float64
    cuts = np.array([0.0, 0.3, -np.inf, np.inf, 1.0, -0.5, np.nextafter(float(np.float32(0.1)), 1.0)])
    before = numba.get_num_threads()
    try:
        compiled = []
        for threads in sorted({1, before}):
            numba.set_num_threads(threads)
            compiled.append(decision._at_or_above(S, cuts))
    finally:
        numba.set_num_threads(before)
    monkeypatch.setattr(decision, "HAVE_NUMBA", False)
    blocks = decision._at_or_above(S, cuts)
    for D in compiled:
        for field in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(D, field), getattr(blocks, field))
            assert getattr(D, field).dtype == getattr(blocks, field).dtype
    assert blocks[:, 6].sum() == 0 and 0 < blocks.nnz < S.size


def test_pcut_counts_and_ties_by_document_index():
    prevalence = np.array([0.5, 0.25, 0.125, 0.0])
    rule = fit_decision_rule("pcut", train_prevalence=prevalence)
    test = np.array([[1, 2, 0, 9],
                     [3, 7, 0, 9],
                     [3, 7, 0, 9],
                     [0, 5, 0, 9]], dtype=np.float32)
    # n = 4: m = ⌊π·4 + ½⌋ = ⌊2.5⌋ = 2, ⌊1.5⌋ = 1, ⌊1.0⌋ = 1 (0.5 rounds up), ⌊0.5⌋ = 0
    # c0: top 2 are docs 1, 2;  c1: 7 twice -> doc 1 (lower index);  c2: all tied -> doc 0;  c3: none
    np.testing.assert_array_equal(rule.decide(test).toarray(), [[0, 0, 1, 0],
                                                                [1, 1, 0, 0],
                                                                [1, 0, 0, 0],
                                                                [0, 0, 0, 0]])
    np.testing.assert_array_equal(rule.decide(test).sum(axis=0).A1, [2, 1, 1, 0])
    # the first two alone: m = ⌊1.5⌋ = 1, ⌊1.0⌋ = 1, ⌊0.75⌋ = 0, 0 — PCut depends on the batch
    np.testing.assert_array_equal(rule.decide(test[:2]).toarray(), [[0, 0, 0, 0],
                                                                    [1, 1, 0, 0]])


def test_pcut_counts_on_a_large_batch():
    rng = np.random.default_rng(3)
    prevalence = np.array([0.3, 0.01, 0.0, 1.0, 0.0004])
    scores = np.round(rng.normal(size=(10_001, 5)), 1).astype(np.float32)  # many ties
    decided = fit_decision_rule("pcut", train_prevalence=prevalence).decide(scores)
    np.testing.assert_array_equal(decided.sum(axis=0).A1, np.floor(prevalence * 10_001 + 0.5))
    # everything chosen scores at least as high as everything left out
    dense = decided.toarray().astype(bool)
    for k in (0, 1, 4):
        assert scores[dense[:, k], k].min() >= scores[~dense[:, k], k].max()


def test_pcut_decides_one_column_as_it_decides_the_matrix():
    rng = np.random.default_rng(4)
    prevalence = np.array([0.3, 0.01, 0.0, 1.0, 0.2])
    scores = np.round(rng.normal(size=(1001, 5)), 1).astype(np.float32)  # many ties at the m-th score
    scores[:, 4] = 0.5  # every document tied: the first m by index
    rule = fit_decision_rule("pcut", train_prevalence=prevalence)
    decided = rule.decide(scores).tocsc()
    for k in range(5):
        column = rule.decided_in_column(k, np.array(scores[:, k]))
        np.testing.assert_array_equal(np.sort(column), decided[:, k].indices)
    np.testing.assert_array_equal(np.sort(rule.decided_in_column(4, scores[:, 4])), np.arange(200))
    with pytest.raises(MlnbError, match="rule 'fixed' decides documents"):
        fit_decision_rule("fixed").decided_in_column(0, scores[:, 0])


def test_rcut_top_two_with_ties_by_category_index():
    rule = fit_decision_rule("rcut", rcut_k=2)
    test = np.array([[1, 3, 3, 0],
                     [5, 5, 5, -1],
                     [0, -np.inf, 2, -np.inf],
                     [-np.inf, -np.inf, -np.inf, -np.inf]], dtype=np.float32)
    np.testing.assert_array_equal(rule.decide(test).toarray(), [[0, 1, 1, 0],
                                                                [1, 1, 0, 0],
                                                                [1, 0, 1, 0],
                                                                [1, 1, 0, 0]])
    assert fit_decision_rule("rcut", rcut_k=1).decide(test).toarray()[1].tolist() == [1, 0, 0, 0]
    assert fit_decision_rule("rcut", rcut_k=9).decide(test).nnz == 16  # k ≥ K: everything


def _stable_top(values: np.ndarray, m: int) -> np.ndarray:
    """The m highest of ``values`` (a 1-D array), ties to the lower index: a stable sort, descending."""
    chosen = np.zeros(values.size, dtype=bool)
    chosen[np.argsort(-values, kind="stable")[:m]] = True
    return chosen


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("block_elements", [1, 37, 1 << 22])
def test_rank_rules_in_blocks_on_threads_are_a_stable_sort(monkeypatch, threads, block_elements):
    # pcut and rcut decide a block of categories or documents per task of a thread pool: any block size
    # and thread count gives what a stable descending sort of each category (document) gives
    import numba

    from mlnb import decision

    monkeypatch.setattr(decision, "DECIDE_ROWS_ELEMENTS", block_elements)
    monkeypatch.setattr(decision, "PARALLEL_CUT_ELEMENTS", 0)  # blocks on the pool however small the scores
    monkeypatch.setattr(decision, "worker_threads", lambda: threads)
    rng = np.random.default_rng(block_elements)
    scores = np.round(rng.normal(size=(301, 13)), 1).astype(np.float32)  # many ties
    prevalence = rng.random(13) * 0.3
    prevalence[2] = 0.0
    previous = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        pcut = fit_decision_rule("pcut", train_prevalence=prevalence).decide(scores)
        rcut = fit_decision_rule("rcut", rcut_k=3).decide(scores)
    finally:
        numba.set_num_threads(previous)
    counts = np.minimum(np.floor(prevalence * 301 + 0.5), 301).astype(int)
    expected_pcut = np.column_stack([_stable_top(scores[:, k], counts[k]) for k in range(13)])
    expected_rcut = np.vstack([_stable_top(row, 3) for row in scores])
    np.testing.assert_array_equal(pcut.toarray(), expected_pcut)
    np.testing.assert_array_equal(rcut.toarray(), expected_rcut)
    for decided in (pcut, rcut):
        assert decided.has_sorted_indices and decided.dtype == np.int8


def _brute_force_scut(s, y, metric, beta=1.0):
    """The best metric over every threshold in {distinct scores} ∪ {+inf}, and the highest
    threshold reaching it, by plain counting."""
    best, best_t = -1.0, None
    for t in sorted(set(s.tolist()) | {np.inf}, reverse=True):
        d = s >= t
        tp, fp = int(np.sum(d & y)), int(np.sum(d & ~y))
        fn, tn = int(np.sum(~d & y)), int(np.sum(~d & ~y))
        if metric == "accuracy":
            value = (tp + tn) / s.size
        else:
            den = (1 + beta**2) * tp + beta**2 * fn + fp
            value = (1 + beta**2) * tp / den if den else 0.0
        if value > best + 1e-12:
            best, best_t = value, t
    return best, best_t


@pytest.mark.parametrize("metric,beta", [("f1", 1.0), ("accuracy", 1.0), ("f_beta", 0.5)])
def test_scut_equals_brute_force_with_ties(metric, beta):
    rng = np.random.default_rng(11)
    Y = rng.random((300, 8)) < np.array([0.5, 0.2, 0.05, 0.01, 0.0, 0.3, 0.1, 1.0])
    S = (np.round(rng.normal(size=(300, 8)) + 1.5 * Y, 1)).astype(np.float32)  # many ties
    rule = fit_decision_rule("scut", S, sp.csr_matrix(Y), metric=metric, beta=beta)
    for k in range(8):
        best, best_t = _brute_force_scut(S[:, k], Y[:, k], metric, beta)
        assert rule.best_metric[k] == pytest.approx(best, abs=1e-12)
        # the same decisions on validation as the brute force's highest optimal threshold
        np.testing.assert_array_equal(S[:, k] >= rule.thresholds[k], S[:, k] >= best_t)
        if np.isfinite(best_t) and best_t > S[:, k].min():  # strictly between two distinct scores
            below = S[:, k][S[:, k] < best_t].max()
            assert below < rule.thresholds[k] < best_t
    np.testing.assert_allclose(rule.validation_metric, rule.best_metric, atol=1e-12)


def test_sparse_and_dense_labels_agree():
    dense = fit_decision_rule("scutfbr", S_VAL, Y_VAL, fbr=0.7)
    sparse = fit_decision_rule("scutfbr", S_VAL, sp.csr_matrix(Y_VAL), fbr=0.7)
    np.testing.assert_array_equal(dense.thresholds, sparse.thresholds)


def test_midpoint_of_adjacent_float64_scores_stays_above_the_rejected_one():
    b = 1.0
    a = np.nextafter(b, 2.0)  # a/2 + b/2 = 1 + 2⁻⁵³ is a tie, rounded to even: onto b = 1.0
    rule = fit_decision_rule("scut", np.array([[a], [b]]), np.array([[1], [0]]))
    np.testing.assert_array_equal(rule.decide(np.array([[a], [b]])).toarray(), [[1], [0]])


def test_infinite_validation_scores():
    S = np.array([[np.inf], [1.0], [-np.inf]])
    # positive at +inf only: accept {+inf}; midway to 1 is +inf, which still accepts +inf
    assert fit_decision_rule("scut", S, np.array([[1], [0], [0]])).thresholds[0] == np.inf
    # positives down to 1, negative at −inf: midway would be −inf; the lowest accepted (1) is used
    assert fit_decision_rule("scut", S, np.array([[1], [1], [0]])).thresholds[0] == 1.0


def test_fitting_never_reads_the_test_part():
    first = fit_decision_rule("scut", S_VAL, Y_VAL)
    thresholds = first.thresholds.copy()
    first.decide(np.full((3, 4), 100.0))
    second = fit_decision_rule("scut", S_VAL, Y_VAL)
    second.decide(np.full((5, 4), -100.0))
    np.testing.assert_array_equal(first.thresholds, thresholds)  # deciding changed nothing
    np.testing.assert_array_equal(second.thresholds, thresholds)
    test = np.zeros((3, 4))
    test[1] = np.nan
    with pytest.raises(MlnbError, match=r"scores: NaN score for document 1, category 0 \(4 NaN in all\)"):
        first.decide(test)
    with pytest.raises(MlnbError, match="scores: 3 columns, but the rule was fitted on 4"):
        first.decide(np.zeros((2, 3)))


def test_to_frame_one_row_per_category():
    frame = fit_decision_rule("scutfbr", S_VAL, Y_VAL, fbr=0.7).to_frame(NAMES)
    assert list(frame["name"]) == NAMES
    assert list(frame.columns) == ["category", "name", "rule", "metric", "threshold", "validation_positives",
                                   "best_validation_metric", "validation_metric", "fallback",
                                   "train_prevalence"]
    np.testing.assert_array_equal(frame["fallback"], [False, True, True, True])
    with pytest.raises(MlnbError, match="category_names: 3 names for 4 categories"):
        fit_decision_rule("scut", S_VAL, Y_VAL).to_frame(NAMES[:3])


@pytest.mark.parametrize("kwargs,message", [
    ({"rule": "nope"}, "rule: unknown decision rule 'nope'"),
    ({"rule": "fixed", "threshold": 1.0}, "threshold: a probability strictly between 0 and 1"),
    ({"rule": "scut", "metric": "auc"}, "metric: unknown metric 'auc'"),
    ({"rule": "scut", "beta": 2.0}, "beta: 2.0 applies to metric = 'f_beta' only"),
    ({"rule": "scutfbr", "metric": "accuracy"}, "metric: scutfbr falls back on a low F-score"),
    ({"rule": "scutfbr", "fbr": 1.5}, "fbr: an F-score between 0 and 1"),
    ({"rule": "scutfbr", "fbr_rank": -1}, "fbr_rank: a rank ≥ 0"),
    ({"rule": "scutfbr", "fbr_rank": 7}, "fbr_rank: 7 exceeds the 6 validation documents"),
    ({"rule": "rcut", "rcut_k": 0}, "rcut_k: a whole number of categories ≥ 1"),
    ({"rule": "pcut"}, "train_prevalence: rule 'pcut' needs"),
    ({"rule": "pcut", "train_prevalence": [0.1, 0.2]}, r"train_prevalence: one share per category \(4\)"),
])
def test_bad_options_name_the_parameter(kwargs, message):
    options = {**kwargs}  # a copy: the parameter's dict is shared between runs
    rule = options.pop("rule")
    with pytest.raises(MlnbError, match=message):
        fit_decision_rule(rule, S_VAL, Y_VAL, **options)


def test_bad_validation_inputs():
    with pytest.raises(MlnbError, match="scores_val, Y_val: rule 'scut' is fitted on validation"):
        fit_decision_rule("scut", S_VAL, None)
    with pytest.raises(MlnbError, match=r"Y_val: shape \(6, 3\) differs"):
        fit_decision_rule("scut", S_VAL, Y_VAL[:, :3])
    with pytest.raises(MlnbError, match="Y_val: document 0: label value 2.* expected a 0/1 category matrix"):
        fit_decision_rule("scut", S_VAL, 2 * Y_VAL)
    bad = S_VAL.copy()
    bad[4, 2] = np.nan
    with pytest.raises(MlnbError, match=r"scores_val: NaN score for document 4, category 2 \(1 NaN in all\)"):
        fit_decision_rule("scut", bad, Y_VAL)


@pytest.mark.parametrize("dtype", [">f4", ">f8", np.int64, np.float16, bool])
def test_scores_the_compiled_cut_cannot_take_get_numpys(dtype):
    """Big-endian, integer, half-precision or boolean scores above the compiled cut's size: numpy's
    comparison, the same decisions as the native float64 scores give (no error from the compiler)."""
    S = np.round(np.random.default_rng(4).normal(size=(2000, 50)) * 3)
    rule = fit_decision_rule("fixed", None, None, threshold=0.5)
    expected = rule.decide(S if dtype is not bool else S > 0)
    got = rule.decide(S.astype(dtype))
    assert (got != expected).nnz == 0
