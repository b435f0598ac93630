"""The minibatch solver's parts: sources, the one-minibatch step kernels, the updater, state averaging,
the thread policy."""

from itertools import chain, pairwise
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb import MlnbError
from mlnb.models.logistic import kernels as glm_kernels, minibatch
from mlnb.models.logistic.kernels import KERNELS, ThreadPolicy, word_blocks
from mlnb.models.logistic.minibatch import (
    ChunkStreamSource,
    InMemorySource,
    Updater,
    average_states,
    minibatch_views,
    take_rows,
)


def corpus(n=90, V=40, K=5, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, V, density=0.2, format="csr", random_state=seed, dtype=np.float32)
    X.data = np.round(X.data * 3 + 1).astype(np.float32)
    Y = sp.csr_matrix((X @ rng.normal(size=(V, K)) + rng.normal(size=(n, K)) > 1.5).astype(np.int8))
    return X, Y


def chunked(X, Y, sizes):
    """make_chunks over consecutive row ranges of the given sizes (as a stream would give them)."""
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    assert bounds[-1] == X.shape[0]

    def make_chunks():
        for start, end in pairwise(bounds):
            yield SimpleNamespace(X=X[start:end], Y=Y[start:end], where="shard-0.svm", first_line=start + 1)

    return make_chunks


def rows_of(batches, X):
    """The original row numbers of each minibatch's documents (documents are distinct rows of X)."""
    lookup = {X[i].toarray().tobytes(): i for i in range(X.shape[0])}
    return [[lookup[batch.X[r].toarray().tobytes()] for r in range(batch.X.shape[0])] for batch in batches]


def test_take_rows_is_scipy_row_indexing_with_int32_indices():
    X, Y = corpus()
    rows = np.array([5, 0, 89, 5, 17])
    for A in (X, Y):
        taken = take_rows(A, rows)
        assert taken.indices.dtype == np.int32 and taken.indptr.dtype == np.int32
        assert taken.dtype == A.dtype and taken.has_sorted_indices
        np.testing.assert_array_equal(taken.toarray(), A[rows].toarray())
    assert take_rows(X, np.array([], dtype=np.int64)).shape == (0, X.shape[1])


def test_a_large_minibatch_is_copied_on_every_thread_with_the_same_bytes(monkeypatch):
    """Above ``mlnb._kernels.csr.PARALLEL_COPY_NONZEROS`` the rows are copied by the parallel kernel: the very
    arrays of the serial one (and of scipy's row indexing), rows repeated and in any order."""
    from mlnb._kernels import csr as _csr

    X, _ = corpus()
    rows = np.random.default_rng(0).integers(0, X.shape[0], size=5 * X.shape[0])
    monkeypatch.setattr(_csr, "PARALLEL_COPY_NONZEROS", 0)
    parallel = take_rows(X, rows)
    monkeypatch.setattr(_csr, "PARALLEL_COPY_NONZEROS", float("inf"))
    serial = take_rows(X, rows)
    for a, b in ((parallel.indptr, serial.indptr), (parallel.indices, serial.indices), (parallel.data, serial.data)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(parallel.toarray(), X[rows].toarray())


def test_in_memory_source_is_todays_seeded_order():
    X, Y = corpus()
    source = InMemorySource(X, Y, batch_size=16)
    rng, expected = np.random.default_rng(3), np.random.default_rng(3)
    for _ in range(2):  # the generator continues from pass to pass
        order = expected.permutation(90)
        batches = list(source.minibatches(rng))
        assert [b.X.shape[0] for b in batches] == [16] * 5 + [10]
        for start, batch in zip(range(0, 90, 16), batches):
            np.testing.assert_array_equal(batch.X.toarray(), X[order[start:start + 16]].toarray())
            np.testing.assert_array_equal(batch.Y.toarray(), Y[order[start:start + 16]].toarray())
    in_order = list(source.minibatches(None))
    np.testing.assert_array_equal(sp.vstack([b.X for b in in_order]).toarray(), X.toarray())


@pytest.mark.parametrize("group_nonzeros", [1, 60, 400, 1 << 20])
def test_minibatches_copied_in_groups_are_each_minibatchs_own_copy(monkeypatch, group_nonzeros):
    """``minibatch_views`` copies groups of consecutive minibatches at once (a group of one minibatch, of
    a few, of all): each minibatch has the arrays ``take_rows`` gives it alone, dtypes included."""
    monkeypatch.setattr(minibatch, "GROUP_NONZEROS", group_nonzeros)
    X, Y = corpus(n=200)
    order = np.random.default_rng(1).permutation(200)
    bounds = np.array([0, 1, 17, 17 + 16, 50, 51, 120, 199, 200])  # uneven, with minibatches of one row
    views = list(minibatch_views(X, Y, order, bounds))
    assert len(views) == bounds.size - 1
    for (X_B, Y_B), a, e in zip(views, bounds[:-1], bounds[1:]):
        for got, want in ((X_B, take_rows(X, order[a:e])), (Y_B, take_rows(Y, order[a:e]))):
            assert got.shape == want.shape
            for mine, theirs in ((got.indptr, want.indptr), (got.indices, want.indices), (got.data, want.data)):
                assert mine.dtype == theirs.dtype
                np.testing.assert_array_equal(mine, theirs)


def test_a_minibatch_beyond_int32_non_zeros_is_refused_before_any_copy(monkeypatch):
    X, Y = corpus()
    # 2^31 − 1 made small: the first minibatch (16 rows) fits, the second (74 rows) does not
    monkeypatch.setattr(minibatch, "MAX_MINIBATCH_NONZEROS", int(np.diff(X.indptr)[:16].sum()) + 1)
    with pytest.raises(MlnbError, match=r"a minibatch of 74 documents holds 2\^31 or more non-zeros; lower batch_size"):
        next(minibatch_views(X, Y, np.arange(90), np.array([0, 16, 90])))


@pytest.mark.parametrize("buffer_chunks", [1, 2, 10])
def test_unshuffled_stream_gives_full_minibatches_across_chunk_boundaries(buffer_chunks):
    X, Y = corpus()
    source = ChunkStreamSource(chunked(X, Y, [7, 13, 5, 30, 1, 34]), 40, 5, batch_size=16,
                               buffer_chunks=buffer_chunks)
    batches = list(source.minibatches(None))
    assert [b.X.shape[0] for b in batches] == [16] * 5 + [10]
    np.testing.assert_array_equal(sp.vstack([b.X for b in batches]).toarray(), X.toarray())
    np.testing.assert_array_equal(sp.vstack([b.Y for b in batches]).toarray(), Y.toarray())
    assert all(b.Y.dtype == np.int8 and b.X.indices.dtype == np.int32 for b in batches)


@pytest.mark.parametrize("group_nonzeros", [1, 150, 1 << 20])
def test_stream_shuffled_in_one_buffer_is_the_in_memory_order(monkeypatch, group_nonzeros):
    monkeypatch.setattr(minibatch, "GROUP_NONZEROS", group_nonzeros)  # groups of one minibatch, of a few, of all
    X, Y = corpus()
    stream = ChunkStreamSource(chunked(X, Y, [30, 30, 30]), 40, 5, batch_size=16, buffer_chunks=3)
    memory = InMemorySource(X, Y, batch_size=16)
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(2):
        for s, m in zip(stream.minibatches(a), memory.minibatches(b), strict=True):
            np.testing.assert_array_equal(s.X.toarray(), m.X.toarray())
            np.testing.assert_array_equal(s.Y.toarray(), m.Y.toarray())


@pytest.mark.parametrize("sizes, batch_size", [([30, 30, 30], 10), ([23, 41, 26], 16)])
def test_stream_shuffles_only_within_a_buffer(monkeypatch, sizes, batch_size):
    """Every document once per pass, each minibatch from one buffer or (carried over) two, shuffled."""
    monkeypatch.setattr(minibatch, "GROUP_NONZEROS", 100)  # a buffer's minibatches copied in several groups
    X, Y = corpus()
    source = ChunkStreamSource(chunked(X, Y, sizes), 40, 5, batch_size=batch_size, buffer_chunks=1)
    batches = list(source.minibatches(np.random.default_rng(0)))
    rest = [90 % batch_size] if 90 % batch_size else []
    assert [b.X.shape[0] for b in batches] == [batch_size] * (90 // batch_size) + rest
    rows = rows_of(batches, X)
    assert sorted(chain(*rows)) == list(range(90))  # every document once per pass
    ends = np.cumsum(sizes)
    for i, batch_rows in enumerate(rows):  # the buffers a minibatch's positions in the pass fall in
        first, last = i * batch_size, i * batch_size + len(batch_rows) - 1
        buffer_of = lambda position: int(np.searchsorted(ends, position, side="right"))  # noqa: E731
        buffers = set(range(buffer_of(first), buffer_of(last) + 1))
        assert {buffer_of(r) for r in batch_rows} == buffers
    assert list(chain(*rows)) != list(range(90))  # and they are shuffled within each buffer


@pytest.mark.parametrize("chunk, message", [
    (SimpleNamespace(X=sp.csr_matrix((3, 41), dtype=np.float32), Y=sp.csr_matrix((3, 5), dtype=np.int8),
                     where="part-7.npz", first_line=101), r"^part-7.npz, line 101: chunk X is \(3, 41\)"),
    ((sp.csr_matrix((3, 40), dtype=np.float64), sp.csr_matrix((3, 5), dtype=np.int8)), "must be finite float32"),
    ((sp.csr_matrix((3, 40), dtype=np.float32), sp.csr_matrix(np.full((3, 5), 2))), "only 0 and 1"),
])
def test_bad_chunks_are_named(chunk, message):
    source = ChunkStreamSource(lambda: [chunk], 40, 5, batch_size=4)
    with pytest.raises(MlnbError, match=message):
        list(source.minibatches(None))


def test_multiclass_chunks_need_one_label_per_row():
    Y = sp.csr_matrix(np.array([[1, 0, 0], [1, 1, 0]], dtype=np.int8))
    chunk = SimpleNamespace(X=sp.csr_matrix((2, 4), dtype=np.float32), Y=Y, where="a.jsonl", first_line=9)
    source = ChunkStreamSource(lambda: [chunk], 4, 3, batch_size=4, one_hot=True)
    with pytest.raises(MlnbError, match="^a.jsonl, line 9: multiclass .* row 1 of the chunk has 2"):
        list(source.minibatches(None))


def test_stream_arguments_are_checked():
    with pytest.raises(MlnbError, match="make_chunks must be a function"):
        ChunkStreamSource([1, 2], 4, 3, batch_size=4)
    with pytest.raises(MlnbError, match="buffer_chunks must be an integer >= 1"):
        ChunkStreamSource(list, 4, 3, batch_size=4, buffer_chunks=0)


def one_step(kernel_name, X_B, Y_B, W, b, updater, R=None, link="sigmoid", kernel=None):
    kernel = kernel or KERNELS[kernel_name](W.shape[0], W.shape[1], link)
    loss = kernel.step(X_B, Y_B, W, b, updater, R)
    return loss, kernel


@pytest.mark.parametrize("link", ["sigmoid", "softmax"])
@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("rule", ["adagrad", "rowwise_adagrad", "sgd"])
@pytest.mark.parametrize("lrates", ["one", "per category"])
def test_numba_and_scipy_steps_agree_on_one_minibatch(link, scaled, rule, lrates):
    X, Y = corpus(n=50, V=40, K=5)
    if link == "softmax":  # one class per document
        Y = sp.csr_matrix(np.eye(5, dtype=np.int8)[np.asarray(Y.argmax(axis=1)).ravel()])
    rng = np.random.default_rng(1)
    W0 = rng.normal(scale=0.3, size=(40, 5)).astype(np.float32)
    R = rng.uniform(0.5, 2, size=(40, 5)).astype(np.float32) if scaled else None
    results = {}
    for name in KERNELS:
        W, b = W0.copy(), np.full(5, -0.5, dtype=np.float32)
        lrate = np.full(5, 0.2, dtype=np.float32) if lrates == "one" else np.linspace(0.1, 0.3, 5, dtype=np.float32)
        updater = Updater(rule, lrate, 0.5, 0.5, 1e-8, 1e-3, 1e-2, 40, 5)
        updater.S[:] = 0.01 if rule != "sgd" else 0
        loss, _ = one_step(name, X, Y, W, b, updater, R, link)
        assert updater.t == 1
        results[name] = (loss, W, b, updater.S, updater.Sb)
    (loss_n, *numba_arrays), (loss_s, *scipy_arrays) = results["numba"], results["scipy"]
    assert loss_n == pytest.approx(loss_s, rel=1e-5)
    for a, b in zip(numba_arrays, scipy_arrays):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not np.array_equal(results["numba"][1], W0)  # it did move


def test_numba_buffers_grow_for_a_larger_minibatch():
    X, Y = corpus(n=90)
    kernel = KERNELS["numba"](40, 5, "sigmoid")
    reference = KERNELS["scipy"](40, 5, "sigmoid")
    W_n, W_s = np.zeros((40, 5), np.float32), np.zeros((40, 5), np.float32)
    b_n, b_s = np.zeros(5, np.float32), np.zeros(5, np.float32)
    u_n, u_s = (Updater("adagrad", np.full(5, 0.3, np.float32), 0.5, 0.5, 1e-8, 0.0, 1e-4, 40, 5) for _ in range(2))
    for rows in (slice(0, 3), slice(3, 90), slice(0, 10)):  # small, then larger than anything before
        kernel.step(X[rows], Y[rows], W_n, b_n, u_n)
        reference.step(X[rows], Y[rows], W_s, b_s, u_s)
    np.testing.assert_allclose(W_n, W_s, rtol=1e-5, atol=1e-6)
    kernel.release()  # scratch freed; the next step grows it again
    kernel.step(X, Y, W_n, b_n, u_n)
    reference.step(X, Y, W_s, b_s, u_s)
    np.testing.assert_allclose(W_n, W_s, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rule", ["adagrad", "rowwise_adagrad", "sgd"])
@pytest.mark.parametrize("warm", [False, True])
def test_a_fresh_kernel_flushes_only_the_rows_its_steps_updated_and_gives_the_same_bits(rule, warm):
    """A new training's kernel (fresh: S = 0) lets the end-of-pass flush skip, with AdaGrad, the rows no
    step has updated (no step size yet: their step is no step), instead of reading their S; the weights
    are those of a kernel that visits every row, bit for bit, from W = 0 or a warm start."""
    X, Y = corpus(n=90, V=60)
    X = X[:, :60].tolil()
    X[:, 50:] = 0  # words 50..59 occur in no document
    X = X.tocsr()
    W0 = np.random.default_rng(3).normal(size=(60, 5)).astype(np.float32) if warm else np.zeros((60, 5), np.float32)
    fitted = []
    for fresh in (True, False):
        kernel = KERNELS["numba"](60, 5, "sigmoid", fresh=fresh)
        updater = Updater(rule, np.full(5, 0.3, np.float32), 0.5, 0.5, 1e-8, 0.0, 1e-2, 60, 5)
        W, b = W0.copy(), np.zeros(5, np.float32)
        for rows in (slice(0, 30), slice(30, 60), slice(60, 90)):
            kernel.step(X[rows], Y[rows], W, b, updater)
        kernel.flush(W, updater)
        fitted.append((W, kernel.stepped.copy(), updater))
    (W_fresh, stepped, updater), (W_all, _, _) = fitted
    assert np.array_equal(W_fresh, W_all)
    assert stepped[50:].sum() == 0 and stepped[:50].all()  # the rows the steps updated, only those
    if rule != "sgd":
        assert np.array_equal(W_fresh[50:], W0[50:]) and not updater.S[50:].any()  # no step size yet: as they were
    else:
        assert np.all(np.abs(W_fresh[50:]) < np.abs(W0[50:]) + (not warm))  # sgd decays them all: visited


def test_word_blocks_balance_the_non_zeros():
    counts = np.array([100, 1, 1, 1, 50, 50, 1, 1, 1, 100], dtype=float)
    first = word_blocks(counts, 4)
    assert first[0] == 0 and np.all(np.diff(first) > 0) and first[-1] < counts.size
    shares = np.add.reduceat(counts, first) / counts.sum()
    assert shares.max() <= 0.5
    assert word_blocks(np.ones(3), 8).tolist() == [0, 1, 2]  # never more blocks than words


def test_updater_state_round_trip():
    updater = Updater("adagrad", np.full(3, 0.1), 0.5, 0.5, 1e-8, 0, 0, 4, 3)
    updater.S += 2.0
    updater.Sb += 1.0
    updater.t = 7
    state = updater.get_state()
    updater.S += 1.0  # the state is a copy
    other = Updater("adagrad", np.full(3, 0.1), 0.5, 0.5, 1e-8, 0, 0, 4, 3)
    other.set_state(state)
    assert other.t == 7 and np.all(other.S == 2.0) and np.all(other.Sb == 1.0)
    sgd = Updater("sgd", np.full(3, 0.1), 0.5, 0.5, 1e-8, 0, 0, 4, 3)
    assert sgd.get_state()["S"] is None and sgd.S.shape == (0, 3)
    with pytest.raises(MlnbError, match="S must be a \\(4, 3\\) array for updater 'adagrad'"):
        other.set_state(sgd.get_state())
    with pytest.raises(MlnbError, match="updater must be one of"):
        Updater("adam", np.full(3, 0.1), 0.5, 0.5, 1e-8, 0, 0, 4, 3)
    rowwise = Updater("rowwise_adagrad", np.full(3, 0.1), 0.5, 0.5, 1e-8, 0, 0, 4, 3)
    assert rowwise.S.shape == (4, 1) and rowwise.adagrad and rowwise.rowwise  # one sum per row of W
    with pytest.raises(MlnbError, match="S must be a \\(4, 1\\) array for updater 'rowwise_adagrad'"):
        rowwise.set_state(state)  # a per-coordinate state cannot continue row-wise
    rowwise.S += 3.0
    other_rowwise = Updater("rowwise_adagrad", np.full(3, 0.1), 0.5, 0.5, 1e-8, 0, 0, 4, 3)
    other_rowwise.set_state(rowwise.get_state())
    assert np.all(other_rowwise.S == 3.0)


def make_state(seed, t=5, S=True):
    rng = np.random.default_rng(seed)
    return {"weights": rng.normal(size=(6, 3)).astype(np.float32), "bias": rng.normal(size=3).astype(np.float32),
            "S": rng.uniform(size=(6, 3)).astype(np.float32) if S else None,
            "Sb": rng.uniform(size=3).astype(np.float32), "t": t, "passes": 1, "rng": {"seed": seed}}


def test_average_of_identical_states_is_the_state():
    state = make_state(0)
    for copies, weights in ((1, None), (3, None), (3, [1, 5, 2])):
        mixed = average_states([state] * copies, weights)
        for key in ("weights", "bias", "S", "Sb"):
            np.testing.assert_array_equal(mixed[key], state[key])
        assert mixed["t"] == 5 and isinstance(mixed["t"], int) and mixed["rng"] == state["rng"]


def test_average_of_two_states_is_their_weighted_mean():
    a, b = make_state(0, t=4), make_state(1, t=6)
    mixed = average_states([a, b])
    for key in ("weights", "bias", "S", "Sb"):
        np.testing.assert_allclose(mixed[key], (a[key].astype(np.float64) + b[key]) / 2, rtol=1e-6)
    assert mixed["t"] == 5.0 and mixed["rng"] == a["rng"]  # everything else is the first state's
    weighted = average_states([a, b], weights=[3, 1])
    np.testing.assert_allclose(weighted["weights"], 0.75 * a["weights"] + 0.25 * b["weights"], rtol=1e-6)
    assert weighted["t"] == pytest.approx(4.5)
    sgd = average_states([make_state(0, S=False), make_state(1, S=False)])
    assert sgd["S"] is None


@pytest.mark.parametrize("states, weights, message", [
    ([], None, "at least one state"),
    ([make_state(0), make_state(1)], [1, -1], "weights must be 2 finite numbers"),
    ([make_state(0), {**make_state(1), "weights": np.zeros((5, 3))}], None, "weights differ in shape"),
    ([make_state(0), make_state(1, S=False)], None, "S differ in shape"),
])
def test_average_states_refuses_what_cannot_be_averaged(states, weights, message):
    with pytest.raises(MlnbError, match=message):
        average_states(states, weights)


class TestThreadPolicy:
    def run(self, policy, seconds_per_unit, steps, available=2, work=1e6):
        used = []
        for _ in range(steps):
            threads = policy.choose(work, available)
            policy.record(threads, work, seconds_per_unit[threads] * work)
            used.append(threads)
        return used

    def test_small_steps_run_on_one_thread(self):
        policy = ThreadPolicy()
        assert policy.choose(policy.small_work - 1, 2) == 1
        assert policy.choose(1e9, 1) == 1  # nothing else available

    def test_uses_all_threads_when_they_are_faster(self):
        used = self.run(ThreadPolicy(), {1: 2e-9, 2: 1e-9}, 200)
        assert used[:3] == [2, 2, 2]
        # after the first measurements: all threads, but for a probe of one thread every probe_every steps
        assert used[10:].count(1) <= 200 // ThreadPolicy.probe_every + 1
        assert used[-1] == 2

    def test_falls_back_to_one_thread_when_it_is_faster(self):
        policy = ThreadPolicy()
        used = self.run(policy, {1: 1e-9, 2: 3e-9}, 100)  # e.g. another process on the cores
        assert used[10:].count(2) <= 100 // ThreadPolicy.probe_every + 1
        # the machine gets quiet again: the probes notice
        used = self.run(policy, {1: 1e-9, 2: 0.5e-9}, 200)
        assert used[-ThreadPolicy.probe_every:].count(2) == ThreadPolicy.probe_every - 1  # one probe of 1

    def test_one_slow_step_does_not_decide(self):
        policy = ThreadPolicy()
        self.run(policy, {1: 2e-9, 2: 1e-9}, 6)
        policy.record(2, 1e6, 1.0)  # one descheduled step, 500× the usual
        assert self.run(policy, {1: 2e-9, 2: 1e-9}, 5) == [2] * 5


def test_kernel_step_results_do_not_depend_on_who_claims_what(monkeypatch):
    """Blocks and document pieces are claimed dynamically; any order of claims gives the same sums."""
    X, Y = corpus(n=200, V=300, K=7)
    results = []
    for blocks, piece in ((1, 200), (4, 3), (32, 1)):
        monkeypatch.setattr(glm_kernels.NumbaKernel, "n_blocks", blocks)
        monkeypatch.setattr(glm_kernels.NumbaKernel, "docs_per_piece", piece)
        W, b = np.zeros((300, 7), np.float32), np.zeros(7, np.float32)
        updater = Updater("adagrad", np.full(7, 0.3, np.float32), 0.5, 0.5, 1e-8, 1e-5, 1e-4, 300, 7)
        kernel = KERNELS["numba"](300, 7, "sigmoid")
        losses = [kernel.step(X[s:s + 50], Y[s:s + 50], W, b, updater) for s in range(0, 200, 50)]
        results.append((losses, W.tobytes(), b.tobytes()))
    assert results[0] == results[1] == results[2]


def test_row_wise_catch_up_factors_are_applied_once_and_reset_after_an_interrupted_step(monkeypatch):
    """Row-wise AdaGrad with one learning rate: the documents region computes each stale row's catch-up
    factor and the words region applies it and resets it to 1. A step interrupted between the two
    leaves W and T_last as they were (the factors were only computed), so the factors are reset too:
    the next steps then give the weights of the same steps never interrupted."""
    X, Y = corpus(n=90, V=40)
    lrate = np.full(5, 0.3, np.float32)

    def train(interrupt_at=None):
        kernel = KERNELS["numba"](40, 5, "sigmoid", fresh=True)
        updater = Updater("rowwise_adagrad", lrate, 0.5, 0.5, 1e-8, 0.0, 1e-2, 40, 5)
        W, b = np.zeros((40, 5), np.float32), np.zeros(5, np.float32)
        # minibatches of 5 documents: a word (in 20 % of documents) is missing from one a third of the time
        for step, rows in enumerate((slice(0, 5), slice(5, 10), slice(10, 15), slice(15, 25), slice(25, 30))):
            if step == interrupt_at:
                words = glm_kernels._words_region

                def interrupted(*args):
                    raise KeyboardInterrupt

                monkeypatch.setattr(glm_kernels, "_words_region", interrupted)
                with pytest.raises(KeyboardInterrupt):
                    kernel.step(X[rows], Y[rows], W, b, updater)
                monkeypatch.setattr(glm_kernels, "_words_region", words)
                assert np.all(kernel.factor == 1)  # reset: nothing of the step was applied
                updater.t -= 1  # the interrupted step's schedule is undone by hand, as a caller restoring state
                updater.T = updater.T - updater.tau(updater.t + 1)
            stale = np.unique(X[rows].indices[updater.T_last[X[rows].indices] < updater.T])
            kernel.step(X[rows], Y[rows], W, b, updater)
            assert np.all(kernel.factor == 1)  # every factor applied and reset by the words region
            stale_rows.append(stale.size)
        kernel.flush(W, updater)
        return W

    stale_rows = []
    uninterrupted = train()
    assert min(stale_rows[1:]) > 0  # every step after the first caught rows up
    assert np.array_equal(train(interrupt_at=3), uninterrupted)


@pytest.mark.parametrize("m, K", [(1, 2), (7, 3), (1000, 103), (999, 1000)])
def test_bias_gradient_is_numpys_column_mean_bit_for_bit(m, K):
    """``_column_means`` (rows added in order, float32) is ``D.mean(axis=0)`` for K ≥ 2; the bias step
    with it is numpy's (K = 1 keeps numpy's pairwise mean)."""
    scales = 10.0 ** np.arange(-3, 4)[np.arange(K) % 7]  # columns from 1e-3 to 1e3
    D = (np.random.default_rng(m).standard_normal((m, K)) * scales).astype(np.float32)
    np.testing.assert_array_equal(glm_kernels._column_means(D).view(np.int32), D.mean(axis=0).view(np.int32))


@pytest.mark.parametrize("K", [2, 103])
def test_the_compiled_bias_step_is_numpys_bit_for_bit(K):
    """``_update_bias`` with vexp = ½ (compiled) against its numpy form, over steps from S_b = 0 (no step
    there), with per-category learning rates; and numpy's float32 power S^0.5 is the square root."""
    rng = np.random.default_rng(K)
    lrate = rng.uniform(0.01, 1.0, K).astype(np.float32)
    b, Sb = rng.normal(size=K).astype(np.float32), np.zeros(K, dtype=np.float32)
    b_np, Sb_np = b.copy(), Sb.copy()
    for t in range(1, 30):
        D = (rng.normal(size=(50, K)) * rng.uniform(0, 2, K)).astype(np.float32)
        D[:, 0] = 0  # a category without gradient: S_b stays 0, b does not move
        tau = float(t) ** -0.25
        glm_kernels._update_bias(b, Sb, D, lrate, tau, True, 0.5, 1e-8)
        gb = D.mean(axis=0)
        Sb_np += gb * gb
        with np.errstate(divide="ignore", invalid="ignore"):
            b_np -= np.where(Sb_np > 0, (lrate * np.float32(tau)) * gb / (Sb_np ** np.float32(0.5) + np.float32(1e-8)),
                             np.float32(0.0))
        np.testing.assert_array_equal(Sb.view(np.int32), Sb_np.view(np.int32))
        np.testing.assert_array_equal(b.view(np.int32), b_np.view(np.int32))
    assert Sb[0] == 0 and np.isfinite(b).all()
    S = (np.abs(rng.normal(size=100_000)) * 10.0 ** rng.integers(-30, 30, 100_000)).astype(np.float32)
    np.testing.assert_array_equal((S ** np.float32(0.5)).view(np.int32), np.sqrt(S).view(np.int32))
