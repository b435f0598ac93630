"""Binned rank metrics: exact AUC / AP always within the stated bound, merging is exact."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import average_precision_score, roc_auc_score

from mlnb.errors import MlnbError
from mlnb.metrics import binned
from mlnb.metrics.binned import BinnedScores, Grid, auc_from_histograms, average_precision_from_histograms
from mlnb.metrics.evaluation import pooled_rank_metrics
from mlnb.metrics.ranking import (auc_from_curve, average_precision_from_curve, fpr_grid, rank_curve,
                                  roc_on_grid)


def _scored(seed: int, n: int = 3000, K: int = 6):
    """Labels and log-odds with overlapping classes; some scores beyond the default grid."""
    rng = np.random.default_rng(seed)
    Y = rng.random((n, K)) < rng.uniform(0.01, 0.6, K)
    S = (rng.normal(size=Y.shape) * 3 + 2.5 * Y - 2) * rng.uniform(0.5, 12, K)
    return Y, S


def _exact(y, s):
    curve = rank_curve(y, s)
    return auc_from_curve(curve), average_precision_from_curve(curve)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("grid", [Grid(), Grid(-32.0, 32.0, 1 << 16, "linear"), Grid(-4.0, 4.0, 64),
                                  Grid(0.0, 1.0, 1)])
def test_exact_auc_and_ap_lie_within_the_bound(seed, grid):
    Y, S = _scored(seed)
    if seed == 3:
        S = np.round(S)  # ties inside and across bins
    counts = BinnedScores.from_scores(sp.csr_matrix(Y), S, grid)
    auc, auc_bound = counts.auc(), counts.auc_max_error()
    ap, ap_bound = counts.average_precision()
    for k in range(Y.shape[1]):
        exact_auc, exact_ap = _exact(Y[:, k], S[:, k])
        assert exact_auc == pytest.approx(roc_auc_score(Y[:, k], S[:, k]), abs=1e-12)
        assert abs(exact_auc - auc[k]) <= auc_bound[k] + 1e-12
        assert abs(exact_ap - ap[k]) <= ap_bound[k] + 1e-12
    exact_micro_auc, exact_micro_ap = pooled_rank_metrics(Y, S)
    micro_auc, micro_auc_bound = counts.micro_auc()
    micro_ap, micro_ap_bound = counts.micro_average_precision()
    assert abs(exact_micro_auc - micro_auc) <= micro_auc_bound + 1e-12
    assert abs(exact_micro_ap - micro_ap) <= micro_ap_bound + 1e-12
    if grid.bins == 1:  # one bin holds nearly everything: the bounds are wide, not wrong
        assert micro_auc_bound > 0.05


def test_the_default_grid_is_tight_from_small_to_huge_log_odds_and_a_linear_one_only_inside():
    rng = np.random.default_rng(7)
    Y = rng.random((3000, 4)) < 0.1
    S = rng.normal(size=Y.shape) * 3 + 2.5 * Y - 2
    linear = Grid(-32.0, 32.0, 1 << 16, "linear")
    for scale in (1, 100):  # log-odds of logistic regression, and of Naive Bayes
        assert np.all(BinnedScores.from_scores(Y, S * scale).auc_max_error() < 3e-3)
    assert np.all(BinnedScores.from_scores(Y, S, linear).auc_max_error() < 2e-3)
    assert BinnedScores.from_scores(Y, S * 100, linear).auc_max_error().max() > 0.01  # much in the end bins


def test_the_auc_bound_is_attained_when_a_bin_is_ordered():
    # one bin of [0, 1) holds positives 0.9, 0.8 and negatives 0.1, 0.2: exact AUC 1, binned ½
    y, s = np.array([[1], [1], [0], [0]]), np.array([[0.9], [0.8], [0.1], [0.2]])
    counts = BinnedScores.from_scores(y, s, Grid(0.0, 2.0, 2, "linear"))
    assert counts.auc()[0] == 0.5 and counts.auc_max_error()[0] == 0.5
    assert roc_auc_score(y[:, 0], s[:, 0]) == 1.0  # = binned + bound


def test_hand_worked_histograms():
    # ascending bins: positives 0 1 2, negatives 2 1 0 -> 2U = 1·(2·2 + 1) + 2·(2·3 + 0) = 17
    auc, bound = auc_from_histograms([0, 1, 2], [2, 1, 0])
    assert auc == pytest.approx(17 / (2 * 3 * 3)) and bound == pytest.approx(1 / (2 * 9))
    # AP from the top bin: bin 2 holds 2 positives (A = 0): both precision 1; bin 1 holds 1 positive
    # and 1 negative after 2 documents: precision between 3/4 and 3/3
    ap, ap_bound = average_precision_from_histograms([0, 1, 2], [2, 1, 0])
    lower, upper = (2 + 3 / 4) / 3, (2 + 1) / 3
    assert ap == pytest.approx((lower + upper) / 2, abs=1e-15)
    assert ap_bound == pytest.approx((upper - lower) / 2, abs=1e-15)
    assert np.isnan(auc_from_histograms([0, 0], [1, 2])[0]) and np.isnan(average_precision_from_histograms([0], [3])[0])


def test_harmonic_difference_is_accurate_for_large_arguments():
    c = np.array([0.0, 5.0, 999.0, 1000.0, 1e4, 1e9, 1e12])
    p = np.array([1.0, 3.0, 2.0, 2.0, 50.0, 1.0, 7.0])
    direct = np.array([sum(1.0 / (ci + j) for j in range(1, int(pi) + 1)) for ci, pi in zip(c, p)])
    np.testing.assert_allclose(binned._harmonic_difference(c, p), direct, rtol=1e-12)


def test_merged_halves_equal_the_whole_exactly():
    Y, S = _scored(3)
    whole = BinnedScores.from_scores(Y, S)
    halves = BinnedScores.from_scores(Y[:1234], S[:1234]) + BinnedScores.from_scores(Y[1234:], S[1234:])
    np.testing.assert_array_equal(halves.positives, whole.positives)
    np.testing.assert_array_equal(halves.negatives, whole.negatives)
    np.testing.assert_array_equal(halves.auc(), whole.auc())
    assert halves.micro_auc() == whole.micro_auc()
    chunked = BinnedScores.empty(S.shape[1])
    for start in range(0, len(S), 500):
        chunked.add(sp.csr_matrix(Y[start:start + 500]), S[start:start + 500].astype(np.float32))
    S32 = S.astype(np.float32)
    np.testing.assert_array_equal(chunked.positives, BinnedScores.from_scores(Y, S32).positives)


def test_numpy_path_counts_like_the_kernel(monkeypatch):
    Y, S = _scored(5, n=500)
    S[::7, 1], S[::11, 2] = np.inf, -np.inf
    grids = (Grid(-3.0, 5.0, 97, "linear"), Grid(-3.0, 5.0, 97, "asinh"))
    at_edges = np.concatenate([np.r_[g.edges, np.nextafter(g.edges, -np.inf)] for g in grids])  # 392
    S[:at_edges.size, 3] = at_edges
    for grid in grids:
        monkeypatch.setattr(binned, "HAVE_NUMBA", True)
        kernel = BinnedScores.from_scores(Y, S, grid)
        monkeypatch.setattr(binned, "HAVE_NUMBA", False)
        numpy = BinnedScores.from_scores(Y, S, grid)
        np.testing.assert_array_equal(numpy.positives, kernel.positives)
        np.testing.assert_array_equal(numpy.negatives, kernel.negatives)
        values = np.sort(np.r_[np.random.default_rng(0).uniform(-4, 6, 10_000), grid.edges])
        assert np.all(np.diff(grid.index(values)) >= 0)  # non-decreasing: the property the bound needs
        # bin b holds [e_(b-1), e_b): each edge opens its bin, the top edge is in the last one (linear:
        # up to rounding of the edges; asinh: exactly)
        opening = np.abs(grid.index(grid.edges) - np.r_[np.arange(1, grid.bins + 1), grid.bins])
        below = np.abs(grid.index(np.nextafter(grid.edges[1:-1], -9)) - np.arange(1, grid.bins))
        assert opening.max() <= (grid.spacing == "linear") and below.max() <= (grid.spacing == "linear")
    np.testing.assert_array_equal(grid.index([-np.inf, np.nextafter(-3.0, -9), np.nextafter(5.0, 9), np.inf]),
                                  [0, 0, grid.bins + 1, grid.bins + 1])


def test_binned_curve_reads_like_an_exact_one():
    Y, S = _scored(1)
    counts = BinnedScores.from_scores(Y, S, Grid(-40.0, 40.0, 4096))
    for k in range(Y.shape[1]):
        curve = counts.curve(k)
        assert auc_from_curve(curve) == pytest.approx(counts.auc()[k], abs=1e-12)
        grid = fpr_grid(11)
        exact = roc_on_grid(rank_curve(Y[:, k], S[:, k]), grid)
        assert np.max(np.abs(roc_on_grid(curve, grid) - exact)) < 0.05
    assert counts.curve(columns=[0, 1]).n_pos == int(Y[:, :2].sum())


def test_average_precision_bound_against_sklearn_with_ties():
    rng = np.random.default_rng(4)
    y = rng.random(4000) < 0.1
    s = np.round(rng.normal(size=4000) + 2 * y, 1)
    counts = BinnedScores.from_scores(y[:, None], s[:, None], Grid(-2.0, 2.0, 16))
    ap, bound = counts.average_precision()
    assert abs(average_precision_score(y, s) - ap[0]) <= bound[0] + 1e-12
    assert bound[0] > 0


def test_bad_grids_and_merges_are_refused():
    with pytest.raises(MlnbError, match="bins"):
        Grid(0.0, 1.0, 0)
    with pytest.raises(MlnbError, match="low < high"):
        Grid(1.0, 1.0)
    with pytest.raises(MlnbError, match="low < high"):
        Grid(-np.inf, 1.0)
    with pytest.raises(MlnbError, match="spacing"):
        Grid(spacing="log")
    with pytest.raises(MlnbError, match="too many"):
        Grid(1.0, np.nextafter(1.0, 2.0), 4)
    with pytest.raises(MlnbError, match="different grids"):
        BinnedScores.empty(2, Grid(0.0, 1.0, 4)) + BinnedScores.empty(2, Grid(0.0, 1.0, 8))
    with pytest.raises(MlnbError, match="categories"):
        BinnedScores.empty(2) + BinnedScores.empty(3)
    with pytest.raises(MlnbError, match="NaN"):
        BinnedScores.from_scores(np.zeros((2, 1)), np.array([[0.0], [np.nan]]))
    with pytest.raises(MlnbError, match="shape"):
        BinnedScores.empty(2).add(np.zeros((3, 2)), np.zeros((4, 2)))
