"""The all-categories LR engine: gradient, convergence, kernels, determinism, safety; partial_fit,
resuming, streams, state averaging, thread-count independence."""

import os
import re
import subprocess
import sys
import textwrap
import time
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression as SklearnLR

from mlnb import LogisticRegression, MlnbError, NaiveBayes, progress
from mlnb.models.logistic import estimator as logistic_module
from mlnb.models.logistic import average_states

KERNELS = ["numba", "scipy"]


def objective(X, Y, W, b, l2, l1=0.0):
    """(1/n) Σ_i Σ_k [softplus(z_ik) − y_ik·z_ik] + (l2/2)·‖W‖² + l1·‖W‖₁, in float64."""
    Z = X.toarray().astype(np.float64) @ W + b
    return (np.logaddexp(0, Z) - Y * Z).sum() / X.shape[0] + 0.5 * l2 * np.sum(W ** 2) + l1 * np.abs(W).sum()


@pytest.mark.parametrize("kernel", KERNELS)
def test_one_step_is_minus_lrate_times_the_finite_difference_gradient(tiny, kernel):
    X, Y = tiny
    Y = Y[:, :1]  # one category
    rng = np.random.default_rng(3)
    W0, b0 = rng.normal(size=(12, 1)) * 0.3, np.array([0.2])
    l2, l1, lrate = 0.05, 0.01, 1e-3
    model = LogisticRegression(updater="sgd", lrate=lrate, texp=0.0, batch_size=60, npasses=1, l2=l2,
                               l1=l1, shuffle=False, kernel=kernel)
    model.fit(X, Y, coef_init=W0, intercept_init=b0)
    step_gradient = (W0 - model.weights_) / lrate
    touched = np.flatnonzero(np.diff(X.tocsc().indptr))  # lazy regularisation: only touched rows
    h = 1e-6
    for j in touched:
        up, down = W0.copy(), W0.copy()
        up[j, 0] += h
        down[j, 0] -= h
        numeric = (objective(X, Y, up, b0, l2, l1) - objective(X, Y, down, b0, l2, l1)) / (2 * h)
        assert step_gradient[j, 0] == pytest.approx(numeric, rel=2e-3, abs=1e-4), f"word {j}"
    numeric_b = (objective(X, Y, W0, b0 + h, l2)
                 - objective(X, Y, W0, b0 - h, l2)) / (2 * h)
    assert (b0[0] - model.bias_[0]) / lrate == pytest.approx(numeric_b, rel=2e-3, abs=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("kernel", KERNELS)
def test_converges_to_sklearn_logistic_regression(tiny, kernel):
    X, Y = tiny
    l2 = 0.02
    model = LogisticRegression(updater="sgd", lrate=0.5, texp=0.0, batch_size=60, npasses=3000, l2=l2,
                               shuffle=False, kernel=kernel).fit(X, Y)
    for k in range(Y.shape[1]):
        # sklearn minimises ½‖w‖² + C·Σ loss; ours (1/n)·Σ loss + (l2/2)‖w‖²: C = 1/(n·l2)
        reference = SklearnLR(C=1 / (X.shape[0] * l2), tol=1e-10, max_iter=10_000).fit(X, Y[:, k])
        np.testing.assert_allclose(model.weights_[:, k], reference.coef_.ravel(), atol=2e-3)
        assert model.bias_[k] == pytest.approx(reference.intercept_[0], abs=2e-3)


@pytest.mark.slow
def test_adagrad_gets_near_the_optimum(tiny):
    X, Y = tiny
    l2 = 0.02
    model = LogisticRegression(lrate=0.3, batch_size=60, npasses=3000, l2=l2, shuffle=False).fit(X, Y)
    reference = SklearnLR(C=1 / (X.shape[0] * l2), tol=1e-10, max_iter=10_000).fit(X, Y[:, 0])
    np.testing.assert_allclose(model.weights_[:, 0], reference.coef_.ravel(), atol=2e-2)


def test_numba_and_scipy_kernels_compute_the_same_thing(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    # (no l1 here: sign(w) at w = 0 turns float round-off into different paths)
    a = LogisticRegression(kernel="numba", batch_size=200, npasses=2, l2=1e-5).fit(X, Y)
    b = LogisticRegression(kernel="scipy", batch_size=200, npasses=2, l2=1e-5).fit(X, Y)
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(a.bias_, b.bias_, rtol=1e-4, atol=1e-5)
    assert a.history_[0]["train_loss"] == pytest.approx(b.history_[0]["train_loss"], rel=1e-5)


def test_same_seed_same_weights_other_seed_other_weights(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    a = LogisticRegression(random_state=1, npasses=1).fit(X, Y)
    b = LogisticRegression(random_state=1, npasses=1).fit(X, Y)
    c = LogisticRegression(random_state=2, npasses=1).fit(X, Y)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    assert not np.array_equal(a.weights_, c.weights_)


def test_training_loss_falls_and_heldout_loss_is_reported(small_corpus):
    model = LogisticRegression(npasses=3, batch_size=100).fit(small_corpus.X_train, small_corpus.Y_train,
                                              eval_set=(small_corpus.X_test, small_corpus.Y_test))
    losses = [record["train_loss"] for record in model.history_]
    assert losses[2] < losses[0]
    assert all(0 < record["heldout_loss"] < 1 for record in model.history_)


def test_per_category_learning_rate(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    rates = np.full(Y.shape[1], 0.3)
    rates[0] = 1e-9  # category 0 barely moves
    model = LogisticRegression(lrate=rates, npasses=1).fit(X, Y)
    assert np.abs(model.weights_[:, 0]).max() < 1e-6 < np.abs(model.weights_[:, 1]).max()


def test_nb_warm_start_starts_lower(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    nb = NaiveBayes().fit(X, Y)
    cold = LogisticRegression(npasses=1, lrate=0.05).fit(X, Y)
    warm = LogisticRegression(npasses=1, lrate=0.05).fit(X, Y, coef_init=nb.weights_ * 0.1,
                                                         intercept_init=nb.bias_)
    assert warm.history_[0]["train_loss"] < cold.history_[0]["train_loss"]


@pytest.mark.parametrize("kernel", KERNELS)
def test_huge_learning_rate_is_a_clear_error(small_corpus, kernel):
    with pytest.raises(MlnbError, match="overflowed .* lrate"):
        LogisticRegression(updater="sgd", lrate=1e38, npasses=1, kernel=kernel, l2=0.0).fit(
            small_corpus.X_train * 1e3, small_corpus.Y_train)


@pytest.mark.parametrize("kernel", KERNELS)
def test_huge_learning_rate_with_l2_is_a_clear_error_too(small_corpus, kernel):
    # the regularised step is stable for any step (w ← e^(−l2·α)·w − α·φ(l2·α)·g stays within |g|/l2),
    # so the weights no longer overflow; the loss check still names lrate
    with pytest.raises(MlnbError, match="(diverged|overflowed) .* lrate .* too large"):
        LogisticRegression(updater="sgd", lrate=1e38, npasses=1, kernel=kernel).fit(small_corpus.X_train * 1e3,
                                                                                     small_corpus.Y_train)


def test_the_numba_steps_flag_an_overflow_in_any_row_they_update(small_corpus):
    """The numba kernel does not scan W after a pass: its steps flag the rows they update. One
    category's weights overflow (a huge lrate for it alone) and the pass must still fail."""
    K = small_corpus.Y_train.shape[1]
    rates = np.full(K, 0.1)
    rates[K // 2] = 1e38
    with pytest.raises(MlnbError, match="overflowed in pass 1"):  # l2 = 0: the unregularised step can overflow
        LogisticRegression(updater="sgd", lrate=rates, npasses=1, l2=0.0).fit(small_corpus.X_train * 1e3,
                                                                            small_corpus.Y_train)
    fitted = LogisticRegression(updater="sgd", lrate=0.1, npasses=2).fit(small_corpus.X_train, small_corpus.Y_train)
    assert np.isfinite(fitted.weights_).all() and not fitted._training.kernel.weights_overflowed(fitted.weights_)


def test_an_unpickled_kernel_has_a_flag_per_thread_and_keeps_a_raised_one(small_corpus):
    import pickle

    import numba

    fitted = LogisticRegression(npasses=1).fit(small_corpus.X_train, small_corpus.Y_train)
    kernel = fitted._training.kernel
    kernel.overflowed = np.array([1], dtype=np.int64)  # as pickled by a one-thread process, raised
    restored = pickle.loads(pickle.dumps(kernel))
    assert restored.overflowed.size >= numba.config.NUMBA_NUM_THREADS
    assert restored.weights_overflowed(fitted.weights_) and not restored.weights_overflowed(fitted.weights_)


def test_exponent_bits_find_exactly_the_non_finite_values():
    from mlnb.models.logistic.kernels import _exponent_max, _EXPONENT

    big = np.finfo(np.float32).max
    rows = np.array([[0.0, 1.0, -big, big, 1e-45], [0.0, np.inf, 0.0, 0.0, 0.0], [-np.inf, 0.0, 0.0, 0.0, 0.0],
                     [0.0, 0.0, 0.0, 0.0, np.nan]], dtype=np.float32)
    flagged = [_exponent_max(rows.view(np.uint32), j) == _EXPONENT for j in range(rows.shape[0])]
    assert flagged == [False, True, True, True]


def test_non_finite_starting_weights_are_refused(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    V, K = X.shape[1], Y.shape[1]
    W = np.zeros((V, K))
    W[3, 1] = np.nan
    with pytest.raises(MlnbError, match="coef_init and intercept_init must be finite"):
        LogisticRegression().fit(X, Y, coef_init=W)
    with pytest.raises(MlnbError, match="coef_init and intercept_init must be finite"):
        LogisticRegression().fit(X, Y, coef_init=np.full((V, K), 1e39))  # beyond float32
    state = LogisticRegression(npasses=1).fit(X, Y).get_state()
    state["weights"] = W
    with pytest.raises(MlnbError, match="state's weights and bias must be finite"):
        LogisticRegression().set_state(state)


def test_extreme_scores_stay_finite(small_corpus):
    model = LogisticRegression(lrate=50.0, npasses=2).fit(small_corpus.X_train, small_corpus.Y_train)
    assert np.isfinite(model.predict_proba(small_corpus.X_test * 100)).all()


@pytest.mark.parametrize("params, message", [
    (dict(updater="adam"), "updater must be one of"), (dict(lrate=0), "lrate must be finite and > 0"),
    (dict(lrate=[0.1, 0.2]), "one per category"), (dict(batch_size=0), "batch_size must be"),
    (dict(kernel="cuda"), "kernel must be one of"), (dict(l2=-1), "l2 must be"),
])
def test_bad_parameters(small_corpus, params, message):
    with pytest.raises(MlnbError, match=message):
        LogisticRegression(**params).fit(small_corpus.X_train, small_corpus.Y_train)


# -- the engine's split: partial_fit, state, streams -----------------------------------------------
def fingerprint_problem():
    rng = np.random.default_rng(42)
    X = sp.random(400, 50, density=0.15, format="csr", random_state=7, dtype=np.float32)
    X.data = np.round(X.data * 4 + 1).astype(np.float32)
    Y = (X @ rng.normal(size=(50, 4)) + rng.normal(size=(400, 4)) > 2.0).astype(int)
    return X, Y


def dense_reference(X, Y, link, lrate, batch_size, npasses, l1, l2, random_state, eps=1e-8, rowwise=False):
    """The documented update written densely, independently of the engine: at every step EVERY row of
    W takes the regularised step (numpy, float64), rows the minibatch does not touch with g = 0; AdaGrad
    with texp = vexp = ½ (α = lrate/(√S + ε), 0 while S = 0; ``rowwise``: one S per row, S_j += mean_k G_jk²,
    lrate one number or one per category); b from the smoothed priors; the same minibatch order."""
    from scipy.special import expit, softmax

    from mlnb.models._linear import prior_log_odds

    n, V = X.shape
    Yd = np.asarray(Y, dtype=np.float64)
    K = Yd.shape[1]
    W, S = np.zeros((V, K)), np.zeros((V, 1 if rowwise else K))
    b, Sb = prior_log_odds(Yd.sum(axis=0), n, link).astype(np.float64), np.zeros(K)
    rng = np.random.default_rng(random_state)
    for _ in range(npasses):
        order = rng.permutation(n)
        for start in range(0, n, batch_size):
            rows = order[start:start + batch_size]
            Xb, Yb = X[rows].toarray().astype(np.float64), Yd[rows]
            Z = Xb @ W + b
            D = (expit(Z) if link == "sigmoid" else softmax(Z, axis=1)) - Yb
            G = Xb.T @ D / len(rows)
            S += (G * G).mean(axis=1, keepdims=True) if rowwise else G * G
            alpha = np.where(S > 0, lrate / (np.sqrt(S) + eps), 0.0)  # no step before a coordinate's first gradient
            W = step_with_l1_dense(W, G, alpha, l1, l2)
            gb = D.mean(axis=0)
            Sb += gb * gb
            b -= np.where(Sb > 0, lrate * gb / (np.sqrt(Sb) + eps), 0.0)
    return W, b


def step_with_l1_dense(W, G, alpha, l1, l2):
    """The exact solution after a time α of dw/ds = −g − l2·w − l1·sign(w) (g fixed), by small Euler steps
    of the ODE itself (an oracle independent of the closed form the engine uses): 200 substeps."""
    w = W.copy()
    h = alpha / 200
    for _ in range(200):
        pull = G + l2 * w + l1 * np.sign(w)
        moved = w - h * pull
        # a coordinate that would cross 0 stops there when |g + l2·0| <= l1 (0 is in the subdifferential)
        stuck = (np.sign(moved) != np.sign(w)) & (w != 0) & (np.abs(G) <= l1)
        w = np.where(stuck, 0.0, moved)
        w = np.where((w == 0) & (np.abs(G) <= l1), 0.0, w)
    return w


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("task", ["multilabel", "multiclass"])
@pytest.mark.parametrize("l1, l2", [(0.0, 1e-2), (3e-3, 0.0), (3e-3, 1e-2), (0.0, 0.0)])
@pytest.mark.parametrize("updater, lrate", [("adagrad", 0.3), ("rowwise_adagrad", 0.3),
                                            ("rowwise_adagrad", [0.2, 0.3, 0.4, 0.5])])
def test_fit_is_the_dense_update_of_every_row_at_every_step(kernel, task, l1, l2, updater, lrate):
    """Lazy regularisation is exact: the engine touches only a minibatch's rows and catches the others
    up later, and ends where the dense update (every row regularised at every step) ends; with row-wise
    AdaGrad too, with one learning rate (one step per row: the row's own code path) or one per category."""
    X, Y = fingerprint_problem()
    if task == "multiclass":
        y = np.argmax(Y + np.arange(4) * 0.1, axis=1)
        Y = np.eye(4)[y]
    model = LogisticRegression(kernel=kernel, task=task, batch_size=64, npasses=3, l1=l1, l2=l2, lrate=lrate,
                               updater=updater, random_state=5).fit(X, Y if task == "multilabel" else y)
    W, b = dense_reference(X, Y, "sigmoid" if task == "multilabel" else "softmax", np.asarray(lrate), 64, 3, l1, l2,
                           5, rowwise=updater == "rowwise_adagrad")
    # float32 engine against a float64 oracle with 200 Euler substeps: agreement to ~1e-3 of the scale
    scale = np.abs(W).max()
    assert np.abs(model.weights_ - W).max() <= 2e-3 * scale
    assert np.abs(model.bias_ - b).max() <= 2e-3 * max(1.0, np.abs(b).max())
    if l1:  # the zeros of l1 are the oracle's zeros (but for coordinates within rounding of 0)
        agree = (model.weights_ == 0) == (np.abs(W) < 1e-4 * scale)
        assert agree.mean() > 0.98


def assert_same_model(a, b):
    np.testing.assert_array_equal(a.weights_, b.weights_)
    np.testing.assert_array_equal(a.bias_, b.bias_)
    assert [r["train_loss"] for r in a.history_] == [r["train_loss"] for r in b.history_]


@pytest.mark.parametrize("kernel", KERNELS)
def test_partial_fit_pass_by_pass_is_fit(small_corpus, kernel):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    params = {"kernel": kernel, "batch_size": 250, "l1": 1e-5, "random_state": 3}
    fitted = LogisticRegression(npasses=3, **params).fit(X, Y)
    stepwise = LogisticRegression(**params)
    for _ in range(3):
        stepwise.partial_fit(X, Y)
    assert_same_model(stepwise, fitted)
    assert [r["pass"] for r in stepwise.history_] == [1, 2, 3]


@pytest.mark.parametrize("updater", ["adagrad", "sgd"])
def test_resumed_training_is_the_uninterrupted_one(small_corpus, updater):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    params = {"updater": updater, "lrate": 0.3 if updater == "adagrad" else 0.5, "batch_size": 300,
              "random_state": 1}
    whole = LogisticRegression(npasses=2, **params).fit(X, Y)
    state = LogisticRegression(npasses=1, **params).fit(X, Y).get_state()
    assert state["passes"] == 1 and state["t"] == -(-X.shape[0] // 300)  # one step per minibatch
    assert (state["S"] is None) == (updater == "sgd")
    resumed = LogisticRegression(**params).set_state(state).partial_fit(X, Y)
    np.testing.assert_array_equal(resumed.weights_, whole.weights_)
    np.testing.assert_array_equal(resumed.bias_, whole.bias_)
    assert resumed.history_[0]["pass"] == 2
    assert resumed.history_[0]["train_loss"] == whole.history_[1]["train_loss"]
    # the same through fit_stream(resume=True), and the saved state was not changed by either
    streamed = LogisticRegression(**params).set_state(state).fit_stream(
        chunks_of(X, Y, 700), X.shape[1], Y.shape[1], npasses=1, buffer_chunks=10, resume=True)
    np.testing.assert_array_equal(streamed.weights_, whole.weights_)
    assert state["t"] == -(-X.shape[0] // 300)


def chunks_of(X, Y, size):
    """make_chunks: consecutive chunks of ``size`` documents (the last shorter), like a ChunkSource."""
    X, Y = sp.csr_matrix(X, dtype=np.float32), sp.csr_matrix(Y, dtype=np.int8)

    def make_chunks():
        for start in range(0, X.shape[0], size):
            yield SimpleNamespace(X=X[start:start + size], Y=Y[start:start + size], where="train.svm",
                                  first_line=start + 1)

    return make_chunks


@pytest.mark.parametrize("kernel", KERNELS)
def test_stream_in_the_same_order_is_in_memory_fit(small_corpus, kernel):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    V, K = X.shape[1], Y.shape[1]
    counts = (np.asarray(Y.sum(axis=0)).ravel(), X.shape[0])
    # in order: any chunk size and buffer, b from the given counts
    memory = LogisticRegression(npasses=2, batch_size=256, shuffle=False, kernel=kernel).fit(X, Y)
    stream = LogisticRegression(npasses=2, batch_size=256, shuffle=False, kernel=kernel).fit_stream(
        chunks_of(X, Y, 333), V, K, category_counts=counts, buffer_chunks=2)
    assert_same_model(stream, memory)
    # shuffled: a buffer holding the whole stream is the global permutation; b from the first buffer
    memory = LogisticRegression(npasses=2, batch_size=256, kernel=kernel).fit(X, Y)
    stream = LogisticRegression(npasses=2, batch_size=256, kernel=kernel).fit_stream(
        chunks_of(X, Y, 333), V, K, buffer_chunks=100)
    assert_same_model(stream, memory)
    np.testing.assert_array_equal(stream.untrainable_categories_, memory.untrainable_categories_)
    # a smaller buffer only mixes nearby documents: another model, trained as well
    local = LogisticRegression(npasses=2, batch_size=256, kernel=kernel).fit_stream(
        chunks_of(X, Y, 333), V, K, buffer_chunks=2)
    assert not np.array_equal(local.weights_, memory.weights_)
    X_test, Y_test = small_corpus.X_test, small_corpus.Y_test
    assert local.mean_log_loss(X_test, Y_test) == pytest.approx(memory.mean_log_loss(X_test, Y_test), rel=0.1)


def test_stream_divergence_names_lrate_and_bad_streams_are_named(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    V, K = X.shape[1], Y.shape[1]
    with pytest.raises(MlnbError, match=r"diverged in pass 1: mean training loss .* all-prior .* lrate 1e\+09"):
        LogisticRegression(lrate=1e9, batch_size=50).fit_stream(chunks_of(X, Y, 500), V, K)
    with pytest.raises(MlnbError, match="pass 1 saw no documents"):
        LogisticRegression().fit_stream(lambda: iter(()), V, K)
    good = chunks_of(X, Y, 500)

    def second_chunk_bad():
        chunks = list(good())
        chunks[1].X = chunks[1].X[:, :-1]
        return chunks

    with pytest.raises(MlnbError, match=r"^train.svm, line 501: chunk X is \(500, 1999\) .* expected \(m, 2000\)"):
        LogisticRegression().fit_stream(second_chunk_bad, V, K)
    with pytest.raises(MlnbError, match="category_counts must be"):
        LogisticRegression().fit_stream(chunks_of(X, Y, 500), V, K, category_counts=(np.ones(3), 10))
    with pytest.raises(MlnbError, match="nothing to resume"):
        LogisticRegression().fit_stream(chunks_of(X, Y, 500), V, K, resume=True)


def test_partial_fit_and_state_misuse_are_named(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    with pytest.raises(MlnbError, match="get_state needs a trained model"):
        LogisticRegression().get_state()
    model = LogisticRegression(batch_size=500).partial_fit(X, Y)
    with pytest.raises(MlnbError, match="coef_init and intercept_init start a training"):
        model.partial_fit(X, Y, intercept_init=np.zeros(Y.shape[1]))
    with pytest.raises(MlnbError, match="Y has 19 categories, but the model has 20"):
        model.partial_fit(X, Y[:, 1:])
    with pytest.raises(MlnbError, match="the data have 1999 features and 20 categories, but the model was trained "
                                        "with 2000 and 20"):
        model.partial_fit(X[:, 1:], Y)
    with pytest.raises(MlnbError, match="updater is 'sgd' but the training so far used 'rowwise_adagrad'"):
        model.set_params(updater="sgd").partial_fit(X, Y)
    with pytest.raises(MlnbError, match="updater is 'adagrad' but the training so far used 'rowwise_adagrad'"):
        model.set_params(updater="adagrad").partial_fit(X, Y)  # S is V × 1 there, V × K here
    with pytest.raises(MlnbError, match="saved with task = 'multilabel'"):
        LogisticRegression(task="multiclass").set_state(model.set_params(updater="rowwise_adagrad").get_state())


def test_partial_fit_starts_from_given_category_counts(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    N, n = np.asarray(Y.sum(axis=0)).ravel(), X.shape[0]
    # a learning rate far below float32's resolution of b: the pass leaves the start as it is
    first = LogisticRegression(lrate=1e-30).partial_fit(X[:100], Y[:100], category_counts=(N, n))
    np.testing.assert_allclose(first.bias_, np.log((N + 0.5) / (n - N + 0.5)), rtol=1e-6)  # the corpus's priors
    np.testing.assert_array_equal(first.untrainable_categories_, np.flatnonzero((N == 0) | (N == n)))
    own = LogisticRegression(lrate=1e-30).partial_fit(X[:100], Y[:100])  # else this chunk's
    N100 = np.asarray(Y[:100].sum(axis=0)).ravel()
    np.testing.assert_allclose(own.bias_, np.log((N100 + 0.5) / (100 - N100 + 0.5)), rtol=1e-6)


def test_averaging_identical_states_changes_nothing(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    state = LogisticRegression(npasses=1, batch_size=400).fit(X, Y).get_state()
    once = LogisticRegression(batch_size=400).set_state(state).partial_fit(X, Y)
    mixed = LogisticRegression(batch_size=400).set_state(average_states([state, state, state])).partial_fit(X, Y)
    assert_same_model(mixed, once)
    other = LogisticRegression(npasses=1, batch_size=400, random_state=9).fit(X, Y).get_state()
    half = LogisticRegression(batch_size=400).set_state(average_states([state, other]))
    np.testing.assert_allclose(half.weights_, (state["weights"] + other["weights"]) / 2, rtol=1e-6, atol=1e-9)


def test_progress_lines_give_documents_per_second_and_eta(small_corpus, capsys, monkeypatch):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    monkeypatch.setattr(logistic_module, "PROGRESS_SECONDS", 0.0)  # a line after every minibatch
    notes = []  # the lines within a pass: the live line's, on a terminal
    monkeypatch.setattr(progress, "note", notes.append)
    progress.enable()
    try:
        LogisticRegression(npasses=2, batch_size=500).fit(X, Y)
        LogisticRegression(npasses=1, batch_size=500).fit_stream(chunks_of(X, Y, 500), X.shape[1], Y.shape[1])
    finally:
        progress.enable(False)
    lines = capsys.readouterr().err.splitlines() + notes
    # (the first minibatch may load the kernels from numba's cache: its line then has no rate yet)
    assert any(re.match(rf"LR pass 1/2: [\d,]+ documents of {X.shape[0]:,}, [\d,]+ docs/s, ETA ", line)
               for line in lines)
    assert any(line.startswith("LR pass 1/2: train loss") and line.rstrip().split("ETA ")[-1].endswith("s")
               for line in lines)
    assert any(line.startswith("LR pass 2/2: train loss") and "ETA" not in line for line in lines)
    # a stream's first pass does not know its total yet
    assert any(re.match(r"LR pass 1/1: [\d,]+ documents, [\d,]+ docs/s$", line) for line in lines)


def test_no_rate_or_eta_comes_from_a_pass_that_compiled(small_corpus, capsys, monkeypatch):
    """The first minibatch of a first run compiles the step kernels (here a fake compile event of COMPILING
    seconds): no line within the pass gives a rate or an ETA that includes it, the pass's line gives its
    seconds apart, and the ETA of the passes left comes from the work alone."""
    from numba.core import event

    COMPILING = 0.5
    kernels = dict(logistic_module.KERNELS)
    base = kernels[LogisticRegression().kernel]

    class CompilingFirst(base):
        compiled = False

        def step(self, *args, **kwargs):
            if not CompilingFirst.compiled:
                CompilingFirst.compiled = True
                with event.trigger_event("numba:compile", data={}):
                    time.sleep(COMPILING)
            return super().step(*args, **kwargs)

    monkeypatch.setitem(logistic_module.KERNELS, LogisticRegression().kernel, CompilingFirst)
    monkeypatch.setattr(logistic_module, "PROGRESS_SECONDS", 0.0)  # a line after every minibatch
    notes = []
    monkeypatch.setattr(progress, "note", notes.append)
    X, Y = small_corpus.X_train, small_corpus.Y_train
    progress.enable()
    try:
        model = LogisticRegression(npasses=2, batch_size=200).fit(X, Y)
    finally:
        progress.enable(False)
    lines = capsys.readouterr().err.splitlines()
    first_pass = [note for note in notes if note.startswith("LR pass 1/2:")]
    assert "ETA" not in first_pass[0] and "docs/s" not in first_pass[0]  # right after compiling: no rate yet
    etas = [_seconds_of(note.split("ETA ")[1]) for note in first_pass if "ETA" in note]
    assert etas and max(etas) < COMPILING / 2, first_pass  # later in the pass: the work's rate only
    [pass_line] = [line for line in lines if line.startswith("LR pass 1/2: train loss")]
    assert f"(+ {model.history_[0]['compile_seconds']:.2f} s compiling)" in pass_line
    assert model.history_[0]["compile_seconds"] >= COMPILING
    assert model.history_[0]["seconds"] < COMPILING / 2
    assert _seconds_of(pass_line.split("ETA ")[1]) < COMPILING / 2, pass_line  # pass 2 compiles nothing


def _seconds_of(duration: str) -> float:
    """The seconds of an ETA as ``_duration`` writes it (42 s, 3 min 20 s, 2 h 05 min)."""
    words = duration.split()
    units = {"s": 1, "min": 60, "h": 3600}
    return sum(float(number) * units[unit] for number, unit in zip(words[::2], words[1::2]))


@pytest.mark.slow
def test_same_results_for_one_and_two_numba_threads():
    """In subprocesses (NUMBA_NUM_THREADS takes effect at start), with every step forced onto all the
    threads it has: the same bytes."""
    script = textwrap.dedent("""
        import hashlib, sys, numba, numpy as np
        from mlnb.data.synthetic import make_rcv1_like
        from mlnb.models.logistic import kernels as glm_kernels
        from mlnb.models.logistic import LogisticRegression
        glm_kernels.ThreadPolicy.choose = lambda self, work, available: available  # no fallback to 1
        data = make_rcv1_like(n_documents=int(sys.argv[1]), n_features=1000, n_categories=20, seed=7)
        fits = [LogisticRegression(npasses=2, batch_size=300, l1=1e-6).fit(data.X_train, data.Y_train),
                LogisticRegression(npasses=2, batch_size=300, task="multiclass").fit(
                    data.X_train, np.asarray(data.Y_train.argmax(axis=1)).ravel())]
        digest = hashlib.sha256(b"".join(m.weights_.tobytes() + m.bias_.tobytes() for m in fits))
        print(numba.get_num_threads(), digest.hexdigest(), [r["train_loss"] for m in fits for r in m.history_])
    """)

    def run(threads, documents=2000):
        env = {**os.environ, "NUMBA_NUM_THREADS": str(threads)}
        done = subprocess.run([sys.executable, "-c", script, str(documents)], capture_output=True, text=True, env=env,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.split(" ", 1)

    # compile (or load) the kernels here, so that both runs load them from the cache (only to save
    # time: fresh and cached code give the same bits, test_a_fresh_compilation_and_numbas_cache_...)
    X, Y = fingerprint_problem()
    LogisticRegression(npasses=1).fit(X, Y)
    LogisticRegression(npasses=1, task="multiclass").fit(X, np.argmax(Y, axis=1))
    one, two = run(1), run(2)
    assert (one[0], two[0]) == ("1", "2")
    assert one[1] == two[1]


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_word_with_no_gradient_yet_keeps_its_warm_start(kernel):
    """AdaGrad has no step size for a coordinate whose gradients have all been 0 (lrate/ε would wipe it):
    a word that never occurs in training keeps its coef_init exactly; the others are regularised."""
    X, Y = fingerprint_problem()
    X = X.tolil()
    X[:, 7] = 0  # word 7 never occurs
    X = X.tocsr()
    W0 = np.full((X.shape[1], Y.shape[1]), 0.5, dtype=np.float32)
    model = LogisticRegression(kernel=kernel, batch_size=64, npasses=2, l2=1e-2, random_state=1).fit(
        X, Y, coef_init=W0, intercept_init=np.zeros(Y.shape[1]))
    np.testing.assert_array_equal(model.weights_[7], W0[7])
    assert not np.allclose(model.weights_[np.arange(X.shape[1]) != 7], 0.5)
