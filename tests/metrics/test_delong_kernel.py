"""The compiled DeLong statistics (mlnb.metrics._delong) against a midrank reference written here,
scikit-learn's AUC and hand-worked values; the same numbers column by column, on the numpy path and
for one or two numba threads."""

import textwrap

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import norm, rankdata
from sklearn.metrics import roc_auc_score

from mlnb._kernels.jit import HAVE_NUMBA
from mlnb.errors import MlnbError
from mlnb.metrics import _delong
from mlnb.metrics.auc_intervals import category_auc_intervals_by_column
from mlnb.metrics.ranking import column_work
from mlnb.metrics.significance import delong_covariance, delong_test, delong_tests, delong_tests_by_column
from mlnb.metrics.uncertainty import auc_confidence_intervals

PATHS = [True, False] if HAVE_NUMBA else [False]


def _reference(y, a, b=None):
    """(AUC_a, AUC_b, var of the difference) or (AUC, var) from scipy midranks, Sun & Xu, straight
    from the formulas in significance's docstring (np.var / np.cov)."""
    y = np.asarray(y, bool)
    m, n = y.sum(), (~y).sum()

    def components(s):
        t_z = rankdata(s, method="average")
        return (t_z[y] - rankdata(s[y], method="average")) / n, 1.0 - (t_z[~y] - rankdata(s[~y], method="average")) / m

    v10_a, v01_a = components(np.asarray(a, float))
    if b is None:
        return v10_a.mean(), np.var(v10_a, ddof=1) / m + np.var(v01_a, ddof=1) / n
    v10_b, v01_b = components(np.asarray(b, float))
    return v10_a.mean(), v10_b.mean(), np.var(v10_a - v10_b, ddof=1) / m + np.var(v01_a - v01_b, ddof=1) / n


def _cases():
    """(y, a, b): heavy ties, constant columns, ±inf, one positive or one negative, more positives
    than negatives (the other class ordered), float32 scores."""
    rng = np.random.default_rng(11)
    cases = []
    for trial in range(40):
        n = int(rng.integers(5, 400))
        y = rng.random(n) < [0.02, 0.1, 0.5, 0.9][trial % 4]
        y[:2], y[2:4] = True, False  # two of each at least
        a = np.round(rng.normal(size=n) + y, trial % 3)  # 0 decimals: a handful of values
        b = np.round(0.5 * a + rng.normal(size=n), 1)
        if trial % 5 == 0:
            b[:] = 3.0
        if trial % 7 == 0:
            a[rng.random(n) < 0.15] = np.inf
            a[rng.random(n) < 0.15] = -np.inf
        if trial % 6 == 0:
            a, b = a.astype(np.float32), b.astype(np.float32)
        cases.append((y, a, b))
    return cases


@pytest.mark.parametrize("use_numba", PATHS)
def test_paired_and_single_statistics_equal_the_midrank_reference(use_numba):
    for y, a, b in _cases():
        positives = np.flatnonzero(y)
        indptr = np.array([0, positives.size])
        got = _delong.paired_statistics(a[:, None], b[:, None], indptr, positives, use_numba=use_numba)[0]
        np.testing.assert_allclose(got, _reference(y, a, b), rtol=0, atol=1e-12)
        if np.isfinite(a).all():  # scikit-learn refuses ±inf
            assert got[0] == pytest.approx(roc_auc_score(y, a), abs=1e-12)
        single = _delong.single_statistics(a[:, None], indptr, positives, use_numba=use_numba)[0]
        np.testing.assert_allclose(single, _reference(y, a), rtol=0, atol=1e-12)
        # the components themselves are the very floats of the midranks
        components = _delong.component_columns(np.c_[a, b].astype(np.float64), positives, use_numba=use_numba)
        t_z = rankdata(a.astype(float), method="average")
        assert np.array_equal(components[y, 0], (t_z[y] - rankdata(a[y].astype(float))) / (~y).sum())


def test_hand_worked_paired_variance_and_interval():
    # significance's tiny example: var(AUC_a − AUC_b) = .04/4 + .0359375/5 = 11/640, var(AUC_a) = 203/9600
    y = np.array([1, 0, 0, 1, 0, 1, 0, 1, 0])
    a = np.array([2.0, 1.0, -1.0, 1.0, 0.0, 3.0, 1.0, 0.0, -2.0])
    b = np.array([1.0, 1.0, 0.0, 2.0, -1.0, 1.0, 2.0, -1.0, -1.0])
    result = delong_test(y, a, b)
    assert (result.auc_a, result.auc_b) == (16.5 / 20, 12.5 / 20)  # exact: 2U / (2 m n)
    assert result.variance == pytest.approx(11 / 640, abs=1e-15)
    assert tuple(auc_confidence_intervals(y, a, 0.5)[0]) == pytest.approx(
        (0.825 - norm.ppf(0.75) * np.sqrt(203 / 9600), 0.825 + norm.ppf(0.75) * np.sqrt(203 / 9600)), abs=1e-15)


def test_degenerate_categories():
    a = np.array([3.0, 1.0, 2.0, 0.0])
    # no positive, no negative: all NaN; one positive: AUCs but no variance
    for y in ([0, 0, 0, 0], [1, 1, 1, 1]):
        assert np.isnan(list(vars(delong_test(y, a, a[::-1])).values())).all()
        assert np.isnan(auc_confidence_intervals(y, a)).all()
    one = delong_test([1, 0, 0, 0], a, [2.0, 1.0, 3.0, 0.0])
    assert (one.auc_a, one.auc_b) == (1.0, 2 / 3) and np.isnan([one.variance, one.z, one.p_value]).all()
    # constant against perfectly separating: the components differ by ½ everywhere, variance 0, z = +inf
    perfect = delong_test([1, 1, 0, 0, 0], [5.0, 4.0, 1.0, 0.0, -np.inf], [7.0] * 5)
    assert (perfect.difference, perfect.variance, perfect.z, perfect.p_value) == (0.5, 0.0, np.inf, 0.0)
    # identical rankings: exactly zero
    same = delong_test([1, 0, 1, 0, 0], [1.0, 2.0, 3.0, 2.0, -1.0], [10.0, 20.0, 30.0, 20.0, -10.0])
    assert (same.variance, same.z, same.p_value) == (0.0, 0.0, 1.0)


@pytest.mark.slow
def test_tables_equal_per_category_tests_and_column_by_column():
    rng = np.random.default_rng(4)
    n, K = 500, 11
    Y = rng.random((n, K)) < np.r_[0.0, 0.002, np.linspace(0.02, 0.6, K - 3), 1.0]  # none, ~1, …, all
    a = np.round(rng.normal(size=(n, K)) + Y, 1).astype(np.float32)
    b = np.round(rng.normal(size=(n, K)) + 0.5 * Y, 0)
    table = delong_tests(sp.csr_matrix(Y), a, b)
    for k in range(K):
        expected = delong_test(Y[:, k], a[:, k], b[:, k])
        np.testing.assert_array_equal(table.iloc[k, :6].to_numpy(float), list(vars(expected).values()))
    for block_bytes in (1, 3 * n * 8 * 2):  # one category a block, three a block
        blocks = list(_delong.column_blocks(lambda k: (Y[:, k], a[:, k], b[:, k]), K, block_bytes))
        assert [categories.tolist() for categories, *_ in blocks] == \
            [list(range(first, min(K, first + (1 if block_bytes == 1 else 3)))) for first in
             range(0, K, 1 if block_bytes == 1 else 3)]
    work = column_work(Y.sum(axis=0), n)
    streamed = delong_tests_by_column(lambda k: (Y[:, k], a[:, k], b[:, k]), K)
    np.testing.assert_array_equal(streamed.to_numpy(), table.to_numpy())
    by_work = delong_tests_by_column(lambda k: (Y[:, k], a[:, k], b[:, k]), K, work=work)
    np.testing.assert_array_equal(by_work.to_numpy(), table.to_numpy())
    intervals = auc_confidence_intervals(Y, a, level=0.9)
    for k in range(K):
        np.testing.assert_array_equal(intervals[k], auc_confidence_intervals(Y[:, k], a[:, k], 0.9)[0])
    # delong_covariance's one-column variance is the interval's
    auc, covariance = delong_covariance(Y[:, 5], a[:, 5])
    assert covariance[0, 0] == pytest.approx(_reference(Y[:, 5], a[:, 5])[1], abs=1e-15)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_blocks_by_work_come_the_most_work_first_in_multiples_of_the_threads(threads):
    """With each category's work known beforehand, a block holds categories of about one size (the
    most work first, ties in category order) and, where at least as many fit, a multiple of the
    threads, so that the kernels' threads get as much work; each row is its category's."""
    rng = np.random.default_rng(7)
    n, K = 400, 10
    prevalence = np.array([0.3, 0.01, 0.5, 0.1, 0.02, 0.3, 0.05, 0.0, 0.2, 0.4])
    Y = rng.random((n, K)) < prevalence
    a = rng.normal(size=(n, K)).astype(np.float32)
    work = column_work(Y.sum(axis=0), n)
    by_work = np.argsort(-work, kind="stable")
    assert work[7] == n and work.argmax() == 2  # no positives: one pass; half positive: the most
    for fitting in (threads, threads + 1, 2 * threads + 1, 4):
        size = fitting - fitting % threads  # categories that fit a block, down to a multiple of the threads
        blocks = list(_delong.column_blocks(lambda k: (Y[:, k], a[:, k]), K, fitting * n * 4, threads, work=work))
        order = np.concatenate([categories for categories, *_ in blocks])
        np.testing.assert_array_equal(order, by_work)
        assert all(len(categories) == size for categories, *_ in blocks[:-1])
        for categories, indptr, indices, (scores,) in blocks:
            for g, k in enumerate(categories):
                np.testing.assert_array_equal(scores[g], a[:, k])
                np.testing.assert_array_equal(indices[indptr[g]:indptr[g + 1]], np.flatnonzero(Y[:, k]))
    with pytest.raises(MlnbError, match="3 work estimates for 10 categories"):
        next(_delong.column_blocks(lambda k: (Y[:, k], a[:, k]), K, work=work[:3]))

def test_column_by_column_checks_its_input():
    y, a = np.array([1, 0, 1]), np.array([1.0, 2.0, np.nan])
    with pytest.raises(MlnbError, match="NaN"):
        delong_tests_by_column(lambda k: (y, a, a), 1)
    with pytest.raises(MlnbError, match="category 1"):
        category_auc_intervals_by_column(lambda k: (y, np.ones(3 + k)), 2)
    with pytest.raises(MlnbError, match="NaN"):
        auc_confidence_intervals(y, a)


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_same_numbers_for_one_and_two_numba_threads(output_with_numba_threads):
    script = textwrap.dedent("""
        import hashlib, numba, numpy as np, scipy.sparse as sp
        from mlnb.metrics.significance import delong_tests
        from mlnb.metrics.uncertainty import auc_confidence_intervals
        rng = np.random.default_rng(3)
        Y = rng.random((3000, 13)) < np.linspace(0.01, 0.7, 13)
        a = np.round(rng.normal(size=Y.shape) + Y, 1)
        b = np.round(rng.normal(size=Y.shape) + 0.7 * Y, 2).astype(np.float32)
        table = delong_tests(sp.csr_matrix(Y), a, b)
        blob = table.to_numpy().tobytes() + auc_confidence_intervals(Y, b).tobytes()
        print(numba.get_num_threads(), hashlib.sha256(blob).hexdigest())
    """)

    one, two = output_with_numba_threads(script, 1), output_with_numba_threads(script, 2)
    assert (one[0], two[0]) == ("1", "2")
    assert one[1] == two[1]
