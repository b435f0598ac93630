"""The fused counts → weights sweep (``fused``) and the balanced count kernel: float32 weights against
float64 formulas and scikit-learn, the numpy path, any thread count, extreme α, exact float32 counting."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.naive_bayes import BernoulliNB, ComplementNB, MultinomialNB

from mlnb.models import NaiveBayes, _counting
from mlnb.models.naive_bayes import NBCounts, bernoulli, complement, fused, gaussian, multinomial


@pytest.fixture(scope="module")
def counts(small_corpus):
    """Word counts of 3,000 documents × 2,000 words, 20 categories, and the presence counts."""
    X, Y = small_corpus.X, small_corpus.Y
    return NBCounts.from_chunk(X, Y), NBCounts.from_chunk(X, Y, presence=True)


def multinomial_reference(F, t, alpha):
    """W (V × K) by the textbook formula, every log in float64: log θ − log θ̄."""
    V = F.shape[1]
    F_bar = t - F
    log_theta = np.log(F + alpha) - np.log(F.sum(axis=1, keepdims=True) + alpha * V)
    log_theta_bar = np.log(F_bar + alpha) - np.log(F_bar.sum(axis=1, keepdims=True) + alpha * V)
    return (log_theta - log_theta_bar).T


@pytest.mark.parametrize("alpha", [0.5, 1e-3, 2.0])
def test_float32_multinomial_weights_equal_the_float64_formula(counts, alpha):
    c = counts[0]
    W, _ = multinomial.log_odds(c.F, c.t, np.zeros(c.shape[0]), alpha, c.S)
    assert W.dtype == np.float32 and W.shape == (c.shape[1], c.shape[0]) and W.flags.c_contiguous
    reference = multinomial_reference(c.F, c.t, alpha)
    np.testing.assert_allclose(W, reference, rtol=1e-5, atol=1e-7)
    # one rounding of the ratio and numpy's log: far inside float32's own resolution of |W|
    assert np.abs(W - reference).max() <= 1e-6 * np.abs(reference).max()


def test_float32_multinomial_weights_equal_sklearn(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train.toarray()
    W = NaiveBayes(alpha=0.5).fit(X, Y).weights_
    for k in np.argsort(-Y.sum(axis=0))[:6]:
        log_prob = MultinomialNB(alpha=0.5).fit(X, Y[:, k]).feature_log_prob_
        np.testing.assert_allclose(W[:, k], log_prob[1] - log_prob[0], rtol=1e-5, atol=1e-7, err_msg=f"category {k}")


def test_float32_bernoulli_weights_and_bias_equal_the_float64_formula_and_sklearn(small_corpus, counts):
    c = counts[1]
    alpha, N, N_bar = 0.5, c.N, c.n - c.N
    W, b = bernoulli.log_odds(c.F, c.t, N, N_bar, np.zeros(c.shape[0]), alpha)
    p = (c.F + alpha) / (N[:, None] + 2 * alpha)
    p_bar = (c.t - c.F + alpha) / (N_bar[:, None] + 2 * alpha)
    reference = np.log(p) - np.log1p(-p) - np.log(p_bar) + np.log1p(-p_bar)
    np.testing.assert_allclose(W, reference.T, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(b, (np.log1p(-p) - np.log1p(-p_bar)).sum(axis=1), rtol=1e-11)
    X, Y = small_corpus.X, small_corpus.Y.toarray()
    for k in np.argsort(-Y.sum(axis=0))[:3]:
        log_prob = BernoulliNB(alpha=alpha, binarize=0.0).fit(X, Y[:, k]).feature_log_prob_
        p1, p0 = np.exp(log_prob[1]), np.exp(log_prob[0])
        expected = log_prob[1] - np.log1p(-p1) - log_prob[0] + np.log1p(-p0)
        np.testing.assert_allclose(W[:, k], expected, rtol=1e-5, atol=1e-7, err_msg=f"category {k}")


@pytest.mark.parametrize("corpus_reference", [False, True])
def test_float32_complement_weights_equal_sklearn(small_corpus, counts, corpus_reference):
    c, alpha = counts[0], 0.5
    t = c.t if corpus_reference else None
    W, b = complement.log_odds(c.F, c.t, alpha, False, t, c.S)
    assert not b.any()
    X, Y = small_corpus.X, small_corpus.Y.toarray()
    reference_weights = 0.0
    if corpus_reference:  # −log θ_w of all documents
        reference_weights = -np.log((c.t + alpha) / (c.t.sum() + alpha * c.shape[1]))
    for k in np.argsort(-Y.sum(axis=0))[:3]:
        # a two-class ComplementNB's class-1 weights are −log θ̄ of class 0: the documents outside k
        expected = ComplementNB(alpha=alpha).fit(X, Y[:, k]).feature_log_prob_[1] - reference_weights
        np.testing.assert_allclose(W[:, k], expected, rtol=1e-5, atol=1e-7, err_msg=f"category {k}")


def test_gaussian_weights_equal_the_float64_formula(breast_cancer_multilabel):
    X, Y = breast_cancer_multilabel
    c = NBCounts.from_chunk(sp.csr_matrix(X.astype(np.float32)), sp.csr_matrix(Y.astype(np.float32)), squares=True)
    eps, shift = gaussian.epsilon(c.t, c.t2, c.n, 1e-9), gaussian.shift(c.t, c.t2, c.n)
    N, N_bar = c.N[:, None], (c.n - c.N)[:, None]
    W, b = gaussian.log_odds(c.F, c.F2, c.N, c.t, c.t2, c.n - c.N, np.zeros(c.shape[0]), eps, shift)
    mu, mu_bar = c.F / N, (c.t - c.F) / N_bar
    var = c.F2 / N - mu * mu + eps
    var_bar = (c.t2 - c.F2) / N_bar - mu_bar * mu_bar + eps
    mu, mu_bar = mu - shift, mu_bar - shift
    A, C = 1 / (2 * var_bar) - 1 / (2 * var), mu / var - mu_bar / var_bar
    expected_b = (-0.5 * np.log(var / var_bar) - mu * mu / (2 * var) + mu_bar * mu_bar / (2 * var_bar)).sum(axis=1)
    np.testing.assert_allclose(W, np.vstack([A.T, C.T]), rtol=1e-6, atol=1e-7 * np.abs(C).max())
    np.testing.assert_allclose(b, expected_b, rtol=1e-10)


@pytest.mark.parametrize("build", ["multinomial", "multinomial-class", "bernoulli", "bernoulli-class", "complement",
                                   "gaussian", "gaussian-class"])
def test_the_numba_sweep_equals_the_numpy_path(counts, build, monkeypatch):
    c, presence = counts
    K, V = c.shape
    F2 = c.F * 1.5 + 1  # any sums of squares above the squared means will do
    t2 = F2.sum(axis=0) + 1
    calls = {
        "multinomial": lambda: fused.multinomial_ratios(c.F, c.t, True, True, np.linspace(0.5, 2, K), 0.5, np.float32),
        "multinomial-class": lambda: fused.multinomial_ratios(c.F, None, False, False, 1 / (c.S + 1e3), 0.5,
                                                              np.float64),
        "bernoulli": lambda: fused.bernoulli_ratios(presence.F, presence.N, presence.t, presence.n - presence.N, True,
                                                    0.5, np.float32),
        "bernoulli-class": lambda: fused.bernoulli_ratios(presence.F, presence.N, np.zeros(0), np.zeros(0), False, 0.5,
                                                          np.float64),
        "complement": lambda: fused.complement_ratios(c.F, c.t, True, c.S + 1e3, (c.t + 1) / c.t.sum(), 0.5,
                                                      np.float32),
        "gaussian": lambda: fused.gaussian_weights(c.F, F2, c.N, c.t, t2, c.n - c.N, True, 1e-3,
                                                   np.linspace(0, 1, V), np.float32),
        "gaussian-class": lambda: fused.gaussian_weights(c.F, F2, c.N, np.zeros(0), np.zeros(0), np.zeros(0), False,
                                                         1e-3, np.zeros(V), np.float64),
    }
    fast = calls[build]()
    monkeypatch.setattr(fused, "HAVE_NUMBA", False)
    slow = calls[build]()
    for a, b in zip(fast if isinstance(fast, tuple) else (fast,), slow if isinstance(slow, tuple) else (slow,)):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-6 if a.dtype == np.float32 else 1e-12, atol=1e-12)


EVENT_MODELS = [dict(event_model="multinomial"), dict(event_model="multinomial", mode="tutorial", binarize=True),
                dict(event_model="bernoulli"), dict(event_model="complement"), dict(event_model="gaussian"),
                dict(event_model="multinomial", task="multiclass"), dict(event_model="bernoulli", task="multiclass"),
                dict(event_model="gaussian", task="multiclass")]


@pytest.mark.filterwarnings("ignore:.*prior alone")
@pytest.mark.parametrize("params", EVENT_MODELS, ids=lambda p: "-".join(map(str, p.values())))
def test_weights_are_the_same_for_any_thread_count(small_corpus, params):
    X, Y = small_corpus.X, small_corpus.Y
    if params.get("task") == "multiclass":
        Y = np.asarray(Y.argmax(axis=1)).ravel()
    default = numba.get_num_threads()
    built = []
    for threads in sorted({1, default, max(default - 1, 1)}):
        numba.set_num_threads(threads)
        try:
            model = NaiveBayes(**params).fit(X, Y)
            built.append((model.counts_.F, model.counts_.t, model.counts_.S, model.weights_, model.bias_))
        finally:
            numba.set_num_threads(default)
    for other in built[1:]:
        for a, b in zip(built[0], other):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("alpha", [1e-30, 1e-295])
def test_an_extreme_alpha_leaves_float32_ratios_for_float64_or_log_differences(counts, alpha):
    # α = 1e-30: ratios beyond float32's range, float64 ones; α = 1e-295: beyond float64's, log differences
    c = counts[0]
    with np.errstate(all="raise"):
        W, _ = multinomial.log_odds(c.F, c.t, np.zeros(c.shape[0]), alpha, c.S)
    assert W.dtype == np.float32 and np.isfinite(W).all()
    np.testing.assert_allclose(W, multinomial_reference(c.F, c.t, alpha), rtol=1e-5, atol=1e-5)
    assert fused.ratio_dtype(1e-40, 1.0, np.float32) == np.float64
    assert fused.ratio_dtype(1e-310, 1.0, np.float32) is None


def test_float32_counting_of_large_integers_is_exact_thanks_to_the_flushes():
    # every category sums 2,000 values near 50,000: 10⁸ > 2^24, so the float32 row is flushed every
    # (2^24 − 1) // 50,000 = 335 documents, and the sums are still exact
    rng = np.random.default_rng(0)
    X = sp.random(2000, 30, density=0.5, random_state=1, format="csr", dtype=np.float32)
    X.data = rng.integers(49_000, 50_001, X.nnz).astype(np.float32)
    Y = sp.csr_matrix((rng.random((2000, 4)) < 0.9).astype(np.float32))
    for binary in (False, True):
        fast = _counting.count_chunk(Y, X, binary=binary, kernel="numba")
        exact = _counting.count_chunk(Y, X, binary=binary, kernel="scipy")
        for name in ("F", "t", "S"):
            np.testing.assert_array_equal(getattr(fast, name), getattr(exact, name), err_msg=f"{name} {binary}")
    assert fast.F.max() < 2**24  # presence counts: small
    assert _counting.count_chunk(Y, X, kernel="numba").F.max() > 2**24  # beyond float32's exact integers
    largest, integer = _counting._value_range(X.data)
    assert integer and (2**24 - 1) // largest == 335  # the float32 path, flushed


def test_huge_or_fractional_values_are_summed_in_float64():
    rng = np.random.default_rng(2)
    X = sp.random(500, 20, density=0.5, random_state=3, format="csr", dtype=np.float32)
    Y = sp.csr_matrix((rng.random((500, 3)) < 0.5).astype(np.float32))
    for values in (rng.integers(1, 2**20, X.nnz), rng.random(X.nnz) * 3):  # beyond 2^24 / 256; fractional
        X.data = values.astype(np.float32)
        fast = _counting.count_chunk(Y, X, kernel="numba")
        exact = _counting.count_chunk(Y, X, kernel="scipy")
        np.testing.assert_allclose(fast.F, exact.F, rtol=1e-12)
        np.testing.assert_allclose(fast.t, exact.t, rtol=1e-12)
        np.testing.assert_allclose(fast.S, fast.F.sum(axis=1), rtol=1e-12)


def test_tasks_are_claimed_largest_first():
    work = np.array([100, 1, 1, 1, 60, 40, 30, 5])
    # the most work first, ties by index: the last tasks to be claimed are the small ones
    assert _counting._largest_first(work).tolist() == [0, 4, 5, 6, 7, 1, 2, 3]


@pytest.mark.parametrize("binary", [False, True])
def test_claimed_and_prefetched_counting_is_exact_for_any_thread_count(binary):
    # categories of every size, from empty and fewer documents than are prefetched ahead to nearly all,
    # scattered through X: the numba kernel's sums equal scipy's exactly, for 1 and all threads
    rng = np.random.default_rng(5)
    n, V = 3000, 400
    X = sp.random(n, V, density=0.05, random_state=6, format="csr", dtype=np.float32)
    X.data = rng.integers(1, 9, X.nnz).astype(np.float32)
    sizes = [0, 1, 3, 30, 600, 1500, 2900]
    Y = sp.lil_matrix((n, len(sizes)), dtype=np.float32)
    for k, size in enumerate(sizes):
        Y[rng.choice(n, size, replace=False), k] = 1.0
    Y = Y.tocsr()
    exact = _counting.count_chunk(Y, X, binary=binary, kernel="scipy")
    default = numba.get_num_threads()
    for threads in sorted({1, default}):
        numba.set_num_threads(threads)
        try:
            fast = _counting.count_chunk(Y, X, binary=binary, kernel="numba")
        finally:
            numba.set_num_threads(default)
        for name in ("F", "t", "S"):
            np.testing.assert_array_equal(getattr(fast, name), getattr(exact, name), err_msg=f"{name} {threads}")

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_in_blocks_on_several_threads_is_numpys_log_bit_for_bit(monkeypatch, dtype):
    monkeypatch.setattr(fused, "LOG_PIECE_VALUES", 1 << 12)  # blocks on as many threads as there are
    ratios = np.random.default_rng(0).uniform(1e-6, 1e6, size=(5001, 33)).astype(dtype)
    logged = fused.log_in_place(ratios.copy())
    assert logged.dtype == dtype
    np.testing.assert_array_equal(logged.view(np.uint8), np.log(ratios).view(np.uint8))
