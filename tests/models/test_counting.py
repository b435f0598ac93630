"""NB counting in pieces (``_counting._pieces``): the same bits as one task per row, any threads."""

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb._kernels.jit import HAVE_NUMBA
from mlnb.models import _counting

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")


@pytest.fixture
def counts_data():
    rng = np.random.default_rng(7)
    X = sp.random(3000, 400, density=0.05, random_state=3, format="csr", dtype=np.float32)
    X.data = rng.integers(1, 6, X.nnz).astype(np.float32)  # word counts: whole numbers, cut into pieces
    Y = sp.csr_matrix((rng.random((3000, 6)) < [0.6, 0.3, 0.1, 0.02, 0.001, 0.0]).astype(np.float32))
    return X, Y


@pytest.mark.parametrize("piece_bytes", [1 << 26, 400 * 8 * 5])  # room for every piece; for 5 only (coarser cuts)
@pytest.mark.parametrize("binary", [False, True])
def test_rows_cut_in_pieces_are_the_sums_of_one_task(counts_data, monkeypatch, binary, piece_bytes):
    X, Y = counts_data
    monkeypatch.setattr(_counting, "MIN_PIECE_WORK", 1)  # every row with more than 1/64 of the work is cut
    monkeypatch.setattr(_counting, "PIECE_BYTES", piece_bytes)
    work = np.r_[np.asarray((Y.T @ sp.csr_matrix((np.diff(X.indptr), (np.arange(3000), np.zeros(3000))),
                                                 shape=(3000, 1))).todense()).ravel(), X.nnz] + X.shape[1]
    first, last = np.zeros(7, np.int64), np.full(7, 10, np.int64)
    tasks, piece_ptr, n_pieces = _counting._pieces(work.astype(np.int64), first, last, X.shape[1], split=True)
    assert n_pieces > 7 if piece_bytes > 1e6 else 0 < n_pieces <= 5
    assert np.diff(piece_ptr).max() > 1  # some row is summed in pieces
    exact = _counting.count_chunk(Y, X, binary=binary, kernel="scipy")
    import numba

    default = numba.get_num_threads()
    try:
        for threads in sorted({1, default}):
            numba.set_num_threads(threads)
            fast = _counting.count_chunk(Y, X, binary=binary, kernel="numba")
            for name in ("F", "t", "S"):
                np.testing.assert_array_equal(getattr(fast, name), getattr(exact, name), err_msg=f"{name} {threads}")
    finally:
        numba.set_num_threads(default)


def test_pieces_cover_each_row_once_and_only_whole_numbers_are_cut():
    work = np.array([1000, 10, 5000, 200], dtype=np.int64)
    first, last = np.array([0, 7, 9, 0]), np.array([7, 9, 40, 100])
    tasks, piece_ptr, n_pieces = _counting._pieces(work, first, last, V=10, split=True)
    for row in range(4):
        spans = sorted((f, e) for k, f, e, _ in tasks if k == row)
        assert spans[0][0] == first[row] and spans[-1][1] == last[row]
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # consecutive, no gap, no overlap
    assert n_pieces == piece_ptr[-1] and sorted(p for *_, p in tasks if p >= 0) == list(range(n_pieces))
    sizes = [work[k] / max(1, piece_ptr[k + 1] - piece_ptr[k]) for k, *_ in tasks]
    assert sizes == sorted(sizes, reverse=True)  # the largest first
    whole, _, none = _counting._pieces(work, first, last, V=10, split=False)  # tf-idf: one task per row
    assert none == 0 and sorted(whole[:, 0]) == [0, 1, 2, 3] and (whole[:, 3] == -1).all()
