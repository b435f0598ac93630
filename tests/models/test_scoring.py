"""The two-core scoring kernel computes exactly what scipy's X @ W + b does."""

import numpy as np
import pytest

from mlnb.models._scoring import linear_scores


def random_weights(V, K, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(V, K)).astype(np.float32), rng.normal(size=K).astype(np.float32)


@pytest.mark.parametrize("binary", [False, True])
def test_numba_equals_scipy_on_synthetic(small_corpus, binary):
    X = small_corpus.X
    W, b = random_weights(X.shape[1], 20)
    fast = linear_scores(X, W, b, binary=binary, kernel="numba")
    reference = linear_scores(X, W, b, binary=binary, kernel="scipy")
    np.testing.assert_allclose(fast, reference, rtol=1e-5, atol=1e-4)
    assert fast.dtype == np.float32 and fast.shape == (X.shape[0], 20)


def test_numba_equals_scipy_on_real_rcv1_subset(rcv1_subset):
    X = rcv1_subset.X
    W, b = random_weights(X.shape[1], 101, seed=1)
    np.testing.assert_allclose(linear_scores(X, W, b, kernel="numba"), X @ W + b, rtol=1e-5, atol=1e-5)


def test_binary_scoring_does_not_change_X(small_corpus):
    X = small_corpus.X_test
    before = X.data.copy()
    W, b = random_weights(X.shape[1], 3)
    linear_scores(X, W, b, binary=True, kernel="scipy")
    linear_scores(X, W, b, binary=True, kernel="numba")
    np.testing.assert_array_equal(X.data, before)


@pytest.mark.parametrize("binary", [False, True])
def test_count_kernel_equals_the_sparse_product(small_corpus, binary):
    from mlnb.models._counting import count_chunk

    X, Y = small_corpus.X.copy(), small_corpus.Y
    X.data[::7] = 0.0  # explicit zeros must not count as present
    fast = count_chunk(Y, X, binary=binary, kernel="numba").F
    reference = count_chunk(Y, X, binary=binary, kernel="scipy").F
    np.testing.assert_allclose(fast, reference, rtol=1e-9)


def test_binary_scoring_ignores_explicit_zeros(small_corpus):
    X = small_corpus.X_test.copy()
    X.data[::5] = 0.0
    W, b = random_weights(X.shape[1], 4)
    np.testing.assert_allclose(linear_scores(X, W, b, binary=True, kernel="numba"),
                               linear_scores(X, W, b, binary=True, kernel="scipy"), rtol=1e-5, atol=1e-4)


def test_fused_sigmoid_equals_sigmoid_of_scores(small_corpus):
    from scipy.special import expit

    X = small_corpus.X
    W, b = random_weights(X.shape[1], 6)
    for kernel in ("numba", "scipy"):
        np.testing.assert_allclose(linear_scores(X, W, b, kernel=kernel, sigmoid=True),
                                   expit(linear_scores(X, W, b, kernel=kernel)), rtol=1e-5, atol=1e-6)


def test_a_documents_scores_do_not_depend_on_what_is_scored_with_it():
    """A streamed test set is scored chunk by chunk: every chunk size gives the whole set's scores."""
    import numpy as np

    from mlnb.data.synthetic import make_rcv1_like
    from mlnb.models._scoring import linear_scores

    data = make_rcv1_like(n_documents=3000, n_features=1000, n_categories=20, seed=5)
    W = np.random.default_rng(0).normal(size=(1000, 20)).astype(np.float32)
    b = np.linspace(-1, 1, 20, dtype=np.float32)
    whole = linear_scores(data.X, W, b)
    for size in (1, 7, 450, 2999):
        parts = [linear_scores(data.X[i:i + size], W, b) for i in range(0, 3000, size)]
        assert np.array_equal(np.vstack(parts), whole), size


@pytest.mark.parametrize("rows_a_piece", [1, 7, 256, 5000])
@pytest.mark.parametrize("binary, sigmoid", [(False, False), (True, True)])
def test_the_parallel_loop_over_claimed_pieces_gives_the_serial_loops_bits(rows_a_piece, binary, sigmoid):
    """However the rows are cut into pieces for the threads to claim (the last piece short, one piece
    for all), every row's scores are the one-thread loop's, bit for bit."""
    from mlnb._kernels.jit import HAVE_NUMBA
    from mlnb.data.synthetic import make_rcv1_like

    if not HAVE_NUMBA:
        pytest.skip("numba is not installed")
    from mlnb.models import _scoring

    X = make_rcv1_like(n_documents=3001, n_features=800, n_categories=9, seed=2).X
    W, b = random_weights(800, 9, seed=3)
    outs = [np.full((X.shape[0], 9), np.nan, dtype=np.float32) for _ in range(2)]
    arguments = (X.indptr, X.indices, X.data, W, b, binary, sigmoid)
    _scoring._csr_times_dense_serial(*arguments, outs[0])
    _scoring._csr_times_dense(*arguments, outs[1], 3, rows_a_piece)
    assert not np.isnan(outs[1]).any()  # every row scored
    assert np.array_equal(outs[0].view(np.uint32), outs[1].view(np.uint32))
