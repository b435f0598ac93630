"""NBCounts: one pass over a chunk, and counts of chunks that add up to the counts of their concatenation."""

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb import MlnbError
from mlnb.models._counting import column_statistics, count_chunk
from mlnb.models._linear import as_csr_float32, as_label_matrix
from mlnb.models.naive_bayes import NBCounts

KINDS = [dict(), dict(presence=True), dict(squares=True), dict(squares=True, column_stats=True)]


def chunk(data, rows):
    return as_csr_float32(data.X[rows]), as_label_matrix(data.Y[rows], len(rows))


@pytest.mark.parametrize("kind", KINDS, ids=["plain", "presence", "squares", "squares+stats"])
def test_adding_counts_equals_counting_the_concatenation(small_corpus, kind):
    n = small_corpus.X.shape[0]
    # the whole (231k non-zeros) is counted by the numba kernel, the parts by scipy
    whole = NBCounts.from_chunk(*chunk(small_corpus, np.arange(n)), **kind)
    added = NBCounts.from_chunk(*chunk(small_corpus, np.arange(700)), **kind)
    for start in range(700, n, 900):
        added = added + NBCounts.from_chunk(*chunk(small_corpus, np.arange(start, min(start + 900, n))), **kind)
    assert added.n == whole.n == n and added.presence == whole.presence
    for name in ("F", "t", "S", "N", "F2", "t2", "lo", "hi", "integer"):
        if getattr(whole, name) is None:
            assert getattr(added, name) is None, name
        else:
            np.testing.assert_allclose(getattr(added, name), getattr(whole, name), rtol=1e-12, err_msg=name)


def test_counts_are_the_products_they_name():
    rng = np.random.default_rng(0)
    X = sp.random(50, 8, density=0.4, random_state=1, format="csr", dtype=np.float32)
    X.data = np.round(X.data * 8) - 2  # negative, zero (explicit) and positive integers
    X.data[::4] += 0.5
    Y = (rng.random((50, 3)) < 0.4).astype(np.float32)
    counts = NBCounts.from_chunk(X, sp.csr_matrix(Y), squares=True, column_stats=True)
    D = X.toarray().astype(np.float64)
    np.testing.assert_allclose(counts.F, Y.T @ D)
    np.testing.assert_allclose(counts.F2, Y.T @ (D * D))
    np.testing.assert_allclose(counts.t, D.sum(axis=0))
    np.testing.assert_allclose(counts.S, (Y.T @ D).sum(axis=1))
    np.testing.assert_allclose(counts.t2, (D * D).sum(axis=0))
    np.testing.assert_array_equal(counts.N, Y.sum(axis=0))
    np.testing.assert_array_equal(counts.lo, D.min(axis=0))  # implicit zeros included
    np.testing.assert_array_equal(counts.hi, D.max(axis=0))
    np.testing.assert_array_equal(counts.integer, (D == np.floor(D)).all(axis=0))
    presence = NBCounts.from_chunk(X, sp.csr_matrix(Y), presence=True)
    np.testing.assert_allclose(presence.F, Y.T @ (D > 0))


def test_squares_are_summed_in_float64_without_rounding_the_values():
    # 4097² = 16785409 is not a float32, so squaring before widening would lose it
    X = sp.csr_matrix(np.array([[4097.0], [4097.0]], dtype=np.float32))
    Y = sp.csr_matrix(np.ones((2, 1), dtype=np.float32))
    for kernel in ("numba", "scipy"):
        counts = count_chunk(Y, X, squares=True, kernel=kernel)
        assert counts.F2[0, 0] == 2 * 4097.0**2, kernel
        assert counts.t2[0] == 2 * 4097.0**2, kernel


def test_numba_and_scipy_moments_agree(small_corpus):
    X, Y = small_corpus.X, small_corpus.Y
    fast, reference = (count_chunk(Y, X, squares=True, kernel=kernel) for kernel in ("numba", "scipy"))
    for name in ("F", "F2", "t", "t2"):
        np.testing.assert_allclose(getattr(fast, name), getattr(reference, name), rtol=1e-12, err_msg=name)


def test_column_statistics_of_a_column_without_stored_values():
    X = sp.csr_matrix((np.array([3.0, 0.5], dtype=np.float32), np.array([0, 2]), np.array([0, 1, 2, 2])),
                      shape=(3, 3))
    lo, hi, integer = column_statistics(X)
    np.testing.assert_array_equal(lo, [0, 0, 0])
    np.testing.assert_array_equal(hi, [3, 0, 0.5])
    np.testing.assert_array_equal(integer, [True, True, False])


def test_counts_of_different_shapes_or_kinds_do_not_add(small_corpus):
    X, Y = chunk(small_corpus, np.arange(100))
    counts = NBCounts.from_chunk(X, Y)
    with pytest.raises(MlnbError, match="cannot add NBCounts of 20 categories × 2000 features to NBCounts of "
                                        "20 × 1999"):
        counts + NBCounts.from_chunk(X[:, :1999], Y)
    with pytest.raises(MlnbError, match="counted for different event models"):
        counts + NBCounts.from_chunk(X, Y, presence=True)
    with pytest.raises(MlnbError, match="counted for different event models"):
        counts + NBCounts.from_chunk(X, Y, squares=True)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_counts_added_in_pieces_are_numpys_sums_bit_for_bit(monkeypatch, threads):
    from mlnb.models.naive_bayes import counts as counts_module

    monkeypatch.setattr(counts_module, "PARALLEL_ADD_VALUES", 7)  # pieces of a few values: every thread works
    monkeypatch.setattr("mlnb._kernels.jit.worker_threads", lambda n_threads=None: threads)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((5, 11)) * 1e6, rng.standard_normal((5, 11)) / 3  # sums that round
    expected = a + b
    np.testing.assert_array_equal(counts_module.add_counts(a, b), expected)
    own = b.copy()
    assert counts_module.add_counts(a, own, out=own) is own
    np.testing.assert_array_equal(own, expected)
    np.testing.assert_array_equal(counts_module.add_counts(a[:, ::2], b[:, ::2]), expected[:, ::2])  # not contiguous
    np.testing.assert_array_equal(counts_module.add_counts(a[0], b), a[0] + b)  # broadcast: numpy's one call


def test_partial_fit_adds_each_chunk_in_its_own_arrays_and_leaves_earlier_counts_alone(small_corpus, monkeypatch):
    from mlnb.models.naive_bayes import NaiveBayes
    from mlnb.models.naive_bayes import counts as counts_module

    monkeypatch.setattr(counts_module, "PARALLEL_ADD_VALUES", 64)
    X, Y = chunk(small_corpus, np.arange(small_corpus.X.shape[0]))
    for kind in ("multinomial", "gaussian"):
        model = NaiveBayes(event_model=kind).partial_fit(X[:600], Y[:600])
        first = model.counts_
        kept = {name: getattr(first, name).copy() for name in ("F", "t", "N", "S")}
        model.partial_fit(X[600:], Y[600:])
        for name, values in kept.items():  # the first chunk's counts, which a caller may hold, unchanged
            np.testing.assert_array_equal(getattr(first, name), values, err_msg=name)
        second = NaiveBayes(event_model=kind).partial_fit(X[600:], Y[600:]).counts_
        for name in ("F", "t", "N", "S") + (("F2", "t2") if kind == "gaussian" else ()):
            np.testing.assert_array_equal(getattr(model.counts_, name), getattr(first + second, name), err_msg=name)
