"""mlnb._kernels.atomic: every piece of work is claimed exactly once, whatever the thread count, and the
pieces' size."""

import numpy as np
import pytest

from mlnb._kernels.atomic import PIECE_ROWS, PIECES_PER_THREAD, piece_rows
from mlnb._kernels.jit import HAVE_NUMBA, njit, prange

if HAVE_NUMBA:
    from mlnb._kernels.atomic import claim, claim_rows, exchange

    @njit(parallel=True)
    def _claim_all(pieces, workers, owner, rounds, claimed):
        """Each worker claims pieces from claimed[0] until none is left, writing its number into owner[piece]
        and counting its claims; a piece claimed twice would be counted twice."""
        for worker in prange(workers):
            while True:
                piece = claim(claimed, 0)
                if piece >= pieces:
                    break
                owner[piece] = worker
                rounds[worker] += 1

    @njit(parallel=True)
    def _visit_rows(n, rows_a_piece, workers, visits):
        """Each worker claims pieces of rows (``claim_rows``) and counts a visit to each of their rows."""
        claimed = np.zeros(1, dtype=np.int64)
        for worker in prange(workers):
            while True:
                start, stop = claim_rows(claimed, rows_a_piece, n)
                if start >= n:
                    break
                for i in range(start, stop):
                    visits[i] += 1

    @njit(parallel=True)
    def _first_to_mark(marks, value, firsts, workers):
        """Each worker exchanges ``value`` into marks[0]; the one that found another value was first."""
        for worker in prange(workers):
            firsts[worker] = exchange(marks, 0, value) != value


pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")


@pytest.mark.parametrize("threads", [1, 2])
def test_every_piece_is_claimed_once(threads):
    import numba

    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        pieces, workers = 100_003, 2 * threads
        owner, rounds = np.full(pieces, -1, dtype=np.int64), np.zeros(workers, dtype=np.int64)
        counter = np.zeros(1, dtype=np.int64)
        _claim_all(pieces, workers, owner, rounds, counter)
    finally:
        numba.set_num_threads(previous)
    assert (owner >= 0).all() and owner.max() < workers
    assert rounds.sum() == pieces  # no piece twice, none lost
    assert counter[0] == pieces + workers  # each worker's last claim found nothing left


@pytest.mark.slow
@pytest.mark.parametrize("n, rows_a_piece", [(1000, 7), (1000, 1000), (1000, 5000), (0, 3), (1, 1)])
def test_claimed_pieces_of_rows_visit_every_row_once(n, rows_a_piece):
    visits = np.zeros(n, dtype=np.int64)
    _visit_rows(n, rows_a_piece, 3, visits)
    assert (visits == 1).all()


def test_exactly_one_worker_is_first_to_exchange():
    marks, firsts = np.zeros(1, dtype=np.int64), np.zeros(8, dtype=np.bool_)
    _first_to_mark(marks, 7, firsts, 8)
    assert firsts.sum() == 1 and marks[0] == 7


def test_piece_rows_gives_each_thread_several_pieces_within_the_bounds():
    low, high = PIECE_ROWS
    assert piece_rows(625_000, 2) == high  # a large copy: many pieces of the largest size
    assert piece_rows(13_000, 2) == -(-13_000 // (2 * PIECES_PER_THREAD))  # a minibatch group: 8 pieces a thread
    assert piece_rows(13_000, 16) == low  # many threads: no piece below the smallest size
    assert piece_rows(0, 4) == low and piece_rows(10, 0) == low
