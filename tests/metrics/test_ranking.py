"""Rank metrics against sklearn.metrics and hand-worked examples."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score, roc_curve

from mlnb.metrics.ranking import (auc_from_curve, average_precision_from_curve, depth_lift, fpr_grid, gains_on_grid,
                                  rank_curve, rank_parts, roc_auc, roc_curve_exact, roc_lift, roc_on_grid)


@pytest.fixture
def tied_scores():
    rng = np.random.default_rng(0)
    y = rng.random(2000) < 0.1
    scores = np.round(rng.normal(size=2000) + 1.5 * y, 1)  # rounding makes many ties
    return y, scores


def test_auc_equals_sklearn_with_ties(tied_scores):
    y, s = tied_scores
    assert roc_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_exact_roc_equals_sklearn_roc_curve(tied_scores):
    y, s = tied_scores
    fpr, tpr, thresholds = roc_curve_exact(y, s)
    ref_fpr, ref_tpr, ref_thr = roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(fpr, ref_fpr, atol=1e-12)
    np.testing.assert_allclose(tpr, ref_tpr, atol=1e-12)
    np.testing.assert_array_equal(thresholds[1:], ref_thr[1:])


@pytest.mark.parametrize("case", ["ties", "float32", "infinities", "constant", "no positive", "all positive",
                                  "one document", "empty"])
def test_the_compiled_curve_walk_is_the_searchsorted_curve(monkeypatch, case):
    """rank_curve's one walk down the sorted scores (numba, letting other threads run) gives the arrays,
    dtypes and counts of the numpy way (distinct values by !=, positives counted by searchsorted), and
    the ROC and gains on a grid are those of the ratio arrays, bit for bit."""
    from mlnb.metrics import ranking

    if not ranking.HAVE_NUMBA:
        pytest.skip("numba is not installed: the numpy way is the only one")
    rng = np.random.default_rng(7)
    y = rng.random(3000) < 0.15
    s = np.round(rng.normal(size=3000) + 1.5 * y, 1)
    if case == "float32":
        s = s.astype(np.float32)
    elif case == "infinities":
        s[:40], s[40:70] = np.inf, -np.inf
        y[:5] = True
    elif case == "constant":
        s[:] = 2.5
    elif case == "no positive":
        y[:] = False
    elif case == "all positive":
        y[:] = True
    elif case == "one document":
        y, s = y[:1], s[:1]
    elif case == "empty":
        y, s = y[:0], s[:0]
    grids = (fpr_grid(101), fpr_grid(6), np.array([0.0, 0.3, 1.0]))
    compiled = rank_curve(y, s)
    compiled_grids = [(roc_on_grid(compiled, grid), gains_on_grid(compiled, grid)) for grid in grids]
    monkeypatch.setattr(ranking, "HAVE_NUMBA", False)
    plain = rank_curve(y, s)
    for field in ("thresholds", "tp", "fp"):
        assert getattr(compiled, field).dtype == getattr(plain, field).dtype
        np.testing.assert_array_equal(getattr(compiled, field), getattr(plain, field))
    assert (compiled.n_pos, compiled.n_neg) == (plain.n_pos, plain.n_neg)
    # the grids read off the curve at the points the searches visit: the same bits as over the arrays
    for grid, (roc, gains) in zip(grids, compiled_grids):
        np.testing.assert_array_equal(roc, roc_on_grid(plain, grid))
        np.testing.assert_array_equal(gains, gains_on_grid(plain, grid))
    # the area is an integer either way; the precision sum compensated against numpy's pairwise sum
    np.testing.assert_equal(auc_from_curve(compiled), auc_from_curve(plain))
    np.testing.assert_allclose(average_precision_from_curve(compiled), average_precision_from_curve(plain),
                               rtol=1e-15)


def test_the_sums_of_the_walk_are_those_of_the_arrays_and_the_precision_sum_is_compensated():
    """A curve's walk adds up its area and precision terms on its way; a curve made elsewhere (binned,
    by hand) sums its arrays by the same steps: the same bits. Over a long curve the compensated sum
    of the precision terms is within an ulp of the exactly rounded one (math.fsum)."""
    import dataclasses
    import math

    from mlnb.metrics import ranking

    if not ranking.HAVE_NUMBA:
        pytest.skip("numba is not installed: the sums come from numpy's")
    rng = np.random.default_rng(3)
    y = rng.random(200_000) < 0.3
    s = rng.normal(size=y.size) + y
    walked = rank_curve(y, s)
    assert walked.sums is not None
    from_arrays = dataclasses.replace(walked, sums=None)
    assert auc_from_curve(from_arrays) == auc_from_curve(walked)
    assert average_precision_from_curve(from_arrays) == average_precision_from_curve(walked)
    tp, fp = walked.tp, walked.fp
    terms = np.diff(tp) * (tp[1:] / (tp + fp)[1:])
    exact = math.fsum(terms.tolist())
    assert abs(walked.sums[1] - exact) <= np.spacing(exact)
    assert walked.sums[0] == int(np.sum(np.diff(fp) * (tp[1:] + tp[:-1])))


def test_hand_worked_roc_grid_gains_and_lift():
    # scores 4 3 2 1 with labels 1 0 1 0: P = N = 2
    y, s = np.array([1, 0, 1, 0]), np.array([4.0, 3.0, 2.0, 1.0])
    curve = rank_curve(y, s)
    np.testing.assert_array_equal(curve.fpr, [0, 0, 0.5, 0.5, 1])
    np.testing.assert_array_equal(curve.tpr, [0, 0.5, 0.5, 1, 1])
    grid = fpr_grid(5)  # 0, .25, .5, .75, 1
    tpr = roc_on_grid(curve, grid)
    # at FPR 0 the top of the vertical segment (0.5); at 0.5 the top again (1.0)
    np.testing.assert_allclose(tpr, [0.5, 0.5, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(roc_lift(tpr, grid), [2.0, 2.0, 4 / 3, 1.0])
    # depth 0.25: first document (positive) -> gains 0.5; depth 0.5 -> 0.5; 0.75 -> 1.0
    gains = gains_on_grid(curve, grid)
    np.testing.assert_allclose(gains, [0, 0.5, 0.5, 1.0, 1.0])
    np.testing.assert_allclose(depth_lift(gains, grid), [2.0, 1.0, 4 / 3, 1.0])
    assert roc_auc(y, s) == pytest.approx(0.75)


def test_ties_are_joined_by_straight_segments():
    # all four documents tied: the ROC is the diagonal, AUC 1/2
    y, s = np.array([1, 0, 1, 0]), np.zeros(4)
    grid = fpr_grid(5)
    np.testing.assert_allclose(roc_on_grid(rank_curve(y, s), grid), grid)
    assert roc_auc(y, s) == 0.5


def test_grid_auc_approaches_exact_auc(tied_scores):
    y, s = tied_scores
    grid = fpr_grid(2001)
    tpr = roc_on_grid(rank_curve(y, s), grid)
    area = float(np.sum(np.diff(grid) * (tpr[1:] + tpr[:-1]) / 2))
    assert area == pytest.approx(roc_auc(y, s), abs=2e-3)


def test_undefined_without_positives_or_negatives():
    assert np.isnan(roc_auc(np.zeros(5), np.arange(5.0)))
    assert np.isnan(roc_auc(np.ones(5), np.arange(5.0)))
    assert np.isnan(roc_on_grid(rank_curve(np.zeros(5), np.arange(5.0)), fpr_grid(3))).all()


def test_log_odds_keep_the_ranking_that_saturated_probabilities_lose():
    y = np.array([1, 0, 1, 0, 0])
    z = np.array([60.0, 50.0, 45.0, 40.0, -60.0])  # sigmoid(z) in float32 is 1.0 for the top four
    p = (1 / (1 + np.exp(-z))).astype(np.float32)
    assert roc_auc(y, z) == pytest.approx(roc_auc_score(y, z))
    assert roc_auc(y, z) > roc_auc(y, p)


def test_infinite_scores_tie_like_any_other_value():
    y, s = np.array([1, 0, 1, 0]), np.array([np.inf, np.inf, -np.inf, -np.inf])
    assert roc_auc(y, s) == 0.5


def test_average_precision_equals_sklearn_with_ties(tied_scores):
    from sklearn.metrics import average_precision_score

    from mlnb.metrics.ranking import average_precision_from_curve

    y, s = tied_scores
    assert average_precision_from_curve(rank_curve(y, s)) == pytest.approx(average_precision_score(y, s),
                                                                           abs=1e-12)
    # by hand: scores 3 2 2 1 with labels 1 0 1 0: precision 1 at the first positive, 2/3 at the tie
    assert average_precision_from_curve(rank_curve([1, 0, 1, 0], [3.0, 2.0, 2.0, 1.0])) == \
        pytest.approx((1 + 2 / 3) / 2, abs=1e-15)
    assert np.isnan(average_precision_from_curve(rank_curve([0, 0], [1.0, 2.0])))


@pytest.fixture
def label_matrix():
    rng = np.random.default_rng(5)
    Y = rng.random((300, 6)) < [0.5, 0.3, 0.2, 0.1, 0.6, 0.05]
    Y[0], Y[1] = True, False  # every label, no label: the conventions of sklearn
    scores = np.round(rng.normal(size=Y.shape) + Y, 0)  # few distinct values: many ties in a row
    scores[2] = 0.0  # a row tied throughout
    return Y, scores


@pytest.mark.parametrize("use_numba", [True, False])
@pytest.mark.parametrize("columns", [None, [0, 2, 3, 5]])
def test_label_ranking_metrics_equal_sklearn_with_ties(label_matrix, use_numba, columns):
    import scipy.sparse as sp
    from sklearn.metrics import coverage_error, label_ranking_average_precision_score, label_ranking_loss

    from mlnb.metrics.ranking import label_ranking_metrics

    Y, s = label_matrix
    cols = slice(None) if columns is None else columns
    got = label_ranking_metrics(sp.csr_matrix(Y), s, columns, use_numba=use_numba)
    assert got["label_ranking_average_precision"] == pytest.approx(
        label_ranking_average_precision_score(Y[:, cols], s[:, cols]), abs=1e-12)
    assert got["coverage_error"] == pytest.approx(coverage_error(Y[:, cols], s[:, cols]), abs=1e-12)
    assert got["label_ranking_loss"] == pytest.approx(label_ranking_loss(Y[:, cols], s[:, cols]), abs=1e-12)
    assert label_ranking_metrics(Y, s.astype(np.float32), columns, use_numba=use_numba) == pytest.approx(got)


def test_label_ranking_metrics_by_hand():
    from mlnb.metrics.ranking import label_ranking_metrics

    # row 0: labels {0, 2}, scores 3 1 1 0 -> ranks 1 and 3 (tie with 1 counts against), L 1 and 2
    # row 1: label {3}, every score tied -> rank 4
    Y = np.array([[1, 0, 1, 0], [0, 0, 0, 1]])
    s = np.array([[3.0, 1.0, 1.0, 0.0], [-np.inf, -np.inf, -np.inf, -np.inf]])
    got = label_ranking_metrics(Y, s)
    assert got["label_ranking_average_precision"] == pytest.approx(((1 + 2 / 3) / 2 + 1 / 4) / 2, abs=1e-15)
    assert got["coverage_error"] == pytest.approx((3 + 4) / 2, abs=1e-15)  # labels scored ≥ the lowest true
    # row 0: false 1 is tied with true 2 (a bad pair) of 2 × 2 pairs; row 1: all 3 pairs tied
    assert got["label_ranking_loss"] == pytest.approx((1 / 4 + 3 / 3) / 2, abs=1e-15)
    assert all(np.isnan(v) for v in label_ranking_metrics(Y, s, columns=[]).values())


@pytest.fixture
def many_columns():
    """600 documents × 12 categories: rare to majority-positive, ties, infinities, a constant
    column, and one column without positives and one without negatives."""
    rng = np.random.default_rng(11)
    prevalence = [0.3, 0.05, 0.01, 0.5, 0.8, 0.2, 0.1, 0.4, 0.15, 0.0, 1.0, 0.25]
    Y = rng.random((600, 12)) < prevalence
    S = rng.normal(size=Y.shape) * 2 + 2.0 * Y - 1
    S[:, 1] = np.round(S[:, 1])  # few distinct values: ties across the classes
    S[:, 5] = np.round(S[:, 5] / 4)  # very few distinct values
    S[:, 7] = 0.5  # constant: AUC ½
    S[::17, 3], S[::19, 3] = np.inf, -np.inf  # infinities in both classes
    S[::5, 4] = -np.inf
    S[:, 8] = np.round(S[:, 8] * 1e3) * 1e34  # huge values (still finite in float32)
    return Y, S


def _finite_stand_in(S):
    """S with each column's −inf / +inf replaced by a finite value below / above the rest (sklearn
    refuses infinities; the order, and so the AUC, is the same)."""
    S = np.array(S, dtype=np.float64)
    for column in S.T:
        finite = column[np.isfinite(column)]
        column[column == -np.inf] = finite.min() - 1.0
        column[column == np.inf] = finite.max() + 1.0
    return S


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("use_numba", [True, False])
def test_roc_auc_2d_is_one_auc_per_category_like_sklearn(many_columns, sparse, dtype, use_numba):
    import scipy.sparse as sp

    from mlnb.metrics.ranking import roc_auc_per_category

    Y, S = many_columns
    S = S.astype(dtype)
    got = roc_auc_per_category(sp.csr_matrix(Y) if sparse else Y, S, use_numba=use_numba)
    assert got.shape == (12,)
    defined = [k for k in range(12) if 0 < Y[:, k].sum() < len(Y)]
    np.testing.assert_allclose(got[defined], roc_auc_score(Y[:, defined], _finite_stand_in(S[:, defined]),
                                                           average=None), rtol=0, atol=1e-12)
    assert np.isnan(got[9]) and np.isnan(got[10])  # no positive / no negative: NaN, not an error
    assert got[7] == 0.5
    if use_numba:
        np.testing.assert_array_equal(roc_auc(Y, S), got)  # the public entry point


def test_roc_auc_2d_does_not_pool_and_1d_is_unchanged(many_columns):
    from mlnb.metrics.evaluation import micro_auc

    Y, S = many_columns
    per_category = roc_auc(Y, S)
    assert isinstance(per_category, np.ndarray) and per_category.shape == (12,)
    assert not np.isclose(np.nanmean(per_category), micro_auc(Y, S))  # the pooled value is elsewhere
    one = roc_auc(Y[:, 0], S[:, 0])
    assert isinstance(one, float) and one == pytest.approx(roc_auc_score(Y[:, 0], S[:, 0]), abs=1e-12)


def test_roc_auc_2d_with_many_documents_and_columns_like_sklearn():
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    Y = rng.random((20_000, 9)) < [0.001, 0.01, 0.03, 0.1, 0.3, 0.5, 0.7, 0.95, 0.999]
    S = (rng.normal(size=Y.shape) + 1.5 * Y).astype(np.float32)  # float32: some ties
    np.testing.assert_allclose(roc_auc(sp.csc_matrix(Y), S), roc_auc_score(Y, S, average=None),
                               rtol=0, atol=1e-12)


def test_roc_auc_2d_copes_with_values_whose_difference_overflows():
    y = np.array([[1], [0], [1], [0], [0], [1]])
    s = np.array([[1.7e308], [-1.7e308], [0.0], [1e308], [-1.5e308], [-1e308]])
    assert roc_auc(y, s)[0] == pytest.approx(roc_auc_score(y[:, 0], s[:, 0]), abs=1e-12)


def test_roc_auc_2d_refuses_bad_input(many_columns):
    from mlnb.errors import MlnbError

    Y, S = many_columns
    with pytest.raises(MlnbError, match="shape"):
        roc_auc(Y[:, :5], S)
    bad = S.copy()
    bad[4, 2] = np.nan
    with pytest.raises(MlnbError, match="NaN"):
        roc_auc(Y, bad)
    bad = S.copy()
    bad[4, 9] = np.nan  # in a column without positives, too
    with pytest.raises(MlnbError, match="NaN"):
        roc_auc(Y, bad)


def test_pools_follow_numbas_thread_count_and_groups_shrink_with_many_threads():
    from mlnb._kernels.jit import HAVE_NUMBA
    from mlnb.metrics.ranking import column_group, worker_threads

    assert worker_threads(3) == 3
    if HAVE_NUMBA:
        import numba

        default = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            assert worker_threads() == 1  # evaluate()'s pool too: one setting for every stage
        finally:
            numba.set_num_threads(default)
        assert worker_threads() == default
    # 103 categories: groups of 8 on 2 threads (13 groups), 6 on 4, 1 on 16 (no thread idle); never 0
    assert [column_group(103, t, 8) for t in (1, 2, 4, 16)] == [8, 8, 6, 1]
    assert column_group(3, 2, 8) == 1 and column_group(0, 2, 8) == 1


def test_a_columns_numbers_do_not_depend_on_its_group(many_columns):
    from mlnb._kernels.jit import HAVE_NUMBA

    if not HAVE_NUMBA:
        pytest.skip("numba is not installed")
    from mlnb.metrics import _delong, ranking

    Y, S = many_columns
    S2 = np.round(S + np.random.default_rng(1).normal(size=S.shape), 1)
    indptr, indices = ranking._positives_by_column(Y, S.shape[1])
    indptr, indices = np.asarray(indptr, np.int64), np.asarray(indices, np.int64)
    n = S.shape[0]

    def tasks(g, reverse=False):  # any order of the tasks, on 1 or 2 threads: the same numbers
        order, _ = ranking._largest_first_tasks(indptr, n, g)
        return (order[::-1].copy() if reverse else order), 1 + reverse

    auc = [ranking._auc_columns_sparse(S, indptr, indices, g, *tasks(g, r)) for g in (1, 3, 8) for r in (0, 1)]
    single = [_delong._single_rows(S, indptr, indices, g, *tasks(g, r)) for g in (1, 3, 8) for r in (0, 1)]
    paired = [_delong._paired_rows(S, S2, indptr, indices, g, *tasks(g, r)) for g in (1, 3, 8) for r in (0, 1)]
    for results in (auc, single, paired):
        for other in results[1:]:
            np.testing.assert_array_equal(results[0], other)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_categorys_rank_parts_are_those_of_its_curve_bit_for_bit(dtype):
    """``rank_parts`` (``evaluate``'s work per category: two compiled calls and numpy's sorts) gives the AUC,
    ROC and gains on the grid, curve and AP of ``rank_curve`` and the functions of its curve, bit for bit:
    ties (many, and of ±0 and ±inf), a category without positives, one without negatives, one positive."""
    rng = np.random.default_rng(7)
    n = 3000
    S = np.empty((n, 6), dtype=dtype)
    S[:, 0] = rng.normal(size=n)
    S[:, 1] = np.round(rng.normal(size=n), 1)  # many ties
    S[:, 2] = rng.choice([-0.0, 0.0, 1.0, -np.inf, np.inf], size=n)
    S[:, 3:] = rng.normal(size=(n, 3))
    Y = (rng.random((n, 6)) < 0.3).astype(np.int8)
    Y[:, 3] = 0  # no positive
    Y[:, 4] = 1  # no negative
    Y[:, 5] = 0
    Y[17, 5] = 1  # one positive
    grid = fpr_grid(101)
    for scores in (S, np.asfortranarray(S)):  # any layout
        for k in range(6):
            y = Y[:, k].astype(bool)
            curve = rank_curve(y, np.ascontiguousarray(scores[:, k]))
            want = (auc_from_curve(curve), roc_on_grid(curve, grid), gains_on_grid(curve, grid),
                    average_precision_from_curve(curve))
            auc, roc, gains, kept, ap = rank_parts(scores, k, np.flatnonzero(y), grid, keep_curve=True)
            np.testing.assert_array_equal(np.float64(auc).view(np.int64), np.float64(want[0]).view(np.int64))
            np.testing.assert_array_equal(np.float64(ap).view(np.int64), np.float64(want[3]).view(np.int64))
            np.testing.assert_array_equal(roc.view(np.int64), want[1].view(np.int64))
            np.testing.assert_array_equal(gains.view(np.int64), want[2].view(np.int64))
            for name in ("thresholds", "tp", "fp"):
                np.testing.assert_array_equal(getattr(kept, name), getattr(curve, name))
                assert getattr(kept, name).dtype == getattr(curve, name).dtype
            assert (kept.n_pos, kept.n_neg, kept.sums) == (curve.n_pos, curve.n_neg, curve.sums)
            assert rank_parts(scores, k, np.flatnonzero(y), grid, keep_curve=False)[3] is None
